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

use minijinja::Environment;

use crate::load::inputs::Inputs;
use crate::load::parts::classify;
use crate::load::suite::Suite;
use crate::run::partial::{Faithful, Partial};
use crate::run::per_repo::{per_repo_streamed, turned_off};
use crate::run::shard::{Checked, empty_partial, merge};
use crate::run::{Phase, Run, RunError, RunOptions, ScoreSource};

/// Whether a run of `suite` scored by `source` streams.
pub(crate) fn streams(suite: &Suite, source: ScoreSource<'_>) -> bool {
    matches!(source, ScoreSource::Heuristic) && !turned_off() && classify(suite).streamable()
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
