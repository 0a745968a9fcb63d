//! Heuristic verdicts: a band table over one evidence metric, a no-data rule, then
//! adjustments. Nothing here invents a score: a metric that is missing or outside every
//! band leaves the judge unscored, with the reason.

use minijinja::Environment;
use minijinja::value::Value;

use crate::doc::Doc;
use crate::evidence::eval::{Evidence, eval_expr, render_text};
use crate::evidence::plan::condition_source;
use crate::spec::judge::{Band, HeuristicSpec};
use crate::verdict::types::Scoring;

/// The outcome of a heuristic.
#[derive(Debug, Clone, PartialEq)]
pub enum HeuristicOutcome {
    /// A score.
    Scored(Scoring),
    /// No score, and why.
    Unscored(String),
    /// The heuristic itself failed (a template or condition could not be evaluated).
    Error(String),
}

/// Default confidence of a banded verdict.
pub const DEFAULT_CONFIDENCE: f64 = 0.8;
/// Default confidence of a no-data verdict: little was seen.
pub const NO_DATA_CONFIDENCE: f64 = 0.4;

/// Applies `spec` to `evidence`; `scope` is the run context plus evidence.
pub fn evaluate(
    env: &Environment<'static>,
    spec: &HeuristicSpec,
    evidence: &Evidence,
    scope: &Value,
) -> HeuristicOutcome {
    match run(env, spec, evidence, scope) {
        Ok(outcome) => outcome,
        Err(e) => HeuristicOutcome::Error(e),
    }
}

fn run(
    env: &Environment<'static>,
    spec: &HeuristicSpec,
    evidence: &Evidence,
    scope: &Value,
) -> Result<HeuristicOutcome, String> {
    if let Some(nd) = &spec.when_no_data {
        let hit = eval_expr(env, condition_source(&nd.condition), scope)
            .map_err(|e| format!("heuristic.when_no_data.if: {e}"))?;
        if hit.is_true() {
            let reasoning = render_text(env, &nd.reasoning, scope)
                .map_err(|e| format!("heuristic.when_no_data.reasoning: {e}"))?;
            return Ok(HeuristicOutcome::Scored(Scoring {
                score: nd.score,
                confidence: nd.confidence.unwrap_or(NO_DATA_CONFIDENCE),
                reasoning,
                ..Scoring::default()
            }));
        }
    }
    let value = match evidence.get(&spec.metric) {
        Some(Doc::Int(i)) => *i as f64,
        Some(Doc::Float(f)) if f.is_finite() => *f,
        Some(other) => {
            return Ok(HeuristicOutcome::Unscored(format!(
                "metric `{}` is {} ({}), not a number",
                spec.metric,
                other.type_name(),
                other
            )));
        }
        None => {
            return Ok(HeuristicOutcome::Unscored(format!(
                "metric `{}` was not computed",
                spec.metric
            )));
        }
    };
    let Some(band) = spec.bands.iter().find(|b| band_matches(b, value)) else {
        return Ok(HeuristicOutcome::Unscored(format!(
            "metric `{}` = {value} matches no band",
            spec.metric
        )));
    };
    let mut score = band.score;
    let mut reasoning = render_text(env, &spec.reasoning, scope)
        .map_err(|e| format!("heuristic.reasoning: {e}"))?;
    for (i, adj) in spec.adjust.iter().enumerate() {
        let hit = eval_expr(env, condition_source(&adj.condition), scope)
            .map_err(|e| format!("heuristic.adjust[{i}].if: {e}"))?;
        if hit.is_true() {
            let before = score;
            score = (score + adj.by).clamp(1, 5);
            let why = render_text(env, &adj.reason, scope)
                .map_err(|e| format!("heuristic.adjust[{i}].reason: {e}"))?;
            reasoning.push_str(&format!(" [{before} -> {score}: {why}]"));
        }
    }
    let mut cited = Vec::new();
    for (i, t) in spec.evidence_cited.iter().enumerate() {
        let text = render_text(env, t, scope)
            .map_err(|e| format!("heuristic.evidence_cited[{i}]: {e}"))?;
        if !text.trim().is_empty() {
            cited.push(text.trim().to_owned());
        }
    }
    let mut recommendations = Vec::new();
    for (i, r) in spec.recommendations.iter().enumerate() {
        let show = match &r.condition {
            Some(c) => eval_expr(env, condition_source(c), scope)
                .map_err(|e| format!("heuristic.recommendations[{i}].if: {e}"))?
                .is_true(),
            None => true,
        };
        if show {
            let text = render_text(env, &r.text, scope)
                .map_err(|e| format!("heuristic.recommendations[{i}].text: {e}"))?;
            if !text.trim().is_empty() {
                recommendations.push(text.trim().to_owned());
            }
        }
    }
    let mut sub_scores = indexmap::IndexMap::new();
    for (name, expr) in &spec.sub_scores {
        let v = eval_expr(env, condition_source(expr), scope)
            .map_err(|e| format!("heuristic.sub_scores.{name}: {e}"))?;
        match v.as_i64() {
            Some(s) if (1..=5).contains(&s) => {
                sub_scores.insert(name.clone(), s);
            }
            _ => {
                return Err(format!(
                    "heuristic.sub_scores.{name}: must give an integer 1-5, got {v}"
                ));
            }
        }
    }
    Ok(HeuristicOutcome::Scored(Scoring {
        score,
        confidence: spec.confidence.unwrap_or(DEFAULT_CONFIDENCE),
        reasoning,
        evidence_cited: cited,
        recommendations,
        sub_scores,
        raw_response: String::new(),
        model_score: None,
    }))
}

/// Whether every bound of `band` holds for `value`.
pub fn band_matches(band: &Band, value: f64) -> bool {
    band.min.is_none_or(|m| value >= m)
        && band.above.is_none_or(|a| value > a)
        && band.max.is_none_or(|m| value <= m)
        && band.below.is_none_or(|b| value < b)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn band(min: Option<f64>, below: Option<f64>, score: i64) -> Band {
        Band {
            min,
            below,
            score,
            ..Band::default()
        }
    }

    #[test]
    fn bands_are_inclusive_and_exclusive_as_named() {
        assert!(band_matches(&band(Some(90.0), None, 5), 90.0));
        assert!(!band_matches(&band(Some(90.0), None, 5), 89.99));
        assert!(band_matches(&band(None, Some(1.0), 5), 0.99));
        assert!(!band_matches(&band(None, Some(1.0), 5), 1.0));
        assert!(band_matches(&Band::default(), f64::MAX));
    }
}
