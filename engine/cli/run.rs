//! `caldera run`: validate the suite, read its inputs, judge every dimension, write the
//! JSON result and print the table.

use std::path::PathBuf;

use clap::Args;

use crate::cli::{Exit, stderr_color, stdout_color};
use crate::diag::{render_text, tally};
use crate::load::suite::load_suite;
use crate::report;
use crate::run::context::Overrides;
use crate::run::llm::{LlmOptions, LlmRunError, run_llm};
use crate::run::result::{FAIL, NO_SCORE, RunResult};
use crate::run::{RunOptions, run_heuristic};

/// `--provider` values.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum ProviderArg {
    /// Anthropic Messages API (`ANTHROPIC_API_KEY`, `ANTHROPIC_BASE_URL`).
    Anthropic,
    /// An OpenAI-compatible server (`OPENAI_API_KEY`, `OPENAI_BASE_URL`).
    Openai,
    /// The `claude` command-line tool on PATH.
    ClaudeCli,
}

impl From<ProviderArg> for crate::provider::ProviderKind {
    fn from(p: ProviderArg) -> Self {
        match p {
            ProviderArg::Anthropic => crate::provider::ProviderKind::Anthropic,
            ProviderArg::Openai => crate::provider::ProviderKind::Openai,
            ProviderArg::ClaudeCli => crate::provider::ProviderKind::ClaudeCli,
        }
    }
}

/// `--cache` values.
#[derive(Debug, Clone, Copy, clap::ValueEnum, Default)]
pub enum CacheArg {
    /// Read hits and write new verdicts.
    #[default]
    On,
    /// Neither read nor write.
    Off,
    /// Read hits, never write.
    ReadOnly,
    /// Call again and overwrite existing entries.
    Refresh,
}

