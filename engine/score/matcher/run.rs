//! Running a validated matcher: pair scores, bands and the optimal assignment.

use super::compare::Record;
use super::{Comparator, MatchBy, MatcherConfig, MatcherConfigError, assign};
use crate::score::detection::{Counts, DetectionMetrics};
use serde::Serialize;

/// Tolerance on band comparisons, so that weights such as 0.5 + 0.3 + 0.2 that sum to
/// 0.999...9 in floating point still reach a band at 1.0.
const EPS: f64 = 1e-9;

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

impl MatchOutcome {
    /// Precision, recall, F1 and evasion of the match counts.
    #[must_use]
    pub fn metrics(&self) -> DetectionMetrics {
        self.counts.metrics()
    }
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
