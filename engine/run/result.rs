//! The run result: dimension entries, the weighted score, the decision, and a summary of
//! everything that was not a plain score (unscored judges, errors, failed assertions,
//! repos without ground truth), so nothing a run found is silent.

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};

use crate::doc::Doc;

use crate::score::reaches;
use crate::spec::suite::DecisionRow;
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

/// A run's decision: a row of the suite's decision table, or a gate's verdict. Written
/// as the label itself.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    /// The label of the first decision row the score reaches.
    Label(String),
    /// `FAIL` by a gate (errors, coverage), whatever the score.
    Blocked,
    /// `NO_SCORE`: no judge gave a score.
    NoScore,
}

impl Decision {
    /// The label written in the result.
    pub fn as_str(&self) -> &str {
        match self {
            Decision::Label(l) => l,
            Decision::Blocked => FAIL,
            Decision::NoScore => NO_SCORE,
        }
    }
}

impl Serialize for Decision {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl std::fmt::Display for Decision {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl PartialEq<&str> for Decision {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
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
pub fn usage_of(dims: &[Verdict], spent: f64) -> RunUsage {
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

/// Label when no judge produced a score.
pub const NO_SCORE: &str = "NO_SCORE";

/// Weighted score over scored judges, exact (shown rounded, never decided rounded).
pub fn weighted_score(dims: &[Verdict]) -> Option<f64> {
    let scored: Vec<(f64, f64)> = dims
        .iter()
        .filter(|d| d.status == Status::Scored)
        .filter_map(|d| d.score.map(|s| (s.value(), d.weight)))
        .collect();
    let total_w: f64 = scored.iter().map(|(_, w)| w).sum();
    (total_w > 0.0).then(|| scored.iter().map(|(s, w)| s * w).sum::<f64>() / total_w)
}

/// The lowest score a judge can give; what a unit without a score counts as in the score
/// the decision rests on.
pub const FLOOR: f64 = 1.0;

/// A verdict's score with every unit that has none counted at [`FLOOR`]: its own score
/// when every unit scored; for a per-repo judge, the mean over all its repos.
fn floored(d: &Verdict) -> f64 {
    if !d.repos.is_empty() {
        let sum: f64 = d
            .repos
            .iter()
            .map(|r| r.score.map_or(FLOOR, |s| s as f64))
            .sum();
        return sum / d.repos.len() as f64;
    }
    match (d.status, d.score) {
        (Status::Scored, Some(s)) => s.value(),
        _ => FLOOR,
    }
}

/// The score the decision rests on: the weighted mean over every judge, each unit
/// without a score counted at the lowest score. It equals the weighted score when every
/// unit scored, and is never above it, so an errored or unscored judge can only lower a
/// decision. Null when no judge scored.
pub fn decision_score(dims: &[Verdict]) -> Option<f64> {
    if !dims.iter().any(|d| d.status == Status::Scored) {
        return None;
    }
    let total_w: f64 = dims.iter().map(|d| d.weight).sum();
    (total_w > 0.0).then(|| dims.iter().map(|d| floored(d) * d.weight).sum::<f64>() / total_w)
}

/// Units asked for and units scored: a suite-scope judge is one unit, a per-repo judge
/// one per repo; with a panel, one per model and unit.
pub fn coverage(dims: &[Verdict]) -> (usize, usize) {
    dims.iter().fold((0, 0), |(units, scored), d| {
        let (u, s) = verdict_units(d);
        (units + u, scored + s)
    })
}

fn verdict_units(d: &Verdict) -> (usize, usize) {
    // Whether each unit (the judge, or each of its repos) ended with a score.
    let unit_scored: Vec<bool> = if d.repos.is_empty() {
        vec![d.status == Status::Scored]
    } else {
        d.repos.iter().map(|r| r.status == Status::Scored).collect()
    };
    match &d.panel {
        // Each unit was asked of every model: a model that gave no verdict leaves its
        // share of the unit unscored, even when the others' consensus scored it.
        Some(p) if !p.ratings.is_empty() => {
            let asked = p
                .ratings
                .values()
                .map(|r| r.len().max(unit_scored.len()))
                .sum();
            let answered = p
                .ratings
                .values()
                .flat_map(|r| r.iter().enumerate())
                .filter(|(i, r)| r.is_some() && unit_scored.get(*i).copied().unwrap_or(false))
                .count();
            (asked, answered)
        }
        _ => (
            unit_scored.len(),
            unit_scored.iter().filter(|s| **s).count(),
        ),
    }
}

/// What the decision rests on, and why it is what it is.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Gate {
    /// The exact score the decision table was read with (see [`decision_score`]).
    pub decision_score: Option<f64>,
    /// Units asked for.
    pub units: usize,
    /// Units with a score.
    pub scored_units: usize,
    /// scored_units / units.
    pub coverage: f64,
    /// The suite's `min_coverage`.
    pub min_coverage: f64,
    /// Judges in `error`.
    pub errors: Vec<String>,
    /// Whether errored judges may leave the run passing.
    pub errors_allowed: bool,
    /// True when a gate (errors, coverage) failed the run whatever its score.
    pub blocked: bool,
    /// One line: why the decision is what it is.
    pub reason: String,
    /// The decision table's bars (each row's `min`, in table order): reports show a score
    /// with the digits that put it on the same side of each as the exact score
    /// ([`crate::score::round::decisive`]), so 2.996 is never shown as 3.00 beside a FAIL.
    pub bars: Vec<f64>,
}

/// The decision and its gate. Rules, in order: no scored judge gives `NO_SCORE`; a judge
/// in `error` fails the run unless errors are allowed; coverage below `min_coverage`
/// fails it; otherwise the decision table is read with [`decision_score`], exactly.
pub fn gate(
    dims: &[Verdict],
    table: &[DecisionRow],
    min_coverage: f64,
    errors_allowed: bool,
) -> (Decision, Gate) {
    let (units, scored_units) = coverage(dims);
    let share = if units == 0 {
        0.0
    } else {
        scored_units as f64 / units as f64
    };
    let errors: Vec<String> = dims
        .iter()
        .filter(|d| d.status == Status::Error)
        .map(|d| d.name.clone())
        .collect();
    let score = decision_score(dims);
    let mut g = Gate {
        decision_score: score,
        units,
        scored_units,
        coverage: share,
        min_coverage,
        errors: errors.clone(),
        errors_allowed,
        blocked: false,
        reason: String::new(),
        bars: table.iter().filter_map(|row| row.min).collect(),
    };
    let decision = if score.is_none() {
        g.reason = "no judge gave a score".into();
        Decision::NoScore
    } else if !errors.is_empty() && !errors_allowed {
        g.reason = format!(
            "{} judge(s) ended in error ({}); a run with errors fails unless errors are allowed",
            errors.len(),
            errors.join(", ")
        );
        g.blocked = true;
        Decision::Blocked
    } else if share < min_coverage {
        g.reason = format!(
            "{scored_units} of {units} units scored ({:.1}%), below the suite's minimum coverage of {:.1}%",
            share * 100.0,
            min_coverage * 100.0
        );
        g.blocked = true;
        Decision::Blocked
    } else {
        let label = decide(score, table);
        g.reason = table_reason(
            &label,
            score.unwrap_or_default(),
            &g.bars,
            (units, scored_units),
        );
        label
    };
    (decision, g)
}

/// Why the decision table gave `label`: the score it was read with (four decimals, or
/// the more it takes to stand beside `bars` as the exact score does), and the units
/// counted at the floor.
fn table_reason(
    label: &Decision,
    score: f64,
    bars: &[f64],
    (units, scored_units): (usize, usize),
) -> String {
    let shown = crate::score::round::decisive(score, bars, 4);
    if scored_units < units {
        format!(
            "{label} on {shown}, the {} unit(s) without a score counted at {FLOOR}",
            units - scored_units
        )
    } else {
        format!("{label} on the weighted score {shown}")
    }
}

/// The failing label the gates give.
pub const FAIL: &str = "FAIL";

/// The first decision row whose `min` the score reaches.
pub fn decide(score: Option<f64>, table: &[DecisionRow]) -> Decision {
    let Some(s) = score else {
        return Decision::NoScore;
    };
    table
        .iter()
        .find(|r| r.min.is_none_or(|m| reaches(s, m)))
        .map_or(Decision::NoScore, |r| Decision::Label(r.label.clone()))
}

/// Builds the summary from the verdicts.
pub fn summarize(dims: &[Verdict]) -> RunSummary {
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
pub fn average_confidence(dims: &[Verdict]) -> Option<f64> {
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
    use crate::load::suite::default_decision;
    use crate::spec::judge::JudgeSpec;
    use crate::verdict::combine::{JudgeRef, SuiteWeights, heuristic_verdict};
    use crate::verdict::panel::DimensionPanel;
    use crate::verdict::types::{AssertionFailure, CallInfo, RepoVerdict, Score};

    /// A verdict named `name` of weight `weight`, with the given status and score.
    fn dim(name: &str, weight: f64, status: Status, score: Option<Score>) -> Verdict {
        let spec: JudgeSpec =
            serde_saphyr::from_str(&format!("dimension: {name}\nweight: {weight}\n")).unwrap();
        let judge = JudgeRef {
            spec: &spec,
            pass_threshold: 3.0,
            cap_note: Default::default(),
        };
        let mut v = heuristic_verdict(judge, &[], SuiteWeights { total: 1.0 });
        v.status = status;
        v.score = score;
        v.unscored_reason = None;
        v
    }

    fn scored(name: &str, weight: f64, score: f64) -> Verdict {
        let s = if score.fract() == 0.0 {
            Score::Single(score as i64)
        } else {
            Score::Mean(score)
        };
        dim(name, weight, Status::Scored, Some(s))
    }

    fn repo(name: &str, status: Status, score: Option<i64>) -> RepoVerdict {
        RepoVerdict {
            repo: name.into(),
            status,
            score,
            confidence: None,
            reasoning: String::new(),
            unscored_reason: (status != Status::Scored).then(|| format!("{name} failed")),
            evidence: crate::doc::Doc::Null,
        }
    }

    #[test]
    fn the_weighted_score_is_over_scored_judges_only() {
        let mut unscored_with_score = dim("d", 3.0, Status::Unscored, Some(Score::Single(1)));
        unscored_with_score.unscored_reason = Some("x".into());
        let dims = [
            scored("a", 2.0, 4.0),
            scored("b", 1.0, 2.5),
            dim("c", 5.0, Status::Unscored, None),
            unscored_with_score,
        ];
        // (4 x 2 + 2.5 x 1) / (2 + 1) = 10.5 / 3 = 3.5.
        assert_eq!(weighted_score(&dims), Some(3.5));
        assert_eq!(weighted_score(&dims[2..3]), None);
        assert_eq!(weighted_score(&[]), None);
        // Weights of zero: nothing to divide by.
        assert_eq!(weighted_score(&[scored("z", 0.0, 4.0)]), None);
    }

    #[test]
    fn the_decision_score_counts_units_without_a_score_at_the_floor() {
        let mut per_repo = scored("c", 1.0, 3.0);
        per_repo.repos = vec![
            repo("r1", Status::Scored, Some(3)),
            repo("r2", Status::Unscored, None),
        ];
        let dims = [
            scored("a", 2.0, 4.0),
            dim("b", 1.0, Status::Unscored, None),
            per_repo,
        ];
        // a: 4; b: floor 1; c: (3 + 1) / 2 = 2. (4 x 2 + 1 x 1 + 2 x 1) / 4 = 11 / 4.
        assert_eq!(decision_score(&dims), Some(2.75));
        // Every unit scored: the weighted score itself.
        assert_eq!(decision_score(&dims[..1]), Some(4.0));
        assert_eq!(decision_score(&dims[1..2]), None, "no judge scored");
        assert_eq!(decision_score(&[scored("z", 0.0, 4.0)]), None, "no weight");
        // An errored judge with a stray score still counts at the floor: (5 + 1) / 2 = 3.
        let errored = dim("e", 1.0, Status::Error, Some(Score::Single(5)));
        assert_eq!(decision_score(&[scored("a", 1.0, 5.0), errored]), Some(3.0));
    }

    #[test]
    fn coverage_counts_judges_and_repos() {
        let mut per_repo = scored("c", 1.0, 3.0);
        per_repo.repos = vec![
            repo("r1", Status::Scored, Some(3)),
            repo("r2", Status::Error, None),
            repo("r3", Status::Scored, Some(3)),
        ];
        let dims = [
            scored("a", 1.0, 4.0),
            dim("b", 1.0, Status::Unscored, None),
            per_repo,
        ];
        // 1 + 1 + 3 units; 1 + 0 + 2 scored.
        assert_eq!(coverage(&dims), (5, 3));
        assert_eq!(coverage(&dims[1..2]), (1, 0));
        assert_eq!(coverage(&[]), (0, 0));
    }

    fn panel(ratings: &[(&str, &[Option<i64>])]) -> DimensionPanel {
        DimensionPanel {
            dimension: "p".into(),
            ratings: ratings
                .iter()
                .map(|(m, r)| ((*m).to_owned(), r.to_vec()))
                .collect(),
            agreement: None,
            note: None,
        }
    }

    #[test]
    fn a_panel_counts_one_unit_per_model() {
        let mut v = scored("p", 1.0, 3.0);
        v.repos = vec![
            repo("r1", Status::Scored, Some(3)),
            repo("r2", Status::Unscored, None),
        ];
        v.panel = Some(panel(&[
            ("m1", &[Some(4), None]),
            ("m2", &[Some(3), Some(2)]),
        ]));
        // Asked: 2 models x 2 repos. Answered, of scored units: m1 r1, m2 r1 (r2 is not
        // scored, whatever m2 said).
        assert_eq!(coverage(std::slice::from_ref(&v)), (4, 2));
        v.repos[1] = repo("r2", Status::Scored, Some(2));
        // Now m2 r2 counts too; m1 gave nothing for r2.
        assert_eq!(coverage(std::slice::from_ref(&v)), (4, 3));
        // A panel without ratings counts as the units themselves.
        v.panel = Some(panel(&[]));
        assert_eq!(coverage(std::slice::from_ref(&v)), (2, 2));
    }

    #[test]
    fn no_scored_judge_gives_no_score() {
        let dims = [dim("a", 1.0, Status::Unscored, None)];
        let (d, g) = gate(&dims, &default_decision(), 0.0, false);
        assert_eq!(d, Decision::NoScore);
        assert_eq!(g.reason, "no judge gave a score");
        assert!(!g.blocked);
        assert_eq!(g.decision_score, None);
    }

    #[test]
    fn an_errored_judge_fails_the_run_unless_errors_are_allowed() {
        let dims = [
            scored("a", 1.0, 4.0),
            dim("b", 1.0, Status::Error, None),
            dim("c", 1.0, Status::Unscored, None),
        ];
        let (d, g) = gate(&dims, &default_decision(), 0.0, false);
        assert_eq!(d, Decision::Blocked);
        assert!(g.blocked);
        assert_eq!(g.errors, vec!["b"]);
        assert_eq!(
            g.reason,
            "1 judge(s) ended in error (b); a run with errors fails unless errors are allowed"
        );
        // Allowed: the table decides on (4 + 1 + 1) / 3 = 2, below 3.
        let (d, g) = gate(&dims, &default_decision(), 0.0, true);
        assert_eq!(d, "FAIL");
        assert!(!g.blocked);
        assert_eq!(g.decision_score, Some(2.0));
        assert_eq!(
            g.reason,
            "FAIL on 2.0000, the 2 unit(s) without a score counted at 1"
        );
        // No error: errors not being allowed changes nothing.
        let (d, g) = gate(&dims[..1], &default_decision(), 0.0, false);
        assert_eq!(d, "STRONG_PASS");
        assert!(g.errors.is_empty() && !g.blocked);
        assert_eq!(g.reason, "STRONG_PASS on the weighted score 4.0000");
    }

    #[test]
    fn coverage_below_the_minimum_fails_the_run() {
        let dims = [scored("a", 1.0, 4.0), dim("b", 1.0, Status::Unscored, None)];
        // 1 of 2 units: 0.5, exactly the minimum, passes to the table: (4 + 1) / 2 = 2.5.
        let (d, g) = gate(&dims, &default_decision(), 0.5, false);
        assert_eq!((g.units, g.scored_units, g.coverage), (2, 1, 0.5));
        assert_eq!(d, "FAIL");
        assert!(!g.blocked);
        let (d, g) = gate(&dims, &default_decision(), 0.51, false);
        assert_eq!(d, Decision::Blocked);
        assert!(g.blocked);
        assert_eq!(
            g.reason,
            "1 of 2 units scored (50.0%), below the suite's minimum coverage of 51.0%"
        );
        assert_eq!(g.min_coverage, 0.51);
        // Full coverage passes any minimum.
        let (d, _) = gate(&dims[..1], &default_decision(), 1.0, false);
        assert_eq!(d, "STRONG_PASS");
    }

    #[test]
    fn decision_rows_are_reached_within_the_float_tolerance() {
        let t = default_decision();
        // A bar is reached when score >= bar - 1e-9.
        assert_eq!(decide(Some(4.0 - 1e-10), &t), "STRONG_PASS");
        assert_eq!(decide(Some(4.0 - 1e-8), &t), "PASS");
        assert_eq!(decide(Some(3.0 - 1e-10), &t), "WEAK_PASS");
        assert_eq!(decide(Some(3.0 - 1e-8), &t), "FAIL");
        // 4.95 / 1.5 is 3.2999999999999994 in floating point: it reaches a bar of 3.3.
        let bar = vec![
            DecisionRow {
                min: Some(3.3),
                label: "OK".into(),
            },
            DecisionRow {
                min: None,
                label: "LOW".into(),
            },
        ];
        assert_eq!(decide(Some(4.95 / 1.5), &bar), "OK");
        // A table without a catch-all row gives no label below its last bar.
        assert_eq!(decide(Some(1.0), &bar[..1]), Decision::NoScore);
    }

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
            },
            AssertionFailure {
                message: "odd".into(),
                cap: None,
                repo: None,
                item: None,
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
