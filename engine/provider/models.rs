//! Model aliases and prices.
//!
//! Suites say `model: sonnet`; the APIs want a full id. The table maps short
//! names to ids and ids to prices, and a suite can add its own entries
//! (a new model, a local server's model name, a negotiated price). A name that
//! is not an alias passes through unchanged as a full id.

use indexmap::IndexMap;

pub use crate::spec::catalogue::{CatalogueSpec, ModelSpec};
pub use crate::spec::suite::Price;

/// The cost in dollars of a call with these token counts at `price`.
pub fn cost(price: &Price, input_tokens: u64, output_tokens: u64) -> f64 {
    (input_tokens as f64 * price.input_per_mtok + output_tokens as f64 * price.output_per_mtok)
        / 1_000_000.0
}

/// The cost in dollars of a call's `usage` at `price`, its prompt-cache writes and reads
/// at the model's cache factors (thinking and reasoning tokens are in the output).
pub fn usage_cost(price: &Price, info: Option<&ModelInfo>, usage: &crate::provider::Usage) -> f64 {
    let (write, read) = info.map_or((DEFAULT_CACHE_WRITE, DEFAULT_CACHE_READ), |i| {
        (i.cache_write_factor, i.cache_read_factor)
    });
    let cached = usage.cache_write_tokens as f64 * write + usage.cache_read_tokens as f64 * read;
    cost(price, usage.input_tokens, usage.output_tokens)
        + cached * price.input_per_mtok / 1_000_000.0
}

/// Anthropic's five-minute cache write price, as a share of the input price.
pub const DEFAULT_CACHE_WRITE: f64 = 1.25;
/// Anthropic's cache read price, as a share of the input price.
pub const DEFAULT_CACHE_READ: f64 = 0.1;

/// What the catalogue says of a model beyond its price: how to ask it and how long it is
/// served.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ModelInfo {
    /// The share of the list price a batch request pays.
    pub batch_factor: f64,
    /// The share of the input price a prompt-cache write costs.
    pub cache_write_factor: f64,
    /// The share of the input price a prompt-cache read costs.
    pub cache_read_factor: f64,
    /// An OpenAI reasoning model (`max_completion_tokens`, no `temperature`).
    pub reasoning: bool,
    /// When the provider marked it deprecated.
    pub deprecated: Option<chrono::NaiveDate>,
    /// When the provider stops serving it.
    pub end_of_life: Option<chrono::NaiveDate>,
    /// What to move to.
    pub successor: Option<String>,
}

/// Batch prices are half the list prices on both providers unless the catalogue says
/// otherwise.
pub const DEFAULT_BATCH_FACTOR: f64 = 0.5;

/// Aliases, prices and lifecycle, built-in and extendable.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelTable {
    aliases: IndexMap<String, String>,
    prices: IndexMap<String, Price>,
    info: IndexMap<String, ModelInfo>,
}

/// The built-in catalogue (`engine/provider/models.yaml`), compiled in.
pub const BUILTIN_CATALOGUE: &str = include_str!("models.yaml");

impl Default for ModelTable {
    fn default() -> Self {
        ModelTable::builtin()
    }
}

impl ModelTable {
    /// The built-in catalogue's aliases, prices and lifecycle.
    pub fn builtin() -> Self {
        static BUILTIN: std::sync::OnceLock<ModelTable> = std::sync::OnceLock::new();
        BUILTIN
            .get_or_init(|| {
                // The file is part of the source; a test parses it, so this never fails
                // in a released binary. An empty table (every cost unknown) is the safe
                // fallback all the same.
                serde_saphyr::from_str::<CatalogueSpec>(BUILTIN_CATALOGUE)
                    .map(|spec| {
                        let mut table = ModelTable::empty();
                        table.merge(&spec);
                        table
                    })
                    .unwrap_or_else(|_| ModelTable::empty())
            })
            .clone()
    }

    /// An empty table (every name passes through, no prices).
    pub fn empty() -> Self {
        ModelTable {
            aliases: IndexMap::new(),
            prices: IndexMap::new(),
            info: IndexMap::new(),
        }
    }

    /// Merges a catalogue over this table: its entries replace entries of the same id,
    /// its aliases point at its ids.
    pub fn merge(&mut self, spec: &CatalogueSpec) {
        for (id, model) in &spec.models {
            let info = info_of(model);
            let price = match (model.input_per_mtok, model.output_per_mtok) {
                (Some(input_per_mtok), Some(output_per_mtok)) => Some(Price {
                    input_per_mtok,
                    output_per_mtok,
                }),
                _ => None,
            };
            for name in std::iter::once(id).chain(&model.snapshots) {
                self.info.insert(name.clone(), info.clone());
                match price {
                    Some(p) => self.prices.insert(name.clone(), p),
                    None => self.prices.shift_remove(name),
                };
            }
            for alias in &model.aliases {
                self.aliases.insert(alias.clone(), id.clone());
            }
        }
    }

