//! `caldera run`: validate the suite, read its inputs, judge every dimension, write the
//! JSON result and the reports asked for, and map the outcome to an exit status.

use std::path::{Path, PathBuf};

use clap::Args;
use minijinja::Environment;

use crate::cli::output::{self, Dest};
use crate::cli::report::{ReportOptions, baseline, regression_line, write_all};
use crate::cli::{Exit, stderr_color};
use crate::diag::render_text;
use crate::load::inputs::Overrides;
use crate::load::suite::Suite;
use crate::report;
use crate::report::model::Report;
use crate::run::llm::LlmOptions;
use crate::run::partial::{self, Partial};
use crate::run::result::RunResult;
use crate::run::shard::{self, ShardOptions, ShardSpec};
use crate::run::{Run, RunError, RunOptions, ScoreSource};
use crate::verdict::decision::{Decision, FAIL, NO_SCORE};
use crate::verdict::gate::Gate;
use crate::view::run::{Format, Input};

pub(crate) use crate::cli::llm_args::ProviderArg;

/// Arguments of `caldera run`.
#[derive(Debug, Args)]
pub(crate) struct RunArgs {
    /// The suite: its folder (judges.d/trivy) or its suite.yaml.
    #[arg(value_name = "SUITE")]
    pub suite: PathBuf,
    /// Only this judge (its dimension name; repeatable). The weighted score is over the
    /// judges run.
    #[arg(long = "judge", value_name = "DIMENSION")]
    pub judges: Vec<String>,
    /// Only this repo (its id; repeatable): the other results and ground truth are not read.
    #[arg(long = "repo", value_name = "ID")]
    pub repos: Vec<String>,
    /// Score with each judge's heuristic only: no model, no network.
    #[arg(long, conflicts_with = "repeat")]
    pub heuristic: bool,
    /// Analysis results folder (overrides suite.yaml's inputs.results).
    #[arg(long, value_name = "DIR")]
    pub results: Option<PathBuf>,
    /// Ground-truth folder (overrides suite.yaml's inputs.ground_truth).
    #[arg(long, value_name = "DIR")]
    pub ground_truth: Option<PathBuf>,
    /// A named input of the suite read from FILE for this run (repeatable), e.g.
    /// `--input baseline=runs/last.json`; `NAME=` runs without it (null to judges).
    #[arg(long = "input", value_name = "NAME=FILE", value_parser = parse_named_input)]
    pub inputs: Vec<(String, Option<PathBuf>)>,
    /// Where to write the JSON result [default: results/<suite>/<run id>.json]; `-` prints
    /// it on stdout instead of the table.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Compare with this earlier result of the suite: deltas in the reports, and
    /// `--fail-on regression` to gate on them.
    #[arg(long, value_name = "BASE.json", help_heading = "Reports")]
    pub baseline: Option<PathBuf>,
    /// Report formats and their destinations.
    #[command(flatten)]
    pub report: ReportOptions,
    /// Exit 1 when the score the decision rests on (exact, never rounded) is below this
    /// value; the bar then stands in for the decision table. Without it, exit 1 when the
    /// decision is FAIL or no judge scored. Errors and low coverage fail the run either way.
    #[arg(long, value_name = "SCORE", value_parser = parse_score)]
    pub fail_under: Option<f64>,
    /// A judge that ends in `error` does not fail the run by itself (it still counts at
    /// the lowest score in the score the decision rests on). Same as the suite's
    /// `allow_errors: true`.
    #[arg(long)]
    pub allow_errors: bool,
    /// Print the JSON result on stdout instead of the table (as `--format json`).
    #[arg(long)]
    pub json: bool,
    /// The LLM mode flags, shared with `caldera merge`.
    #[command(flatten)]
    pub llm: crate::cli::llm_args::LlmArgs,
    /// Per-repo scores of `scope: repo` judges in the table; in LLM mode, explain cache
    /// misses too.
    #[arg(short, long)]
    pub verbose: bool,
    /// Run shard K of N (1 <= K <= N): only the repos whose id hashes to K, per-repo
    /// work only, written as a partial result (default
    /// results/<suite>/<run id>.shard-K-of-N.json) for `caldera merge`. In LLM mode the
    /// shard asks its repos' `scope: repo` judges; the merge asks the others.
    #[arg(long, value_name = "K/N", help_heading = "Shards")]
    pub shard: Option<crate::run::shard::ShardSpec>,
    /// With --shard: leave judges and evidence that need every document at once to
    /// `caldera merge`, which reads the inputs itself, instead of refusing the suite.
    #[arg(long, requires = "shard", help_heading = "Shards")]
    pub defer_whole: bool,
    /// Project root and confinement.
    #[command(flatten)]
    pub root: crate::cli::RootArgs,
}

