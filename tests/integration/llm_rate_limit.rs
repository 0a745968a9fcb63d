//! Rate limits: against a server that answers 429 to requests beyond its capacity in
//! flight, the concurrency limit comes down to what the server takes (and creeps back),
//! every job is scored, and a run the server still cuts short fails on coverage.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use caldera::llm::executor::{Executor, Job};

use crate::binary::Ran;
use crate::llm_http::{anthropic, job, options};
use crate::llm_run::{VERDICT, run};
use crate::llm_server::{GOOD, MockServer, Step, anthropic_text, error};

/// What the server answered to each request, in arrival order.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Answer {
    in_flight: usize,
    rate_limited: bool,
}

/// A server that takes `capacity` requests at once (each answered after `latency`) and
/// answers 429 with `retry_after_ms` to any request beyond that; it records every
/// answer.
async fn limited_server(
    capacity: usize,
    latency: Duration,
    retry_after_ms: u64,
    verdict: &'static str,
) -> (MockServer, Arc<Mutex<Vec<Answer>>>) {
    let answers = Arc::new(Mutex::new(Vec::new()));
    let log = answers.clone();
    let server = MockServer::start(move |_, seen| {
        let rate_limited = seen.in_flight > capacity;
        log.lock().unwrap().push(Answer {
            in_flight: seen.in_flight,
            rate_limited,
        });
        if rate_limited {
            error(
                429,
                vec![
                    ("retry-after", (retry_after_ms / 1000).to_string()),
                    ("retry-after-ms", retry_after_ms.to_string()),
                ],
            )
        } else {
            Step::Delay(latency, Box::new(anthropic_text(verdict, "end_turn")))
        }
    })
    .await;
    (server, answers)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrency_comes_down_to_what_the_server_takes() {
    let (server, answers) = limited_server(2, Duration::from_millis(20), 30, GOOD).await;
    let mut opts = options(5);
    opts.concurrency = 32;
    let jobs: Vec<Job> = (0..40)
        .map(|i| job(&i.to_string(), &format!("prompt {i}")))
        .collect();
    let executor = Executor::new(anthropic(&server, Duration::from_secs(5)), opts);
    let out = executor.run(jobs).await;
    // Every job scored, outcomes in job order.
    assert!(
        out.iter().all(|o| o.outcome.scored().is_some()),
        "{:?}",
        out.iter()
            .filter(|o| o.outcome.scored().is_none())
            .collect::<Vec<_>>()
    );
    let ids: Vec<String> = out.iter().map(|o| o.id.clone()).collect();
    let expected: Vec<String> = (0..40).map(|i| i.to_string()).collect();
    assert_eq!(ids, expected);
    let answers = answers.lock().unwrap().clone();
    let ok = answers.iter().filter(|a| !a.rate_limited).count();
    let limited = answers.len() - ok;
    assert_eq!(ok, 40, "one accepted request per job");
    // Each round of requests sent at one limit halves it once (32 -> 16 -> 8 -> 4 -> 2:
    // at most 62 answers of 429 on the way down); then additive increase probes one
    // request above the capacity about once per round.
    assert!(limited >= 1, "the first burst met the capacity");
    assert!(limited <= 62 + 40, "{limited} rate-limited answers");
    // Once the limit has come down, the server never again sees a burst: the last 20
    // requests arrive with at most its capacity in flight, plus the one probe, plus one
    // answer on its way back.
    let tail_peak = answers[answers.len() - 20..]
        .iter()
        .map(|a| a.in_flight)
        .max()
        .unwrap();
    assert!(
        tail_peak <= 4,
        "{tail_peak} in flight at the end: {answers:?}"
    );
    let stats = executor.concurrency();
    assert!(stats.cuts >= 1, "{stats:?}");
    assert!(stats.lowest <= 2, "{stats:?}");
    // Each job's own 429s are not failures: none used up its five attempts.
    assert!(
        out.iter()
            .all(|o| o.outcome.scored().is_some_and(|s| s.attempts < 40))
    );
}

/// The reproducer, through the binary: 42 units (a panel of six models on the
/// seven trivy judges) at `--concurrency 32` against a server that takes one request at
/// a time. Every unit is scored; the result says the limit came down.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rate_limited_run_completes_and_says_so() {
    let (server, answers) = limited_server(1, Duration::from_millis(10), 50, VERDICT).await;
    let dir = tempfile::tempdir().unwrap();
    let (base, d) = (server.base.clone(), dir.path().to_path_buf());
    let Ran {
        code,
        stdout,
        result,
        ..
    } = tokio::task::spawn_blocking(move || {
        run(
            &base,
            &d,
            &[
                "--models",
                "m1,m2,m3,m4,m5,m6",
                "--concurrency",
                "32",
                "--cache",
                "off",
            ],
        )
    })
    .await
    .unwrap();
    assert_eq!(code, Some(0), "{stdout}");
    assert_eq!(result["gate"]["scored_units"], 42, "{:#}", result["gate"]);
    assert_eq!(result["gate"]["units"], 42);
    let usage = &result["usage"];
    assert!(
        usage["concurrency"]["cuts"].as_u64().unwrap() >= 1,
        "{usage:#}"
    );
    assert_eq!(usage["concurrency"]["ceiling"], 32);
    let answers = answers.lock().unwrap();
    assert_eq!(
        usage["requests"].as_u64().unwrap() as usize,
        answers.len(),
        "every request counted"
    );
    assert!(stdout.contains("[rate-limit]"), "{stdout}");
}

/// A server that asks to wait longer than the retry budget leaves units unscored: the
/// partial run fails on coverage (exit 1) and says why, never a pass on what was left.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_partial_run_fails_on_coverage() {
    let (server, answers) = limited_server(1, Duration::from_millis(300), 3_600_000, VERDICT).await;
    let dir = tempfile::tempdir().unwrap();
    let (base, d) = (server.base.clone(), dir.path().to_path_buf());
    let Ran {
        code,
        stdout,
        result,
        ..
    } = tokio::task::spawn_blocking(move || {
        run(&base, &d, &["--concurrency", "32", "--cache", "off"])
    })
    .await
    .unwrap();
    let limited = answers
        .lock()
        .unwrap()
        .iter()
        .filter(|a| a.rate_limited)
        .count();
    assert!(limited >= 1, "the burst met the limit");
    assert_eq!(code, Some(1), "{stdout}");
    assert_eq!(result["decision"], "FAIL");
    let gate = &result["gate"];
    assert!(gate["blocked"].as_bool().unwrap(), "{gate:#}");
    assert!(
        gate["reason"]
            .as_str()
            .unwrap()
            .contains("below the suite's minimum coverage"),
        "{gate:#}"
    );
    let reasons: Vec<&str> = result["dimensions"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|d| d["unscored_reason"].as_str())
        .collect();
    assert_eq!(reasons.len(), limited, "{reasons:#?}");
    assert!(
        reasons
            .iter()
            .all(|r| r.contains("HTTP 429") && r.contains("retry budget")),
        "{reasons:#?}"
    );
}
