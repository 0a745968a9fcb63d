//! `caldera init TOOL`: a starter suite that validates and runs at once: `suite.yaml`, one
//! judge with a heuristic and an assertion, its prompt, and a sample result and ground
//! truth to run it on. Nothing existing is overwritten.

use std::path::{Path, PathBuf};

use clap::Args;

use crate::cli::{Exit, output};

/// Arguments of `caldera init`.
#[derive(Debug, Args)]
pub(crate) struct InitArgs {
    /// The tool the suite judges (lowercase letters, digits, `-` and `_`), e.g. `semgrep`.
    #[arg(value_name = "TOOL")]
    pub tool: String,
    /// The project folder that holds judges.d/, prompts/ and ground-truth/.
    #[arg(long, default_value = ".", value_name = "DIR")]
    pub dir: PathBuf,
}

/// Runs the command.
pub(crate) fn execute(args: &InitArgs) -> Exit {
    let tool = args.tool.as_str();
    let valid = !tool.is_empty()
        && tool
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_')
        && tool.starts_with(|c: char| c.is_ascii_lowercase());
    if !valid {
        eprintln!(
            "error: `{tool}` is not a suite name: use lowercase letters, digits, `-` and `_`, starting with a letter"
        );
        return Exit::Error;
    }
    let files = starter(tool);
    // Anything at the path counts, a dangling link included: it would be followed.
    let existing: Vec<PathBuf> = files
        .iter()
        .map(|(p, _)| args.dir.join(p))
        .filter(|p| std::fs::symlink_metadata(p).is_ok())
        .collect();
    if !existing.is_empty() {
        eprintln!(
            "error: nothing was written; these files exist already: {}",
            existing
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        );
        return Exit::Error;
    }
    for (path, text) in &files {
        if let Err(e) = write_new(&args.dir.join(path), text) {
            eprintln!("error: cannot write {}: {e}", args.dir.join(path).display());
            return Exit::Error;
        }
    }
    // The starter files' modelines name `schemas/` at the project root: write the
    // schemas there unless the project has its own, so an editor validates at once.
    let mut files = files;
    for (which, name) in [
        (crate::cli::schema::Which::Suite, "suite"),
        (crate::cli::schema::Which::Judge, "judge"),
    ] {
        let path = PathBuf::from(format!("schemas/{name}.schema.json"));
        if std::fs::symlink_metadata(args.dir.join(&path)).is_ok() {
            continue;
        }
        let text = crate::cli::schema::schema_text(which);
        if let Err(e) = write_new(&args.dir.join(&path), &text) {
            eprintln!(
                "error: cannot write {}: {e}",
                args.dir.join(&path).display()
            );
            return Exit::Error;
        }
        files.push((path, text));
    }
    if !output::quiet() {
        let suite = args.dir.join("judges.d").join(tool);
        output::print(&format!(
            "wrote a starter suite for `{tool}`:\n{}\nnext:\n  caldera validate {s}\n  caldera run {s} --heuristic\n\
             then replace the sample files under ground-truth/{tool}/ with real outputs and ground truth.\n",
            files
                .iter()
                .map(|(p, _)| format!("  {}", args.dir.join(p).display()))
                .collect::<Vec<_>>()
                .join("\n"),
            s = suite.display()
        ));
    }
    Exit::Pass
}

/// Creates `path` new (`create_new`: never through a link, never over a file that
/// appeared since the check), with the mode of any new file under the umask.
fn write_new(path: &Path, text: &str) -> std::io::Result<()> {
    use std::io::Write as _;
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)?
        .write_all(text.as_bytes())
}

/// The starter files, relative to the project folder.
fn starter(tool: &str) -> Vec<(PathBuf, String)> {
    let fill = |text: &str| text.replace("{tool}", tool);
    vec![
        (
            PathBuf::from(format!("judges.d/{tool}/suite.yaml")),
            fill(SUITE),
        ),
        (
            PathBuf::from(format!("judges.d/{tool}/finding_accuracy.yaml")),
            fill(JUDGE),
        ),
        (
            PathBuf::from(format!("prompts/{tool}/finding_accuracy.md")),
            fill(PROMPT),
        ),
        (
            PathBuf::from(format!("ground-truth/{tool}/outputs/sample-repo.json")),
            fill(RESULT),
        ),
        (
            PathBuf::from(format!("ground-truth/{tool}/expected/sample-repo.json")),
            fill(TRUTH),
        ),
    ]
}

const SUITE: &str = r#"# yaml-language-server: $schema=../../schemas/suite.schema.json
suite: {tool}
description: Quality of {tool} findings against ground truth (a starter suite from `caldera init`).
inputs:
  # One JSON file per repo in each folder, joined by `id` (else the file name).
  results: ../../ground-truth/{tool}/outputs
  ground_truth: ../../ground-truth/{tool}/expected
  key: [id]
judges:
  - finding_accuracy.yaml
decision:
  - { min: 4.0, label: STRONG_PASS }
  - { min: 3.5, label: PASS }
  - { min: 3.0, label: WEAK_PASS }
  - { label: FAIL }
"#;

const JUDGE: &str = r#"# yaml-language-server: $schema=../../schemas/judge.schema.json
dimension: finding_accuracy
weight: 1.0
description: Share of the expected findings that {tool} reported (recall), with the extras it reported beside them.

evidence:
  # Every reported finding id and every expected one, over all repos with ground truth.
  reported: $.repos[?@.truth != null].result.findings[*].id
  expected: $.repos[?@.truth != null].truth.expected.findings[*]
  matched: << match(reported, expected) >>
  recall_pct: << pct(matched.tp, matched.expected) >>

heuristic:
  metric: recall_pct
  bands:                                  # first match wins
    - { min: 90, score: 5 }
    - { min: 75, score: 4 }
    - { min: 50, score: 3 }
    - { min: 25, score: 2 }
    - { score: 1 }
  when_no_data: { if: << expected | length == 0 >>, score: 3, reasoning: The ground truth expects no finding. }
  reasoning: << recall_pct >>% of expected findings were reported (<< matched.tp >>/<< matched.expected >>), with << matched.fp >> extra.
  recommendations:
    - if: << matched.fn > 0 >>
      text: "Missed: << matched.missed | join(', ') >>."

assertions:
  - that: << expected | length > 0 >>
    message: No repo has ground truth to compare with
    cap: 2

prompt: ../../prompts/{tool}/finding_accuracy.md
"#;

const PROMPT: &str = r#"# {tool}: finding accuracy

You review the output of {tool}, a code-analysis tool, against ground truth. Judge how
many of the expected findings it reported, and whether its extra findings look real.

<< evidence >>

<< response_format >>
"#;

const RESULT: &str = r#"{
  "id": "sample-repo",
  "tool": "{tool}",
  "findings": [
    { "id": "F-1", "file": "src/app.py", "line": 12, "severity": "high" },
    { "id": "F-2", "file": "src/db.py", "line": 40, "severity": "medium" },
    { "id": "F-9", "file": "src/util.py", "line": 3, "severity": "low" }
  ]
}
"#;

const TRUTH: &str = r#"{
  "id": "sample-repo",
  "description": "Three known findings; the tool should report F-1, F-2 and F-3.",
  "expected": { "findings": ["F-1", "F-2", "F-3"] }
}
"#;
