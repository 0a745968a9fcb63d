//! `caldera plan`: what an LLM run would cost, before it spends anything.
//!
//! The plan renders every prompt the run would send (through the same function the run
//! uses), per model and per repeat, looks each call up in the verdict cache, and adds up
//! calls, cached hits, input tokens and output tokens (at the judge's `max_tokens`) into
//! a cost range per judge, per model and in total. Input tokens are estimated from the
//! prompt's length unless the provider's token-counting endpoint is asked for
//! (`--count-tokens`); that is the only network use a plan can make.
//!
//! Costs come from the model table (built-in list prices, the suite's `prices:`, a
//! `--prices` file). A model without a price has an unknown cost, never $0.

pub(crate) mod count;

use std::collections::HashMap;
use std::path::PathBuf;

use indexmap::IndexMap;
use minijinja::Environment;
use serde::Serialize;

use crate::diag::Diagnostic;
use crate::llm::cache::{Cache, CacheMode, Lookup};
use crate::load::inputs::{Overrides, load_inputs};
use crate::load::suite::Suite;
use crate::provider::ProviderKind;
use crate::provider::models::{ModelTable, Price};
use crate::run::llm::{PlannedCall, cache_key, model_table, models_for, plan_calls};

/// How a plan is made.
#[derive(Debug, Clone)]
pub(crate) struct PlanOptions {
    /// Folder overrides.
    pub overrides: Overrides,
    /// `--provider`; otherwise chosen from the environment as a run would, without
    /// building a client.
    pub provider: Option<ProviderKind>,
    /// Models (one, or a panel); empty: the suite's.
    pub models: Vec<String>,
    /// `--repeat N`.
    pub repeat: u32,
    /// The verdict cache to look calls up in; `None` counts every call (`--cache off`).
    pub cache_dir: Option<PathBuf>,
    /// Prices added to the table (from `--prices`).
    pub prices: IndexMap<String, Price>,
    /// Ask the provider's token-counting endpoint instead of estimating.
    pub count_tokens: bool,
    /// Per-request timeout for token counting.
    pub timeout: std::time::Duration,
}

/// Input tokens: a range when estimated, one number (low == high) when counted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub(crate) struct Tokens {
    /// The least it could be.
    pub low: u64,
    /// The most it could be.
    pub high: u64,
}

impl std::ops::AddAssign for Tokens {
    fn add_assign(&mut self, other: Tokens) {
        self.low += other.low;
        self.high += other.high;
    }
}

/// An estimate of the input tokens of `text`: 1 token per 4 bytes at least (English
/// prose) and 1 per 3 bytes at most (code and JSON tokenise denser), the executor's own
/// budget estimate.
pub(crate) fn estimate(text: &str) -> Tokens {
    Tokens {
        low: (text.len() as u64).div_ceil(4),
        high: crate::llm::cost::estimate_tokens(text),
    }
}

/// A cost range in US dollars.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub(crate) struct CostRange {
    /// The prompts alone, at the low token estimate, with no output.
    pub low: f64,
    /// The prompts at the high estimate plus every call's full `max_tokens` of output.
    pub high: f64,
}

/// One line of the plan: a judge and a model, or a total.
#[derive(Clone, Debug, Default, Serialize)]
pub(crate) struct Row {
    /// The judge's dimension (empty on totals).
    pub judge: String,
    /// The model as given (empty on the grand total).
    pub model: String,
    /// Asks the run makes: units x repeats.
    pub prompts: usize,
    /// Of those, answered by the cache.
    pub cached: usize,
    /// Of those, calls to make.
    pub calls: usize,
    /// Input tokens of the calls to make.
    pub input_tokens: Tokens,
    /// Output tokens of the calls to make, at `max_tokens` each (an upper bound).
    pub output_tokens: u64,
    /// The cost of the calls to make; `None` when a model with calls to make has no price.
    pub cost: Option<CostRange>,
    /// Of the input tokens, those expected to be written to the provider's prompt cache
    /// (the first ask of a prompt asked again).
    #[serde(skip_serializing_if = "is_zero")]
    pub cache_write_tokens: u64,
    /// Of the input tokens, those expected to be read from it (the asks after the first).
    #[serde(skip_serializing_if = "is_zero")]
    pub cache_read_tokens: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl Row {
    fn add(&mut self, other: &Row) {
        self.prompts += other.prompts;
        self.cached += other.cached;
        self.calls += other.calls;
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
        self.cache_write_tokens += other.cache_write_tokens;
        self.cache_read_tokens += other.cache_read_tokens;
        self.cost = match (self.cost, other.cost) {
            (Some(a), Some(b)) => Some(CostRange {
                low: a.low + b.low,
                high: a.high + b.high,
            }),
            _ => None,
        };
    }
}

/// A judge unit whose prompt cannot be rendered (so the run would send nothing for it).
#[derive(Clone, Debug, Serialize)]
pub(crate) struct NotRendered {
    /// The judge.
    pub judge: String,
    /// The repo, for per-repo judges.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub repo: Option<String>,
    /// Why.
    pub reason: String,
}

/// What a run would do and cost.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct Plan {
    /// The suite.
    pub suite: String,
    /// The provider the cache keys are for.
    pub provider: String,
    /// The models, as given.
    pub models: Vec<String>,
    /// Asks per unit and model.
    pub repeat: u32,
    /// The cache looked in (null with `--cache off`).
    pub cache_dir: Option<String>,
    /// `estimated` (from prompt length) or `counted` (by the provider).
    pub tokens: &'static str,
    /// Per judge and model.
    pub rows: Vec<Row>,
    /// Per model.
    pub by_model: Vec<Row>,
    /// Everything.
    pub total: Row,
    /// Models with calls to make and no known price.
    pub unpriced: Vec<String>,
    /// Units without a prompt.
    pub not_rendered: Vec<NotRendered>,
    /// Anything else worth knowing (failed token counts, an unmetered provider).
    pub notes: Vec<String>,
    /// The judges asked for schema-bound verdicts (`transport: schema`) on a provider
    /// that binds replies; the others are asked for text.
    pub schema_bound: Vec<String>,
}

