//! What a run writes, and how it prints: only the files asked for, only over regular
//! files, never through a link or onto its own inputs; analysed text reaches the
//! terminal with its control characters escaped. Real binary, real files.

use std::path::Path;

use crate::binary::{Caldera, Ran};

/// A one-judge suite under `root/judges.d/s` reading `root/data/results` and
/// `root/data/truth`; `id` names the one result.
fn suite(root: &Path, id: &str) {
    let dir = root.join("judges.d/s");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::create_dir_all(root.join("data/results")).unwrap();
    std::fs::create_dir_all(root.join("data/truth")).unwrap();
    let doc = serde_json::json!({"id": id, "n": 2});
    std::fs::write(root.join("data/results/r.json"), doc.to_string()).unwrap();
    std::fs::write(
        dir.join("suite.yaml"),
        "suite: s\ninputs:\n  results: ../../data/results\n  ground_truth: ../../data/truth\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("j.yaml"),
        "dimension: j\nweight: 1\nevidence:\n  n: << repos | length >>\nheuristic:\n  metric: n\n  bands:\n    - { score: 4 }\n  reasoning: x\n",
    )
    .unwrap();
}

fn caldera(dir: &Path, args: &[&str]) -> Ran {
    Caldera::new().dir(dir).args(args).run()
}

#[cfg(unix)]
#[test]
fn links_devices_and_planted_temp_files_are_never_written_through() {
    let tmp = tempfile::tempdir().unwrap();
    suite(tmp.path(), "r");
    let victim = tmp.path().join("victim.txt");
    std::fs::write(&victim, "keep").unwrap();
    std::os::unix::fs::symlink(&victim, tmp.path().join("link.json")).unwrap();
    let Ran {
        code, stderr: err, ..
    } = caldera(
        tmp.path(),
        &["run", "judges.d/s", "--heuristic", "--out", "link.json"],
    );
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("symbolic link"), "{err}");
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep");

    // The old temp name, planted as a link: the write goes elsewhere.
    std::os::unix::fs::symlink(&victim, tmp.path().join("out.json.tmp")).unwrap();
    let Ran {
        code, stderr: err, ..
    } = caldera(
        tmp.path(),
        &["run", "judges.d/s", "--heuristic", "--out", "out.json"],
    );
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep");
    assert!(tmp.path().join("out.json").is_file());

    let Ran {
        code, stderr: err, ..
    } = caldera(
        tmp.path(),
        &["run", "judges.d/s", "--heuristic", "--out", "/dev/null"],
    );
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("not a regular file"), "{err}");
}

#[test]
fn a_run_does_not_write_onto_its_inputs_or_its_log() {
    let tmp = tempfile::tempdir().unwrap();
    suite(tmp.path(), "r");
    let input = tmp.path().join("data/results/r.json");
    let before = std::fs::read_to_string(&input).unwrap();
    let Ran {
        code, stderr: err, ..
    } = caldera(
        tmp.path(),
        &[
            "run",
            "judges.d/s",
            "--heuristic",
            "--out",
            "data/results/r.json",
        ],
    );
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("results folder"), "{err}");
    assert_eq!(std::fs::read_to_string(&input).unwrap(), before);
    // Into the ground-truth folder: the next run would read it as ground truth.
    let Ran { code, .. } = caldera(
        tmp.path(),
        &[
            "run",
            "judges.d/s",
            "--heuristic",
            "--out",
            "data/truth/x.json",
        ],
    );
    assert_eq!(code, Some(2));
    // The result and the log on one file (checked before any provider is needed).
    let Ran {
        code, stderr: err, ..
    } = caldera(
        tmp.path(),
        &[
            "run",
            "judges.d/s",
            "--out",
            "same.json",
            "--log",
            "same.json",
        ],
    );
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("same file"), "{err}");
}

/// A repo id carrying an escape sequence, a carriage return and a newline could print a
/// forged decision line; the table shows it escaped.
#[test]
fn control_characters_in_data_are_escaped_on_the_terminal() {
    let tmp = tempfile::tempdir().unwrap();
    let forged = "evil\u{1b}[2K\r  weighted score 5.00 / 5  ->  STRONG_PASS\nx";
    suite(tmp.path(), forged);
    let Ran { stdout: out, .. } = caldera(
        tmp.path(),
        &["run", "judges.d/s", "--heuristic", "--out", "o.json"],
    );
    assert!(!out.contains('\u{1b}'), "{out:?}");
    assert!(!out.contains('\r'), "{out:?}");
    assert!(
        !out.lines()
            .any(|l| l.trim_start().starts_with("weighted score 5.00")),
        "{out}"
    );
    assert!(out.contains("evil\\u{1b}[2K\\u{d}"), "{out}");
}
