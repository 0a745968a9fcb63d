//! The `claude` command-line tool as a fallback provider.
//!
//! The prompt goes on stdin (never on the command line, where it would be
//! visible in `ps` and limited in size), the program is started directly (no
//! shell), and a timeout kills the child and everything it started (its process
//! group). Stdout is read up to the longest reply ([`MAX_REPLY_BYTES`]), and the answer
//! is taken when the child exits, not when stdout ends: a background process it left
//! behind may hold stdout open for ever.

use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::process::{Child, ChildStderr, ChildStdin, ChildStdout, Command};
use tokio::sync::oneshot;

use super::{MAX_REPLY_BYTES, ProviderError, ProviderReply, ProviderRequest, Role, Usage};

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
    ///
    /// The child runs in a process group of its own, so whatever it starts can be ended
    /// with it: on the timeout, on an answer past the cap, and once it has exited (a
    /// straggler left behind would hold stdout open, and the answer would never end).
    /// The answer is what the child wrote by the time it exited.
    pub async fn complete(
        &self,
        request: &ProviderRequest,
    ) -> Result<ProviderReply, ProviderError> {
        let mut command = Command::new(&self.program);
        command
            .args(self.args(request))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        #[cfg(unix)]
        command.process_group(0);
        let mut child = command.spawn().map_err(|e| {
            ProviderError::Cli(format!("cannot start {}: {e}", self.program.display()))
        })?;
        // Declared after `child`, so it is dropped first: the group ends on every way out.
        let group = ProcessGroup(child.id());
        let pipes = Pipes::take(&mut child)?;
        let stdin_text = conversation_text(request);
        let mut stdin = pipes.stdin;
        // Written concurrently with reading stdout, so a child that answers before
        // reading all of a large prompt cannot deadlock us.
        let writer = AbortOnDrop(tokio::spawn(async move {
            let result = stdin.write_all(stdin_text.as_bytes()).await;
            drop(stdin);
            result
        }));
        let stdout = PipeReader::start(pipes.stdout, MAX_REPLY_BYTES, PastCap::Stop);
        let stderr = PipeReader::start(pipes.stderr, STDERR_KEPT, PastCap::Drop);
        let exited =
            match tokio::time::timeout(self.timeout, wait_for_exit(&mut child, stdout)).await {
                Ok(exited) => exited?,
                // Dropping the child and the group guard kills them all.
                Err(_) => {
                    return Err(ProviderError::Timeout {
                        provider: "claude-cli",
                        after: self.timeout,
                    });
                }
            };
        // Stragglers hold the pipes open: end them, then take what was written.
        group.kill();
        // A child that exits without reading stdin gives a broken pipe; its exit status says more.
        drop(writer);
        let stdout = exited.stdout.finish().await?;
        if !exited.status.success() {
            let stderr = stderr.finish().await;
            let stderr = String::from_utf8_lossy(&stderr.bytes);
            let detail: String = stderr.trim().chars().take(500).collect();
            return Err(ProviderError::Cli(format!(
                "{} exited with {}{}",
                self.program.display(),
                exited.status,
                if detail.is_empty() {
                    String::new()
                } else {
                    format!(": {detail}")
                }
            )));
        }
        Ok(ProviderReply {
            text: String::from_utf8_lossy(&stdout.bytes).into_owned(),
            usage: Usage::default(),
            thinking: None,
            truncated: false,
            model: None,
        })
    }
}

/// The most of the child's stderr kept for an error message; the rest is read and dropped.
const STDERR_KEPT: usize = 64 << 10;

/// How long the pipes are read after the child exited and its group was ended: what it
/// wrote is already in the pipe, so this only bounds a holder that left the group.
const DRAIN_AFTER_EXIT: Duration = Duration::from_secs(2);

/// The error for stdout past [`MAX_REPLY_BYTES`].
fn too_long() -> ProviderError {
    ProviderError::Cli(format!(
        "the answer on stdout is more than {MAX_REPLY_BYTES} bytes (the longest reply read); \
         the process was stopped"
    ))
}

/// The child's three pipes.
struct Pipes {
    stdin: ChildStdin,
    stdout: ChildStdout,
    stderr: ChildStderr,
}

impl Pipes {
    fn take(child: &mut Child) -> Result<Pipes, ProviderError> {
        let missing = |name: &str| ProviderError::Cli(format!("the child has no {name}"));
        Ok(Pipes {
            stdin: child.stdin.take().ok_or_else(|| missing("stdin"))?,
            stdout: child.stdout.take().ok_or_else(|| missing("stdout"))?,
            stderr: child.stderr.take().ok_or_else(|| missing("stderr"))?,
        })
    }
}

/// A child that exited, and its stdout.
struct Exited {
    status: ExitStatus,
    stdout: Stdout,
}

/// The child's stdout: still being read, or read to its end.
enum Stdout {
    Reading(PipeReader),
    Read(PipeRead),
}

impl Stdout {
    /// What was read, waiting at most [`DRAIN_AFTER_EXIT`] for the pipe to end; an
    /// error when more than the cap arrived.
    async fn finish(self) -> Result<PipeRead, ProviderError> {
        let read = match self {
            Stdout::Read(read) => read,
            Stdout::Reading(reader) => reader.finish().await,
        };
        if read.over_cap {
            return Err(too_long());
        }
        Ok(read)
    }
}

