//! `caldera run --shard K/N` and `caldera merge` in LLM mode, against the loopback
//! provider of the LLM tests: each shard asks its repos' `scope: repo` judges, the merge
//! asks the suite judges, and together they make exactly the single run's calls and give
//! its result (scores, evidence, verdicts, usage, decision, exit status).
//!
//! No bundled suite has a `scope: repo` judge, so two bundled suites (trivy, devskim)
//! are copied with one added (`repo_review`, a per-repo judge with a prompt), beside
//! their data and prompts; the bundled trivy suite as it is has suite judges only.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::binary::{Caldera, Ran};
use crate::llm_run::prompt_of;
use crate::llm_server::{MockServer, Seen, anthropic_text};
use crate::same_result::assert_same_result;

/// What differs between a merge and a single run: the run's identity and timing, and
/// the partials a merge joined.
const MAY_DIFFER: [&str; 4] = ["run_id", "timestamp", "duration_ms", "shards"];

const REPO_JUDGE: &str = "dimension: repo_review
weight: 0.5
scope: repo
evidence:
  repo: << id >>
  keys: << result | length if result is mapping else 0 >>
heuristic:
  metric: keys
  bands:
    - { min: 3, score: 4 }
    - { score: 2 }
  reasoning: << id >> has << keys >> top-level keys
prompt: ../../prompts/SUITE/repo_review.md
";

/// The part before `cache_break` is shared by the judge's units: a request marks it
/// for the provider's prompt cache when the judge has more than one unit in the run,
/// which a shard of one repo must do too.
const REPO_PROMPT: &str = "# Repo review\n\nScore how complete a scan looks.\n<< cache_break >>\nRepo << evidence.repo >> has << evidence.keys >> top-level keys. Score how complete its output looks.\n";

/// A copy of bundled suite `name` (its judges, data and prompts) under `root`, with
/// the per-repo judge `repo_review` added when `per_repo`.
fn suite_copy(root: &Path, name: &str, per_repo: bool) {
    let project = Path::new(env!("CARGO_MANIFEST_DIR"));
    for top in ["judges.d", "ground-truth", "prompts"] {
        copy_dir(&project.join(top).join(name), &root.join(top).join(name));
    }
    if !per_repo {
        return;
    }
    let suite_dir = root.join("judges.d").join(name);
    std::fs::write(
        suite_dir.join("repo_review.yaml"),
        REPO_JUDGE.replace("SUITE", name),
    )
    .unwrap();
    std::fs::write(
        root.join("prompts").join(name).join("repo_review.md"),
        REPO_PROMPT,
    )
    .unwrap();
    let yaml = suite_dir.join("suite.yaml");
    let text = std::fs::read_to_string(&yaml).unwrap();
    let text = text.replacen("judges:\n", "judges:\n  - repo_review.yaml\n", 1);
    std::fs::write(&yaml, text).unwrap();
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// A verdict whose score depends on the prompt, so a verdict given to the wrong repo or
/// judge changes the result.
fn verdict_for(seen: &Seen) -> crate::llm_server::Step {
    let score = 1 + prompt_of(seen).len() % 5;
    anthropic_text(
        &format!(
            r#"{{"score": {score}, "confidence": 0.8, "reasoning": "read", "evidence_cited": [], "recommendations": [], "sub_scores": {{}}}}"#
        ),
        "end_turn",
    )
}

/// The binary in `root`, against the loopback provider at `base`.
fn caldera(root: &Path, base: &str, args: &[&str]) -> Ran {
    Caldera::new()
        .args(args)
        .dir(root)
        .env("ANTHROPIC_API_KEY", "test-key-never-logged")
        .env("ANTHROPIC_BASE_URL", base)
        .env("XDG_STATE_HOME", root.join("state"))
        .run()
}

/// Runs `caldera` off the runtime that serves the provider.
async fn run(root: &Path, base: &str, args: &[&str]) -> Ran {
    let (root, base) = (root.to_path_buf(), base.to_owned());
    let args: Vec<String> = args.iter().map(|a| (*a).to_owned()).collect();
    tokio::task::spawn_blocking(move || {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        caldera(&root, &base, &args)
    })
    .await
    .unwrap()
}

fn stderr(o: &Ran) -> &str {
    &o.stderr
}

/// The request bodies `from..` the server saw, sorted: what a phase asked, prompt,
/// model and prompt-cache marks included.
fn prompts_since(server: &MockServer, from: usize) -> Vec<String> {
    let mut p: Vec<String> = server.seen()[from..]
        .iter()
        .map(|s| s.body.to_string())
        .collect();
    p.sort();
    p
}

fn read_json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).expect("written")).expect("JSON")
}

