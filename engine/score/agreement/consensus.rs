//! Unanimous agreement rate and per-item consensus of a rater panel.

use serde::{Deserialize, Serialize};

use super::scale::{Coded, code};
use super::{AgreementError, RatingLabel};

/// Share of items on which every rater that answered gave the same rating.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct UnanimousAgreement {
    /// Items with at least two ratings: the only ones where agreement is observable.
    /// An item where a rater errored still counts if two others answered.
    pub items_with_2plus_ratings: usize,
    /// Of those, items whose ratings are all equal.
    pub unanimous_items: usize,
    /// `unanimous_items / items_with_2plus_ratings`; `None` when no item has two
    /// ratings (no observation, rather than an agreement of 0).
    pub rate: Option<f64>,
}

/// Unanimous agreement rate of rater columns (`columns[rater][item]`).
///
/// # Errors
/// Columns of unequal length.
pub fn unanimous_agreement<L: RatingLabel>(
    columns: &[Vec<Option<L>>],
) -> Result<UnanimousAgreement, AgreementError> {
    let slices: Vec<&[Option<L>]> = columns.iter().map(Vec::as_slice).collect();
    Ok(unanimous_coded(&code(&slices, &[], None)?))
}

#[allow(clippy::cast_precision_loss)]
pub(crate) fn unanimous_coded<L>(coded: &Coded<L>) -> UnanimousAgreement {
    let (mut eligible, mut unanimous) = (0usize, 0usize);
    for i in 0..coded.n_items() {
        let valid: Vec<usize> = coded.item(i).flatten().collect();
        if valid.len() >= 2 {
            eligible += 1;
            if valid.iter().all(|&v| v == valid[0]) {
                unanimous += 1;
            }
        }
    }
    UnanimousAgreement {
        items_with_2plus_ratings: eligible,
        unanimous_items: unanimous,
        rate: (eligible > 0).then(|| unanimous as f64 / eligible as f64),
    }
}

/// How a panel's ratings of one item are combined into one.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum ConsensusRule {
    /// The median rating in scale order; with an even number of ratings the lower of the
    /// two middle ones, so the consensus is always a rating someone gave and errs on the
    /// conservative side for scores.
    #[default]
    Median,
    /// The arithmetic mean; only for numeric labels (`None` otherwise).
    Mean,
    /// The rating given by strictly more than half of the raters that answered; `None`
    /// when no rating has such a majority.
    Majority,
}

/// Consensus of one item.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Consensus<L> {
    /// A rating chosen by the median or majority rule.
    Label(L),
    /// A mean of numeric ratings.
    Mean(f64),
}

/// Consensus of one item's ratings under `rule`; `None` for an item nobody rated, for
/// `Majority` without a strict majority, and for `Mean` over non-numeric labels.
///
/// `order` fixes the scale for `Median` (default: the labels' own order).
///
/// # Errors
/// A rating not in `order`.
pub fn consensus<L: RatingLabel>(
    ratings: &[Option<L>],
    rule: ConsensusRule,
    order: Option<&[L]>,
) -> Result<Option<Consensus<L>>, AgreementError> {
    let columns: Vec<[Option<L>; 1]> = ratings.iter().map(|r| [r.clone()]).collect();
    let slices: Vec<&[Option<L>]> = columns.iter().map(|c| &c[..]).collect();
    let coded = code(&slices, &[], order)?;
    Ok(consensus_coded(&coded, 0, rule))
}

