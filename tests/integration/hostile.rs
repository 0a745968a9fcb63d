//! Hostile inputs stay bounded: judge templates that loop, fan out or build huge text end
//! in a located judge error (never a hang or an exhausted machine), and a large YAML file
//! loads in linear time.

use std::path::Path;

#[cfg(unix)]
use crate::binary::{Caldera, Ran};

use caldera::RunResult;
use caldera::Status;
use caldera::load_suite;
use caldera::{RunOptions, run_heuristic};

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
    let env = caldera::environment();
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

/// Runs `caldera run` on `dir` in a child limited to 4 GB of address space (so an
/// unbounded concatenation fails there, not on the machine); its result is `dir/o.json`.
#[cfg(unix)]
fn run_capped(dir: &Path) -> Ran {
    Caldera::under_shell("ulimit -v 4194304")
        .arg("run")
        .arg(dir)
        .args(["--heuristic", "--quiet"])
        .out(dir.join("o.json"))
        .run()
}

/// The result's problems as text, or stderr when there is no result.
#[cfg(unix)]
fn problems(ran: &Ran) -> String {
    match &ran.result {
        serde_json::Value::Null => ran.stderr.clone(),
        doc => doc["summary"]["problems"].to_string(),
    }
}

#[cfg(unix)]
#[test]
fn concatenation_that_doubles_text_ends_in_a_judge_error_naming_the_limit() {
    let doubling = "<% set a = a ~ a %>".repeat(40);
    let adding = "<% set a = a + a %>".repeat(40);
    // Evidence values each doubling the last: each evaluation is small, the chain not.
    let chain: String = (1..=40)
        .map(|i| format!("  v{i}: \"<< v{0} ~ v{0} >>\"\n", i - 1))
        .collect::<String>()
        .replace("v0", "v");
    for evidence in [
        format!("\"<% set a = 'ab' %>{doubling}<< a | length >>\"\n"),
        format!("\"<% set a = 'ab' %>{adding}<< a | length >>\"\n"),
        format!("\"<< 'ab' * 1000 >>\"\n{chain}"),
        // printf doubling its text: `format` counts what it writes, not only widths.
        format!(
            "\"<% set a = 'ab' %>{}<< a | length >>\"\n",
            "<% set a = '%s%s' | format(a, a) %>".repeat(40)
        ),
    ] {
        let tmp = tempfile::tempdir().unwrap();
        suite_with_evidence(tmp.path(), &evidence);
        let ran = run_capped(tmp.path());
        let problems = problems(&ran);
        assert_eq!(ran.code, Some(1), "a judge error, not an abort: {problems}");
        assert!(problems.contains("\"dimension\":\"d\""), "{problems}");
        assert!(
            (problems.contains("concatenated text would be")
                || problems.contains("formatted text would be"))
                && problems.contains("more than the 16777216 a value may take"),
            "{problems}"
        );
    }
}

#[test]
fn bounded_concatenation_keeps_its_meaning() {
    let tmp = tempfile::tempdir().unwrap();
    suite_with_evidence(
        tmp.path(),
        "\"<< 'a' ~ 1 ~ none ~ [2] >>|<< 'x' + 'y' >>|<< 1 + 2 >>|<< 1.5 + 1 >>|\
         << ([1] + [2]) | length >>|<% set n = namespace(s='') %>\
         <% for i in range(3) %><% set n.s = n.s ~ i %><% endfor %><< n.s >>\"",
    );
    let result = run(tmp.path());
    let verdict = &result.dimensions[0];
    assert_ne!(verdict.status, Status::Error, "{:?}", verdict.reasoning);
    assert_eq!(
        verdict
            .evidence
            .field("v")
            .and_then(caldera::doc::Doc::as_str),
        Some("a1None[2]|xy|3|2.5|2|012")
    );
}
