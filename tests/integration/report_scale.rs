//! Unbounded cost in reports and comparisons: a panel of hundreds of raters in the HTML
//! heatmap, `caldera diff` of results with 100,000 per-repo verdicts, the memory
//! `caldera report` needs per byte of result, and `caldera calibrate` with hundreds of
//! raters. Each renders a real result (or labels) through the real binary; the figures
//! before and after are measured by `benches/report_scale.sh`, not here.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::binary::Caldera;
use crate::reports::run_suite;

/// A heuristic trivy result, as a JSON value to edit.
fn trivy_result(dir: &Path) -> Value {
    let path = dir.join("trivy.json");
    let out = run_suite("judges.d/trivy", &path, None);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
}

fn write(dir: &Path, name: &str, doc: &Value) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, serde_json::to_vec(doc).unwrap()).unwrap();
    path
}

#[test]
fn html_heatmap_of_a_large_panel_draws_a_bounded_number_of_cells_with_a_note() {
    let dir = tempfile::tempdir().unwrap();
    let mut doc = trivy_result(dir.path());
    let raters: Vec<String> = (0..200).map(|i| format!("model-{i:03}")).collect();
    doc["panel"] = json!({
        "models": raters,
        "items": 9,
        "agreement": {"n_items": 9, "raters": raters},
    });
    let result = write(dir.path(), "panel.json", &doc);
    let html_path = dir.path().join("panel.html");
    let out = Caldera::new()
        .arg("report")
        .arg(&result)
        .args(["--format", "html", "--out"])
        .arg(&html_path)
        .run();
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let html = std::fs::read_to_string(&html_path).unwrap();
    let heatmap = html
        .split("<svg class=\"chart heatmap\"")
        .nth(1)
        .and_then(|rest| rest.split("</svg>").next())
        .expect("a heatmap");
    let cells = heatmap.matches("<rect").count();
    // The cap as the page states it; the cells must be its square.
    let cap: usize = html
        .split("the heatmap shows the first ")
        .nth(1)
        .and_then(|rest| rest.split(|c: char| !c.is_ascii_digit()).next())
        .and_then(|n| n.parse().ok())
        .expect("the page states the cap");
    assert!(cap > 1 && cap < 200, "{cap}");
    assert_eq!(cells, cap * cap, "one cell per pair of the first {cap}");
    assert!(
        html.contains(&format!(
            "The panel has 200 models: the heatmap shows the first {cap}"
        )),
        "the cut is said"
    );
}

/// Two results of one suite with `n` per-repo verdicts on their first dimension, the
/// scores one point apart on some repos, and a problem for every tenth repo.
fn per_repo_pair(dir: &Path, n: usize) -> (PathBuf, PathBuf) {
    let base = trivy_result(dir);
    let make = |shift: usize, name: &str| {
        let mut doc = base.clone();
        doc["dimensions"][0]["repos"] = (0..n)
            .map(|i| {
                json!({"repo": format!("repo-{i:07}"), "status": "scored",
                       "score": 1 + (i + shift) % 5, "confidence": 0.8, "reasoning": "r",
                       "evidence": {"found": i % 7}})
            })
            .collect();
        doc["summary"]["problems"] = (0..n)
            .step_by(10)
            .map(
                |i| json!({"kind": "input", "message": format!("repo {} has no truth", i + shift)}),
            )
            .collect();
        write(dir, name, &doc)
    };
    (make(0, "a.json"), make(1, "b.json"))
}

#[test]
fn diff_of_100k_per_repo_verdicts_pairs_repos_by_hash_not_by_scan() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = per_repo_pair(dir.path(), 100_000);
    let out_path = dir.path().join("diff.json");
    // Pairing by scan is 10^10 comparisons here (minutes, even optimised); by hash, a
    // few seconds in a debug build. The bound only tells the two apart.
    let limit = Duration::from_secs(90);
    let mut child = Caldera::new()
        .arg("diff")
        .arg(&a)
        .arg(&b)
        .args(["--format", "json", "--out"])
        .arg(&out_path)
        .command()
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("caldera diff of 100,000 per-repo verdicts still ran after {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(status.code(), Some(0));
    let diff: Value = serde_json::from_slice(&std::fs::read(&out_path).unwrap()).unwrap();
    let repos = &diff["dimensions"][0]["repos"];
    assert_eq!(repos["pairs"].as_array().unwrap().len(), 100_000);
    assert_eq!(repos["unpaired"].as_array().unwrap().len(), 0);
    assert_eq!(diff["problems_new"].as_array().unwrap().len(), 10_000);
    assert_eq!(diff["problems_gone"].as_array().unwrap().len(), 10_000);
}

