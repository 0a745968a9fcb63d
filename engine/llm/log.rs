//! The interaction log: one JSON line per model call, for audit and debugging.
//!
//! Records hold prompts and replies but nothing from the environment, so API
//! keys cannot reach the log. Each record is written with one `write_all` under
//! a lock, so concurrent calls never interleave lines.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::Serialize;

/// What happened to one call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum CallStatus {
    /// The reply parsed into a verdict.
    Ok,
    /// Served from the cache; no call made.
    Cached,
    /// The reply came back but could not be read as a verdict.
    Unreadable,
    /// The provider failed (after retries).
    Error,
    /// Not started: the budget could not cover it.
    Budget,
    /// Replay mode and nothing cached.
    ReplayMiss,
}

/// One line of the log.
#[derive(Debug, Clone, Serialize)]
pub struct LogRecord {
    /// The run this call belongs to.
    pub run_id: String,
    /// The job id.
    pub job: String,
    /// The judge (dimension) name.
    pub judge: String,
    /// The item judged, if the judge runs per item.
    pub item: Option<String>,
    /// Start time (RFC 3339, UTC).
    pub started: String,
    /// End time (RFC 3339, UTC).
    pub finished: String,
    /// Wall time in milliseconds, retries included.
    pub duration_ms: u64,
    /// Provider kind name.
    pub provider: String,
    /// Model id sent.
    pub model: String,
    /// System prompt.
    pub system: Option<String>,
    /// The last user message sent (the prompt, or the re-ask).
    pub prompt: String,
    /// The reply text, if one came back.
    pub reply: Option<String>,
    /// Prompt tokens.
    pub input_tokens: u64,
    /// Completion tokens.
    pub output_tokens: u64,
    /// Cost in USD, when the price is known.
    pub cost_usd: Option<f64>,
    /// Outcome.
    pub status: CallStatus,
    /// The error, for anything but `ok`/`cached`.
    pub error: Option<String>,
    /// The score read, if any.
    pub parsed_score: Option<f64>,
    /// 1 for the first ask, 2 for the re-ask after an unreadable reply.
    pub attempt: u32,
    /// HTTP/CLI attempts this ask took, retries included (batch submissions, for `--batch`).
    pub tries: u32,
    /// The Message Batch the answer came from (`--batch`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub batch: Option<String>,
    /// The model's thinking before its reply (a judge with `reasoning:`), kept here for
    /// audit and never read as the verdict.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thinking: Option<String>,
    /// Of `output_tokens`, those spent reasoning, when the provider itemises them.
    #[serde(skip_serializing_if = "is_zero")]
    pub reasoning_tokens: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// An append-only JSONL file.
#[derive(Debug)]
pub struct InteractionLog {
    path: PathBuf,
    file: Mutex<File>,
}

impl InteractionLog {
    /// Opens `path` for appending, creating it and its directory.
    pub fn open(path: impl Into<PathBuf>) -> std::io::Result<InteractionLog> {
        let path = path.into();
        if let Some(why) = crate::outfile::refuse_target(&path) {
            return Err(std::io::Error::other(why));
        }
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)?;
        }
        let file = OpenOptions::new().create(true).append(true).open(&path)?;
        Ok(InteractionLog {
            path,
            file: Mutex::new(file),
        })
    }

    /// The file written.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends one record.
    pub fn write(&self, record: &LogRecord) -> std::io::Result<()> {
        let mut line = serde_json::to_vec(record).map_err(std::io::Error::other)?;
        line.push(b'\n');
        let mut file = self.file.lock().unwrap_or_else(|p| p.into_inner());
        file.write_all(&line)
    }
}
