//! `caldera plan`: calls, cached hits, tokens and a cost range before anything is spent.
//! A warm cache plans no call and $0; a cold one every call with a range; an unknown
//! price is "unknown", never $0; `--max-cost` exits 1 above the budget; and no request
//! leaves the process unless `--count-tokens` asks for counts (a server started here
//! counts every request).

use std::path::Path;

use crate::binary::{Caldera, Ran};
use crate::gates::copy_trivy;
use crate::llm_server::{MockServer, Step, anthropic_text};

const VERDICT: &str = r#"{"score": 4, "confidence": 0.9, "reasoning": "ok", "evidence_cited": [], "recommendations": [], "sub_scores": {}}"#;

/// Runs caldera in `root` with the Anthropic key and base URL set to `base`.
fn caldera(root: &Path, base: &str, args: &[&str]) -> Ran {
    Caldera::new()
        .dir(root)
        .env("ANTHROPIC_API_KEY", "test-key")
        .env("ANTHROPIC_BASE_URL", base)
        .args(args)
        .run()
}

fn answers(_: usize, seen: &crate::llm_server::Seen) -> Step {
    if seen.path.ends_with("/count_tokens") {
        let body = r#"{"input_tokens": 1000}"#.to_owned();
        Step::Reply {
            status: 200,
            headers: vec![("content-type", "application/json".into())],
            body,
        }
    } else {
        anthropic_text(VERDICT, "end_turn")
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_warm_cache_plans_nothing_to_spend_and_a_cold_one_every_call() {
    let server = MockServer::start(answers).await;
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    let cache_arg = cache.to_str().unwrap().to_owned();
    let here = Path::new(env!("CARGO_MANIFEST_DIR")).to_path_buf();
    let base = server.base.clone();
    let out_file = dir.path().join("run.json");
    let (c, h, b) = (cache_arg.clone(), here.clone(), base.clone());
    let plans = tokio::task::spawn_blocking(move || {
        let plan = |cache: &str| {
            let args = [
                "plan",
                "judges.d/trivy",
                "--models",
                "sonnet,opus",
                "--cache-dir",
                cache,
                "--format",
                "json",
            ];
            caldera(&h, &b, &args)
        };
        let cold = plan(&c);
        let run = caldera(
            &h,
            &b,
            &[
                "run",
                "judges.d/trivy",
                "--models",
                "sonnet,opus",
                "--cache-dir",
                &c,
                "--out",
                out_file.to_str().unwrap(),
            ],
        );
        // Both models score every judge 4 (median 4), false_positive_rate capped to 2 by
        // its failed assertions: (1.35 * 4 + 0.15 * 2) / 1.5 = 5.7 / 1.5 = 3.8, PASS: exit 0.
        assert_eq!(run.code, Some(0), "{run:?}");
        (cold, plan(&c))
    })
    .await
    .unwrap();
    let (cold, warm) = plans;
    // Only the run called the server: 7 judges x 2 models.
    assert_eq!(server.hits(), 14);

    assert_eq!(cold.code, Some(0));
    let cold = cold.json();
    assert_eq!(cold["tokens"], "estimated");
    assert_eq!(cold["total"]["prompts"], 14);
    assert_eq!(cold["total"]["calls"], 14);
    assert_eq!(cold["total"]["cached"], 0);
    assert_eq!(cold["total"]["output_tokens"], 14 * 2048);
    let (low, high) = (
        cold["total"]["cost"]["low"].as_f64().unwrap(),
        cold["total"]["cost"]["high"].as_f64().unwrap(),
    );
    assert!(0.0 < low && low < high, "{low} {high}");
    // Per model: opus costs more than sonnet at list prices, for the same tokens.
    let by_model = cold["by_model"].as_array().unwrap();
    assert_eq!(by_model.len(), 2);
    assert_eq!(by_model[0]["input_tokens"], by_model[1]["input_tokens"]);
    assert!(by_model[1]["cost"]["high"].as_f64() > by_model[0]["cost"]["high"].as_f64());
    assert_eq!(cold["rows"].as_array().unwrap().len(), 14);

    let warm = warm.json();
    assert_eq!(warm["total"]["calls"], 0);
    assert_eq!(warm["total"]["cached"], 14);
    assert_eq!(
        warm["total"]["cost"],
        serde_json::json!({"low": 0.0, "high": 0.0})
    );

    // The table says the same without a key. Cache entries are keyed by endpoint, so the
    // plan names the one the run used; it sends nothing there (the hit count is unchanged).
    let table = Caldera::new()
        .dir(&here)
        .env("ANTHROPIC_BASE_URL", &server.base)
        .args([
            "plan",
            "judges.d/trivy",
            "--models",
            "sonnet,opus",
            "--provider",
            "anthropic",
        ])
        .args(["--cache-dir", &cache_arg])
        .run();
    let text = &table.stdout;
    let total = text
        .lines()
        .find(|l| l.trim_start().starts_with("total"))
        .unwrap();
    assert!(
        total.contains(" 14  ") && total.trim_end().ends_with("$0"),
        "{text}"
    );
    assert!(text.contains("0 call(s) to make"), "{text}");
    assert!(text.contains("estimates"), "{text}");
    assert_eq!(server.hits(), 14);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokens_are_counted_only_when_asked() {
    let server = MockServer::start(answers).await;
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("empty-cache");
    let cache = cache.to_str().unwrap().to_owned();
    let base = server.base.clone();
    let (estimated, counted, repeated) = tokio::task::spawn_blocking(move || {
        let here = Path::new(env!("CARGO_MANIFEST_DIR"));
        let plan = |extra: &[&str]| {
            let mut args = vec![
                "plan",
                "judges.d/trivy",
                "--models",
                "sonnet,opus",
                "--format",
                "json",
                "--cache-dir",
                &cache,
            ];
            args.extend_from_slice(extra);
            caldera(here, &base, &args).json()
        };
        (
            plan(&[]),
            plan(&["--count-tokens"]),
            plan(&["--count-tokens", "--repeat", "3"]),
        )
    })
    .await
    .unwrap();
    assert_eq!(estimated["tokens"], "estimated");
    // Counting asked the counting endpoint once per distinct prompt and model, and never
    // the messages endpoint; repeats share their prompt's count.
    let seen = server.seen();
    assert_eq!(seen.len(), 28, "14 counts for the plan, 14 for the repeats");
    assert!(seen.iter().all(|s| s.path == "/v1/messages/count_tokens"));
    assert_eq!(seen[0].header("x-api-key"), Some("test-key"));
    assert_eq!(counted["tokens"], "counted");
    assert_eq!(
        counted["total"]["input_tokens"],
        serde_json::json!({"low": 14000, "high": 14000})
    );
    assert_eq!(repeated["total"]["calls"], 42);
    assert_eq!(repeated["total"]["input_tokens"]["low"], 42000);
}

#[test]
fn an_unknown_price_is_unknown_and_the_budget_is_enforced() {
    let tmp = tempfile::tempdir().unwrap();
    copy_trivy(tmp.path());
    let root = tmp.path();
    // Nothing listens on port 9: a plan that tried the network would fail loudly.
    let plan = |args: &[&str]| {
        let mut all = vec![
            "plan",
            "judges.d/trivy",
            "--provider",
            "anthropic",
            "--cache-dir",
            "none",
        ];
        all.extend_from_slice(args);
        caldera(root, "http://127.0.0.1:9", &all)
    };
    let out = plan(&["--model", "my-local-model", "--format", "json"]);
    assert_eq!(out.code, Some(0));
    let unknown = out.json();
    assert!(unknown["total"]["cost"].is_null(), "{unknown:#}");
    assert_eq!(unknown["unpriced"], serde_json::json!(["my-local-model"]));
    let out = plan(&["--model", "my-local-model"]);
    let text = out.stdout;
    assert!(text.contains("unknown") && !text.contains("$0"), "{text}");
    assert!(
        text.contains("no price is known for `my-local-model`"),
        "{text}"
    );
    let out = plan(&["--model", "my-local-model", "--max-cost", "100"]);
    assert_eq!(
        out.code,
        Some(1),
        "an unknown cost cannot be within a budget"
    );

    // A price from a file, then from the suite.
    std::fs::write(
        root.join("prices.yaml"),
        "my-local-model: { input_per_mtok: 1.0, output_per_mtok: 2.0 }\n",
    )
    .unwrap();
    let out = plan(&[
        "--model",
        "my-local-model",
        "--prices",
        "prices.yaml",
        "--format",
        "json",
    ]);
    let priced = out.json();
    let tokens = &priced["total"]["input_tokens"];
    let low = tokens["low"].as_f64().unwrap() / 1e6;
    let high = tokens["high"].as_f64().unwrap() / 1e6 + 2.0 * 7.0 * 2048.0 / 1e6;
    assert!((priced["total"]["cost"]["low"].as_f64().unwrap() - low).abs() < 1e-12);
    assert!((priced["total"]["cost"]["high"].as_f64().unwrap() - high).abs() < 1e-12);
    let suite = root.join("judges.d/trivy/suite.yaml");
    let text = std::fs::read_to_string(&suite).unwrap();
    std::fs::write(
        &suite,
        format!(
            "{text}\nprices:\n  my-local-model: {{ input_per_mtok: 1.0, output_per_mtok: 2.0 }}\n"
        ),
    )
    .unwrap();
    let from_suite = plan(&["--model", "my-local-model", "--format", "json"]).json();
    assert_eq!(from_suite["total"]["cost"], priced["total"]["cost"]);
    assert_eq!(
        plan(&["--model", "my-local-model", "--max-cost", "100"]).code,
        Some(0)
    );
    let over = plan(&["--model", "my-local-model", "--max-cost", "0.001"]);
    assert_eq!(over.code, Some(1));
    assert!(over.stderr.contains("over budget"));
    // A bad price file is a located error.
    std::fs::write(
        root.join("bad.yaml"),
        "m: { input_per_mtok: 1.0, output_per_mtk: 2 }\n",
    )
    .unwrap();
    let bad = plan(&["--prices", "bad.yaml"]);
    assert_eq!(bad.code, Some(2));
    let err = bad.stderr;
    assert!(
        err.contains("bad.yaml") && err.contains("output_per_mtok"),
        "{err}"
    );
}
