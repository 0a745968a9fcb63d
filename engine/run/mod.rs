//! A run is one pipeline, whatever scores it: the inputs are read once, the run context
//! is built, every judge's units are prepared (evidence, assertions, heuristic), a score
//! source scores them into verdicts, and the result is assembled once. Heuristic and LLM
//! runs differ only in the score source.

pub(crate) mod context;
pub(crate) mod error;
pub(crate) mod llm;
pub(crate) mod models;
pub(crate) mod partial;
pub(crate) mod per_repo;
pub(crate) mod probe;
pub(crate) mod result;
pub(crate) mod shard;
pub(crate) mod shard_llm;
pub(crate) mod stream;
pub(crate) mod units;

use std::time::{Duration, Instant};

use minijinja::Environment;

use crate::diag::Diagnostic;
use crate::load::inputs::{Inputs, Overrides, load_inputs};
use crate::load::suite::Suite;
use crate::run::llm::LlmOptions;
use crate::run::result::{
    InputSummary, Problem, ProblemKind, RunMode, RunResult, RunUsage, average_confidence, summarize,
};
use crate::verdict::combine::{Unit, heuristic_verdict};
use crate::verdict::decision::weighted_score;
use crate::verdict::gate::gate;
use crate::verdict::panel::RunPanel;
use crate::verdict::types::Verdict;

pub use error::RunError;
pub(crate) use units::prepare_all;

/// What every run is given, whatever scores it.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// `--results`, `--ground-truth`, `--input` and `--repo`.
    pub overrides: Overrides,
    /// `--allow-errors`: a judge in error does not fail the run by itself.
    pub allow_errors: bool,
    /// The run id (a fresh one when `None`): the caller may need it before the run, to
    /// name the files the run writes.
    pub run_id: Option<String>,
}

/// Where a run's scores come from.
#[derive(Debug, Clone, Copy)]
pub enum ScoreSource<'a> {
    /// Each judge's heuristic band table: offline and free.
    Heuristic,
    /// One model or a panel, through the executor (live, cached, replayed or batched).
    Models(&'a LlmOptions),
}

/// A finished run: its result, and how long its phases took.
#[derive(Debug)]
pub struct Run {
    /// The result document.
    pub result: RunResult,
    /// Each phase's end, from the start of the run, in order; `CALDERA_PROFILE` prints
    /// them.
    pub phases: Vec<Phase>,
}

/// The end of one phase of a run.
#[derive(Debug, Clone, Copy)]
pub struct Phase {
    /// `inputs`, `suite evidence`, `judges`.
    pub name: &'static str,
    /// Time from the start of the run to the end of the phase.
    pub at: Duration,
}

/// What a score source gives: every judge's verdict, in suite order, and what the source
/// adds to the run.
#[derive(Debug, Default)]
pub(crate) struct Scored {
    /// The verdicts.
    pub dimensions: Vec<Verdict>,
    /// The model, or the comma-separated panel.
    pub model: Option<String>,
    /// The provider that answered.
    pub provider: Option<String>,
    /// Calls, tokens and cost.
    pub usage: Option<RunUsage>,
    /// Agreement between the models of a panel.
    pub panel: Option<RunPanel>,
    /// What the source found worth a look, after the verdicts' own problems.
    pub problems: Vec<Problem>,
}

/// A fresh run id: time-ordered and unique enough to name files.
pub(crate) fn new_run_id() -> String {
    use rand::Rng;
    format!(
        "{}-{:06x}",
        chrono::Utc::now().format("%Y%m%dT%H%M%SZ"),
        rand::rng().random::<u32>() & 0xff_ffff
    )
}

/// Runs `suite`, reading its inputs first. Input problems are errors (exit 2); everything
/// a judge finds goes into the result.
pub fn run(
    env: &Environment<'static>,
    suite: &Suite,
    source: ScoreSource<'_>,
    options: &RunOptions,
) -> Result<Run, RunError> {
    if stream::streams(suite, source) {
        return stream::run_streamed(env, suite, options);
    }
    let mut clock = Clock::start();
    let inputs = load_inputs(suite, &options.overrides)?;
    clock.mark("inputs");
    let started = clock.started;
    let mut run = run_with(env, suite, &inputs, source, options, clock);
    if let Ok(run) = &mut run {
        // After the verdicts, so an LLM run's first request does not wait for it.
        let found = data_check(env, suite, &inputs);
        run.result
            .summary
            .problems
            .extend(data_problems(suite, &found));
        let at = started.elapsed();
        run.result.duration_ms = at.as_millis() as u64;
        run.phases.push(Phase {
            name: "data check",
            at,
        });
    }
    crate::doc::release(inputs);
    run
}

