//! `inputs.truth_key`: ground truth named by other fields than the results, so a suite
//! whose results say `repo_id` and whose truth files say `scenario` joins them without
//! suite evidence of its own.

use std::path::Path;

use caldera::load_suite;
use caldera::{RunOptions, run_heuristic};

/// A suite whose results are named by `metadata.repo_id` and whose ground truth by
/// `metadata.scenario` (the file stems match neither), with `inputs` as given.
fn suite(dir: &Path, inputs: &str) {
    let write = |rel: &str, text: &str| {
        let path = dir.join(rel);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, text).expect("write");
    };
    write(
        "suite.yaml",
        &format!("suite: joined\ninputs:\n  results: results\n  ground_truth: truth\n{inputs}"),
    );
    write(
        "joined.yaml",
        "dimension: joined\nweight: 1\nevidence:\n  \
         joined: << repos | selectattr('truth') | map(attribute='id') | list >>\n  \
         n: << joined | length >>\nheuristic:\n  metric: n\n  \
         bands: [{ min: 2, score: 5 }, { score: 1 }]\n  reasoning: << joined >>\n",
    );
    write(
        "results/scan-1.json",
        r#"{"metadata": {"repo_id": "alpha", "scenario": "wrong"}, "findings": []}"#,
    );
    write(
        "results/scan-2.json",
        r#"{"metadata": {"repo_id": "beta"}, "findings": []}"#,
    );
    write(
        "truth/t1.json",
        r#"{"metadata": {"scenario": "alpha"}, "expected": 1}"#,
    );
    write(
        "truth/t2.json",
        r#"{"metadata": {"scenario": "beta", "repo_id": "other"}, "expected": 2}"#,
    );
}

/// Runs the suite in `dir`; the evidence `joined` of its one judge.
fn joined(dir: &Path) -> serde_json::Value {
    let env = caldera::environment();
    let (suite, diags) = load_suite(dir, &env);
    assert!(
        diags
            .iter()
            .all(|d| d.severity != caldera::diag::Severity::Error),
        "{diags:?}"
    );
    let result = run_heuristic(&env, &suite.expect("loads"), &RunOptions::default())
        .unwrap_or_else(|d| panic!("run: {d:?}"));
    let json = serde_json::to_value(&result).expect("serialises");
    json["dimensions"][0]["evidence"]["joined"].clone()
}

#[test]
fn truth_key_names_ground_truth_by_its_own_fields() {
    let tmp = tempfile::tempdir().expect("tempdir");
    suite(
        tmp.path(),
        "  key: [metadata.repo_id]\n  truth_key: [metadata.scenario]\n",
    );
    assert_eq!(joined(tmp.path()), serde_json::json!(["alpha", "beta"]));
}

#[test]
fn without_truth_key_the_result_key_names_ground_truth_too() {
    // One list for both: beta's truth says `repo_id: other` and alpha's has no `repo_id`
    // (its stem `t1`), so neither joins; with the scenario first, the result `alpha`
    // would be named `wrong`.
    let tmp = tempfile::tempdir().expect("tempdir");
    suite(tmp.path(), "  key: [metadata.repo_id]\n");
    assert_eq!(joined(tmp.path()), serde_json::json!([]));
}
