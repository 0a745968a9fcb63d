//! Writes the run result as pretty JSON, atomically (a unique temp file renamed into
//! place), so an interrupted write never leaves half a result where a dashboard reads it.

use std::path::{Path, PathBuf};

use crate::run::result::RunResult;

/// The default result path: `results/<suite>/<run id>.json` under the current folder.
pub fn default_path(result: &RunResult) -> PathBuf {
    PathBuf::from("results")
        .join(&result.suite)
        .join(format!("{}.json", result.run_id))
}

/// Writes `result` to `path`, creating folders as needed; see [`crate::outfile`] for
/// what is refused.
pub fn write(result: &RunResult, path: &Path) -> std::io::Result<()> {
    let mut text = serde_json::to_string_pretty(result).map_err(std::io::Error::other)?;
    text.push('\n');
    crate::outfile::write_atomic(path, text.as_bytes())
}