/// Repos the run's data check looks at first; four times as many at each further step.
pub(crate) const DATA_CHECK_SAMPLE: usize = 16;

/// `caldera validate`'s data check over the run's inputs, kept cheap by sampling: it
/// runs on [`DATA_CHECK_SAMPLE`] repos spread over the inputs, and on four times as many
/// while the sample shows something, up to every repo. A path or selector that matched
/// on a sample matches on the whole, so a clean sample means no never-matched warning on
/// the whole; what is reported comes from the check over every repo, with its counts and
/// keys. (An item key shadowing a context name only in repos past a clean sample is left
/// to `caldera validate`, which checks every repo; evaluation errors show on the verdicts
/// anyway.)
fn data_check(env: &Environment<'static>, suite: &Suite, inputs: &Inputs) -> Vec<Diagnostic> {
    let clean = sample_is_clean(env, suite, inputs.results.len(), |size| {
        Ok(sample(inputs, size))
    });
    match clean {
        Ok(true) => Vec::new(),
        _ => probe::check_with_data(env, suite, inputs),
    }
}

/// The run's data check on the same samples an in-memory run takes, their documents
/// read again; over every repo (the inputs read whole) only when every sample shows
/// something. Shard 1 of a sharded run runs it on its inputs read as shells too.
pub(crate) fn data_check_rereading(
    env: &Environment<'static>,
    suite: &Suite,
    (shells, overrides): (&Inputs, &Overrides),
) -> Result<Vec<Diagnostic>, Vec<Diagnostic>> {
    let len = shells.results.len();
    let clean = sample_is_clean(env, suite, len, |size| {
        crate::load::inputs::reread_results(suite, shells, &sample_picks(len, size))
    })?;
    if clean {
        return Ok(Vec::new());
    }
    let whole = crate::load::inputs::load_inputs(suite, overrides)?;
    let found = probe::check_with_data(env, suite, &whole);
    crate::doc::release(whole);
    Ok(found)
}

/// Whether one of the growing samples of [`data_check`] over `len` repos shows nothing
/// (`false` when none does, and every repo must be checked); `sample` gives the sample
/// of a size.
fn sample_is_clean(
    env: &Environment<'static>,
    suite: &Suite,
    len: usize,
    mut sample: impl FnMut(usize) -> Result<Inputs, Vec<Diagnostic>>,
) -> Result<bool, Vec<Diagnostic>> {
    let mut size = DATA_CHECK_SAMPLE;
    while size < len {
        if probe::check_with_data(env, suite, &sample(size)?).is_empty() {
            return Ok(true);
        }
        size = size.saturating_mul(4);
    }
    Ok(false)
}

/// The indices of the results a sample of `size` out of `len` takes: every
/// `len / size`-th, in file order.
fn sample_picks(len: usize, size: usize) -> Vec<usize> {
    (0..size).map(|i| i * len / size).collect()
}

/// `size` results spread evenly over the inputs ([`sample_picks`]), with their ground
/// truth and every named input.
fn sample(inputs: &Inputs, size: usize) -> Inputs {
    let len = inputs.results.len();
    let results: Vec<_> = sample_picks(len, size)
        .into_iter()
        .map(|i| inputs.results[i].clone())
        .collect();
    let truth = inputs
        .truth
        .iter()
        .filter(|t| results.iter().any(|r| r.id == t.id))
        .cloned()
        .collect();
    Inputs {
        results,
        truth,
        ..inputs.clone()
    }
}

