//! `caldera run`: validate the suite, read its inputs, judge every dimension, write the
//! JSON result and print the table.

use std::path::PathBuf;

use clap::Args;

use crate::cli::{Exit, stderr_color, stdout_color};
use crate::diag::{render_text, tally};
use crate::load::suite::load_suite;
use crate::report;
use crate::run::context::Overrides;
use crate::run::result::{NO_SCORE, RunResult};
use crate::run::{RunOptions, run_heuristic};

/// Arguments of `caldera run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// The suite folder (e.g. judges.d/trivy).
    #[arg(value_name = "SUITE_DIR")]
    pub suite: PathBuf,
    /// Score with each judge's heuristic only: no model, no network.
    #[arg(long)]
    pub heuristic: bool,
    /// Analysis results folder (overrides suite.yaml's inputs.results).
    #[arg(long, value_name = "DIR")]
    pub results: Option<PathBuf>,
    /// Ground-truth folder (overrides suite.yaml's inputs.ground_truth).
    #[arg(long, value_name = "DIR")]
    pub ground_truth: Option<PathBuf>,
    /// Where to write the JSON result [default: results/<suite>/<run id>.json].
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Exit 1 when the weighted score is below this value. Without it, exit 1 when the
    /// decision is FAIL or no judge scored.
    #[arg(long, value_name = "SCORE")]
    pub fail_under: Option<f64>,
    /// Print the JSON result on stdout instead of the table.
    #[arg(long)]
    pub json: bool,
}

/// Runs the command.
pub fn execute(args: RunArgs) -> Exit {
    let env = crate::render::environment();
    let (suite, diags) = load_suite(&args.suite, &env);
    let (errors, _) = tally(&diags);
    if !diags.is_empty() {
        eprint!("{}", render_text(&diags, stderr_color()));
    }
    let Some(suite) = suite.filter(|_| errors == 0) else {
        eprintln!(
            "error: the suite is not valid ({errors} error(s)); nothing was run. \
             `caldera validate {}` shows the same report.",
            args.suite.display()
        );
        return Exit::Error;
    };
    if !args.heuristic {
        eprintln!(
            "error: LLM mode is not available in this build yet; run with --heuristic \
             to score with each judge's heuristic (no model, no network)"
        );
        return Exit::Error;
    }
    let options = RunOptions {
        overrides: Overrides {
            results: args.results.clone(),
            ground_truth: args.ground_truth.clone(),
        },
    };
    let result = match run_heuristic(&env, &suite, &options) {
        Ok(r) => r,
        Err(diags) => {
            eprint!("{}", render_text(&diags, stderr_color()));
            eprintln!("error: the run's inputs could not be read; nothing was judged");
            return Exit::Error;
        }
    };
    finish(&result, &args)
}

/// Writes and prints the result; maps it to an exit status.
pub fn finish(result: &RunResult, args: &RunArgs) -> Exit {
    let path = args
        .out
        .clone()
        .unwrap_or_else(|| report::json::default_path(result));
    if let Err(e) = report::json::write(result, &path) {
        eprintln!("error: cannot write the result to {}: {e}", path.display());
        // The result must not be lost: print it instead.
        println!(
            "{}",
            serde_json::to_string_pretty(result).unwrap_or_default()
        );
        return Exit::Error;
    }
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(result).unwrap_or_default()
        );
    } else {
        print!("{}", report::table::render(result, stdout_color()));
        println!("\n  result written to {}", path.display());
    }
    let below = match (args.fail_under, result.total_score) {
        (Some(min), Some(score)) => score < min,
        (Some(_), None) => true,
        (None, _) => result.decision == "FAIL" || result.decision == NO_SCORE,
    };
    if below { Exit::Below } else { Exit::Pass }
}