impl Plan {
    /// Whether the plan's most expensive outcome exceeds `budget`, or cannot be known.
    pub(crate) fn exceeds(&self, budget: f64) -> bool {
        self.total.cost.is_none_or(|c| c.high > budget)
    }
}

/// The provider a run would use, chosen as `caldera run` chooses, without building a
/// client or touching the network; Anthropic when nothing is configured (a plan needs
/// no provider).
pub(crate) fn provider_kind(requested: Option<ProviderKind>) -> ProviderKind {
    let set = |name: &str| std::env::var(name).is_ok_and(|v| !v.trim().is_empty());
    requested.unwrap_or(if set("ANTHROPIC_API_KEY") {
        ProviderKind::Anthropic
    } else if set("OPENAI_API_KEY") || set("OPENAI_BASE_URL") {
        ProviderKind::Openai
    } else if crate::provider::claude_cli::find_on_path("claude").is_some() {
        ProviderKind::ClaudeCli
    } else {
        ProviderKind::Anthropic
    })
}

/// Makes the plan of an LLM run of `suite`.
pub(crate) fn plan(
    env: &Environment<'static>,
    suite: &Suite,
    opts: &PlanOptions,
) -> Result<Plan, Vec<Diagnostic>> {
    let inputs = load_inputs(suite, &opts.overrides)?;
    let ctx = crate::run::context::shared_context(env, suite, &inputs)?;
    let units = crate::run::prepare_all(env, suite, &ctx);
    let models = models_for(suite, &opts.models);
    let repeat = opts.repeat.max(1);
    let (calls, prompt_errors) = plan_calls(env, suite, &units, &models, repeat);
    let kind = provider_kind(opts.provider);
    // The endpoint a run would key its cache entries by.
    let endpoint = crate::provider::Provider::endpoint_from_env(kind);
    let mut table = model_table(suite);
    table.extend(&IndexMap::new(), &opts.prices);
    let mut notes = Vec::new();
    let counted = if opts.count_tokens {
        Some(count::count_all(
            kind,
            &table,
            &calls,
            opts.timeout,
            &mut notes,
        )?)
    } else {
        None
    };
    let cache = opts
        .cache_dir
        .as_ref()
        .map(|dir| Cache::new(dir, CacheMode::ReadOnly));
    let metered = kind != ProviderKind::ClaudeCli;
    if !metered {
        notes.push(
            "the claude CLI reports no tokens and is not billed per token: its cost is unknown"
                .into(),
        );
    }
    let mut rows: IndexMap<(usize, usize), Row> = IndexMap::new();
    let mut prefixes = std::collections::HashSet::new();
    for call in &calls {
        let row = rows.entry((call.judge, call.model)).or_insert_with(|| Row {
            judge: suite.judges[call.judge].spec.dimension.clone(),
            model: models[call.model].clone(),
            cost: Some(CostRange::default()),
            ..Row::default()
        });
        let key = cache_key(kind, &endpoint, &table, &call.job);
        let hit = cache
            .as_ref()
            .is_some_and(|c| matches!(c.get(&key, &call.job.format), Ok(Lookup::Hit(_))));
        let first = !hit && first_of_prefix(&mut prefixes, &table, call);
        add_call(row, call, (hit, first), counted.as_ref(), &table, metered);
    }
    let rows: Vec<Row> = rows.into_values().collect();
    let by_model = totals_by_model(&models, &rows);
    let mut total = Row {
        cost: Some(CostRange::default()),
        ..Row::default()
    };
    for r in &by_model {
        total.add(r);
    }
    Ok(Plan {
        suite: suite.spec.suite.clone(),
        provider: kind.name().to_owned(),
        repeat,
        cache_dir: opts
            .cache_dir
            .as_ref()
            .map(|d| crate::diag::display_path(d)),
        tokens: if counted.is_some() {
            "counted"
        } else {
            "estimated"
        },
        unpriced: by_model
            .iter()
            .filter(|r| r.cost.is_none())
            .map(|r| table.resolve(&r.model).to_owned())
            .collect(),
        not_rendered: prompt_errors
            .into_iter()
            .map(|((j, u), reason)| NotRendered {
                judge: suite.judges[j].spec.dimension.clone(),
                repo: units[j][u].repo.clone(),
                reason: reason.to_string(),
            })
            .collect(),
        models,
        rows,
        by_model,
        total,
        notes,
        schema_bound: suite
            .judges
            .iter()
            .filter(|_| kind != ProviderKind::ClaudeCli)
            .filter(|j| {
                j.format
                    .as_ref()
                    .is_ok_and(|f| f.response_schema().is_some())
            })
            .map(|j| j.spec.dimension.clone())
            .collect(),
    })
}