/// Shards 1..N of `suite` (with `flags`), each with the cache folder `cache`; returns
/// the partials.
async fn shards(
    root: &Path,
    base: &str,
    (suite, n, cache): (&str, u32, &str),
    flags: &[&str],
) -> Vec<PathBuf> {
    let mut partials = Vec::new();
    for k in 1..=n {
        let out = root.join(format!("parts-{cache}/{k}.json"));
        let shard = format!("{k}/{n}");
        let mut args = vec![
            "run",
            suite,
            "--shard",
            &shard,
            "--defer-whole",
            "--timeout",
            "5",
            "--cache-dir",
            cache,
            "--out",
            out.to_str().unwrap(),
        ];
        args.extend_from_slice(flags);
        let o = run(root, base, &args).await;
        assert_eq!(o.code, Some(0), "shard {shard}: {}", stderr(&o));
        partials.push(out);
    }
    partials
}

/// `caldera merge` of `partials` with `flags`.
async fn merge(root: &Path, base: &str, partials: &[PathBuf], out: &Path, flags: &[&str]) -> Ran {
    let mut args = vec!["merge", "--timeout", "5", "--out", out.to_str().unwrap()];
    args.extend_from_slice(flags);
    args.extend(partials.iter().map(|p| p.to_str().unwrap()));
    run(root, base, &args).await
}

