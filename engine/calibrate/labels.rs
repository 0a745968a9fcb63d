//! Human labels: one score per (unit, dimension, rater), from a CSV file with a header row
//! (`unit,dimension,score,rater`, optionally `note`; `repo` may stand for `unit`; lines
//! starting with `#` are comments) or a JSONL file of objects with the same keys.
//!
//! Every problem is reported with its file, line and column (the column named for CSV),
//! and reading goes on so that one pass shows every bad row: a score that is not an
//! integer on the 1-5 scale, a dimension the suite does not have (with "did you mean"),
//! a rater who scored the same unit twice, an empty field.

use std::path::Path;

use schemars::JsonSchema;
use serde::Deserialize;

use crate::diag::{Code, Diagnostic, Span};

/// One person's score of one unit on one dimension.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Label {
    /// The repo (or other unit) rated.
    pub unit: String,
    /// The dimension.
    pub dimension: String,
    /// 1-5.
    pub score: i64,
    /// Who rated.
    pub rater: String,
    /// The line it was read from (1-based).
    pub line: usize,
}

/// The keys a row may have.
const COLUMNS: [&str; 6] = ["unit", "repo", "dimension", "score", "rater", "note"];

/// Reads labels from `path` (JSONL when it ends in `.jsonl` or `.ndjson`, else CSV) and
/// checks them against the suite's dimensions.
pub(crate) fn read(path: &Path, dimensions: &[&str]) -> Result<Vec<Label>, Vec<Diagnostic>> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        vec![Diagnostic::error(Code::Io, format!("cannot read the labels: {e}")).in_file(path)]
    })?;
    let jsonl = path
        .extension()
        .is_some_and(|e| e == "jsonl" || e == "ndjson");
    let (labels, mut diags) = if jsonl {
        read_jsonl(path, &text)
    } else {
        read_csv(path, &text)
    };
    diags.extend(check(path, &text, &labels, dimensions));
    if labels.is_empty() && diags.is_empty() {
        diags.push(
            Diagnostic::error(Code::MissingKey, "the labels file has no rows")
                .in_file(path)
                .help("one row per (unit, dimension, rater) with a score from 1 to 5"),
        );
    }
    if diags.iter().any(Diagnostic::is_error) {
        Err(diags)
    } else {
        Ok(labels)
    }
}

/// A row as read, before its score is checked. Its schema (`caldera schema labels`)
/// describes one line of a JSONL labels file (a CSV row has the same columns): every key
/// but `note` required and not blank, the score an integer 1-5, `unit` or `repo` (one).
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(
    title = "caldera calibration label",
    description = "One person's score of one unit on one dimension: one line of a JSONL labels file (`caldera calibrate --labels`).",
    example = serde_json::json!({"unit": "critical-cves", "dimension": "vulnerability_accuracy", "score": 4, "rater": "ana"}),
    extend(
        "required" = ["dimension", "score", "rater"],
        "oneOf" = [{"required": ["unit"]}, {"required": ["repo"]}]
    )
)]
struct Row {
    /// The repo (or other unit) rated; `repo` is the same key.
    #[serde(default, alias = "repo")]
    #[schemars(with = "String", regex(pattern = r"\S"), example = &"critical-cves")]
    unit: Option<String>,
    /// The dimension, as the suite names it.
    #[serde(default)]
    #[schemars(with = "String", regex(pattern = r"\S"), example = &"vulnerability_accuracy")]
    dimension: Option<String>,
    /// The score, an integer from 1 to 5.
    #[serde(default)]
    #[schemars(with = "i64", range(min = 1, max = 5), example = 4)]
    score: Option<serde_json::Value>,
    /// Who rated.
    #[serde(default)]
    #[schemars(with = "String", regex(pattern = r"\S"), example = &"ana")]
    rater: Option<String>,
    /// A note, kept with the label and not read.
    #[serde(default)]
    #[allow(dead_code)]
    #[schemars(example = &"fine, mostly")]
    note: Option<String>,
}

