//! `caldera calibrate` on the illustrative trivy labels, checked against values computed
//! by hand; JSONL labels give the same calibration; bad labels are located; a run result's
//! per-repo verdicts are a source too.

use std::path::Path;

use crate::binary::{Caldera, Ran};
use serde_json::{Value, json};

const LABELS: &str = "ground-truth/trivy/labels/illustrative.csv";

fn caldera(root: &Path, args: &[&str]) -> Ran {
    Caldera::new().dir(root).args(args).run()
}

fn here() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn calibration(labels: &str) -> Value {
    let out = caldera(
        here(),
        &[
            "calibrate",
            "judges.d/trivy",
            "--labels",
            labels,
            "--format",
            "json",
        ],
    );
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    serde_json::from_str(&out.stdout).expect("json")
}

fn close(v: &Value, expected: f64) {
    let got = v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"));
    assert!((got - expected).abs() < 1e-9, "{got} != {expected}");
}

/// The sample's vulnerability_accuracy, by hand. Nine repos, three raters:
///
/// | repo              | ana | ben | chen | consensus | heuristic |
/// |-------------------|-----|-----|------|-----------|-----------|
/// | clean-service     |  5  |  5  |  4   |     5     |     5     |
/// | critical-cves     |  4  |  3  |  4   |     4     |     4     |
/// | dev-deps-fp       |  2  |  3  |  3   |     3     |     2     |
/// | iac-platform      |  5  |  4  |  5   |     5     |     5     |
/// | mixed-severity    |  3  |  4  |  4   |     4     |     3     |
/// | outdated-polyglot |  3  |  3  |  2   |     3     |     3     |
/// | sbom-monorepo     |  5  |  5  |  5   |     5     |     5     |
/// | ghsa-aliases      |  4  |  5  |  4   |     4     |     5     |
/// | clean-flask-api   |  2  |  1  |  2   |     2     |     2     |
///
/// Quadratic kappa = 1 - n * sum((h - j)^2) / sum_ij (i - j)^2 * rows_i * cols_j.
/// Heuristic vs consensus: three differences of 1, so 9 * 3 = 27 over the expected
/// 203 (consensus marginals 2:1 3:2 4:3 5:3, heuristic 2:2 3:2 4:1 5:4): 176/203.
/// Against ana 1 - 9/231 = 74/77, ben 1 - 45/249 = 68/83, chen 1 - 45/213 = 56/71.
/// Raters: ana-ben 1 - 54/234 = 10/13, ana-chen 1 - 36/198 = 9/11, ben-chen
/// 1 - 54/216 = 3/4; exact 3/9, 5/9, 3/9.
/// Bias (heuristic - consensus): 0 0 -1 0 -1 0 0 +1 0, mean -1/9, sample variance
/// (3 - 9/81) / 8 = 13/36, sd sqrt(13)/6, 95% half-width t(8) = 2.3060 times sd/3.
/// Pass (>= 3): people 8 of 9, heuristic 7 of 9; sensitivity 7/8, specificity 1/1;
/// over all ten scanned repos the heuristic passes 7 (legacy-admin-portal, dev-deps-fp
/// and clean-flask-api score 2), so the corrected rate is (0.7 + 1 - 1) / (7/8 + 1 - 1)
/// = 0.8.
#[test]
fn the_sample_labels_give_the_values_computed_by_hand() {
    let c = calibration(LABELS);
    assert_eq!(c["rows"], 55);
    assert_eq!(c["kappa_target"], 0.7);
    let d = &c["dimensions"][0];
    assert_eq!(d["dimension"], "vulnerability_accuracy");
    assert_eq!(d["raters"], json!(["ana", "ben", "chen"]));
    let h = &d["sources"][0];
    assert_eq!(h["source"], "heuristic");
    // The premise: what the heuristic concludes about each repo judged alone.
    assert_eq!(
        h["scores"],
        json!({"clean-service": 5, "critical-cves": 4, "dev-deps-fp": 2, "iac-platform": 5,
               "mixed-severity": 3, "outdated-polyglot": 3, "sbom-monorepo": 5,
               "ghsa-aliases": 5, "clean-flask-api": 2})
    );
    assert_eq!(
        d["consensus"],
        json!({"clean-service": 5, "critical-cves": 4, "dev-deps-fp": 3, "iac-platform": 5,
               "mixed-severity": 4, "outdated-polyglot": 3, "sbom-monorepo": 5,
               "ghsa-aliases": 4, "clean-flask-api": 2})
    );
    close(&h["consensus"]["weighted_kappa"], 176.0 / 203.0);
    close(&h["consensus"]["exact"], 6.0 / 9.0);
    assert_eq!(h["consensus"]["n"], 9);
    close(&h["raters"]["ana"]["weighted_kappa"], 74.0 / 77.0);
    close(&h["raters"]["ana"]["exact"], 8.0 / 9.0);
    close(&h["raters"]["ben"]["weighted_kappa"], 68.0 / 83.0);
    close(&h["raters"]["chen"]["weighted_kappa"], 56.0 / 71.0);
    let ceiling = &d["ceiling"];
    close(
        &ceiling["pairs"]["ana_vs_ben"]["weighted_kappa"],
        10.0 / 13.0,
    );
    close(
        &ceiling["pairs"]["ana_vs_chen"]["weighted_kappa"],
        9.0 / 11.0,
    );
    close(
        &ceiling["pairs"]["ben_vs_chen"]["weighted_kappa"],
        3.0 / 4.0,
    );
    close(
        &ceiling["mean_weighted_kappa"],
        (10.0 / 13.0 + 9.0 / 11.0 + 0.75) / 3.0,
    );
    close(&ceiling["mean_exact"], 11.0 / 27.0);
    // Rows: consensus 1..5; columns: heuristic 1..5.
    assert_eq!(
        h["confusion"]["counts"],
        json!([
            [0, 0, 0, 0, 0],
            [0, 1, 0, 0, 0],
            [0, 1, 1, 0, 0],
            [0, 0, 1, 1, 1],
            [0, 0, 0, 0, 3]
        ])
    );
    let sd = 13f64.sqrt() / 6.0;
    close(&h["bias"]["mean"], -1.0 / 9.0);
    close(&h["bias"]["sd"], sd);
    close(&h["bias"]["ci95"][0], -1.0 / 9.0 - 2.3060 * sd / 3.0);
    close(&h["bias"]["ci95"][1], -1.0 / 9.0 + 2.3060 * sd / 3.0);
    let p = &h["pass_rate"];
    close(&p["human"], 8.0 / 9.0);
    close(&p["judge"], 7.0 / 9.0);
    close(&p["sensitivity"], 7.0 / 8.0);
    close(&p["specificity"], 1.0);
    assert_eq!(p["n_all"], 10);
    close(&p["judge_all"], 0.7);
    close(&p["corrected"], 0.8);
    assert_eq!(h["below_target"], false);
    // Severity accuracy is below the target, and says how far the raters agree.
    let warnings = c["warnings"].to_string();
    assert!(
        warnings.contains("heuristic on severity_accuracy: weighted kappa 0.550"),
        "{warnings}"
    );
    assert!(
        warnings.contains("the raters agree with each other at 0.534"),
        "{warnings}"
    );

    // The table and Markdown show the same figures.
    for (format, marker) in [
        ("table", "== vulnerability_accuracy"),
        ("markdown", "## vulnerability\\_accuracy"),
    ] {
        let out = caldera(
            here(),
            &[
                "calibrate",
                "judges.d/trivy",
                "--labels",
                LABELS,
                "--format",
                format,
            ],
        );
        let text = out.stdout;
        assert!(text.contains(marker), "{text}");
        assert!(
            text.contains("0.867") && text.contains("-0.11 [-0.57, +0.35]"),
            "{text}"
        );
        assert!(
            text.contains("89% / 78%") && text.contains("70% of 10") && text.contains("80%"),
            "{text}"
        );
        assert!(text.contains("heuristic (!)"), "{text}");
    }
    let out = caldera(
        here(),
        &[
            "calibrate",
            "judges.d/trivy",
            "--labels",
            LABELS,
            "--format",
            "html",
        ],
    );
    let page = out.stdout;
    assert!(
        page.starts_with("<!DOCTYPE html>") && page.ends_with("</html>\n"),
        "{page}"
    );
    assert!(
        page.contains("<h2>vulnerability_accuracy</h2>") && page.contains("0.867"),
        "{page}"
    );
    assert_eq!(
        page.matches("<caption>Confusion").count(),
        3,
        "one matrix per dimension and source"
    );
    assert!(
        page.contains("<td class=\"below\">heuristic</td>"),
        "{page}"
    );
}

