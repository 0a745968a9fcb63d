//! The model score source: every unit's prompt asked of one model or a panel (once per
//! repeat) through the executor, live, cached, replayed or batched, and the replies read
//! into unit scores. A panel's consensus and a unit's repeats become one score per unit;
//! the heuristic's verdict is kept beside the model's, and what the asking found worth
//! a look (rate limits, refused cache entries, silent panel members, divergence,
//! unstable repeats, low agreement) becomes the run's problems.

use std::time::Instant;

use indexmap::IndexMap;
use minijinja::Environment;

use crate::diag::{Code, Diagnostic};
use crate::evidence::eval::Context;
use crate::llm::batch::{BatchOptions, BatchReport};
use crate::llm::executor::{Executor, ExecutorError, JobOutcome, Outcome, UnscoredKind};
use crate::load::judge::JudgePlan;
use crate::load::suite::Suite;
use crate::provider::ProviderKind;
use crate::run::llm::{LlmOptions, PlannedCall, PromptErrors, executor, format_of, models_for};
use crate::run::llm::{plan_calls, plan_judge_calls, scoring_from};
use crate::run::result::{Concurrency, Problem, ProblemKind, usage_of};
use crate::run::units::{prepare, prepare_all};
use crate::run::{RunError, Scored};
use crate::spec::judge::LlmUse;
use crate::spec::verdict_format::VerdictFormat;
use crate::verdict::combine::{self, SuiteWeights, Unit, UnitScore, attach_heuristic};
use crate::verdict::heuristic::HeuristicOutcome;
use crate::verdict::panel::{Pairs, RunPanel, consensus_scoring, dimension_panel, run_panel};
use crate::verdict::repeat::{RepeatRun, Repeats, repeat_consensus};
use crate::verdict::types::{CallInfo, ModelVerdict, Scoring, Source, Verdict};

/// Models asked through one executor.
pub(crate) struct ModelSource<'a> {
    opts: &'a LlmOptions,
    executor: Executor,
    provider: ProviderKind,
    models: Vec<String>,
    repeats: u32,
}

/// The calls of a run, what could not be asked, and what came back (in call order).
#[derive(Default)]
struct Asked {
    planned: Vec<PlannedCall>,
    prompt_errors: PromptErrors,
    outcomes: Vec<JobOutcome>,
    batch: Option<BatchReport>,
}

/// What the shards of a merged run spent and met before the merge asked anything
/// (`caldera merge`): added to the merge's own, so the merged usage is the whole run's.
#[derive(Debug, Clone, Default)]
pub(crate) struct Prior {
    /// USD the shards' budgets counted.
    pub spent: f64,
    /// The lowest concurrency limit a shard went to.
    pub lowest: Option<usize>,
    /// Rate-limit cuts in the shards.
    pub cuts: u64,
    /// The shards' batches, when they sent any.
    pub batch: Option<BatchReport>,
}

/// Adds `more` to the batch report `into` (counts summed, ids and problems appended).
pub(crate) fn add_batch(into: &mut Option<BatchReport>, more: Option<&BatchReport>) {
    let Some(more) = more else {
        return;
    };
    let total = into.get_or_insert_with(BatchReport::default);
    total.created += more.created;
    total.submitted += more.submitted;
    total.resubmitted += more.resubmitted;
    total.resumed += more.resumed;
    total.resumed_requests += more.resumed_requests;
    total.batch_ids.extend(more.batch_ids.iter().cloned());
    total
        .state_problems
        .extend(more.state_problems.iter().cloned());
}

/// An executor that stopped without outcomes, as the run's error.
fn stopped(e: ExecutorError) -> RunError {
    match e {
        ExecutorError::Interrupted { .. } => RunError::Interrupted(e.to_string()),
        ExecutorError::Runtime(_) => {
            RunError::Invalid(vec![Diagnostic::error(Code::Io, e.to_string())])
        }
    }
}

/// Every call's outcome, by judge and unit, then by model and repeat.
type Answers<'o> = IndexMap<(usize, usize), Vec<Vec<Option<&'o JobOutcome>>>>;

