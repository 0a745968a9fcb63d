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

pub use aggregate::{
    AggregateOptions, F1Rule, MacroAverages, MacroMicro, MacroMicroStats, MacroStats, Stats,
    StdConvention, Summary, Summation, macro_micro, macro_micro_with,
};
pub use detection::{Counts, DetectionMetrics};
pub use matcher::{MatchOutcome, Matcher, MatcherConfig, match_findings};

/// How far below a bar a score may sit and still reach it: floating-point summation
/// leaves 4.95 / 1.5 at 3.2999999999999994, which is 3.3. Far below any real difference
/// between two weighted scores (weights and scores are written with a few decimals).
pub const EPSILON: f64 = 1e-9;

/// Whether `score` reaches `bar`, exactly up to floating-point noise ([`EPSILON`]).
pub fn reaches(score: f64, bar: f64) -> bool {
    score >= bar - EPSILON
}

#[cfg(test)]
mod proptests;
