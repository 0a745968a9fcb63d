//! The whole result document of two bundled suites in both modes, pinned.
//!
//! Restructuring the run pipeline must not change a single field a user reads: these
//! snapshots hold the result JSON of `judges.d/trivy` and `judges.d/semgrep`, heuristic
//! and LLM, with only the fields that differ from run to run (ids, clocks, temporary
//! paths) masked. The LLM replies come from a loopback server whose score depends on
//! the prompt, so every judge gets a different, reproducible model score that caps,
//! per-repo means and the decision then act on.

use std::path::Path;

use serde_json::Value;

use crate::binary::{Caldera, Ran};
use crate::llm_server::{MockServer, Seen, Step, anthropic_text};

/// Keys whose values change from run to run (clocks, ids, measured latencies).
fn volatile(key: &str) -> bool {
    matches!(key, "run_id" | "timestamp" | "started" | "finished")
        || key.ends_with("_ms")
        || key.ends_with("_secs")
}

/// Masks the volatile fields and the temporary folder, in place.
fn normalise(v: &mut Value, temp: &str) {
    match v {
        Value::Object(map) => {
            for (k, x) in map.iter_mut() {
                if volatile(k) && !x.is_null() {
                    *x = Value::String("[volatile]".into());
                } else {
                    normalise(x, temp);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|x| normalise(x, temp)),
        Value::String(s) if s.contains(temp) => *s = s.replace(temp, "[temp]"),
        _ => {}
    }
}

/// A model score from the prompt alone: the same prompt always gets the same verdict,
/// different judges and repos get different ones.
fn reply_for(seen: &Seen) -> Step {
    let prompt = crate::llm_run::prompt_of(seen);
    let sum: u64 = prompt.bytes().map(u64::from).sum();
    let score = sum % 5 + 1;
    let confidence = 0.5 + (sum % 50) as f64 / 100.0;
    let text = format!(
        r#"{{"score": {score}, "confidence": {confidence}, "reasoning": "graded {score}", "evidence_cited": ["e{}"], "recommendations": ["r{}"], "sub_scores": {{}}}}"#,
        sum % 7,
        sum % 3
    );
    anthropic_text(&text, "end_turn")
}

/// Runs `caldera run <suite>` in heuristic mode, or in LLM mode against `base`, its
/// result in `dir/result.json`.
fn run(suite: &str, dir: &Path, base: Option<&str>) -> Ran {
    let cmd = Caldera::new()
        .args(["run", &format!("judges.d/{suite}")])
        .out(dir.join("result.json"));
    let cmd = match base {
        Some(base) => cmd
            .env("ANTHROPIC_API_KEY", "test-key")
            .env("ANTHROPIC_BASE_URL", base)
            .args(["--concurrency", "1", "--timeout", "5", "--cache-dir"])
            .arg(dir.join("cache")),
        None => cmd.arg("--heuristic"),
    };
    cmd.run()
}

/// The run's result document, normalised for a snapshot.
fn normalised(ran: &Ran, dir: &Path) -> Value {
    assert!(
        !ran.result.is_null(),
        "no result written; stderr:\n{}",
        ran.stderr
    );
    let mut result = ran.result.clone();
    normalise(&mut result, &dir.display().to_string());
    result
}

fn pin_heuristic(suite: &str) {
    let dir = tempfile::tempdir().unwrap();
    let ran = run(suite, dir.path(), None);
    let (code, result) = (ran.code, normalised(&ran, dir.path()));
    insta::assert_json_snapshot!(format!("{suite}_heuristic"), (code, result));
}

async fn pin_llm(suite: &str) {
    let server = MockServer::start(|_, seen| reply_for(seen)).await;
    let dir = tempfile::tempdir().unwrap();
    let base = server.base.clone();
    let path = dir.path().to_path_buf();
    let suite_name = suite.to_owned();
    let ran = tokio::task::spawn_blocking(move || run(&suite_name, &path, Some(&base)))
        .await
        .unwrap();
    assert!(server.hits() > 0, "the model was asked");
    let (code, result) = (ran.code, normalised(&ran, dir.path()));
    insta::assert_json_snapshot!(format!("{suite}_llm"), (code, result));
}

#[test]
fn trivy_heuristic_result_is_unchanged() {
    pin_heuristic("trivy");
}

#[test]
fn semgrep_heuristic_result_is_unchanged() {
    pin_heuristic("semgrep");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn trivy_llm_result_is_unchanged() {
    pin_llm("trivy").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn semgrep_llm_result_is_unchanged() {
    pin_llm("semgrep").await;
}
