//! One diagnostic type and one renderer for every problem caldera reports about what a
//! user wrote or gave it: YAML syntax, unknown keys, JSONPath and template errors, broken
//! analysis files, missing folders. Loading collects them instead of stopping at the
//! first, so `caldera validate` shows every mistake in one pass.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use codespan_reporting::diagnostic::{Diagnostic as CsDiagnostic, Label};
use codespan_reporting::files::SimpleFiles;
use codespan_reporting::term::{self, Config};
use serde::Serialize;

pub use crate::present::escape::{inert_markdown, markdown_code_span, printable_line, unprintable};

/// How bad a diagnostic is. Errors stop a run (exit 2); warnings do not, unless the user
/// asks with `--deny-warnings`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Something that would make a run fail or compute a wrong score.
    Error,
    /// Something suspicious that still runs.
    Warning,
}

macro_rules! codes {
    ($( $(#[$doc:meta])* $variant:ident = $name:literal, )*) => {
        /// Stable, kebab-case diagnostic codes. They are part of the interface: editors and CI
        /// match on them, so a code is never renamed.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Code { $( $(#[$doc])* $variant, )* }

        impl Code {
            /// Every code, in catalogue order.
            pub const ALL: &'static [Code] = &[ $( Code::$variant, )* ];

            /// The kebab-case name.
            pub fn as_str(self) -> &'static str {
                match self { $( Code::$variant => $name, )* }
            }
        }
    };
}

codes! {
    /// A file or folder could not be read.
    Io = "io-error",
    /// A suite folder, input folder or named input does not exist.
    MissingPath = "missing-path",
    /// The YAML does not parse.
    YamlSyntax = "yaml-syntax",
    /// A key that the spec does not know.
    UnknownKey = "unknown-key",
    /// A required key is absent.
    MissingKey = "missing-key",
    /// A value of the wrong type or shape.
    WrongType = "wrong-type",
    /// The same key twice in one YAML mapping.
    DuplicateKey = "duplicate-key",
    /// An analysis or ground-truth file is not valid JSON.
    JsonSyntax = "json-syntax",
    /// Two documents name the same repo.
    DuplicateRepo = "duplicate-repo",
    /// A JSONPath selector does not parse.
    JsonpathSyntax = "jsonpath-syntax",
    /// An expression does not compile.
    ExpressionSyntax = "expression-syntax",
    /// A prompt template does not compile.
    TemplateSyntax = "template-syntax",
    /// An expression or prompt uses a name that is never defined.
    UnknownName = "unknown-name",
    /// An expression uses an evidence name that is only defined further down.
    NameUsedBeforeDefined = "name-used-before-defined",
    /// An expression calls a function, filter or test that does not exist.
    UnknownFunction = "unknown-function",
    /// A heuristic band table whose `min` values do not decrease.
    BandsUnordered = "bands-unordered",
    /// A band that can never match because an earlier band covers it.
    BandUnreachable = "band-unreachable",
    /// A score, cap or threshold outside the judge's scale.
    ScoreOutOfRange = "score-out-of-range",
    /// A confidence outside 0..1.
    ConfidenceOutOfRange = "confidence-out-of-range",
    /// A weight that is zero or negative.
    WeightNotPositive = "weight-not-positive",
    /// A number that is NaN or infinite where a finite one is due (a weight, a band bound).
    NotFinite = "not-finite",
    /// A number outside the range its key allows (a kappa target outside -1..1).
    OutOfRange = "out-of-range",
    /// Two judges of one suite with the same dimension.
    DuplicateDimension = "duplicate-dimension",
    /// A prompt file that does not exist.
    PromptMissing = "prompt-missing",
    /// A prompt file that resolves outside the project.
    PromptOutsideProject = "prompt-outside-project",
    /// An input folder or named input of `suite.yaml` that resolves outside the project.
    InputOutsideProject = "input-outside-project",
    /// A heuristic metric that is not an evidence name.
    MetricNotEvidence = "metric-not-evidence",
    /// A decision table that is empty, unordered or without a final catch-all row.
    DecisionTable = "decision-table",
    /// A suite without any judge file.
    NoJudges = "no-judges",
    /// Warning: judge weights that do not sum to 1.0 (they are normalised).
    WeightsNotNormalised = "weights-not-normalised",
    /// Warning: evidence no heuristic, assertion or prompt reads.
    UnusedEvidence = "unused-evidence",
    /// Warning: a judge without a heuristic is unscored in heuristic mode.
    NoHeuristic = "no-heuristic",
    /// A value could not be computed while running.
    EvaluationError = "evaluation-error",
    /// A judge's `verdict:` format that cannot read any reply (bad regex, empty labels).
    VerdictFormat = "verdict-format",
    /// LLM mode was asked for but no provider can be used here.
    ProviderUnavailable = "provider-unavailable",
    /// A regular expression that does not compile (or needs what a linear-time engine
    /// cannot do: look-around, backreferences).
    RegexSyntax = "regex-syntax",
    /// Warning: a record-list field or item key hides a run-context name (`truth`,
    /// `results`, `repos`, `suite`, `inputs`) inside the record list.
    ShadowedName = "shadowed-name",
    /// Warning (`caldera validate` on the suite's own inputs): a selector, field path or
    /// name that never matched anything.
    NeverMatched = "never-matched",
    /// Warning: a `scope: repo` judge reads `repos` or `results`, which hold only the
    /// repo being judged there.
    PerRepoContext = "per-repo-context",
}

impl std::fmt::Display for Code {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for Code {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

/// A place in a file: byte range plus 1-based line and column of its start.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Span {
    /// Byte offset of the start.
    pub start: usize,
    /// Byte offset one past the end.
    pub end: usize,
    /// 1-based line of the start.
    pub line: usize,
    /// 1-based column (in characters) of the start.
    pub column: usize,
}

impl Span {
    /// The span of `len` bytes at the 1-based `line`/`column` of `source`.
    pub fn at_line_col(source: &str, line: usize, column: usize, len: usize) -> Span {
        let mut start = 0;
        for (i, l) in source.split_inclusive('\n').enumerate() {
            if i + 1 == line {
                let col_bytes: usize = l
                    .chars()
                    .take(column.saturating_sub(1))
                    .map(char::len_utf8)
                    .sum();
                start += col_bytes;
                break;
            }
            start += l.len();
        }
        let start = start.min(source.len());
        Span {
            start,
            end: (start + len).min(source.len()),
            line,
            column,
        }
    }

    /// The span of the byte range `start..end` in `source`.
    pub fn from_offsets(source: &str, start: usize, end: usize) -> Span {
        Lines::new(source).span(source, start, end)
    }
}

/// Where the lines of a text start, so that many spans in one file cost a binary search
/// each rather than a scan from the top (indexing every key of a file that way was
/// quadratic in its size).
#[derive(Debug, Clone)]
pub struct Lines {
    /// Byte offset of the start of each line; the first is 0.
    starts: Vec<usize>,
}

impl Lines {
    /// The line starts of `source`.
    pub fn new(source: &str) -> Lines {
        let mut starts = vec![0];
        starts.extend(source.match_indices('\n').map(|(i, _)| i + 1));
        Lines { starts }
    }

    /// The span of the byte range `start..end` in `source` (the text these lines are of).
    pub fn span(&self, source: &str, start: usize, end: usize) -> Span {
        let start = floor_char_boundary(source, start.min(source.len()));
        // The last line starting at or before `start`.
        let line = self.starts.partition_point(|&s| s <= start).max(1);
        let line_start = self.starts[line - 1];
        let column = source[line_start..start].chars().count() + 1;
        Span {
            start,
            end: end.clamp(start, source.len()),
            line,
            column,
        }
    }
}

/// The largest character boundary at or below `i` (an offset inside a character reads
/// as that character's start, instead of failing).
fn floor_char_boundary(source: &str, mut i: usize) -> usize {
    while !source.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// A problem, located as precisely as we know.
#[derive(Clone, Debug, Serialize)]
pub struct Diagnostic {
    /// The stable code.
    pub code: Code,
    /// Error or warning.
    pub severity: Severity,
    /// The file it is about, when there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<PathBuf>,
    /// Where in the file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub span: Option<Span>,
    /// The key path in the YAML or JSON (`evidence.per_repo.fields.repo`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key_path: Option<String>,
    /// What is wrong.
    pub message: String,
    /// How to fix it ("did you mean `x`?").
    #[serde(skip_serializing_if = "Option::is_none")]
    pub help: Option<String>,
    /// Further context.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// The file is named and located but never quoted: it is an input, which may hold
    /// anything (a link to the process's environment, a key file).
    #[serde(skip)]
    pub unquoted: bool,
}

impl Diagnostic {
    /// A new error.
    pub fn error(code: Code, message: impl Into<String>) -> Self {
        Diagnostic {
            code,
            severity: Severity::Error,
            file: None,
            span: None,
            key_path: None,
            message: message.into(),
            help: None,
            notes: Vec::new(),
            unquoted: false,
        }
    }

    /// A new warning.
    pub fn warning(code: Code, message: impl Into<String>) -> Self {
        Diagnostic {
            severity: Severity::Warning,
            ..Diagnostic::error(code, message)
        }
    }

    /// Sets the file.
    pub fn in_file(mut self, file: impl Into<PathBuf>) -> Self {
        self.file = Some(file.into());
        self
    }

    /// Sets the span.
    pub fn at(mut self, span: Option<Span>) -> Self {
        self.span = span;
        self
    }

    /// Sets the key path.
    pub fn key(mut self, path: impl Into<String>) -> Self {
        let p = path.into();
        self.key_path = (!p.is_empty()).then_some(p);
        self
    }

    /// Sets the help line.
    pub fn help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(help.into());
        self
    }

    /// Sets the help line when there is one.
    pub fn maybe_help(mut self, help: Option<String>) -> Self {
        if help.is_some() {
            self.help = help;
        }
        self
    }

    /// Adds a note.
    pub fn note(mut self, note: impl Into<String>) -> Self {
        self.notes.push(note.into());
        self
    }

    /// Marks the file as not to be quoted: the place is given, never a snippet.
    pub fn unquoted(mut self) -> Self {
        self.unquoted = true;
        self
    }

    /// Whether this is an error.
    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }
}

/// The closest candidate to `word` by edit distance, for "did you mean" hints.
pub fn did_you_mean<'a>(
    word: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    let mut best: Option<(&str, f64)> = None;
    for cand in candidates {
        let score = strsim::jaro_winkler(word, cand);
        let close = strsim::levenshtein(word, cand) <= (word.len().max(3) / 3).max(1);
        if (score > 0.8 || close) && best.is_none_or(|(_, s)| score > s) {
            best = Some((cand, score));
        }
    }
    best.map(|(c, _)| c)
}

