//! All integration tests, linked into one binary.

mod llm_cache;
mod llm_cli;
mod llm_doctor;
mod llm_http;
mod llm_judge_outputs;
mod llm_server;
