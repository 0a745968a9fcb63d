//! YAML with locations: typed parsing through serde-saphyr, plus a key-path index so that
//! problems found *after* parsing (a JSONPath that does not parse, an unknown name in an
//! expression) still point at a file, line and column.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, OnceLock};

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_saphyr::granit_parser::{Event, Parser};

use crate::diag::{Code, Diagnostic, Span, did_you_mean_help};

/// Where each key path of a YAML document is: the key itself and its value.
///
/// Built on first use: a valid judge file is never asked where anything is, and
/// indexing is a second pass over the YAML events (about a tenth of loading a suite).
#[derive(Debug, Default, Clone)]
pub struct KeyIndex {
    source: Arc<str>,
    built: OnceLock<Entries>,
}

impl KeyIndex {
    /// The index of `source`, built when first asked; a document that does not parse
    /// gives an empty index (the parse error itself is reported by [`parse`]).
    pub fn build(source: &str) -> KeyIndex {
        KeyIndex {
            source: source.into(),
            built: OnceLock::new(),
        }
    }

    fn entries(&self) -> &Entries {
        self.built.get_or_init(|| Entries::build(&self.source))
    }

    /// The span of the value at `path`, or of its nearest indexed ancestor.
    pub fn value_span(&self, path: &str) -> Option<Span> {
        self.entries().value_span(path)
    }

    /// The span of the key at `path` (falls back to the value, then to ancestors).
    pub fn key_span(&self, path: &str) -> Option<Span> {
        self.entries().key_span(path)
    }

    /// The deepest key path whose value contains byte `offset` (to name the key of a
    /// located parse error).
    pub fn path_at(&self, offset: usize) -> Option<&str> {
        self.entries().path_at(offset)
    }

    /// The span of the key at `path` when the document has that key (no fallback to an
    /// ancestor, which for a top-level key would be the whole document).
    pub fn exact_key_span(&self, path: &str) -> Option<Span> {
        self.entries()
            .entries
            .get(path)
            .map(|(k, v)| k.unwrap_or(*v))
    }
}

/// The index itself.
#[derive(Debug, Default, Clone)]
struct Entries {
    /// Path -> (span of the key, span of the value). The root is "".
    entries: HashMap<String, (Option<Span>, Span)>,
    /// Paths in document order (for "which path contains this offset").
    order: Vec<String>,
}