/// Arguments of `caldera run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// The suite folder (e.g. judges.d/trivy).
    #[arg(value_name = "SUITE_DIR")]
    pub suite: PathBuf,
    /// Score with each judge's heuristic only: no model, no network.
    #[arg(long)]
    pub heuristic: bool,
    /// Analysis results folder (overrides suite.yaml's inputs.results).
    #[arg(long, value_name = "DIR")]
    pub results: Option<PathBuf>,
    /// Ground-truth folder (overrides suite.yaml's inputs.ground_truth).
    #[arg(long, value_name = "DIR")]
    pub ground_truth: Option<PathBuf>,
    /// A named input of the suite read from FILE for this run (repeatable), e.g.
    /// `--input baseline=runs/last.json`; `NAME=` runs without it (null to judges).
    #[arg(long = "input", value_name = "NAME=FILE", value_parser = parse_named_input)]
    pub inputs: Vec<(String, Option<PathBuf>)>,
    /// Where to write the JSON result [default: results/<suite>/<run id>.json].
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Exit 1 when the score the decision rests on (exact, never rounded) is below this
    /// value; the bar then stands in for the decision table. Without it, exit 1 when the
    /// decision is FAIL or no judge scored. Errors and low coverage fail the run either way.
    #[arg(long, value_name = "SCORE")]
    pub fail_under: Option<f64>,
    /// A judge that ends in `error` does not fail the run by itself (it still counts at
    /// the lowest score in the score the decision rests on). Same as the suite's
    /// `allow_errors: true`.
    #[arg(long)]
    pub allow_errors: bool,
    /// Print the JSON result on stdout instead of the table.
    #[arg(long)]
    pub json: bool,
    /// LLM provider [default: ANTHROPIC_API_KEY set -> anthropic, else OPENAI_API_KEY or
    /// OPENAI_BASE_URL -> openai, else `claude` on PATH].
    #[arg(long, value_enum, help_heading = "LLM mode")]
    pub provider: Option<ProviderArg>,
    /// Model alias (sonnet, opus, haiku, ...) or full id [default: the suite's `model`].
    #[arg(long, help_heading = "LLM mode", conflicts_with = "models")]
    pub model: Option<String>,
    /// A panel of models, comma-separated: each judge is scored by every model, the
    /// consensus is the median, and agreement (kappa, alpha) is reported.
    #[arg(long, value_delimiter = ',', help_heading = "LLM mode")]
    pub models: Vec<String>,
    /// Write every pairwise kappa table in full. Past 8 models they are summarised
    /// (each model's mean kappa, the pairs that agree least and most), so the result
    /// stays the size of what a person reads.
    #[arg(long, help_heading = "LLM mode")]
    pub panel_matrices: bool,
    /// Most model requests in flight at once; rate-limit answers (429) lower the limit
    /// and successes raise it back.
    #[arg(long, default_value_t = 8, value_name = "N", help_heading = "LLM mode")]
    pub concurrency: usize,
    /// How the verdict cache is used.
    #[arg(long, value_enum, default_value_t, help_heading = "LLM mode")]
    pub cache: CacheArg,
    /// The verdict cache folder.
    #[arg(
        long,
        default_value = ".caldera/cache",
        value_name = "DIR",
        help_heading = "LLM mode"
    )]
    pub cache_dir: PathBuf,
    /// Answer only from the cache; a miss leaves the judge unscored (offline CI).
    #[arg(long, help_heading = "LLM mode")]
    pub replay: bool,
    /// Send every uncached prompt through Anthropic's Message Batches API (half price,
    /// answers within hours): the run waits for the batches, and an interrupted run
    /// resumes by polling the same batches.
    #[arg(long, help_heading = "LLM mode", conflicts_with = "replay")]
    pub batch: bool,
    /// Stop before a call that could take the run's cost above this (USD).
    #[arg(long, value_name = "USD", help_heading = "LLM mode")]
    pub max_cost: Option<f64>,
    /// Per-request timeout in seconds.
    #[arg(
        long,
        default_value_t = 120,
        value_name = "SECS",
        help_heading = "LLM mode"
    )]
    pub timeout: u64,
    /// JSONL log of every model interaction [default: next to the result,
    /// `<result>.interactions.jsonl`].
    #[arg(long, value_name = "FILE", help_heading = "LLM mode")]
    pub log: Option<PathBuf>,
    /// Explain cache misses.
    #[arg(short, long, help_heading = "LLM mode")]
    pub verbose: bool,
}

/// `NAME=FILE` of `--input`; `NAME=` (no file) runs without that input, as if an optional
/// file were missing.
pub fn parse_named_input(text: &str) -> Result<(String, Option<PathBuf>), String> {
    match text.split_once('=') {
        Some((name, path)) if !name.is_empty() => Ok((
            name.to_owned(),
            (!path.is_empty()).then(|| PathBuf::from(path)),
        )),
        _ => Err(format!(
            "expected NAME=FILE (a named input of suite.yaml and a JSON file) or NAME= (without it), got `{text}`"
        )),
    }
}