impl<'a> ModelSource<'a> {
    /// Builds the executor: the provider from the environment, or replay from the cache.
    pub(crate) fn open(
        suite: &Suite,
        opts: &'a LlmOptions,
        run_id: &str,
    ) -> Result<ModelSource<'a>, RunError> {
        let (executor, provider) = executor(suite, opts, run_id)?;
        Ok(ModelSource {
            opts,
            executor,
            provider,
            models: models_for(suite, &opts.models),
            repeats: opts.repeat.max(1),
        })
    }

    /// Computes every judge's units and asks their calls, then scores every judge from
    /// the replies. Also returns the units, and when the last judge's were ready.
    pub(crate) fn prepare_and_score(
        &self,
        env: &Environment<'static>,
        suite: &Suite,
        ctx: &Context,
    ) -> Result<(Vec<Vec<Unit>>, Scored, Instant), RunError> {
        let (units, asked, ready) = if self.opts.batch {
            self.ask_batched(env, suite, ctx)?
        } else {
            self.ask_streamed(env, suite, ctx)?
        };
        let scored = self.score(suite, &units, asked);
        Ok((units, scored, ready))
    }

    /// Every judge's units first, then every call through the provider's batch API (a
    /// batch is submitted whole).
    fn ask_batched(
        &self,
        env: &Environment<'static>,
        suite: &Suite,
        ctx: &Context,
    ) -> Result<(Vec<Vec<Unit>>, Asked, Instant), RunError> {
        let units = prepare_all(env, suite, ctx);
        let ready = Instant::now();
        let (planned, prompt_errors) = plan_calls(env, suite, &units, &self.models, self.repeats);
        let jobs = planned.iter().map(|p| p.job.clone()).collect();
        let (outcomes, report) = self
            .executor
            .run_batched_blocking(jobs, &BatchOptions::default())
            .map_err(stopped)?;
        let asked = Asked {
            planned,
            prompt_errors,
            outcomes,
            batch: Some(report),
        };
        Ok((units, asked, ready))
    }

    /// Judges are computed on every core while the executor runs: a judge's calls go
    /// out as soon as its units and prompts are ready, while other judges' evidence is
    /// still being computed.
    fn ask_streamed(
        &self,
        env: &Environment<'static>,
        suite: &Suite,
        ctx: &Context,
    ) -> Result<(Vec<Vec<Unit>>, Asked, Instant), RunError> {
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        let judges: Vec<(usize, &JudgePlan)> = suite.judges.iter().enumerate().collect();
        let (prepared, streamed) = std::thread::scope(|s| {
            let producer = s.spawn(move || {
                let per_judge = crate::par::map(&judges, |&(j, plan)| {
                    // The receiver is gone only when the run was interrupted (or its
                    // runtime never started): the rest is not computed, the run ends
                    // with that error.
                    if tx.is_closed() {
                        return (Vec::new(), Vec::new(), PromptErrors::new());
                    }
                    let units = prepare(env, plan, ctx);
                    let (mut calls, errors) =
                        plan_judge_calls(env, (j, plan), &units, &self.models, self.repeats);
                    if let Some(first) = self.opts.settle.filter(|k| *k < self.repeats) {
                        crate::run::llm::settle_calls(&mut calls, first);
                    }
                    let _ = tx.send((j, calls.iter().map(|c| c.job.clone()).collect()));
                    (units, calls, errors)
                });
                (per_judge, Instant::now())
            });
            let streamed = self.executor.run_streamed_blocking(rx);
            (producer.join(), streamed)
        });
        let (per_judge, ready) = prepared.unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        let mut streamed = streamed.map_err(stopped)?;
        // Groups arrive as judges finish; calls are planned in suite order, one group
        // per judge.
        streamed.sort_by_key(|(j, _)| *j);
        let mut units = Vec::with_capacity(per_judge.len());
        let mut asked = Asked {
            outcomes: streamed.into_iter().flat_map(|(_, o)| o).collect(),
            ..Asked::default()
        };
        for (judge_units, calls, errors) in per_judge {
            units.push(judge_units);
            asked.planned.extend(calls);
            asked.prompt_errors.extend(errors);
        }
        Ok((units, asked, ready))
    }

    /// The provider that answers, the models asked and the asks per unit and model.
    pub(crate) fn asking(&self) -> (ProviderKind, &[String], u32) {
        (self.provider, &self.models, self.repeats)
    }

    /// USD the budget counted so far, and what the concurrency limit did.
    pub(crate) fn spent(&self) -> (f64, Concurrency) {
        (self.executor.spent(), self.concurrency())
    }

    /// Asks `jobs` (planned as a run plans them): through the batch API with `--batch`,
    /// else directly. Outcomes come back in job order.
    pub(crate) fn ask_jobs(
        &self,
        jobs: Vec<crate::llm::executor::Job>,
    ) -> Result<(Vec<JobOutcome>, Option<BatchReport>), RunError> {
        if jobs.is_empty() {
            return Ok((Vec::new(), None));
        }
        if self.opts.batch {
            let (outcomes, report) = self
                .executor
                .run_batched_blocking(jobs, &BatchOptions::default())
                .map_err(stopped)?;
            return Ok((outcomes, Some(report)));
        }
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        let _ = tx.send(((), jobs));
        drop(tx);
        let streamed = self.executor.run_streamed_blocking(rx).map_err(stopped)?;
        Ok((streamed.into_iter().flat_map(|(_, o)| o).collect(), None))
    }

    /// Scores every judge from outcomes gathered elsewhere (a merge: the shards' and its
    /// own, one per planned call), with what the shards spent (`prior`).
    pub(crate) fn score_outcomes(
        &self,
        suite: &Suite,
        units: &[Vec<Unit>],
        (planned, prompt_errors): (Vec<PlannedCall>, PromptErrors),
        (outcomes, batch): (Vec<JobOutcome>, Option<BatchReport>),
        prior: &Prior,
    ) -> Scored {
        let asked = Asked {
            planned,
            prompt_errors,
            outcomes,
            batch,
        };
        self.score_with(suite, units, asked, prior)
    }

    /// Scores every judge from the replies to its calls.
    fn score(&self, suite: &Suite, units: &[Vec<Unit>], asked: Asked) -> Scored {
        self.score_with(suite, units, asked, &Prior::default())
    }

    /// [`Self::score`], adding what the shards of a merged run spent.
    fn score_with(
        &self,
        suite: &Suite,
        units: &[Vec<Unit>],
        asked: Asked,
        prior: &Prior,
    ) -> Scored {
        let Asked {
            planned,
            prompt_errors,
            outcomes,
            mut batch,
        } = asked;
        add_batch(&mut batch, prior.batch.as_ref());
        let answers = self.group(&planned, &outcomes);
        let pairs = Pairs::for_panel(self.models.len(), self.opts.panel_matrices);
        let mut dims = Vec::new();
        let mut panels = Vec::new();
        let mut silent = Vec::new();
        for (j, plan) in suite.judges.iter().enumerate() {
            let reading = JudgeAnswers {
                source: self,
                judge: j,
                answers: &answers,
                prompt_errors: &prompt_errors,
                rule: suite.spec.consensus,
            };
            let (v, judged_silent) = self.judge_verdict(suite, plan, &units[j], &reading, pairs);
            panels.extend(v.panel.clone());
            silent.extend(judged_silent);
            dims.push(v);
        }
        let mut usage = usage_of(&dims, self.executor.spent() + prior.spent);
        usage.concurrency = self.concurrency();
        usage.concurrency.cuts += prior.cuts;
        if let Some(lowest) = prior.lowest {
            usage.concurrency.lowest = usage.concurrency.lowest.min(lowest);
        }
        // Batch states not used (one planted in the checkout, say) are named in the summary.
        let state_problems = batch
            .iter()
            .flat_map(|b| b.state_problems.iter())
            .map(|message| Problem {
                dimension: None,
                kind: ProblemKind::Cache,
                message: message.clone(),
            })
            .collect::<Vec<_>>();
        usage.batch = batch;
        let panel = (self.models.len() > 1).then(|| {
            run_panel(
                &self.models,
                &panels,
                suite.spec.kappa_target,
                pairs,
                suite.spec.consensus,
            )
        });
        let mut problems = lifecycle_problems(suite, &self.models, chrono::Utc::now().date_naive());
        problems.extend(reasoning_problems(suite, &self.models, self.provider));
        problems.extend(rate_limit_problem(&usage.concurrency));
        problems.extend(silent);
        problems.extend(self.cache_problems(suite, units, &planned, &outcomes));
        problems.extend(state_problems);
        problems.extend(divergences(&dims));
        problems.extend(unstable(&dims));
        problems.extend(panel.as_ref().and_then(agreement_problem));
        Scored {
            dimensions: dims,
            model: Some(self.models.join(",")),
            provider: Some(self.provider.name().to_owned()),
            usage: Some(usage),
            panel,
            problems,
        }
    }

    /// One judge's verdict from its answers, with the panel members that gave no
    /// verdict where others did.
    fn judge_verdict(
        &self,
        suite: &Suite,
        plan: &JudgePlan,
        units: &[Unit],
        reading: &JudgeAnswers<'_, '_>,
        pairs: Pairs,
    ) -> (Verdict, Vec<Problem>) {
        let weights = suite.weights();
        if plan.spec.llm == LlmUse::Never {
            return (heuristic_only(plan, units, weights), Vec::new());
        }
        let judged = reading.read(plan, units);
        let mut v = combine::verdict(plan.judge(), units, &judged.scores, Source::Llm, weights);
        attach_heuristic(&mut v, units);
        v.llm_calls = judged.calls;
        if self.repeats > 1 {
            let mut repeats = Repeats::of(self.repeats, judged.repeat_runs);
            repeats.settled = judged.settled;
            v.repeats = Some(repeats);
        }
        if self.models.len() > 1 {
            v.model_verdicts = judged.model_verdicts;
            v.panel = Some(dimension_panel(
                &plan.spec.dimension,
                &self.models,
                &judged.per_model,
                pairs,
                suite.spec.consensus,
            ));
        }
        (v, judged.silent)
    }

    fn group<'o>(&self, planned: &[PlannedCall], outcomes: &'o [JobOutcome]) -> Answers<'o> {
        let mut answers = Answers::new();
        for (p, o) in planned.iter().zip(outcomes) {
            answers
                .entry((p.judge, p.unit))
                .or_insert_with(|| vec![vec![None; self.repeats as usize]; self.models.len()])
                [p.model][p.repeat as usize] = Some(o);
        }
        answers
    }

    /// What the adaptive concurrency limit did.
    fn concurrency(&self) -> Concurrency {
        let limiter = self.executor.concurrency();
        Concurrency {
            ceiling: self.opts.concurrency.max(1),
            lowest: limiter.lowest,
            at_end: limiter.limit,
            cuts: limiter.cuts,
        }
    }

    /// A refused cache entry that was asked again; one that left its unit unscored
    /// (replay) is already reported with that unit.
    fn cache_problems(
        &self,
        suite: &Suite,
        units: &[Vec<Unit>],
        planned: &[PlannedCall],
        outcomes: &[JobOutcome],
    ) -> Vec<Problem> {
        let mut problems = Vec::new();
        for (p, o) in planned.iter().zip(outcomes) {
            if let (Some(why), Outcome::Scored(_)) = (&o.cache_problem, &o.outcome) {
                let unit = units[p.judge][p.unit]
                    .repo
                    .as_ref()
                    .map_or_else(String::new, |r| format!(", repo {r}"));
                problems.push(Problem {
                    dimension: Some(suite.judges[p.judge].spec.dimension.clone()),
                    kind: ProblemKind::Cache,
                    message: format!("model {}{unit}: {why}", self.models[p.model]),
                });
            }
        }
        problems
    }
}

