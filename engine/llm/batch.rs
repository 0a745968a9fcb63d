//! `--batch`: every prompt the cache cannot answer goes through a batch API, at half
//! the list price, for nightly and large runs: Anthropic's Message Batches, or the OpenAI
//! Batch API with an OpenAI-compatible provider. One loop serves both; what differs
//! (how a batch is made, read and limited) is behind [`BatchApi`].
//!
//! The requests are split at the API's limits (Anthropic: 100,000 requests or 256 MB per
//! batch; OpenAI: 50,000 requests or 200 MB per input file, and one model per batch).
//! Each batch is recorded, as soon as the API has accepted it, in a state file under
//! the cache (`<cache>/batches/<batch id>.json`: the endpoint, and per request its cache
//! key, which is also its `custom_id`). A run stopped while it waits (Ctrl-C, a lost
//! terminal, `kill -9`) is resumed by the same command: it finds the unanswered
//! requests in those files and polls the same batches instead of sending them again.
//! Results go into the cache like direct answers and are costed at batch prices. An
//! errored or expired request is sent again in a follow-up batch, up to
//! [`BatchOptions::max_submissions`] times; an unreadable reply is re-asked once, in a
//! follow-up batch, as a direct call would be.
//!
//! A state file says which batch to poll and what its requests already cost, and the
//! cache folder it lives in is in the checkout by default, where a pull request can put
//! one. So a state is sealed (an HMAC under a key kept outside the checkout, see
//! [`super::seal`]) and only a state with a matching seal is resumed; any other is not
//! used, and the run says so. A state holds no model text: a resumed re-ask that has to
//! be sent again is sent as the first prompt, so nothing read from a file reaches a
//! request.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::bounded::read_regular_file;
use super::cache::{CacheEntry, CacheKey, Lookup};
use super::cost::{Reservation, estimate_cost};
use super::executor::{
    Ask, Executor, ExecutorError, Inner, Job, JobOutcome, LogFields, Outcome, Scored, Tally,
    UnscoredKind,
};
use super::log::CallStatus;
use super::seal::StateKey;
use super::writer::write_file;
use crate::provider::batch_api::{BatchApi, Polled};
use crate::provider::batches::{ItemResult, MAX_BYTES, MAX_REQUESTS};
use crate::provider::retry::retry_with;
use crate::provider::{Message, ProviderRequest, Role, Usage};
use crate::reply::{CompiledFormat, SharedFormat};

/// How batches are made and waited for.
#[derive(Debug, Clone)]
pub struct BatchOptions {
    /// Most requests per batch (the API's own limit, when lower, wins).
    pub max_requests: usize,
    /// Largest request body per batch, in bytes (the API's own limit, when lower, wins).
    pub max_bytes: usize,
    /// First wait between two looks at a batch; it grows by half each time, up to
    /// `poll_max`, and starts again when a batch ends.
    pub poll_min: Duration,
    /// Longest wait between two looks.
    pub poll_max: Duration,
    /// Times one request may be sent (the first time included): errored and expired
    /// requests are sent again until then.
    pub max_submissions: u32,
    /// The file holding the key that seals batch states (outside the checkout; made on
    /// first use). `None`: no state is written or resumed, so an interrupted run sends
    /// its requests again.
    pub key_file: Option<PathBuf>,
}

impl Default for BatchOptions {
    fn default() -> Self {
        BatchOptions {
            max_requests: MAX_REQUESTS,
            max_bytes: MAX_BYTES,
            poll_min: Duration::from_secs(1),
            poll_max: Duration::from_secs(60),
            max_submissions: 3,
            key_file: super::seal::default_key_file(),
        }
    }
}

/// What the batch path did.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct BatchReport {
    /// Batches this run created.
    pub created: usize,
    /// Requests sent in them, follow-ups included.
    pub submitted: usize,
    /// Of those, requests sent again: errored or expired ones, and re-asks.
    pub resubmitted: usize,
    /// Batches of an earlier, interrupted run that this run polled instead of sending
    /// their requests again.
    pub resumed: usize,
    /// Requests this run found waiting in those batches.
    pub resumed_requests: usize,
    /// Every batch this run read, resumed ones first.
    pub batch_ids: Vec<String>,
    /// State files not used (not sealed here, unreadable, not a regular file), and
    /// why; or why no state could be kept. The run summary lists them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub state_problems: Vec<String>,
}

/// The state file of one batch in flight.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct BatchState {
    version: u32,
    batch_id: String,
    /// The base URL the batch was sent to; another endpoint's batches are left alone.
    endpoint: String,
    created: String,
    /// The requests not yet read back.
    items: Vec<StateItem>,
    /// The HMAC of the state (with this field empty) under this machine's key.
    #[serde(default)]
    seal: String,
}