    /// Adds or replaces an alias.
    pub fn with_alias(mut self, alias: impl Into<String>, id: impl Into<String>) -> Self {
        self.aliases.insert(alias.into(), id.into());
        self
    }

    /// Adds or replaces a price (for an exact id or an id prefix).
    pub fn with_price(mut self, id: impl Into<String>, price: Price) -> Self {
        self.prices.insert(id.into(), price);
        self
    }

    /// Merges a suite's entries over this table (the suite wins).
    pub fn extend(&mut self, aliases: &IndexMap<String, String>, prices: &IndexMap<String, Price>) {
        self.aliases
            .extend(aliases.iter().map(|(k, v)| (k.clone(), v.clone())));
        self.prices
            .extend(prices.iter().map(|(k, v)| (k.clone(), *v)));
    }

    /// The full id for `name`: an alias's target, or `name` itself.
    pub fn resolve<'a>(&'a self, name: &'a str) -> &'a str {
        self.aliases.get(name).map_or(name, String::as_str)
    }

    /// Whether `name` is a known alias.
    pub fn is_alias(&self, name: &str) -> bool {
        self.aliases.contains_key(name)
    }

    /// The aliases, in table order.
    pub fn aliases(&self) -> impl Iterator<Item = (&str, &str)> {
        self.aliases.iter().map(|(a, b)| (a.as_str(), b.as_str()))
    }

    /// The price for a model (alias or id): exact id, else the longest prefix entry.
    pub fn price(&self, name: &str) -> Option<Price> {
        longest_match(&self.prices, self.resolve(name)).copied()
    }

    /// What the catalogue says of a model (alias or id), matched as prices are.
    pub fn info(&self, name: &str) -> Option<&ModelInfo> {
        longest_match(&self.info, self.resolve(name))
    }

    /// The share of the list price a batch request of this model pays.
    pub fn batch_factor(&self, name: &str) -> f64 {
        self.info(name)
            .map_or(DEFAULT_BATCH_FACTOR, |i| i.batch_factor)
    }

    /// Whether the model is an OpenAI reasoning model.
    pub fn is_reasoning(&self, name: &str) -> bool {
        self.info(name).is_some_and(|i| i.reasoning)
    }

    /// The catalogue's models that are deprecated or have an end-of-life date, with what
    /// it says of them, in table order.
    pub fn lifecycle(&self) -> impl Iterator<Item = (&str, &ModelInfo)> {
        self.info
            .iter()
            .filter(|(_, i)| i.deprecated.is_some() || i.end_of_life.is_some())
            .map(|(id, i)| (id.as_str(), i))
    }

    /// A sentence for a run that uses `name` when the catalogue marks it deprecated or
    /// retiring, judged against `today`: when it stops being served and what to move to.
    pub fn lifecycle_warning(&self, name: &str, today: chrono::NaiveDate) -> Option<String> {
        let id = self.resolve(name);
        let info = self.info(name)?;
        let shown = if id == name {
            format!("model `{id}`")
        } else {
            format!("model `{name}` (`{id}`)")
        };
        let when = match (info.end_of_life, info.deprecated) {
            (Some(eol), _) if eol < today => {
                format!("{shown} reached end of life on {eol}; the provider may refuse it")
            }
            (Some(eol), _) => format!(
                "{shown} is deprecated and reaches end of life on {eol} ({} days from today)",
                (eol - today).num_days()
            ),
            (None, Some(since)) => format!("{shown} is deprecated since {since}"),
            (None, None) => return None,
        };
        Some(match &info.successor {
            Some(next) => format!("{when}: move to `{next}`"),
            None => when,
        })
    }
}

/// The entry of `map` for `id`: its exact key, else the longest key `id` starts with.
fn longest_match<'m, T>(map: &'m IndexMap<String, T>, id: &str) -> Option<&'m T> {
    if let Some(v) = map.get(id) {
        return Some(v);
    }
    map.iter()
        .filter(|(key, _)| id.starts_with(key.as_str()))
        .max_by_key(|(key, _)| key.len())
        .map(|(_, v)| v)
}

