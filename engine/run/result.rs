//! The run result: dimension entries, the weighted score, the decision, and a summary of
//! everything that was not a plain score (unscored judges, errors, failed assertions,
//! repos without ground truth), so nothing a run found is silent.

use serde::Serialize;

use crate::spec::suite::DecisionRow;
use crate::verdict::types::{Status, Verdict};

/// Something the run summary calls out.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Problem {
    /// The dimension, when it is about one judge.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dimension: Option<String>,
    /// `unscored`, `error`, `assertion`, `input`, `divergence`, ...
    pub kind: String,
    /// What happened.
    pub message: String,
}

/// Counts and call-outs.
#[derive(Clone, Debug, Serialize, Default)]
pub struct Summary {
    /// Judges in the suite.
    pub judges: usize,
    /// Judges that gave a score.
    pub scored: usize,
    /// Judges without a score (reason in `problems`).
    pub unscored: usize,
    /// Judges that failed.
    pub errors: usize,
    /// Failed assertions, over all judges.
    pub failed_assertions: usize,
    /// Judges whose score passed their threshold.
    pub passed: usize,
    /// Everything worth a look, in judge order.
    pub problems: Vec<Problem>,
}

/// What was read.
#[derive(Clone, Debug, Serialize, Default)]
pub struct InputSummary {
    /// The results folder.
    pub results_dir: String,
    /// The ground-truth folder.
    pub ground_truth_dir: Option<String>,
    /// Result documents.
    pub results: usize,
    /// Ground-truth documents.
    pub ground_truth: usize,
    /// Repos with results but no ground truth.
    pub results_without_ground_truth: Vec<String>,
    /// Repos with ground truth but no results.
    pub ground_truth_without_results: Vec<String>,
    /// Bytes read.
    pub bytes: u64,
}

/// The run result document (written as JSON).
#[derive(Clone, Debug, Serialize)]
pub struct RunResult {
    /// A unique id for this run.
    pub run_id: String,
    /// When it ran (RFC 3339, UTC).
    pub timestamp: String,
    /// The suite's name.
    pub suite: String,
    /// `heuristic` or `llm`.
    pub mode: String,
    /// The model (or comma-separated panel), in LLM mode.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The provider, in LLM mode.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    /// Calls, tokens and cost, in LLM mode.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// Agreement between the models of a panel.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub panel: Option<crate::run::panel::RunPanel>,
    /// One entry per judge, in suite order.
    pub dimensions: Vec<Verdict>,
    /// sum(score x weight) / sum(weight) over scored judges, 2 decimals; null when no
    /// judge scored.
    pub total_score: Option<f64>,
    /// The same value, under the framework orchestrator's key.
    pub overall_score: Option<f64>,
    /// Mean confidence over scored judges.
    pub average_confidence: Option<f64>,
    /// The decision label (`NO_SCORE` when no judge scored).
    pub decision: String,
    /// How the weights were combined.
    pub weighting: String,
    /// Counts and call-outs.
    pub summary: Summary,
    /// What was read.
    pub inputs: InputSummary,
    /// Wall time of the run in milliseconds.
    pub duration_ms: u64,
}

/// Model usage over a run.
#[derive(Clone, Debug, Serialize, Default)]
pub struct Usage {
    /// Verdicts asked for (model x unit).
    pub calls: usize,
    /// Of those, answered from the cache.
    pub cached: usize,
    /// Input tokens.
    pub input_tokens: u64,
    /// Output tokens.
    pub output_tokens: u64,
    /// Cost in USD of calls made in this run (cached answers cost nothing).
    pub cost_usd: f64,
    /// Cost per dimension.
    pub cost_by_dimension: indexmap::IndexMap<String, f64>,
}

/// Sums the calls of every verdict.
pub fn usage_of(dims: &[Verdict], spent: f64) -> Usage {
    let mut u = Usage::default();
    for d in dims {
        let mut dim_cost = 0.0;
        for c in &d.llm_calls {
            u.calls += 1;
            if c.cached {
                u.cached += 1;
            } else {
                dim_cost += c.cost_usd.unwrap_or(0.0);
            }
            u.input_tokens += c.input_tokens;
            u.output_tokens += c.output_tokens;
        }
        u.cost_by_dimension
            .insert(d.name.clone(), (dim_cost * 1e6).round() / 1e6);
    }
    let summed: f64 = u.cost_by_dimension.values().sum();
    u.cost_usd = ((if spent > 0.0 { spent } else { summed }) * 1e6).round() / 1e6;
    u
}

