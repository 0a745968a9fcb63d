//! Scoring: detection metrics, finding-to-truth matching, inter-rater agreement and
//! aggregation over games, and the paired bootstrap that tells a change from noise.
//!
//! Everything here is a pure function of its arguments (no I/O, no clock; the bootstrap
//! draws from a generator seeded by its caller), so reports can recompute any figure and tests can pin it to published
//! values. Result types implement `Serialize` so reports embed them as they are.
//! Undefined values (a ratio or coefficient with nothing to measure) are spelled out
//! per function: detection ratios use scikit-learn's `zero_division=0`, agreement
//! coefficients are `None`.

pub mod aggregate;
pub mod agreement;
pub mod bootstrap;
pub mod detection;
pub mod matcher;
pub mod round;

pub use aggregate::{MacroAverages, MacroMicro, StdConvention, Summary, macro_micro};
pub use detection::{Counts, DetectionMetrics};
pub use matcher::{MatchOutcome, Matcher, MatcherConfig, match_findings};

#[cfg(test)]
mod proptests;
