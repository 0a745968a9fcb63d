//! Provider prompt caching over loopback: a prompt asked again (`--repeat`) is marked
//! cacheable, its repeats wait for the first answer (the entry exists only then), cache
//! writes and reads are priced at the model's factors, and a prompt asked once is not
//! marked under `prompt_cache: auto`.

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::llm_server::{MockServer, Seen, Step, content_text};
use crate::binary::{Caldera, Ran};
use crate::llm_run::VERDICT;

/// An Anthropic reply whose usage reports a cache write (first sight of a prompt) or a
/// cache read (every later one) of 1,000 tokens, and 10 uncached input tokens.
fn cached_reply(read: bool) -> Step {
    let (write, hit) = if read { (0, 1000) } else { (1000, 0) };
    let body = json!({
        "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-test",
        "content": [{"type": "text", "text": VERDICT}],
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 10, "output_tokens": 20,
                  "cache_creation_input_tokens": write, "cache_read_input_tokens": hit}
    });
    Step::Reply {
        status: 200,
        headers: vec![],
        body: body.to_string(),
    }
}

fn project(lines: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    crate::gates::copy_trivy(dir.path());
    let suite = dir.path().join("judges.d/trivy/suite.yaml");
    let text = std::fs::read_to_string(&suite).unwrap();
    std::fs::write(&suite, format!("{text}\n{lines}\n")).unwrap();
    dir
}

fn run(root: &Path, base: &str, extra: &[&str]) -> Ran {
    Caldera::new()
        .dir(root)
        .env("ANTHROPIC_API_KEY", "k")
        .env("ANTHROPIC_BASE_URL", base)
        .args(["run", "judges.d/trivy", "--timeout", "10", "--cache", "off"])
        .out(root.join("result.json"))
        .args(extra)
        .run()
}

fn prompt(seen: &Seen) -> String {
    content_text(&seen.body["messages"][0]["content"])
}

