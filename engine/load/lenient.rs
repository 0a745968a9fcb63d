//! JSON as Python's `json` module writes it: standard JSON plus the bare tokens `NaN`,
//! `Infinity` and `-Infinity` (the original framework's real outputs contain them).
//!
//! The tokens outside strings are replaced by marker strings, the text is parsed by
//! serde_json as usual (so every other rule stays strict), and the markers are turned
//! back into non-finite floats. A parse error's column is mapped back to the file as
//! written.

use crate::doc::Doc;

/// Marker strings: a NUL first, so no text a tool writes is mistaken for one.
const NAN: &str = "\u{0}caldera:NaN";
const INF: &str = "\u{0}caldera:Infinity";
const NEG_INF: &str = "\u{0}caldera:-Infinity";

/// Where a replacement changed the length of a line: on `line`, columns from `after`
/// on are `delta` bytes further right than in the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Shift {
    line: usize,
    after: usize,
    delta: usize,
}

/// Parses `bytes`, reading `NaN`, `Infinity` and `-Infinity` as floats. On error, the
/// shifts map the error's column back to the file.
pub(crate) fn parse(bytes: &[u8]) -> Result<Doc, (serde_json::Error, Vec<Shift>)> {
    let (text, shifts) = rewrite(bytes);
    if shifts.is_empty() {
        return serde_json::from_slice::<Doc>(bytes).map_err(|e| (e, shifts));
    }
    serde_json::from_slice::<Doc>(&text)
        .map(restore)
        .map_err(|e| (e, shifts))
}

/// The column in the file of column `column` of line `line` of the rewritten text.
pub(crate) fn original_column(shifts: &[Shift], line: usize, column: usize) -> usize {
    let moved: usize = shifts
        .iter()
        .filter(|s| s.line == line && s.after <= column)
        .map(|s| s.delta)
        .sum();
    column.saturating_sub(moved)
}

/// Replaces the non-finite tokens outside strings by quoted markers.
fn rewrite(bytes: &[u8]) -> (Vec<u8>, Vec<Shift>) {
    let mut out = Vec::with_capacity(bytes.len());
    let mut shifts = Vec::new();
    let (mut line, mut col) = (1usize, 1usize);
    let mut i = 0;
    let mut in_string = false;
    while i < bytes.len() {
        let b = bytes[i];
        if in_string {
            out.push(b);
            if b == b'\\' && i + 1 < bytes.len() {
                out.push(bytes[i + 1]);
                i += 2;
                col += 2;
                continue;
            }
            if b == b'"' {
                in_string = false;
            }
            i += 1;
            col += 1;
            continue;
        }
        let token = [("-Infinity", NEG_INF), ("Infinity", INF), ("NaN", NAN)]
            .into_iter()
            .find(|(t, _)| {
                bytes[i..].starts_with(t.as_bytes())
                    && !bytes
                        .get(i + t.len())
                        .is_some_and(|c| c.is_ascii_alphanumeric() || *c == b'_')
            });
        if let Some((t, marker)) = token {
            let quoted = serde_json::to_string(marker).unwrap_or_default();
            out.extend_from_slice(quoted.as_bytes());
            col += quoted.len();
            shifts.push(Shift {
                line,
                after: col,
                delta: quoted.len() - t.len(),
            });
            i += t.len();
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'\n' => {
                line += 1;
                col = 0;
            }
            _ => {}
        }
        out.push(b);
        i += 1;
        col += 1;
    }
    (out, shifts)
}

