//! The formulas of a calibration, as pure functions: agreement with a rater (weighted
//! kappa and exact agreement, through `score::agreement`), the confusion matrix, the
//! judge's mean bias with a confidence interval, and pass rates with the correction for
//! the judge's error rates.

use serde::Serialize;

use crate::score::agreement::{Weighting, cohen_kappa};

/// The 1-5 scale in order: weighted kappa weighs a disagreement by the squared distance
/// between scores on it, whichever scores happen to occur.
pub(crate) const SCALE: [i64; 5] = [1, 2, 3, 4, 5];

/// Agreement of the judge with one rater (or the consensus) over the units both scored.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub(crate) struct Agreement {
    /// Quadratic-weighted Cohen's kappa; null when undefined (no unit, or both always gave
    /// one and the same score).
    pub weighted_kappa: Option<f64>,
    /// Share of units with the same score; null with no unit.
    pub exact: Option<f64>,
    /// Units both scored.
    pub n: usize,
}

/// Agreement over `pairs` of (rater, judge) scores.
pub(crate) fn agreement(pairs: &[(i64, i64)]) -> Agreement {
    let a: Vec<Option<i64>> = pairs.iter().map(|p| Some(p.0)).collect();
    let b: Vec<Option<i64>> = pairs.iter().map(|p| Some(p.1)).collect();
    match cohen_kappa(&a, &b, Weighting::Quadratic, Some(&SCALE)) {
        Ok(k) => Agreement {
            weighted_kappa: k.kappa,
            exact: (k.n_items > 0).then_some(k.p_o),
            n: k.n_items,
        },
        // Scores are checked to be on the scale before they get here.
        Err(_) => Agreement::default(),
    }
}

/// Counts of (human, judge) score pairs: `counts[h - 1][j - 1]`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub(crate) struct Confusion {
    /// Row and column labels.
    pub scale: [i64; 5],
    /// Rows: the human score (the raters' consensus); columns: the judge's score.
    pub counts: [[usize; 5]; 5],
}

/// The confusion matrix of (human, judge) pairs.
pub(crate) fn confusion(pairs: &[(i64, i64)]) -> Confusion {
    let mut counts = [[0usize; 5]; 5];
    for &(h, j) in pairs {
        if let (Some(row), Some(col)) = (index(h), index(j)) {
            counts[row][col] += 1;
        }
    }
    Confusion {
        scale: SCALE,
        counts,
    }
}

fn index(score: i64) -> Option<usize> {
    SCALE.iter().position(|s| *s == score)
}

/// The judge's mean bias: judge minus human, with a 95% confidence interval.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub(crate) struct Bias {
    /// Mean of judge minus human (positive: the judge is more lenient).
    pub mean: f64,
    /// Sample standard deviation of the differences; null under two units.
    pub sd: Option<f64>,
    /// `mean ± t(0.975, n-1) * sd / sqrt(n)`; null under two units.
    pub ci95: Option<[f64; 2]>,
    /// Units.
    pub n: usize,
}

