//! Injection into what people read: a saved result whose every text field is hostile (a
//! tracking-pixel image, a phishing link, raw HTML, mentions, issue references, a code
//! fence breaker with blank lines, terminal escapes, a direction override, XML
//! noncharacters), rendered by `caldera report` as Markdown, JUnit and the terminal
//! table, and a labels file with hostile rater names rendered by `caldera calibrate`.
//! Nothing from data may become a Markdown construct, drive a terminal or make XML
//! ill-formed.

use std::path::Path;
use std::process::Command;

use serde_json::{Value, json};

use crate::binary::Caldera;
use crate::reports::{run_suite, text};

/// Everything a hostile tool output or model reply could say, in one string.
const HOSTILE: &str = "![p](https://t.example/p.png) [click](https://evil.example/login) \
    <img src=x onerror=alert(1)> <b>bold</b> @octocat @org/team #12 https://evil.example/x \
    www.evil.example *em* _em_ ~~del~~ &amp; | pipe | \u{1b}[31mRED \u{9b}31mCSI \
    \u{202e}reversed\u{202c} \u{2066}isolate\u{2069} ``` fence ``` \n\n# heading\n\n- item \
    \u{ffff}\u{fffe}";

/// A real trivy result with every text field a report prints set to [`HOSTILE`].
fn hostile_result(dir: &Path) -> std::path::PathBuf {
    let path = dir.join("trivy.json");
    let out = run_suite("judges.d/trivy", &path, None);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let mut doc: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    for key in ["run_id", "mode", "decision", "model", "suite"] {
        doc[key] = json!(format!("{key} {HOSTILE}"));
    }
    doc["gate"]["blocked"] = json!(true);
    doc["gate"]["reason"] = json!(format!("gate {HOSTILE}"));
    let dims = doc["dimensions"].as_array_mut().unwrap();
    dims[0]["name"] = json!(format!("name {HOSTILE}"));
    dims[0]["reasoning"] = json!(format!("reasoning {HOSTILE}"));
    dims[1]["status"] = json!("unscored");
    dims[1]["unscored_reason"] = json!(format!("reason {HOSTILE}"));
    dims[2]["status"] = json!("error");
    dims[2]["unscored_reason"] = json!(format!("error {HOSTILE}"));
    doc["summary"]["problems"] = json!([{
        "dimension": format!("dim {HOSTILE}"),
        "kind": format!("kind {HOSTILE}"),
        "message": format!("message {HOSTILE}"),
    }]);
    std::fs::write(&path, serde_json::to_string_pretty(&doc).unwrap()).unwrap();
    path
}

/// Characters that must never reach a terminal or a comment raw.
const RAW: [char; 4] = ['\u{1b}', '\u{9b}', '\u{202e}', '\u{2066}'];

/// Asserts that nothing in `md` outside its code spans is a link, an image, a mention,
/// an issue reference, an autolink, an HTML tag or a heading or list that data started.
/// `own_lines` are the line starts the renderer itself writes.
fn assert_inert(md: &str, own_lines: &[&str]) {
    for c in RAW {
        assert!(!md.contains(c), "raw {c:?} in\n{md}");
    }
    assert!(md.contains("octocat"), "the payload is shown: {md}");
    for line in md.lines() {
        assert!(
            line.is_empty() || own_lines.iter().any(|p| line.starts_with(p)),
            "a line the renderer did not start: {line:?}\n{md}"
        );
        let prose = outside_code_spans(line);
        let own_marks = ["<details>", "<summary>", "</summary>", "</details>", "**"];
        let prose = [":white_check_mark:", ":warning:", ":x:"]
            .iter()
            .chain(&own_marks)
            .fold(prose, |t, tag| t.replace(tag, ""));
        let chars: Vec<char> = prose.chars().collect();
        for (i, &c) in chars.iter().enumerate() {
            let escaped = i > 0 && chars[i - 1] == '\\' && !(i > 1 && chars[i - 2] == '\\');
            let next = chars.get(i + 1).copied().unwrap_or(' ');
            let bad = match c {
                '[' | ']' | '<' | '>' | '!' | '*' | '_' | '~' | '&' | '`' => !escaped,
                // A mention or an issue reference: GitHub links them after the
                // Markdown is parsed, backslash or not.
                '@' | '#' => next.is_alphanumeric() || (c == '@' && !escaped),
                ':' => next == '/',
                'w' => prose[prose.char_indices().nth(i).unwrap().0..].starts_with("www."),
                _ => false,
            };
            assert!(!bad, "{c:?} from data is live in {line:?}\n{md}");
        }
    }
}

