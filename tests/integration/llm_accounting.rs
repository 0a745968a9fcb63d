//! Token and cost accounting counts every request that reached a model: retries that got
//! an answer, re-asks and unreadable replies, and the tokens of judges left unscored.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use caldera::llm::executor::{Executor, Outcome, UnscoredKind};

use crate::binary::{Caldera, Ran};
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
    let Ran { result, .. } =
        tokio::task::spawn_blocking(move || run(&base, &d, &["--cache", "off"]))
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

/// `caldera run judges.d/trivy` against `base` with `extra`, its result in
/// `dir/result.json`.
fn run_printing(base: &str, dir: &Path, extra: &[&str]) -> Ran {
    Caldera::new()
        .env("ANTHROPIC_API_KEY", "test-key-never-logged")
        .env("ANTHROPIC_BASE_URL", base)
        .args(["run", "judges.d/trivy", "--timeout", "5", "--cache", "off"])
        .out(dir.join("result.json"))
        .args(extra)
        .run()
}

/// A model without a price answers every judge: each call's cost is unknown, so the
/// run's is too (null in the JSON, "unknown" in the table and the HTML), never $0.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unpriced_model_makes_the_run_cost_unknown_not_zero() {
    let server = MockServer::start(|_, _| anthropic_text(VERDICT, "end_turn")).await;
    let dir = tempfile::tempdir().unwrap();
    let (base, d) = (server.base.clone(), dir.path().to_path_buf());
    let Ran {
        stdout: table,
        result,
        ..
    } = tokio::task::spawn_blocking(move || {
        run_printing(&base, &d, &["--model", "house-model-without-a-price"])
    })
    .await
    .unwrap();
    let usage = &result["usage"];
    assert_eq!(usage["verdicts"], 7, "{usage:#}");
    assert!(usage["cost_usd"].is_null(), "{usage:#}");
    assert!(
        usage["cost_by_dimension"]["vulnerability_accuracy"].is_null(),
        "{usage:#}"
    );
    let line = table
        .lines()
        .find(|l| l.contains("input + "))
        .expect("the usage line");
    assert!(line.ends_with("cost unknown"), "{line}");
    assert!(!table.contains("$0.0000"), "{table}");
    let html = dir.path().join("report.html");
    let report = Caldera::new()
        .arg("report")
        .arg(dir.path().join("result.json"))
        .args(["--format", "html", "--out"])
        .arg(&html)
        .run();
    assert!(report.code == Some(0), "{report:?}");
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(
        page.contains("output tokens, cost unknown."),
        "an HTML page without it"
    );
    assert!(!page.contains("$0.0000"));
}

/// `--max-cost` with a model without a price: no call can be vouched for, so the last
/// line says how to give the model a price (raising the budget cannot help), and counts
/// the units as the table does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn max_cost_with_an_unpriced_model_says_how_to_price_it() {
    let server = MockServer::start(|_, _| anthropic_text(VERDICT, "end_turn")).await;
    let dir = tempfile::tempdir().unwrap();
    let (base, d) = (server.base.clone(), dir.path().to_path_buf());
    let Ran {
        code,
        stdout: table,
        stderr,
        result,
        ..
    } = tokio::task::spawn_blocking(move || {
        run_printing(
            &base,
            &d,
            &["--model", "house-model-without-a-price", "--max-cost", "5"],
        )
    })
    .await
    .unwrap();
    assert_eq!(server.hits(), 0, "no call is made that cannot be priced");
    assert_eq!(code, Some(3), "{stderr}");
    let last = stderr.lines().last().unwrap_or_default();
    assert!(!last.contains("raise --max-cost"), "{last}");
    assert!(last.contains("house-model-without-a-price"), "{last}");
    assert!(last.contains("prices:"), "{last}");
    assert_eq!(result["usage"]["cost_usd"], 0.0, "nothing was spent");
    // As many units as the table leaves unscored.
    let units = result["gate"]["units"].as_u64().unwrap();
    assert!(
        last.contains(&format!("{units} unit(s)")),
        "{last}\n{table}"
    );
}
