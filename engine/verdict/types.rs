//! What a judge concludes. The field names follow the framework's `JudgeResult` and the
//! original orchestrator's dimension entries, so existing dashboards read caldera's output.

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};

use crate::doc::Doc;
use crate::verdict::panel::DimensionPanel;
use crate::verdict::repeat::Repeats;
pub(crate) use crate::verdict::scoring::{ModelScore, Scoring};

/// Whether a verdict carries a score.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// A score 1-5 was given.
    Scored,
    /// No score, for a stated reason (no heuristic in heuristic mode, an unreadable
    /// model reply, a metric outside every band). Left out of the weighted score.
    Unscored,
    /// Evidence or scoring failed; the reason says where.
    Error,
}

/// Where a score came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// The judge's heuristic band table.
    Heuristic,
    /// A model's reply.
    Llm,
}

/// A verdict's score: one verdict's integer on the 1-5 scale (the framework's contract),
/// or the exact mean of several (a per-repo judge). Written as an integer or a float
/// accordingly, so a reader can tell a 4 from a mean that happens to be 4.0.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Score {
    /// One verdict, after caps.
    Single(i64),
    /// The mean of unit scores, unrounded.
    Mean(f64),
}

impl Score {
    /// The score as a number.
    pub fn value(self) -> f64 {
        match self {
            Score::Single(s) => s as f64,
            Score::Mean(m) => m,
        }
    }
}

impl Serialize for Score {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match *self {
            Score::Single(v) => s.serialize_i64(v),
            Score::Mean(v) => s.serialize_f64(v),
        }
    }
}

impl std::fmt::Display for Score {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            Score::Single(v) => write!(f, "{v}"),
            Score::Mean(v) => write!(f, "{v:.2}"),
        }
    }
}

/// A failed assertion.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AssertionFailure {
    /// The rendered message.
    pub message: String,
    /// Its cap, when it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cap: Option<i64>,
    /// The repo, for per-repo judges.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub repo: Option<String>,
    /// The item, for an assertion checked per item (`for_each`): its id, repo or name
    /// field, else its position.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub item: Option<String>,
    /// When the assertion could not be evaluated: the error, with its key path and
    /// kind, for `caldera validate` (the result shows `message`, which words it).
    #[serde(skip)]
    pub error: Option<crate::evidence::error::EvalError>,
}

/// One repo's verdict within a per-repo judge.
#[derive(Clone, Debug, Serialize)]
pub struct RepoVerdict {
    /// The repo id.
    pub repo: String,
    /// Scored, unscored or error.
    pub status: Status,
    /// The score after caps.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub score: Option<i64>,
    /// How sure the scorer was (0-1), when it scored.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub confidence: Option<f64>,
    /// Why.
    pub reasoning: String,
    /// Why there is no score.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unscored_reason: Option<String>,
    /// Evidence for this repo.
    pub evidence: Doc,
}

/// The spread of per-repo scores.
#[derive(Clone, Debug, Serialize)]
pub struct Spread {
    /// Lowest repo score.
    pub min: i64,
    /// Highest repo score.
    pub max: i64,
    /// Sample standard deviation (n-1); null for one repo.
    pub std: Option<f64>,
    /// Number of scored repos.
    pub n: usize,
}

