//! Providers and the executor against a real local HTTP server.

use std::time::{Duration, Instant};

use caldera::llm::executor::{
    Executor, ExecutorOptions, Job, LlmRequest, Outcome, ProgressMode, UnscoredKind,
};
use caldera::llm::log::InteractionLog;
use caldera::provider::retry::RetryPolicy;
use caldera::provider::{AnthropicProvider, OpenAiProvider, Provider, ProviderError, Secret};
use caldera::spec::verdict_format::VerdictFormat;

use super::llm_server::{GOOD, MockServer, Step, anthropic_text, error, openai_text};

pub const KEY: &str = "sk-test-DO-NOT-LEAK-0123456789";

pub fn fast_retry(max_attempts: u32) -> RetryPolicy {
    RetryPolicy {
        max_attempts,
        max_rate_limited: 30,
        min_delay: Duration::from_millis(10),
        max_delay: Duration::from_millis(50),
        max_total: Duration::from_secs(10),
        jitter: true,
    }
}

pub fn anthropic(server: &MockServer, timeout: Duration) -> Provider {
    Provider::Anthropic(
        AnthropicProvider::new(Some(&server.base), Secret::new(KEY), timeout).unwrap(),
    )
}

pub fn options(max_attempts: u32) -> ExecutorOptions {
    ExecutorOptions {
        concurrency: 4,
        retry: fast_retry(max_attempts),
        progress: ProgressMode::Hidden,
        ..ExecutorOptions::default()
    }
}

pub fn job(id: &str, prompt: &str) -> Job {
    Job::new(
        id,
        "accuracy",
        Some(format!("repo-{id}")),
        LlmRequest {
            system: Some("You are a strict judge.".into()),
            max_tokens: 512,
            ..LlmRequest::new("sonnet", prompt)
        },
        &VerdictFormat::default(),
    )
    .expect("the default format compiles")
}

async fn run_one(provider: Provider, opts: ExecutorOptions) -> Outcome {
    let out = Executor::new(provider, opts)
        .run(vec![job("j1", "Judge this.")])
        .await;
    assert_eq!(out.len(), 1);
    out.into_iter().next().unwrap().outcome
}

#[tokio::test]
async fn anthropic_success_sends_the_documented_request() {
    let server = MockServer::start(|_, _| anthropic_text(GOOD, "end_turn")).await;
    let outcome = run_one(anthropic(&server, Duration::from_secs(5)), options(3)).await;
    let scored = outcome.scored().expect("scored");
    assert_eq!(scored.verdict.score, 4.0);
    assert_eq!(scored.verdict.confidence, Some(0.9));
    assert_eq!(
        (scored.usage.input_tokens, scored.usage.output_tokens),
        (100, 20)
    );
    // sonnet list price: 100 * $2/M + 20 * $10/M.
    assert!((scored.cost_usd.unwrap() - 0.0004).abs() < 1e-12);
    assert_eq!(
        (scored.attempts, scored.cached, scored.reasked),
        (1, false, false)
    );
    let seen = server.seen();
    assert_eq!(seen.len(), 1);
    let req = &seen[0];
    assert_eq!(req.path, "/v1/messages");
    assert_eq!(req.header("x-api-key"), Some(KEY));
    assert_eq!(req.header("anthropic-version"), Some("2026-10-21"));
    assert_eq!(req.body["model"], "claude-sonnet-5-5");
    assert_eq!(req.body["system"], "You are a strict judge.");
    assert_eq!(req.body["max_tokens"], 512);
    // The Messages API no longer declares `temperature`; current models refuse it.
    assert!(req.body.get("temperature").is_none(), "{}", req.body);
    assert_eq!(req.body["messages"][0]["role"], "user");
    assert_eq!(req.body["messages"][0]["content"], "Judge this.");
}

