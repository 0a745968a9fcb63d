//! Runs a batch of judge calls concurrently, with retries, the cache, the one
//! re-ask, the budget and the interaction log.
//!
//! Every job ends as [`Outcome::Scored`] or [`Outcome::Unscored`] with a reason.
//! There is no default score: a reply that cannot be read twice, a provider that
//! keeps failing, or a budget that cannot cover the call leaves the job unscored.

use std::io::IsTerminal;
use std::sync::Arc;
use std::time::Instant;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde::{Deserialize, Serialize};
use tokio::task::JoinSet;

use super::cache::{Cache, CacheEntry, CacheKey, CacheMode, KeyInputs, Lookup};
use super::cost::{Budget, Reservation, call_cost, estimate_cost};
use super::log::{CallStatus, InteractionLog, LogRecord};
use crate::provider::limiter::{Limiter, LimiterStats};
use crate::provider::models::ModelTable;
use crate::provider::retry::{RetryPolicy, complete_with_retry};
use crate::provider::{
    CacheHint, Message, Provider, ProviderKind, ProviderReply, ProviderRequest, Reasoning, Role,
    Usage,
};
use crate::reply::{FormatError, ParsedVerdict, ReplyError, SharedFormat};
use crate::spec::verdict_format::VerdictFormat;

/// What to ask the model.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LlmRequest {
    /// Alias (`sonnet`) or full model id.
    pub model: String,
    /// System prompt.
    pub system: Option<String>,
    /// The rendered prompt.
    pub prompt: String,
    /// Output token limit.
    pub max_tokens: u32,
    /// Sampling temperature (0 for judges).
    pub temperature: f32,
    /// Which ask of `--repeat N` this is (0 without repeats); part of the cache key only.
    #[serde(skip_serializing_if = "is_zero")]
    pub repeat: u32,
    /// Thinking before the verdict (a judge's `reasoning:`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<Reasoning>,
    /// The prompt prefix the provider may cache (not part of the cache key: it changes
    /// what a call costs, not what it answers).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache: Option<CacheHint>,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

impl LlmRequest {
    /// A request with no system prompt, 2048 output tokens and temperature 0.
    pub fn new(model: impl Into<String>, prompt: impl Into<String>) -> Self {
        LlmRequest {
            model: model.into(),
            system: None,
            prompt: prompt.into(),
            max_tokens: 2048,
            temperature: 0.0,
            repeat: 0,
            reasoning: None,
            cache: None,
        }
    }
}

/// One judge call.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Job {
    /// Unique within the batch; echoed in the outcome and the log.
    pub id: String,
    /// The judge (dimension).
    pub judge: String,
    /// The item judged, for per-item judges.
    pub item: Option<String>,
    /// What to send.
    pub request: LlmRequest,
    /// How to read the reply: the judge's verdict format, compiled once when the judge
    /// was loaded (it compares and serialises as the declared format).
    pub format: SharedFormat,
    /// With `--settle`: this ask's place among the repeats of its unit and model.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub settle: Option<super::settle::Settle>,
}

impl Job {
    /// A job reading its reply with `format`, compiled here; the error when the format
    /// cannot read any reply. For jobs built by hand: a run's jobs carry their judge's
    /// format, compiled when the judge was loaded.
    pub fn new(
        id: impl Into<String>,
        judge: impl Into<String>,
        item: Option<String>,
        request: LlmRequest,
        format: &VerdictFormat,
    ) -> Result<Job, FormatError> {
        Ok(Job {
            id: id.into(),
            judge: judge.into(),
            item,
            request,
            format: SharedFormat::new(format)?,
            settle: None,
        })
    }
}

/// A job that produced a verdict.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Scored {
    /// The verdict.
    pub verdict: ParsedVerdict,
    /// The reply it was read from.
    pub reply: String,
    /// Tokens used (both asks; zero for a cache hit).
    pub usage: Usage,
    /// USD spent by this run on this job (zero for a cache hit; `None` when no price is known).
    pub cost_usd: Option<f64>,
    /// Served from the cache.
    pub cached: bool,
    /// Whether the verdict came from the re-ask.
    pub reasked: bool,
    /// Provider attempts made, retries and re-ask included (zero for a cache hit).
    pub attempts: u32,
}

/// Why a job has no verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum UnscoredKind {
    /// The declared verdict format is invalid. (A job carries its format compiled, so
    /// the executor no longer ends a job this way; kept for results that name it.)
    BadFormat,
    /// The provider failed after retries.
    Provider,
    /// The reply could not be read, even after the re-ask.
    Unreadable,
    /// The budget could not cover the call.
    Budget,
    /// Replay mode and the cache had no entry.
    ReplayMiss,
    /// Replay mode and the cache's entry failed its checks (edited, torn, out of scale).
    BadCacheEntry,
    /// The job's task failed unexpectedly.
    Internal,
    /// Not asked: the first repeats of its unit and model agreed (`--settle`).
    Settled,
}

