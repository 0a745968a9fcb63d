//! A run that streams: when every judge and piece of suite evidence is per-repo,
//! aggregate or constant ([`crate::load::parts::Parts::streamable`]), the results are read a chunk of files
//! at a time, each chunk's per-repo records and units are computed, and its documents
//! dropped before the next is parsed; the aggregate phase then runs as `caldera merge`
//! runs it. A streaming run is every shard in one process: its result is the in-memory
//! run's, and its memory is bounded by a chunk of repos plus the records, not by the
//! input.
//!
//! Heuristic runs only (an LLM run asks its models about units in memory), and not when
//! `CALDERA_NO_STREAM` is set: the escape hatch back to reading every document at once.
//! The data check samples the same repos as an in-memory run does, read again; when a
//! sample shows something, the check over every repo reads the inputs whole.

use std::path::PathBuf;

use indexmap::IndexMap;
use minijinja::Environment;

use crate::diag::Diagnostic;
use crate::load::documents::Keep;
use crate::load::inputs::{Inputs, Overrides, load_inputs_streaming};
use crate::load::parts::{Part, classify};
use crate::load::suite::Suite;
use crate::run::partial::{Faithful, Partial, PartialOverrides};
use crate::run::shard::{Checked, merge, per_repo_phase, suite_fingerprint};
use crate::run::{Phase, Run, RunError, RunOptions, ScoreSource};

/// The environment variable that turns streaming off.
pub(crate) const NO_STREAM_VAR: &str = "CALDERA_NO_STREAM";

/// Whether a run of `suite` scored by `source` streams.
pub(crate) fn streams(suite: &Suite, source: ScoreSource<'_>) -> bool {
    matches!(source, ScoreSource::Heuristic) && !turned_off() && classify(suite).streamable()
}

/// Whether `CALDERA_NO_STREAM` asks every run and shard to read its inputs whole.
pub(crate) fn turned_off() -> bool {
    std::env::var_os(NO_STREAM_VAR).is_some_and(|v| !v.is_empty())
}

/// Runs a streamable suite chunk by chunk (see the module doc); the caller checked
/// [`streams`].
pub(crate) fn run_streamed(
    env: &Environment<'static>,
    suite: &Suite,
    options: &RunOptions,
) -> Result<Run, RunError> {
    let started = std::time::Instant::now();
    let mut partial = empty_partial(suite);
    let shells = per_repo_streamed(env, suite, (&options.overrides, None), &mut partial)?;
    let per_repo = started.elapsed();
    fill_partial(&mut partial, &shells);
    partial.data_problems = super::data_problems(
        suite,
        &super::data_check_rereading(env, suite, (&shells, &options.overrides))?,
    );
    let checked = Checked {
        partials: vec![(PathBuf::new(), partial)],
    };
    let mut result = merge(env, suite, &checked, options, None)?;
    result.shards.clear();
    crate::doc::release((checked, shells));
    let at = started.elapsed();
    result.duration_ms = at.as_millis() as u64;
    Ok(Run {
        result,
        phases: vec![
            Phase {
                name: "inputs and per-repo",
                at: per_repo,
            },
            Phase {
                name: "data check and aggregate",
                at,
            },
        ],
    })
}

/// The per-repo phase over the inputs read a chunk at a time: the records and units of
/// the repos `keep` says yes to (every repo when `None`) go into `partial`, their private
/// evidence dropped chunk by chunk. What comes back is the inputs' shells (every document
/// `null`), for what the whole read tells: repo order, summary, problems.
pub(crate) fn per_repo_streamed(
    env: &Environment<'static>,
    suite: &Suite,
    (overrides, keep): (&Overrides, Option<Keep<'_>>),
    partial: &mut Partial,
) -> Result<Inputs, RunError> {
    let parts = classify(suite);
    crate::doc::streaming_starts();
    let mut failed: Option<Vec<Diagnostic>> = None;
    let mut chunk = |inputs: &Inputs| {
        if failed.is_none()
            && let Err(e) = per_repo_phase(env, suite, &parts, inputs, partial)
        {
            failed = Some(e);
        }
        partial
            .shard_repos
            .extend(inputs.results.iter().map(|d| d.id.clone()));
        partial.drop_private_evidence();
    };
    let shells = load_inputs_streaming(suite, overrides, keep, &mut chunk)?;
    if let Some(e) = failed {
        return Err(e.into());
    }
    // With no repo of its own, the partial still lists every per-repo part, empty, as a
    // read in memory leaves it.
    for (name, part) in &parts.evidence {
        if *part == Part::PerRepo {
            partial.records.entry(name.clone()).or_default();
        }
    }
    for (plan, part) in suite.judges.iter().zip(&parts.judges) {
        if *part == Part::PerRepo {
            partial
                .units
                .entry(plan.spec.dimension.clone())
                .or_default();
        }
    }
    Ok(shells)
}

/// A partial (shard 1/1 until told otherwise), before anything is read.
pub(crate) fn empty_partial(suite: &Suite) -> Partial {
    Partial {
        caldera: env!("CARGO_PKG_VERSION").to_owned(),
        suite: suite.spec.suite.clone(),
        suite_path: String::new(),
        suite_fingerprint: suite_fingerprint(suite),
        inputs_fingerprint: String::new(),
        shard: 1,
        shards: 1,
        run_id: String::new(),
        overrides: PartialOverrides::default(),
        repos: Vec::new(),
        shard_repos: Vec::new(),
        deferred: Vec::new(),
        input_summary: Default::default(),
        input_problems: Vec::new(),
        data_problems: Vec::new(),
        named: IndexMap::new(),
        records: IndexMap::new(),
        units: IndexMap::new(),
        llm: None,
    }
}

/// What the whole read tells the partial: every repo, in run order, the input summary
/// and problems, the named inputs.
fn fill_partial(partial: &mut Partial, shells: &Inputs) {
    partial.repos = shells.results.iter().map(|d| d.id.clone()).collect();
    partial.shard_repos = partial.repos.clone();
    partial.input_summary = super::input_summary(shells);
    partial.input_problems = super::input_problems(shells);
    partial.named = shells
        .named
        .iter()
        .map(|(k, v)| (k.clone(), Faithful(v.clone())))
        .collect();
}
