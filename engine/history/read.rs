//! The results folder, read: every regular file of the folder is read as a saved result
//! with the reader `caldera report` uses ([`Report::read`]: bounded in size, validated,
//! a located diagnostic for anything else), on every core. What is not a result is kept
//! as a [`Skipped`] entry with its place and why, never quoted and never dropped
//! silently: sub-folders, symbolic links (not followed: the history reads the folder it
//! was given, nothing it points elsewhere), devices and pipes (reading a pipe could wait
//! forever), files past [`MAX_FILES`], runs without a time, and a second copy of a run.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::diag::{Code, Diagnostic};
use crate::report::model::{Dimension, Report};

/// Files read from one folder; the rest are listed as not read. Each file is bounded by
/// the reader ([`crate::report::model::MAX_RESULT_BYTES`]).
pub(crate) const MAX_FILES: usize = 10_000;

/// A file of the folder that is not part of the history, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct Skipped {
    /// Its name in the folder.
    pub file: String,
    /// Where in the file the problem is (`line 3, column 7`), when it is in the file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub place: Option<String>,
    /// Why it was skipped (the reader's message; never the file's content).
    pub reason: String,
}

impl Skipped {
    fn new(file: &str, reason: impl Into<String>) -> Skipped {
        Skipped {
            file: file.to_owned(),
            place: None,
            reason: reason.into(),
        }
    }

    /// `file:line:column: reason`, the one-line form every format prints.
    pub(crate) fn line(&self) -> String {
        match &self.place {
            Some(place) => format!("{} ({place}): {}", self.file, self.reason),
            None => format!("{}: {}", self.file, self.reason),
        }
    }
}

/// One run read from the folder.
#[derive(Debug, Clone)]
pub(crate) struct Run {
    /// Its file name in the folder.
    pub file: String,
    /// When it ran, as the document says (the order of the history).
    pub time: DateTime<Utc>,
    /// The result, without what the history never reads (reasoning, recommendations,
    /// each model's verdict, the document's text): hundreds of runs are held at once.
    pub report: Report,
}

/// What the folder holds: the runs (in no particular order) and what was skipped.
#[derive(Debug, Default)]
pub(crate) struct Folder {
    /// Every result read.
    pub runs: Vec<Run>,
    /// Every file that is not a result, in file-name order.
    pub skipped: Vec<Skipped>,
}

/// Reads every file of `dir`. An error only when the folder itself cannot be listed;
/// each file's own problem is a [`Skipped`] entry.
pub(crate) fn folder(dir: &Path) -> Result<Folder, Diagnostic> {
    let mut names = list(dir)?;
    names.sort();
    let mut out = Folder::default();
    let mut files: Vec<(String, PathBuf)> = Vec::new();
    for name in names {
        let path = dir.join(&name);
        let shown = name.to_string_lossy().into_owned();
        match kind(&path) {
            Ok(()) if files.len() < MAX_FILES => files.push((shown, path)),
            Ok(()) => out.skipped.push(Skipped::new(
                &shown,
                format!("not read: a history reads at most {MAX_FILES} files of a folder"),
            )),
            Err(reason) => out.skipped.push(Skipped::new(&shown, reason)),
        }
    }
    let read = crate::par::map(&files, |(name, path)| run(name, path));
    let mut seen: HashMap<(String, String), String> = HashMap::new();
    for result in read {
        match result {
            Ok(r) => match seen.get(&(r.report.suite.clone(), r.report.run_id.clone())) {
                Some(first) => out.skipped.push(Skipped::new(
                    &r.file,
                    format!(
                        "the same run as {first} (suite `{}`, run id `{}`); counted once",
                        r.report.suite, r.report.run_id
                    ),
                )),
                None => {
                    seen.insert(
                        (r.report.suite.clone(), r.report.run_id.clone()),
                        r.file.clone(),
                    );
                    out.runs.push(r);
                }
            },
            Err(s) => out.skipped.push(s),
        }
    }
    out.skipped.sort_by(|a, b| a.file.cmp(&b.file));
    Ok(out)
}

