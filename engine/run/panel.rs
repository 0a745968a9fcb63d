//! Judge panels: several models rate every unit; the dimension's score is their
//! consensus (median), and the run reports how much the models agree (pairwise Cohen's
//! kappa unweighted / linear / quadratic, mean kappa, Fleiss' kappa, Krippendorff's alpha,
//! unanimous agreement). One model is a single noisy rater; agreement is what makes a
//! score publishable.

use indexmap::IndexMap;
use serde::Serialize;

use crate::score::agreement::{
    ConsensusRule, PairwiseKappa, PanelOptions, PanelSummary, Weighting, pairwise_kappa, panel,
};
use crate::spec::suite::Consensus;
use crate::verdict::heuristic::HeuristicOutcome;
use crate::verdict::types::Scoring;

/// The 1-5 scale, in order (for weighted kappas and ordinal alpha).
const SCALE: [i64; 5] = [1, 2, 3, 4, 5];

/// Default target for the mean kappa (the scoring seed's publication bar).
pub const DEFAULT_KAPPA_TARGET: f64 = 0.70;

/// Combines the verdicts of the models that answered for one unit by `rule` (median by
/// default: the lower middle for an even count), with their mean confidence. Errored
/// models are listed in the reasoning. No verdict at all, or no strict majority under
/// `majority`, leaves the unit unscored with the reason.
pub fn consensus_scoring(
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
    let mut scores: Vec<i64> = verdicts.iter().map(|v| v.score).collect();
    scores.sort_unstable();
    let (median, how) = match rule {
        Consensus::Median => (scores[(scores.len() - 1) / 2], "median"),
        Consensus::Mean => {
            let mean = scores.iter().sum::<i64>() as f64 / scores.len() as f64;
            ((mean + 0.5).floor() as i64, "rounded mean")
        }
        Consensus::Majority => {
            let winner = scores
                .iter()
                .copied()
                .find(|s| scores.iter().filter(|x| *x == s).count() * 2 > scores.len());
            match winner {
                Some(w) => (w, "majority"),
                None => {
                    return HeuristicOutcome::Unscored(format!(
                        "no strict majority among the panel's scores ({}){failed_note}",
                        scores
                            .iter()
                            .map(i64::to_string)
                            .collect::<Vec<_>>()
                            .join(", ")
                    ));
                }
            }
        }
    };
    let confidence = verdicts.iter().map(|v| v.confidence).sum::<f64>() / verdicts.len() as f64;
    let all: Vec<String> = verdicts.iter().map(|v| v.score.to_string()).collect();
    let chosen = verdicts
        .iter()
        .min_by_key(|v| (v.score - median).abs())
        .map(|best| {
            verdicts
                .iter()
                .position(|v| std::ptr::eq(v, best))
                .unwrap_or(0)
        })
        .unwrap_or_default();
    let mut recommendations: Vec<String> = Vec::new();
    for v in &verdicts {
        for r in &v.recommendations {
            if !recommendations.contains(r) {
                recommendations.push(r.clone());
            }
        }
    }
    let base = verdicts.swap_remove(chosen);
    HeuristicOutcome::Scored(Scoring {
        score: median,
        confidence: (confidence * 100.0).round() / 100.0,
        reasoning: format!(
            "panel {how} {median} of {} models (scores {}){failed_note}. {}",
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
    })
}

/// Agreement over one dimension's units.
#[derive(Clone, Debug, Serialize)]
pub struct DimensionPanel {
    /// The dimension.
    pub dimension: String,
    /// Each model's score per unit (`null` where the model gave none).
    pub ratings: IndexMap<String, Vec<Option<i64>>>,
    /// Agreement statistics; absent when they cannot be computed (see `note`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agreement: Option<PanelSummary<i64>>,
    /// Why statistics are missing or thin (one unit gives undefined kappas).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// Builds one dimension's panel report.
pub fn dimension_panel(
    dimension: &str,
    models: &[String],
    per_model: &[Vec<Option<i64>>],
) -> DimensionPanel {
    let ratings: IndexMap<String, Vec<Option<i64>>> = models
        .iter()
        .cloned()
        .zip(per_model.iter().cloned())
        .collect();
    let items = per_model.first().map_or(0, Vec::len);
    let (agreement, note) = match panel(&ratings, &options(Weighting::Unweighted)) {
        Ok(s) => (
            Some(s),
            (items < 2).then(|| {
                "one item per model: chance agreement cannot be estimated, so kappas are undefined; see the run-level panel".to_owned()
            }),
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

fn options(weighting: Weighting) -> PanelOptions<i64> {
    PanelOptions {
        weighting,
        order: Some(SCALE.to_vec()),
        consensus: ConsensusRule::Median,
    }
}

/// Agreement over every unit of every dimension.
#[derive(Clone, Debug, Serialize)]
pub struct RunPanel {
    /// The models.
    pub models: Vec<String>,
    /// Units rated (judges x repos for per-repo judges).
    pub items: usize,
    /// Ratings missing because a model gave no verdict.
    pub missing_ratings: usize,
    /// Unweighted statistics: pairwise and mean kappa, Fleiss, alpha, agreement rate.
    pub agreement: Option<PanelSummary<i64>>,
    /// Pairwise kappa with linear weights (ordinal scores).
    pub linear: Option<PairwiseKappa>,
    /// Pairwise kappa with quadratic weights.
    pub quadratic: Option<PairwiseKappa>,
    /// The suite's target for the mean kappa.
    pub kappa_target: f64,
    /// Set when the mean kappa is below target or undefined.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub warning: Option<String>,
}

/// Builds the run-level panel from the dimensions' ratings.
pub fn run_panel(models: &[String], dims: &[DimensionPanel], target: Option<f64>) -> RunPanel {
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
    let agreement = panel(&ratings, &options(Weighting::Unweighted)).ok();
    let linear = pairwise_kappa(&ratings, Weighting::Linear, Some(&SCALE)).ok();
    let quadratic = pairwise_kappa(&ratings, Weighting::Quadratic, Some(&SCALE)).ok();
    let mean = agreement.as_ref().and_then(|a| a.mean_kappa);
    let warning = match mean {
        Some(k) if k < target => Some(format!(
            "mean pairwise kappa {k:.3} is below the target {target:.2}: the models disagree too often for a publishable score"
        )),
        None => Some(format!(
            "mean pairwise kappa is undefined over {items} items: agreement cannot be assessed"
        )),
        _ => None,
    };
    RunPanel {
        models: models.to_vec(),
        items,
        missing_ratings: missing,
        agreement,
        linear,
        quadratic,
        kappa_target: target,
        warning,
    }
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
    fn run_panel_warns_below_target() {
        let models = vec!["a".to_owned(), "b".to_owned()];
        let dim = dimension_panel(
            "d",
            &models,
            &[
                vec![Some(1), Some(2), Some(3), Some(4)],
                vec![Some(2), Some(1), Some(4), Some(3)],
            ],
        );
        let p = run_panel(&models, &[dim], None);
        assert_eq!(p.items, 4);
        assert!(p.warning.is_some());
        let same = dimension_panel(
            "d",
            &models,
            &[
                vec![Some(1), Some(2), Some(3)],
                vec![Some(1), Some(2), Some(3)],
            ],
        );
        let p = run_panel(&models, &[same], None);
        assert_eq!(p.agreement.and_then(|a| a.mean_kappa), Some(1.0));
        assert!(p.warning.is_none());
    }
}
