//! The model catalogue: what caldera knows of each model (aliases, limits, prices,
//! lifecycle), as data.
//!
//! The built-in catalogue is `engine/provider/models.yaml`, compiled into the binary; a
//! suite's `model_catalogue:` file of the same form is merged over it, so a new model, a
//! price change or a deprecation date needs an edited file, not a rebuild. Types here
//! carry no behaviour; `provider::models` reads them into the table the engine uses.

use indexmap::IndexMap;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::spec::strict;

/// A model catalogue file.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(title = "caldera model catalogue")]
pub struct CatalogueSpec {
    /// The models, by the id the provider's API takes (`claude-sonnet-5-5`, `gpt-4.1`).
    /// An id also prices every id that starts with it (dated snapshots such as
    /// `gpt-4o-2024-08-06`), the longest matching id winning.
    #[serde(default)]
    pub models: IndexMap<String, ModelSpec>,
}

/// One model.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ModelSpec {
    /// Short names that resolve to this id (`sonnet`). An alias names one model: a later
    /// entry (or a suite's catalogue) that claims it takes it over.
    #[serde(default)]
    pub aliases: Vec<String>,

    /// Dated ids that are this model (`claude-sonnet-4-5-20250929`): they share its
    /// price and lifecycle.
    #[serde(default)]
    pub snapshots: Vec<String>,

    /// The largest prompt plus output the model accepts, in tokens.
    #[serde(default, deserialize_with = "strict::opt_whole")]
    #[schemars(range(min = 1))]
    pub context_tokens: Option<i64>,

    /// The most output tokens one request may ask for.
    #[serde(default, deserialize_with = "strict::opt_whole")]
    #[schemars(range(min = 1))]
    pub max_output_tokens: Option<i64>,

    /// US dollars per million input (prompt) tokens at list price.
    #[serde(default, deserialize_with = "strict::opt_number")]
    #[schemars(range(min = 0.0))]
    pub input_per_mtok: Option<f64>,

    /// US dollars per million output tokens at list price (thinking and reasoning tokens
    /// are billed as output).
    #[serde(default, deserialize_with = "strict::opt_number")]
    #[schemars(range(min = 0.0))]
    pub output_per_mtok: Option<f64>,

    /// The share of the list price that batch requests pay (0.5 on both providers).
    #[serde(default, deserialize_with = "strict::opt_number")]
    #[schemars(range(min = 0.0, max = 1.0))]
    pub batch_factor: Option<f64>,

    /// The share of the input price a prompt-cache write costs (Anthropic: 1.25 for the
    /// default five-minute entries; OpenAI caches for free: 1.0).
    #[serde(default, deserialize_with = "strict::opt_number")]
    #[schemars(range(min = 0.0))]
    pub cache_write_factor: Option<f64>,

    /// The share of the input price a prompt-cache read costs (Anthropic: 0.1; OpenAI:
    /// 0.25 or 0.5 by model).
    #[serde(default, deserialize_with = "strict::opt_number")]
    #[schemars(range(min = 0.0, max = 1.0))]
    pub cache_read_factor: Option<f64>,

    /// A reasoning model of the OpenAI Chat Completions API: it takes
    /// `max_completion_tokens` and refuses any `temperature` but the default.
    #[serde(default, deserialize_with = "strict::flag")]
    pub reasoning: bool,

    /// The day the provider marked the model deprecated (`YYYY-MM-DD`).
    #[serde(default)]
    #[schemars(regex(pattern = r"^\d{4}-\d{2}-\d{2}$"), example = &"2026-09-29")]
    pub deprecated: Option<String>,

    /// The day after which the provider no longer serves the model (`YYYY-MM-DD`).
    #[serde(default)]
    #[schemars(regex(pattern = r"^\d{4}-\d{2}-\d{2}$"), example = &"2026-11-30")]
    pub end_of_life: Option<String>,

    /// The model to move to when this one is deprecated.
    #[serde(default)]
    pub successor: Option<String>,
}
