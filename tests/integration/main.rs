//! All integration tests, linked into one binary (one link step instead of one per file).

mod adversarial_reproduction;
mod cli;
mod diagnostics;
mod doc_examples;
mod gates;
mod language;
mod llm_cache;
mod llm_cli;
mod llm_doctor;
mod llm_http;
mod llm_judge_outputs;
mod llm_run;
mod llm_server;
mod panel_mock;
mod readme;
mod schema;
mod scope_repo;
mod score_vectors;
mod trivy_parity;
mod trivy_suite;
