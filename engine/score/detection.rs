//! Detection metrics: precision, recall, F1, evasion, and the manifest-validation rates.
//!
//! Every ratio here has a denominator that can be zero in real runs (a tool that reports
//! nothing, a game whose ground truth is empty, a red team that claims nothing). Each
//! function states what it returns then. The default is scikit-learn's
//! `zero_division=0`: an undefined ratio is `0.0`. Where the adversarial-IaC reference
//! runs used a different rule, the function follows the reference and says so; the rule
//! was read off the stored per-game records (3,631 games), not guessed.

use serde::{Deserialize, Serialize};

/// `num / den`, or `0.0` when `den` is zero (scikit-learn's `zero_division=0`).
///
/// Counts are far below 2^53, so the conversion to `f64` is exact.
#[must_use]
#[allow(clippy::cast_precision_loss)]
pub fn ratio(num: u64, den: u64) -> f64 {
    if den == 0 {
        0.0
    } else {
        num as f64 / den as f64
    }
}

/// Confusion counts of one comparison of findings against ground truth.
///
/// True negatives are absent on purpose: in detection there is no finite set of
/// "things that are not vulnerabilities", so no metric here may depend on them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counts {
    /// Findings matched to a ground-truth item.
    pub tp: u64,
    /// Findings that matched no ground-truth item.
    pub fp: u64,
    /// Ground-truth items that no finding matched.
    #[serde(rename = "fn")]
    pub fn_: u64,
}

impl Counts {
    /// Builds counts from the three cells.
    #[must_use]
    pub fn new(tp: u64, fp: u64, fn_: u64) -> Self {
        Self { tp, fp, fn_ }
    }

    /// Number of findings reported (`tp + fp`).
    #[must_use]
    pub fn findings(&self) -> u64 {
        self.tp.saturating_add(self.fp)
    }

    /// Number of ground-truth items (`tp + fn`).
    #[must_use]
    pub fn truths(&self) -> u64 {
        self.tp.saturating_add(self.fn_)
    }

    /// `tp / (tp + fp)`; `0.0` when nothing was reported.
    ///
    /// The reference runs agree: the 125 games with zero findings all store precision 0.
    #[must_use]
    pub fn precision(&self) -> f64 {
        precision(self.tp, self.fp)
    }

    /// `tp / (tp + fn)`; `0.0` when the ground truth is empty.
    ///
    /// The reference runs agree: the 28 games with an empty (or fully unconfirmed)
    /// manifest all store recall 0.
    #[must_use]
    pub fn recall(&self) -> f64 {
        recall(self.tp, self.fn_)
    }

    /// Harmonic mean of precision and recall; `0.0` when both are zero.
    #[must_use]
    pub fn f1(&self) -> f64 {
        f1(self.tp, self.fp, self.fn_)
    }

    /// `1 - recall`, the definition in the scoring seed. Note that with an empty ground
    /// truth this is `1.0` (recall is 0 by convention); see [`Counts::evasion_of_manifest`]
    /// for the reference framework's rule, which gives `0.0` there.
    #[must_use]
    pub fn evasion(&self) -> f64 {
        evasion_rate(self.tp, self.fn_)
    }

    /// `fn / (tp + fn)`, the evasion rate as the reference framework computes it;
    /// `0.0` when the manifest is empty (nothing to evade).
    #[must_use]
    pub fn evasion_of_manifest(&self) -> f64 {
        evasion_rate_of_manifest(self.fn_, self.truths())
    }

    /// All four headline metrics at once, for embedding in reports.
    #[must_use]
    pub fn metrics(&self) -> DetectionMetrics {
        DetectionMetrics {
            counts: *self,
            precision: self.precision(),
            recall: self.recall(),
            f1: self.f1(),
            evasion: self.evasion(),
        }
    }
}

impl std::ops::Add for Counts {
    type Output = Counts;

    /// Cell-wise sum: what micro-averaging pools.
    fn add(self, rhs: Counts) -> Counts {
        Counts {
            tp: self.tp.saturating_add(rhs.tp),
            fp: self.fp.saturating_add(rhs.fp),
            fn_: self.fn_.saturating_add(rhs.fn_),
        }
    }
}

impl std::iter::Sum for Counts {
    fn sum<I: Iterator<Item = Counts>>(iter: I) -> Counts {
        iter.fold(Counts::default(), |a, b| a + b)
    }
}

/// Counts with their derived metrics, as reports embed them.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct DetectionMetrics {
    /// The confusion counts the metrics were computed from.
    #[serde(flatten)]
    pub counts: Counts,
    /// See [`Counts::precision`].
    pub precision: f64,
    /// See [`Counts::recall`].
    pub recall: f64,
    /// See [`Counts::f1`].
    pub f1: f64,
    /// See [`Counts::evasion`].
    pub evasion: f64,
}

/// `tp / (tp + fp)`; `0.0` when `tp + fp == 0`.
#[must_use]
pub fn precision(tp: u64, fp: u64) -> f64 {
    ratio(tp, tp.saturating_add(fp))
}

/// `tp / (tp + fn)`; `0.0` when `tp + fn == 0`.
#[must_use]
pub fn recall(tp: u64, fn_: u64) -> f64 {
    ratio(tp, tp.saturating_add(fn_))
}

