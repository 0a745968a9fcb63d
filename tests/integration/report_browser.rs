//! The HTML report in a real browser: Debian's headless chromium, driven from its command
//! line. For the trivy and adversarial-iac suites (heuristic), a panel run of trivy
//! against a loopback model server, and a `scope: repo` suite: the page loads with no
//! console error, the decision, every dimension name and the weighted score are visible,
//! and every evidence block opens on a click. Screenshots go to target/report-screens/.
//!
//! Without chromium the test says it skipped (a notice `cargo test` shows); with `CI`
//! set, a missing chromium fails it (`.ci/run` installs it).

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::binary::Caldera;
use crate::llm_server::{MockServer, anthropic_text};
use crate::reports::{run_suite, text};

/// The browser, if this machine has one.
pub fn chromium() -> Option<PathBuf> {
    ["/usr/bin/chromium", "chromium", "chromium-browser"]
        .iter()
        .map(PathBuf::from)
        .find(|c| {
            Command::new(c)
                .arg("--version")
                .output()
                .is_ok_and(|o| o.status.success())
        })
}

/// Chromium, headless, isolated in its own profile folder.
pub fn browser(chromium: &Path, profile: &Path) -> Command {
    let mut cmd = Command::new(chromium);
    cmd.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--disable-extensions",
        "--disable-background-networking",
        "--enable-logging=stderr",
        "--v=0",
    ])
    .arg(format!("--user-data-dir={}", profile.display()));
    cmd
}

/// Hooks installed before anything else on the page: every error, console error or
/// warning, failed resource load and unhandled rejection is recorded.
pub const HOOKS: &str = r#"<script>
window.__problems = [];
window.addEventListener('error', function (e) {
  window.__problems.push('error: ' + (e.message || (e.target && (e.target.src || e.target.href)) || 'resource'));
}, true);
window.addEventListener('unhandledrejection', function (e) { window.__problems.push('rejection: ' + e.reason); });
['error', 'warn'].forEach(function (level) {
  var orig = console[level];
  console[level] = function () { window.__problems.push('console.' + level + ': ' + Array.from(arguments).join(' ')); orig.apply(console, arguments); };
});
</script>"#;

/// Runs at the end of the page: what a reader sees (innerText only holds rendered text),
/// then a click on every evidence summary and whether its content became visible.
const PROBE: &str = r#"<script>
(function () {
  var before = document.body.innerText;
  var evidence = Array.from(document.querySelectorAll('details.evidence')).map(function (d) {
    var pre = d.querySelector('pre');
    var shownBefore = pre.checkVisibility();
    d.querySelector('summary').click();
    return { open: d.open, shownBefore: shownBefore, shownAfter: pre.checkVisibility(),
             height: pre.getBoundingClientRect().height,
             readable: document.body.innerText.indexOf(pre.innerText.slice(0, 40)) >= 0 };
  });
  var out = document.createElement('pre');
  out.id = 'probe';
  out.textContent = JSON.stringify({ text: before, evidence: evidence, problems: window.__problems });
  document.body.appendChild(out);
})();
</script>"#;

/// What the probe saw.
#[derive(serde::Deserialize, Debug)]
struct Seen {
    text: String,
    evidence: Vec<Evidence>,
    problems: Vec<String>,
}

#[derive(serde::Deserialize, Debug)]
#[serde(rename_all = "camelCase")]
struct Evidence {
    open: bool,
    shown_before: bool,
    shown_after: bool,
    height: f64,
    readable: bool,
}

/// Loads `page` with the hooks and probe, and returns what they saw.
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
    let start = dom.find("<pre id=\"probe\">").unwrap_or_else(|| {
        panic!(
            "the probe did not run; chromium said:\n{}",
            text(&out.stderr)
        )
    }) + "<pre id=\"probe\">".len();
    let end = start + dom[start..].find("</pre>").unwrap();
    let json = dom[start..end]
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&nbsp;", "\u{a0}")
        .replace("&amp;", "&");
    serde_json::from_str(&json).expect("probe JSON")
}

