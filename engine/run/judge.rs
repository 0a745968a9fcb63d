//! Runs one judge: evidence, assertions, a score (from the heuristic or from a model),
//! caps, and the verdict. A per-repo judge does this once per repo and combines the
//! results by mean, reporting the spread.

use minijinja::Environment;

use crate::doc::Doc;
use crate::evidence::eval::{Context, Evidence, evaluate, full_scope};
use crate::load::judge::JudgePlan;
use crate::run::context::repo_context;
use crate::spec::judge::Scope;
use crate::verdict::assertions::{check, lowest_cap};
use crate::verdict::heuristic::{self, HeuristicOutcome};
use crate::verdict::types::{
    AssertionFailure, RepoVerdict, Score, Scoring, Source, Spread, Status, Verdict,
};

/// One unit of judgement: the whole suite, or one repo of a per-repo judge.
#[derive(Debug, Clone)]
pub struct Unit {
    /// The repo, for per-repo judges.
    pub repo: Option<String>,
    /// The unit's context.
    pub ctx: Context,
    /// Its evidence, or why it could not be computed.
    pub evidence: Result<Evidence, String>,
    /// Failed assertions.
    pub failures: Vec<AssertionFailure>,
    /// Whether the assertions were evaluated (not when the evidence failed).
    pub assertions_ran: bool,
    /// The heuristic's outcome (computed in every mode: it is free).
    pub heuristic: HeuristicOutcome,
}

/// Computes the units of `plan`: evidence, assertions and heuristic outcome.
pub fn prepare(env: &Environment<'static>, plan: &JudgePlan, ctx: &Context) -> Vec<Unit> {
    match plan.spec.scope {
        Scope::Suite => vec![prepare_unit(env, plan, ctx.clone(), None)],
        Scope::Repo => {
            let repos = match ctx.names.get("repos") {
                Some(Doc::Array(items)) => items.0.clone(),
                _ => Vec::new(),
            };
            repos
                .iter()
                .map(|repo| {
                    let id = repo
                        .field("id")
                        .and_then(Doc::as_str)
                        .unwrap_or_default()
                        .to_owned();
                    prepare_unit(env, plan, repo_context(ctx, repo), Some(id))
                })
                .collect()
        }
    }
}

fn prepare_unit(
    env: &Environment<'static>,
    plan: &JudgePlan,
    ctx: Context,
    repo: Option<String>,
) -> Unit {
    let evidence = evaluate(env, &plan.evidence, &ctx).map_err(|e| e.to_string());
    let (failures, heuristic) = match &evidence {
        Ok(ev) => {
            let scope = full_scope(&ctx, ev);
            let root = ctx.root_with(ev);
            let failures = check(env, &plan.assertions, &scope, &root, repo.as_deref());
            let heuristic = match &plan.heuristic {
                Some(h) => heuristic::evaluate(env, h, ev, &scope),
                None => HeuristicOutcome::Unscored(
                    "the judge has no heuristic; it is scored only in LLM mode".into(),
                ),
            };
            (failures, heuristic)
        }
        Err(e) => (
            Vec::new(),
            HeuristicOutcome::Error(format!("evidence could not be computed: {e}")),
        ),
    };
    Unit {
        repo,
        ctx,
        assertions_ran: evidence.is_ok(),
        evidence,
        failures,
        heuristic,
    }
}

/// The score source for each unit: the heuristic's outcome (heuristic mode) or a model's
/// (LLM mode).
pub type UnitScore = HeuristicOutcome;

