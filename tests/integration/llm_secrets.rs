//! The API key never leaves for another address and is never written: a redirect is not
//! followed, and a key echoed back in a reply is redacted before the result, the
//! interaction log or the cache can see it. Real binary, loopback servers.

use std::path::Path;

use crate::binary::{Caldera, Ran};

use crate::llm_server::{MockServer, Step, anthropic_text, openai_text};

const KEY: &str = "sk-test-secret-0123456789";

/// Runs the trivy suite against `base` with `provider`, its result in `dir/result.json`.
fn run(provider: &str, base: &str, dir: &Path) -> Ran {
    run_with(provider, base, dir, &[])
}

/// [`run`] with `extra` arguments.
fn run_with(provider: &str, base: &str, dir: &Path, extra: &[&str]) -> Ran {
    let (key, url) = if provider == "anthropic" {
        ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL")
    } else {
        ("OPENAI_API_KEY", "OPENAI_BASE_URL")
    };
    Caldera::new()
        .args([
            "run",
            "judges.d/trivy",
            "--timeout",
            "5",
            "--provider",
            provider,
        ])
        .out(dir.join("result.json"))
        .arg("--cache-dir")
        .arg(dir.join("cache"))
        .args(extra)
        .env(key, KEY)
        .env(url, base)
        .run()
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
    let Ran { code, result, .. } =
        tokio::task::spawn_blocking(move || run("anthropic", &base, &path))
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
    let Ran { result, .. } = tokio::task::spawn_blocking(move || run(provider, &base, &path))
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
    let Ran { code, result, .. } =
        tokio::task::spawn_blocking(move || run("anthropic", &base, &path))
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

/// Asserts no part of [`KEY`] longer than its `sk-` start is in `text`.
fn assert_no_key_part(text: &str, what: &str) {
    for end in 6..=KEY.len() {
        assert!(
            !text.contains(&KEY[..end]),
            "{what}: `{}` of the key is in it:\n{text}",
            &KEY[..end]
        );
    }
}

/// A server that redirects to an address holding the key (verbatim, and
/// percent-encoded): the reason of the unscored judge names the address, redacted, in
/// the result, the Markdown report, the log, and `plan --count-tokens`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_in_a_redirect_location_is_written_nowhere() {
    let encoded: String = KEY.bytes().map(|b| format!("%{b:02X}")).collect();
    let location = format!("http://127.0.0.1:9/v1/messages?key={KEY}&again={encoded}");
    let server = MockServer::start(move |_, _| Step::Reply {
        status: 307,
        headers: vec![("location", location.clone())],
        body: String::new(),
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    let (base, path) = (server.base.clone(), dir.path().to_path_buf());
    let ran = tokio::task::spawn_blocking(move || {
        run_with("anthropic", &base, &path, &["--format", "md"])
    })
    .await
    .unwrap();
    let printed = ran.text();
    let result = ran.result;
    let reason = result["dimensions"][0]["unscored_reason"]
        .as_str()
        .unwrap_or_default();
    assert!(
        reason.contains("?key=[redacted]&again=[redacted]"),
        "{reason}"
    );
    assert_no_key_part(&printed, "the run's output");
    assert_no_key_part(&all_text(dir.path()), "the files written");
    let base = server.base.clone();
    let printed = Caldera::new()
        .env("ANTHROPIC_API_KEY", KEY)
        .env("ANTHROPIC_BASE_URL", base)
        .args(["plan", "judges.d/trivy", "--count-tokens"])
        .run_async()
        .await
        .text();
    assert!(printed.contains("[redacted]"), "{printed}");
    assert_no_key_part(&printed, "plan --count-tokens");
}

/// The key `\u`-escaped inside the verdict's JSON: reading the verdict would decode it
/// into the reasoning; it is redacted before that.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_escaped_inside_the_verdict_is_written_nowhere() {
    let escaped: String = KEY
        .chars()
        .map(|c| format!("\\u{:04x}", c as u32))
        .collect();
    let reply = format!(
        r#"{{"score": 4, "confidence": 0.9, "reasoning": "you sent {escaped}", "evidence_cited": [], "recommendations": [], "sub_scores": {{}}}}"#
    );
    let server = MockServer::start(move |_, _| anthropic_text(&reply, "end_turn")).await;
    let dir = tempfile::tempdir().unwrap();
    let (base, path) = (server.base.clone(), dir.path().to_path_buf());
    let ran = tokio::task::spawn_blocking(move || {
        run_with("anthropic", &base, &path, &["--format", "md"])
    })
    .await
    .unwrap();
    let printed = ran.text();
    let result = ran.result;
    assert_eq!(result["dimensions"][0]["status"], "scored", "{result:#}");
    let written = all_text(dir.path());
    assert!(written.contains("[redacted]"), "the echo is kept, redacted");
    assert_no_key_part(&written, "the files written");
    assert_no_key_part(&printed, "the run's output");
}

/// An error body that is not JSON is shown by its start; the cut falling inside the
/// key leaves no part of it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_error_body_cut_inside_the_key_keeps_no_part_of_it() {
    let body = format!("{}{KEY} was refused", "x".repeat(290));
    let server = MockServer::start(move |_, _| Step::Reply {
        status: 400,
        headers: vec![],
        body: body.clone(),
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    let (base, path) = (server.base.clone(), dir.path().to_path_buf());
    let ran = tokio::task::spawn_blocking(move || run_with("anthropic", &base, &path, &[]))
        .await
        .unwrap();
    let printed = ran.text();
    let result = ran.result;
    let reason = result["dimensions"][0]["unscored_reason"]
        .as_str()
        .unwrap_or_default();
    assert!(reason.contains("HTTP 400"), "{reason}");
    assert_no_key_part(&printed, "the run's output");
    assert_no_key_part(&all_text(dir.path()), "the files written");
}
