//! A panel member that gives no verdict is never hidden by the consensus: the run
//! summary names the model and the unit, coverage counts the missing verdict, and the
//! table does not read as complete.

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
    let (code, stdout, result) = tokio::task::spawn_blocking(move || {
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
    let (code, stdout, result) = tokio::task::spawn_blocking(move || {
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
