//! One builder for running the caldera binary in tests.
//!
//! Why one: every test that starts the binary gets the same clean environment (no
//! colour, no provider key or endpoint, no caldera switch from the developer's shell),
//! so a test passes or fails the same on every machine; and every unexpected exit code
//! fails with one message that shows the command line, stdout and stderr.
//!
//! `Caldera::new()` chains by value (`.arg`, `.args`, `.dir`, `.env`, `.envs`,
//! `.env_remove`, `.stdin`, `.out`) and ends in `.run()`, which returns a [`Ran`]. What a
//! builder cannot express goes through the escape hatches: [`Caldera::command`] (insta's
//! `assert_cmd_snapshot!`, custom stdio, `spawn`), [`Caldera::path`] (the binary for a
//! script) and [`Caldera::under_shell`] (the binary under `sh`, for `umask` or `ulimit`).

use std::ffi::OsStr;
use std::io::{BufRead as _, BufReader, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::Value;

/// Variables of a developer's shell that change what the binary does: removed from every
/// run, so a test sets what it needs explicitly.
const SCRUBBED: &[&str] = &[
    "CLICOLOR_FORCE",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_BASE_URL",
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "CALDERA_PROFILE",
    "CALDERA_NO_STREAM",
    "CALDERA_TARGET",
    "CALDERA_VERSION",
];

/// A run of the binary being built: the command, what goes to its stdin, and where its
/// result file is read from.
#[must_use]
pub struct Caldera {
    cmd: Command,
    stdin: Option<Vec<u8>>,
    out: Option<PathBuf>,
}

impl Caldera {
    /// The binary in the project root with a clean environment.
    pub fn new() -> Self {
        Self::clean(Command::new(Self::path()))
    }

    /// The binary started by `sh` after `setup` (a `umask` or `ulimit` that a test needs
    /// in the binary's process): `sh -c '<setup>; exec "$0" "$@"'`, so arguments, `.out`
    /// and the clean environment work as with [`Caldera::new`].
    pub fn under_shell(setup: &str) -> Self {
        let mut cmd = Command::new("sh");
        cmd.arg("-c")
            .arg(format!("{setup}; exec \"$0\" \"$@\""))
            .arg(Self::path());
        Self::clean(cmd)
    }

    /// The binary's path, for scripts that start it themselves.
    pub fn path() -> PathBuf {
        insta_cmd::get_cargo_bin("caldera")
    }

    fn clean(mut cmd: Command) -> Self {
        cmd.current_dir(env!("CARGO_MANIFEST_DIR"))
            .env("NO_COLOR", "1");
        for name in SCRUBBED {
            cmd.env_remove(name);
        }
        Self {
            cmd,
            stdin: None,
            out: None,
        }
    }

    pub fn arg(mut self, arg: impl AsRef<OsStr>) -> Self {
        self.cmd.arg(arg);
        self
    }

    pub fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.cmd.args(args);
        self
    }

    /// The working folder (the project root unless set).
    pub fn dir(mut self, dir: impl AsRef<Path>) -> Self {
        self.cmd.current_dir(dir);
        self
    }

    pub fn env(mut self, key: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> Self {
        self.cmd.env(key, value);
        self
    }

    pub fn envs<K: AsRef<OsStr>, V: AsRef<OsStr>>(mut self, vars: &[(K, V)]) -> Self {
        for (k, v) in vars {
            self.cmd.env(k, v);
        }
        self
    }

    pub fn env_remove(mut self, key: impl AsRef<OsStr>) -> Self {
        self.cmd.env_remove(key);
        self
    }

    /// Bytes written to the binary's stdin (otherwise stdin is closed).
    pub fn stdin(mut self, bytes: impl Into<Vec<u8>>) -> Self {
        self.stdin = Some(bytes.into());
        self
    }

    /// Adds `--out path`, removes a stale file there now, and reads the result after the
    /// run into [`Ran::result`].
    pub fn out(mut self, path: impl AsRef<Path>) -> Self {
        let path = path.as_ref().to_owned();
        match std::fs::remove_file(&path) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => panic!("cannot remove the stale {}: {e}", path.display()),
        }
        self.cmd.arg("--out").arg(&path);
        self.out = Some(path);
        self
    }

    /// The command as built, for what the builder cannot express (snapshots, custom
    /// stdio, `spawn`).
    pub fn command(self) -> Command {
        assert!(
            self.stdin.is_none() && self.out.is_none(),
            "stdin and out are read by run(): set them on the Command instead"
        );
        self.cmd
    }

    /// Runs to the end and collects the exit code, output and result file.
    pub fn run(mut self) -> Ran {
        let line = command_line(&self.cmd);
        let output = match self.stdin.take() {
            None => self.cmd.output(),
            Some(bytes) => run_with_stdin(&mut self.cmd, &bytes),
        }
        .unwrap_or_else(|e| panic!("cannot start {line}: {e}"));
        Ran::new(line, output, self.out.as_deref())
    }

    /// Runs with the reading end of stdout closed after `lines` lines (0: before the
    /// binary writes anything), as `caldera plan | head` once `head` is gone; `stdout`
    /// holds the lines read.
    pub fn run_closing_stdout_after(mut self, lines: usize) -> Ran {
        let line = command_line(&self.cmd);
        let mut child = self
            .cmd
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {line}: {e}"));
        let mut read = String::new();
        let mut pipe = BufReader::new(child.stdout.take().expect("piped stdout"));
        for _ in 0..lines {
            if pipe.read_line(&mut read).unwrap_or(0) == 0 {
                break;
            }
        }
        drop(pipe);
        let mut output = child
            .wait_with_output()
            .unwrap_or_else(|e| panic!("cannot wait for {line}: {e}"));
        output.stdout = read.into_bytes();
        Ran::new(line, output, self.out.as_deref())
    }

    /// [`Caldera::run`] on a blocking thread, for tokio tests whose server runs on the
    /// test's runtime.
    pub async fn run_async(self) -> Ran {
        tokio::task::spawn_blocking(move || self.run())
            .await
            .expect("the run's thread")
    }
}

