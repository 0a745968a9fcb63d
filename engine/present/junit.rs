//! JUnit XML is written by quick-junit only (run reports in `view::run::junit`, judge-test
//! results in `view::judgetest`): it escapes markup and orders the document as CI
//! systems expect, so no renderer writes XML by hand. What it leaves to the caller is
//! here: characters XML cannot carry at all, and turning the document into text.

use quick_junit::Report;

/// `text` with every character XML 1.0 cannot carry (C0 controls other than tab, newline
/// and carriage return; the noncharacters U+FFFE and U+FFFF) replaced by U+FFFD, so the
/// file stays well-formed whatever a tool or a model wrote. quick-junit escapes markup
/// and drops C0 controls itself, but passes U+FFFE and U+FFFF, which no XML parser
/// accepts; the replacement also shows where something was, rather than nothing.
pub(crate) fn xml_chars(text: &str) -> String {
    text.chars()
        .map(|c| match c {
            '\t' | '\n' | '\r' => c,
            c if (c as u32) < 0x20 || c == '\u{fffe}' || c == '\u{ffff}' => '\u{fffd}',
            c => c,
        })
        .collect()
}

/// The document as text. Writing into memory fails only on a bug in the writer: that is
/// logged as an error (the command line prints it), and the text is empty.
pub(crate) fn to_xml(report: &Report) -> String {
    report.to_string().unwrap_or_else(|e| {
        log::error!("cannot write the JUnit document: {e}");
        String::new()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn characters_xml_cannot_carry_become_the_replacement_character() {
        assert_eq!(xml_chars("a\u{1}b\u{fffe}\tc\n"), "a\u{fffd}b\u{fffd}\tc\n");
    }
}
