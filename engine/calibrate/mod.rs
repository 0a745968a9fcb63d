//! `caldera calibrate`: how well each judge agrees with the people it stands in for.
//!
//! People score units (repos) on the suite's dimensions ([`labels`]). The judge's scores
//! of the same units come from running the suite one repo at a time (the heuristic, and
//! each model when asked) or from run results with per-repo verdicts. For every dimension
//! and every judge source the calibration reports quadratic-weighted kappa and exact
//! agreement against each rater and against the raters' consensus (the median, the lower
//! middle for an even count), the confusion matrix, the judge's mean bias with a 95%
//! interval, the pass rate a person would give beside the judge's (with the correction for
//! the judge's error rates), and the raters' agreement with each other: the ceiling no
//! judge can be expected to pass. A judge below the suite's `kappa_target` is flagged.

pub(crate) mod labels;
pub(crate) mod sources;
pub(crate) mod stats;

use std::collections::HashMap;

use indexmap::{IndexMap, IndexSet};
use serde::Serialize;

use crate::load::suite::Suite;
use crate::score::agreement::{Consensus, ConsensusRule, Weighting, consensus, pairwise_kappa};

use self::labels::Label;
use self::stats::{Agreement, Bias, Confusion, PassRates, SCALE};

/// A judge source's scores: dimension -> unit -> score (1-5).
pub(crate) type SourceScores = IndexMap<String, IndexMap<String, i64>>;

/// Raters whose pairwise agreement makes the ceiling. Pairs grow with the square of the
/// raters (2,000 raters are two million pairs, half a gigabyte and seconds); past this
/// many, the ceiling is that of the first ones (in the order of the labels file) and a
/// note says so.
pub(crate) const MAX_CEILING_RATERS: usize = 200;

/// The whole calibration.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct Calibration {
    /// The suite.
    pub suite: String,
    /// The labels file.
    pub labels: String,
    /// Rows read.
    pub rows: usize,
    /// The kappa a judge should reach against the consensus.
    pub kappa_target: f64,
    /// Per dimension with labels.
    pub dimensions: Vec<DimensionCalibration>,
    /// Judges below the target, and anything else worth a look.
    pub warnings: Vec<String>,
}

/// One dimension.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct DimensionCalibration {
    /// The dimension.
    pub dimension: String,
    /// Units people scored.
    pub units: Vec<String>,
    /// Who scored them.
    pub raters: Vec<String>,
    /// The raters' consensus per unit.
    pub consensus: IndexMap<String, i64>,
    /// How well the raters agree with each other: the ceiling for any judge.
    pub ceiling: Ceiling,
    /// Each judge source.
    pub sources: Vec<SourceCalibration>,
}

/// The raters' agreement with each other.
#[derive(Clone, Debug, Default, Serialize)]
pub(crate) struct Ceiling {
    /// Per pair of raters (`a_vs_b`).
    pub pairs: IndexMap<String, Agreement>,
    /// Mean of the defined pairwise weighted kappas; null with one rater.
    pub mean_weighted_kappa: Option<f64>,
    /// Mean pairwise exact agreement.
    pub mean_exact: Option<f64>,
    /// Set when the ceiling rests on the first [`MAX_CEILING_RATERS`] raters only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// One judge source on one dimension.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct SourceCalibration {
    /// `heuristic`, a model, or a result file's source.
    pub source: String,
    /// Its score of each labelled unit it scored.
    pub scores: IndexMap<String, i64>,
    /// Against the raters' consensus.
    pub consensus: Agreement,
    /// Against each rater.
    pub raters: IndexMap<String, Agreement>,
    /// Rows: consensus score; columns: the judge's.
    pub confusion: Confusion,
    /// Judge minus consensus.
    pub bias: Option<Bias>,
    /// Pass rates.
    pub pass_rate: PassRates,
    /// Whether the weighted kappa against the consensus is below the target (or
    /// undefined).
    pub below_target: bool,
    /// Labelled units the judge did not score.
    pub unscored_units: Vec<String>,
}

/// Calibrates every judge source in `scores` against `labels`.
pub(crate) fn calibrate(
    suite: &Suite,
    labels_file: &str,
    labels: &[Label],
    scores: &IndexMap<String, SourceScores>,
) -> Calibration {
    let target = suite
        .spec
        .kappa_target
        .unwrap_or(crate::verdict::panel::DEFAULT_KAPPA_TARGET);
    let mut warnings = Vec::new();
    let mut dimensions = Vec::new();
    for plan in &suite.judges {
        let dim = plan.spec.dimension.as_str();
        let rows: Vec<&Label> = labels.iter().filter(|l| l.dimension == dim).collect();
        if rows.is_empty() {
            continue;
        }
        let threshold = plan.pass_threshold;
        let d = dimension(dim, &rows, scores, threshold, target);
        for s in d.sources.iter().filter(|s| s.below_target) {
            warnings.push(below_target(&d, s, target));
        }
        if let Some(note) = &d.ceiling.note {
            warnings.push(format!("{dim}: {note}"));
        }
        dimensions.push(d);
    }
    Calibration {
        suite: suite.spec.suite.clone(),
        labels: labels_file.to_owned(),
        rows: labels.len(),
        kappa_target: target,
        dimensions,
        warnings,
    }
}

