//! `caldera merge PARTIAL...`: a run split by repo over machines (`caldera run --shard
//! K/N`, in `cli/run.rs`) joined again (see `run::shard`). The shard writes a partial result and
//! a short summary; the merge checks the partials belong together, runs the aggregate
//! phase and then reports and gates exactly as `caldera run` does.

use std::path::PathBuf;

use clap::Args;

use crate::cli::llm_args::LlmArgs;
use crate::cli::report::ReportOptions;
use crate::cli::run::{RunArgs, finish, llm_options, parse_score};
use crate::cli::{Exit, stderr_color};
use crate::diag::render_text;
use crate::load::inputs::Overrides;
use crate::run::partial;
use crate::run::shard;
use crate::run::{RunError, RunOptions};

/// Arguments of `caldera merge`.
#[derive(Debug, Args)]
pub(crate) struct MergeArgs {
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
    /// The LLM mode flags of the shards' run: the merge asks the suite judges' models
    /// with them (LLM shards only).
    #[command(flatten)]
    pub llm: LlmArgs,
    /// Project root and confinement.
    #[command(flatten)]
    pub root: crate::cli::RootArgs,
}

/// Runs `caldera merge`.
pub(crate) fn execute(args: MergeArgs) -> Exit {
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
    let run_id = crate::run::new_run_id();
    let options = RunOptions {
        overrides: Overrides::default(),
        allow_errors: args.allow_errors,
        run_id: Some(run_id.clone()),
    };
    let llm_shards = checked.partials[0].1.llm.is_some();
    if let (false, Some(flag)) = (llm_shards, asks_for_models(&args.llm)) {
        eprintln!(
            "error: the shards were scored by heuristic, but this merge asks for LLM mode ({flag}): run the shards without --heuristic, or merge without the LLM flags"
        );
        return refuse(&[]);
    }
    let mut run_args = as_run_args(args, suite_path);
    let llm = if llm_shards {
        // The result goes where the merge's interaction log says it is.
        let out = run_args
            .out
            .clone()
            .filter(|o| o.as_os_str() != "-")
            .unwrap_or_else(|| crate::report::json::result_path(&suite.spec.suite, &run_id));
        let Some(llm) = llm_options(&run_args, &out, options.clone()) else {
            return Exit::Error;
        };
        run_args.heuristic = false;
        run_args.out.get_or_insert(out);
        Some(llm)
    } else {
        None
    };
    let result = match shard::merge(&env, &suite, &checked, &options, llm.as_ref()) {
        Ok(r) => r,
        Err(RunError::Interrupted(message)) => {
            eprintln!("{message}");
            return Exit::Interrupted;
        }
        Err(RunError::Invalid(diags)) => {
            eprint!("{}", render_text(&diags, stderr_color()));
            eprintln!("error: the partial results were not merged");
            return Exit::Error;
        }
    };
    finish(&result, &run_args)
}

/// The first LLM flag that asks for a model (`--model`, `--models`, `--provider`,
/// `--repeat`, `--batch`, `--replay`), which a merge of heuristic shards refuses.
fn asks_for_models(llm: &LlmArgs) -> Option<&'static str> {
    [
        (llm.choice.model.is_some(), "--model"),
        (!llm.choice.models.is_empty(), "--models"),
        (llm.choice.provider.is_some(), "--provider"),
        (llm.repeat > 1, "--repeat"),
        (llm.batch, "--batch"),
        (llm.cache.replay, "--replay"),
    ]
    .into_iter()
    .find_map(|(given, flag)| given.then_some(flag))
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
        llm: args.llm,
        verbose: args.verbose,
        root: args.root,
        shard: None,
        defer_whole: false,
    }
}
