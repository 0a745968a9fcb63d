//! A suite reads nothing outside its project unless told: a judge that names
//! `../secret.md` as its prompt, or a suite whose inputs point elsewhere, is refused by
//! `validate`, `render` and `run`, and allowed only with `--allow-outside-root` or a
//! `--root` that contains it. Every file counts, links resolved: a link in an input
//! folder, a `run_file` with `..`, a judge file or a test case's paths. An input that
//! does not parse is named and located, never quoted. Real binary, real files.

use std::path::Path;

use crate::binary::{Caldera, Ran};

/// A suite folder outside any `judges.d`, with a secret beside it.
fn layout(root: &Path) {
    let suite = root.join("mysuite");
    std::fs::create_dir_all(suite.join("data")).unwrap();
    std::fs::write(root.join("secret.md"), "TOP-SECRET-KEY << evidence >>").unwrap();
    std::fs::write(suite.join("data/r.json"), r#"{"id": "r", "n": 2}"#).unwrap();
    std::fs::write(
        suite.join("suite.yaml"),
        "suite: mine\ninputs:\n  results: data\n",
    )
    .unwrap();
    std::fs::write(
        suite.join("j.yaml"),
        "dimension: j\nweight: 1\nevidence:\n  n: $.results.r.n\nheuristic:\n  metric: n\n  bands:\n    - { score: 3 }\n  reasoning: x\nprompt: ../secret.md\n",
    )
    .unwrap();
}

fn caldera(dir: &Path, args: &[&str]) -> Ran {
    Caldera::new().dir(dir).args(args).run()
}

#[test]
fn a_prompt_outside_the_suite_is_refused_unless_allowed() {
    let tmp = tempfile::tempdir().unwrap();
    layout(tmp.path());
    let Ran {
        code, stderr: err, ..
    } = caldera(tmp.path(), &["validate", "mysuite"]);
    assert_eq!(code, Some(2));
    assert!(err.contains("prompt-outside-project"), "{err}");
    let Ran {
        code, stdout: out, ..
    } = caldera(tmp.path(), &["render", "mysuite", "--judge", "j"]);
    assert_eq!(code, Some(2));
    assert!(
        !out.contains("TOP-SECRET-KEY"),
        "render printed the file: {out}"
    );
    let Ran { code, .. } = caldera(
        tmp.path(),
        &["run", "mysuite", "--heuristic", "--out", "r.json"],
    );
    assert_eq!(code, Some(2), "run refuses an invalid suite");

    // Told: the flag, or a root that holds the file.
    let Ran {
        code, stderr: err, ..
    } = caldera(tmp.path(), &["validate", "mysuite", "--allow-outside-root"]);
    assert_eq!(code, Some(0), "{err}");
    let Ran {
        code, stdout: out, ..
    } = caldera(
        tmp.path(),
        &["render", "mysuite", "--judge", "j", "--root", "."],
    );
    assert_eq!(code, Some(0));
    assert!(out.contains("TOP-SECRET-KEY"));
}

#[test]
fn inputs_outside_the_project_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    layout(tmp.path());
    let suite = tmp.path().join("mysuite");
    std::fs::write(suite.join("j.yaml"), "dimension: j\nweight: 1\nevidence:\n  n: $.results.r.n\nheuristic:\n  metric: n\n  bands:\n    - { score: 3 }\n  reasoning: x\n").unwrap();
    std::fs::create_dir_all(tmp.path().join("elsewhere")).unwrap();
    std::fs::write(
        tmp.path().join("elsewhere/r.json"),
        r#"{"id": "r", "n": 2}"#,
    )
    .unwrap();
    std::fs::write(
        suite.join("suite.yaml"),
        "suite: mine\ninputs:\n  results: ../elsewhere\n  files:\n    extra:\n      file: /etc/hostname.json\n      optional: true\n",
    )
    .unwrap();
    let Ran {
        code, stderr: err, ..
    } = caldera(tmp.path(), &["validate", "mysuite"]);
    assert_eq!(code, Some(2));
    assert_eq!(err.matches("input-outside-project").count(), 2, "{err}");
    // The same folder named on the command line is the user's choice.
    std::fs::write(
        suite.join("suite.yaml"),
        "suite: mine\ninputs:\n  results: data\n",
    )
    .unwrap();
    let Ran {
        code, stderr: err, ..
    } = caldera(
        tmp.path(),
        &[
            "run",
            "mysuite",
            "--heuristic",
            "--results",
            "elsewhere",
            "--out",
            "r.json",
        ],
    );
    assert_eq!(code, Some(0), "{err}");
}