/// `--fail-under`: a finite score on the 1-5 scale (NaN would never be "below", 99
/// would fail every run, -5 none).
pub(crate) fn parse_score(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(x) if (1.0..=5.0).contains(&x) => Ok(x),
        Ok(x) => Err(format!("the score must be between 1 and 5, got {x}")),
        Err(_) => Err(format!("expected a number between 1 and 5, got `{text}`")),
    }
}

/// `NAME=FILE` of `--input`; `NAME=` (no file) runs without that input, as if an optional
/// file were missing.
pub(crate) fn parse_named_input(text: &str) -> Result<(String, Option<PathBuf>), String> {
    match text.split_once('=') {
        Some((name, path)) if !name.is_empty() => Ok((
            name.to_owned(),
            (!path.is_empty()).then(|| PathBuf::from(path)),
        )),
        _ => Err(format!(
            "expected NAME=FILE (a named input of suite.yaml and a JSON file) or NAME= (without it), got `{text}`"
        )),
    }
}

/// Runs the command.
pub(crate) fn execute(args: RunArgs) -> Exit {
    if let Err(e) = args.report.check(args.out.as_deref()) {
        eprintln!("error: {e}");
        return Exit::Error;
    }
    if let Some(k) = args.llm.settle.filter(|k| *k >= args.llm.repeat) {
        eprintln!(
            "error: --settle {k} needs more repeats than that: with --repeat {} every ask \
             is among the first {k}; use --repeat above {k}",
            args.llm.repeat
        );
        return Exit::Error;
    }
    let Some(suite_dir) = suite_dir(&args.suite) else {
        return Exit::Error;
    };
    let env = crate::render::environment();
    let Some(suite) = crate::cli::load_valid_suite(&suite_dir, &env, &args.root.options(), "run")
    else {
        return Exit::Error;
    };
    let Some(suite) = select_judges(suite, &args.judges) else {
        return Exit::Error;
    };
    let overrides = Overrides {
        results: args.results.clone(),
        ground_truth: args.ground_truth.clone(),
        inputs: args.inputs.iter().cloned().collect(),
        repos: args.repos.clone(),
    };
    if let Err(why) = check_outputs(&args, &suite, &overrides) {
        eprintln!("error: {why}; nothing was run");
        return Exit::Error;
    }
    if let Some(spec) = args.shard {
        return run_shard(&args, spec, &env, &suite, overrides);
    }
    // One id names the result and, in LLM mode, the interaction log beside it, before
    // the run starts writing either.
    let run_id = crate::run::new_run_id();
    let out = args
        .out
        .clone()
        .filter(|o| o.as_os_str() != "-")
        .unwrap_or_else(|| report::json::result_path(&suite.spec.suite, &run_id));
    let options = RunOptions {
        overrides,
        allow_errors: args.allow_errors,
        run_id: Some(run_id),
    };
    let outcome = if args.heuristic {
        crate::run::run(&env, &suite, ScoreSource::Heuristic, &options)
    } else {
        let Some(llm) = llm_options(&args, &out, options.clone()) else {
            return Exit::Error;
        };
        crate::run::run(&env, &suite, ScoreSource::Models(&llm), &options)
    };
    let run = match outcome {
        Ok(run) => run,
        Err(RunError::Interrupted(message)) => {
            eprintln!("{message}");
            return Exit::Interrupted;
        }
        Err(RunError::Invalid(diags)) => {
            eprint!("{}", render_text(&diags, stderr_color()));
            eprintln!("error: the run could not start; nothing was judged");
            return Exit::Error;
        }
    };
    print_profile(&run);
    let mut args = args;
    if !args.heuristic {
        // The result goes where the interaction log already says it is.
        args.out.get_or_insert(out);
    }
    finish(&run.result, &args)
}

