//! CLI golden tests: the real binary, real files, snapshots of exit code, stdout and
//! stderr.

use std::process::Command;

use insta_cmd::assert_cmd_snapshot;

use crate::binary::Caldera;

/// The binary as a `Command`, which `assert_cmd_snapshot!` runs and records.
fn caldera() -> Command {
    Caldera::new().command()
}

fn snapshot_settings() -> insta::Settings {
    let mut s = insta::Settings::clone_current();
    s.set_snapshot_path("snapshots/cli");
    s.set_prepend_module_to_snapshot(false);
    s.add_filter(r"\d{8}T\d{6}Z-[0-9a-f]{6}", "[RUN_ID]");
    s.add_filter(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z", "[TIMESTAMP]");
    s.add_filter(r"caldera(\.exe)? \d+\.\d+\.\d+", "caldera [VERSION]");
    s
}

#[test]
fn help() {
    snapshot_settings().bind(|| {
        assert_cmd_snapshot!("help", caldera().arg("--help"));
        assert_cmd_snapshot!("run-help", caldera().args(["run", "--help"]));
        assert_cmd_snapshot!("validate-help", caldera().args(["validate", "--help"]));
        assert_cmd_snapshot!("report-help", caldera().args(["report", "--help"]));
        assert_cmd_snapshot!("diff-help", caldera().args(["diff", "--help"]));
        assert_cmd_snapshot!("init-help", caldera().args(["init", "--help"]));
    });
}

#[test]
fn run_refuses_a_judge_with_a_yaml_syntax_error() {
    snapshot_settings().bind(|| {
        assert_cmd_snapshot!(
            "run-yaml-syntax",
            caldera().args([
                "run",
                "tests/fixtures/diagnostics/yaml-syntax",
                "--heuristic"
            ])
        );
    });
}

#[test]
fn run_refuses_an_unknown_evidence_name() {
    snapshot_settings().bind(|| {
        assert_cmd_snapshot!(
            "run-unknown-name",
            caldera().args([
                "run",
                "tests/fixtures/diagnostics/unknown-name",
                "--heuristic"
            ])
        );
    });
}

#[test]
fn run_refuses_a_jsonpath_that_does_not_parse() {
    snapshot_settings().bind(|| {
        assert_cmd_snapshot!(
            "run-jsonpath-syntax",
            caldera().args([
                "run",
                "tests/fixtures/diagnostics/jsonpath-syntax",
                "--heuristic"
            ])
        );
    });
}

#[test]
fn run_reports_broken_json_input_with_its_location() {
    snapshot_settings().bind(|| {
        assert_cmd_snapshot!(
            "run-json-syntax",
            caldera().args([
                "run",
                "tests/fixtures/diagnostics/json-syntax",
                "--heuristic",
                "--out",
                "target/test-out/json-syntax.json"
            ])
        );
    });
}

#[test]
fn run_reports_missing_folders() {
    snapshot_settings().bind(|| {
        assert_cmd_snapshot!(
            "run-missing-suite",
            caldera().args(["run", "judges.d/trivvy", "--heuristic"])
        );
        assert_cmd_snapshot!(
            "run-missing-results",
            caldera().args([
                "run",
                "judges.d/trivy",
                "--heuristic",
                "--results",
                "no/such/folder"
            ])
        );
    });
}

#[test]
fn validate_reports_five_mistakes_in_one_run() {
    snapshot_settings().bind(|| {
        assert_cmd_snapshot!(
            "validate-five-mistakes",
            caldera().args(["validate", "tests/fixtures/five-mistakes/coverage.yaml"])
        );
    });
    let out = Caldera::new()
        .args([
            "validate",
            "--format",
            "json",
            "tests/fixtures/five-mistakes/coverage.yaml",
        ])
        .run();
    assert_eq!(out.code, Some(2));
    let doc: serde_json::Value = serde_json::from_str(&out.stdout).expect("json");
    let codes: std::collections::BTreeSet<String> = doc["diagnostics"]
        .as_array()
        .expect("list")
        .iter()
        .filter(|d| d["severity"] == "error")
        .map(|d| d["code"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(doc["errors"], 5, "{doc:#}");
    assert_eq!(codes.len(), 5, "five different codes expected: {codes:?}");
}

#[test]
fn usage_errors_exit_2() {
    let out = Caldera::new().args(["run"]).run();
    assert_eq!(out.code, Some(2));
    let out = Caldera::new().args(["frobnicate"]).run();
    assert_eq!(out.code, Some(2));
}

#[test]
fn render_prints_exactly_what_would_be_sent() {
    snapshot_settings().bind(|| {
        assert_cmd_snapshot!(
            "render-sbom",
            caldera().args(["render", "judges.d/trivy", "--judge", "sbom_completeness"])
        );
        assert_cmd_snapshot!(
            "render-unknown-judge",
            caldera().args(["render", "judges.d/trivy", "--judge", "sbom_completenes"])
        );
    });
}