/// What `caldera validate` finds on the data, as problems of the run: a misspelled path
/// in suite or judge evidence otherwise gives plausible scores (a `when_no_data` verdict,
/// a count of nothing) with nothing worth a look. Each names its file, line, column and
/// key path; a judge's belongs to its dimension.
fn data_problems(suite: &Suite, found: &[Diagnostic]) -> Vec<Problem> {
    found
        .iter()
        .map(|d| Problem {
            dimension: d.file.as_deref().and_then(|f| {
                suite
                    .judges
                    .iter()
                    .find(|j| j.file == f)
                    .map(|j| j.spec.dimension.clone())
            }),
            kind: ProblemKind::Data,
            message: data_message(d),
        })
        .collect()
}

/// `file:line:col at `key`: message (help)`, one line.
fn data_message(d: &Diagnostic) -> String {
    let mut place = d
        .file
        .as_deref()
        .map(crate::diag::display_path)
        .unwrap_or_default();
    if let Some(span) = d.span {
        place.push_str(&format!(":{}:{}", span.line, span.column));
    }
    if let Some(key) = d.key_path.as_deref().filter(|k| !k.is_empty()) {
        place.push_str(&format!(" at `{key}`"));
    }
    let mut message = format!("{place}: {}", d.message);
    if let Some(help) = &d.help {
        message.push_str(&format!(" ({help})"));
    }
    message
}

/// [`run`] over inputs already read (`caldera calibrate` runs one repo at a time).
pub(crate) fn run_on(
    env: &Environment<'static>,
    suite: &Suite,
    inputs: &Inputs,
    source: ScoreSource<'_>,
    options: &RunOptions,
) -> Result<Run, RunError> {
    run_with(env, suite, inputs, source, options, Clock::start())
}

/// Runs `suite` in heuristic mode. A heuristic run cannot be interrupted, so its only
/// failure is the diagnostics of inputs it could not use.
pub fn run_heuristic(
    env: &Environment<'static>,
    suite: &Suite,
    options: &RunOptions,
) -> Result<RunResult, Vec<Diagnostic>> {
    run(env, suite, ScoreSource::Heuristic, options)
        .map(|r| r.result)
        .map_err(Into::into)
}

fn run_with(
    env: &Environment<'static>,
    suite: &Suite,
    inputs: &Inputs,
    source: ScoreSource<'_>,
    options: &RunOptions,
    mut clock: Clock,
) -> Result<Run, RunError> {
    let ctx = context::shared_context(env, suite, inputs)?;
    clock.mark("suite evidence");
    let run_id = options.run_id.clone().unwrap_or_else(new_run_id);
    // A provider that cannot be used stops the run before any evidence is computed; a
    // suite whose judges all say `llm: never` asks no model and so needs none.
    let models = match source {
        ScoreSource::Models(opts) if !models::asks_no_model(suite) => {
            Some(models::ModelSource::open(suite, opts, &run_id)?)
        }
        _ => None,
    };
    let (mode, units, scored) = match (&models, source) {
        (Some(m), _) => {
            let (units, scored, ready) = m.prepare_and_score(env, suite, &ctx)?;
            clock.mark_at("judges", ready);
            (RunMode::Llm, units, scored)
        }
        (None, ScoreSource::Models(_)) => {
            log::info!("{}", models::NO_MODEL_ASKED);
            let units = prepare_all(env, suite, &ctx);
            clock.mark("judges");
            let scored = models::without_models(suite, &units);
            (RunMode::Llm, units, scored)
        }
        (None, ScoreSource::Heuristic) => {
            let units = prepare_all(env, suite, &ctx);
            clock.mark("judges");
            let scored = heuristic(suite, &units);
            (RunMode::Heuristic, units, scored)
        }
    };
    let mut result = assemble(
        suite,
        inputs,
        scored,
        (mode, run_id),
        options,
        clock.started,
    );
    result.suite_evidence = context::suite_evidence(suite, &ctx);
    crate::doc::release((ctx, units));
    Ok(Run {
        result,
        phases: clock.phases,
    })
}

/// Every judge scored by its heuristic.
fn heuristic(suite: &Suite, units: &[Vec<Unit>]) -> Scored {
    let weights = suite.weights();
    Scored {
        dimensions: suite
            .judges
            .iter()
            .zip(units)
            .map(|(plan, units)| heuristic_verdict(plan.judge(), units, weights))
            .collect(),
        ..Scored::default()
    }
}

/// The ends of a run's phases.
struct Clock {
    started: Instant,
    phases: Vec<Phase>,
}