/// A server that answers each prompt's first request after `hold` (as a slow first
/// answer would) and notes when each request arrived.
async fn slow_first(hold: Duration) -> (MockServer, Arc<Mutex<Vec<(String, Instant)>>>) {
    let arrivals: Arc<Mutex<Vec<(String, Instant)>>> = Arc::default();
    let noted = arrivals.clone();
    let server = MockServer::start(move |_, seen| {
        let p = prompt(seen);
        let first = {
            let mut a = noted.lock().unwrap();
            let first = !a.iter().any(|(q, _)| *q == p);
            a.push((p, Instant::now()));
            first
        };
        if first {
            Step::Delay(hold, Box::new(cached_reply(false)))
        } else {
            cached_reply(true)
        }
    })
    .await;
    (server, arrivals)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn repeats_are_marked_cacheable_and_wait_for_the_first_answer() {
    let hold = Duration::from_millis(300);
    let (server, arrivals) = slow_first(hold).await;
    let dir = project("");
    let (root, base) = (dir.path().to_path_buf(), server.base.clone());
    let Ran { result, stderr, .. } =
        tokio::task::spawn_blocking(move || run(&root, &base, &["--repeat", "3"]))
            .await
            .unwrap();
    let seen = server.seen();
    assert_eq!(
        seen.len(),
        21,
        "seven judges, three asks each: {result} {stderr}"
    );
    for s in &seen {
        let blocks = &s.body["messages"][0]["content"];
        assert_eq!(
            blocks[0]["cache_control"],
            json!({"type": "ephemeral"}),
            "{}",
            s.body
        );
    }
    // Every repeat of a prompt arrived after its first ask had been answered.
    let arrivals = arrivals.lock().unwrap().clone();
    for (p, t) in &arrivals {
        let first = arrivals.iter().find(|(q, _)| q == p).unwrap().1;
        if *t != first {
            assert!(
                t.duration_since(first) >= hold,
                "a repeat went out {:?} after its first ask, before the answer",
                t.duration_since(first)
            );
        }
    }
    // Seven writes and fourteen reads of 1,000 tokens, 10 uncached input tokens and 20
    // output tokens per call, at sonnet's $2/$10 with writes at 1.25x and reads at 0.1x.
    let usage = &result["usage"];
    assert_eq!(usage["cache_write_tokens"], 7000, "{usage}");
    assert_eq!(usage["cache_read_tokens"], 14000, "{usage}");
    let expected =
        (21.0 * 10.0 * 2.0 + 7000.0 * 2.0 * 1.25 + 14000.0 * 2.0 * 0.1 + 21.0 * 20.0 * 10.0) / 1e6;
    let cost = usage["cost_usd"].as_f64().unwrap();
    assert!((cost - expected).abs() < 1e-9, "{cost} vs {expected}");
    // The terminal report says what the cache did.
    let shown = Caldera::new()
        .dir(dir.path())
        .args(["report", "result.json"])
        .run()
        .stdout;
    assert!(
        shown.contains("prompt cache 7000 written + 14000 read"),
        "{shown}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prompt_asked_once_is_not_marked_and_off_marks_nothing() {
    let server = MockServer::start(|_, _| cached_reply(false)).await;
    for (lines, extra) in [("", vec![]), ("prompt_cache: off", vec!["--repeat", "2"])] {
        let before = server.seen().len();
        let dir = project(lines);
        let (root, base) = (dir.path().to_path_buf(), server.base.clone());
        let extra: Vec<String> = extra.into_iter().map(str::to_owned).collect();
        tokio::task::spawn_blocking(move || {
            let extra: Vec<&str> = extra.iter().map(String::as_str).collect();
            run(&root, &base, &extra)
        })
        .await
        .unwrap();
        for s in &server.seen()[before..] {
            assert!(
                s.body["messages"][0]["content"].is_string(),
                "{lines}: {}",
                s.body
            );
        }
    }
    // `on` marks a prompt asked once too.
    let before = server.seen().len();
    let dir = project("prompt_cache: on");
    let (root, base) = (dir.path().to_path_buf(), server.base.clone());
    tokio::task::spawn_blocking(move || run(&root, &base, &[]))
        .await
        .unwrap();
    assert!(
        server.seen()[before..]
            .iter()
            .all(|s| s.body["messages"][0]["content"][0]["cache_control"].is_object())
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn openai_cached_tokens_are_priced_at_the_models_read_factor() {
    let server = MockServer::start(|_, _| {
        let body = json!({
            "id": "chatcmpl-1", "object": "chat.completion", "model": "gpt-4.1",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": VERDICT}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 1100, "completion_tokens": 20, "total_tokens": 1120,
                      "prompt_tokens_details": {"cached_tokens": 1000}}
        });
        Step::Reply { status: 200, headers: vec![], body: body.to_string() }
    })
    .await;
    let dir = project("");
    let (root, base) = (dir.path().to_path_buf(), format!("{}/v1", server.base));
    let result = Caldera::new()
        .dir(&root)
        .env("OPENAI_BASE_URL", &base)
        .args([
            "run",
            "judges.d/trivy",
            "--cache",
            "off",
            "--provider",
            "openai",
        ])
        .args(["--model", "gpt-4.1", "--repeat", "2"])
        .out(root.join("result.json"))
        .run_async()
        .await
        .result;
    let seen = server.seen();
    let key = seen[0].body["prompt_cache_key"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(key.starts_with("caldera-"), "{key}");
    assert!(
        seen.iter()
            .filter(|s| s.body["prompt_cache_key"] == key.as_str())
            .count()
            >= 2
    );
    let usage = &result["usage"];
    assert_eq!(
        usage["input_tokens"],
        14 * 100,
        "uncached input only: {usage}"
    );
    assert_eq!(usage["cache_read_tokens"], 14 * 1000);
    // gpt-4.1: $2 input, $8 output, cached input at 0.25x.
    let expected = 14.0 * (100.0 * 2.0 + 1000.0 * 2.0 * 0.25 + 20.0 * 8.0) / 1e6;
    let cost = usage["cost_usd"].as_f64().unwrap();
    assert!((cost - expected).abs() < 1e-9, "{cost} vs {expected}");
}

#[test]
fn plan_predicts_cache_writes_and_reads_and_prices_them_in_its_range() {
    let dir = project("");
    let plan = |extra: &[&str]| -> Value {
        Caldera::new()
            .dir(dir.path())
            .env("ANTHROPIC_API_KEY", "k")
            .args(["plan", "judges.d/trivy", "--no-cache", "--format", "json"])
            .args(extra)
            .run()
            .json()
    };
    let once = plan(&[]);
    assert!(
        once["total"].get("cache_read_tokens").is_none(),
        "{}",
        once["total"]
    );
    let repeated = plan(&["--repeat", "5"]);
    let total = &repeated["total"];
    let high = total["input_tokens"]["high"].as_u64().unwrap();
    let (write, read) = (
        total["cache_write_tokens"].as_u64().unwrap(),
        total["cache_read_tokens"].as_u64().unwrap(),
    );
    assert_eq!(write + read, high, "{total}");
    assert_eq!(read, 4 * write, "four reads per first ask: {total}");
    // The low end prices four asks in five at the read factor: well under a fifth of
    // the same plan's low end without caching, times five.
    let low = total["cost"]["low"].as_f64().unwrap();
    let uncached_low = once["total"]["cost"]["low"].as_f64().unwrap() * 5.0;
    assert!(low < 0.35 * uncached_low, "{low} vs {uncached_low}");
}

const PER_REPO_SUITE: &str = "suite: per-repo
inputs:
  results: outputs
  ground_truth: expected
model: sonnet
";

const PER_REPO_JUDGE: &str = "dimension: findings_per_repo
weight: 1.0
scope: repo
evidence:
  findings: << result.vulnerabilities | length if result.vulnerabilities is defined else 0 >>
heuristic:
  metric: findings
  bands:
    - { min: 1, score: 4 }
    - { score: 2 }
  reasoning: << id >> has << findings >> findings
prompt: prompt.md
";

const PER_REPO_PROMPT: &str = "You grade one repository's scan. The rubric is long and the \
same for every repository.
<< cache_break >>
Repository findings: << evidence.findings >>

<< response_format >>
";

/// A per-repo judge whose prompt marks its shared part, over the trivy sample data.
fn per_repo_project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let suite = dir.path().join("judges.d/per-repo");
    std::fs::create_dir_all(&suite).unwrap();
    std::fs::write(suite.join("suite.yaml"), PER_REPO_SUITE).unwrap();
    std::fs::write(suite.join("findings.yaml"), PER_REPO_JUDGE).unwrap();
    std::fs::write(suite.join("prompt.md"), PER_REPO_PROMPT).unwrap();
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("ground-truth/trivy");
    crate::gates::copy_dir(&data.join("outputs"), &suite.join("outputs"));
    crate::gates::copy_dir(&data.join("expected"), &suite.join("expected"));
    dir
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_per_repo_judge_caches_the_part_before_cache_break_across_repos() {
    let hold = Duration::from_millis(300);
    // Leads with the first request whose shared part it has not seen.
    let arrivals: Arc<Mutex<Vec<(String, Instant)>>> = Arc::default();
    let noted = arrivals.clone();
    let server = MockServer::start(move |_, seen| {
        let shared = seen.body["messages"][0]["content"][0]["text"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        let first = {
            let mut a = noted.lock().unwrap();
            let first = !a.iter().any(|(q, _)| *q == shared);
            a.push((shared, Instant::now()));
            first
        };
        if first {
            Step::Delay(hold, Box::new(cached_reply(false)))
        } else {
            cached_reply(true)
        }
    })
    .await;
    let dir = per_repo_project();
    let (root, base) = (dir.path().to_path_buf(), server.base.clone());
    let result = Caldera::new()
        .dir(&root)
        .env("ANTHROPIC_API_KEY", "k")
        .env("ANTHROPIC_BASE_URL", &base)
        .args(["run", "judges.d/per-repo", "--cache", "off"])
        .out(root.join("result.json"))
        .run_async()
        .await
        .result;
    let seen = server.seen();
    assert!(seen.len() >= 5, "one call per repo: {}", seen.len());
    let shared = &seen[0].body["messages"][0]["content"][0];
    assert_eq!(shared["cache_control"], json!({"type": "ephemeral"}));
    assert!(
        shared["text"]
            .as_str()
            .unwrap()
            .ends_with("every repository.\n"),
        "{shared}"
    );
    for s in &seen {
        let blocks = s.body["messages"][0]["content"].as_array().unwrap();
        assert_eq!(blocks[0], *shared, "every repo sends the same cached part");
        assert!(
            blocks[1]["text"]
                .as_str()
                .unwrap()
                .trim_start()
                .starts_with("Repository findings")
        );
        assert!(!content_text(&s.body["messages"][0]["content"]).contains("cache-break"));
    }
    let arrivals = arrivals.lock().unwrap().clone();
    let first = arrivals[0].1;
    assert!(
        arrivals[1..]
            .iter()
            .all(|(_, t)| t.duration_since(first) >= hold)
    );
    assert_eq!(
        result["usage"]["cache_write_tokens"], 1000,
        "{}",
        result["usage"]
    );

    // `render` shows where the cached part ends.
    let shown = Caldera::new()
        .dir(dir.path())
        .args(["render", "judges.d/per-repo"])
        .run()
        .stdout;
    assert!(
        shown.contains("----- cache break: the part above is cached across units -----"),
        "{shown}"
    );
}
