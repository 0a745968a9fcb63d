//! The bundled adversarial-iac suite reproduces published results through YAML alone.
//!
//! The suite is run in heuristic mode, through the library, on each reference run of the
//! adversarial-IaC framework (when `../shared` is present; otherwise a notice is printed and
//! only the offline tests run). Every mean, std, sum and count of the run's `summary.json`
//! is compared with the suite's evidence *to the printed digit*: both are rounded to the
//! number of decimals `summary.json` prints (full float precision for its floats), so a
//! difference in the last printed digit fails. A value that cannot be matched must be listed
//! in [`KNOWN_DIFFERENCES`] with its reason; any other mismatch fails the test.
//!
//! The figures the project's paper tables print (one decimal, in percent) are checked the
//! same way in [`PUBLISHED`].

use std::path::{Path, PathBuf};

use caldera::Overrides;
use caldera::RunResult;
use caldera::Status;
use caldera::load_suite;
use caldera::{RunOptions, run_heuristic};
use serde_json::Value;

fn suite_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("judges.d/adversarial-iac")
}

fn sample_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("ground-truth/adversarial-iac/sample")
}

/// The reference run folders (those with a progress.json and a summary.json), sorted.
fn reference_runs() -> Option<Vec<PathBuf>> {
    let root = crate::shared::shared_path(
        "reference/adversarial-iac/experiments",
        "the adversarial-IaC reference runs",
    )?;
    let parents = [root.join("config/archive/results"), root.join("results")];
    let mut runs = Vec::new();
    for parent in parents {
        let Ok(entries) = std::fs::read_dir(&parent) else {
            continue;
        };
        for entry in entries.filter_map(Result::ok) {
            let dir = entry.path();
            if dir.join("progress.json").is_file() && dir.join("summary.json").is_file() {
                runs.push(dir);
            }
        }
    }
    runs.sort();
    if runs.is_empty() {
        panic!("{} holds no reference run", root.display());
    } else {
        Some(runs)
    }
}

fn run_name(dir: &Path) -> String {
    dir.file_name().unwrap().to_string_lossy().into_owned()
}

fn run_suite(results: Option<PathBuf>) -> RunResult {
    let env = caldera::environment();
    let (suite, diags) = load_suite(&suite_dir(), &env);
    let errors: Vec<_> = diags.iter().filter(|d| d.is_error()).collect();
    assert!(errors.is_empty(), "suite does not load: {errors:#?}");
    let options = RunOptions {
        overrides: Overrides {
            results,
            ..Overrides::default()
        },
        ..RunOptions::default()
    };
    run_heuristic(&env, &suite.expect("suite loads"), &options).expect("inputs read")
}

fn evidence(result: &RunResult, dimension: &str) -> Value {
    let verdict = result
        .dimensions
        .iter()
        .find(|d| d.name == dimension)
        .unwrap_or_else(|| panic!("no dimension {dimension}"));
    serde_json::to_value(&verdict.evidence).expect("evidence serialises")
}

