//! The committed JSON Schemas: generated from the spec types (drift fails the test and
//! says how to regenerate), valid for every bundled YAML file, strict about unknown keys
//! and types, and named by a modeline at the top of every bundled file.

use std::path::{Path, PathBuf};

use caldera::{SchemaFile as Which, schema_text};

use crate::binary::Caldera;

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
        let name = format!("{}.schema.json", which.name());
        assert!(
            first.starts_with("# yaml-language-server: $schema=") && first.ends_with(&name),
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
            // Only draft-07 keywords: Ajv refuses a schema with editor-only ones.
            for editor_only in [
                "markdownDescription",
                "enumDescriptions",
                "markdownEnumDescriptions",
                "defaultSnippets",
            ] {
                assert!(!map.contains_key(editor_only), "{at}: {editor_only}");
            }
            if let Some(text) = map.get("description").and_then(|d| d.as_str()) {
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
            // An enum's values are documented in its description, one list item each.
            if let Some(values) = map.get("enum").and_then(|e| e.as_array()) {
                let text = map
                    .get("description")
                    .or_else(|| map.get("$comment"))
                    .and_then(|d| d.as_str())
                    .unwrap_or_default();
                for v in values {
                    let item = format!("- `{}`: ", v.as_str().unwrap_or_default());
                    assert!(text.contains(&item), "{at}: enum value {v} undocumented");
                }
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
    let verdict = &judge["definitions"]["verdict-format"];
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

/// Every schema, parsed, with its file stem.
fn all_schemas() -> Vec<(&'static str, serde_json::Value)> {
    Which::ALL
        .iter()
        .map(|(which, name)| (*name, schema(*which)))
        .collect()
}

#[test]
fn every_schema_has_a_stable_id_named_after_its_file() {
    for (name, schema) in all_schemas() {
        assert_eq!(
            schema["$id"],
            format!("https://caldera.dev/schemas/{name}.schema.json"),
            "{name}"
        );
    }
}

/// The schema at a place of `root`, standing alone: the place with the root's
/// definitions (so its `$ref`s resolve) and without the annotations being checked.
fn standalone(
    root: &serde_json::Value,
    place: &serde_json::Map<String, serde_json::Value>,
) -> serde_json::Value {
    let mut place = place.clone();
    for annotation in ["default", "examples", "defaultSnippets"] {
        place.remove(annotation);
    }
    if let Some(definitions) = root.get("definitions") {
        place.insert("definitions".into(), definitions.clone());
    }
    serde_json::Value::Object(place)
}

#[test]
fn every_default_and_example_is_valid_where_it_appears() {
    let mut invalid = Vec::new();
    let mut checked = 0;
    for (name, root) in all_schemas() {
        let mut all = Vec::new();
        objects(&root, String::new(), &mut all);
        for (at, map) in all {
            // Annotations sit in schema objects: skip `properties` maps and examples
            // themselves (an example value may hold a key named `default`).
            if at.contains("/examples") || at.contains("/default") || at.ends_with("/properties") {
                continue;
            }
            let mut values: Vec<(String, &serde_json::Value)> = Vec::new();
            if let Some(d) = map.get("default") {
                values.push(("default".into(), d));
            }
            for (i, e) in map
                .get("examples")
                .and_then(|e| e.as_array())
                .into_iter()
                .flatten()
                .enumerate()
            {
                values.push((format!("examples/{i}"), e));
            }
            for (i, s) in map
                .get("defaultSnippets")
                .and_then(|e| e.as_array())
                .into_iter()
                .flatten()
                .enumerate()
            {
                if let Some(body) = s.get("body") {
                    values.push((format!("defaultSnippets/{i}/body"), body));
                }
            }
            if values.is_empty() {
                continue;
            }
            let validator = jsonschema::draft7::new(&standalone(&root, map))
                .unwrap_or_else(|e| panic!("{name}{at}: {e}"));
            for (what, value) in values {
                checked += 1;
                let errors: Vec<String> = validator
                    .iter_errors(value)
                    .map(|e| e.to_string())
                    .collect();
                if !errors.is_empty() {
                    invalid.push(format!("{name}.schema.json{at}/{what}: {value} {errors:?}"));
                }
            }
        }
    }
    assert!(checked > 100, "the schemas have examples: {checked}");
    assert!(invalid.is_empty(), "{}", invalid.join("\n"));
}

#[test]
fn every_property_has_its_own_title_and_description_for_hovers() {
    for (name, root) in all_schemas() {
        let mut all = Vec::new();
        objects(&root, String::new(), &mut all);
        for (at, map) in all {
            // Skip values, and the conditions of the loader's rules (`if`/`then`/`not`
            // name keys, they do not define them).
            let rule = ["/if", "/then", "/else", "/not", "/allOf/"]
                .iter()
                .any(|r| at.contains(r));
            if at.contains("/examples") || at.contains("/default") || rule {
                continue;
            }
            let Some(properties) = map.get("properties").and_then(|p| p.as_object()) else {
                continue;
            };
            for (key, property) in properties {
                let text = property
                    .get("description")
                    .and_then(|d| d.as_str())
                    .unwrap_or_default();
                assert!(
                    !text.trim().is_empty(),
                    "{name}.schema.json{at}/properties/{key}: no description of its own"
                );
                // draft-07 ignores the siblings of `$ref`: a description next to one is lost.
                assert!(
                    property.get("$ref").is_none(),
                    "{name}.schema.json{at}/properties/{key}: `$ref` with siblings"
                );
                // The YAML language server heads a hover with the first title and shows
                // the first description among the schemas a value matched, the shared
                // definition's before the key's own: the key has the title, and the
                // definition it refers to has neither.
                assert_eq!(
                    property["title"],
                    key.as_str(),
                    "{name}.schema.json{at}/properties/{key}: title"
                );
                let refs = ["anyOf", "allOf"]
                    .iter()
                    .filter_map(|k| property.get(*k).and_then(|v| v.as_array()))
                    .flatten()
                    .filter_map(|v| v.get("$ref").and_then(|r| r.as_str()));
                for r in refs {
                    let definition = &root["definitions"][r.trim_start_matches("#/definitions/")];
                    for hidden in ["title", "description"] {
                        assert!(
                            definition.get(hidden).is_none(),
                            "{name}.schema.json{at}/properties/{key}: {r} has a {hidden} that hides the key's"
                        );
                    }
                }
            }
        }
    }
}

#[test]
fn titles_descriptions_and_definition_names_are_in_user_words() {
    // Rust type names: a CamelCase word, or one ending in `Spec`.
    let rust = regex::Regex::new(r"\b[A-Z][a-z0-9]+[A-Z][A-Za-z0-9]*\b|Spec\b").unwrap();
    for (name, root) in all_schemas() {
        for definition in root["definitions"]
            .as_object()
            .into_iter()
            .flatten()
            .map(|(k, _)| k)
        {
            assert!(
                !rust.is_match(definition),
                "{name}: definition {definition}"
            );
        }
        let mut all = Vec::new();
        objects(&root, String::new(), &mut all);
        for (at, map) in all {
            if at.contains("/examples") || at.contains("/default") {
                continue;
            }
            for key in ["title", "description"] {
                if let Some(text) = map.get(key).and_then(|t| t.as_str()) {
                    let found: Vec<&str> = rust
                        .find_iter(text)
                        .map(|m| m.as_str())
                        // Product names, not types.
                        .filter(|w| !["OpenAI", "JSONPath", "DeepSeek", "NaN"].contains(w))
                        .collect();
                    assert!(
                        found.is_empty(),
                        "{name}.schema.json{at}/{key}: {found:?} in {text:?}"
                    );
                }
            }
        }
    }
}

#[test]
fn every_bundled_cassette_validates_against_the_cassette_schema() {
    let validator = jsonschema::draft7::new(&schema(Which::Cassette)).expect("schema compiles");
    let mut checked = 0;
    for case in glob::glob("judges.d/*/cases/*/cassettes/*.json")
        .unwrap()
        .filter_map(Result::ok)
    {
        let text = std::fs::read_to_string(&case).unwrap();
        let instance: serde_json::Value = serde_json::from_str(&text).unwrap();
        let errors: Vec<String> = validator
            .iter_errors(&instance)
            .map(|e| format!("{} at {}", e, e.instance_path()))
            .collect();
        assert!(errors.is_empty(), "{}: {errors:?}", case.display());
        checked += 1;
    }
    assert!(checked > 0, "the bundled cases have cassettes");
    // VS Code maps them to the schema too.
    let settings: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(".vscode/settings.json").unwrap()).unwrap();
    let mapped = settings["json.schemas"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|m| {
            m["url"] == "./schemas/cassette.schema.json"
                && m["fileMatch"][0] == "judges.d/*/cases/*/cassettes/*.json"
        });
    assert!(
        mapped,
        ".vscode/settings.json maps cassettes to their schema"
    );
}

#[test]
fn the_labels_schema_accepts_the_rows_calibrate_reads_and_refuses_the_rest() {
    let validator = jsonschema::draft7::new(&schema(Which::Labels)).expect("schema compiles");
    let row = |text: &str| serde_json::from_str::<serde_json::Value>(text).unwrap();
    for good in [
        r#"{"unit": "r1", "dimension": "iac_quality", "score": 4, "rater": "ana", "note": "fine"}"#,
        r#"{"repo": "r1", "dimension": "iac_quality", "score": 1, "rater": "ben"}"#,
    ] {
        assert!(validator.is_valid(&row(good)), "{good}");
    }
    for bad in [
        r#"{"unit": "r1", "dimension": "iac_quality", "score": 6, "rater": "ana"}"#,
        r#"{"unit": "r1", "dimension": "iac_quality", "score": 4.5, "rater": "ana"}"#,
        r#"{"unit": "r1", "dimension": "iac_quality", "score": "4", "rater": "ana"}"#,
        r#"{"dimension": "iac_quality", "score": 4, "rater": "ana"}"#,
        r#"{"unit": "r1", "repo": "r1", "dimension": "iac_quality", "score": 4, "rater": "ana"}"#,
        r#"{"unit": "r1", "dimension": "iac_quality", "score": 4, "rater": " "}"#,
        r#"{"unit": "r1", "dimension": "iac_quality", "score": 4, "rater": "ana", "grade": 1}"#,
    ] {
        assert!(!validator.is_valid(&row(bad)), "{bad}");
    }
}

/// Whether a mapping holds, at any depth, a list of mappings or lists.
fn holds_list_of_structures(value: &serde_json::Value) -> bool {
    match value {
        serde_json::Value::Object(map) => map.values().any(holds_list_of_structures),
        serde_json::Value::Array(items) => items
            .iter()
            .any(|i| i.is_object() || i.is_array() || holds_list_of_structures(i)),
        _ => false,
    }
}

#[test]
fn no_mapping_example_completes_to_object_object() {
    // The YAML language server turns a mapping example or default into a completion
    // snippet, and writes a list of mappings inside it as `- [object Object]`.
    for (name, root) in all_schemas() {
        let mut all = Vec::new();
        objects(&root, String::new(), &mut all);
        for (at, map) in all {
            if at.contains("/examples") || at.contains("/default") {
                continue;
            }
            let values = map
                .get("examples")
                .and_then(|e| e.as_array())
                .into_iter()
                .flatten()
                .chain(map.get("default"));
            for value in values.filter(|v| v.is_object()) {
                assert!(
                    !holds_list_of_structures(value),
                    "{name}.schema.json{at}: {value}"
                );
            }
        }
    }
}

/// The errors of `result` against the result schema.
fn result_errors(validator: &jsonschema::Validator, result: &serde_json::Value) -> Vec<String> {
    validator
        .iter_errors(result)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect()
}

#[test]
fn the_result_schema_accepts_the_pinned_results_and_every_bundled_suite_run() {
    let schema = schema(Which::Result);
    assert!(
        schema["required"]
            .as_array()
            .is_some_and(|r| r.iter().any(|k| k == "decision")),
        "the hand-kept result schema is read"
    );
    let validator = jsonschema::draft7::new(&schema).expect("schema compiles");
    // The four pinned results (their clocks masked as `[volatile]`: given back a number).
    let pinned: Vec<PathBuf> =
        glob::glob("tests/integration/snapshots/integration__pipeline_pin__*.snap")
            .unwrap()
            .filter_map(Result::ok)
            .collect();
    assert_eq!(pinned.len(), 4, "{pinned:?}");
    for snap in pinned {
        let text = std::fs::read_to_string(&snap).unwrap();
        let body = text.split_once("\n---\n").map(|(_, b)| b).unwrap();
        let pinned: serde_json::Value = serde_json::from_str(body).unwrap();
        let mut result = pinned[1].clone();
        result["duration_ms"] = serde_json::json!(0);
        let errors = result_errors(&validator, &result);
        assert!(errors.is_empty(), "{}: {errors:?}", snap.display());
    }
    // What `caldera run` writes for every bundled suite.
    let out = tempfile::tempdir().unwrap();
    for suite in glob::glob("judges.d/*/suite.yaml")
        .unwrap()
        .filter_map(Result::ok)
    {
        let dir = suite.parent().unwrap();
        let file = out.path().join("result.json");
        let run = Caldera::new()
            .args(["run", "--heuristic", "--quiet", "--out"])
            .arg(&file)
            .arg(dir)
            .run();
        assert!(
            matches!(run.code, Some(0 | 1)),
            "{}: {}",
            dir.display(),
            run.stderr
        );
        let result: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
        let errors = result_errors(&validator, &result);
        assert!(errors.is_empty(), "{}: {errors:?}", dir.display());
    }
}