/// Whether `call` is the first of the plan to send its cacheable prompt part (it would
/// write the provider's cache entry the others read).
fn first_of_prefix(
    seen: &mut std::collections::HashSet<(String, String)>,
    table: &ModelTable,
    call: &PlannedCall,
) -> bool {
    let request = &call.job.request;
    let Some(hint) = request.cache else {
        return false;
    };
    let prefix = request.prompt.get(..hint.prefix_bytes).unwrap_or_default();
    seen.insert((table.resolve(&request.model).to_owned(), prefix.to_owned()))
}

/// Adds one call to its row: a cache hit costs nothing; a call to make adds its tokens
/// and, when the model's price is known, its cost range.
fn add_call(
    row: &mut Row,
    call: &PlannedCall,
    (hit, first_of_prefix): (bool, bool),
    counted: Option<&HashMap<(String, String), u64>>,
    table: &ModelTable,
    metered: bool,
) {
    row.prompts += 1;
    if hit {
        row.cached += 1;
        return;
    }
    let request = &call.job.request;
    let tokens = match counted.and_then(|c| c.get(&count::key(table, call))) {
        Some(n) => Tokens { low: *n, high: *n },
        None => {
            let mut t = estimate(&request.prompt);
            t += estimate(request.system.as_deref().unwrap_or_default());
            t
        }
    };
    row.calls += 1;
    row.input_tokens += tokens;
    row.output_tokens += u64::from(request.max_tokens);
    // A prompt marked for the provider's cache: the first ask of its cacheable part writes
    // the entry (at the write factor when the part is long enough to be cached, else at
    // list price), the asks after it read it (at the read factor, or at list price if the
    // entry is gone). Only that part: the rest of a prompt split at `cache_break` is
    // billed as usual.
    let cached_share = request.cache.map_or(0.0, |h| {
        (h.prefix_bytes as f64 / request.prompt.len().max(1) as f64).min(1.0)
    });
    let (low_share, high_share) = match (request.cache, table.info(&request.model)) {
        (Some(_), info) => {
            let info = info.cloned().unwrap_or_default();
            let (write, read) = if info.cache_write_factor > 0.0 || info.cache_read_factor > 0.0 {
                (info.cache_write_factor, info.cache_read_factor)
            } else {
                (
                    crate::provider::models::DEFAULT_CACHE_WRITE,
                    crate::provider::models::DEFAULT_CACHE_READ,
                )
            };
            let cached = (tokens.high as f64 * cached_share).round() as u64;
            let rest = 1.0 - cached_share;
            if first_of_prefix {
                row.cache_write_tokens += cached;
                (1.0, rest + cached_share * write.max(1.0))
            } else {
                row.cache_read_tokens += cached;
                (rest + cached_share * read, 1.0)
            }
        }
        (None, _) => (1.0, 1.0),
    };
    let price = table.price(&request.model).filter(|_| metered);
    row.cost = match (row.cost, price) {
        (Some(c), Some(p)) => Some(CostRange {
            low: c.low + low_share * crate::provider::models::cost(&p, tokens.low, 0),
            high: c.high
                + high_share * crate::provider::models::cost(&p, tokens.high, 0)
                + crate::provider::models::cost(&p, 0, u64::from(request.max_tokens)),
        }),
        _ => None,
    };
}

fn totals_by_model(models: &[String], rows: &[Row]) -> Vec<Row> {
    models
        .iter()
        .map(|m| {
            let mut total = Row {
                model: m.clone(),
                cost: Some(CostRange::default()),
                ..Row::default()
            };
            for r in rows.iter().filter(|r| &r.model == m) {
                total.add(r);
            }
            total
        })
        .collect()
}