/// The outcome of one job.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum Outcome {
    /// A verdict.
    Scored(Box<Scored>),
    /// No verdict, and why.
    Unscored {
        /// The category.
        kind: UnscoredKind,
        /// A sentence for the report.
        reason: String,
        /// Provider attempts made before giving up.
        attempts: u32,
        /// Tokens of every reply that came back before giving up (an unreadable reply
        /// and its re-ask cost as much as a readable one).
        usage: Usage,
        /// USD those replies cost (`None` when no price is known).
        cost_usd: Option<f64>,
    },
}

impl Outcome {
    /// The verdict, if scored.
    pub fn scored(&self) -> Option<&Scored> {
        match self {
            Outcome::Scored(s) => Some(s),
            Outcome::Unscored { .. } => None,
        }
    }
}

/// A job's id with its outcome.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobOutcome {
    /// The job id.
    pub id: String,
    /// The judge.
    pub judge: String,
    /// The item.
    pub item: Option<String>,
    /// What happened.
    pub outcome: Outcome,
    /// A cached entry for this job that could not be used (and why), when there was one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache_problem: Option<String>,
}

/// Whether to draw a progress bar.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ProgressMode {
    /// On stderr, only when stderr is a terminal.
    #[default]
    Auto,
    /// Never.
    Hidden,
}

/// How the executor runs.
#[derive(Debug)]
pub struct ExecutorOptions {
    /// Requests in flight at once (at least 1): the ceiling of the adaptive limit, which
    /// rate limits lower and successes raise back.
    pub concurrency: usize,
    /// Retry policy per call.
    pub retry: RetryPolicy,
    /// Aliases and prices.
    pub models: ModelTable,
    /// The verdict cache, if any.
    pub cache: Option<Cache>,
    /// The interaction log, if any.
    pub log: Option<InteractionLog>,
    /// `--max-cost` in USD.
    pub max_cost: Option<f64>,
    /// Re-ask once with the parse error after an unreadable reply (default on).
    pub reask: bool,
    /// Progress bar.
    pub progress: ProgressMode,
    /// Run id written to every log record.
    pub run_id: String,
    /// Explain every cache miss on stderr (`-v`).
    pub explain_misses: bool,
}

impl Default for ExecutorOptions {
    fn default() -> Self {
        ExecutorOptions {
            concurrency: 4,
            retry: RetryPolicy::default(),
            models: ModelTable::builtin(),
            cache: None,
            log: None,
            max_cost: None,
            reask: true,
            progress: ProgressMode::Auto,
            run_id: new_run_id(),
            explain_misses: false,
        }
    }
}

/// A fresh run id: UTC time plus random hex.
pub fn new_run_id() -> String {
    format!(
        "{}-{:08x}",
        chrono::Utc::now().format("%Y%m%dT%H%M%SZ"),
        rand::random::<u32>()
    )
}

/// What every job of a run shares (the batch path in [`super::batch`] reads it too).
pub(super) struct Inner {
    /// Requests in flight: `--concurrency` at most, lowered by rate limits.
    pub(super) limiter: Limiter,
    pub(super) provider: Option<Provider>,
    pub(super) kind: ProviderKind,
    /// The provider's base URL, part of every cache key.
    pub(super) endpoint: String,
    pub(super) options: ExecutorOptions,
    pub(super) budget: Option<Budget>,
    /// Jobs that share a cacheable prompt prefix go out leader first.
    pub(super) gates: super::prefix::PrefixGates,
    /// The repeat groups of `--settle`.
    pub(super) settles: super::settle::SettleGroups,
}

/// Runs jobs. Cheap to clone; clones share the budget and log.
#[derive(Clone)]
pub struct Executor {
    pub(super) inner: Arc<Inner>,
}

impl Executor {
    /// An executor calling `provider`.
    pub fn new(provider: Provider, options: ExecutorOptions) -> Executor {
        let kind = provider.kind();
        let endpoint = provider.endpoint();
        Executor::build(Some(provider), kind, endpoint, options)
    }

    /// An executor that only reads `cache` as if `kind` at `endpoint` had answered: no
    /// call is ever made, and a job without a usable entry is unscored (`replay-miss`,
    /// `bad-cache-entry`).
    pub fn replay(
        kind: ProviderKind,
        endpoint: &str,
        cache_dir: impl Into<std::path::PathBuf>,
        mut options: ExecutorOptions,
    ) -> Executor {
        options.cache = Some(Cache::new(cache_dir, CacheMode::Replay));
        Executor::build(None, kind, endpoint.to_owned(), options)
    }