/// Reads a published JSON file with correctly rounded floats. serde_json's default float
/// parser (without its `float_roundtrip` feature) may land one unit in the last place
/// away from the printed value, which is exactly the digit compared here; JSON is YAML,
/// and the YAML parser reads floats with Rust's exact `str::parse`.
fn read_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_saphyr::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Runs whose published `avg_*`/`std_*` were summed left to right (plain float addition,
/// as Python's `sum` before 3.12); all other runs were summed with compensation (Python
/// 3.12's `sum`). Found by recomputing both ways: each run matches exactly one. The
/// per-group blocks (`by_*`) of every run use running totals, i.e. left to right.
const SEQUENTIALLY_SUMMED: &[&str] = &[
    "exp1s2_qwen35_thinking",
    "exp1s3_qwen35_no_thinking",
    "exp1s4_qwen3_32b_thinking",
    "exp1s5_qwen3_32b_no_thinking",
    "exp1s6_kimi_k2_thinking",
    "exp1s7_deepseek_v3",
    "exp2f_frontier_arms_race",
];

/// Values that cannot be matched: (run, value label, reason). Currently none of the
/// `summary.json` values; the published-table difference is listed here too.
const KNOWN_DIFFERENCES: &[(&str, &str, &str)] = &[(
    "exp-20260228_000753",
    "paper: Nova Pro easy F1",
    "the 29 easy Nova Pro games give a macro F1 of 65.550082%, which rounds to 65.6; the paper \
     prints 65.5 (truncated, or taken before the run was complete)",
)];

/// Published figures not recomputable from these run folders, kept as a record of why
/// they are not compared (the data they came from is not in the runs).
#[allow(dead_code)]
const NOT_REPRODUCIBLE: &[(&str, &str)] = &[
    (
        "E3 manifest accuracy 86.6 / 43.5 / 64.5 %",
        "computed from per-game manifest_validation.json files the framework git-ignores; the \
         run records give 96.6 / 76.6 / 86.2 % (checked in PUBLISHED)",
    ),
    (
        "E3 adjusted recall 95.0 ± 3.3 / 89.5 ± 6.8",
        "same per-game files; the records give 94.0 / 89.4 / 92.1 % (checked in PUBLISHED)",
    ),
    (
        "E3 phantom concordance 31/226 and 122/213",
        "same per-game files; phantom_concordance is 0 in every stored record",
    ),
    (
        "inter-rater kappa tables",
        "no committed run used the multi-model consensus judge",
    ),
];

/// True when `got` equals `want` to the digits `want` is printed with.
fn same_to_printed(got: &Value, want: &Value) -> bool {
    match (want.as_u64(), got.as_f64()) {
        (Some(w), Some(g)) if want.is_u64() => g == w as f64,
        _ => match (got.as_f64(), want.as_f64()) {
            (Some(g), Some(w)) => {
                // Rust and Python both print the shortest string that round-trips, so
                // this recovers the decimals summary.json was written with.
                let printed = format!("{w}");
                let decimals = printed.split_once('.').map_or(0, |(_, f)| f.len());
                format!("{g:.decimals$}") == format!("{w:.decimals$}")
            }
            _ => false,
        },
    }
}

/// One comparison: label, our value, the published value.
type Check = (String, Value, Value);

/// The record of group `key` in `records` (by field `by`).
fn group<'a>(records: &'a Value, by: &str, key: &str) -> Option<&'a Value> {
    records
        .as_array()?
        .iter()
        .find(|r| r[by].as_str() == Some(key))
}

