//! `caldera history`: many runs of a suite, read from the folder `caldera run` writes
//! them to, in time order.
//!
//! Per suite (a folder may hold several; each is its own history): every run with its
//! decision, weighted score, and tokens and cost when a model scored it; each
//! dimension's scores over the runs (its trend); what changed between each run and the
//! next, judged by the comparison `caldera diff` makes ([`crate::report::compare`]: the
//! same tolerance, per-repo bootstrap and evidence leaves, not a second implementation);
//! and the judges whose score moved while their evidence did not (unstable judges).
//! Files of the folder that are not results are listed with why, never dropped silently.
//!
//! Reading is [`read`], the analysis [`build`], and each output format one file:
//! `view::history::{table, markdown, html}`, which take their cells from one walk of
//! the history (`view::history::rows`); JSON is the [`History`] serialised.

pub(crate) mod read;

use std::collections::HashMap;
use std::path::Path;

use serde::Serialize;

use crate::diag::Diagnostic;
use crate::report::compare::{self, Change, Comparison, EPSILON, RunRef};
use crate::report::model::{Dimension, Report, Status, UsageView};
pub(crate) use read::Skipped;

/// The history of one results folder.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct History {
    /// The folder, as given.
    pub folder: String,
    /// The drop of a dimension's score that is not yet a regression (as `diff --tolerance`).
    pub tolerance: f64,
    /// One history per suite, by suite name.
    pub suites: Vec<SuiteHistory>,
    /// Files of the folder that are not in any history, and why.
    pub skipped: Vec<Skipped>,
}

/// The runs of one suite.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct SuiteHistory {
    /// The suite's name.
    pub suite: String,
    /// Every run, oldest first.
    pub runs: Vec<RunRow>,
    /// Each dimension's score over the runs, in the newest run's order.
    pub trends: Vec<Trend>,
    /// Each run compared with the one before it (`runs.len() - 1` steps).
    pub steps: Vec<Step>,
    /// Judges whose score moved between two runs while their evidence did not.
    pub unstable: Vec<Unstable>,
    /// Tokens and cost over the runs a model scored, when there are any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usage: Option<UsageTotal>,
}

/// One run of a history.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct RunRow {
    /// Its file in the folder.
    pub file: String,
    /// The run as a comparison names it (id, time, mode, model, decision, weighted
    /// score), written in line with the other keys.
    #[serde(flatten)]
    pub run: RunRef,
    /// The problems the run listed.
    pub problems: usize,
    /// Calls, tokens and cost, for a run a model scored.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usage: Option<RunUsage>,
}

/// What a model run spent, as its result says.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct RunUsage {
    /// Verdicts asked for.
    pub calls: usize,
    /// Of those, answered from the cache.
    pub cached: usize,
    /// Input tokens.
    pub input_tokens: u64,
    /// Output tokens.
    pub output_tokens: u64,
    /// Cost in USD; `None` when unknown (a model without a price).
    pub cost_usd: Option<f64>,
}

impl RunUsage {
    fn of(u: &UsageView) -> RunUsage {
        RunUsage {
            calls: u.calls,
            cached: u.cached,
            input_tokens: u.input_tokens,
            output_tokens: u.output_tokens,
            cost_usd: u.cost_usd,
        }
    }

    /// `$0.0123`, or `cost unknown` (as the run report says it).
    pub(crate) fn cost_text(&self) -> String {
        self.cost_usd
            .map_or_else(|| "cost unknown".to_owned(), |c| format!("${c:.4}"))
    }
}

/// One dimension over the runs.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Trend {
    /// The dimension.
    pub dimension: String,
    /// Its score in each run, oldest first; `None` where it had none (unscored, in
    /// error, or not in that run).
    pub scores: Vec<Option<f64>>,
    /// The score it must reach to pass, as the newest run that says gives it.
    pub pass_threshold: Option<f64>,
    /// Its first score.
    pub first: Option<f64>,
    /// Its last score.
    pub last: Option<f64>,
    /// Its lowest score.
    pub min: Option<f64>,
    /// Its highest score.
    pub max: Option<f64>,
    /// The mean of its scores.
    pub mean: Option<f64>,
    /// Runs in which it has a score.
    pub scored: usize,
}

