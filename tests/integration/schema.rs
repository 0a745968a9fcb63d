//! The committed JSON Schemas: generated from the spec types (drift fails the test and
//! says how to regenerate), valid for every bundled YAML file, strict about unknown keys
//! and types, and named by a modeline at the top of every bundled file.

use std::path::{Path, PathBuf};

use caldera::cli::schema::{Which, schema_text};

const REGENERATE: &str = "cargo run -- schema --write schemas";

fn yaml_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(rd) = std::fs::read_dir(dir) else {
        return out;
    };
    for e in rd.filter_map(Result::ok) {
        let p = e.path();
        if p.is_dir() {
            out.extend(yaml_files(&p));
        } else if p.extension().is_some_and(|x| x == "yaml" || x == "yml") {
            out.push(p);
        }
    }
    out.sort();
    out
}

fn schema(which: Which) -> serde_json::Value {
    serde_json::from_str(&schema_text(which)).expect("schema is JSON")
}

fn yaml_as_json(path: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(path).expect("readable");
    serde_saphyr::from_str::<serde_json::Value>(&text).expect("YAML parses")
}

fn which_for(path: &Path) -> Which {
    let in_case = path
        .ancestors()
        .any(|a| a.file_name().is_some_and(|n| n == "cases"));
    match path.file_name().and_then(|n| n.to_str()) {
        Some("suite.yaml") => Which::Suite,
        Some("case.yaml") if in_case => Which::Case,
        Some("expect.yaml") if in_case => Which::Expect,
        _ => Which::Judge,
    }
}

#[test]
fn committed_schemas_match_the_types() {
    for (which, name) in Which::ALL {
        let file = format!("schemas/{name}.schema.json");
        let committed = std::fs::read_to_string(&file).unwrap_or_default();
        assert!(
            committed == schema_text(which),
            "{file} is out of date with the spec types; regenerate it with `{REGENERATE}`"
        );
    }
}

#[test]
fn schemas_are_draft_07() {
    for (which, _) in Which::ALL {
        assert_eq!(
            schema(which)["$schema"],
            "http://json-schema.org/draft-07/schema#"
        );
    }
}

#[test]
fn every_bundled_yaml_file_validates_and_names_its_schema() {
    let files = yaml_files(Path::new("judges.d"));
    assert!(
        files.len() >= 8,
        "expected the bundled suites, found {files:?}"
    );
    for path in files {
        let which = which_for(&path);
        let validator = jsonschema::draft7::new(&schema(which)).expect("schema compiles");
        let instance = yaml_as_json(&path);
        let errors: Vec<String> = validator
            .iter_errors(&instance)
            .map(|e| format!("{} at {}", e, e.instance_path()))
            .collect();
        assert!(errors.is_empty(), "{}: {errors:?}", path.display());
        let first = std::fs::read_to_string(&path)
            .unwrap_or_default()
            .lines()
            .next()
            .unwrap_or_default()
            .to_owned();
        let name = match which {
            Which::Judge => "judge.schema.json",
            Which::Suite => "suite.schema.json",
            Which::Case => "case.schema.json",
            Which::Expect => "expect.schema.json",
        };
        assert!(
            first.starts_with("# yaml-language-server: $schema=") && first.ends_with(name),
            "{} must start with a yaml-language-server modeline naming {name}, found {first:?}",
            path.display()
        );
    }
}

#[test]
fn schema_rejects_an_unknown_key_and_a_wrong_type() {
    let validator = jsonschema::draft7::new(&schema(Which::Judge)).expect("schema compiles");
    let unknown = yaml_as_json(Path::new("tests/fixtures/schema/unknown-key.yaml"));
    let errors: Vec<String> = validator
        .iter_errors(&unknown)
        .map(|e| e.to_string())
        .collect();
    assert!(
        errors.iter().any(|e| e.contains("treshold")),
        "unknown key not rejected: {errors:?}"
    );
    let wrong = yaml_as_json(Path::new("tests/fixtures/schema/wrong-type.yaml"));
    let errors: Vec<String> = validator
        .iter_errors(&wrong)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(
        errors.iter().any(|e| e.contains("/weight")),
        "wrong type not rejected: {errors:?}"
    );
}