#[test]
fn jsonl_labels_give_the_same_calibration() {
    let tmp = tempfile::tempdir().unwrap();
    let csv = std::fs::read_to_string(here().join(LABELS)).unwrap();
    let mut jsonl = String::new();
    for line in csv.lines().filter(|l| !l.starts_with('#')).skip(1) {
        let f: Vec<&str> = line.splitn(5, ',').collect();
        let row = json!({"repo": f[0], "dimension": f[1], "score": f[2].parse::<i64>().unwrap(), "rater": f[3]});
        jsonl.push_str(&format!("{row}\n"));
    }
    let path = tmp.path().join("labels.jsonl");
    std::fs::write(&path, jsonl).unwrap();
    let mut a = calibration(LABELS);
    let mut b = calibration(path.to_str().unwrap());
    a["labels"] = Value::Null;
    b["labels"] = Value::Null;
    assert_eq!(a, b);
}

#[test]
fn bad_labels_are_located_and_nothing_is_calibrated() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("labels.csv");
    std::fs::write(
        &path,
        "unit,dimension,score,rater\ncritical-cves,vulnerability_acuracy,4,ana\ncritical-cves,iac_quality,high,ana\n",
    )
    .unwrap();
    let out = caldera(
        here(),
        &[
            "calibrate",
            "judges.d/trivy",
            "--labels",
            path.to_str().unwrap(),
        ],
    );
    assert_eq!(out.code, Some(2));
    assert!(out.stdout.is_empty());
    let err = out.stderr;
    assert!(err.contains("labels.csv:3:27"), "{err}");
    assert!(
        err.contains("expected an integer from 1 to 5, found `high`"),
        "{err}"
    );
    assert!(
        err.contains("the suite has no dimension `vulnerability_acuracy`"),
        "{err}"
    );
    assert!(
        err.contains("did you mean `vulnerability_accuracy`?"),
        "{err}"
    );
}

