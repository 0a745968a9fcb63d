//! Writes the run result as pretty JSON, atomically (a temp file renamed into place), so
//! an interrupted write never leaves half a result where a dashboard reads it.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::run::result::RunResult;

/// The default result path: `results/<suite>/<run id>.json` under the current folder.
pub fn default_path(result: &RunResult) -> PathBuf {
    PathBuf::from("results")
        .join(&result.suite)
        .join(format!("{}.json", result.run_id))
}

/// Writes `result` to `path`, creating folders as needed.
pub fn write(result: &RunResult, path: &Path) -> std::io::Result<()> {
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty());
    if let Some(dir) = dir {
        std::fs::create_dir_all(dir)?;
    }
    let text = serde_json::to_string_pretty(result).map_err(std::io::Error::other)?;
    let tmp = path.with_extension("json.tmp");
    {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(text.as_bytes())?;
        f.write_all(b"\n")?;
        f.sync_all()?;
    }
    std::fs::rename(&tmp, path)
}
