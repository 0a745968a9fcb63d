//! caldera: judges the output of code-analysis tools against ground truth, with
//! heuristics and with LLMs. A judge is YAML data; this crate is the one engine that
//! interprets it.
//!
//! The path of a run, module by module: `load` reads a suite (YAML + inputs) into a
//! validated plan, reporting problems as `diag::Diagnostic`s; `evidence` computes each
//! judge's named values over the run context (`doc::Doc` documents); `verdict` scores
//! them; `report` writes the run result.

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
pub mod judgetest;
pub mod llm;
pub mod load;
pub mod outfile;
pub mod plan;
pub mod provider;
pub mod render;
pub mod report;
pub mod run;
pub mod score;
pub mod spec;
pub mod verdict;
