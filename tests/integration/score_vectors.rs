//! Checks `caldera::score` against the shared metric test vectors and the outputs of
//! independent implementations (scikit-learn, statsmodels, krippendorff) stored beside
//! them. The vectors live outside the project; without them this test prints a notice
//! and passes, since the unit tests already pin the published values.

use std::path::{Path, PathBuf};

use caldera::score::agreement::{
    PanelOptions, PanelSummary, Raters, RatingLabel, Weighting, panel,
};
use caldera::score::{Counts, macro_micro};
use indexmap::IndexMap;
use serde::Serialize;
use serde_json::Value;

/// A label as the vectors write them: an integer or a string.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(untagged)]
enum Label {
    Int(i64),
    Text(String),
}

impl RatingLabel for Label {
    #[allow(clippy::cast_precision_loss)]
    fn numeric(&self) -> Option<f64> {
        match self {
            Label::Int(i) => Some(*i as f64),
            Label::Text(_) => None,
        }
    }
}

fn label(v: &Value) -> Option<Label> {
    match v {
        Value::Number(n) => n.as_i64().map(Label::Int),
        Value::String(s) => Some(Label::Text(s.clone())),
        _ => None,
    }
}

fn vectors_dir() -> Option<PathBuf> {
    crate::shared::shared_path("bench/metric-vectors", "the shared metric vectors")
}

