//! The JSON format of a report: the result document itself, or a comparison.

use crate::view::run::{Input, Reporter};

/// The JSON format: the document as it was read or written, unchanged; with a baseline,
/// the comparison is the document instead (`caldera diff --format json`).
pub(crate) struct Json;

impl Reporter for Json {
    fn render(&self, input: &Input<'_>) -> String {
        let value = match input.comparison {
            Some(c) if input.diff_only => serde_json::to_value(c).unwrap_or_default(),
            _ => input.report.document(),
        };
        let mut text = serde_json::to_string_pretty(&value).unwrap_or_default();
        text.push('\n');
        text
    }
}
