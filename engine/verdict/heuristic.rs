//! Heuristic verdicts: a band table over one evidence metric, a no-data rule, then
//! adjustments. Nothing here invents a score: a metric that is missing or outside every
//! band leaves the judge unscored, with the reason.

use indexmap::IndexMap;
use minijinja::Environment;
use minijinja::value::Value;

use crate::doc::Doc;
use crate::evidence::compiled::Expr;
use crate::evidence::eval::{Evidence, render_text};
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

/// A heuristic resolved at load: every expression compiled, every default filled in.
/// Texts (`reasoning`, recommendations, ...) stay as written: they are rendered per unit.
#[derive(Debug, Clone)]
pub struct HeuristicPlan {
    /// The no-data rule, checked first.
    pub when_no_data: Option<NoDataPlan>,
    /// How the score is found.
    pub score: ScorePlan,
    /// The reasoning template.
    pub reasoning: String,
    /// Adjustments, in order.
    pub adjust: Vec<AdjustPlan>,
    /// Evidence-cited templates.
    pub evidence_cited: Vec<String>,
    /// Recommendations.
    pub recommendations: Vec<RecommendationPlan>,
    /// The range sub-scores must fall in (`[1, 5]` unless declared).
    pub sub_score_scale: [i64; 2],
    /// Named sub-score expressions.
    pub sub_scores: Vec<(String, Expr)>,
    /// The confidence ([`DEFAULT_CONFIDENCE`] unless declared).
    pub confidence: ComputedPlan,
}

/// How a heuristic finds its score.
#[derive(Debug, Clone)]
pub enum ScorePlan {
    /// A computed score of its own (taken over `metric` when both are written).
    Computed(ComputedPlan),
    /// The band the evidence metric falls in.
    Banded {
        /// The evidence name.
        metric: String,
        /// The band table.
        bands: Vec<Band>,
    },
    /// Neither: the heuristic cannot score (reported at load).
    Missing,
}

/// A number written as a constant or an expression.
#[derive(Debug, Clone)]
pub enum ComputedPlan {
    /// A constant.
    Number(f64),
    /// An expression giving the number.
    Expr(Expr),
}

/// The no-data rule.
#[derive(Debug, Clone)]
pub struct NoDataPlan {
    /// When it applies.
    pub condition: Expr,
    /// The score it gives.
    pub score: ComputedPlan,
    /// Its confidence ([`NO_DATA_CONFIDENCE`] unless declared).
    pub confidence: ComputedPlan,
    /// The reasoning template.
    pub reasoning: String,
    /// Recommendations.
    pub recommendations: Vec<RecommendationPlan>,
}

/// One adjustment.
#[derive(Debug, Clone)]
pub struct AdjustPlan {
    /// When it applies.
    pub condition: Expr,
    /// How much it moves the score.
    pub by: i64,
    /// The reason template.
    pub reason: String,
}

/// One recommendation.
#[derive(Debug, Clone)]
pub struct RecommendationPlan {
    /// Shown only when this holds.
    pub condition: Option<Expr>,
    /// The text template.
    pub text: String,
}

impl HeuristicPlan {
    /// Resolves `spec`: compiles its expressions with `compile` (a condition may be
    /// written with or without `<< >>`) and fills in the defaults.
    pub fn new(spec: &HeuristicSpec, compile: &mut dyn FnMut(&str) -> Expr) -> HeuristicPlan {
        let mut condition = |text: &str| compile(condition_source(text));
        let score = match (&spec.score, &spec.metric) {
            (Some(score), _) => ScorePlan::Computed(ComputedPlan::new(score, &mut condition)),
            (None, Some(metric)) => ScorePlan::Banded {
                metric: metric.clone(),
                bands: spec.bands.clone(),
            },
            (None, None) => ScorePlan::Missing,
        };
        HeuristicPlan {
            when_no_data: spec.when_no_data.as_ref().map(|nd| NoDataPlan {
                condition: condition(&nd.condition),
                score: ComputedPlan::new(&nd.score, &mut condition),
                confidence: ComputedPlan::or(
                    nd.confidence.as_ref(),
                    NO_DATA_CONFIDENCE,
                    &mut condition,
                ),
                reasoning: nd.reasoning.clone(),
                recommendations: RecommendationPlan::all(&nd.recommendations, &mut condition),
            }),
            score,
            reasoning: spec.reasoning.clone(),
            adjust: spec
                .adjust
                .iter()
                .map(|a| AdjustPlan {
                    condition: condition(&a.condition),
                    by: a.by,
                    reason: a.reason.clone(),
                })
                .collect(),
            evidence_cited: spec.evidence_cited.clone(),
            recommendations: RecommendationPlan::all(&spec.recommendations, &mut condition),
            sub_score_scale: spec.sub_score_scale.unwrap_or([1, 5]),
            sub_scores: spec
                .sub_scores
                .iter()
                .map(|(name, e)| (name.clone(), condition(e)))
                .collect(),
            confidence: ComputedPlan::or(
                spec.confidence.as_ref(),
                DEFAULT_CONFIDENCE,
                &mut condition,
            ),
        }
    }
}

