//! JUnit XML for `caldera test --format junit`, the format CI systems read test results
//! from: one `<testsuite>` per suite, one `<testcase>` per check (classname = the case,
//! name = the judge and mode), a `<failure>` listing what did not hold, an `<error>` for
//! a case that could not run. Written by quick-junit, as run reports are (see
//! [`crate::present::junit`]).

use quick_junit::{NonSuccessKind, Report, TestCase, TestCaseStatus, TestSuite};

use crate::judgetest::CheckResult;
use crate::present::junit::{to_xml, xml_chars};

/// Cases that could not run, with the reason, reported as errored test cases.
pub(crate) type Broken = [(String, String)];

/// The JUnit document for `checks` of `suite`.
pub(crate) fn render(suite: &str, checks: &[CheckResult], broken: &Broken) -> String {
    let mut cases = TestSuite::new(xml_chars(suite));
    for c in checks {
        cases.add_test_case(check_case(suite, c));
    }
    for (case, reason) in broken {
        cases.add_test_case(broken_case(suite, case, reason));
    }
    let mut report = Report::new("caldera test");
    report.add_test_suite(cases);
    to_xml(&report)
}

/// One check: passed, or failed with every expectation that did not hold.
fn check_case(suite: &str, c: &CheckResult) -> TestCase {
    let status = if c.passed() {
        TestCaseStatus::success()
    } else {
        let mut s = TestCaseStatus::non_success(NonSuccessKind::Failure);
        s.set_message(format!("{} expectation(s) did not hold", c.failures.len()));
        s.set_type("expectation");
        s.set_description(xml_chars(&c.failures.join("\n")));
        s
    };
    let mut tc = TestCase::new(
        xml_chars(&format!("{} ({})", c.judge, c.mode.name())),
        status,
    );
    tc.set_classname(xml_chars(&format!("{suite}.{}", c.case)));
    tc
}

/// A case that could not run, as an errored test case with the reason.
fn broken_case(suite: &str, case: &str, reason: &str) -> TestCase {
    let mut s = TestCaseStatus::non_success(NonSuccessKind::Error);
    s.set_message("the case could not run");
    s.set_description(xml_chars(reason));
    let mut tc = TestCase::new("case", s);
    tc.set_classname(xml_chars(&format!("{suite}.{case}")));
    tc
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::judgetest::Mode;

    #[test]
    fn failures_errors_and_hostile_text_read_back_as_written() {
        let checks = vec![
            CheckResult {
                case: "a".into(),
                judge: "j1".into(),
                mode: Mode::Heuristic,
                failures: vec![],
            },
            CheckResult {
                case: "a".into(),
                judge: "j2".into(),
                mode: Mode::Llm,
                failures: vec!["score: expected 4, got <3> & \"x\"\u{1}\u{fffe}".into()],
            },
        ];
        let xml = render("trivy", &checks, &[("b".into(), "no results".into())]);
        let back = Report::deserialize_from_str(&xml).expect("well-formed JUnit");
        assert_eq!((back.tests, back.failures, back.errors), (3, 1, 1));
        let suite = &back.test_suites[0];
        assert_eq!(suite.name.as_str(), "trivy");
        let names: Vec<(String, String)> = suite
            .test_cases
            .iter()
            .map(|c| {
                let class = c
                    .classname
                    .as_ref()
                    .map(|n| n.to_string())
                    .unwrap_or_default();
                (class, c.name.to_string())
            })
            .collect();
        assert_eq!(
            names,
            [
                ("trivy.a".to_owned(), "j1 (heuristic)".to_owned()),
                ("trivy.a".to_owned(), "j2 (llm)".to_owned()),
                ("trivy.b".to_owned(), "case".to_owned()),
            ]
        );
        assert!(xml.contains(
            "type=\"expectation\">score: expected 4, got &lt;3&gt; &amp; &quot;x&quot;\u{FFFD}\u{FFFD}</failure>"
        ), "{xml}");
        assert!(
            xml.contains("<error message=\"the case could not run\">no results</error>"),
            "{xml}"
        );
    }
}