/// Writes `bytes` to the child's stdin from a thread (so a large input cannot block
/// against a full stdout pipe), then waits for it.
fn run_with_stdin(cmd: &mut Command, bytes: &[u8]) -> std::io::Result<Output> {
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    let mut pipe = child.stdin.take().expect("piped stdin");
    let bytes = bytes.to_vec();
    let writer = std::thread::spawn(move || {
        // The binary may exit without reading all of it; that is its answer, not ours.
        let _ = pipe.write_all(&bytes);
    });
    let output = child.wait_with_output();
    let _ = writer.join();
    output
}

/// The command line as a shell would show it, for failure messages.
fn command_line(cmd: &Command) -> String {
    std::iter::once(cmd.get_program())
        .chain(cmd.get_args())
        .map(|a| a.to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join(" ")
}

/// What a finished run left: exit code, output and the `--out` result.
#[derive(Debug)]
pub struct Ran {
    /// `None` when a signal ended the process.
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
    /// The `--out` file given with [`Caldera::out`]; `Null` when absent or unreadable.
    pub result: Value,
    line: String,
}

impl Ran {
    fn new(line: String, output: Output, out: Option<&Path>) -> Self {
        let result = out
            .and_then(|p| std::fs::read_to_string(p).ok())
            .and_then(|t| serde_json::from_str(&t).ok())
            .unwrap_or(Value::Null);
        Self {
            code: output.status.code(),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
            result,
            line,
        }
    }

    /// The exit code; panics with stderr when a signal ended the process.
    pub fn code(&self) -> i32 {
        self.code
            .unwrap_or_else(|| panic!("{} was killed by a signal\n{}", self.line, self.stderr))
    }

    /// Stdout parsed as JSON; panics showing it when it is not.
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.stdout).unwrap_or_else(|e| {
            panic!(
                "stdout of {} is not JSON ({e}):\n{}\nstderr:\n{}",
                self.line, self.stdout, self.stderr
            )
        })
    }

    /// Itself when the exit code is `code`; otherwise panics showing the command line,
    /// stdout and stderr.
    #[track_caller]
    pub fn expect(self, code: i32) -> Self {
        assert!(
            self.code == Some(code),
            "{} exited with {:?}, expected {code}\nstdout:\n{}\nstderr:\n{}",
            self.line,
            self.code,
            self.stdout,
            self.stderr
        );
        self
    }

    /// Stdout then stderr, for assertions on what a user sees.
    pub fn text(&self) -> String {
        format!("{}{}", self.stdout, self.stderr)
    }
}
