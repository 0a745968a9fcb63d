//! Verdicts: heuristic band tables, assertions and caps, reading a model's reply,
//! combining unit scores into a judge's verdict (per-repo mean and spread, panel
//! consensus, repeats), and the verdict types the run result is made of.

pub mod assertions;
pub mod combine;
pub mod heuristic;
pub mod panel;
pub mod repeat;
pub mod reply;
pub mod schema;
pub mod scoring;
pub mod types;
