//! The run result: dimension entries, the weighted score, the decision, and a summary of
//! everything that was not a plain score (unscored judges, errors, failed assertions,
//! repos without ground truth), so nothing a run found is silent. The decision and the
//! gate are computed in `verdict::decision` and `verdict::gate`; this is the document
//! they are assembled into.

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};

use crate::doc::Doc;

use crate::verdict::decision::Decision;
use crate::verdict::gate::Gate;
use crate::verdict::panel::RunPanel;
use crate::verdict::types::{Status, Verdict};

/// Something the run summary calls out.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Problem {
    /// The dimension, when it is about one judge.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dimension: Option<String>,
    /// What sort of problem: reports group and colour by it.
    pub kind: ProblemKind,
    /// What happened.
    pub message: String,
}

/// What sort of problem the run summary calls out; written as the kebab-case word
/// reports and dashboards match on.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum ProblemKind {
    /// A judge or repo without a score.
    Unscored,
    /// A judge or repo whose evidence or scoring failed.
    Error,
    /// A failed assertion.
    Assertion,
    /// A score lowered by an assertion's cap.
    Cap,
    /// Inputs: a repo on one side only, a file skipped as unreadable.
    Input,
    /// A panel member that gave no verdict.
    Panel,
    /// The provider asked to slow down.
    RateLimit,
    /// A cached verdict that was refused and asked again.
    Cache,
    /// A model and the heuristic two points or more apart.
    Divergence,
    /// Repeats of one prompt that disagree.
    Unstable,
    /// A panel's agreement below its target.
    Agreement,
    /// A model the catalogue marks deprecated or past its end of life.
    Model,
    /// What the data check found on the run's inputs: a field path or selector that
    /// never matched, an item key that shadows a context name, an expression that raised.
    Data,
}

impl ProblemKind {
    /// The word written in the result.
    pub fn as_str(self) -> &'static str {
        match self {
            ProblemKind::Unscored => "unscored",
            ProblemKind::Error => "error",
            ProblemKind::Assertion => "assertion",
            ProblemKind::Cap => "cap",
            ProblemKind::Input => "input",
            ProblemKind::Panel => "panel",
            ProblemKind::RateLimit => "rate-limit",
            ProblemKind::Cache => "cache",
            ProblemKind::Divergence => "divergence",
            ProblemKind::Unstable => "unstable",
            ProblemKind::Agreement => "agreement",
            ProblemKind::Model => "model",
            ProblemKind::Data => "data",
        }
    }
}

impl std::fmt::Display for ProblemKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl PartialEq<&str> for ProblemKind {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

/// How a run was scored.
#[derive(Clone, Copy, Debug, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum RunMode {
    /// By each judge's heuristic.
    Heuristic,
    /// By a model or a panel of models.
    Llm,
}

/// Counts and call-outs.
#[derive(Clone, Debug, Serialize, Default)]
pub struct RunSummary {
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
#[derive(Clone, Debug, Serialize, Deserialize, Default)]
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
    /// Files skipped as unreadable (`file:line:column`), each also listed in the problems.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skipped: Vec<String>,
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
    /// Heuristic or LLM.
    pub mode: RunMode,
    /// The model (or comma-separated panel), in LLM mode.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The provider, in LLM mode.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    /// Calls, tokens and cost, in LLM mode.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usage: Option<RunUsage>,
    /// Agreement between the models of a panel.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub panel: Option<RunPanel>,
    /// One entry per judge, in suite order.
    pub dimensions: Vec<Verdict>,
    /// sum(score x weight) / sum(weight) over scored judges, exact; null when no judge
    /// scored. Shown rounded; the decision rests on `gate.decision_score`.
    pub total_score: Option<f64>,
    /// The same value, under the framework orchestrator's key.
    pub overall_score: Option<f64>,
    /// Mean confidence over scored judges.
    pub average_confidence: Option<f64>,
    /// The decision label (`NO_SCORE` when no judge scored).
    pub decision: Decision,
    /// What the decision rests on: the exact score, coverage, errors, and why.
    pub gate: Gate,
    /// How the weights were combined.
    pub weighting: String,
    /// Counts and call-outs.
    pub summary: RunSummary,
    /// What was read.
    pub inputs: InputSummary,
    /// The suite's own evidence (`suite.yaml`'s `evidence:`), as every judge read it, in
    /// the order written; private `_names` are left out. Absent when the suite has none.
    #[serde(skip_serializing_if = "IndexMap::is_empty")]
    pub suite_evidence: IndexMap<String, Doc>,
    /// The suite's `identity_keys`, for comparisons of this result with another. Absent
    /// when the suite names none (the default fields then apply).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub identity_keys: Option<Vec<String>>,
    /// Wall time of the run in milliseconds.
    pub duration_ms: u64,
    /// The partial results a `caldera merge` joined (empty for a single run, and then not
    /// written).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub shards: Vec<String>,
}