#[tokio::test]
async fn openai_success_without_a_key_sends_no_authorization() {
    let server = MockServer::start(|_, _| openai_text(GOOD, "stop")).await;
    let provider = Provider::Openai(
        OpenAiProvider::new(
            Some(&format!("{}/v1", server.base)),
            None,
            Duration::from_secs(5),
        )
        .unwrap(),
    );
    let mut opts = options(3);
    opts.models = opts.models.with_alias("sonnet", "local-model");
    let scored = run_one(provider, opts)
        .await
        .scored()
        .cloned()
        .expect("scored");
    assert_eq!(scored.verdict.score, 4.0);
    assert_eq!(scored.usage.input_tokens, 100);
    assert_eq!(scored.cost_usd, None, "no price for a local model");
    let req = &server.seen()[0];
    assert_eq!(req.path, "/v1/chat/completions");
    assert_eq!(req.header("authorization"), None);
    assert_eq!(req.body["model"], "local-model");
    assert_eq!(req.body["max_tokens"], 512);
    assert_eq!(req.body["messages"][0]["role"], "system");
    assert_eq!(req.body["messages"][1]["content"], "Judge this.");
}

#[tokio::test]
async fn openai_with_a_key_sends_a_bearer_token() {
    let server = MockServer::start(|_, _| openai_text(GOOD, "stop")).await;
    let provider = Provider::Openai(
        OpenAiProvider::new(
            Some(&server.base),
            Some(Secret::new(KEY)),
            Duration::from_secs(5),
        )
        .unwrap(),
    );
    assert!(run_one(provider, options(1)).await.scored().is_some());
    assert_eq!(
        server.seen()[0].header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );
}

#[tokio::test]
async fn rate_limit_with_retry_after_is_honoured() {
    let server = MockServer::start(|i, _| {
        if i == 0 {
            error(
                429,
                vec![
                    ("retry-after", "30".into()),
                    ("retry-after-ms", "300".into()),
                ],
            )
        } else {
            anthropic_text(GOOD, "end_turn")
        }
    })
    .await;
    let start = Instant::now();
    let scored = run_one(anthropic(&server, Duration::from_secs(5)), options(3))
        .await
        .scored()
        .cloned()
        .expect("scored");
    // retry-after-ms (300 ms) wins over the 10 ms backoff ...
    assert!(
        start.elapsed() >= Duration::from_millis(300),
        "{:?}",
        start.elapsed()
    );
    // ... and over retry-after (30 s): waiting 30 s would pass the 10 s retry budget,
    // and the request would have given up unscored after one attempt.
    assert_eq!(scored.attempts, 2);
    assert_eq!(server.hits(), 2);
}

#[tokio::test]
async fn server_errors_then_success() {
    let server = MockServer::start(|i, _| {
        if i < 2 {
            error(500, vec![])
        } else {
            anthropic_text(GOOD, "end_turn")
        }
    })
    .await;
    let scored = run_one(anthropic(&server, Duration::from_secs(5)), options(4))
        .await
        .scored()
        .cloned()
        .expect("scored");
    assert_eq!(scored.attempts, 3);
    let overloaded = MockServer::start(|i, _| {
        if i < 1 {
            error(529, vec![])
        } else {
            anthropic_text(GOOD, "end_turn")
        }
    })
    .await;
    assert!(
        run_one(anthropic(&overloaded, Duration::from_secs(5)), options(4))
            .await
            .scored()
            .is_some()
    );
}

#[tokio::test]
async fn server_errors_until_giving_up() {
    let server = MockServer::start(|_, _| error(500, vec![])).await;
    match run_one(anthropic(&server, Duration::from_secs(5)), options(3)).await {
        Outcome::Unscored {
            kind,
            reason,
            attempts,
            ..
        } => {
            assert_eq!(kind, UnscoredKind::Provider);
            assert_eq!(attempts, 3);
            assert!(reason.contains("HTTP 500"), "{reason}");
            assert!(reason.contains("mock 500"), "{reason}");
        }
        other => panic!("expected unscored, got {other:?}"),
    }
    assert_eq!(server.hits(), 3);
}

