//! `caldera report`: renders a saved result again, in any format, optionally compared
//! with a baseline. Also the helpers `run` and `diff` share: writing several formats,
//! reading a baseline, and the regression gate.

use std::path::{Path, PathBuf};

use clap::Args;

use crate::cli::Exit;
use crate::cli::output::{self, Dest};
use crate::diag::render_text;
use crate::report::compare::{Comparison, compare};
use crate::report::model::Report;
use crate::view::run::{Format, Input};

/// `--fail-on` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum FailOn {
    /// Any dimension that scores lower than in the baseline (by more than `--tolerance`;
    /// for `scope: repo` judges, only when the bootstrap interval excludes zero), that
    /// lost its score, or that fails an assertion it did not fail in the baseline.
    Regression,
}

/// Where reports go and how they compare (shared by `run`, `report` and `diff`).
#[derive(Debug, Clone, Args)]
pub(crate) struct ReportOptions {
    /// Output format; repeat or separate with commas for several (each needs --out-dir).
    #[arg(
        long,
        short = 'f',
        value_enum,
        value_delimiter = ',',
        value_name = "FORMAT",
        help_heading = "Reports"
    )]
    pub format: Vec<Format>,
    /// Write each format to DIR/<suite>.<ext> (txt, json, md, junit.xml, html).
    #[arg(long, value_name = "DIR", help_heading = "Reports")]
    pub out_dir: Option<PathBuf>,
    /// With a baseline: exit 1 on a regression.
    #[arg(long, value_enum, value_name = "WHAT", help_heading = "Reports")]
    pub fail_on: Option<FailOn>,
    /// With a baseline: a drop of up to this much is not a regression.
    #[arg(
        long,
        default_value_t = 0.0,
        value_name = "POINTS",
        help_heading = "Reports"
    )]
    pub tolerance: f64,
}

impl ReportOptions {
    /// The formats asked for, `default` when none.
    pub(crate) fn formats(&self, default: Format) -> Vec<Format> {
        if self.format.is_empty() {
            vec![default]
        } else {
            let mut seen = Vec::new();
            for f in &self.format {
                if !seen.contains(f) {
                    seen.push(*f);
                }
            }
            seen
        }
    }

    /// Checks the combination before anything runs: several formats need a folder, and
    /// the tolerance is a number of points.
    pub(crate) fn check(&self, out: Option<&Path>) -> Result<(), String> {
        if !(self.tolerance.is_finite() && self.tolerance >= 0.0) {
            return Err(format!(
                "--tolerance must be zero or more points, got {}",
                self.tolerance
            ));
        }
        if self.format.len() > 1 && self.out_dir.is_none() {
            return Err(
                "several formats need --out-dir DIR (each is written to DIR/<suite>.<ext>)".into(),
            );
        }
        if self.out_dir.is_some() && out.is_some_and(|o| o.as_os_str() == "-") {
            return Err("--out - and --out-dir cannot be used together".into());
        }
        Ok(())
    }
}

/// Arguments of `caldera report`.
#[derive(Debug, Args)]
pub(crate) struct ReportArgs {
    /// A result written by `caldera run` (results/<suite>/<run id>.json).
    #[arg(value_name = "RESULT.json")]
    pub result: PathBuf,
    /// Where to write the report (one format); `-` or nothing is stdout.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Compare with this earlier result of the same suite: deltas in every format.
    #[arg(long, value_name = "BASE.json")]
    pub baseline: Option<PathBuf>,
    /// Per-repo scores of `scope: repo` judges in the table.
    #[arg(short, long)]
    pub verbose: bool,
    /// Report formats and their destinations.
    #[command(flatten)]
    pub options: ReportOptions,
}

/// Runs the command.
pub(crate) fn execute(args: ReportArgs) -> Exit {
    if let Err(e) = args.options.check(args.out.as_deref()) {
        eprintln!("error: {e}");
        return Exit::Error;
    }
    let Some(report) = read(&args.result) else {
        return Exit::Error;
    };
    let comparison = match args.baseline.as_deref() {
        Some(b) => match baseline(b, &report, args.options.tolerance) {
            Some(c) => Some(c),
            None => return Exit::Error,
        },
        None => None,
    };
    let input = Input {
        report: &report,
        comparison: comparison.as_ref(),
        diff_only: false,
        per_repo: args.verbose,
    };
    let formats = args.options.formats(Format::Table);
    let single = args.out.as_deref().map_or(Dest::Stdout, Dest::of);
    if let Err(e) = write_all(&input, &formats, args.options.out_dir.as_deref(), &single) {
        eprintln!("error: {e}");
        return Exit::Error;
    }
    regression_gate(comparison.as_ref(), args.options.fail_on).unwrap_or(Exit::Pass)
}

/// Reads a saved result, printing its diagnostic on failure.
pub(crate) fn read(path: &Path) -> Option<Report> {
    match Report::read(path) {
        Ok(r) => Some(r),
        Err(d) => {
            eprint!("{}", render_text(&[d], crate::cli::stderr_color()));
            None
        }
    }
}

/// Reads the baseline at `path` and compares `report` with it; `None` when either fails
/// (the reason is printed).
pub(crate) fn baseline(path: &Path, report: &Report, tolerance: f64) -> Option<Comparison> {
    let base = read(path)?;
    compare(&base, report, tolerance)
        .map_err(|e| {
            eprintln!(
                "error: cannot compare {} with this run: {e}",
                path.display()
            );
        })
        .ok()
}

/// Renders every format: to `out_dir/<suite>.<ext>` when a folder is given, else the one
/// format to `single`. Returns the files written.
pub(crate) fn write_all(
    input: &Input<'_>,
    formats: &[Format],
    out_dir: Option<&Path>,
    single: &Dest,
) -> Result<Vec<PathBuf>, String> {
    let mut written = Vec::new();
    for f in formats {
        let text = f.reporter().render(input);
        let dest = match out_dir {
            Some(dir) => Dest::File(out_dir_file(dir, &input.report.suite, *f)),
            None => single.clone(),
        };
        output::emit(&dest, &text)?;
        if let Dest::File(p) = dest {
            if !output::quiet() && out_dir.is_some() {
                output::println(&format!(
                    "{} report written to {}",
                    f.extension(),
                    p.display()
                ));
            }
            written.push(p);
        }
    }
    Ok(written)
}

/// Where `--out-dir DIR` puts the report of `format`: `DIR/<suite>.<ext>`.
pub(crate) fn out_dir_file(dir: &Path, suite: &str, format: Format) -> PathBuf {
    dir.join(format!("{}.{}", file_stem(suite), format.extension()))
}

/// A suite name safe as a file name.
fn file_stem(suite: &str) -> String {
    let stem: String = suite
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if stem.is_empty() {
        "result".into()
    } else {
        stem
    }
}

/// `--fail-on regression`: exit 1 with one line naming what regressed.
pub(crate) fn regression_gate(c: Option<&Comparison>, fail_on: Option<FailOn>) -> Option<Exit> {
    let line = regression_line(c, fail_on)?;
    // Dimension names and the baseline's run id come from the results.
    eprintln!("{}", crate::diag::printable_line(&line));
    Some(Exit::Below)
}

/// The line `--fail-on regression` fails a run with, when something regressed.
pub(crate) fn regression_line(c: Option<&Comparison>, fail_on: Option<FailOn>) -> Option<String> {
    let (c, Some(FailOn::Regression)) = (c?, fail_on) else {
        return None;
    };
    if c.regressions.is_empty() {
        return None;
    }
    Some(format!(
        "regression against {}: {}",
        c.base.run_id,
        c.regressions.join("; ")
    ))
}
