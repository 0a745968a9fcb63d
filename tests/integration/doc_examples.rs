//! The judge examples of docs/functions.md are real: each YAML block that starts with
//! `# example: <name>` is written as the only judge of a copy of the sample suite in
//! `tests/fixtures/examples`, loaded (no error allowed) and run in heuristic mode. Its
//! `# expect: <path> = <json>` lines name a value of the verdict (dotted path into the
//! dimension's JSON, e.g. `evidence.by_language` or `score`) and what it must be. Its
//! `# suite: <key>: <value>` lines are added to the sample suite's `suite.yaml`.

use std::path::Path;

use caldera::diag::Severity;
use caldera::load_suite;
use caldera::{RunOptions, run_heuristic};
use serde_json::Value;

/// One example: its name, the YAML text, and its expectations.
struct Example {
    name: String,
    yaml: String,
    expect: Vec<(String, Value)>,
    /// Lines for the suite's `suite.yaml`.
    suite: String,
}

fn examples() -> Vec<Example> {
    let doc = std::fs::read_to_string("docs/functions.md").expect("docs/functions.md");
    let mut out = Vec::new();
    let mut current: Option<Example> = None;
    for line in doc.lines() {
        if line.starts_with("```") {
            if let Some(ex) = current.take() {
                out.push(ex);
            } else if line.trim() == "```yaml" {
                current = Some(Example {
                    name: String::new(),
                    yaml: String::new(),
                    expect: Vec::new(),
                    suite: String::new(),
                });
            }
            continue;
        }
        let Some(ex) = current.as_mut() else { continue };
        if let Some(name) = line.strip_prefix("# example: ") {
            ex.name = name.trim().to_owned();
        }
        if let Some(rest) = line.strip_prefix("# suite: ") {
            ex.suite.push_str(rest);
            ex.suite.push('\n');
        }
        if let Some(rest) = line.strip_prefix("# expect: ") {
            let (path, json) = rest.split_once(" = ").expect("`# expect: path = json`");
            let value = serde_json::from_str(json)
                .unwrap_or_else(|e| panic!("expectation of {path} is not JSON: {e}"));
            ex.expect.push((path.trim().to_owned(), value));
        }
        ex.yaml.push_str(line);
        ex.yaml.push('\n');
    }
    out.retain(|e| !e.name.is_empty());
    out
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("read_dir") {
        let entry = entry.expect("entry");
        let target = to.join(entry.file_name());
        if entry.path().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copy");
        }
    }
}

/// The value at a dotted path (`a.b.0`) of a JSON document.
fn at<'a>(doc: &'a Value, path: &str) -> Option<&'a Value> {
    path.split('.').try_fold(doc, |cur, seg| match cur {
        Value::Array(items) => seg.parse::<usize>().ok().and_then(|i| items.get(i)),
        _ => cur.get(seg),
    })
}

/// Loads and runs one example; returns the dimension's verdict as JSON.
fn run_example(ex: &Example) -> Value {
    let tmp = tempfile::tempdir().expect("tempdir");
    let suite_dir = tmp.path().join("judges.d/examples");
    copy_dir(Path::new("tests/fixtures/examples"), &suite_dir);
    std::fs::write(suite_dir.join(format!("{}.yaml", ex.name)), &ex.yaml).expect("write");
    let suite_yaml = suite_dir.join("suite.yaml");
    let mut text = std::fs::read_to_string(&suite_yaml).expect("suite.yaml");
    text.push_str(&ex.suite);
    std::fs::write(&suite_yaml, text).expect("write suite.yaml");
    let env = caldera::environment();
    let (suite, diags) = load_suite(&suite_dir, &env);
    let errors: Vec<String> = diags
        .iter()
        .filter(|d| d.severity == Severity::Error)
        .map(|d| format!("{}: {}", d.code, d.message))
        .collect();
    assert!(
        errors.is_empty(),
        "example `{}` does not load: {errors:#?}",
        ex.name
    );
    let suite = suite.expect("suite loads");
    let result = run_heuristic(&env, &suite, &RunOptions::default())
        .unwrap_or_else(|d| panic!("example `{}` does not run: {d:?}", ex.name));
    let json = serde_json::to_value(&result).expect("result serialises");
    json["dimensions"][0].clone()
}

#[test]
fn every_judge_example_of_the_docs_loads_runs_and_gives_its_values() {
    let all = examples();
    assert!(all.len() >= 5, "found only {} judge examples", all.len());
    for ex in &all {
        let verdict = run_example(ex);
        assert_ne!(
            verdict["status"], "error",
            "example `{}` ended in error: {}",
            ex.name, verdict["unscored_reason"]
        );
        assert!(
            !ex.expect.is_empty(),
            "example `{}` expects nothing",
            ex.name
        );
        for (path, want) in &ex.expect {
            let got = at(&verdict, path);
            assert_eq!(
                got,
                Some(want),
                "example `{}`: {path}\nverdict: {verdict:#}",
                ex.name
            );
        }
    }
}
