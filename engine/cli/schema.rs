//! `caldera schema`: the JSON Schemas editors use to validate judge and suite files as
//! they are typed. Draft-07, the dialect the YAML language server supports best.

use std::path::PathBuf;

use clap::{Args, ValueEnum};
use schemars::generate::SchemaSettings;

use crate::cli::Exit;
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
}

impl Which {
    /// Every schema, with its file stem.
    pub const ALL: [(Which, &'static str); 5] = [
        (Which::Judge, "judge"),
        (Which::Suite, "suite"),
        (Which::Case, "case"),
        (Which::Expect, "expect"),
        (Which::Models, "models"),
    ];
}

/// Arguments of `caldera schema`.
#[derive(Debug, Args)]
pub struct SchemaArgs {
    /// Which schema to print.
    #[arg(value_enum)]
    pub which: Option<Which>,
    /// Write every schema into this folder (judge, suite, case, expect and models
    /// `.schema.json`) instead of printing.
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
    };
    let mut value = schema.to_value();
    for_editors(&mut value);
    let mut text = serde_json::to_string_pretty(&value).unwrap_or_else(|_| "{}".into());
    text.push('\n');
    text
}

/// Number formats schemars names that are not JSON Schema formats: strict validators
/// (Ajv) refuse a schema that uses them.
const NUMBER_FORMATS: &[&str] = &[
    "double", "float", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32",
    "uint64",
];

/// Shapes the generated schema for editors (the YAML language server's hovers and
/// completion): descriptions as unwrapped paragraphs, also as `markdownDescription`;
/// enums as `enum` with a description per value; no `"default": null` (completion would
/// insert `min: null`); no non-standard number formats.
fn for_editors(value: &mut serde_json::Value) {
    use serde_json::Value;
    match value {
        Value::Object(map) => {
            if map.get("default").is_some_and(Value::is_null) {
                map.shift_remove("default");
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
                map.insert("description".into(), Value::from(text.clone()));
                map.insert("markdownDescription".into(), Value::from(text));
            }
            if let Some(values) = map.get("oneOf").and_then(described_enum) {
                map.shift_remove("oneOf");
                map.insert("type".into(), Value::from("string"));
                let (names, docs): (Vec<Value>, Vec<Value>) = values.into_iter().unzip();
                map.insert("enum".into(), Value::from(names));
                map.insert("enumDescriptions".into(), Value::from(docs.clone()));
                map.insert("markdownEnumDescriptions".into(), Value::from(docs));
            }
            for v in map.values_mut() {
                for_editors(v);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(for_editors),
        _ => {}
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
pub fn execute(args: SchemaArgs) -> Exit {
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
