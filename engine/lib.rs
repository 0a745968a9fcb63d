//! caldera: judges the output of code-analysis tools against ground truth, with
//! heuristics and with LLMs. A judge is YAML data; this crate is the one engine that
//! interprets it.
//!
//! The path of a run, module by module, top to bottom (a module uses only those below
//! it; `tests/integration/architecture.rs` holds the order):
//!
//! - `cli` parses arguments and prints; `history` (many saved runs, through `report`),
//!   `report`, `judgetest`, `calibrate` and `plan` are the engines of the commands other
//!   than `run`;
//! - `run` is the one pipeline: inputs, context, units, a score source (the heuristic,
//!   one model, a panel, a batch), verdicts, and the result assembled once;
//! - `llm` asks models (concurrency, retries, cache, batches) through `provider`;
//! - `load` reads a suite (YAML and inputs) into validated, compiled plans, reporting
//!   problems as [`Diagnostic`]s;
//! - `verdict` turns unit scores into verdicts (bands, caps, per-repo means, panel
//!   consensus) and reads model replies;
//! - `render` and `evidence` compute each judge's named values over [`Doc`] documents;
//! - `score` holds the pure formulas (detection, agreement, aggregation), `spec` what a
//!   user can write, `doc` the document type, `diag` the one diagnostic type.
//!
//! Six modules are public as libraries of their own: `provider` (model clients behind
//! one trait), `llm` (asking models: concurrency, retries, cache, batches), `score`
//! (the formulas), `spec` (what a judge file may say), `doc` and `diag`. The rest of the
//! engine is the crate's own; the names re-exported below are what a program embedding
//! it needs: run a suite, check one, read and compare results.
//!
//! ```no_run
//! let env = caldera::environment();
//! let (suite, diagnostics) = caldera::load_suite(std::path::Path::new("judges.d/trivy"), &env);
//! let suite = suite.expect("a valid suite");
//! assert!(diagnostics.is_empty());
//! let result = caldera::run_heuristic(&env, &suite, &caldera::RunOptions::default())
//!     .expect("inputs load");
//! println!("{} {:?}", result.decision, result.total_score);
//! ```

// Diagnostics are rich by design (file, span, key path, help) and travel only on the
// error path, where their size costs nothing that matters.
#![allow(clippy::result_large_err)]

pub(crate) mod calibrate;
// The command line is where output to a person belongs.
#[allow(clippy::print_stdout, clippy::print_stderr)]
pub(crate) mod cli;
pub mod diag;
pub mod doc;
pub(crate) mod evidence;
pub(crate) mod history;
pub(crate) mod judgetest;
pub mod llm;
pub(crate) mod load;
pub(crate) mod outfile;
pub(crate) mod par;
pub(crate) mod plan;
pub(crate) mod present;
pub mod provider;
pub(crate) mod render;
pub(crate) mod reply;
pub(crate) mod report;
pub(crate) mod run;
pub mod score;
pub mod spec;
pub(crate) mod verdict;
pub(crate) mod view;

// The public API. Everything else is the crate's own (`pub(crate)`): a module's items
// are visible only where this file re-exports them, so a rename inside the engine
// breaks no caller.
//
// Running a suite: load it, run it (heuristic, one model, a panel, a batch), read the
// result and its verdicts.
pub use load::inputs::Overrides;
pub use load::suite::{Suite, load_suite};
pub use render::environment;
pub use run::llm::{LlmOptions, run_llm};
pub use run::result::RunResult;
pub use run::{Run, RunError, RunOptions, ScoreSource, run, run_heuristic};
pub use spec::judge::JudgeSpec;
pub use spec::suite::SuiteSpec;
pub use verdict::types::{Score, Status, Verdict};
// Checking a suite as `caldera validate` does, and the JSON Schemas editors use.
pub use cli::schema::{Which as SchemaFile, schema_text};
pub use cli::validate::validate_path;
pub use diag::{Diagnostic, Severity};
pub use load::confine::RootOptions;
// How caldera reads YAML (1.2 numbers, the parser's bounds), for a tool that checks
// judge files against the schemas as caldera reads them.
pub use load::yaml::{as_yaml12, options as yaml_options};
// Reading a saved result and comparing two, as `caldera report` and `diff` do.
pub use report::compare::{Change, Comparison, compare};
pub use report::model::Report;
// Reading a model's reply to a judge's verdict format, as a run does.
pub use reply::CompiledFormat;
// The command line itself, for the binary.
pub use cli::main;
pub use doc::{Doc, exit_without_freeing, on_streaming};