/// The provider asked to slow down (in the run, or in a merged run's shards).
fn rate_limit_problem(c: &Concurrency) -> Option<Problem> {
    (c.cuts > 0).then(|| Problem {
        dimension: None,
        kind: ProblemKind::RateLimit,
        message: format!(
            "the provider asked to slow down: concurrency was halved {} time(s), from {} \
             to as low as {} (ending at {})",
            c.cuts, c.ceiling, c.lowest, c.at_end
        ),
    })
}

/// One judge's answers being read into unit scores.
struct JudgeAnswers<'s, 'o> {
    source: &'s ModelSource<'s>,
    judge: usize,
    answers: &'s Answers<'o>,
    prompt_errors: &'s PromptErrors,
    rule: crate::spec::suite::Consensus,
}

/// What one judge's answers come to.
#[derive(Default)]
struct Judged {
    /// One score per unit: a model's, or the panel's consensus.
    scores: Vec<UnitScore>,
    calls: Vec<CallInfo>,
    /// Each model's score per unit (`None` where it gave none).
    per_model: Vec<Vec<Option<i64>>>,
    model_verdicts: Vec<ModelVerdict>,
    repeat_runs: Vec<RepeatRun>,
    /// Repeats not asked because the first ones agreed (`--settle`).
    settled: u32,
    /// Panel members that gave no verdict where others did.
    silent: Vec<Problem>,
}