    fn build(
        provider: Option<Provider>,
        kind: ProviderKind,
        endpoint: String,
        options: ExecutorOptions,
    ) -> Executor {
        let budget = options.max_cost.map(Budget::new);
        Executor {
            inner: Arc::new(Inner {
                limiter: Limiter::new(options.concurrency),
                provider,
                kind,
                endpoint,
                options,
                budget,
                gates: super::prefix::PrefixGates::default(),
                settles: super::settle::SettleGroups::default(),
            }),
        }
    }

    /// What the adaptive concurrency limit did: where it is, how low it went, how often
    /// rate limits cut it.
    pub fn concurrency(&self) -> LimiterStats {
        self.inner.limiter.stats()
    }

    /// USD spent so far through this executor.
    pub fn spent(&self) -> f64 {
        self.inner.budget.as_ref().map_or(0.0, Budget::spent)
    }

    /// Runs every job; outcomes come back in job order.
    pub async fn run(&self, jobs: Vec<Job>) -> Vec<JobOutcome> {
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        let _ = tx.send(((), jobs));
        drop(tx);
        self.run_streamed(rx)
            .await
            .into_iter()
            .flat_map(|((), outcomes)| outcomes)
            .collect()
    }

    /// Runs jobs as they arrive, in groups each with a tag, until every sender is gone:
    /// a run sends the first judge's calls while the others' evidence is still being
    /// computed. Outcomes come back by group, in arrival order, each in job order.
    pub async fn run_streamed<T>(
        &self,
        mut groups: tokio::sync::mpsc::UnboundedReceiver<(T, Vec<Job>)>,
    ) -> Vec<(T, Vec<JobOutcome>)> {
        let bar = progress_bar(self.inner.options.progress, 0);
        let mut set = JoinSet::new();
        let mut collected = Collected::default();
        let mut open = true;
        while open || !set.is_empty() {
            tokio::select! {
                group = groups.recv(), if open => match group {
                    Some((tag, jobs)) => {
                        bar.inc_length(jobs.len() as u64);
                        let g = collected.open(tag, &jobs);
                        for (index, job) in jobs.into_iter().enumerate() {
                            self.spawn_job(&mut set, &bar, (g, index), job);
                        }
                    }
                    None => open = false,
                },
                Some(joined) = set.join_next(), if !set.is_empty() => {
                    if let Ok((at, outcome)) = joined {
                        collected.store(at, outcome);
                    }
                }
            }
        }
        bar.finish_and_clear();
        // Durable when the run ends: wait for the cache's writer, off the runtime.
        let inner = self.inner.clone();
        if let Ok(errors) = tokio::task::spawn_blocking(move || inner.flush_cache()).await {
            for e in errors {
                log::warn!("{e}");
            }
        }
        collected.finish()
    }

    /// Starts one job on `set`; it waits for a slot under the adaptive limit (see
    /// `provider::limiter`), and a job waiting on a retry holds none.
    fn spawn_job(
        &self,
        set: &mut JoinSet<((usize, usize), JobOutcome)>,
        bar: &ProgressBar,
        at: (usize, usize),
        job: Job,
    ) {
        let inner = self.inner.clone();
        let bar = bar.clone();
        set.spawn(async move {
            let (outcome, cache_problem) = inner.run_job(&job).await;
            bar.inc(1);
            (
                at,
                JobOutcome {
                    id: job.id,
                    judge: job.judge,
                    item: job.item,
                    outcome,
                    cache_problem,
                },
            )
        });
    }

    /// [`Executor::run`] on a fresh multi-threaded tokio runtime, for synchronous
    /// callers. An interrupt (Ctrl-C, SIGTERM) stops the run: calls in flight are
    /// dropped, and every verdict already received is on disk before this returns
    /// [`ExecutorError::Interrupted`], so the same command resumes where it stopped.
    pub fn run_blocking(&self, jobs: Vec<Job>) -> Result<Vec<JobOutcome>, ExecutorError> {
        self.block_on_interruptible(self.run(jobs), String::new)
    }

    /// [`Executor::run_streamed`] on a fresh runtime, stopped by an interrupt like
    /// [`Executor::run_blocking`].
    pub fn run_streamed_blocking<T>(
        &self,
        groups: tokio::sync::mpsc::UnboundedReceiver<(T, Vec<Job>)>,
    ) -> Result<Vec<(T, Vec<JobOutcome>)>, ExecutorError> {
        self.block_on_interruptible(self.run_streamed(groups), String::new)
    }

