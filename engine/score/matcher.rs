//! One-to-one matching of findings to ground truth, by key or by weighted similarity.
//!
//! Each (finding, truth) pair gets a score in `[0, 1]`; the Hungarian algorithm then picks
//! the one-to-one assignment with the largest total score among pairs at or above the
//! threshold. Unlike a greedy first-best pass, a strong pair is never taken if it would
//! cost two other good pairs more. The config types are plain serde data so a judge
//! YAML can declare a matcher.

mod assign;
mod compare;

pub use compare::Record;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::detection::Counts;

/// Tolerance on band comparisons, so that weights such as 0.5 + 0.3 + 0.2 that sum to
/// 0.999...9 in floating point still reach a band at 1.0.
const EPS: f64 = 1e-9;

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

/// Quality of a scored pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MatchLabel {
    /// Score at or above `exact_at`.
    Exact,
    /// Score at or above `threshold`, below `exact_at`.
    Partial,
    /// Score below `threshold`: not a match (used for near misses).
    Missed,
}

/// A scored (finding, truth) pair.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MatchedPair {
    /// Index of the finding in the input.
    pub finding: usize,
    /// Index of the ground-truth item in the input.
    pub truth: usize,
    /// Pair score in `[0, 1]`.
    pub score: f64,
    /// Band of `score`.
    pub label: MatchLabel,
    /// Per-field similarities, in the order the config lists the fields.
    pub field_scores: Vec<f64>,
}

/// Result of matching findings to ground truth.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MatchOutcome {
    /// `tp` = matched pairs, `fp` = unmatched findings, `fn` = unmatched truths, so
    /// `tp + fp` is the number of findings and `tp + fn` the number of truths.
    pub counts: Counts,
    /// Matched pairs by finding index.
    pub pairs: Vec<MatchedPair>,
    /// How many matches are `exact`.
    pub exact: usize,
    /// How many matches are `partial`.
    pub partial: usize,
    /// Findings matched to nothing, by index.
    pub unmatched_findings: Vec<usize>,
    /// Ground-truth items matched by nothing, by index.
    pub unmatched_truths: Vec<usize>,
    /// Best one-to-one pairing of the leftovers with a positive score below the
    /// threshold, labelled `missed`: what nearly matched, to explain a miss. They do
    /// not count as matches.
    pub near_misses: Vec<MatchedPair>,
}

/// A validated matcher, ready to run.
#[derive(Debug, Clone, PartialEq)]
pub struct Matcher {
    rules: Vec<(String, String, Comparator, f64)>,
    key: bool,
    threshold: f64,
    exact_at: f64,
}

impl Matcher {
    /// Validates `config`.
    ///
    /// # Errors
    /// No field, a bad weight, weights summing to 0, or thresholds out of range.
    pub fn new(config: &MatcherConfig) -> Result<Self, MatcherConfigError> {
        let side =
            |f: &String, t: &Option<String>| (f.clone(), t.clone().unwrap_or_else(|| f.clone()));
        let (rules, key): (Vec<_>, bool) = match &config.by {
            MatchBy::Key(fields) => (
                fields
                    .iter()
                    .map(|r| {
                        let (f, t) = side(&r.finding, &r.truth);
                        (f, t, Comparator::Equal, 1.0)
                    })
                    .collect(),
                true,
            ),
            MatchBy::Similarity(fields) => {
                for r in fields {
                    if !r.weight.is_finite() || r.weight < 0.0 {
                        return Err(MatcherConfigError::BadWeight {
                            field: r.finding.clone(),
                            weight: r.weight,
                        });
                    }
                }
                let rules = fields
                    .iter()
                    .map(|r| {
                        let (f, t) = side(&r.finding, &r.truth);
                        (f, t, r.compare, r.weight)
                    })
                    .collect();
                (rules, false)
            }
        };
        if rules.is_empty() {
            return Err(MatcherConfigError::NoFields);
        }
        if rules.iter().map(|r| r.3).sum::<f64>() <= 0.0 {
            return Err(MatcherConfigError::ZeroWeights);
        }
        let (threshold, exact_at) = if key {
            (1.0, 1.0)
        } else {
            (config.threshold, config.exact_at)
        };
        if !(threshold > 0.0 && threshold <= 1.0) {
            return Err(MatcherConfigError::BadThreshold(threshold));
        }
        if !(exact_at >= threshold && exact_at <= 1.0) {
            return Err(MatcherConfigError::BadExactAt {
                exact_at,
                threshold,
            });
        }
        Ok(Self {
            rules,
            key,
            threshold,
            exact_at,
        })
    }

