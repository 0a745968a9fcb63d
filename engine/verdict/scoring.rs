//! A score and what explains it, as a heuristic or a model gives it: the piece the
//! verdict types, the panel, repeats and heuristics all build on, so it sits below them.

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};

/// A score and what explains it, before assertions and weights.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Scoring {
    /// 1-5.
    pub score: i64,
    /// 0..1.
    pub confidence: f64,
    /// Why.
    pub reasoning: String,
    /// Evidence points.
    pub evidence_cited: Vec<String>,
    /// Improvements.
    pub recommendations: Vec<String>,
    /// Sub-dimension scores.
    pub sub_scores: IndexMap<String, i64>,
    /// The model's raw reply (LLM mode).
    pub raw_response: String,
    /// The score as the model gave it, on its own scale (LLM mode).
    pub model_score: Option<ModelScore>,
}

/// A model's score before it was mapped onto 1-5: kept so a 2/10 is visible as such.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct ModelScore {
    /// The score read from the reply.
    pub score: f64,
    /// The judge's declared scale, `[min, max]`.
    pub scale: [f64; 2],
}