    /// Runs `future` on a fresh runtime until it ends or a signal stops it; on a signal,
    /// waits for the cache's writes and says what was kept (and `pending`, what else
    /// the next run picks up).
    pub(super) fn block_on_interruptible<T>(
        &self,
        future: impl Future<Output = T>,
        pending: impl FnOnce() -> String,
    ) -> Result<T, ExecutorError> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .map_err(ExecutorError::Runtime)?;
        let outcome = runtime.block_on(async {
            tokio::select! {
                done = future => Ok(done),
                signal = interrupted() => Err(signal),
            }
        });
        drop(runtime);
        outcome.map_err(|signal| {
            for e in self.inner.flush_cache() {
                log::warn!("{e}");
            }
            ExecutorError::Interrupted {
                signal,
                saved: self.inner.options.cache.as_ref().map_or(0, Cache::written),
                pending: pending(),
            }
        })
    }
}

/// Why [`Executor::run_blocking`] returned no outcomes: the executor stopped, not the
/// run (the run's own error, `crate::run::RunError`, is made of it by `run::models`).
#[derive(Debug, thiserror::Error)]
pub enum ExecutorError {
    /// The async runtime could not start.
    #[error("cannot start the async runtime: {0}")]
    Runtime(std::io::Error),
    /// A signal stopped the run; the verdicts received are in the cache.
    #[error(
        "interrupted by {signal}: {saved} verdict(s) received in this run are in the cache{pending}; \
         the same command resumes without asking for them again"
    )]
    Interrupted {
        /// `SIGINT` or `SIGTERM`.
        signal: &'static str,
        /// Verdicts written to the cache by this run.
        saved: u64,
        /// What else is kept for the next run (batches still running), as a clause.
        pending: String,
    },
}

/// Resolves when the process is asked to stop (Ctrl-C, or SIGTERM on Unix); never
/// resolves when the handlers cannot be installed.
pub async fn interrupted() -> &'static str {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let Ok(mut term) = signal(SignalKind::terminate()) else {
            return match tokio::signal::ctrl_c().await {
                Ok(()) => "SIGINT",
                Err(_) => std::future::pending().await,
            };
        };
        tokio::select! {
            r = tokio::signal::ctrl_c() => match r {
                Ok(()) => "SIGINT",
                Err(_) => { term.recv().await; "SIGTERM" }
            },
            _ = term.recv() => "SIGTERM",
        }
    }
    #[cfg(not(unix))]
    {
        match tokio::signal::ctrl_c().await {
            Ok(()) => "SIGINT",
            Err(_) => std::future::pending().await,
        }
    }
}

/// The outcomes of streamed groups, stored as their jobs end, by (group, job).
struct Collected<T> {
    tags: Vec<T>,
    slots: Vec<Vec<Option<JobOutcome>>>,
    /// Each job's id, judge and item, for an outcome that never came.
    meta: Vec<Vec<(String, String, Option<String>)>>,
}

impl<T> Default for Collected<T> {
    fn default() -> Self {
        Collected {
            tags: Vec::new(),
            slots: Vec::new(),
            meta: Vec::new(),
        }
    }
}

impl<T> Collected<T> {
    /// Makes room for a group of `jobs`; its index.
    fn open(&mut self, tag: T, jobs: &[Job]) -> usize {
        self.tags.push(tag);
        self.slots.push(vec![None; jobs.len()]);
        self.meta.push(
            jobs.iter()
                .map(|j| (j.id.clone(), j.judge.clone(), j.item.clone()))
                .collect(),
        );
        self.tags.len() - 1
    }

    fn store(&mut self, (group, job): (usize, usize), outcome: JobOutcome) {
        if let Some(slot) = self.slots.get_mut(group).and_then(|s| s.get_mut(job)) {
            *slot = Some(outcome);
        }
    }

    /// Every group's outcomes, a job whose task ended without one (it panicked) as
    /// unscored with that reason: never a silent gap.
    fn finish(self) -> Vec<(T, Vec<JobOutcome>)> {
        let missing = |(id, judge, item)| JobOutcome {
            id,
            judge,
            item,
            outcome: Outcome::Unscored {
                kind: UnscoredKind::Internal,
                reason: "the job's task panicked".into(),
                attempts: 0,
                usage: Usage::default(),
                cost_usd: Some(0.0),
            },
            cache_problem: None,
        };
        self.tags
            .into_iter()
            .zip(self.slots.into_iter().zip(self.meta))
            .map(|(tag, (slots, meta))| {
                let outcomes = slots
                    .into_iter()
                    .zip(meta)
                    .map(|(slot, meta)| slot.unwrap_or_else(|| missing(meta)))
                    .collect();
                (tag, outcomes)
            })
            .collect()
    }
}

