//! One call that summarises a panel of named raters: everything a report shows.

use indexmap::IndexMap;
use serde::Serialize;

use super::alpha::{Alpha, AlphaLevel, alpha_coded};
use super::cohen::{CohenKappa, pairwise_coded};
use super::consensus::{
    Consensus, ConsensusRule, UnanimousAgreement, consensus_coded, unanimous_coded,
};
use super::fleiss::{FleissKappa, fleiss_coded};
use super::interpret::Interpretation;
use super::scale::code;
use super::{AgreementError, Raters, RatingLabel, Weighting};

/// Choices for [`panel`].
#[derive(Debug, Clone, PartialEq)]
pub struct PanelOptions<L> {
    /// Weighting of the pairwise Cohen's kappas (use linear or quadratic for scores).
    pub weighting: Weighting,
    /// Category order; default: the observed labels sorted.
    pub order: Option<Vec<L>>,
    /// How each item's consensus is formed.
    pub consensus: ConsensusRule,
}

// Written out because a derive would demand `L: Default`, which labels need not be.
impl<L> Default for PanelOptions<L> {
    fn default() -> Self {
        Self {
            weighting: Weighting::default(),
            order: None,
            consensus: ConsensusRule::default(),
        }
    }
}

/// Agreement summary of a panel of named raters.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PanelSummary<L> {
    /// Items rated (length of every rater's list).
    pub n_items: usize,
    /// Rater names in input order.
    pub raters: Vec<String>,
    /// Categories in scale order.
    pub categories: Vec<L>,
    /// Cohen's kappa per pair, keyed `"<a>_vs_<b>"`.
    pub pairwise_kappa: IndexMap<String, CohenKappa>,
    /// Mean of the defined pairwise kappas; `None` when all are undefined.
    pub mean_kappa: Option<f64>,
    /// Verbal strength of `mean_kappa`.
    pub mean_kappa_interpretation: Interpretation,
    /// Pairs whose kappa is undefined (left out of the mean).
    pub n_pairs_undefined: usize,
    /// Fleiss' kappa over the items every rater rated.
    pub fleiss: FleissKappa,
    /// Krippendorff's alpha, nominal (uses every item with two or more ratings).
    pub alpha_nominal: Alpha,
    /// Krippendorff's alpha, ordinal in the scale order (meaningful only when the
    /// categories are ranked: pass `order` for non-numeric labels).
    pub alpha_ordinal: Alpha,
    /// Unanimous agreement rate.
    pub agreement: UnanimousAgreement,
    /// Missing ratings per rater (errors or abstentions), in rater order.
    pub missing_by_rater: IndexMap<String, usize>,
    /// Items on which at least one rater has no rating.
    pub items_with_missing: usize,
    /// The consensus rule applied.
    pub consensus_rule: ConsensusRule,
    /// Consensus per item (see [`ConsensusRule`] for when it is `None`).
    pub consensus: Vec<Option<Consensus<L>>>,
}

/// Summarises a panel: pairwise and mean kappa, Fleiss' kappa, Krippendorff's alpha,
/// unanimous agreement, missing-rating counts and per-item consensus.
///
/// Missing ratings (`None`, e.g. a model that errored) are dropped pair by pair for
/// Cohen's kappa, item by item for Fleiss', and simply absent for alpha and agreement;
/// each result reports how many it lost.
///
/// # Errors
/// Fewer than two raters, ratings of unequal length, or a rating not in `order`.
pub fn panel<L: RatingLabel>(
    raters: &Raters<L>,
    options: &PanelOptions<L>,
) -> Result<PanelSummary<L>, AgreementError> {
    summarise(raters, options, true)
}

/// [`panel`] without the pairwise kappas (`pairwise_kappa` empty, `mean_kappa` `None`):
/// every other measure is linear in the raters, the pairs are quadratic, so a large
/// panel summarises them separately (see [`super::cohen::pairwise_lists`]).
///
/// # Errors
/// As [`panel`].
pub fn panel_without_pairs<L: RatingLabel>(
    raters: &Raters<L>,
    options: &PanelOptions<L>,
) -> Result<PanelSummary<L>, AgreementError> {
    summarise(raters, options, false)
}

