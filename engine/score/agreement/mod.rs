//! Inter-rater agreement: Cohen's kappa (plain and weighted), Fleiss' kappa,
//! Krippendorff's alpha, unanimous agreement, per-item consensus and a panel summary.
//!
//! Ratings are `Option<L>`: `None` is a rater that errored or abstained on an item. Each
//! coefficient says how it treats such gaps. A coefficient whose chance agreement is
//! total (every rating in one category) is `0/0`; it is reported as `None`
//! ("undefined"), never as `1.0`, because a panel that can only say one thing has shown
//! no ability to agree.
//!
//! Labels are any ordered type ([`RatingLabel`]). Ordinal measures (weighted kappa,
//! ordinal alpha, median consensus) need the categories in their natural order; pass it
//! as `order` when it is not the type's own (e.g. `missed < partial < exact`). Without an
//! `order`, the categories are the observed labels sorted, as scikit-learn does.

mod alpha;
mod cohen;
mod consensus;
mod fleiss;
mod interpret;
mod panel;
mod scale;

pub use alpha::{Alpha, AlphaLevel, krippendorff_alpha};
pub use cohen::{CohenKappa, PairList, PairwiseKappa, cohen_kappa, pairwise_kappa, pairwise_lists};
pub use consensus::{Consensus, ConsensusRule, UnanimousAgreement, consensus, unanimous_agreement};
pub use fleiss::{FleissKappa, fleiss_kappa};
pub use interpret::Interpretation;
pub use panel::{PanelOptions, PanelSummary, panel, panel_without_pairs};

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};

/// Ratings of named raters: one `Vec` per rater, one entry per item, all the same length.
pub type Raters<L> = IndexMap<String, Vec<Option<L>>>;

/// A category a rater can give. Any ordered, cloneable, serializable value qualifies.
///
/// `numeric` lets the mean consensus work on score-like labels; it is `None` for labels
/// that have no numeric reading (the default).
pub trait RatingLabel: Ord + Clone + std::fmt::Debug + Serialize {
    /// The label as a number, if it is one.
    fn numeric(&self) -> Option<f64> {
        None
    }
}

macro_rules! numeric_label {
    ($($t:ty),*) => {$(
        impl RatingLabel for $t {
            #[allow(clippy::cast_precision_loss, clippy::cast_lossless)]
            fn numeric(&self) -> Option<f64> {
                Some(*self as f64)
            }
        }
    )*};
}
numeric_label!(i8, i16, i32, i64, u8, u16, u32, u64, usize);

impl RatingLabel for String {}
impl RatingLabel for &str {}
impl RatingLabel for bool {}

/// How disagreements between ordered categories are weighted in Cohen's kappa.
///
/// The disagreement weight between categories at positions `i` and `j` is `0/1`
/// (unweighted), `|i - j|` (linear, Cicchetti-Allison) or `(i - j)^2` (quadratic,
/// Fleiss-Cohen), as in scikit-learn's `cohen_kappa_score(weights=...)`.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Weighting {
    /// Every disagreement counts the same (nominal categories).
    #[default]
    Unweighted,
    /// Disagreement grows with the distance between categories.
    Linear,
    /// Disagreement grows with the squared distance between categories.
    Quadratic,
}

impl Weighting {
    /// Disagreement weight between category positions `i` and `j`; integral so that
    /// kappa's "undefined" test is exact.
    pub(crate) fn weight(self, i: usize, j: usize) -> u128 {
        let d = i.abs_diff(j) as u128;
        match self {
            Weighting::Unweighted => u128::from(d != 0),
            Weighting::Linear => d,
            Weighting::Quadratic => d * d,
        }
    }
}

/// Bad input to an agreement measure. Gaps (`None`) are not errors.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AgreementError {
    /// Raters rated different numbers of items.
    #[error("rater `{rater}` has {got} ratings, expected {expected} (one per item)")]
    LengthMismatch {
        /// Name (or position) of the rater.
        rater: String,
        /// Number of items of the first rater.
        expected: usize,
        /// Number of ratings of this rater.
        got: usize,
    },
    /// A rating is not one of the declared categories.
    #[error("rating {label} is not one of the declared categories")]
    UnknownLabel {
        /// The rating, debug-formatted.
        label: String,
    },
    /// The declared category order names a category twice.
    #[error("category {label} appears twice in the declared order")]
    DuplicateCategory {
        /// The repeated category, debug-formatted.
        label: String,
    },
    /// The measure needs at least two raters.
    #[error("agreement needs at least two raters, got {0}")]
    TooFewRaters(usize),
}

/// Mean of the defined values, `None` if there are none.
pub(crate) fn mean_defined(values: impl IntoIterator<Item = Option<f64>>) -> Option<f64> {
    let (sum, n) = values
        .into_iter()
        .flatten()
        .fold((0.0, 0usize), |(s, n), v| (s + v, n + 1));
    #[allow(clippy::cast_precision_loss)]
    (n > 0).then(|| sum / n as f64)
}
