//! caldera writes the files it was asked for and nothing else: `caldera test --record` and
//! `--update` never write through a link, a judge or suite name never becomes a path
//! outside its folder, `--out-dir` never writes into an input folder, `init` never
//! follows a dangling link, and what is written is readable as the umask says. Real
//! binary, real files, and a loopback server for `--record`.

use std::path::{Path, PathBuf};

use crate::binary::{Caldera, Ran};

use crate::llm_server::{MockServer, anthropic_text};

const JUDGE: &str = "dimension: j\nweight: 1\nevidence:\n  n: $.results.r.n\n\
                     heuristic:\n  metric: n\n  bands:\n    - { score: 3 }\n  reasoning: Three.\n\
                     prompt: ../../prompts/s/j.md\n";

/// A project `root/project` with one suite (`judges.d/s`, judge `j` with a prompt) and
/// one case (`cases/c`) judged in both modes; returns the project folder.
fn project(root: &Path) -> PathBuf {
    let project = root.join("project");
    let suite = project.join("judges.d/s");
    std::fs::create_dir_all(suite.join("data")).unwrap();
    std::fs::create_dir_all(suite.join("cases/c/results")).unwrap();
    std::fs::create_dir_all(project.join("prompts/s")).unwrap();
    std::fs::write(
        project.join("prompts/s/j.md"),
        "Judge.\n<< evidence >>\n<< response_format >>\n",
    )
    .unwrap();
    std::fs::write(suite.join("data/r.json"), r#"{"id": "r", "n": 2}"#).unwrap();
    std::fs::write(
        suite.join("suite.yaml"),
        "suite: s\ninputs:\n  results: data\n",
    )
    .unwrap();
    std::fs::write(suite.join("j.yaml"), JUDGE).unwrap();
    std::fs::write(
        suite.join("cases/c/results/r.json"),
        r#"{"id": "r", "n": 2}"#,
    )
    .unwrap();
    std::fs::write(
        suite.join("cases/c/case.yaml"),
        "llm:\n  models: [sonnet]\n",
    )
    .unwrap();
    project
}

/// The binary in `dir` with `args`, answered by the server at `base` when given.
fn caldera_at(dir: &Path, args: &[&str], base: Option<&str>) -> Caldera {
    let cmd = Caldera::new().dir(dir).args(args);
    match base {
        Some(base) => cmd
            .env("ANTHROPIC_API_KEY", "test-key")
            .env("ANTHROPIC_BASE_URL", base),
        None => cmd,
    }
}

fn caldera(dir: &Path, args: &[&str], base: Option<&str>) -> Ran {
    caldera_at(dir, args, base).run()
}

/// Every file under `dir` whose name contains `needle`.
fn files_named(dir: &Path, needle: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.file_name().unwrap().to_string_lossy().contains(needle) {
            out.push(path.clone());
        }
        if entry.file_type().unwrap().is_dir() {
            out.extend(files_named(&path, needle));
        }
    }
    out
}

async fn verdict_server() -> MockServer {
    MockServer::start(|_, _| {
        anthropic_text(
            r#"{"score": 4, "confidence": 0.9, "reasoning": "recorded", "evidence_cited": [], "recommendations": [], "sub_scores": {}}"#,
            "end_turn",
        )
    })
    .await
}

/// Runs caldera off the async runtime (the server answers on it meanwhile).
async fn caldera_async(dir: &Path, args: &[&str], base: &str) -> Ran {
    caldera_at(dir, args, Some(base)).run_async().await
}

#[cfg(unix)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn record_never_writes_through_a_linked_cassette() {
    let server = verdict_server().await;
    let tmp = tempfile::tempdir().unwrap();
    let project = project(tmp.path());
    let cassettes = project.join("judges.d/s/cases/c/cassettes");
    std::fs::create_dir_all(&cassettes).unwrap();
    for victim in [tmp.path().join("victim.txt"), project.join("victim.txt")] {
        std::fs::write(&victim, "keep").unwrap();
        let _ = std::fs::remove_file(cassettes.join("j.json"));
        std::os::unix::fs::symlink(&victim, cassettes.join("j.json")).unwrap();
        let out = caldera_async(&project, &["test", "judges.d/s", "--record"], &server.base).await;
        assert_ne!(out.code, Some(0), "{}", out.text());
        assert_eq!(
            std::fs::read_to_string(&victim).unwrap(),
            "keep",
            "--record wrote through the link: {}",
            out.text()
        );
        assert!(out.text().contains("symbolic link"), "{}", out.text());
    }
}

