//! A panel run of the trivy suite against the shared mock LLM server with model
//! disagreement (`--model-agreement 0.7`): the run reports pairwise and mean kappa, the
//! agreement rate and consensus scores. The test recomputes each pair's Cohen's kappa, the
//! mean, the capped median scores, the weighted score, the decision and the exit status
//! from the per-model ratings in the result. Skipped, with a notice, where the shared bench or
//! python3 is absent; the project's own LLM tests use a server of their own.

use std::process::{Command, Stdio};
use std::time::Duration;

use crate::binary::Caldera;

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
    // No deadline: the mock ends itself after `--max-lifetime-s`, and a mock that exits
    // before writing its port fails the test here.
    while std::fs::read_to_string(&port_file)
        .unwrap_or_default()
        .trim()
        .is_empty()
    {
        if let Some(status) = server.try_wait().expect("mock status") {
            panic!("the mock exited before it wrote its port: {status:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let port = std::fs::read_to_string(&port_file)
        .unwrap()
        .trim()
        .to_owned();
    let ran = Caldera::new()
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
        .out(dir.path().join("panel.json"))
        .run();
    let _ = server.kill();
    let _ = server.wait();
    let result = &ran.result;
    assert!(!result.is_null(), "no result written: {}", ran.stderr);
    let panel = &result["panel"];
    let models = ["sonnet", "opus", "haiku"];
    assert_eq!(panel["items"], 7);
    let pairs = panel["agreement"]["pairwise_kappa"]
        .as_object()
        .expect("pairs");
    assert_eq!(pairs.len(), 3, "three model pairs");
    assert!(panel["linear"]["pairs"].is_object() && panel["quadratic"]["pairs"].is_object());

    // Each model's rating of each judge (one item per judge, in suite order), read from
    // the per-dimension ratings; everything below is recomputed from these.
    let dims = result["dimensions"].as_array().unwrap();
    assert_eq!(dims.len(), 7);
    let ratings: Vec<Vec<i64>> = models
        .iter()
        .map(|m| {
            dims.iter()
                .map(|d| {
                    assert_eq!(d["model_verdicts"].as_array().map(Vec::len), Some(3));
                    d["panel"]["ratings"][m][0].as_i64().expect("a rating")
                })
                .collect()
        })
        .collect();

    // Cohen's kappa of each pair, (p_o - p_e) / (1 - p_e), with p_e from the two
    // raters' marginal proportions; undefined (None) when p_e is 1. The mean is over the
    // defined pairs.
    let kappa = |a: &[i64], b: &[i64]| -> Option<f64> {
        let n = a.len() as f64;
        let p_o = a.iter().zip(b).filter(|(x, y)| x == y).count() as f64 / n;
        let p_e: f64 = (1..=5)
            .map(|c| {
                let pa = a.iter().filter(|&&x| x == c).count() as f64 / n;
                let pb = b.iter().filter(|&&x| x == c).count() as f64 / n;
                pa * pb
            })
            .sum();
        ((1.0 - p_e).abs() > 1e-12).then(|| (p_o - p_e) / (1.0 - p_e))
    };
    let mut defined = Vec::new();
    for (i, j) in [(0, 1), (0, 2), (1, 2)] {
        let k = kappa(&ratings[i], &ratings[j]);
        let name = format!("{}_vs_{}", models[i], models[j]);
        let reported = pairs[&name]["kappa"].as_f64();
        match (k, reported) {
            (Some(k), Some(r)) => assert!((k - r).abs() < 1e-9, "{name}: {k} vs {r}"),
            (None, None) => {}
            other => panic!("{name}: computed and reported kappa differ: {other:?}"),
        }
        defined.extend(k);
    }
    let mean = panel["agreement"]["mean_kappa"].as_f64();
    if defined.is_empty() {
        assert_eq!(mean, None);
    } else {
        let expected = defined.iter().sum::<f64>() / defined.len() as f64;
        let mean = mean.expect("a mean kappa");
        assert!(
            (mean - expected).abs() < 1e-9,
            "mean kappa {mean} vs {expected}"
        );
    }
    // The unanimity rate: items where the three ratings agree.
    let unanimous = (0..7)
        .filter(|&i| ratings[0][i] == ratings[1][i] && ratings[1][i] == ratings[2][i])
        .count();
    let rate = panel["agreement"]["agreement"]["rate"].as_f64().unwrap();
    assert!((rate - unanimous as f64 / 7.0).abs() < 1e-12);

    // Each judge's score: the median of the three ratings, capped by the assertions that
    // fail on the sample ground truth. By hand from ground-truth/trivy and the cap in
    // judges.d/trivy/false_positive_rate.yaml: false_positive_rate fails two assertions
    // with cap 2 (clean-flask-api has 2 findings; 6 of 67 findings are false positives,
    // 9.0% > 5%), every other judge none.
    // Weights from the suite: 0.35, 0.20, 0.15, 0.25, 0.15, 0.15, 0.25 (sum 1.5).
    let weights = [0.35, 0.20, 0.15, 0.25, 0.15, 0.15, 0.25];
    let mut weighted = 0.0;
    for (i, d) in dims.iter().enumerate() {
        let mut three = [ratings[0][i], ratings[1][i], ratings[2][i]];
        three.sort_unstable();
        let median = three[1];
        let cap = if d["name"] == "false_positive_rate" {
            2
        } else {
            5
        };
        let score = median.min(cap);
        assert_eq!(d["score"].as_i64(), Some(score), "{}", d["name"]);
        if median > cap {
            assert_eq!(
                d["score_before_cap"].as_i64(),
                Some(median),
                "{}",
                d["name"]
            );
        } else {
            assert!(d["score_before_cap"].is_null(), "{}", d["name"]);
        }
        weighted += weights[i] * score as f64;
    }
    let weighted = weighted / 1.5;
    let total = result["total_score"].as_f64().unwrap();
    assert!((total - weighted).abs() < 1e-9, "{total} vs {weighted}");
    // The suite's decision table: 4.0 STRONG_PASS, 3.5 PASS, 3.0 WEAK_PASS, else FAIL;
    // only FAIL exits 1.
    let decision = match weighted {
        w if w >= 4.0 => "STRONG_PASS",
        w if w >= 3.5 => "PASS",
        w if w >= 3.0 => "WEAK_PASS",
        _ => "FAIL",
    };
    assert_eq!(result["decision"], decision);
    assert_eq!(ran.code, Some(i32::from(decision == "FAIL")), "{ran:?}");
}