/// `line` with its code spans (a backtick run closed by a run of the same length) cut
/// out, as CommonMark reads them.
fn outside_code_spans(line: &str) -> String {
    let chars: Vec<char> = line.chars().collect();
    let mut out = String::new();
    let mut i = 0;
    while i < chars.len() {
        if chars[i] != '`' || (i > 0 && chars[i - 1] == '\\') {
            out.push(chars[i]);
            i += 1;
            continue;
        }
        let run = chars[i..].iter().take_while(|c| **c == '`').count();
        let mut j = i + run;
        let mut close = None;
        while j < chars.len() {
            let r = chars[j..].iter().take_while(|c| **c == '`').count();
            if r == run {
                close = Some(j + r);
                break;
            }
            j += r.max(1);
        }
        match close {
            Some(end) => i = end,
            None => {
                out.extend(&chars[i..i + run]);
                i += run;
            }
        }
    }
    out
}

fn report(result: &Path, args: &[&str]) -> String {
    let out = Caldera::new().arg("report").arg(result).args(args).run();
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    out.stdout
}

#[test]
fn markdown_of_a_hostile_result_has_no_link_image_mention_or_html_from_data() {
    let dir = tempfile::tempdir().unwrap();
    let result = hostile_result(dir.path());
    let own = [
        "### caldera: ",
        "Run ",
        "| ",
        "|---",
        "**Gate:** ",
        "<details><summary>",
        "</details>",
        "- ",
    ];
    // On a terminal too: `--color always` passes what the reporter wrote.
    let md = report(&result, &["--format", "md", "--color", "always"]);
    assert_inert(&md, &own);
    // The fields called out in the review are there: the run id in a code span, the
    // mode and decision escaped.
    assert!(md.contains("Run ````run_id ![p]"), "{md}");
    assert!(md.contains("mode \\!\\[p\\]"), "{md}");
    assert!(md.contains("decision \\!\\[p\\]"), "{md}");
    // The same run against itself as baseline: the comparison's lines as well.
    let md = report(
        &result,
        &["--format", "md", "--baseline", result.to_str().unwrap()],
    );
    assert_inert(
        &md,
        &[own.as_slice(), &["Compared with ", "**No regression**"]].concat(),
    );
}

#[test]
fn terminal_table_of_a_hostile_result_shows_controls_and_direction_overrides_escaped() {
    let dir = tempfile::tempdir().unwrap();
    let result = hostile_result(dir.path());
    for args in [
        &["--format", "table", "--color", "always", "-v"][..],
        &["--format", "table", "--color", "never"][..],
    ] {
        let out = report(&result, args);
        // The table's own styles are escape sequences; the data's are not.
        assert!(!out.contains("\u{1b}[31mRED"), "{out}");
        for c in ['\u{9b}', '\u{202e}', '\u{2066}'] {
            assert!(!out.contains(c), "raw {c:?} in\n{out}");
        }
        assert!(out.contains("\\u{202e}reversed"), "{out}");
        assert!(out.contains("\\u{9b}31mCSI"), "{out}");
    }
}

#[test]
fn junit_of_a_result_with_xml_noncharacters_is_well_formed() {
    let dir = tempfile::tempdir().unwrap();
    let result = hostile_result(dir.path());
    let xml_path = dir.path().join("r.junit.xml");
    let out = Caldera::new()
        .arg("report")
        .arg(&result)
        .args(["--format", "junit", "--out"])
        .arg(&xml_path)
        .run();
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let xml = std::fs::read_to_string(&xml_path).unwrap();
    for c in ['\u{ffff}', '\u{fffe}'] {
        assert!(!xml.contains(c), "XML 1.0 cannot carry {c:?}:\n{xml}");
    }
    assert!(
        xml.contains('\u{fffd}'),
        "the replacement shows where it was"
    );
    quick_junit::Report::deserialize_from_str(&xml).expect("quick-junit reads it");
    // Expat is strict about the characters XML allows; Python has it built in.
    let parsed = Command::new("python3")
        .args([
            "-c",
            "import sys, xml.dom.minidom as m; m.parse(sys.argv[1])",
        ])
        .arg(&xml_path)
        .output();
    match parsed {
        Ok(o) => assert!(o.status.success(), "expat: {}", text(&o.stderr)),
        Err(_) => crate::notice("python3 is missing: JUnit checked without expat"),
    }
}

