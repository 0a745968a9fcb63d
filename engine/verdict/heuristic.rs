//! Heuristic verdicts: a band table over one evidence metric, a no-data rule, then
//! adjustments. Nothing here invents a score: a metric that is missing or outside every
//! band leaves the judge unscored, with the reason.

use indexmap::IndexMap;
use minijinja::Environment;
use minijinja::value::Value;

use crate::doc::Doc;
use crate::evidence::compiled::Expr;
use crate::evidence::error::{ErrorKind, EvalError};
use crate::evidence::eval::{Evidence, render_text};
use crate::evidence::plan::condition_source;
use crate::spec::judge::{Band, Computed, HeuristicSpec, RecommendationSpec};
use crate::verdict::scoring::Scoring;

/// The outcome of a heuristic (written into partial results as it is).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub(crate) enum HeuristicOutcome {
    /// A score.
    Scored(Scoring),
    /// No score, and why.
    Unscored(String),
    /// The heuristic itself failed (a template or condition could not be evaluated).
    Error(String),
}

/// Default confidence of a banded verdict.
pub(crate) const DEFAULT_CONFIDENCE: f64 = 0.8;
/// Default confidence of a no-data verdict: little was seen.
pub(crate) const NO_DATA_CONFIDENCE: f64 = 0.4;

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
        /// The second evidence name, bounded by the bands' `and:`.
        and_metric: Option<String>,
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
                and_metric: spec.and_metric.clone(),
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
pub(crate) fn evaluate(
    env: &Environment<'static>,
    plan: &HeuristicPlan,
    evidence: &Evidence,
    scope: &Value,
) -> HeuristicOutcome {
    match checked(env, plan, evidence, scope) {
        Ok(outcome) => outcome,
        Err(e) => HeuristicOutcome::Error(e.to_string()),
    }
}

/// Like [`evaluate`], with the error as it was raised (key path and kind), for
/// `caldera validate`; the outcome a verdict records words it as text.
pub(crate) fn checked(
    env: &Environment<'static>,
    plan: &HeuristicPlan,
    evidence: &Evidence,
    scope: &Value,
) -> Result<HeuristicOutcome, EvalError> {
    run(env, plan, evidence, scope)
}

