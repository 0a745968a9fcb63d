//! `caldera calibrate`: agreement of a suite's judges with people's labels.

use std::path::PathBuf;

use clap::Args;
use indexmap::IndexMap;

use crate::calibrate::{SourceScores, calibrate, labels, sources};
use crate::cli::{Exit, stderr_color};
use crate::diag::{Diagnostic, render_text};
use crate::load::inputs::load_inputs;
use crate::run::llm::LlmOptions;
use crate::view::calibrate::text::{Style, render};

/// `--format` values.
#[derive(Debug, Clone, Copy, Default, clap::ValueEnum)]
pub(crate) enum CalibrateFormat {
    /// Aligned tables.
    #[default]
    Table,
    /// The calibration as JSON.
    Json,
    /// Markdown tables.
    Markdown,
    /// One self-contained HTML page, confusion matrices shaded by count.
    Html,
}

/// Arguments of `caldera calibrate`.
#[derive(Debug, Args)]
pub(crate) struct CalibrateArgs {
    /// The suite folder (e.g. judges.d/trivy).
    #[arg(value_name = "SUITE_DIR")]
    pub suite: PathBuf,
    /// People's scores: CSV with a header `unit,dimension,score,rater` (`repo` for `unit`;
    /// an optional `note`), or JSONL objects with those keys (`.jsonl`).
    #[arg(long, value_name = "FILE")]
    pub labels: PathBuf,
    /// Also read per-repo verdicts from a run result (repeatable; `.json` or `.json.gz`):
    /// `scope: repo` judges and panel members.
    #[arg(long = "result", value_name = "FILE")]
    pub results_files: Vec<PathBuf>,
    /// Leave out the heuristic (judged one repo at a time by default).
    #[arg(long)]
    pub no_heuristic: bool,
    /// Also judge each repo with these models (through the cache): the provider and the
    /// model or panel, as `caldera run`.
    #[command(flatten)]
    pub choice: crate::cli::llm_args::ModelArgs,
    /// The verdict cache, as `caldera run`.
    #[command(flatten)]
    pub cache: crate::cli::llm_args::CacheArgs,
    /// Output format.
    #[arg(long, value_enum, default_value_t)]
    pub format: CalibrateFormat,
    /// Inputs instead of suite.yaml's.
    #[command(flatten)]
    pub input: crate::cli::InputArgs,
}

/// Runs the command.
pub(crate) fn execute(args: CalibrateArgs) -> Exit {
    let env = crate::render::environment();
    let Some(suite) =
        crate::cli::load_valid_suite(&args.suite, &env, &Default::default(), "calibrated")
    else {
        return Exit::Error;
    };
    let dims: Vec<&str> = suite
        .judges
        .iter()
        .map(|j| j.spec.dimension.as_str())
        .collect();
    let labels = match labels::read(&args.labels, &dims) {
        Ok(l) => l,
        Err(d) => return fail(&d),
    };
    let mut notes = Vec::new();
    let scores = match gather(&env, &suite, &args, &mut notes) {
        Ok(s) => s,
        Err(d) => return fail(&d),
    };
    let mut calibration = calibrate(
        &suite,
        &crate::diag::display_path(&args.labels),
        &labels,
        &scores,
    );
    calibration.warnings.extend(unmatched(&labels, &scores));
    calibration.warnings.extend(notes);
    match args.format {
        CalibrateFormat::Table => crate::cli::output::print(&render(&calibration, Style::Table)),
        CalibrateFormat::Markdown => {
            crate::cli::output::print(&render(&calibration, Style::Markdown))
        }
        CalibrateFormat::Html => {
            crate::cli::output::print(&crate::view::calibrate::html::page(&calibration))
        }
        CalibrateFormat::Json => crate::cli::output::println(
            &serde_json::to_string_pretty(&calibration).unwrap_or_default(),
        ),
    }
    Exit::Pass
}

/// Every source's scores: the heuristic and models by running, then result files.
fn gather(
    env: &minijinja::Environment<'static>,
    suite: &crate::load::suite::Suite,
    args: &CalibrateArgs,
    notes: &mut Vec<String>,
) -> Result<IndexMap<String, SourceScores>, Vec<Diagnostic>> {
    let mut scores = IndexMap::new();
    let models = args.choice.chosen();
    if !args.no_heuristic || !models.is_empty() {
        let overrides = args.input.overrides();
        let inputs = load_inputs(suite, &overrides)?;
        if !args.no_heuristic {
            scores.insert(
                "heuristic".to_owned(),
                sources::heuristic(env, suite, &inputs, notes),
            );
        }
        if !models.is_empty() {
            let opts = LlmOptions {
                provider: args.choice.provider.map(Into::into),
                models: models.clone(),
                cache: args.cache.cache.into(),
                cache_dir: args.cache.cache_dir.clone(),
                replay: args.cache.replay,
                progress: false,
                ..LlmOptions::default()
            };
            scores.extend(sources::llm(env, suite, &inputs, &opts)?);
        }
    }
    for path in &args.results_files {
        // Read as `caldera report` reads a result: bounded in size, `.json.gz` inflated,
        // checked to be a run result of a format this caldera reads.
        let run = crate::report::model::Report::read(path).map_err(|d| vec![d])?;
        scores.extend(sources::from_result(path, &run.document()).map_err(|d| vec![d])?);
    }
    Ok(scores)
}

/// Labelled units that no source scored (not in the results, or never scored).
fn unmatched(labels: &[labels::Label], scores: &IndexMap<String, SourceScores>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for l in labels {
        let scored = scores
            .values()
            .any(|s| s.get(&l.dimension).is_some_and(|u| u.contains_key(&l.unit)));
        let line = format!(
            "no judge scored `{}` on {}: it is left out of that dimension's figures",
            l.unit, l.dimension
        );
        if !scored && !out.contains(&line) {
            out.push(line);
        }
    }
    out
}

fn fail(diags: &[Diagnostic]) -> Exit {
    eprint!("{}", render_text(diags, stderr_color()));
    eprintln!("error: nothing was calibrated");
    Exit::Error
}
