//! Every command that prints ends quietly when its reader goes away (`caldera plan | head`):
//! no panic, no "Broken pipe" message. The reading end is closed before the command
//! writes anything, so each write meets a closed pipe.

use std::process::{Command, Stdio};

use insta_cmd::get_cargo_bin;

#[test]
fn every_command_ends_quietly_on_a_closed_pipe() {
    let commands: &[&[&str]] = &[
        &["plan", "judges.d/trivy", "--no-cache"],
        &["plan", "judges.d/trivy", "--no-cache", "--format", "json"],
        &["render", "judges.d/trivy"],
        &["test", "judges.d/trivy"],
        &["run", "judges.d/trivy", "--heuristic", "--out", "-"],
        &["validate", "judges.d/trivy"],
        &["schema", "judge"],
        &["completions", "bash"],
        &["--help"],
    ];
    let out = tempfile::tempdir().unwrap();
    let result = out.path().join("r.json");
    let md: Vec<&str> = vec![
        "run",
        "judges.d/trivy",
        "--heuristic",
        "--format",
        "md",
        "--out",
    ];
    let mut md: Vec<String> = md.into_iter().map(str::to_owned).collect();
    md.push(result.display().to_string());
    let md: Vec<&str> = md.iter().map(String::as_str).collect();
    for args in commands.iter().copied().chain([md.as_slice()]) {
        let mut child = Command::new(get_cargo_bin("caldera"))
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .env("NO_COLOR", "1")
            .env_remove("ANTHROPIC_API_KEY")
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("starts");
        drop(child.stdout.take());
        let done = child.wait_with_output().expect("ends");
        let stderr = String::from_utf8_lossy(&done.stderr);
        assert_ne!(done.status.code(), Some(101), "{args:?} panicked: {stderr}");
        assert!(
            !stderr.contains("panicked") && !stderr.contains("Broken pipe"),
            "{args:?}: {stderr}"
        );
    }
}
