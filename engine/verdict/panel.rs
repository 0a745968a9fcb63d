//! Judge panels: several models rate every unit; the dimension's score is their
//! consensus (the suite's `consensus:` rule, median by default), and the run reports how much the models agree (pairwise Cohen's
//! kappa unweighted / linear / quadratic, mean kappa, Fleiss' kappa, Krippendorff's alpha,
//! unanimous agreement). One model is a single noisy rater; agreement is what makes a
//! score publishable.

use indexmap::IndexMap;
use serde::Serialize;

use crate::score::agreement::{
    Consensus as AgreedOn, ConsensusRule, Interpretation, PairList, PairwiseKappa, PanelOptions,
    PanelSummary, Weighting, consensus, pairwise_kappa, pairwise_lists, panel, panel_without_pairs,
};
use crate::spec::suite::Consensus;
use crate::verdict::heuristic::HeuristicOutcome;
use crate::verdict::scoring::Scoring;

/// The 1-5 scale, in order (for weighted kappas and ordinal alpha).
const SCALE: [i64; 5] = [1, 2, 3, 4, 5];

/// Default target for the mean kappa (the scoring seed's publication bar).
pub(crate) const DEFAULT_KAPPA_TARGET: f64 = 0.70;

/// Combines the verdicts of the models that answered for one unit by `rule` (median by
/// default: the lower middle for an even count), with their mean confidence. Errored
/// models are listed in the reasoning. No verdict at all, or no strict majority under
/// `majority`, leaves the unit unscored with the reason.
pub(crate) fn consensus_scoring(
    mut verdicts: Vec<Scoring>,
    failures: &[String],
    rule: Consensus,
) -> HeuristicOutcome {
    if verdicts.is_empty() {
        return HeuristicOutcome::Unscored(if failures.is_empty() {
            "no model gave a verdict".into()
        } else {
            format!("no model gave a verdict: {}", failures.join("; "))
        });
    }
    let failed_note = if failures.is_empty() {
        String::new()
    } else {
        format!(" [without: {}]", failures.join("; "))
    };
    if verdicts.len() == 1 {
        let mut only = verdicts.remove(0);
        only.reasoning.push_str(&failed_note);
        return HeuristicOutcome::Scored(only);
    }
    let scores: Vec<i64> = verdicts.iter().map(|v| v.score).collect();
    let chosen = match consensus_score(&scores, rule) {
        Ok(score) => score,
        Err(why) => return HeuristicOutcome::Unscored(format!("{why}{failed_note}")),
    };
    HeuristicOutcome::Scored(merge(verdicts, chosen, rule, &failed_note))
}

