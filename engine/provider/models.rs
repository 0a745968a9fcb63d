//! Model aliases and prices.
//!
//! Suites say `model: sonnet`; the APIs want a full id. The table maps short
//! names to ids and ids to prices, and a suite can add its own entries
//! (a new model, a local server's model name, a negotiated price). A name that
//! is not an alias passes through unchanged as a full id.

use indexmap::IndexMap;

pub use crate::spec::suite::Price;

/// The cost in dollars of a call with these token counts at `price`.
pub fn cost(price: &Price, input_tokens: u64, output_tokens: u64) -> f64 {
    (input_tokens as f64 * price.input_per_mtok + output_tokens as f64 * price.output_per_mtok)
        / 1_000_000.0
}

/// Aliases and prices, built-in and extendable.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelTable {
    aliases: IndexMap<String, String>,
    prices: IndexMap<String, Price>,
}

const BUILTIN_ALIASES: &[(&str, &str)] = &[
    ("sonnet", "claude-sonnet-4-5-20250929"),
    ("opus", "claude-opus-4-5-20251101"),
    ("haiku", "claude-haiku-4-5-20251001"),
    ("sonnet-4.5", "claude-sonnet-4-5-20250929"),
    ("opus-4.5", "claude-opus-4-5-20251101"),
    ("haiku-4.5", "claude-haiku-4-5-20251001"),
    ("opus-4.1", "claude-opus-4-1-20250805"),
    ("sonnet-4", "claude-sonnet-4-20250514"),
    ("opus-4", "claude-opus-4-20250514"),
    ("haiku-3.5", "claude-3-5-haiku-20241022"),
];

/// Published list prices (USD per Mtok, input/output). Matched by exact id,
/// then by the longest table key that the id starts with, so dated snapshots
/// (`gpt-4o-2024-08-06`) find their family's price.
const BUILTIN_PRICES: &[(&str, f64, f64)] = &[
    ("claude-opus-4-5", 5.0, 25.0),
    ("claude-opus-4-1", 15.0, 75.0),
    ("claude-opus-4-20250514", 15.0, 75.0),
    ("claude-sonnet-4-5", 3.0, 15.0),
    ("claude-sonnet-4-20250514", 3.0, 15.0),
    ("claude-haiku-4-5", 1.0, 5.0),
    ("claude-3-5-haiku", 0.8, 4.0),
    ("claude-3-7-sonnet", 3.0, 15.0),
    ("gpt-4o-mini", 0.15, 0.6),
    ("gpt-4o", 2.5, 10.0),
    ("gpt-4.1-nano", 0.1, 0.4),
    ("gpt-4.1-mini", 0.4, 1.6),
    ("gpt-4.1", 2.0, 8.0),
    ("o4-mini", 1.1, 4.4),
];

impl Default for ModelTable {
    fn default() -> Self {
        ModelTable::builtin()
    }
}

impl ModelTable {
    /// The built-in aliases and prices.
    pub fn builtin() -> Self {
        ModelTable {
            aliases: BUILTIN_ALIASES
                .iter()
                .map(|(a, id)| (a.to_string(), id.to_string()))
                .collect(),
            prices: BUILTIN_PRICES
                .iter()
                .map(|&(id, i, o)| {
                    (
                        id.to_string(),
                        Price {
                            input_per_mtok: i,
                            output_per_mtok: o,
                        },
                    )
                })
                .collect(),
        }
    }

    /// An empty table (every name passes through, no prices).
    pub fn empty() -> Self {
        ModelTable {
            aliases: IndexMap::new(),
            prices: IndexMap::new(),
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
        let id = self.resolve(name);
        if let Some(p) = self.prices.get(id) {
            return Some(*p);
        }
        self.prices
            .iter()
            .filter(|(key, _)| id.starts_with(key.as_str()))
            .max_by_key(|(key, _)| key.len())
            .map(|(_, p)| *p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aliases_resolve_and_ids_pass_through() {
        let t = ModelTable::builtin();
        assert_eq!(t.resolve("sonnet"), "claude-sonnet-4-5-20250929");
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
        assert_eq!(t.price("sonnet").map(|p| p.output_per_mtok), Some(15.0));
        assert!(t.price("unknown").is_none());
        let p = t.price("haiku").unwrap();
        assert!((cost(&p, 1_000_000, 100_000) - 1.5).abs() < 1e-9);
    }
}
