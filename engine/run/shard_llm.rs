//! LLM mode of a run split by repo (`run::shard`). A shard asks the models for its
//! repos' `scope: repo` units only, through the executor a run uses (cache folder,
//! concurrency, retries, batches), and keeps every call's outcome (the verdict read from
//! the reply, its tokens, cost and attempts, or why there is none) in its partial. The
//! merge plans every call of the single run again from the merged units, takes the
//! per-repo judges' outcomes from the partials, asks the other judges' calls itself, and
//! scores them all as one run would: the same verdicts, problems and usage totals.

use std::collections::HashMap;

use minijinja::Environment;

use crate::diag::{Code, Diagnostic};
use crate::llm::executor::JobOutcome;
use crate::load::parts::{Part, Parts};
use crate::load::suite::Suite;
use crate::run::llm::{LlmOptions, models_for, plan_calls, plan_judge_calls_of, settle_calls};
use crate::run::models::{self, ModelSource, Prior, add_batch};
use crate::run::partial::{Partial, PartialLlm, PartialUnit};
use crate::run::result::Concurrency;
use crate::run::{RunError, Scored};
use crate::verdict::combine::Unit;

/// The scoring settings that must be the same in every shard and the merge, as one line
/// each (`models: sonnet`), for naming a difference.
pub(crate) fn settings(llm: Option<&PartialLlm>) -> Vec<(&'static str, String)> {
    let Some(l) = llm else {
        return vec![("mode", "heuristic".to_owned())];
    };
    vec![
        ("mode", "llm".to_owned()),
        (
            "provider",
            l.provider.clone().unwrap_or_else(|| "none".into()),
        ),
        ("models", l.models.join(",")),
        ("repeat", l.repeat.to_string()),
        (
            "settle",
            l.settle.map_or_else(|| "none".into(), |k| k.to_string()),
        ),
    ]
}

/// The first setting in which `a` and `b` differ: `mode: heuristic here, llm there`.
pub(crate) fn difference(
    a: Option<&PartialLlm>,
    b: Option<&PartialLlm>,
) -> Option<(&'static str, String, String)> {
    // Both lists start with the mode, so a heuristic and an LLM shard differ there.
    settings(a)
        .into_iter()
        .zip(settings(b))
        .find(|(x, y)| x.1 != y.1)
        .map(|(x, y)| (x.0, x.1, y.1))
}

/// Asks the per-repo judges' calls of a shard's units (already in `partial`) and
/// records their outcomes. `in_run` is how many units each per-repo judge has in the
/// whole run (every repo), so each request is the one the single run sends.
pub(crate) fn ask_shard(
    env: &Environment<'static>,
    suite: &Suite,
    parts: &Parts,
    partial: &Partial,
    opts: &LlmOptions,
) -> Result<PartialLlm, RunError> {
    let models = models_for(suite, &opts.models);
    let repeats = opts.repeat.max(1);
    let mut recorded = PartialLlm {
        provider: None,
        models: models.clone(),
        repeat: repeats,
        settle: opts.settle,
        outcomes: Vec::new(),
        spent: 0.0,
        concurrency: Concurrency::default(),
        batch: None,
    };
    if models::asks_no_model(suite) {
        return Ok(recorded);
    }
    let source = ModelSource::open(suite, opts, &partial.run_id)?;
    let mut jobs = Vec::new();
    for (j, (plan, part)) in suite.judges.iter().zip(&parts.judges).enumerate() {
        if *part != Part::PerRepo {
            continue;
        }
        let units: Vec<Unit> = partial
            .units
            .get(&plan.spec.dimension)
            .map(|us| us.iter().map(PartialUnit::to_unit).collect())
            .unwrap_or_default();
        let (mut calls, _) = plan_judge_calls_of(
            env,
            (j, plan),
            (&units, partial.repos.len()),
            &models,
            repeats,
        );
        if let Some(first) = opts.settle.filter(|k| *k < repeats) {
            settle_calls(&mut calls, first);
        }
        jobs.extend(calls.into_iter().map(|c| c.job));
    }
    let (outcomes, batch) = source.ask_jobs(jobs)?;
    let (spent, concurrency) = source.spent();
    recorded.provider = Some(source.asking().0.name().to_owned());
    recorded.outcomes = outcomes;
    recorded.spent = spent;
    recorded.concurrency = concurrency;
    recorded.batch = batch;
    Ok(recorded)
}

