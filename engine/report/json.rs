//! The JSON result document, and atomic writes (a unique temp file renamed into place),
//! so an interrupted write never leaves half a report where a dashboard or CI reads it.

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::run::result::RunResult;

/// The result format this caldera writes and reads. A document without the field was
/// written before it existed and has the same shape (format 1).
pub(crate) const RESULT_FORMAT: u32 = 1;

/// The default result path: `results/<suite>/<run id>.json` under the current folder.
pub(crate) fn default_path(result: &RunResult) -> PathBuf {
    result_path(&result.suite, &result.run_id)
}

/// Where the result of run `run_id` of `suite` goes by default; `caldera run` needs it
/// before the run, to put the interaction log beside it.
pub(crate) fn result_path(suite: &str, run_id: &str) -> PathBuf {
    PathBuf::from("results")
        .join(suite)
        .join(format!("{run_id}.json"))
}

/// The result as the document written to disk: the run result preceded by the result
/// format and the caldera version, which `caldera diff` and `caldera report` check before
/// reading anything else. (What is written is [`to_text`], serialized straight from the
/// run result; this tree of it is for the test that says they agree.)
#[cfg(test)]
pub(crate) fn document(result: &RunResult) -> serde_json::Value {
    serde_json::to_value(Document::of(result)).unwrap_or_default()
}

/// What `document` (a test's view) holds, serialized straight from the run result. Writing through a
/// `serde_json::Value` first would copy every evidence record into a tree several times
/// the size of the `Doc`s it came from (about 100 bytes per member): on a suite whose
/// evidence keeps findings, that copy was most of the run's peak memory.
#[derive(Serialize)]
struct Document<'a> {
    result_format: u32,
    caldera_version: &'static str,
    #[serde(flatten)]
    result: &'a RunResult,
}

impl<'a> Document<'a> {
    fn of(result: &'a RunResult) -> Self {
        Document {
            result_format: RESULT_FORMAT,
            caldera_version: env!("CARGO_PKG_VERSION"),
            result,
        }
    }
}

/// Pretty JSON of `result`'s document, newline-terminated.
pub(crate) fn to_text(result: &RunResult) -> String {
    let mut text = serde_json::to_string_pretty(&Document::of(result)).unwrap_or_default();
    text.push('\n');
    text
}

/// Writes `bytes` to `path` safely and atomically; see [`crate::outfile`] for what is
/// refused (links, devices, folders).
pub(crate) fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    crate::outfile::write_atomic(path, bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The result text is written straight from the run result (no `serde_json::Value`
    /// copy of the evidence, which made the trivy suite need about 15x its input): it is
    /// still exactly the document, pretty-printed, and the report read from it is the
    /// same.
    #[test]
    fn result_text_written_without_a_value_copy_is_the_document() {
        let env = crate::render::environment();
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("judges.d/trivy");
        let (suite, _) = crate::load::suite::load_suite(&dir, &env);
        let suite = suite.expect("the bundled trivy suite loads");
        let result =
            crate::run::run_heuristic(&env, &suite, &Default::default()).expect("inputs read");
        let document = document(&result);
        let mut want = serde_json::to_string_pretty(&document).unwrap_or_default();
        want.push('\n');
        assert_eq!(to_text(&result), want);
        let report = crate::report::model::Report::of(&result).expect("report");
        assert_eq!(report.document(), document);
    }
}
