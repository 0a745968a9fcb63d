//! `caldera test`: the bundled suites' cases pass; a judge whose band is broken fails with
//! the case and judge named; `--update` rewrites expectations; LLM cases replay offline
//! from cassettes, a changed prompt is a stale cassette (never a call), and `--record`
//! writes cassettes against a server the test starts.

use std::path::Path;

use crate::binary::{Caldera, Ran};
use crate::gates::copy_trivy;
use crate::llm_server::{MockServer, Seen, anthropic_text};

fn caldera(root: &Path, args: &[&str]) -> Ran {
    Caldera::new().dir(root).args(args).run()
}

/// The closing line, parsed: (passed, failed).
fn tally(text: &str) -> (usize, usize) {
    let last = text.lines().last().unwrap_or_default();
    let (p, f) = last.split_once(" passed, ").expect(last);
    let f = f.strip_suffix(" failed").expect(last);
    (p.parse().expect(last), f.parse().expect(last))
}

fn here() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The dimension names of a suite's judge files.
fn dimensions(dir: &std::path::Path) -> Vec<String> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if !name.ends_with(".yaml") || name == "suite.yaml" {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        if let Some(line) = text.lines().find(|l| l.starts_with("dimension:")) {
            out.push(line["dimension:".len()..].trim().to_owned());
        }
    }
    out
}

