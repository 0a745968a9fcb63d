//! `caldera schema`: the JSON Schemas editors use to validate judge and suite files as
//! they are typed. Draft-07, the dialect the YAML language server supports best.

use std::path::PathBuf;

use clap::{Args, ValueEnum};
use schemars::generate::SchemaSettings;

use crate::cli::Exit;
use crate::spec::case::{CaseSpec, ExpectSpec};
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
}

impl Which {
    /// Every schema, with its file stem.
    pub const ALL: [(Which, &'static str); 4] = [
        (Which::Judge, "judge"),
        (Which::Suite, "suite"),
        (Which::Case, "case"),
        (Which::Expect, "expect"),
    ];
}

/// Arguments of `caldera schema`.
#[derive(Debug, Args)]
pub struct SchemaArgs {
    /// Which schema to print.
    #[arg(value_enum)]
    pub which: Option<Which>,
    /// Write every schema into this folder (judge, suite, case and expect
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
    };
    let mut text = serde_json::to_string_pretty(&schema).unwrap_or_else(|_| "{}".into());
    text.push('\n');
    text
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
    print!("{}", schema_text(args.which.unwrap_or(Which::Judge)));
    Exit::Pass
}