/// A run compared with the run before it.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Step {
    /// The earlier run's position in `runs` (the later one is the next).
    pub from: usize,
    /// The earlier run's id.
    pub base: String,
    /// The later run's id.
    pub new: String,
    /// Why the two runs could not be compared (different result formats).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub incomparable: Option<String>,
    /// The weighted score's move.
    pub total_delta: Option<f64>,
    /// The decisions, when they differ.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decision: Option<(String, String)>,
    /// Dimensions whose score, status or evidence moved.
    pub changes: Vec<StepChange>,
    /// One line per regression, as `caldera diff` words it.
    pub regressions: Vec<String>,
    /// Problems of the later run that the earlier did not have.
    pub problems_new: Vec<String>,
    /// Problems of the earlier run that the later no longer has.
    pub problems_gone: Vec<String>,
    /// What the reader should know (different modes or models).
    pub notes: Vec<String>,
}

impl Step {
    /// Whether nothing moved between the two runs and there is nothing to say of them.
    pub(crate) fn is_quiet(&self) -> bool {
        self.incomparable.is_none()
            && self.changes.is_empty()
            && self.regressions.is_empty()
            && self.problems_new.is_empty()
            && self.problems_gone.is_empty()
            && self.decision.is_none()
            && self.notes.is_empty()
    }
}

/// One dimension's move between two runs.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct StepChange {
    /// The dimension.
    pub dimension: String,
    /// Its score before.
    pub before: Option<f64>,
    /// Its score after.
    pub after: Option<f64>,
    /// after - before.
    pub delta: Option<f64>,
    /// What the move means (improved, regressed, within noise, ...).
    pub change: Change,
    /// The per-repo bootstrap interval, for `scope: repo` judges.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub interval: Option<String>,
    /// Evidence leaves that changed.
    pub evidence_changed: usize,
    /// The most significant of them (`path: before -> after`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub evidence_first: Option<String>,
}

/// A judge whose score moved while its evidence stayed the same.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Unstable {
    /// The dimension.
    pub dimension: String,
    /// Steps in which both runs scored it, with the same mode and model, and recorded
    /// evidence that could be compared whole.
    pub comparable_steps: usize,
    /// The steps in which its evidence was the same and its score was not.
    pub moves: Vec<UnstableMove>,
}

/// One unexplained move of a judge's score.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct UnstableMove {
    /// The earlier run's id.
    pub base: String,
    /// The later run's id.
    pub new: String,
    /// The score before.
    pub before: f64,
    /// The score after.
    pub after: f64,
}

/// Tokens and cost summed over the runs a model scored.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct UsageTotal {
    /// Runs with usage.
    pub runs: usize,
    /// Input tokens.
    pub input_tokens: u64,
    /// Output tokens.
    pub output_tokens: u64,
    /// The cost of the runs whose cost is known, in USD.
    pub cost_usd: f64,
    /// Runs whose cost is unknown (a model without a price): the sum is a lower bound.
    pub cost_unknown_runs: usize,
}

impl UsageTotal {
    /// `$0.1234`, or `at least $0.1234 (2 runs of unknown cost)`.
    pub(crate) fn cost_text(&self) -> String {
        if self.cost_unknown_runs == 0 {
            format!("${:.4}", self.cost_usd)
        } else {
            format!(
                "at least ${:.4} ({} run(s) of unknown cost)",
                self.cost_usd, self.cost_unknown_runs
            )
        }
    }
}

/// Reads `dir` and builds its history. An error only when the folder cannot be listed.
pub(crate) fn of_folder(dir: &Path, tolerance: f64) -> Result<History, Diagnostic> {
    let folder = read::folder(dir)?;
    Ok(build(
        &crate::diag::display_path(dir),
        folder.runs,
        folder.skipped,
        tolerance,
    ))
}