impl Entries {
    fn build(source: &str) -> Entries {
        let mut index = Entries::default();
        let mut stack: Vec<Frame> = Vec::new();
        for event in Parser::new_from_str(source) {
            let Ok((event, span)) = event else { break };
            let start = span.start.byte_offset().unwrap_or(span.start.index());
            let end = span.end.byte_offset().unwrap_or(span.end.index());
            // The parser already knows line and column: taking them from it (instead of
            // counting from the top of the file per event) keeps indexing linear.
            let here = Span {
                start: start.min(source.len()),
                end: end.clamp(start.min(source.len()), source.len()),
                line: span.start.line(),
                column: span.start.col() + 1,
            };
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

    fn value_span(&self, path: &str) -> Option<Span> {
        self.lookup(path).map(|(_, v)| v)
    }

    fn key_span(&self, path: &str) -> Option<Span> {
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

    fn path_at(&self, offset: usize) -> Option<&str> {
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
pub(crate) fn join_key(parent: &str, key: &str) -> String {
    if parent.is_empty() {
        key.to_owned()
    } else {
        format!("{parent}.{key}")
    }
}

/// The parent of a key path (`a.b[2]` -> `a.b`, `a.b` -> `a`, `a` -> ``).
pub(crate) fn parent_path(path: &str) -> &str {
    if path.ends_with(']')
        && let Some(i) = path.rfind('[')
    {
        return &path[..i];
    }
    path.rfind('.').map_or("", |i| &path[..i])
}

/// Reads a YAML file as UTF-8 text. A file that cannot be read, or that is not UTF-8,
/// is reported as such (with the line and column of the first bad byte), never as a
/// missing file.
pub(crate) fn read_text(path: &Path) -> Result<String, Diagnostic> {
    let bytes = std::fs::read(path).map_err(|e| {
        Diagnostic::error(Code::Io, format!("cannot read the file: {e}")).in_file(path)
    })?;
    String::from_utf8(bytes).map_err(|e| {
        let valid = e.utf8_error().valid_up_to();
        let bytes = e.into_bytes();
        let text = String::from_utf8_lossy(&bytes[..valid]);
        let line = text.matches('\n').count() + 1;
        let column = text.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
        Diagnostic::error(
            Code::Io,
            format!("the file is not UTF-8 text: byte 0x{:02X} at line {line}, column {column} is not valid UTF-8", bytes[valid]),
        )
        .in_file(path)
        .help("save the file as UTF-8 (editors call it \"UTF-8\", not \"Latin-1\" or \"Windows-1252\")")
    })
}

/// A parsed YAML file: its text, its key index, and the typed value.
#[derive(Debug)]
pub(crate) struct Parsed<T> {
    /// The typed document.
    pub value: T,
    /// Where each key is.
    pub index: KeyIndex,
    /// The source text.
    pub source: String,
}

/// Parses `source` (read from `path`) as `T`. On failure the diagnostic names the file,
/// line, column and key path, with a "did you mean" for unknown keys.
///
/// serde stops at the first unknown key; the schema of `T` then finds every other one,
/// so a file with three misspelt keys shows three diagnostics in one pass.
pub(crate) fn parse<T: DeserializeOwned + JsonSchema>(
    path: &Path,
    source: &str,
) -> Result<Parsed<T>, Vec<Diagnostic>> {
    let yaml12 = as_yaml12(source);
    let source: &str = &yaml12;
    let index = KeyIndex::build(source);
    match serde_saphyr::from_str_with_options::<T>(source, options()) {
        Ok(value) => Ok(Parsed {
            value,
            index,
            source: source.to_owned(),
        }),
        Err(err) => {
            let first = error_to_diagnostic(path, source, &index, &err);
            if first.code == Code::UnknownKey {
                let all = unknown_keys::<T>(path, source, &index);
                if !all.is_empty() {
                    return Err(all);
                }
            }
            Err(vec![first])
        }
    }
}

/// Plain scalars serde-saphyr reads as numbers that YAML 1.2's core schema (and so an
/// editor checking the file against its schema) reads as text: binary `0b11`, upper-case
/// radix prefixes `0X1` / `0O7`, and signed hexadecimal or octal `+0x1`.
fn not_a_yaml12_number(text: &str) -> bool {
    static FORMS: OnceLock<regex::Regex> = OnceLock::new();
    FORMS
        .get_or_init(|| {
            regex::Regex::new(
                r"^(?:[-+]?0[bB][01_]+|[-+]?0X[0-9a-fA-F_]+|[-+]?0O[0-7_]+|[-+]0x[0-9a-fA-F_]+|[-+]0o[0-7_]+)$",
            )
            .unwrap_or_else(|_| unreachable!())
        })
        .is_match(text)
}

/// `source` read as YAML 1.2 core reads it: the plain scalars of `not_a_yaml12_number`
/// quoted, so they are the text an editor sees (a number key given `0b11` is then refused
/// as text, with its line and column). Borrowed unchanged when there are none (the usual
/// case); with some, columns after a quoted scalar on its line move by two.
pub fn as_yaml12(source: &str) -> std::borrow::Cow<'_, str> {
    use serde_saphyr::granit_parser::ScalarStyle;
    let mut found: Vec<(usize, usize)> = Vec::new();
    for event in Parser::new_from_str(source) {
        let Ok((event, span)) = event else { break };
        if let Event::Scalar(text, ScalarStyle::Plain, _, None) = &event
            && not_a_yaml12_number(text)
        {
            let start = span.start.byte_offset().unwrap_or(span.start.index());
            let end = start + text.len();
            if source.get(start..end) == Some(text.as_ref()) {
                found.push((start, end));
            }
        }
    }
    if found.is_empty() {
        return std::borrow::Cow::Borrowed(source);
    }
    let mut out = source.to_owned();
    for (start, end) in found.into_iter().rev() {
        out.insert(end, '\'');
        out.insert(start, '\'');
    }
    std::borrow::Cow::Owned(out)
}

/// Every key of `source` that the schema of `T` does not allow, as diagnostics in file
/// order.
fn unknown_keys<T: JsonSchema>(path: &Path, source: &str, index: &KeyIndex) -> Vec<Diagnostic> {
    let schema = schemars::generate::SchemaSettings::draft07()
        .into_generator()
        .into_root_schema_for::<T>()
        .to_value();
    let Ok(value) = serde_saphyr::from_str_with_options::<serde_json::Value>(source, options())
    else {
        return Vec::new();
    };
    let mut found = Vec::new();
    walk_unknown(&schema, &schema, &value, "", &mut found);
    let mut diags: Vec<Diagnostic> = found
        .into_iter()
        .map(|(key_path, key, known)| {
            let at = index.key_span(&key_path).map(|s| s.start);
            let comma = at.and_then(|at| flow_comma_help(source, at, &key));
            let help = comma
                .or_else(|| did_you_mean_help(&key, known.iter().map(String::as_str)))
                .or_else(|| {
                    Some(format!(
                        "expected one of {}",
                        known
                            .iter()
                            .map(|k| format!("`{k}`"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ))
                });
            Diagnostic::error(Code::UnknownKey, format!("unknown key `{key}`"))
                .in_file(path)
                .at(index.key_span(&key_path).map(|s| Span {
                    end: (s.start + key.len()).min(source.len()),
                    ..s
                }))
                .key(key_path)
                .maybe_help(help)
        })
        .collect();
    diags.sort_by_key(|d| d.span.map_or(0, |s| s.start));
    diags
}

/// The fix for text with a comma inside `{ }`: YAML ends a plain value at the comma, so
/// the rest of the text (`so nothing to judge` in `{ reasoning: Nothing reported, so
/// nothing to judge }`) becomes a key of its own with no value. When the unknown key at
/// `at` follows a comma and has no `:` of its own, the help quotes the whole text.
fn flow_comma_help(source: &str, at: usize, key: &str) -> Option<String> {
    // Only a plain key written as parsed (not quoted or escaped) can be such a piece.
    if !source.get(at..)?.starts_with(key) {
        return None;
    }
    let line_start = source[..at].rfind('\n').map_or(0, |i| i + 1);
    let before = source[line_start..at].trim_end();
    let before = before.strip_suffix(',')?;
    // The key has no value of its own: a comma, `}` or the end of the line follows it.
    let after = source[at + key.len()..].trim_start();
    if !(after.starts_with(',') || after.starts_with('}') || after.is_empty()) {
        return None;
    }
    // The entry the text belongs to: the last `name: ` inside the same `{ }` on the line.
    let open = before.rfind('{')?;
    let (name_at, colon) = before[open..]
        .match_indices(": ")
        .last()
        .map(|(i, _)| (open + i, open + i + 2))?;
    let name_start = before[..name_at].rfind([',', '{']).map_or(0, |i| i + 1);
    let name = before[name_start..name_at].trim();
    // The whole text: this key and any further comma-separated pieces without a `:`.
    let mut end = at + key.len();
    while let Some(rest) = source[end..].trim_start_matches(' ').strip_prefix(',') {
        let piece_len = rest.find([',', '}', '\n']).unwrap_or(rest.len());
        let piece = &rest[..piece_len];
        if piece.contains(':') || piece.trim().is_empty() {
            break;
        }
        let piece_start = source.len() - rest.len();
        end = piece_start + piece.trim_end().len();
    }
    let value = format!("{}, {}", before[colon..].trim(), source[at..end].trim());
    let value = value.replace('\\', "\\\\").replace('"', "\\\"");
    Some(format!(
        "inside `{{ }}` a comma ends the value: quote text that contains one, `{name}: \"{value}\"`"
    ))
}

/// `node` with a `$ref` to the root's definitions followed.
fn resolve<'a>(root: &'a serde_json::Value, node: &'a serde_json::Value) -> &'a serde_json::Value {
    node.get("$ref")
        .and_then(serde_json::Value::as_str)
        .and_then(|r| r.strip_prefix("#/definitions/"))
        .and_then(|name| root.get("definitions")?.get(name))
        .unwrap_or(node)
}

/// The schemas `node` may stand for (the branches of `anyOf`/`oneOf`/`allOf`).
fn branches<'a>(
    root: &'a serde_json::Value,
    node: &'a serde_json::Value,
) -> Vec<&'a serde_json::Value> {
    let node = resolve(root, node);
    let mut out = vec![node];
    for key in ["anyOf", "oneOf", "allOf"] {
        if let Some(list) = node.get(key).and_then(serde_json::Value::as_array) {
            out.extend(list.iter().flat_map(|b| branches(root, b)));
        }
    }
    out
}

/// Collects (key path, key, allowed keys) for every key `value` has and `node` forbids.
fn walk_unknown(
    root: &serde_json::Value,
    node: &serde_json::Value,
    value: &serde_json::Value,
    at: &str,
    found: &mut Vec<(String, String, Vec<String>)>,
) {
    use serde_json::Value;
    let options = branches(root, node);
    match value {
        Value::Object(map) => {
            if let Some(props) = options
                .iter()
                .find_map(|b| b.get("properties").and_then(Value::as_object))
            {
                let known: Vec<String> = props.keys().cloned().collect();
                for (k, v) in map {
                    let path = join_key(at, k);
                    match props.get(k) {
                        Some(sub) => walk_unknown(root, sub, v, &path, found),
                        None => found.push((path, k.clone(), known.clone())),
                    }
                }
            } else if let Some(sub) = options
                .iter()
                .find_map(|b| b.get("additionalProperties").filter(|a| a.is_object()))
            {
                for (k, v) in map {
                    walk_unknown(root, sub, v, &join_key(at, k), found);
                }
            }
        }
        Value::Array(items) => {
            if let Some(sub) = options.iter().find_map(|b| b.get("items")) {
                for (i, v) in items.iter().enumerate() {
                    walk_unknown(root, sub, v, &format!("{at}[{i}]"), found);
                }
            }
        }
        _ => {}
    }
}

/// YAML read as editors read it (YAML 1.2 core, as the JSON Schema check sees it):
/// only `true`/`false` are booleans, `1_000` is text, and text where text is due must
/// not look like a number or boolean (`dimension: 5` is refused, as the schema refuses
/// it). NaN and infinities reach the checks, which say where they are not allowed.
pub fn options() -> serde_saphyr::Options {
    let mut o = serde_saphyr::Options::default();
    o.strict_booleans = true;
    o.no_schema = true;
    o.underscored_numbers_as_strings = true;
    o.non_finite_float_policy = serde_saphyr::NonFiniteFloatPolicy::PassThrough;
    o
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
    if let Some((c, m, h)) = in_users_words(&message, source, span) {
        return located(path, source, index, span, c, m, h);
    }
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
        let exact = if index.entries().entries.contains_key(&candidate) {
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
        let found = index.entries();
        let mapping = found
            .order
            .iter()
            .find(|p| {
                found
                    .entries
                    .get(*p)
                    .and_then(|(k, _)| *k)
                    .is_some_and(|k| k.start == at)
            })
            .map(|p| parent_path(p).to_owned())
            .unwrap_or(key_path.clone());
        key_path = join_key(&mapping, &field);
        // Point at the mapping that lacks the key (its own key), not at whichever of
        // its keys serde happened to stop on; the root mapping at its first key.
        span = if mapping.is_empty() {
            index
                .entries()
                .order
                .iter()
                .find(|p| !p.is_empty())
                .and_then(|p| index.key_span(p))
        } else {
            index.key_span(&mapping)
        }
        .or(span);
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

/// A diagnostic for a type or syntax problem, pointed at the value it is about.
fn located(
    path: &Path,
    source: &str,
    index: &KeyIndex,
    span: Option<Span>,
    code: Code,
    msg: String,
    help: Option<String>,
) -> Diagnostic {
    let key_path = span
        .and_then(|s| index.path_at(s.start))
        .map(str::to_owned)
        .unwrap_or_default();
    // serde-saphyr may point at the key of a bad value: point at the value itself.
    let span = match index.value_span(&key_path) {
        Some(v) if code == Code::WrongType && !key_path.is_empty() => Some(v),
        _ => span,
    };
    let span = span.map(|s| Span {
        end: s.end.max(s.start + 1).min(source.len()),
        ..s
    });
    Diagnostic::error(code, msg)
        .in_file(path)
        .at(span)
        .key(key_path)
        .maybe_help(help)
}

/// serde's and serde-saphyr's messages rewritten in the words of someone editing YAML:
/// what was expected, what was found, and how to write it.
fn in_users_words(
    message: &str,
    source: &str,
    span: Option<Span>,
) -> Option<(Code, String, Option<String>)> {
    static TYPE: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    let type_error = TYPE.get_or_init(|| {
        regex::Regex::new(r"^invalid (?:type|value): (.*), expected (.*)$")
            .unwrap_or_else(|_| unreachable!())
    });
    if let Some(c) = type_error.captures(message) {
        let found = found_words(&c[1]);
        let expected = expected_words(&c[2]);
        // A quoted number or boolean: say how to write it.
        let quoted = c[1]
            .strip_prefix("string \"")
            .and_then(|t| t.strip_suffix('"'))
            .filter(|t| t.trim().parse::<f64>().is_ok() || matches!(*t, "true" | "false"));
        let yaml12_text = c[1]
            .strip_prefix("string \"")
            .and_then(|t| t.strip_suffix('"'))
            .filter(|t| not_a_yaml12_number(t) && expected.contains("number"));
        let help = match yaml12_text {
            Some(t) => Some(format!(
                "YAML 1.2 reads `{t}` as text, not a number: write it in decimal (or as `0x..` / `0o..`)"
            )),
            None => quoted.map(|t| format!("quotes make it text: write `{t}` without them")),
        };
        return Some((
            Code::WrongType,
            format!("expected {expected}, found {found}"),
            help,
        ));
    }
    if message.starts_with("cannot deserialize null into string") {
        return Some((
            Code::WrongType,
            "expected text, found an empty value".to_owned(),
            Some("write the text after the colon; to mean the word `null`, quote it".to_owned()),
        ));
    }
    if let Some(value) = message
        .strip_prefix("The string value [")
        .and_then(|rest| rest.split("] must be quoted").next())
    {
        let found = match value {
            "true" | "false" | "True" | "False" | "TRUE" | "FALSE" => format!("`{value}`"),
            _ => format!("the number {value}"),
        };
        return Some((
            Code::WrongType,
            format!("expected text, found {found}"),
            Some(format!("quote it to mean the text: \"{value}\"")),
        ));
    }
    if let Some(kind) = message
        .strip_prefix("expected ")
        .and_then(|rest| rest.strip_suffix(" start"))
    {
        let expected = match kind {
            "sequence" => "a list (`- item` lines or `[a, b]`)",
            "mapping" => "a mapping of keys and values",
            other => other,
        };
        let found = span.map_or("something else", |s| {
            match source[s.start..].trim_start().chars().next() {
                Some('{') => "a mapping",
                Some('[') | Some('-') => "a list",
                _ => "a single value",
            }
        });
        return Some((
            Code::WrongType,
            format!("expected {expected}, found {found}"),
            None,
        ));
    }
    if message.starts_with("multiple YAML documents") {
        return Some((
            Code::YamlSyntax,
            "the file holds more than one YAML document (a `---` line starts another)".to_owned(),
            Some("a judge or suite file is one document: remove the `---` line and what follows it, or move that part to its own file".to_owned()),
        ));
    }
    if message.starts_with("unexpected end of input") && only_comments(source) {
        return Some((
            Code::YamlSyntax,
            "the file is empty: it holds only comments or blank lines".to_owned(),
            Some("write the file's keys below the comments (the schema lists them)".to_owned()),
        ));
    }
    if message.starts_with("mapping values are not allowed") {
        let help = span.and_then(|s| quote_suggestion(source, s.start));
        return Some((
            Code::YamlSyntax,
            "a second `: ` on this line starts a mapping where a value was expected".to_owned(),
            help.or_else(|| Some("quote text that contains `: `".to_owned())),
        ));
    }
    None
}

/// The value after the first `: ` of the line at `offset`, quoted: the fix for text
/// that contains `: ` itself.
fn quote_suggestion(source: &str, offset: usize) -> Option<String> {
    let start = source[..offset.min(source.len())]
        .rfind('\n')
        .map_or(0, |i| i + 1);
    let line = source[start..].lines().next()?;
    let (key, value) = line.split_once(": ")?;
    let value = value.trim().replace('\\', "\\\\").replace('"', "\\\"");
    Some(format!(
        "text containing `: ` must be quoted: `{}: \"{value}\"`",
        key.trim_end()
    ))
}

/// Whether `source` has nothing but comments and blank lines.
fn only_comments(source: &str) -> bool {
    source
        .lines()
        .map(str::trim)
        .all(|l| l.is_empty() || l.starts_with('#'))
}

/// serde's name for a value found, as a user would say it.
fn found_words(found: &str) -> String {
    if found == "unit value" || found == "null" {
        return "an empty value".to_owned();
    }
    if let Some(text) = found.strip_prefix("string ") {
        return format!("the text {text}");
    }
    for prefix in ["integer ", "floating point "] {
        if let Some(n) = found.strip_prefix(prefix) {
            return format!("the number {}", n.trim_matches('`'));
        }
    }
    if let Some(b) = found.strip_prefix("boolean ") {
        return b.to_owned();
    }
    match found {
        "map" => "a mapping".to_owned(),
        "sequence" => "a list".to_owned(),
        other => other.to_owned(),
    }
}

/// serde's name for a value expected, as a user would say it.
fn expected_words(expected: &str) -> String {
    if expected.starts_with("struct ") {
        return "a mapping of keys and values".to_owned();
    }
    match expected {
        "a string" => "text".to_owned(),
        "a sequence" => "a list".to_owned(),
        "a boolean" => "`true` or `false`".to_owned(),
        "f64" | "a f64" => "a number".to_owned(),
        "i64" | "an i64" | "u64" => "a whole number".to_owned(),
        other => other.to_owned(),
    }
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
    // Hand-written deserializers (evidence mappings) mark their own shape errors.
    if let Some(rest) = message.strip_prefix(crate::spec::SHAPE_ERROR) {
        return (Code::WrongType, rest.to_owned(), None);
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
    let found = index.entries();
    found
        .order
        .iter()
        .filter(|p| *p == field || p.ends_with(&format!(".{field}")))
        .min_by_key(|p| {
            found
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
    fn as_yaml12_quotes_only_the_numbers_yaml_1_2_core_reads_as_text() {
        let src = "a: 0b11\nb: [0X1, +0x1, -0o7, 0O7]\nc: 0x1f\nd: 0o17\ne: '0b1'\nf: 12 # 0b1\n";
        assert_eq!(
            as_yaml12(src),
            "a: '0b11'\nb: ['0X1', '+0x1', '-0o7', '0O7']\nc: 0x1f\nd: 0o17\ne: '0b1'\nf: 12 # 0b1\n"
        );
        let plain = "weight: 0.35\n";
        assert!(matches!(as_yaml12(plain), std::borrow::Cow::Borrowed(_)));
    }

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
    fn spans_agree_with_counting_from_the_top() {
        // Multi-byte text, flow and block styles, CRLF: the parser's own line and column
        // are the ones counting from the start of the file gives.
        let src = "é: \"ü\"\r\nb: {c: [x, \"ÿ\"], d: 1}\r\ne:\r\n  - f: 日本\r\n    g: 2\r\n";
        let idx = KeyIndex::build(src);
        assert!(idx.entries().order.len() >= 8, "{:?}", idx.entries().order);
        for path in &idx.entries().order {
            let (key, value) = idx.entries().entries[path];
            for span in key.into_iter().chain([value]) {
                let counted = Span::from_offsets(src, span.start, span.end);
                assert_eq!(
                    (span.line, span.column),
                    (counted.line, counted.column),
                    "{path}"
                );
            }
        }
    }

    #[test]
    fn a_large_document_is_indexed_in_one_pass() {
        // 100,000 keys (2.4 MB): counting lines from the top per event is 10^11 steps.
        let src: String = (0..100_000)
            .map(|i| format!("key_{i:06}: v{i:06}\n"))
            .collect();
        let idx = KeyIndex::build(&src);
        let last = idx.key_span("key_099999").unwrap();
        assert_eq!((last.line, last.column), (100_000, 1));
        assert_eq!(idx.value_span("key_099999").unwrap().column, 13);
    }

    #[test]
    fn parent_paths() {
        assert_eq!(parent_path("a.b[2]"), "a.b");
        assert_eq!(parent_path("a.b"), "a");
        assert_eq!(parent_path("a"), "");
    }
}