/// One request of a batch in flight.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct StateItem {
    /// The cache key of the job, also the request's `custom_id`.
    key: String,
    /// 1 for the prompt, 2 for the re-ask after an unreadable reply.
    ask: u32,
    /// Times this request has been sent, this batch included.
    submission: u32,
    /// Tokens of earlier replies to this job (the unreadable first reply of a re-ask).
    prior: Usage,
    /// What those replies cost.
    prior_cost: Option<f64>,
    /// Requests made for this job before this one.
    prior_attempts: u32,
    /// Why the first reply could not be read (re-asks only), for the reason a job left
    /// unscored gives. The reply itself is not kept (see the module docs).
    first_error: Option<String>,
    /// Its place in the batch (from 1): an OpenAI batch that fails names the requests
    /// at fault by line. Absent in states written before it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    line: Option<u64>,
}

/// 2: sealed, and no model text kept.
const STATE_VERSION: u32 = 2;

/// A job (or several asking the same thing) waiting for a verdict.
struct Item {
    jobs: Vec<usize>,
    key: CacheKey,
    format: SharedFormat,
    /// What to send: the prompt, or the re-ask conversation.
    request: ProviderRequest,
    resolved: String,
    ask: u32,
    submission: u32,
    tally: Tally,
    first_error: Option<String>,
    cache_problem: Option<String>,
    reservation: Option<Reservation>,
    /// In a batch now.
    in_flight: bool,
    done: bool,
}

/// A batch being waited for.
struct Tracked {
    id: String,
    state_path: PathBuf,
    /// Its requests this run reads (by cache key).
    keys: Vec<String>,
    /// Those of its requests whose place in the batch is known, by line (from 1).
    lines: BTreeMap<u64, String>,
    counts_seen: Option<(u64, u64)>,
    failures: u32,
    done: bool,
}

/// Looks at a batch that cannot be read this many times in a row before its requests
/// are given up.
const MAX_POLL_FAILURES: u32 = 10;

impl Executor {
    /// Runs `jobs` through a batch API on a fresh runtime; see the module docs. An
    /// interrupt leaves the batches running and their state on disk, and says so.
    pub fn run_batched_blocking(
        &self,
        jobs: Vec<Job>,
        options: &BatchOptions,
    ) -> Result<(Vec<JobOutcome>, BatchReport), ExecutorError> {
        let running = Arc::new(Mutex::new(BTreeSet::new()));
        let watch = running.clone();
        let noun = self
            .inner
            .provider
            .as_ref()
            .and_then(BatchApi::of)
            .map_or("batch", |api| api.noun());
        self.block_on_interruptible(self.run_batched(jobs, options, running), move || {
            let ids = watch.lock().map(|r| r.clone()).unwrap_or_default();
            if ids.is_empty() {
                String::new()
            } else {
                format!(
                    ", and {} {noun}(es) are still running ({})",
                    ids.len(),
                    ids.into_iter().collect::<Vec<_>>().join(", ")
                )
            }
        })
    }

    /// Runs `jobs` through a batch API; outcomes come back in job order.
    /// `running` holds the ids of the batches being waited for, for an interrupt's
    /// message.
    pub async fn run_batched(
        &self,
        jobs: Vec<Job>,
        options: &BatchOptions,
        running: Arc<Mutex<BTreeSet<String>>>,
    ) -> (Vec<JobOutcome>, BatchReport) {
        let mut run = BatchRun {
            inner: &self.inner,
            jobs: &jobs,
            options,
            outcomes: (0..jobs.len()).map(|_| None).collect(),
            items: IndexMap::new(),
            tracked: Vec::new(),
            report: BatchReport::default(),
            running,
            key: None,
            noun: "batch",
        };
        run.go().await;
        for e in self.inner.flush_cache() {
            log::warn!("{e}");
        }
        let BatchRun {
            outcomes, report, ..
        } = run;
        let outcomes = jobs
            .iter()
            .zip(outcomes)
            .map(|(job, o)| {
                let (outcome, cache_problem) = o.unwrap_or_else(|| {
                    (
                        Tally::new().unscored(
                            UnscoredKind::Internal,
                            "the batch run ended without an answer for this job".into(),
                        ),
                        None,
                    )
                });
                JobOutcome {
                    id: job.id.clone(),
                    judge: job.judge.clone(),
                    item: job.item.clone(),
                    outcome,
                    cache_problem,
                }
            })
            .collect();
        (outcomes, report)
    }
}

/// One `--batch` run in progress.
struct BatchRun<'a> {
    inner: &'a Inner,
    jobs: &'a [Job],
    options: &'a BatchOptions,
    outcomes: Vec<Option<(Outcome, Option<String>)>>,
    /// By cache key.
    items: IndexMap<String, Item>,
    tracked: Vec<Tracked>,
    report: BatchReport,
    running: Arc<Mutex<BTreeSet<String>>>,
    /// Seals the states this run writes and checks those it resumes; without one,
    /// none is written or resumed.
    key: Option<StateKey>,
    /// What a batch is called in messages ([`BatchApi::noun`]).
    noun: &'static str,
}

