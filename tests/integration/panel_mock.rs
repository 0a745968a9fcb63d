//! A panel run of the trivy suite against the shared mock LLM server with model
//! disagreement (`--model-agreement 0.7`): the run reports pairwise and mean kappa, the
//! agreement rate and consensus scores. Skipped, with a notice, where the shared bench or
//! python3 is absent; the project's own LLM tests use a server of their own.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use insta_cmd::get_cargo_bin;

fn mock() -> Option<std::path::PathBuf> {
    let path = crate::shared::shared_path("bench/mock_llm.py", "the panel test")?;
    let python = Command::new("python3").arg("--version").output().is_ok();
    assert!(
        python || std::env::var_os("CI").is_none(),
        "CI is set but python3 is missing: the panel test cannot run"
    );
    if !python {
        crate::shared::skipped("python3 not found; the panel test skipped");
    }
    python.then_some(path)
}

#[test]
fn a_panel_reports_agreement_and_consensus() {
    let Some(mock) = mock() else { return };
    let dir = tempfile::tempdir().unwrap();
    let port_file = dir.path().join("port");
    let mut server = Command::new("python3")
        .arg(&mock)
        .args([
            "--port",
            "0",
            "--latency-ms",
            "5",
            "--model-agreement",
            "0.7",
        ])
        .arg("--port-file")
        .arg(&port_file)
        .args(["--max-lifetime-s", "120"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("mock starts");
    let started = Instant::now();
    while !port_file.is_file()
        || std::fs::read_to_string(&port_file)
            .unwrap_or_default()
            .trim()
            .is_empty()
    {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "mock did not start"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let port = std::fs::read_to_string(&port_file)
        .unwrap()
        .trim()
        .to_owned();
    let out = dir.path().join("panel.json");
    let status = Command::new(get_cargo_bin("caldera"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("NO_COLOR", "1")
        .env("ANTHROPIC_API_KEY", "test")
        .env("ANTHROPIC_BASE_URL", format!("http://127.0.0.1:{port}"))
        .args([
            "run",
            "judges.d/trivy",
            "--models",
            "sonnet,opus,haiku",
            "--cache",
            "off",
        ])
        .arg("--out")
        .arg(&out)
        .stdout(Stdio::null())
        .status()
        .expect("runs");
    let _ = server.kill();
    let _ = server.wait();
    assert!(
        status.code().is_some_and(|c| c == 0 || c == 1),
        "{status:?}"
    );
    let result: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    let panel = &result["panel"];
    assert_eq!(panel["items"], 7);
    let pairs = panel["agreement"]["pairwise_kappa"]
        .as_object()
        .expect("pairs");
    assert_eq!(pairs.len(), 3, "three model pairs");
    assert!(panel["agreement"]["agreement"]["rate"].is_number());
    assert!(panel["linear"]["pairs"].is_object() && panel["quadratic"]["pairs"].is_object());
    let mean = &panel["agreement"]["mean_kappa"];
    assert!(mean.is_number() || mean.is_null());
    for d in result["dimensions"].as_array().unwrap() {
        assert_eq!(
            d["model_verdicts"].as_array().map(Vec::len),
            Some(3),
            "{}",
            d["name"]
        );
        let ratings = d["panel"]["ratings"].as_object().unwrap();
        let mut scores: Vec<i64> = ratings.values().filter_map(|r| r[0].as_i64()).collect();
        scores.sort_unstable();
        // The consensus is the median of the three scores, before any assertion cap.
        let before = d["score_before_cap"]
            .as_f64()
            .or(d["score"].as_f64())
            .unwrap();
        assert_eq!(before as i64, scores[1], "{}", d["name"]);
    }
}
