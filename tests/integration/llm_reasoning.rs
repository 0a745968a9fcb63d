//! Reasoning judges over loopback: `reasoning:` sends thinking (Anthropic) or a reasoning
//! effort (OpenAI reasoning models) in the only combinations the APIs accept, keeps the
//! thinking in the interaction log and out of the verdict, and counts reasoning tokens.

use std::path::Path;

use serde_json::{Value, json};

use super::llm_server::{MockServer, Step};
use crate::binary::{Caldera, Ran};
use crate::llm_run::VERDICT;

const THOUGHT: &str = "PRIVATE-THOUGHT: weighing the missed CVEs against the false positives";

/// An Anthropic reply with a thinking block before the verdict's text block.
fn anthropic_thinking() -> Step {
    let body = json!({
        "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-test",
        "content": [
            {"type": "thinking", "thinking": THOUGHT, "signature": "sig"},
            {"type": "text", "text": VERDICT}
        ],
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 100, "output_tokens": 300}
    });
    Step::Reply {
        status: 200,
        headers: vec![],
        body: body.to_string(),
    }
}

/// An OpenAI reasoning-model reply that itemises its reasoning tokens.
fn openai_reasoning() -> Step {
    let body = json!({
        "id": "chatcmpl-1", "object": "chat.completion", "model": "o4-mini",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": VERDICT}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 100, "completion_tokens": 500, "total_tokens": 600,
                  "completion_tokens_details": {"reasoning_tokens": 448}}
    });
    Step::Reply {
        status: 200,
        headers: vec![],
        body: body.to_string(),
    }
}

/// A copy of the trivy suite with `line` added to suite.yaml.
fn project(line: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    crate::gates::copy_trivy(dir.path());
    let suite = dir.path().join("judges.d/trivy/suite.yaml");
    let text = std::fs::read_to_string(&suite).unwrap();
    std::fs::write(&suite, format!("{text}\n{line}\n")).unwrap();
    dir
}

/// `caldera run` in LLM mode in `root`, its result in `result.json` and its interaction
/// log in `calls.jsonl`.
fn run(root: &Path, env: &[(&str, &str)], extra: &[&str]) -> Ran {
    Caldera::new()
        .dir(root)
        .envs(env)
        .args(["run", "judges.d/trivy", "--timeout", "5", "--cache", "off"])
        .out(root.join("result.json"))
        .arg("--log")
        .arg(root.join("calls.jsonl"))
        .args(extra)
        .run()
}

