//! Heuristic verdicts: a band table over one evidence metric, a no-data rule, then
//! adjustments. Nothing here invents a score: a metric that is missing or outside every
//! band leaves the judge unscored, with the reason.

use minijinja::Environment;
use minijinja::value::Value;

use crate::doc::Doc;
use crate::evidence::eval::{Evidence, eval_expr, render_text};
use crate::evidence::plan::condition_source;
use crate::spec::judge::{Band, Computed, HeuristicSpec, RecommendationSpec};
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
            let score = computed_score(env, &nd.score, scope, "heuristic.when_no_data.score")?;
            let confidence = computed_confidence(
                env,
                nd.confidence.as_ref(),
                NO_DATA_CONFIDENCE,
                scope,
                "heuristic.when_no_data.confidence",
            )?;
            let reasoning = render_text(env, &nd.reasoning, scope)
                .map_err(|e| format!("heuristic.when_no_data.reasoning: {e}"))?;
            let recommendations = recommendations(
                env,
                &nd.recommendations,
                scope,
                "heuristic.when_no_data.recommendations",
            )?;
            return Ok(HeuristicOutcome::Scored(Scoring {
                score,
                confidence,
                reasoning,
                recommendations,
                ..Scoring::default()
            }));
        }
    }
    let mut score = match (&spec.score, &spec.metric) {
        (Some(score), _) => computed_score(env, score, scope, "heuristic.score")?,
        (None, Some(metric)) => match banded(spec, metric, evidence) {
            Ok(score) => score,
            Err(unscored) => return Ok(unscored),
        },
        (None, None) => return Err("the heuristic has neither `metric` nor `score`".into()),
    };
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
    let recommendations = recommendations(
        env,
        &spec.recommendations,
        scope,
        "heuristic.recommendations",
    )?;
    let [lo, hi] = spec.sub_score_scale.unwrap_or([1, 5]);
    let mut sub_scores = indexmap::IndexMap::new();
    for (name, expr) in &spec.sub_scores {
        let v = eval_expr(env, condition_source(expr), scope)
            .map_err(|e| format!("heuristic.sub_scores.{name}: {e}"))?;
        match whole(&v) {
            Some(s) if (lo..=hi).contains(&s) => {
                sub_scores.insert(name.clone(), s);
            }
            _ => {
                return Err(format!(
                    "heuristic.sub_scores.{name}: must give an integer {lo}-{hi}, got {v}"
                ));
            }
        }
    }
    let confidence = computed_confidence(
        env,
        spec.confidence.as_ref(),
        DEFAULT_CONFIDENCE,
        scope,
        "heuristic.confidence",
    )?;
    Ok(HeuristicOutcome::Scored(Scoring {
        score,
        confidence,
        reasoning,
        evidence_cited: cited,
        recommendations,
        sub_scores,
        raw_response: String::new(),
        model_score: None,
    }))
}

/// The band score of `metric`, or the unscored outcome saying why there is none.
fn banded(
    spec: &HeuristicSpec,
    metric: &str,
    evidence: &Evidence,
) -> Result<i64, HeuristicOutcome> {
    let value = match evidence.get(metric) {
        Some(Doc::Int(i)) => *i as f64,
        Some(Doc::Float(f)) if f.is_finite() => *f,
        Some(other) => {
            return Err(HeuristicOutcome::Unscored(format!(
                "metric `{metric}` is {} ({}), not a number",
                other.type_name(),
                other
            )));
        }
        None => {
            return Err(HeuristicOutcome::Unscored(format!(
                "metric `{metric}` was not computed"
            )));
        }
    };
    spec.bands
        .iter()
        .find(|b| band_matches(b, value))
        .map(|b| b.score)
        .ok_or_else(|| {
            HeuristicOutcome::Unscored(format!("metric `{metric}` = {value} matches no band"))
        })
}

/// The recommendations whose condition holds, rendered.
fn recommendations(
    env: &Environment<'static>,
    specs: &[RecommendationSpec],
    scope: &Value,
    path: &str,
) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    for (i, r) in specs.iter().enumerate() {
        let show = match &r.condition {
            Some(c) => eval_expr(env, condition_source(c), scope)
                .map_err(|e| format!("{path}[{i}].if: {e}"))?
                .is_true(),
            None => true,
        };
        if show {
            let text =
                render_text(env, &r.text, scope).map_err(|e| format!("{path}[{i}].text: {e}"))?;
            if !text.trim().is_empty() {
                out.push(text.trim().to_owned());
            }
        }
    }
    Ok(out)
}

/// An integer value: an integer, or a float without a fraction (`4.0`).
fn whole(v: &Value) -> Option<i64> {
    if v.is_integer() {
        return v.as_i64();
    }
    let f = f64::try_from(v.clone()).ok().filter(|_| v.is_number())?;
    (f.fract() == 0.0 && f.abs() < 9e15).then_some(f as i64)
}

/// A score written as a constant or an expression: an integer 1-5.
fn computed_score(
    env: &Environment<'static>,
    score: &Computed,
    scope: &Value,
    path: &str,
) -> Result<i64, String> {
    let v = match score {
        Computed::Number(n) => Value::from(*n),
        Computed::Expr(src) => {
            eval_expr(env, condition_source(src), scope).map_err(|e| format!("{path}: {e}"))?
        }
    };
    match whole(&v) {
        Some(s) if (1..=5).contains(&s) => Ok(s),
        _ => Err(format!("{path}: must give an integer 1-5, got {v}")),
    }
}

/// A confidence written as a constant or an expression (`default` when absent): 0..1.
fn computed_confidence(
    env: &Environment<'static>,
    confidence: Option<&Computed>,
    default: f64,
    scope: &Value,
    path: &str,
) -> Result<f64, String> {
    let v = match confidence {
        None => return Ok(default),
        Some(Computed::Number(n)) => return Ok(*n),
        Some(Computed::Expr(src)) => {
            eval_expr(env, condition_source(src), scope).map_err(|e| format!("{path}: {e}"))?
        }
    };
    match f64::try_from(v.clone()).ok().filter(|_| v.is_number()) {
        Some(c) if (0.0..=1.0).contains(&c) => Ok(c),
        _ => Err(format!("{path}: must give a number from 0 to 1, got {v}")),
    }
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
