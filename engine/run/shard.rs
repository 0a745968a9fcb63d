//! A run split at its one seam: the **per-repo phase** (per-repo suite evidence records
//! and `scope: repo` judges' units, for any set of repos) and the **aggregate phase**
//! (every other piece of suite evidence and every other judge, from the records of every
//! repo in the single run's repo order). `caldera run --shard K/N` runs the first on
//! its share of the repos and writes a [`Partial`]; `caldera merge` checks the partials
//! belong together, then runs the second and assembles the result exactly as a single
//! run does.
//!
//! Which part each piece belongs to is told at load ([`crate::load::parts`]). A whole
//! part (one that reads every document at once) is refused at `--shard`, or with
//! `--defer-whole` left to the merge, which then reads the inputs itself.

use std::path::{Path, PathBuf};

use indexmap::IndexMap;
use minijinja::Environment;
use sha2::{Digest, Sha256};

use crate::diag::{Code, Diagnostic};
use crate::doc::Doc;
use crate::evidence::eval::{Context, evaluate};
use crate::load::documents::Keep;
use crate::load::inputs::{Inputs, Overrides, load_case_inputs, load_inputs_keeping};
use crate::load::parts::{Part, Parts, classify};
use crate::load::suite::Suite;
use crate::run::context::{build_context, evidence_error, suite_evidence};
use crate::run::partial::{Faithful, Partial, PartialOverrides, PartialUnit, hex, shard_of};
use crate::run::per_repo::{self, per_repo_phase};
use crate::run::result::{RunMode, RunResult};
use crate::run::units::prepare;
use crate::verdict::combine::Unit;

/// `K/N` of `--shard`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ShardSpec {
    /// 1-based.
    pub k: u32,
    /// The number of shards.
    pub n: u32,
}

impl std::str::FromStr for ShardSpec {
    type Err = String;
    fn from_str(text: &str) -> Result<ShardSpec, String> {
        let bad = || format!("expected K/N with 1 <= K <= N (e.g. 2/7), got `{text}`");
        let (k, n) = text.split_once('/').ok_or_else(bad)?;
        let k: u32 = k.trim().parse().map_err(|_| bad())?;
        let n: u32 = n.trim().parse().map_err(|_| bad())?;
        if k == 0 || n == 0 || k > n {
            return Err(bad());
        }
        Ok(ShardSpec { k, n })
    }
}

/// What a shard is told besides the suite.
#[derive(Debug, Clone)]
pub(crate) struct ShardOptions {
    /// K/N.
    pub spec: ShardSpec,
    /// Leave whole judges and evidence to the merge instead of refusing.
    pub defer_whole: bool,
    /// The folder overrides.
    pub overrides: Overrides,
    /// The suite folder as given (recorded for the merge).
    pub suite_path: PathBuf,
    /// The shard's run id.
    pub run_id: String,
    /// LLM mode: how the per-repo judges' models are asked (`None`: heuristic).
    pub llm: Option<crate::run::llm::LlmOptions>,
}

/// The whole parts of a suite, as refusals: one diagnostic each, naming the judge or
/// evidence, the read that needs every document, and what to do.
pub(crate) fn whole_refusals(suite: &Suite, parts: &Parts) -> Vec<Diagnostic> {
    let evidence = parts
        .evidence
        .iter()
        .filter_map(|(name, p)| Some((format!("suite evidence `{name}`"), p.why()?)));
    let judges = suite
        .judges
        .iter()
        .zip(&parts.judges)
        .filter_map(|(j, p)| Some((format!("judge `{}`", j.spec.dimension), p.why()?)));
    evidence
        .chain(judges)
        .map(|(what, why)| {
            Diagnostic::error(
                Code::WrongType,
                format!("--shard: {what} needs every document at once, so it cannot be split by repo"),
            )
            .in_file(&why.file)
            .key(&why.key)
            .note(why.to_string())
            .help("pass --defer-whole to have `caldera merge` run it, reading the inputs itself, or run the suite without --shard")
        })
        .collect()
}

/// Names of the whole parts (`evidence NAME`, `judge DIMENSION`).
fn whole_names(suite: &Suite, parts: &Parts) -> Vec<String> {
    let evidence = parts
        .evidence
        .iter()
        .filter(|(_, p)| p.why().is_some())
        .map(|(n, _)| format!("evidence {n}"));
    let judges = suite
        .judges
        .iter()
        .zip(&parts.judges)
        .filter(|(_, p)| p.why().is_some())
        .map(|(j, _)| format!("judge {}", j.spec.dimension));
    evidence.chain(judges).collect()
}

