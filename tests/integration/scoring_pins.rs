//! The scoring path pinned by hand-computed values: caps, band bounds at their edges,
//! unscored metrics, assertions that cannot be evaluated, `adjust` clamping, per-repo
//! means and spreads. Each case writes a one-judge suite and runs it through the library.

use std::path::Path;

use caldera::RunResult;
use caldera::load_suite;
use caldera::{RunOptions, run_heuristic};
use caldera::{Score, Status, Verdict};

/// Writes a suite with the judge body `judge` (after `dimension`/`weight`) reading
/// `docs` (id -> JSON) as results, runs it, and returns the result.
fn run(judge: &str, docs: &[(&str, &str)]) -> RunResult {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    write(root, docs);
    std::fs::write(
        root.join("judges.d/s/j.yaml"),
        format!("dimension: j\nweight: 1\n{judge}"),
    )
    .unwrap();
    let env = caldera::environment();
    let (suite, diags) = load_suite(&root.join("judges.d/s"), &env);
    let suite = suite.unwrap_or_else(|| panic!("{diags:#?}"));
    assert!(
        diags.iter().all(|d| !d.is_error()),
        "the judge is valid: {diags:#?}"
    );
    run_heuristic(&env, &suite, &RunOptions::default()).expect("runs")
}

fn write(root: &Path, docs: &[(&str, &str)]) {
    std::fs::create_dir_all(root.join("judges.d/s")).unwrap();
    std::fs::create_dir_all(root.join("data")).unwrap();
    for (id, body) in docs {
        std::fs::write(root.join(format!("data/{id}.json")), body).unwrap();
    }
    std::fs::write(
        root.join("judges.d/s/suite.yaml"),
        "suite: s\ninputs:\n  results: ../../data\n",
    )
    .unwrap();
}

fn one(result: &RunResult) -> &Verdict {
    &result.dimensions[0]
}

