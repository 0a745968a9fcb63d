//! `caldera schema`: the JSON Schemas editors use to validate judge and suite files as
//! they are typed. Draft-07, the dialect the YAML language server supports best.
//!
//! Generated from the spec types, then shaped so editors agree with the loader
//! ([`rules`]: the checks across keys that draft-07 can say) and read well: every
//! schema has a stable `$id` (`https://caldera.dev/schemas/<name>.schema.json`; editors
//! still load the files by relative path), definitions are named and titled in user
//! words, only standard draft-07 keywords are used (Ajv 8 compiles them with its
//! default options), and a key's hover shows the key's own description.

mod rules;

use std::path::PathBuf;

use clap::{Args, ValueEnum};
use schemars::generate::SchemaSettings;

use crate::cli::Exit;
use crate::judgetest::cassette::CassetteFile;
use crate::spec::case::{CaseSpec, ExpectSpec};
use crate::spec::catalogue::CatalogueSpec;
use crate::spec::judge::JudgeSpec;
use crate::spec::suite::SuiteSpec;

/// Which schema.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum Which {
    /// Judge files (`judges.d/<tool>/*.yaml`).
    Judge,
    /// `suite.yaml`.
    Suite,
    /// A judge test case (`cases/<case>/case.yaml`).
    Case,
    /// A test case's expectations (`cases/<case>/expect.yaml`).
    Expect,
    /// A model catalogue (a suite's `model_catalogue:` file).
    Models,
    /// One line of a JSONL calibration labels file (`caldera calibrate --labels`).
    Labels,
    /// A test case's recorded replies (`cases/<case>/cassettes/<dimension>.json`).
    Cassette,
    /// The result document `caldera run` writes.
    Result,
}

/// Where the schemas say they live (`$id`): a stable name, not fetched by editors.
pub(crate) const SCHEMA_BASE: &str = "https://caldera.dev/schemas/";

impl Which {
    /// The file stem of this schema (`judge` for `judge.schema.json`).
    pub fn name(self) -> &'static str {
        Which::ALL
            .iter()
            .find(|(w, _)| std::mem::discriminant(w) == std::mem::discriminant(&self))
            .map_or("judge", |(_, name)| name)
    }

    /// Every schema, with its file stem.
    pub const ALL: [(Which, &'static str); 8] = [
        (Which::Judge, "judge"),
        (Which::Suite, "suite"),
        (Which::Case, "case"),
        (Which::Expect, "expect"),
        (Which::Models, "models"),
        (Which::Labels, "labels"),
        (Which::Cassette, "cassette"),
        (Which::Result, "result"),
    ];
}

/// Arguments of `caldera schema`.
#[derive(Debug, Args)]
pub(crate) struct SchemaArgs {
    /// Which schema to print.
    #[arg(value_enum)]
    pub which: Option<Which>,
    /// Write every schema into this folder (judge, suite, case, expect, models, labels,
    /// cassette and result `.schema.json`) instead of printing.
    #[arg(long, value_name = "DIR")]
    pub write: Option<PathBuf>,
}

/// The schema text for `which` (pretty JSON with a trailing newline).
pub fn schema_text(which: Which) -> String {
    let generator = SchemaSettings::draft07().into_generator();
    let schema = match which {
        Which::Judge => generator.into_root_schema_for::<JudgeSpec>(),
        Which::Suite => generator.into_root_schema_for::<SuiteSpec>(),
        Which::Case => generator.into_root_schema_for::<CaseSpec>(),
        Which::Expect => generator.into_root_schema_for::<ExpectSpec>(),
        Which::Models => generator.into_root_schema_for::<CatalogueSpec>(),
        Which::Labels => crate::calibrate::labels::row_schema(generator),
        Which::Cassette => generator.into_root_schema_for::<CassetteFile>(),
        Which::Result => result_schema(),
    };
    let mut value = schema.to_value();
    rules::add(&mut value);
    for_editors(&mut value);
    own_hovers(&mut value);
    rename_definitions(&mut value);
    if let Some(map) = value.as_object_mut() {
        let id = format!("{SCHEMA_BASE}{}.schema.json", which.name());
        map.shift_insert(0, "$id".into(), serde_json::Value::from(id));
    }
    let mut text = serde_json::to_string_pretty(&value).unwrap_or_else(|_| "{}".into());
    text.push('\n');
    text
}

