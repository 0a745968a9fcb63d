//! `caldera test`: run a suite's judge test cases (`<suite>/cases/<case>/`) and report
//! like `cargo test`: one line per case and judge, the failures with what did not hold,
//! and a closing line `N passed, N failed`.

use std::path::{Path, PathBuf};

use clap::Args;

use crate::cli::run::ProviderArg;
use crate::cli::{Exit, stderr_color, stdout_color};
use crate::diag::{Diagnostic, render_text};
use crate::judgetest::cassette::RecordOptions;
use crate::judgetest::{Case, CheckResult, TestOptions, discover, load_case, run_case, update};
use crate::load::suite::Suite;

/// `--format` values.
#[derive(Debug, Clone, Copy, Default, clap::ValueEnum)]
pub(crate) enum TestFormat {
    /// Lines like `cargo test`.
    #[default]
    Text,
    /// JUnit XML on stdout, for CI.
    Junit,
}

/// Arguments of `caldera test`.
#[derive(Debug, Args)]
pub(crate) struct TestArgs {
    /// The suite folder (e.g. judges.d/trivy); its cases are in `cases/<case>/`.
    #[arg(value_name = "SUITE_DIR")]
    pub suite: PathBuf,
    /// Run only checks whose name (`case::judge`) contains this text.
    #[arg(value_name = "FILTER")]
    pub filter: Option<String>,
    /// Output format.
    #[arg(long, value_enum, default_value_t)]
    pub format: TestFormat,
    /// Rewrite each case's expect.yaml from what its judges conclude now (after a
    /// review of the change); then check against the new expectations.
    #[arg(long)]
    pub update: bool,
    /// Ask a model for every LLM case's replies and rewrite its cassettes (the provider
    /// is chosen as for `caldera run`; point it at a fake server to record offline).
    #[arg(long)]
    pub record: bool,
    /// The provider `--record` asks.
    #[arg(long, value_enum, requires = "record")]
    pub provider: Option<ProviderArg>,
    /// Per-request timeout in seconds for `--record`.
    #[arg(long, default_value_t = 120, value_name = "SECS")]
    pub timeout: u64,
}

/// Runs the command.
pub(crate) fn execute(args: TestArgs) -> Exit {
    let env = crate::render::environment();
    let Some(suite) = load_valid_suite(&args.suite, &env) else {
        return Exit::Error;
    };
    let dirs = discover(&args.suite);
    if dirs.is_empty() {
        eprintln!(
            "error: {} has no test cases; add {}/<case>/case.yaml",
            crate::diag::display_path(&args.suite),
            crate::diag::display_path(&args.suite.join(crate::judgetest::CASES_DIR))
        );
        return Exit::Error;
    }
    let mut checks = Vec::new();
    let mut broken: Vec<(String, String)> = Vec::new();
    let text = matches!(args.format, TestFormat::Text);
    let mut cases = Vec::new();
    for dir in &dirs {
        match load_case(dir, &suite.confinement) {
            Ok(case) if selected(&case, args.filter.as_deref()) => cases.push(case),
            Ok(_) => {}
            Err(diags) => broken.push((case_name(dir), report(&diags))),
        }
    }
    if text {
        crate::cli::output::println(&format!(
            "\nrunning {} case(s) of {}\n",
            cases.len(),
            crate::diag::display_path(&args.suite)
        ));
    }
    for case in &cases {
        match test_case(&env, &suite, case, &args) {
            Ok(found) => {
                let found = filtered(found, case, args.filter.as_deref());
                if text {
                    found.iter().for_each(print_line);
                }
                checks.extend(found);
            }
            Err(diags) => {
                if text {
                    crate::cli::output::println(&format!(
                        "test {} ... {}",
                        safe(&case.name),
                        paint("ERROR", false)
                    ));
                }
                broken.push((case.name.clone(), report(&diags)));
            }
        }
    }
    let passed = checks.iter().filter(|c| c.passed()).count();
    let failed = checks.len() - passed + broken.len();
    match args.format {
        TestFormat::Text => print_summary(&checks, &broken, passed, failed),
        TestFormat::Junit => crate::cli::output::print(&crate::view::judgetest::render(
            &suite.spec.suite,
            &checks,
            &broken,
        )),
    }
    if !broken.is_empty() {
        Exit::Error
    } else if failed > 0 {
        Exit::Below
    } else {
        Exit::Pass
    }
}

/// Loads the suite; an invalid one is reported and gives `None`.
fn load_valid_suite(dir: &Path, env: &minijinja::Environment<'static>) -> Option<Suite> {
    crate::cli::load_valid_suite(dir, env, &Default::default(), "tested")
}

