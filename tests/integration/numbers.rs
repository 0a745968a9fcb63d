//! Non-finite and out-of-range numbers are refused where they are written: in judge and
//! suite files with their location, on the command line by the flag's own parser.

use std::path::Path;

use crate::binary::{Caldera, Ran};

use caldera::diag::{Code, Diagnostic};
use caldera::load_suite;

fn diagnostics(dir: &str) -> Vec<Diagnostic> {
    let env = caldera::environment();
    load_suite(Path::new(dir), &env).1
}

fn find(diags: &[Diagnostic], code: Code) -> &Diagnostic {
    diags
        .iter()
        .find(|d| d.code == code)
        .unwrap_or_else(|| panic!("no {code} in {diags:?}"))
}

#[test]
fn an_infinite_weight_is_refused_on_its_line() {
    let diags = diagnostics("tests/fixtures/diagnostics/not-finite");
    let d = find(&diags, Code::NotFinite);
    assert_eq!(d.key_path.as_deref(), Some("weight"));
    assert_eq!(d.span.map(|s| s.line), Some(2));
}

#[test]
fn a_nan_band_bound_is_refused_on_the_bound() {
    let diags = diagnostics("tests/fixtures/diagnostics/not-finite/cases/band-nan");
    let d = find(&diags, Code::NotFinite);
    assert_eq!(d.key_path.as_deref(), Some("heuristic.bands[0].min"));
    assert_eq!(d.span.map(|s| s.line), Some(8));
}

#[test]
fn suite_thresholds_are_range_checked() {
    let d = diagnostics("tests/fixtures/diagnostics/out-of-range");
    assert_eq!(
        find(&d, Code::OutOfRange).key_path.as_deref(),
        Some("kappa_target")
    );
    let d = diagnostics("tests/fixtures/diagnostics/score-out-of-range/cases/decision-min");
    let min = find(&d, Code::ScoreOutOfRange);
    assert_eq!(min.key_path.as_deref(), Some("decision[0].min"));
    assert_eq!(min.span.map(|s| s.line), Some(5));
    let d = diagnostics("tests/fixtures/diagnostics/decision-table/cases/empty");
    assert_eq!(
        find(&d, Code::DecisionTable).key_path.as_deref(),
        Some("decision")
    );
}

fn caldera_run(extra: &[&str]) -> Ran {
    Caldera::new()
        .args(["run", "judges.d/trivy", "--heuristic", "--out", "/dev/null"])
        .args(extra)
        .run()
}

#[test]
fn flags_refuse_non_finite_and_out_of_range_numbers() {
    for (flag, value, says) in [
        ("--fail-under", "NaN", "between 1 and 5"),
        ("--fail-under", "99", "between 1 and 5"),
        ("--fail-under", "-5", "between 1 and 5"),
        ("--fail-under", "inf", "between 1 and 5"),
        ("--max-cost", "NaN", "finite"),
        ("--max-cost", "inf", "finite"),
        ("--max-cost", "-1", "0 or more"),
    ] {
        let out = caldera_run(&[&format!("{flag}={value}")]);
        let stderr = out.stderr;
        assert_eq!(out.code, Some(2), "{flag} {value}: {stderr}");
        assert!(
            stderr.contains(flag) && stderr.contains(says),
            "{flag} {value}: {stderr}"
        );
    }
}