/// What the merge is asked to score with, checked against what the shards scored with:
/// a difference is refused, naming it.
fn check_merge_settings(
    first: &Partial,
    merge: &PartialLlm,
    path: &std::path::Path,
) -> Result<(), RunError> {
    match difference(first.llm.as_ref(), Some(merge)) {
        None => Ok(()),
        Some((what, theirs, ours)) => Err(RunError::Invalid(vec![
            Diagnostic::error(
                Code::WrongType,
                format!(
                    "merge: the shards were scored with {what} {theirs}, but this merge asks for {what} {ours}"
                ),
            )
            .in_file(path)
            .help("run `caldera merge` with the LLM flags the shards ran with, or run the shards again"),
        ])),
    }
}

/// Scores a merged LLM run: every call of the single run planned over `units`, the
/// per-repo judges' outcomes taken from the partials, the others asked here.
pub(crate) fn score_merged(
    env: &Environment<'static>,
    suite: &Suite,
    parts: &Parts,
    units: &[Vec<Unit>],
    partials: &[(std::path::PathBuf, Partial)],
    opts: &LlmOptions,
) -> Result<Scored, RunError> {
    let (first_path, first) = &partials[0];
    let run_id = opts.run_id.clone().unwrap_or_else(super::new_run_id);
    let asked_here = |provider: Option<String>| PartialLlm {
        provider,
        models: models_for(suite, &opts.models),
        repeat: opts.repeat.max(1),
        settle: opts.settle,
        outcomes: Vec::new(),
        spent: 0.0,
        concurrency: Concurrency::default(),
        batch: None,
    };
    if models::asks_no_model(suite) {
        check_merge_settings(first, &asked_here(None), first_path)?;
        return Ok(models::without_models(suite, units));
    }
    // Models, repeats and settle are checked before the provider is opened (and the
    // interaction log created); the provider once it is known.
    let recorded = first.llm.as_ref().and_then(|l| l.provider.clone());
    check_merge_settings(first, &asked_here(recorded), first_path)?;
    let source = ModelSource::open(suite, opts, &run_id)?;
    let (kind, models, repeats) = source.asking();
    check_merge_settings(first, &asked_here(Some(kind.name().to_owned())), first_path)?;
    let (mut planned, prompt_errors) = plan_calls(env, suite, units, models, repeats);
    if let Some(first) = opts.settle.filter(|k| *k < repeats) {
        settle_calls(&mut planned, first);
    }
    let from_shards: HashMap<&str, &JobOutcome> = partials
        .iter()
        .filter_map(|(_, p)| p.llm.as_ref())
        .flat_map(|l| &l.outcomes)
        .map(|o| (o.id.as_str(), o))
        .collect();
    let mut outcomes: Vec<Option<JobOutcome>> = Vec::with_capacity(planned.len());
    let mut here = Vec::new();
    for (i, call) in planned.iter().enumerate() {
        if parts.judges[call.judge] == Part::PerRepo {
            let Some(o) = from_shards.get(call.job.id.as_str()) else {
                return Err(missing_call(&call.job.id));
            };
            outcomes.push(Some((*o).clone()));
        } else {
            outcomes.push(None);
            here.push((i, call.job.clone()));
        }
    }
    let (slots, jobs): (Vec<usize>, Vec<_>) = here.into_iter().unzip();
    let (asked, batch) = source.ask_jobs(jobs)?;
    for (slot, outcome) in slots.into_iter().zip(asked) {
        outcomes[slot] = Some(outcome);
    }
    let outcomes: Vec<JobOutcome> = outcomes.into_iter().flatten().collect();
    let prior = prior_of(partials);
    Ok(source.score_outcomes(
        suite,
        units,
        (planned, prompt_errors),
        (outcomes, batch),
        &prior,
    ))
}

/// A per-repo call the single run makes that no shard recorded.
fn missing_call(id: &str) -> RunError {
    RunError::Invalid(vec![
        Diagnostic::error(
            Code::WrongType,
            format!("merge: no shard recorded an answer for the call `{id}`, which this run makes"),
        )
        .help("run the shard of that repo again with the same LLM flags"),
    ])
}

/// What the shards spent and met, summed.
fn prior_of(partials: &[(std::path::PathBuf, Partial)]) -> Prior {
    let mut prior = Prior::default();
    for l in partials.iter().filter_map(|(_, p)| p.llm.as_ref()) {
        prior.spent += l.spent;
        prior.cuts += l.concurrency.cuts;
        if !l.outcomes.is_empty() {
            let low = l.concurrency.lowest;
            prior.lowest = Some(prior.lowest.map_or(low, |p| p.min(low)));
        }
        add_batch(&mut prior.batch, l.batch.as_ref());
    }
    prior
}
