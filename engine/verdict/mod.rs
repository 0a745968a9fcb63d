//! Verdicts: heuristic band tables, assertions and caps, combining unit scores into a
//! judge's verdict (per-repo mean and spread, panel consensus, repeats), the verdict
//! types the run result is made of, and what the run's verdicts decide: the decision
//! (`decision.rs`) and the gate that can overrule it (`gate.rs`). Reading a model's
//! reply is `crate::reply`.

pub(crate) mod assertions;
pub(crate) mod combine;
pub(crate) mod decision;
pub(crate) mod gate;
pub(crate) mod heuristic;
pub(crate) mod panel;
pub(crate) mod repeat;
pub(crate) mod schema;
pub(crate) mod scoring;
#[cfg(test)]
pub(crate) mod testutil;
pub(crate) mod types;