/// The history of `runs`: grouped by suite, each in time order (ties by run id, then
/// file name), every consecutive pair compared.
pub(crate) fn build(
    folder: &str,
    runs: Vec<read::Run>,
    skipped: Vec<Skipped>,
    tolerance: f64,
) -> History {
    let tolerance = tolerance.max(0.0);
    let mut by_suite: HashMap<String, Vec<read::Run>> = HashMap::new();
    for run in runs {
        by_suite
            .entry(run.report.suite.clone())
            .or_default()
            .push(run);
    }
    let mut suites: Vec<SuiteHistory> = by_suite
        .into_values()
        .map(|mut runs| {
            runs.sort_by(|a, b| {
                (a.time, &a.report.run_id, &a.file).cmp(&(b.time, &b.report.run_id, &b.file))
            });
            suite_history(&runs, tolerance)
        })
        .collect();
    suites.sort_by(|a, b| a.suite.cmp(&b.suite));
    History {
        folder: folder.to_owned(),
        tolerance,
        suites,
        skipped,
    }
}

/// The history of one suite's runs, oldest first.
fn suite_history(runs: &[read::Run], tolerance: f64) -> SuiteHistory {
    let reports: Vec<&Report> = runs.iter().map(|r| &r.report).collect();
    let pairs: Vec<usize> = (1..reports.len()).collect();
    let compared: Vec<Result<Comparison, String>> = crate::par::map(&pairs, |&i| {
        compare::compare(reports[i - 1], reports[i], tolerance).map_err(|e| e.to_string())
    });
    let steps = compared
        .iter()
        .zip(&pairs)
        .map(|(c, &i)| step(i - 1, reports[i - 1], reports[i], c))
        .collect();
    SuiteHistory {
        suite: reports.first().map(|r| r.suite.clone()).unwrap_or_default(),
        runs: runs.iter().map(row).collect(),
        trends: trends(&reports),
        unstable: unstable(&reports, &compared),
        usage: usage(&reports),
        steps,
    }
}

fn row(run: &read::Run) -> RunRow {
    let r = &run.report;
    RunRow {
        file: run.file.clone(),
        run: RunRef::of(r),
        problems: r.summary.problems.len(),
        usage: r.usage.as_ref().map(RunUsage::of),
    }
}

/// The score of a dimension that has one.
fn scored(d: &Dimension) -> Option<f64> {
    d.score.filter(|_| d.status == Status::Scored)
}

/// Each dimension's scores over the runs: the newest run's dimensions in its order,
/// then those only older runs had, newest first.
fn trends(reports: &[&Report]) -> Vec<Trend> {
    let mut names: Vec<&str> = Vec::new();
    let mut seen: std::collections::HashSet<&str> = std::collections::HashSet::new();
    for r in reports.iter().rev() {
        for d in &r.dimensions {
            if seen.insert(d.name.as_str()) {
                names.push(d.name.as_str());
            }
        }
    }
    names
        .into_iter()
        .map(|name| {
            let dims: Vec<Option<&Dimension>> = reports.iter().map(|r| r.dimension(name)).collect();
            let scores: Vec<Option<f64>> = dims.iter().map(|d| d.and_then(scored)).collect();
            let present: Vec<f64> = scores.iter().flatten().copied().collect();
            Trend {
                dimension: name.to_owned(),
                pass_threshold: dims.iter().rev().flatten().find_map(|d| d.pass_threshold),
                first: present.first().copied(),
                last: present.last().copied(),
                min: present.iter().copied().reduce(f64::min),
                max: present.iter().copied().reduce(f64::max),
                mean: (!present.is_empty())
                    .then(|| present.iter().sum::<f64>() / present.len() as f64),
                scored: present.len(),
                scores,
            }
        })
        .collect()
}

