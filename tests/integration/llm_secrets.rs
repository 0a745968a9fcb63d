//! The API key never leaves for another address and is never written: a redirect is not
//! followed, and a key echoed back in a reply is redacted before the result, the
//! interaction log or the cache can see it. Real binary, loopback servers.

use std::path::Path;
use std::process::Command;

use insta_cmd::get_cargo_bin;

use crate::llm_server::{MockServer, Step, anthropic_text, openai_text};

const KEY: &str = "sk-test-secret-0123456789";

/// Runs the trivy suite against `base` with `provider`; returns (exit code, result).
fn run(provider: &str, base: &str, dir: &Path) -> (Option<i32>, serde_json::Value) {
    let out = dir.join("result.json");
    let mut cmd = Command::new(get_cargo_bin("caldera"));
    cmd.current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("NO_COLOR", "1")
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("OPENAI_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        .args([
            "run",
            "judges.d/trivy",
            "--timeout",
            "5",
            "--provider",
            provider,
        ])
        .arg("--out")
        .arg(&out)
        .arg("--cache-dir")
        .arg(dir.join("cache"));
    if provider == "anthropic" {
        cmd.env("ANTHROPIC_API_KEY", KEY)
            .env("ANTHROPIC_BASE_URL", base);
    } else {
        cmd.env("OPENAI_API_KEY", KEY).env("OPENAI_BASE_URL", base);
    }
    let output = cmd.output().expect("runs");
    let result = std::fs::read_to_string(&out)
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or(serde_json::Value::Null);
    (output.status.code(), result)
}

/// Every file under `dir`, as text.
fn all_text(dir: &Path) -> String {
    let mut out = String::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = entry.path();
        if p.is_dir() {
            out.push_str(&all_text(&p));
        } else {
            out.push_str(&String::from_utf8_lossy(
                &std::fs::read(&p).unwrap_or_default(),
            ));
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redirect_to_another_origin_is_not_followed() {
    // The other origin: a second loopback server on another port, which would answer.
    let elsewhere =
        MockServer::start(|_, _| anthropic_text(r#"{"score": 5, "confidence": 1}"#, "end_turn"))
            .await;
    let target = format!("{}/v1/messages", elsewhere.base);
    let server = MockServer::start(move |_, _| Step::Reply {
        status: 307,
        headers: vec![("location", target.clone())],
        body: String::new(),
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    let (base, path) = (server.base.clone(), dir.path().to_path_buf());
    let (code, result) = tokio::task::spawn_blocking(move || run("anthropic", &base, &path))
        .await
        .unwrap();
    assert_eq!(elsewhere.hits(), 0, "no request reached the other origin");
    assert!(server.hits() > 0);
    let dims = result["dimensions"].as_array().expect("dimensions");
    assert!(dims.iter().all(|d| d["status"] == "unscored"), "{result:#}");
    assert!(
        dims[0]["unscored_reason"]
            .as_str()
            .unwrap_or_default()
            .contains("do not follow redirects"),
        "{}",
        dims[0]["unscored_reason"]
    );
    assert_eq!(code, Some(1), "a run without scores fails");
}

async fn echo_case(provider: &'static str) {
    let reply = format!(
        r#"{{"score": 4, "confidence": 0.9, "reasoning": "you sent {KEY} in x-api-key", "evidence_cited": ["{KEY}"], "recommendations": [], "sub_scores": {{}}}}"#
    );
    let server = MockServer::start(move |_, _| {
        if provider == "anthropic" {
            anthropic_text(&reply, "end_turn")
        } else {
            openai_text(&reply, "stop")
        }
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    let (base, path) = (server.base.clone(), dir.path().to_path_buf());
    let (_, result) = tokio::task::spawn_blocking(move || run(provider, &base, &path))
        .await
        .unwrap();
    assert_eq!(result["dimensions"][0]["status"], "scored", "{result:#}");
    let written = all_text(dir.path());
    assert!(written.contains("[redacted]"), "the echo is kept, redacted");
    assert!(
        !written.contains(KEY),
        "{provider}: the key was written to the result, the log or the cache"
    );
    // The server did get the key (the test would prove nothing otherwise).
    let header = if provider == "anthropic" {
        "x-api-key"
    } else {
        "authorization"
    };
    assert!(
        server
            .seen()
            .iter()
            .all(|s| s.header(header).is_some_and(|h| h.contains(KEY)))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_echoed_anthropic_key_is_written_nowhere() {
    echo_case("anthropic").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_echoed_openai_key_is_written_nowhere() {
    echo_case("openai").await;
}

/// A server that sends more than any verdict needs is cut off, not read into memory: the
/// unit is unscored with the reason, and the run says so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_oversized_reply_is_not_read() {
    let huge = "x".repeat(caldera::provider::MAX_BODY_BYTES + 1);
    let server = MockServer::start(move |_, _| anthropic_text(&huge, "end_turn")).await;
    let dir = tempfile::tempdir().unwrap();
    let (base, path) = (server.base.clone(), dir.path().to_path_buf());
    let (code, result) = tokio::task::spawn_blocking(move || run("anthropic", &base, &path))
        .await
        .unwrap();
    let dims = result["dimensions"].as_array().expect("dimensions");
    assert!(dims.iter().all(|d| d["status"] == "unscored"), "{result:#}");
    assert!(
        dims[0]["unscored_reason"]
            .as_str()
            .unwrap_or_default()
            .contains("byte limit"),
        "{}",
        dims[0]["unscored_reason"]
    );
    assert_eq!(code, Some(1));
}