#[tokio::test]
async fn client_errors_are_not_retried() {
    let server = MockServer::start(|_, _| error(400, vec![])).await;
    let outcome = run_one(anthropic(&server, Duration::from_secs(5)), options(5)).await;
    assert!(
        matches!(outcome, Outcome::Unscored { attempts: 1, .. }),
        "{outcome:?}"
    );
    assert_eq!(server.hits(), 1);
}

#[tokio::test]
async fn a_slow_server_times_out() {
    let server = MockServer::start(|_, _| {
        Step::Delay(
            Duration::from_secs(3),
            Box::new(anthropic_text(GOOD, "end_turn")),
        )
    })
    .await;
    match run_one(anthropic(&server, Duration::from_millis(200)), options(2)).await {
        Outcome::Unscored {
            kind,
            reason,
            attempts,
            ..
        } => {
            assert_eq!(kind, UnscoredKind::Provider);
            assert_eq!(attempts, 2);
            assert!(reason.contains("did not answer within 0.2s"), "{reason}");
        }
        other => panic!("expected unscored, got {other:?}"),
    }
    // Two attempts, each cut at the timeout: the server's three-second delay never ran
    // out (the server saw both requests, and no reply was read).
    assert_eq!(server.hits(), 2);
}

#[tokio::test]
async fn a_dropped_connection_is_retried() {
    let server = MockServer::start(|i, _| {
        if i == 0 {
            Step::Close
        } else {
            anthropic_text(GOOD, "end_turn")
        }
    })
    .await;
    let scored = run_one(anthropic(&server, Duration::from_secs(5)), options(3))
        .await
        .scored()
        .cloned()
        .expect("scored");
    assert_eq!(scored.attempts, 2);
    let always = MockServer::start(|_, _| Step::Close).await;
    match run_one(anthropic(&always, Duration::from_secs(5)), options(2)).await {
        Outcome::Unscored { kind, reason, .. } => {
            assert_eq!(kind, UnscoredKind::Provider);
            assert!(reason.contains("connection"), "{reason}");
        }
        other => panic!("expected unscored, got {other:?}"),
    }
}

#[tokio::test]
async fn an_unreadable_reply_is_reasked_once_with_the_error_quoted() {
    let server = MockServer::start(|i, _| {
        if i == 0 {
            anthropic_text("I would give it a four.", "end_turn")
        } else {
            anthropic_text(GOOD, "end_turn")
        }
    })
    .await;
    let scored = run_one(anthropic(&server, Duration::from_secs(5)), options(3))
        .await
        .scored()
        .cloned()
        .expect("scored");
    assert!(scored.reasked);
    assert_eq!(scored.attempts, 2);
    assert_eq!(scored.usage.input_tokens, 200, "both asks are counted");
    let second = &server.seen()[1].body["messages"];
    assert_eq!(second[1]["role"], "assistant");
    assert_eq!(second[1]["content"], "I would give it a four.");
    let correction = second[2]["content"].as_str().unwrap();
    assert!(
        correction.contains("the reply contains no JSON object"),
        "{correction}"
    );
    assert!(
        correction.contains("\"score\": <a whole number from 1 to 5>"),
        "{correction}"
    );
}

#[tokio::test]
async fn a_fenced_reply_is_read_without_a_reask() {
    let fenced = format!("Here you go:\n```json\n{GOOD}\n```\n");
    let server = MockServer::start(move |_, _| anthropic_text(&fenced, "end_turn")).await;
    let scored = run_one(anthropic(&server, Duration::from_secs(5)), options(3))
        .await
        .scored()
        .cloned()
        .expect("scored");
    assert!(!scored.reasked);
    assert_eq!(server.hits(), 1);
}

#[tokio::test]
async fn truncated_replies_twice_leave_the_job_unscored() {
    let half = &GOOD[..GOOD.len() / 2];
    let server = MockServer::start(move |_, _| anthropic_text(half, "max_tokens")).await;
    match run_one(anthropic(&server, Duration::from_secs(5)), options(3)).await {
        Outcome::Unscored {
            kind,
            reason,
            attempts,
            ..
        } => {
            assert_eq!(kind, UnscoredKind::Unreadable);
            assert_eq!(attempts, 2);
            assert!(reason.contains("after one re-ask"), "{reason}");
            assert!(reason.contains("cut off"), "{reason}");
        }
        other => panic!("never a guessed score: {other:?}"),
    }
    assert_eq!(server.hits(), 2);
}