/// Pairs every value of `summary` with the suite's evidence for it.
fn summary_checks(result: &RunResult, summary: &Value, sequential: bool) -> Vec<Check> {
    let detection = evidence(result, "detection_quality");
    let overall = if sequential {
        &detection["overall"]
    } else {
        &detection["overall_compensated"]
    };
    let totals = &detection["totals"];
    let mut checks: Vec<Check> = Vec::new();
    let mut push = |label: String, got: &Value, want: &Value| {
        checks.push((label, got.clone(), want.clone()));
    };
    let games = totals["games"].as_u64().unwrap_or(0);
    let failed = totals["failed"].as_u64().unwrap_or(0);
    push(
        "completed_games".into(),
        &totals["games"],
        &summary["completed_games"],
    );
    push(
        "failed_games".into(),
        &totals["failed"],
        &summary["failed_games"],
    );
    push(
        "total_games".into(),
        &Value::from(games + failed),
        &summary["total_games"],
    );
    let metrics = &summary["metrics"];
    for (published, ours) in [
        ("precision", "precision"),
        ("recall", "recall"),
        ("f1_score", "f1"),
        ("evasion_rate", "evasion"),
    ] {
        for (prefix, stat) in [("avg", "mean"), ("std", "std")] {
            let key = format!("{prefix}_{published}");
            if let Some(want) = metrics.get(&key) {
                push(
                    format!("metrics.{key}"),
                    &overall["macro"][ours][stat],
                    want,
                );
            }
        }
    }
    push(
        "metrics.total_vulnerabilities".into(),
        &totals["vulnerabilities"],
        &metrics["total_vulnerabilities"],
    );
    push(
        "metrics.total_findings".into(),
        &totals["findings"],
        &metrics["total_findings"],
    );
    let condition = evidence(result, "condition_breakdown");
    let difficulty = evidence(result, "difficulty_breakdown");
    let blocks = [
        ("by_difficulty", &difficulty["per_difficulty"], "difficulty"),
        ("by_condition", &condition["per_condition"], "condition"),
        (
            "by_vuln_source",
            &condition["per_vuln_source"],
            "vuln_source",
        ),
    ];
    for (block, records, by) in blocks {
        let Some(published) = summary.get(block).and_then(Value::as_object) else {
            continue;
        };
        let ours: Vec<&str> = records
            .as_array()
            .map(|a| a.iter().filter_map(|r| r[by].as_str()).collect())
            .unwrap_or_default();
        let theirs: Vec<&str> = published.keys().map(String::as_str).collect();
        push(
            format!("{block} groups"),
            &Value::from(ours.join(",")),
            &Value::from(theirs.join(",")),
        );
        for (key, want) in published {
            let scores = group(records, by, key).map_or(Value::Null, |r| r["scores"].clone());
            push(format!("{block}.{key}.count"), &scores["n"], &want["count"]);
            for metric in ["precision", "recall", "f1", "evasion"] {
                push(
                    format!("{block}.{key}.{metric}"),
                    &scores["macro"][metric]["sum"],
                    &want[metric],
                );
                push(
                    format!("{block}.{key}.avg_{metric}"),
                    &scores["macro"][metric]["mean"],
                    &want[format!("avg_{metric}")],
                );
            }
        }
    }
    checks
}

/// Runs `checks`, returning (matched, unexpected mismatches, known differences hit).
fn tally(run: &str, checks: &[Check]) -> (usize, Vec<String>, usize) {
    let (mut matched, mut failures, mut known) = (0, Vec::new(), 0);
    for (label, got, want) in checks {
        let equal = if want.is_string() {
            got == want
        } else {
            same_to_printed(got, want)
        };
        if equal {
            matched += 1;
        } else if KNOWN_DIFFERENCES
            .iter()
            .any(|(r, l, _)| *r == run && l == label)
        {
            known += 1;
        } else {
            failures.push(format!("{run}: {label}: suite {got}, published {want}"));
        }
    }
    (matched, failures, known)
}

#[test]
fn suite_validates_clean() {
    let env = caldera::environment();
    let (suite, diags) = load_suite(&suite_dir(), &env);
    assert!(suite.is_some());
    assert!(diags.is_empty(), "{diags:#?}");
    // The same through the command's own entry point.
    let diags = caldera::validate_path(&suite_dir(), &Default::default(), true);
    assert!(diags.is_empty(), "{diags:#?}");
}