fn summarise<L: RatingLabel>(
    raters: &Raters<L>,
    options: &PanelOptions<L>,
    pairs: bool,
) -> Result<PanelSummary<L>, AgreementError> {
    if raters.len() < 2 {
        return Err(AgreementError::TooFewRaters(raters.len()));
    }
    let names: Vec<String> = raters.keys().cloned().collect();
    let columns: Vec<&[Option<L>]> = raters.values().map(Vec::as_slice).collect();
    let coded = code(&columns, &names, options.order.as_deref())?;
    let pairwise = if pairs {
        pairwise_coded(&coded, &names, options.weighting)
    } else {
        pairwise_coded(&coded, &[], options.weighting)
    };
    let n_items = coded.n_items();
    let missing_by_rater = names
        .iter()
        .zip(&coded.columns)
        .map(|(n, c)| (n.clone(), c.iter().filter(|r| r.is_none()).count()))
        .collect();
    let items_with_missing = (0..n_items)
        .filter(|&i| coded.item(i).any(|r| r.is_none()))
        .count();
    let consensus = (0..n_items)
        .map(|i| consensus_coded(&coded, i, options.consensus))
        .collect();
    Ok(PanelSummary {
        n_items,
        raters: names,
        categories: coded.categories.clone(),
        mean_kappa: pairwise.mean_kappa,
        mean_kappa_interpretation: pairwise.interpretation,
        n_pairs_undefined: pairwise.n_pairs_undefined,
        pairwise_kappa: pairwise.pairs,
        fleiss: fleiss_coded(&coded),
        alpha_nominal: alpha_coded(&coded, AlphaLevel::Nominal),
        alpha_ordinal: alpha_coded(&coded, AlphaLevel::Ordinal),
        agreement: unanimous_coded(&coded),
        missing_by_rater,
        items_with_missing,
        consensus_rule: options.consensus,
        consensus,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn judge_panel() -> Raters<&'static str> {
        let mut r = IndexMap::new();
        let col = |v: [&'static str; 8]| v.iter().map(|s| (*s != "-").then_some(*s)).collect();
        r.insert(
            "model_a".into(),
            col([
                "exact", "partial", "missed", "partial", "exact", "missed", "partial", "exact",
            ]),
        );
        r.insert(
            "model_b".into(),
            col([
                "exact", "partial", "partial", "partial", "exact", "missed", "missed", "exact",
            ]),
        );
        r.insert(
            "model_c".into(),
            col([
                "exact", "partial", "missed", "partial", "-", "partial", "partial", "partial",
            ]),
        );
        r
    }

    fn close(a: Option<f64>, b: f64) -> bool {
        a.is_some_and(|a| (a - b).abs() < 1e-12)
    }

    #[test]
    fn three_models_with_an_error() {
        let opts = PanelOptions {
            weighting: Weighting::Quadratic,
            order: Some(vec!["missed", "partial", "exact"]),
            consensus: ConsensusRule::Majority,
        };
        let p = panel(&judge_panel(), &opts).unwrap();
        assert_eq!(p.agreement.rate, Some(0.5));
        assert_eq!(p.fleiss.n_complete_items, 7);
        assert_eq!(p.fleiss.n_dropped_items, 1);
        assert_eq!(p.missing_by_rater["model_c"], 1);
        assert_eq!(p.missing_by_rater["model_a"], 0);
        assert_eq!(p.items_with_missing, 1);
        let ab = &p.pairwise_kappa["model_a_vs_model_b"];
        assert!(close(ab.kappa, 0.794_871_794_871_794_9));
        assert_eq!((ab.n_items, ab.n_dropped), (8, 0));
        let bc = &p.pairwise_kappa["model_b_vs_model_c"];
        assert_eq!((bc.n_items, bc.n_dropped), (7, 1));
        assert!(close(bc.kappa, 1.0 / 3.0));
        assert!(close(p.mean_kappa, 0.598_290_598_290_598_4));
        assert!(close(p.fleiss.kappa, 0.377_777_777_777_777_7));
        assert!(close(p.alpha_nominal.alpha, 0.473_053_892_215_568_8));
        assert!(close(p.alpha_ordinal.alpha, 0.697_765_700_483_091_7));
        // Item 5 has two valid verdicts, both "exact": a majority of the answers.
        assert_eq!(p.consensus[4], Some(Consensus::Label("exact")));
        // Item 7: partial, missed, partial -> partial.
        assert_eq!(p.consensus[6], Some(Consensus::Label("partial")));
        // Item 8: exact, exact, partial -> exact.
        assert_eq!(p.consensus[7], Some(Consensus::Label("exact")));
    }

    #[test]
    fn single_label_panel_is_undefined() {
        let mut r: Raters<&str> = IndexMap::new();
        for name in ["model_a", "model_b", "model_c"] {
            r.insert(name.into(), vec![Some("exact"); 6]);
        }
        let p = panel(&r, &PanelOptions::default()).unwrap();
        assert!(p.pairwise_kappa.values().all(|k| k.kappa.is_none()));
        assert_eq!(p.mean_kappa, None);
        assert_eq!(p.mean_kappa_interpretation, Interpretation::Undefined);
        assert_eq!(p.n_pairs_undefined, 3);
        assert_eq!(p.fleiss.kappa, None);
        assert_eq!(p.alpha_nominal.alpha, None);
        assert_eq!(p.agreement.rate, Some(1.0));
        let json = serde_json::to_value(&p).unwrap();
        assert!(json["mean_kappa"].is_null());
        assert!(json["pairwise_kappa"]["model_a_vs_model_c"]["kappa"].is_null());
    }
}