#[tokio::test]
async fn out_of_scale_scores_are_refused_not_clamped() {
    let server = MockServer::start(|_, _| anthropic_text(r#"{"score": 7}"#, "end_turn")).await;
    let outcome = run_one(anthropic(&server, Duration::from_secs(5)), options(1)).await;
    match outcome {
        Outcome::Unscored {
            kind: UnscoredKind::Unreadable,
            reason,
            ..
        } => {
            assert!(
                reason.contains("score 7 is outside the scale 1 to 5"),
                "{reason}"
            )
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn the_budget_refuses_calls_it_cannot_cover() {
    let server = MockServer::start(|_, _| anthropic_text(GOOD, "end_turn")).await;
    let mut opts = options(1);
    // The worst case of one call is ~$0.00517 (512 output tokens at $10/M, a short
    // prompt at $2/M); the first call really costs $0.0004, so a second worst case
    // ($0.00557 in all) no longer fits under $0.0054.
    opts.max_cost = Some(0.0054);
    opts.concurrency = 1;
    let jobs = vec![job("a", "first"), job("b", "second"), job("c", "third")];
    let out = Executor::new(anthropic(&server, Duration::from_secs(5)), opts)
        .run(jobs)
        .await;
    let scored = out.iter().filter(|o| o.outcome.scored().is_some()).count();
    let refused = out
        .iter()
        .filter(|o| {
            matches!(
                &o.outcome,
                Outcome::Unscored {
                    kind: UnscoredKind::Budget,
                    ..
                }
            )
        })
        .count();
    assert_eq!((scored, refused), (1, 2), "{out:?}");
    assert_eq!(server.hits(), 1);
    let mut unknown = options(1);
    unknown.max_cost = Some(100.0);
    unknown.models = unknown.models.with_alias("sonnet", "no-such-model");
    match run_one(anthropic(&server, Duration::from_secs(5)), unknown).await {
        Outcome::Unscored {
            kind: UnscoredKind::Budget,
            reason,
            ..
        } => assert!(reason.contains("no price"), "{reason}"),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn keys_never_reach_errors_debug_or_the_log() {
    // A server that echoes the key in its error message.
    let server = MockServer::start(|_, seen| {
        let key = seen.header("x-api-key").unwrap_or("").to_string();
        let body =
            serde_json::json!({"error": {"message": format!("invalid key {key}")}}).to_string();
        Step::Reply {
            status: 401,
            headers: vec![],
            body,
        }
    })
    .await;
    let provider = anthropic(&server, Duration::from_secs(5));
    assert!(!format!("{provider:?}").contains(KEY));
    let dir = tempfile::tempdir().unwrap();
    let log_path = dir.path().join("calls.jsonl");
    let mut opts = options(2);
    opts.log = Some(InteractionLog::open(&log_path).unwrap());
    let outcome = run_one(provider.clone(), opts).await;
    assert!(!format!("{outcome:?}").contains(KEY), "{outcome:?}");
    assert!(format!("{outcome:?}").contains("[redacted]"));
    let log = std::fs::read_to_string(&log_path).unwrap();
    assert!(log.contains("\"status\":\"error\""), "{log}");
    assert!(!log.contains(KEY));
    let direct = provider
        .complete(&caldera::provider::ProviderRequest {
            model: "m".into(),
            system: None,
            messages: vec![],
            max_tokens: 1,
            temperature: Some(0.0),
            response_schema: None,
            reasoning: None,
            cache: None,
        })
        .await
        .unwrap_err();
    assert!(matches!(direct, ProviderError::Http { status: 401, .. }));
    assert!(!direct.to_string().contains(KEY));
}

#[tokio::test]
async fn the_log_has_one_line_per_ask() {
    let server = MockServer::start(|i, _| {
        if i == 0 {
            anthropic_text("no verdict", "end_turn")
        } else {
            anthropic_text(GOOD, "end_turn")
        }
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    let log_path = dir.path().join("logs/calls.jsonl");
    let mut opts = options(2);
    opts.run_id = "run-1".into();
    opts.log = Some(InteractionLog::open(&log_path).unwrap());
    assert!(
        run_one(anthropic(&server, Duration::from_secs(5)), opts)
            .await
            .scored()
            .is_some()
    );
    let lines: Vec<serde_json::Value> = std::fs::read_to_string(&log_path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0]["status"], "unreadable");
    assert_eq!(lines[0]["attempt"], 1);
    assert_eq!(lines[0]["error"], "the reply contains no JSON object");
    assert_eq!(lines[1]["status"], "ok");
    assert_eq!(lines[1]["attempt"], 2);
    assert_eq!(lines[1]["parsed_score"], 4.0);
    for l in &lines {
        assert_eq!(l["run_id"], "run-1");
        assert_eq!(l["judge"], "accuracy");
        assert_eq!(l["item"], "repo-j1");
        assert_eq!(l["provider"], "anthropic");
        assert_eq!(l["model"], "claude-sonnet-5-5");
        assert_eq!(l["input_tokens"], 100);
    }
}

#[tokio::test]
async fn concurrency_is_bounded_and_order_kept() {
    let server = MockServer::start(|_, _| {
        Step::Delay(
            Duration::from_millis(100),
            Box::new(anthropic_text(GOOD, "end_turn")),
        )
    })
    .await;
    let mut opts = options(1);
    opts.concurrency = 3;
    let jobs: Vec<Job> = (0..9)
        .map(|i| job(&i.to_string(), &format!("prompt {i}")))
        .collect();
    let start = Instant::now();
    let out = Executor::new(anthropic(&server, Duration::from_secs(5)), opts)
        .run(jobs)
        .await;
    assert!(out.iter().all(|o| o.outcome.scored().is_some()));
    let ids: Vec<&str> = out.iter().map(|o| o.id.as_str()).collect();
    assert_eq!(ids, ["0", "1", "2", "3", "4", "5", "6", "7", "8"]);
    assert_eq!(server.peak_in_flight(), 3);
    assert!(start.elapsed() >= Duration::from_millis(300));
}

/// A run sends one judge's calls while the next judge's evidence is still being
/// computed: the executor asks each group of jobs as it arrives, not once the last one
/// is in. Here the second group is sent only after the first group's call has reached
/// the server, so an executor that waited for every group would never see it.
#[tokio::test]
async fn streamed_groups_are_asked_as_they_arrive() {
    let server = MockServer::start(|_, _| anthropic_text(GOOD, "end_turn")).await;
    let executor = Executor::new(anthropic(&server, Duration::from_secs(5)), options(2));
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    tx.send((7, vec![job("a", "prompt a")])).unwrap();
    let feed = async {
        let first_asked = async {
            while server.hits() == 0 {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        };
        // A liveness bound, not a speed check: without streaming this never ends.
        tokio::time::timeout(Duration::from_secs(60), first_asked)
            .await
            .expect("the first group was not asked before the last group arrived");
        tx.send((3, vec![job("b", "prompt b"), job("c", "prompt c")]))
            .unwrap();
        drop(tx);
    };
    let (groups, ()) = tokio::join!(executor.run_streamed(rx), feed);
    let shape: Vec<(i32, Vec<&str>)> = groups
        .iter()
        .map(|(tag, outcomes)| (*tag, outcomes.iter().map(|o| o.id.as_str()).collect()))
        .collect();
    assert_eq!(shape, [(7, vec!["a"]), (3, vec!["b", "c"])]);
    assert!(
        groups
            .iter()
            .flat_map(|(_, o)| o)
            .all(|o| o.outcome.scored().is_some())
    );
    assert_eq!(server.hits(), 3);
}