/// The schema of one labels row (`caldera schema labels`).
pub(crate) fn row_schema(generator: schemars::SchemaGenerator) -> schemars::Schema {
    let mut schema = generator.into_root_schema_for::<Row>();
    // schemars does not see serde's alias: `repo` is `unit` under another name.
    if let Some(properties) = schema
        .get_mut("properties")
        .and_then(serde_json::Value::as_object_mut)
        && let Some(unit) = properties.get("unit").cloned()
    {
        properties.insert("repo".into(), unit);
    }
    schema
}

fn read_csv(path: &Path, text: &str) -> (Vec<Label>, Vec<Diagnostic>) {
    let mut reader = csv::ReaderBuilder::new()
        .trim(csv::Trim::All)
        .comment(Some(b'#'))
        .from_reader(text.as_bytes());
    let mut diags = Vec::new();
    let headers = match reader.headers() {
        Ok(h) => h.clone(),
        Err(e) => return (Vec::new(), vec![csv_error(path, text, &e)]),
    };
    for (i, name) in headers.iter().enumerate() {
        if !COLUMNS.contains(&name) {
            diags.push(
                Diagnostic::error(Code::UnknownKey, format!("unknown column `{name}`"))
                    .in_file(path)
                    .at(Some(Span::at_line_col(
                        text,
                        1,
                        column_of(text, 1, i),
                        name.len().max(1),
                    )))
                    .maybe_help(crate::diag::did_you_mean_help(name, COLUMNS))
                    .note("columns: unit (or repo), dimension, score, rater, and an optional note"),
            );
        }
    }
    if !diags.is_empty() {
        return (Vec::new(), diags);
    }
    let mut labels = Vec::new();
    for record in reader.records() {
        let record = match record {
            Ok(r) => r,
            Err(e) => {
                diags.push(csv_error(path, text, &e));
                continue;
            }
        };
        let line = record.position().map_or(0, |p| p.line() as usize);
        let field = |name: &str| {
            headers
                .iter()
                .position(|h| h == name || (name == "unit" && h == "repo"))
                .and_then(|i| record.get(i))
                .filter(|v| !v.is_empty())
                .map(str::to_owned)
        };
        let row = Row {
            unit: field("unit"),
            dimension: field("dimension"),
            score: field("score").map(|s| {
                s.parse::<i64>()
                    .map(serde_json::Value::from)
                    .unwrap_or(serde_json::Value::String(s))
            }),
            rater: field("rater"),
            note: None,
        };
        let col = |name: &str| {
            let i = headers
                .iter()
                .position(|h| h == name || (name == "unit" && h == "repo"))
                .unwrap_or(0);
            column_of(text, line, i)
        };
        match label_of(row, line) {
            Ok(l) => labels.push(l),
            Err((key, message)) => diags.push(located(path, text, line, col(key), key, message)),
        }
    }
    (labels, diags)
}

fn read_jsonl(path: &Path, text: &str) -> (Vec<Label>, Vec<Diagnostic>) {
    let mut labels = Vec::new();
    let mut diags = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        if raw.trim().is_empty() {
            continue;
        }
        let row: Row = match serde_json::from_str(raw) {
            Ok(r) => r,
            Err(e) => {
                let message = e.to_string();
                let message = message.split(" at line ").next().unwrap_or(&message);
                let d = Diagnostic::error(Code::WrongType, format!("not a label object: {message}"))
                    .in_file(path)
                    .at(Some(Span::at_line_col(text, line, e.column().max(1), 1)))
                    .help(r#"one object per line: {"unit": "...", "dimension": "...", "score": 4, "rater": "..."}"#);
                diags.push(d);
                continue;
            }
        };
        match label_of(row, line) {
            Ok(l) => labels.push(l),
            Err((key, message)) => {
                let col = raw.find(&format!("\"{key}\"")).map_or(1, |c| c + 1);
                diags.push(located(path, text, line, col, key, message));
            }
        }
    }
    (labels, diags)
}

