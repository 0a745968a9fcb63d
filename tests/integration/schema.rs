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
            Which::Models => "models.schema.json",
        };
        assert!(
            first.starts_with("# yaml-language-server: $schema=") && first.ends_with(name),
            "{} must start with a yaml-language-server modeline naming {name}, found {first:?}",
            path.display()
        );
    }
}

#[test]
fn the_builtin_model_catalogue_validates_and_names_its_schema() {
    let path = Path::new("engine/provider/models.yaml");
    let validator = jsonschema::draft7::new(&schema(Which::Models)).expect("schema compiles");
    let errors: Vec<String> = validator
        .iter_errors(&yaml_as_json(path))
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "{errors:?}");
    let text = std::fs::read_to_string(path).unwrap();
    assert!(
        text.starts_with("# yaml-language-server: $schema=../../schemas/models.schema.json"),
        "the catalogue names its schema on its first line"
    );
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

/// Every object of `value`, depth first, with its JSON pointer.
fn objects<'a>(
    value: &'a serde_json::Value,
    at: String,
    out: &mut Vec<(String, &'a serde_json::Map<String, serde_json::Value>)>,
) {
    match value {
        serde_json::Value::Object(map) => {
            out.push((at.clone(), map));
            for (k, v) in map {
                objects(v, format!("{at}/{k}"), out);
            }
        }
        serde_json::Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                objects(v, format!("{at}/{i}"), out);
            }
        }
        _ => {}
    }
}

#[test]
fn schemas_are_shaped_for_editors() {
    for which in [Which::Judge, Which::Suite] {
        let schema = schema(which);
        let mut all = Vec::new();
        objects(&schema, String::new(), &mut all);
        for (at, map) in &all {
            // Completion would insert `min: null`.
            assert!(
                !map.get("default").is_some_and(serde_json::Value::is_null),
                "{at}: default null"
            );
            // Ajv's strict mode refuses formats it does not know.
            if let Some(f) = map.get("format").and_then(|f| f.as_str()) {
                panic!("{at}: non-standard format {f}");
            }
            if let Some(text) = map.get("description").and_then(|d| d.as_str()) {
                assert_eq!(
                    map.get("markdownDescription").and_then(|d| d.as_str()),
                    Some(text),
                    "{at}: markdownDescription"
                );
                // Paragraphs are unwrapped: a line break only before a list item or
                // between paragraphs.
                for (i, line) in text.split('\n').enumerate().skip(1) {
                    let prev = text.split('\n').nth(i - 1).unwrap_or_default();
                    assert!(
                        line.is_empty() || prev.is_empty() || line.starts_with("- "),
                        "{at}: hard-wrapped description {text:?}"
                    );
                }
            }
            if let Some(values) = map.get("enum").and_then(|e| e.as_array()) {
                let docs = map
                    .get("markdownEnumDescriptions")
                    .and_then(|d| d.as_array());
                assert_eq!(docs.map(Vec::len), Some(values.len()), "{at}: enum docs");
            }
            assert!(
                !map.contains_key("oneOf")
                    || map["oneOf"]
                        .as_array()
                        .is_some_and(|o| o.iter().all(|v| v.get("const").is_none())),
                "{at}: enum as oneOf"
            );
        }
    }
    let judge = schema(Which::Judge);
    let verdict = &judge["definitions"]["VerdictFormat"];
    assert!(verdict["examples"].is_array(), "VerdictFormat has examples");
    for (key, field) in verdict["properties"].as_object().expect("properties") {
        assert!(
            field["examples"].is_array(),
            "verdict field {key} has no example"
        );
    }
}

#[test]
fn the_editor_settings_map_the_schemas_to_the_suites() {
    let text = std::fs::read_to_string(".vscode/settings.json").expect(".vscode/settings.json");
    let settings: serde_json::Value = serde_json::from_str(&text).expect("JSON");
    let map = settings["yaml.schemas"].as_object().expect("yaml.schemas");
    // Globs as the editor reads them: `*` stays within one folder; `!` excludes.
    let options = glob::MatchOptions {
        require_literal_separator: true,
        ..glob::MatchOptions::default()
    };
    let matches = |patterns: &serde_json::Value, path: &str| {
        let patterns: Vec<&str> = patterns
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|p| p.as_str())
            .collect();
        let hit = |p: &str| glob::Pattern::new(p).unwrap().matches_with(path, options);
        patterns
            .iter()
            .filter(|p| !p.starts_with('!'))
            .any(|p| hit(p))
            && !patterns.iter().filter_map(|p| p.strip_prefix('!')).any(hit)
    };
    // Every bundled YAML file gets exactly the schema the loader reads it with, from
    // the settings alone (no modeline needed): a case or expectation file never gets the
    // judge schema.
    for path in yaml_files(Path::new("judges.d")) {
        let shown = path.to_string_lossy().replace('\\', "/");
        let mapped: Vec<&String> = map
            .iter()
            .filter(|(_, patterns)| matches(patterns, &shown))
            .map(|(schema, _)| schema)
            .collect();
        let expected = Which::ALL
            .iter()
            .find(|(w, _)| std::mem::discriminant(w) == std::mem::discriminant(&which_for(&path)))
            .map(|(_, name)| format!("./schemas/{name}.schema.json"))
            .unwrap();
        assert_eq!(mapped, [&expected], "{shown}");
    }
    for schema in map.keys() {
        assert!(Path::new(schema).is_file(), "{schema}");
    }
}