/// Formats a "did you mean" help line.
pub fn did_you_mean_help<'a>(
    word: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<String> {
    did_you_mean(word, candidates).map(|c| format!("did you mean `{c}`?"))
}

/// Renders diagnostics as text with source snippets (colour when `color` is set).
/// Sources are re-read from disk, only for a diagnostic with a span that may be quoted
/// (the file may be large, or not a file at all); a file that cannot be read is shown
/// without snippet.
pub fn render_text(diags: &[Diagnostic], color: bool) -> String {
    let mut files = SimpleFiles::new();
    let mut ids: Vec<(PathBuf, usize)> = Vec::new();
    let mut out = String::new();
    let config = Config::default();
    for d in diags {
        let quoted = d.span.is_some() && !d.unquoted;
        let file_id = d.file.as_ref().filter(|_| quoted).and_then(|path| {
            if let Some((_, id)) = ids.iter().find(|(p, _)| p == path) {
                return Some(*id);
            }
            let text = std::fs::read_to_string(path).ok()?;
            let id = files.add(display_path(path), same_width_printable(&text));
            ids.push((path.clone(), id));
            Some(id)
        });
        let mut cs = match d.severity {
            Severity::Error => CsDiagnostic::error(),
            Severity::Warning => CsDiagnostic::warning(),
        }
        .with_code(d.code.as_str())
        .with_message(printable_line(&d.message));
        let mut notes = Vec::new();
        match (file_id, d.span) {
            (Some(id), Some(span)) => {
                let label = d
                    .key_path
                    .as_ref()
                    .map_or(String::new(), |k| format!("at `{k}`"));
                let mut range = span.start..span.end.max(span.start);
                let mut id = id;
                // A long line (a minified expression, a pasted blob) is cut to a window
                // around the span, so the snippet stays readable.
                if let Some(path) = &d.file
                    && let Ok(text) = files.get(id).map(|f| f.source().clone())
                    && let Some((short, short_range)) = shorten_line(&text, range.clone())
                {
                    id = files.add(display_path(path), short);
                    range = short_range;
                    notes.push(format!(
                        "the line is long: shown cut around column {}",
                        span.column
                    ));
                }
                cs = cs.with_labels(vec![Label::primary(id, range).with_message(label)]);
            }
            _ => {
                if let Some(path) = &d.file {
                    let mut loc = display_path(path);
                    if let Some(span) = d.span {
                        let _ = write!(loc, ":{}:{}", span.line, span.column);
                    }
                    notes.push(format!("in {loc}"));
                }
                if let Some(k) = &d.key_path {
                    notes.push(format!("at `{k}`"));
                }
            }
        }
        notes.extend(d.notes.iter().map(|n| printable_line(n).into_owned()));
        if let Some(h) = &d.help {
            notes.push(format!("help: {}", printable_line(h)));
        }
        cs = cs.with_notes(notes);
        let text = term::emit_into_string(&config, &files, &cs).unwrap_or_else(|_| {
            // The file changed under us: fall back to the message alone.
            format!("{}[{}]: {}\n", severity_word(d.severity), d.code, d.message)
        });
        out.push_str(&text);
    }
    if color { colorize(&out) } else { out }
}