/// Turns markers back into floats.
fn restore(doc: Doc) -> Doc {
    match doc {
        Doc::Str(s) => match &*s {
            NAN => Doc::Float(f64::NAN),
            INF => Doc::Float(f64::INFINITY),
            NEG_INF => Doc::Float(f64::NEG_INFINITY),
            _ => Doc::Str(s),
        },
        Doc::Array(items) => Doc::from(items.iter().cloned().map(restore).collect::<Vec<_>>()),
        Doc::Object(map) => Doc::object(map.iter().map(|(k, v)| (k.clone(), restore(v.clone())))),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_pythons_non_finite_numbers_outside_strings_only() {
        let doc =
            parse(br#"{"palma": Infinity, "low": -Infinity, "x": [NaN, 1], "s": "NaN Infinity"}"#)
                .unwrap();
        assert_eq!(doc.field("palma"), Some(&Doc::Float(f64::INFINITY)));
        assert_eq!(doc.field("low"), Some(&Doc::Float(f64::NEG_INFINITY)));
        assert!(matches!(doc.dotted("x.0"), Some(Doc::Float(f)) if f.is_nan()));
        assert_eq!(doc.field("s"), Some(&Doc::from("NaN Infinity")));
        // Shown as null, as JSON has no such numbers.
        assert_eq!(
            doc.to_string(),
            r#"{"palma":null,"low":null,"x":[null,1],"s":"NaN Infinity"}"#
        );
    }

    /// `text` fails to parse where `plain` (the same text with numbers of the tokens'
    /// widths in their place) fails: same line, same column as written.
    fn assert_errs_where(text: &str, plain: &str) {
        let (err, shifts) = parse(text.as_bytes()).unwrap_err();
        let want = serde_json::from_slice::<Doc>(plain.as_bytes()).unwrap_err();
        let got = (
            err.line(),
            original_column(&shifts, err.line(), err.column()),
        );
        assert_eq!(got, (want.line(), want.column()), "{text:?}");
    }

    /// Columns are mapped back on the error's own line only, for the tokens before it,
    /// with escapes in strings and earlier lines counted right.
    #[test]
    fn error_columns_count_lines_escapes_and_only_earlier_tokens() {
        assert_errs_where("[NaN, tru]", "[1.0, tru]");
        assert_errs_where("[tru, NaN]", "[tru, 1.0]");
        let spaced = format!("[{}", "1, ".repeat(12));
        assert_errs_where(&format!("{spaced}tru, NaN]"), &format!("{spaced}tru, 1.0]"));
        assert_errs_where(
            "[NaN, Infinity, -Infinity, tru]",
            "[1.0, 2.000000, -3.000000, tru]",
        );
        assert_errs_where("[NaN,\n Infinity, tru]", "[1.0,\n 2.000000, tru]");
        assert_errs_where("[NaN,\n\n 1, tru]", "[1.0,\n\n 1, tru]");
        assert_errs_where(
            "[\"a\\\"b\", NaN,\n NaN, tru]",
            "[\"a\\\"b\", 1.0,\n 1.0, tru]",
        );
        assert_errs_where("[\"\\\\\", NaN, tru]", "[\"\\\\\", 1.0, tru]");
    }

    /// Every byte of a string counts, an escape's two included, so a token's shift
    /// lands where it is; a backslash ending the text inside a string is a parse error,
    /// never a read past the end.
    #[test]
    fn string_bytes_and_escapes_keep_columns_right() {
        let many = r#"\\\\\\\\\\\\"#;
        assert_errs_where(
            &format!(r#"["{many}", NaN, tru]"#),
            &format!(r#"["{many}", 1.0, tru]"#),
        );
        assert_errs_where(
            &format!(r#"["{many}", tru, NaN]"#),
            &format!(r#"["{many}", tru, 1.0]"#),
        );
        let long = "a".repeat(40);
        assert_errs_where(
            &format!(r#"["{long}", tru, NaN]"#),
            &format!(r#"["{long}", tru, 1.0]"#),
        );
        for text in [&b"[NaN, \"a\\"[..], b"[NaN, \"\\"] {
            assert!(parse(text).is_err(), "{text:?}");
        }
    }

    /// A token followed by a letter, digit or `_` is not one: the error is where a
    /// strict read puts it.
    #[test]
    fn a_token_running_into_a_word_is_an_error_where_it_starts() {
        for text in ["[NaNa, NaN]", "[NaN_, NaN]", "[NaN1, NaN]"] {
            assert_errs_where(text, &text.replacen(", NaN", ", 1.0", 1));
        }
    }

    /// A token is a whole word outside strings: inside a string (escaped quotes
    /// included) or followed by a letter, digit or `_` it is left as written.
    #[test]
    fn tokens_are_whole_words_outside_strings() {
        let doc = parse(br#"{"s": "a\"NaN", "t": "\\", "u": NaN}"#).unwrap();
        assert_eq!(doc.field("s"), Some(&Doc::from("a\"NaN")));
        assert_eq!(doc.field("t"), Some(&Doc::from("\\")));
        assert!(matches!(doc.field("u"), Some(Doc::Float(f)) if f.is_nan()));
        for bad in ["[NaNa]", "[NaN1]", "[NaN_]", "[Infinityx]", "[-Infinity9]"] {
            assert!(parse(bad.as_bytes()).is_err(), "{bad}");
        }
        let doc = parse(b"[NaN]").unwrap();
        assert!(matches!(doc.dotted("0"), Some(Doc::Float(f)) if f.is_nan()));
    }

    /// Tokens nested in lists and objects at any depth are restored.
    #[test]
    fn nested_tokens_are_restored() {
        let doc = parse(br#"{"a": [[NaN, "x"]], "b": {"c": {"d": -Infinity}}, "e": 2}"#).unwrap();
        assert!(matches!(doc.dotted("a.0.0"), Some(Doc::Float(f)) if f.is_nan()));
        assert_eq!(doc.dotted("a.0.1"), Some(&Doc::from("x")));
        assert_eq!(doc.dotted("b.c.d"), Some(&Doc::Float(f64::NEG_INFINITY)));
        assert_eq!(doc.dotted("e"), Some(&Doc::Int(2)));
    }

    #[test]
    fn errors_point_at_the_file_as_written() {
        let text = b"{\"a\": NaN, \"b\": Infinity, \"c\": tru}";
        let (err, shifts) = parse(text).unwrap_err();
        // The same text with numbers of the same widths errs at the same column.
        let plain = serde_json::from_slice::<Doc>(b"{\"a\": 1.0, \"b\": 2.000000, \"c\": tru}")
            .unwrap_err();
        assert_eq!(
            original_column(&shifts, err.line(), err.column()),
            plain.column()
        );
    }
}
