//! Parity of the bundled suites with the evidence the original framework's judges
//! recorded, one spec per tool in `tests/parity/<tool>.yaml`: which reference datasets to
//! run, which named inputs they take, and every deliberate difference with its reason.
//!
//! Each dataset is run through the suite in heuristic mode; every leaf of the reference's
//! recorded evidence is compared with caldera's evidence for the same dimension. Equality
//! is strict (`0` is not `0.0`, `true` is not `1`). The test fails on a difference that is
//! not listed, and on a listed one that no longer occurs, so the lists stay honest.
//!
//! Where the reference also recorded the dimension's `ground_truth_assertions`, the
//! assertion outcome is compared too, as two aspects: `passed` (the framework's flag
//! against caldera's `ground_truth_passed`, where null, "some assertion did not run", is a
//! difference from either) and `failures` (how many failures each recorded). The messages
//! are worded differently, so they are compared loosely, as a third aspect, `numbers`: where
//! both sides failed the same number of times, the numbers their messages quote (counts,
//! rates, ranges) must be the same, in any order. Deliberate differences in outcome are
//! listed apart from the evidence ones, under `assertions:` in the spec, each with the
//! aspect and a reason; they are held to the same rule (an unlisted difference fails, and so
//! does a listed one that no longer occurs).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use caldera::Overrides;
use caldera::Verdict;
use caldera::load_suite;
use caldera::{RunOptions, run_heuristic};
use indexmap::IndexMap;
use serde::Deserialize;
use serde_json::{Value, json};

/// `tests/parity/<tool>.yaml`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ParitySpec {
    /// The suite folder under `judges.d/`.
    suite: String,
    /// The reference folder under `../shared/reference/`.
    reference: String,
    /// Dataset name (the `<dataset>__` prefix of the reference files) -> its inputs.
    datasets: IndexMap<String, Dataset>,
    /// Dimension -> reference file stem, where the two differ.
    #[serde(default)]
    files: IndexMap<String, String>,
    /// Deliberate differences in evidence.
    #[serde(default)]
    differences: Vec<Listed>,
    /// Deliberate differences in assertion outcomes.
    #[serde(default)]
    assertions: Vec<ListedOutcome>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Dataset {
    results: String,
    #[serde(default)]
    ground_truth: Option<String>,
    /// Named input -> file under the reference folder; null runs without it.
    #[serde(default)]
    inputs: IndexMap<String, Option<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Listed {
    dataset: String,
    dimension: String,
    prefix: String,
    reason: String,
}

/// One deliberate difference in a dimension's assertion outcome.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ListedOutcome {
    dataset: String,
    dimension: String,
    aspect: Aspect,
    reason: String,
}

/// What of an assertion outcome is compared.
#[derive(Debug, Deserialize, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Aspect {
    /// Whether every assertion held.
    Passed,
    /// How many failed.
    Failures,
    /// The numbers the failure messages quote, as a sorted list: compared only where both
    /// sides failed the same number of times.
    Numbers,
}

impl std::fmt::Display for Aspect {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Aspect::Passed => "passed",
            Aspect::Failures => "failures",
            Aspect::Numbers => "numbers",
        })
    }
}

/// Every number written in `messages`, read as a float and written back (so `50.0` and
/// `50` are the same number), sorted: messages are worded differently on the two sides,
/// but the counts and rates they quote should be the same.
fn numbers<'a>(messages: impl Iterator<Item = &'a str>) -> Vec<String> {
    let mut found = Vec::new();
    for message in messages {
        let mut current = String::new();
        for c in message.chars().chain(std::iter::once(' ')) {
            if c.is_ascii_digit() || (c == '.' && !current.is_empty() && !current.contains('.')) {
                current.push(c);
            } else if !current.is_empty() {
                let n: f64 = current.trim_end_matches('.').parse().expect("digits");
                found.push(n);
                current.clear();
            }
        }
    }
    found.sort_by(f64::total_cmp);
    found.into_iter().map(|n| n.to_string()).collect()
}