/// Runs the per-repo phase of shard K/N: reads the inputs, keeps the shard's repos, and
/// computes their records and per-repo units. Errors are input problems or suite
/// evidence that cannot be computed (as a run's).
///
/// A heuristic shard streams as a streamed run does (chunk by chunk, the other shards'
/// documents dropped as they are parsed), unless `CALDERA_NO_STREAM` is set; an LLM
/// shard holds its repos' documents, as an LLM run does. Both write the same partial.
pub(crate) fn run_shard(
    env: &Environment<'static>,
    suite: &Suite,
    options: &ShardOptions,
) -> Result<Partial, crate::run::RunError> {
    let parts = classify(suite);
    if parts.any_whole() && !options.defer_whole {
        return Err(whole_refusals(suite, &parts).into());
    }
    let spec = options.spec;
    let mine = |id: &str| shard_of(id, spec.n) == spec.k;
    let mut partial = empty_partial(suite);
    if options.llm.is_none() && !per_repo::turned_off() {
        let read = (&options.overrides, Some(&mine as Keep<'_>));
        let shells = per_repo::per_repo_streamed(env, suite, read, &mut partial)?;
        log::debug!(target: "caldera::profile", "shard {}/{} streamed", spec.k, spec.n);
        describe(&mut partial, env, suite, (&parts, options), &shells)?;
        return Ok(partial);
    }
    // Every shard keeps only its own repos' documents.
    let full = load_inputs_keeping(suite, &options.overrides, &mine)?;
    describe(&mut partial, env, suite, (&parts, options), &full)?;
    let mine = keep_shard(full, options.spec);
    partial.shard_repos = mine.results.iter().map(|d| d.id.clone()).collect();
    per_repo_phase(env, suite, &parts, &mine, &mut partial)?;
    if options.llm.is_none() {
        partial.drop_private_evidence();
    }
    crate::doc::release(mine);
    if let Some(llm) = &options.llm {
        partial.llm = Some(crate::run::shard_llm::ask_shard(
            env, suite, &parts, &partial, llm,
        )?);
    }
    Ok(partial)
}

/// What a partial says besides its records and units: the suite and shard, every repo
/// of the run in order with the inputs' fingerprint, summary and problems, the named
/// inputs, what was deferred, and (shard 1 only, once per run) the data check, which
/// reads its samples again. `inputs` is the whole read, documents or shells.
fn describe(
    partial: &mut Partial,
    env: &Environment<'static>,
    suite: &Suite,
    (parts, options): (&Parts, &ShardOptions),
    inputs: &Inputs,
) -> Result<(), crate::run::RunError> {
    let repos: Vec<String> = inputs.results.iter().map(|d| d.id.clone()).collect();
    let layout = PartialOverrides::of(&options.overrides);
    let named = inputs
        .named
        .iter()
        .map(|(k, v)| (k.clone(), Faithful(v.clone())))
        .collect();
    partial.suite_path = options.suite_path.to_string_lossy().into_owned();
    partial.inputs_fingerprint = inputs_fingerprint(&repos, &layout, &named);
    partial.shard = options.spec.k;
    partial.shards = options.spec.n;
    partial.run_id = options.run_id.clone();
    partial.overrides = layout;
    partial.repos = repos;
    partial.deferred = whole_names(suite, parts);
    partial.input_summary = super::input_summary(inputs);
    partial.input_problems = super::input_problems(inputs);
    partial.named = named;
    if options.spec.k == 1 {
        let found = super::data_check_rereading(env, suite, (inputs, &options.overrides))?;
        partial.data_problems = super::data_problems(suite, &found);
    }
    Ok(())
}

/// The inputs of shard K/N alone: its results and their ground truth (the other
/// documents are dropped here).
fn keep_shard(full: Inputs, spec: ShardSpec) -> Inputs {
    let keep = |id: &str| shard_of(id, spec.n) == spec.k;
    let results: Vec<_> = full.results.into_iter().filter(|d| keep(&d.id)).collect();
    let truth = full
        .truth
        .into_iter()
        .filter(|t| results.iter().any(|r| r.id == t.id))
        .collect();
    Inputs {
        results,
        truth,
        ..full
    }
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

/// SHA-256 over what decides a run's scores: the engine version, suite.yaml, and every
/// judge file and prompt, in suite order.
pub(crate) fn suite_fingerprint(suite: &Suite) -> String {
    let mut h = Sha256::new();
    let mut add = |label: &str, bytes: &[u8]| {
        h.update((label.len() as u64).to_be_bytes());
        h.update(label.as_bytes());
        h.update((bytes.len() as u64).to_be_bytes());
        h.update(bytes);
    };
    add("engine", env!("CARGO_PKG_VERSION").as_bytes());
    add(
        "suite.yaml",
        &std::fs::read(&suite.file).unwrap_or_default(),
    );
    for judge in &suite.judges {
        let name = judge
            .file
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        add(&name, &std::fs::read(&judge.file).unwrap_or_default());
        if let Some(prompt) = &judge.prompt {
            add("prompt", prompt.text.as_bytes());
        }
    }
    hex(&h.finalize())
}

/// SHA-256 of the inputs layout: every repo id in run order, the overrides, the named
/// inputs.
fn inputs_fingerprint(
    repos: &[String],
    layout: &PartialOverrides,
    named: &IndexMap<String, Faithful>,
) -> String {
    let doc = serde_json::json!({ "repos": repos, "overrides": layout, "named": named });
    hex(&Sha256::digest(
        serde_json::to_string(&doc).unwrap_or_default().as_bytes(),
    ))
}

impl PartialOverrides {
    /// The overrides as written on the command line.
    pub(crate) fn of(o: &Overrides) -> PartialOverrides {
        let text = |p: &Path| p.to_string_lossy().into_owned();
        PartialOverrides {
            results: o.results.as_deref().map(text),
            ground_truth: o.ground_truth.as_deref().map(text),
            inputs: o
                .inputs
                .iter()
                .map(|(k, v)| (k.clone(), v.as_deref().map(text)))
                .collect(),
        }
    }

    /// Back to overrides, for a merge that reads the inputs.
    pub(crate) fn to_overrides(&self) -> Overrides {
        Overrides {
            results: self.results.as_ref().map(PathBuf::from),
            ground_truth: self.ground_truth.as_ref().map(PathBuf::from),
            inputs: self
                .inputs
                .iter()
                .map(|(k, v)| (k.clone(), v.as_ref().map(PathBuf::from)))
                .collect(),
            repos: Vec::new(),
        }
    }
}

/// The partials of one run, checked to belong together, each with its file.
#[derive(Debug)]
pub(crate) struct Checked {
    /// In shard order (1..N).
    pub partials: Vec<(PathBuf, Partial)>,
}

/// Checks that `partials` come from the same suite, the same N and the same inputs
/// layout, that every K in 1..N is there exactly once, and that their repos are the
/// partition of the full id list. One message per problem, naming the file.
pub(crate) fn check(partials: Vec<(PathBuf, Partial)>) -> Result<Checked, Vec<String>> {
    let Some((first_path, first)) = partials.first() else {
        return Err(vec!["no partial result given".to_owned()]);
    };
    let shown = |p: &Path| crate::diag::display_path(p);
    let mut errors = Vec::new();
    for (path, p) in &partials[1..] {
        let mismatch = |what: &str| {
            format!(
                "{} is not of the same run as {}: its {what} differs",
                shown(path),
                shown(first_path)
            )
        };
        if p.suite != first.suite || p.suite_fingerprint != first.suite_fingerprint {
            errors.push(mismatch(
                "suite (suite.yaml, judges, prompts or engine version)",
            ));
        } else if p.shards != first.shards {
            errors.push(format!(
                "{} is shard {}/{} but {} is shard {}/{}: every shard must split the run into the same N",
                shown(path), p.shard, p.shards, shown(first_path), first.shard, first.shards
            ));
        } else if p.inputs_fingerprint != first.inputs_fingerprint || p.repos != first.repos {
            errors.push(mismatch(
                "inputs layout (repo ids, folders or named inputs)",
            ));
        } else if p.deferred != first.deferred {
            errors.push(mismatch("set of deferred whole parts"));
        } else if let Some((what, theirs, ours)) =
            crate::run::shard_llm::difference(first.llm.as_ref(), p.llm.as_ref())
        {
            errors.push(format!(
                "{} is not of the same run as {}: it was scored with {what} {ours}, the other with {what} {theirs}",
                shown(path),
                shown(first_path)
            ));
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    let n = first.shards;
    let mut by_k: Vec<Vec<&PathBuf>> = vec![Vec::new(); n as usize];
    for (path, p) in &partials {
        if p.shard == 0 || p.shard > n {
            errors.push(format!(
                "{}: shard {}/{n} is out of range",
                shown(path),
                p.shard
            ));
            continue;
        }
        by_k[(p.shard - 1) as usize].push(path);
        if let Some(stray) = p.shard_repos.iter().find(|id| shard_of(id, n) != p.shard) {
            errors.push(format!(
                "{}: repo `{stray}` does not belong to shard {}/{n} (it belongs to {}/{n})",
                shown(path),
                p.shard,
                shard_of(stray, n)
            ));
        }
        let expected: Vec<&String> = p
            .repos
            .iter()
            .filter(|id| shard_of(id, n) == p.shard)
            .collect();
        if p.shard_repos.iter().collect::<Vec<_>>() != expected {
            errors.push(format!(
                "{}: its repos are not exactly those of shard {}/{n} ({} listed, {} expected)",
                shown(path),
                p.shard,
                p.shard_repos.len(),
                expected.len()
            ));
        }
    }
    for (i, files) in by_k.iter().enumerate() {
        match files.as_slice() {
            [] => errors.push(format!("shard {}/{n} is missing", i + 1)),
            [_] => {}
            many => errors.push(format!(
                "shard {}/{n} is given more than once: {}",
                i + 1,
                many.iter().map(|p| shown(p)).collect::<Vec<_>>().join(", ")
            )),
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    let mut partials = partials;
    partials.sort_by_key(|(_, p)| p.shard);
    Ok(Checked { partials })
}

/// The aggregate phase over checked partials: every record in the single run's repo
/// order, every other piece of suite evidence and every other judge (whole ones from the
/// inputs, read here), scored by heuristic, assembled as a single run's result.
pub(crate) fn merge(
    env: &Environment<'static>,
    suite: &Suite,
    checked: &Checked,
    options: &super::RunOptions,
    llm: Option<&crate::run::llm::LlmOptions>,
) -> Result<RunResult, crate::run::RunError> {
    let started = std::time::Instant::now();
    let (_, first) = &checked.partials[0];
    let fingerprint = suite_fingerprint(suite);
    if fingerprint != first.suite_fingerprint {
        return Err(Diagnostic::error(
            Code::WrongType,
            format!(
                "the suite at {} changed since the shards ran (suite.yaml, a judge or a prompt differs): run the shards again",
                first.suite_path
            ),
        )
        .into());
    }
    let parts = classify(suite);
    let inputs = if parts.any_whole() {
        Some(whole_inputs(suite, first)?)
    } else {
        None
    };
    let mut ctx = match &inputs {
        Some(inputs) => build_context(suite, inputs),
        None => stub_context(suite, first),
    };
    for (((name, _), (_, part)), i) in suite.evidence.iter().zip(&parts.evidence).zip(0..) {
        if *part == Part::PerRepo {
            ctx.names
                .insert(name.clone(), merged_records(name, checked));
            continue;
        }
        let entry = std::slice::from_ref(&suite.evidence[i]);
        let value = evaluate(env, entry, &ctx).map_err(|e| vec![evidence_error(suite, &e)])?;
        ctx.names.extend(value);
    }
    let units: Vec<Vec<Unit>> = suite
        .judges
        .iter()
        .zip(&parts.judges)
        .map(|(plan, part)| match part {
            Part::PerRepo => merged_units(&plan.spec.dimension, checked),
            _ => prepare(env, plan, &ctx),
        })
        .collect();
    let run_id = options.run_id.clone().unwrap_or_else(super::new_run_id);
    let (mode, scored) = match llm {
        None => (RunMode::Heuristic, super::heuristic(suite, &units)),
        Some(opts) => (
            RunMode::Llm,
            crate::run::shard_llm::score_merged(
                env,
                suite,
                &parts,
                &units,
                &checked.partials,
                opts,
            )?,
        ),
    };
    let mut result = super::assemble_from(
        suite,
        (first.input_summary.clone(), first.input_problems.clone()),
        scored,
        (mode, run_id),
        options,
        started,
    );
    result.suite_evidence = suite_evidence(suite, &ctx);
    result
        .summary
        .problems
        .extend(first.data_problems.iter().cloned());
    result.shards = checked
        .partials
        .iter()
        .map(|(p, _)| crate::diag::display_path(p))
        .collect();
    result.duration_ms = started.elapsed().as_millis() as u64;
    crate::doc::release((ctx, units, inputs));
    Ok(result)
}

/// The context of a merge without documents: `suite` and the named inputs.
fn stub_context(suite: &Suite, first: &Partial) -> Context {
    let empty = Inputs {
        results_dir: PathBuf::new(),
        truth_dir: None,
        results: Vec::new(),
        truth: Vec::new(),
        named: first
            .named
            .iter()
            .map(|(k, v)| (k.clone(), v.0.clone()))
            .collect(),
        bytes: 0,
        skipped: Vec::new(),
    };
    let mut ctx = build_context(suite, &empty);
    for name in crate::load::parts::DOCUMENT_NAMES {
        ctx.names.shift_remove(name);
    }
    ctx
}

/// The inputs a merge with deferred whole parts reads: the shards' own, which must still
/// list the same repos in the same order. The folders a partial names are held to the
/// project as a suite's own are (the partial, not the user, names them here), unless the
/// merge is told `--allow-outside-root`.
fn whole_inputs(suite: &Suite, first: &Partial) -> Result<Inputs, Vec<Diagnostic>> {
    let deferred = first.deferred.join(", ");
    let overrides = first.overrides.to_overrides();
    let inputs = load_case_inputs(suite, &overrides).map_err(|mut d| {
        d.push(Diagnostic::error(
            Code::MissingPath,
            format!("merge: the whole parts left to the merge ({deferred}) need the inputs the shards read, and they cannot be read here"),
        ));
        d
    })?;
    let ids: Vec<&String> = inputs.results.iter().map(|d| &d.id).collect();
    if ids != first.repos.iter().collect::<Vec<_>>() {
        return Err(vec![Diagnostic::error(
            Code::WrongType,
            format!(
                "merge: the inputs here list other repos than the shards read ({} here, {} in the shards); the whole parts ({deferred}) would judge other data",
                ids.len(),
                first.repos.len()
            ),
        )]);
    }
    Ok(inputs)
}

/// A per-repo record list over every repo, in run order.
fn merged_records(name: &str, checked: &Checked) -> Doc {
    let (_, first) = &checked.partials[0];
    let n = first.shards;
    let mut out = Vec::new();
    for id in &first.repos {
        let (_, p) = &checked.partials[(shard_of(id, n) - 1) as usize];
        if let Some(records) = p.records.get(name).and_then(|m| m.get(id)) {
            out.extend(records.iter().map(|r| r.0.clone()));
        }
    }
    Doc::from(out)
}

/// A per-repo judge's units over every repo, in run order.
fn merged_units(dimension: &str, checked: &Checked) -> Vec<Unit> {
    let (_, first) = &checked.partials[0];
    let by_repo: std::collections::HashMap<&str, &PartialUnit> = checked
        .partials
        .iter()
        .filter_map(|(_, p)| p.units.get(dimension))
        .flatten()
        .map(|u| (u.repo.as_str(), u))
        .collect();
    first
        .repos
        .iter()
        .filter_map(|id| by_repo.get(id.as_str()).map(|u| u.to_unit()))
        .collect()
}

/// Problems of a shard worth a line in its summary: units in error.
pub(crate) fn unit_errors(partial: &Partial) -> usize {
    partial
        .units
        .values()
        .flatten()
        .filter(|u| {
            u.evidence.is_err()
                || matches!(
                    u.heuristic,
                    crate::verdict::heuristic::HeuristicOutcome::Error(_)
                )
        })
        .count()
}

#[cfg(test)]
mod tests {
    use super::ShardSpec;

    #[test]
    fn shard_spec_takes_k_of_n_with_k_between_1_and_n() {
        assert_eq!("2/7".parse(), Ok(ShardSpec { k: 2, n: 7 }));
        assert_eq!("1/1".parse(), Ok(ShardSpec { k: 1, n: 1 }));
        for bad in ["0/3", "4/3", "3", "a/b", "1/0", "-1/2", ""] {
            assert!(bad.parse::<ShardSpec>().is_err(), "{bad} is refused");
        }
    }
}