/// Model usage over a run (a provider's usage of one reply is `provider::Usage`).
#[derive(Clone, Debug, Serialize, Default)]
pub struct RunUsage {
    /// Verdicts asked for (model x unit).
    pub calls: usize,
    /// Of those, the ones that ended with a verdict.
    pub verdicts: usize,
    /// Of those, answered from the cache.
    pub cached: usize,
    /// Requests that reached a provider: every attempt, retries and re-asks included.
    pub requests: u64,
    /// Prompt tokens sent, as the providers counted them (cached answers add none).
    pub input_tokens: u64,
    /// Reply tokens received, as the providers counted them (thinking and reasoning
    /// included: they are billed as output).
    pub output_tokens: u64,
    /// Of the reply tokens, those spent reasoning, where the provider itemises them.
    #[serde(skip_serializing_if = "is_zero_tokens")]
    pub reasoning_tokens: u64,
    /// Prompt tokens written to the providers' prompt caches (not in `input_tokens`).
    #[serde(skip_serializing_if = "is_zero_tokens")]
    pub cache_write_tokens: u64,
    /// Prompt tokens read from the providers' prompt caches (not in `input_tokens`).
    #[serde(skip_serializing_if = "is_zero_tokens")]
    pub cache_read_tokens: u64,
    /// Repeats not asked because their unit's first repeats agreed (`--settle`): calls
    /// saved.
    #[serde(skip_serializing_if = "is_zero_tokens")]
    pub settled: u64,
    /// Cost in USD of calls made in this run (cached answers cost nothing); `None`
    /// (null) when a call's cost is unknown (a model without a price, the `claude`
    /// CLI): a partial sum would pass for the whole.
    pub cost_usd: Option<f64>,
    /// Cost per dimension, `None` as above.
    pub cost_by_dimension: indexmap::IndexMap<String, Option<f64>>,
    /// What the adaptive concurrency limit did.
    pub concurrency: Concurrency,
    /// With `--batch`: the batches created, resumed and their requests.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub batch: Option<crate::llm::batch::BatchReport>,
}

/// Requests in flight over a run: `--concurrency` is the ceiling, rate limits (429, 529)
/// halve the limit and successes raise it back.
#[derive(Clone, Debug, Serialize, Deserialize, Default)]
pub struct Concurrency {
    /// `--concurrency`.
    pub ceiling: usize,
    /// The lowest the limit went.
    pub lowest: usize,
    /// The limit when the run ended.
    pub at_end: usize,
    /// Times a rate-limit answer halved it.
    pub cuts: u64,
}

fn is_zero_tokens(n: &u64) -> bool {
    *n == 0
}

/// Sums the calls of every verdict. A cost is known only when every call's is: one
/// call of unknown cost makes its dimension's and the run's unknown, never $0.
pub(crate) fn usage_of(dims: &[Verdict], spent: f64) -> RunUsage {
    let mut u = RunUsage::default();
    for d in dims {
        u.settled += d.repeats.as_ref().map_or(0, |r| u64::from(r.settled));
        let mut dim_cost = Some(0.0);
        for c in &d.llm_calls {
            u.calls += 1;
            u.verdicts += usize::from(c.scored);
            u.requests += u64::from(c.attempts);
            if c.cached {
                u.cached += 1;
            } else {
                dim_cost = dim_cost.zip(c.cost_usd).map(|(sum, cost)| sum + cost);
            }
            u.input_tokens += c.input_tokens;
            u.output_tokens += c.output_tokens;
            u.reasoning_tokens += c.reasoning_tokens;
            u.cache_write_tokens += c.cache_write_tokens;
            u.cache_read_tokens += c.cache_read_tokens;
        }
        u.cost_by_dimension.insert(
            d.name.clone(),
            dim_cost.map(|c| crate::score::round::to(c, 6)),
        );
    }
    let summed: Option<f64> = u.cost_by_dimension.values().copied().sum();
    u.cost_usd =
        summed.map(|summed| crate::score::round::to(if spent > 0.0 { spent } else { summed }, 6));
    u
}