impl ComputedPlan {
    /// Compiles a computed number; `condition` compiles `<< expr >>` or `expr`.
    fn new(c: &Computed, condition: &mut dyn FnMut(&str) -> Expr) -> ComputedPlan {
        match c {
            Computed::Number(n) => ComputedPlan::Number(*n),
            Computed::Expr(src) => ComputedPlan::Expr(condition(src)),
        }
    }

    /// Compiles `c`, or the constant `default` when it is absent.
    fn or(
        c: Option<&Computed>,
        default: f64,
        condition: &mut dyn FnMut(&str) -> Expr,
    ) -> ComputedPlan {
        c.map_or(ComputedPlan::Number(default), |c| {
            ComputedPlan::new(c, condition)
        })
    }
}

impl RecommendationPlan {
    fn all(
        specs: &[RecommendationSpec],
        condition: &mut dyn FnMut(&str) -> Expr,
    ) -> Vec<RecommendationPlan> {
        specs
            .iter()
            .map(|r| RecommendationPlan {
                condition: r.condition.as_deref().map(&mut *condition),
                text: r.text.clone(),
            })
            .collect()
    }
}

/// Applies `plan` to `evidence`; `scope` is the run context plus evidence.
pub fn evaluate(
    env: &Environment<'static>,
    plan: &HeuristicPlan,
    evidence: &Evidence,
    scope: &Value,
) -> HeuristicOutcome {
    match run(env, plan, evidence, scope) {
        Ok(outcome) => outcome,
        Err(e) => HeuristicOutcome::Error(e),
    }
}

fn run(
    env: &Environment<'static>,
    plan: &HeuristicPlan,
    evidence: &Evidence,
    scope: &Value,
) -> Result<HeuristicOutcome, String> {
    if let Some(nd) = &plan.when_no_data
        && let Some(scoring) = no_data(env, nd, scope)?
    {
        return Ok(HeuristicOutcome::Scored(scoring));
    }
    let score = match &plan.score {
        ScorePlan::Computed(score) => computed_score(score, scope, "heuristic.score")?,
        ScorePlan::Banded { metric, bands } => match banded(bands, metric, evidence) {
            Ok(score) => score,
            Err(unscored) => return Ok(unscored),
        },
        ScorePlan::Missing => return Err("the heuristic has neither `metric` nor `score`".into()),
    };
    let reasoning = render_text(env, &plan.reasoning, scope)
        .map_err(|e| format!("heuristic.reasoning: {e}"))?;
    let (score, reasoning) = adjusted(env, &plan.adjust, scope, score, reasoning)?;
    // In the order the judge reads: the first part that fails names the error.
    let evidence_cited = cited(env, &plan.evidence_cited, scope)?;
    let recommendations = recommendations(
        env,
        &plan.recommendations,
        scope,
        "heuristic.recommendations",
    )?;
    let sub_scores = sub_scores(plan, scope)?;
    let confidence = computed_confidence(&plan.confidence, scope, "heuristic.confidence")?;
    Ok(HeuristicOutcome::Scored(Scoring {
        score,
        confidence,
        reasoning,
        evidence_cited,
        recommendations,
        sub_scores,
        raw_response: String::new(),
        model_score: None,
    }))
}

