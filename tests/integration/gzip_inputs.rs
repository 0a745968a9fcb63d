//! `*.json.gz` inputs: read as the JSON they hold, named as the `*.json` would be, and
//! bounded once inflated (a gzip bomb is an error naming the file and the limit).

use std::io::Write;
use std::path::Path;

use crate::binary::{Caldera, Ran};

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    enc.write_all(data).expect("compress");
    enc.finish().expect("finish")
}

fn write(dir: &Path, rel: &str, bytes: &[u8]) {
    let path = dir.join(rel);
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    std::fs::write(path, bytes).expect("write");
}

/// A suite whose one judge lists each repo's id, file, stem and truth.
fn suite(dir: &Path) {
    write(
        dir,
        "suite.yaml",
        b"suite: gz\ninputs:\n  results: results\n  ground_truth: truth\n",
    );
    write(
        dir,
        "seen.yaml",
        b"dimension: seen\nweight: 1\nevidence:\n  \
          seen: \"<< repos | map(attribute='id') | list >>\"\n  \
          stems: \"<< repos | map(attribute='stem') | list >>\"\n  \
          files: \"<< repos | map(attribute='file') | list >>\"\n  \
          expected: \"<< repos | map(attribute='truth.expected') | list >>\"\n  \
          n: << seen | length >>\nheuristic:\n  metric: n\n  \
          bands: [{ min: 2, score: 5 }, { score: 1 }]\n  \
          reasoning: << seen >> << stems >> << files >> << expected >>\n",
    );
}

/// Runs the suite in `dir`, its result printed as JSON on stdout.
fn run_json(dir: &Path) -> Ran {
    Caldera::new()
        .args(["run", "--heuristic", "--quiet", "--out", "-"])
        .arg(dir)
        .run()
}

#[test]
fn gzip_results_and_truth_are_read_as_the_json_they_hold() {
    let tmp = tempfile::tempdir().expect("tempdir");
    suite(tmp.path());
    write(
        tmp.path(),
        "results/alpha.json.gz",
        &gzip(br#"{"findings": [1, 2]}"#),
    );
    write(tmp.path(), "results/beta.json", br#"{"findings": []}"#);
    write(
        tmp.path(),
        "truth/alpha.json.gz",
        &gzip(br#"{"expected": 2}"#),
    );
    write(tmp.path(), "truth/beta.json", br#"{"expected": 0}"#);
    let ran = run_json(tmp.path());
    assert_eq!(ran.code, Some(0), "{}", ran.stderr);
    let json = ran.json();
    let evidence = &json["dimensions"][0]["evidence"];
    assert_eq!(evidence["seen"], serde_json::json!(["alpha", "beta"]));
    assert_eq!(evidence["stems"], serde_json::json!(["alpha", "beta"]));
    assert_eq!(
        evidence["files"],
        serde_json::json!(["alpha.json.gz", "beta.json"])
    );
    assert_eq!(evidence["expected"], serde_json::json!([2, 0]));
}

#[test]
fn a_gzip_bomb_is_an_input_error_naming_the_file_and_the_limit() {
    let tmp = tempfile::tempdir().expect("tempdir");
    suite(tmp.path());
    // 257 concatenated members of 1 MiB of spaces: about 260 KB on disk, 257 MiB inflated.
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    enc.write_all(&vec![b' '; 1 << 20]).expect("compress");
    let member = enc.finish().expect("finish");
    let bomb: Vec<u8> = std::iter::repeat_n(member.as_slice(), 257)
        .flatten()
        .copied()
        .collect();
    assert!(bomb.len() < 1 << 20, "the bomb is small on disk");
    write(tmp.path(), "results/bomb.json.gz", &bomb);
    write(tmp.path(), "truth/bomb.json", b"{}");
    let Ran { code, stderr, .. } = run_json(tmp.path());
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("bomb.json.gz"), "{stderr}");
    assert!(
        stderr.contains("inflates to more than 256 MiB, the limit for a compressed input"),
        "{stderr}"
    );
}

#[test]
fn a_file_that_is_not_gzip_is_an_input_error() {
    let tmp = tempfile::tempdir().expect("tempdir");
    suite(tmp.path());
    write(tmp.path(), "results/alpha.json.gz", br#"{"findings": []}"#);
    let Ran { code, stderr, .. } = run_json(tmp.path());
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("cannot read gzip file"), "{stderr}");
    assert!(stderr.contains("alpha.json.gz"), "{stderr}");
}
