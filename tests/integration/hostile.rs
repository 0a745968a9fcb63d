//! Hostile inputs stay bounded: judge templates that loop, fan out or build huge text end
//! in a located judge error (never a hang or an exhausted machine), and a large YAML file
//! loads in linear time.

use std::path::Path;

use caldera::load::suite::load_suite;
use caldera::run::result::RunResult;
use caldera::run::{RunOptions, run_heuristic};
use caldera::verdict::types::Status;

/// A one-judge suite in `dir` whose judge has `evidence`, scored on its first name.
fn suite_with_evidence(dir: &Path, evidence: &str) {
    std::fs::create_dir_all(dir.join("data")).unwrap();
    std::fs::write(dir.join("data/r1.json"), r#"{"id": "r1", "n": 1}"#).unwrap();
    std::fs::write(
        dir.join("suite.yaml"),
        "suite: hostile\ninputs: { results: data }\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("judge.yaml"),
        format!(
            "dimension: d\nweight: 1\nevidence:\n  v: {evidence}\n\
             heuristic: {{ metric: v, bands: [{{ score: 3 }}], reasoning: r }}\n"
        ),
    )
    .unwrap();
}

fn run(dir: &Path) -> RunResult {
    let env = caldera::render::environment();
    let (suite, diags) = load_suite(dir, &env);
    assert!(diags.iter().all(|d| !d.is_error()), "{diags:?}");
    run_heuristic(&env, &suite.expect("suite loads"), &RunOptions::default()).expect("runs")
}

/// Runs a judge whose evidence `v` is `evidence`; returns the judge's error text.
fn judge_error(evidence: &str) -> String {
    let tmp = tempfile::tempdir().unwrap();
    suite_with_evidence(tmp.path(), evidence);
    let result = run(tmp.path());
    let verdict = &result.dimensions[0];
    assert_eq!(verdict.status, Status::Error, "{:?}", verdict.reasoning);
    let reason = verdict.unscored_reason.clone().unwrap_or_default();
    assert!(reason.contains("evidence.v"), "not located: {reason}");
    assert!(
        result.summary.problems.iter().any(|p| p.kind == "error"),
        "the summary lists the error: {:?}",
        result.summary.problems
    );
    reason
}

#[test]
fn nested_loops_stop_at_the_step_limit() {
    let reason = judge_error(
        "\"<% for i in range(100000) %><% for j in range(100000) %><% endfor %><% endfor %>x\"",
    );
    assert!(reason.contains("steps"), "{reason}");
}

#[test]
fn exponential_macro_fan_out_stops_at_the_step_limit() {
    let reason = judge_error(
        "\"<% macro f(n) %><% if n > 0 %><< f(n - 1) >><< f(n - 1) >><% else %>ab<% endif %>\
         <% endmacro %><< f(40) >>\"",
    );
    assert!(reason.contains("steps"), "{reason}");
}

#[test]
fn a_join_larger_than_the_text_limit_is_refused_before_it_is_built() {
    // 20,000 x 1 MB: 20 GB if built.
    let reason = judge_error("\"<< (['x' * 1000000] * 20000) | join >>\"");
    assert!(reason.contains("joined text"), "{reason}");
}

#[test]
fn other_multiplying_filters_are_bounded() {
    for evidence in [
        "\"<< ('x' * 10000000) | replace('', 'yy') >>\"",
        "\"<< ('x\\n' * 1000000) | indent(1000) >>\"",
        "\"<< [1] | batch(100000000, 0) | list | length >>\"",
        "\"<< '%999999999999s' | format('x') >>\"",
    ] {
        let reason = judge_error(evidence);
        assert!(reason.contains("more than the"), "{evidence}: {reason}");
    }
}

#[test]
fn rendered_text_is_capped() {
    // 40 x 1 MB of output from one template: within the steps, over the text limit.
    let reason = judge_error("\"<% for i in range(40) %><< 'x' * 1000000 >><% endfor %>\"");
    assert!(reason.contains("rendered text"), "{reason}");
}

#[test]
fn bounded_filters_keep_their_meaning() {
    let tmp = tempfile::tempdir().unwrap();
    suite_with_evidence(
        tmp.path(),
        "\"<< [{'a': {'b': 1}}, {'a': {'b': 2}}] | join(', ', attribute='a.b') >>|\
         << 'a-b' | replace('-', '+') >>|<< [1, 2, 3] | batch(2, 0) | list | length >>|\
         << '%3d' | format(7) >>|<< 'x\\ny' | indent(2) >>\"",
    );
    let result = run(tmp.path());
    let verdict = &result.dimensions[0];
    assert_ne!(verdict.status, Status::Error, "{:?}", verdict.reasoning);
    assert_eq!(
        verdict
            .evidence
            .field("v")
            .and_then(caldera::doc::Doc::as_str),
        Some("1, 2|a+b|2|  7|x\n  y")
    );
}