/// A row's label, or the key that is wrong and why.
fn label_of(row: Row, line: usize) -> Result<Label, (&'static str, String)> {
    let missing = |key: &'static str| (key, format!("`{key}` is missing or empty"));
    let unit = row
        .unit
        .filter(|s| !s.trim().is_empty())
        .ok_or_else(|| missing("unit"))?;
    let dimension = row
        .dimension
        .filter(|s| !s.trim().is_empty())
        .ok_or_else(|| missing("dimension"))?;
    let rater = row
        .rater
        .filter(|s| !s.trim().is_empty())
        .ok_or_else(|| missing("rater"))?;
    let score = match row.score {
        None => return Err(missing("score")),
        Some(v) => v.as_i64().filter(|s| (1..=5).contains(s)).ok_or((
            "score",
            format!("expected an integer from 1 to 5, found `{}`", plain(&v)),
        ))?,
    };
    Ok(Label {
        unit,
        dimension,
        score,
        rater,
        line,
    })
}

fn plain(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Checks that need every row: dimensions the suite has, one score per rater per unit.
fn check(path: &Path, text: &str, labels: &[Label], dimensions: &[&str]) -> Vec<Diagnostic> {
    let mut diags = Vec::new();
    let mut seen: std::collections::HashMap<(&str, &str, &str), usize> = Default::default();
    for l in labels {
        if !dimensions.contains(&l.dimension.as_str()) {
            diags.push(
                located(
                    path,
                    text,
                    l.line,
                    column_of_text(text, l.line, &l.dimension),
                    "dimension",
                    format!("the suite has no dimension `{}`", l.dimension),
                )
                .maybe_help(crate::diag::did_you_mean_help(
                    &l.dimension,
                    dimensions.iter().copied(),
                ))
                .note(format!("its dimensions: {}", dimensions.join(", "))),
            );
        }
        let key = (l.unit.as_str(), l.dimension.as_str(), l.rater.as_str());
        if let Some(first) = seen.insert(key, l.line) {
            diags.push(located(
                path,
                text,
                l.line,
                column_of_text(text, l.line, &l.rater),
                "rater",
                format!(
                    "rater `{}` already scored `{}` on `{}` (line {first}); one score per rater",
                    l.rater, l.unit, l.dimension
                ),
            ));
        }
    }
    diags
}

fn located(
    path: &Path,
    text: &str,
    line: usize,
    column: usize,
    key: &str,
    message: String,
) -> Diagnostic {
    Diagnostic::error(Code::WrongType, message)
        .in_file(path)
        .at((line > 0).then(|| Span::at_line_col(text, line, column.max(1), 1)))
        .key(format!("line {line}: {key}"))
}

fn csv_error(path: &Path, text: &str, e: &csv::Error) -> Diagnostic {
    let line = e.position().map_or(0, |p| p.line() as usize);
    Diagnostic::error(Code::WrongType, format!("not a valid CSV row: {e}"))
        .in_file(path)
        .at((line > 0).then(|| Span::at_line_col(text, line, 1, 1)))
}

/// The 1-based column where `needle` first appears on `line` (1 when it does not).
fn column_of_text(text: &str, line: usize, needle: &str) -> usize {
    text.lines()
        .nth(line.saturating_sub(1))
        .and_then(|raw| raw.find(needle))
        .map_or(1, |byte| byte + 1)
}

/// The 1-based column where field `index` of `line` starts (commas inside quotes are
/// skipped).
fn column_of(text: &str, line: usize, index: usize) -> usize {
    let Some(raw) = text.lines().nth(line.saturating_sub(1)) else {
        return 1;
    };
    let (mut field, mut quoted) = (0, false);
    for (i, ch) in raw.char_indices() {
        if field == index {
            return i + 1;
        }
        match ch {
            '"' => quoted = !quoted,
            ',' if !quoted => field += 1,
            _ => {}
        }
    }
    if field == index { raw.len() + 1 } else { 1 }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DIMS: [&str; 2] = ["severity_accuracy", "iac_quality"];

    fn write(name: &str, text: &str) -> (tempfile_dir::Dir, std::path::PathBuf) {
        let dir = tempfile_dir::Dir::new();
        let path = dir.0.join(name);
        std::fs::write(&path, text).unwrap();
        (dir, path)
    }

    /// A scratch folder for these tests (the library has no tempfile dependency).
    mod tempfile_dir {
        pub(super) struct Dir(pub std::path::PathBuf);
        impl Dir {
            pub(super) fn new() -> Dir {
                let d = std::env::temp_dir().join(format!(
                    "caldera-labels-{}-{}",
                    std::process::id(),
                    rand::random::<u64>()
                ));
                std::fs::create_dir_all(&d).unwrap();
                Dir(d)
            }
        }
        impl Drop for Dir {
            fn drop(&mut self) {
                let _ = std::fs::remove_dir_all(&self.0);
            }
        }
    }

    #[test]
    fn csv_and_jsonl_read_the_same_labels() {
        let (_d, csv) = write(
            "l.csv",
            "repo,dimension,score,rater,note\nr1,iac_quality,4,ana,\"fine, mostly\"\nr2,severity_accuracy,2,ben,\n",
        );
        let (_e, jsonl) = write(
            "l.jsonl",
            "{\"unit\": \"r1\", \"dimension\": \"iac_quality\", \"score\": 4, \"rater\": \"ana\", \"note\": \"fine, mostly\"}\n\n{\"unit\": \"r2\", \"dimension\": \"severity_accuracy\", \"score\": 2, \"rater\": \"ben\"}\n",
        );
        let a = read(&csv, &DIMS).unwrap();
        let b = read(&jsonl, &DIMS).unwrap();
        assert_eq!(a.len(), 2);
        assert_eq!((a[0].unit.as_str(), a[0].score, a[0].line), ("r1", 4, 2));
        assert_eq!(b[1].line, 3);
        let strip = |v: Vec<Label>| {
            v.into_iter()
                .map(|l| (l.unit, l.dimension, l.score, l.rater))
                .collect::<Vec<_>>()
        };
        assert_eq!(strip(a), strip(b));
    }

    #[test]
    fn every_bad_row_is_reported_with_its_place() {
        let (_d, path) = write(
            "l.csv",
            "unit,dimension,score,rater\nr1,iac_qualty,4,ana\nr1,iac_quality,4.5,ana\nr1,iac_quality,6,ana\nr2,iac_quality,3,\nr3,iac_quality,3,ana\nr3,iac_quality,2,ana\n",
        );
        let diags = read(&path, &DIMS).unwrap_err();
        let text: Vec<String> = diags
            .iter()
            .map(|d| format!("{:?} {}", d.span.map(|s| (s.line, s.column)), d.message))
            .collect();
        assert_eq!(diags.len(), 5, "{text:#?}");
        assert!(
            text[0].contains("(3, 16)") && text[0].contains("found `4.5`"),
            "{text:#?}"
        );
        assert!(text[1].contains("found `6`"), "{text:#?}");
        assert!(
            text[2].contains("(5, 18)") && text[2].contains("`rater` is missing"),
            "{text:#?}"
        );
        assert!(
            text[3].contains("(2, 4)") && text[3].contains("no dimension `iac_qualty`"),
            "{text:#?}"
        );
        assert_eq!(
            diags[3].help.as_deref(),
            Some("did you mean `iac_quality`?")
        );
        assert!(
            text[4].contains("(7, 18)") && text[4].contains("already scored `r3`"),
            "{text:#?}"
        );
        assert!(text[4].contains("line 6"), "{text:#?}");
        let (_e, path) = write("l.csv", "unit,dimension,scroe,rater\n");
        let diags = read(&path, &DIMS).unwrap_err();
        assert_eq!(diags[0].help.as_deref(), Some("did you mean `score`?"));
    }
}
