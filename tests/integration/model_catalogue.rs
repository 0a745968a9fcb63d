//! The model catalogue as data: the short aliases name models that are served, a run on
//! a retiring model says so in its result, and a suite's own catalogue file prices and
//! retires models without a rebuild (and is checked at load like any other file).

use std::path::Path;

use serde_json::Value;

use crate::binary::{Caldera, Ran};
use crate::gates::copy_trivy;
use crate::llm_run::VERDICT;
use crate::llm_server::{MockServer, anthropic_text};

/// `caldera run judges.d/trivy` in LLM mode in `root` against `base`, its result in
/// `result.json`.
fn run_llm(root: &Path, base: &str, extra: &[&str]) -> Ran {
    Caldera::new()
        .dir(root)
        .env("ANTHROPIC_API_KEY", "test-key-never-logged")
        .env("ANTHROPIC_BASE_URL", base)
        .args(["run", "judges.d/trivy", "--timeout", "5", "--cache", "off"])
        .out(root.join("result.json"))
        .args(extra)
        .run()
}

fn model_problems(result: &Value) -> Vec<String> {
    result["summary"]["problems"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|p| p["kind"] == "model")
        .filter_map(|p| p["message"].as_str().map(str::to_owned))
        .collect()
}

fn set_suite_key(root: &Path, line: &str) {
    let file = root.join("judges.d/trivy/suite.yaml");
    let text = std::fs::read_to_string(&file).unwrap();
    std::fs::write(
        &file,
        text.replace("model: sonnet\n", &format!("model: sonnet\n{line}\n")),
    )
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_on_a_retiring_model_says_when_it_ends_and_what_to_move_to() {
    let server = MockServer::start(|_, _| anthropic_text(VERDICT, "end_turn")).await;
    let dir = tempfile::tempdir().unwrap();
    copy_trivy(dir.path());
    let (root, base) = (dir.path().to_path_buf(), server.base.clone());
    let Ran {
        code,
        result,
        stderr,
        ..
    } = tokio::task::spawn_blocking(move || {
        run_llm(&root, &base, &["--model", "claude-sonnet-4-5-20250929"])
    })
    .await
    .unwrap();
    assert!(matches!(code, Some(0 | 1)), "{code:?} {stderr}");
    let problems = model_problems(&result);
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(
        problems[0].contains("end of life on 2026-11-30"),
        "{problems:?}"
    );
    assert!(
        problems[0].contains("move to `claude-sonnet-5-5`"),
        "{problems:?}"
    );
    // Every request is one the current Messages API declares: no temperature, the
    // current version header.
    for seen in server.seen() {
        assert!(seen.body.get("temperature").is_none(), "{}", seen.body);
        assert_eq!(seen.header("anthropic-version"), Some("2026-10-21"));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_default_model_is_served_and_raises_no_lifecycle_warning() {
    let server = MockServer::start(|_, _| anthropic_text(VERDICT, "end_turn")).await;
    let dir = tempfile::tempdir().unwrap();
    copy_trivy(dir.path());
    let (root, base) = (dir.path().to_path_buf(), server.base.clone());
    let Ran {
        code,
        result,
        stderr,
        ..
    } = tokio::task::spawn_blocking(move || run_llm(&root, &base, &[]))
        .await
        .unwrap();
    assert!(matches!(code, Some(0 | 1)), "{code:?} {stderr}");
    assert_eq!(model_problems(&result), Vec::<String>::new());
    assert!(
        server
            .seen()
            .iter()
            .all(|s| s.body["model"] == "claude-sonnet-5-5")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_suite_catalogue_prices_aliases_and_retires_its_own_model() {
    let server = MockServer::start(|_, _| anthropic_text(VERDICT, "end_turn")).await;
    let dir = tempfile::tempdir().unwrap();
    copy_trivy(dir.path());
    std::fs::write(
        dir.path().join("judges.d/models.yaml"),
        "models:\n  house-model-1:\n    aliases: [sonnet]\n    input_per_mtok: 1000000\n    \
         output_per_mtok: 0\n    end_of_life: \"2020-01-01\"\n    successor: house-model-2\n",
    )
    .unwrap();
    set_suite_key(dir.path(), "model_catalogue: ../models.yaml");
    let (root, base) = (dir.path().to_path_buf(), server.base.clone());
    let Ran {
        code,
        result,
        stderr,
        ..
    } = tokio::task::spawn_blocking(move || run_llm(&root, &base, &[]))
        .await
        .unwrap();
    assert!(matches!(code, Some(0 | 1)), "{code:?} {stderr}");
    assert!(
        server
            .seen()
            .iter()
            .all(|s| s.body["model"] == "house-model-1")
    );
    // $1 per input token at the suite's price: the cost is the input token count.
    let usage = &result["usage"];
    assert_eq!(
        usage["cost_usd"].as_f64(),
        usage["input_tokens"].as_f64(),
        "{usage}"
    );
    let problems = model_problems(&result);
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(
        problems[0].contains("reached end of life on 2020-01-01")
            && problems[0].contains("`house-model-2`"),
        "{problems:?}"
    );
}

/// `caldera validate` on the copied suite.
fn validate(root: &Path) -> Ran {
    Caldera::new()
        .dir(root)
        .args(["validate", "judges.d/trivy"])
        .run()
}

#[test]
fn a_suite_catalogue_outside_the_project_or_with_a_bad_date_is_refused_at_load() {
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("models.yaml"), "models: {}\n").unwrap();
    let dir = tempfile::tempdir().unwrap();
    copy_trivy(dir.path());
    set_suite_key(
        dir.path(),
        &format!(
            "model_catalogue: {}",
            outside.path().join("models.yaml").display()
        ),
    );
    let ran = validate(dir.path());
    let out = ran.text();
    assert_eq!(ran.code, Some(2), "{out}");
    assert!(
        out.contains("input-outside-project") && out.contains("model_catalogue"),
        "{out}"
    );

    let dir = tempfile::tempdir().unwrap();
    copy_trivy(dir.path());
    std::fs::write(
        dir.path().join("judges.d/trivy/models.yaml"),
        "models:\n  m:\n    end_of_life: \"2026-02-30\"\n    input_per_mtok: 1\n",
    )
    .unwrap();
    set_suite_key(dir.path(), "model_catalogue: models.yaml");
    let ran = validate(dir.path());
    let out = ran.text();
    assert_eq!(ran.code, Some(2), "{out}");
    assert!(out.contains("`2026-02-30` is not a date"), "{out}");
    assert!(out.contains("models.m.end_of_life"), "{out}");
    assert!(out.contains("models.yaml:3"), "{out}");

    std::fs::write(
        dir.path().join("judges.d/trivy/models.yaml"),
        "models:\n  m:\n    input_per_mtk: 1\n",
    )
    .unwrap();
    let ran = validate(dir.path());
    let out = ran.text();
    assert_eq!(ran.code, Some(2), "{out}");
    assert!(
        out.contains("input_per_mtok"),
        "did-you-mean expected: {out}"
    );
}
