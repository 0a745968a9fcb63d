//! Verdicts: heuristic band tables, assertions and caps, combining unit scores into a
//! judge's verdict (per-repo mean and spread, panel consensus, repeats), and the verdict
//! types the run result is made of. Reading a model's reply is `crate::reply`.

pub mod assertions;
pub mod combine;
pub mod heuristic;
pub mod panel;
pub mod repeat;
pub mod schema;
pub mod scoring;
pub mod types;