#[test]
fn calibrate_shows_hostile_rater_names_escaped_on_a_terminal_and_inert_in_markdown() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = tempfile::tempdir().unwrap();
    let labels = std::fs::read_to_string(root.join("ground-truth/trivy/labels/illustrative.csv"))
        .unwrap()
        .replace(",ana", ",ana\u{1b}[2J\u{9b}31m\u{202e}x")
        .replace(",ben", ",[ben](https://evil.example) @octocat <img src=x>");
    let path = dir.path().join("labels.csv");
    std::fs::write(&path, labels).unwrap();
    let run = |format: &str| {
        let out = Caldera::new()
            .dir(root)
            .args(["calibrate", "judges.d/trivy", "--labels"])
            .arg(&path)
            .args(["--format", format])
            .run();
        assert_eq!(out.code, Some(0), "{}", out.stderr);
        out.stdout
    };
    let table = run("table");
    for c in ['\u{1b}', '\u{9b}', '\u{202e}'] {
        assert!(!table.contains(c), "raw {c:?} in\n{table}");
    }
    assert!(
        table.contains("ana\\u{1b}[2J\\u{9b}31m\\u{202e}x"),
        "{table}"
    );
    let md = run("markdown");
    for c in ['\u{1b}', '\u{9b}', '\u{202e}'] {
        assert!(!md.contains(c), "raw {c:?} in\n{md}");
    }
    let unescaped = md.replace("\\<", "");
    for live in ["[ben](", "@octocat", "<img"] {
        assert!(!unescaped.contains(live), "{live} is live in\n{md}");
    }
    assert!(md.contains("\\[ben\\]\\("), "{md}");
}

#[test]
fn regression_gate_line_shows_hostile_names_escaped() {
    let dir = tempfile::tempdir().unwrap();
    let result = hostile_result(dir.path());
    let mut doc: Value = serde_json::from_str(&std::fs::read_to_string(&result).unwrap()).unwrap();
    let mut write = |score: f64, name: &str| {
        doc["dimensions"][0]["status"] = json!("scored");
        doc["dimensions"][0]["score"] = json!(score);
        let path = dir.path().join(name);
        std::fs::write(&path, serde_json::to_string(&doc).unwrap()).unwrap();
        path
    };
    let (base, new) = (write(5.0, "base.json"), write(1.0, "new.json"));
    let out = Caldera::new()
        .arg("diff")
        .arg(&base)
        .arg(&new)
        .args(["--fail-on", "regression", "--color", "always"])
        .run();
    assert_eq!(out.code, Some(1), "{}", out.stderr);
    let gate = &out.stderr;
    assert!(gate.starts_with("regression against"), "{gate}");
    for c in RAW {
        assert!(!gate.contains(c), "raw {c:?} in the gate line: {gate}");
    }
    assert!(gate.contains("\\u{202e}reversed"), "{gate}");
}

#[test]
fn judge_test_output_shows_hostile_case_names_escaped() {
    let tmp = tempfile::tempdir().unwrap();
    crate::gates::copy_trivy(tmp.path());
    let cases = tmp.path().join("judges.d/trivy/cases");
    let hostile = "iac\u{1b}[2J\u{9b}31m\u{202e}platform";
    std::fs::rename(cases.join("iac-platform"), cases.join(hostile)).unwrap();
    // A failing expectation, so the name is printed in the failures as well.
    let judge = tmp.path().join("judges.d/trivy/iac_quality.yaml");
    let yaml = std::fs::read_to_string(&judge).unwrap();
    std::fs::write(
        &judge,
        yaml.replace("- { min: 75, score: 4 }", "- { min: 75, score: 5 }"),
    )
    .unwrap();
    let out = Caldera::new()
        .dir(tmp.path())
        .args(["--color", "always", "test", "judges.d/trivy"])
        .run();
    let stdout = &out.stdout;
    assert_eq!(out.code, Some(1), "{stdout}");
    for c in ['\u{9b}', '\u{202e}'] {
        assert!(!stdout.contains(c), "raw {c:?} in\n{stdout}");
    }
    assert!(!stdout.contains("\u{1b}[2J"), "{stdout}");
    assert!(
        stdout.contains("iac\\u{1b}[2J\\u{9b}31m\\u{202e}platform::iac_quality"),
        "{stdout}"
    );
}