impl BatchRun<'_> {
    async fn go(&mut self) {
        let Some(api) = self.inner.provider.as_ref().and_then(BatchApi::of) else {
            return self.fail_all(
                "--batch needs a batch API: Anthropic's Message Batches or the OpenAI Batch API",
            );
        };
        self.noun = api.noun();
        let Some(cache) = self
            .inner
            .options
            .cache
            .as_ref()
            .filter(|c| c.mode().writes())
        else {
            return self.fail_all("--batch keeps its results in the cache, which must be writable");
        };
        let state_dir = cache.dir().join("batches");
        self.key = self.state_key();
        self.plan();
        self.resume(&state_dir);
        let fresh: Vec<String> = self.waiting();
        self.submit(&api, &state_dir, fresh).await;
        self.wait(&api, &state_dir).await;
    }

    /// The key of [`BatchOptions::key_file`], made there on first use. Without one the
    /// run goes on, saying that an interruption would send its requests again.
    fn state_key(&mut self) -> Option<StateKey> {
        let unsealed = "batch states are neither recorded nor resumed, so an interrupted \
                        run would send its requests again";
        let loaded = match &self.options.key_file {
            Some(path) => StateKey::load_or_create(path),
            None => Err("no folder for the batch state key (HOME is not set)".to_owned()),
        };
        loaded
            .inspect_err(|why| self.state_problem(format!("{why}: {unsealed}")))
            .ok()
    }

    /// Logs a problem with batch states and keeps it for the run summary.
    fn state_problem(&mut self, problem: String) {
        log::warn!("{problem}");
        self.report.state_problems.push(problem);
    }

    fn fail_all(&mut self, reason: &str) {
        for slot in &mut self.outcomes {
            *slot = Some((
                Tally::new().unscored(UnscoredKind::Provider, reason.to_owned()),
                None,
            ));
        }
    }

    /// Answers what the cache can; groups the rest by cache key.
    fn plan(&mut self) {
        let inner = self.inner;
        for (index, job) in self.jobs.iter().enumerate() {
            let format = job.format.clone();
            let resolved = inner.options.models.resolve(&job.request.model).to_string();
            let key = inner.key_of(job, &resolved);
            if let Some(item) = self.items.get_mut(&key.hex) {
                item.jobs.push(index);
                continue;
            }
            let mut cache_problem = None;
            if let Some(cache) = &inner.options.cache {
                match cache.get(&key, &format) {
                    Ok(Lookup::Hit(entry)) => {
                        let entry = *entry;
                        let outcome = Outcome::Scored(Box::new(Scored {
                            verdict: entry.verdict,
                            reply: entry.reply,
                            usage: Usage::default(),
                            cost_usd: Some(0.0),
                            cached: true,
                            reasked: entry.reasked,
                            attempts: 0,
                        }));
                        self.outcomes[index] = Some((outcome, None));
                        continue;
                    }
                    Ok(Lookup::Invalid(why)) => {
                        log::warn!("[{}] {why}; asking the model again", job.id);
                        cache_problem = Some(why);
                    }
                    Ok(Lookup::Miss) => {}
                    Err(e) => log::warn!("{e}"),
                }
            }
            let request = inner.first_request(job, &resolved);
            self.items.insert(
                key.hex.clone(),
                Item {
                    jobs: vec![index],
                    key,
                    format,
                    request,
                    resolved,
                    ask: 1,
                    submission: 0,
                    tally: Tally::new(),
                    first_error: None,
                    cache_problem,
                    reservation: None,
                    in_flight: false,
                    done: false,
                },
            );
        }
    }

    /// Finds requests of this run in batches an earlier run left running: they are
    /// polled, never sent again.
    fn resume(&mut self, state_dir: &Path) {
        let Some(key) = &self.key else { return };
        let states = read_states(state_dir, key);
        for why in states.refused {
            self.state_problem(why);
        }
        for (path, state) in states.usable {
            if state.endpoint != self.inner.endpoint {
                continue;
            }
            let (mut keys, mut lines) = (Vec::new(), BTreeMap::new());
            for saved in &state.items {
                let Some(item) = self.items.get_mut(&saved.key) else {
                    continue;
                };
                if item.in_flight {
                    continue;
                }
                item.in_flight = true;
                item.ask = saved.ask;
                item.submission = saved.submission;
                item.tally.usage = saved.prior;
                item.tally.cost = saved.prior_cost;
                item.tally.attempts = saved.prior_attempts;
                // The request stays the first prompt: a sealed state is still no
                // place to take model text from.
                item.first_error = saved.first_error.clone();
                keys.push(saved.key.clone());
                if let Some(line) = saved.line {
                    lines.insert(line, saved.key.clone());
                }
            }
            if keys.is_empty() {
                continue;
            }
            self.report.resumed += 1;
            self.report.resumed_requests += keys.len();
            self.report.batch_ids.push(state.batch_id.clone());
            self.track(state.batch_id, path, keys, lines);
        }
    }

    fn track(
        &mut self,
        id: String,
        state_path: PathBuf,
        keys: Vec<String>,
        lines: BTreeMap<u64, String>,
    ) {
        if let Ok(mut running) = self.running.lock() {
            running.insert(id.clone());
        }
        self.tracked.push(Tracked {
            id,
            state_path,
            keys,
            lines,
            counts_seen: None,
            failures: 0,
            done: false,
        });
    }

    /// Keys with no verdict, not in a batch now.
    fn waiting(&self) -> Vec<String> {
        self.items
            .iter()
            .filter(|(_, i)| !i.done && !i.in_flight)
            .map(|(k, _)| k.clone())
            .collect()
    }

    /// Sends `keys` in as few batches as the limits allow (one model per batch where the
    /// API wants it), recording each batch's state as soon as the API has accepted it.
    async fn submit(&mut self, api: &BatchApi<'_>, state_dir: &Path, keys: Vec<String>) {
        for group in self.by_model(api, keys) {
            self.submit_group(api, state_dir, group).await;
        }
    }

    /// `keys` as one group, or, for an API that takes one model per batch, one group per
    /// model (in the order the models first appear).
    fn by_model(&self, api: &BatchApi<'_>, keys: Vec<String>) -> Vec<Vec<String>> {
        if !api.one_model_per_batch() {
            return vec![keys];
        }
        let mut groups: IndexMap<String, Vec<String>> = IndexMap::new();
        for key in keys {
            let model = self
                .items
                .get(&key)
                .map(|i| i.request.model.clone())
                .unwrap_or_default();
            groups.entry(model).or_default().push(key);
        }
        groups.into_values().collect()
    }

    /// Sends `keys` in batches of at most the limits (this run's, or the API's when
    /// lower).
    async fn submit_group(&mut self, api: &BatchApi<'_>, state_dir: &Path, keys: Vec<String>) {
        let max_requests = self.options.max_requests.min(api.max_requests());
        let max_bytes = self.options.max_bytes.min(api.max_bytes());
        let mut chunk: Vec<(String, Value)> = Vec::new();
        let mut bytes = 0usize;
        for key in keys {
            let Some(item) = self.items.get_mut(&key) else {
                continue;
            };
            if let Err(reason) = reserve(self.inner, item) {
                let outcome = item.tally.unscored(UnscoredKind::Budget, reason);
                self.finish(&key, outcome);
                continue;
            }
            let entry = api.entry(&key, &item.request);
            let size = serde_json::to_vec(&entry).map_or(0, |v| v.len()) + 1;
            if !chunk.is_empty() && (chunk.len() >= max_requests || bytes + size > max_bytes) {
                let full = std::mem::take(&mut chunk);
                self.create(api, state_dir, full).await;
                bytes = 0;
            }
            bytes += size;
            chunk.push((key, entry));
        }
        if !chunk.is_empty() {
            self.create(api, state_dir, chunk).await;
        }
    }

    /// Makes one batch of `chunk` and records its state; or, when the API will not take
    /// it, leaves its requests unscored with the reason.
    async fn create(&mut self, api: &BatchApi<'_>, state_dir: &Path, chunk: Vec<(String, Value)>) {
        let (keys, entries): (Vec<String>, Vec<Value>) = chunk.into_iter().unzip();
        let id = match self.create_batch(api, &entries).await {
            Ok(id) => id,
            Err(reason) => {
                for key in &keys {
                    if let Some(item) = self.items.get_mut(key) {
                        release(self.inner, item, 0.0);
                        let outcome = item.tally.unscored(UnscoredKind::Provider, reason.clone());
                        self.finish(key, outcome);
                    }
                }
                return;
            }
        };
        let (mut saved, mut lines) = (Vec::new(), BTreeMap::new());
        for (key, line) in keys.iter().zip(1u64..) {
            if let Some(item) = self.items.get_mut(key) {
                item.submission += 1;
                item.in_flight = true;
                if item.submission > 1 || item.ask > 1 {
                    self.report.resubmitted += 1;
                }
                saved.push(state_item(item, line));
                lines.insert(line, key.clone());
            }
        }
        let state = BatchState {
            version: STATE_VERSION,
            batch_id: id.clone(),
            endpoint: self.inner.endpoint.clone(),
            created: chrono::Utc::now().to_rfc3339(),
            items: saved,
            seal: String::new(),
        };
        let path = state_dir.join(format!("{}.json", safe_name(&id)));
        if let Some(key) = &self.key
            && let Err(e) = write_state(&path, state, key)
        {
            log::warn!(
                "cannot record batch {id} ({e}); an interrupted run would send its requests again"
            );
        }
        self.report.created += 1;
        self.report.submitted += keys.len();
        self.report.batch_ids.push(id.clone());
        self.progress(&format!("batch {id}: {} request(s) sent", keys.len()));
        self.track(id, path, keys, lines);
    }

    /// Readies (OpenAI: uploads) `entries` and creates their batch, each step retried on
    /// its own so a file is not uploaded again when only the creation failed. The
    /// batch's id, or why there is none.
    async fn create_batch(&self, api: &BatchApi<'_>, entries: &[Value]) -> Result<String, String> {
        let (policy, limiter) = (&self.inner.options.retry, &self.inner.limiter);
        let failed = |e: &crate::provider::ProviderError, attempts: u32| {
            format!(
                "the {} could not be created: {e} (after {attempts} attempt(s))",
                self.noun
            )
        };
        let prepared = if api.uploads() {
            let uploaded = retry_with(|| api.prepare(entries), policy, limiter, None).await;
            uploaded
                .result
                .map_err(|e| upload_failed(self.noun, &e, uploaded.attempts))?
        } else {
            // Nothing to send yet (the requests go with the creation): no attempt made.
            api.prepare(entries).await.map_err(|e| failed(&e, 1))?
        };
        let created = retry_with(|| api.create(&prepared), policy, limiter, None).await;
        created.result.map_err(|e| failed(&e, created.attempts))
    }

    /// Polls every tracked batch until all have ended and been read; sends follow-ups.
    async fn wait(&mut self, api: &BatchApi<'_>, state_dir: &Path) {
        let mut delay = self.options.poll_min;
        while self.tracked.iter().any(|t| !t.done) {
            let mut ended_any = false;
            for t in 0..self.tracked.len() {
                if self.tracked[t].done {
                    continue;
                }
                if self.poll(api, t).await {
                    ended_any = true;
                }
            }
            let again = self.waiting();
            if !again.is_empty() {
                self.submit(api, state_dir, again).await;
            }
            if ended_any {
                delay = self.options.poll_min;
                continue;
            }
            if self.tracked.iter().any(|t| !t.done) {
                tokio::time::sleep(delay).await;
                delay = delay.mul_f64(1.5).min(self.options.poll_max);
            }
        }
    }

    /// Looks at one batch; reads its results once it has ended. Returns whether it ended.
    async fn poll(&mut self, api: &BatchApi<'_>, t: usize) -> bool {
        let id = self.tracked[t].id.clone();
        let policy = &self.inner.options.retry;
        let status = retry_with(|| api.status(&id), policy, &self.inner.limiter, None).await;
        let status: Polled = match status.result {
            Ok(s) => s,
            Err(e) => {
                self.tracked[t].failures += 1;
                let gone = matches!(e, crate::provider::ProviderError::Http { status: 404, .. });
                if gone || self.tracked[t].failures >= MAX_POLL_FAILURES {
                    // The batch is unknown (or unreadable): its requests are sent anew.
                    log::warn!("batch {id} cannot be read ({e}); its requests are sent again");
                    self.abandon(t);
                    return true;
                }
                log::warn!("batch {id}: {e}; trying again");
                return false;
            }
        };
        self.tracked[t].failures = 0;
        let (done, total) = (status.done, status.total);
        if self.tracked[t].counts_seen != Some((done, total)) {
            self.tracked[t].counts_seen = Some((done, total));
            self.progress(&format!(
                "batch {id}: {done} of {total} done ({} succeeded, {} errored, {} expired), {}",
                status.succeeded, status.errored, status.expired, status.status
            ));
        }
        if !status.ended {
            return false;
        }
        let lines = self.tracked[t].lines.clone();
        let results = retry_with(
            || api.results(&status, &lines),
            policy,
            &self.inner.limiter,
            None,
        )
        .await;
        match results.result {
            Ok(results) => self.read_results(t, results),
            Err(e) => {
                self.tracked[t].failures += 1;
                log::warn!("results of batch {id}: {e}; trying again");
                if self.tracked[t].failures >= MAX_POLL_FAILURES {
                    self.abandon(t);
                    return true;
                }
                return false;
            }
        }
        true
    }

    /// Gives up on a batch: its requests wait for the next submission (their
    /// submission count bounds how often).
    fn abandon(&mut self, t: usize) {
        let keys = std::mem::take(&mut self.tracked[t].keys);
        for key in keys {
            if let Some(item) = self.items.get_mut(&key)
                && !item.done
            {
                item.in_flight = false;
                if item.submission >= self.options.max_submissions {
                    let reason = format!(
                        "its {} could not be read after {} submission(s)",
                        self.noun, item.submission
                    );
                    let outcome = item.tally.unscored(UnscoredKind::Provider, reason);
                    self.finish(&key, outcome);
                }
            }
        }
        self.close(t);
    }

    fn close(&mut self, t: usize) {
        let tracked = &mut self.tracked[t];
        tracked.done = true;
        let _ = std::fs::remove_file(&tracked.state_path);
        if let Ok(mut running) = self.running.lock() {
            running.remove(&tracked.id);
        }
    }

    /// Reads an ended batch's results into verdicts (and the cache), then retires its
    /// state file.
    fn read_results(&mut self, t: usize, results: Vec<(String, ItemResult)>) {
        let id = self.tracked[t].id.clone();
        let ours: BTreeSet<String> = self.tracked[t].keys.iter().cloned().collect();
        let mut seen = BTreeSet::new();
        for (key, result) in results {
            if !ours.contains(&key) || !seen.insert(key.clone()) {
                continue;
            }
            self.settle(&key, result, &id);
        }
        // A request the results leave out is treated as errored.
        for key in ours.difference(&seen) {
            let missing = ItemResult::Errored {
                kind: "api_error".into(),
                message: "missing from the batch's results".into(),
            };
            self.settle(key, missing, &id);
        }
        self.retire_state(t);
    }

    /// Rewrites a batch's state without the requests this run has read; removes the
    /// file when none is left (requests of other runs stay recorded).
    fn retire_state(&mut self, t: usize) {
        let path = self.tracked[t].state_path.clone();
        let ours: BTreeSet<String> = self.tracked[t].keys.iter().cloned().collect();
        if let Some(key) = &self.key
            && let Ok(mut state) = read_state(&path, key)
        {
            state.items.retain(|i| !ours.contains(&i.key));
            if !state.items.is_empty() {
                if let Err(e) = write_state(&path, state, key) {
                    log::warn!("cannot update {}: {e}", path.display());
                }
                self.tracked[t].done = true;
                if let Ok(mut running) = self.running.lock() {
                    running.remove(&self.tracked[t].id);
                }
                return;
            }
        }
        self.close(t);
    }

    /// What one request's result means for its job.
    fn settle(&mut self, key: &str, result: ItemResult, batch_id: &str) {
        let inner = self.inner;
        let max_submissions = self.options.max_submissions;
        let Some(item) = self.items.get_mut(key) else {
            return;
        };
        item.in_flight = false;
        let job = &self.jobs[item.jobs[0]];
        let prompt = item
            .request
            .messages
            .last()
            .map(|m| m.content.clone())
            .unwrap_or_default();
        let (started, clock) = (chrono::Utc::now(), Instant::now());
        let reply = match result {
            ItemResult::Succeeded(reply) => reply,
            other => {
                let (message, retry) = match &other {
                    ItemResult::Errored { kind, message } => (
                        format!("the batch request failed: {kind}: {message}"),
                        other.retryable(),
                    ),
                    ItemResult::Expired => {
                        ("the batch expired before the request ran".to_owned(), true)
                    }
                    ItemResult::Canceled => ("the batch request was canceled".to_owned(), false),
                    ItemResult::Failed { reason, retry } => {
                        (format!("the batch request failed: {reason}"), *retry)
                    }
                    ItemResult::Succeeded(_) => unreachable!("handled above"),
                };
                item.tally.attempts += 1;
                inner.log(
                    job,
                    &item.request.model,
                    &prompt,
                    started,
                    clock,
                    LogFields {
                        status: CallStatus::Error,
                        error: Some(&message),
                        attempt: item.ask,
                        tries: 1,
                        batch: Some(batch_id),
                        ..LogFields::default()
                    },
                );
                if retry && item.submission < max_submissions {
                    return;
                }
                release(inner, item, 0.0);
                let reason = format!("{message} (after {} submission(s))", item.submission);
                let outcome = item.tally.unscored(UnscoredKind::Provider, reason);
                return self.finish(key, outcome);
            }
        };
        let models = &inner.options.models;
        let cost = models.price(&item.resolved).map(|p| {
            crate::provider::models::usage_cost(&p, models.info(&item.resolved), &reply.usage)
                * models.batch_factor(&item.resolved)
        });
        item.tally.add(&Ask {
            reply: Some(reply.clone()),
            tries: 1,
            cost,
        });
        release(inner, item, cost.unwrap_or(0.0));
        let mut fields = LogFields {
            reply: Some(&reply.text),
            usage: reply.usage,
            cost,
            attempt: item.ask,
            tries: 1,
            batch: Some(batch_id),
            ..LogFields::default()
        };
        let bound = item.request.response_schema.is_some();
        match item.format.parse_sent(&reply.text, reply.truncated, bound) {
            Ok(verdict) => {
                fields.status = CallStatus::Ok;
                fields.parsed_score = Some(verdict.score);
                inner.log(job, &item.request.model, &prompt, started, clock, fields);
                if let Some(cache) = &inner.options.cache {
                    cache.put(&CacheEntry {
                        key: item.key.hex.clone(),
                        inputs: item.key.summary.clone(),
                        reply: reply.text.clone(),
                        verdict: verdict.clone(),
                        usage: item.tally.usage,
                        reasked: item.ask == 2,
                        created: chrono::Utc::now().to_rfc3339(),
                    });
                }
                let outcome = Outcome::Scored(Box::new(Scored {
                    verdict,
                    reply: reply.text,
                    usage: item.tally.usage,
                    cost_usd: item.tally.cost,
                    cached: false,
                    reasked: item.ask == 2,
                    attempts: item.tally.attempts,
                }));
                self.finish(key, outcome);
            }
            Err(error) => {
                let message = error.to_string();
                fields.status = CallStatus::Unreadable;
                fields.error = Some(&message);
                inner.log(job, &item.request.model, &prompt, started, clock, fields);
                if item.ask == 1 && inner.options.reask {
                    // The one re-ask, in the next batch: a fresh request, not a retry.
                    reask(&mut item.request, &reply.text, &item.format, &message);
                    item.ask = 2;
                    item.submission = 0;
                    item.first_error = Some(message);
                    return;
                }
                let reason = match &item.first_error {
                    Some(first) => format!(
                        "the reply could not be read after one re-ask: {message} (first reply: {first})"
                    ),
                    None => format!("the reply could not be read: {message}"),
                };
                let outcome = item.tally.unscored(UnscoredKind::Unreadable, reason);
                self.finish(key, outcome);
            }
        }
    }

    /// Records the outcome for every job asking `key`.
    fn finish(&mut self, key: &str, outcome: Outcome) {
        let Some(item) = self.items.get_mut(key) else {
            return;
        };
        item.done = true;
        item.in_flight = false;
        let note = item.cache_problem.clone();
        for &index in &item.jobs {
            self.outcomes[index] = Some((outcome.clone(), note.clone()));
        }
    }

    fn progress(&self, line: &str) {
        if self.inner.options.progress != super::executor::ProgressMode::Hidden {
            log::info!("{line}");
        }
    }
}