/// The names of the folder's entries.
fn list(dir: &Path) -> Result<Vec<std::ffi::OsString>, Diagnostic> {
    let entries = std::fs::read_dir(dir).map_err(|e| {
        let (code, what) = match e.kind() {
            std::io::ErrorKind::NotFound => (Code::MissingPath, "there is no such folder"),
            std::io::ErrorKind::NotADirectory => {
                (Code::WrongType, "it is a file, not a folder of results")
            }
            _ => (Code::Io, "it cannot be listed"),
        };
        Diagnostic::error(
            code,
            format!("cannot read the results folder: {what} ({e})"),
        )
        .in_file(dir)
        .help("give the folder `caldera run` writes results to, such as results/trivy")
    })?;
    let mut names = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| {
            Diagnostic::error(Code::Io, format!("cannot list the results folder: {e}")).in_file(dir)
        })?;
        names.push(entry.file_name());
    }
    Ok(names)
}

/// `Ok` for a regular file; otherwise why it is not read. Links are not followed.
fn kind(path: &Path) -> Result<(), String> {
    let meta = std::fs::symlink_metadata(path).map_err(|e| format!("cannot be inspected: {e}"))?;
    let t = meta.file_type();
    if t.is_file() {
        Ok(())
    } else if t.is_dir() {
        Err(
            "a folder: a history reads the results of one folder, not its sub-folders; \
             give that folder to `caldera history` on its own"
                .into(),
        )
    } else if t.is_symlink() {
        Err("a symbolic link, not followed: a history reads only the folder it is given".into())
    } else {
        Err("not a regular file (a pipe, socket or device), not read".into())
    }
}

/// Reads one file as a run.
fn run(name: &str, path: &Path) -> Result<Run, Skipped> {
    let report = Report::read(path).map_err(|d| skipped(name, &d))?;
    let time = DateTime::parse_from_rfc3339(&report.timestamp)
        .map_err(|_| {
            Skipped::new(
                name,
                format!(
                    "a result of suite `{}` whose `timestamp` is not an RFC 3339 time, \
                     so it has no place in time order",
                    report.suite
                ),
            )
        })?
        .with_timezone(&Utc);
    Ok(Run {
        file: name.to_owned(),
        time,
        report: slim(report),
    })
}

/// The reader's diagnostic as a skipped entry: its place and message (the reader never
/// quotes a file it cannot read as a result).
fn skipped(name: &str, d: &Diagnostic) -> Skipped {
    let key = d
        .key_path
        .as_deref()
        .map_or(String::new(), |k| format!(" (at `{k}`)"));
    Skipped {
        file: name.to_owned(),
        place: d
            .span
            .map(|s| format!("line {}, column {}", s.line, s.column)),
        reason: format!("{}{key} [{}]", d.message, d.code),
    }
}

/// The parts of a result a history reads: run facts, usage, problems, and per dimension
/// its status, score, threshold, failed assertions and evidence (what `compare` reads).
fn slim(full: Report) -> Report {
    let mut r = Report::default();
    r.result_format = full.result_format;
    r.caldera_version = full.caldera_version;
    r.run_id = full.run_id;
    r.timestamp = full.timestamp;
    r.suite = full.suite;
    r.mode = full.mode;
    r.model = full.model;
    r.usage = full.usage;
    r.total_score = full.total_score;
    r.decision = full.decision;
    r.summary = full.summary;
    r.dimensions = full.dimensions.into_iter().map(slim_dimension).collect();
    r
}

fn slim_dimension(mut d: Dimension) -> Dimension {
    d.reasoning = String::new();
    d.evidence_cited = Vec::new();
    d.recommendations = Vec::new();
    d.sub_scores = Default::default();
    d.heuristic = None;
    d.model_verdicts = Vec::new();
    d.panel = None;
    for r in &mut d.repos {
        r.reasoning = String::new();
    }
    d
}