#[test]
fn sample_runs_offline_and_matches_its_summary() {
    let result = run_suite(None);
    let scores: Vec<(&str, Option<f64>)> = result
        .dimensions
        .iter()
        .map(|d| (d.name.as_str(), d.score.map(|s| s.value())))
        .collect();
    assert_eq!(
        scores,
        [
            ("detection_quality", Some(3.0)),
            ("model_breakdown", Some(3.0)),
            ("condition_breakdown", Some(3.0)),
            ("difficulty_breakdown", Some(3.0)),
            ("manifest_validation", Some(4.0)),
        ]
    );
    assert!(result.dimensions.iter().all(|d| d.status == Status::Scored));
    assert!(
        result
            .dimensions
            .iter()
            .all(|d| d.assertion_failures.is_empty()),
        "assertions failed on the sample"
    );
    assert_eq!(result.decision, "WEAK_PASS");
    // 0.4 x 3 + 0.2 x 3 + 0.2 x 3 + 0.1 x 3 + 0.1 x 4 = 3.1
    assert!((result.overall_score.unwrap() - 3.1).abs() < 1e-9);

    // The README's figures.
    let detection = evidence(&result, "detection_quality");
    assert_eq!(detection["macro_f1"], 74.8);
    assert_eq!(detection["macro"]["precision"], 69.6);
    assert_eq!(detection["macro"]["recall"], 82.4);
    assert_eq!(detection["macro"]["evasion"], 12.0);
    assert_eq!(detection["totals"]["games"], 18);
    assert_eq!(detection["totals"]["failed"], 1);
    assert_eq!(detection["silent_games"], 1);
    assert_eq!(detection["empty_truth_games"], 1);
    assert_eq!(detection["inconsistent_games"], serde_json::json!([]));
    let micro = &detection["overall"]["micro"];
    assert_eq!(
        (
            micro["tp"].as_u64(),
            micro["fp"].as_u64(),
            micro["fn"].as_u64()
        ),
        (Some(52), Some(16), Some(8))
    );
    assert_eq!(evidence(&result, "model_breakdown")["weakest_f1"], 66.0);
    assert_eq!(
        evidence(&result, "condition_breakdown")["worst_evasion"],
        13.9
    );
    assert_eq!(
        evidence(&result, "difficulty_breakdown")["weakest_f1"],
        70.2
    );
    let manifest = evidence(&result, "manifest_validation");
    // 60 / 70 = 85.71...%
    assert_eq!(manifest["pooled_accuracy"], 85.7);
    assert_eq!(
        (manifest["confirmed"].as_u64(), manifest["claimed"].as_u64()),
        (Some(60), Some(70))
    );

    // Its own summary.json, written by the sample's generator with compensated sums.
    let summary = read_json(&sample_dir().join("summary.json"));
    let checks = summary_checks(&result, &summary, false);
    let (matched, failures, _) = tally("sample", &checks);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert_eq!(matched, checks.len());
    assert!(matched >= 60, "only {matched} values compared");
}

