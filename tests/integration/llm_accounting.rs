//! Token and cost accounting counts every request that reached a model: retries that got
//! an answer, re-asks and unreadable replies, and the tokens of judges left unscored.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use caldera::llm::executor::{Executor, Outcome, UnscoredKind};

use crate::llm_http::{anthropic, job, options};
use crate::llm_run::{VERDICT, prompt_of, run};
use crate::llm_server::{MockServer, anthropic_text, error};

#[tokio::test]
async fn an_unreadable_job_shows_the_tokens_and_cost_of_both_asks() {
    let server = MockServer::start(|_, _| anthropic_text("no verdict here", "end_turn")).await;
    let out = Executor::new(anthropic(&server, Duration::from_secs(5)), options(2))
        .run(vec![job("j1", "Judge this.")])
        .await;
    match &out[0].outcome {
        Outcome::Unscored {
            kind: UnscoredKind::Unreadable,
            attempts,
            usage,
            cost_usd,
            ..
        } => {
            assert_eq!(*attempts, 2);
            assert_eq!((usage.input_tokens, usage.output_tokens), (200, 40));
            // Two replies at the sonnet list price: 2 x (100 x $2/M + 20 x $10/M).
            assert!((cost_usd.unwrap() - 0.0008).abs() < 1e-12, "{cost_usd:?}");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(server.hits(), 2);
}

/// The trivy suite against a server that answers one judge's prompt unreadably (twice),
/// fails another's first request with a 500, and answers the rest: the result counts
/// every request the server answered, and every token of every reply.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_run_counts_every_request_and_every_reply() {
    let failed_once = Arc::new(AtomicUsize::new(0));
    let flag = failed_once.clone();
    let server = MockServer::start(move |_, seen| {
        let prompt = prompt_of(seen);
        if prompt.contains("freshness") {
            anthropic_text("I think this is pretty good overall.", "end_turn")
        } else if prompt.contains("severity") && flag.fetch_add(1, Ordering::SeqCst) == 0 {
            error(500, vec![])
        } else {
            anthropic_text(VERDICT, "end_turn")
        }
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    let base = server.base.clone();
    let d = dir.path().to_path_buf();
    let (_, _, result) = tokio::task::spawn_blocking(move || run(&base, &d, &["--cache", "off"]))
        .await
        .unwrap();
    // 7 judges, one re-ask, one retry after the 500.
    assert_eq!(server.hits(), 9);
    let usage = &result["usage"];
    assert_eq!(usage["requests"], 9, "{usage:#}");
    assert_eq!(usage["calls"], 7);
    assert_eq!(usage["verdicts"], 6);
    // Eight replies with usage (the 500 had none), 100 input + 20 output tokens each.
    assert_eq!(usage["input_tokens"], 800, "{usage:#}");
    assert_eq!(usage["output_tokens"], 160);
    let fresh = result["dimensions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["name"] == "freshness_quality")
        .unwrap();
    assert_eq!(fresh["status"], "unscored");
    let call = &fresh["llm_calls"][0];
    assert_eq!(call["input_tokens"], 200, "{call:#}");
    assert_eq!(call["attempts"], 2);
    assert_eq!(call["scored"], false);
    assert!(call["cost_usd"].as_f64().unwrap() > 0.0, "{call:#}");
    let cost: f64 = result["usage"]["cost_by_dimension"]["freshness_quality"]
        .as_f64()
        .unwrap();
    assert!(cost > 0.0, "the unscored judge's replies cost money too");
}
