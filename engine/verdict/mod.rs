//! Verdicts: heuristic band tables, assertions and caps, and the verdict types the run
//! result is made of.

pub mod assertions;
pub mod heuristic;
pub mod types;