#[test]
fn the_bundled_cases_pass() {
    // Every bundled suite ships cases, and every one of its judges is checked by one.
    let mut suites: Vec<std::path::PathBuf> = std::fs::read_dir(here().join("judges.d"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("suite.yaml").is_file())
        .collect();
    suites.sort();
    assert_eq!(suites.len(), 15, "the bundled suites");
    for dir in &suites {
        let suite = format!("judges.d/{}", dir.file_name().unwrap().to_string_lossy());
        let out = caldera(here(), &["test", &suite]);
        let text = out.stdout.clone();
        assert_eq!(out.code, Some(0), "{suite}:\n{text}");
        let lines = text.lines().filter(|l| l.starts_with("test ")).count();
        let (passed, failed) = tally(&text);
        assert_eq!((passed, failed), (lines, 0), "{text}");
        assert!(passed >= 8, "{suite} has too few checks:\n{text}");
        for judge in dimensions(dir) {
            assert!(
                text.contains(&format!("::{judge} ... ok")),
                "{suite}: no case checks {judge}:\n{text}"
            );
        }
    }
    // Every judge of trivy is checked in both modes somewhere.
    let text = caldera(here(), &["test", "judges.d/trivy"]).stdout;
    for judge in [
        "vulnerability_accuracy",
        "severity_accuracy",
        "sbom_completeness",
        "iac_quality",
        "false_positive_rate",
        "freshness_quality",
        "vulnerability_detection",
    ] {
        assert!(text.contains(&format!("::{judge} ... ok")), "{judge}");
        assert!(text.contains(&format!("::{judge} (llm) ... ok")), "{judge}");
    }
}

#[test]
fn a_broken_band_fails_with_the_case_and_judge_named() {
    let tmp = tempfile::tempdir().unwrap();
    copy_trivy(tmp.path());
    let judge = tmp.path().join("judges.d/trivy/iac_quality.yaml");
    let text = std::fs::read_to_string(&judge).unwrap();
    let broken = text.replace("- { min: 75, score: 4 }", "- { min: 75, score: 5 }");
    assert_ne!(
        text, broken,
        "the band to break is where the test expects it"
    );
    std::fs::write(&judge, broken).unwrap();

    let out = caldera(tmp.path(), &["test", "judges.d/trivy"]);
    let text = out.stdout.clone();
    assert_eq!(out.code, Some(1), "{text}");
    assert!(
        text.contains("test sample-run::iac_quality ... FAILED"),
        "{text}"
    );
    assert!(
        text.contains("---- sample-run::iac_quality ----\n    score: expected 3, got 4"),
        "{text}"
    );
    assert!(
        text.contains("test iac-platform::iac_quality ... FAILED"),
        "{text}"
    );
    assert!(
        text.contains("test sample-run::severity_accuracy ... ok"),
        "{text}"
    );
    let (passed, failed) = tally(&text);
    assert!(failed >= 2 && passed > failed, "{text}");

    // JUnit names the same failures.
    let out = caldera(tmp.path(), &["test", "judges.d/trivy", "--format", "junit"]);
    assert_eq!(out.code, Some(1));
    let xml = out.stdout.clone();
    assert!(xml.starts_with("<?xml"), "{xml}");
    assert!(
        xml.contains(r#"<testcase name="iac_quality (heuristic)" classname="trivy.sample-run">"#),
        "{xml}"
    );
    assert!(xml.contains("score: expected 3, got 4</failure>"), "{xml}");

    // A filter runs only the matching checks.
    let out = caldera(tmp.path(), &["test", "judges.d/trivy", "sample-run::iac"]);
    let text = out.stdout.clone();
    assert_eq!(
        text.lines().filter(|l| l.starts_with("test ")).count(),
        1,
        "{text}"
    );
    assert_eq!(tally(&text), (0, 1));

    // After a review, --update takes the new score, and the suite passes again.
    let out = caldera(tmp.path(), &["test", "judges.d/trivy", "--update"]);
    assert_eq!(out.code, Some(0), "{}", out.stdout.clone());
    let expect = std::fs::read_to_string(
        tmp.path()
            .join("judges.d/trivy/cases/sample-run/expect.yaml"),
    )
    .unwrap();
    assert!(
        expect.contains("  iac_quality:\n    status: scored\n    score: 4\n"),
        "{expect}"
    );
    // What was written by hand survives: evidence paths keep their place.
    assert!(
        expect.contains("      actionability_rate: 87.5\n"),
        "{expect}"
    );
}

#[test]
fn a_bad_expectation_is_a_located_error_or_a_named_failure() {
    let tmp = tempfile::tempdir().unwrap();
    copy_trivy(tmp.path());
    let case = tmp.path().join("judges.d/trivy/cases/clean-service");
    let expect = case.join("expect.yaml");
    let text = std::fs::read_to_string(&expect).unwrap();
    // A typo in a key: the file is refused with its location.
    std::fs::write(&expect, text.replace("    evidence:", "    evidense:")).unwrap();
    let out = caldera(tmp.path(), &["test", "judges.d/trivy"]);
    let err = out.stderr;
    assert_eq!(out.code, Some(2), "{err}");
    assert!(
        err.contains("expect.yaml") && err.contains("evidense"),
        "{err}"
    );
    assert!(err.contains("evidence"), "did you mean: {err}");
    // A judge, an evidence path and an assertion that do not exist: failures naming them.
    let text = text
        .replace("false_positive_rate:", "false_positive_rat:")
        .replace("composite_score: 100.0", "composite_scor: 100.0");
    std::fs::write(&expect, text).unwrap();
    let out = caldera(tmp.path(), &["test", "judges.d/trivy", "clean-service"]);
    let text = out.stdout.clone();
    assert_eq!(out.code, Some(1), "{text}");
    assert!(
        text.contains(
            "the suite has no judge `false_positive_rat`; did you mean `false_positive_rate`?"
        ),
        "{text}"
    );
    assert!(
        text.contains(
            "evidence `composite_scor`: no key `composite_scor` (did you mean `composite_score`?)"
        ),
        "{text}"
    );
}

fn prompt_of(seen: &Seen) -> String {
    crate::llm_server::content_text(&seen.body["messages"][0]["content"])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cassettes_replay_offline_go_stale_and_are_recorded() {
    let server = MockServer::start(|_, seen| {
        let score = if prompt_of(seen).contains("iac") { 2 } else { 4 };
        anthropic_text(
            &format!(
                r#"{{"score": {score}, "confidence": 0.9, "reasoning": "recorded", "evidence_cited": [], "recommendations": [], "sub_scores": {{}}}}"#
            ),
            "end_turn",
        )
    })
    .await;
    let tmp = tempfile::tempdir().unwrap();
    copy_trivy(tmp.path());
    let root = tmp.path().to_path_buf();
    let base = server.base.clone();
    // Every command below may reach the server: none but --record does.
    let with_server = move |args: &[&str]| {
        Caldera::new()
            .dir(&root)
            .env("ANTHROPIC_API_KEY", "test-key")
            .env("ANTHROPIC_BASE_URL", &base)
            .args(args)
            .run()
    };
    let run = |args: Vec<&'static str>| {
        let f = with_server.clone();
        tokio::task::spawn_blocking(move || f(&args))
    };

    let out = run(vec!["test", "judges.d/trivy", "critical-cves"])
        .await
        .unwrap();
    assert_eq!(out.code, Some(0), "{}", out.stdout.clone());
    assert_eq!(server.hits(), 0, "a replay never calls");

    // A changed prompt: the cassette is stale, the judge fails, nothing is sent.
    let prompt = tmp.path().join("prompts/trivy/iac_quality.md");
    let text = std::fs::read_to_string(&prompt).unwrap();
    std::fs::write(&prompt, format!("{text}\nBe brief.\n")).unwrap();
    let out = run(vec!["test", "judges.d/trivy", "critical-cves"])
        .await
        .unwrap();
    let text = out.stdout.clone();
    assert_eq!(out.code, Some(1), "{text}");
    assert!(
        text.contains("test critical-cves::iac_quality (llm) ... FAILED"),
        "{text}"
    );
    assert!(
        text.contains("stale cassette for model `sonnet`: the prompt changed"),
        "{text}"
    );
    assert!(text.contains("it was not sent to any model"), "{text}");
    assert!(
        text.contains("test critical-cves::iac_quality ... ok"),
        "{text}"
    );
    assert_eq!(tally(&text), (13, 1));
    assert_eq!(
        server.hits(),
        0,
        "a stale cassette is never replaced by a call"
    );

    // --record asks the server once per judge and rewrites the cassettes; after review,
    // --update takes the new replies' scores.
    let out = run(vec![
        "test",
        "judges.d/trivy",
        "critical-cves",
        "--record",
        "--update",
    ])
    .await
    .unwrap();
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert_eq!(server.hits(), 7);
    let cassette = std::fs::read_to_string(
        tmp.path()
            .join("judges.d/trivy/cases/critical-cves/cassettes/iac_quality.json"),
    )
    .unwrap();
    assert!(
        cassette.contains("\\\"score\\\": 2") && cassette.contains("recorded"),
        "{cassette}"
    );
    let out = run(vec!["test", "judges.d/trivy", "critical-cves"])
        .await
        .unwrap();
    assert_eq!(out.code, Some(0), "{}", out.stdout.clone());
    assert_eq!(server.hits(), 7);
    let expect = std::fs::read_to_string(
        tmp.path()
            .join("judges.d/trivy/cases/critical-cves/expect.yaml"),
    )
    .unwrap();
    let llm = expect.split("\nllm:\n").nth(1).expect("llm expectations");
    assert!(
        llm.contains("  iac_quality:\n    status: scored\n    score: 2\n"),
        "{llm}"
    );
}

/// Issue 20: a case asking for LLM mode without a recorded cassette, and so without LLM
/// expectations, said "N passed": nothing was checked in LLM mode. A case, a mode or a
/// judge entry that checks nothing is a failing check, in the text summary and in JUnit.
#[test]
fn a_case_that_checks_nothing_fails() {
    let tmp = tempfile::tempdir().unwrap();
    copy_trivy(tmp.path());
    let cases = tmp.path().join("judges.d/trivy/cases");
    // LLM mode asked for, no cassettes, heuristic expectations only.
    let llm = cases.join("llm-unrecorded");
    crate::gates::copy_dir(&cases.join("clean-service"), &llm);
    std::fs::write(
        llm.join("case.yaml"),
        "ground_truth: suite\nresults: suite\nllm:\n  models: [sonnet]\n",
    )
    .unwrap();
    std::fs::write(
        llm.join("expect.yaml"),
        "heuristic:\n  iac_quality: { status: scored }\n",
    )
    .unwrap();
    let _ = std::fs::remove_dir_all(llm.join("cassettes"));
    let out = caldera(tmp.path(), &["test", "judges.d/trivy", "llm-unrecorded"]);
    let text = out.stdout.clone();
    assert_eq!(out.code, Some(1), "{text}");
    assert_eq!(tally(&text), (1, 1), "{text}");
    assert!(
        text.contains("test llm-unrecorded::(nothing checked) (llm) ... FAILED"),
        "{text}"
    );
    assert!(
        text.contains("the case asks for LLM mode but expect.yaml has no `llm:` expectations"),
        "{text}"
    );
    assert!(text.contains("no recorded cassette"), "{text}");

    // A case with no expectations at all, and a judge entry that says nothing.
    std::fs::write(
        llm.join("case.yaml"),
        "ground_truth: suite\nresults: suite\n",
    )
    .unwrap();
    std::fs::write(llm.join("expect.yaml"), "heuristic: {}\n").unwrap();
    let out = caldera(tmp.path(), &["test", "judges.d/trivy", "llm-unrecorded"]);
    let text = out.stdout.clone();
    assert_eq!(out.code, Some(1), "{text}");
    assert!(
        text.contains("test llm-unrecorded::(nothing checked) ... FAILED"),
        "{text}"
    );
    std::fs::write(llm.join("expect.yaml"), "heuristic:\n  iac_quality: {}\n").unwrap();
    let out = caldera(
        tmp.path(),
        &[
            "test",
            "judges.d/trivy",
            "llm-unrecorded",
            "--format",
            "junit",
        ],
    );
    let xml = out.stdout.clone();
    assert_eq!(out.code, Some(1), "{xml}");
    assert!(xml.contains("iac_quality checks nothing"), "{xml}");
    assert!(xml.contains("failures=\"1\""), "{xml}");
}