/// The verdict of the no-data rule when its condition holds: it stands in for the
/// whole heuristic (no bands, no adjustments), since there is nothing to measure.
fn no_data(
    env: &Environment<'static>,
    nd: &NoDataPlan,
    scope: &Value,
) -> Result<Option<Scoring>, String> {
    let hit = nd
        .condition
        .eval(scope)
        .map_err(|e| format!("heuristic.when_no_data.if: {e}"))?;
    if !hit.is_true() {
        return Ok(None);
    }
    Ok(Some(Scoring {
        score: computed_score(&nd.score, scope, "heuristic.when_no_data.score")?,
        confidence: computed_confidence(
            &nd.confidence,
            scope,
            "heuristic.when_no_data.confidence",
        )?,
        reasoning: render_text(env, &nd.reasoning, scope)
            .map_err(|e| format!("heuristic.when_no_data.reasoning: {e}"))?,
        recommendations: recommendations(
            env,
            &nd.recommendations,
            scope,
            "heuristic.when_no_data.recommendations",
        )?,
        ..Scoring::default()
    }))
}

/// `score` moved by every adjustment whose condition holds, kept within 1-5 after each
/// step, with each step noted in the reasoning (`[before -> after: why]`).
fn adjusted(
    env: &Environment<'static>,
    adjust: &[AdjustPlan],
    scope: &Value,
    mut score: i64,
    mut reasoning: String,
) -> Result<(i64, String), String> {
    for (i, adj) in adjust.iter().enumerate() {
        let hit = adj
            .condition
            .eval(scope)
            .map_err(|e| format!("heuristic.adjust[{i}].if: {e}"))?;
        if hit.is_true() {
            let before = score;
            score = (score + adj.by).clamp(1, 5);
            let why = render_text(env, &adj.reason, scope)
                .map_err(|e| format!("heuristic.adjust[{i}].reason: {e}"))?;
            reasoning.push_str(&format!(" [{before} -> {score}: {why}]"));
        }
    }
    Ok((score, reasoning))
}

/// The evidence-cited lines that render to some text (an empty line cites nothing).
fn cited(
    env: &Environment<'static>,
    templates: &[String],
    scope: &Value,
) -> Result<Vec<String>, String> {
    let mut cited = Vec::new();
    for (i, t) in templates.iter().enumerate() {
        let text = render_text(env, t, scope)
            .map_err(|e| format!("heuristic.evidence_cited[{i}]: {e}"))?;
        if !text.trim().is_empty() {
            cited.push(text.trim().to_owned());
        }
    }
    Ok(cited)
}

/// The named sub-scores, each a whole number on the declared scale; anything else is an
/// error of the judge, not a score to round.
fn sub_scores(plan: &HeuristicPlan, scope: &Value) -> Result<IndexMap<String, i64>, String> {
    let [lo, hi] = plan.sub_score_scale;
    let mut sub_scores = IndexMap::new();
    for (name, expr) in &plan.sub_scores {
        let v = expr
            .eval(scope)
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
    Ok(sub_scores)
}

/// The band score of `metric`, or the unscored outcome saying why there is none.
fn banded(bands: &[Band], metric: &str, evidence: &Evidence) -> Result<i64, HeuristicOutcome> {
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
    bands
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
    plans: &[RecommendationPlan],
    scope: &Value,
    path: &str,
) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    for (i, r) in plans.iter().enumerate() {
        let show = match &r.condition {
            Some(c) => c
                .eval(scope)
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
fn computed_score(score: &ComputedPlan, scope: &Value, path: &str) -> Result<i64, String> {
    let v = match score {
        ComputedPlan::Number(n) => Value::from(*n),
        ComputedPlan::Expr(e) => e.eval(scope).map_err(|e| format!("{path}: {e}"))?,
    };
    match whole(&v) {
        Some(s) if (1..=5).contains(&s) => Ok(s),
        _ => Err(format!("{path}: must give an integer 1-5, got {v}")),
    }
}

/// A confidence written as a constant or an expression: 0..1 (a constant is taken as
/// written; load checks its range).
fn computed_confidence(
    confidence: &ComputedPlan,
    scope: &Value,
    path: &str,
) -> Result<f64, String> {
    let v = match confidence {
        ComputedPlan::Number(n) => return Ok(*n),
        ComputedPlan::Expr(e) => e.eval(scope).map_err(|e| format!("{path}: {e}"))?,
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