/// The panel's score under `rule`, computed by the same function that reports the
/// panel's per-unit consensus, so the two never differ; or why there is none.
fn consensus_score(scores: &[i64], rule: Consensus) -> Result<i64, String> {
    let ratings: Vec<Option<i64>> = scores.iter().copied().map(Some).collect();
    match consensus(&ratings, consensus_rule(rule), None) {
        Ok(Some(AgreedOn::Label(score))) => Ok(score),
        // A rounded mean, half up: 3.5 is 4.
        Ok(Some(AgreedOn::Mean(mean))) => Ok((mean + 0.5).floor() as i64),
        Ok(None) => {
            let mut sorted = scores.to_vec();
            sorted.sort_unstable();
            Err(format!(
                "no strict majority among the panel's scores ({})",
                sorted
                    .iter()
                    .map(i64::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
        }
        Err(e) => Err(format!("the panel's scores have no consensus: {e}")),
    }
}

/// The agreement statistics' name for the suite's `consensus:` rule.
pub(crate) fn consensus_rule(rule: Consensus) -> ConsensusRule {
    match rule {
        Consensus::Median => ConsensusRule::Median,
        Consensus::Mean => ConsensusRule::Mean,
        Consensus::Majority => ConsensusRule::Majority,
    }
}

/// One scoring from the panel's: the consensus `score`, the mean confidence, every
/// member's recommendations, and the reasoning of the member nearest the consensus.
fn merge(mut verdicts: Vec<Scoring>, score: i64, rule: Consensus, failed_note: &str) -> Scoring {
    let how = match rule {
        Consensus::Median => "median",
        Consensus::Mean => "rounded mean",
        Consensus::Majority => "majority",
    };
    let confidence = verdicts.iter().map(|v| v.confidence).sum::<f64>() / verdicts.len() as f64;
    let all: Vec<String> = verdicts.iter().map(|v| v.score.to_string()).collect();
    let chosen = verdicts
        .iter()
        .enumerate()
        .min_by_key(|(_, v)| (v.score - score).abs())
        .map_or(0, |(i, _)| i);
    let mut recommendations: Vec<String> = Vec::new();
    for v in &verdicts {
        for r in &v.recommendations {
            if !recommendations.contains(r) {
                recommendations.push(r.clone());
            }
        }
    }
    let base = verdicts.swap_remove(chosen);
    Scoring {
        score,
        confidence: crate::score::round::to(confidence, 2),
        reasoning: format!(
            "panel {how} {score} of {} models (scores {}){failed_note}. {}",
            all.len(),
            all.join(", "),
            base.reasoning
        ),
        evidence_cited: base.evidence_cited,
        recommendations,
        sub_scores: base.sub_scores,
        raw_response: base.raw_response,
        // A consensus is on 1-5; each member's own score is in `model_verdicts`.
        model_score: None,
    }
}

/// Past this many models, pairwise tables are summarised: 8 models make 28 pairs, a
/// table a person still reads; 250 make 31,125. `--panel-matrices` keeps them all.
pub(crate) const FULL_PAIRS_UP_TO: usize = 8;

/// How much of the pairwise tables a result keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Pairs {
    /// Every pair's kappa.
    Full,
    /// A digest per weighting (see [`PairwiseDigest`]).
    Summary,
}

impl Pairs {
    /// Full tables for a handful of models or when asked for, else a summary.
    pub fn for_panel(models: usize, full_requested: bool) -> Pairs {
        if full_requested || models <= FULL_PAIRS_UP_TO {
            Pairs::Full
        } else {
            Pairs::Summary
        }
    }
}

/// Agreement over one dimension's units.
#[derive(Clone, Debug, Serialize)]
pub struct DimensionPanel {
    /// The judge's dimension, so a panel read alone says what it rated.
    pub dimension: String,
    /// Each model's score per unit (`null` where the model gave none).
    pub ratings: IndexMap<String, Vec<Option<i64>>>,
    /// Agreement statistics; absent when they cannot be computed (see `note`). In a
    /// summarised panel, without pairwise kappas (they are summarised for the run).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agreement: Option<PanelSummary<i64>>,
    /// Why statistics are missing or thin (one unit gives undefined kappas).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// Builds one dimension's panel report.
pub(crate) fn dimension_panel(
    dimension: &str,
    models: &[String],
    per_model: &[Vec<Option<i64>>],
    pairs: Pairs,
    rule: Consensus,
) -> DimensionPanel {
    let ratings: IndexMap<String, Vec<Option<i64>>> = models
        .iter()
        .cloned()
        .zip(per_model.iter().cloned())
        .collect();
    let items = per_model.first().map_or(0, Vec::len);
    let computed = match pairs {
        Pairs::Full => panel(&ratings, &options(rule)),
        Pairs::Summary => panel_without_pairs(&ratings, &options(rule)),
    };
    let (agreement, note) = match computed {
        Ok(s) => (
            Some(s),
            if items < 2 {
                Some("one item per model: chance agreement cannot be estimated, so kappas are undefined; see the run-level panel".to_owned())
            } else if pairs == Pairs::Summary {
                Some(summarised_note(models.len()))
            } else {
                None
            },
        ),
        Err(e) => (None, Some(e.to_string())),
    };
    DimensionPanel {
        dimension: dimension.to_owned(),
        ratings,
        agreement,
        note,
    }
}

fn summarised_note(models: usize) -> String {
    format!(
        "{models} models make {} pairs: pairwise kappas are summarised in the run-level panel (--panel-matrices writes them all)",
        models * models.saturating_sub(1) / 2
    )
}

/// Unweighted statistics on the 1-5 scale, each unit's consensus formed as the scores
/// were.
fn options(rule: Consensus) -> PanelOptions<i64> {
    PanelOptions {
        weighting: Weighting::Unweighted,
        order: Some(SCALE.to_vec()),
        consensus: consensus_rule(rule),
    }
}

/// One pair and its kappa.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct PairEntry {
    /// `"<a>_vs_<b>"`, as in the full tables.
    pub pair: String,
    /// Cohen's kappa of the pair (weighted as the table it came from says).
    pub kappa: f64,
}

/// Pairwise kappas of a large panel, summarised: what a person reads of 31,125 pairs.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct PairwiseDigest {
    /// Pairs in all.
    pub n_pairs: usize,
    /// Pairs whose kappa is undefined.
    pub n_pairs_undefined: usize,
    /// Mean of the defined kappas (the same mean the full table gives).
    pub mean_kappa: Option<f64>,
    /// Lowest and highest defined kappa.
    pub range: Option<(f64, f64)>,
    /// Each model's mean kappa with the other models (defined pairs), in model order.
    pub by_model: IndexMap<String, Option<f64>>,
    /// The pairs that agree least, lowest first.
    pub lowest: Vec<PairEntry>,
    /// The pairs that agree most, highest first.
    pub highest: Vec<PairEntry>,
    /// Pairs per verbal strength (Landis and Koch), `undefined` included.
    pub by_interpretation: IndexMap<String, usize>,
}

/// Pairs listed at each end of a digest.
pub(crate) const DIGEST_ENDS: usize = 5;

/// Summarises every pair's kappa; see [`PairwiseDigest`].
pub(crate) fn digest(list: &PairList) -> PairwiseDigest {
    let m = list.names.len();
    let mut sums = vec![(0.0f64, 0usize); m];
    let mut defined: Vec<Kappa> = Vec::with_capacity(list.kappas.len());
    let mut bands: Vec<(Interpretation, usize)> = Vec::new();
    for &(x, y, k) in &list.kappas {
        let band = Interpretation::of(k);
        match bands.iter_mut().find(|(b, _)| *b == band) {
            Some((_, n)) => *n += 1,
            None => bands.push((band, 1)),
        }
        if let Some(k) = k {
            defined.push((k, x, y));
            for i in [x, y] {
                sums[i].0 += k;
                sums[i].1 += 1;
            }
        }
    }
    let mean_kappa = (!defined.is_empty())
        .then(|| defined.iter().map(|d| d.0).sum::<f64>() / defined.len() as f64);
    let range = defined.iter().fold(None, |acc: Option<(f64, f64)>, d| {
        Some(acc.map_or((d.0, d.0), |(lo, hi)| (lo.min(d.0), hi.max(d.0))))
    });
    let (lowest, highest) = ends(&defined, DIGEST_ENDS);
    let entry = |&(k, x, y): &Kappa| PairEntry {
        pair: format!("{}_vs_{}", list.names[x], list.names[y]),
        kappa: k,
    };
    PairwiseDigest {
        n_pairs: list.kappas.len(),
        n_pairs_undefined: list.kappas.len() - defined.len(),
        mean_kappa,
        range,
        by_model: list
            .names
            .iter()
            .zip(&sums)
            .map(|(n, &(sum, count))| (n.clone(), (count > 0).then(|| sum / count as f64)))
            .collect(),
        lowest: lowest.iter().map(entry).collect(),
        highest: highest.iter().map(entry).collect(),
        by_interpretation: bands.into_iter().map(|(b, n)| (b.to_string(), n)).collect(),
    }
}

/// A defined kappa and its pair's rater positions.
type Kappa = (f64, usize, usize);

/// The `n` lowest kappas (lowest first) and the `n` highest (highest first), ties in
/// pair order; one pass, no sort of all the pairs.
fn ends(defined: &[Kappa], n: usize) -> (Vec<Kappa>, Vec<Kappa>) {
    let order = |a: &Kappa, b: &Kappa| a.0.total_cmp(&b.0).then((a.1, a.2).cmp(&(b.1, b.2)));
    let (mut low, mut high): (Vec<Kappa>, Vec<Kappa>) =
        (Vec::with_capacity(n + 1), Vec::with_capacity(n + 1));
    for d in defined {
        if low.len() < n || low.last().is_some_and(|l| order(d, l).is_lt()) {
            let at = low.partition_point(|l| order(l, d).is_lt());
            low.insert(at, *d);
            low.truncate(n);
        }
        let higher = |h: &Kappa| d.0.total_cmp(&h.0).is_gt();
        if high.len() < n || high.last().is_some_and(higher) {
            let at = high.partition_point(|h| h.0.total_cmp(&d.0).is_ge());
            high.insert(at, *d);
            high.truncate(n);
        }
    }
    (low, high)
}

/// A large panel's pairwise kappas, summarised per weighting.
#[derive(Clone, Debug, Serialize)]
pub struct PairwiseDigests {
    /// Unweighted kappa.
    pub unweighted: PairwiseDigest,
    /// Linear weights (ordinal scores).
    pub linear: PairwiseDigest,
    /// Quadratic weights.
    pub quadratic: PairwiseDigest,
}

/// Agreement over every unit of every dimension.
#[derive(Clone, Debug, Serialize)]
pub struct RunPanel {
    /// The panel's models in the order the suite or `--models` gave them.
    pub models: Vec<String>,
    /// Units rated (judges x repos for per-repo judges).
    pub items: usize,
    /// Ratings missing because a model gave no verdict.
    pub missing_ratings: usize,
    /// `full`: every pair's kappa below; `summary`: a digest per weighting in
    /// `pairwise` (past [`FULL_PAIRS_UP_TO`] models, unless `--panel-matrices`).
    pub pairs: Pairs,
    /// Unweighted statistics: pairwise and mean kappa, Fleiss, alpha, agreement rate
    /// (in a summary, `pairwise_kappa` is empty and the mean comes from the digest).
    pub agreement: Option<PanelSummary<i64>>,
    /// Pairwise kappa with linear weights (ordinal scores); full tables only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub linear: Option<PairwiseKappa>,
    /// Pairwise kappa with quadratic weights; full tables only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub quadratic: Option<PairwiseKappa>,
    /// The pairwise kappas summarised, per weighting; summaries only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pairwise: Option<PairwiseDigests>,
    /// The suite's target for the mean kappa.
    pub kappa_target: f64,
    /// Set when the mean kappa is below target or undefined.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub warning: Option<String>,
}

/// Builds the run-level panel from the dimensions' ratings.
pub(crate) fn run_panel(
    models: &[String],
    dims: &[DimensionPanel],
    target: Option<f64>,
    pairs: Pairs,
    rule: Consensus,
) -> RunPanel {
    let target = target.unwrap_or(DEFAULT_KAPPA_TARGET);
    let mut ratings: IndexMap<String, Vec<Option<i64>>> =
        models.iter().map(|m| (m.clone(), Vec::new())).collect();
    for d in dims {
        for (m, col) in &d.ratings {
            if let Some(all) = ratings.get_mut(m) {
                all.extend(col.iter().copied());
            }
        }
    }
    let items = ratings.values().next().map_or(0, Vec::len);
    let missing = ratings.values().flatten().filter(|r| r.is_none()).count();
    let mut panel = RunPanel {
        models: models.to_vec(),
        items,
        missing_ratings: missing,
        pairs,
        agreement: None,
        linear: None,
        quadratic: None,
        pairwise: None,
        kappa_target: target,
        warning: None,
    };
    match pairs {
        Pairs::Full => {
            panel.agreement = self::panel(&ratings, &options(rule)).ok();
            panel.linear = pairwise_kappa(&ratings, Weighting::Linear, Some(&SCALE)).ok();
            panel.quadratic = pairwise_kappa(&ratings, Weighting::Quadratic, Some(&SCALE)).ok();
        }
        Pairs::Summary => {
            let digests = digests(&ratings);
            panel.agreement = panel_without_pairs(&ratings, &options(rule))
                .ok()
                .map(|mut a| {
                    if let Some(d) = &digests {
                        a.mean_kappa = d.unweighted.mean_kappa;
                        a.mean_kappa_interpretation = Interpretation::of(a.mean_kappa);
                        a.n_pairs_undefined = d.unweighted.n_pairs_undefined;
                    }
                    a
                });
            panel.pairwise = digests;
        }
    }
    let mean = panel.agreement.as_ref().and_then(|a| a.mean_kappa);
    panel.warning = kappa_warning(mean, target, items);
    panel
}

/// A mean kappa below `target`, or undefined, is worth a warning: such a panel's scores
/// are not publishable.
fn kappa_warning(mean: Option<f64>, target: f64, items: usize) -> Option<String> {
    match mean {
        Some(k) if k < target => Some(format!(
            "mean pairwise kappa {k:.3} is below the target {target:.2}: the models disagree too often for a publishable score"
        )),
        None => Some(format!(
            "mean pairwise kappa is undefined over {items} items: agreement cannot be assessed"
        )),
        _ => None,
    }
}

/// The three weightings' digests (one pass over the pairs: see [`pairwise_lists`]).
fn digests(ratings: &IndexMap<String, Vec<Option<i64>>>) -> Option<PairwiseDigests> {
    let weightings = [
        Weighting::Unweighted,
        Weighting::Linear,
        Weighting::Quadratic,
    ];
    let lists = pairwise_lists(ratings, &weightings, Some(&SCALE)).ok()?;
    let mut digests = lists.iter().map(digest);
    Some(PairwiseDigests {
        unweighted: digests.next()?,
        linear: digests.next()?,
        quadratic: digests.next()?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(score: i64, conf: f64) -> Scoring {
        Scoring {
            score,
            confidence: conf,
            reasoning: format!("r{score}"),
            ..Scoring::default()
        }
    }

    #[test]
    fn consensus_is_the_median_and_names_failures() {
        let out = consensus_scoring(
            vec![s(2, 0.5), s(4, 0.7), s(5, 0.9)],
            &["c: timeout".into()],
            Consensus::Median,
        );
        let HeuristicOutcome::Scored(sc) = out else {
            panic!("scored")
        };
        assert_eq!(sc.score, 4);
        assert!((sc.confidence - 0.7).abs() < 1e-9);
        assert!(sc.reasoning.contains("c: timeout"));
        let even = consensus_scoring(vec![s(3, 0.5), s(4, 0.5)], &[], Consensus::Median);
        let HeuristicOutcome::Scored(sc) = even else {
            panic!("scored")
        };
        assert_eq!(sc.score, 3);
        assert!(
            matches!(consensus_scoring(vec![], &["a: 500".into()], Consensus::Median), HeuristicOutcome::Unscored(r) if r.contains("a: 500"))
        );
        let HeuristicOutcome::Scored(m) =
            consensus_scoring(vec![s(3, 0.5), s(4, 0.5)], &[], Consensus::Mean)
        else {
            panic!("scored")
        };
        assert_eq!(m.score, 4, "3.5 rounds half up");
        let HeuristicOutcome::Scored(m) = consensus_scoring(
            vec![s(2, 0.5), s(4, 0.5), s(4, 0.5)],
            &[],
            Consensus::Majority,
        ) else {
            panic!("scored")
        };
        assert_eq!(m.score, 4);
        assert!(matches!(
            consensus_scoring(vec![s(2, 0.5), s(3, 0.5), s(4, 0.5)], &[], Consensus::Majority),
            HeuristicOutcome::Unscored(r) if r.contains("no strict majority")
        ));
    }

    #[test]
    fn the_reported_consensus_is_the_score_under_every_rule() {
        let models = vec!["a".to_owned(), "b".to_owned(), "c".to_owned()];
        let units = [[2, 4, 5], [3, 3, 1], [4, 5, 5], [1, 2, 2]];
        let per_model: Vec<Vec<Option<i64>>> = (0..3)
            .map(|m| units.iter().map(|u| Some(u[m])).collect())
            .collect();
        for rule in [Consensus::Median, Consensus::Mean, Consensus::Majority] {
            let dim = dimension_panel("d", &models, &per_model, Pairs::Full, rule);
            let reported = dim.agreement.expect("statistics").consensus;
            for (unit, reported) in units.iter().zip(reported) {
                let verdicts = unit.iter().map(|&x| s(x, 0.5)).collect();
                let scored = match consensus_scoring(verdicts, &[], rule) {
                    HeuristicOutcome::Scored(sc) => Some(sc.score),
                    _ => None,
                };
                let reported = reported.map(|c| match c {
                    AgreedOn::Label(l) => l,
                    AgreedOn::Mean(m) => (m + 0.5).floor() as i64,
                });
                assert_eq!(reported, scored, "{rule:?} on {unit:?}");
            }
        }
    }

    #[test]
    fn run_panel_warns_below_target() {
        let models = vec!["a".to_owned(), "b".to_owned()];
        let dim = dimension_panel(
            "d",
            &models,
            &[
                vec![Some(1), Some(2), Some(3), Some(4)],
                vec![Some(2), Some(1), Some(4), Some(3)],
            ],
            Pairs::Full,
            Consensus::Median,
        );
        let p = run_panel(&models, &[dim], None, Pairs::Full, Consensus::Median);
        assert_eq!(p.items, 4);
        assert!(p.warning.is_some());
        let same = dimension_panel(
            "d",
            &models,
            &[
                vec![Some(1), Some(2), Some(3)],
                vec![Some(1), Some(2), Some(3)],
            ],
            Pairs::Full,
            Consensus::Median,
        );
        let p = run_panel(&models, &[same], None, Pairs::Full, Consensus::Median);
        assert_eq!(p.agreement.and_then(|a| a.mean_kappa), Some(1.0));
        assert!(p.warning.is_none());
    }

    #[test]
    fn a_summary_keeps_the_full_tables_mean_and_names_the_extremes() {
        let models: Vec<String> = (0..10).map(|i| format!("m{i}")).collect();
        // Nine models rate alike; m9 contradicts them.
        let alike = vec![Some(1), Some(2), Some(3), Some(4), Some(5), Some(3)];
        let contrary = vec![Some(5), Some(4), Some(1), Some(2), Some(1), Some(2)];
        let per_model: Vec<Vec<Option<i64>>> = (0..10)
            .map(|i| {
                if i == 9 {
                    contrary.clone()
                } else {
                    alike.clone()
                }
            })
            .collect();
        let full = run_panel(
            &models,
            &[dimension_panel(
                "d",
                &models,
                &per_model,
                Pairs::Full,
                Consensus::Median,
            )],
            None,
            Pairs::Full,
            Consensus::Median,
        );
        let summary = run_panel(
            &models,
            &[dimension_panel(
                "d",
                &models,
                &per_model,
                Pairs::Summary,
                Consensus::Median,
            )],
            None,
            Pairs::Summary,
            Consensus::Median,
        );
        let mean = |p: &RunPanel| p.agreement.as_ref().and_then(|a| a.mean_kappa).unwrap();
        assert!((mean(&full) - mean(&summary)).abs() < 1e-12);
        let quadratic_full = full.quadratic.as_ref().unwrap().mean_kappa.unwrap();
        let digests = summary.pairwise.as_ref().unwrap();
        assert!((digests.quadratic.mean_kappa.unwrap() - quadratic_full).abs() < 1e-12);
        let d = &digests.unweighted;
        assert_eq!((d.n_pairs, d.n_pairs_undefined), (45, 0));
        assert_eq!(d.lowest.len(), DIGEST_ENDS);
        assert!(
            d.lowest.iter().all(|p| p.pair.ends_with("_vs_m9")),
            "{:?}",
            d.lowest
        );
        assert_eq!(d.highest[0].kappa, 1.0);
        assert!(d.by_model["m9"].unwrap() < d.by_model["m0"].unwrap());
        assert_eq!(d.by_interpretation["Almost Perfect"], 36);
        // No pair table in the summary: its size does not grow with the pairs.
        assert!(
            summary
                .agreement
                .as_ref()
                .unwrap()
                .pairwise_kappa
                .is_empty()
        );
        assert!(summary.linear.is_none() && summary.quadratic.is_none());
    }

    #[test]
    fn ends_match_a_full_sort() {
        let values: Vec<(f64, usize, usize)> = (0..200)
            .map(|i| (((i * 37) % 23) as f64 / 7.0, i, i + 1))
            .collect();
        let (low, high) = ends(&values, 5);
        let mut ascending = values.clone();
        ascending.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        assert_eq!(low, ascending[..5]);
        let mut descending = values;
        descending.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        assert_eq!(high, descending[..5]);
    }
}