/// Builds the summary from the verdicts.
pub(crate) fn summarize(dims: &[Verdict]) -> RunSummary {
    let mut s = RunSummary {
        judges: dims.len(),
        ..RunSummary::default()
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
                kind: status_kind(d.status),
                message: d.unscored_reason.clone().unwrap_or_default(),
            });
        }
        for r in &d.repos {
            if r.status != Status::Scored {
                s.problems.push(Problem {
                    dimension: Some(d.name.clone()),
                    kind: status_kind(r.status),
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
                kind: ProblemKind::Assertion,
                message,
            });
        }
        if let (Some(before), Some(cap)) = (d.score_before_cap, d.cap_applied) {
            s.problems.push(Problem {
                dimension: Some(d.name.clone()),
                kind: ProblemKind::Cap,
                message: format!("score capped from {before} to {cap}"),
            });
        }
    }
    s
}

fn status_kind(status: Status) -> ProblemKind {
    if status == Status::Error {
        ProblemKind::Error
    } else {
        ProblemKind::Unscored
    }
}

/// Mean confidence over scored judges.
pub(crate) fn average_confidence(dims: &[Verdict]) -> Option<f64> {
    let c: Vec<f64> = dims
        .iter()
        .filter(|d| d.status == Status::Scored)
        .filter_map(|d| d.confidence)
        .collect();
    (!c.is_empty()).then(|| {
        let v = c.iter().sum::<f64>() / c.len() as f64;
        crate::score::round::to(v, 2)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verdict::testutil::{dim, repo, scored};
    use crate::verdict::types::{AssertionFailure, CallInfo};

    #[test]
    fn the_summary_counts_and_calls_out_every_problem() {
        let mut passed = scored("a", 1.0, 4.0);
        passed.passed = Some(true);
        let mut capped = scored("b", 1.0, 2.0);
        capped.passed = Some(false);
        capped.score_before_cap = Some(5);
        capped.cap_applied = Some(2);
        capped.assertion_failures = vec![
            AssertionFailure {
                message: "too few".into(),
                cap: Some(2),
                repo: Some("r1".into()),
                item: None,
                error: None,
            },
            AssertionFailure {
                message: "odd".into(),
                cap: None,
                repo: None,
                item: None,
                error: None,
            },
        ];
        let mut unscored = dim("c", 1.0, Status::Unscored, None);
        unscored.unscored_reason = Some("no metric".into());
        let mut errored = dim("d", 1.0, Status::Error, None);
        errored.unscored_reason = Some("broke".into());
        let mut per_repo = scored("e", 1.0, 3.0);
        per_repo.repos = vec![
            repo("r1", Status::Scored, Some(3)),
            repo("r2", Status::Error, None),
            repo("r3", Status::Unscored, None),
        ];
        let s = summarize(&[passed, capped, unscored, errored, per_repo]);
        assert_eq!(
            (
                s.judges,
                s.scored,
                s.unscored,
                s.errors,
                s.failed_assertions,
                s.passed
            ),
            (5, 3, 1, 1, 2, 1)
        );
        let problems: Vec<(String, ProblemKind, String)> = s
            .problems
            .iter()
            .map(|p| (p.dimension.clone().unwrap(), p.kind, p.message.clone()))
            .collect();
        let want = [
            ("b", ProblemKind::Assertion, "repo r1: too few (cap 2)"),
            ("b", ProblemKind::Assertion, "odd"),
            ("b", ProblemKind::Cap, "score capped from 5 to 2"),
            ("c", ProblemKind::Unscored, "no metric"),
            ("d", ProblemKind::Error, "broke"),
            ("e", ProblemKind::Error, "repo r2: r2 failed"),
            ("e", ProblemKind::Unscored, "repo r3: r3 failed"),
        ];
        let want: Vec<(String, ProblemKind, String)> = want
            .iter()
            .map(|(d, k, m)| ((*d).to_owned(), *k, (*m).to_owned()))
            .collect();
        assert_eq!(problems, want);
    }

    #[test]
    fn average_confidence_is_over_scored_judges() {
        let with = |mut v: Verdict, c: f64| {
            v.confidence = Some(c);
            v
        };
        let dims = [
            with(scored("a", 1.0, 4.0), 0.8),
            with(scored("b", 1.0, 3.0), 0.7),
            with(scored("c", 1.0, 3.0), 0.7),
            with(dim("d", 1.0, Status::Unscored, None), 0.1),
        ];
        // (0.8 + 0.7 + 0.7) / 3 = 0.7333... -> 0.73; d is not scored.
        assert_eq!(average_confidence(&dims), Some(0.73));
        assert_eq!(average_confidence(&dims[3..]), None);
    }

    #[test]
    fn usage_sums_calls_and_costs() {
        let call =
            |cached: bool, attempts: u32, scored: bool, tokens: (u64, u64), cost: Option<f64>| {
                CallInfo {
                    model: "m".into(),
                    input_tokens: tokens.0,
                    output_tokens: tokens.1,
                    reasoning_tokens: 0,
                    cache_write_tokens: 0,
                    cache_read_tokens: 0,
                    cost_usd: cost,
                    cached,
                    attempts,
                    reasked: false,
                    scored,
                    cache_problem: None,
                }
            };
        let mut a = scored("a", 1.0, 4.0);
        a.llm_calls = vec![
            call(false, 2, true, (100, 10), Some(0.5)),
            call(true, 0, true, (7, 3), Some(0.3)),
        ];
        let mut b = scored("b", 1.0, 4.0);
        b.llm_calls = vec![call(false, 1, false, (50, 5), None)];
        let u = usage_of(&[a.clone(), b.clone()], 0.0);
        // 3 calls, 2 verdicts, 1 cached; 2 + 0 + 1 requests; 157 / 18 tokens.
        assert_eq!((u.calls, u.verdicts, u.cached, u.requests), (3, 2, 1, 3));
        assert_eq!((u.input_tokens, u.output_tokens), (157, 18));
        // The cached call costs nothing; b's price is unknown, and so is the run's.
        assert_eq!(u.cost_by_dimension.get("a"), Some(&Some(0.5)));
        assert_eq!(u.cost_by_dimension.get("b"), Some(&None));
        assert_eq!(u.cost_usd, None, "one unknown cost makes the run's unknown");
        assert_eq!(usage_of(&[a.clone(), b], 0.7).cost_usd, None);
        assert_eq!(usage_of(&[a.clone()], 0.0).cost_usd, Some(0.5), "the sum");
        assert_eq!(
            usage_of(&[a], 0.7).cost_usd,
            Some(0.7),
            "the spend given wins"
        );
    }

    #[test]
    fn labels_are_written_as_reports_match_them() {
        let kinds = [
            (ProblemKind::Unscored, "unscored"),
            (ProblemKind::Error, "error"),
            (ProblemKind::Assertion, "assertion"),
            (ProblemKind::Cap, "cap"),
            (ProblemKind::Input, "input"),
            (ProblemKind::Panel, "panel"),
            (ProblemKind::RateLimit, "rate-limit"),
            (ProblemKind::Cache, "cache"),
            (ProblemKind::Divergence, "divergence"),
            (ProblemKind::Unstable, "unstable"),
            (ProblemKind::Agreement, "agreement"),
            (ProblemKind::Model, "model"),
            (ProblemKind::Data, "data"),
        ];
        for (k, word) in kinds {
            assert_eq!(k.as_str(), word);
            assert_eq!(k.to_string(), word);
            assert_eq!(serde_json::to_value(k).unwrap(), word);
            assert!(k == word);
            assert!(k != "other");
        }
        for (d, word) in [
            (Decision::Label("PASS".into()), "PASS"),
            (Decision::Blocked, "FAIL"),
            (Decision::NoScore, "NO_SCORE"),
        ] {
            assert_eq!(d.as_str(), word);
            assert_eq!(d.to_string(), word);
            assert_eq!(serde_json::to_value(&d).unwrap(), word);
            assert!(d == word);
            assert!(d != "other");
        }
    }
}
