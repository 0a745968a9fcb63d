//! Fleiss' kappa: agreement of a fixed number of raters per item.

use serde::Serialize;

use super::interpret::Interpretation;
use super::scale::{Coded, code};
use super::{AgreementError, RatingLabel};

/// Fleiss' kappa and its parts (Fleiss 1971; statsmodels' `fleiss_kappa`).
///
/// Fleiss' kappa assumes every item has the same number of ratings, so only items that
/// every rater rated are used; the others are counted in `n_dropped`. (Krippendorff's
/// alpha is the measure that uses incomplete items.)
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FleissKappa {
    /// `(P_bar - P_e_bar) / (1 - P_e_bar)`; `None` when `P_e_bar == 1` (all ratings in
    /// one category) or no complete item is left.
    pub kappa: Option<f64>,
    /// Mean over items of the proportion of agreeing rater pairs.
    #[serde(rename = "P_bar")]
    pub p_bar: f64,
    /// Chance agreement: sum of squared category proportions.
    #[serde(rename = "P_e_bar")]
    pub p_e_bar: f64,
    /// Share of all ratings (of complete items) in each category, in scale order.
    pub category_proportions: Vec<f64>,
    /// Items every rater rated.
    pub n_complete_items: usize,
    /// Items left out because at least one rater had no rating.
    pub n_dropped_items: usize,
    /// Ratings per item (the number of raters).
    pub n_raters: usize,
    /// Verbal strength of `kappa`.
    pub interpretation: Interpretation,
}

/// Fleiss' kappa of rater columns (`columns[rater][item]`).
///
/// # Errors
/// Fewer than two raters, columns of unequal length, or a rating not in `order`.
pub fn fleiss_kappa<L: RatingLabel>(
    columns: &[Vec<Option<L>>],
    order: Option<&[L]>,
) -> Result<FleissKappa, AgreementError> {
    if columns.len() < 2 {
        return Err(AgreementError::TooFewRaters(columns.len()));
    }
    let slices: Vec<&[Option<L>]> = columns.iter().map(Vec::as_slice).collect();
    Ok(fleiss_coded(&code(&slices, &[], order)?))
}

