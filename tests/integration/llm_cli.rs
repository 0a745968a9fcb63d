//! The `claude` CLI fallback with a real subprocess: a fake `claude` script.

use std::path::{Path, PathBuf};
use std::time::Duration;

use caldera::llm::executor::{Executor, Outcome};
use caldera::provider::claude_cli::{self, ClaudeCliProvider};
use caldera::provider::{Message, Provider, ProviderError, ProviderRequest, Role};

use super::llm_http::{job, options};

/// Writes an executable `claude` into `dir` with the given shell body.
/// Writes the fake `claude` from a child shell, so this test process never holds a
/// writable descriptor on it: another test forking at that moment would otherwise keep
/// one open and make executing the script fail with "text file busy".
pub(crate) fn fake_claude(dir: &Path, body: &str) -> PathBuf {
    use std::io::Write;
    let path = dir.join("claude");
    let mut child = std::process::Command::new("sh")
        .arg("-c")
        .arg("cat > \"$1\" && chmod 755 \"$1\"")
        .arg("sh")
        .arg(&path)
        .stdin(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(format!("#!/bin/sh\n{body}\n").as_bytes())
        .unwrap();
    assert!(child.wait().unwrap().success());
    path
}

/// `dir` first, then the real PATH: the fake must win over any installed `claude`.
fn found_first(dir: &Path) -> PathBuf {
    let mut dirs = vec![dir.to_path_buf()];
    dirs.extend(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    ));
    let path = std::env::join_paths(dirs).unwrap();
    claude_cli::find_in_path("claude", &path).unwrap()
}

fn request(prompt: &str) -> ProviderRequest {
    ProviderRequest {
        model: "sonnet".into(),
        system: Some("Be strict.".into()),
        messages: vec![Message {
            role: Role::User,
            content: prompt.into(),
        }],
        max_tokens: 100,
        temperature: Some(0.0),
        response_schema: None,
        reasoning: None,
        cache: None,
    }
}

#[tokio::test]
async fn argv_and_stdin_are_as_documented() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display();
    fake_claude(
        dir.path(),
        &format!(
            "for a in \"$@\"; do printf '%s\\n' \"$a\"; done > {d}/argv.txt\ncat > {d}/stdin.txt\n\
             printf '%s' '{{\"score\": 5, \"reasoning\": \"ok\"}}'"
        ),
    );
    let program = found_first(dir.path());
    assert_eq!(program, dir.path().join("claude"));
    let provider = Provider::ClaudeCli(ClaudeCliProvider::new(program, Duration::from_secs(10)));
    // A prompt with shell metacharacters and a large size: stdin, no shell, no deadlock.
    let prompt = format!(
        "Judge $(rm -rf /) `x` 'q' \"d\"\n{}",
        "evidence ".repeat(20_000)
    );
    let reply = provider.complete(&request(&prompt)).await.unwrap();
    assert_eq!(reply.text, r#"{"score": 5, "reasoning": "ok"}"#);
    let argv = std::fs::read_to_string(dir.path().join("argv.txt")).unwrap();
    assert_eq!(
        argv.lines().collect::<Vec<_>>(),
        [
            "--print",
            "--model",
            "sonnet",
            "--output-format",
            "text",
            "--max-turns",
            "1",
            "--system-prompt",
            "Be strict."
        ]
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("stdin.txt")).unwrap(),
        prompt
    );
}

#[tokio::test]
async fn the_executor_keeps_the_alias_for_the_cli() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display();
    fake_claude(
        dir.path(),
        &format!("printf '%s ' \"$@\" > {d}/argv.txt\ncat >/dev/null\necho '{{\"score\": 3}}'"),
    );
    let provider = Provider::ClaudeCli(ClaudeCliProvider::new(
        found_first(dir.path()),
        Duration::from_secs(10),
    ));
    let out = Executor::new(provider, options(1))
        .run(vec![job("c1", "Judge.")])
        .await;
    let scored = out[0].outcome.scored().expect("scored");
    assert_eq!(scored.verdict.score, 3.0);
    assert_eq!(scored.cost_usd, None, "the CLI reports no tokens");
    let argv = std::fs::read_to_string(dir.path().join("argv.txt")).unwrap();
    assert!(argv.contains("--model sonnet "), "{argv}");
}

#[tokio::test]
async fn a_hanging_cli_is_killed_at_the_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("pid");
    let program = fake_claude(
        dir.path(),
        &format!("echo $$ > '{}'\nexec sleep 3600", pid_file.display()),
    );
    let provider = ClaudeCliProvider::new(program, Duration::from_millis(300));
    let err = provider.complete(&request("hi")).await.unwrap_err();
    assert!(matches!(err, ProviderError::Timeout { .. }), "{err:?}");
    // Killed, not left running: the process the script became (`exec sleep`) is gone.
    assert_gone(&pid_file).await;
}

/// Whether process `pid` runs (a zombie has been killed, only not yet reaped).
fn is_alive(pid: &str) -> bool {
    std::fs::read_to_string(Path::new("/proc").join(pid).join("stat"))
        .map(|s| {
            // `pid (comm) STATE ...`
            let state = s.rsplit(')').next().unwrap_or("").trim_start();
            !state.starts_with('Z') && !state.starts_with('X')
        })
        .unwrap_or(false)
}