/// A secret outside the project that is not JSON, as `/proc/self/environ` is not.
const SECRET: &str = "ANTHROPIC_API_KEY=sk-TOP-SECRET-VALUE\nHOME=/root\n";

/// [`layout`] with a judge that needs no prompt: valid as it stands.
fn valid_layout(root: &Path) {
    layout(root);
    std::fs::write(root.join("mysuite/j.yaml"), "dimension: j\nweight: 1\nevidence:\n  n: $.results.r.n\nheuristic:\n  metric: n\n  bands:\n    - { score: 3 }\n  reasoning: x\n").unwrap();
}

#[cfg(unix)]
#[test]
fn a_linked_file_in_an_input_folder_is_refused_and_never_printed() {
    let tmp = tempfile::tempdir().unwrap();
    valid_layout(tmp.path());
    std::fs::write(tmp.path().join("environ"), SECRET).unwrap();
    std::os::unix::fs::symlink(
        tmp.path().join("environ"),
        tmp.path().join("mysuite/data/leak.json"),
    )
    .unwrap();
    for args in [
        &["validate", "mysuite"][..],
        &["run", "mysuite", "--heuristic", "--out", "r.json"],
    ] {
        let Ran {
            code,
            stdout: out,
            stderr: err,
            ..
        } = caldera(tmp.path(), args);
        assert_eq!(code, Some(2), "{args:?}: {err}");
        assert!(err.contains("input-outside-project"), "{args:?}: {err}");
        assert!(
            err.contains("leak.json"),
            "{args:?}: the file is named: {err}"
        );
        assert!(
            !out.contains("TOP-SECRET") && !err.contains("TOP-SECRET"),
            "{args:?} printed the linked file: {err}"
        );
    }
}

#[test]
fn run_file_with_dot_dot_or_an_absolute_path_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    valid_layout(tmp.path());
    std::fs::write(tmp.path().join("environ"), SECRET).unwrap();
    std::fs::create_dir_all(tmp.path().join("mysuite/data/run1")).unwrap();
    let absolute = tmp.path().join("environ");
    for run_file in ["../../../environ", absolute.to_str().unwrap()] {
        std::fs::write(
            tmp.path().join("mysuite/suite.yaml"),
            format!(
                "suite: mine\ninputs:\n  results: {{ folder: data, run_file: '{run_file}' }}\n"
            ),
        )
        .unwrap();
        for args in [
            &["validate", "mysuite"][..],
            &[
                "run",
                "mysuite",
                "--heuristic",
                "--results",
                "mysuite/data",
                "--out",
                "r.json",
            ],
        ] {
            let Ran {
                code,
                stdout: out,
                stderr: err,
                ..
            } = caldera(tmp.path(), args);
            assert_eq!(code, Some(2), "{run_file} {args:?}: {err}");
            assert!(err.contains("run_file"), "{run_file} {args:?}: {err}");
            assert!(
                !out.contains("TOP-SECRET") && !err.contains("TOP-SECRET"),
                "{run_file} {args:?} printed the file: {err}"
            );
        }
    }
}

#[test]
fn a_judge_file_outside_the_project_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    valid_layout(tmp.path());
    std::fs::write(tmp.path().join("environ"), SECRET).unwrap();
    std::fs::write(
        tmp.path().join("mysuite/suite.yaml"),
        "suite: mine\ninputs:\n  results: data\njudges:\n  - ../environ\n",
    )
    .unwrap();
    let Ran {
        code, stderr: err, ..
    } = caldera(tmp.path(), &["validate", "mysuite"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("input-outside-project"), "{err}");
    assert!(
        !err.contains("TOP-SECRET"),
        "validate printed the file: {err}"
    );
}

/// A suite with one test case whose `case.yaml` is `case`.
fn suite_with_case(root: &Path, case: &str) {
    valid_layout(root);
    let suite = root.join("mysuite");
    std::fs::create_dir_all(suite.join("cases/c/results")).unwrap();
    std::fs::write(
        suite.join("cases/c/results/r.json"),
        r#"{"id": "r", "n": 2}"#,
    )
    .unwrap();
    std::fs::write(suite.join("cases/c/case.yaml"), case).unwrap();
    std::fs::write(
        suite.join("cases/c/expect.yaml"),
        "heuristic:\n  j: { score: 3 }\n",
    )
    .unwrap();
}

