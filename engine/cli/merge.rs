//! `caldera run --shard K/N` and `caldera merge PARTIAL...`: a run split by repo over
//! machines and joined again (see `run::shard`). The shard writes a partial result and
//! a short summary; the merge checks the partials belong together, runs the aggregate
//! phase and then reports and gates exactly as `caldera run` does.

use std::path::PathBuf;

use clap::Args;
use minijinja::Environment;

use crate::cli::output;
use crate::cli::report::ReportOptions;
use crate::cli::run::{RunArgs, finish, parse_score};
use crate::cli::{Exit, stderr_color};
use crate::diag::render_text;
use crate::load::inputs::Overrides;
use crate::load::suite::Suite;
use crate::run::RunOptions;
use crate::run::partial::{self, Partial};
use crate::run::shard::{self, ShardOptions, ShardSpec};

/// Arguments of `caldera merge`.
#[derive(Debug, Args)]
pub struct MergeArgs {
    /// The partial results of every shard of one run (`caldera run --shard K/N`).
    #[arg(required = true, value_name = "PARTIAL")]
    pub partials: Vec<PathBuf>,
    /// Where to write the JSON result [default: results/<suite>/<run id>.json]; `-` prints
    /// it on stdout instead of the table.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Compare with this earlier result of the suite, as `caldera run --baseline`.
    #[arg(long, value_name = "BASE.json", help_heading = "Reports")]
    pub baseline: Option<PathBuf>,
    /// Report formats and their destinations.
    #[command(flatten)]
    pub report: ReportOptions,
    /// Exit 1 when the score the decision rests on is below this value, as `caldera run`.
    #[arg(long, value_name = "SCORE", value_parser = parse_score)]
    pub fail_under: Option<f64>,
    /// A judge that ends in `error` does not fail the run by itself.
    #[arg(long)]
    pub allow_errors: bool,
    /// Print the JSON result on stdout instead of the table (as `--format json`).
    #[arg(long)]
    pub json: bool,
    /// Per-repo scores of `scope: repo` judges in the table.
    #[arg(short, long)]
    pub verbose: bool,
    /// Project root and confinement.
    #[command(flatten)]
    pub root: crate::cli::RootArgs,
}

/// `caldera run --shard K/N`: the per-repo phase of the shard's repos, written as a
/// partial result. Heuristic only; `--judge` and `--repo` would make the shards of one
/// run disagree, so they are refused with it.
pub fn run_shard(
    args: &RunArgs,
    spec: ShardSpec,
    env: &Environment<'static>,
    suite: &Suite,
    overrides: Overrides,
) -> Exit {
    let refused = if !args.heuristic {
        Some("--shard runs heuristic scoring only: add --heuristic")
    } else if !args.judges.is_empty() || !args.repos.is_empty() {
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
    let options = ShardOptions {
        spec,
        defer_whole: args.defer_whole,
        overrides,
        suite_path: args.suite.clone(),
        run_id,
    };
    let partial = match shard::run_shard(env, suite, &options) {
        Ok(p) => p,
        Err(diags) => {
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

/// Runs `caldera merge`.
pub fn execute(args: MergeArgs) -> Exit {
    if let Err(e) = args.report.check(args.out.as_deref()) {
        eprintln!("error: {e}");
        return Exit::Error;
    }
    if let Some(out) = args.out.as_ref().filter(|o| args.partials.contains(o)) {
        eprintln!(
            "error: --out {} would write over a partial result; nothing was merged",
            out.display()
        );
        return Exit::Error;
    }
    let mut read = Vec::new();
    let mut errors = Vec::new();
    for path in &args.partials {
        match partial::read(path) {
            Ok(p) => read.push((path.clone(), p)),
            Err(e) => errors.push(e),
        }
    }
    let checked = match errors.is_empty().then(|| shard::check(read)) {
        Some(Ok(c)) => c,
        Some(Err(e)) => return refuse(&e),
        None => return refuse(&errors),
    };
    let suite_path = PathBuf::from(&checked.partials[0].1.suite_path);
    if !suite_path.exists() {
        eprintln!(
            "error: the shards ran suite {}, which is not found from this folder: run `caldera merge` where the shards ran (the suite is read again to run the aggregate phase)",
            suite_path.display()
        );
        return Exit::Error;
    }
    let env = crate::render::environment();
    let Some(suite) =
        crate::cli::load_valid_suite(&suite_path, &env, &args.root.options(), "merged")
    else {
        return Exit::Error;
    };
    let options = RunOptions {
        overrides: Overrides::default(),
        allow_errors: args.allow_errors,
        run_id: Some(crate::run::new_run_id()),
    };
    let result = match shard::merge(&env, &suite, &checked, &options) {
        Ok(r) => r,
        Err(diags) => {
            eprint!("{}", render_text(&diags, stderr_color()));
            eprintln!("error: the partial results were not merged");
            return Exit::Error;
        }
    };
    finish(&result, &as_run_args(args, suite_path))
}

fn refuse(errors: &[String]) -> Exit {
    for e in errors {
        eprintln!("error: {}", crate::diag::printable_line(e));
    }
    eprintln!("error: the partial results were not merged");
    Exit::Error
}

/// The reporting flags of `caldera merge` as `caldera run`'s, so the result is written,
/// reported and gated by the same code.
fn as_run_args(args: MergeArgs, suite: PathBuf) -> RunArgs {
    RunArgs {
        suite,
        judges: Vec::new(),
        repos: Vec::new(),
        heuristic: true,
        results: None,
        ground_truth: None,
        inputs: Vec::new(),
        out: args.out,
        baseline: args.baseline,
        report: args.report,
        fail_under: args.fail_under,
        allow_errors: args.allow_errors,
        json: args.json,
        provider: None,
        model: None,
        models: Vec::new(),
        panel_matrices: false,
        concurrency: 8,
        cache: Default::default(),
        cache_dir: PathBuf::from(".caldera/cache"),
        replay: false,
        repeat: 1,
        settle: None,
        batch: false,
        max_cost: None,
        timeout: 120,
        log: None,
        verbose: args.verbose,
        root: args.root,
        shard: None,
        defer_whole: false,
    }
}
