//! `caldera render`: prints exactly what LLM mode would send for each judge (system
//! prompt and rendered user prompt, evidence fenced), without calling anything; first,
//! the suite's own evidence that the judges read.

use std::path::PathBuf;

use clap::Args;

use crate::cli::{Exit, stderr_color};
use crate::diag::render_text;
use crate::load::inputs::load_inputs;
use crate::run::llm::{SYSTEM_PROMPT, unit_prompt};
use crate::run::units::prepare;

/// Arguments of `caldera render`.
#[derive(Debug, Args)]
pub(crate) struct RenderArgs {
    /// The suite folder.
    #[arg(value_name = "SUITE_DIR")]
    pub suite: PathBuf,
    /// Only this judge (its dimension name).
    #[arg(long, value_name = "DIMENSION")]
    pub judge: Option<String>,
    /// Only this repo (per-repo judges).
    #[arg(long, value_name = "ID")]
    pub repo: Option<String>,
    /// Inputs instead of suite.yaml's.
    #[command(flatten)]
    pub input: crate::cli::InputArgs,
    /// Project root and confinement.
    #[command(flatten)]
    pub root: crate::cli::RootArgs,
}

/// Runs the command.
pub(crate) fn execute(args: RenderArgs) -> Exit {
    let env = crate::render::environment();
    let Some(suite) =
        crate::cli::load_valid_suite(&args.suite, &env, &args.root.options(), "rendered")
    else {
        return Exit::Error;
    };
    if let Some(name) = &args.judge
        && !suite.judges.iter().any(|j| &j.spec.dimension == name)
    {
        let names: Vec<&str> = suite
            .judges
            .iter()
            .map(|j| j.spec.dimension.as_str())
            .collect();
        eprintln!(
            "error: the suite has no judge `{name}`{}",
            crate::diag::did_you_mean_help(name, names.iter().copied())
                .map_or(String::new(), |h| format!("; {h}"))
        );
        return Exit::Error;
    }
    let overrides = args.input.overrides();
    let ctx = match load_inputs(&suite, &overrides)
        .and_then(|inputs| crate::run::context::shared_context(&env, &suite, &inputs))
    {
        Ok(c) => c,
        Err(d) => {
            eprint!("{}", render_text(&d, stderr_color()));
            return Exit::Error;
        }
    };
    print_suite_evidence(&suite, &ctx, args.judge.is_none() && args.repo.is_none());
    let mut failed = false;
    for plan in &suite.judges {
        if args
            .judge
            .as_ref()
            .is_some_and(|j| j != &plan.spec.dimension)
        {
            continue;
        }
        if plan.spec.llm == crate::spec::judge::LlmUse::Never {
            crate::cli::output::println(&format!(
                "===== {} =====\n(nothing would be sent: `llm: never`, the judge is scored by its heuristic)",
                plan.spec.dimension
            ));
            continue;
        }
        for unit in prepare(&env, plan, &ctx) {
            if args.repo.is_some() && unit.repo != args.repo {
                continue;
            }
            let title = match &unit.repo {
                Some(r) => format!("{} / {r}", plan.spec.dimension),
                None => plan.spec.dimension.clone(),
            };
            crate::cli::output::println(&format!("===== {title} ====="));
            match unit_prompt(&env, plan, &unit) {
                Ok(prompt) => {
                    let text = match prompt.cache_prefix {
                        // Where the part shared by every unit ends, as a provider may
                        // cache it.
                        Some(at) => format!(
                            "{}\n----- cache break: the part above is cached across units -----\n{}",
                            &prompt.text[..at],
                            &prompt.text[at..]
                        ),
                        None => prompt.text,
                    };
                    crate::cli::output::println(&format!(
                        "----- system -----\n{SYSTEM_PROMPT}\n----- user -----\n{text}"
                    ));
                }
                Err(reason) => {
                    failed = true;
                    crate::cli::output::println(&format!("(nothing would be sent: {reason})"));
                }
            }
        }
    }
    if failed { Exit::Error } else { Exit::Pass }
}

/// The suite's own evidence, first: every judge's evidence and prompt rest on it, and it
/// appears in no prompt by itself. Rendering one judge or repo names it only, so the
/// prompt asked for is not buried under it.
fn print_suite_evidence(
    suite: &crate::load::suite::Suite,
    ctx: &crate::evidence::eval::Context,
    whole: bool,
) {
    let evidence = crate::run::context::suite_evidence(suite, ctx);
    if evidence.is_empty() {
        return;
    }
    if !whole {
        let names: Vec<&str> = evidence.keys().map(String::as_str).collect();
        crate::cli::output::println(&format!(
            "(suite evidence {}: shown when the whole suite is rendered, without --judge and --repo)",
            names.join(", ")
        ));
        return;
    }
    let json = serde_json::to_string_pretty(&evidence)
        .unwrap_or_else(|e| format!("(the suite evidence cannot be shown: {e})"));
    crate::cli::output::println(&format!(
        "===== suite evidence =====\n(computed once from `suite.yaml`; every judge reads it)\n{json}"
    ));
}
