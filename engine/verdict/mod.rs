//! Verdicts: heuristic band tables, assertions and caps, reading a model's reply, and the
//! verdict types the run result is made of.

pub mod assertions;
pub mod heuristic;
pub mod reply;
pub mod types;