/// Console messages chromium logged while loading the untouched page, and a screenshot.
pub fn console_and_screenshot(
    chromium: &Path,
    dir: &Path,
    html: &Path,
    shot: &Path,
) -> Vec<String> {
    let out = browser(chromium, &dir.join("profile-shot"))
        .arg(format!("--screenshot={}", shot.display()))
        .arg("--window-size=1280,2400")
        .arg(format!("file://{}", html.display()))
        .output()
        .expect("chromium runs");
    text(&out.stderr)
        .lines()
        .filter(|l| l.contains(":CONSOLE") || l.contains("Uncaught"))
        .map(str::to_owned)
        .collect()
}

/// Checks one report page; returns the visible text.
fn check_page(chromium: &Path, result: &Path, name: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let html_path = dir.path().join(format!("{name}.html"));
    let out = Caldera::new()
        .arg("report")
        .arg(result)
        .args(["--format", "html", "--out"])
        .arg(&html_path)
        .run();
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let html = std::fs::read_to_string(&html_path).unwrap();
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(result).unwrap()).unwrap();

    let screens = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/report-screens");
    std::fs::create_dir_all(&screens).unwrap();
    let shot = screens.join(format!("{name}.png"));
    let _ = std::fs::remove_file(&shot);
    let console = console_and_screenshot(chromium, dir.path(), &html_path, &shot);
    assert!(console.is_empty(), "{name}: console messages: {console:#?}");
    assert!(
        std::fs::metadata(&shot).is_ok_and(|m| m.len() > 10_000),
        "{name}: no screenshot at {}",
        shot.display()
    );

    let seen = probe(chromium, dir.path(), &html);
    assert!(seen.problems.is_empty(), "{name}: {:#?}", seen.problems);
    let decision = doc["decision"].as_str().unwrap();
    let score = format!("{:.2}", doc["total_score"].as_f64().unwrap());
    assert!(
        seen.text.contains(&format!("Decision\n{decision}")),
        "{name}: decision not visible"
    );
    assert!(
        seen.text.contains(&format!("Weighted score\n{score} / 5")),
        "{name}: weighted score {score} not visible in\n{}",
        &seen.text[..seen.text.len().min(600)]
    );
    for d in doc["dimensions"].as_array().unwrap() {
        let dim = d["name"].as_str().unwrap();
        assert!(
            seen.text.contains(dim),
            "{name}: dimension {dim} not visible"
        );
    }
    assert!(!seen.evidence.is_empty(), "{name}: no evidence block");
    for (i, e) in seen.evidence.iter().enumerate() {
        assert!(
            !e.shown_before && e.open && e.shown_after && e.height > 0.0 && e.readable,
            "{name}: evidence block {i} does not expand: {e:?}"
        );
    }
    seen.text
}

/// The console check itself catches a console error (so a silent pass means something).
fn console_check_works(chromium: &Path) {
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("control.html");
    std::fs::write(
        &page,
        "<!doctype html><html><head><link rel=\"icon\" href=\"data:,\"></head><body><p>x</p><script>console.error('caldera-control')</script></body></html>",
    )
    .unwrap();
    let shot = dir.path().join("control.png");
    let console = console_and_screenshot(chromium, dir.path(), &page, &shot);
    assert!(
        console.iter().any(|l| l.contains("caldera-control")),
        "chromium's console log is not readable here: {console:?}"
    );
}