impl JudgeAnswers<'_, '_> {
    fn read(&self, plan: &JudgePlan, units: &[Unit]) -> Judged {
        let models = &self.source.models;
        let format = format_of(plan);
        let mut judged = Judged {
            per_model: vec![Vec::new(); models.len()],
            ..Judged::default()
        };
        for (u, unit) in units.iter().enumerate() {
            if let Some(reason) = self.prompt_errors.get(&(self.judge, u)) {
                judged
                    .scores
                    .push(HeuristicOutcome::Unscored(reason.to_string()));
                for col in judged.per_model.iter_mut() {
                    col.push(None);
                }
                continue;
            }
            let score = self.read_unit(plan, u, unit, &format, &mut judged);
            judged.scores.push(score);
        }
        judged
    }

    /// One unit's score from every model's asks: a model's verdict, or the panel's
    /// consensus.
    fn read_unit(
        &self,
        plan: &JudgePlan,
        u: usize,
        unit: &Unit,
        format: &VerdictFormat,
        judged: &mut Judged,
    ) -> UnitScore {
        let models = &self.source.models;
        let outs = self
            .answers
            .get(&(self.judge, u))
            .cloned()
            .unwrap_or_default();
        let mut verdicts: Vec<Scoring> = Vec::new();
        let mut reasons = Vec::new();
        let mut missing: Vec<(String, String)> = Vec::new();
        for (m, model) in models.iter().enumerate() {
            let asks = outs.get(m).cloned().unwrap_or_default();
            let (one, failures) = self.model_scoring(model, unit, &asks, format, judged);
            let Some(scoring) = one else {
                judged.per_model[m].push(None);
                // Each failure names its model (and repeat); the problem names the
                // model already.
                let prefix = format!("{model}: ");
                let why: Vec<&str> = failures
                    .iter()
                    .map(|f| f.strip_prefix(&prefix).unwrap_or(f))
                    .collect();
                missing.push((model.clone(), why.join("; ")));
                reasons.extend(failures);
                continue;
            };
            judged.per_model[m].push(Some(scoring.score));
            judged.model_verdicts.push(ModelVerdict {
                model: model.clone(),
                repo: unit.repo.clone(),
                score: scoring.score,
                confidence: scoring.confidence,
                reasoning: scoring.reasoning.clone(),
            });
            verdicts.push(scoring);
        }
        // A consensus hides a member that gave no verdict: name it. (A unit no model
        // answered is reported as unscored, with every model's reason.)
        if models.len() > 1 && !verdicts.is_empty() {
            judged.silent.extend(silent_members(plan, unit, &missing));
        }
        consensus_scoring(verdicts, &reasons, self.rule)
    }

