//! The scaling recipes of `docs/recipes/` run as written: the shell recipe
//! (`xargs -P` over `caldera run --shard`, then `caldera merge`) is executed by `sh` on
//! the bundled trivy suite with the debug binary on PATH, and its merged result must hold
//! the scores, evidence and decision of a single `caldera run`, with the same exit status.
//! docs/scaling.md must quote the recipe's command as the file has it. (The Kubernetes
//! and GitHub Actions recipes are checked by `scripts/check-recipes.sh`.)

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use insta_cmd::get_cargo_bin;
use serde_json::Value;

const RECIPE: &str = "docs/recipes/xargs.sh";

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap().filter_map(Result::ok) {
        let p = e.path();
        if p.is_dir() {
            copy_dir(&p, &to.join(e.file_name()));
        } else {
            std::fs::copy(&p, to.join(e.file_name())).unwrap();
        }
    }
}

/// A project holding the trivy suite, its prompts and its sample data, so the recipe
/// writes its shards, its merge and any cache inside a temporary folder.
fn trivy_project() -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    for dir in ["judges.d/trivy", "prompts/trivy", "ground-truth/trivy"] {
        copy_dir(Path::new(dir), &tmp.path().join(dir));
    }
    tmp
}

/// PATH with the debug binary's folder first, as after `cargo install`.
fn path_with_caldera() -> String {
    let bin: PathBuf = get_cargo_bin("caldera");
    let dir = bin.parent().expect("the binary's folder").to_owned();
    let rest = std::env::var_os("PATH").unwrap_or_default();
    std::env::join_paths(std::iter::once(dir).chain(std::env::split_paths(&rest)))
        .unwrap()
        .into_string()
        .unwrap()
}

/// The recipe's command lines: the file without its comments.
fn recipe_commands() -> String {
    std::fs::read_to_string(RECIPE)
        .unwrap()
        .lines()
        .filter(|l| !l.trim_start().starts_with('#') && !l.trim().is_empty())
        .collect::<Vec<_>>()
        .join("\n")
}

fn described(out: &Output) -> String {
    format!(
        "exit {:?}\n--- stdout\n{}\n--- stderr\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// What a merge must reproduce of a single run: every dimension without its timings,
/// the scores, the decision, the gate and the suite evidence.
fn judged(result: &Value) -> Value {
    let mut dims = result["dimensions"].clone();
    for d in dims.as_array_mut().into_iter().flatten() {
        if let Some(d) = d.as_object_mut() {
            d.remove("duration_ms");
        }
    }
    serde_json::json!({
        "dimensions": dims,
        "total_score": result["total_score"],
        "overall_score": result["overall_score"],
        "average_confidence": result["average_confidence"],
        "decision": result["decision"],
        "gate": result["gate"],
        "suite_evidence": result["suite_evidence"],
    })
}

fn read_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap()
}

#[test]
fn the_xargs_recipe_merges_to_the_single_run_of_the_trivy_suite() {
    let project = trivy_project();
    let root = project.path();
    let path = path_with_caldera();

    let recipe = Command::new("sh")
        .args(["-c", &recipe_commands()])
        .current_dir(root)
        .env("PATH", &path)
        .env("SUITE", "judges.d/trivy")
        .env("N", "3")
        .env("RUN_FLAGS", "--heuristic")
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    let single = Command::new("caldera")
        .args([
            "run",
            "judges.d/trivy",
            "--heuristic",
            "--out",
            "single.json",
        ])
        .current_dir(root)
        .env("PATH", &path)
        .env("NO_COLOR", "1")
        .output()
        .unwrap();

    // Three partial results, one per shard, then the merge.
    for k in 1..=3 {
        let part = read_json(&root.join(format!("parts/{k}.json")));
        assert_eq!(
            part["format"],
            "caldera-partial/2",
            "{}",
            described(&recipe)
        );
    }
    assert_eq!(
        recipe.status.code(),
        single.status.code(),
        "the merge exits as the single run does\nrecipe: {}\nsingle: {}",
        described(&recipe),
        described(&single)
    );
    let merged = read_json(&root.join("merged.json"));
    let single = read_json(&root.join("single.json"));
    assert_eq!(
        judged(&merged),
        judged(&single),
        "the merged result judges as the single run"
    );
}

#[test]
fn the_scaling_page_quotes_the_xargs_recipe_as_the_file_has_it() {
    let page = std::fs::read_to_string("docs/scaling.md").unwrap();
    let command = recipe_commands();
    let line = command
        .lines()
        .find(|l| l.contains("xargs -P"))
        .expect("the recipe's xargs line");
    assert!(
        page.contains(line),
        "docs/scaling.md does not quote the recipe line of {RECIPE}:\n{line}"
    );
}
