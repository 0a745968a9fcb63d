//! Cohen's kappa for two raters (unweighted, linear, quadratic) and over all pairs of N.

use indexmap::IndexMap;
use serde::Serialize;

use super::interpret::Interpretation;
use super::scale::{Coded, code};
use super::{AgreementError, Raters, RatingLabel, Weighting, mean_defined};

/// Cohen's kappa of one pair of raters.
///
/// Items where either rater has no rating are dropped for this pair and counted in
/// `n_dropped`; the coefficient is computed on the remaining `n_items`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CohenKappa {
    /// Kappa with the requested `weighting`; `None` when undefined: expected
    /// disagreement is zero (both raters used one and the same category) or no item is
    /// left.
    pub kappa: Option<f64>,
    /// Plain (unweighted) kappa, reported alongside a weighted one for comparison.
    pub kappa_unweighted: Option<f64>,
    /// The weighting `kappa` used.
    pub weighting: Weighting,
    /// Observed proportion of exact agreement (unweighted); `0.0` with no items.
    pub p_o: f64,
    /// Proportion of exact agreement expected by chance from the two raters' marginals
    /// (unweighted); `0.0` with no items.
    pub p_e: f64,
    /// Items both raters rated.
    pub n_items: usize,
    /// Items dropped because at least one of the two had no rating.
    pub n_dropped: usize,
    /// Verbal strength of `kappa`.
    pub interpretation: Interpretation,
}

/// Cohen's kappa between two raters' ratings of the same items.
///
/// Follows scikit-learn's `cohen_kappa_score`: `kappa = 1 - sum(w*O) / sum(w*E)` with
/// `O` the confusion counts, `E` the outer product of the marginals over `n`, and
/// `w` the disagreement weights of [`Weighting`]. `order` fixes the category order
/// (needed for weighted kappa on non-numeric labels).
///
/// # Errors
/// The two slices differ in length, or a rating is not in `order`.
pub fn cohen_kappa<L: RatingLabel>(
    a: &[Option<L>],
    b: &[Option<L>],
    weighting: Weighting,
    order: Option<&[L]>,
) -> Result<CohenKappa, AgreementError> {
    let names = ["a".to_string(), "b".to_string()];
    let coded = code(&[a, b], &names, order)?;
    Ok(kappa_coded(&coded, 0, 1, weighting))
}

/// Kappa of columns `x` and `y` of already-coded ratings.
pub(crate) fn kappa_coded<L>(
    coded: &Coded<L>,
    x: usize,
    y: usize,
    weighting: Weighting,
) -> CohenKappa {
    let k = coded.categories.len();
    let mut confusion = vec![0u128; k * k];
    let (mut n, mut n_dropped) = (0u128, 0usize);
    for (ra, rb) in coded.columns[x].iter().zip(&coded.columns[y]) {
        match (ra, rb) {
            (Some(i), Some(j)) => {
                confusion[i * k + j] += 1;
                n += 1;
            }
            _ => n_dropped += 1,
        }
    }
    let rows: Vec<u128> = (0..k)
        .map(|i| (0..k).map(|j| confusion[i * k + j]).sum())
        .collect();
    let cols: Vec<u128> = (0..k)
        .map(|j| (0..k).map(|i| confusion[i * k + j]).sum())
        .collect();
    let kappa_with = |w: Weighting| -> Option<f64> {
        let mut observed = 0u128;
        let mut expected = 0u128;
        for i in 0..k {
            for j in 0..k {
                let wij = w.weight(i, j);
                observed += wij * confusion[i * k + j];
                expected += wij * rows[i] * cols[j];
            }
        }
        // Integer arithmetic makes "chance disagreement is zero" an exact test.
        #[allow(clippy::cast_precision_loss)]
        (n > 0 && expected > 0).then(|| 1.0 - (n * observed) as f64 / expected as f64)
    };
    let diag: u128 = (0..k).map(|i| confusion[i * k + i]).sum();
    let chance: u128 = (0..k).map(|i| rows[i] * cols[i]).sum();
    #[allow(clippy::cast_precision_loss)]
    let (p_o, p_e) = if n == 0 {
        (0.0, 0.0)
    } else {
        (diag as f64 / n as f64, chance as f64 / (n * n) as f64)
    };
    let kappa = kappa_with(weighting);
    CohenKappa {
        kappa,
        kappa_unweighted: kappa_with(Weighting::Unweighted),
        weighting,
        p_o,
        p_e,
        n_items: usize::try_from(n).unwrap_or(usize::MAX),
        n_dropped,
        interpretation: Interpretation::of(kappa),
    }
}

