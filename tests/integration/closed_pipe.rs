//! Every command that prints ends quietly when its reader goes away (`caldera plan | head`):
//! no panic, no "Broken pipe" or "cannot write" message, and the exit status the command
//! has with a reader. One test per subcommand, each trying every `--format` it has. The
//! reading end is closed before the command writes anything, so each write meets a closed
//! pipe.

use std::path::{Path, PathBuf};

use crate::binary::Caldera;

/// The command, run in the project folder with no credentials and every provider
/// pointed at a closed port on loopback (so `doctor` reaches nothing outside).
fn caldera(args: &[&str]) -> Caldera {
    Caldera::new()
        .env("ANTHROPIC_BASE_URL", "http://127.0.0.1:9")
        .env("OPENAI_BASE_URL", "http://127.0.0.1:9")
        .args(args)
}

/// Runs `args` with a reader, then with the reader gone; the second run must end as the
/// first did, saying nothing about the pipe.
fn ends_quietly(args: &[&str]) {
    let open = caldera(args).run();
    let closed = caldera(args).run_closing_stdout_after(0);
    let stderr = &closed.stderr;
    assert_ne!(closed.code, Some(101), "{args:?} panicked: {stderr}");
    assert!(
        !stderr.contains("panicked")
            && !stderr.contains("Broken pipe")
            && !stderr.contains("cannot write to stdout"),
        "{args:?}: {stderr}"
    );
    assert_eq!(
        closed.code, open.code,
        "{args:?}: the exit status changed with the reader gone: {stderr}"
    );
}

fn path(p: &Path) -> String {
    p.display().to_string()
}

/// Two saved heuristic results of the trivy suite, in a results folder of their own.
fn two_results(dir: &Path) -> (PathBuf, PathBuf) {
    let results = dir.join("results");
    std::fs::create_dir(&results).unwrap();
    let runs = [results.join("a.json"), results.join("b.json")];
    for r in &runs {
        let out = caldera(&["run", "judges.d/trivy", "--heuristic", "--out", &path(r)]).run();
        assert!(r.is_file(), "{}", out.stderr);
    }
    let [a, b] = runs;
    (a, b)
}

const REPORT_FORMATS: [&str; 5] = ["table", "json", "md", "junit", "html"];

#[test]
fn run_ends_quietly_on_a_closed_pipe_in_every_format() {
    let dir = tempfile::tempdir().unwrap();
    let result = path(&dir.path().join("r.json"));
    ends_quietly(&["run", "judges.d/trivy", "--heuristic", "--out", "-"]);
    ends_quietly(&["run", "judges.d/trivy", "--heuristic", "--json"]);
    for f in REPORT_FORMATS {
        ends_quietly(&[
            "run",
            "judges.d/trivy",
            "--heuristic",
            "--format",
            f,
            "--out",
            &result,
        ]);
    }
    let reports = path(&dir.path().join("reports"));
    ends_quietly(&[
        "run",
        "judges.d/trivy",
        "--heuristic",
        "--format",
        "md,junit,html",
        "--out-dir",
        &reports,
        "--out",
        &result,
    ]);
}

#[test]
fn report_ends_quietly_on_a_closed_pipe_in_every_format() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = two_results(dir.path());
    for f in REPORT_FORMATS {
        ends_quietly(&["report", &path(&b), "--format", f]);
        ends_quietly(&["report", &path(&b), "--format", f, "--baseline", &path(&a)]);
    }
    ends_quietly(&["report", &path(&b), "-v"]);
}

#[test]
fn diff_ends_quietly_on_a_closed_pipe_in_every_format() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = two_results(dir.path());
    for f in REPORT_FORMATS {
        ends_quietly(&["diff", &path(&a), &path(&b), "--format", f]);
    }
}

#[test]
fn history_ends_quietly_on_a_closed_pipe_in_every_format() {
    let dir = tempfile::tempdir().unwrap();
    two_results(dir.path());
    let results = path(&dir.path().join("results"));
    for f in ["table", "html", "md", "json"] {
        ends_quietly(&["history", &results, "--format", f]);
    }
}

#[test]
fn calibrate_ends_quietly_on_a_closed_pipe_in_every_format() {
    let labels = "ground-truth/trivy/labels/illustrative.csv";
    for f in ["table", "json", "markdown", "html"] {
        ends_quietly(&[
            "calibrate",
            "judges.d/trivy",
            "--labels",
            labels,
            "--format",
            f,
        ]);
    }
}

#[test]
fn plan_ends_quietly_on_a_closed_pipe_in_every_format() {
    for f in ["table", "json"] {
        ends_quietly(&["plan", "judges.d/trivy", "--no-cache", "--format", f]);
    }
}

#[test]
fn test_ends_quietly_on_a_closed_pipe_in_every_format() {
    for f in ["text", "junit"] {
        ends_quietly(&["test", "judges.d/trivy", "--format", f]);
    }
}

#[test]
fn validate_ends_quietly_on_a_closed_pipe_in_every_format() {
    for f in ["text", "json"] {
        ends_quietly(&["validate", "judges.d/trivy", "--format", f]);
    }
}

#[test]
fn render_ends_quietly_on_a_closed_pipe() {
    ends_quietly(&["render", "judges.d/trivy"]);
}

#[test]
fn schema_ends_quietly_on_a_closed_pipe_for_every_schema() {
    for which in ["judge", "suite", "case", "expect", "models"] {
        ends_quietly(&["schema", which]);
    }
}

#[test]
fn doctor_ends_quietly_on_a_closed_pipe_as_text_and_json() {
    ends_quietly(&["doctor", "--timeout", "1"]);
    ends_quietly(&["doctor", "--timeout", "1", "--json"]);
}

#[test]
fn completions_end_quietly_on_a_closed_pipe_for_every_shell() {
    for shell in ["bash", "zsh", "fish", "powershell", "elvish"] {
        ends_quietly(&["completions", shell]);
    }
}

#[test]
fn init_ends_quietly_on_a_closed_pipe() {
    let dir = tempfile::tempdir().unwrap();
    // Twice: the first writes the starter suite, the second finds it there (exit 2);
    // each run needs a fresh folder so both see the same thing.
    let first = dir.path().join("a");
    let second = dir.path().join("b");
    std::fs::create_dir(&first).unwrap();
    std::fs::create_dir(&second).unwrap();
    let open = caldera(&["init", "semgrep", "--dir", &path(&first)]).run();
    let closed = caldera(&["init", "semgrep", "--dir", &path(&second)]).run_closing_stdout_after(0);
    let stderr = &closed.stderr;
    assert_eq!(closed.code, open.code, "{stderr}");
    assert!(
        !stderr.contains("panicked") && !stderr.contains("Broken pipe"),
        "{stderr}"
    );
}

#[test]
fn help_and_version_end_quietly_on_a_closed_pipe() {
    ends_quietly(&["--help"]);
    ends_quietly(&["--version"]);
    ends_quietly(&["run", "--help"]);
}
