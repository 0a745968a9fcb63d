//! Where a judge's per-unit scores come from: running the suite one repo at a time (the
//! heuristic; each model of an LLM run), or a run result's per-repo verdicts.
//!
//! A suite-scope judge gives one verdict over all repos; to compare it with people who
//! scored repos one by one, calibration judges each repo alone (its result and its ground
//! truth), which is what the judge would conclude about that repo. Scores are the final
//! ones, after assertion caps, except a panel member's own score, which is the model's.

use indexmap::IndexMap;
use minijinja::Environment;

use crate::calibrate::SourceScores;
use crate::diag::{Code, Diagnostic};
use crate::load::inputs::Inputs;
use crate::load::suite::Suite;
use crate::run::llm::{LlmOptions, models_for, run_llm_on};
use crate::verdict::types::{Score, Verdict};

/// `inputs` reduced to one repo: its result and its ground truth.
pub(crate) fn alone(inputs: &Inputs, id: &str) -> Inputs {
    Inputs {
        results: inputs
            .results
            .iter()
            .filter(|d| d.id == id)
            .cloned()
            .collect(),
        truth: inputs
            .truth
            .iter()
            .filter(|d| d.id == id)
            .cloned()
            .collect(),
        ..inputs.clone()
    }
}

/// A verdict's integer score: a single verdict's, or the one repo's of a per-repo judge
/// run on one repo. `None` when unscored (or a mean of several repos).
pub(crate) fn unit_score(v: &Verdict) -> Option<i64> {
    match v.score? {
        Score::Single(s) => Some(s),
        Score::Mean(_) if v.repos.len() == 1 => v.repos[0].score,
        Score::Mean(_) => None,
    }
}

/// The heuristic's score of every repo of `inputs`, each judged alone. A repo whose
/// suite evidence cannot be computed is left out, with a note saying why.
pub(crate) fn heuristic(
    env: &Environment<'static>,
    suite: &Suite,
    inputs: &Inputs,
    notes: &mut Vec<String>,
) -> SourceScores {
    let weights = suite.weights();
    let mut scores = SourceScores::new();
    for doc in &inputs.results {
        let one = alone(inputs, &doc.id);
        let ctx = match crate::run::context::shared_context(env, suite, &one) {
            Ok(c) => c,
            Err(d) => {
                let why = d.first().map_or("", |d| d.message.as_str());
                notes.push(format!(
                    "repo `{}` could not be judged alone: {why}",
                    doc.id
                ));
                continue;
            }
        };
        let units = crate::run::prepare_all(env, suite, &ctx);
        for (plan, units) in suite.judges.iter().zip(&units) {
            let v = crate::verdict::combine::heuristic_verdict(plan.judge(), units, weights);
            if let Some(s) = unit_score(&v) {
                scores
                    .entry(plan.spec.dimension.clone())
                    .or_default()
                    .insert(doc.id.clone(), s);
            }
        }
    }
    scores
}

/// Each model's score of every repo of `inputs`, each judged alone in LLM mode (through
/// the cache, so a second calibration makes no call).
pub(crate) fn llm(
    env: &Environment<'static>,
    suite: &Suite,
    inputs: &Inputs,
    opts: &LlmOptions,
) -> Result<IndexMap<String, SourceScores>, Vec<Diagnostic>> {
    let models = models_for(suite, &opts.models);
    let mut out: IndexMap<String, SourceScores> = models
        .iter()
        .map(|m| (m.clone(), SourceScores::new()))
        .collect();
    for doc in &inputs.results {
        let result = run_llm_on(env, suite, &alone(inputs, &doc.id), opts)?;
        for d in &result.dimensions {
            let mut put = |model: &str, score: i64| {
                out.entry(model.to_owned())
                    .or_default()
                    .entry(d.name.clone())
                    .or_default()
                    .insert(doc.id.clone(), score);
            };
            if models.len() > 1 {
                for mv in &d.model_verdicts {
                    put(&mv.model, mv.score);
                }
            } else if let Some(s) = unit_score(d) {
                put(&models[0], s);
            }
        }
    }
    Ok(out)
}

/// The per-repo scores of a run result (`caldera run` JSON, read from `path` as
/// `caldera report` reads it): the verdicts of `scope:
/// repo` judges, under the run's source (`heuristic` or its model), and each panel
/// member's per-repo verdicts under its model; every source is prefixed with the file's
/// name. A result without per-repo verdicts is an error: its suite-scope scores say
/// nothing about single repos.
pub(crate) fn from_result(
    path: &std::path::Path,
    run: &serde_json::Value,
) -> Result<IndexMap<String, SourceScores>, Diagnostic> {
    let fail = |m: String| Diagnostic::error(Code::WrongType, m).in_file(path);
    let name = path
        .file_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let stem = name
        .strip_suffix(".json.gz")
        .or_else(|| name.strip_suffix(".json"))
        .unwrap_or(&name)
        .to_owned();
    let base = match run["mode"].as_str() {
        Some("heuristic") => "heuristic".to_owned(),
        _ => run["model"].as_str().unwrap_or("llm").to_owned(),
    };
    let mut out: IndexMap<String, SourceScores> = IndexMap::new();
    let mut put = |source: &str, dim: &str, repo: &str, score: i64| {
        out.entry(format!("{stem}: {source}"))
            .or_default()
            .entry(dim.to_owned())
            .or_default()
            .insert(repo.to_owned(), score);
    };
    for d in run["dimensions"].as_array().into_iter().flatten() {
        let dim = d["name"].as_str().unwrap_or_default();
        for r in d["repos"].as_array().into_iter().flatten() {
            if let (Some(repo), Some(s)) = (r["repo"].as_str(), r["score"].as_i64()) {
                put(&base, dim, repo, s);
            }
        }
        for mv in d["model_verdicts"].as_array().into_iter().flatten() {
            if let (Some(m), Some(repo), Some(s)) = (
                mv["model"].as_str(),
                mv["repo"].as_str(),
                mv["score"].as_i64(),
            ) {
                put(m, dim, repo, s);
            }
        }
    }
    if out.is_empty() {
        return Err(fail(
            "the result has no per-repo verdicts (only `scope: repo` judges and panels over \
             them have some); without --result, calibrate judges each repo alone"
                .into(),
        ));
    }
    Ok(out)
}