#[test]
fn reference_runs_reproduce_their_summaries() {
    let Some(runs) = reference_runs() else { return };
    let mut failures = Vec::new();
    let mut table = vec![format!(
        "{:<32} {:>6} {:>8} {:>6}",
        "run", "games", "matched", "known"
    )];
    let mut total = 0;
    for dir in &runs {
        let run = run_name(dir);
        let result = run_suite(Some(dir.clone()));
        let detection = evidence(&result, "detection_quality");
        // Every game's counts reproduce its stored ratios, and none is lost.
        assert_eq!(
            detection["inconsistent_games"],
            serde_json::json!([]),
            "{run}"
        );
        assert_eq!(
            detection["totals"]["games"], detection["totals"]["records"],
            "{run}"
        );
        let summary = read_json(&dir.join("summary.json"));
        let checks = summary_checks(
            &result,
            &summary,
            SEQUENTIALLY_SUMMED.contains(&run.as_str()),
        );
        let (matched, mut bad, known) = tally(&run, &checks);
        failures.append(&mut bad);
        total += matched;
        table.push(format!(
            "{run:<32} {:>6} {matched:>5}/{:<3} {known:>5}",
            detection["totals"]["games"],
            checks.len()
        ));
    }
    println!("{}", table.join("\n"));
    assert!(
        failures.is_empty(),
        "{} unlisted mismatches:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(runs.len() >= 14, "only {} runs found", runs.len());
    println!(
        "{total} published values reproduced over {} runs",
        runs.len()
    );
}

/// Paper-table figures (percent, one decimal): (run, label, dimension, JSON pointer into
/// its evidence, value printed). Group records are addressed by key in the pointer's
/// first segment, `per_x[key]`.
const PUBLISHED: &[(&str, &str, &str, &str, f64)] = &[
    (
        "exp1_stratification_v2",
        "Nova Pro F1",
        "model_breakdown",
        "per_model[amazon.nova-pro-v1:0]/scores/macro/f1/mean",
        81.1,
    ),
    (
        "exp1_stratification_v2",
        "Nova Pro recall",
        "model_breakdown",
        "per_model[amazon.nova-pro-v1:0]/scores/macro/recall/mean",
        88.7,
    ),
    (
        "exp1_stratification_v2",
        "Nova Pro precision",
        "model_breakdown",
        "per_model[amazon.nova-pro-v1:0]/scores/macro/precision/mean",
        76.5,
    ),
    (
        "exp1_stratification_v2",
        "Nova Pro evasion",
        "model_breakdown",
        "per_model[amazon.nova-pro-v1:0]/scores/macro/evasion/mean",
        6.1,
    ),
    (
        "exp1s_deepseek_r1",
        "DeepSeek-R1 F1",
        "detection_quality",
        "overall/macro/f1/mean",
        91.5,
    ),
    (
        "exp1s_deepseek_r1",
        "DeepSeek-R1 recall",
        "detection_quality",
        "overall/macro/recall/mean",
        95.7,
    ),
    (
        "exp1s_deepseek_r1",
        "DeepSeek-R1 precision",
        "detection_quality",
        "overall/macro/precision/mean",
        89.0,
    ),
    (
        "exp1s_deepseek_r1",
        "DeepSeek-R1 evasion",
        "detection_quality",
        "overall/macro/evasion/mean",
        4.3,
    ),
    (
        "exp-20260228_060523",
        "baseline F1",
        "condition_breakdown",
        "per_condition[baseline]/scores/macro/f1/mean",
        77.9,
    ),
    (
        "exp-20260228_060523",
        "baseline evasion",
        "condition_breakdown",
        "per_condition[baseline]/scores/macro/evasion/mean",
        8.2,
    ),
    (
        "exp-20260228_060523",
        "red pipeline F1",
        "condition_breakdown",
        "per_condition[red_pipeline]/scores/macro/f1/mean",
        82.7,
    ),
    (
        "exp-20260228_060523",
        "red pipeline evasion",
        "condition_breakdown",
        "per_condition[red_pipeline]/scores/macro/evasion/mean",
        12.9,
    ),
    (
        "exp-20260228_060523",
        "blue ensemble F1",
        "condition_breakdown",
        "per_condition[blue_ensemble]/scores/macro/f1/mean",
        84.9,
    ),
    (
        "exp-20260228_060523",
        "blue ensemble evasion",
        "condition_breakdown",
        "per_condition[blue_ensemble]/scores/macro/evasion/mean",
        5.2,
    ),
    (
        "exp-20260228_060523",
        "full multi-agent F1",
        "condition_breakdown",
        "per_condition[full_multiagent]/scores/macro/f1/mean",
        68.3,
    ),
    (
        "exp-20260228_060523",
        "full multi-agent evasion",
        "condition_breakdown",
        "per_condition[full_multiagent]/scores/macro/evasion/mean",
        31.7,
    ),
    (
        "exp3_novel_v2",
        "database F1",
        "condition_breakdown",
        "per_condition[database]/scores/macro/f1/mean",
        85.5,
    ),
    (
        "exp3_novel_v2",
        "database recall",
        "condition_breakdown",
        "per_condition[database]/scores/macro/recall/mean",
        94.0,
    ),
    (
        "exp3_novel_v2",
        "database evasion",
        "condition_breakdown",
        "per_condition[database]/scores/macro/evasion/mean",
        6.0,
    ),
    (
        "exp3_novel_v2",
        "novel F1",
        "condition_breakdown",
        "per_condition[novel]/scores/macro/f1/mean",
        69.4,
    ),
    (
        "exp3_novel_v2",
        "novel recall",
        "condition_breakdown",
        "per_condition[novel]/scores/macro/recall/mean",
        87.9,
    ),
    (
        "exp3_novel_v2",
        "novel evasion",
        "condition_breakdown",
        "per_condition[novel]/scores/macro/evasion/mean",
        10.4,
    ),
    (
        "exp3_novel_v2",
        "mixed F1",
        "condition_breakdown",
        "per_condition[mixed]/scores/macro/f1/mean",
        75.6,
    ),
    (
        "exp3_novel_v2",
        "mixed recall",
        "condition_breakdown",
        "per_condition[mixed]/scores/macro/recall/mean",
        90.5,
    ),
    (
        "exp3_novel_v2",
        "mixed evasion",
        "condition_breakdown",
        "per_condition[mixed]/scores/macro/evasion/mean",
        7.8,
    ),
    (
        "exp3_novel_v2",
        "database pooled manifest accuracy",
        "manifest_validation",
        "per_condition[database]/accuracy",
        96.6,
    ),
    (
        "exp3_novel_v2",
        "novel pooled manifest accuracy",
        "manifest_validation",
        "per_condition[novel]/accuracy",
        76.6,
    ),
    (
        "exp3_novel_v2",
        "mixed pooled manifest accuracy",
        "manifest_validation",
        "per_condition[mixed]/accuracy",
        86.2,
    ),
    (
        "exp3_novel_v2",
        "database adjusted recall",
        "manifest_validation",
        "per_condition[database]/adjusted_recall",
        94.0,
    ),
    (
        "exp3_novel_v2",
        "novel adjusted recall",
        "manifest_validation",
        "per_condition[novel]/adjusted_recall",
        89.4,
    ),
    (
        "exp3_novel_v2",
        "mixed adjusted recall",
        "manifest_validation",
        "per_condition[mixed]/adjusted_recall",
        92.1,
    ),
    (
        "exp4_difficulty_v2",
        "easy F1",
        "difficulty_breakdown",
        "per_difficulty[easy]/scores/macro/f1/mean",
        59.5,
    ),
    (
        "exp4_difficulty_v2",
        "medium F1",
        "difficulty_breakdown",
        "per_difficulty[medium]/scores/macro/f1/mean",
        71.3,
    ),
    (
        "exp4_difficulty_v2",
        "hard F1",
        "difficulty_breakdown",
        "per_difficulty[hard]/scores/macro/f1/mean",
        84.1,
    ),
    (
        "exp4_difficulty_v2",
        "easy evasion",
        "difficulty_breakdown",
        "per_difficulty[easy]/scores/macro/evasion/mean",
        3.3,
    ),
    (
        "exp4_difficulty_v2",
        "medium evasion",
        "difficulty_breakdown",
        "per_difficulty[medium]/scores/macro/evasion/mean",
        7.8,
    ),
    (
        "exp4_difficulty_v2",
        "hard evasion",
        "difficulty_breakdown",
        "per_difficulty[hard]/scores/macro/evasion/mean",
        8.7,
    ),
    (
        "exp-20260228_142503",
        "standard F1",
        "condition_breakdown",
        "per_condition[standard]/scores/macro/f1/mean",
        81.1,
    ),
    (
        "exp-20260228_142503",
        "standard evasion",
        "condition_breakdown",
        "per_condition[standard]/scores/macro/evasion/mean",
        2.2,
    ),
    (
        "exp-20260228_142503",
        "debate F1",
        "condition_breakdown",
        "per_condition[debate]/scores/macro/f1/mean",
        79.3,
    ),
    (
        "exp-20260228_142503",
        "debate evasion",
        "condition_breakdown",
        "per_condition[debate]/scores/macro/evasion/mean",
        10.3,
    ),
    (
        "exp-20260228_000753",
        "Sonnet easy F1",
        "difficulty_breakdown",
        "per_model_difficulty[us.anthropic.claude-3-5-sonnet-20241022-v2:0/easy]/scores/macro/f1/mean",
        68.2,
    ),
    (
        "exp-20260228_000753",
        "Sonnet medium F1",
        "difficulty_breakdown",
        "per_model_difficulty[us.anthropic.claude-3-5-sonnet-20241022-v2:0/medium]/scores/macro/f1/mean",
        78.8,
    ),
    (
        "exp-20260228_000753",
        "Sonnet hard F1",
        "difficulty_breakdown",
        "per_model_difficulty[us.anthropic.claude-3-5-sonnet-20241022-v2:0/hard]/scores/macro/f1/mean",
        91.3,
    ),
    (
        "exp-20260228_000753",
        "Haiku easy F1",
        "difficulty_breakdown",
        "per_model_difficulty[us.anthropic.claude-3-5-haiku-20241022-v1:0/easy]/scores/macro/f1/mean",
        66.7,
    ),
    (
        "exp-20260228_000753",
        "Haiku medium F1",
        "difficulty_breakdown",
        "per_model_difficulty[us.anthropic.claude-3-5-haiku-20241022-v1:0/medium]/scores/macro/f1/mean",
        76.4,
    ),
    (
        "exp-20260228_000753",
        "Haiku hard F1",
        "difficulty_breakdown",
        "per_model_difficulty[us.anthropic.claude-3-5-haiku-20241022-v1:0/hard]/scores/macro/f1/mean",
        83.9,
    ),
    (
        "exp-20260228_000753",
        "paper: Nova Pro easy F1",
        "difficulty_breakdown",
        "per_model_difficulty[amazon.nova-pro-v1:0/easy]/scores/macro/f1/mean",
        65.5,
    ),
];

/// Resolves `per_x[key]/rest` in `evidence`: the record of list `per_x` whose key field
/// (`model/difficulty` for a pair) equals `key`, then the JSON pointer `rest`.
fn resolve(evidence: &Value, path: &str) -> Option<Value> {
    let Some((head, rest)) = path.split_once("]/") else {
        return evidence.pointer(&format!("/{path}")).cloned();
    };
    let (list, key) = head.split_once('[')?;
    let record = evidence[list].as_array()?.iter().find(|r| {
        let fields = ["model", "condition", "difficulty", "vuln_source"];
        let own: Vec<&str> = fields.iter().filter_map(|f| r[*f].as_str()).collect();
        own.join("/") == key
    })?;
    record.pointer(&format!("/{rest}")).cloned()
}

#[test]
fn reference_runs_reproduce_published_tables() {
    let Some(runs) = reference_runs() else { return };
    let mut failures = Vec::new();
    let (mut matched, mut known) = (0, 0);
    let mut cache: Vec<(String, RunResult)> = Vec::new();
    for &(run, label, dimension, path, printed) in PUBLISHED {
        let Some(dir) = runs.iter().find(|d| run_name(d) == run) else {
            failures.push(format!("{run}: run folder missing"));
            continue;
        };
        if !cache.iter().any(|(r, _)| r == run) {
            cache.push((run.to_owned(), run_suite(Some(dir.clone()))));
        }
        let result = &cache.iter().find(|(r, _)| r == run).unwrap().1;
        let got = resolve(&evidence(result, dimension), path);
        // Shares are fractions in the evidence and percentages in the paper; manifest
        // figures are already percentages rounded to one decimal.
        let pct = got.as_ref().and_then(Value::as_f64).map(|v| {
            if dimension == "manifest_validation" {
                v
            } else {
                v * 100.0
            }
        });
        let ok = pct.is_some_and(|v| format!("{v:.1}") == format!("{printed:.1}"));
        if ok {
            matched += 1;
        } else if KNOWN_DIFFERENCES
            .iter()
            .any(|(r, l, _)| *r == run && *l == label)
        {
            known += 1;
            assert!(pct.is_some(), "{run}: {label} not computed");
        } else {
            failures.push(format!(
                "{run}: {label}: suite {pct:?}, published {printed}"
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert_eq!(matched + known, PUBLISHED.len());
    println!("{matched} published table figures reproduced, {known} known difference(s)");
}