/// The result document's schema, kept by hand in `schema/result.json`: the types that
/// write a result only serialize (several write themselves by hand), so it is checked
/// against results instead (the pinned ones and each bundled suite's, in the tests).
fn result_schema() -> schemars::Schema {
    serde_json::from_str::<serde_json::Value>(include_str!("schema/result.json"))
        .ok()
        .and_then(|v| schemars::Schema::try_from(v).ok())
        .unwrap_or_default()
}

/// Number formats schemars names that are not JSON Schema formats: strict validators
/// (Ajv) refuse a schema that uses them.
const NUMBER_FORMATS: &[&str] = &[
    "double", "float", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32",
    "uint64",
];

/// Shapes the generated schema for editors (the YAML language server's hovers and
/// completion): descriptions as unwrapped paragraphs; enums as `enum`, each value's
/// description listed in the schema's own; no `default` that the schema refuses
/// (`"default": null` would complete to `min: null`, an empty list where one item is
/// required to `bands: []`); no non-standard number formats. Only draft-07 keywords: the
/// editor-only `markdownDescription` and `enumDescriptions` make Ajv refuse the schema.
fn for_editors(value: &mut serde_json::Value) {
    use serde_json::Value;
    match value {
        Value::Object(map) => {
            if map
                .get("default")
                .is_some_and(|d| refused_default(map, d) || !completes(d))
            {
                map.shift_remove("default");
            }
            if let Some(Value::Array(examples)) = map.get_mut("examples") {
                examples.retain(completes);
                if examples.is_empty() {
                    map.shift_remove("examples");
                }
            }
            if map
                .get("format")
                .and_then(Value::as_str)
                .is_some_and(|f| NUMBER_FORMATS.contains(&f))
            {
                map.shift_remove("format");
            }
            if let Some(text) = map.get("description").and_then(Value::as_str) {
                let text = unwrap_paragraphs(text);
                map.insert("description".into(), Value::from(text));
            }
            if let Some(values) = map.get("oneOf").and_then(described_enum) {
                map.shift_remove("oneOf");
                map.insert("type".into(), Value::from("string"));
                let list = values
                    .iter()
                    .map(|(name, doc)| {
                        format!(
                            "- `{}`: {}",
                            name.as_str().unwrap_or_default(),
                            doc.as_str().unwrap_or_default()
                        )
                    })
                    .collect::<Vec<_>>()
                    .join("\n");
                let text = match map.get("description").and_then(Value::as_str) {
                    Some(own) => format!("{own}\n\n{list}"),
                    None => list,
                };
                map.insert("description".into(), Value::from(text));
                let names: Vec<Value> = values.into_iter().map(|(name, _)| name).collect();
                map.insert("enum".into(), Value::from(names));
            }
            for v in map.values_mut() {
                for_editors(v);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(for_editors),
        _ => {}
    }
}

/// Whether the YAML language server completes `value` as written: it turns a mapping
/// into a snippet key by key, but writes a list of mappings or lists inside one as
/// `- [object Object]`. Such examples are left out (the list's own key keeps its example).
fn completes(value: &serde_json::Value) -> bool {
    fn nested(value: &serde_json::Value) -> bool {
        match value {
            serde_json::Value::Object(map) => map.values().all(nested),
            serde_json::Value::Array(items) => {
                items.iter().all(|i| !i.is_object() && !i.is_array())
            }
            _ => true,
        }
    }
    match value {
        serde_json::Value::Object(map) => map.values().all(nested),
        _ => true,
    }
}

/// Whether `default` is one its own schema refuses: `null` (a value left out), or an
/// empty list or map where at least one item is required.
fn refused_default(
    schema: &serde_json::Map<String, serde_json::Value>,
    default: &serde_json::Value,
) -> bool {
    let at_least = |key: &str| {
        schema
            .get(key)
            .and_then(serde_json::Value::as_u64)
            .unwrap_or(0)
    };
    match default {
        serde_json::Value::Null => true,
        serde_json::Value::Array(a) => a.len() < at_least("minItems") as usize,
        serde_json::Value::Object(o) => o.len() < at_least("minProperties") as usize,
        _ => false,
    }
}

/// `oneOf` made only of described string constants (how schemars writes a documented
/// enum), as (value, description) pairs.
fn described_enum(
    one_of: &serde_json::Value,
) -> Option<Vec<(serde_json::Value, serde_json::Value)>> {
    one_of
        .as_array()?
        .iter()
        .map(|v| {
            let constant = v.get("const").filter(|c| c.is_string())?;
            let doc = unwrap_paragraphs(v.get("description")?.as_str()?);
            Some((constant.clone(), serde_json::Value::from(doc)))
        })
        .collect()
}

/// Joins the hard-wrapped lines of doc comments into paragraphs (blank lines and list
/// items still break), so a hover shows flowing text instead of broken lines.
fn unwrap_paragraphs(text: &str) -> String {
    let mut out = String::new();
    for line in text.lines() {
        let line = line.trim_end();
        let breaks = line.is_empty()
            || line.starts_with("- ")
            || line.starts_with("* ")
            || line.starts_with("```")
            || out.ends_with('\n')
            || out.is_empty();
        if line.is_empty() {
            out.push_str("\n\n");
        } else if breaks {
            if !out.is_empty() && !out.ends_with('\n') {
                out.push('\n');
            }
            out.push_str(line);
        } else {
            out.push(' ');
            out.push_str(line.trim_start());
        }
    }
    out.trim().to_owned()
}

/// Runs the command.
pub(crate) fn execute(args: SchemaArgs) -> Exit {
    if let Some(dir) = args.write {
        for (which, name) in Which::ALL {
            let path = dir.join(format!("{name}.schema.json"));
            if let Err(e) = std::fs::create_dir_all(&dir)
                .and_then(|_| std::fs::write(&path, schema_text(which)))
            {
                eprintln!("error: cannot write {}: {e}", path.display());
                return Exit::Error;
            }
            eprintln!("wrote {}", path.display());
        }
        return Exit::Pass;
    }
    crate::cli::output::print(&schema_text(args.which.unwrap_or(Which::Judge)));
    Exit::Pass
}

/// The definition a property's schema is, when it is one: `{$ref}`, or `anyOf`/`allOf`
/// of one `$ref` (with `null` for an optional key).
fn direct_ref(property: &serde_json::Value) -> Option<String> {
    let name = |v: &serde_json::Value| {
        v.get("$ref")?
            .as_str()?
            .strip_prefix("#/definitions/")
            .map(str::to_owned)
    };
    if let Some(n) = name(property) {
        return Some(n);
    }
    ["anyOf", "allOf"].iter().find_map(|k| {
        let refs: Vec<String> = property
            .get(*k)?
            .as_array()?
            .iter()
            .filter_map(name)
            .collect();
        (refs.len() == 1).then(|| refs[0].clone())
    })
}

/// Makes a key's hover show the key's own text. The YAML language server shows the first
/// description among the schemas a value matched, innermost first, so a shared
/// definition's description (`A number, or an expression`) would hide the key's own
/// (`The score to give, 1-5`). Every property gets a description of its own (the
/// definition's when it had none; an enum's values listed), and a definition that is a
/// property's schema keeps its text as `$comment` instead of `description`. The hover's
/// heading is the first `title` the same way: every property is titled with its key.
fn own_hovers(root: &mut serde_json::Value) {
    use serde_json::Value;
    let definitions: serde_json::Map<String, Value> = root
        .get("definitions")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let mut referenced = std::collections::BTreeSet::new();
    let mut stack = vec![&mut *root];
    while let Some(node) = stack.pop() {
        match node {
            Value::Object(map) => {
                if let Some(Value::Object(properties)) = map.get_mut("properties") {
                    for (key, property) in properties.iter_mut() {
                        if let Some(name) = direct_ref(property) {
                            own_description(property, definitions.get(&name));
                            referenced.insert(name);
                        }
                        if let Value::Object(p) = property {
                            p.shift_insert(0, "title".into(), Value::from(key.as_str()));
                        }
                    }
                }
                stack.extend(map.values_mut());
            }
            Value::Array(items) => stack.extend(items.iter_mut()),
            _ => {}
        }
    }
    let Some(Value::Object(definitions)) = root.get_mut("definitions") else {
        return;
    };
    for name in referenced {
        if let Some(Value::Object(def)) = definitions.get_mut(&name)
            && let Some(text) = def.shift_remove("description")
        {
            def.insert("$comment".into(), text);
        }
    }
}

/// Gives `property` its own description: the definition's when it has none, and the
/// definition's enum values (the `- \`value\`: ...` lines) after its own text.
fn own_description(property: &mut serde_json::Value, definition: Option<&serde_json::Value>) {
    let shared = definition
        .and_then(|d| d.get("description"))
        .and_then(serde_json::Value::as_str)
        .unwrap_or_default();
    let Some(map) = property.as_object_mut() else {
        return;
    };
    let own = map.get("description").and_then(serde_json::Value::as_str);
    let text = match own {
        None => shared.to_owned(),
        Some(own) if definition.is_some_and(|d| d.get("enum").is_some()) => {
            let values: Vec<&str> = shared.lines().filter(|l| l.starts_with("- `")).collect();
            if values.is_empty() {
                own.to_owned()
            } else {
                format!("{own}\n\n{}", values.join("\n"))
            }
        }
        Some(own) => own.to_owned(),
    };
    if !text.is_empty() {
        map.insert("description".into(), serde_json::Value::from(text));
    }
}

/// The name of a definition in user words: what editors show in messages ("Expected
/// `record-list`") and hovers, instead of the Rust type's name.
fn user_name(rust: &str) -> String {
    let named = match rust {
        "RecordsSpec" => "RecordList",
        "ConditionalSpec" => "ConditionalValue",
        "Computed" => "NumberOrExpression",
        "ComputedScore" => "ScoreOrExpression",
        "ComputedConfidence" => "ConfidenceOrExpression",
        "NoDataSpec" => "WhenNoData",
        "AdjustSpec" => "Adjustment",
        "FolderForm" => "FolderWithOptions",
        "JudgeExpect" => "JudgeExpectation",
        "ScoreExpect" => "ScoreExpectation",
        "LlmCaseSpec" => "LlmCase",
        other => other.strip_suffix("Spec").unwrap_or(other),
    };
    let mut out = String::new();
    for (i, c) in named.chars().enumerate() {
        if c.is_uppercase() && i > 0 {
            out.push('-');
        }
        out.extend(c.to_lowercase());
    }
    out
}

/// Renames every definition (and its references) to its user name; a definition that is
/// not a key's schema (a list item, a map value) gets that name in words as its `title`
/// (a key's hover is headed by the key, see [`own_hovers`]).
fn rename_definitions(root: &mut serde_json::Value) {
    use serde_json::Value;
    let Some(Value::Object(definitions)) = root.get_mut("definitions") else {
        return;
    };
    let old = std::mem::take(definitions);
    for (name, def) in old {
        let new = user_name(&name);
        let mut def = def;
        if let Value::Object(map) = &mut def
            && !map.contains_key("$comment")
        {
            map.shift_insert(0, "title".into(), Value::from(new.replace('-', " ")));
        }
        definitions.insert(new, def);
    }
    let mut stack = vec![&mut *root];
    while let Some(node) = stack.pop() {
        match node {
            Value::Object(map) => {
                if let Some(Value::String(r)) = map.get_mut("$ref")
                    && let Some(name) = r.strip_prefix("#/definitions/")
                {
                    *r = format!("#/definitions/{}", user_name(name));
                }
                stack.extend(map.values_mut());
            }
            Value::Array(items) => stack.extend(items.iter_mut()),
            _ => {}
        }
    }
}
