//! `inputs.allow_empty`: a suite may judge an empty results folder (zero repos) instead
//! of refusing the run, and then every bundled judge scores it or says clearly why not;
//! without the key the refusal stays. Judges see the folder as `suite.results_dir`,
//! relative to the project.

use std::path::Path;

use crate::binary::{Caldera, Ran};

use crate::language::copy_dir;

/// A project in `root` holding the bundled suite `tool` (its judges, prompts and sample
/// data), with `allow_empty: true` added to its inputs when `allow` is set, and an empty
/// folder `empty/`.
fn project(root: &Path, tool: &str, allow: bool) {
    for part in ["judges.d", "prompts", "ground-truth"] {
        let from = Path::new(env!("CARGO_MANIFEST_DIR")).join(part).join(tool);
        if from.is_dir() {
            copy_dir(&from, &root.join(part).join(tool));
        }
    }
    std::fs::create_dir_all(root.join("empty")).expect("mkdir");
    let suite = root.join("judges.d").join(tool).join("suite.yaml");
    let text = std::fs::read_to_string(&suite).expect("suite.yaml");
    if allow && !text.contains("allow_empty") {
        let text = text.replacen("\ninputs:\n", "\ninputs:\n  allow_empty: true\n", 1);
        assert!(text.contains("allow_empty"), "{tool}: no `inputs:` block");
        std::fs::write(&suite, text).expect("write suite.yaml");
    }
}

/// Runs the suite `tool` of `root` in heuristic mode on `empty/`, its result read from
/// `<tool>.json`.
fn run_on_empty(root: &Path, tool: &str) -> Ran {
    Caldera::new()
        .dir(root)
        .args([
            "run",
            &format!("judges.d/{tool}"),
            "--heuristic",
            "--results",
            "empty",
        ])
        .out(root.join(format!("{tool}.json")))
        .run()
}

/// Every bundled suite allowed an empty folder runs on it: a pass or a fail, never an
/// input error or a panic, every judge with a status and a reasoning, no number that is
/// not one, and no judge of a tool's output scoring above 3 on no output (the scc judges
/// of the tool's documentation and CLI read named inputs, not the results).
#[test]
fn every_bundled_suite_allowed_an_empty_folder_scores_zero_repos_clearly() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let mut tools: Vec<String> = std::fs::read_dir("judges.d")
        .expect("judges.d")
        .filter_map(Result::ok)
        .filter(|e| e.path().join("suite.yaml").is_file())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    tools.sort();
    assert!(tools.len() >= 15, "{tools:?}");
    let about_output = |tool: &str, dimension: &str| {
        tool != "scc"
            || [
                "code_quality",
                "integration_fit",
                "directory_analysis",
                "statistics",
            ]
            .contains(&dimension)
    };
    for tool in &tools {
        let root = tmp.path().join(tool);
        project(&root, tool, true);
        let Ran {
            code,
            stderr,
            result,
            ..
        } = run_on_empty(&root, tool);
        assert!(
            matches!(code, Some(0 | 1)),
            "{tool}: exit {code:?}: {stderr}"
        );
        let dims = result["dimensions"].as_array().expect("dimensions");
        assert!(!dims.is_empty(), "{tool}");
        for d in dims {
            let name = d["name"].as_str().unwrap_or_default();
            let reasoning = d["reasoning"].as_str().unwrap_or_default();
            assert!(!reasoning.trim().is_empty(), "{tool}/{name}: no reasoning");
            for bad in ["NaN", "inf%", "undefined", "0/0 "] {
                assert!(!reasoning.contains(bad), "{tool}/{name}: {reasoning}");
            }
            if about_output(tool, name) {
                let score = d["score"].as_f64().unwrap_or(0.0);
                assert!(
                    score <= 3.0,
                    "{tool}/{name} scores {score} on no output: {reasoning}"
                );
            }
        }
    }
}

/// Without `allow_empty` an empty folder is still refused (exit 2), saying how to allow it.
#[test]
fn an_empty_folder_is_refused_without_allow_empty_and_the_error_says_how() {
    let tmp = tempfile::tempdir().expect("tempdir");
    project(tmp.path(), "trivy", false);
    let Ran { code, stderr, .. } = run_on_empty(tmp.path(), "trivy");
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("nothing to judge"), "{stderr}");
    assert!(stderr.contains("inputs.allow_empty: true"), "{stderr}");
}

/// The git-sizer suite allows an empty folder and names it, relative to the project
/// (never a path of the machine), as the framework's "No analysis results found" did.
#[test]
fn git_sizer_names_the_empty_folder_relative_to_the_project() {
    let tmp = tempfile::tempdir().expect("tempdir");
    project(tmp.path(), "git-sizer", false);
    let Ran {
        code,
        stderr,
        result,
        ..
    } = run_on_empty(tmp.path(), "git-sizer");
    assert_eq!(code, Some(1), "{stderr}");
    let fit = result["dimensions"]
        .as_array()
        .and_then(|d| d.iter().find(|d| d["name"] == "integration_fit"))
        .expect("integration_fit");
    assert_eq!(
        fit["reasoning"],
        "The results describe no repository (no analysis results found in empty), so there is nothing to load."
    );
    let text = result.to_string();
    let tmp_path = tmp.path().to_string_lossy();
    assert!(
        !text.contains(tmp_path.as_ref()),
        "an absolute path in the result"
    );
}
