//! What a decision rests on: an errored or unscored judge never raises it, the exact
//! score decides (never the rounded one), scores are integers for single verdicts, and
//! an errored judge does not claim its assertions passed. Each case is run through the
//! real binary on a copy of the bundled trivy suite or on a small suite written here.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::binary::{Caldera, Ran};

/// Copies the bundled trivy suite, its prompts and sample data into `root`, keeping the
/// relative layout the suite's paths expect.
pub fn copy_trivy(root: &Path) {
    let src = Path::new(env!("CARGO_MANIFEST_DIR"));
    for dir in ["judges.d/trivy", "prompts/trivy", "ground-truth/trivy"] {
        copy_dir(&src.join(dir), &root.join(dir));
    }
}

pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("read_dir") {
        let entry = entry.expect("entry");
        let target = to.join(entry.file_name());
        if entry.path().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copy");
        }
    }
}

/// Runs `caldera run <suite> --heuristic` in `root`, its result read from `result.json`.
fn run(root: &Path, suite: &str, extra: &[&str]) -> Ran {
    Caldera::new()
        .dir(root)
        .args(["run", suite, "--heuristic"])
        .out(root.join("result.json"))
        .args(extra)
        .run()
}

fn set_field(file: &Path, pointer: &str, value: Value) {
    let mut doc: Value =
        serde_json::from_str(&std::fs::read_to_string(file).expect("read")).expect("json");
    *doc.pointer_mut(pointer).expect("pointer exists") = value;
    std::fs::write(file, serde_json::to_string_pretty(&doc).expect("json")).expect("write");
}

fn dimension<'a>(result: &'a Value, name: &str) -> &'a Value {
    result["dimensions"]
        .as_array()
        .expect("dimensions")
        .iter()
        .find(|d| d["name"] == name)
        .unwrap_or_else(|| panic!("no dimension {name}"))
}

fn trivy_copy() -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().expect("tempdir");
    copy_trivy(tmp.path());
    let scan = tmp
        .path()
        .join("ground-truth/trivy/outputs/critical-cves.json");
    (tmp, scan)
}

/// The reproducer of the report: a tool that writes `summary.medium_count: "x"` breaks two
/// judges. Before, they were left out and WEAK_PASS 3.30 became PASS 3.52 with exit 0.
#[test]
fn a_broken_field_cannot_raise_the_decision() {
    let (tmp, scan) = trivy_copy();
    let Ran {
        code, result: base, ..
    } = run(tmp.path(), "judges.d/trivy", &[]);
    assert_eq!(code, Some(0));
    assert_eq!(base["decision"], "WEAK_PASS");

    set_field(&scan, "/summary/medium_count", Value::from("x"));
    let Ran {
        code,
        result,
        stderr,
        ..
    } = run(tmp.path(), "judges.d/trivy", &[]);
    let errored: Vec<&str> = result["dimensions"]
        .as_array()
        .expect("dimensions")
        .iter()
        .filter(|d| d["status"] == "error")
        .filter_map(|d| d["name"].as_str())
        .collect();
    assert!(!errored.is_empty(), "the broken field errs some judge");
    assert_eq!(result["decision"], "FAIL");
    assert_eq!(code, Some(1), "an errored judge fails the run");
    assert_eq!(result["gate"]["blocked"], true);
    for name in &errored {
        assert!(
            stderr.contains(name),
            "the one-line reason names {name}: {stderr}"
        );
    }
    // The weighted score over the judges that did score is higher than the baseline's;
    // the score the decision rests on counts the errored ones at 1, so it is lower.
    let raised = result["total_score"].as_f64().expect("total");
    let floor = result["gate"]["decision_score"].as_f64().expect("floor");
    let before = base["total_score"].as_f64().expect("base total");
    assert!(raised > before, "{raised} vs {before}");
    assert!(floor < before, "{floor} vs {before}");

    // Errors allowed: two of seven judges unscored is still below the default coverage.
    let Ran {
        code,
        result: allowed,
        ..
    } = run(tmp.path(), "judges.d/trivy", &["--allow-errors"]);
    assert_eq!(allowed["gate"]["errors_allowed"], true);
    assert!(
        allowed["gate"]["reason"]
            .as_str()
            .is_some_and(|r| r.contains("minimum coverage")),
        "{}",
        allowed["gate"]["reason"]
    );
    assert_eq!(code, Some(1));
    // With a coverage the run meets, the decision is read from the floored score, each
    // errored judge counted at 1: lower than the baseline's 3.30, so not WEAK_PASS.
    let suite = tmp.path().join("judges.d/trivy/suite.yaml");
    let text = std::fs::read_to_string(&suite).expect("read") + "min_coverage: 0.5\n";
    std::fs::write(&suite, text).expect("write");
    let Ran {
        code,
        result: allowed,
        ..
    } = run(tmp.path(), "judges.d/trivy", &["--allow-errors"]);
    assert_eq!(allowed["gate"]["blocked"], false);
    assert!(floor < 3.0, "{floor}");
    assert_eq!(allowed["gate"]["decision_score"].as_f64(), Some(floor));
    assert_eq!(allowed["decision"], "FAIL");
    assert_eq!(code, Some(1));
}