/// Runs the command.
pub fn execute(args: RunArgs) -> Exit {
    let env = crate::render::environment();
    let (suite, diags) = load_suite(&args.suite, &env);
    let (errors, _) = tally(&diags);
    if !diags.is_empty() {
        eprint!("{}", render_text(&diags, stderr_color()));
    }
    let Some(suite) = suite.filter(|_| errors == 0) else {
        eprintln!(
            "error: the suite is not valid ({errors} error(s)); nothing was run. \
             `caldera validate {}` shows the same report.",
            args.suite.display()
        );
        return Exit::Error;
    };
    let overrides = Overrides {
        results: args.results.clone(),
        ground_truth: args.ground_truth.clone(),
        inputs: args.inputs.iter().cloned().collect(),
    };
    let outcome = if args.heuristic {
        run_heuristic(
            &env,
            &suite,
            &RunOptions {
                overrides,
                allow_errors: args.allow_errors,
            },
        )
    } else {
        let run_id = crate::run::new_run_id();
        let out = args.out.clone().unwrap_or_else(|| {
            PathBuf::from("results")
                .join(&suite.spec.suite)
                .join(format!("{run_id}.json"))
        });
        let log = args
            .log
            .clone()
            .unwrap_or_else(|| out.with_extension("interactions.jsonl"));
        if let Some(dir) = log.parent().filter(|d| !d.as_os_str().is_empty())
            && let Err(e) = std::fs::create_dir_all(dir)
        {
            eprintln!("error: cannot create {}: {e}", dir.display());
            return Exit::Error;
        }
        let mut models = args.models.clone();
        if let Some(m) = &args.model {
            models = vec![m.clone()];
        }
        let options = LlmOptions {
            overrides,
            provider: args.provider.map(Into::into),
            models,
            concurrency: args.concurrency,
            cache: match args.cache {
                CacheArg::On => crate::llm::cache::CacheMode::On,
                CacheArg::Off => crate::llm::cache::CacheMode::Off,
                CacheArg::ReadOnly => crate::llm::cache::CacheMode::ReadOnly,
                CacheArg::Refresh => crate::llm::cache::CacheMode::Refresh,
            },
            cache_dir: args.cache_dir.clone(),
            replay: args.replay,
            max_cost: args.max_cost,
            log: Some(log),
            timeout: std::time::Duration::from_secs(args.timeout.max(1)),
            progress: !args.json,
            verbose: args.verbose,
            run_id: Some(run_id),
            allow_errors: args.allow_errors,
            batch: args.batch,
            panel_matrices: args.panel_matrices,
        };
        match run_llm(&env, &suite, &options) {
            Ok(result) => {
                let args = RunArgs {
                    out: Some(out),
                    ..args
                };
                return finish(&result, &args);
            }
            Err(LlmRunError::Interrupted(message)) => {
                eprintln!("{message}");
                return Exit::Interrupted;
            }
            Err(LlmRunError::Invalid(diags)) => Err(diags),
        }
    };
    let result = match outcome {
        Ok(r) => r,
        Err(diags) => {
            eprint!("{}", render_text(&diags, stderr_color()));
            eprintln!("error: the run could not start; nothing was judged");
            return Exit::Error;
        }
    };
    finish(&result, &args)
}

/// Writes and prints the result; maps it to an exit status.
pub fn finish(result: &RunResult, args: &RunArgs) -> Exit {
    let path = args
        .out
        .clone()
        .unwrap_or_else(|| report::json::default_path(result));
    if let Err(e) = report::json::write(result, &path) {
        eprintln!("error: cannot write the result to {}: {e}", path.display());
        // The result must not be lost: print it instead.
        println!(
            "{}",
            serde_json::to_string_pretty(result).unwrap_or_default()
        );
        return Exit::Error;
    }
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(result).unwrap_or_default()
        );
    } else {
        print!("{}", report::table::render(result, stdout_color()));
        println!("\n  result written to {}", path.display());
    }
    // With a bar, the bar replaces the decision table; the gates (no score, errors,
    // coverage) fail the run either way. The bar is read against the exact score the
    // decision rests on, never a rounded one.
    let gated = result.gate.blocked || result.decision == NO_SCORE;
    let below_bar = args.fail_under.is_some_and(|min| {
        result
            .gate
            .decision_score
            .is_none_or(|s| !crate::run::result::reaches(s, min))
    });
    let failed = gated || (args.fail_under.is_none() && result.decision == FAIL);
    if (failed || below_bar) && !args.json {
        eprintln!("{}: {}", result.decision, result.gate.reason);
    }
    if below_bar && let Some(min) = args.fail_under {
        eprintln!(
            "below --fail-under: the score the decision rests on is {}, the bar is {min}",
            result
                .gate
                .decision_score
                .map_or_else(|| "none".to_owned(), |s| format!("{s:.4}"))
        );
    }
    if failed || below_bar {
        Exit::Below
    } else {
        Exit::Pass
    }
}