#[test]
fn a_test_case_reads_nothing_outside_the_project() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(tmp.path().join("elsewhere")).unwrap();
    std::fs::write(tmp.path().join("elsewhere/leak.json"), SECRET).unwrap();
    suite_with_case(tmp.path(), "results: ../../../elsewhere\n");
    let Ran {
        code,
        stdout: out,
        stderr: err,
        ..
    } = caldera(tmp.path(), &["test", "mysuite"]);
    assert_eq!(code, Some(2), "{out}{err}");
    assert!(err.contains("input-outside-project"), "{err}");
    assert!(!err.contains("TOP-SECRET"), "test printed the file: {err}");
    let absolute = tmp.path().join("elsewhere");
    std::fs::write(
        tmp.path().join("mysuite/cases/c/case.yaml"),
        format!("results: '{}'\n", absolute.display()),
    )
    .unwrap();
    let Ran {
        code,
        stdout: out,
        stderr: err,
        ..
    } = caldera(tmp.path(), &["test", "mysuite"]);
    assert_eq!(code, Some(2), "{out}{err}");
    assert!(err.contains("input-outside-project"), "{err}");
    assert!(!err.contains("TOP-SECRET"), "test printed the file: {err}");
    // The case's own files, linked out.
    #[cfg(unix)]
    {
        std::fs::write(tmp.path().join("mysuite/cases/c/case.yaml"), "{}\n").unwrap();
        std::fs::write(tmp.path().join("environ"), SECRET).unwrap();
        std::fs::remove_file(tmp.path().join("mysuite/cases/c/expect.yaml")).unwrap();
        std::os::unix::fs::symlink(
            tmp.path().join("environ"),
            tmp.path().join("mysuite/cases/c/expect.yaml"),
        )
        .unwrap();
        let Ran {
            code,
            stdout: out,
            stderr: err,
            ..
        } = caldera(tmp.path(), &["test", "mysuite"]);
        assert_eq!(code, Some(2), "{out}{err}");
        assert!(err.contains("input-outside-project"), "{err}");
        assert!(!err.contains("TOP-SECRET"), "test printed the file: {err}");
    }
}

#[test]
fn an_input_that_is_not_json_is_described_not_quoted() {
    // The user's own folder, named on the command line: read, but its content is never
    // shown (it may be anything, a link to the process's environment included).
    let tmp = tempfile::tempdir().unwrap();
    valid_layout(tmp.path());
    std::fs::create_dir_all(tmp.path().join("mine")).unwrap();
    std::fs::write(tmp.path().join("mine/env.json"), SECRET).unwrap();
    std::fs::write(
        tmp.path().join("mine/bom.json"),
        "\u{feff}{\"TOP-SECRET\": 1}",
    )
    .unwrap();
    std::fs::write(
        tmp.path().join("mine/twice.json"),
        "{\"a\": \"TOP-SECRET\",\n \"a\": 2}",
    )
    .unwrap();
    let Ran {
        code,
        stdout: out,
        stderr: err,
        ..
    } = caldera(
        tmp.path(),
        &[
            "run",
            "mysuite",
            "--heuristic",
            "--results",
            "mine",
            "--out",
            "r.json",
            "--allow-outside-root",
        ],
    );
    assert_eq!(code, Some(2), "{err}");
    assert!(
        !out.contains("TOP-SECRET") && !err.contains("TOP-SECRET"),
        "{err}"
    );
    for name in ["env.json", "bom.json", "twice.json"] {
        assert!(err.contains(name), "{name} is named: {err}");
    }
    let size = SECRET.len().to_string();
    assert!(
        err.contains(&format!("{size} bytes")),
        "the size is said: {err}"
    );
    assert!(err.contains("env.json:1:1"), "the place is said: {err}");
}

#[test]
fn a_saved_result_that_is_not_json_is_described_not_quoted() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("environ"), SECRET).unwrap();
    for args in [&["report", "environ"][..], &["diff", "environ", "environ"]] {
        let Ran {
            code,
            stdout: out,
            stderr: err,
            ..
        } = caldera(tmp.path(), args);
        assert_eq!(code, Some(2), "{args:?}: {err}");
        assert!(
            err.contains("environ:1:1"),
            "{args:?}: the place is said: {err}"
        );
        assert!(
            !out.contains("TOP-SECRET") && !err.contains("TOP-SECRET"),
            "{args:?} printed the file: {err}"
        );
    }
}