/// The options of an LLM run: the interaction log goes beside the result unless `--log`
/// says where (its folder is created). `None` when that folder cannot be made.
/// `caldera run --shard K/N`: the per-repo phase of the shard's repos, written as a
/// partial result: in LLM mode with the verdicts of its repos' `scope: repo` judges.
/// `--judge` and `--repo` would make the shards of one run disagree, so they are
/// refused with it.
pub(crate) fn run_shard(
    args: &RunArgs,
    spec: ShardSpec,
    env: &Environment<'static>,
    suite: &Suite,
    overrides: Overrides,
) -> Exit {
    let refused = if !args.judges.is_empty() || !args.repos.is_empty() {
        Some(
            "--shard splits the whole suite over every repo: --judge and --repo cannot be used with it",
        )
    } else if args.baseline.is_some()
        || !args.report.format.is_empty()
        || args.report.out_dir.is_some()
        || args.fail_under.is_some()
    {
        Some(
            "a shard writes a partial result only: reports, baselines and gates belong to `caldera merge`",
        )
    } else {
        None
    };
    if let Some(why) = refused {
        eprintln!("error: {why}");
        return Exit::Error;
    }
    let run_id = crate::run::new_run_id();
    let out = args.out.clone().unwrap_or_else(|| {
        PathBuf::from("results")
            .join(&suite.spec.suite)
            .join(format!("{run_id}.shard-{}-of-{}.json", spec.k, spec.n))
    });
    let llm = if args.heuristic {
        None
    } else {
        // The interaction log goes beside the partial (`--out -`: where it would be).
        let beside = PathBuf::from("results")
            .join(&suite.spec.suite)
            .join(format!("{run_id}.shard-{}-of-{}.json", spec.k, spec.n));
        let named = Some(&out)
            .filter(|o| o.as_os_str() != "-")
            .unwrap_or(&beside);
        let run = RunOptions {
            overrides: overrides.clone(),
            allow_errors: args.allow_errors,
            run_id: Some(run_id.clone()),
        };
        let Some(llm) = llm_options(args, named, run) else {
            return Exit::Error;
        };
        Some(llm)
    };
    let options = ShardOptions {
        spec,
        defer_whole: args.defer_whole,
        overrides,
        suite_path: args.suite.clone(),
        run_id,
        llm,
    };
    let partial = match shard::run_shard(env, suite, &options) {
        Ok(p) => p,
        Err(RunError::Interrupted(message)) => {
            eprintln!("{message}");
            return Exit::Interrupted;
        }
        Err(RunError::Invalid(diags)) => {
            eprint!("{}", render_text(&diags, stderr_color()));
            eprintln!("error: shard {}/{} was not run", spec.k, spec.n);
            return Exit::Error;
        }
    };
    if out.as_os_str() == "-" {
        return match partial::to_text(&partial) {
            Ok(text) => {
                output::println(&text);
                Exit::Pass
            }
            Err(e) => {
                eprintln!("error: cannot write the partial result: {e}");
                Exit::Error
            }
        };
    }
    if let Err(e) = write_partial(&partial, &out) {
        eprintln!(
            "error: cannot write the partial result to {}: {e}",
            out.display()
        );
        return Exit::Error;
    }
    print_shard_summary(&partial, &out);
    Exit::Pass
}

fn write_partial(partial: &Partial, out: &std::path::Path) -> Result<(), String> {
    let text = partial::to_text(partial)?;
    crate::outfile::write_atomic(out, text.as_bytes()).map_err(|e| e.to_string())
}

