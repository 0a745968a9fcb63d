//! `caldera diff BASE.json NEW.json`: what changed between two runs of one suite, per
//! dimension, in the evidence and in the problems; `--fail-on regression` gates on it.

use std::path::PathBuf;

use clap::Args;

use crate::cli::Exit;
use crate::cli::output::Dest;
use crate::cli::report::{ReportOptions, read, regression_gate, write_all};
use crate::report::compare::compare;
use crate::view::run::{Format, Input};

/// Arguments of `caldera diff`.
#[derive(Debug, Args)]
pub(crate) struct DiffArgs {
    /// The earlier result.
    #[arg(value_name = "BASE.json")]
    pub base: PathBuf,
    /// The later result.
    #[arg(value_name = "NEW.json")]
    pub new: PathBuf,
    /// Where to write the comparison (one format); `-` or nothing is stdout.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Report formats and their destinations.
    #[command(flatten)]
    pub options: ReportOptions,
}

/// Runs the command.
pub(crate) fn execute(args: DiffArgs) -> Exit {
    if let Err(e) = args.options.check(args.out.as_deref()) {
        eprintln!("error: {e}");
        return Exit::Error;
    }
    let (Some(base), Some(new)) = (read(&args.base), read(&args.new)) else {
        return Exit::Error;
    };
    let comparison = match compare(&base, &new, args.options.tolerance) {
        Ok(c) => c,
        Err(e) => {
            eprintln!(
                "error: cannot compare {} with {}: {e}",
                args.base.display(),
                args.new.display()
            );
            return Exit::Error;
        }
    };
    let input = Input {
        report: &new,
        comparison: Some(&comparison),
        diff_only: true,
        per_repo: false,
    };
    let single = args.out.as_deref().map_or(Dest::Stdout, Dest::of);
    let formats = args.options.formats(Format::Table);
    if let Err(e) = write_all(&input, &formats, args.options.out_dir.as_deref(), &single) {
        eprintln!("error: {e}");
        return Exit::Error;
    }
    regression_gate(Some(&comparison), args.options.fail_on).unwrap_or(Exit::Pass)
}