/// The outcome of an ask that was not sent because the first asks of its group agreed.
fn settled(settle: &super::settle::Settle, score: f64) -> Outcome {
    Outcome::Unscored {
        kind: UnscoredKind::Settled,
        reason: format!(
            "not asked: the first {} asks agreed on {score}",
            settle.first
        ),
        attempts: 0,
        usage: Usage::default(),
        cost_usd: Some(0.0),
    }
}

/// The temperature a request carries: none for a model the catalogue marks as a
/// reasoning model, which refuses any but its default.
fn sampling(models: &ModelTable, resolved: &str, temperature: f32) -> Option<f32> {
    (!models.is_reasoning(resolved)).then_some(temperature)
}

fn progress_bar(mode: ProgressMode, total: u64) -> ProgressBar {
    if mode == ProgressMode::Hidden || !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
    if let Ok(style) =
        ProgressStyle::with_template("{spinner} judging {pos}/{len} [{elapsed}] {wide_bar}")
    {
        bar.set_style(style);
    }
    bar
}

/// What one ask produced, for logging.
pub(super) struct Ask {
    pub(super) reply: Option<ProviderReply>,
    pub(super) tries: u32,
    pub(super) cost: Option<f64>,
}

/// What a job has used so far: every provider attempt, and the tokens and cost of every
/// reply that came back, readable or not, so an unscored job shows what it spent.
pub(super) struct Tally {
    pub(super) usage: Usage,
    pub(super) cost: Option<f64>,
    pub(super) attempts: u32,
}

impl Tally {
    pub(super) fn new() -> Tally {
        Tally {
            usage: Usage::default(),
            cost: Some(0.0),
            attempts: 0,
        }
    }

    pub(super) fn add(&mut self, ask: &Ask) {
        self.attempts += ask.tries;
        if let Some(reply) = &ask.reply {
            self.usage.input_tokens += reply.usage.input_tokens;
            self.usage.output_tokens += reply.usage.output_tokens;
            self.usage.reasoning_tokens += reply.usage.reasoning_tokens;
            self.usage.cache_write_tokens += reply.usage.cache_write_tokens;
            self.usage.cache_read_tokens += reply.usage.cache_read_tokens;
        }
        self.cost = match (self.cost, ask.cost) {
            (Some(a), Some(b)) => Some(a + b),
            _ => None,
        };
    }

    pub(super) fn unscored(&self, kind: UnscoredKind, reason: String) -> Outcome {
        Outcome::Unscored {
            kind,
            reason,
            attempts: self.attempts,
            usage: self.usage,
            cost_usd: self.cost,
        }
    }
}

impl Inner {
    /// Waits for the cache's queued writes (see [`Cache::flush`]).
    pub(super) fn flush_cache(&self) -> Vec<super::cache::CacheError> {
        self.options
            .cache
            .as_ref()
            .map(Cache::flush)
            .unwrap_or_default()
    }

    /// The cache key of a job whose model resolves to `resolved`.
    pub(super) fn key_of(&self, job: &Job, resolved: &str) -> CacheKey {
        CacheKey::new(&KeyInputs {
            provider: self.kind.name(),
            endpoint: &self.endpoint,
            model: resolved,
            system: job.request.system.as_deref(),
            prompt: &job.request.prompt,
            max_tokens: job.request.max_tokens,
            temperature: job.request.temperature,
            format: job.format.spec(),
            repeat: job.request.repeat,
            reasoning: job.request.reasoning,
        })
    }

    /// Waits until a job whose prompt prefix another job is already asking may go (see
    /// [`super::prefix`]); the first job of a prefix gets the guard to drop once asked.
    async fn wait_for_prefix(&self, request: &ProviderRequest) -> Option<super::prefix::Leader> {
        let (hint, first) = request.cache.zip(request.messages.first())?;
        let (prefix, _) = hint.split(&first.content)?;
        let key = super::prefix::prefix_key(&request.model, request.system.as_deref(), prefix);
        self.gates.turn(key).await
    }

    /// The request a job sends first: its prompt to its model (the alias itself for a
    /// provider that takes aliases).
    pub(super) fn first_request(&self, job: &Job, resolved: &str) -> ProviderRequest {
        let model = match &self.provider {
            Some(p) if p.wants_alias() => job.request.model.clone(),
            _ => resolved.to_owned(),
        };
        ProviderRequest {
            model,
            system: job.request.system.clone(),
            messages: vec![Message {
                role: Role::User,
                content: job.request.prompt.clone(),
            }],
            max_tokens: job.request.max_tokens,
            temperature: sampling(&self.options.models, resolved, job.request.temperature),
            response_schema: match &self.provider {
                Some(p) if p.binds_schemas() => job.format.response_schema().cloned().map(Arc::new),
                _ => None,
            },
            reasoning: match &self.provider {
                Some(Provider::Anthropic(_)) => job.request.reasoning,
                Some(Provider::Openai(_)) if self.options.models.is_reasoning(resolved) => {
                    job.request.reasoning
                }
                _ => None,
            },
            cache: match &self.provider {
                Some(Provider::Anthropic(_) | Provider::Openai(_)) => job.request.cache,
                _ => None,
            },
        }
    }

