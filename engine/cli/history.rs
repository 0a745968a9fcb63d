//! `caldera history RESULTS_DIR`: every run in a results folder, per suite, in time
//! order: decisions and weighted scores, each dimension's trend, what changed from run to
//! run (as `caldera diff` judges it), unstable judges, and tokens and cost of LLM runs.

use std::path::PathBuf;

use clap::Args;

use crate::cli::Exit;
use crate::cli::output::{self, Dest};
use crate::diag::render_text;
use crate::history;
use crate::view::history::Format;

/// Arguments of `caldera history`.
#[derive(Debug, Args)]
pub(crate) struct HistoryArgs {
    /// A folder of results written by `caldera run` (results/<suite>/), one JSON file per
    /// run (`.json`, or `.json.gz` kept compressed).
    #[arg(value_name = "RESULTS_DIR")]
    pub folder: PathBuf,
    /// Output format.
    #[arg(long, short = 'f', value_enum, default_value_t = Format::Table, value_name = "FORMAT")]
    pub format: Format,
    /// Where to write the history; `-` or nothing is stdout.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// A drop of up to this much is not a regression (as `caldera diff --tolerance`).
    #[arg(long, default_value_t = 0.0, value_name = "POINTS")]
    pub tolerance: f64,
}

/// Runs the command: 0 when the folder held at least one result (files that are not
/// results are listed in the history and named on stderr), 2 when it held none or cannot
/// be read.
pub(crate) fn execute(args: HistoryArgs) -> Exit {
    if !(args.tolerance.is_finite() && args.tolerance >= 0.0) {
        eprintln!(
            "error: --tolerance must be zero or more points, got {}",
            args.tolerance
        );
        return Exit::Error;
    }
    let h = match history::of_folder(&args.folder, args.tolerance) {
        Ok(h) => h,
        Err(d) => {
            eprint!("{}", render_text(&[d], crate::cli::stderr_color()));
            return Exit::Error;
        }
    };
    if h.suites.is_empty() {
        for s in &h.skipped {
            eprintln!("  skipped {}", crate::diag::printable_line(&s.line()));
        }
        eprintln!(
            "error: no result in {} ({} file(s) skipped); `caldera run` writes results to results/<suite>/",
            args.folder.display(),
            h.skipped.len()
        );
        return Exit::Error;
    }
    let dest = args.out.as_deref().map_or(Dest::Stdout, Dest::of);
    if let Err(e) = output::emit(&dest, &args.format.render(&h)) {
        eprintln!("error: {e}");
        return Exit::Error;
    }
    if !h.skipped.is_empty() && !output::quiet() {
        eprintln!(
            "warning: {} file(s) in {} are not results and were skipped (listed in the history): {}",
            h.skipped.len(),
            args.folder.display(),
            crate::diag::printable_line(
                &h.skipped
                    .iter()
                    .take(5)
                    .map(|s| s.file.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        );
    }
    Exit::Pass
}