/// A few lines: what the shard covered, what it left to the merge, and its errors.
fn print_shard_summary(p: &Partial, out: &std::path::Path) {
    if output::quiet() {
        return;
    }
    let mut text = format!(
        "shard {}/{} of suite `{}`: {} of {} repos, {} per-repo record list(s), {} per-repo judge(s)\n",
        p.shard,
        p.shards,
        p.suite,
        p.shard_repos.len(),
        p.repos.len(),
        p.records.len(),
        p.units.len()
    );
    if let Some(llm) = &p.llm {
        let unscored = llm
            .outcomes
            .iter()
            .filter(|o| o.outcome.scored().is_none())
            .count();
        text.push_str(&format!(
            "  {} per-repo model call(s), {unscored} without a verdict; the suite judges' calls are left to the merge\n",
            llm.outcomes.len()
        ));
    }
    let errors = shard::unit_errors(p);
    if errors > 0 {
        text.push_str(&format!(
            "  {errors} per-repo verdict(s) in error: `caldera merge` carries them into the result\n"
        ));
    }
    if !p.deferred.is_empty() {
        text.push_str(&format!(
            "  left to the merge (--defer-whole): {}\n",
            p.deferred.join(", ")
        ));
    }
    text.push_str(&format!("  partial result written to {}\n", out.display()));
    output::print(&text);
}

pub(crate) fn llm_options(args: &RunArgs, out: &Path, run: RunOptions) -> Option<LlmOptions> {
    let log = args
        .llm
        .log
        .clone()
        .unwrap_or_else(|| out.with_extension("interactions.jsonl"));
    if let Some(dir) = log.parent().filter(|d| !d.as_os_str().is_empty())
        && let Err(e) = std::fs::create_dir_all(dir)
    {
        eprintln!("error: cannot create {}: {e}", dir.display());
        return None;
    }
    let mut models = args.llm.choice.models.clone();
    if let Some(m) = &args.llm.choice.model {
        models = vec![m.clone()];
    }
    Some(LlmOptions {
        overrides: run.overrides,
        provider: args.llm.choice.provider.map(Into::into),
        models,
        concurrency: args.llm.concurrency,
        cache: args.llm.cache.cache.into(),
        cache_dir: args.llm.cache.cache_dir.clone(),
        replay: args.llm.cache.replay,
        max_cost: args.llm.max_cost,
        log: Some(log),
        timeout: std::time::Duration::from_secs(args.llm.timeout.max(1)),
        progress: !(args.json || output::quiet()),
        verbose: args.verbose,
        run_id: run.run_id,
        allow_errors: run.allow_errors,
        repeat: args.llm.repeat,
        batch: args.llm.batch,
        panel_matrices: args.llm.panel_matrices,
        settle: args.llm.settle,
    })
}

/// With `CALDERA_PROFILE` set, when each phase of the run ended, on stderr.
fn print_profile(run: &Run) {
    if std::env::var_os("CALDERA_PROFILE").is_none() {
        return;
    }
    for phase in &run.phases {
        eprintln!(
            "profile: phase {}: {:.1} ms",
            phase.name,
            phase.at.as_secs_f64() * 1e3
        );
    }
}

