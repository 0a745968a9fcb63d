//! How a judge's reply is read: the declared verdict format.
//!
//! Most judges use the default, a JSON object with an integer `score` in 1..5.
//! Judges ported from other harnesses (MT-bench `Rating: [[8]]`, pairwise
//! `[[A>B]]`, `Output (a)`) declare a regex, an optional label map and their own
//! scale instead, so their recorded verdicts can be re-read without code.
//!
//! ```yaml
//! verdict_format:
//!   kind: regex
//!   pattern: '\[\[([ABC])\]\]'
//!   pick: last
//!   labels: { A: 1, B: 2, C: 1.5 }
//!   scale: [1, 2]
//!   numbers: decimal
//! ```

use indexmap::IndexMap;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The declared shape of a judge's reply and the scale its score lives on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(example = example_format())]
pub struct VerdictFormat {
    /// Where the score is found: `json` (an object anywhere in the reply, the
    /// default) or `regex` (a pattern with a capture group).
    #[serde(default)]
    #[schemars(example = &"regex")]
    pub kind: FormatKind,
    /// JSON only: a JSON Pointer (RFC 6901) to the score inside the object,
    /// e.g. `/score` (the default) or `/ordered_models/0/model`. A pointer lets
    /// a judge keep whatever object shape its prompt asks for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(example = &"/ordered_models/0/model")]
    pub field: Option<String>,
    /// Regex only: the pattern (Rust `regex` syntax). The score is the group
    /// named `score` if there is one, else the first group that took part in
    /// the match, so alternatives such as `A: (\d+)|Score (\d+)` work.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(example = &"Rating: \\[\\[(\\d+)\\]\\]")]
    pub pattern: Option<String>,
    /// Regex only: which match counts when the pattern matches more than once.
    /// `unique` (the default) refuses a reply whose matches disagree instead of
    /// picking one; `first` and `last` pick, for harnesses whose replies are known to
    /// restate a verdict.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(example = &"unique")]
    pub pick: Option<Pick>,
    /// Maps a captured or selected text (e.g. `A`, `B`, `A>>B`) to a score.
    /// When present, a captured value that is not a key is an error; numbers
    /// are not read directly.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::spec::strict::opt_number_map"
    )]
    #[schemars(
        with = "Option<std::collections::BTreeMap<String, f64>>",
        example = serde_json::json!({"A>B": 1, "A=B": 1.5, "B>A": 2})
    )]
    pub labels: Option<IndexMap<String, f64>>,
    /// Inclusive `[min, max]` of the score; the default is the engine's 1..5. `min` comes
    /// first and is below `max` (`caldera validate` checks the order, which a schema
    /// cannot).
    #[serde(
        default = "default_scale",
        deserialize_with = "crate::spec::strict::number_pair"
    )]
    #[schemars(example = serde_json::json!([1, 10]))]
    pub scale: [f64; 2],
    /// Whether a score may have a fractional part (`decimal`) or must be a
    /// whole number (`integer`, the default: a 3.5 on a 1..5 judge is refused).
    #[serde(default)]
    #[schemars(example = &"decimal")]
    pub numbers: NumberKind,
    /// JSON only: how a tie is written, for rank formats where a judge may place two
    /// answers equal (`ordered_models` with the same rank twice). When every pointer of
    /// `same` is present and all hold one value, the reply is read as `score`, instead
    /// of the answer that happens to be listed first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(example = example_tie())]
    pub tie: Option<TieSpec>,
    /// How the verdict is asked for: `text` (the reply is text the format reads) or
    /// `schema` (the provider is handed a JSON Schema of the verdict object and binds
    /// the reply to it: Anthropic `output_config.format`, OpenAI `response_format`
    /// `json_schema` with `strict`). `schema` needs the default JSON verdict (score at
    /// `/score`, no labels); the `claude` CLI cannot bind a reply and reads it as text.
    /// Unset: the suite's `verdict_transport`, else `text`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(example = &"schema")]
    pub transport: Option<Transport>,
}

/// How a verdict is asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Transport {
    /// Free text, read by the format (JSON anywhere in the reply, or a regex).
    #[default]
    Text,
    /// A JSON Schema the provider binds the reply to; the reply is validated against
    /// it, and a violation is asked again once with the violation named.
    Schema,
}

/// A tie in a rank format.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(example = example_tie())]
pub struct TieSpec {
    /// JSON Pointers whose values are equal in a tie, e.g. the two ranks.
    #[schemars(example = serde_json::json!(["/ordered_models/0/rank", "/ordered_models/1/rank"]))]
    pub same: Vec<String>,
    /// The score of a tie, within the scale.
    #[serde(deserialize_with = "crate::spec::strict::number")]
    #[schemars(example = 1.5)]
    pub score: f64,
}

fn example_tie() -> serde_json::Value {
    serde_json::json!({"same": ["/ordered_models/0/rank", "/ordered_models/1/rank"], "score": 1.5})
}

/// Where a score is found in a reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum FormatKind {
    /// A JSON object somewhere in the reply (prose and code fences around it are fine).
    #[default]
    Json,
    /// A regular expression with a capture group.
    Regex,
}

/// Which regex match counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Pick {
    /// The first match in the reply.
    First,
    /// The last match in the reply.
    Last,
    /// Every match must give the same score; disagreeing matches make the reply
    /// unreadable (the default: a reply that quotes or revises a verdict cannot be read
    /// one way).
    #[default]
    Unique,
}

/// Whether fractional scores are accepted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum NumberKind {
    /// Whole numbers only.
    #[default]
    Integer,
    /// Any number within the scale.
    Decimal,
}

fn example_format() -> serde_json::Value {
    serde_json::json!({"kind": "regex", "pattern": "Rating: \\[\\[(\\d+)\\]\\]", "pick": "unique", "scale": [1, 10]})
}

fn default_scale() -> [f64; 2] {
    [1.0, 5.0]
}

impl Default for VerdictFormat {
    fn default() -> Self {
        VerdictFormat {
            kind: FormatKind::Json,
            field: None,
            pattern: None,
            pick: None,
            labels: None,
            scale: default_scale(),
            numbers: NumberKind::Integer,
            tie: None,
            transport: None,
        }
    }
}
