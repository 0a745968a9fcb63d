//! The command line around reports: pipes closed early, `--out -`, a suite.yaml path,
//! `--judge` and `--repo` with did-you-mean, colour and `--quiet`, completions, `init`,
//! and the gates' exit statuses (empty input 2, below a bar 1, incomplete 3).

use crate::binary::{Caldera, Ran};
use crate::llm_server::{MockServer, anthropic_text};
use crate::reports::run_suite;

#[test]
fn a_pipe_closed_early_ends_quietly() {
    let dir = tempfile::tempdir().unwrap();
    let result = dir.path().join("r.json");
    let result_arg = result.to_str().unwrap();
    for args in [
        vec!["render", "judges.d/trivy"],
        vec![
            "run",
            "judges.d/trivy",
            "--heuristic",
            "--json",
            "--out",
            result_arg,
        ],
        vec!["report", result_arg, "--format", "html"],
        vec!["schema", "judge"],
        vec!["completions", "bash"],
    ] {
        // One line read, then the pipe closed with output still to come.
        let Ran {
            code,
            stdout,
            stderr,
            ..
        } = Caldera::new().args(&args).run_closing_stdout_after(1);
        assert!(!stdout.is_empty());
        assert_ne!(code, Some(101), "{args:?} panicked: {stderr}");
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
        assert!(!stderr.contains("Broken pipe"), "{args:?}: {stderr}");
    }
}

#[test]
fn out_dash_suite_yaml_judge_and_repo() {
    // `-` is stdout, and a suite.yaml path works as its folder does.
    let out = Caldera::new()
        .args([
            "run",
            "judges.d/trivy/suite.yaml",
            "--heuristic",
            "--out",
            "-",
        ])
        .run();
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let doc: serde_json::Value = serde_json::from_str(&out.stdout).expect("JSON on stdout");
    assert_eq!(doc["suite"], "trivy");

    let one = Caldera::new()
        .args(["run", "judges.d/trivy", "--heuristic", "--out", "-"])
        .args(["--judge", "iac_quality", "--judge", "sbom_completeness"])
        .args(["--repo", "iac-platform", "--repo", "clean-service"])
        .run();
    let doc: serde_json::Value = serde_json::from_str(&one.stdout).unwrap();
    let names: Vec<&str> = doc["dimensions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["sbom_completeness", "iac_quality"]);
    assert_eq!(doc["inputs"]["results"], 2);

    let typo = Caldera::new()
        .args([
            "run",
            "judges.d/trivy",
            "--heuristic",
            "--judge",
            "iac_qualty",
        ])
        .run();
    assert_eq!(typo.code, Some(2));
    assert!(
        typo.stderr
            .contains("no judge `iac_qualty`; did you mean `iac_quality`?"),
        "{}",
        typo.stderr
    );
    let typo = Caldera::new()
        .args([
            "run",
            "judges.d/trivy",
            "--heuristic",
            "--repo",
            "iac-platfrm",
        ])
        .run();
    assert_eq!(typo.code, Some(2));
    assert!(
        typo.stderr.contains("did you mean `iac-platform`?"),
        "{}",
        typo.stderr
    );
    let judge_file = Caldera::new()
        .args(["run", "judges.d/trivy/iac_quality.yaml", "--heuristic"])
        .run();
    assert_eq!(judge_file.code, Some(2));
}

#[test]
fn colour_follows_the_flag_and_the_environment() {
    let dir = tempfile::tempdir().unwrap();
    let result = dir.path().join("r.json");
    run_suite("judges.d/trivy", &result, None);
    let table = |color: Option<&str>, env: &[(&str, &str)]| {
        let cmd = Caldera::new()
            .arg("report")
            .arg(&result)
            .env_remove("NO_COLOR");
        let cmd = match color {
            Some(c) => cmd.args(["--color", c]),
            None => cmd,
        };
        cmd.envs(env).run().stdout
    };
    assert!(
        !table(None, &[]).contains('\x1b'),
        "not a terminal: no colour"
    );
    assert!(table(None, &[("CLICOLOR_FORCE", "1")]).contains("\x1b["));
    assert!(!table(None, &[("CLICOLOR_FORCE", "1"), ("NO_COLOR", "1")]).contains('\x1b'));
    assert!(
        table(Some("always"), &[("NO_COLOR", "1")]).contains("\x1b["),
        "the flag wins"
    );
    assert!(!table(Some("never"), &[("CLICOLOR_FORCE", "1")]).contains('\x1b'));

    let quiet = Caldera::new()
        .args(["run", "judges.d/trivy", "--heuristic", "--quiet", "--out"])
        .arg(dir.path().join("q.json"))
        .run();
    assert_eq!(quiet.code, Some(0));
    assert!(quiet.stdout.is_empty() && quiet.stderr.is_empty());
}

#[test]
fn completions_for_every_shell() {
    for shell in ["bash", "zsh", "fish", "powershell", "elvish"] {
        let out = Caldera::new().args(["completions", shell]).run();
        assert_eq!(out.code, Some(0), "{shell}");
        let script = &out.stdout;
        assert!(
            script.contains("caldera") && script.contains("fail-on"),
            "{shell}"
        );
    }
}

#[test]
fn init_writes_a_suite_that_validates_and_runs() {
    let dir = tempfile::tempdir().unwrap();
    let init = Caldera::new()
        .args(["init", "mytool", "--dir"])
        .arg(dir.path())
        .run();
    assert_eq!(init.code, Some(0), "{}", init.stderr);
    let suite = dir.path().join("judges.d/mytool");
    let validate = Caldera::new()
        .args(["validate", "--deny-warnings"])
        .arg(&suite)
        .run();
    assert_eq!(validate.code, Some(0), "{}", validate.stderr);
    let out = dir.path().join("r.json");
    let run = run_suite(suite.to_str().unwrap(), &out, None);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(
        doc["dimensions"][0]["score"], 3.0,
        "2 of 3 expected findings: 66.7%"
    );
    assert_eq!(doc["decision"], "WEAK_PASS");
    let again = Caldera::new()
        .args(["init", "mytool", "--dir"])
        .arg(dir.path())
        .run();
    assert_eq!(again.code, Some(2), "nothing is overwritten");
    let bad = Caldera::new().args(["init", "My Tool"]).run();
    assert_eq!(bad.code, Some(2));
}

#[test]
fn gates_say_why_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let out = Caldera::new()
        .args(["run", "judges.d/trivy", "--heuristic", "--results"])
        .arg(&empty)
        .run();
    assert_eq!(out.code, Some(2), "no input is an input error");
    assert!(out.stderr.contains("has no *.json result files"));

    let out = Caldera::new()
        .args([
            "run",
            "judges.d/trivy",
            "--heuristic",
            "--quiet",
            "--fail-under",
            "3.5",
            "--out",
        ])
        .arg(dir.path().join("r.json"))
        .run();
    assert_eq!(out.code, Some(1));
    let stderr = &out.stderr;
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("3.30") && stderr.contains("--fail-under 3.5"),
        "{stderr}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_left_without_scores_by_replay_or_budget_exits_3() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    let d = dir.path().to_path_buf();
    let c = cache.clone();
    let replay = tokio::task::spawn_blocking(move || {
        Caldera::new()
            .env("ANTHROPIC_API_KEY", "test-key")
            .env("ANTHROPIC_BASE_URL", "http://127.0.0.1:9")
            .args(["run", "judges.d/trivy", "--replay", "--quiet", "--out"])
            .arg(d.join("replay.json"))
            .arg("--cache-dir")
            .arg(&c)
            .run()
    })
    .await
    .unwrap();
    assert_eq!(replay.code, Some(3), "{}", replay.stderr);
    let stderr = &replay.stderr;
    assert!(
        stderr.starts_with("incomplete: --replay found no cached verdict for 7 unit(s)"),
        "{stderr}"
    );

    let server = MockServer::start(|_, _| {
        anthropic_text(
            r#"{"score": 4, "confidence": 0.9, "reasoning": "ok", "evidence_cited": [], "recommendations": [], "sub_scores": {}}"#,
            "end_turn",
        )
    })
    .await;
    let base = server.base.clone();
    let d = dir.path().to_path_buf();
    let budget = tokio::task::spawn_blocking(move || {
        Caldera::new()
            .env("ANTHROPIC_API_KEY", "test-key")
            .env("ANTHROPIC_BASE_URL", base)
            .args([
                "run",
                "judges.d/trivy",
                "--cache",
                "off",
                "--concurrency",
                "1",
                "--max-cost",
                "0.0001",
                "--quiet",
                "--out",
            ])
            .arg(d.join("budget.json"))
            .run()
    })
    .await
    .unwrap();
    assert_eq!(budget.code, Some(3), "{}", budget.stderr);
    assert!(
        budget
            .stderr
            .starts_with("incomplete: the --max-cost budget stopped")
    );
    assert_eq!(server.hits(), 0, "no call fits the budget");
}

