//! One builder for running the caldera binary in tests.
//!
//! Why one: every test that starts the binary gets the same clean environment (no
//! colour, no provider key or endpoint, no caldera switch from the developer's shell),
//! so a test passes or fails the same on every machine; and every unexpected exit code
//! fails with one message that shows the command line, stdout and stderr.
//!
//! `Caldera::new()` chains by value (`.arg`, `.args`, `.dir`, `.env`, `.envs`,
//! `.env_remove`, `.out`) and ends in `.run()`, which returns a [`Ran`]. What a
//! builder cannot express goes through the escape hatches: [`Caldera::command`] (insta's
//! `assert_cmd_snapshot!`, custom stdio, `spawn`), [`Caldera::path`] (the binary for a
//! script) and [`Caldera::under_shell`] (the binary under `sh`, for `umask` or `ulimit`).

use std::ffi::OsStr;
use std::io::{BufRead as _, BufReader};
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

/// A run of the binary being built: the command, and where its result file is read from.
#[must_use]
pub struct Caldera {
    cmd: Command,
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
        Self { cmd, out: None }
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
            self.out.is_none(),
            "the --out result is read by run(): add the argument instead"
        );
        self.cmd
    }

    /// Runs to the end (stdin closed) and collects the exit code, output and result file.
    pub fn run(mut self) -> Ran {
        let line = command_line(&self.cmd);
        let output = self
            .cmd
            .output()
            .unwrap_or_else(|e| panic!("cannot start {line}: {e}"));
        Ran::new(line, output, self.out.as_deref())
    }

    /// Runs with the reading end of stdout closed after `lines` lines (0: before the
    /// binary writes anything), as `caldera plan | head` once `head` is gone; `stdout`
    /// holds the lines read. Stdin is closed, as with [`Caldera::run`].
    pub fn run_closing_stdout_after(mut self, lines: usize) -> Ran {
        let line = command_line(&self.cmd);
        let mut child = self
            .cmd
            .stdin(Stdio::null())
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

/// The environment a run starts from: colour off, nothing of the developer's shell that
/// changes what the binary does.
#[test]
fn every_run_starts_without_provider_keys_or_colour_switches() {
    let cmd = Caldera::new().command();
    let envs: Vec<_> = cmd.get_envs().collect();
    assert!(envs.contains(&(OsStr::new("NO_COLOR"), Some(OsStr::new("1")))));
    for name in SCRUBBED {
        assert!(
            envs.contains(&(OsStr::new(name), None)),
            "{name} is not removed"
        );
    }
    assert_eq!(
        cmd.get_current_dir(),
        Some(Path::new(env!("CARGO_MANIFEST_DIR")))
    );
}

/// `.out` removes a stale file first, so a run that writes nothing is never read as
/// one that did; what the run wrote is in `result`.
#[test]
fn out_reads_the_result_the_run_wrote_never_a_stale_one() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r.json");
    std::fs::write(&out, r#"{"suite": "stale"}"#).unwrap();
    let refused = Caldera::new()
        .args(["run", "judges.d/no-such-suite", "--heuristic"])
        .out(&out)
        .run();
    assert_eq!(refused.code(), 2, "{}", refused.stderr);
    assert!(refused.result.is_null(), "{}", refused.result);
    let ran = Caldera::new()
        .args(["run", "judges.d/trivy", "--heuristic", "--quiet"])
        .out(&out)
        .run();
    assert_eq!(ran.result["suite"], "trivy", "{}", ran.stderr);
}