    /// One model's scoring of a unit from its asks (the median of its repeats), and the
    /// reasons of the asks without one.
    fn model_scoring(
        &self,
        model: &str,
        unit: &Unit,
        asks: &[Option<&JobOutcome>],
        format: &VerdictFormat,
        judged: &mut Judged,
    ) -> (Option<Scoring>, Vec<String>) {
        let (asks, settled): (Vec<_>, Vec<_>) =
            asks.iter().partition(|a| !a.is_some_and(is_settled));
        judged.settled += settled.len() as u32;
        let (per_ask, failures) = read_asks(model, &asks, format, &mut judged.calls);
        if self.source.repeats <= 1 {
            return (per_ask.into_iter().flatten().next(), failures);
        }
        let given = per_ask
            .iter()
            .map(|s| s.as_ref().map(|s| s.score))
            .collect();
        judged
            .repeat_runs
            .push(RepeatRun::new(unit.repo.clone(), model, given));
        let scorings: Vec<Scoring> = per_ask.into_iter().flatten().collect();
        (repeat_consensus(scorings, &failures), failures)
    }
}

/// The panel members that gave no verdict on `unit`, with their reasons.
fn silent_members(plan: &JudgePlan, unit: &Unit, missing: &[(String, String)]) -> Vec<Problem> {
    let at = unit
        .repo
        .as_ref()
        .map_or_else(String::new, |r| format!(" for repo {r}"));
    missing
        .iter()
        .map(|(model, reason)| Problem {
            dimension: Some(plan.spec.dimension.clone()),
            kind: ProblemKind::Panel,
            message: format!("model {model} gave no verdict{at}: {reason}"),
        })
        .collect()
}

