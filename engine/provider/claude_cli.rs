//! The `claude` command-line tool as a fallback provider.
//!
//! The prompt goes on stdin (never on the command line, where it would be
//! visible in `ps` and limited in size), the program is started directly (no
//! shell), and a timeout kills the child.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use tokio::io::AsyncWriteExt;
use tokio::process::Command;

use super::{ProviderError, ProviderReply, ProviderRequest, Role, Usage};

/// Runs `claude --print` per request.
#[derive(Debug, Clone)]
pub struct ClaudeCliProvider {
    program: PathBuf,
    timeout: Duration,
    max_turns: u32,
}

impl ClaudeCliProvider {
    /// A provider running `program` with a per-request `timeout`.
    pub fn new(program: PathBuf, timeout: Duration) -> Self {
        ClaudeCliProvider {
            program,
            timeout,
            max_turns: 1,
        }
    }

    /// Sets `--max-turns` (default 1: a judge answers in one turn and needs no tools).
    pub fn with_max_turns(mut self, max_turns: u32) -> Self {
        self.max_turns = max_turns.max(1);
        self
    }

    /// The program that is run.
    pub fn program(&self) -> &Path {
        &self.program
    }

    /// The argument list for one request (without the program).
    pub fn args(&self, request: &ProviderRequest) -> Vec<String> {
        let mut args = vec![
            "--print".to_string(),
            "--model".to_string(),
            request.model.clone(),
            "--output-format".to_string(),
            "text".to_string(),
            "--max-turns".to_string(),
            self.max_turns.to_string(),
        ];
        if let Some(system) = &request.system {
            args.push("--system-prompt".to_string());
            args.push(system.clone());
        }
        args
    }

    /// Sends one request.
    pub async fn complete(
        &self,
        request: &ProviderRequest,
    ) -> Result<ProviderReply, ProviderError> {
        let mut child = Command::new(&self.program)
            .args(self.args(request))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| {
                ProviderError::Cli(format!("cannot start {}: {e}", self.program.display()))
            })?;
        let stdin_text = conversation_text(request);
        let mut stdin = child
            .stdin
            .take()
            .ok_or_else(|| ProviderError::Cli("child has no stdin".into()))?;
        // Written concurrently with reading stdout, so a child that answers before
        // reading all of a large prompt cannot deadlock us.
        let writer = tokio::spawn(async move {
            let result = stdin.write_all(stdin_text.as_bytes()).await;
            drop(stdin);
            result
        });
        let output = match tokio::time::timeout(self.timeout, child.wait_with_output()).await {
            Ok(result) => {
                result.map_err(|e| ProviderError::Cli(format!("waiting for claude: {e}")))?
            }
            Err(_) => {
                writer.abort();
                // Dropping the future dropped the child, and `kill_on_drop` killed it.
                return Err(ProviderError::Timeout {
                    provider: "claude-cli",
                    after: self.timeout,
                });
            }
        };
        // A child that exits without reading stdin gives a broken pipe; its exit status says more.
        let _ = writer.await;
        if !output.status.success() {
            let stderr = String::from_utf8_lossy(&output.stderr);
            let detail: String = stderr.trim().chars().take(500).collect();
            return Err(ProviderError::Cli(format!(
                "{} exited with {}{}",
                self.program.display(),
                output.status,
                if detail.is_empty() {
                    String::new()
                } else {
                    format!(": {detail}")
                }
            )));
        }
        Ok(ProviderReply {
            text: String::from_utf8_lossy(&output.stdout).into_owned(),
            usage: Usage::default(),
            thinking: None,
            truncated: false,
            model: None,
        })
    }
}

/// The conversation as one text: the CLI takes a single prompt, so a re-ask
/// quotes the previous reply inline.
fn conversation_text(request: &ProviderRequest) -> String {
    let mut text = String::new();
    for (i, m) in request.messages.iter().enumerate() {
        if i > 0 {
            text.push_str("\n\n");
        }
        match m.role {
            Role::User if i == 0 => {}
            Role::User => text.push_str("User:\n"),
            Role::Assistant => text.push_str("Your previous reply:\n"),
        }
        text.push_str(&m.content);
    }
    text
}

/// The first executable file called `name` in `PATH`.
pub fn find_on_path(name: &str) -> Option<PathBuf> {
    find_in_path(name, &std::env::var_os("PATH")?)
}

/// The first executable file called `name` in a `PATH`-style list of directories.
pub fn find_in_path(name: &str, path: &std::ffi::OsStr) -> Option<PathBuf> {
    std::env::split_paths(path)
        .map(|dir| dir.join(name))
        .find(|candidate| is_executable(candidate))
}

fn is_executable(path: &Path) -> bool {
    let Ok(meta) = std::fs::metadata(path) else {
        return false;
    };
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        meta.is_file() && meta.permissions().mode() & 0o111 != 0
    }
    #[cfg(not(unix))]
    {
        meta.is_file()
    }
}

/// `claude --version`, trimmed, within `timeout`.
pub async fn version(program: &Path, timeout: Duration) -> Result<String, ProviderError> {
    let run = Command::new(program)
        .arg("--version")
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(timeout, run)
        .await
        .map_err(|_| ProviderError::Timeout {
            provider: "claude-cli",
            after: timeout,
        })?
        .map_err(|e| ProviderError::Cli(format!("cannot run {}: {e}", program.display())))?;
    if !output.status.success() {
        return Err(ProviderError::Cli(format!(
            "--version exited with {}",
            output.status
        )));
    }
    Ok(String::from_utf8_lossy(&output.stdout).trim().to_string())
}
