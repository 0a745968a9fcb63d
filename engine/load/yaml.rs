//! YAML with locations: typed parsing through serde-saphyr, plus a key-path index so that
//! problems found *after* parsing (a JSONPath that does not parse, an unknown name in an
//! expression) still point at a file, line and column.

use std::collections::HashMap;
use std::path::Path;

use serde::de::DeserializeOwned;
use serde_saphyr::granit_parser::{Event, Parser};

use crate::diag::{Code, Diagnostic, Span, did_you_mean_help};

/// Where each key path of a YAML document is: the key itself and its value.
#[derive(Debug, Default, Clone)]
pub struct KeyIndex {
    /// Path -> (span of the key, span of the value). The root is "".
    entries: HashMap<String, (Option<Span>, Span)>,
    /// Paths in document order (for "which path contains this offset").
    order: Vec<String>,
}

impl KeyIndex {
    /// Indexes `source`; a document that does not parse gives an empty index (the parse
    /// error itself is reported by [`parse`]).
    pub fn build(source: &str) -> KeyIndex {
        let mut index = KeyIndex::default();
        let mut stack: Vec<Frame> = Vec::new();
        let lines = crate::diag::Lines::new(source);
        for event in Parser::new_from_str(source) {
            let Ok((event, span)) = event else { break };
            let start = span.start.byte_offset().unwrap_or(span.start.index());
            let end = span.end.byte_offset().unwrap_or(span.end.index());
            let here = lines.span(source, start, end);
            match event {
                Event::MappingStart(..) | Event::SequenceStart(..) => {
                    let path = index.value_path(&mut stack);
                    index.record(&path, &stack, here);
                    let is_map = matches!(event, Event::MappingStart(..));
                    stack.push(Frame {
                        path,
                        is_map,
                        expecting_key: true,
                        next_index: 0,
                        pending_key: None,
                    });
                }
                Event::MappingEnd | Event::SequenceEnd => {
                    if let Some(frame) = stack.pop() {
                        // Extend the container's span to its end.
                        if let Some(entry) = index.entries.get_mut(&frame.path) {
                            entry.1.end = end.max(entry.1.start);
                        }
                    }
                    index.finish_value(&mut stack);
                }
                Event::Scalar(text, ..) => {
                    if let Some(top) = stack.last_mut()
                        && top.is_map
                        && top.expecting_key
                    {
                        top.pending_key = Some((text.to_string(), here));
                        top.expecting_key = false;
                        continue;
                    }
                    let path = index.value_path(&mut stack);
                    index.record(&path, &stack, here);
                    index.finish_value(&mut stack);
                }
                Event::Alias(_) => {
                    let path = index.value_path(&mut stack);
                    index.record(&path, &stack, here);
                    index.finish_value(&mut stack);
                }
                _ => {}
            }
        }
        index
    }

    fn value_path(&self, stack: &mut [Frame]) -> String {
        match stack.last_mut() {
            None => String::new(),
            Some(top) if top.is_map => {
                let key = top.pending_key.as_ref().map_or("?", |(k, _)| k.as_str());
                join_key(&top.path, key)
            }
            Some(top) => {
                let p = format!("{}[{}]", top.path, top.next_index);
                top.next_index += 1;
                p
            }
        }
    }

    fn record(&mut self, path: &str, stack: &[Frame], value: Span) {
        let key_span = stack
            .last()
            .filter(|f| f.is_map)
            .and_then(|f| f.pending_key.as_ref().map(|(_, s)| *s));
        if !self.entries.contains_key(path) {
            self.order.push(path.to_owned());
        }
        self.entries.insert(path.to_owned(), (key_span, value));
    }

    fn finish_value(&self, stack: &mut [Frame]) {
        if let Some(top) = stack.last_mut()
            && top.is_map
        {
            top.pending_key = None;
            top.expecting_key = true;
        }
    }

    /// The span of the value at `path`, or of its nearest indexed ancestor.
    pub fn value_span(&self, path: &str) -> Option<Span> {
        self.lookup(path).map(|(_, v)| v)
    }

    /// The span of the key at `path` (falls back to the value, then to ancestors).
    pub fn key_span(&self, path: &str) -> Option<Span> {
        self.lookup(path).map(|(k, v)| k.unwrap_or(v))
    }

    fn lookup(&self, path: &str) -> Option<(Option<Span>, Span)> {
        let mut p = path.to_owned();
        loop {
            if let Some(e) = self.entries.get(&p) {
                return Some(*e);
            }
            if p.is_empty() {
                return None;
            }
            p = parent_path(&p).to_owned();
        }
    }

    /// The deepest key path whose value contains byte `offset` (to name the key of a
    /// located parse error).
    pub fn path_at(&self, offset: usize) -> Option<&str> {
        self.order
            .iter()
            .filter(|p| {
                self.entries.get(*p).is_some_and(|(k, v)| {
                    (v.start <= offset && offset < v.end.max(v.start + 1))
                        || k.is_some_and(|k| k.start <= offset && offset < k.end.max(k.start + 1))
                })
            })
            .max_by_key(|p| p.len())
            .map(String::as_str)
    }
}