/// The single LLM run of `suite`, then N = 1, 2, 3 shards merged, each with a fresh
/// cache folder: each merge gives the single run's result and exit status, and the
/// shards' calls with the merge's are the single run's, none twice, none missing; the
/// shards ask only per-repo judges.
async fn assert_llm_merges_equal_single(root: &Path, suite: &str, per_repo: bool) {
    let server = MockServer::start(|_, seen| verdict_for(seen)).await;
    let single = root.join("single.json");
    let whole = run(
        root,
        &server.base,
        &[
            "run",
            suite,
            "--timeout",
            "5",
            "--cache-dir",
            "cache-single",
            "--out",
            single.to_str().unwrap(),
        ],
    )
    .await;
    assert!(
        matches!(whole.code, Some(0 | 1)),
        "{suite}: the single run judges: {}",
        stderr(&whole)
    );
    let single_calls = prompts_since(&server, 0);
    assert!(
        !single_calls.is_empty(),
        "{suite}: the single run asks the model"
    );
    let result = read_json(&single);
    assert_eq!(result["mode"], "llm");
    let scored_by_model = result["dimensions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["status"] == "scored" && d["source"] == "llm")
        .count();
    assert!(
        scored_by_model > 0,
        "{suite}: models scored the run: {result}"
    );
    if per_repo {
        let review = result["dimensions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|d| d["name"] == "repo_review")
            .expect("the per-repo judge ran");
        assert_eq!(review["status"], "scored", "{review}");
    }
    for n in 1..=3u32 {
        let cache = format!("cache-{n}");
        let before = server.seen().len();
        let partials = shards(root, &server.base, (suite, n, &cache), &[]).await;
        let shard_calls = prompts_since(&server, before);
        assert_eq!(
            !shard_calls.is_empty(),
            per_repo,
            "{suite} N={n}: shards ask the model only for per-repo judges"
        );
        assert!(
            shard_calls.iter().all(|p| p.contains("# Repo review")),
            "{suite} N={n}: a shard asks only per-repo judges"
        );
        let merged = root.join(format!("merged-{n}.json"));
        let m = merge(
            root,
            &server.base,
            &partials,
            &merged,
            &["--cache-dir", &cache],
        )
        .await;
        assert_eq!(
            m.code,
            whole.code,
            "{suite} N={n}: the merge exits as the single run: {}",
            stderr(&m)
        );
        let mut together = prompts_since(&server, before);
        together.sort();
        assert_eq!(
            together, single_calls,
            "{suite} N={n}: the shards' and the merge's calls are the single run's"
        );
        assert_same_result(
            &format!("{suite} N={n}"),
            ("single", &single),
            ("merged", &merged),
            &MAY_DIFFER,
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn llm_shards_merged_equal_the_single_llm_run_with_per_repo_judges_trivy() {
    let tmp = tempfile::tempdir().unwrap();
    suite_copy(tmp.path(), "trivy", true);
    assert_llm_merges_equal_single(tmp.path(), "judges.d/trivy", true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn llm_shards_merged_equal_the_single_llm_run_with_per_repo_judges_devskim() {
    let tmp = tempfile::tempdir().unwrap();
    suite_copy(tmp.path(), "devskim", true);
    assert_llm_merges_equal_single(tmp.path(), "judges.d/devskim", true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn llm_shards_merged_equal_the_single_llm_run_with_suite_judges_only() {
    let tmp = tempfile::tempdir().unwrap();
    suite_copy(tmp.path(), "trivy", false);
    assert_llm_merges_equal_single(tmp.path(), "judges.d/trivy", false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shard_run_again_with_the_shared_cache_makes_no_call() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    suite_copy(root, "trivy", true);
    let server = MockServer::start(|_, seen| verdict_for(seen)).await;
    let first = shards(root, &server.base, ("judges.d/trivy", 2, "cache"), &[]).await;
    let asked = server.seen().len();
    assert!(asked > 0, "the shards ask their per-repo calls");
    let again = shards(root, &server.base, ("judges.d/trivy", 2, "cache"), &[]).await;
    assert_eq!(
        server.seen().len(),
        asked,
        "every answer comes from the cache"
    );
    let cached = read_json(&again[0])["body"]["llm"]["outcomes"]
        .as_array()
        .expect("outcomes recorded")
        .iter()
        .all(|o| o["outcome"]["cached"] == true);
    assert!(cached, "the second shard's outcomes say they are cached");
    assert_eq!(first.len(), again.len());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_merge_asking_another_model_than_the_shards_is_refused_naming_it() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    suite_copy(root, "trivy", true);
    let server = MockServer::start(|_, seen| verdict_for(seen)).await;
    let partials = shards(root, &server.base, ("judges.d/trivy", 2, "cache"), &[]).await;
    let asked = server.seen().len();
    let out = root.join("merged.json");
    let m = merge(root, &server.base, &partials, &out, &["--model", "haiku"]).await;
    assert_eq!(m.code, Some(2), "{}", stderr(&m));
    assert!(
        stderr(&m).contains("scored with models sonnet, but this merge asks for models haiku"),
        "{}",
        stderr(&m)
    );
    assert_eq!(server.seen().len(), asked, "a refused merge asks nothing");
    assert!(!out.exists(), "a refused merge writes no result");
    assert!(
        !root.join("merged.interactions.jsonl").exists(),
        "nor an interaction log"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn heuristic_and_llm_shards_of_one_run_are_refused_together_and_apart() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    suite_copy(root, "trivy", true);
    let server = MockServer::start(|_, seen| verdict_for(seen)).await;
    let llm = shards(root, &server.base, ("judges.d/trivy", 2, "a"), &[]).await;
    let heuristic = shards(
        root,
        &server.base,
        ("judges.d/trivy", 2, "b"),
        &["--heuristic"],
    )
    .await;
    let out = root.join("merged.json");
    // One LLM shard and one heuristic shard.
    let mixed = [llm[0].clone(), heuristic[1].clone()];
    let m = merge(root, &server.base, &mixed, &out, &[]).await;
    assert_eq!(m.code, Some(2), "{}", stderr(&m));
    assert!(
        stderr(&m).contains("scored with mode heuristic, the other with mode llm"),
        "{}",
        stderr(&m)
    );
    // Heuristic shards, and a merge that asks for a model.
    let m = merge(root, &server.base, &heuristic, &out, &["--model", "sonnet"]).await;
    assert_eq!(m.code, Some(2), "{}", stderr(&m));
    assert!(
        stderr(&m).contains(
            "the shards were scored by heuristic, but this merge asks for LLM mode (--model)"
        ),
        "{}",
        stderr(&m)
    );
    assert!(!out.exists(), "a refused merge writes no result");
}

#[test]
fn a_partial_of_the_old_format_is_refused_with_a_clear_message() {
    let tmp = tempfile::tempdir().unwrap();
    let old = tmp.path().join("old.json");
    std::fs::write(
        &old,
        format!(
            r#"{{"format":"caldera-partial/1","digest":"{}","body":{{}}}}"#,
            "0".repeat(64)
        ),
    )
    .unwrap();
    let o = caldera(
        tmp.path(),
        "http://127.0.0.1:9",
        &["merge", old.to_str().unwrap()],
    );
    assert_eq!(o.code, Some(2));
    assert!(
        stderr(&o).contains("a partial result of an older format (`caldera-partial/1`"),
        "{}",
        stderr(&o)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batch_in_a_shard_sends_its_per_repo_calls_as_batches() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    suite_copy(root, "trivy", true);
    let api = crate::llm_openai_batch::Loopback::answering().await;
    let openai = |args: Vec<String>| {
        let (root, base) = (root.to_path_buf(), api.base());
        tokio::task::spawn_blocking(move || {
            Caldera::new()
                .args(&args)
                .args(["--provider", "openai", "--model", "gpt-4.1", "--batch"])
                .args(["--timeout", "10", "--cache-dir", "cache"])
                .dir(&root)
                .env("OPENAI_API_KEY", "sk-shard-batch-test-0123456789")
                .env("OPENAI_BASE_URL", base)
                .env("XDG_STATE_HOME", root.join("state"))
                .run()
        })
    };
    let part = root.join("parts/1.json");
    let args = [
        "run",
        "judges.d/trivy",
        "--shard",
        "1/1",
        "--out",
        part.to_str().unwrap(),
    ];
    let shard = openai(args.iter().map(|a| (*a).to_owned()).collect())
        .await
        .unwrap();
    assert_eq!(shard.code, Some(0), "{}", stderr(&shard));
    let created = api.created();
    assert!(!created.is_empty(), "the shard sent a batch");
    assert_eq!(api.direct_calls(), 0, "no direct call");
    let lines: Vec<&Value> = created.iter().flat_map(|(_, l)| l).collect();
    assert!(
        lines
            .iter()
            .all(|l| l.to_string().contains("# Repo review")),
        "the shard's batches hold its per-repo calls only"
    );
    let partial = read_json(&part);
    let batch = &partial["body"]["llm"]["batch"];
    assert_eq!(batch["created"], created.len(), "{batch}");
    assert_eq!(batch["submitted"], lines.len(), "{batch}");
    let merged = root.join("merged.json");
    let args = [
        "merge",
        "--out",
        merged.to_str().unwrap(),
        part.to_str().unwrap(),
    ];
    let m = openai(args.iter().map(|a| (*a).to_owned()).collect())
        .await
        .unwrap();
    assert!(matches!(m.code, Some(0 | 1)), "{}", stderr(&m));
    assert_eq!(api.direct_calls(), 0, "the merge batches too");
    let usage = &read_json(&merged)["usage"];
    assert_eq!(
        usage["batch"]["created"],
        api.created().len(),
        "the merged usage counts the shard's batches and the merge's: {usage}"
    );
}
