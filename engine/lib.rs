//! caldera: judges the output of code-analysis tools against ground truth.

pub mod llm;
pub mod provider;
pub mod spec;
pub mod verdict;
