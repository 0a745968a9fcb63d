//! Schema-bound verdicts over loopback: the request carries the verdict's JSON Schema the
//! way each provider takes it, a reply that breaks the schema is asked again once with
//! the violation named and is never scored, and text judges are asked as before.

use std::path::Path;
use std::time::Duration;

use caldera::llm::executor::{Executor, Job, LlmRequest, Outcome, UnscoredKind};
use caldera::provider::{OpenAiProvider, Provider};
use caldera::spec::verdict_format::{Transport, VerdictFormat};
use serde_json::{Value, json};

use crate::binary::{Caldera, Ran};

use super::llm_http::{anthropic, options};
use super::llm_server::{MockServer, anthropic_text, openai_text};

/// A reply that is exactly the default verdict object.
const BOUND: &str = r#"{"score": 4, "confidence": 0.9, "reasoning": "fine", "evidence_cited": ["a"], "recommendations": []}"#;
/// The same object without its confidence.
const NO_CONFIDENCE: &str =
    r#"{"score": 4, "reasoning": "fine", "evidence_cited": ["a"], "recommendations": []}"#;

fn bound_job(id: &str) -> Job {
    Job::new(
        id,
        "accuracy",
        None,
        LlmRequest {
            max_tokens: 512,
            ..LlmRequest::new("sonnet", "Judge this.")
        },
        &VerdictFormat {
            transport: Some(Transport::Schema),
            ..VerdictFormat::default()
        },
    )
    .expect("a schema-bound default format compiles")
}

fn required(schema: &Value) -> Value {
    schema["required"].clone()
}

#[tokio::test]
async fn anthropic_gets_the_schema_in_output_config_and_a_bound_reply_is_scored() {
    let server = MockServer::start(|_, _| anthropic_text(BOUND, "end_turn")).await;
    let out = Executor::new(anthropic(&server, Duration::from_secs(5)), options(2))
        .run(vec![bound_job("a")])
        .await;
    let scored = out[0].outcome.scored().expect("scored");
    assert_eq!(scored.verdict.score, 4.0);
    let body = &server.seen()[0].body;
    let format = &body["output_config"]["format"];
    assert_eq!(format["type"], "json_schema");
    assert_eq!(
        required(&format["schema"]),
        json!([
            "score",
            "confidence",
            "reasoning",
            "evidence_cited",
            "recommendations"
        ])
    );
    assert_eq!(format["schema"]["additionalProperties"], false);
    // Structured outputs need no forced tool, no beta header and no temperature.
    assert!(
        body.get("tools").is_none() && body.get("tool_choice").is_none(),
        "{body}"
    );
    assert!(server.seen()[0].header("anthropic-beta").is_none());
    assert!(body.get("temperature").is_none());
}