/// An ask left unsent because the first repeats of its unit agreed.
fn is_settled(ask: &JobOutcome) -> bool {
    matches!(
        ask.outcome,
        Outcome::Unscored {
            kind: UnscoredKind::Settled,
            ..
        }
    )
}

/// Reads one model's asks of one unit (one per repeat): each ask's scoring, or the reason
/// it has none, and the call behind it.
fn read_asks(
    model: &str,
    asks: &[Option<&JobOutcome>],
    format: &VerdictFormat,
    calls: &mut Vec<CallInfo>,
) -> (Vec<Option<Scoring>>, Vec<String>) {
    let label = |r: usize| {
        if asks.len() > 1 {
            format!("{model} #{}", r + 1)
        } else {
            model.to_owned()
        }
    };
    let mut scorings = Vec::with_capacity(asks.len());
    let mut failures = Vec::new();
    for (r, ask) in asks.iter().enumerate() {
        let cache_problem = ask.and_then(|o| o.cache_problem.clone());
        match ask.map(|o| &o.outcome) {
            Some(Outcome::Scored(s)) => {
                calls.push(CallInfo {
                    model: model.to_owned(),
                    input_tokens: s.usage.input_tokens,
                    output_tokens: s.usage.output_tokens,
                    reasoning_tokens: s.usage.reasoning_tokens,
                    cache_write_tokens: s.usage.cache_write_tokens,
                    cache_read_tokens: s.usage.cache_read_tokens,
                    cost_usd: s.cost_usd,
                    cached: s.cached,
                    attempts: s.attempts,
                    reasked: s.reasked,
                    scored: true,
                    cache_problem,
                });
                scorings.push(Some(scoring_from(&s.verdict, format, &s.reply)));
            }
            Some(Outcome::Unscored {
                reason,
                attempts,
                usage,
                cost_usd,
                ..
            }) => {
                // An unscored call still used what its replies used.
                calls.push(CallInfo {
                    model: model.to_owned(),
                    input_tokens: usage.input_tokens,
                    output_tokens: usage.output_tokens,
                    reasoning_tokens: usage.reasoning_tokens,
                    cache_write_tokens: usage.cache_write_tokens,
                    cache_read_tokens: usage.cache_read_tokens,
                    cost_usd: *cost_usd,
                    attempts: *attempts,
                    scored: false,
                    cache_problem,
                    ..CallInfo::default()
                });
                failures.push(format!("{}: {reason}", label(r)));
                scorings.push(None);
            }
            None => {
                failures.push(format!("{}: no call was made", label(r)));
                scorings.push(None);
            }
        }
    }
    (scorings, failures)
}

/// What an LLM run says when none of its judges asks a model.
pub(crate) const NO_MODEL_ASKED: &str =
    "every judge says `llm: never`: no model is asked, so no provider is needed";

