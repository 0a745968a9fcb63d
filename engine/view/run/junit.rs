//! JUnit XML, so CI systems show judges as tests: one test suite per run, one test case
//! per dimension. A case fails when its score is below the threshold, when an assertion
//! failed, or when it has no score (with the reason); a judge in error is an `<error>`;
//! with a baseline, a regression fails its case too. Written by quick-junit.

use quick_junit::{
    NonSuccessKind, Property, Report as JReport, TestCase, TestCaseStatus, TestSuite,
};

use crate::present::junit::{to_xml, xml_chars};
use crate::present::number::fmt_score;
use crate::report::compare::Comparison;
use crate::report::model::{Dimension, Report, Status};
use crate::view::run::{Input, Reporter};

/// The JUnit format.
pub(crate) struct Junit;

impl Reporter for Junit {
    fn render(&self, input: &Input<'_>) -> String {
        let r = input.report;
        let mut suite = TestSuite::new(xml_chars(&format!("caldera.{}", r.suite)));
        for (name, value) in properties(r, input.comparison) {
            suite.add_property(Property::new(name, xml_chars(&value)));
        }
        for d in &r.dimensions {
            suite.add_test_case(case(r, d, input.comparison));
        }
        let mut report = JReport::new(xml_chars(&format!("caldera {}", r.suite)));
        if let Ok(ts) = chrono::DateTime::parse_from_rfc3339(&r.timestamp) {
            suite.set_timestamp(ts);
            report.set_timestamp(ts);
        }
        report.add_test_suite(suite);
        to_xml(&report)
    }
}

fn properties(r: &Report, c: Option<&Comparison>) -> Vec<(&'static str, String)> {
    let mut p = vec![
        ("run_id", r.run_id.clone()),
        ("mode", r.mode.clone()),
        ("decision", r.decision.clone()),
        ("weighted_score", fmt_score(r.total_score)),
    ];
    if let Some(m) = &r.model {
        p.push(("model", m.clone()));
    }
    if let Some(g) = &r.gate {
        p.push(("gate", g.reason.clone()));
    }
    if let Some(c) = c {
        p.push(("baseline_run_id", c.base.run_id.clone()));
        p.push(("baseline_weighted_score", fmt_score(c.base.total_score)));
    }
    p
}

fn case(r: &Report, d: &Dimension, c: Option<&Comparison>) -> TestCase {
    let mut reasons: Vec<String> = Vec::new();
    let mut kind = NonSuccessKind::Failure;
    match d.status {
        Status::Error => {
            kind = NonSuccessKind::Error;
            reasons.push(format!(
                "error: {}",
                d.unscored_reason.as_deref().unwrap_or("no reason given")
            ));
        }
        Status::Unscored => reasons.push(format!(
            "unscored: {}",
            d.unscored_reason.as_deref().unwrap_or("no reason given")
        )),
        Status::Scored if d.passed == Some(false) => reasons.push(format!(
            "score {} is below the threshold {}",
            fmt_score(d.score),
            fmt_score(d.pass_threshold)
        )),
        Status::Scored => {}
    }
    for f in &d.assertion_failures {
        let repo = f
            .repo
            .as_ref()
            .map_or(String::new(), |r| format!("repo {r}: "));
        let cap = f
            .cap
            .map_or(String::new(), |c| format!(" (cap {})", fmt_score(Some(c))));
        reasons.push(format!("assertion failed: {repo}{}{cap}", f.message));
    }
    if let Some(delta) = c
        .and_then(|c| c.dimension(&d.name))
        .filter(|x| x.change.is_regression())
    {
        reasons.push(format!(
            "regression: {} -> {} ({})",
            fmt_score(delta.before),
            fmt_score(delta.after),
            delta.change.as_str()
        ));
    }
    let status = if reasons.is_empty() {
        TestCaseStatus::success()
    } else {
        let mut s = TestCaseStatus::non_success(kind);
        s.set_message(xml_chars(&reasons[0]));
        s.set_type(match (kind, d.status) {
            (NonSuccessKind::Error, _) => "error",
            (_, Status::Unscored) => "unscored",
            _ if d.passed == Some(false) => "below-threshold",
            _ if !d.assertion_failures.is_empty() => "assertion",
            _ => "regression",
        });
        s.set_description(xml_chars(&reasons.join("\n")));
        s
    };
    let mut tc = TestCase::new(xml_chars(&d.name), status);
    tc.set_classname(xml_chars(&format!("caldera.{}", r.suite)));
    // The figures go in the text, not in per-case properties, which the JUnit schemas
    // CI systems validate against do not allow.
    tc.set_system_out(xml_chars(&format!(
        "score {}, confidence {}, weight {:.3}{}{}",
        fmt_score(d.score),
        d.confidence.map_or("-".into(), |c| format!("{c:.2}")),
        d.normalized_weight,
        if d.reasoning.is_empty() { "" } else { ": " },
        d.reasoning
    )));
    tc
}