struct Frame {
    path: String,
    is_map: bool,
    expecting_key: bool,
    next_index: usize,
    pending_key: Option<(String, Span)>,
}

/// `a.b` + `c` -> `a.b.c`; the root has no leading dot.
pub fn join_key(parent: &str, key: &str) -> String {
    if parent.is_empty() {
        key.to_owned()
    } else {
        format!("{parent}.{key}")
    }
}

/// The parent of a key path (`a.b[2]` -> `a.b`, `a.b` -> `a`, `a` -> ``).
pub fn parent_path(path: &str) -> &str {
    if path.ends_with(']')
        && let Some(i) = path.rfind('[')
    {
        return &path[..i];
    }
    path.rfind('.').map_or("", |i| &path[..i])
}

/// A parsed YAML file: its text, its key index, and the typed value.
#[derive(Debug)]
pub struct Parsed<T> {
    /// The typed document.
    pub value: T,
    /// Where each key is.
    pub index: KeyIndex,
    /// The source text.
    pub source: String,
}

/// Parses `source` (read from `path`) as `T`. On failure the diagnostic names the file,
/// line, column and key path, with a "did you mean" for unknown keys.
pub fn parse<T: DeserializeOwned>(path: &Path, source: &str) -> Result<Parsed<T>, Diagnostic> {
    let index = KeyIndex::build(source);
    match serde_saphyr::from_str::<T>(source) {
        Ok(value) => Ok(Parsed {
            value,
            index,
            source: source.to_owned(),
        }),
        Err(err) => Err(error_to_diagnostic(path, source, &index, &err)),
    }
}

/// Turns a serde-saphyr error into a located diagnostic with a stable code.
fn error_to_diagnostic(
    path: &Path,
    source: &str,
    index: &KeyIndex,
    err: &serde_saphyr::Error,
) -> Diagnostic {
    let message = bare_message(err);
    let span = err.location().and_then(|loc| {
        let (line, col) = (loc.line() as usize, loc.column() as usize);
        (line > 0).then(|| Span::at_line_col(source, line, col.max(1), 1))
    });
    let (code, mut msg, help) = classify(&message);
    if code == Code::WrongType
        && message.starts_with("invalid ")
        && !message.starts_with("invalid type")
        && !message.starts_with("invalid value")
        && let Some(s) = span
    {
        // serde-saphyr says only "invalid floating point": name what was found.
        let found: String = source[s.start..]
            .chars()
            .take_while(|c| *c != '\n')
            .collect();
        let expected = if message.starts_with("invalid floating") {
            "expected a number".to_owned()
        } else if message.starts_with("invalid integer")
            || message.starts_with("integer out of range")
        {
            "expected an integer".to_owned()
        } else if message.starts_with("invalid bool") {
            "expected `true` or `false`".to_owned()
        } else {
            message.clone()
        };
        msg = format!("{expected}, found `{}`", found.trim());
    }
    let mut span = span;
    let mut key_path = span
        .and_then(|s| index.path_at(s.start))
        .map(str::to_owned)
        .unwrap_or_default();
    // Unknown keys: point at the key itself and name its path.
    if code == Code::UnknownKey
        && let Some(field) = quoted(&message, 0)
    {
        let candidate = if key_path.is_empty() {
            field.clone()
        } else {
            join_key(&key_path, &field)
        };
        let exact = if index.entries.contains_key(&candidate) {
            Some(candidate)
        } else {
            find_key_near(index, &field, span.map_or(0, |s| s.start))
        };
        if let Some(p) = exact {
            span = index.key_span(&p).or(span);
            key_path = p;
        }
    }
    if code == Code::MissingKey
        && let Some(field) = quoted(&message, 0)
    {
        // The error points either at a mapping's value node (the key belongs inside it)
        // or at a key of that mapping (the key belongs beside it).
        let at = span.map_or(0, |s| s.start);
        let mapping = index
            .order
            .iter()
            .find(|p| {
                index
                    .entries
                    .get(*p)
                    .and_then(|(k, _)| *k)
                    .is_some_and(|k| k.start == at)
            })
            .map(|p| parent_path(p).to_owned())
            .unwrap_or(key_path.clone());
        key_path = join_key(&mapping, &field);
        msg = format!(
            "missing required key `{field}`{}",
            if mapping.is_empty() {
                String::new()
            } else {
                format!(" in `{mapping}`")
            }
        );
    }
    let size = span.map_or(1, |s| {
        source[s.start..].find(['\n', ':']).unwrap_or(1).max(1)
    });
    let span = span.map(|s| Span {
        end: (s.start + size).min(source.len()),
        ..s
    });
    Diagnostic::error(code, msg)
        .in_file(path)
        .at(span)
        .key(key_path)
        .maybe_help(help)
}

