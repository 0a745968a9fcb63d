//! Verdicts: heuristic band tables, assertions and caps, reading a model's reply,
//! combining unit scores into a judge's verdict (per-repo mean and spread, panel
//! consensus, repeats), and the verdict types the run result is made of.

pub(crate) mod assertions;
pub(crate) mod combine;
pub(crate) mod heuristic;
pub(crate) mod panel;
pub(crate) mod repeat;
pub(crate) mod reply;
pub(crate) mod schema;
pub(crate) mod scoring;
pub(crate) mod types;
