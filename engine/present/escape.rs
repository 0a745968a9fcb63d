//! One escape per target language, for every renderer: [`html`] for HTML text and
//! attribute values, [`printable_line`] for a terminal, [`inert_markdown`] and
//! [`markdown_code_span`] for GitHub-flavoured Markdown. XML has none here: JUnit is
//! written by quick-junit, which escapes (see [`super::junit`]).
//!
//! Text from data (a tool's output, a model's reply, a result document) reaches every
//! page and table, so each renderer escapes with these and has no copy of its own. The
//! terminal and Markdown escapes were `diag`'s; `diag` re-exports them, so the
//! diagnostic renderer and older callers use the same code.

use std::fmt::Write as _;

/// Escapes text for HTML content and attribute values (double- or single-quoted).
pub(crate) fn html(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// `text` made safe for a terminal line: every control character (C0 and C1: escape
/// sequences, the one-character CSI U+009B, carriage returns, newlines) and every
/// bidirectional override, embedding, isolate and mark written as `\u{..}`. Analysed
/// data reaches messages (a repo id, a file name), and raw control characters could move
/// the cursor, recolour or forge a line such as a passing decision; a direction override
/// (U+202E) shows text in an order other than the one it has. The one sanitizer of every
/// terminal renderer.
pub fn printable_line(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.chars().any(unprintable) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if unprintable(c) {
            let _ = write!(out, "\\u{{{:x}}}", c as u32);
        } else {
            out.push(c);
        }
    }
    std::borrow::Cow::Owned(out)
}

/// Text from data (a tool's output, a model's reply, a judge file, a result document)
/// made inert in GitHub-flavoured Markdown, inside a table cell or a list item alike:
/// what a hostile document says is shown, never acted on. The one Markdown escape of
/// every renderer (reports, history, calibrate).
///
/// - Every ASCII punctuation character is backslash-escaped (CommonMark allows it for
///   all of them), so no emphasis, link, image, heading, list, table cell, HTML tag,
///   entity (`&`), autolink (`:`, `.`) or strikethrough (`~`) can start in data.
/// - A zero-width joiner follows `@`, `#` and `:`: GitHub links mentions (`@team`),
///   issue references (`#12`), URLs and emoji shortcodes in the rendered text, where a
///   backslash no longer is.
/// - Newlines become spaces (a blank line would end the cell, the item or a code span);
///   other control characters and bidirectional overrides are written as `\u{..}`, so
///   the text is also safe when the Markdown is printed on a terminal.
pub fn inert_markdown(text: &str) -> String {
    let flat = text.replace(['\n', '\r'], " ");
    let printable = printable_line(&flat);
    let mut out = String::with_capacity(printable.len() + 8);
    for c in printable.chars() {
        if c.is_ascii_punctuation() {
            out.push('\\');
        }
        out.push(c);
        if matches!(c, '@' | '#' | ':') {
            out.push(ZWJ);
        }
    }
    out
}

/// The zero-width joiner that breaks mentions, references, URLs and shortcodes.
const ZWJ: char = '\u{200d}';

/// `text` from data as a code span: a fence of backticks longer than any run of them in
/// the text (so the text cannot close it), newlines flattened (a blank line would end
/// the paragraph and let the rest out), control characters and bidirectional overrides
/// written as `\u{..}`. Not for table cells (a `|` in the text would split the cell).
pub fn markdown_code_span(text: &str) -> String {
    let flat = text.replace(['\n', '\r'], " ");
    let printable = printable_line(&flat);
    let longest = printable
        .split(|c| c != '`')
        .map(str::len)
        .max()
        .unwrap_or(0);
    let fence = "`".repeat(longest + 1);
    // A space on each side when the text is empty or starts or ends with a backtick or
    // a space (which CommonMark strips, one each side): the fence stays a fence and the
    // text reads as it is.
    let pad = if printable.is_empty()
        || printable.starts_with(['`', ' '])
        || printable.ends_with(['`', ' '])
    {
        " "
    } else {
        ""
    };
    format!("{fence}{pad}{printable}{pad}{fence}")
}

/// Whether `c` must not reach a terminal as it is: a control character (C0, DEL, C1) or
/// a bidirectional formatting character (marks U+200E/U+200F/U+061C, embeddings and
/// overrides U+202A-U+202E, isolates U+2066-U+2069).
pub fn unprintable(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{061c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}'
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn html_escapes_markup_and_both_quotes() {
        assert_eq!(html("<b a=\"x\">&'"), "&lt;b a=&quot;x&quot;&gt;&amp;&#39;");
        assert_eq!(html("plain é"), "plain é");
    }

    #[test]
    fn a_terminal_line_shows_control_and_direction_characters_as_escapes() {
        assert_eq!(printable_line("ok"), "ok");
        assert_eq!(
            printable_line("a\u{1b}[2Jb\u{202e}c\n"),
            "a\\u{1b}[2Jb\\u{202e}c\\u{a}"
        );
    }

    #[test]
    fn markdown_from_data_is_inert() {
        assert_eq!(
            inert_markdown("[x](y) @t\n#1"),
            "\\[x\\]\\(y\\) \\@\u{200d}t \\#\u{200d}1"
        );
        assert_eq!(markdown_code_span("a`b"), "``a`b``");
    }
}