/// The result and the log go where they were asked to, and nowhere they would destroy or
/// pollute: not onto each other, not onto a named input, not into the results or
/// ground-truth folder (the next run would read them as tool output), and only over
/// regular files.
fn check_outputs(args: &RunArgs, suite: &Suite, overrides: &Overrides) -> Result<(), String> {
    let results = overrides
        .results
        .clone()
        .unwrap_or_else(|| suite.dir.join(&suite.spec.inputs.results.folder));
    let truth = overrides.ground_truth.clone().or_else(|| {
        suite
            .spec
            .inputs
            .ground_truth
            .as_ref()
            .map(|g| suite.dir.join(&g.folder))
    });
    let mut inputs: Vec<(String, PathBuf)> = vec![("the results folder".into(), results)];
    inputs.extend(truth.map(|t| ("the ground-truth folder".into(), t)));
    for (name, input) in &suite.spec.inputs.files {
        let path = match overrides.inputs.get(name) {
            Some(p) => p.clone(),
            None => input.file.as_ref().map(|f| suite.dir.join(f)),
        };
        inputs.extend(path.map(|p| (format!("named input `{name}`"), p)));
    }
    // Without --out the result goes under results/<suite>/: that folder too must not be
    // one the run reads, or the next run would read this result as a repo.
    let default_out = PathBuf::from("results").join(&suite.spec.suite);
    let mut outputs: Vec<(&str, &PathBuf)> = Vec::new();
    outputs.extend(args.out.as_ref().map(|o| ("--out", o)));
    if args.out.is_none() {
        outputs.push(("the default result folder", &default_out));
    }
    if !args.heuristic {
        outputs.extend(args.llm.log.as_ref().map(|l| ("--log", l)));
    }
    for (flag, out) in &outputs {
        // The default result folder is a folder: only where it lies is checked.
        if let (true, Some(why)) = (*out != &default_out, crate::outfile::refuse_target(out)) {
            return Err(format!("{flag}: {why}"));
        }
        for (what, input) in &inputs {
            if crate::outfile::same_or_inside(out, input) {
                return Err(format!(
                    "{flag} {} would write over or into {what} ({})",
                    out.display(),
                    input.display()
                ));
            }
        }
    }
    check_out_dir(args, suite, &inputs)?;
    if let (Some(out), Some(log)) = (&args.out, &args.llm.log)
        && !args.heuristic
        && crate::outfile::same_or_inside(out, log)
    {
        return Err(format!(
            "--out and --log name the same file ({})",
            out.display()
        ));
    }
    Ok(())
}

/// `--out-dir`: no report may land on or inside an input (the folder, or a link to it,
/// inside the results folder would have the next run read the reports as tool output).
fn check_out_dir(
    args: &RunArgs,
    suite: &Suite,
    inputs: &[(String, PathBuf)],
) -> Result<(), String> {
    let Some(dir) = &args.report.out_dir else {
        return Ok(());
    };
    for format in args.report.formats(Format::Table) {
        let file = crate::cli::report::out_dir_file(dir, &suite.spec.suite, format);
        if let Some((what, input)) = inputs
            .iter()
            .find(|(_, input)| crate::outfile::same_or_inside(&file, input))
        {
            return Err(format!(
                "--out-dir {} would write {} over or into {what} ({})",
                dir.display(),
                file.display(),
                input.display()
            ));
        }
    }
    Ok(())
}

/// Writes the result and the reports; maps the outcome to an exit status.
pub(crate) fn finish(result: &RunResult, args: &RunArgs) -> Exit {
    let dest = args
        .out
        .as_deref()
        .map_or_else(|| Dest::File(report::json::default_path(result)), Dest::of);
    // Serialized once: the file and the report are read from the same text.
    let text = report::json::to_text(result);
    if let Dest::File(path) = &dest
        && let Err(e) = report::json::write_atomic(path, text.as_bytes())
    {
        eprintln!("error: cannot write the result to {}: {e}", path.display());
        // The result must not be lost: print it instead.
        output::print(&text);
        return Exit::Error;
    }
    let report = match Report::from_text(text) {
        Ok(r) => r,
        Err(e) => {
            // The JSON result is written; only its rendering failed.
            eprintln!("error: the result was written but cannot be reported: {e}");
            return Exit::Error;
        }
    };
    let comparison = match args.baseline.as_deref() {
        Some(b) => match baseline(b, &report, args.report.tolerance) {
            Some(c) => Some(c),
            None => {
                if dest == Dest::Stdout {
                    output::print(&report::json::to_text(result));
                }
                return Exit::Error;
            }
        },
        None => None,
    };
    let input = Input {
        report: &report,
        comparison: comparison.as_ref(),
        diff_only: false,
        per_repo: args.verbose,
    };
    if let Err(e) = print_reports(&input, args, &dest) {
        eprintln!("error: {e}");
        return Exit::Error;
    }
    gate(result, &report, args, comparison.as_ref())
}

