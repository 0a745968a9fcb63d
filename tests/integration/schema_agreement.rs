//! The JSON Schemas and the loader agree: every file of the edge corpus under
//! `tests/fixtures/schema-agreement/{judge,suite}/` is accepted by caldera exactly when
//! the schema accepts it, as its name says (`accept-*` / `refuse-*`). The schema side is
//! checked twice, independently of caldera's YAML reading: by the `jsonschema` crate over
//! the YAML read with editor rules, and by Python's `jsonschema` over PyYAML with a YAML
//! 1.2 resolver (`validate.py`; skipped with a notice where python3 lacks either package).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::binary::Caldera;

const CORPUS: &str = "tests/fixtures/schema-agreement";

const BASE_JUDGE: &str = "dimension: d\nweight: 1\nevidence: { n: 1 }\n\
    heuristic: { metric: n, bands: [{ score: 2 }], reasoning: r }\n";
const BASE_SUITE: &str = "suite: s\ninputs: { results: data }\n";

/// (file, expected acceptance, which schema) for every corpus file.
fn corpus() -> Vec<(PathBuf, bool, &'static str)> {
    let mut out = Vec::new();
    for which in ["judge", "suite"] {
        let mut files: Vec<PathBuf> = std::fs::read_dir(Path::new(CORPUS).join(which))
            .expect("corpus folder")
            .filter_map(Result::ok)
            .map(|e| e.path())
            .collect();
        files.sort();
        for f in files {
            let name = f.file_name().unwrap().to_string_lossy().into_owned();
            let accept = name.starts_with("accept-");
            assert!(
                accept || name.starts_with("refuse-"),
                "{name}: accept-/refuse-?"
            );
            out.push((f, accept, which));
        }
    }
    assert!(out.len() >= 20, "the corpus is there");
    out
}

/// Whether caldera loads `file` (as the judge, or as suite.yaml) without an error.
fn caldera_accepts(file: &Path, which: &str) -> bool {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::create_dir_all(dir.join("data")).unwrap();
    std::fs::write(dir.join("data/r.json"), r#"{"id": "r"}"#).unwrap();
    let text = std::fs::read_to_string(file).unwrap();
    let (suite, judge) = match which {
        "judge" => (BASE_SUITE.to_owned(), text),
        _ => (text, BASE_JUDGE.to_owned()),
    };
    std::fs::write(dir.join("suite.yaml"), suite).unwrap();
    std::fs::write(dir.join("judge.yaml"), judge).unwrap();
    let env = caldera::environment();
    let (_, diags) = caldera::load_suite(dir, &env);
    diags.iter().all(|d| !d.is_error())
}

fn schema(which: &str) -> serde_json::Value {
    let text = std::fs::read_to_string(format!("schemas/{which}.schema.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// The `jsonschema` crate's verdict on the file read with editor (YAML 1.2) rules.
fn crate_accepts(file: &Path, which: &str) -> bool {
    let validator = jsonschema::draft7::new(&schema(which)).expect("schema compiles");
    let text = std::fs::read_to_string(file).unwrap();
    // Read as YAML 1.2 core reads it (`0b11` is text), as an editor does.
    let text = caldera::as_yaml12(&text);
    match serde_saphyr::from_str_with_options::<serde_json::Value>(&text, caldera::yaml_options()) {
        Ok(instance) => validator.is_valid(&instance),
        Err(_) => false,
    }
}

/// Python's verdicts, by file, or None when python3 lacks `jsonschema` or `yaml`.
fn python_verdicts(files: &[(PathBuf, bool, &str)]) -> Option<BTreeMap<PathBuf, bool>> {
    let ready = Command::new("python3")
        .args(["-c", "import jsonschema, yaml"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !ready {
        println!(
            "notice: python3 with jsonschema and PyYAML not found; the Python check is skipped"
        );
        return None;
    }
    let mut verdicts = BTreeMap::new();
    for which in ["judge", "suite"] {
        let out = Command::new("python3")
            .arg(Path::new(CORPUS).join("validate.py"))
            .arg(format!("schemas/{which}.schema.json"))
            .args(files.iter().filter(|f| f.2 == which).map(|f| &f.0))
            .output()
            .expect("python3 runs");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        for line in String::from_utf8_lossy(&out.stdout).lines() {
            let (verdict, path) = line.split_once('\t').expect("verdict<TAB>path");
            verdicts.insert(PathBuf::from(path), verdict == "accepted");
        }
    }
    Some(verdicts)
}

#[test]
fn loader_and_schemas_agree_on_the_edge_corpus() {
    let files = corpus();
    let python = python_verdicts(&files);
    let mut disagreements = Vec::new();
    for (file, expected, which) in &files {
        let mut verdicts = vec![
            ("caldera", caldera_accepts(file, which)),
            ("jsonschema crate", crate_accepts(file, which)),
        ];
        if let Some(p) = &python {
            verdicts.push(("python jsonschema", p[file]));
        }
        for (who, accepted) in verdicts {
            if accepted != *expected {
                disagreements.push(format!(
                    "{}: {who} {}",
                    file.display(),
                    if accepted { "accepts" } else { "refuses" }
                ));
            }
        }
    }
    assert!(disagreements.is_empty(), "{}", disagreements.join("\n"));
}

/// The first error caldera reports on `judge` (a judge file) or `suite` (suite.yaml), as
/// `caldera validate` prints it.
fn validate_output(suite: &str, judge: &str) -> String {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::create_dir_all(dir.join("data")).unwrap();
    std::fs::write(dir.join("data/r.json"), r#"{"id": "r"}"#).unwrap();
    std::fs::write(dir.join("suite.yaml"), suite).unwrap();
    std::fs::write(dir.join("judge.yaml"), judge).unwrap();
    let out = Caldera::new().arg("validate").arg(dir).run();
    assert_eq!(out.code, Some(2), "refused as an input error");
    format!("{}{}", out.stdout, out.stderr)
}

#[test]
fn a_named_input_with_file_and_newest_is_refused_at_its_line() {
    let suite = "suite: s\ninputs:\n  results: data\n  files:\n    base: { file: b.json, newest: '*.json' }\n";
    let out = validate_output(suite, BASE_JUDGE);
    assert!(
        out.contains("named input `base` has both `file` and `newest`"),
        "{out}"
    );
    assert!(
        out.contains("suite.yaml:5:11"),
        "file:line:col of the input: {out}"
    );
}

#[test]
fn a_binary_number_is_text_as_in_yaml_1_2_and_refused_where_a_number_is_needed() {
    let judge = BASE_JUDGE.replace("weight: 1", "weight: 0b11");
    let out = validate_output(BASE_SUITE, &judge);
    assert!(
        out.contains("judge.yaml:2:9"),
        "file:line:col of the value: {out}"
    );
    assert!(
        out.contains("YAML 1.2 reads `0b11` as text, not a number"),
        "{out}"
    );
}
