//! Reports: Markdown, JUnit and HTML of a real trivy run (snapshots), JUnit read by the
//! parser a CI action uses, `caldera diff` on two runs with one sample scan changed, the
//! regression gate, per-repo deltas within noise, and refusals of results that cannot be
//! compared.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::binary::{Caldera, Ran};

pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Runs a bundled suite heuristically into `out`; `results` overrides its results folder.
pub fn run_suite(suite: &str, out: &Path, results: Option<&Path>) -> Ran {
    let cmd = Caldera::new()
        .args(["run", suite, "--heuristic", "--quiet", "--out"])
        .arg(out);
    match results {
        Some(r) => cmd.arg("--results").arg(r),
        None => cmd,
    }
    .run()
}

/// The trivy sample outputs with `critical-cves` reporting only its first finding.
pub fn trivy_with_one_scan_changed(dir: &Path) -> PathBuf {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("ground-truth/trivy/outputs");
    let dst = dir.join("outputs-changed");
    std::fs::create_dir_all(&dst).unwrap();
    for entry in std::fs::read_dir(&src).unwrap() {
        let path = entry.unwrap().path();
        std::fs::copy(&path, dst.join(path.file_name().unwrap())).unwrap();
    }
    let scan = dst.join("critical-cves.json");
    let mut doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&scan).unwrap()).unwrap();
    let vulns = doc["vulnerabilities"].as_array_mut().unwrap();
    assert!(vulns.len() > 1);
    vulns.truncate(1);
    std::fs::write(&scan, serde_json::to_string_pretty(&doc).unwrap()).unwrap();
    dst
}

pub fn settings() -> insta::Settings {
    let mut s = insta::Settings::clone_current();
    s.set_snapshot_path("snapshots/reports");
    s.set_prepend_module_to_snapshot(false);
    s.add_filter(r"\d{8}T\d{6}Z-[0-9a-f]{6}", "[RUN_ID]");
    s.add_filter(
        r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})",
        "[TIMESTAMP]",
    );
    s.add_filter(r"caldera \d+\.\d+\.\d+", "caldera [VERSION]");
    s
}

