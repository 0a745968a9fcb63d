//! `caldera history` over a folder of results: real heuristic runs of the trivy and
//! adversarial-iac suites (one with a sample scan changed), copied into a history with
//! their own times, a model's tokens and cost, and one judge whose score moves while its
//! evidence does not; beside them files that are not results. The table and Markdown
//! are snapshots; the steps are checked against `caldera diff` of the same two files;
//! the HTML page of 50 trivy runs is opened in headless chromium.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::binary::{Caldera, Ran};
use crate::report_browser::{HOOKS, browser, chromium, console_and_screenshot};
use crate::reports::{run_suite, text, trivy_with_one_scan_changed};

/// Real results of this caldera: trivy as bundled, trivy with one scan changed,
/// adversarial-iac as bundled.
struct Real {
    trivy: Value,
    trivy_changed: Value,
    iac: Value,
}

fn real(dir: &Path) -> Real {
    let read =
        |p: &Path| -> Value { serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap() };
    let (trivy, changed, iac) = (
        dir.join("trivy.json"),
        dir.join("trivy-changed.json"),
        dir.join("iac.json"),
    );
    let run = run_suite("judges.d/trivy", &trivy, None);
    assert!(trivy.is_file(), "{}", run.stderr);
    let scans = trivy_with_one_scan_changed(dir);
    run_suite("judges.d/trivy", &changed, Some(&scans));
    run_suite("judges.d/adversarial-iac", &iac, None);
    Real {
        trivy: read(&trivy),
        trivy_changed: read(&changed),
        iac: read(&iac),
    }
}

/// `doc` as the run `id` at `time`.
fn as_run(doc: &Value, id: &str, time: &str) -> Value {
    let mut doc = doc.clone();
    doc["run_id"] = json!(id);
    doc["timestamp"] = json!(time);
    doc
}

/// `doc` as scored by a model, with what it spent.
fn as_llm(mut doc: Value, input: u64, output: u64, cost: f64) -> Value {
    doc["mode"] = json!("llm");
    doc["model"] = json!("sonnet");
    doc["usage"] = json!({"calls": 7, "verdicts": 7, "cached": 0, "requests": 7,
        "input_tokens": input, "output_tokens": output, "cost_usd": cost});
    doc
}

/// Sets a dimension's score (and its weighted share and the run's weighted score), its
/// evidence untouched.
fn set_score(doc: &mut Value, dimension: &str, score: f64) {
    let dims = doc["dimensions"].as_array_mut().unwrap();
    let d = dims.iter_mut().find(|d| d["name"] == dimension).unwrap();
    let old = d["score"].as_f64().unwrap();
    let w = d["normalized_weight"].as_f64().unwrap();
    d["score"] = json!(score);
    d["weighted_score"] = json!(score * w);
    let total = doc["total_score"].as_f64().unwrap() + (score - old) * w;
    doc["total_score"] = json!(total);
}

fn write(dir: &Path, name: &str, doc: &Value) {
    std::fs::write(dir.join(name), serde_json::to_string_pretty(doc).unwrap()).unwrap();
}

/// The folder of the CLI test: five trivy runs and two adversarial-iac runs (file names
/// not in time order), and four entries that are not results.
fn folder(dir: &Path) -> PathBuf {
    let r = real(dir);
    let results = dir.join("results");
    std::fs::create_dir_all(&results).unwrap();
    write(
        &results,
        "z-first.json",
        &as_run(&r.trivy, "20260101T000000Z-000001", "2026-01-01T00:00:00Z"),
    );
    write(
        &results,
        "b-scan-changed.json",
        &as_run(
            &r.trivy_changed,
            "20260102T000000Z-000002",
            "2026-01-02T00:00:00Z",
        ),
    );
    write(
        &results,
        "a-scan-back.json",
        &as_run(&r.trivy, "20260103T000000Z-000003", "2026-01-03T00:00:00Z"),
    );
    let llm = as_llm(
        as_run(&r.trivy, "20260104T000000Z-000004", "2026-01-04T00:00:00Z"),
        12000,
        3400,
        0.0123,
    );
    write(&results, "m-llm.json", &llm);
    // The same evidence, another score: the judge is unstable.
    let mut unstable = as_llm(
        as_run(&r.trivy, "20260105T000000Z-000005", "2026-01-05T00:00:00Z"),
        12500,
        3300,
        0.0125,
    );
    set_score(&mut unstable, "iac_quality", 4.0);
    write(&results, "n-llm-again.json", &unstable);
    // Offsets in another zone still sort by the instant: 2026-01-01T01:00:00Z.
    write(
        &results,
        "iac-1.json",
        &as_run(
            &r.iac,
            "20260101T010000Z-0000a1",
            "2026-01-01T02:00:00+01:00",
        ),
    );
    write(
        &results,
        "iac-2.json",
        &as_run(&r.iac, "20260102T000000Z-0000a2", "2026-01-02T00:00:00Z"),
    );
    std::fs::write(results.join("notes.txt"), "TOP-SECRET-NOTE do not print\n").unwrap();
    std::fs::write(
        results.join("wrong-type.json"),
        r#"{"suite": "trivy", "dimensions": [], "decision": "PASS", "total_score": "TOP-SECRET-VALUE"}"#,
    )
    .unwrap();
    write(
        &results,
        "zz-copy-of-first.json",
        &as_run(&r.trivy, "20260101T000000Z-000001", "2026-01-01T00:00:00Z"),
    );
    std::fs::create_dir(results.join("older")).unwrap();
    results
}

