//! `caldera doctor`: which LLM providers this machine can use, and why not, without
//! spending a token (key presence, a connection to the endpoint, `claude --version`).

use std::time::Duration;

use clap::Args;

use crate::cli::Exit;
use crate::provider::doctor::diagnose;

/// Arguments of `caldera doctor`.
#[derive(Debug, Args)]
pub(crate) struct DoctorArgs {
    /// Seconds allowed for each probe.
    #[arg(long, default_value_t = 5, value_name = "SECS")]
    pub timeout: u64,
    /// Print the rows as JSON.
    #[arg(long)]
    pub json: bool,
}

/// Runs the command. Exit 0 when at least one provider is usable, else 2.
pub(crate) fn execute(args: DoctorArgs) -> Exit {
    crate::provider::install_crypto_provider();
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return Exit::Error;
        }
    };
    let rows = runtime.block_on(diagnose(Duration::from_secs(args.timeout.max(1))));
    if args.json {
        crate::cli::output::println(&serde_json::to_string_pretty(&rows).unwrap_or_default());
    } else {
        for row in &rows {
            let mark = if row.usable { "usable" } else { "not usable" };
            crate::cli::output::println(&format!(
                "{:<10} {mark}{}",
                row.provider,
                row.endpoint
                    .as_deref()
                    .map_or(String::new(), |e| format!("  ({e})"))
            ));
            for c in &row.checks {
                crate::cli::output::println(&format!("           - {c}"));
            }
        }
        print_lifecycle(chrono::Utc::now().date_naive());
        if !rows.iter().any(|r| r.usable) {
            crate::cli::output::println(
                "\nno provider is usable here: set ANTHROPIC_API_KEY or OPENAI_BASE_URL, install \
                 the `claude` CLI, or run suites with --heuristic",
            );
        }
    }
    if rows.iter().any(|r| r.usable) {
        Exit::Pass
    } else {
        Exit::Error
    }
}

/// The built-in catalogue's deprecated and retiring models, so a user sees the day a
/// suite's `model:` stops being served before a run fails on it.
fn print_lifecycle(today: chrono::NaiveDate) {
    let table = crate::provider::models::ModelTable::builtin();
    let lines: Vec<String> = table
        .lifecycle()
        .filter_map(|(id, _)| table.lifecycle_warning(id, today))
        .collect();
    if lines.is_empty() {
        return;
    }
    crate::cli::output::println("\ndeprecated models (built-in catalogue):");
    for line in lines {
        crate::cli::output::println(&format!("  - {line}"));
    }
}