/// A panel of three models that disagree now and then, from a loopback server.
async fn panel_run(dir: &Path) -> PathBuf {
    let server = MockServer::start(|_, seen| {
        let model = seen.body["model"].as_str().unwrap_or_default().to_owned();
        let len = seen.body.to_string().len();
        let score = if model.contains("haiku") {
            2 + (len % 3) as i64
        } else if model.contains("opus") {
            3 + (len % 2) as i64
        } else {
            4
        };
        anthropic_text(
            &format!(
                r#"{{"score": {score}, "confidence": 0.8, "reasoning": "{model} reads the evidence", "evidence_cited": ["e"], "recommendations": ["r"], "sub_scores": {{}}}}"#
            ),
            "end_turn",
        )
    })
    .await;
    let out = dir.join("panel.json");
    let base = server.base.clone();
    let (o, cache) = (out.clone(), dir.join("cache"));
    let status = tokio::task::spawn_blocking(move || {
        Caldera::new()
            .env("ANTHROPIC_API_KEY", "test-key")
            .env("ANTHROPIC_BASE_URL", base)
            .args([
                "run",
                "judges.d/trivy",
                "--models",
                "sonnet,opus,haiku",
                "--quiet",
                "--out",
            ])
            .arg(&o)
            .arg("--cache-dir")
            .arg(&cache)
            .run()
    })
    .await
    .unwrap();
    assert!(out.is_file(), "{}", status.stderr);
    out
}

/// A `scope: repo` judge over the trivy samples: one verdict per repo.
fn per_repo_run(dir: &Path) -> PathBuf {
    let suite = dir.join("per-repo");
    std::fs::create_dir_all(&suite).unwrap();
    // The samples are copied in: a suite reads nothing outside its own project.
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("ground-truth/trivy");
    for sub in ["outputs", "expected"] {
        std::fs::create_dir_all(suite.join(sub)).unwrap();
        for entry in std::fs::read_dir(data.join(sub)).unwrap() {
            let path = entry.unwrap().path();
            std::fs::copy(&path, suite.join(sub).join(path.file_name().unwrap())).unwrap();
        }
    }
    std::fs::write(
        suite.join("suite.yaml"),
        "suite: per-repo\ninputs:\n  results: outputs\n  ground_truth: expected\n",
    )
    .unwrap();
    std::fs::write(
        suite.join("found.yaml"),
        "dimension: findings_per_repo\nweight: 1.0\nscope: repo\nevidence:\n  n: << (result.vulnerabilities or []) | length >>\nheuristic:\n  metric: n\n  bands:\n    - { min: 8, score: 5 }\n    - { min: 3, score: 4 }\n    - { min: 1, score: 3 }\n    - { score: 2 }\n  reasoning: << id >> reports << n >> findings\n",
    )
    .unwrap();
    let out = dir.join("per-repo.json");
    let run = run_suite(suite.to_str().unwrap(), &out, None);
    assert!(out.is_file(), "{}", run.stderr);
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn html_reports_in_headless_chromium() {
    let Some(chromium) = chromium() else {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI must have chromium for the HTML report test (apt-get install chromium)"
        );
        crate::notice("skipped html_reports_in_headless_chromium: no chromium on this machine");
        return;
    };
    console_check_works(&chromium);
    let dir = tempfile::tempdir().unwrap();
    let trivy = dir.path().join("trivy.json");
    let iac = dir.path().join("adversarial-iac.json");
    run_suite("judges.d/trivy", &trivy, None);
    run_suite("judges.d/adversarial-iac", &iac, None);
    let panel = panel_run(dir.path()).await;
    let per_repo = per_repo_run(dir.path());
    let c = chromium.clone();
    tokio::task::spawn_blocking(move || {
        check_page(&c, &trivy, "trivy");
        check_page(&c, &iac, "adversarial-iac");
        let seen = check_page(&c, &panel, "trivy-panel");
        for part in [
            "Panel agreement",
            "Mean pairwise Cohen's kappa",
            "Fleiss' kappa",
            "Krippendorff's alpha",
            "Unanimous",
            "Heuristic:",
            "Model:",
        ] {
            assert!(seen.contains(part), "panel page lacks {part}");
        }
        let seen = check_page(&c, &per_repo, "per-repo");
        assert!(seen.contains("Per repo"), "per-repo chart section missing");
    })
    .await
    .unwrap();
    let html = std::fs::read_to_string(dir.path().join("panel.json")).unwrap_or_default();
    assert!(
        html.contains("\"panel\""),
        "the panel run reports agreement"
    );
}