/// Every errored judge says its assertions did not run, instead of `true`.
#[test]
fn an_errored_judge_does_not_claim_its_assertions_passed() {
    let (tmp, scan) = trivy_copy();
    set_field(&scan, "/summary/medium_count", Value::from("x"));
    let Ran { result, .. } = run(tmp.path(), "judges.d/trivy", &[]);
    let mut seen = 0;
    for d in result["dimensions"].as_array().expect("dimensions") {
        if d["status"] == "error" {
            seen += 1;
            assert_eq!(d["ground_truth_passed"], Value::Null, "{}", d["name"]);
            assert_eq!(d["assertions_ran"], false, "{}", d["name"]);
        } else {
            assert_eq!(d["assertions_ran"], true, "{}", d["name"]);
        }
    }
    assert!(seen > 0);
}

/// A small suite whose two judges score constant values, so the weighted score is set by
/// the weights alone.
fn two_judge_suite(root: &Path, weights: (&str, &str), scores: (i64, i64)) {
    let suite = root.join("judges.d/exact");
    std::fs::create_dir_all(&suite).expect("mkdir");
    std::fs::create_dir_all(root.join("data/results")).expect("mkdir");
    std::fs::write(root.join("data/results/r1.json"), r#"{"id": "r1", "n": 1}"#).expect("write");
    std::fs::write(
        suite.join("suite.yaml"),
        "suite: exact\ninputs:\n  results: ../../data/results\n",
    )
    .expect("write");
    for (name, weight, score) in [("a", weights.0, scores.0), ("b", weights.1, scores.1)] {
        std::fs::write(
            suite.join(format!("{name}.yaml")),
            format!(
                "dimension: {name}\nweight: {weight}\nevidence:\n  n: $.results.r1.n\n\
                 heuristic:\n  metric: n\n  bands:\n    - {{ score: {score} }}\n  confidence: 0.5\n  reasoning: constant\n"
            ),
        )
        .expect("write");
    }
}

/// 0.996 x 3 + 0.004 x 2 = 2.996: shown as 3.00 but below the WEAK_PASS bar of 3.0, so
/// FAIL; `--fail-under 3` fails too. Before, the rounded 3.00 decided.
#[test]
fn the_exact_score_decides_not_the_rounded_one() {
    let tmp = tempfile::tempdir().expect("tempdir");
    two_judge_suite(tmp.path(), ("0.996", "0.004"), (3, 2));
    let Ran { code, result, .. } = run(tmp.path(), "judges.d/exact", &[]);
    let total = result["total_score"].as_f64().expect("total");
    assert!((total - 2.996).abs() < 1e-12, "{total}");
    assert_eq!(result["decision"], "FAIL");
    assert_eq!(code, Some(1));
    let Ran { code, stderr, .. } = run(tmp.path(), "judges.d/exact", &["--fail-under", "3"]);
    assert_eq!(code, Some(1));
    assert!(stderr.contains("is below --fail-under 3"), "{stderr}");
    // A bar the score does reach passes (the bar stands in for the decision table).
    let Ran { code, .. } = run(tmp.path(), "judges.d/exact", &["--fail-under", "2.99"]);
    assert_eq!(code, Some(0));
}

/// Runs `caldera run <suite> --heuristic` with `extra` in `root`, to be shown.
fn run_shown(root: &Path, suite: &str, extra: &[&str]) -> Ran {
    Caldera::new()
        .dir(root)
        .args(["run", suite, "--heuristic", "--out"])
        .arg(root.join("result.json"))
        .args(extra)
        .run()
}

/// A score just below a bar is shown with the digits that keep it below: 2.996 is
/// "2.996 -> FAIL" in the table and the Markdown heading (not "3.00 -> FAIL", which reads
/// as reaching the WEAK_PASS bar of 3), and 2.99996 is "2.99996" in the gate line too
/// (not "3.0000"). A score that needs no more keeps two decimals.
#[test]
fn a_score_next_to_a_bar_is_shown_with_the_digits_that_explain_the_decision() {
    let tmp = tempfile::tempdir().expect("tempdir");
    two_judge_suite(tmp.path(), ("0.996", "0.004"), (3, 2));
    let Ran { stdout: table, .. } = run_shown(tmp.path(), "judges.d/exact", &[]);
    assert!(
        table.contains("weighted score 2.996 / 5  ->  FAIL"),
        "{table}"
    );
    let Ran { stdout: md, .. } = run_shown(tmp.path(), "judges.d/exact", &["--format", "md"]);
    assert!(md.contains("FAIL 2.996 / 5"), "{md}");

    two_judge_suite(tmp.path(), ("0.99996", "0.00004"), (3, 2));
    let Ran {
        stdout: table,
        stderr,
        ..
    } = run_shown(tmp.path(), "judges.d/exact", &[]);
    assert!(
        table.contains("weighted score 2.99996 / 5  ->  FAIL"),
        "{table}"
    );
    assert!(
        stderr.contains("FAIL: FAIL on the weighted score 2.99996"),
        "{stderr}"
    );

    two_judge_suite(tmp.path(), ("0.5", "0.5"), (4, 3));
    let Ran { stdout: table, .. } = run_shown(tmp.path(), "judges.d/exact", &[]);
    assert!(
        table.contains("weighted score 3.50 / 5  ->  PASS"),
        "{table}"
    );
}

/// 0.5 x 4 + 0.5 x 3 = 3.5 exactly: the PASS bar is reached (>=), and `--fail-under 3.5`
/// passes while `--fail-under 3.51` fails: `<` against the bar, not `<=`.
#[test]
fn a_score_on_the_bar_reaches_it() {
    let tmp = tempfile::tempdir().expect("tempdir");
    two_judge_suite(tmp.path(), ("0.5", "0.5"), (4, 3));
    let Ran { code, result, .. } = run(tmp.path(), "judges.d/exact", &[]);
    assert_eq!(result["decision"], "PASS");
    assert_eq!(code, Some(0), "a passing run exits 0");
    let Ran { code, .. } = run(tmp.path(), "judges.d/exact", &["--fail-under", "3.5"]);
    assert_eq!(code, Some(0));
    let Ran { code, .. } = run(tmp.path(), "judges.d/exact", &["--fail-under", "3.51"]);
    assert_eq!(code, Some(1));
}

/// Single verdicts are integers, as the framework's contract says; a per-repo mean stays
/// a float.
#[test]
fn single_scores_are_integers() {
    let tmp = tempfile::tempdir().expect("tempdir");
    two_judge_suite(tmp.path(), ("0.5", "0.5"), (4, 3));
    let Ran { result, .. } = run(tmp.path(), "judges.d/exact", &[]);
    let a = &dimension(&result, "a")["score"];
    assert!(a.is_i64(), "{a}");
    assert_eq!(a, 4);
}

/// A judge with a metric outside every band is unscored; it is counted at 1 in the score
/// the decision rests on, and below the minimum coverage the run fails, saying so.
#[test]
fn unscored_judges_lower_the_decision_and_coverage_gates_it() {
    let tmp = tempfile::tempdir().expect("tempdir");
    two_judge_suite(tmp.path(), ("0.5", "0.5"), (5, 5));
    // Judge b: a band table the metric misses.
    let b = tmp.path().join("judges.d/exact/b.yaml");
    let text = std::fs::read_to_string(&b)
        .expect("read")
        .replace("- { score: 5 }", "- { min: 10, score: 5 }");
    std::fs::write(&b, text).expect("write");
    let Ran {
        code,
        result,
        stderr,
        ..
    } = run(tmp.path(), "judges.d/exact", &[]);
    assert_eq!(dimension(&result, "b")["status"], "unscored");
    assert_eq!(result["total_score"], 5.0, "the scored judge alone");
    // (5 x 0.5 + 1 x 0.5) / 1.0 = 3.0
    assert_eq!(result["gate"]["decision_score"], 3.0);
    assert_eq!(result["gate"]["units"], 2);
    assert_eq!(result["gate"]["scored_units"], 1);
    assert_eq!(result["decision"], "FAIL", "1 of 2 units is below 90%");
    assert_eq!(code, Some(1));
    assert!(stderr.contains("1 of 2 units scored"), "{stderr}");

    // With a coverage the run meets, the floored score decides: 3.0 is WEAK_PASS, not
    // the STRONG_PASS the scored judge alone would give.
    let suite = tmp.path().join("judges.d/exact/suite.yaml");
    let text = std::fs::read_to_string(&suite).expect("read") + "min_coverage: 0.5\n";
    std::fs::write(&suite, text).expect("write");
    let Ran { code, result, .. } = run(tmp.path(), "judges.d/exact", &[]);
    assert_eq!(result["decision"], "WEAK_PASS");
    assert_eq!(code, Some(0));
}

/// A suite of one judge that scores 3 whatever the data, with an assertion that no HIGH
/// finding is missed (cap 4, so failing it does not move the score).
fn high_findings_suite(root: &Path, missed_high: u32) {
    let suite = root.join("judges.d/high");
    std::fs::create_dir_all(&suite).expect("mkdir");
    std::fs::create_dir_all(root.join("data/results")).expect("mkdir");
    std::fs::write(
        root.join("data/results/r1.json"),
        format!(r#"{{"id": "r1", "missed_high": {missed_high}}}"#),
    )
    .expect("write");
    std::fs::write(
        suite.join("suite.yaml"),
        "suite: high\ninputs:\n  results: ../../data/results\n",
    )
    .expect("write");
    std::fs::write(
        suite.join("detection.yaml"),
        "dimension: detection\nweight: 1\nevidence:\n  missed: $.results.r1.missed_high\n\
         heuristic:\n  metric: missed\n  bands:\n    - { score: 3 }\n  reasoning: constant\n\
         assertions:\n  - that: << missed == 0 >>\n    message: << missed >> HIGH findings missed\n    cap: 4\n",
    )
    .expect("write");
}

/// The gate of issue 20: a newly failed assertion (a HIGH finding newly missed) whose cap
/// does not move the score is a regression for `--fail-on regression`, in `diff` and in
/// `run --baseline`. Before, both exited 0: the score had not moved.
#[test]
fn a_newly_failed_assertion_is_a_regression_even_when_the_score_holds() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let root = tmp.path();
    high_findings_suite(root, 0);
    let base = root.join("base.json");
    let Ran {
        code,
        result,
        stderr,
        ..
    } = run(root, "judges.d/high", &[]);
    assert_eq!(code, Some(0), "3 is a WEAK_PASS: {stderr}");
    assert_eq!(dimension(&result, "detection")["score"], 3);
    std::fs::rename(root.join("result.json"), &base).expect("rename");
    high_findings_suite(root, 1);
    let Ran { code, result, .. } = run(root, "judges.d/high", &[]);
    assert_eq!(code, Some(0), "still a WEAK_PASS");
    let d = dimension(&result, "detection");
    assert_eq!(d["score"], 3, "the cap of 4 does not move a 3");
    assert_eq!(d["assertion_failures"].as_array().map(Vec::len), Some(1));
    let new = root.join("result.json");

    let out = Caldera::new()
        .dir(root)
        .arg("diff")
        .args([&base, &new])
        .args(["--fail-on", "regression"])
        .run();
    let stderr = out.stderr;
    assert_eq!(out.code, Some(1), "{stderr}");
    assert!(
        stderr.contains("detection newly failed an assertion: 1 HIGH findings missed"),
        "{stderr}"
    );
    // The same run against itself: nothing newly failed.
    let out = Caldera::new()
        .dir(root)
        .arg("diff")
        .args([&new, &new])
        .args(["--fail-on", "regression"])
        .run();
    assert_eq!(out.code, Some(0));

    let base_arg = base.to_string_lossy().into_owned();
    let Ran { code, stderr, .. } = run(
        root,
        "judges.d/high",
        &["--baseline", &base_arg, "--fail-on", "regression"],
    );
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains("newly failed an assertion"), "{stderr}");

    // Failing on both sides is not new, though the number in its message moved (1 then
    // 2 HIGH findings missed): failures are matched with their numbers set aside.
    let one_missed = root.join("one-missed.json");
    std::fs::copy(&new, &one_missed).expect("copy");
    high_findings_suite(root, 2);
    let new_arg = one_missed.to_string_lossy().into_owned();
    let Ran { code, stderr, .. } = run(
        root,
        "judges.d/high",
        &["--baseline", &new_arg, "--fail-on", "regression"],
    );
    assert_eq!(code, Some(0), "{stderr}");
}