fn below_target(d: &DimensionCalibration, s: &SourceCalibration, target: f64) -> String {
    let kappa = s
        .consensus
        .weighted_kappa
        .map_or_else(|| "undefined".to_owned(), |k| format!("{k:.3}"));
    let ceiling = d.ceiling.mean_weighted_kappa.map_or_else(String::new, |c| {
        format!(" (the raters agree with each other at {c:.3})")
    });
    format!(
        "{} on {}: weighted kappa {kappa} against the raters' consensus is below the suite's \
         kappa_target {target}{ceiling}",
        s.source, d.dimension
    )
}

/// Calibrates one dimension.
fn dimension(
    dim: &str,
    rows: &[&Label],
    scores: &IndexMap<String, SourceScores>,
    threshold: f64,
    target: f64,
) -> DimensionCalibration {
    // Units and raters in order of first appearance, and each (rater, unit)'s first
    // score: one pass over the rows, hashed, so thousands of raters cost no scans.
    let mut units: IndexSet<&str> = IndexSet::new();
    let mut raters: IndexSet<&str> = IndexSet::new();
    let mut first: HashMap<(&str, &str), i64> = HashMap::with_capacity(rows.len());
    for l in rows {
        units.insert(&l.unit);
        raters.insert(&l.rater);
        first.entry((&l.rater, &l.unit)).or_insert(l.score);
    }
    let columns: IndexMap<String, Vec<Option<i64>>> = raters
        .iter()
        .map(|&r| {
            let col = units.iter().map(|&u| first.get(&(r, u)).copied()).collect();
            (r.to_owned(), col)
        })
        .collect();
    let units: Vec<String> = units.into_iter().map(str::to_owned).collect();
    let raters: Vec<String> = raters.into_iter().map(str::to_owned).collect();
    let consensus_of: IndexMap<String, i64> = units
        .iter()
        .enumerate()
        .filter_map(|(i, u)| {
            let ratings: Vec<Option<i64>> = columns.values().map(|c| c[i]).collect();
            match consensus(&ratings, ConsensusRule::Median, Some(&SCALE)) {
                Ok(Some(Consensus::Label(s))) => Some((u.clone(), s)),
                _ => None,
            }
        })
        .collect();
    let sources = scores
        .iter()
        .filter_map(|(name, by_dim)| {
            let judged = by_dim.get(dim)?;
            Some(source(
                name,
                judged,
                &units,
                &columns,
                &consensus_of,
                threshold,
                target,
            ))
        })
        .collect();
    DimensionCalibration {
        dimension: dim.to_owned(),
        ceiling: ceiling(&columns),
        units,
        raters,
        consensus: consensus_of,
        sources,
    }
}

/// The raters' pairwise agreement (of the first [`MAX_CEILING_RATERS`], with a note).
fn ceiling(columns: &IndexMap<String, Vec<Option<i64>>>) -> Ceiling {
    let note = (columns.len() > MAX_CEILING_RATERS).then(|| {
        format!(
            "{} raters: the ceiling is the agreement among the first {MAX_CEILING_RATERS} \
             (in the order of the labels file), not among all pairs",
            columns.len()
        )
    });
    let capped;
    let columns = if note.is_some() {
        capped = columns
            .iter()
            .take(MAX_CEILING_RATERS)
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect::<IndexMap<_, _>>();
        &capped
    } else {
        columns
    };
    let Ok(pairwise) = pairwise_kappa(columns, Weighting::Quadratic, Some(&SCALE)) else {
        return Ceiling {
            note,
            ..Ceiling::default()
        };
    };
    let pairs: IndexMap<String, Agreement> = pairwise
        .pairs
        .into_iter()
        .map(|(k, c)| {
            let a = Agreement {
                weighted_kappa: c.kappa,
                exact: (c.n_items > 0).then_some(c.p_o),
                n: c.n_items,
            };
            (k, a)
        })
        .collect();
    let exact: Vec<f64> = pairs.values().filter_map(|a| a.exact).collect();
    Ceiling {
        mean_weighted_kappa: pairwise.mean_kappa,
        mean_exact: (!exact.is_empty()).then(|| exact.iter().sum::<f64>() / exact.len() as f64),
        pairs,
        note,
    }
}

/// One source on one dimension.
fn source(
    name: &str,
    judged: &IndexMap<String, i64>,
    units: &[String],
    columns: &IndexMap<String, Vec<Option<i64>>>,
    consensus_of: &IndexMap<String, i64>,
    threshold: f64,
    target: f64,
) -> SourceCalibration {
    let with_consensus: Vec<(i64, i64)> = units
        .iter()
        .filter_map(|u| Some((*consensus_of.get(u)?, *judged.get(u)?)))
        .collect();
    let raters = columns
        .iter()
        .map(|(r, col)| {
            let pairs: Vec<(i64, i64)> = units
                .iter()
                .zip(col)
                .filter_map(|(u, h)| Some(((*h)?, *judged.get(u)?)))
                .collect();
            (r.clone(), stats::agreement(&pairs))
        })
        .collect();
    let all: Vec<i64> = judged.values().copied().collect();
    let consensus = stats::agreement(&with_consensus);
    SourceCalibration {
        source: name.to_owned(),
        scores: units
            .iter()
            .filter_map(|u| Some((u.clone(), *judged.get(u)?)))
            .collect(),
        below_target: consensus.weighted_kappa.is_none_or(|k| k < target),
        consensus,
        raters,
        confusion: stats::confusion(&with_consensus),
        bias: stats::bias(&with_consensus),
        pass_rate: stats::pass_rates(&with_consensus, &all, threshold),
        unscored_units: units
            .iter()
            .filter(|u| !judged.contains_key(*u))
            .cloned()
            .collect(),
    }
}
