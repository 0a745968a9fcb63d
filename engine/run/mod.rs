//! A run: load inputs once, judge every dimension, combine into a [`RunResult`].

pub mod context;
pub mod llm;
pub mod probe;
pub mod result;
pub mod units;

use std::time::Instant;

use minijinja::Environment;

use crate::diag::Diagnostic;
use crate::load::suite::Suite;
use crate::run::context::{Inputs, Overrides, build_context, load_inputs};
use crate::run::result::{
    InputSummary, RunResult, average_confidence, gate, summarize, weighted_score,
};
use crate::verdict::combine::{SuiteWeights, heuristic_verdict};

pub use units::prepare_all;

/// Options of a heuristic run.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// Folder overrides.
    pub overrides: Overrides,
    /// `--allow-errors`: a judge in error does not fail the run by itself.
    pub allow_errors: bool,
}

/// A fresh run id: time-ordered and unique enough to name files.
pub fn new_run_id() -> String {
    use rand::Rng;
    format!(
        "{}-{:06x}",
        chrono::Utc::now().format("%Y%m%dT%H%M%SZ"),
        rand::rng().random::<u32>() & 0xff_ffff
    )
}

/// Runs `suite` in heuristic mode. Input problems are returned as diagnostics (exit 2);
/// everything a judge finds goes into the result.
pub fn run_heuristic(
    env: &Environment<'static>,
    suite: &Suite,
    options: &RunOptions,
) -> Result<RunResult, Vec<Diagnostic>> {
    let started = Instant::now();
    let profile = std::env::var_os("CALDERA_PROFILE").is_some();
    let inputs = load_inputs(suite, &options.overrides)?;
    if profile {
        eprintln!(
            "profile: phase inputs: {:.1} ms",
            started.elapsed().as_secs_f64() * 1e3
        );
    }
    let ctx = shared_context(env, suite, &inputs)?;
    if profile {
        eprintln!(
            "profile: phase suite evidence: {:.1} ms",
            started.elapsed().as_secs_f64() * 1e3
        );
    }
    let weights = SuiteWeights::of(suite);
    let units = prepare_all(env, suite, &ctx);
    if profile {
        eprintln!(
            "profile: phase judges: {:.1} ms",
            started.elapsed().as_secs_f64() * 1e3
        );
    }
    let dims = suite
        .judges
        .iter()
        .zip(&units)
        .map(|(plan, units)| heuristic_verdict(plan, units, weights))
        .collect::<Vec<_>>();
    let result = assemble(
        suite,
        &inputs,
        dims,
        ("heuristic", None),
        options.allow_errors,
        started,
    );
    crate::doc::release((inputs, ctx, units));
    Ok(result)
}

/// Builds the run context and adds the suite's own evidence to it. Suite evidence that
/// cannot be computed stops the run: every judge would read it.
pub fn shared_context(
    env: &Environment<'static>,
    suite: &Suite,
    inputs: &Inputs,
) -> Result<crate::evidence::eval::Context, Vec<Diagnostic>> {
    let mut ctx = build_context(suite, inputs);
    if suite.evidence.is_empty() {
        return Ok(ctx);
    }
    let shared = crate::evidence::eval::evaluate(env, &suite.evidence, &ctx).map_err(|e| {
        let mut d = Diagnostic::error(crate::diag::Code::EvaluationError, e.message.clone())
            .in_file(&suite.file)
            .at(suite.index.value_span(&e.key_path))
            .key(&e.key_path);
        if let Some(item) = &e.item {
            d = d.note(format!("while computing item `{item}`"));
        }
        vec![d]
    })?;
    for (k, v) in shared {
        ctx.names.insert(k, v);
    }
    Ok(ctx)
}

/// Combines verdicts into the run result.
pub fn assemble(
    suite: &Suite,
    inputs: &Inputs,
    dims: Vec<crate::verdict::types::Verdict>,
    (mode, model): (&str, Option<String>),
    allow_errors: bool,
    started: Instant,
) -> RunResult {
    let total = weighted_score(&dims);
    let (decision, gate) = gate(
        &dims,
        &suite.decision_table(),
        suite.min_coverage(),
        suite.spec.allow_errors || allow_errors,
    );
    let mut summary = summarize(&dims);
    // Without a ground-truth folder, every repo lacks ground truth by design.
    let no_truth = if inputs.truth_dir.is_some() {
        inputs.results_without_truth()
    } else {
        Vec::new()
    };
    for id in no_truth {
        summary.problems.push(result::Problem {
            dimension: None,
            kind: "input".into(),
            message: format!("repo `{id}` has results but no ground truth"),
        });
    }
    for (key, skipped) in &inputs.skipped {
        summary.problems.push(result::Problem {
            dimension: None,
            kind: "input".into(),
            message: format!(
                "skipped unreadable file {} ({key} has skip_unreadable): {}",
                skipped_location(skipped),
                skipped.reason.message
            ),
        });
    }
    for id in inputs.truth_without_results() {
        summary.problems.push(result::Problem {
            dimension: None,
            kind: "input".into(),
            message: format!("repo `{id}` has ground truth but no results"),
        });
    }
    RunResult {
        run_id: new_run_id(),
        timestamp: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        suite: suite.spec.suite.clone(),
        mode: mode.into(),
        model,
        provider: None,
        usage: None,
        panel: None,
        total_score: total,
        overall_score: total,
        average_confidence: average_confidence(&dims),
        decision,
        gate,
        weighting: "sum(score x weight) / sum(weight) over scored judges; weights are relative"
            .into(),
        summary,
        inputs: InputSummary {
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
        },
        dimensions: dims,
        duration_ms: started.elapsed().as_millis() as u64,
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