#[tokio::test]
async fn a_schema_violation_is_asked_again_once_naming_it_then_left_unscored() {
    // First reply breaks the schema, the re-ask is answered well: scored, re-asked.
    let server = MockServer::start(|i, _| {
        anthropic_text(if i == 0 { NO_CONFIDENCE } else { BOUND }, "end_turn")
    })
    .await;
    let out = Executor::new(anthropic(&server, Duration::from_secs(5)), options(2))
        .run(vec![bound_job("a")])
        .await;
    let scored = out[0].outcome.scored().expect("scored on the re-ask");
    assert!(scored.reasked);
    let reask = &server.seen()[1].body["messages"];
    let last = reask.as_array().unwrap().last().unwrap()["content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(last.contains("missing field `confidence`"), "{last}");
    assert!(server.seen()[1].body["output_config"].is_object());

    // Both replies break it: unscored with the violation as the reason, never a score.
    let server = MockServer::start(|_, _| anthropic_text(NO_CONFIDENCE, "end_turn")).await;
    let out = Executor::new(anthropic(&server, Duration::from_secs(5)), options(2))
        .run(vec![bound_job("a")])
        .await;
    match &out[0].outcome {
        Outcome::Unscored { kind, reason, .. } => {
            assert_eq!(*kind, UnscoredKind::Unreadable);
            assert!(reason.contains("missing field `confidence`"), "{reason}");
        }
        other => panic!("a reply that breaks the schema was read: {other:?}"),
    }
    assert_eq!(server.hits(), 2);
}

#[tokio::test]
async fn prose_around_a_valid_object_is_a_violation_when_bound_though_text_mode_reads_it() {
    let prose = format!("Here is my verdict: {BOUND}");
    let server = MockServer::start(move |_, _| anthropic_text(&prose, "end_turn")).await;
    let out = Executor::new(anthropic(&server, Duration::from_secs(5)), options(2))
        .run(vec![bound_job("a")])
        .await;
    assert!(out[0].outcome.scored().is_none(), "{:?}", out[0].outcome);
}

#[tokio::test]
async fn openai_gets_a_strict_json_schema_response_format() {
    let server = MockServer::start(|_, _| openai_text(BOUND, "stop")).await;
    let provider = Provider::Openai(
        OpenAiProvider::new(
            Some(&format!("{}/v1", server.base)),
            None,
            Duration::from_secs(5),
        )
        .unwrap(),
    );
    let mut opts = options(2);
    opts.models = opts.models.with_alias("sonnet", "local-model");
    let out = Executor::new(provider, opts)
        .run(vec![bound_job("a")])
        .await;
    assert!(out[0].outcome.scored().is_some(), "{:?}", out[0].outcome);
    let rf = &server.seen()[0].body["response_format"];
    assert_eq!(rf["type"], "json_schema");
    assert_eq!(rf["json_schema"]["strict"], true);
    assert_eq!(rf["json_schema"]["name"], "verdict");
    assert_eq!(rf["json_schema"]["schema"]["additionalProperties"], false);
}

/// A copy of the trivy suite with `verdict_transport: schema`, run in LLM mode.
fn run_schema_suite(root: &Path, base: &str) -> Ran {
    crate::gates::copy_trivy(root);
    let suite = root.join("judges.d/trivy/suite.yaml");
    let text = std::fs::read_to_string(&suite).unwrap();
    std::fs::write(
        &suite,
        text.replace(
            "model: sonnet\n",
            "model: sonnet\nverdict_transport: schema\n",
        ),
    )
    .unwrap();
    Caldera::new()
        .dir(root)
        .env("ANTHROPIC_API_KEY", "test-key")
        .env("ANTHROPIC_BASE_URL", base)
        .args(["run", "judges.d/trivy", "--timeout", "5", "--cache", "off"])
        .out(root.join("result.json"))
        .run()
}

/// The bound verdict for a request's schema: the default object, with every declared
/// sub-score at 3 (as a provider bound to that schema must answer).
fn answer_to(seen: &super::llm_server::Seen) -> String {
    let schema = &seen.body["output_config"]["format"]["schema"];
    let mut reply: Value = serde_json::from_str(BOUND).unwrap();
    if let Some(names) = schema["properties"]["sub_scores"]["required"].as_array() {
        let subs: serde_json::Map<String, Value> = names
            .iter()
            .filter_map(|n| n.as_str())
            .map(|n| (n.to_owned(), json!(3)))
            .collect();
        reply["sub_scores"] = Value::Object(subs);
    }
    reply.to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_suite_asks_every_default_judge_for_a_bound_verdict() {
    let server = MockServer::start(|_, seen| anthropic_text(&answer_to(seen), "end_turn")).await;
    let dir = tempfile::tempdir().unwrap();
    let (root, base) = (dir.path().to_path_buf(), server.base.clone());
    let Ran { code, result, .. } =
        tokio::task::spawn_blocking(move || run_schema_suite(&root, &base))
            .await
            .unwrap();
    assert!(matches!(code, Some(0 | 1)), "{code:?} {result}");
    let seen = server.seen();
    assert!(
        seen.iter()
            .all(|s| s.body["messages"].as_array().map(Vec::len) == Some(1)),
        "nothing was asked again"
    );
    assert!(
        seen.iter()
            .all(|s| s.body["output_config"]["format"]["type"] == "json_schema")
    );
    let statuses: Vec<&str> = result["dimensions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["status"].as_str().unwrap_or_default())
        .collect();
    assert!(statuses.iter().all(|s| *s != "unscored"), "{statuses:?}");
}

#[test]
fn a_regex_verdict_that_asks_for_schema_transport_is_refused_at_load() {
    let dir = tempfile::tempdir().unwrap();
    crate::gates::copy_trivy(dir.path());
    let judge = dir.path().join("judges.d/trivy/iac_quality.yaml");
    let text = std::fs::read_to_string(&judge).unwrap();
    std::fs::write(
        &judge,
        format!(
            "{text}\nverdict:\n  kind: regex\n  pattern: 'Score: (\\d)'\n  transport: schema\n"
        ),
    )
    .unwrap();
    let out = Caldera::new()
        .dir(dir.path())
        .args(["validate", "judges.d/trivy"])
        .run();
    let all = format!("{}{}", out.stderr, out.stdout);
    assert_eq!(out.code, Some(2), "{all}");
    assert!(
        all.contains("`transport: schema` needs the default JSON verdict"),
        "{all}"
    );
}

#[test]
fn plan_says_how_verdicts_are_asked_for() {
    let dir = tempfile::tempdir().unwrap();
    crate::gates::copy_trivy(dir.path());
    let plan = |root: &Path| {
        Caldera::new()
            .dir(root)
            .env("ANTHROPIC_API_KEY", "test-key")
            .args(["plan", "judges.d/trivy", "--no-cache"])
            .run()
            .stdout
    };
    assert!(plan(dir.path()).contains("verdicts: free text"));
    let suite = dir.path().join("judges.d/trivy/suite.yaml");
    let text = std::fs::read_to_string(&suite).unwrap();
    std::fs::write(&suite, format!("{text}\nverdict_transport: schema\n")).unwrap();
    let shown = plan(dir.path());
    assert!(
        shown.contains("verdicts: schema-bound (the provider binds"),
        "{shown}"
    );
}