impl Clock {
    fn start() -> Clock {
        Clock {
            started: Instant::now(),
            phases: Vec::new(),
        }
    }

    fn mark(&mut self, name: &'static str) {
        self.mark_at(name, Instant::now());
    }

    /// Marks a phase that ended at `end` (on another thread, say).
    fn mark_at(&mut self, name: &'static str, end: Instant) {
        self.phases.push(Phase {
            name,
            at: end.saturating_duration_since(self.started),
        });
    }
}

/// The run result, made once from the verdicts and what their source adds: the
/// weighted score, the decision and its gate, and every problem worth a look.
fn assemble(
    suite: &Suite,
    inputs: &Inputs,
    scored: Scored,
    run: (RunMode, String),
    options: &RunOptions,
    started: Instant,
) -> RunResult {
    let read = (input_summary(inputs), input_problems(inputs));
    assemble_from(suite, read, scored, run, options, started)
}

/// [`assemble`] from what the inputs were found to be (`caldera merge` has no inputs
/// of its own: the shards recorded it).
fn assemble_from(
    suite: &Suite,
    (read, read_problems): (InputSummary, Vec<Problem>),
    scored: Scored,
    (mode, run_id): (RunMode, String),
    options: &RunOptions,
    started: Instant,
) -> RunResult {
    let dims = scored.dimensions;
    let total = weighted_score(&dims);
    let (decision, gate) = gate(
        &dims,
        &suite.decision_table(),
        suite.min_coverage(),
        suite.spec.allow_errors || options.allow_errors,
    );
    let mut summary = summarize(&dims);
    summary.problems.extend(read_problems);
    summary.problems.extend(scored.problems);
    RunResult {
        run_id,
        timestamp: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        suite: suite.spec.suite.clone(),
        mode,
        model: scored.model,
        provider: scored.provider,
        usage: scored.usage,
        panel: scored.panel,
        total_score: total,
        overall_score: total,
        average_confidence: average_confidence(&dims),
        decision,
        gate,
        weighting: "sum(score x weight) / sum(weight) over scored judges; weights are relative"
            .into(),
        summary,
        inputs: read,
        suite_evidence: indexmap::IndexMap::new(),
        identity_keys: suite.spec.identity_keys.clone(),
        dimensions: dims,
        duration_ms: started.elapsed().as_millis() as u64,
        shards: Vec::new(),
    }
}

/// Repos on one side only, and files skipped as unreadable.
fn input_problems(inputs: &Inputs) -> Vec<Problem> {
    let input = |message: String| Problem {
        dimension: None,
        kind: ProblemKind::Input,
        message,
    };
    let mut problems = Vec::new();
    // Without a ground-truth folder, every repo lacks ground truth by design.
    if inputs.truth_dir.is_some() {
        for id in inputs.results_without_truth() {
            problems.push(input(format!(
                "repo `{id}` has results but no ground truth"
            )));
        }
    }
    for (key, skipped) in &inputs.skipped {
        problems.push(input(format!(
            "skipped unreadable file {} ({key} has skip_unreadable): {}",
            skipped_location(skipped),
            skipped.reason.message
        )));
    }
    for id in inputs.truth_without_results() {
        problems.push(input(format!(
            "repo `{id}` has ground truth but no results"
        )));
    }
    problems
}

fn input_summary(inputs: &Inputs) -> InputSummary {
    InputSummary {
        results_dir: crate::diag::display_path(&inputs.results_dir),
        ground_truth_dir: inputs.truth_dir.as_deref().map(crate::diag::display_path),
        results: inputs.results.len(),
        ground_truth: inputs.truth.len(),
        results_without_ground_truth: inputs.results_without_truth(),
        ground_truth_without_results: inputs.truth_without_results(),
        bytes: inputs.bytes,
        skipped: inputs
            .skipped
            .iter()
            .map(|(_, s)| skipped_location(s))
            .collect(),
    }
}

/// `file:line:column` of a skipped file's problem (the file alone when it has no place).
fn skipped_location(s: &crate::load::documents::Skipped) -> String {
    let file = crate::diag::display_path(&s.file);
    match s.reason.span {
        Some(span) => format!("{file}:{}:{}", span.line, span.column),
        None => file,
    }
}
