//! `caldera completions SHELL`: a completion script from the same clap definition the
//! binary parses with, so completions never drift from the flags.

use clap::{Args, CommandFactory};
use clap_complete::Shell;

use crate::cli::{Cli, Exit, output};

/// Arguments of `caldera completions`.
#[derive(Debug, Args)]
pub(crate) struct CompletionsArgs {
    /// The shell, e.g. `caldera completions bash > /etc/bash_completion.d/caldera`.
    #[arg(value_enum)]
    pub shell: Shell,
}

/// Runs the command.
pub(crate) fn execute(args: &CompletionsArgs) -> Exit {
    let mut cmd = Cli::command();
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut cmd, "caldera", &mut script);
    output::print(&String::from_utf8_lossy(&script));
    Exit::Pass
}
