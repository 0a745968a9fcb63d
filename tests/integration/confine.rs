//! A suite reads nothing outside its project unless told: a judge that names
//! `../secret.md` as its prompt, or a suite whose inputs point elsewhere, is refused by
//! `validate`, `render` and `run`, and allowed only with `--allow-outside-root` or a
//! `--root` that contains it. Real binary, real files.

use std::path::Path;
use std::process::Command;

use insta_cmd::get_cargo_bin;

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

fn caldera(dir: &Path, args: &[&str]) -> (i32, String, String) {
    let out = Command::new(get_cargo_bin("caldera"))
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_prompt_outside_the_suite_is_refused_unless_allowed() {
    let tmp = tempfile::tempdir().unwrap();
    layout(tmp.path());
    let (code, _, err) = caldera(tmp.path(), &["validate", "mysuite"]);
    assert_eq!(code, 2);
    assert!(err.contains("prompt-outside-project"), "{err}");
    let (code, out, _) = caldera(tmp.path(), &["render", "mysuite", "--judge", "j"]);
    assert_eq!(code, 2);
    assert!(
        !out.contains("TOP-SECRET-KEY"),
        "render printed the file: {out}"
    );
    let (code, _, _) = caldera(
        tmp.path(),
        &["run", "mysuite", "--heuristic", "--out", "r.json"],
    );
    assert_eq!(code, 2, "run refuses an invalid suite");

    // Told: the flag, or a root that holds the file.
    let (code, _, err) = caldera(tmp.path(), &["validate", "mysuite", "--allow-outside-root"]);
    assert_eq!(code, 0, "{err}");
    let (code, out, _) = caldera(
        tmp.path(),
        &["render", "mysuite", "--judge", "j", "--root", "."],
    );
    assert_eq!(code, 0);
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
    let (code, _, err) = caldera(tmp.path(), &["validate", "mysuite"]);
    assert_eq!(code, 2);
    assert_eq!(err.matches("input-outside-project").count(), 2, "{err}");
    // The same folder named on the command line is the user's choice.
    std::fs::write(
        suite.join("suite.yaml"),
        "suite: mine\ninputs:\n  results: data\n",
    )
    .unwrap();
    let (code, _, err) = caldera(
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
    assert_eq!(code, 0, "{err}");
}
