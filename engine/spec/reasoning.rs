//! `reasoning:` on a judge or a suite: how hard a reasoning model thinks before its
//! verdict. Types only; `load` checks them against what the APIs accept.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::spec::strict;

/// Thinking before the verdict. Anthropic: adaptive thinking (or manual extended thinking
/// with `budget_tokens`), with `effort`; OpenAI reasoning models: `reasoning_effort`.
/// The thinking itself goes to the interaction log, never into the verdict; its tokens
/// are billed as output.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(example = serde_json::json!({"effort": "medium"}))]
pub struct ReasoningSpec {
    /// How much effort the model spends: `low`, `medium` or `high` (the levels both
    /// providers accept).
    #[serde(default)]
    pub effort: Option<Effort>,
    /// Anthropic only: manual extended thinking with this many thinking tokens (at least
    /// 1,024, below `max_tokens`) instead of adaptive thinking. Newer models refuse it;
    /// prefer `effort`.
    #[serde(default, deserialize_with = "strict::opt_whole")]
    #[schemars(range(min = 1024), example = 4096)]
    pub budget_tokens: Option<i64>,
    /// The output token limit, thinking included (default 16,000 with reasoning on; a
    /// plain verdict needs about 2,048).
    #[serde(default, deserialize_with = "strict::opt_whole")]
    #[schemars(range(min = 1), example = 16000)]
    pub max_tokens: Option<i64>,
}

/// A reasoning effort level.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Effort {
    /// Least thinking.
    Low,
    /// The usual.
    Medium,
    /// Most thinking.
    High,
}

impl Effort {
    /// The word both APIs take.
    pub fn as_str(self) -> &'static str {
        match self {
            Effort::Low => "low",
            Effort::Medium => "medium",
            Effort::High => "high",
        }
    }
}