/// The bias of `pairs` of (human, judge) scores; `None` with no pair.
pub(crate) fn bias(pairs: &[(i64, i64)]) -> Option<Bias> {
    if pairs.is_empty() {
        return None;
    }
    let n = pairs.len();
    let diffs: Vec<f64> = pairs.iter().map(|(h, j)| (j - h) as f64).collect();
    let mean = diffs.iter().sum::<f64>() / n as f64;
    let sd = (n > 1)
        .then(|| (diffs.iter().map(|d| (d - mean).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt());
    let ci95 = sd.map(|sd| {
        let half = t95(n - 1) * sd / (n as f64).sqrt();
        [mean - half, mean + half]
    });
    Some(Bias { mean, sd, ci95, n })
}

/// Two-sided 95% critical values of Student's t for 1-30 degrees of freedom, then 40,
/// 60, 120 and the normal limit (the usual printed table, to four places). A degree of
/// freedom between two rows takes the lower row's value, the wider interval.
pub(crate) fn t95(df: usize) -> f64 {
    const SMALL: [f64; 30] = [
        12.7062, 4.3027, 3.1824, 2.7764, 2.5706, 2.4469, 2.3646, 2.3060, 2.2622, 2.2281, 2.2010,
        2.1788, 2.1604, 2.1448, 2.1314, 2.1199, 2.1098, 2.1009, 2.0930, 2.0860, 2.0796, 2.0739,
        2.0687, 2.0639, 2.0595, 2.0555, 2.0518, 2.0484, 2.0452, 2.0423,
    ];
    match df {
        0 => f64::NAN,
        1..=30 => SMALL[df - 1],
        31..=39 => SMALL[29],
        40..=59 => 2.0211,
        60..=119 => 2.0003,
        120..=999 => 1.9799,
        _ => 1.9600,
    }
}

/// Pass rates a person would give and the judge gives, on the units both scored, and the
/// judge's pass rate over every unit it scored corrected for its error rates.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub(crate) struct PassRates {
    /// The score a unit must reach to pass.
    pub threshold: f64,
    /// Units both scored.
    pub n: usize,
    /// Share the raters' consensus passes.
    pub human: Option<f64>,
    /// Share the judge passes, on the same units.
    pub judge: Option<f64>,
    /// Of the units people pass, the share the judge passes too.
    pub sensitivity: Option<f64>,
    /// Of the units people fail, the share the judge fails too.
    pub specificity: Option<f64>,
    /// Every unit the judge scored, labelled or not.
    pub n_all: usize,
    /// The judge's pass rate over them.
    pub judge_all: Option<f64>,
    /// What people would pass of them, estimated from the judge's rate and its error
    /// rates (Rogan-Gladen): `(judge_all + specificity - 1) / (sensitivity + specificity
    /// - 1)`, clamped to 0..1; null when the judge does no better than chance
    /// (`sensitivity + specificity <= 1`) or either rate is unknown.
    pub corrected: Option<f64>,
}

/// Pass rates of `pairs` of (human, judge) scores and of `all` the judge's scores.
pub(crate) fn pass_rates(pairs: &[(i64, i64)], all: &[i64], threshold: f64) -> PassRates {
    let passes = |s: i64| crate::score::reaches(s as f64, threshold);
    let share = |hits: usize, of: usize| (of > 0).then(|| hits as f64 / of as f64);
    let human_pass = pairs.iter().filter(|(h, _)| passes(*h)).count();
    let judge_pass = pairs.iter().filter(|(_, j)| passes(*j)).count();
    let both_pass = pairs
        .iter()
        .filter(|(h, j)| passes(*h) && passes(*j))
        .count();
    let both_fail = pairs
        .iter()
        .filter(|(h, j)| !passes(*h) && !passes(*j))
        .count();
    let sensitivity = share(both_pass, human_pass);
    let specificity = share(both_fail, pairs.len() - human_pass);
    let judge_all = share(all.iter().filter(|s| passes(**s)).count(), all.len());
    PassRates {
        threshold,
        n: pairs.len(),
        human: share(human_pass, pairs.len()),
        judge: share(judge_pass, pairs.len()),
        sensitivity,
        specificity,
        n_all: all.len(),
        corrected: match (judge_all, sensitivity, specificity) {
            (Some(p), Some(se), Some(sp)) => rogan_gladen(p, se, sp),
            _ => None,
        },
        judge_all,
    }
}

/// The Rogan-Gladen estimate of a true rate from an observed one and the classifier's
/// sensitivity and specificity; `None` when `se + sp <= 1` (no better than chance).
pub(crate) fn rogan_gladen(observed: f64, sensitivity: f64, specificity: f64) -> Option<f64> {
    let d = sensitivity + specificity - 1.0;
    (d > 0.0).then(|| ((observed + specificity - 1.0) / d).clamp(0.0, 1.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    #[test]
    fn bias_with_a_t_interval() {
        // Differences 1, 0, -1, 2, 0: mean 0.4, sd sqrt(1.3), t(4) = 2.7764.
        let pairs = [(3, 4), (3, 3), (4, 3), (2, 4), (5, 5)];
        let b = bias(&pairs).unwrap();
        assert!(close(b.mean, 0.4));
        assert!(close(b.sd.unwrap(), 1.3f64.sqrt()));
        let half = 2.7764 * 1.3f64.sqrt() / 5f64.sqrt();
        let ci = b.ci95.unwrap();
        assert!(close(ci[0], 0.4 - half) && close(ci[1], 0.4 + half));
        assert!(bias(&[(3, 4)]).unwrap().ci95.is_none());
        assert!(bias(&[]).is_none());
        assert_eq!(t95(45), 2.0211);
        assert_eq!(t95(10_000), 1.96);
    }

    #[test]
    fn confusion_and_agreement() {
        let pairs = [(3, 4), (3, 3), (4, 3), (2, 4), (5, 5)];
        let c = confusion(&pairs);
        assert_eq!(c.counts[2], [0, 0, 1, 1, 0]);
        assert_eq!(c.counts[1][3], 1);
        let a = agreement(&pairs);
        assert_eq!((a.n, a.exact), (5, Some(0.4)));
        // Perfect agreement, and a rater that only ever says 3 (undefined, not 1).
        assert_eq!(agreement(&[(2, 2), (4, 4)]).weighted_kappa, Some(1.0));
        assert_eq!(agreement(&[(3, 3), (3, 3)]).weighted_kappa, None);
    }

    #[test]
    fn pass_rates_and_the_rogan_gladen_correction() {
        assert!(close(rogan_gladen(0.6, 0.9, 0.8).unwrap(), 0.4 / 0.7));
        assert_eq!(rogan_gladen(0.6, 0.5, 0.5), None);
        assert_eq!(rogan_gladen(0.99, 0.9, 0.8), Some(1.0));
        // People pass 2 of 4, the judge 3 of 4: sensitivity 2/2, specificity 1/2.
        let pairs = [(4, 4), (3, 5), (2, 3), (1, 1)];
        let r = pass_rates(&pairs, &[4, 5, 3, 1, 5, 2], 3.0);
        assert_eq!((r.human, r.judge), (Some(0.5), Some(0.75)));
        assert_eq!((r.sensitivity, r.specificity), (Some(1.0), Some(0.5)));
        assert!(close(r.judge_all.unwrap(), 4.0 / 6.0));
        // (4/6 + 0.5 - 1) / (1 + 0.5 - 1) = 1/3.
        assert!(close(r.corrected.unwrap(), 1.0 / 3.0));
    }
}
