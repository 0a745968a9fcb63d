//! JUnit XML for `caldera test --format junit`, the format CI systems read test results
//! from: one `<testsuite>` per suite, one `<testcase>` per check (classname = the case,
//! name = the judge and mode), a `<failure>` listing what did not hold. The document is
//! small and flat, so it is written directly, with every text and attribute escaped.

use std::fmt::Write as _;

use crate::judgetest::CheckResult;

/// Cases that could not run, with the reason, reported as errored test cases.
pub type Broken = [(String, String)];

/// The JUnit document for `checks` of `suite`.
pub fn render(suite: &str, checks: &[CheckResult], broken: &Broken) -> String {
    let failures = checks.iter().filter(|c| !c.passed()).count();
    let tests = checks.len() + broken.len();
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        out,
        "<testsuites name=\"caldera test\" tests=\"{tests}\" failures=\"{failures}\" errors=\"{}\">",
        broken.len()
    );
    let _ = writeln!(
        out,
        "  <testsuite name=\"{}\" tests=\"{tests}\" failures=\"{failures}\" errors=\"{}\">",
        escape(suite),
        broken.len()
    );
    for c in checks {
        let _ = write!(
            out,
            "    <testcase classname=\"{}\" name=\"{}\"",
            escape(&format!("{suite}.{}", c.case)),
            escape(&format!("{} ({})", c.judge, c.mode.name()))
        );
        if c.passed() {
            out.push_str("/>\n");
            continue;
        }
        let _ = writeln!(
            out,
            ">\n      <failure message=\"{}\" type=\"expectation\">{}</failure>\n    </testcase>",
            escape(&format!("{} expectation(s) did not hold", c.failures.len())),
            escape(&c.failures.join("\n"))
        );
    }
    for (case, reason) in broken {
        let _ = writeln!(
            out,
            "    <testcase classname=\"{}\" name=\"case\">\n      <error message=\"the case could not run\">{}</error>\n    </testcase>",
            escape(&format!("{suite}.{case}")),
            escape(reason)
        );
    }
    out.push_str("  </testsuite>\n</testsuites>\n");
    out
}

/// Escapes text for XML content and attributes; characters XML 1.0 cannot carry at all
/// (most control characters) become U+FFFD.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for ch in text.chars() {
        match ch {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\n' => out.push_str("&#10;"),
            '\t' | '\r' => out.push(ch),
            c if (c as u32) < 0x20 || c == '\u{FFFE}' || c == '\u{FFFF}' => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::judgetest::Mode;

    #[test]
    fn failures_and_escaping() {
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
                failures: vec!["score: expected 4, got <3> & \"x\"\u{1}".into()],
            },
        ];
        let xml = render("trivy", &checks, &[("b".into(), "no results".into())]);
        assert!(
            xml.contains(r#"<testsuites name="caldera test" tests="3" failures="1" errors="1">"#)
        );
        assert!(xml.contains(r#"<testcase classname="trivy.a" name="j1 (heuristic)"/>"#));
        assert!(xml.contains(
            "<failure message=\"1 expectation(s) did not hold\" type=\"expectation\">score: expected 4, got &lt;3&gt; &amp; &quot;x&quot;\u{FFFD}</failure>"
        ));
        assert!(xml.contains(r#"<error message="the case could not run">no results</error>"#));
    }
}
