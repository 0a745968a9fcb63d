//! A panel member that gives no verdict is never hidden by the consensus: the run
//! summary names the model and the unit, coverage counts the missing verdict, and the
//! table does not read as complete.

use crate::binary::{Caldera, Ran};
use crate::llm_run::{VERDICT, prompt_of, run};
use crate::llm_server::{MockServer, anthropic_text, error};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_member_without_a_verdict_is_a_problem_naming_model_and_unit() {
    // m3 is rate-limited on the freshness judge with a wait beyond the retry budget, so
    // it gives up at once; every other call is answered.
    let server = MockServer::start(|_, seen| {
        if seen.body["model"] == "m3" && prompt_of(seen).contains("freshness") {
            error(429, vec![("retry-after", "3600".into())])
        } else {
            anthropic_text(VERDICT, "end_turn")
        }
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    let (base, d) = (server.base.clone(), dir.path().to_path_buf());
    let Ran {
        code,
        stdout,
        result,
        ..
    } = tokio::task::spawn_blocking(move || {
        run(&base, &d, &["--models", "m1,m2,m3", "--cache", "off"])
    })
    .await
    .unwrap();
    // 20 of 21 verdicts is above the default 90% coverage: the run stands, but says so.
    assert_eq!(code, Some(0), "{stdout}");
    let problems: Vec<&serde_json::Value> = result["summary"]["problems"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["kind"] == "panel")
        .collect();
    assert_eq!(problems.len(), 1, "{:#}", result["summary"]);
    assert_eq!(problems[0]["dimension"], "freshness_quality");
    let message = problems[0]["message"].as_str().unwrap();
    assert!(
        message.starts_with("model m3 gave no verdict: HTTP 429"),
        "{message}"
    );
    assert_eq!(
        (
            result["gate"]["units"].as_u64(),
            result["gate"]["scored_units"].as_u64()
        ),
        (Some(21), Some(20))
    );
    assert_eq!(result["panel"]["missing_ratings"], 1);
    let fresh = result["dimensions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["name"] == "freshness_quality")
        .unwrap();
    assert!(fresh["panel"]["ratings"]["m3"][0].is_null());
    assert_eq!(fresh["model_verdicts"].as_array().unwrap().len(), 2);
    assert_eq!(result["usage"]["verdicts"], 20);
    assert_eq!(result["usage"]["calls"], 21);
    // The table says what is missing.
    assert!(stdout.contains("20 of 21 verdicts"), "{stdout}");
    assert!(stdout.contains("20 of 21 units scored"), "{stdout}");
    assert!(
        stdout.contains("[panel] freshness_quality: model m3 gave no verdict"),
        "{stdout}"
    );
}

/// Missing members count against coverage: a member that answers nothing takes a
/// three-model panel to two thirds, below the minimum, and the run fails.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_member_fails_the_run_on_coverage() {
    let server = MockServer::start(|_, seen| {
        if seen.body["model"] == "m3" {
            error(400, vec![])
        } else {
            anthropic_text(VERDICT, "end_turn")
        }
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    let (base, d) = (server.base.clone(), dir.path().to_path_buf());
    let Ran {
        code,
        stdout,
        result,
        ..
    } = tokio::task::spawn_blocking(move || {
        run(&base, &d, &["--models", "m1,m2,m3", "--cache", "off"])
    })
    .await
    .unwrap();
    assert_eq!(code, Some(1), "{stdout}");
    assert_eq!(result["decision"], "FAIL");
    assert_eq!(result["gate"]["scored_units"], 14);
    let panel = result["summary"]["problems"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["kind"] == "panel")
        .count();
    assert_eq!(panel, 7, "one per judge");
}

/// Past eight models the pairwise tables are summarised (the same mean, the least and
/// most agreeing pairs, each model's mean); `--panel-matrices` writes them in full.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_large_panel_is_summarised_unless_matrices_are_asked_for() {
    // Eleven models score by the prompt's length; m11 contradicts them.
    let server = MockServer::start(|_, seen| {
        let prompt = prompt_of(seen);
        let base = 1 + (prompt.len() % 5) as i64;
        let score = if seen.body["model"] == "m11" {
            6 - base
        } else {
            base
        };
        let verdict = format!(r#"{{"score": {score}, "confidence": 0.8, "reasoning": "r"}}"#);
        anthropic_text(&verdict, "end_turn")
    })
    .await;
    let models: Vec<String> = (0..12).map(|i| format!("m{i:02}")).collect();
    let models = models.join(",");
    let dir = tempfile::tempdir().unwrap();
    let (base, d, m) = (
        server.base.clone(),
        dir.path().to_path_buf(),
        models.clone(),
    );
    let Ran {
        stdout,
        result: summary,
        ..
    } = tokio::task::spawn_blocking(move || run(&base, &d, &["--models", &m]))
        .await
        .unwrap();
    let panel = &summary["panel"];
    assert_eq!(panel["pairs"], "summary");
    assert!(
        panel["agreement"]["pairwise_kappa"]
            .as_object()
            .unwrap()
            .is_empty()
    );
    assert!(panel["linear"].is_null());
    let digest = &panel["pairwise"]["unweighted"];
    assert_eq!(digest["n_pairs"], 66);
    let lowest = digest["lowest"].as_array().unwrap();
    assert!(
        lowest
            .iter()
            .all(|p| p["pair"].as_str().unwrap().ends_with("_vs_m11")),
        "{lowest:#?}"
    );
    assert_eq!(digest["by_model"].as_object().unwrap().len(), 12);
    for d in summary["dimensions"].as_array().unwrap() {
        let pairs = &d["panel"]["agreement"]["pairwise_kappa"];
        assert!(pairs.as_object().unwrap().is_empty(), "{}", d["name"]);
    }
    assert!(stdout.contains("66 pairs, summarised"), "{stdout}");
    assert!(stdout.contains("_vs_m11"), "{stdout}");

    // The same run with --panel-matrices (answered from the cache): every pair.
    let (base, d) = (server.base.clone(), dir.path().to_path_buf());
    let Ran { result: full, .. } = tokio::task::spawn_blocking(move || {
        run(&base, &d, &["--models", &models, "--panel-matrices"])
    })
    .await
    .unwrap();
    let panel = &full["panel"];
    assert_eq!(panel["pairs"], "full");
    assert_eq!(
        panel["agreement"]["pairwise_kappa"]
            .as_object()
            .unwrap()
            .len(),
        66
    );
    assert_eq!(panel["quadratic"]["pairs"].as_object().unwrap().len(), 66);
    assert_eq!(
        panel["agreement"]["mean_kappa"], summary["panel"]["agreement"]["mean_kappa"],
        "the summary keeps the full table's mean"
    );
    assert_eq!(full["usage"]["cached"], 84);
}

/// The panel report states the consensus the scores used: under `consensus: majority`,
/// three different scores have no majority, so each unit is unscored and the panel's
/// per-unit consensus is empty too (a median of 4 there would contradict the score).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_majority_panel_reports_the_consensus_its_scores_used() {
    let server = MockServer::start(|_, seen| {
        let score = match seen.body["model"].as_str() {
            Some("m1") => 2,
            Some("m2") => 4,
            _ => 5,
        };
        let verdict = format!(r#"{{"score": {score}, "confidence": 0.8, "reasoning": "r"}}"#);
        anthropic_text(&verdict, "end_turn")
    })
    .await;
    let root = tempfile::tempdir().unwrap();
    crate::gates::copy_trivy(root.path());
    let suite = root.path().join("judges.d/trivy/suite.yaml");
    let text = std::fs::read_to_string(&suite).unwrap();
    std::fs::write(&suite, format!("{text}\nconsensus: majority\n")).unwrap();
    let result = Caldera::new()
        .dir(root.path())
        .env("ANTHROPIC_API_KEY", "test-key-never-logged")
        .env("ANTHROPIC_BASE_URL", &server.base)
        .args(["run", "judges.d/trivy", "--timeout", "5", "--cache", "off"])
        .args(["--models", "m1,m2,m3"])
        .out(root.path().join("result.json"))
        .run_async()
        .await
        .result;
    let dims = result["dimensions"].as_array().unwrap();
    assert_eq!(dims.len(), 7);
    for d in dims {
        assert_eq!(d["status"], "unscored", "{}", d["name"]);
        let agreement = &d["panel"]["agreement"];
        assert_eq!(agreement["consensus_rule"], "majority", "{}", d["name"]);
        let consensus = agreement["consensus"].as_array().unwrap();
        assert!(!consensus.is_empty());
        assert!(
            consensus.iter().all(serde_json::Value::is_null),
            "{}: {consensus:?}",
            d["name"]
        );
    }
}