/// `caldera report` of a result of about 40 MB, under an address-space limit of eleven
/// times that: reading it used to hold the bytes, a parsed tree of the whole document
/// and a typed copy of that tree (about twelve times the file in resident memory, more
/// in address space); now the bytes and the typed view (about seven times, nine in
/// address space).
#[cfg(unix)]
#[test]
fn report_reads_a_large_result_in_less_than_eleven_times_its_size() {
    let dir = tempfile::tempdir().unwrap();
    let mut doc = trivy_result(dir.path());
    let repo = |i: usize| {
        json!({"repo": format!("repo-{i:07}"), "status": "scored", "score": 3,
               "confidence": 0.8, "reasoning": "a reason of some length ".repeat(4),
               "evidence": {"found": i,
                            "missed": (0..8).map(|j| format!("CVE-2024-{j:05}")).collect::<Vec<_>>(),
                            "by_severity": {"critical": 1, "high": 2, "medium": 3}}})
    };
    let per_repo = serde_json::to_vec(&repo(0)).unwrap().len();
    doc["dimensions"][0]["repos"] = (0..(40 << 20) / per_repo).map(repo).collect();
    let result = write(dir.path(), "large.json", &doc);
    let size_kb = std::fs::metadata(&result).unwrap().len() / 1024;
    let out = Caldera::under_shell(&format!("ulimit -v {}", size_kb * 11))
        .arg("report")
        .arg(&result)
        .args(["--format", "table", "--out"])
        .arg(dir.path().join("large.txt"))
        .run();
    assert_eq!(
        out.code,
        Some(0),
        "report of a {size_kb} KB result within {} KB: {}",
        size_kb * 11,
        out.stderr
    );
}

#[test]
fn calibrate_with_hundreds_of_raters_bounds_the_ceiling_pairs_and_says_so() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = tempfile::tempdir().unwrap();
    let units = [
        "clean-flask-api",
        "clean-service",
        "critical-cves",
        "dev-deps-fp",
        "ghsa-aliases",
    ];
    let mut csv = String::from("unit,dimension,score,rater\n");
    for r in 0..300 {
        for (i, u) in units.iter().enumerate() {
            csv.push_str(&format!(
                "{u},vulnerability_accuracy,{},rater-{r:03}\n",
                1 + (i * 7 + r) % 5
            ));
        }
    }
    let labels = dir.path().join("labels.csv");
    std::fs::write(&labels, csv).unwrap();
    let out = Caldera::new()
        .dir(root)
        .args(["calibrate", "judges.d/trivy", "--labels"])
        .arg(&labels)
        .args(["--format", "json"])
        .run();
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let c: Value = serde_json::from_str(&out.stdout).unwrap();
    let d = &c["dimensions"][0];
    assert_eq!(
        d["raters"].as_array().unwrap().len(),
        300,
        "every rater is kept"
    );
    // The cap as the note states it; the pairs must be those of that many raters.
    let note = d["ceiling"]["note"].as_str().expect("a note");
    let cap: usize = note
        .split("among the first ")
        .nth(1)
        .and_then(|rest| rest.split(|c: char| !c.is_ascii_digit()).next())
        .and_then(|n| n.parse().ok())
        .expect("the note states the cap");
    assert!(cap > 1 && cap < 300, "{cap}");
    let pairs = d["ceiling"]["pairs"].as_object().unwrap().len();
    assert_eq!(
        pairs,
        cap * (cap - 1) / 2,
        "the pairs of the first {cap} raters"
    );
    let note = d["ceiling"]["note"].as_str().expect("a note");
    assert!(note.starts_with("300 raters"), "{note}");
    let warnings = c["warnings"].to_string();
    assert!(
        warnings.contains("vulnerability_accuracy: 300 raters"),
        "{warnings}"
    );
    // Each source is still compared with every rater.
    let per_rater = d["sources"][0]["raters"].as_object().unwrap().len();
    assert_eq!(per_rater, 300);
}
