//! One-to-one matching of findings to ground truth, by key or by weighted similarity.
//!
//! Each (finding, truth) pair gets a score in `[0, 1]`; the Hungarian algorithm then picks
//! the one-to-one assignment with the largest total score among pairs at or above the
//! threshold. Unlike a greedy first-best pass, a strong pair is never taken if it would
//! cost two other good pairs more. The config types are plain serde data so a judge
//! YAML can declare a matcher.

mod assign;
mod compare;
mod run;

pub use compare::Record;
pub use run::{MatchLabel, MatchOutcome, MatchedPair, Matcher};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// How findings are matched to ground-truth items.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MatcherConfig {
    /// How a finding and a ground-truth item are compared.
    pub by: MatchBy,
    /// Smallest pair score that counts as a match (a true positive); pairs below it are
    /// never matched. In `(0, 1]`; ignored by `key` matching, where only equal keys match.
    #[serde(default = "default_threshold")]
    pub threshold: f64,
    /// Score from which a match is labelled `exact`; matches between `threshold` and this
    /// are `partial`. In `[threshold, 1]`.
    #[serde(default = "default_exact_at")]
    pub exact_at: f64,
}

fn default_threshold() -> f64 {
    0.5
}

fn default_exact_at() -> f64 {
    0.8
}

/// The comparison a matcher makes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum MatchBy {
    /// A pair matches when every listed field is equal (after trimming spaces); every
    /// such match is `exact`.
    Key(Vec<FieldRef>),
    /// A pair's score is the weighted mean of per-field similarities.
    Similarity(Vec<FieldRule>),
}

/// A field read from both sides.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FieldRef {
    /// Field of the finding (dotted path for JSON records, e.g. `location.path`).
    pub finding: String,
    /// Field of the ground-truth item; defaults to the same name as `finding`.
    #[serde(default)]
    pub truth: Option<String>,
}

/// One term of a weighted similarity.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FieldRule {
    /// Field of the finding (dotted path for JSON records).
    pub finding: String,
    /// Field of the ground-truth item; defaults to the same name as `finding`.
    #[serde(default)]
    pub truth: Option<String>,
    /// How the two values are compared. A field missing on either side scores 0.
    pub compare: Comparator,
    /// Relative weight of this term (finite, not negative); default 1. Weights are
    /// normalised by their sum, so only their ratios matter.
    #[serde(default = "default_weight")]
    pub weight: f64,
}

fn default_weight() -> f64 {
    1.0
}

/// A field comparator; every one returns a similarity in `[0, 1]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Comparator {
    /// 1 when the values are identical after trimming spaces, else 0.
    Equal,
    /// 1 when either value contains the other, ignoring case; empty values never match.
    Contains,
    /// 1 when the last path segments agree, ignoring ASCII case: the part after the last
    /// `/`, `\` or `:` (file basename, last `::` segment). Dots do not split.
    SameBaseName,
    /// Jaccard index of the two lower-cased word sets (runs of letters and digits).
    SharedWords,
}

/// A matcher config that cannot be run.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum MatcherConfigError {
    /// No field to compare.
    #[error("the matcher compares no field: list at least one")]
    NoFields,
    /// A weight is negative or not finite.
    #[error("weight {weight} of field `{field}` must be a finite number >= 0")]
    BadWeight {
        /// The finding field of the rule.
        field: String,
        /// The weight given.
        weight: f64,
    },
    /// All weights are zero.
    #[error("the field weights sum to 0: give at least one a positive weight")]
    ZeroWeights,
    /// Threshold outside `(0, 1]`.
    #[error("threshold {0} must be above 0 and at most 1")]
    BadThreshold(f64),
    /// `exact_at` outside `[threshold, 1]`.
    #[error("exact_at {exact_at} must lie between the threshold {threshold} and 1")]
    BadExactAt {
        /// The `exact_at` given.
        exact_at: f64,
        /// The threshold in force.
        threshold: f64,
    },
}

/// Validates `config` and matches `findings` to `truths` (see [`Matcher::run`]).
///
/// # Errors
/// An invalid config (see [`Matcher::new`]).
pub fn match_findings<F: Record, T: Record>(
    findings: &[F],
    truths: &[T],
    config: &MatcherConfig,
) -> Result<MatchOutcome, MatcherConfigError> {
    Ok(Matcher::new(config)?.run(findings, truths))
}

#[cfg(test)]
mod tests;