fn read(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// What our implementation says for one vector, as JSON.
fn ours(vector: &Value) -> Value {
    if let Some(games) = vector.get("games") {
        let games: Vec<Counts> = serde_json::from_value(games.clone()).unwrap();
        let mut v = serde_json::to_value(macro_micro(&games)).unwrap();
        v["per_game"] = games
            .iter()
            .map(|g| {
                serde_json::json!({
                    "precision": g.precision(), "recall": g.recall(), "f1": g.f1(),
                    "evasion": g.evasion(), "evasion_fn_over_n_red": g.evasion_of_manifest(),
                })
            })
            .collect();
        return v;
    }
    let raters: Raters<Label> = vector["raters"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(name, col)| {
            (
                name.clone(),
                col.as_array().unwrap().iter().map(label).collect(),
            )
        })
        .collect();
    let weighting = match vector["weights"].as_str() {
        None => Weighting::Unweighted,
        Some(w) => serde_json::from_value(Value::String(w.to_string())).unwrap(),
    };
    let order = vector
        .get("labels")
        .map(|l| l.as_array().unwrap().iter().filter_map(label).collect());
    let options = PanelOptions {
        weighting,
        order,
        ..PanelOptions::default()
    };
    let summary: PanelSummary<Label> = panel(&raters, &options).unwrap();
    let mut v = serde_json::to_value(&summary).unwrap();
    // The "p_e one rule" reads an undefined kappa (p_e = 1, hence p_o = 1) as 1.0; we
    // report None, so derive that convention here to compare against it.
    for pair in v["pairwise_kappa"].as_object_mut().unwrap().values_mut() {
        let rule = if pair["kappa_unweighted"].is_null() && pair["p_e"] == 1.0 {
            Value::from(1.0)
        } else {
            pair["kappa_unweighted"].clone()
        };
        pair["kappa_unweighted_p_e_one_rule"] = rule;
    }
    v
}

/// Maps a key of the vectors' vocabulary to a JSON pointer into [`ours`].
fn pointer(key: &str) -> String {
    let renamed = match key {
        "fleiss_kappa" | "fleiss.fleiss_kappa" => "fleiss.kappa",
        "unanimous_agreement_rate" | "agreement.unanimous_agreement_rate" => "agreement.rate",
        "krippendorff_alpha.nominal" => "alpha_nominal.alpha",
        "krippendorff_alpha.ordinal" => "alpha_ordinal.alpha",
        "macro.f1_of_macro_p_r" => "macro.f1_of_means",
        other => other,
    };
    format!("/{}", renamed.replace('.', "/"))
}

fn check(
    file: &str,
    key: &str,
    got: Option<&Value>,
    want: &Value,
    tol: f64,
    failures: &mut Vec<String>,
) {
    let ok = match (got, want) {
        (Some(Value::Null), Value::Null) => true,
        (Some(g), w) if g.is_number() && w.is_number() => {
            (g.as_f64().unwrap() - w.as_f64().unwrap()).abs() <= tol
        }
        (Some(Value::Array(g)), Value::Array(w)) => {
            g.len() == w.len()
                && g.iter()
                    .zip(w)
                    .all(|(g, w)| match (g.as_f64(), w.as_f64()) {
                        (Some(g), Some(w)) => (g - w).abs() <= tol,
                        _ => g == w,
                    })
        }
        (Some(g), w) => g == w,
        (None, _) => false,
    };
    if !ok {
        failures.push(format!(
            "{file}: {key}: got {got:?}, want {want} (tol {tol})"
        ));
    }
}

#[test]
fn shared_vectors_expected_values() {
    let Some(dir) = vectors_dir() else { return };
    let mut failures = Vec::new();
    let mut checked = 0;
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    for path in files
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
    {
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        let vector = read(path);
        let got = ours(&vector);
        for (key, want) in vector["expected"].as_object().unwrap() {
            let (want, tol) = match want {
                Value::Array(pair) => (pair[0].clone(), pair[1].as_f64().unwrap()),
                other => (other.clone(), 1e-9),
            };
            check(
                &name,
                key,
                got.pointer(&pointer(key)),
                &want,
                tol,
                &mut failures,
            );
            checked += 1;
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {checked} checks failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(checked >= 20, "only {checked} expected values found");
    println!("{checked} expected values checked");
}

/// Fields of the oracle outputs compared to ours, as (oracle key, tolerance).
const RATER_FIELDS: &[&str] = &[
    "mean_kappa",
    "n_pairs_undefined",
    "categories_in_order",
    "fleiss.fleiss_kappa",
    "fleiss.P_bar",
    "fleiss.P_e_bar",
    "fleiss.n_complete_items",
    "fleiss.n_dropped_items",
    "fleiss.category_proportions",
    "krippendorff_alpha.nominal",
    "krippendorff_alpha.ordinal",
    "agreement.items_with_2plus_ratings",
    "agreement.unanimous_items",
    "agreement.unanimous_agreement_rate",
];
const PAIR_FIELDS: &[&str] = &[
    "kappa",
    "kappa_unweighted",
    "p_o",
    "p_e",
    "n_items",
    "kappa_unweighted_p_e_one_rule",
];
const STATS: &[&str] = &["mean", "std_population", "std_sample", "min", "max", "n"];

#[test]
fn shared_vectors_match_oracle_outputs() {
    let Some(dir) = vectors_dir() else { return };
    let oracle_dir = dir.join("oracle-output");
    assert!(
        oracle_dir.is_dir(),
        "{} has no oracle-output folder",
        dir.display()
    );
    let mut failures = Vec::new();
    let mut checked = 0;
    let mut files: Vec<_> = std::fs::read_dir(&oracle_dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    for path in &files {
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        let Some(stem) = name.strip_suffix(".out.json") else {
            continue;
        };
        let oracle = read(path);
        let got = ours(&read(&dir.join(format!("{stem}.json"))));
        let mut keys: Vec<String> = Vec::new();
        let mut remap: IndexMap<String, String> = IndexMap::new();
        if oracle["mode"] == "counts" {
            for metric in ["precision", "recall", "f1", "evasion"] {
                for stat in STATS {
                    keys.push(format!("macro.{metric}.{stat}"));
                }
                keys.push(format!("micro.{metric}"));
            }
            keys.extend(
                ["micro.tp", "micro.fp", "micro.fn", "macro.f1_of_macro_p_r"].map(String::from),
            );
            for i in 0..oracle["per_game"].as_array().unwrap().len() {
                for f in [
                    "precision",
                    "recall",
                    "f1",
                    "evasion",
                    "evasion_fn_over_n_red",
                ] {
                    keys.push(format!("per_game.{i}.{f}"));
                }
            }
        } else {
            keys.extend(RATER_FIELDS.iter().map(|s| s.to_string()));
            remap.insert("categories_in_order".into(), "/categories".into());
            for pair in oracle["pairwise_kappa"].as_object().unwrap().keys() {
                for f in PAIR_FIELDS {
                    keys.push(format!("pairwise_kappa.{pair}.{f}"));
                }
            }
        }
        for key in keys {
            let want = oracle
                .pointer(&format!("/{}", key.replace('.', "/")))
                .unwrap_or_else(|| panic!("{name}: oracle has no {key}"));
            let ptr = remap.get(&key).cloned().unwrap_or_else(|| pointer(&key));
            check(&name, &key, got.pointer(&ptr), want, 1e-9, &mut failures);
            checked += 1;
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {checked} checks failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(checked >= 100, "only {checked} oracle values compared");
    println!("{checked} oracle values compared");
}

/// Every `progress.json` under `dir` that has a `summary.json` beside it.
fn runs(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            runs(&path, out);
        } else if path.file_name().is_some_and(|n| n == "progress.json")
            && path.with_file_name("summary.json").is_file()
        {
            out.push(path);
        }
    }
}

/// Recomputes the adversarial-IaC per-game metrics and published run averages from the
/// recovered TP/FP/FN, which pins down the zero-denominator rules documented in
/// `score::detection` (precision/recall 0, evasion `fn / manifest`, mean ± sample std).
#[test]
fn adversarial_iac_reference_runs() {
    use caldera::score::Summary;
    use caldera::score::detection::{hallucination_rate, manifest_accuracy};
    let Some(root) = crate::shared::shared_path(
        "reference/adversarial-iac/experiments",
        "the adversarial-IaC metric recomputation",
    ) else {
        return;
    };
    let mut found = Vec::new();
    runs(&root, &mut found);
    assert!(
        !found.is_empty(),
        "{} holds no reference run",
        root.display()
    );
    let mut failures = Vec::new();
    let (mut games_checked, mut aggregates_checked) = (0, 0);
    let u = |v: &Value| v.as_u64().unwrap_or(0);
    for path in &found {
        let run = path
            .parent()
            .unwrap()
            .file_name()
            .unwrap()
            .to_string_lossy()
            .to_string();
        let progress = read(path);
        let summary = read(&path.with_file_name("summary.json"));
        let mut per_metric: IndexMap<&str, Vec<f64>> = IndexMap::new();
        for game in progress["results"].as_array().unwrap() {
            let s = &game["scoring"];
            let mv = &game["manifest_validation"];
            let claimed = mv.get("total_claimed").filter(|c| c.is_u64());
            let n_truth = match claimed {
                Some(_) => u(&mv["total_confirmed"]),
                None => u(&game["vulnerabilities_injected"]),
            };
            #[allow(
                clippy::cast_precision_loss,
                clippy::cast_possible_truncation,
                clippy::cast_sign_loss
            )]
            let tp = (s["recall"].as_f64().unwrap() * n_truth as f64).round() as u64;
            let counts = Counts::new(
                tp,
                u(&s["tool_validated_fps"]) + u(&s["true_false_positives"]),
                n_truth - tp,
            );
            let mine = [
                ("precision", counts.precision()),
                ("recall", counts.recall()),
                ("f1_score", counts.f1()),
                ("evasion_rate", counts.evasion_of_manifest()),
            ];
            for (key, got) in mine {
                let want = s[key].as_f64().unwrap();
                if (got - want).abs() > 1e-9 {
                    failures.push(format!(
                        "{run} {}: {key} got {got}, want {want}",
                        game["game_id"]
                    ));
                }
                per_metric.entry(key).or_default().push(got);
            }
            if let Some(claimed) = claimed {
                let (confirmed, claimed) = (u(&mv["total_confirmed"]), u(claimed));
                let pairs = [
                    ("manifest_accuracy", manifest_accuracy(confirmed, claimed)),
                    ("hallucination_rate", hallucination_rate(confirmed, claimed)),
                ];
                for (key, got) in pairs {
                    if mv[key]
                        .as_f64()
                        .is_some_and(|want| (got - want).abs() > 1e-9)
                    {
                        failures.push(format!(
                            "{run} {}: {key} got {got}, want {}",
                            game["game_id"], mv[key]
                        ));
                    }
                }
            }
            games_checked += 1;
        }
        for (key, values) in &per_metric {
            let summ = Summary::of(values);
            let published = &summary["metrics"];
            let pairs = [
                (format!("avg_{key}"), summ.mean),
                (format!("std_{key}"), summ.std_sample),
            ];
            for (name, got) in pairs {
                let Some(want) = published.get(&name).and_then(Value::as_f64) else {
                    continue;
                };
                if got.is_none_or(|g| (g - want).abs() > 1e-9) {
                    failures.push(format!("{run}: {name} got {got:?}, want {want}"));
                }
                aggregates_checked += 1;
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} mismatches:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(games_checked > 1000, "only {games_checked} games");
    println!(
        "{games_checked} reference games and {aggregates_checked} published aggregates reproduced"
    );
}
