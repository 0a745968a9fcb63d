//! A streaming run (a streamable suite's heuristic run, read a chunk of files at a
//! time) gives the in-memory run's result (`CALDERA_NO_STREAM=1`), on every bundled
//! suite and on generated inputs of many chunks with repos on one side only.
//!
//! Real processes of the built binary; `CALDERA_PROFILE` tells which path a run took.

use std::path::Path;

use serde_json::Value;

use crate::binary::{Caldera, Ran};
use crate::same_result::assert_same_result;

/// What legitimately differs between two runs of the same inputs.
const MAY_DIFFER: [&str; 3] = ["run_id", "timestamp", "duration_ms"];

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Runs `caldera run SUITE --heuristic --out OUT EXTRA...`, streaming or not.
fn run(suite: &str, out: &Path, extra: &[&str], stream: bool) -> Ran {
    let cmd = Caldera::new()
        .args(["run", suite, "--heuristic", "--out"])
        .arg(out)
        .args(extra)
        .dir(root())
        .env("CALDERA_PROFILE", "1");
    if stream {
        cmd.env_remove("CALDERA_NO_STREAM")
    } else {
        cmd.env("CALDERA_NO_STREAM", "1")
    }
    .run()
}
/// Whether the run's profile shows the streaming path's phases.
fn streamed(output: &Ran) -> bool {
    output.stderr.contains("inputs and per-repo")
}

/// Runs `suite` both ways and asserts equal results and exit codes; returns whether the
/// default run streamed.
fn assert_streamed_equals_in_memory(suite: &str, dir: &Path, extra: &[&str]) -> bool {
    let name = suite.replace('/', "_");
    let (a, b) = (
        dir.join(format!("{name}-stream.json")),
        dir.join(format!("{name}-memory.json")),
    );
    let streaming = run(suite, &a, extra, true);
    let memory = run(suite, &b, extra, false);
    assert!(
        !streamed(&memory),
        "{suite}: CALDERA_NO_STREAM=1 reads in memory"
    );
    assert_eq!(
        streaming.code, memory.code,
        "{suite}: same exit code\nstreaming: {}\nmemory: {}",
        streaming.stderr, memory.stderr
    );
    assert_same_result(suite, ("in-memory", &b), ("streamed", &a), &MAY_DIFFER);
    streamed(&streaming)
}

#[test]
fn streamed_run_equals_the_in_memory_run_on_every_bundled_suite() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut suites: Vec<String> = std::fs::read_dir(root().join("judges.d"))
        .expect("judges.d")
        .filter_map(Result::ok)
        .filter(|e| e.path().join("suite.yaml").is_file())
        .map(|e| format!("judges.d/{}", e.file_name().to_string_lossy()))
        .collect();
    suites.sort();
    let streamed: Vec<&String> = suites
        .iter()
        .filter(|s| assert_streamed_equals_in_memory(s, dir.path(), &[]))
        .collect();
    assert!(
        streamed.iter().any(|s| s.ends_with("/trivy")),
        "trivy's suite is streamable and streams: {streamed:?}"
    );
}

/// `n` trivy results named `repo-<i>` (the bundled outputs, in turn), ground truth for
/// every repo but each seventh, and one ground truth with no result.
fn many_trivy_repos(dir: &Path, n: usize) -> (std::path::PathBuf, std::path::PathBuf) {
    let read_all = |folder: &str| -> Vec<Value> {
        let mut files: Vec<_> = std::fs::read_dir(root().join(folder))
            .expect("bundled folder")
            .filter_map(Result::ok)
            .map(|e| e.path())
            .collect();
        files.sort();
        files
            .iter()
            .map(|f| serde_json::from_str(&std::fs::read_to_string(f).unwrap()).unwrap())
            .collect()
    };
    let outputs = read_all("ground-truth/trivy/outputs");
    let expected = read_all("ground-truth/trivy/expected");
    let (results, truth) = (dir.join("results"), dir.join("truth"));
    std::fs::create_dir_all(&results).unwrap();
    std::fs::create_dir_all(&truth).unwrap();
    let write = |folder: &Path, id: &str, doc: &Value| {
        let mut doc = doc.clone();
        doc["id"] = Value::from(id);
        std::fs::write(folder.join(format!("{id}.json")), doc.to_string()).unwrap();
    };
    for i in 0..n {
        let id = format!("repo-{i:03}");
        write(&results, &id, &outputs[i % outputs.len()]);
        if i % 7 != 3 {
            write(&truth, &id, &expected[i % expected.len()]);
        }
    }
    write(&truth, "repo-only-truth", &expected[0]);
    (results, truth)
}