/// The assertion outcome the framework recorded in `recorded` (a reference file) beside
/// caldera's for the same dimension: each aspect with the framework's value and caldera's.
/// Empty when the reference recorded no `ground_truth_assertions`.
pub(crate) fn outcomes(recorded: &Value, verdict: &Verdict) -> Vec<(Aspect, Value, Value)> {
    let Some(gt) = recorded.get("ground_truth_assertions") else {
        return Vec::new();
    };
    let theirs: Vec<&str> = gt["failures"]
        .as_array()
        .map(|f| f.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let ours = &verdict.ground_truth_failures;
    let mut compared = vec![
        (
            Aspect::Passed,
            gt["passed"].clone(),
            json!(verdict.ground_truth_passed),
        ),
        (Aspect::Failures, json!(theirs.len()), json!(ours.len())),
    ];
    if !theirs.is_empty() && theirs.len() == ours.len() {
        compared.push((
            Aspect::Numbers,
            json!(numbers(theirs.into_iter())),
            json!(numbers(ours.iter().map(String::as_str))),
        ));
    }
    compared
}

#[derive(Default, Clone, Copy)]
struct Tally {
    compared: usize,
    equal: usize,
    listed: usize,
}

impl std::ops::AddAssign for Tally {
    fn add_assign(&mut self, o: Tally) {
        self.compared += o.compared;
        self.equal += o.equal;
        self.listed += o.listed;
    }
}

/// Every leaf of `value` with its JSON pointer; empty lists and maps are leaves too.
pub(crate) fn leaves(value: &Value, pointer: String, out: &mut Vec<(String, Value)>) {
    match value {
        Value::Object(map) if !map.is_empty() => {
            for (k, v) in map {
                let key = k.replace('~', "~0").replace('/', "~1");
                leaves(v, format!("{pointer}/{key}"), out);
            }
        }
        Value::Array(items) if !items.is_empty() => {
            for (i, v) in items.iter().enumerate() {
                leaves(v, format!("{pointer}/{i}"), out);
            }
        }
        leaf => out.push((pointer, leaf.clone())),
    }
}

/// Whether `pointer` is `prefix` or lies under it.
pub(crate) fn under(pointer: &str, prefix: &str) -> bool {
    pointer == prefix
        || pointer
            .strip_prefix(prefix)
            .is_some_and(|rest| rest.starts_with('/'))
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn specs() -> Vec<(String, ParitySpec)> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(root().join("tests/parity"))
        .map(|d| d.filter_map(Result::ok).map(|e| e.path()).collect())
        .unwrap_or_default();
    files.retain(|p| p.extension().is_some_and(|x| x == "yaml"));
    files.sort();
    files
        .into_iter()
        .map(|p| {
            let text = std::fs::read_to_string(&p).expect("readable parity spec");
            let spec: ParitySpec =
                serde_saphyr::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            (p.file_stem().unwrap().to_string_lossy().into_owned(), spec)
        })
        .collect()
}

/// Compares one tool; returns its tally per dataset and the problems found.
fn check_tool(tool: &str, spec: &ParitySpec, reference: &Path) -> (Vec<String>, Vec<String>) {
    let env = caldera::environment();
    let (suite, diags) = load_suite(&root().join("judges.d").join(&spec.suite), &env);
    let suite = suite.unwrap_or_else(|| panic!("{tool}: the suite does not load: {diags:#?}"));
    let mut used = vec![false; spec.differences.len()];
    let mut used_outcomes = vec![false; spec.assertions.len()];
    let mut problems = Vec::new();
    let mut lines = Vec::new();
    for (dataset, ds) in &spec.datasets {
        let options = RunOptions {
            overrides: Overrides {
                results: Some(reference.join(&ds.results)),
                ground_truth: ds.ground_truth.as_ref().map(|g| reference.join(g)),
                inputs: ds
                    .inputs
                    .iter()
                    .map(|(k, v)| (k.clone(), v.as_ref().map(|p| reference.join(p))))
                    .collect(),
                repos: Vec::new(),
            },
            ..RunOptions::default()
        };
        let result = run_heuristic(&env, &suite, &options)
            .unwrap_or_else(|d| panic!("{tool} {dataset}: inputs not read: {d:#?}"));
        let mut per_dim: BTreeMap<String, Tally> = BTreeMap::new();
        let mut asserted = Tally::default();
        for verdict in &result.dimensions {
            let stem = spec.files.get(&verdict.name).unwrap_or(&verdict.name);
            let file = reference
                .join("reference")
                .join(format!("{dataset}__{stem}.json"));
            let Ok(text) = std::fs::read_to_string(&file) else {
                continue;
            };
            let recorded: Value = serde_json::from_str(&text).expect("reference is JSON");
            let ours = serde_json::to_value(&verdict.evidence).expect("evidence serialises");
            let mut expected = Vec::new();
            leaves(&recorded["evidence"], String::new(), &mut expected);
            let tally = per_dim.entry(verdict.name.clone()).or_default();
            for (pointer, want) in expected {
                tally.compared += 1;
                let got = ours.pointer(&pointer);
                if got == Some(&want) {
                    tally.equal += 1;
                    continue;
                }
                let listed = spec
                    .differences
                    .iter()
                    .enumerate()
                    .filter(|(_, l)| {
                        &l.dataset == dataset
                            && l.dimension == verdict.name
                            && under(&pointer, &l.prefix)
                    })
                    .max_by_key(|(_, l)| l.prefix.len());
                match listed {
                    Some((i, _)) => {
                        used[i] = true;
                        tally.listed += 1;
                    }
                    None => problems.push(format!(
                        "{tool} {dataset} {} {pointer}: framework {want}, caldera {}",
                        verdict.name,
                        got.map_or_else(|| "(missing)".to_owned(), Value::to_string)
                    )),
                }
            }
            for (aspect, want, got) in outcomes(&recorded, verdict) {
                asserted.compared += 1;
                if want == got {
                    asserted.equal += 1;
                    continue;
                }
                let listed = spec.assertions.iter().position(|l| {
                    &l.dataset == dataset && l.dimension == verdict.name && l.aspect == aspect
                });
                match listed {
                    Some(i) => {
                        used_outcomes[i] = true;
                        asserted.listed += 1;
                    }
                    None => problems.push(format!(
                        "{tool} {dataset} {} assertions {aspect}: framework {want}, caldera {got} \
                         (framework failures {}, caldera failures {:?})",
                        verdict.name,
                        recorded["ground_truth_assertions"]["failures"],
                        verdict.ground_truth_failures
                    )),
                }
            }
        }
        let mut total = Tally::default();
        for t in per_dim.values() {
            total += *t;
        }
        lines.push(format!(
            "{tool:<18} {dataset:<10} evidence {:>5} compared {:>5} equal {:>5} listed; \
             assertion outcomes {:>3} compared {:>3} equal {:>3} listed",
            total.compared,
            total.equal,
            total.listed,
            asserted.compared,
            asserted.equal,
            asserted.listed
        ));
    }
    for (l, u) in spec.differences.iter().zip(&used) {
        if !u {
            problems.push(format!(
                "{tool}: listed difference no longer occurs (remove it): {} {} {} ({})",
                l.dataset, l.dimension, l.prefix, l.reason
            ));
        }
    }
    for (l, u) in spec.assertions.iter().zip(&used_outcomes) {
        if !u {
            problems.push(format!(
                "{tool}: listed assertion outcome difference no longer occurs (remove it): \
                 {} {} {} ({})",
                l.dataset, l.dimension, l.aspect, l.reason
            ));
        }
    }
    (lines, problems)
}

#[test]
fn bundled_suites_match_the_framework_where_its_logic_is_sound() {
    let all = specs();
    assert!(!all.is_empty(), "no parity spec under tests/parity");
    let mut problems = Vec::new();
    for (tool, spec) in &all {
        assert_eq!(
            tool, &spec.suite,
            "tests/parity/{tool}.yaml names another suite"
        );
        let Some(reference) = crate::shared::shared_path(
            &format!("reference/{}", spec.reference),
            &format!("the {tool} parity check"),
        ) else {
            continue;
        };
        let (lines, found) = check_tool(tool, spec, &reference);
        for l in lines {
            println!("{l}");
        }
        problems.extend(found);
    }
    assert!(
        problems.is_empty(),
        "parity differences:\n{}",
        problems.join("\n")
    );
}

#[test]
fn every_difference_has_a_reason() {
    for (tool, spec) in specs() {
        for l in &spec.differences {
            assert!(
                !l.reason.trim().is_empty() && (l.prefix.starts_with('/') || l.prefix.is_empty()),
                "{tool}: {} {} {}: a difference needs a JSON-pointer prefix and a reason",
                l.dataset,
                l.dimension,
                l.prefix
            );
        }
        for l in &spec.assertions {
            assert!(
                !l.reason.trim().is_empty(),
                "{tool}: {} {} {}: an assertion outcome difference needs a reason",
                l.dataset,
                l.dimension,
                l.aspect
            );
        }
    }
}

#[test]
fn failure_messages_are_compared_by_the_numbers_they_quote() {
    let read = |m: &[&str]| numbers(m.iter().copied());
    assert_eq!(
        read(&["Severity inflation: 2/2 (100%) marked HIGH"]),
        ["2", "2", "100"]
    );
    assert_eq!(
        read(&["rate too low: 0.0% (expected >= 50%).", "found 3"]),
        read(&["found 3", "rate 0% below the 50 floor"])
    );
    assert_ne!(read(&["expected 4 projects, found 2"]), read(&["found 4"]));
    assert!(read(&["No evaluation results found"]).is_empty());
}