/// Waits until the child exits; an answer past the cap ends the wait early as an error.
async fn wait_for_exit(child: &mut Child, mut stdout: PipeReader) -> Result<Exited, ProviderError> {
    let waited = |r: std::io::Result<ExitStatus>| {
        r.map_err(|e| ProviderError::Cli(format!("waiting for claude: {e}")))
    };
    tokio::select! {
        status = child.wait() => Ok(Exited { status: waited(status)?, stdout: Stdout::Reading(stdout) }),
        read = &mut stdout.task.0 => {
            // A reader that failed read nothing.
            let read = read.unwrap_or_default();
            if read.over_cap {
                return Err(too_long());
            }
            // Stdout ended: the exit is what is left to wait for.
            let status = waited(child.wait().await)?;
            Ok(Exited { status, stdout: Stdout::Read(read) })
        }
    }
}

/// What was read from one pipe.
#[derive(Debug, Default)]
struct PipeRead {
    /// The bytes kept (at most the cap).
    bytes: Vec<u8>,
    /// More than the cap arrived.
    over_cap: bool,
}

/// What a reader does with bytes past its cap.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PastCap {
    /// Stops reading (stdout: the answer is refused, the child is ended).
    Stop,
    /// Reads on and drops them (stderr: only its start is shown, but a child must not
    /// block writing it).
    Drop,
}

/// Reads `pipe` to its end or until told to stop, keeping at most `cap` bytes and
/// marking `over_cap` when more arrived, so a child writing without end costs no memory.
async fn read_pipe(
    mut pipe: impl AsyncRead + Unpin,
    cap: usize,
    past_cap: PastCap,
    mut stop: oneshot::Receiver<()>,
) -> PipeRead {
    let mut read = PipeRead::default();
    let mut chunk = vec![0u8; 64 << 10];
    loop {
        let n = tokio::select! {
            // What is in the pipe is read before a stop is heeded.
            biased;
            n = pipe.read(&mut chunk) => n,
            _ = &mut stop => return read,
        };
        match n {
            Ok(0) | Err(_) => return read,
            Ok(n) if read.bytes.len() + n > cap => {
                let room = cap - read.bytes.len();
                read.bytes.extend_from_slice(&chunk[..room]);
                read.over_cap = true;
                if past_cap == PastCap::Stop {
                    return read;
                }
            }
            Ok(n) => read.bytes.extend_from_slice(&chunk[..n]),
        }
    }
}

/// A spawned task that is aborted when dropped (the writer of stdin nobody waits for).
struct AbortOnDrop<T>(tokio::task::JoinHandle<T>);

impl<T> Drop for AbortOnDrop<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// A task reading one pipe of the child; aborted when dropped.
struct PipeReader {
    task: AbortOnDrop<PipeRead>,
    stop: Option<oneshot::Sender<()>>,
}

impl PipeReader {
    /// Starts reading `pipe`, keeping at most `cap` bytes.
    fn start(
        pipe: impl AsyncRead + Unpin + Send + 'static,
        cap: usize,
        past_cap: PastCap,
    ) -> PipeReader {
        let (stop, stopped) = oneshot::channel();
        PipeReader {
            task: AbortOnDrop(tokio::spawn(read_pipe(pipe, cap, past_cap, stopped))),
            stop: Some(stop),
        }
    }

    /// What was read, waiting at most [`DRAIN_AFTER_EXIT`] for the pipe to end: a pipe
    /// still open then is held by a process outside the group, and what came before is
    /// the answer.
    async fn finish(mut self) -> PipeRead {
        if let Ok(joined) = tokio::time::timeout(DRAIN_AFTER_EXIT, &mut self.task.0).await {
            return joined.unwrap_or_default();
        }
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        (&mut self.task.0).await.unwrap_or_default()
    }
}

/// The process group of the child (its id is the child's pid): the child and everything
/// it started, unless that left the group on purpose. Ended with `SIGKILL` when dropped.
struct ProcessGroup(Option<u32>);

impl ProcessGroup {
    /// Sends `SIGKILL` to every process of the group. An empty group is no error.
    fn kill(&self) {
        #[cfg(unix)]
        {
            // Never 0 or 1: `kill(0)` is our own group and `kill(-1)` every process we may signal.
            let pid = self
                .0
                .and_then(|id| i32::try_from(id).ok())
                .filter(|id| *id > 1)
                .and_then(rustix::process::Pid::from_raw);
            if let Some(pid) = pid {
                let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
            }
        }
    }
}

impl Drop for ProcessGroup {
    fn drop(&mut self) {
        self.kill();
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

/// `claude --version`, trimmed, within `timeout`. Run as a request is (see
/// [`ClaudeCliProvider::complete`]): in a process group of its own, ended with it, the
/// output read up to `VERSION_KEPT` and taken at the exit.
pub async fn version(program: &Path, timeout: Duration) -> Result<String, ProviderError> {
    let mut command = Command::new(program);
    command
        .arg("--version")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true);
    #[cfg(unix)]
    command.process_group(0);
    let mut child = command
        .spawn()
        .map_err(|e| ProviderError::Cli(format!("cannot run {}: {e}", program.display())))?;
    let group = ProcessGroup(child.id());
    let stdout = child
        .stdout
        .take()
        .ok_or_else(|| ProviderError::Cli("the child has no stdout".into()))?;
    let stdout = PipeReader::start(stdout, VERSION_KEPT, PastCap::Drop);
    let status = tokio::time::timeout(timeout, child.wait())
        .await
        .map_err(|_| ProviderError::Timeout {
            provider: "claude-cli",
            after: timeout,
        })?
        .map_err(|e| ProviderError::Cli(format!("waiting for {}: {e}", program.display())))?;
    group.kill();
    let output = stdout.finish().await;
    if !status.success() {
        return Err(ProviderError::Cli(format!(
            "--version exited with {status}"
        )));
    }
    Ok(String::from_utf8_lossy(&output.bytes).trim().to_string())
}

/// The most of `claude --version`'s output kept: a version line is a few dozen bytes.
const VERSION_KEPT: usize = 4 << 10;