#[test]
fn streamed_run_over_many_chunks_with_repos_on_one_side_equals_the_in_memory_run() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (results, truth) = many_trivy_repos(dir.path(), 150);
    let extra = [
        "--results",
        results.to_str().unwrap(),
        "--ground-truth",
        truth.to_str().unwrap(),
    ];
    assert!(
        assert_streamed_equals_in_memory("judges.d/trivy", dir.path(), &extra),
        "the trivy suite streams"
    );
    // A `--repo` selection streams too, and keeps only the repos named.
    let mut selected = extra.to_vec();
    selected.extend(["--repo", "repo-007", "--repo", "repo-140"]);
    assert!(assert_streamed_equals_in_memory(
        "judges.d/trivy",
        dir.path(),
        &selected
    ));
}

#[test]
fn streamed_run_reports_the_in_memory_runs_input_errors() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (results, truth) = many_trivy_repos(dir.path(), 70);
    std::fs::write(results.join("repo-050.json"), "{ not json").unwrap();
    std::fs::write(truth.join("repo-001.json"), "[1,").unwrap();
    let extra = [
        "--results",
        results.to_str().unwrap(),
        "--ground-truth",
        truth.to_str().unwrap(),
    ];
    let a = run("judges.d/trivy", &dir.path().join("a.json"), &extra, true);
    let b = run("judges.d/trivy", &dir.path().join("b.json"), &extra, false);
    assert_eq!(a.code, Some(2), "bad input exits 2");
    assert_eq!(a.code, b.code);
    assert_eq!(
        a.stderr, b.stderr,
        "the same diagnostics, in the same order"
    );
}

/// Runs shard `k/n` of `suite` (`--defer-whole`), streaming or not; the partial's
/// body without its run id, and whether it streamed.
fn shard(
    suite: &str,
    (k, n): (u32, u32),
    out: &Path,
    extra: &[&str],
    stream: bool,
) -> (Value, bool) {
    let spec = format!("{k}/{n}");
    let cmd = Caldera::new()
        .args([
            "run",
            suite,
            "--heuristic",
            "--shard",
            &spec,
            "--defer-whole",
            "--out",
        ])
        .arg(out)
        .args(extra)
        .dir(root())
        .env("CALDERA_PROFILE", "1");
    let ran = if stream {
        cmd.env_remove("CALDERA_NO_STREAM")
    } else {
        cmd.env("CALDERA_NO_STREAM", "1")
    }
    .run();
    assert_eq!(ran.code, Some(0), "{suite} shard {spec}: {}", ran.stderr);
    let written: Value =
        serde_json::from_str(&std::fs::read_to_string(out).expect("partial written"))
            .expect("partial is JSON");
    // The body, signed by a digest that covers the run id.
    let mut partial = written["body"].clone();
    partial
        .as_object_mut()
        .expect("the partial has a body")
        .remove("run_id");
    (
        partial,
        ran.stderr.contains(&format!("shard {spec} streamed")),
    )
}

/// A heuristic shard streams (only its own repos' documents are kept, a chunk at a
/// time) and writes exactly the partial the in-memory shard writes: on every bundled
/// suite, and on generated inputs of many chunks with repos on one side only.
#[test]
fn a_streamed_shard_writes_the_in_memory_shards_partial() {
    let dir = tempfile::tempdir().expect("tempdir");
    let compare = |suite: &str, (k, n): (u32, u32), extra: &[&str]| {
        let name = format!("{}-{k}-{n}", suite.replace('/', "_"));
        let (a, b) = (
            dir.path().join(format!("{name}-stream.json")),
            dir.path().join(format!("{name}-memory.json")),
        );
        let (streamed, did_stream) = shard(suite, (k, n), &a, extra, true);
        let (memory, memory_streamed) = shard(suite, (k, n), &b, extra, false);
        assert!(did_stream, "{suite} shard {k}/{n} streams");
        assert!(!memory_streamed, "CALDERA_NO_STREAM=1 reads in memory");
        assert!(
            streamed == memory,
            "{suite} shard {k}/{n}: the streamed partial differs from the in-memory one"
        );
    };
    for entry in std::fs::read_dir(root().join("judges.d")).expect("judges.d") {
        let path = entry.expect("entry").path();
        if path.join("suite.yaml").is_file() {
            let suite = format!("judges.d/{}", path.file_name().unwrap().to_string_lossy());
            compare(&suite, (2, 3), &[]);
        }
    }
    let (results, truth) = many_trivy_repos(dir.path(), 150);
    let extra = [
        "--results",
        results.to_str().unwrap(),
        "--ground-truth",
        truth.to_str().unwrap(),
    ];
    for k in 1..=3 {
        compare("judges.d/trivy", (k, 3), &extra);
    }
}
