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
//! - `reply` reads a model's reply into a verdict (`load` compiles each judge's verdict
//!   format with it, `llm` and `run` read replies);
//! - `verdict` turns unit scores into verdicts (bands, caps, per-repo means, panel
//!   consensus);
//! - `render` and `evidence` compute each judge's named values over [`Doc`] documents;
//! - `score` holds the pure formulas (detection, agreement, aggregation), `spec` what a
//!   user can write, `doc` the document type, `diag` the one diagnostic type.
//!
//! The names below are what a program embedding the engine needs for a run:
//!
//! ```no_run
//! let env = caldera::render::environment();
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

pub mod calibrate;
// The command line is where output to a person belongs.
#[allow(clippy::print_stdout, clippy::print_stderr)]
pub mod cli;
pub mod diag;
pub mod doc;
pub mod evidence;
pub mod history;
pub mod judgetest;
pub mod llm;
pub mod load;
pub mod outfile;
pub mod par;
pub mod plan;
pub mod present;
pub mod provider;
pub mod render;
pub mod reply;
pub mod report;
pub mod run;
pub mod score;
pub mod spec;
pub mod verdict;

pub use diag::{Diagnostic, Severity};
pub use doc::Doc;
pub use load::inputs::Overrides;
pub use load::suite::{Suite, load_suite};
pub use run::llm::{LlmOptions, run_llm};
pub use run::result::RunResult;
pub use run::{Run, RunError, RunOptions, ScoreSource, run, run_heuristic};
pub use spec::judge::JudgeSpec;
pub use spec::suite::SuiteSpec;
pub use verdict::types::{Score, Status, Verdict};