#[cfg(unix)]
#[test]
fn update_never_writes_through_a_linked_expect_yaml() {
    let tmp = tempfile::tempdir().unwrap();
    let project = project(tmp.path());
    let case = project.join("judges.d/s/cases/c");
    std::fs::write(case.join("case.yaml"), "{}\n").unwrap();
    // A file of the project that `--update` has no business rewriting.
    let victim = project.join("notes.yaml");
    let kept = "heuristic:\n  j: { score: 1 }\n";
    std::fs::write(&victim, kept).unwrap();
    std::os::unix::fs::symlink(&victim, case.join("expect.yaml")).unwrap();
    let out = caldera(&project, &["test", "judges.d/s", "--update"], None);
    assert_ne!(out.code, Some(0), "{}", out.text());
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), kept);
    assert!(out.text().contains("symbolic link"), "{}", out.text());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dimension_that_is_not_a_file_name_is_refused_before_anything_is_written() {
    let server = verdict_server().await;
    let tmp = tempfile::tempdir().unwrap();
    let project = project(tmp.path());
    std::fs::write(
        project.join("judges.d/s/j.yaml"),
        JUDGE.replace("dimension: j", "dimension: ../../../../ESCAPED"),
    )
    .unwrap();
    let out = caldera(&project, &["validate", "judges.d/s"], None);
    assert_eq!(out.code, Some(2), "{}", out.text());
    assert!(out.text().contains("dimension"), "{}", out.text());
    let out = caldera_async(&project, &["test", "judges.d/s", "--record"], &server.base).await;
    assert_eq!(out.code, Some(2), "{}", out.text());
    assert_eq!(files_named(tmp.path(), "ESCAPED"), Vec::<PathBuf>::new());
    assert_eq!(server.hits(), 0);
}

#[test]
fn a_suite_name_that_is_not_a_file_name_is_refused_before_anything_is_written() {
    let tmp = tempfile::tempdir().unwrap();
    let project = project(tmp.path());
    std::fs::write(
        project.join("judges.d/s/suite.yaml"),
        "suite: ../../escaped\ninputs:\n  results: data\n",
    )
    .unwrap();
    let out = caldera(&project, &["validate", "judges.d/s"], None);
    assert_eq!(out.code, Some(2), "{}", out.text());
    assert!(out.text().contains("suite"), "{}", out.text());
    let out = caldera(
        &project,
        &[
            "run",
            "judges.d/s",
            "--heuristic",
            "-f",
            "md,junit",
            "--out-dir",
            "reports",
        ],
        None,
    );
    assert_eq!(out.code, Some(2), "{}", out.text());
    assert_eq!(files_named(tmp.path(), "escaped"), Vec::<PathBuf>::new());
}

#[test]
fn out_dir_into_an_input_folder_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let project = project(tmp.path());
    #[cfg(unix)]
    std::os::unix::fs::symlink(project.join("judges.d/s/data"), project.join("to-data")).unwrap();
    for dir in ["judges.d/s/data", "judges.d/s/data/sub", "to-data"] {
        if dir == "to-data" && !cfg!(unix) {
            continue;
        }
        let out = caldera(
            &project,
            &[
                "run",
                "judges.d/s",
                "--heuristic",
                "-f",
                "md,json",
                "--out-dir",
                dir,
                "--out",
                "r.json",
            ],
            None,
        );
        assert_eq!(out.code, Some(2), "{dir}: {}", out.text());
        assert!(out.text().contains("--out-dir"), "{dir}: {}", out.text());
        let names: Vec<_> = std::fs::read_dir(project.join("judges.d/s/data"))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["r.json"], "{dir}: a report joined the inputs");
    }
    // Beside the inputs is fine.
    let out = caldera(
        &project,
        &[
            "run",
            "judges.d/s",
            "--heuristic",
            "-f",
            "md,json",
            "--out-dir",
            "reports",
            "--out",
            "r.json",
        ],
        None,
    );
    assert_eq!(out.code, Some(0), "{}", out.text());
    assert!(project.join("reports/s.md").is_file());
}