    /// Runs one job; also returns the reason a cached entry for it was refused, if one was.
    async fn run_job(&self, job: &Job) -> (Outcome, Option<String>) {
        let mut recorder = None;
        if let Some(settle) = &job.settle {
            if settle.index < settle.first {
                recorder = Some(self.settles.recorder(settle));
            } else if let Some(score) = self.settles.agreed(settle).await {
                return (settled(settle, score), None);
            }
        }
        let mut cache_problem = None;
        let outcome = self.run_job_noting(job, &mut cache_problem).await;
        if let Some(r) = recorder.as_mut() {
            r.score(outcome.scored().map(|s| s.verdict.score));
        }
        (outcome, cache_problem)
    }

    async fn run_job_noting(&self, job: &Job, cache_problem: &mut Option<String>) -> Outcome {
        let mut tally = Tally::new();
        let format = &job.format;
        let resolved = self.options.models.resolve(&job.request.model).to_string();
        let key = self.key_of(job, &resolved);
        let started = chrono::Utc::now();
        let clock = Instant::now();
        if let Some(cache) = &self.options.cache {
            // A replay that cannot answer from the cache is logged as such, whatever the reason.
            let log_replay_miss = |reason: &str| {
                self.log(
                    job,
                    &resolved,
                    &job.request.prompt,
                    started,
                    clock,
                    LogFields {
                        status: CallStatus::ReplayMiss,
                        error: Some(reason),
                        ..LogFields::default()
                    },
                );
            };
            match cache.get(&key, format) {
                Ok(Lookup::Hit(entry)) => {
                    self.log(
                        job,
                        &resolved,
                        &job.request.prompt,
                        started,
                        clock,
                        LogFields {
                            reply: Some(&entry.reply),
                            status: CallStatus::Cached,
                            parsed_score: Some(entry.verdict.score),
                            ..LogFields::default()
                        },
                    );
                    let entry = *entry;
                    return Outcome::Scored(Box::new(Scored {
                        verdict: entry.verdict,
                        reply: entry.reply,
                        usage: Usage::default(),
                        cost_usd: Some(0.0),
                        cached: true,
                        reasked: entry.reasked,
                        attempts: 0,
                    }));
                }
                Ok(Lookup::Invalid(why)) if cache.mode() == CacheMode::Replay => {
                    let reason = format!("replay: {why}");
                    log_replay_miss(&reason);
                    *cache_problem = Some(why);
                    return tally.unscored(UnscoredKind::BadCacheEntry, reason);
                }
                // A refused entry is a miss: the model is asked again (and, when the
                // cache writes, the fresh verdict replaces the entry).
                Ok(Lookup::Invalid(why)) => {
                    log::warn!("[{}] {why}; asking the model again", job.id);
                    *cache_problem = Some(why);
                }
                Ok(Lookup::Miss) if cache.mode() == CacheMode::Replay => {
                    let reason = format!("replay: {}", cache.explain_miss(&key));
                    log_replay_miss(&reason);
                    return tally.unscored(UnscoredKind::ReplayMiss, reason);
                }
                Ok(Lookup::Miss) => {
                    if self.options.explain_misses {
                        log::info!("cache miss [{}]: {}", job.id, cache.explain_miss(&key));
                    }
                }
                // An unreadable cache directory is reported but does not stop the call.
                Err(e) => log::warn!("{e}"),
            }
        }
        let Some(provider) = &self.provider else {
            return tally.unscored(UnscoredKind::Provider, "no provider configured".into());
        };
        let mut request = self.first_request(job, &resolved);
        let mut leader = self.wait_for_prefix(&request).await;
        let mut first_error: Option<ReplyError> = None;
        for ask in 1..=2u32 {
            let started = chrono::Utc::now();
            let clock = Instant::now();
            let last_prompt = request
                .messages
                .last()
                .map(|m| m.content.clone())
                .unwrap_or_default();
            let result = self.ask(provider, &request, &resolved).await;
            // The provider has answered (or given up): its cache entry, if any, exists.
            drop(leader.take());
            let (ask_result, error) = match result {
                Ok(a) => (a, None),
                Err((a, e)) => (a, Some(e)),
            };
            tally.add(&ask_result);
            let reply_text = ask_result.reply.as_ref().map(|r| r.text.clone());
            let thinking = ask_result.reply.as_ref().and_then(|r| r.thinking.clone());
            let mut fields = LogFields {
                tries: ask_result.tries,
                attempt: ask,
                cost: ask_result.cost,
                usage: ask_result
                    .reply
                    .as_ref()
                    .map(|r| r.usage)
                    .unwrap_or_default(),
                reply: reply_text.as_deref(),
                thinking: thinking.as_deref(),
                ..LogFields::default()
            };
            if let Some((kind, message)) = error {
                fields.status = if kind == UnscoredKind::Budget {
                    CallStatus::Budget
                } else {
                    CallStatus::Error
                };
                fields.error = Some(&message);
                self.log(job, &request.model, &last_prompt, started, clock, fields);
                let reason = match &first_error {
                    Some(first) => format!("{message} (on the re-ask after: {first})"),
                    None => message.clone(),
                };
                return tally.unscored(kind, reason);
            }
            let Some(reply) = ask_result.reply else {
                return tally.unscored(UnscoredKind::Internal, "no reply and no error".into());
            };
            let bound = request.response_schema.is_some();
            match format.parse_sent(&reply.text, reply.truncated, bound) {
                Ok(verdict) => {
                    fields.status = CallStatus::Ok;
                    fields.parsed_score = Some(verdict.score);
                    self.log(job, &request.model, &last_prompt, started, clock, fields);
                    if let Some(cache) = &self.options.cache {
                        let entry = CacheEntry {
                            key: key.hex.clone(),
                            inputs: key.summary.clone(),
                            reply: reply.text.clone(),
                            verdict: verdict.clone(),
                            usage: tally.usage,
                            reasked: ask == 2,
                            created: chrono::Utc::now().to_rfc3339(),
                        };
                        cache.put(&entry);
                    }
                    return Outcome::Scored(Box::new(Scored {
                        verdict,
                        reply: reply.text,
                        usage: tally.usage,
                        cost_usd: tally.cost,
                        cached: false,
                        reasked: ask == 2,
                        attempts: tally.attempts,
                    }));
                }
                Err(parse_error) => {
                    let message = parse_error.to_string();
                    fields.status = CallStatus::Unreadable;
                    fields.error = Some(&message);
                    self.log(job, &request.model, &last_prompt, started, clock, fields);
                    if ask == 2 || !self.options.reask {
                        let reason = match &first_error {
                            Some(first) => format!(
                                "the reply could not be read after one re-ask: {parse_error} (first reply: {first})"
                            ),
                            None => format!("the reply could not be read: {parse_error}"),
                        };
                        return tally.unscored(UnscoredKind::Unreadable, reason);
                    }
                    request.messages.push(Message {
                        role: Role::Assistant,
                        content: reply.text,
                    });
                    request.messages.push(Message {
                        role: Role::User,
                        content: format.reask_message(&parse_error),
                    });
                    first_error = Some(parse_error);
                }
            }
        }
        tally.unscored(UnscoredKind::Internal, "re-ask loop ended".into())
    }

