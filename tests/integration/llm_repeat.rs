//! `caldera run --repeat N`: every judge asked N times, each repeat with its own cache
//! entry; the spread is reported and a judge whose repeats disagree is flagged unstable.

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::binary::{Caldera, Ran};
use crate::llm_server::{MockServer, Seen, anthropic_text};

fn verdict(score: u8) -> String {
    format!(
        r#"{{"score": {score}, "confidence": 0.8, "reasoning": "r", "evidence_cited": [], "recommendations": [], "sub_scores": {{}}}}"#
    )
}

fn is_freshness(seen: &Seen) -> bool {
    crate::llm_server::content_text(&seen.body["messages"][0]["content"]).contains("freshness")
}

/// `caldera run judges.d/trivy --repeat <repeat>` against `base`, its result in
/// `dir/result.json`.
fn run(base: &str, dir: &Path, repeat: &str) -> Ran {
    // Every judge but freshness scores 4, false_positive_rate capped to 2 by its failed
    // assertions; freshness's median is 2 or 3. Weighted: (0.35 + 0.20 + 0.15 + 0.25 +
    // 0.25) * 4 + 0.15 * 2 + 0.15 * (2 or 3) = 4.8 + 0.3 + (0.3 or 0.45) = 5.4 or 5.55,
    // over 1.5: 3.6 or 3.7, PASS either way (3.5 <= x < 4.0): exit 0.
    Caldera::new()
        .env("ANTHROPIC_API_KEY", "test-key")
        .env("ANTHROPIC_BASE_URL", base)
        .args([
            "run",
            "judges.d/trivy",
            "--timeout",
            "5",
            "--repeat",
            repeat,
        ])
        .out(dir.join("result.json"))
        .arg("--cache-dir")
        .arg(dir.join("cache"))
        .run()
        .expect(0)
}

fn dimension<'a>(result: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    result["dimensions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["name"] == name)
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn repeats_are_cached_apart_and_disagreement_is_flagged() {
    // The freshness judge answers 2, 3, 2, 3, ...; every other judge always 4.
    let freshness_asks = std::sync::Arc::new(AtomicUsize::new(0));
    let counter = freshness_asks.clone();
    let server = MockServer::start(move |_, seen| {
        if is_freshness(seen) {
            let n = counter.fetch_add(1, Ordering::SeqCst);
            anthropic_text(
                &verdict(if n.is_multiple_of(2) { 2 } else { 3 }),
                "end_turn",
            )
        } else {
            anthropic_text(&verdict(4), "end_turn")
        }
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    let (base, d) = (server.base.clone(), dir.path().to_path_buf());
    let first = tokio::task::spawn_blocking(move || run(&base, &d, "3").result)
        .await
        .unwrap();
    assert_eq!(server.hits(), 7 * 3, "seven judges, three asks each");

    let fresh = dimension(&first, "freshness_quality");
    assert_eq!(fresh["repeats"]["n"], 3);
    let scores = &fresh["repeats"]["runs"][0]["scores"];
    let mut given: Vec<i64> = scores
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_i64().unwrap())
        .collect();
    given.sort_unstable();
    assert!(given == [2, 2, 3] || given == [2, 3, 3], "{scores}");
    assert_eq!(fresh["repeats"]["max_range"], 1);
    assert_eq!(fresh["repeats"]["unstable"], true);
    // The unit's score before any cap is the median of the three.
    let before = fresh["score_before_cap"]
        .as_i64()
        .or(fresh["score"].as_i64());
    assert_eq!(before, Some(given[1]));
    let steady = dimension(&first, "iac_quality");
    assert_eq!(steady["repeats"]["unstable"], false);
    assert_eq!(
        steady["repeats"]["runs"][0]["scores"],
        serde_json::json!([4, 4, 4])
    );
    let unstable: Vec<&serde_json::Value> = first["summary"]["problems"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["kind"] == "unstable")
        .collect();
    assert_eq!(unstable.len(), 1, "{unstable:?}");
    assert_eq!(unstable[0]["dimension"], "freshness_quality");

    // Every repeat has its own cache entry: a second run makes no call and reads the
    // same scores back.
    let (base, d) = (server.base.clone(), dir.path().to_path_buf());
    let second = tokio::task::spawn_blocking(move || run(&base, &d, "3").result)
        .await
        .unwrap();
    assert_eq!(server.hits(), 21);
    assert_eq!(
        dimension(&second, "freshness_quality")["repeats"],
        fresh["repeats"]
    );
    // The first repeat is the entry a run without repeats uses.
    let (base, d) = (server.base.clone(), dir.path().to_path_buf());
    let single = tokio::task::spawn_blocking(move || run(&base, &d, "1").result)
        .await
        .unwrap();
    assert_eq!(server.hits(), 21);
    assert!(dimension(&single, "freshness_quality")["repeats"].is_null());
    assert_eq!(single["usage"]["cached"], 7);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn settled_repeats_stop_once_the_first_asks_agree_and_say_what_they_saved() {
    // Freshness answers 2, 3, 2, 3, ...: its first three disagree, so all five go out.
    // Every other judge always answers 4: three asks each, two saved.
    let freshness_asks = std::sync::Arc::new(AtomicUsize::new(0));
    let counter = freshness_asks.clone();
    let server = MockServer::start(move |_, seen| {
        if is_freshness(seen) {
            let n = counter.fetch_add(1, Ordering::SeqCst);
            anthropic_text(
                &verdict(if n.is_multiple_of(2) { 2 } else { 3 }),
                "end_turn",
            )
        } else {
            anthropic_text(&verdict(4), "end_turn")
        }
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    let (base, d) = (server.base.clone(), dir.path().to_path_buf());
    let ran = Caldera::new()
        .env("ANTHROPIC_API_KEY", "test-key")
        .env("ANTHROPIC_BASE_URL", &base)
        .args(["run", "judges.d/trivy", "--timeout", "5", "--repeat", "5"])
        .args(["--settle", "3", "--cache", "off"])
        .out(d.join("result.json"))
        .run_async()
        .await;
    assert!(matches!(ran.code, Some(0 | 1)), "{ran:?}");
    let result = ran.result;
    assert_eq!(
        server.hits(),
        6 * 3 + 5,
        "six settled judges and one that is not"
    );
    assert_eq!(freshness_asks.load(Ordering::SeqCst), 5);
    assert_eq!(result["usage"]["settled"], 12, "{}", result["usage"]);
    let sbom = dimension(&result, "sbom_completeness");
    assert_eq!(sbom["repeats"]["settled"], 2);
    assert_eq!(
        sbom["repeats"]["runs"][0]["scores"],
        serde_json::json!([4, 4, 4])
    );
    assert_eq!(sbom["status"], "scored");
    let fresh = dimension(&result, "freshness_quality");
    assert!(
        fresh["repeats"].get("settled").is_none(),
        "{}",
        fresh["repeats"]
    );
    assert_eq!(
        fresh["repeats"]["runs"][0]["scores"]
            .as_array()
            .unwrap()
            .len(),
        5
    );
}

#[test]
fn settle_needs_more_repeats_than_it_waits_for() {
    let out = Caldera::new()
        .env("ANTHROPIC_API_KEY", "test-key")
        .args(["run", "judges.d/trivy", "--repeat", "3", "--settle", "3"])
        .run();
    assert_eq!(out.code, Some(2));
    let err = &out.stderr;
    assert!(err.contains("--settle 3 needs more repeats"), "{err}");
}
