//! The LLM mode flags, declared once. `caldera run` and `caldera merge` flatten the whole
//! group, so a merge asks the models a run would, with the same help and defaults;
//! `caldera calibrate` and `caldera plan` flatten its model choice ([`ModelArgs`]), and
//! keep only what is theirs (calibrate takes no concurrency, batch or budget, and plan's
//! `--timeout` defaults to 30 s for token counts).

use std::path::PathBuf;

use clap::Args;

/// Which provider and which model or panel: the flags of every command that asks models
/// or counts what asking them would cost (`run`, `merge`, `calibrate`, `plan`).
#[derive(Debug, Args, Clone)]
pub(crate) struct ModelArgs {
    /// LLM provider [default: ANTHROPIC_API_KEY set -> anthropic, else OPENAI_API_KEY or
    /// OPENAI_BASE_URL -> openai, else `claude` on PATH].
    #[arg(long, value_enum, help_heading = "LLM mode")]
    pub provider: Option<ProviderArg>,
    /// Model alias (sonnet, opus, haiku, ...) or full id [default: the suite's `model`].
    #[arg(long, help_heading = "LLM mode", conflicts_with = "models")]
    pub model: Option<String>,
    /// A panel of models, comma-separated: each judge is scored by every model, the
    /// consensus is the median, and agreement (kappa, alpha) is reported (`calibrate`:
    /// each model is one more source compared with the labels).
    #[arg(long, value_delimiter = ',', help_heading = "LLM mode")]
    pub models: Vec<String>,
}

impl ModelArgs {
    /// The models asked: `--model` alone, else the `--models` panel (empty: the suite's).
    pub(crate) fn chosen(&self) -> Vec<String> {
        match &self.model {
            Some(m) => vec![m.clone()],
            None => self.models.clone(),
        }
    }
}

/// The verdict cache: how it is used, where it is, and whether to answer from it alone
/// (`run`, `merge`, `calibrate`; `plan` only looks entries up, with `--no-cache`).
#[derive(Debug, Args, Clone)]
pub(crate) struct CacheArgs {
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
    /// Answer only from the cache; a miss leaves that judge or repo unscored (offline CI).
    #[arg(long, help_heading = "LLM mode")]
    pub replay: bool,
}

/// Model, provider, concurrency, cache, batch, budget and log flags of LLM mode.
#[derive(Debug, Args, Clone)]
pub(crate) struct LlmArgs {
    /// Provider and model or panel.
    #[command(flatten)]
    pub choice: ModelArgs,
    /// Write every pairwise kappa table in full. Past 8 models they are summarised
    /// (each model's mean kappa, the pairs that agree least and most), so the result
    /// stays the size of what a person reads.
    #[arg(long, help_heading = "LLM mode")]
    pub panel_matrices: bool,
    /// Most model requests in flight at once; rate-limit answers (429) lower the limit
    /// and successes raise it back.
    #[arg(long, default_value_t = 8, value_name = "N", help_heading = "LLM mode")]
    pub concurrency: usize,
    /// The verdict cache.
    #[command(flatten)]
    pub cache: CacheArgs,
    /// Ask every model N times per unit (epochs): the unit's score is the median of the
    /// repeats, their spread is reported, and a judge whose repeats disagree is flagged
    /// as unstable. Each repeat has its own cache entry.
    #[arg(
        long,
        default_value_t = 1,
        value_name = "N",
        value_parser = clap::value_parser!(u32).range(1..=100),
        help_heading = "LLM mode"
    )]
    pub repeat: u32,
    /// With `--repeat N`: ask a unit's first K repeats, and the rest only when those K
    /// do not all give the same score (a settled unit saves N - K calls; the result
    /// says how many were saved). Not with `--batch`, which sends every ask at once.
    #[arg(
        long,
        value_name = "K",
        value_parser = clap::value_parser!(u32).range(2..=99),
        requires = "repeat",
        conflicts_with = "batch",
        help_heading = "LLM mode"
    )]
    pub settle: Option<u32>,
    /// Send every uncached prompt through a batch API, Anthropic's Message Batches or
    /// the OpenAI Batch API (half price, answers within hours): the run waits for the
    /// batches, and an interrupted run resumes by polling the same batches.
    #[arg(long, help_heading = "LLM mode", conflicts_with = "replay")]
    pub batch: bool,
    /// Stop before a call that could take the run's cost above this (USD).
    #[arg(long, value_name = "USD", help_heading = "LLM mode", value_parser = parse_cost)]
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
}

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

impl From<CacheArg> for crate::llm::cache::CacheMode {
    fn from(c: CacheArg) -> Self {
        match c {
            CacheArg::On => crate::llm::cache::CacheMode::On,
            CacheArg::Off => crate::llm::cache::CacheMode::Off,
            CacheArg::ReadOnly => crate::llm::cache::CacheMode::ReadOnly,
            CacheArg::Refresh => crate::llm::cache::CacheMode::Refresh,
        }
    }
}

/// `--max-cost`: a finite amount of US dollars, 0 or more.
pub(crate) fn parse_cost(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(x) if x.is_finite() && x >= 0.0 => Ok(x),
        Ok(x) => Err(format!(
            "the cost must be a finite number of dollars, 0 or more, got {x}"
        )),
        Err(_) => Err(format!("expected an amount in US dollars, got `{text}`")),
    }
}