    /// One ask: reserve budget, call with retries, settle.
    async fn ask(
        &self,
        provider: &Provider,
        request: &ProviderRequest,
        model_id: &str,
    ) -> Result<Ask, (Ask, (UnscoredKind, String))> {
        let price = self.options.models.price(model_id);
        // The CLI reports no tokens and is not billed per token, so no budget applies to it.
        let metered = provider.kind() != ProviderKind::ClaudeCli;
        // The slot comes first: only calls about to start hold a budget reservation,
        // not every job queued behind the concurrency limit.
        let first = self.limiter.acquire().await;
        let reservation: Option<Reservation> = match (&self.budget, metered) {
            (Some(budget), true) => {
                let Some(price) = price else {
                    let e = super::cost::BudgetError::UnknownPrice {
                        model: model_id.to_string(),
                    };
                    // Nothing was sent, so nothing was spent: a known $0.
                    return Err((
                        Ask {
                            reply: None,
                            tries: 0,
                            cost: Some(0.0),
                        },
                        (UnscoredKind::Budget, e.to_string()),
                    ));
                };
                let mut texts: Vec<&str> = request
                    .messages
                    .iter()
                    .map(|m| m.content.as_str())
                    .collect();
                if let Some(system) = &request.system {
                    texts.push(system);
                }
                match budget.reserve(estimate_cost(&price, &texts, request.max_tokens)) {
                    Ok(r) => Some(r),
                    Err(e) => {
                        return Err((
                            Ask {
                                reply: None,
                                tries: 0,
                                cost: Some(0.0),
                            },
                            (UnscoredKind::Budget, e.to_string()),
                        ));
                    }
                }
            }
            _ => None,
        };
        let attempted = complete_with_retry(
            provider,
            request,
            &self.options.retry,
            &self.limiter,
            Some(first),
        )
        .await;
        let cost = match &attempted.result {
            Ok(reply) if metered => {
                call_cost(price, self.options.models.info(model_id), &reply.usage)
            }
            Ok(_) => None,
            Err(_) => Some(0.0),
        };
        if let (Some(budget), Some(r)) = (&self.budget, reservation) {
            budget.settle(r, cost.unwrap_or(0.0));
        }
        match attempted.result {
            Ok(reply) => Ok(Ask {
                reply: Some(reply),
                tries: attempted.attempts,
                cost,
            }),
            Err(e) => Err((
                Ask {
                    reply: None,
                    tries: attempted.attempts,
                    cost,
                },
                (
                    UnscoredKind::Provider,
                    match &attempted.gave_up {
                        Some(why) => {
                            format!("{e} (after {} attempt(s): {why})", attempted.attempts)
                        }
                        None => format!("{e} (after {} attempt(s))", attempted.attempts),
                    },
                ),
            )),
        }
    }

