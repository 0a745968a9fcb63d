//! The README's "write your first judge" walk-through must work as written: its judge
//! is copied into a copy of the trivy suite, validated and run.

use std::path::Path;

use caldera::load::suite::load_suite;
use caldera::run::{RunOptions, run_heuristic};
use caldera::verdict::types::Status;

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

/// The first ```yaml block after the walk-through heading.
fn readme_judge() -> String {
    let readme = std::fs::read_to_string("README.md").unwrap();
    let start = readme
        .find("## Write your first judge")
        .expect("walk-through heading");
    let rest = &readme[start..];
    let open = rest.find("```yaml\n").expect("a yaml block") + "```yaml\n".len();
    let close = rest[open..].find("```").expect("closed block");
    rest[open..open + close].to_owned()
}

#[test]
fn the_readme_judge_validates_and_scores() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    copy_dir(Path::new("judges.d/trivy"), &root.join("judges.d/trivy"));
    copy_dir(Path::new("prompts/trivy"), &root.join("prompts/trivy"));
    copy_dir(
        Path::new("ground-truth/trivy"),
        &root.join("ground-truth/trivy"),
    );
    copy_dir(Path::new("schemas"), &root.join("schemas"));
    // The walk-through's prompt: a small one, written as a user would.
    std::fs::write(
        root.join("prompts/trivy/fix_availability.md"),
        "# Fix availability\n\nJudge how often findings name a fixed version.\n\n<< evidence >>\n\n<< response_format >>\n",
    )
    .unwrap();
    // The suite lists its judges; add the new one.
    let suite_file = root.join("judges.d/trivy/suite.yaml");
    let suite = std::fs::read_to_string(&suite_file).unwrap();
    let suite = suite.replacen("judges:\n", "judges:\n  - fix_availability.yaml\n", 1);
    std::fs::write(&suite_file, suite).unwrap();
    std::fs::write(
        root.join("judges.d/trivy/fix_availability.yaml"),
        readme_judge(),
    )
    .unwrap();

    let env = caldera::render::environment();
    let (suite, diags) = load_suite(&root.join("judges.d/trivy"), &env);
    assert!(
        diags.is_empty(),
        "{}",
        caldera::diag::render_text(&diags, false)
    );
    let suite = suite.unwrap();
    let result = run_heuristic(&env, &suite, &RunOptions::default()).unwrap();
    let d = result
        .dimensions
        .iter()
        .find(|d| d.name == "fix_availability")
        .expect("the new dimension is in the result");
    assert_eq!(d.status, Status::Scored, "{d:#?}");
    assert!(
        d.reasoning.contains("% of findings name a fixed version"),
        "{}",
        d.reasoning
    );
}
