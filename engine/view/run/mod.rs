//! Reports of a run: one [`Reporter`] per format, chosen by [`Format`] (as `--format`).
//!
//! Every reporter reads the same [`Input`]: the result document as saved
//! ([`Report`]) and, when a baseline was given, the [`Comparison`] of the two runs. So
//! `caldera run`, `caldera report` (a saved result again) and `caldera diff` (two saved
//! results) render through one path, and a new format is one file here.

pub(crate) mod html;
pub(crate) mod json;
pub(crate) mod junit;
pub(crate) mod markdown;
pub(crate) mod table;

use crate::report::compare::Comparison;
use crate::report::model::Report;

/// The output formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, clap::ValueEnum)]
pub(crate) enum Format {
    /// The terminal table (colour on a terminal).
    Table,
    /// The result document (with `caldera diff`, the comparison).
    Json,
    /// GitHub-flavoured Markdown, short enough for a pull-request comment.
    Md,
    /// JUnit XML: one test case per dimension, for CI systems.
    Junit,
    /// One self-contained HTML page (no network), readable without JavaScript.
    Html,
}

impl Format {
    /// The file extension of the format, for `--out-dir`.
    pub(crate) fn extension(self) -> &'static str {
        match self {
            Format::Table => "txt",
            Format::Json => "json",
            Format::Md => "md",
            Format::Junit => "junit.xml",
            Format::Html => "html",
        }
    }

    /// The reporter of the format.
    pub(crate) fn reporter(self) -> &'static dyn Reporter {
        match self {
            Format::Table => &table::Table,
            Format::Json => &json::Json,
            Format::Md => &markdown::Markdown,
            Format::Junit => &junit::Junit,
            Format::Html => &html::Html,
        }
    }
}

/// What a reporter renders.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Input<'a> {
    /// The run.
    pub report: &'a Report,
    /// The comparison with a baseline run, when one was given.
    pub comparison: Option<&'a Comparison>,
    /// `caldera diff`: the comparison is the subject, the run its context.
    pub diff_only: bool,
    /// Show per-repo scores of `scope: repo` judges (the table's `-v`).
    pub per_repo: bool,
}

/// One output format. The text may carry ANSI styles (the table does); the writer strips
/// them where colour is off.
pub(crate) trait Reporter: Sync {
    /// Renders the whole report.
    fn render(&self, input: &Input<'_>) -> String;
}