/// The lifecycle and request facts of one catalogue entry. Dates were checked against
/// the schema's pattern at load; one that still does not parse is left out.
fn info_of(model: &ModelSpec) -> ModelInfo {
    let day = |d: &Option<String>| {
        d.as_deref()
            .and_then(|d| chrono::NaiveDate::parse_from_str(d, "%Y-%m-%d").ok())
    };
    ModelInfo {
        batch_factor: model.batch_factor.unwrap_or(DEFAULT_BATCH_FACTOR),
        cache_write_factor: model.cache_write_factor.unwrap_or(DEFAULT_CACHE_WRITE),
        cache_read_factor: model.cache_read_factor.unwrap_or(DEFAULT_CACHE_READ),
        reasoning: model.reasoning,
        deprecated: day(&model.deprecated),
        end_of_life: day(&model.end_of_life),
        successor: model.successor.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn day(s: &str) -> chrono::NaiveDate {
        chrono::NaiveDate::parse_from_str(s, "%Y-%m-%d").unwrap()
    }

    #[test]
    fn the_builtin_catalogue_parses_and_is_not_empty() {
        let spec: CatalogueSpec = serde_saphyr::from_str(BUILTIN_CATALOGUE).unwrap();
        assert!(spec.models.len() > 10, "{}", spec.models.len());
        assert!(ModelTable::builtin().price("claude-sonnet-5-5").is_some());
    }

    #[test]
    fn short_aliases_name_models_that_are_served() {
        let t = ModelTable::builtin();
        assert_eq!(t.resolve("sonnet"), "claude-sonnet-5-5");
        assert_eq!(t.resolve("opus"), "claude-opus-5-5");
        assert_eq!(t.resolve("haiku"), "claude-haiku-5-5");
        let today = day("2026-11-28");
        for alias in ["sonnet", "opus", "haiku"] {
            assert_eq!(t.lifecycle_warning(alias, today), None, "{alias}");
        }
    }

    #[test]
    fn aliases_resolve_and_ids_pass_through() {
        let t = ModelTable::builtin();
        assert_eq!(t.resolve("sonnet-4.5"), "claude-sonnet-4-5");
        assert_eq!(t.resolve("my-local-model"), "my-local-model");
        let t = t.with_alias("judge", "gpt-4o-mini");
        assert_eq!(t.resolve("judge"), "gpt-4o-mini");
    }

    #[test]
    fn prices_match_by_longest_prefix() {
        let t = ModelTable::builtin();
        assert_eq!(
            t.price("gpt-4o-mini-2024-07-18").map(|p| p.input_per_mtok),
            Some(0.15)
        );
        assert_eq!(
            t.price("gpt-4o-2024-08-06").map(|p| p.input_per_mtok),
            Some(2.5)
        );
        assert_eq!(t.price("sonnet").map(|p| p.output_per_mtok), Some(10.0));
        assert_eq!(
            t.price("claude-sonnet-4-5-20250929")
                .map(|p| p.output_per_mtok),
            Some(15.0)
        );
        assert!(t.price("unknown").is_none());
        let p = t.price("haiku-4.5").unwrap();
        assert!((cost(&p, 1_000_000, 100_000) - 1.5).abs() < 1e-9);
    }

    #[test]
    fn a_retiring_model_says_when_and_what_to_move_to() {
        let t = ModelTable::builtin();
        let warning = t
            .lifecycle_warning("claude-sonnet-4-5-20250929", day("2026-11-28"))
            .unwrap();
        assert_eq!(
            warning,
            "model `claude-sonnet-4-5-20250929` is deprecated and reaches end of life on \
             2026-11-30 (2 days from today): move to `claude-sonnet-5-5`"
        );
        let after = t
            .lifecycle_warning("sonnet-4.5", day("2026-12-01"))
            .unwrap();
        assert!(
            after.starts_with(
                "model `sonnet-4.5` (`claude-sonnet-4-5`) reached end of life on 2026-11-30"
            ),
            "{after}"
        );
        let listed: Vec<&str> = t.lifecycle().map(|(id, _)| id).collect();
        assert!(listed.contains(&"claude-opus-4-5-20251101"), "{listed:?}");
    }

    #[test]
    fn a_catalogue_merged_over_the_table_wins() {
        let mut t = ModelTable::builtin();
        let spec: CatalogueSpec = serde_saphyr::from_str(
            "models:\n  my-model:\n    aliases: [sonnet]\n    input_per_mtok: 1\n    output_per_mtok: 2\n    reasoning: true\n    batch_factor: 0.25\n",
        )
        .unwrap();
        t.merge(&spec);
        assert_eq!(t.resolve("sonnet"), "my-model");
        assert_eq!(t.price("sonnet").map(|p| p.output_per_mtok), Some(2.0));
        assert!(t.is_reasoning("sonnet"));
        assert_eq!(t.batch_factor("sonnet"), 0.25);
        assert_eq!(t.batch_factor("never-heard-of"), DEFAULT_BATCH_FACTOR);
    }

    #[test]
    fn openai_reasoning_models_are_marked() {
        let t = ModelTable::builtin();
        assert!(t.is_reasoning("o4-mini-2025-04-16"));
        assert!(!t.is_reasoning("gpt-4.1"));
    }
}
