//! All integration tests, linked into one binary.

mod llm_judge_outputs;