/// Why a batch's input file could not be uploaded. A 404 there most likely means an
/// OpenAI-compatible server (a local one) that serves chat completions but no batches.
fn upload_failed(noun: &str, error: &crate::provider::ProviderError, attempts: u32) -> String {
    let hint = if matches!(
        error,
        crate::provider::ProviderError::Http { status: 404, .. }
    ) {
        "; this server may not serve the OpenAI Batch API"
    } else {
        ""
    };
    format!(
        "the {noun} could not be created: its input file could not be uploaded: {error} \
         (after {attempts} attempt(s)){hint}"
    )
}

/// Extends `request` with the unreadable reply and the correction, as a direct re-ask.
fn reask(request: &mut ProviderRequest, reply: &str, format: &CompiledFormat, error: &str) {
    request.messages.truncate(1);
    request.messages.push(Message {
        role: Role::Assistant,
        content: reply.to_owned(),
    });
    request.messages.push(Message {
        role: Role::User,
        content: format.reask_message_text(error),
    });
}

/// Sets aside the most the request can cost at batch prices, under `--max-cost`.
fn reserve(inner: &Inner, item: &mut Item) -> Result<(), String> {
    let Some(budget) = &inner.budget else {
        return Ok(());
    };
    let Some(price) = inner.options.models.price(&item.resolved) else {
        return Err(super::cost::BudgetError::UnknownPrice {
            model: item.resolved.clone(),
        }
        .to_string());
    };
    let mut texts: Vec<&str> = item
        .request
        .messages
        .iter()
        .map(|m| m.content.as_str())
        .collect();
    if let Some(system) = &item.request.system {
        texts.push(system);
    }
    let estimate = estimate_cost(&price, &texts, item.request.max_tokens)
        * inner.options.models.batch_factor(&item.resolved);
    item.reservation = Some(budget.reserve(estimate).map_err(|e| e.to_string())?);
    Ok(())
}