const SUITE: &str = "suite: per-repo\ninputs:\n  results: ../../ground-truth/trivy/outputs\n  ground_truth: ../../ground-truth/trivy/expected\n";

const JUDGE: &str = "dimension: known_cves
weight: 1.0
scope: repo
evidence:
  expected: << truth.expected.known_cves if truth is mapping and truth.expected.known_cves is defined else [] >>
  found: << match(result.vulnerabilities | map(attribute='id') | list, expected) >>
  rate: << pct(found.tp, found.expected, zero=none) >>
heuristic:
  metric: rate
  when_no_data: { if: << expected | length == 0 >>, score: 3, reasoning: nothing expected }
  bands:
    - { min: 100, score: 5 }
    - { min: 50, score: 3 }
    - { score: 1 }
  reasoning: << found.tp >> of << found.expected >>
";

#[test]
fn a_run_results_per_repo_verdicts_are_a_source() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    crate::gates::copy_dir(
        &here().join("ground-truth/trivy"),
        &root.join("ground-truth/trivy"),
    );
    let suite = root.join("judges.d/per-repo");
    std::fs::create_dir_all(&suite).unwrap();
    std::fs::write(suite.join("suite.yaml"), SUITE).unwrap();
    std::fs::write(suite.join("known.yaml"), JUDGE).unwrap();
    std::fs::write(
        root.join("labels.csv"),
        "repo,dimension,score,rater\ncritical-cves,known_cves,3,ana\nmixed-severity,known_cves,5,ana\nghsa-aliases,known_cves,5,ana\n",
    )
    .unwrap();
    let run = caldera(
        root,
        &[
            "run",
            "judges.d/per-repo",
            "--heuristic",
            "--out",
            "run.json",
        ],
    );
    // Repo scores by hand (known CVEs found in the sample outputs): 5 for dev-deps-fp,
    // mixed-severity and sbom-monorepo, 3 for the other seven; mean 36 / 10 = 3.6, PASS
    // in the default decision table (3.5 <= x < 4.0): exit 0.
    assert_eq!(run.code, Some(0), "{run:?}");
    // The calibration of the per-repo judge with `result` as a second source.
    let calibrate_with = |result: &str| -> Value {
        let out = caldera(
            root,
            &[
                "calibrate",
                "judges.d/per-repo",
                "--labels",
                "labels.csv",
                "--result",
                result,
                "--format",
                "json",
            ],
        );
        assert_eq!(out.code, Some(0), "{}", out.stderr);
        serde_json::from_str(&out.stdout).unwrap()
    };
    let c = calibrate_with("run.json");
    let sources = c["dimensions"][0]["sources"].as_array().unwrap();
    let names: Vec<&str> = sources
        .iter()
        .map(|s| s["source"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["heuristic", "run: heuristic"]);
    // Judged alone or together, a per-repo judge gives each repo the same score.
    assert_eq!(sources[0]["scores"], sources[1]["scores"]);
    // critical-cves finds 4 of 5 (score 3); exact matching finds 2 of 3 GHSA-aliased CVEs.
    assert_eq!(sources[0]["scores"]["critical-cves"], 3);
    // A result kept compressed is read as `report` reads it, named without `.json.gz`.
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    std::io::Write::write_all(&mut enc, &std::fs::read(root.join("run.json")).unwrap()).unwrap();
    std::fs::write(root.join("kept.json.gz"), enc.finish().unwrap()).unwrap();
    let c = calibrate_with("kept.json.gz");
    let kept = &c["dimensions"][0]["sources"][1];
    assert_eq!(kept["source"], "kept: heuristic");
    assert_eq!(kept["scores"], sources[1]["scores"]);
    // A result without per-repo verdicts cannot be a source.
    let out = caldera(
        root,
        &[
            "calibrate",
            "judges.d/per-repo",
            "--labels",
            "labels.csv",
            "--result",
            "labels.csv",
        ],
    );
    assert_eq!(out.code, Some(2));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn models_judge_each_repo_alone_through_the_cache() {
    use crate::llm_server::{MockServer, anthropic_text};
    // Every model gives 4, except 2 to anything about the critical-cves scan.
    let server = MockServer::start(|_, seen| {
        let prompt = crate::llm_server::content_text(&seen.body["messages"][0]["content"]);
        let score = if prompt.contains("critical-cves") { 2 } else { 4 };
        anthropic_text(
            &format!(r#"{{"score": {score}, "confidence": 0.8, "reasoning": "r", "evidence_cited": [], "recommendations": [], "sub_scores": {{}}}}"#),
            "end_turn",
        )
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache").to_str().unwrap().to_owned();
    let base = server.base.clone();
    let ask = move |flag: &'static str| {
        let out = Caldera::new()
            .dir(here())
            .env("ANTHROPIC_API_KEY", "test-key")
            .env("ANTHROPIC_BASE_URL", &base)
            .args([
                "calibrate",
                "judges.d/trivy",
                "--labels",
                LABELS,
                flag,
                "sonnet",
            ])
            .args(["--cache-dir", &cache, "--format", "json", "--no-heuristic"])
            .run();
        assert_eq!(out.code, Some(0), "{}", out.stderr);
        serde_json::from_str::<Value>(&out.stdout).unwrap()
    };
    let (run, again, single) = (ask.clone(), ask.clone(), ask);
    let run = move || run("--models");
    let again = move || again("--models");
    let c = tokio::task::spawn_blocking(run).await.unwrap();
    // Ten repos, seven judges, one model: each repo judged alone.
    assert_eq!(server.hits(), 70);
    let d = &c["dimensions"][0];
    let sources: Vec<&str> = d["sources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["source"].as_str().unwrap())
        .collect();
    assert_eq!(sources, ["sonnet"]);
    let scores = &d["sources"][0]["scores"];
    assert_eq!(scores["critical-cves"], 2);
    assert_eq!(scores["sbom-monorepo"], 4);
    let second = tokio::task::spawn_blocking(again).await.unwrap();
    assert_eq!(
        server.hits(),
        70,
        "a second calibration is answered by the cache"
    );
    assert_eq!(second["dimensions"], c["dimensions"]);
    // `--model sonnet` (the model group `run` has too) is the same one-model choice.
    let third = tokio::task::spawn_blocking(move || single("--model"))
        .await
        .unwrap();
    assert_eq!(server.hits(), 70, "answered by the same cache entries");
    assert_eq!(third["dimensions"], c["dimensions"]);
}
