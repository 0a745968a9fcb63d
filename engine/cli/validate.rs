//! `caldera validate`: loads suites and judge files without running them and reports
//! every problem (not only the first), as text with source snippets or as JSON.

use std::path::{Path, PathBuf};

use clap::{Args, ValueEnum};

use crate::cli::{Exit, stderr_color};
use crate::diag::{Diagnostic, Severity, render_text, tally};
use crate::load::confine::{Confinement, RootOptions};
use crate::load::judge::{Checker, load_judge};
use crate::load::names::Known;
use crate::load::suite::load_suite_with;

/// Output format.
#[derive(Debug, Clone, Copy, ValueEnum, Default)]
pub(crate) enum Format {
    /// Human-readable, with source snippets.
    #[default]
    Text,
    /// One JSON document: `{"diagnostics": [...], "errors": N, "warnings": N}`.
    Json,
}

/// Arguments of `caldera validate`.
#[derive(Debug, Args)]
pub(crate) struct ValidateArgs {
    /// Suite folders, `suite.yaml` files or judge files.
    #[arg(required = true, value_name = "PATH")]
    pub paths: Vec<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value_t)]
    pub format: Format,
    /// Fail (exit 2) on warnings too.
    #[arg(long)]
    pub deny_warnings: bool,
    /// Project root and confinement.
    #[command(flatten)]
    pub root: crate::cli::RootArgs,
    /// Do not evaluate the judges on the suite's own inputs (by default, when its results
    /// folder exists, every judge is run on them to find field paths and selectors that
    /// never match, expressions that raise, and item keys that shadow context names).
    #[arg(long)]
    pub no_data: bool,
    /// Also print which part of a run each judge and piece of suite evidence is
    /// (per-repo, aggregate, constant or whole, and why): what `caldera run --shard`
    /// can split.
    #[arg(long)]
    pub parts: bool,
}

/// Validates one path: a suite folder (or its suite.yaml), or a single judge file. With
/// `data`, a suite that loads without errors is also evaluated on its own inputs, when
/// its results folder exists.
pub fn validate_path(path: &Path, root: &RootOptions, data: bool) -> Vec<Diagnostic> {
    let env = crate::render::environment();
    let is_suite_file = path.file_name().is_some_and(|n| n == "suite.yaml");
    if path.is_dir() || is_suite_file || !path.exists() {
        let dir = if is_suite_file {
            path.parent().unwrap_or(Path::new(".")).to_path_buf()
        } else {
            path.to_path_buf()
        };
        let (suite, mut diags) = load_suite_with(&dir, &env, root);
        let clean = !diags.iter().any(|d| d.severity == Severity::Error);
        if let Some(suite) = suite
            && data
            && clean
            && crate::run::probe::default_results(&suite).is_dir()
        {
            diags.extend(check_data(&env, &suite));
        }
        return diags;
    }
    let known = Known::new(&env);
    let confinement = Confinement::for_suite(path.parent().unwrap_or(Path::new(".")), root);
    let checker = Checker {
        env: &env,
        known: &known,
        confinement: &confinement,
        shared: sibling_suite_names(path),
        transport: None,
        reasoning: None,
    };
    load_judge(path, &checker).1
}

/// Reads the suite's inputs and evaluates every judge on them.
fn check_data(
    env: &minijinja::Environment<'static>,
    suite: &crate::load::suite::Suite,
) -> Vec<Diagnostic> {
    match crate::load::inputs::load_inputs(suite, &Default::default()) {
        Ok(inputs) => crate::run::probe::check_with_data(env, suite, &inputs),
        Err(diags) => diags,
    }
}

/// The suite evidence names of the suite a lone judge file belongs to, so checking one
/// file alone does not flag them as unknown.
fn sibling_suite_names(judge: &Path) -> Vec<String> {
    let suite = judge.with_file_name("suite.yaml");
    std::fs::read_to_string(&suite)
        .ok()
        .and_then(|text| {
            crate::load::yaml::parse::<crate::spec::suite::SuiteSpec>(&suite, &text).ok()
        })
        .map(|p| p.value.evidence.keys().cloned().collect())
        .unwrap_or_default()
}

/// Runs the command.
pub(crate) fn execute(args: ValidateArgs) -> Exit {
    let mut diags = Vec::new();
    for p in &args.paths {
        diags.extend(validate_path(p, &args.root.options(), !args.no_data));
    }
    let (errors, warnings) = tally(&diags);
    if args.parts && errors == 0 {
        print_parts(&args);
    }
    match args.format {
        Format::Json => {
            let doc = serde_json::json!({
                "diagnostics": diags,
                "errors": errors,
                "warnings": warnings,
            });
            crate::cli::output::println(
                &serde_json::to_string_pretty(&doc).unwrap_or_else(|_| "{}".into()),
            );
        }
        Format::Text => {
            eprint!("{}", render_text(&diags, stderr_color()));
            if errors + warnings == 0 {
                eprintln!("ok: {} checked, no problems", args.paths.len());
            } else {
                eprintln!("{errors} error(s), {warnings} warning(s)");
            }
        }
    }
    if errors > 0 || (args.deny_warnings && warnings > 0) {
        Exit::Error
    } else {
        Exit::Pass
    }
}

/// `--parts`: the parts of every suite among the paths.
fn print_parts(args: &ValidateArgs) {
    let env = crate::render::environment();
    for path in &args.paths {
        let dir = if path.is_dir() {
            path.clone()
        } else {
            path.parent().unwrap_or(Path::new(".")).to_path_buf()
        };
        if let (Some(suite), _) = load_suite_with(&dir, &env, &args.root.options()) {
            crate::cli::output::print(&crate::cli::parts::text(&suite));
        }
    }
}
