//! `caldera plan`: the calls, cached hits, tokens and cost an LLM run would have, without
//! sending anything (unless `--count-tokens` asks the provider to count tokens).

use std::path::{Path, PathBuf};

use clap::Args;
use indexmap::IndexMap;

use crate::cli::{Exit, stderr_color};
use crate::diag::{Diagnostic, render_text};
use crate::plan::{PlanOptions, plan};
use crate::provider::models::Price;
use crate::view;

/// `--format` values.
#[derive(Debug, Clone, Copy, Default, clap::ValueEnum)]
pub(crate) enum PlanFormat {
    /// An aligned table.
    #[default]
    Table,
    /// The plan as JSON.
    Json,
}

/// Arguments of `caldera plan`.
#[derive(Debug, Args)]
pub(crate) struct PlanArgs {
    /// The suite folder (e.g. judges.d/trivy).
    #[arg(value_name = "SUITE_DIR")]
    pub suite: PathBuf,
    /// Provider (whose cache entries count) and model or panel, as `caldera run`.
    #[command(flatten)]
    pub choice: crate::cli::llm_args::ModelArgs,
    /// Asks per unit and model, as `caldera run --repeat`.
    #[arg(long, default_value_t = 1, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=100))]
    pub repeat: u32,
    /// The verdict cache folder to look calls up in.
    #[arg(long, default_value = ".caldera/cache", value_name = "DIR")]
    pub cache_dir: PathBuf,
    /// Ignore the cache: every ask is a call.
    #[arg(long)]
    pub no_cache: bool,
    /// A YAML or JSON file of prices added to the built-in table and the suite's
    /// `prices:` (`{model-id-or-prefix: {input_per_mtok, output_per_mtok}}`).
    #[arg(long, value_name = "FILE")]
    pub prices: Option<PathBuf>,
    /// Exit 1 when the plan's highest cost is above this (USD), or cannot be known.
    #[arg(long, value_name = "USD")]
    pub max_cost: Option<f64>,
    /// Count input tokens with the provider's token-counting endpoint (Anthropic; needs
    /// ANTHROPIC_API_KEY). Without it, a plan makes no network call at all.
    #[arg(long)]
    pub count_tokens: bool,
    /// Per-request timeout in seconds for --count-tokens.
    #[arg(long, default_value_t = 30, value_name = "SECS")]
    pub timeout: u64,
    /// Output format.
    #[arg(long, value_enum, default_value_t)]
    pub format: PlanFormat,
    /// Print which part of a run each judge and piece of suite evidence is (per-repo,
    /// aggregate, constant or whole, and why) before the plan: what `caldera run
    /// --shard` can split.
    #[arg(long)]
    pub parts: bool,
    /// Inputs instead of suite.yaml's.
    #[command(flatten)]
    pub input: crate::cli::InputArgs,
}

/// Runs the command.
pub(crate) fn execute(args: PlanArgs) -> Exit {
    let env = crate::render::environment();
    let Some(suite) =
        crate::cli::load_valid_suite(&args.suite, &env, &Default::default(), "planned")
    else {
        return Exit::Error;
    };
    if args.parts {
        crate::cli::output::print(&crate::cli::parts::text(&suite));
    }
    let prices = match args.prices.as_deref().map(read_prices).transpose() {
        Ok(p) => p.unwrap_or_default(),
        Err(d) => return fail(&d),
    };
    let models = args.choice.chosen();
    let options = PlanOptions {
        overrides: args.input.overrides(),
        provider: args.choice.provider.map(Into::into),
        models,
        repeat: args.repeat,
        cache_dir: (!args.no_cache).then(|| args.cache_dir.clone()),
        prices,
        count_tokens: args.count_tokens,
        timeout: std::time::Duration::from_secs(args.timeout.max(1)),
    };
    let plan = match plan(&env, &suite, &options) {
        Ok(p) => p,
        Err(d) => return fail(&d),
    };
    match args.format {
        PlanFormat::Table => crate::cli::output::print(&view::plan::table(&plan)),
        PlanFormat::Json => {
            crate::cli::output::println(&serde_json::to_string_pretty(&plan).unwrap_or_default())
        }
    }
    match args.max_cost {
        Some(budget) if plan.exceeds(budget) => {
            eprintln!(
                "over budget: the plan could cost {}, and --max-cost is ${budget}",
                view::plan::cost(plan.total.cost)
            );
            Exit::Below
        }
        _ => Exit::Pass,
    }
}

fn fail(diags: &[Diagnostic]) -> Exit {
    eprint!("{}", render_text(diags, stderr_color()));
    eprintln!("error: nothing was planned");
    Exit::Error
}

/// Reads a `--prices` file, with located errors.
fn read_prices(path: &Path) -> Result<IndexMap<String, Price>, Vec<Diagnostic>> {
    let source = std::fs::read_to_string(path).map_err(|e| {
        vec![
            Diagnostic::error(crate::diag::Code::Io, format!("cannot read file: {e}"))
                .in_file(path),
        ]
    })?;
    crate::load::yaml::parse::<IndexMap<String, Price>>(path, &source).map(|p| p.value)
}