/// Cohen's kappa for every pair of raters, and their mean.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PairwiseKappa {
    /// One entry per unordered pair, keyed `"<a>_vs_<b>"` in rater order.
    pub pairs: IndexMap<String, CohenKappa>,
    /// Mean of the defined pair kappas; `None` when every pair is undefined. Undefined
    /// pairs are left out rather than counted as 0 or 1; `n_pairs_undefined` says how
    /// many were.
    pub mean_kappa: Option<f64>,
    /// Verbal strength of `mean_kappa`.
    pub interpretation: Interpretation,
    /// Smallest and largest defined pair kappa.
    pub range: Option<(f64, f64)>,
    /// Number of pairs.
    pub n_pairs: usize,
    /// Pairs whose kappa is undefined.
    pub n_pairs_undefined: usize,
}

/// Pairwise Cohen's kappa over named raters.
///
/// # Errors
/// Fewer than two raters, ratings of unequal length, or a rating not in `order`.
pub fn pairwise_kappa<L: RatingLabel>(
    raters: &Raters<L>,
    weighting: Weighting,
    order: Option<&[L]>,
) -> Result<PairwiseKappa, AgreementError> {
    if raters.len() < 2 {
        return Err(AgreementError::TooFewRaters(raters.len()));
    }
    let names: Vec<String> = raters.keys().cloned().collect();
    let columns: Vec<&[Option<L>]> = raters.values().map(Vec::as_slice).collect();
    let coded = code(&columns, &names, order)?;
    Ok(pairwise_coded(&coded, &names, weighting))
}

/// Every pair's kappa by rater position, without the per-pair details of
/// [`PairwiseKappa`]: what a summary of a large panel needs (hundreds of raters make
/// tens of thousands of pairs).
#[derive(Debug, Clone, PartialEq)]
pub struct PairList {
    /// Rater names in input order.
    pub names: Vec<String>,
    /// `(x, y, kappa)` for every pair `x < y`, in order; `None` where undefined.
    pub kappas: Vec<(usize, usize, Option<f64>)>,
}

/// Kappa for every pair of raters, by position, once per weighting (one [`PairList`]
/// each, in `weightings` order). Each pair's confusion counts are made once and read
/// with every weighting: a large panel's tens of thousands of pairs cost one pass.
/// The kappas are exactly those of [`cohen_kappa`] (the same integer arithmetic).
///
/// # Errors
/// Fewer than two raters, ratings of unequal length, or a rating not in `order`.
pub fn pairwise_lists<L: RatingLabel>(
    raters: &Raters<L>,
    weightings: &[Weighting],
    order: Option<&[L]>,
) -> Result<Vec<PairList>, AgreementError> {
    if raters.len() < 2 {
        return Err(AgreementError::TooFewRaters(raters.len()));
    }
    let names: Vec<String> = raters.keys().cloned().collect();
    let columns: Vec<&[Option<L>]> = raters.values().map(Vec::as_slice).collect();
    let coded = code(&columns, &names, order)?;
    let k = coded.categories.len();
    let weights: Vec<Vec<u128>> = weightings
        .iter()
        .map(|w| (0..k * k).map(|ij| w.weight(ij / k, ij % k)).collect())
        .collect();
    let m = names.len();
    let mut lists: Vec<Vec<(usize, usize, Option<f64>)>> = weightings
        .iter()
        .map(|_| Vec::with_capacity(m * (m - 1) / 2))
        .collect();
    let (mut confusion, mut rows, mut cols) = (vec![0u128; k * k], vec![0u128; k], vec![0u128; k]);
    for x in 0..m {
        for y in x + 1..m {
            confusion.fill(0);
            let mut n = 0u128;
            for (a, b) in coded.columns[x].iter().zip(&coded.columns[y]) {
                if let (Some(i), Some(j)) = (a, b) {
                    confusion[i * k + j] += 1;
                    n += 1;
                }
            }
            for i in 0..k {
                rows[i] = (0..k).map(|j| confusion[i * k + j]).sum();
                cols[i] = (0..k).map(|j| confusion[j * k + i]).sum();
            }
            for (w, list) in weights.iter().zip(&mut lists) {
                let (mut observed, mut expected) = (0u128, 0u128);
                for i in 0..k {
                    for j in 0..k {
                        observed += w[i * k + j] * confusion[i * k + j];
                        expected += w[i * k + j] * rows[i] * cols[j];
                    }
                }
                #[allow(clippy::cast_precision_loss)]
                let kappa =
                    (n > 0 && expected > 0).then(|| 1.0 - (n * observed) as f64 / expected as f64);
                list.push((x, y, kappa));
            }
        }
    }
    Ok(lists
        .into_iter()
        .map(|kappas| PairList {
            names: names.clone(),
            kappas,
        })
        .collect())
}