fn history(dir: &Path, args: &[&str]) -> Ran {
    Caldera::new()
        .dir(dir)
        .arg("history")
        .arg("results")
        .args(args)
        .run()
}

fn settings() -> insta::Settings {
    let mut s = insta::Settings::clone_current();
    s.set_snapshot_path("snapshots/history");
    s.set_prepend_module_to_snapshot(false);
    s
}

#[test]
fn history_groups_orders_compares_and_flags_unstable_judges() {
    let dir = tempfile::tempdir().unwrap();
    let results = folder(dir.path());

    let Ran {
        code,
        stdout: table,
        stderr: err,
        ..
    } = history(dir.path(), &[]);
    assert_eq!(code, Some(0), "{err}");
    for secret in ["TOP-SECRET-NOTE", "TOP-SECRET-VALUE"] {
        assert!(
            !table.contains(secret) && !err.contains(secret),
            "a file that is not a result is quoted:\n{table}\n{err}"
        );
    }
    assert!(
        err.starts_with("warning: 4 file(s) in results are not results and were skipped"),
        "{err}"
    );
    let md = history(dir.path(), &["--format", "md"]).stdout;
    settings().bind(|| {
        insta::assert_snapshot!("history-table", table);
        insta::assert_snapshot!("history-md", md);
    });

    // Grouped by suite, in time order whatever the file names; the skipped files named.
    let Ran {
        code, stdout: json, ..
    } = history(dir.path(), &["--format", "json"]);
    assert_eq!(code, Some(0));
    let h: Value = serde_json::from_str(&json).unwrap();
    let suites: Vec<&str> = h["suites"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["suite"].as_str().unwrap())
        .collect();
    assert_eq!(suites, ["adversarial-iac", "trivy"]);
    let trivy = &h["suites"][1];
    let files: Vec<&str> = trivy["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["file"].as_str().unwrap())
        .collect();
    assert_eq!(
        files,
        [
            "z-first.json",
            "b-scan-changed.json",
            "a-scan-back.json",
            "m-llm.json",
            "n-llm-again.json"
        ]
    );
    let skipped: Vec<&str> = h["skipped"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["file"].as_str().unwrap())
        .collect();
    assert_eq!(
        skipped,
        [
            "notes.txt",
            "older",
            "wrong-type.json",
            "zz-copy-of-first.json"
        ]
    );
    assert_eq!(h["skipped"][0]["place"], "line 1, column 1");
    assert_eq!(h["skipped"][2]["place"], "line 1, column 90");

    // Each step is the comparison `caldera diff` makes of the same two files.
    let diff = Caldera::new()
        .arg("diff")
        .arg(results.join("z-first.json"))
        .arg(results.join("b-scan-changed.json"))
        .args(["--format", "json"])
        .run();
    let c: Value = serde_json::from_str(&diff.stdout).unwrap();
    let step = &trivy["steps"][0];
    assert_eq!(step["total_delta"], c["total_delta"]);
    assert_eq!(step["regressions"], c["regressions"]);
    for d in c["dimensions"].as_array().unwrap() {
        let moved = d["change"] != "unchanged" || d["evidence"]["total"] != 0;
        let mine = step["changes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["dimension"] == d["name"]);
        assert_eq!(mine.is_some(), moved, "{}", d["name"]);
        if let Some(m) = mine {
            assert_eq!(m["change"], d["change"]);
            assert_eq!(m["delta"], d["delta"]);
            assert_eq!(m["evidence_changed"], d["evidence"]["total"]);
        }
    }
    assert!(!c["regressions"].as_array().unwrap().is_empty());

    // The unstable judge, and only it: same evidence, another score, same model.
    assert_eq!(
        trivy["unstable"],
        json!([{"dimension": "iac_quality", "comparable_steps": 3,
            "moves": [{"base": "20260104T000000Z-000004", "new": "20260105T000000Z-000005",
                       "before": 3.0, "after": 4.0}]}])
    );
    // The heuristic-to-model step is not compared for stability: a scorer change explains
    // a move.
    assert_eq!(trivy["usage"]["input_tokens"], 24500);
    assert!((trivy["usage"]["cost_usd"].as_f64().unwrap() - 0.0248).abs() < 1e-12);
    assert_eq!(trivy["runs"][3]["usage"]["output_tokens"], 3400);
    assert!(trivy["runs"][0].get("usage").is_none());
}

#[test]
fn a_folder_without_results_is_an_input_error() {
    let dir = tempfile::tempdir().unwrap();
    let Ran {
        code, stderr: err, ..
    } = history(dir.path(), &[]);
    assert_eq!(code, Some(2));
    assert!(err.contains("there is no such folder"), "{err}");
    assert!(err.contains("results"), "the folder is named: {err}");

    std::fs::create_dir(dir.path().join("results")).unwrap();
    std::fs::write(dir.path().join("results/environ"), "TOP-SECRET=1\n").unwrap();
    let Ran {
        code,
        stdout: out,
        stderr: err,
        ..
    } = history(dir.path(), &[]);
    assert_eq!(code, Some(2), "{out}");
    assert!(
        err.contains("environ (line 1, column 1): not valid JSON"),
        "{err}"
    );
    assert!(err.contains("error: no result in results"), "{err}");
    assert!(!err.contains("TOP-SECRET") && !out.contains("TOP-SECRET"));
}

/// What the page probe saw: per trend chart its dimension, size and marks.
#[derive(serde::Deserialize, Debug)]
struct Seen {
    problems: Vec<String>,
    trends: Vec<SeenTrend>,
}

#[derive(serde::Deserialize, Debug)]
struct SeenTrend {
    dimension: String,
    width: f64,
    height: f64,
    visible: bool,
    marks: usize,
    titled: bool,
}

const PROBE: &str = r#"<script>
(function () {
  var trends = Array.from(document.querySelectorAll('figure.trend')).map(function (f) {
    var svg = f.querySelector('svg');
    var box = svg.getBoundingClientRect();
    return { dimension: f.dataset.dimension, width: box.width, height: box.height,
             visible: svg.checkVisibility(), marks: svg.querySelectorAll('.point, .gap').length,
             titled: svg.getAttribute('role') === 'img' && !!svg.querySelector('title') };
  });
  var out = document.createElement('pre');
  out.id = 'probe';
  out.textContent = JSON.stringify({ problems: window.__problems, trends: trends });
  document.body.appendChild(out);
})();
</script>"#;

fn probe(chromium: &Path, dir: &Path, page: &str) -> Seen {
    let probed = page
        .replacen("<head>", &format!("<head>\n{HOOKS}"), 1)
        .replacen("</body>", &format!("{PROBE}\n</body>"), 1);
    let file = dir.join("probed.html");
    std::fs::write(&file, probed).unwrap();
    let out = browser(chromium, &dir.join("profile-probe"))
        .arg("--dump-dom")
        .arg(format!("file://{}", file.display()))
        .output()
        .expect("chromium runs");
    let dom = text(&out.stdout);
    let start = dom
        .find("<pre id=\"probe\">")
        .unwrap_or_else(|| panic!("the probe did not run: {}", text(&out.stderr)))
        + "<pre id=\"probe\">".len();
    let end = start + dom[start..].find("</pre>").unwrap();
    let json = dom[start..end]
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&");
    serde_json::from_str(&json).expect("probe JSON")
}

#[test]
fn history_page_of_50_trivy_runs_in_headless_chromium() {
    let Some(chromium) = chromium() else {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI must have chromium for the HTML history test (apt-get install chromium)"
        );
        crate::notice(
            "skipped history_page_of_50_trivy_runs_in_headless_chromium: no chromium on this machine",
        );
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let r = real(dir.path());
    let results = dir.path().join("results");
    std::fs::create_dir_all(&results).unwrap();
    let dimensions: Vec<String> = r.trivy["dimensions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["name"].as_str().unwrap().to_owned())
        .collect();
    for i in 0..50u32 {
        let day = 1 + i / 24;
        let time = format!("2026-02-{day:02}T{:02}:00:00Z", i % 24);
        let id = format!("202602{day:02}T{:02}0000Z-{i:06x}", i % 24);
        let source = if i % 7 == 3 {
            &r.trivy_changed
        } else {
            &r.trivy
        };
        let mut doc = as_run(source, &id, &time);
        if i % 5 == 1 {
            let d = &dimensions[i as usize % dimensions.len()];
            set_score(&mut doc, d, 1.0 + f64::from((i / 5) % 5));
        }
        if i % 2 == 1 {
            doc = as_llm(doc, 9000 + u64::from(i), 1400, 0.05);
        }
        write(&results, &format!("{id}.json"), &doc);
    }
    let page = dir.path().join("history.html");
    let out = Caldera::new()
        .arg("history")
        .arg(&results)
        .args(["--format", "html", "--out"])
        .arg(&page)
        .run();
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let html = std::fs::read_to_string(&page).unwrap();
    for outside in ["<script", "src=", "url(", "href=\"http", "@import"] {
        assert!(
            !html.contains(outside),
            "the page is self-contained, without script: it has {outside}"
        );
    }

    let screens = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/report-screens");
    std::fs::create_dir_all(&screens).unwrap();
    let shot = screens.join("history-50.png");
    let _ = std::fs::remove_file(&shot);
    let console = console_and_screenshot(&chromium, dir.path(), &page, &shot);
    assert!(console.is_empty(), "console messages: {console:#?}");
    assert!(std::fs::metadata(&shot).is_ok_and(|m| m.len() > 10_000));

    let seen = probe(&chromium, dir.path(), &html);
    assert!(seen.problems.is_empty(), "{:#?}", seen.problems);
    let drawn: Vec<&str> = seen.trends.iter().map(|t| t.dimension.as_str()).collect();
    assert_eq!(
        drawn, dimensions,
        "one trend per dimension, in the run's order"
    );
    for t in &seen.trends {
        assert!(
            t.visible && t.width > 100.0 && t.height > 40.0 && t.titled,
            "the trend of {} is not shown: {t:?}",
            t.dimension
        );
        assert_eq!(t.marks, 50, "{}: one mark per run", t.dimension);
    }
}

/// Results kept compressed (`gzip results/trivy/*.json`) are read by `history` and
/// `report` as the `.json` they hold; a compressed file that is not a result is skipped
/// with the reason, as a plain one is.
#[test]
fn compressed_results_are_read_like_plain_ones() {
    use std::io::Write as _;
    let dir = tempfile::tempdir().unwrap();
    let r = real(dir.path());
    let results = dir.path().join("results");
    std::fs::create_dir_all(&results).unwrap();
    write(
        &results,
        "plain.json",
        &as_run(&r.trivy, "20260101T000000Z-000001", "2026-01-01T00:00:00Z"),
    );
    let gz = |name: &str, bytes: &[u8]| {
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        enc.write_all(bytes).unwrap();
        std::fs::write(results.join(name), enc.finish().unwrap()).unwrap();
    };
    let second = as_run(&r.trivy, "20260102T000000Z-000002", "2026-01-02T00:00:00Z");
    gz(
        "second.json.gz",
        serde_json::to_string(&second).unwrap().as_bytes(),
    );
    gz("broken.json.gz", b"{\"suite\": ");
    let ran = history(dir.path(), &["--format", "json"]).expect(0);
    let json = ran.stdout.clone();
    let h = ran.json();
    let runs = h["suites"][0]["runs"].as_array().expect("runs");
    assert_eq!(runs.len(), 2, "{json}");
    assert!(json.contains("second.json.gz"), "{json}");
    let skipped = h["skipped"].to_string();
    assert!(skipped.contains("broken.json.gz"), "{skipped}");

    let doc = Caldera::new()
        .dir(dir.path())
        .args(["report", "results/second.json.gz", "--format", "json"])
        .run()
        .expect(0)
        .json();
    assert_eq!(doc["run_id"], "20260102T000000Z-000002");
}