/// Label when no judge produced a score.
pub const NO_SCORE: &str = "NO_SCORE";

/// Weighted score over scored judges.
pub fn weighted_score(dims: &[Verdict]) -> Option<f64> {
    let scored: Vec<(f64, f64)> = dims
        .iter()
        .filter(|d| d.status == Status::Scored)
        .filter_map(|d| d.score.map(|s| (s, d.weight)))
        .collect();
    let total_w: f64 = scored.iter().map(|(_, w)| w).sum();
    (total_w > 0.0).then(|| {
        let v = scored.iter().map(|(s, w)| s * w).sum::<f64>() / total_w;
        (v * 100.0).round() / 100.0
    })
}

/// The first decision row whose `min` the score reaches.
pub fn decide(score: Option<f64>, table: &[DecisionRow]) -> String {
    let Some(s) = score else {
        return NO_SCORE.into();
    };
    table
        .iter()
        .find(|r| r.min.is_none_or(|m| s >= m))
        .map_or_else(|| NO_SCORE.into(), |r| r.label.clone())
}

/// Builds the summary from the verdicts.
pub fn summarize(dims: &[Verdict]) -> Summary {
    let mut s = Summary {
        judges: dims.len(),
        ..Summary::default()
    };
    for d in dims {
        match d.status {
            Status::Scored => s.scored += 1,
            Status::Unscored => s.unscored += 1,
            Status::Error => s.errors += 1,
        }
        if d.passed == Some(true) {
            s.passed += 1;
        }
        if d.status != Status::Scored {
            s.problems.push(Problem {
                dimension: Some(d.name.clone()),
                kind: if d.status == Status::Error {
                    "error"
                } else {
                    "unscored"
                }
                .into(),
                message: d.unscored_reason.clone().unwrap_or_default(),
            });
        }
        for r in &d.repos {
            if r.status != Status::Scored {
                s.problems.push(Problem {
                    dimension: Some(d.name.clone()),
                    kind: if r.status == Status::Error {
                        "error"
                    } else {
                        "unscored"
                    }
                    .into(),
                    message: format!(
                        "repo {}: {}",
                        r.repo,
                        r.unscored_reason.clone().unwrap_or_default()
                    ),
                });
            }
        }
        for f in &d.assertion_failures {
            s.failed_assertions += 1;
            let mut message = f.message.clone();
            if let Some(r) = &f.repo {
                message = format!("repo {r}: {message}");
            }
            if let Some(cap) = f.cap {
                message.push_str(&format!(" (cap {cap})"));
            }
            s.problems.push(Problem {
                dimension: Some(d.name.clone()),
                kind: "assertion".into(),
                message,
            });
        }
        if let (Some(before), Some(cap)) = (d.score_before_cap, d.cap_applied) {
            s.problems.push(Problem {
                dimension: Some(d.name.clone()),
                kind: "cap".into(),
                message: format!("score capped from {before} to {cap}"),
            });
        }
    }
    s
}

/// Mean confidence over scored judges.
pub fn average_confidence(dims: &[Verdict]) -> Option<f64> {
    let c: Vec<f64> = dims
        .iter()
        .filter(|d| d.status == Status::Scored)
        .filter_map(|d| d.confidence)
        .collect();
    (!c.is_empty()).then(|| {
        let v = c.iter().sum::<f64>() / c.len() as f64;
        (v * 100.0).round() / 100.0
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::suite::default_decision;

    #[test]
    fn decisions_follow_the_table() {
        let t = default_decision();
        assert_eq!(decide(Some(4.0), &t), "STRONG_PASS");
        assert_eq!(decide(Some(3.99), &t), "PASS");
        assert_eq!(decide(Some(3.5), &t), "PASS");
        assert_eq!(decide(Some(3.0), &t), "WEAK_PASS");
        assert_eq!(decide(Some(2.99), &t), "FAIL");
        assert_eq!(decide(None, &t), NO_SCORE);
    }
}