pub(crate) fn pairwise_coded<L>(
    coded: &Coded<L>,
    names: &[String],
    weighting: Weighting,
) -> PairwiseKappa {
    let mut pairs = IndexMap::new();
    for x in 0..names.len() {
        for y in x + 1..names.len() {
            let key = format!("{}_vs_{}", names[x], names[y]);
            pairs.insert(key, kappa_coded(coded, x, y, weighting));
        }
    }
    let defined: Vec<f64> = pairs.values().filter_map(|p| p.kappa).collect();
    let mean_kappa = mean_defined(defined.iter().copied().map(Some));
    let range = defined
        .iter()
        .copied()
        .fold(None, |acc: Option<(f64, f64)>, k| {
            Some(acc.map_or((k, k), |(lo, hi)| (lo.min(k), hi.max(k))))
        });
    PairwiseKappa {
        n_pairs: pairs.len(),
        n_pairs_undefined: pairs.len() - defined.len(),
        pairs,
        mean_kappa,
        interpretation: Interpretation::of(mean_kappa),
        range,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two raters make one pair (one rater makes none, and is refused). Here they agree
    /// on 3 of 4 items with marginals 2/2 and 1/3: p_o = 0.75, p_e = (2x1 + 2x3)/16 = 0.5,
    /// kappa = (0.75 - 0.5) / (1 - 0.5) = 0.5.
    #[test]
    fn two_raters_are_one_pair() {
        let mut raters: Raters<i64> = IndexMap::new();
        raters.insert("a".into(), vec![Some(1), Some(1), Some(2), Some(2)]);
        raters.insert("b".into(), vec![Some(1), Some(2), Some(2), Some(2)]);
        let p = pairwise_kappa(&raters, Weighting::Unweighted, None).unwrap();
        assert_eq!(p.n_pairs, 1);
        let only = p.pairs.values().next().unwrap();
        assert!(
            (only.kappa.unwrap() - 0.5).abs() < 1e-12,
            "{:?}",
            only.kappa
        );
        raters.shift_remove("b");
        assert!(pairwise_kappa(&raters, Weighting::Unweighted, None).is_err());
    }

    /// The same two raters through the panel's pair lists: one pair per weighting asked
    /// (with two adjacent categories every weighting counts a disagreement as 1, so
    /// kappa is 0.5 for each); one rater is refused with its count.
    #[test]
    fn pair_lists_of_two_raters_hold_one_pair() {
        let mut raters: Raters<i64> = IndexMap::new();
        raters.insert("a".into(), vec![Some(1), Some(1), Some(2), Some(2)]);
        raters.insert("b".into(), vec![Some(1), Some(2), Some(2), Some(2)]);
        let all = [
            Weighting::Unweighted,
            Weighting::Linear,
            Weighting::Quadratic,
        ];
        let lists = pairwise_lists(&raters, &all, None).unwrap();
        assert_eq!(lists.len(), 3);
        for list in &lists {
            assert_eq!(list.names, ["a", "b"]);
            let [(0, 1, Some(kappa))] = list.kappas[..] else {
                panic!("{:?}", list.kappas);
            };
            assert!((kappa - 0.5).abs() < 1e-12, "{kappa}");
        }
        raters.shift_remove("b");
        assert!(matches!(
            pairwise_lists(&raters, &all, None),
            Err(AgreementError::TooFewRaters(1))
        ));
    }

    /// A panel with an undefined pair. Raters a and b give only category 1: chance
    /// agreement is total, so their kappa is undefined (not 1, not NaN). a or b against
    /// c = [1, 2]: p_o = 1/2, p_e = 1 x 1/2 + 0 x 1/2 = 1/2, kappa = 0. So three pairs,
    /// one undefined, and a mean of 0 over the two defined; the pair lists agree for
    /// every weighting (two adjacent categories weigh a disagreement 1 under each).
    #[test]
    fn an_undefined_pair_is_counted_and_left_out_of_the_mean() {
        let mut raters: Raters<i64> = IndexMap::new();
        raters.insert("a".into(), vec![Some(1), Some(1)]);
        raters.insert("b".into(), vec![Some(1), Some(1)]);
        raters.insert("c".into(), vec![Some(1), Some(2)]);
        let p = pairwise_kappa(&raters, Weighting::Unweighted, None).unwrap();
        assert_eq!((p.n_pairs, p.n_pairs_undefined), (3, 1));
        assert_eq!(p.mean_kappa, Some(0.0));
        let all = [
            Weighting::Unweighted,
            Weighting::Linear,
            Weighting::Quadratic,
        ];
        for list in pairwise_lists(&raters, &all, None).unwrap() {
            assert_eq!(
                list.kappas,
                [(0, 1, None), (0, 2, Some(0.0)), (1, 2, Some(0.0))]
            );
        }
    }

    fn close(a: Option<f64>, b: f64, tol: f64) -> bool {
        a.is_some_and(|a| (a - b).abs() <= tol)
    }

    /// Expands a confusion table (rows rater 1, columns rater 2) into two columns.
    fn expand(table: &[&[usize]]) -> (Vec<Option<u8>>, Vec<Option<u8>>) {
        let (mut a, mut b) = (Vec::new(), Vec::new());
        for (i, row) in table.iter().enumerate() {
            for (j, &n) in row.iter().enumerate() {
                for _ in 0..n {
                    a.push(Some(u8::try_from(i).unwrap()));
                    b.push(Some(u8::try_from(j).unwrap()));
                }
            }
        }
        (a, b)
    }

    #[test]
    fn wikipedia_binary_example() {
        // 50 proposals: 20 yes/yes, 5 A-yes/B-no, 10 A-no/B-yes, 15 no/no.
        let (a, b) = expand(&[&[20, 5], &[10, 15]]);
        let k = cohen_kappa(&a, &b, Weighting::Unweighted, None).unwrap();
        assert!(close(k.kappa, 0.4, 1e-12));
        assert!((k.p_o - 0.7).abs() < 1e-12);
        assert!((k.p_e - 0.5).abs() < 1e-12);
        assert_eq!((k.n_items, k.n_dropped), (50, 0));
        assert_eq!(k.interpretation, Interpretation::Fair);
    }

    #[test]
    fn sas_three_by_three() {
        // SAS PROC FREQ: simple kappa 0.4842, Cicchetti-Allison weighted 0.4701.
        let (a, b) = expand(&[&[0, 4, 1], &[0, 8, 0], &[0, 1, 5]]);
        let lin = cohen_kappa(&a, &b, Weighting::Linear, None).unwrap();
        assert!(close(lin.kappa, 0.4701, 5e-5), "{lin:?}");
        assert!(close(lin.kappa_unweighted, 0.4842, 5e-5));
        assert!(close(lin.kappa, 0.470_119_521_912_350_6, 1e-12));
        assert!(close(lin.kappa_unweighted, 0.484_162_895_927_601_76, 1e-12));
    }

    #[test]
    fn quadratic_with_declared_order_and_gap() {
        let a = [
            "exact", "partial", "missed", "partial", "exact", "missed", "partial", "exact",
        ];
        let c = [
            Some("exact"),
            Some("partial"),
            Some("missed"),
            Some("partial"),
            None,
            Some("partial"),
            Some("partial"),
            Some("partial"),
        ];
        let a: Vec<_> = a.into_iter().map(Some).collect();
        let order = ["missed", "partial", "exact"];
        let k = cohen_kappa(&a, &c, Weighting::Quadratic, Some(&order)).unwrap();
        assert_eq!((k.n_items, k.n_dropped), (7, 1));
        assert!(close(k.kappa, 0.666_666_666_666_666_7, 1e-12));
        assert!(close(k.kappa_unweighted, 0.533_333_333_333_333_3, 1e-12));
    }

    #[test]
    fn single_label_is_undefined_not_one() {
        let a = vec![Some("exact"); 6];
        let k = cohen_kappa(&a, &a, Weighting::Quadratic, None).unwrap();
        assert_eq!(k.kappa, None);
        assert_eq!(k.kappa_unweighted, None);
        assert_eq!((k.p_o, k.p_e), (1.0, 1.0));
        assert_eq!(k.interpretation, Interpretation::Undefined);
        let none: Vec<Option<&str>> = vec![None; 3];
        let k = cohen_kappa(&none, &a[..3], Weighting::Unweighted, None).unwrap();
        assert_eq!((k.kappa, k.n_items, k.n_dropped), (None, 0, 3));
    }

    #[test]
    fn pairwise_keys_and_mean() {
        let mut raters: Raters<i32> = IndexMap::new();
        raters.insert("x".into(), vec![Some(1), Some(2), Some(1), Some(2)]);
        raters.insert("y".into(), vec![Some(1), Some(2), Some(2), Some(2)]);
        raters.insert("z".into(), vec![Some(1), Some(2), Some(1), Some(2)]);
        let p = pairwise_kappa(&raters, Weighting::Unweighted, None).unwrap();
        let keys: Vec<_> = p.pairs.keys().cloned().collect();
        assert_eq!(keys, ["x_vs_y", "x_vs_z", "y_vs_z"]);
        assert!(close(p.pairs["x_vs_z"].kappa, 1.0, 1e-12));
        assert!(close(p.pairs["x_vs_y"].kappa, 0.5, 1e-12));
        assert!(close(p.mean_kappa, 2.0 / 3.0, 1e-12));
        assert_eq!(p.range, Some((0.5, 1.0)));
        let one: Raters<i32> = raters.into_iter().take(1).collect();
        assert_eq!(
            pairwise_kappa(&one, Weighting::Linear, None),
            Err(AgreementError::TooFewRaters(1))
        );
    }
}
