//! Krippendorff's alpha (nominal and ordinal), with missing ratings.

use serde::{Deserialize, Serialize};

use super::interpret::Interpretation;
use super::scale::{Coded, code};
use super::{AgreementError, RatingLabel};

/// Level of measurement: which difference function alpha uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum AlphaLevel {
    /// Categories are unordered: any two different values disagree equally.
    Nominal,
    /// Categories are ranked: disagreement grows with how many ratings lie between them.
    Ordinal,
}

/// Krippendorff's alpha of a set of ratings.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Alpha {
    /// `1 - D_o / D_e`; `None` when expected disagreement is zero (fewer than two
    /// distinct values among pairable ratings) or no unit has two ratings.
    pub alpha: Option<f64>,
    /// The difference function used.
    pub level: AlphaLevel,
    /// Units (items) with at least two ratings; only these are pairable.
    pub n_units: usize,
    /// Pairable ratings: the total `n` of the coincidence matrix.
    pub n_values: usize,
    /// Verbal strength of `alpha`.
    pub interpretation: Interpretation,
}

/// Krippendorff's alpha of rater columns (`columns[rater][item]`, `None` = missing).
///
/// Uses the coincidence-matrix formulation (Krippendorff 2011, "Computing
/// Krippendorff's Alpha-Reliability"): a unit with `m >= 2` ratings adds each ordered
/// pair of ratings from different raters with weight `1 / (m - 1)`; units with fewer
/// than two ratings are not pairable and are ignored. The ordinal difference between
/// ranks `c` and `k` is `(sum_{g=c..k} n_g - (n_c + n_k) / 2)^2` over the marginals `n_g`,
/// so the spacing of categories comes from the data, not from their labels.
///
/// # Errors
/// Columns of unequal length, or a rating not in `order`.
pub fn krippendorff_alpha<L: RatingLabel>(
    columns: &[Vec<Option<L>>],
    level: AlphaLevel,
    order: Option<&[L]>,
) -> Result<Alpha, AgreementError> {
    let slices: Vec<&[Option<L>]> = columns.iter().map(Vec::as_slice).collect();
    Ok(alpha_coded(&code(&slices, &[], order)?, level))
}

#[allow(clippy::cast_precision_loss)]
pub(crate) fn alpha_coded<L>(coded: &Coded<L>, level: AlphaLevel) -> Alpha {
    let k = coded.categories.len();
    let mut o = vec![0.0f64; k * k];
    let (mut n_units, mut n_values) = (0usize, 0usize);
    for i in 0..coded.n_items() {
        let mut counts = vec![0usize; k];
        let mut m = 0usize;
        for r in coded.item(i).flatten() {
            counts[r] += 1;
            m += 1;
        }
        if m < 2 {
            continue;
        }
        n_units += 1;
        n_values += m;
        let scale = 1.0 / (m - 1) as f64;
        for c in 0..k {
            for d in 0..k {
                let pairs = counts[c] * counts[d].saturating_sub(usize::from(c == d));
                o[c * k + d] += pairs as f64 * scale;
            }
        }
    }
    let marg: Vec<f64> = (0..k).map(|c| (0..k).map(|d| o[c * k + d]).sum()).collect();
    let n: f64 = marg.iter().sum();
    let delta = |c: usize, d: usize| -> f64 {
        match level {
            AlphaLevel::Nominal => f64::from(u8::from(c != d)),
            AlphaLevel::Ordinal => {
                let (lo, hi) = (c.min(d), c.max(d));
                let between: f64 = marg[lo..=hi].iter().sum();
                let v = between - (marg[lo] + marg[hi]) / 2.0;
                v * v
            }
        }
    };
    let (mut observed, mut expected) = (0.0, 0.0);
    for c in 0..k {
        for d in 0..k {
            if c != d {
                let dl = delta(c, d);
                observed += o[c * k + d] * dl;
                expected += marg[c] * marg[d] * dl;
            }
        }
    }
    let alpha = (n_units > 0 && expected > 0.0).then(|| 1.0 - (n - 1.0) * observed / expected);
    Alpha {
        alpha,
        level,
        n_units,
        n_values,
        interpretation: Interpretation::of(alpha),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Krippendorff (2011), example C: 4 observers x 12 units, values 1-5, gaps as None.
    fn example_c() -> Vec<Vec<Option<u8>>> {
        let n = None;
        vec![
            vec![
                Some(1),
                Some(2),
                Some(3),
                Some(3),
                Some(2),
                Some(1),
                Some(4),
                Some(1),
                Some(2),
                n,
                n,
                n,
            ],
            vec![
                Some(1),
                Some(2),
                Some(3),
                Some(3),
                Some(2),
                Some(2),
                Some(4),
                Some(1),
                Some(2),
                Some(5),
                n,
                Some(3),
            ],
            vec![
                n,
                Some(3),
                Some(3),
                Some(3),
                Some(2),
                Some(3),
                Some(4),
                Some(2),
                Some(2),
                Some(5),
                Some(1),
                n,
            ],
            vec![
                Some(1),
                Some(2),
                Some(3),
                Some(3),
                Some(2),
                Some(4),
                Some(4),
                Some(1),
                Some(2),
                Some(5),
                Some(1),
                n,
            ],
        ]
    }

    #[test]
    fn published_example_with_missing_data() {
        let data = example_c();
        let nominal = krippendorff_alpha(&data, AlphaLevel::Nominal, None).unwrap();
        assert!(
            nominal.alpha.is_some_and(|a| (a - 0.743).abs() < 5e-4),
            "{nominal:?}"
        );
        // Unit 12 has a single rating and is not pairable.
        assert_eq!((nominal.n_units, nominal.n_values), (11, 40));
        let ordinal = krippendorff_alpha(&data, AlphaLevel::Ordinal, None).unwrap();
        assert!(
            ordinal.alpha.is_some_and(|a| (a - 0.815).abs() < 5e-4),
            "{ordinal:?}"
        );
    }

    #[test]
    fn one_value_domain_is_undefined() {
        let data = vec![vec![Some("exact"); 6]; 3];
        for level in [AlphaLevel::Nominal, AlphaLevel::Ordinal] {
            let a = krippendorff_alpha(&data, level, None).unwrap();
            assert_eq!(a.alpha, None);
            assert_eq!(a.interpretation, Interpretation::Undefined);
        }
        let empty: Vec<Vec<Option<u8>>> = vec![vec![None, Some(1)], vec![Some(2), None]];
        assert_eq!(
            krippendorff_alpha(&empty, AlphaLevel::Nominal, None)
                .unwrap()
                .alpha,
            None
        );
    }
}
