//! The command line: one file per subcommand. Exit codes: 0 pass, 1 evaluation below
//! threshold, 2 usage or input error.

pub mod doctor;
pub mod render;
pub mod run;
pub mod schema;
pub mod validate;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Exit statuses, as documented in `--help`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// Everything passed (or, for `validate`, no errors).
    Pass = 0,
    /// The evaluation is below its threshold.
    Below = 1,
    /// Bad usage or bad input.
    Error = 2,
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
        Exit status: 0 pass, 1 evaluation below threshold, 2 usage or input error."
)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run a suite and write the result.
    Run(run::RunArgs),
    /// Check suites and judge files without running them; report every problem.
    Validate(validate::ValidateArgs),
    /// Print the JSON Schema of judge or suite files (for editors).
    Schema(schema::SchemaArgs),
    /// Print exactly what LLM mode would send for each judge, without calling anything.
    Render(render::RenderArgs),
    /// Say which LLM providers are usable here, and why not, without spending tokens.
    Doctor(doctor::DoctorArgs),
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
    let exit = match cli.command {
        Command::Run(args) => run::execute(args),
        Command::Validate(args) => validate::execute(args),
        Command::Schema(args) => schema::execute(args),
        Command::Render(args) => render::execute(args),
        Command::Doctor(args) => doctor::execute(args),
    };
    exit.into()
}

/// Whether stderr is a colour terminal (honours NO_COLOR).
pub fn stderr_color() -> bool {
    use std::io::IsTerminal;
    std::env::var_os("NO_COLOR").is_none() && std::io::stderr().is_terminal()
}

/// Whether stdout is a colour terminal (honours NO_COLOR).
pub fn stdout_color() -> bool {
    use std::io::IsTerminal;
    std::env::var_os("NO_COLOR").is_none() && std::io::stdout().is_terminal()
}