/// Waits until the process whose id is in `pid_file` has ended, or fails. Polled,
/// because a kill is delivered asynchronously; the fakes sleep for an hour, so they
/// cannot end on their own while the test waits and no clock decides the outcome.
async fn assert_gone(pid_file: &Path) {
    let pid = std::fs::read_to_string(pid_file).unwrap().trim().to_owned();
    for _ in 0..600 {
        if !is_alive(&pid) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("process {pid} started by the fake `claude` still runs");
}

#[tokio::test]
async fn a_timeout_kills_the_processes_the_cli_started_too() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("pid");
    let program = fake_claude(
        dir.path(),
        &format!(
            "cat >/dev/null\nsleep 3600 &\necho $! > '{}'\nwait",
            pid_file.display()
        ),
    );
    let provider = ClaudeCliProvider::new(program, Duration::from_secs(1));
    let err = provider.complete(&request("hi")).await.unwrap_err();
    assert!(matches!(err, ProviderError::Timeout { .. }), "{err:?}");
    assert_gone(&pid_file).await;
}

#[tokio::test]
async fn the_answer_is_read_when_the_cli_exits_though_a_grandchild_holds_stdout() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("pid");
    let program = fake_claude(
        dir.path(),
        &format!(
            "cat >/dev/null\nsleep 3600 &\necho $! > '{}'\nprintf '%s' '{{\"score\": 4}}'",
            pid_file.display()
        ),
    );
    // A timeout far above the time the answer takes: before, the read waited for the
    // end of file the background `sleep` never gives, and the answer was lost.
    let provider = ClaudeCliProvider::new(program, Duration::from_secs(20));
    let started = std::time::Instant::now();
    let reply = provider.complete(&request("hi")).await.unwrap();
    assert_eq!(reply.text, r#"{"score": 4}"#);
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "{:?}",
        started.elapsed()
    );
    // The straggler holding the pipe was ended with the answer.
    assert_gone(&pid_file).await;
}

#[tokio::test]
async fn cli_output_past_the_cap_is_refused_with_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    // 3 MB on stdout, above the 1 MiB longest reply.
    let program = fake_claude(
        dir.path(),
        "cat >/dev/null\nhead -c 3000000 /dev/zero | tr '\\0' x",
    );
    let provider = ClaudeCliProvider::new(program, Duration::from_secs(20));
    let err = provider.complete(&request("hi")).await.unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, ProviderError::Cli(_)), "{err:?}");
    assert!(text.contains("more than 1048576 bytes"), "{text}");
}

#[tokio::test]
async fn a_failing_cli_reports_status_and_stderr() {
    let dir = tempfile::tempdir().unwrap();
    let program = fake_claude(
        dir.path(),
        "cat >/dev/null\necho 'boom: not logged in' >&2\nexit 3",
    );
    let provider = Provider::ClaudeCli(ClaudeCliProvider::new(program, Duration::from_secs(10)));
    let err = provider.complete(&request("hi")).await.unwrap_err();
    let text = err.to_string();
    assert!(text.contains("exit status: 3"), "{text}");
    assert!(text.contains("boom: not logged in"), "{text}");
    assert!(!err.is_retryable());
    let out = Executor::new(provider, options(3))
        .run(vec![job("f", "x")])
        .await;
    assert!(
        matches!(&out[0].outcome, Outcome::Unscored { attempts: 1, .. }),
        "{:?}",
        out[0]
    );
}

#[tokio::test]
async fn version_is_read_for_doctor() {
    let dir = tempfile::tempdir().unwrap();
    let program = fake_claude(dir.path(), "echo '9.9.9 (Claude Code)'");
    let v = claude_cli::version(&program, Duration::from_secs(5))
        .await
        .unwrap();
    assert_eq!(v, "9.9.9 (Claude Code)");
    assert_eq!(
        claude_cli::find_in_path("claude", std::ffi::OsStr::new("/nonexistent-dir")),
        None
    );
}

/// The `claude` child runs in a process group of its own, which a Ctrl-C at the terminal
/// no longer reaches: an interrupted run ends the group itself, leaving nothing behind.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interrupted_run_ends_the_cli_and_what_it_started() {
    let dir = tempfile::tempdir().unwrap();
    let pids = dir.path().join("pids");
    fake_claude(
        dir.path(),
        &format!(
            "cat >/dev/null\nsleep 3600 &\necho $! >> '{}'\nwait",
            pids.display()
        ),
    );
    let mut path = std::ffi::OsString::from(dir.path());
    path.push(":");
    path.push(std::env::var_os("PATH").unwrap_or_default());
    let mut run = crate::binary::Caldera::new()
        .env("PATH", path)
        .args(["run", "judges.d/trivy", "--provider", "claude-cli"])
        .args(["--timeout", "600", "--cache", "off", "--out"])
        .arg(dir.path().join("result.json"))
        .command()
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Until every judge's `claude` has started its background process.
    while std::fs::read_to_string(&pids)
        .unwrap_or_default()
        .lines()
        .count()
        < 7
    {
        assert!(run.try_wait().unwrap().is_none(), "the run ended early");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let interrupt = std::process::Command::new("kill")
        .args(["-INT", &run.id().to_string()])
        .status()
        .unwrap();
    assert!(interrupt.success());
    assert_eq!(run.wait().unwrap().code(), Some(130));
    for pid in std::fs::read_to_string(&pids).unwrap().lines() {
        let one = dir.path().join(format!("pid-{pid}"));
        std::fs::write(&one, pid).unwrap();
        assert_gone(&one).await;
    }
}

/// `claude --version` for `doctor` is read as an answer is: at the exit, not at the end
/// of a stdout a background process holds, and without what that process started.
#[tokio::test]
async fn version_is_read_at_the_exit_though_a_grandchild_holds_stdout() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("pid");
    let program = fake_claude(
        dir.path(),
        &format!(
            "sleep 3600 &\necho $! > '{}'\necho '9.9.9 (Claude Code)'",
            pid_file.display()
        ),
    );
    let v = claude_cli::version(&program, Duration::from_secs(10))
        .await
        .unwrap();
    assert_eq!(v, "9.9.9 (Claude Code)");
    assert_gone(&pid_file).await;
}