/// The text a reader sees in an HTML page: tags dropped, the stylesheet and the folded
/// evidence JSON left out, one line per block.
pub fn html_text(html: &str) -> String {
    let no_style = regex::Regex::new(r"(?s)<style>.*?</style>").unwrap();
    let no_pre = regex::Regex::new(r"(?s)<pre>.*?</pre>").unwrap();
    let blocks = regex::Regex::new(r"(?i)</?(p|li|tr|h[1-6]|div|section|article|header|footer|summary|dt|dd|ul|table|svg|title|text)\b[^>]*>").unwrap();
    let tags = regex::Regex::new(r"<[^>]+>").unwrap();
    let t = no_style.replace_all(html, "");
    let t = no_pre.replace_all(&t, "[evidence JSON]");
    let t = blocks.replace_all(&t, "\n");
    let t = tags.replace_all(&t, " ");
    t.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&amp;", "&")
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn markdown_junit_and_html_of_a_trivy_run() {
    let dir = tempfile::tempdir().unwrap();
    let result = dir.path().join("trivy.json");
    assert_eq!(run_suite("judges.d/trivy", &result, None).code, Some(0));
    let out_dir = dir.path().join("reports");
    let out = Caldera::new()
        .arg("report")
        .arg(&result)
        .args(["--format", "md,junit,html,table,json", "--out-dir"])
        .arg(&out_dir)
        .run();
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let read = |ext: &str| std::fs::read_to_string(out_dir.join(format!("trivy.{ext}"))).unwrap();
    let md = read("md");
    assert!(
        md.len() < 4000,
        "a pull-request comment stays short: {} bytes",
        md.len()
    );
    let html = read("html");
    assert!(!read("txt").contains('\x1b'), "files carry no colour codes");
    let json: serde_json::Value = serde_json::from_str(&read("json")).unwrap();
    assert_eq!(json["result_format"], 1);
    settings().bind(|| {
        insta::assert_snapshot!("trivy-md", md);
        insta::assert_snapshot!("trivy-junit", read("junit.xml"));
        insta::assert_snapshot!("trivy-html-text", html_text(&html));
    });
    // Self-contained: nothing is fetched from anywhere.
    let external = regex::Regex::new(r#"(?i)(src|href)\s*=\s*"(https?:|//)"#).unwrap();
    assert!(!external.is_match(&html));
    assert!(!html.contains("<script"), "readable without JavaScript");
}

/// JUnit as CI systems read it: quick-junit's reader here, and junitparser (the parser of
/// the publish-unit-test-result GitHub action) where Python has it; CI must have it.
#[test]
fn junit_reads_as_ci_systems_read_it() {
    let dir = tempfile::tempdir().unwrap();
    let result = dir.path().join("trivy.json");
    assert_eq!(run_suite("judges.d/trivy", &result, None).code, Some(0));
    let xml_path = dir.path().join("trivy.xml");
    let out = Caldera::new()
        .arg("report")
        .arg(&result)
        .args(["--format", "junit", "--out"])
        .arg(&xml_path)
        .run();
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let xml = std::fs::read_to_string(&xml_path).unwrap();
    let parsed = quick_junit::Report::deserialize_from_str(&xml).expect("well-formed JUnit");
    assert_eq!(parsed.test_suites.len(), 1);
    let suite = &parsed.test_suites[0];
    assert_eq!(suite.test_cases.len(), 7);
    let failed: Vec<&str> = suite
        .test_cases
        .iter()
        .filter(|c| !matches!(c.status, quick_junit::TestCaseStatus::Success { .. }))
        .map(|c| c.name.as_str())
        .collect();
    assert_eq!(failed, ["false_positive_rate", "freshness_quality"]);

    let script = r#"
import sys
from junitparser import JUnitXml, Failure, Error
xml = JUnitXml.fromfile(sys.argv[1])
cases = [c for s in xml for c in s]
bad = [c.name for c in cases if any(isinstance(r, (Failure, Error)) for r in c.result)]
print(len(cases), ",".join(bad), [r.message for c in cases for r in c.result][0])
"#;
    let has_parser = Command::new("python3")
        .args(["-c", "import junitparser"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !has_parser {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI must have junitparser (`python3 -m pip install junitparser`, as .ci/run does)"
        );
        crate::notice("junitparser is not installed: JUnit checked with quick-junit only");
        return;
    }
    let out = Command::new("python3")
        .args(["-c", script])
        .arg(&xml_path)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let line = text(&out.stdout);
    assert!(
        line.starts_with("7 false_positive_rate,freshness_quality "),
        "{line}"
    );
    assert!(line.contains("below the threshold"), "{line}");
}

#[test]
fn diff_of_two_trivy_runs_with_one_scan_changed() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().join("base.json");
    let new = dir.path().join("new.json");
    assert_eq!(run_suite("judges.d/trivy", &base, None).code, Some(0));
    let changed = trivy_with_one_scan_changed(dir.path());
    run_suite("judges.d/trivy", &new, Some(&changed));

    let out = Caldera::new()
        .arg("diff")
        .args([&base, &new])
        .args(["--fail-on", "regression"])
        .run();
    let stdout = &out.stdout;
    assert_eq!(out.code, Some(1), "{stdout}{}", out.stderr);
    for line in [
        "vulnerability_accuracy",
        "$.evidence.cve_detection_rate: 90.0 -> 75.0",
        "$.evidence.ground_truth_comparison[?@.repo=='critical-cves'].found: 9 -> 1",
    ] {
        assert!(stdout.contains(line), "{line} missing from\n{stdout}");
    }
    let stderr = &out.stderr;
    assert!(stderr.starts_with("regression against "), "{stderr}");
    assert!(
        stderr.contains("vulnerability_accuracy 4 -> 3 (-1)"),
        "{stderr}"
    );

    // The JSON comparison names the same.
    let out = Caldera::new()
        .arg("diff")
        .args([&base, &new])
        .args(["--format", "json"])
        .run();
    assert_eq!(out.code, Some(0), "without --fail-on the diff only reports");
    let c: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    let regressed: Vec<&str> = c["dimensions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["change"] == "regressed")
        .map(|d| d["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        regressed,
        [
            "vulnerability_accuracy",
            "false_positive_rate",
            "vulnerability_detection"
        ]
    );
    assert!(c["dimensions"][0]["evidence"]["total"].as_u64().unwrap() > 0);

    // A tolerance of one point lets the one-point drops through; a run against itself
    // has no regression.
    let out = Caldera::new()
        .arg("diff")
        .args([&base, &new])
        .args(["--fail-on", "regression", "--tolerance", "1"])
        .run();
    assert_eq!(out.code, Some(0), "{}", out.stdout);
    let out = Caldera::new()
        .arg("diff")
        .args([&base, &base])
        .args(["--fail-on", "regression"])
        .run();
    assert_eq!(out.code, Some(0));
    assert!(out.stdout.contains("no regression (tolerance 0)"));

    // `run --baseline` gates the same way, and Markdown carries the deltas.
    let out = Caldera::new()
        .args([
            "run",
            "judges.d/trivy",
            "--heuristic",
            "--format",
            "md",
            "--results",
        ])
        .arg(&changed)
        .arg("--out")
        .arg(dir.path().join("again.json"))
        .arg("--baseline")
        .arg(&base)
        .args(["--fail-on", "regression"])
        .run();
    assert_eq!(out.code, Some(1), "{}", out.stderr);
    let md = &out.stdout;
    assert!(
        md.contains("| vulnerability\\_accuracy | 4 | 3 | -1 |"),
        "{md}"
    );
    settings().bind(|| insta::assert_snapshot!("trivy-diff-md", md));
}

#[test]
fn results_that_cannot_be_compared_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let trivy = dir.path().join("trivy.json");
    let iac = dir.path().join("iac.json");
    run_suite("judges.d/trivy", &trivy, None);
    run_suite("judges.d/adversarial-iac", &iac, None);
    let out = Caldera::new().arg("diff").args([&trivy, &iac]).run();
    assert_eq!(out.code, Some(2));
    assert!(
        out.stderr
            .contains("different suites: `trivy` (base) and `adversarial-iac` (new)"),
        "{}",
        out.stderr
    );

    let mut doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&trivy).unwrap()).unwrap();
    doc["result_format"] = 99.into();
    let future = dir.path().join("future.json");
    std::fs::write(&future, doc.to_string()).unwrap();
    let out = Caldera::new().arg("diff").args([&trivy, &future]).run();
    assert_eq!(out.code, Some(2));
    assert!(
        out.stderr
            .contains("result format 99 is not one this caldera reads")
    );

    let foreign = dir.path().join("foreign.json");
    std::fs::write(
        &foreign,
        "{\"suite\": \"trivy\",\n \"dimensions\": 3, \"decision\": \"PASS\"}",
    )
    .unwrap();
    let out = Caldera::new().arg("report").arg(&foreign).run();
    assert_eq!(out.code, Some(2));
    let err = &out.stderr;
    assert!(
        err.contains("not a caldera result: `dimensions`: invalid type"),
        "{err}"
    );

    let broken = dir.path().join("broken.json");
    std::fs::write(&broken, "{\n  \"suite\": \"trivy\",\n  oops\n}").unwrap();
    let out = Caldera::new().arg("report").arg(&broken).run();
    assert_eq!(out.code, Some(2));
    assert!(out.stderr.contains(":3:"), "located: {}", out.stderr);
}

/// Two results of a `scope: repo` judge: repo deltas that go both ways are noise (the
/// bootstrap interval holds zero), a drop on every repo is a regression.
#[test]
fn per_repo_deltas_within_noise_are_not_regressions() {
    use caldera::Report;
    use caldera::{Change, compare};
    let result = |scores: &[i64]| {
        let repos: Vec<serde_json::Value> = scores
            .iter()
            .enumerate()
            .map(|(i, s)| serde_json::json!({"repo": format!("r{i}"), "status": "scored", "score": s, "evidence": {"n": s}}))
            .collect();
        let mean = scores.iter().sum::<i64>() as f64 / scores.len() as f64;
        Report::from_value(serde_json::json!({
            "suite": "s", "decision": "PASS", "total_score": mean,
            "dimensions": [{"name": "per_repo", "status": "scored", "score": mean, "repos": repos}]
        }))
        .unwrap()
    };
    let base = result(&[4, 4, 4, 4, 4, 4]);
    let noisy = compare(&base, &result(&[5, 3, 4, 3, 5, 3]), 0.0).unwrap();
    let d = &noisy.dimensions[0];
    assert_eq!(d.change, Change::WithinNoise);
    let ci = d.repos.as_ref().unwrap().ci.as_ref().unwrap();
    assert!(ci.low < 0.0 && ci.high > 0.0, "{ci:?}");
    assert_eq!(ci.seed, caldera::score::bootstrap::DEFAULT_SEED);
    assert!(noisy.regressions.is_empty());
    assert_eq!(
        compare(&base, &result(&[5, 3, 4, 3, 5, 3]), 0.0)
            .unwrap()
            .dimensions[0]
            .repos
            .as_ref()
            .unwrap()
            .ci,
        d.repos.as_ref().unwrap().ci,
        "seeded: the same interval every time"
    );
    let worse = compare(&base, &result(&[3, 3, 2, 3, 3, 3]), 0.0).unwrap();
    assert_eq!(worse.dimensions[0].change, Change::Regressed);
    assert_eq!(worse.regressions.len(), 1);
    assert!(
        worse.dimensions[0].evidence.changes[0]
            .path
            .starts_with("$.repos['r"),
        "{:?}",
        worse.dimensions[0].evidence
    );
}

/// The report view reads what a fresh result says, field for field, so a report never
/// shows a value the result does not hold (a guard against the two drifting apart).
#[test]
fn the_report_view_reads_what_the_result_says() {
    use caldera::Report;
    let env = caldera::environment();
    let (suite, _) = caldera::load_suite(Path::new("judges.d/trivy"), &env);
    let result =
        caldera::run_heuristic(&env, &suite.unwrap(), &caldera::RunOptions::default()).unwrap();
    let report = Report::of(&result).expect("reads");
    let doc = serde_json::to_value(&result).unwrap();
    assert_eq!(report.decision, doc["decision"]);
    assert_eq!(report.total_score, doc["total_score"].as_f64());
    assert_eq!(
        report.summary.problems.len(),
        doc["summary"]["problems"].as_array().unwrap().len()
    );
    for (d, v) in report
        .dimensions
        .iter()
        .zip(doc["dimensions"].as_array().unwrap())
    {
        assert_eq!(d.name, v["name"]);
        assert_eq!(d.status.as_str(), v["status"]);
        assert_eq!(d.score, v["score"].as_f64());
        assert_eq!(d.confidence, v["confidence"].as_f64());
        assert_eq!(d.passed, v["passed"].as_bool());
        assert_eq!(d.weight, v["weight"].as_f64().unwrap());
        assert_eq!(
            d.assertion_failures.len(),
            v["assertion_failures"].as_array().unwrap().len()
        );
        assert_eq!(
            d.recommendations.len(),
            v["recommendations"].as_array().unwrap().len()
        );
        assert_eq!(d.evidence, v["evidence"]);
    }
    assert_eq!(report.dimensions.len(), 7);
}