/// One dimension's entry in the run result.
#[derive(Clone, Debug, Serialize)]
pub struct Verdict {
    /// The dimension.
    pub name: String,
    /// Same as `name` (the framework's `JudgeResult.dimension`).
    pub dimension: String,
    /// Scored, unscored or error.
    pub status: Status,
    /// Heuristic or LLM.
    pub source: Source,
    /// The final score (after caps); for per-repo judges the mean of repo scores.
    pub score: Option<Score>,
    /// The weight as written.
    pub weight: f64,
    /// The weight divided by the sum of all the suite's weights.
    pub normalized_weight: f64,
    /// score x normalized_weight (null when unscored).
    pub weighted_score: Option<f64>,
    /// 0..1 (null when unscored).
    pub confidence: Option<f64>,
    /// Why.
    pub reasoning: String,
    /// Evidence points.
    pub evidence_cited: Vec<String>,
    /// Improvements.
    pub recommendations: Vec<String>,
    /// Sub-dimension scores.
    pub sub_scores: IndexMap<String, i64>,
    /// Whether every assertion held; null when some did not run (the evidence they read
    /// could not be computed), so an errored judge never claims its checks passed.
    pub ground_truth_passed: Option<bool>,
    /// Whether every assertion was evaluated.
    pub assertions_ran: bool,
    /// The messages of failed assertions.
    pub ground_truth_failures: Vec<String>,
    /// Failed assertions with their caps.
    pub assertion_failures: Vec<AssertionFailure>,
    /// The score before a cap lowered it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub score_before_cap: Option<i64>,
    /// The cap that was applied.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cap_applied: Option<i64>,
    /// The score needed to pass.
    pub pass_threshold: f64,
    /// score >= pass_threshold (null when unscored).
    pub passed: Option<bool>,
    /// Why there is no score.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unscored_reason: Option<String>,
    /// The model's raw reply (LLM mode).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub raw_response: String,
    /// The score as the model gave it, on the judge's declared scale (LLM mode).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model_score: Option<ModelScore>,
    /// Per-repo verdicts (per-repo judges).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub repos: Vec<RepoVerdict>,
    /// Spread of per-repo scores.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub spread: Option<Spread>,
    /// In LLM mode: the heuristic's verdict on the same evidence, for comparison.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub heuristic: Option<HeuristicSide>,
    /// In LLM mode: each model call behind this verdict.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub llm_calls: Vec<CallInfo>,
    /// With a panel of models: every model's own verdict.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub model_verdicts: Vec<ModelVerdict>,
    /// With a panel of models: their ratings and agreement on this dimension.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub panel: Option<DimensionPanel>,
    /// With `--repeat N`: each unit and model's scores across repeats, and whether they
    /// disagree.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub repeats: Option<Repeats>,
    /// How the verdict was reached when it is not the mode's usual way (a judge with
    /// `llm: never` scored by its heuristic in an LLM run).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// The evidence the verdict rests on (suite-scope judges).
    pub evidence: Doc,
}

/// One panel member's verdict, kept beside the consensus.
#[derive(Clone, Debug, Serialize)]
pub struct ModelVerdict {
    /// The panel member, as the suite names it.
    pub model: String,
    /// The repo, for per-repo judges.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub repo: Option<String>,
    /// Its score (1-5).
    pub score: i64,
    /// Its confidence (0-1).
    pub confidence: f64,
    /// Its reasoning, as the model wrote it (fenced in reports).
    pub reasoning: String,
}

/// The heuristic's view, shown beside a model's verdict.
#[derive(Clone, Debug, Serialize)]
pub struct HeuristicSide {
    /// Scored or not.
    pub status: Status,
    /// Its score (mean over repos for per-repo judges).
    pub score: Option<Score>,
    /// Its reasoning, or why it has no score.
    pub reasoning: String,
}

/// What one model call cost and how it went, on the verdict.
#[derive(Clone, Debug, Serialize, Default)]
pub struct CallInfo {
    /// The model asked, as the suite names it.
    pub model: String,
    /// Prompt tokens of the call, re-asks included.
    pub input_tokens: u64,
    /// Reply tokens of the call, re-asks included.
    pub output_tokens: u64,
    /// Of the reply tokens, those spent reasoning (when the provider itemises them).
    #[serde(default, skip_serializing_if = "is_zero_u64")]
    pub reasoning_tokens: u64,
    /// Prompt tokens written to the provider's prompt cache (not in `input_tokens`).
    #[serde(default, skip_serializing_if = "is_zero_u64")]
    pub cache_write_tokens: u64,
    /// Prompt tokens read from the provider's prompt cache (not in `input_tokens`).
    #[serde(default, skip_serializing_if = "is_zero_u64")]
    pub cache_read_tokens: u64,
    /// Cost in USD, when the price is known.
    pub cost_usd: Option<f64>,
    /// Served from the cache.
    pub cached: bool,
    /// Provider requests made (retries and the re-ask included); zero for a cache hit.
    pub attempts: u32,
    /// Whether the reply had to be re-asked.
    pub reasked: bool,
    /// Whether the call ended with a verdict.
    pub scored: bool,
    /// A cached verdict for this call that was refused, and why.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache_problem: Option<String>,
}

fn is_zero_u64(n: &u64) -> bool {
    *n == 0
}
