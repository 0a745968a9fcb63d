//! The command line: one file per subcommand. Exit codes: 0 pass, 1 evaluation below
//! threshold (or a regression), 2 usage or input error, 3 a run left without scores by
//! its budget or by replay misses.

// Doc comments here are clap's help text, read in a terminal: `<suite>` and
// `[default: ...]` are what the help shows, not HTML or links.
#![allow(rustdoc::invalid_html_tags, rustdoc::broken_intra_doc_links)]

pub(crate) mod calibrate;
pub(crate) mod completions;
pub(crate) mod diff;
pub(crate) mod doctor;
pub(crate) mod history;
pub(crate) mod init;
pub(crate) mod llm_args;
pub(crate) mod log;
pub(crate) mod merge;
pub(crate) mod output;
pub(crate) mod parts;
pub(crate) mod plan;
pub(crate) mod render;
pub(crate) mod report;
pub(crate) mod run;
pub(crate) mod schema;
pub(crate) mod test;
pub(crate) mod validate;

use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};

/// Exit statuses, as documented in `--help`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// Everything passed (or, for `validate`, no errors).
    Pass = 0,
    /// The evaluation is below its threshold, or regressed from its baseline.
    Below = 1,
    /// Bad usage or bad input.
    Error = 2,
    /// Judges were left without a score by the `--max-cost` budget or by replay misses:
    /// the run measured too little to pass or fail.
    Incomplete = 3,
    /// Stopped by Ctrl-C or SIGTERM (128 + SIGINT, as shells report it); what was
    /// received is kept for the next run.
    Interrupted = 130,
}

impl From<Exit> for ExitCode {
    fn from(e: Exit) -> ExitCode {
        ExitCode::from(e as u8)
    }
}

/// caldera judges the output of code-analysis tools against ground truth.
#[derive(Debug, Parser)]
#[command(
    name = "caldera",
    version,
    about = "Judge the output of code-analysis tools against ground truth, with heuristics and LLMs.",
    long_about = "Judge the output of code-analysis tools against ground truth, with heuristics and LLMs.\n\n\
        A suite is a folder with suite.yaml and one YAML file per judge (see judges.d/).\n\n\
        Exit status: 0 pass; 1 evaluation below threshold, or a regression with \
        `--fail-on regression`; 2 usage or input error (an empty or missing results folder \
        included); 3 incomplete: judges left without a score by the `--max-cost` budget or \
        by `--replay` cache misses."
)]
pub(crate) struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
    /// When to colour output (NO_COLOR and CLICOLOR_FORCE are honoured under `auto`).
    #[arg(
        long,
        value_enum,
        default_value_t,
        global = true,
        value_name = "WHEN",
        help_heading = "Output"
    )]
    pub color: output::ColorArg,
    /// Print nothing but errors and the one-line reason of a failing gate.
    #[arg(long, short, global = true, help_heading = "Output")]
    pub quiet: bool,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Run a suite and write the result.
    Run(Box<run::RunArgs>),
    /// Check suites and judge files without running them; report every problem.
    Validate(validate::ValidateArgs),
    /// Print the JSON Schema of judge, suite and test-case files (for editors).
    Schema(schema::SchemaArgs),
    /// Print exactly what LLM mode would send for each judge, without calling anything.
    Render(render::RenderArgs),
    /// Say which LLM providers are usable here, and why not, without spending tokens.
    Doctor(doctor::DoctorArgs),
    /// Render a saved result again, in any format (table, json, md, junit, html).
    Report(report::ReportArgs),
    /// Compare two saved results of one suite: score, evidence and problem changes.
    Diff(diff::DiffArgs),
    /// Every run in a results folder, in time order: scores, trends, changes, unstable judges.
    History(history::HistoryArgs),
    /// Print a shell completion script (bash, zsh, fish, powershell, elvish).
    Completions(completions::CompletionsArgs),
    /// Write a starter suite for a tool: suite.yaml, one judge, its prompt, sample data.
    Init(init::InitArgs),
    /// Show the calls, cached hits, tokens and cost an LLM run would have, sending nothing.
    Plan(plan::PlanArgs),
    /// Measure each judge's agreement with people's labels (weighted kappa, bias, pass rates).
    Calibrate(calibrate::CalibrateArgs),
    /// Join the partial results of `caldera run --shard K/N` into the result of one run:
    /// same scores, evidence, decision, reports and exit status.
    Merge(Box<merge::MergeArgs>),
    /// Run a suite's judge test cases (`<suite>/cases/<case>/`), like `cargo test`.
    Test(test::TestArgs),
}