const DOC: &[(&str, &str)] = &[("r", r#"{"id": "r", "v": 0.9, "s": "text"}"#)];

/// Evidence `m` from the document, one band table, and the given extra YAML.
fn judge(metric_expr: &str, bands: &str, extra: &str) -> String {
    format!(
        "evidence:\n  m: {metric_expr}\nheuristic:\n  metric: m\n  bands:\n{bands}  reasoning: m is << m >>\n{extra}"
    )
}

const FIVE_TO_ONE: &str =
    "    - { min: 0.8, score: 5 }\n    - { min: 0.5, score: 3 }\n    - { score: 1 }\n";

#[test]
fn the_lowest_failed_cap_wins_and_only_lowers() {
    // 0.9 -> 5; caps 3 and 2 fail: min(3, 2) = 2, not max.
    let r = run(
        &judge(
            "$.results.r.v",
            FIVE_TO_ONE,
            "assertions:\n  - { that: << m < 0.5 >>, message: a, cap: 3 }\n  - { that: << m < 0.5 >>, message: b, cap: 2 }\n  - { that: << m > 0.5 >>, message: holds, cap: 1 }\n",
        ),
        DOC,
    );
    let v = one(&r);
    assert_eq!(v.score, Some(Score::Single(2)));
    assert_eq!(v.score_before_cap, Some(5));
    assert_eq!(v.cap_applied, Some(2));
    assert_eq!(
        v.assertion_failures.len(),
        2,
        "the holding one is not a failure"
    );
    assert_eq!(v.ground_truth_passed, Some(false));

    // A cap at or above the score changes nothing: 0.6 -> 3, caps 3 and 4 fail.
    let doc = [("r", r#"{"id": "r", "v": 0.6}"#)];
    let r = run(
        &judge(
            "$.results.r.v",
            FIVE_TO_ONE,
            "assertions:\n  - { that: << false >>, message: equal, cap: 3 }\n  - { that: << false >>, message: above, cap: 4 }\n",
        ),
        &doc,
    );
    let v = one(&r);
    assert_eq!(v.score, Some(Score::Single(3)));
    assert_eq!(
        v.cap_applied, None,
        "a cap equal to the score is not applied"
    );
    assert_eq!(v.score_before_cap, None);
    assert_eq!(v.assertion_failures.len(), 2);
}

#[test]
fn an_assertion_that_cannot_be_evaluated_counts_as_failed() {
    // Adding a number to a text raises in minijinja.
    let r = run(
        &judge(
            "$.results.r.v",
            FIVE_TO_ONE,
            "assertions:\n  - { that: << results.r.s + 1 > 0 >>, message: adds to text, cap: 2 }\n",
        ),
        DOC,
    );
    let v = one(&r);
    assert_eq!(v.assertion_failures.len(), 1, "{v:#?}");
    assert!(
        v.assertion_failures[0]
            .message
            .contains("could not be evaluated"),
        "{}",
        v.assertion_failures[0].message
    );
    assert_eq!(v.score, Some(Score::Single(2)), "its cap applies");
    assert_eq!(v.ground_truth_passed, Some(false));
}

#[test]
fn above_and_max_at_their_boundaries() {
    let bands = "    - { above: 5, score: 5 }\n    - { max: 5, min: 5, score: 3 }\n    - { below: 5, score: 1 }\n";
    let at = |v: &str| {
        let doc = [("r", format!(r#"{{"id": "r", "v": {v}}}"#))];
        let docs: Vec<(&str, &str)> = doc.iter().map(|(a, b)| (*a, b.as_str())).collect();
        one(&run(&judge("$.results.r.v", bands, ""), &docs)).score
    };
    assert_eq!(
        at("5"),
        Some(Score::Single(3)),
        "5 is not above 5; it is at most 5"
    );
    assert_eq!(at("5.000001"), Some(Score::Single(5)));
    assert_eq!(at("4.999999"), Some(Score::Single(1)), "below 5");
}

/// The band-table checks of the loader, on a judge with `bands`: (code, message) of
/// every diagnostic.
fn band_diagnostics(bands: &str) -> Vec<(String, String)> {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    write(root, DOC);
    std::fs::write(
        root.join("judges.d/s/j.yaml"),
        format!(
            "dimension: j\nweight: 1\n{}",
            judge("$.results.r.v", bands, "")
        ),
    )
    .unwrap();
    let env = caldera::environment();
    let (_, diags) = load_suite(&root.join("judges.d/s"), &env);
    diags
        .iter()
        .map(|d| (d.code.as_str().to_owned(), d.message.clone()))
        .collect()
}

/// `min` and `max` are inclusive, `above` and `below` exclusive, and the loader reads
/// them so: a band that starts where an exclusive one before it stopped is reachable
/// (`above: 0.9` then `min: 0.9` gives the second band exactly 0.9), and one that
/// repeats a bound it cannot get past is reported. Before, the first table was refused
/// as unreachable and the others loaded silently.
#[test]
fn band_bounds_are_checked_as_inclusive_or_exclusive_as_they_match() {
    let split =
        "    - { above: 0.9, score: 5 }\n    - { min: 0.9, score: 4 }\n    - { score: 1 }\n";
    assert_eq!(band_diagnostics(split), vec![]);
    assert_eq!(
        one(&run(&judge("$.results.r.v", split, ""), DOC)).score,
        Some(Score::Single(4))
    );
    let upper =
        "    - { below: 0.9, score: 1 }\n    - { max: 0.9, score: 2 }\n    - { score: 5 }\n";
    assert_eq!(band_diagnostics(upper), vec![]);
    assert_eq!(
        one(&run(&judge("$.results.r.v", upper, ""), DOC)).score,
        Some(Score::Single(2))
    );
    for (bands, message) in [
        (
            "    - { min: 0.9, score: 5 }\n    - { above: 0.9, score: 4 }\n    - { score: 1 }\n",
            "this band can never match: an earlier band already covers everything from 0.9 up",
        ),
        (
            "    - { max: 5, score: 5 }\n    - { below: 5, score: 4 }\n    - { score: 1 }\n",
            "this band can never match: an earlier band already covers everything up to 5",
        ),
        (
            "    - { max: 5, score: 5 }\n    - { max: 5, score: 4 }\n    - { score: 1 }\n",
            "this band can never match: an earlier band already covers everything up to 5",
        ),
        (
            "    - { min: 5, below: 5, score: 3 }\n    - { score: 1 }\n",
            "this band can never match: no number is at least 5 and below 5",
        ),
    ] {
        assert_eq!(
            band_diagnostics(bands),
            vec![("band-unreachable".to_owned(), message.to_owned())],
            "{bands}"
        );
    }
}

#[test]
fn a_metric_outside_every_band_or_not_a_number_is_unscored_with_the_reason() {
    let bands = "    - { min: 10, score: 5 }\n";
    for (expr, why) in [
        ("$.results.r.v", "0.9"),
        ("$.results.r.s", "text"),
        ("$.results.r.missing", "null"),
    ] {
        let r = run(&judge(expr, bands, ""), DOC);
        let v = one(&r);
        assert_eq!(v.status, Status::Unscored, "{expr}");
        assert_eq!(v.score, None, "never a made-up score");
        let reason = v.unscored_reason.clone().unwrap_or_default();
        assert!(reason.contains(why), "{expr}: {reason}");
        assert!(r.summary.problems.iter().any(|p| p.kind == "unscored"));
    }
}

#[test]
fn adjust_stays_within_one_to_five() {
    let up = judge(
        "$.results.r.v",
        FIVE_TO_ONE,
        "  adjust:\n    - { if: << true >>, by: 2, reason: up }\n",
    );
    assert_eq!(
        one(&run(&up, DOC)).score,
        Some(Score::Single(5)),
        "5 + 2 -> 5"
    );
    let doc = [("r", r#"{"id": "r", "v": 0.1}"#)];
    let down = judge(
        "$.results.r.v",
        FIVE_TO_ONE,
        "  adjust:\n    - { if: << true >>, by: -3, reason: down }\n",
    );
    assert_eq!(
        one(&run(&down, &doc)).score,
        Some(Score::Single(1)),
        "1 - 3 -> 1"
    );
    let doc = [("r", r#"{"id": "r", "v": 0.6}"#)];
    assert_eq!(
        one(&run(&down, &doc)).score,
        Some(Score::Single(1)),
        "3 - 3 -> 1 (clamped at the bottom, not 0)"
    );
}

#[test]
fn a_per_repo_judge_reports_the_mean_and_the_sample_spread() {
    // Repo scores 1, 3, 3 (bands on v): mean 7/3, sample std sqrt(((4/3)^2 + 2(2/3)^2) / 2)
    // = sqrt(4/3) = 1.1547...
    let docs = [
        ("a", r#"{"id": "a", "v": 0.1}"#),
        ("b", r#"{"id": "b", "v": 0.6}"#),
        ("c", r#"{"id": "c", "v": 0.7}"#),
    ];
    let j = "scope: repo\nevidence:\n  m: << result.v >>\nheuristic:\n  metric: m\n  bands:\n    - { min: 0.8, score: 5 }\n    - { min: 0.5, score: 3 }\n    - { score: 1 }\n  reasoning: x\n";
    let r = run(j, &docs);
    let v = one(&r);
    assert_eq!(v.score, Some(Score::Mean(7.0 / 3.0)));
    let spread = v.spread.as_ref().expect("spread");
    assert_eq!((spread.min, spread.max, spread.n), (1, 3, 3));
    assert!((spread.std.unwrap() - (4.0f64 / 3.0).sqrt()).abs() < 1e-12);
    // The weighted score is the exact mean, the decision reads it exactly: 2.333 -> FAIL.
    assert!((r.total_score.unwrap() - 7.0 / 3.0).abs() < 1e-12);
    assert_eq!(r.decision, "FAIL");
}