fn run(
    env: &Environment<'static>,
    plan: &HeuristicPlan,
    evidence: &Evidence,
    scope: &Value,
) -> Result<HeuristicOutcome, EvalError> {
    if let Some(nd) = &plan.when_no_data
        && let Some(scoring) = no_data(env, nd, scope)?
    {
        return Ok(HeuristicOutcome::Scored(scoring));
    }
    let score = match &plan.score {
        ScorePlan::Computed(score) => computed_score(score, scope, "heuristic.score")?,
        ScorePlan::Banded {
            metric,
            and_metric,
            bands,
        } => match banded(bands, metric, and_metric.as_deref(), evidence) {
            Ok(score) => score,
            Err(unscored) => return Ok(unscored),
        },
        ScorePlan::Missing => {
            return Err(EvalError::new(
                ErrorKind::Shape,
                "the heuristic has neither `metric` nor `score`",
            ));
        }
    };
    let reasoning =
        render_text(env, &plan.reasoning, scope).map_err(|e| e.at("heuristic.reasoning"))?;
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
) -> Result<Option<Scoring>, EvalError> {
    let hit = nd
        .condition
        .eval(scope)
        .map_err(|e| e.at("heuristic.when_no_data.if"))?;
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
            .map_err(|e| e.at("heuristic.when_no_data.reasoning"))?,
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
) -> Result<(i64, String), EvalError> {
    for (i, adj) in adjust.iter().enumerate() {
        let hit = adj
            .condition
            .eval(scope)
            .map_err(|e| e.at(format!("heuristic.adjust[{i}].if")))?;
        if hit.is_true() {
            let before = score;
            score = (score + adj.by).clamp(1, 5);
            let why = render_text(env, &adj.reason, scope)
                .map_err(|e| e.at(format!("heuristic.adjust[{i}].reason")))?;
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
) -> Result<Vec<String>, EvalError> {
    let mut cited = Vec::new();
    for (i, t) in templates.iter().enumerate() {
        let text = render_text(env, t, scope)
            .map_err(|e| e.at(format!("heuristic.evidence_cited[{i}]")))?;
        if !text.trim().is_empty() {
            cited.push(text.trim().to_owned());
        }
    }
    Ok(cited)
}

/// The named sub-scores, each a whole number on the declared scale; anything else is an
/// error of the judge, not a score to round.
fn sub_scores(plan: &HeuristicPlan, scope: &Value) -> Result<IndexMap<String, i64>, EvalError> {
    let [lo, hi] = plan.sub_score_scale;
    let mut sub_scores = IndexMap::new();
    for (name, expr) in &plan.sub_scores {
        let v = expr
            .eval(scope)
            .map_err(|e| e.at(format!("heuristic.sub_scores.{name}")))?;
        match whole(&v) {
            Some(s) if (lo..=hi).contains(&s) => {
                sub_scores.insert(name.clone(), s);
            }
            _ => {
                return Err(EvalError::new(
                    ErrorKind::Shape,
                    format!("must give an integer {lo}-{hi}, got {v}"),
                )
                .at(format!("heuristic.sub_scores.{name}")));
            }
        }
    }
    Ok(sub_scores)
}

/// The band score of `metric` (and `and_metric`, when the heuristic names one), or the
/// unscored outcome saying why there is none.
fn banded(
    bands: &[Band],
    metric: &str,
    and_metric: Option<&str>,
    evidence: &Evidence,
) -> Result<i64, HeuristicOutcome> {
    let value = metric_value(metric, evidence)?;
    let Some(second) = and_metric else {
        return bands
            .iter()
            .find(|b| band_matches(b, value))
            .map(|b| b.score)
            .ok_or_else(|| {
                HeuristicOutcome::Unscored(format!("metric `{metric}` = {value} matches no band"))
            });
    };
    let other = metric_value(second, evidence)?;
    bands
        .iter()
        .find(|b| {
            band_matches(b, value)
                && b.and
                    .as_ref()
                    .is_none_or(|a| band_matches(&a.as_band(), other))
        })
        .map(|b| b.score)
        .ok_or_else(|| {
            HeuristicOutcome::Unscored(format!(
                "metric `{metric}` = {value} and `{second}` = {other} match no band"
            ))
        })
}

/// The number an evidence metric holds, or the unscored outcome saying why there is none.
fn metric_value(metric: &str, evidence: &Evidence) -> Result<f64, HeuristicOutcome> {
    match evidence.get(metric) {
        Some(Doc::Int(i)) => Ok(*i as f64),
        Some(Doc::Float(f)) if f.is_finite() => Ok(*f),
        Some(other) => Err(HeuristicOutcome::Unscored(format!(
            "metric `{metric}` is {} ({}), not a number",
            other.type_name(),
            other
        ))),
        None => Err(HeuristicOutcome::Unscored(format!(
            "metric `{metric}` was not computed"
        ))),
    }
}

/// The recommendations whose condition holds, rendered.
fn recommendations(
    env: &Environment<'static>,
    plans: &[RecommendationPlan],
    scope: &Value,
    path: &str,
) -> Result<Vec<String>, EvalError> {
    let mut out = Vec::new();
    for (i, r) in plans.iter().enumerate() {
        let show = match &r.condition {
            Some(c) => c
                .eval(scope)
                .map_err(|e| e.at(format!("{path}[{i}].if")))?
                .is_true(),
            None => true,
        };
        if show {
            let text =
                render_text(env, &r.text, scope).map_err(|e| e.at(format!("{path}[{i}].text")))?;
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
fn computed_score(score: &ComputedPlan, scope: &Value, path: &str) -> Result<i64, EvalError> {
    let v = match score {
        ComputedPlan::Number(n) => Value::from(*n),
        ComputedPlan::Expr(e) => e.eval(scope).map_err(|e| e.at(path))?,
    };
    match whole(&v) {
        Some(s) if (1..=5).contains(&s) => Ok(s),
        _ => Err(EvalError::new(
            ErrorKind::Shape,
            format!("must give an integer 1-5, got {v}"),
        )
        .at(path)),
    }
}

/// A confidence written as a constant or an expression: 0..1 (a constant is taken as
/// written; load checks its range).
fn computed_confidence(
    confidence: &ComputedPlan,
    scope: &Value,
    path: &str,
) -> Result<f64, EvalError> {
    let v = match confidence {
        ComputedPlan::Number(n) => return Ok(*n),
        ComputedPlan::Expr(e) => e.eval(scope).map_err(|e| e.at(path))?,
    };
    match f64::try_from(v.clone()).ok().filter(|_| v.is_number()) {
        Some(c) if (0.0..=1.0).contains(&c) => Ok(c),
        _ => Err(EvalError::new(
            ErrorKind::Shape,
            format!("must give a number from 0 to 1, got {v}"),
        )
        .at(path)),
    }
}

/// Whether every bound of `band` holds for `value`.
pub(crate) fn band_matches(band: &Band, value: f64) -> bool {
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

    fn bounds(min: Option<f64>, above: Option<f64>, max: Option<f64>, below: Option<f64>) -> Band {
        Band {
            min,
            above,
            max,
            below,
            score: 3,
            and: None,
        }
    }

    #[test]
    fn every_bound_at_its_edge() {
        // min: inclusive (value >= 5).
        let min = bounds(Some(5.0), None, None, None);
        assert!(band_matches(&min, 5.0));
        assert!(band_matches(&min, 6.0));
        assert!(!band_matches(&min, 4.0));
        // above: exclusive (value > 5).
        let above = bounds(None, Some(5.0), None, None);
        assert!(!band_matches(&above, 5.0));
        assert!(band_matches(&above, 6.0));
        assert!(!band_matches(&above, 4.0));
        // max: inclusive (value <= 5).
        let max = bounds(None, None, Some(5.0), None);
        assert!(band_matches(&max, 5.0));
        assert!(band_matches(&max, 4.0));
        assert!(!band_matches(&max, 6.0));
        // below: exclusive (value < 5).
        let below = bounds(None, None, None, Some(5.0));
        assert!(!band_matches(&below, 5.0));
        assert!(band_matches(&below, 4.0));
        assert!(!band_matches(&below, 6.0));
    }

    #[test]
    fn a_band_needs_every_bound_to_hold() {
        // [10, 20]: one bound holding is not enough, on either side.
        let closed = bounds(Some(10.0), None, Some(20.0), None);
        assert!(band_matches(&closed, 15.0));
        assert!(!band_matches(&closed, 5.0), "max holds, min does not");
        assert!(!band_matches(&closed, 25.0), "min holds, max does not");
        // (10, 20): the same with the exclusive bounds.
        let open = bounds(None, Some(10.0), None, Some(20.0));
        assert!(band_matches(&open, 15.0));
        assert!(!band_matches(&open, 5.0), "below holds, above does not");
        assert!(!band_matches(&open, 25.0), "above holds, below does not");
        // min with below, above with max: each pair fails when only one holds.
        let mixed = bounds(Some(10.0), None, None, Some(20.0));
        assert!(!band_matches(&mixed, 5.0));
        assert!(!band_matches(&mixed, 25.0));
        let mixed = bounds(None, Some(10.0), Some(20.0), None);
        assert!(!band_matches(&mixed, 5.0));
        assert!(!band_matches(&mixed, 25.0));
    }

    use crate::doc::Doc;
    use crate::spec::judge::HeuristicSpec;

    /// The plan of a heuristic written in YAML, compiled as the loader compiles it.
    fn plan(yaml: &str) -> HeuristicPlan {
        let spec: HeuristicSpec = serde_saphyr::from_str(yaml).expect("a valid heuristic");
        let env = crate::render::shared();
        HeuristicPlan::new(&spec, &mut |src: &str| Expr::compile(env, src))
    }

    /// Evaluates `plan` with `evidence` (a JSON object) as both the evidence and the scope.
    fn eval(plan: &HeuristicPlan, evidence: serde_json::Value) -> HeuristicOutcome {
        let serde_json::Value::Object(map) = &evidence else {
            panic!("evidence is an object");
        };
        let ev: Evidence = map
            .iter()
            .map(|(k, v)| (k.clone(), Doc::from_json(v)))
            .collect();
        evaluate_doc(plan, &ev)
    }

    fn evaluate_doc(plan: &HeuristicPlan, ev: &Evidence) -> HeuristicOutcome {
        let scope = Doc::object(ev.iter().map(|(k, v)| (k.as_str(), v.clone()))).to_value();
        evaluate(crate::render::shared(), plan, ev, &scope)
    }

    fn scored(outcome: HeuristicOutcome) -> Scoring {
        match outcome {
            HeuristicOutcome::Scored(s) => s,
            other => panic!("expected a score, got {other:?}"),
        }
    }

    fn error(outcome: HeuristicOutcome) -> String {
        match outcome {
            HeuristicOutcome::Error(e) => e,
            other => panic!("expected an error, got {other:?}"),
        }
    }

    const BANDS: &str = "metric: m\nbands:\n  - { min: 80, score: 5 }\n  - { min: 50, score: 4 }\n  - { above: 10, score: 2 }\nreasoning: m is << m >>\n";

    #[test]
    fn the_first_matching_band_gives_the_score_with_the_default_confidence() {
        let p = plan(BANDS);
        let s = scored(eval(&p, serde_json::json!({"m": 60})));
        // 60: not >= 80, >= 50 -> 4.
        assert_eq!(s.score, 4);
        assert_eq!(s.confidence, DEFAULT_CONFIDENCE);
        assert_eq!(s.reasoning, "m is 60");
        assert_eq!(scored(eval(&p, serde_json::json!({"m": 80.0}))).score, 5);
        assert_eq!(scored(eval(&p, serde_json::json!({"m": 11.5}))).score, 2);
    }

    const TWO_METRICS: &str = "metric: acc\nand_metric: formats\nbands:\n  - { min: 99, and: { min: 4 }, score: 5 }\n  - { min: 95, and: { min: 3 }, score: 4 }\n  - { min: 70, score: 2 }\n  - { score: 1 }\nreasoning: r\n";

    #[test]
    fn a_band_with_and_holds_only_when_both_metrics_are_in_its_bounds() {
        let p = plan(TWO_METRICS);
        let score = |acc: f64, formats: i64| {
            scored(eval(
                &p,
                serde_json::json!({"acc": acc, "formats": formats}),
            ))
            .score
        };
        assert_eq!(score(99.5, 4), 5);
        // Accurate enough for 5, too few formats: the next band whose bounds both hold.
        assert_eq!(score(99.5, 3), 4);
        assert_eq!(score(99.5, 2), 2);
        assert_eq!(score(50.0, 9), 1);
    }

    #[test]
    fn a_second_metric_outside_every_band_or_missing_is_unscored() {
        let p = plan(
            "metric: a\nand_metric: b\nbands:\n  - { min: 1, and: { below: 5 }, score: 3 }\nreasoning: r\n",
        );
        assert_eq!(
            eval(&p, serde_json::json!({"a": 2, "b": 5})),
            HeuristicOutcome::Unscored("metric `a` = 2 and `b` = 5 match no band".into())
        );
        assert_eq!(
            eval(&p, serde_json::json!({"a": 2})),
            HeuristicOutcome::Unscored("metric `b` was not computed".into())
        );
    }

    #[test]
    fn a_metric_outside_every_band_not_a_number_or_missing_is_unscored() {
        let p = plan(BANDS);
        assert_eq!(
            eval(&p, serde_json::json!({"m": 10})),
            HeuristicOutcome::Unscored("metric `m` = 10 matches no band".into())
        );
        match eval(&p, serde_json::json!({"m": "high"})) {
            HeuristicOutcome::Unscored(why) => {
                assert!(why.starts_with("metric `m` is string"), "{why}");
                assert!(
                    why.contains("high") && why.ends_with("not a number"),
                    "{why}"
                );
            }
            other => panic!("a text metric is unscored, got {other:?}"),
        }
        assert_eq!(
            eval(&p, serde_json::json!({"other": 1})),
            HeuristicOutcome::Unscored("metric `m` was not computed".into())
        );
        // A float that is not finite is not a number either (the catch-all would take it).
        let catch_all = plan("metric: m\nbands:\n  - { score: 3 }\nreasoning: r\n");
        let nan: Evidence = [("m".to_owned(), Doc::Float(f64::NAN))]
            .into_iter()
            .collect();
        match evaluate_doc(&catch_all, &nan) {
            HeuristicOutcome::Unscored(why) => assert!(why.contains("not a number"), "{why}"),
            other => panic!("NaN is unscored, got {other:?}"),
        }
        let finite: Evidence = [("m".to_owned(), Doc::Float(0.5))].into_iter().collect();
        assert_eq!(scored(evaluate_doc(&catch_all, &finite)).score, 3);
    }

    #[test]
    fn no_data_gives_its_own_score_confidence_reasoning_and_recommendations() {
        let p = plan(
            "metric: m\nbands:\n  - { score: 5 }\nreasoning: banded\nwhen_no_data:\n  if: << n == 0 >>\n  score: 2\n  reasoning: nothing in << n >>\n  recommendations:\n    - text: collect some\n",
        );
        assert_eq!(
            eval(&p, serde_json::json!({"m": 1, "n": 0})),
            HeuristicOutcome::Scored(Scoring {
                score: 2,
                confidence: NO_DATA_CONFIDENCE,
                reasoning: "nothing in 0".into(),
                recommendations: vec!["collect some".into()],
                ..Scoring::default()
            })
        );
        // The rule does not hold: the bands score, nothing of the rule leaks in.
        let s = scored(eval(&p, serde_json::json!({"m": 1, "n": 3})));
        assert_eq!((s.score, s.reasoning.as_str()), (5, "banded"));
        assert!(s.recommendations.is_empty());
        // A declared confidence and a computed score.
        let p = plan(
            "score: 3\nreasoning: r\nwhen_no_data: { if: << true >>, score: << k + 1 >>, confidence: 0.25, reasoning: none }\n",
        );
        let s = scored(eval(&p, serde_json::json!({"k": 3})));
        // k + 1 = 4.
        assert_eq!((s.score, s.confidence), (4, 0.25));
    }

    #[test]
    fn adjustments_add_in_order_and_stay_within_one_to_five() {
        let with = |by: &str| {
            plan(&format!(
                "score: << s >>\nreasoning: base\nadjust:\n  - {{ if: << up >>, by: {by}, reason: why << s >> }}\n"
            ))
        };
        // 3 + 1 = 4 (not 3 - 1 = 2, not 3 * 1 = 3).
        let s = scored(eval(&with("1"), serde_json::json!({"s": 3, "up": true})));
        assert_eq!(s.score, 4);
        assert_eq!(s.reasoning, "base [3 -> 4: why 3]");
        // A condition that does not hold changes nothing.
        let s = scored(eval(&with("1"), serde_json::json!({"s": 3, "up": false})));
        assert_eq!((s.score, s.reasoning.as_str()), (3, "base"));
        // 2 + 2 = 4; 4 + 2 = 6 -> 5; 2 - 3 = -1 -> 1.
        assert_eq!(
            scored(eval(&with("2"), serde_json::json!({"s": 2, "up": true}))).score,
            4
        );
        assert_eq!(
            scored(eval(&with("2"), serde_json::json!({"s": 4, "up": true}))).score,
            5
        );
        assert_eq!(
            scored(eval(&with("-3"), serde_json::json!({"s": 2, "up": true}))).score,
            1
        );
    }

    #[test]
    fn cited_evidence_and_recommendations_drop_empty_texts() {
        let p = plan(concat!(
            "score: 3\nreasoning: r\n",
            "evidence_cited: ['  << a >> found  ', '<< \"\" >>', 'plain']\n",
            "recommendations:\n",
            "  - { if: << a > 1 >>, text: 'fix << a >>' }\n",
            "  - { if: << a > 5 >>, text: never }\n",
            "  - { text: '  ' }\n",
            "  - { text: always }\n",
        ));
        let s = scored(eval(&p, serde_json::json!({"a": 2})));
        assert_eq!(s.evidence_cited, vec!["2 found", "plain"]);
        assert_eq!(s.recommendations, vec!["fix 2", "always"]);
    }

    #[test]
    fn sub_scores_must_be_integers_on_their_scale() {
        let p = plan("score: 3\nreasoning: r\nsub_scores: { a: << x >>, b: << 5 >> }\n");
        let s = scored(eval(&p, serde_json::json!({"x": 1})));
        assert_eq!(s.sub_scores.get("a"), Some(&1));
        assert_eq!(s.sub_scores.get("b"), Some(&5));
        // 4.0 is whole; 6 is off the default [1, 5] scale; 2.5 is not whole.
        let s = scored(eval(&p, serde_json::json!({"x": 4.0})));
        assert_eq!(s.sub_scores.get("a"), Some(&4));
        for x in [
            serde_json::json!(6),
            serde_json::json!(0),
            serde_json::json!(2.5),
        ] {
            let e = error(eval(&p, serde_json::json!({"x": x})));
            assert!(
                e.starts_with("heuristic.sub_scores.a: must give an integer 1-5"),
                "{e}"
            );
        }
        let wide =
            plan("score: 3\nreasoning: r\nsub_score_scale: [0, 100]\nsub_scores: { a: << x >> }\n");
        let s = scored(eval(&wide, serde_json::json!({"x": 100})));
        assert_eq!(s.sub_scores.get("a"), Some(&100));
    }

    #[test]
    fn a_computed_score_is_an_integer_from_one_to_five() {
        let p = plan("score: << x >>\nreasoning: r\n");
        assert_eq!(scored(eval(&p, serde_json::json!({"x": 4}))).score, 4);
        assert_eq!(scored(eval(&p, serde_json::json!({"x": 5.0}))).score, 5);
        assert_eq!(scored(eval(&p, serde_json::json!({"x": 1}))).score, 1);
        for x in [
            serde_json::json!(0),
            serde_json::json!(6),
            serde_json::json!(3.5),
        ] {
            let e = error(eval(&p, serde_json::json!({"x": x})));
            assert!(
                e.starts_with("heuristic.score: must give an integer 1-5, got"),
                "{e}"
            );
        }
        assert_eq!(
            scored(eval(
                &plan("score: 2\nreasoning: r\n"),
                serde_json::json!({})
            ))
            .score,
            2
        );
    }

    #[test]
    fn a_computed_confidence_is_from_zero_to_one() {
        let p = plan("score: 3\nconfidence: << c >>\nreasoning: r\n");
        assert_eq!(
            scored(eval(&p, serde_json::json!({"c": 0.25}))).confidence,
            0.25
        );
        assert_eq!(
            scored(eval(&p, serde_json::json!({"c": 1}))).confidence,
            1.0
        );
        assert_eq!(
            scored(eval(&p, serde_json::json!({"c": 0}))).confidence,
            0.0
        );
        for c in [
            serde_json::json!(1.5),
            serde_json::json!(-0.1),
            serde_json::json!("x"),
        ] {
            let e = error(eval(&p, serde_json::json!({"c": c})));
            assert!(
                e.starts_with("heuristic.confidence: must give a number from 0 to 1"),
                "{e}"
            );
        }
        let fixed = plan("score: 3\nconfidence: 0.55\nreasoning: r\n");
        assert_eq!(scored(eval(&fixed, serde_json::json!({}))).confidence, 0.55);
    }

    #[test]
    fn whole_numbers_are_integers_or_floats_without_a_fraction() {
        assert_eq!(whole(&Value::from(3)), Some(3));
        assert_eq!(whole(&Value::from(-2)), Some(-2));
        assert_eq!(whole(&Value::from(4.0)), Some(4));
        assert_eq!(whole(&Value::from(4.5)), None);
        assert_eq!(whole(&Value::from("4")), None);
        // The float range ends just below 9e15.
        assert_eq!(whole(&Value::from(8e15)), Some(8_000_000_000_000_000));
        assert_eq!(whole(&Value::from(9e15)), None);
        assert_eq!(whole(&Value::from(1e16)), None);
    }

    #[test]
    fn a_heuristic_without_metric_or_score_is_an_error() {
        let p = plan("reasoning: r\n");
        assert!(matches!(p.score, ScorePlan::Missing));
        assert_eq!(
            eval(&p, serde_json::json!({})),
            HeuristicOutcome::Error("the heuristic has neither `metric` nor `score`".into())
        );
    }
}