/// Settles the request's reservation (or, for a resumed request, records its cost).
fn release(inner: &Inner, item: &mut Item, actual: f64) {
    let Some(budget) = &inner.budget else { return };
    match item.reservation.take() {
        Some(r) => budget.settle(r, actual),
        None => budget.record(actual),
    }
}

/// What the state of a batch keeps of `item`, the request at `line` of the batch.
fn state_item(item: &Item, line: u64) -> StateItem {
    StateItem {
        key: item.key.hex.clone(),
        ask: item.ask,
        submission: item.submission,
        prior: item.tally.usage,
        prior_cost: item.tally.cost,
        prior_attempts: item.tally.attempts,
        first_error: item.first_error.clone(),
        line: Some(line),
    }
}

/// A batch id as a file name (ids are `[A-Za-z0-9_-]`; anything else is replaced).
fn safe_name(id: &str) -> String {
    id.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// Seals `state` under `key` and writes it (temporary file, fsync, rename).
fn write_state(
    path: &Path,
    mut state: BatchState,
    key: &StateKey,
) -> Result<(), super::cache::CacheError> {
    state.seal = key.seal(&sealed_bytes(&state));
    let bytes = serde_json::to_vec_pretty(&state).unwrap_or_default();
    write_file(path, &bytes)
}

/// The bytes a seal covers: the state as compact JSON with its seal left empty.
fn sealed_bytes(state: &BatchState) -> Vec<u8> {
    let unsealed = BatchState {
        seal: String::new(),
        ..state.clone()
    };
    serde_json::to_vec(&unsealed).unwrap_or_default()
}

/// The largest batch state read: a batch holds at most 100,000 requests, of a few
/// hundred bytes each in the state; a file above it is no state this engine wrote.
const MAX_STATE_BYTES: u64 = 256 << 20;

/// The state at `path`, or why it cannot be used. Only a regular file of a sane size is
/// read (see [`super::bounded`]): a FIFO or a link to a device planted in the cache
/// folder is refused without being opened for long or read. Only a state sealed under
/// `key` is used: one this user's runs wrote on this machine.
fn read_state(path: &Path, key: &StateKey) -> Result<BatchState, String> {
    let bytes = read_regular_file(path, MAX_STATE_BYTES).map_err(|e| e.to_string())?;
    let state = serde_json::from_slice::<BatchState>(&bytes)
        .map_err(|e| format!("it is not a batch state ({e})"))?;
    if state.version != STATE_VERSION {
        return Err(format!(
            "it is a batch state of version {}, not {STATE_VERSION}",
            state.version
        ));
    }
    if !key.verify(&sealed_bytes(&state), &state.seal) {
        return Err(
            "its seal does not match this machine's batch state key, so no run \
                    here wrote it"
                .to_owned(),
        );
    }
    Ok(state)
}

/// The state files of a folder: those that can be used, oldest batch first, and why
/// each of the others cannot.
#[derive(Debug, Default)]
struct States {
    usable: Vec<(PathBuf, BatchState)>,
    refused: Vec<String>,
}

/// Every state file of `dir`, checked against `key`; see [`States`].
fn read_states(dir: &Path, key: &StateKey) -> States {
    let mut states = States::default();
    let paths = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"));
    for path in paths {
        match read_state(&path, key) {
            Ok(state) => states.usable.push((path, state)),
            Err(why) => states.refused.push(format!(
                "the batch state {} is not used: {why}",
                path.display()
            )),
        }
    }
    states.usable.sort_by(|a, b| a.1.created.cmp(&b.1.created));
    states
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reads the states of `dir` on another thread, failing the test (not hanging it)
    /// when that does not return within ten seconds.
    fn states_within_seconds(dir: &Path) -> States {
        let (tx, rx) = std::sync::mpsc::channel();
        let dir = dir.to_path_buf();
        std::thread::spawn(move || {
            let _ = tx.send(read_states(&dir, &StateKey::random()));
        });
        rx.recv_timeout(Duration::from_secs(10))
            .expect("reading the batch states returned")
    }

    fn state() -> BatchState {
        BatchState {
            version: STATE_VERSION,
            batch_id: "msgbatch_1".into(),
            endpoint: "http://127.0.0.1:9".into(),
            created: "2026-01-01T00:00:00Z".into(),
            items: vec![StateItem {
                key: "ab".repeat(32),
                ask: 1,
                submission: 1,
                prior: Usage::default(),
                prior_cost: Some(0.25),
                prior_attempts: 0,
                first_error: None,
                line: None,
            }],
            seal: String::new(),
        }
    }

    #[test]
    fn a_state_is_used_only_under_the_key_that_sealed_it_and_unchanged() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("msgbatch_1.json");
        let key = StateKey::random();
        write_state(&path, state(), &key).unwrap();
        let read = read_state(&path, &key).unwrap();
        assert_eq!(read.items[0].prior_cost, Some(0.25));
        let foreign = read_state(&path, &StateKey::random()).unwrap_err();
        assert!(foreign.contains("its seal does not match"), "{foreign}");
        // Any edit breaks the seal: here, a larger prior cost.
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::write(&path, text.replace("0.25", "25.0")).unwrap();
        let edited = read_state(&path, &key).unwrap_err();
        assert!(edited.contains("its seal does not match"), "{edited}");
    }

    #[cfg(unix)]
    #[test]
    fn a_fifo_or_a_device_link_among_the_batch_states_is_skipped_not_a_hang() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("msgbatch_fifo.json");
        rustix::fs::mkfifoat(rustix::fs::CWD, &fifo, rustix::fs::Mode::RUSR).unwrap();
        let states = states_within_seconds(dir.path());
        assert!(states.usable.is_empty());
        assert_eq!(
            states.refused,
            [format!(
                "the batch state {} is not used: it is a FIFO, not a regular file; it was not read",
                fifo.display()
            )]
        );
        std::fs::remove_file(&fifo).unwrap();
        std::os::unix::fs::symlink("/dev/zero", dir.path().join("msgbatch_zero.json")).unwrap();
        let states = states_within_seconds(dir.path());
        assert!(states.usable.is_empty());
        assert!(
            states.refused[0].contains("it is a symbolic link"),
            "{states:?}"
        );
    }
}
