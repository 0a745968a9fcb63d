//! A judge test case: `cases/<case>/case.yaml` beside a suite's judges says what the case
//! runs on; `cases/<case>/expect.yaml` says what every judge must conclude there.
//!
//! Two files because `caldera test --update` rewrites the expectations after a review and
//! must not touch the hand-written case (its comments included). Types only;
//! `schemas/case.schema.json` and `schemas/expect.schema.json` are generated from them.

use indexmap::IndexMap;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What a case runs on.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(title = "caldera test case", example = example_case())]
pub struct CaseSpec {
    /// What the case exercises, in a sentence.
    #[serde(default)]
    #[schemars(example = &"One scan whose two critical CVEs are both in the ground truth.")]
    pub description: Option<String>,

    /// The analysis results: a folder relative to the case (default `results`), or
    /// `suite` for the suite's own results folder.
    #[serde(default)]
    #[schemars(example = &"results")]
    pub results: Option<String>,

    /// The ground truth: a folder relative to the case, `suite` for the suite's own
    /// ground-truth folder, or `none`. Default: the case's `truth` folder when it exists,
    /// else `none`.
    #[serde(default)]
    #[schemars(example = &"suite")]
    pub ground_truth: Option<String>,

    /// Named inputs of the suite (`inputs.files`) for this case: a JSON file relative to
    /// the case, or null to run without it.
    #[serde(default)]
    #[schemars(example = serde_json::json!({"baseline": "baseline.json"}))]
    pub inputs: IndexMap<String, Option<String>>,

    /// Also judge the case in LLM mode, offline: every reply comes from the case's
    /// `cassettes/` folder (written by `caldera test --record`). A prompt that changed
    /// since its reply was recorded is reported as a stale cassette, never sent.
    #[serde(default)]
    pub llm: Option<LlmCaseSpec>,
}

/// LLM mode of a case.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LlmCaseSpec {
    /// The models whose replies are recorded (aliases or ids); several make a panel.
    /// Default: the suite's `model`.
    #[serde(default)]
    #[schemars(example = serde_json::json!(["sonnet"]))]
    pub models: Vec<String>,
}

/// What must hold in a case, per mode and judge.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(title = "caldera test expectations", example = example_expect())]
pub struct ExpectSpec {
    /// Heuristic mode: what each judge (by dimension) must conclude.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub heuristic: IndexMap<String, JudgeExpect>,

    /// LLM mode, from the case's cassettes: what each judge must conclude.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub llm: IndexMap<String, JudgeExpect>,
}

/// What one judge must conclude. Every key is optional; only what is written is checked.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct JudgeExpect {
    /// `scored`, `unscored` or `error`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<ExpectedStatus>,

    /// The score after caps: a number (exact; a per-repo judge's mean to 1e-9), or an
    /// inclusive range `{min, max}` (either bound may be left out).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub score: Option<ScoreExpect>,

    /// Whether the score reaches the judge's pass threshold.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub passed: Option<bool>,

    /// A text the reason for no score must contain (unscored and error verdicts).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,

    /// Evidence values by key path (`iac_summary.total_misconfigurations`,
    /// `per_repo[0].tp`). For a `scope: repo` judge the path starts with the repo id.
    /// Numbers compare to 1e-9; other values exactly.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    #[schemars(example = serde_json::json!({"fix_rate": 80.0, "per_repo[0].repo": "critical-cves"}))]
    pub evidence: IndexMap<String, serde_json::Value>,

    /// Assertion outcomes, keyed by the assertion's `message` as written in the judge
    /// (or its position, `0` for the first): `held` or `failed` (on any repo).
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    #[schemars(example = serde_json::json!({"No result matched any ground-truth file": "held"}))]
    pub assertions: IndexMap<String, AssertionOutcome>,
}

/// A verdict's status.
#[derive(Clone, Copy, Debug, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum ExpectedStatus {
    /// A score was given.
    Scored,
    /// No score, for a stated reason.
    Unscored,
    /// Evidence or scoring failed.
    Error,
}

/// An expected score.
#[derive(Clone, Copy, Debug, Deserialize, JsonSchema, PartialEq)]
#[serde(untagged)]
pub enum ScoreExpect {
    /// Exactly this score.
    Exact(f64),
    /// Inside this inclusive range.
    Range(ScoreRange),
}

/// Written back as people write scores: `4`, not `4.0`.
impl Serialize for ScoreExpect {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            ScoreExpect::Exact(x) if x.fract() == 0.0 && x.abs() < 1e15 => {
                s.serialize_i64(*x as i64)
            }
            ScoreExpect::Exact(x) => s.serialize_f64(*x),
            ScoreExpect::Range(r) => r.serialize(s),
        }
    }
}

/// An inclusive score range.
#[derive(Clone, Copy, Debug, Deserialize, Serialize, JsonSchema, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ScoreRange {
    /// The lowest score allowed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min: Option<f64>,
    /// The highest score allowed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max: Option<f64>,
}

/// Whether an assertion held.
#[derive(Clone, Copy, Debug, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum AssertionOutcome {
    /// It was true (on every repo).
    Held,
    /// It was false, or could not be evaluated (on some repo).
    Failed,
}

fn example_case() -> serde_json::Value {
    serde_json::json!({
        "description": "The bundled sample run.",
        "results": "suite",
        "ground_truth": "suite"
    })
}

fn example_expect() -> serde_json::Value {
    serde_json::json!({
        "heuristic": {
            "iac_quality": {
                "status": "scored",
                "score": 3,
                "evidence": {"actionability_rate": 85.71},
                "assertions": {"0": "held"}
            }
        }
    })
}