/// Builds the verdict from units and their scores.
pub fn verdict(
    plan: &JudgePlan,
    units: &[Unit],
    scores: &[UnitScore],
    source: Source,
    suite_threshold: f64,
    total_weight: f64,
) -> Verdict {
    let spec = &plan.spec;
    let threshold = spec.pass_threshold.unwrap_or(suite_threshold);
    let normalized_weight = if total_weight > 0.0 {
        spec.weight / total_weight
    } else {
        0.0
    };
    let mut base = Verdict {
        name: spec.dimension.clone(),
        dimension: spec.dimension.clone(),
        status: Status::Unscored,
        source,
        score: None,
        weight: spec.weight,
        normalized_weight,
        weighted_score: None,
        confidence: None,
        reasoning: String::new(),
        evidence_cited: Vec::new(),
        recommendations: Vec::new(),
        sub_scores: Default::default(),
        ground_truth_passed: Some(true),
        assertions_ran: true,
        ground_truth_failures: Vec::new(),
        assertion_failures: Vec::new(),
        score_before_cap: None,
        cap_applied: None,
        pass_threshold: threshold,
        passed: None,
        unscored_reason: None,
        raw_response: String::new(),
        model_score: None,
        repos: Vec::new(),
        spread: None,
        heuristic: None,
        llm_calls: Vec::new(),
        model_verdicts: Vec::new(),
        panel: None,
        repeats: None,
        note: None,
        evidence: Doc::Null,
    };
    let failures: Vec<AssertionFailure> = units.iter().flat_map(|u| u.failures.clone()).collect();
    base.assertions_ran = units.iter().all(|u| u.assertions_ran);
    base.ground_truth_passed = if !failures.is_empty() {
        Some(false)
    } else {
        base.assertions_ran.then_some(true)
    };
    base.ground_truth_failures = failures
        .iter()
        .map(|f| match &f.repo {
            Some(r) => format!("[{r}] {}", f.message),
            None => f.message.clone(),
        })
        .collect();
    base.assertion_failures = failures;

    if spec.scope == Scope::Suite {
        let (unit, score) = match (units.first(), scores.first()) {
            (Some(u), Some(s)) => (u, s),
            _ => {
                base.status = Status::Error;
                base.unscored_reason = Some("no unit was judged".into());
                return base;
            }
        };
        base.evidence = evidence_doc(unit);
        apply_unit(&mut base, unit, score);
        finish(&mut base);
        return base;
    }

    // Per repo: one verdict each, then the mean.
    let mut scored: Vec<i64> = Vec::new();
    let mut confidences = Vec::new();
    for (unit, score) in units.iter().zip(scores) {
        let mut one = base.clone();
        one.assertion_failures = unit.failures.clone();
        apply_unit(&mut one, unit, score);
        if let Some(Score::Single(s)) = one.score {
            scored.push(s);
        }
        if let Some(c) = one.confidence {
            confidences.push(c);
        }
        base.repos.push(RepoVerdict {
            repo: unit.repo.clone().unwrap_or_default(),
            status: one.status,
            score: one.score.map(|s| s.value() as i64),
            confidence: one.confidence,
            reasoning: one.reasoning,
            unscored_reason: one.unscored_reason,
            evidence: evidence_doc(unit),
        });
    }
    let n_units = units.len();
    if scored.is_empty() {
        let errors = base
            .repos
            .iter()
            .filter(|r| r.status == Status::Error)
            .count();
        base.status = if errors > 0 {
            Status::Error
        } else {
            Status::Unscored
        };
        base.unscored_reason = Some(if n_units == 0 {
            "no repo to judge".into()
        } else {
            let first = base
                .repos
                .iter()
                .find_map(|r| r.unscored_reason.clone())
                .unwrap_or_default();
            format!("no repo could be scored ({n_units} repos; first reason: {first})")
        });
        return base;
    }
    let mean = scored.iter().sum::<i64>() as f64 / scored.len() as f64;
    let std = (scored.len() > 1).then(|| {
        let var = scored
            .iter()
            .map(|s| (*s as f64 - mean).powi(2))
            .sum::<f64>()
            / (scored.len() - 1) as f64;
        var.sqrt()
    });
    base.spread = Some(Spread {
        min: scored.iter().copied().min().unwrap_or_default(),
        max: scored.iter().copied().max().unwrap_or_default(),
        std,
        n: scored.len(),
    });
    base.status = Status::Scored;
    base.score = Some(Score::Mean(mean));
    base.confidence = Some(round2(
        confidences.iter().sum::<f64>() / confidences.len().max(1) as f64,
    ));
    base.reasoning = format!(
        "mean of {} repo scores ({} of {} repos scored)",
        scored.len(),
        scored.len(),
        n_units
    );
    let capped: Vec<&RepoVerdict> = base
        .repos
        .iter()
        .filter(|r| r.status != Status::Scored)
        .collect();
    if !capped.is_empty() {
        base.reasoning.push_str(&format!(
            "; not scored: {}",
            capped
                .iter()
                .map(|r| r.repo.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    finish(&mut base);
    base
}

/// The evidence as reported: every name except private ones (`_name`), which are
/// working values for expressions (say, every finding) kept out of results and prompts.
fn evidence_doc(unit: &Unit) -> Doc {
    match &unit.evidence {
        Ok(ev) => Doc::object(
            ev.iter()
                .filter(|(k, _)| !crate::evidence::eval::is_private(k))
                .map(|(k, v)| (k.as_str(), v.clone())),
        ),
        Err(_) => Doc::Null,
    }
}

/// Applies a unit's score and caps to `v`.
fn apply_unit(v: &mut Verdict, unit: &Unit, score: &UnitScore) {
    match score {
        HeuristicOutcome::Scored(s) => {
            let Scoring {
                score,
                confidence,
                reasoning,
                evidence_cited,
                recommendations,
                sub_scores,
                raw_response,
                model_score,
            } = s.clone();
            let mut final_score = score;
            let mut reasoning = reasoning;
            if let Some(cap) = lowest_cap(&unit.failures)
                && cap < score
            {
                final_score = cap;
                v.score_before_cap = Some(score);
                v.cap_applied = Some(cap);
                reasoning = format!(
                    "score capped from {score} to {cap} by failed assertions: {}. {reasoning}",
                    cap_reasons(&unit.failures)
                );
            }
            v.status = Status::Scored;
            v.score = Some(Score::Single(final_score));
            v.confidence = Some(confidence);
            v.reasoning = reasoning;
            v.evidence_cited = evidence_cited;
            v.recommendations = recommendations;
            v.sub_scores = sub_scores;
            v.raw_response = raw_response;
            v.model_score = model_score;
        }
        HeuristicOutcome::Unscored(reason) => {
            v.status = Status::Unscored;
            v.unscored_reason = Some(reason.clone());
            v.reasoning = format!("unscored: {reason}");
        }
        HeuristicOutcome::Error(reason) => {
            v.status = Status::Error;
            v.unscored_reason = Some(reason.clone());
            v.reasoning = format!("error: {reason}");
        }
    }
}

/// The messages of the failures that carry a cap: the first few, then how many more
/// (a per-item assertion may fail for hundreds of items; all are listed on the verdict).
fn cap_reasons(failures: &[AssertionFailure]) -> String {
    const SHOWN: usize = 3;
    let capped: Vec<&str> = failures
        .iter()
        .filter(|f| f.cap.is_some())
        .map(|f| f.message.as_str())
        .collect();
    let mut text = capped
        .iter()
        .take(SHOWN)
        .copied()
        .collect::<Vec<_>>()
        .join("; ");
    if capped.len() > SHOWN {
        text.push_str(&format!(" (and {} more)", capped.len() - SHOWN));
    }
    text
}

fn finish(v: &mut Verdict) {
    if let Some(s) = v.score.map(Score::value) {
        v.weighted_score = Some(round4(s * v.normalized_weight));
        v.passed = Some(crate::run::result::reaches(s, v.pass_threshold));
    }
}

fn round2(x: f64) -> f64 {
    crate::score::round::to(x, 2)
}

fn round4(x: f64) -> f64 {
    crate::score::round::to(x, 4)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cap_names_the_first_failures_and_counts_the_rest() {
        let failures: Vec<AssertionFailure> = (0..5)
            .map(|i| AssertionFailure {
                message: format!("item {i} failed"),
                cap: Some(2 + i % 2),
                repo: None,
                item: Some(format!("#{i}")),
            })
            .collect();
        assert_eq!(lowest_cap(&failures), Some(2));
        assert_eq!(
            cap_reasons(&failures),
            "item 0 failed; item 1 failed; item 2 failed (and 2 more)"
        );
    }
}
