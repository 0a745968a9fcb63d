//! The run result: dimension entries, the weighted score, the decision, and a summary of
//! everything that was not a plain score (unscored judges, errors, failed assertions,
//! repos without ground truth), so nothing a run found is silent.

use serde::Serialize;

use crate::score::reaches;
use crate::spec::suite::DecisionRow;
use crate::verdict::panel::RunPanel;
use crate::verdict::types::{Status, Verdict};

/// Something the run summary calls out.
#[derive(Clone, Debug, Serialize, PartialEq)]
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
#[derive(Clone, Copy, Debug, Serialize, PartialEq, Eq)]
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
    /// Files skipped as unreadable (`file:line:column`), each also listed in the problems.
    #[serde(skip_serializing_if = "Vec::is_empty")]
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
    /// Wall time of the run in milliseconds.
    pub duration_ms: u64,
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
    /// Reply tokens received, as the providers counted them.
    pub output_tokens: u64,
    /// Cost in USD of calls made in this run (cached answers cost nothing).
    pub cost_usd: f64,
    /// Cost per dimension.
    pub cost_by_dimension: indexmap::IndexMap<String, f64>,
    /// What the adaptive concurrency limit did.
    pub concurrency: Concurrency,
    /// With `--batch`: the Message Batches created, resumed and their requests.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub batch: Option<crate::llm::batch::BatchReport>,
}

/// Requests in flight over a run: `--concurrency` is the ceiling, rate limits (429, 529)
/// halve the limit and successes raise it back.
#[derive(Clone, Debug, Serialize, Default)]
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

/// Sums the calls of every verdict.
pub fn usage_of(dims: &[Verdict], spent: f64) -> RunUsage {
    let mut u = RunUsage::default();
    for d in dims {
        let mut dim_cost = 0.0;
        for c in &d.llm_calls {
            u.calls += 1;
            u.verdicts += usize::from(c.scored);
            u.requests += u64::from(c.attempts);
            if c.cached {
                u.cached += 1;
            } else {
                dim_cost += c.cost_usd.unwrap_or(0.0);
            }
            u.input_tokens += c.input_tokens;
            u.output_tokens += c.output_tokens;
        }
        u.cost_by_dimension
            .insert(d.name.clone(), crate::score::round::to(dim_cost, 6));
    }
    let summed: f64 = u.cost_by_dimension.values().sum();
    u.cost_usd = crate::score::round::to(if spent > 0.0 { spent } else { summed }, 6);
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
        g.reason = table_reason(&label, score.unwrap_or_default(), units, scored_units);
        label
    };
    (decision, g)
}

/// Why the decision table gave `label`: the score it was read with, and the units
/// counted at the floor.
fn table_reason(label: &Decision, score: f64, units: usize, scored_units: usize) -> String {
    if scored_units < units {
        format!(
            "{label} on {score:.4}, the {} unit(s) without a score counted at {FLOOR}",
            units - scored_units
        )
    } else {
        format!("{label} on the weighted score {score:.4}")
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