#[cfg(unix)]
#[test]
fn init_never_follows_a_dangling_link() {
    let tmp = tempfile::tempdir().unwrap();
    let project = tmp.path().join("project");
    std::fs::create_dir_all(project.join("judges.d/tool")).unwrap();
    let victim = tmp.path().join("victim.yaml");
    std::os::unix::fs::symlink(&victim, project.join("judges.d/tool/suite.yaml")).unwrap();
    let out = caldera(&project, &["init", "tool"], None);
    assert_eq!(out.code, Some(2), "{}", out.text());
    assert!(!victim.exists(), "init wrote through the link");
    assert!(
        !project.join("prompts/tool").exists(),
        "nothing is written when one file is refused"
    );
}

/// Runs caldera under a shell that sets `umask` first.
#[cfg(unix)]
fn caldera_with_umask(dir: &Path, umask: &str, args: &str) -> Ran {
    Caldera::under_shell(&format!("umask {umask}"))
        .dir(dir)
        .args(args.split_whitespace())
        .run()
}

#[cfg(unix)]
#[test]
fn results_and_reports_are_written_with_the_umask_mode() {
    use std::os::unix::fs::PermissionsExt;
    let tmp = tempfile::tempdir().unwrap();
    let project = project(tmp.path());
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    for (umask, want) in [("022", 0o644), ("027", 0o640)] {
        let out = caldera_with_umask(
            &project,
            umask,
            &format!(
                "run judges.d/s --heuristic -f md,junit --out-dir r{umask} --out r{umask}.json"
            ),
        );
        assert_eq!(out.code, Some(0), "{}", out.text());
        for file in [
            format!("r{umask}.json"),
            format!("r{umask}/s.md"),
            format!("r{umask}/s.junit.xml"),
        ] {
            let got = mode(&project.join(&file));
            assert_eq!(got, want, "{file} under umask {umask}: {got:o}");
        }
    }
    // Replacing an existing result keeps to the umask too.
    std::fs::set_permissions(
        project.join("r022.json"),
        std::fs::Permissions::from_mode(0o600),
    )
    .unwrap();
    let out = caldera_with_umask(
        &project,
        "022",
        "run judges.d/s --heuristic --out r022.json",
    );
    assert_eq!(out.code, Some(0), "{}", out.text());
    assert_eq!(mode(&project.join("r022.json")), 0o644);
}

#[test]
fn the_default_result_folder_inside_an_input_folder_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let project = project(tmp.path());
    // A suite that reads the folder its own results go to by default.
    std::fs::create_dir_all(project.join("results/s")).unwrap();
    std::fs::write(project.join("results/s/r.json"), r#"{"id": "r", "n": 2}"#).unwrap();
    std::fs::write(
        project.join("judges.d/s/suite.yaml"),
        "suite: s\ninputs:\n  results: ../../results/s\n",
    )
    .unwrap();
    let out = caldera(&project, &["run", "judges.d/s", "--heuristic"], None);
    assert_eq!(out.code, Some(2), "{}", out.text());
    assert!(
        out.text().contains("the default result folder"),
        "{}",
        out.text()
    );
    let names: Vec<_> = std::fs::read_dir(project.join("results/s"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["r.json"], "a result joined the inputs");
    // With --out elsewhere it runs.
    let out = caldera(
        &project,
        &[
            "run",
            "judges.d/s",
            "--heuristic",
            "--out",
            "elsewhere.json",
        ],
        None,
    );
    assert!(matches!(out.code, Some(0 | 1)), "{}", out.text());
}