/// Parses arguments and runs the command.
pub fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            return match e.kind() {
                clap::error::ErrorKind::DisplayHelp | clap::error::ErrorKind::DisplayVersion => {
                    ExitCode::SUCCESS
                }
                _ => Exit::Error.into(),
            };
        }
    };
    output::init(cli.color, cli.quiet);
    log::init();
    let exit = match cli.command {
        Command::Run(args) => run::execute(*args),
        Command::Validate(args) => validate::execute(args),
        Command::Schema(args) => schema::execute(args),
        Command::Render(args) => render::execute(args),
        Command::Doctor(args) => doctor::execute(args),
        Command::Report(args) => report::execute(args),
        Command::Diff(args) => diff::execute(args),
        Command::History(args) => history::execute(args),
        Command::Completions(args) => completions::execute(&args),
        Command::Init(args) => init::execute(&args),
        Command::Test(args) => test::execute(args),
        Command::Plan(args) => plan::execute(args),
        Command::Calibrate(args) => calibrate::execute(args),
        Command::Merge(args) => merge::execute(*args),
    };
    exit.into()
}

/// Whether stderr gets colour (`--color`, NO_COLOR, CLICOLOR_FORCE, a terminal).
pub(crate) fn stderr_color() -> bool {
    output::stderr_color()
}

/// Whether stdout gets colour (`--color`, NO_COLOR, CLICOLOR_FORCE, a terminal).
pub(crate) fn stdout_color() -> bool {
    output::stdout_color()
}

/// Where a suite may read from (shared by `run`, `render` and `validate`).
#[derive(Debug, Clone, Args, Default)]
pub(crate) struct RootArgs {
    /// The project root every path of the suite must resolve inside [default: the
    /// folder holding the suite's `judges.d`, else the suite folder].
    #[arg(long, value_name = "DIR")]
    pub root: Option<std::path::PathBuf>,
    /// Read prompts and inputs that the suite names outside the project root.
    #[arg(long)]
    pub allow_outside_root: bool,
}

impl RootArgs {
    /// As loading options.
    pub(crate) fn options(&self) -> crate::load::confine::RootOptions {
        crate::load::confine::RootOptions {
            root: self.root.clone(),
            allow_outside: self.allow_outside_root,
        }
    }
}

/// Loads the suite in `dir` for a command that needs a valid one: every diagnostic is
/// printed, and an invalid suite ends the command (exit 2) with one line saying what was
/// not done (`verb`, e.g. "run") and the `validate` command that shows the same report.
pub(crate) fn load_valid_suite(
    dir: &std::path::Path,
    env: &minijinja::Environment<'static>,
    root: &crate::load::confine::RootOptions,
    verb: &str,
) -> Option<crate::load::suite::Suite> {
    let (suite, diags) = crate::load::suite::load_suite_with(dir, env, root);
    let (errors, _) = crate::diag::tally(&diags);
    if !diags.is_empty() {
        eprint!("{}", crate::diag::render_text(&diags, stderr_color()));
    }
    let suite = suite.filter(|_| errors == 0);
    if suite.is_none() {
        eprintln!(
            "error: the suite is not valid ({errors} error(s)); nothing was {verb}. \
             `caldera validate {}` shows the same report.",
            dir.display()
        );
    }
    suite
}

/// Inputs given on the command line instead of `suite.yaml`'s (shared by `render`,
/// `plan` and `calibrate`; `run` has its own, with `--repo`).
#[derive(Debug, Clone, Args, Default)]
pub(crate) struct InputArgs {
    /// Analysis results folder (overrides suite.yaml).
    #[arg(long, value_name = "DIR")]
    pub results: Option<std::path::PathBuf>,
    /// Ground-truth folder (overrides suite.yaml).
    #[arg(long, value_name = "DIR")]
    pub ground_truth: Option<std::path::PathBuf>,
    /// A named input of the suite read from FILE (repeatable), as `run --input`.
    #[arg(long = "input", value_name = "NAME=FILE", value_parser = run::parse_named_input)]
    pub inputs: Vec<(String, Option<std::path::PathBuf>)>,
}

impl InputArgs {
    /// As run overrides.
    pub(crate) fn overrides(&self) -> crate::load::inputs::Overrides {
        crate::load::inputs::Overrides {
            results: self.results.clone(),
            ground_truth: self.ground_truth.clone(),
            inputs: self.inputs.iter().cloned().collect(),
            ..Default::default()
        }
    }
}