#[allow(clippy::cast_precision_loss)]
pub(crate) fn fleiss_coded<L>(coded: &Coded<L>) -> FleissKappa {
    let k = coded.categories.len();
    let m = coded.columns.len() as u128;
    let mut totals = vec![0u128; k];
    // Sum over items of sum_j n_ij^2; integral so the undefined test is exact.
    let mut squares = 0u128;
    let (mut complete, mut dropped) = (0u128, 0usize);
    for i in 0..coded.n_items() {
        let ratings: Option<Vec<usize>> = coded.item(i).collect();
        let Some(ratings) = ratings else {
            dropped += 1;
            continue;
        };
        let mut counts = vec![0u128; k];
        for r in ratings {
            counts[r] += 1;
        }
        squares += counts.iter().map(|c| c * c).sum::<u128>();
        for (t, c) in totals.iter_mut().zip(&counts) {
            *t += c;
        }
        complete += 1;
    }
    let all = complete * m;
    let (p_bar, p_e_bar, proportions, kappa) = if complete == 0 || m < 2 {
        (0.0, 0.0, vec![0.0; k], None)
    } else {
        let p_bar = (squares - all) as f64 / (all * (m - 1)) as f64;
        let total_sq: u128 = totals.iter().map(|t| t * t).sum();
        let p_e_bar = total_sq as f64 / (all * all) as f64;
        let props = totals.iter().map(|&t| t as f64 / all as f64).collect();
        let kappa = (total_sq < all * all).then(|| (p_bar - p_e_bar) / (1.0 - p_e_bar));
        (p_bar, p_e_bar, props, kappa)
    };
    FleissKappa {
        kappa,
        p_bar,
        p_e_bar,
        category_proportions: proportions,
        n_complete_items: usize::try_from(complete).unwrap_or(usize::MAX),
        n_dropped_items: dropped,
        n_raters: coded.columns.len(),
        interpretation: Interpretation::of(kappa),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Builds rater columns from a per-item count table: item `i` gets `table[i][j]`
    /// ratings of category `j + 1`, assigned to raters in category order.
    fn from_counts(table: &[[usize; 5]]) -> Vec<Vec<Option<u8>>> {
        let m: usize = table[0].iter().sum();
        let mut cols = vec![Vec::new(); m];
        for row in table {
            let labels = row
                .iter()
                .enumerate()
                .flat_map(|(j, &n)| std::iter::repeat_n(u8::try_from(j + 1).unwrap(), n));
            for (col, l) in cols.iter_mut().zip(labels) {
                col.push(Some(l));
            }
        }
        cols
    }

    #[test]
    fn wikipedia_example_0210() {
        // 10 subjects, 14 raters, 5 categories; published kappa 0.210, P 0.378, Pe 0.213.
        let table = [
            [0, 0, 0, 0, 14],
            [0, 2, 6, 4, 2],
            [0, 0, 3, 5, 6],
            [0, 3, 9, 2, 0],
            [2, 2, 8, 1, 1],
            [7, 7, 0, 0, 0],
            [3, 2, 6, 3, 0],
            [2, 5, 3, 2, 2],
            [6, 5, 2, 1, 0],
            [0, 2, 2, 3, 7],
        ];
        let f = fleiss_kappa(&from_counts(&table), None).unwrap();
        assert!(f.kappa.is_some_and(|k| (k - 0.210).abs() < 5e-4), "{f:?}");
        assert!((f.p_bar - 0.378).abs() < 5e-4);
        assert!((f.p_e_bar - 0.213).abs() < 5e-4);
        assert_eq!(
            (f.n_complete_items, f.n_dropped_items, f.n_raters),
            (10, 0, 14)
        );
        assert_eq!(f.interpretation, Interpretation::Fair);
    }

    #[test]
    fn fleiss_1971_psychiatric() {
        // 30 patients, 6 psychiatrists, 5 diagnoses; published kappa 0.430.
        let table = [
            [0, 0, 0, 6, 0],
            [0, 3, 0, 0, 3],
            [0, 1, 4, 0, 1],
            [0, 0, 0, 0, 6],
            [0, 3, 0, 3, 0],
            [2, 0, 4, 0, 0],
            [0, 0, 4, 0, 2],
            [2, 0, 3, 1, 0],
            [2, 0, 0, 4, 0],
            [0, 0, 0, 0, 6],
            [1, 0, 0, 5, 0],
            [1, 1, 0, 4, 0],
            [0, 3, 3, 0, 0],
            [1, 0, 0, 5, 0],
            [0, 2, 0, 3, 1],
            [0, 0, 5, 0, 1],
            [3, 0, 0, 1, 2],
            [5, 1, 0, 0, 0],
            [0, 2, 0, 4, 0],
            [1, 0, 2, 0, 3],
            [0, 0, 0, 0, 6],
            [0, 1, 0, 5, 0],
            [0, 2, 0, 1, 3],
            [2, 0, 0, 4, 0],
            [1, 0, 0, 4, 1],
            [0, 5, 0, 1, 0],
            [4, 0, 0, 0, 2],
            [0, 2, 0, 4, 0],
            [1, 0, 5, 0, 0],
            [0, 0, 0, 0, 6],
        ];
        let f = fleiss_kappa(&from_counts(&table), None).unwrap();
        assert!(f.kappa.is_some_and(|k| (k - 0.430).abs() < 5e-4), "{f:?}");
    }

    #[test]
    fn incomplete_items_dropped_and_single_label_undefined() {
        let cols = vec![
            vec![Some("a"), Some("b"), Some("a")],
            vec![Some("a"), None, Some("b")],
        ];
        let f = fleiss_kappa(&cols, None).unwrap();
        assert_eq!((f.n_complete_items, f.n_dropped_items), (2, 1));
        let same = vec![vec![Some("exact"); 6]; 3];
        let f = fleiss_kappa(&same, None).unwrap();
        assert_eq!(f.kappa, None);
        assert_eq!((f.p_bar, f.p_e_bar), (1.0, 1.0));
    }

    /// Two raters, worked by hand. Items (1,1) (1,2) (2,2) (2,2): per-item agreement
    /// 1, 0, 1, 1, so P = 3/4; the pooled ratings are 3 of category 1 and 5 of 2 out of
    /// 8, so the proportions are 3/8 and 5/8 and Pe = (9 + 25) / 64 = 0.53125; kappa =
    /// (0.75 - 0.53125) / (1 - 0.53125) = 7/15. (Cohen's kappa of the same pair is 0.5:
    /// Fleiss pools the two raters' marginals.)
    #[test]
    fn two_raters_by_hand() {
        let cols = vec![
            vec![Some(1), Some(1), Some(2), Some(2)],
            vec![Some(1), Some(2), Some(2), Some(2)],
        ];
        let f = fleiss_kappa(&cols, None).unwrap();
        assert_eq!((f.p_bar, f.p_e_bar), (0.75, 0.53125));
        assert_eq!(f.category_proportions, [0.375, 0.625]);
        assert!(
            (f.kappa.unwrap() - 7.0 / 15.0).abs() < 1e-12,
            "{:?}",
            f.kappa
        );
        assert_eq!((f.n_raters, f.n_complete_items), (2, 4));
    }

    /// No item rated by every rater: nothing to measure, and nothing is made up (no
    /// NaN from dividing by zero items).
    #[test]
    fn no_complete_item_is_undefined_with_zero_shares() {
        let cols = vec![vec![Some(1), None], vec![None, Some(2)]];
        let f = fleiss_kappa(&cols, None).unwrap();
        assert_eq!(f.kappa, None);
        assert_eq!((f.p_bar, f.p_e_bar), (0.0, 0.0));
        assert_eq!(f.category_proportions, [0.0, 0.0]);
        assert_eq!((f.n_complete_items, f.n_dropped_items), (0, 2));
    }
}