/// The reports of a finished run: the JSON on stdout for `--out -` or `--json`; every
/// `--format` to `--out-dir`; else the one format (the table by default) on stdout.
fn print_reports(input: &Input<'_>, args: &RunArgs, dest: &Dest) -> Result<(), String> {
    if *dest == Dest::Stdout || args.json {
        output::print(&Format::Json.reporter().render(input));
        if args.report.out_dir.is_none() {
            return Ok(());
        }
    }
    let formats = args.report.formats(Format::Table);
    if let Some(dir) = &args.report.out_dir {
        write_all(input, &formats, Some(dir), &Dest::Stdout)?;
        return Ok(());
    }
    if formats == [Format::Table] && output::quiet() {
        return Ok(());
    }
    write_all(input, &formats, None, &Dest::Stdout)?;
    if let (Dest::File(path), [Format::Table]) = (dest, formats.as_slice())
        && !output::quiet()
    {
        output::println(&format!("\n  result written to {}", path.display()));
    }
    Ok(())
}

/// The exit status, with one line on stderr saying why when it is not a pass: a run left
/// without scores by its budget or replay misses (3) before a regression or a failing
/// gate or score (1). With `--fail-under`, the bar stands in for the decision table;
/// the gates (no score, errors, coverage) fail the run either way. The bar is read
/// against the exact score the decision rests on, never a rounded one.
fn gate(
    result: &RunResult,
    report: &Report,
    args: &RunArgs,
    comparison: Option<&report::compare::Comparison>,
) -> Exit {
    let (exit, message) = exit_of(
        &result.decision,
        &result.gate,
        report.incomplete(),
        regression_line(comparison, args.report.fail_on),
        args.fail_under,
    );
    if let Some(message) = message {
        // Dimension and repo names from the run reach this line.
        eprintln!("{}", crate::diag::printable_line(&message));
    }
    exit
}

/// The exit status of a finished run and the line that says why, when it is not a pass.
/// In order: an incomplete run (`incomplete`, why) exits 3; a regression (`regression`,
/// its line) exits 1; a gate (errors, coverage) or `NO_SCORE` exits 1 whatever the
/// score; then `--fail-under` (`fail_under`) replaces the decision table: the exact
/// decision score must reach it; without it a `FAIL` decision exits 1.
fn exit_of(
    decision: &Decision,
    gate: &Gate,
    incomplete: Option<String>,
    regression: Option<String>,
    fail_under: Option<f64>,
) -> (Exit, Option<String>) {
    if let Some(reason) = incomplete {
        return (Exit::Incomplete, Some(reason));
    }
    if let Some(line) = regression {
        return (Exit::Below, Some(line));
    }
    let safe = crate::diag::printable_line;
    let gated = gate.blocked || *decision == NO_SCORE;
    let score = gate.decision_score;
    let below_bar =
        fail_under.is_some_and(|min| score.is_none_or(|s| !crate::score::reaches(s, min)));
    if gated || (fail_under.is_none() && *decision == FAIL) {
        let line = format!("{}: {}", safe(decision.as_str()), safe(&gate.reason));
        return (Exit::Below, Some(line));
    }
    if let (true, Some(min)) = (below_bar, fail_under) {
        let shown = score.map_or_else(
            || "no score (no judge scored)".to_owned(),
            |s| format!("score {s:.2} (exactly {s})"),
        );
        let line = format!(
            "{}: {shown} is below --fail-under {min}",
            safe(decision.as_str())
        );
        return (Exit::Below, Some(line));
    }
    (Exit::Pass, None)
}