#[allow(clippy::cast_precision_loss)]
pub(crate) fn consensus_coded<L: RatingLabel>(
    coded: &Coded<L>,
    item: usize,
    rule: ConsensusRule,
) -> Option<Consensus<L>> {
    let mut valid: Vec<usize> = coded.item(item).flatten().collect();
    if valid.is_empty() {
        return None;
    }
    let label = |i: usize| coded.categories.get(i).cloned();
    match rule {
        ConsensusRule::Median => {
            valid.sort_unstable();
            label(valid[(valid.len() - 1) / 2]).map(Consensus::Label)
        }
        ConsensusRule::Mean => {
            let values: Option<Vec<f64>> = valid
                .iter()
                .map(|&i| coded.categories.get(i).and_then(RatingLabel::numeric))
                .collect();
            values.map(|v| Consensus::Mean(v.iter().sum::<f64>() / v.len() as f64))
        }
        ConsensusRule::Majority => {
            let mut counts = vec![0usize; coded.categories.len()];
            for &v in &valid {
                counts[v] += 1;
            }
            counts
                .iter()
                .position(|&c| 2 * c > valid.len())
                .and_then(label)
                .map(Consensus::Label)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unanimous_counts_items_with_an_errored_rater() {
        // Three judge models on 8 items; model c errored on item 5.
        let s = |v: &str| Some(v.to_string());
        let a = [
            "exact", "partial", "missed", "partial", "exact", "missed", "partial", "exact",
        ];
        let b = [
            "exact", "partial", "partial", "partial", "exact", "missed", "missed", "exact",
        ];
        let mut c: Vec<_> = [
            "exact", "partial", "missed", "partial", "-", "partial", "partial", "partial",
        ]
        .iter()
        .map(|v| s(v))
        .collect();
        c[4] = None;
        let cols = vec![
            a.iter().map(|v| s(v)).collect(),
            b.iter().map(|v| s(v)).collect(),
            c,
        ];
        let u = unanimous_agreement(&cols).unwrap();
        assert_eq!((u.items_with_2plus_ratings, u.unanimous_items), (8, 4));
        assert_eq!(u.rate, Some(0.5));
        let none: Vec<Vec<Option<u8>>> = vec![vec![None], vec![Some(1)]];
        assert_eq!(unanimous_agreement(&none).unwrap().rate, None);
    }

    #[test]
    fn consensus_rules() {
        let r = [Some(4), Some(2), None, Some(5), Some(2)];
        assert_eq!(
            consensus(&r, ConsensusRule::Median, None).unwrap(),
            Some(Consensus::Label(2))
        );
        assert_eq!(
            consensus(&r, ConsensusRule::Mean, None).unwrap(),
            Some(Consensus::Mean(3.25))
        );
        assert_eq!(consensus(&r, ConsensusRule::Majority, None).unwrap(), None);
        let r = [Some(3), Some(3), Some(1)];
        assert_eq!(
            consensus(&r, ConsensusRule::Majority, None).unwrap(),
            Some(Consensus::Label(3))
        );
        // A majority is more than half: one of two raters, or two of four, is not one.
        assert_eq!(
            consensus(&[Some(2), Some(4)], ConsensusRule::Majority, None).unwrap(),
            None
        );
        assert_eq!(
            consensus(
                &[Some(2), Some(2), Some(4), Some(5)],
                ConsensusRule::Majority,
                None
            )
            .unwrap(),
            None
        );
        assert_eq!(
            consensus(
                &[Some(2), Some(2), Some(2), Some(5)],
                ConsensusRule::Majority,
                None
            )
            .unwrap(),
            Some(Consensus::Label(2))
        );
        assert_eq!(
            consensus(&r, ConsensusRule::Median, None).unwrap(),
            Some(Consensus::Label(3))
        );
        let words = [Some("exact"), Some("missed"), Some("partial")];
        let order = ["missed", "partial", "exact"];
        assert_eq!(
            consensus(&words, ConsensusRule::Median, Some(&order)).unwrap(),
            Some(Consensus::Label("partial"))
        );
        assert_eq!(
            consensus(&words, ConsensusRule::Mean, Some(&order)).unwrap(),
            None
        );
        let nobody: [Option<u8>; 2] = [None, None];
        assert_eq!(
            consensus(&nobody, ConsensusRule::Median, None).unwrap(),
            None
        );
    }
}
