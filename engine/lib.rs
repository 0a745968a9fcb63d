//! caldera: judges the output of code-analysis tools against ground truth.
pub mod score;