/// The lines of the interaction log that [`run`] wrote in `root`.
fn log_lines(root: &Path) -> Vec<Value> {
    std::fs::read_to_string(root.join("calls.jsonl"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn anthropic_thinks_adaptively_and_the_thinking_stays_in_the_log() {
    let server = MockServer::start(|_, _| anthropic_thinking()).await;
    let dir = project("reasoning: {effort: high}");
    let (root, base) = (dir.path().to_path_buf(), server.base.clone());
    let Ran {
        code,
        result,
        stderr,
        ..
    } = tokio::task::spawn_blocking(move || {
        run(
            &root,
            &[("ANTHROPIC_API_KEY", "k"), ("ANTHROPIC_BASE_URL", &base)],
            &[],
        )
    })
    .await
    .unwrap();
    let log = log_lines(dir.path());
    assert!(matches!(code, Some(0 | 1)), "{code:?} {result} {stderr}");
    for seen in server.seen() {
        let body = &seen.body;
        assert_eq!(body["thinking"], json!({"type": "adaptive"}), "{body}");
        assert_eq!(body["output_config"]["effort"], "high");
        assert_eq!(body["max_tokens"], 16000);
        // What thinking refuses is never sent.
        assert!(body.get("temperature").is_none() && body.get("tool_choice").is_none());
    }
    let text = result.to_string();
    assert!(
        !text.contains("PRIVATE-THOUGHT"),
        "thinking reached the result"
    );
    assert!(
        log.iter().all(|l| l["thinking"].as_str() == Some(THOUGHT)),
        "every logged reply keeps its thinking: {log:?}"
    );
    assert!(result["dimensions"][0]["score"].is_number(), "{result}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thinking_budget_is_sent_as_manual_extended_thinking() {
    let server = MockServer::start(|_, _| anthropic_thinking()).await;
    let dir = project("reasoning: {budget_tokens: 4096, max_tokens: 8192}");
    let (root, base) = (dir.path().to_path_buf(), server.base.clone());
    let Ran {
        code,
        result,
        stderr,
        ..
    } = tokio::task::spawn_blocking(move || {
        run(
            &root,
            &[("ANTHROPIC_API_KEY", "k"), ("ANTHROPIC_BASE_URL", &base)],
            &[],
        )
    })
    .await
    .unwrap();
    assert!(matches!(code, Some(0 | 1)), "{code:?} {result} {stderr}");
    let body = &server.seen()[0].body;
    assert_eq!(
        body["thinking"],
        json!({"type": "enabled", "budget_tokens": 4096})
    );
    assert_eq!(body["max_tokens"], 8192);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_openai_reasoning_model_gets_an_effort_and_its_reasoning_tokens_are_counted() {
    let server = MockServer::start(|_, _| openai_reasoning()).await;
    let dir = project("reasoning: {effort: low}");
    let (root, base) = (dir.path().to_path_buf(), format!("{}/v1", server.base));
    let Ran {
        code,
        result,
        stderr,
        ..
    } = tokio::task::spawn_blocking(move || {
        run(
            &root,
            &[("OPENAI_BASE_URL", &base)],
            &["--provider", "openai", "--model", "o4-mini"],
        )
    })
    .await
    .unwrap();
    assert!(matches!(code, Some(0 | 1)), "{code:?} {result} {stderr}");
    let body = &server.seen()[0].body;
    assert_eq!(body["reasoning_effort"], "low", "{body}");
    assert_eq!(body["max_completion_tokens"], 16000);
    assert!(
        body.get("max_tokens").is_none() && body.get("temperature").is_none(),
        "{body}"
    );
    let calls = server.seen().len() as u64;
    assert_eq!(
        result["usage"]["reasoning_tokens"],
        json!(448 * calls),
        "{}",
        result["usage"]
    );
    // Reasoning tokens are billed as output: o4-mini's $4.40 per million output tokens
    // on all 500 completion tokens of each call.
    let cost = result["usage"]["cost_usd"].as_f64().unwrap();
    let expected = calls as f64 * (100.0 * 1.1 + 500.0 * 4.4) / 1e6;
    assert!((cost - expected).abs() < 1e-6, "{cost} vs {expected}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_that_does_not_reason_is_sent_no_reasoning_effort() {
    let server = MockServer::start(|_, _| openai_reasoning()).await;
    let dir = project("reasoning: {effort: low}");
    let (root, base) = (dir.path().to_path_buf(), format!("{}/v1", server.base));
    let Ran {
        code,
        result,
        stderr,
        ..
    } = tokio::task::spawn_blocking(move || {
        run(
            &root,
            &[("OPENAI_BASE_URL", &base)],
            &["--provider", "openai", "--model", "gpt-4.1"],
        )
    })
    .await
    .unwrap();
    assert!(matches!(code, Some(0 | 1)), "{code:?} {result} {stderr}");
    let body = &server.seen()[0].body;
    assert!(body.get("reasoning_effort").is_none(), "{body}");
    assert_eq!(body["temperature"], 0.0);
    let said: Vec<&str> = result["summary"]["problems"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["kind"] == "model")
        .filter_map(|p| p["message"].as_str())
        .collect();
    assert!(
        said.iter()
            .any(|m| m.contains("`gpt-4.1`") && m.contains("asked without it")),
        "{said:?}"
    );
}

#[test]
fn budgets_the_api_refuses_are_refused_at_load() {
    for (line, says) in [
        (
            "reasoning: {budget_tokens: 512}",
            "below the 1024 the API accepts",
        ),
        (
            "reasoning: {budget_tokens: 16000}",
            "must be below max_tokens (16000)",
        ),
    ] {
        let dir = project(line);
        let out = Caldera::new()
            .dir(dir.path())
            .args(["validate", "judges.d/trivy"])
            .run();
        let all = format!("{}{}", out.stderr, out.stdout);
        assert_eq!(out.code, Some(2), "{line}: {all}");
        assert!(
            all.contains(says) && all.contains("reasoning.budget_tokens"),
            "{line}: {all}"
        );
    }
}
