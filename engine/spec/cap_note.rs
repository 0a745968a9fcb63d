//! `cap_note:` of `suite.yaml`: how the reasoning of a verdict whose score a failed
//! assertion capped is written.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// How a capped score's reasoning reads.
#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
#[schemars(example = &"keep")]
pub enum CapNote {
    /// `score capped from N to M by failed assertions: ...` goes before the reasoning.
    #[default]
    Note,
    /// The reasoning stays as the judge wrote it (for judges whose reasoning explains
    /// their caps); the verdict still carries the score before the cap, the cap and the
    /// failed assertions.
    Keep,
}
