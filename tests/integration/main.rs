//! All integration tests, linked into one binary (one link step instead of one per file).

// Tests explain their failures and skips on the console; helpers shared between test
// files are `pub` inside this one binary, which exports nothing: they need no docs.
#![allow(
    clippy::print_stdout,
    clippy::print_stderr,
    missing_docs,
    unreachable_pub
)]

mod action;
mod adversarial_reproduction;
mod architecture;
mod binary;
mod calibrate;
mod cli;
mod cli_output;
mod closed_pipe;
mod confine;
mod diagnostics;
mod doc_examples;
mod empty_results;
mod gates;
mod gzip_inputs;
mod history;
mod hostile;
mod judge_cases;
mod language;
mod llm_accounting;
mod llm_batch;
mod llm_cache;
mod llm_cli;
mod llm_doctor;
mod llm_http;
mod llm_judge_outputs;
mod llm_openai_batch;
mod llm_panel;
mod llm_prompt_cache;
mod llm_rate_limit;
mod llm_reasoning;
mod llm_repeat;
mod llm_run;
mod llm_schema;
mod llm_secrets;
mod llm_server;
mod llm_shards;
mod model_catalogue;
mod numbers;
mod outputs;
mod outside_writes;
mod panel_mock;
mod parity;
mod pipeline_pin;
mod plan;
mod readme;
mod recipes;
mod report_browser;
mod report_injection;
mod report_scale;
mod reports;
mod same_result;
mod schema;
mod schema_agreement;
mod scope_repo;
mod score_vectors;
mod scoring_pins;
mod sdk_requests;
mod shards;
mod shared;
mod streaming;
mod trivy_parity;
mod trivy_suite;
mod truth_key;
mod typos;

/// A line `cargo test` shows even for a passing test (a skipped check, a missing tool):
/// written to the process's stderr, which the harness does not capture as it does
/// `eprintln!`.
pub fn notice(message: &str) {
    use std::io::Write as _;
    let _ = writeln!(std::io::stderr(), "notice: {message}");
}