/// One step of the history, from the comparison of its two runs.
fn step(from: usize, base: &Report, new: &Report, c: &Result<Comparison, String>) -> Step {
    let mut s = Step {
        from,
        base: base.run_id.clone(),
        new: new.run_id.clone(),
        incomparable: None,
        total_delta: None,
        decision: (base.decision != new.decision)
            .then(|| (base.decision.clone(), new.decision.clone())),
        changes: Vec::new(),
        regressions: Vec::new(),
        problems_new: Vec::new(),
        problems_gone: Vec::new(),
        notes: Vec::new(),
    };
    let c = match c {
        Ok(c) => c,
        Err(e) => {
            s.incomparable = Some(e.clone());
            return s;
        }
    };
    s.total_delta = c.total_delta;
    s.changes = c
        .dimensions
        .iter()
        .filter(|d| {
            !matches!(d.change, Change::Unchanged | Change::StillUnscored) || d.evidence.total > 0
        })
        .map(|d| StepChange {
            dimension: d.name.clone(),
            before: d.before,
            after: d.after,
            delta: d.delta,
            change: d.change,
            interval: d
                .repos
                .as_ref()
                .and_then(|r| r.ci.as_ref())
                .map(|ci| ci.sentence()),
            evidence_changed: d.evidence.total,
            evidence_first: d.evidence.changes.first().map(|l| l.line()),
        })
        .collect();
    s.regressions = c.regressions.clone();
    s.problems_new = c.problems_new.iter().map(|p| p.line()).collect();
    s.problems_gone = c.problems_gone.iter().map(|p| p.line()).collect();
    s.notes = c.notes.clone();
    s
}

/// Judges whose score moved while their evidence did not. A step counts for a judge
/// only when both runs scored it with the same mode and model (a change of scorer
/// explains a move), and when its evidence was recorded and compared whole.
fn unstable(reports: &[&Report], compared: &[Result<Comparison, String>]) -> Vec<Unstable> {
    let mut found: Vec<Unstable> = Vec::new();
    let mut index: HashMap<String, usize> = HashMap::new();
    for (i, c) in compared.iter().enumerate() {
        let (base, new) = (reports[i], reports[i + 1]);
        let Ok(c) = c else { continue };
        if base.mode != new.mode || base.model != new.model {
            continue;
        }
        for d in &c.dimensions {
            let (Some(before), Some(after)) = (d.before, d.after) else {
                continue;
            };
            let recorded = |r: &Report| r.dimension(&d.name).is_some_and(has_evidence);
            if d.evidence.truncated || !(recorded(base) || recorded(new)) {
                continue;
            }
            let at = *index.entry(d.name.clone()).or_insert_with(|| {
                found.push(Unstable {
                    dimension: d.name.clone(),
                    comparable_steps: 0,
                    moves: Vec::new(),
                });
                found.len() - 1
            });
            found[at].comparable_steps += 1;
            if d.evidence.total == 0 && (after - before).abs() > EPSILON {
                found[at].moves.push(UnstableMove {
                    base: base.run_id.clone(),
                    new: new.run_id.clone(),
                    before,
                    after,
                });
            }
        }
    }
    found.retain(|u| !u.moves.is_empty());
    found
}

/// Whether a dimension recorded evidence to compare (its own, or a repo's).
fn has_evidence(d: &Dimension) -> bool {
    !d.evidence.is_null() || d.repos.iter().any(|r| !r.evidence.is_null())
}

/// Tokens and cost over the runs with usage.
fn usage(reports: &[&Report]) -> Option<UsageTotal> {
    let with: Vec<&UsageView> = reports.iter().filter_map(|r| r.usage.as_ref()).collect();
    if with.is_empty() {
        return None;
    }
    Some(UsageTotal {
        runs: with.len(),
        input_tokens: with.iter().map(|u| u.input_tokens).sum(),
        output_tokens: with.iter().map(|u| u.output_tokens).sum(),
        cost_usd: with.iter().filter_map(|u| u.cost_usd).sum(),
        cost_unknown_runs: with.iter().filter(|u| u.cost_usd.is_none()).count(),
    })
}