/// The suite folder of `path`: the folder itself, or the folder of a `suite.yaml`.
fn suite_dir(path: &Path) -> Option<PathBuf> {
    if !path.is_file() {
        return Some(path.to_owned());
    }
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default();
    if name == "suite.yaml" || name == "suite.yml" {
        return Some(
            path.parent()
                .filter(|p| !p.as_os_str().is_empty())
                .map_or_else(|| PathBuf::from("."), Path::to_owned),
        );
    }
    eprintln!(
        "error: {} is a file but not a suite.yaml; give the suite's folder or its suite.yaml",
        path.display()
    );
    None
}

/// Keeps the judges named by `--judge` (all when none); an unknown name is an error with
/// a did-you-mean.
fn select_judges(mut suite: Suite, names: &[String]) -> Option<Suite> {
    if names.is_empty() {
        return Some(suite);
    }
    let known: Vec<String> = suite
        .judges
        .iter()
        .map(|j| j.spec.dimension.clone())
        .collect();
    let mut ok = true;
    for name in names {
        if !known.contains(name) {
            ok = false;
            eprintln!(
                "error: the suite has no judge `{name}`{}",
                crate::diag::did_you_mean_help(name, known.iter().map(String::as_str))
                    .map_or(String::new(), |h| format!("; {h}"))
            );
        }
    }
    suite.judges.retain(|j| names.contains(&j.spec.dimension));
    ok.then_some(suite)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A gate with the given score, not blocked unless asked.
    fn gate_of(score: Option<f64>, blocked: bool, reason: &str) -> Gate {
        Gate {
            decision_score: score,
            units: 4,
            scored_units: 4,
            coverage: 1.0,
            min_coverage: 0.5,
            errors: Vec::new(),
            errors_allowed: false,
            blocked,
            reason: reason.to_owned(),
            bars: vec![0.7],
        }
    }

    fn label(l: &str) -> Decision {
        Decision::Label(l.to_owned())
    }

    fn exit(decision: &Decision, gate: &Gate, fail_under: Option<f64>) -> (Exit, Option<String>) {
        exit_of(decision, gate, None, None, fail_under)
    }

    #[test]
    fn a_pass_decision_exits_0_without_a_line() {
        let g = gate_of(Some(0.8), false, "0.80 reaches PASS (0.7)");
        assert_eq!(exit(&label("PASS"), &g, None), (Exit::Pass, None));
    }

    #[test]
    fn a_fail_decision_exits_1_with_its_reason() {
        let g = gate_of(Some(0.3), false, "0.30 reaches no row above FAIL");
        assert_eq!(
            exit(&label("FAIL"), &g, None),
            (
                Exit::Below,
                Some("FAIL: 0.30 reaches no row above FAIL".to_owned())
            )
        );
    }

    #[test]
    fn no_score_exits_1_with_or_without_a_bar() {
        let g = gate_of(None, false, "no judge scored");
        let line = Some("NO_SCORE: no judge scored".to_owned());
        assert_eq!(
            exit(&Decision::NoScore, &g, None),
            (Exit::Below, line.clone())
        );
        assert_eq!(exit(&Decision::NoScore, &g, Some(0.5)), (Exit::Below, line));
        // A label that reads NO_SCORE is the same decision.
        assert_eq!(exit(&label("NO_SCORE"), &g, None).0, Exit::Below);
    }

    #[test]
    fn a_blocked_gate_exits_1_even_when_the_bar_is_met() {
        let g = gate_of(Some(0.9), true, "judge `x` is in error");
        let line = Some("FAIL: judge `x` is in error".to_owned());
        assert_eq!(
            exit(&Decision::Blocked, &g, Some(0.5)),
            (Exit::Below, line.clone())
        );
        assert_eq!(exit(&Decision::Blocked, &g, None), (Exit::Below, line));
        // The gate decides, not the label beside it.
        assert_eq!(
            exit(&label("PASS"), &g, Some(0.5)),
            (Exit::Below, Some("PASS: judge `x` is in error".to_owned()))
        );
    }

    #[test]
    fn the_bar_replaces_the_decision_table() {
        // FAIL by the table, but 0.6 reaches --fail-under 0.5.
        let g = gate_of(Some(0.6), false, "0.60 is below PASS (0.7)");
        assert_eq!(exit(&label("FAIL"), &g, Some(0.5)), (Exit::Pass, None));
        // PASS by the table, but 0.6 is below --fail-under 0.65.
        assert_eq!(
            exit(&label("PASS"), &g, Some(0.65)),
            (
                Exit::Below,
                Some("PASS: score 0.60 (exactly 0.6) is below --fail-under 0.65".to_owned())
            )
        );
    }

    #[test]
    fn a_score_exactly_at_the_bar_passes() {
        let g = gate_of(Some(0.7), false, "");
        assert_eq!(exit(&label("PASS"), &g, Some(0.7)), (Exit::Pass, None));
        // 4.95 / 1.5 sums to 3.2999999999999994: that is 3.3.
        let g = gate_of(Some(4.95 / 1.5), false, "");
        assert_eq!(exit(&label("PASS"), &g, Some(3.3)), (Exit::Pass, None));
    }

    #[test]
    fn the_bar_tolerates_floating_point_noise_only() {
        // reaches: score >= bar - 1e-9, so 0.7 - 1e-9 = 0.699999999 is the lowest pass.
        let pass = gate_of(Some(0.699_999_999_5), false, "");
        assert_eq!(exit(&label("PASS"), &pass, Some(0.7)), (Exit::Pass, None));
        let fail = gate_of(Some(0.699_999_998), false, "");
        assert_eq!(
            exit(&label("PASS"), &fail, Some(0.7)),
            (
                Exit::Below,
                Some("PASS: score 0.70 (exactly 0.699999998) is below --fail-under 0.7".to_owned())
            )
        );
        let below = gate_of(Some(0.69), false, "");
        assert_eq!(exit(&label("PASS"), &below, Some(0.7)).0, Exit::Below);
    }

    #[test]
    fn the_bar_fails_a_run_without_a_score() {
        // Not blocked and not NO_SCORE, yet without a score: the bar is not reached.
        let g = gate_of(None, false, "");
        assert_eq!(
            exit(&label("PASS"), &g, Some(0.1)),
            (
                Exit::Below,
                Some("PASS: no score (no judge scored) is below --fail-under 0.1".to_owned())
            )
        );
        // Without a bar, the label decides.
        assert_eq!(exit(&label("PASS"), &g, None), (Exit::Pass, None));
    }

    #[test]
    fn an_incomplete_run_exits_3_before_anything_else() {
        let g = gate_of(None, true, "coverage 0.00 is below 0.50");
        let why = "budget: 2 judges left unscored".to_owned();
        assert_eq!(
            exit_of(
                &Decision::Blocked,
                &g,
                Some(why.clone()),
                Some("regression against r1: total".to_owned()),
                Some(0.9),
            ),
            (Exit::Incomplete, Some(why.clone()))
        );
        let ok = gate_of(Some(1.0), false, "");
        assert_eq!(
            exit_of(&label("PASS"), &ok, Some(why.clone()), None, None),
            (Exit::Incomplete, Some(why))
        );
    }

    #[test]
    fn a_regression_exits_1_before_the_gates() {
        let line = "regression against r1: total 0.80 -> 0.60".to_owned();
        let ok = gate_of(Some(0.9), false, "");
        assert_eq!(
            exit_of(&label("PASS"), &ok, None, Some(line.clone()), Some(0.5)),
            (Exit::Below, Some(line.clone()))
        );
        let blocked = gate_of(Some(0.9), true, "judge `x` is in error");
        assert_eq!(
            exit_of(&Decision::Blocked, &blocked, None, Some(line.clone()), None),
            (Exit::Below, Some(line))
        );
    }

    #[test]
    fn control_characters_in_a_reason_are_escaped() {
        let g = gate_of(Some(0.1), true, "bad\nreason");
        assert_eq!(
            exit(&label("LOW\u{1b}"), &g, None).1.as_deref(),
            Some("LOW\\u{1b}: bad\\u{a}reason")
        );
    }
}