/// Runs a case (recording and updating when asked).
fn test_case(
    env: &minijinja::Environment<'static>,
    suite: &Suite,
    case: &Case,
    args: &TestArgs,
) -> Result<Vec<CheckResult>, Vec<Diagnostic>> {
    let options = TestOptions {
        record: args.record.then(|| RecordOptions {
            provider: args.provider.map(Into::into),
            timeout: std::time::Duration::from_secs(args.timeout.max(1)),
        }),
        record_hint: format!(
            "record it with `caldera test {} {} --record`",
            args.suite.display(),
            case.name
        ),
    };
    let run = run_case(env, suite, case, &options)?;
    if !args.update {
        return Ok(run.checks);
    }
    let (spec, notes) = update::updated(case, &run);
    for note in notes {
        eprintln!("note: {note}");
    }
    let text = update::render(&spec).map_err(|e| {
        vec![Diagnostic::error(
            crate::diag::Code::Io,
            format!("cannot write expectations: {e}"),
        )]
    })?;
    let path = case.expect_file();
    if std::fs::read_to_string(&path).ok().as_deref() != Some(text.as_str()) {
        // The atomic writer refuses a link planted as expect.yaml rather than follow it.
        crate::outfile::write_atomic(&path, text.as_bytes()).map_err(|e| {
            vec![
                Diagnostic::error(crate::diag::Code::Io, format!("cannot write: {e}"))
                    .in_file(&path),
            ]
        })?;
        eprintln!("updated {}", crate::diag::display_path(&path));
    }
    let case = load_case(&case.dir, &suite.confinement)?;
    let options = TestOptions {
        record: None,
        ..options
    };
    Ok(run_case(env, suite, &case, &options)?.checks)
}

/// Whether a case can have a check the filter selects.
fn selected(case: &Case, filter: Option<&str>) -> bool {
    let Some(f) = filter else { return true };
    case.name.contains(f)
        || case
            .expect
            .heuristic
            .keys()
            .any(|j| format!("{}::{j}", case.name).contains(f))
        || case
            .expect
            .llm
            .keys()
            .any(|j| format!("{}::{j} (llm)", case.name).contains(f))
}

/// The checks the filter selects.
fn filtered(checks: Vec<CheckResult>, case: &Case, filter: Option<&str>) -> Vec<CheckResult> {
    match filter {
        Some(f) if !case.name.contains(f) => checks
            .into_iter()
            .filter(|c| c.name().contains(f))
            .collect(),
        _ => checks,
    }
}

fn case_name(dir: &Path) -> String {
    dir.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Prints diagnostics on stderr and returns them as text (for JUnit).
fn report(diags: &[Diagnostic]) -> String {
    eprint!("{}", render_text(diags, stderr_color()));
    render_text(diags, false)
}

fn print_line(check: &CheckResult) {
    let status = if check.passed() {
        paint("ok", true)
    } else {
        paint("FAILED", false)
    };
    crate::cli::output::println(&format!("test {} ... {status}", safe(&check.name())));
}

fn print_summary(
    checks: &[CheckResult],
    broken: &[(String, String)],
    passed: usize,
    failed: usize,
) {
    let failing: Vec<&CheckResult> = checks.iter().filter(|c| !c.passed()).collect();
    if !failing.is_empty() || !broken.is_empty() {
        crate::cli::output::println("\nfailures:");
        for c in &failing {
            crate::cli::output::println(&format!("\n---- {} ----", safe(&c.name())));
            for f in &c.failures {
                crate::cli::output::println(&format!("    {}", safe(f)));
            }
        }
        for (case, _) in broken {
            crate::cli::output::println(&format!(
                "\n---- {} ----\n    the case could not run (see the errors above)",
                safe(case)
            ));
        }
        crate::cli::output::println("\nfailures:");
        for c in &failing {
            crate::cli::output::println(&format!("    {}", safe(&c.name())));
        }
        for (case, _) in broken {
            crate::cli::output::println(&format!("    {}", safe(case)));
        }
    }
    crate::cli::output::println(&format!("\n{passed} passed, {failed} failed"));
}

/// Case names (folder names) and what an expectation found, safe for a terminal.
fn safe(text: &str) -> std::borrow::Cow<'_, str> {
    crate::diag::printable_line(text)
}

fn paint(text: &str, good: bool) -> String {
    if !stdout_color() {
        return text.to_owned();
    }
    let code = if good { 32 } else { 31 };
    format!("\x1b[{code}m{text}\x1b[0m")
}