/// Lines longer than this (in characters) are cut around the span in snippets.
const MAX_SNIPPET_LINE: usize = 120;

/// `text` with the line holding `range` cut to a window of about [`MAX_SNIPPET_LINE`]
/// characters around it (`…` marks a cut), and `range` moved into the window; `None`
/// when the line is short enough already.
fn shorten_line(
    text: &str,
    range: std::ops::Range<usize>,
) -> Option<(String, std::ops::Range<usize>)> {
    let start = range.start.min(text.len());
    let line_start = text[..start].rfind('\n').map_or(0, |i| i + 1);
    let line_end = text[start..].find('\n').map_or(text.len(), |i| start + i);
    if text[line_start..line_end].chars().count() <= MAX_SNIPPET_LINE {
        return None;
    }
    let lead = MAX_SNIPPET_LINE / 3;
    let from = text[line_start..start]
        .char_indices()
        .rev()
        .nth(lead.saturating_sub(1))
        .map_or(line_start, |(i, _)| line_start + i);
    let to = text[start..line_end]
        .char_indices()
        .nth(MAX_SNIPPET_LINE - lead)
        .map_or(line_end, |(i, _)| start + i);
    let head = if from > line_start { "…" } else { "" };
    let tail = if to < line_end { "…" } else { "" };
    let short = format!(
        "{}{head}{}{tail}{}",
        &text[..line_start],
        &text[from..to],
        &text[line_end..]
    );
    let new_start = line_start + head.len() + (start - from);
    let new_end = new_start + (range.end.clamp(start, to) - start);
    Some((short, new_start..new_end))
}