/// The message without serde-saphyr's own location prefix and suffix.
fn bare_message(err: &serde_saphyr::Error) -> String {
    let text = err.to_string();
    let mut first = text.lines().next().unwrap_or_default().trim().to_owned();
    static PREFIX: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    let prefix = PREFIX.get_or_init(|| {
        regex::Regex::new(r"^(error: )?line \d+ column \d+: ").unwrap_or_else(|_| unreachable!())
    });
    first = prefix.replace(&first, "").into_owned();
    // Strip trailing " at line X, column Y" that some messages carry.
    match first.find(" at line ") {
        Some(i) => first[..i].to_owned(),
        None => first,
    }
}

/// Maps a serde message to a code, a clearer message and a help line.
fn classify(message: &str) -> (Code, String, Option<String>) {
    if message.starts_with("unknown field") {
        let field = quoted(message, 0).unwrap_or_default();
        let mut expected: Vec<String> = (1..64).map_while(|i| quoted(message, i)).collect();
        if expected.is_empty()
            && let Some(list) = message.split("expected one of ").nth(1)
        {
            expected = list.split(", ").map(|s| s.trim().to_owned()).collect();
        } else if expected.is_empty()
            && let Some(one) = message.split("expected ").nth(1)
        {
            expected = vec![one.trim().trim_matches('`').to_owned()];
        }
        let help = did_you_mean_help(&field, expected.iter().map(String::as_str)).or_else(|| {
            (!expected.is_empty()).then(|| {
                format!(
                    "expected one of {}",
                    expected
                        .iter()
                        .map(|e| format!("`{e}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            })
        });
        return (Code::UnknownKey, format!("unknown key `{field}`"), help);
    }
    if message.starts_with("missing field") {
        let field = quoted(message, 0).unwrap_or_default();
        return (
            Code::MissingKey,
            format!("missing required key `{field}`"),
            None,
        );
    }
    if message.starts_with("duplicate") || message.contains("duplicate key") {
        let key = message
            .strip_prefix("duplicate mapping key: ")
            .and_then(|rest| rest.split(',').next())
            .unwrap_or_default();
        return (
            Code::DuplicateKey,
            format!("key `{key}` appears twice in the same mapping"),
            Some("YAML keeps only one of them; remove the other".into()),
        );
    }
    const TYPE_ERRORS: &[&str] = &[
        "invalid type",
        "invalid value",
        "invalid length",
        "unknown variant",
        "invalid floating",
        "invalid integer",
        "invalid bool",
        "invalid char",
        "integer out of range",
    ];
    if TYPE_ERRORS.iter().any(|p| message.starts_with(p)) {
        let help = if message.starts_with("unknown variant") {
            let given = quoted(message, 0).unwrap_or_default();
            let options: Vec<String> = (1..32).map_while(|i| quoted(message, i)).collect();
            did_you_mean_help(&given, options.iter().map(String::as_str))
        } else {
            None
        };
        return (Code::WrongType, message.to_owned(), help);
    }
    (Code::YamlSyntax, message.to_owned(), None)
}

/// The `n`-th backquoted word of a serde message (`unknown field `x`, expected `a`...`).
fn quoted(message: &str, n: usize) -> Option<String> {
    message
        .split('`')
        .skip(1)
        .step_by(2)
        .nth(n)
        .map(str::to_owned)
}

/// The indexed path ending in `.field` (or equal to it) whose key is nearest `offset`.
fn find_key_near(index: &KeyIndex, field: &str, offset: usize) -> Option<String> {
    index
        .order
        .iter()
        .filter(|p| *p == field || p.ends_with(&format!(".{field}")))
        .min_by_key(|p| {
            index
                .entries
                .get(*p)
                .and_then(|(k, _)| *k)
                .map_or(usize::MAX, |k| k.start.abs_diff(offset))
        })
        .cloned()
}

#[cfg(test)]
mod tests {
    use super::*;

    const SRC: &str = "a: 1\nb:\n  c: [x, y]\n  d:\n    - e: 2\n";

    #[test]
    fn indexes_keys_and_values() {
        let idx = KeyIndex::build(SRC);
        let c = idx.value_span("b.c").unwrap();
        assert_eq!((c.line, c.column), (3, 6));
        let e = idx.key_span("b.d[0].e").unwrap();
        assert_eq!((e.line, e.column), (5, 7));
        let y = idx.value_span("b.c[1]").unwrap();
        assert_eq!(&SRC[y.start..y.end], "y");
        assert_eq!(idx.path_at(y.start), Some("b.c[1]"));
        // Unknown paths fall back to the nearest ancestor.
        assert_eq!(idx.value_span("b.c[9]").unwrap(), c);
    }

    #[test]
    fn parent_paths() {
        assert_eq!(parent_path("a.b[2]"), "a.b");
        assert_eq!(parent_path("a.b"), "a");
        assert_eq!(parent_path("a"), "");
    }
}
