//! The JSON result document, and atomic writes (a unique temp file renamed into place),
//! so an interrupted write never leaves half a report where a dashboard or CI reads it.

use std::path::{Path, PathBuf};

use serde_json::Value;

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
/// reading anything else.
pub(crate) fn document(result: &RunResult) -> Value {
    let mut doc = serde_json::Map::new();
    doc.insert("result_format".into(), RESULT_FORMAT.into());
    doc.insert(
        "caldera_version".into(),
        env!("CARGO_PKG_VERSION").to_owned().into(),
    );
    if let Ok(Value::Object(fields)) = serde_json::to_value(result) {
        doc.extend(fields);
    }
    Value::Object(doc)
}

/// Pretty JSON of `result`'s document, newline-terminated.
pub(crate) fn to_text(result: &RunResult) -> String {
    let mut text = serde_json::to_string_pretty(&document(result)).unwrap_or_default();
    text.push('\n');
    text
}

/// Writes `result` to `path`, creating folders as needed.
pub(crate) fn write(result: &RunResult, path: &Path) -> std::io::Result<()> {
    write_atomic(path, to_text(result).as_bytes())
}

/// Writes `bytes` to `path` safely and atomically; see [`crate::outfile`] for what is
/// refused (links, devices, folders).
pub(crate) fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    crate::outfile::write_atomic(path, bytes)
}