fn severity_word(s: Severity) -> &'static str {
    match s {
        Severity::Error => "error",
        Severity::Warning => "warning",
    }
}

/// Adds ANSI colour to the severity words of rendered text (the snippet layout stays
/// byte-identical to the plain rendering that snapshot tests pin).
fn colorize(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 64);
    for line in text.split_inclusive('\n') {
        if let Some(rest) = line.strip_prefix("error") {
            out.push_str("\x1b[1;31merror\x1b[0m");
            out.push_str(rest);
        } else if let Some(rest) = line.strip_prefix("warning") {
            out.push_str("\x1b[1;33mwarning\x1b[0m");
            out.push_str(rest);
        } else {
            out.push_str(line);
        }
    }
    out
}

/// Source text for snippets: control and bidirectional characters other than newline and
/// tab replaced by a character of the same UTF-8 length (every one of them takes 1 to 3), so byte spans still point at the right place.
fn same_width_printable(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        out.push(match c {
            '\n' | '\t' => c,
            // CRLF line ends stay; a lone carriage return could overwrite the line.
            '\r' if chars.peek() == Some(&'\n') => c,
            c if unprintable(c) => match c.len_utf8() {
                1 => '?',
                2 => '\u{bf}',
                _ => '\u{fffd}',
            },
            c => c,
        });
    }
    out
}

/// A path as shown to the user: relative to the current directory when possible.
pub fn display_path(path: &Path) -> String {
    let cwd = std::env::current_dir().ok();
    let shown = cwd
        .as_deref()
        .and_then(|c| path.strip_prefix(c).ok())
        .unwrap_or(path);
    shown.display().to_string()
}

/// Counts errors and warnings.
pub fn tally(diags: &[Diagnostic]) -> (usize, usize) {
    let errors = diags.iter().filter(|d| d.is_error()).count();
    (errors, diags.len() - errors)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Line and column from the line table agree with counting from the top, at every
    /// character boundary, across empty lines, multibyte text and the end of the text.
    #[test]
    fn line_table_spans_match_counting() {
        let text = "a: 1\n\nbé: [x, ü]\n  - ok\nlast";
        let lines = Lines::new(text);
        for (start, _) in text.char_indices().chain([(text.len(), ' ')]) {
            let before = &text[..start];
            let line = before.matches('\n').count() + 1;
            let line_start = before.rfind('\n').map_or(0, |i| i + 1);
            let column = text[line_start..start].chars().count() + 1;
            let span = lines.span(text, start, start + 1);
            assert_eq!((span.line, span.column), (line, column), "offset {start}");
            assert_eq!(span.end, (start + 1).min(text.len()));
        }
    }
}