/// F1 computed from counts as `2tp / (2tp + fp + fn)`, which equals `2PR/(P+R)` but
/// has no 0/0 when `P + R == 0`; returns `0.0` when `tp == 0` (including no data).
#[must_use]
pub fn f1(tp: u64, fp: u64, fn_: u64) -> f64 {
    let two_tp = tp.saturating_mul(2);
    ratio(two_tp, two_tp.saturating_add(fp).saturating_add(fn_))
}

/// F1 of an already-computed precision and recall; `0.0` when both are zero.
///
/// Use this for "F1 of macro P and R", which differs from the macro mean of F1.
#[must_use]
pub fn f1_of(precision: f64, recall: f64) -> f64 {
    let sum = precision + recall;
    if sum <= 0.0 {
        0.0
    } else {
        2.0 * precision * recall / sum
    }
}

/// Evasion rate as in the scoring seed: `1 - recall`. With an empty ground truth
/// recall is 0, so this is `1.0`.
#[must_use]
pub fn evasion_rate(tp: u64, fn_: u64) -> f64 {
    1.0 - recall(tp, fn_)
}

/// Evasion rate as the adversarial-IaC framework computes it: undetected vulnerabilities
/// over the manifest size, `fn / manifest_size`.
///
/// It equals `1 - recall` whenever the manifest is non-empty. With an empty manifest
/// (`manifest_size == 0`) it returns `0.0`: all 28 reference games whose manifest was
/// empty, or had no tool-confirmed entry, store recall 0 **and** evasion 0, which
/// `1 - recall` cannot reproduce.
#[must_use]
pub fn evasion_rate_of_manifest(fn_: u64, manifest_size: u64) -> f64 {
    ratio(fn_, manifest_size)
}

/// Manifest accuracy: `confirmed / claimed`, the share of red-team claims that a static
/// tool verified; `0.0` when nothing was claimed (the default rule: no reference game
/// has zero claims, so the data fix no other).
#[must_use]
pub fn manifest_accuracy(confirmed: u64, claimed: u64) -> f64 {
    ratio(confirmed.min(claimed), claimed)
}

/// Hallucination rate: `1 - manifest accuracy` when something was claimed; `0.0` when
/// nothing was (no claim, so no hallucinated claim). The exception mirrors the reference
/// framework's evasion rule for an empty manifest and keeps an empty run from reading
/// as "everything hallucinated".
#[must_use]
pub fn hallucination_rate(confirmed: u64, claimed: u64) -> f64 {
    if claimed == 0 {
        0.0
    } else {
        1.0 - manifest_accuracy(confirmed, claimed)
    }
}

/// Corroboration rate: `corroborated / total_matches`, the share of matches that an
/// independent static tool also confirmed; `0.0` when there are no matches.
#[must_use]
pub fn corroboration_rate(corroborated: u64, total_matches: u64) -> f64 {
    ratio(corroborated.min(total_matches), total_matches)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-12
    }

    #[test]
    fn basic_metrics() {
        let c = Counts::new(2, 2, 1);
        assert!(close(c.precision(), 0.5));
        assert!(close(c.recall(), 2.0 / 3.0));
        assert!(close(c.f1(), 4.0 / 7.0));
        assert!(close(c.evasion(), 1.0 / 3.0));
        assert!(close(c.evasion_of_manifest(), 1.0 / 3.0));
        assert_eq!(c.findings(), 4);
        assert_eq!(c.truths(), 3);
    }

    #[test]
    fn zero_denominators() {
        // Tool reported nothing on a non-empty manifest.
        let silent = Counts::new(0, 0, 2);
        assert_eq!(silent.precision(), 0.0);
        assert_eq!(silent.recall(), 0.0);
        assert_eq!(silent.f1(), 0.0);
        assert_eq!(silent.evasion(), 1.0);
        assert_eq!(silent.evasion_of_manifest(), 1.0);
        // Empty manifest: the two evasion definitions part ways.
        let empty = Counts::new(0, 4, 0);
        assert_eq!(empty.recall(), 0.0);
        assert_eq!(empty.evasion(), 1.0);
        assert_eq!(empty.evasion_of_manifest(), 0.0);
        assert_eq!(Counts::default().f1(), 0.0);
        assert_eq!(f1_of(0.0, 0.0), 0.0);
    }

    #[test]
    fn manifest_rates() {
        assert!(close(manifest_accuracy(3, 4), 0.75));
        assert!(close(hallucination_rate(3, 4), 0.25));
        assert_eq!(manifest_accuracy(0, 3), 0.0);
        assert_eq!(hallucination_rate(0, 3), 1.0);
        assert_eq!(manifest_accuracy(0, 0), 0.0);
        assert_eq!(hallucination_rate(0, 0), 0.0);
        assert!(close(corroboration_rate(1, 4), 0.25));
        assert_eq!(corroboration_rate(0, 0), 0.0);
        // More confirmations than claims is bad input; it must not exceed 1.
        assert_eq!(manifest_accuracy(5, 3), 1.0);
    }

    #[test]
    fn counts_sum_and_serde() {
        let total: Counts = [Counts::new(3, 1, 0), Counts::new(0, 0, 2)]
            .into_iter()
            .sum();
        assert_eq!(total, Counts::new(3, 1, 2));
        let json = serde_json::to_value(total.metrics()).unwrap();
        assert_eq!(json["fn"], 2);
        assert_eq!(json["tp"], 3);
        assert!(close(json["precision"].as_f64().unwrap(), 0.75));
    }
}
