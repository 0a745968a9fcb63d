//! Verdicts: heuristic band tables, assertions and caps, combining unit scores into a
//! judge's verdict (per-repo mean and spread, panel consensus, repeats), the verdict
//! types the run result is made of, and what the run's verdicts decide: the decision
//! (`decision.rs`) and the gate that can overrule it (`gate.rs`). Reading a model's
//! reply is `crate::reply`.

pub mod assertions;
pub mod combine;
pub mod decision;
pub mod gate;
pub mod heuristic;
pub mod panel;
pub mod repeat;
pub mod schema;
pub mod scoring;
#[cfg(test)]
pub(crate) mod testutil;
pub mod types;