/// Whether every judge of the run says `llm: never` (after `--judge`): such a run asks
/// no model, so it opens no provider and needs neither a key nor the `claude` CLI.
pub(crate) fn asks_no_model(suite: &Suite) -> bool {
    suite
        .judges
        .iter()
        .all(|plan| plan.spec.llm == LlmUse::Never)
}

/// An LLM run in which no judge asks a model: every judge scored by its heuristic, as
/// in a run with a provider, with no model, provider or usage to report.
pub(crate) fn without_models(suite: &Suite, units: &[Vec<Unit>]) -> Scored {
    let weights = suite.weights();
    Scored {
        dimensions: suite
            .judges
            .iter()
            .zip(units)
            .map(|(plan, units)| heuristic_only(plan, units, weights))
            .collect(),
        ..Scored::default()
    }
}

/// The verdict of a judge with `llm: never`: its heuristic's, saying so.
fn heuristic_only(plan: &JudgePlan, units: &[Unit], weights: SuiteWeights) -> Verdict {
    let mut v = combine::heuristic_verdict(plan.judge(), units, weights);
    v.note = Some("`llm: never`: scored by its heuristic in LLM mode; no model was asked".into());
    v
}

/// A model and the heuristic two points or more apart: worth a human look.
fn divergences(dims: &[Verdict]) -> Vec<Problem> {
    dims.iter()
        .filter_map(|d| {
            let (llm, h) = (d.score?, d.heuristic.as_ref()?.score?);
            ((llm.value() - h.value()).abs() >= 2.0).then(|| Problem {
                dimension: Some(d.name.clone()),
                kind: ProblemKind::Divergence,
                message: format!(
                    "the model scored {llm} and the heuristic {h}: a gap worth a human look"
                ),
            })
        })
        .collect()
}

/// The run's models that the catalogue marks deprecated or retiring: each says when it
/// stops being served and what to move to, so a run that still passes today warns
/// before the day it starts failing.
fn lifecycle_problems(suite: &Suite, models: &[String], today: chrono::NaiveDate) -> Vec<Problem> {
    let table = crate::run::llm::model_table(suite);
    models
        .iter()
        .filter_map(|m| table.lifecycle_warning(m, today))
        .map(|message| Problem {
            dimension: None,
            kind: ProblemKind::Model,
            message,
        })
        .collect()
}

/// Judges that ask for reasoning of a model that cannot take it: an OpenAI model the
/// catalogue does not mark as a reasoning model (it would refuse `reasoning_effort`), or
/// the `claude` CLI. They are asked without it, and the run says so.
fn reasoning_problems(suite: &Suite, models: &[String], provider: ProviderKind) -> Vec<Problem> {
    let asking: Vec<&str> = suite
        .judges
        .iter()
        .filter(|j| j.reasoning.is_some())
        .map(|j| j.spec.dimension.as_str())
        .collect();
    if asking.is_empty() || provider == ProviderKind::Anthropic {
        return Vec::new();
    }
    let table = crate::run::llm::model_table(suite);
    models
        .iter()
        .filter(|m| provider == ProviderKind::ClaudeCli || !table.is_reasoning(m))
        .map(|m| Problem {
            dimension: None,
            kind: ProblemKind::Model,
            message: format!(
                "{} ask(s) for reasoning, but `{m}` on {} takes none (not a reasoning model \
                 in the catalogue): asked without it",
                asking.join(", "),
                provider.name()
            ),
        })
        .collect()
}

/// A panel whose mean kappa is below target or undefined.
fn agreement_problem(panel: &RunPanel) -> Option<Problem> {
    panel.warning.clone().map(|message| Problem {
        dimension: None,
        kind: ProblemKind::Agreement,
        message,
    })
}

/// Judges whose repeats of one prompt disagree.
fn unstable(dims: &[Verdict]) -> Vec<Problem> {
    dims.iter()
        .filter_map(|d| {
            let message = d.repeats.as_ref().and_then(Repeats::describe_unstable)?;
            Some(Problem {
                dimension: Some(d.name.clone()),
                kind: ProblemKind::Unstable,
                message,
            })
        })
        .collect()
}