    /// Score of one pair and its per-field similarities. Key matching scores 1 when
    /// every key field is present and equal, else 0.
    #[must_use]
    pub fn score<F: Record + ?Sized, T: Record + ?Sized>(
        &self,
        finding: &F,
        truth: &T,
    ) -> (f64, Vec<f64>) {
        let fields: Vec<f64> = self
            .rules
            .iter()
            .map(|(f, t, cmp, _)| match (finding.field(f), truth.field(t)) {
                (Some(a), Some(b)) => cmp.compare(&a, &b),
                _ => 0.0,
            })
            .collect();
        let score = if self.key {
            if fields.iter().all(|&s| s >= 1.0) {
                1.0
            } else {
                0.0
            }
        } else {
            let total: f64 = self.rules.iter().map(|r| r.3).sum();
            let sum: f64 = self.rules.iter().zip(&fields).map(|(r, s)| r.3 * s).sum();
            (sum / total).clamp(0.0, 1.0)
        };
        (score, fields)
    }

    /// Band of a score.
    #[must_use]
    pub fn label(&self, score: f64) -> MatchLabel {
        if score + EPS >= self.exact_at {
            MatchLabel::Exact
        } else if score + EPS >= self.threshold {
            MatchLabel::Partial
        } else {
            MatchLabel::Missed
        }
    }

    /// Matches `findings` to `truths` one-to-one, maximising the total score of matched
    /// pairs.
    #[must_use]
    pub fn run<F: Record, T: Record>(&self, findings: &[F], truths: &[T]) -> MatchOutcome {
        let scored: Vec<Vec<(f64, Vec<f64>)>> = findings
            .iter()
            .map(|f| truths.iter().map(|t| self.score(f, t)).collect())
            .collect();
        let accepted: Vec<Vec<f64>> = scored
            .iter()
            .map(|row| {
                row.iter()
                    .map(|(s, _)| {
                        if self.label(*s) == MatchLabel::Missed {
                            0.0
                        } else {
                            *s
                        }
                    })
                    .collect()
            })
            .collect();
        let make = |(f, t): (usize, usize)| MatchedPair {
            finding: f,
            truth: t,
            score: scored[f][t].0,
            label: self.label(scored[f][t].0),
            field_scores: scored[f][t].1.clone(),
        };
        let pairs: Vec<MatchedPair> = assign::assign(&accepted, truths.len())
            .into_iter()
            .map(make)
            .collect();
        let mut finding_used = vec![false; findings.len()];
        let mut truth_used = vec![false; truths.len()];
        for p in &pairs {
            finding_used[p.finding] = true;
            truth_used[p.truth] = true;
        }
        let unmatched_findings: Vec<usize> =
            (0..findings.len()).filter(|&i| !finding_used[i]).collect();
        let unmatched_truths: Vec<usize> = (0..truths.len()).filter(|&i| !truth_used[i]).collect();
        let leftovers: Vec<Vec<f64>> = unmatched_findings
            .iter()
            .map(|&f| unmatched_truths.iter().map(|&t| scored[f][t].0).collect())
            .collect();
        let near_misses = assign::assign(&leftovers, unmatched_truths.len())
            .into_iter()
            .map(|(f, t)| make((unmatched_findings[f], unmatched_truths[t])))
            .collect();
        let exact = pairs
            .iter()
            .filter(|p| p.label == MatchLabel::Exact)
            .count();
        let tp = pairs.len() as u64;
        MatchOutcome {
            counts: Counts::new(
                tp,
                unmatched_findings.len() as u64,
                unmatched_truths.len() as u64,
            ),
            exact,
            partial: pairs.len() - exact,
            pairs,
            unmatched_findings,
            unmatched_truths,
            near_misses,
        }
    }
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