#[test]
fn init_writes_the_schemas_its_modelines_name_unless_the_project_has_them() {
    let dir = tempfile::tempdir().unwrap();
    let init = Caldera::new()
        .args(["init", "mytool", "--dir"])
        .arg(dir.path())
        .run();
    assert_eq!(init.code, Some(0), "{}", init.stderr);
    for (file, schema) in [("suite.yaml", "suite"), ("finding_accuracy.yaml", "judge")] {
        let yaml = std::fs::read_to_string(dir.path().join("judges.d/mytool").join(file)).unwrap();
        let named = yaml
            .lines()
            .next()
            .unwrap()
            .split("$schema=")
            .nth(1)
            .unwrap()
            .to_owned();
        let at = dir.path().join("judges.d/mytool").join(&named);
        let written = std::fs::read_to_string(&at).unwrap_or_else(|e| panic!("{named}: {e}"));
        let printed = Caldera::new().args(["schema", schema]).run();
        assert_eq!(written, printed.stdout, "{named}");
    }
    // A project's own schemas are left as they are.
    let other = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(other.path().join("schemas")).unwrap();
    std::fs::write(other.path().join("schemas/judge.schema.json"), "{}").unwrap();
    let init = Caldera::new()
        .args(["init", "mytool", "--dir"])
        .arg(other.path())
        .run();
    assert_eq!(init.code, Some(0), "{}", init.stderr);
    assert_eq!(
        std::fs::read_to_string(other.path().join("schemas/judge.schema.json")).unwrap(),
        "{}"
    );
    assert!(other.path().join("schemas/suite.schema.json").is_file());
}