    pub(super) fn log(
        &self,
        job: &Job,
        model: &str,
        prompt: &str,
        started: chrono::DateTime<chrono::Utc>,
        clock: Instant,
        f: LogFields<'_>,
    ) {
        let Some(log) = &self.options.log else { return };
        let record = LogRecord {
            run_id: self.options.run_id.clone(),
            job: job.id.clone(),
            judge: job.judge.clone(),
            item: job.item.clone(),
            started: started.to_rfc3339(),
            finished: chrono::Utc::now().to_rfc3339(),
            duration_ms: clock.elapsed().as_millis() as u64,
            provider: self.kind.name().to_string(),
            model: model.to_string(),
            system: job.request.system.clone(),
            prompt: prompt.to_string(),
            reply: f.reply.map(str::to_string),
            input_tokens: f.usage.input_tokens,
            output_tokens: f.usage.output_tokens,
            cost_usd: f.cost,
            status: f.status,
            error: f.error.map(str::to_string),
            parsed_score: f.parsed_score,
            attempt: f.attempt,
            tries: f.tries,
            batch: f.batch.map(str::to_string),
            thinking: f.thinking.map(str::to_string),
            reasoning_tokens: f.usage.reasoning_tokens,
        };
        if let Err(e) = log.write(&record) {
            log::warn!(
                "cannot write the interaction log {}: {e}",
                log.path().display()
            );
        }
    }
}

/// The per-call parts of a log record.
pub(super) struct LogFields<'a> {
    pub(super) reply: Option<&'a str>,
    pub(super) usage: Usage,
    pub(super) cost: Option<f64>,
    pub(super) status: CallStatus,
    pub(super) error: Option<&'a str>,
    pub(super) parsed_score: Option<f64>,
    pub(super) attempt: u32,
    pub(super) tries: u32,
    /// The Message Batch the answer came from.
    pub(super) batch: Option<&'a str>,
    /// The model's thinking, for the log alone.
    pub(super) thinking: Option<&'a str>,
}

impl Default for LogFields<'_> {
    fn default() -> Self {
        LogFields {
            reply: None,
            usage: Usage::default(),
            cost: None,
            status: CallStatus::Ok,
            error: None,
            parsed_score: None,
            attempt: 1,
            tries: 0,
            batch: None,
            thinking: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request() -> LlmRequest {
        LlmRequest::new("sonnet", "rate this")
    }

    #[test]
    fn a_job_carries_its_format_compiled_and_shows_it_as_declared() {
        let declared = VerdictFormat {
            scale: [1.0, 10.0],
            ..VerdictFormat::default()
        };
        let job = Job::new("j", "accuracy", None, request(), &declared).unwrap();
        assert_eq!(job.format.spec(), &declared);
        assert_eq!(
            serde_json::to_value(&job.format).unwrap(),
            serde_json::to_value(&declared).unwrap(),
            "the cache key hashes the declared format"
        );
        let again = Job::new("j", "accuracy", None, request(), &declared).unwrap();
        assert_eq!(job, again, "separately compiled, the same declared format");
        let other = Job::new("j", "accuracy", None, request(), &VerdictFormat::default());
        assert_ne!(job, other.unwrap());
        assert_eq!(job.format.parse(r#"{"score": 7}"#).unwrap().score, 7.0);
    }

    #[test]
    fn a_format_that_cannot_read_a_reply_is_refused_when_the_job_is_built() {
        let bad = VerdictFormat {
            scale: [5.0, 1.0],
            ..VerdictFormat::default()
        };
        let err = Job::new("j", "accuracy", None, request(), &bad).unwrap_err();
        assert_eq!(err, crate::reply::FormatError::BadScale(5.0, 1.0));
    }
}
