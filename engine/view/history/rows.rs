//! What the history's renderers show, as plain text: the walk over a suite's runs,
//! trends, steps and unstable judges, done once. `table`, `markdown` and `html` take
//! these cells and only escape and lay them out, so the three formats cannot drift
//! apart in what they say (a delta left out, a move counted twice).
//!
//! Every text here is unescaped: a renderer escapes each cell for its medium.

use super::{SPARK_RUNS, spark_window};
use crate::history::{History, Step, SuiteHistory, Trend, Unstable};
use crate::present::number::{fmt_delta, fmt_score};
use crate::report::compare::RunRef;

/// Runs of every suite of the history.
pub(super) fn run_count(h: &History) -> usize {
    h.suites.iter().map(|s| s.runs.len()).sum()
}

/// The first and the last run's time, when the suite has runs.
pub(super) fn span(s: &SuiteHistory) -> Option<(&str, &str)> {
    let (first, last) = (s.runs.first()?, s.runs.last()?);
    Some((&first.run.timestamp, &last.run.timestamp))
}

/// One run as a row of the runs table.
pub(super) struct RunCells<'a> {
    /// Its place in the suite's history, from 1.
    pub number: usize,
    /// The run.
    pub run: &'a RunRef,
    /// Its weighted score to two decimals, `-` without one.
    pub score: String,
    /// The move of the weighted score from the run before; empty for the first run.
    pub delta: String,
    /// Its tokens (`in + out`) and cost, when a model scored it.
    pub spent: Option<(String, String)>,
}

/// The rows of the runs table, oldest first.
pub(super) fn runs(s: &SuiteHistory) -> Vec<RunCells<'_>> {
    let mut previous: Option<f64> = None;
    s.runs
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let total = r.run.total_score;
            let delta = previous.zip(total).map(|(a, b)| b - a);
            previous = total;
            RunCells {
                number: i + 1,
                run: &r.run,
                score: total.map_or("-".into(), |t| format!("{t:.2}")),
                delta: if i == 0 {
                    String::new()
                } else {
                    fmt_delta(delta)
                },
                spent: r.usage.as_ref().map(|u| {
                    (
                        format!("{} + {}", u.input_tokens, u.output_tokens),
                        u.cost_text(),
                    )
                }),
            }
        })
        .collect()
}

/// `; the last K of N runs drawn` when the sparklines leave older runs out, else empty.
pub(super) fn drawn_note(s: &SuiteHistory) -> String {
    let n = s.runs.len();
    let cut = n.saturating_sub(SPARK_RUNS);
    if cut > 0 {
        format!("; the last {} of {n} runs drawn", n - cut)
    } else {
        String::new()
    }
}

/// The figures beside a dimension's trend.
pub(super) struct TrendFigures {
    /// The sparkline of its last [`SPARK_RUNS`] scores.
    pub spark: String,
    /// Its first, last, lowest, highest and mean score (`-` for none).
    pub first: String,
    /// See `first`.
    pub last: String,
    /// See `first`.
    pub min: String,
    /// See `first`.
    pub max: String,
    /// See `first`.
    pub mean: String,
}

/// A dimension's trend as text.
pub(super) fn trend(t: &Trend) -> TrendFigures {
    let (window, _) = spark_window(&t.scores);
    TrendFigures {
        spark: super::sparkline(window),
        first: fmt_score(t.first),
        last: fmt_score(t.last),
        min: fmt_score(t.min),
        max: fmt_score(t.max),
        mean: fmt_score(t.mean),
    }
}

/// The steps that changed something, and how many changed nothing.
pub(super) fn loud_steps(s: &SuiteHistory) -> (Vec<&Step>, usize) {
    let loud: Vec<&Step> = s.steps.iter().filter(|st| !st.is_quiet()).collect();
    let quiet = s.steps.len() - loud.len();
    (loud, quiet)
}

/// The line that heads a step.
pub(super) struct StepHeading<'a> {
    /// The earlier run's place, from 1 (the later one is the next).
    pub from: usize,
    /// The later run's place.
    pub to: usize,
    /// The earlier run's id.
    pub base: &'a str,
    /// The later run's id.
    pub new: &'a str,
    /// The weighted score's move.
    pub weighted: String,
    /// The decisions before and after, when they differ.
    pub decision: Option<(&'a str, &'a str)>,
}

/// The heading of a step.
pub(super) fn heading(st: &Step) -> StepHeading<'_> {
    StepHeading {
        from: st.from + 1,
        to: st.from + 2,
        base: &st.base,
        new: &st.new,
        weighted: fmt_delta(st.total_delta),
        decision: st.decision.as_ref().map(|(a, b)| (a.as_str(), b.as_str())),
    }
}

/// One dimension's move in a step.
pub(super) struct ChangeCells<'a> {
    /// The dimension.
    pub dimension: &'a str,
    /// Its score before (`-` for none).
    pub before: String,
    /// Its score after.
    pub after: String,
    /// The move.
    pub delta: String,
    /// What the move means (`improved`, `regressed`, ...).
    pub change: &'static str,
    /// Whether that is a regression (renderers mark it).
    pub regression: bool,
    /// Evidence leaves that changed and the first of them, when any did.
    pub evidence: Option<(usize, &'a str)>,
    /// The per-repo bootstrap interval, for `scope: repo` judges.
    pub interval: Option<&'a str>,
}

/// The dimensions that moved in a step, in the comparison's order.
pub(super) fn changes(st: &Step) -> impl Iterator<Item = ChangeCells<'_>> {
    st.changes.iter().map(|c| ChangeCells {
        dimension: &c.dimension,
        before: fmt_score(c.before),
        after: fmt_score(c.after),
        delta: fmt_delta(c.delta),
        change: c.change.as_str(),
        regression: c.change.is_regression(),
        evidence: c
            .evidence_first
            .as_deref()
            .map(|first| (c.evidence_changed, first)),
        interval: c.interval.as_deref(),
    })
}

/// What a line under a step's changes is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Aside {
    /// A regression, as `caldera diff` words it.
    Regression,
    /// A problem of the later run the earlier did not have.
    NewProblem,
    /// A problem of the earlier run the later no longer has.
    ProblemGone,
    /// What the reader should know.
    Note,
}

/// The lines under a step's changes: regressions, new problems, problems gone, notes.
pub(super) fn asides(st: &Step) -> impl Iterator<Item = (Aside, &str)> {
    tagged(Aside::Regression, &st.regressions)
        .chain(tagged(Aside::NewProblem, &st.problems_new))
        .chain(tagged(Aside::ProblemGone, &st.problems_gone))
        .chain(tagged(Aside::Note, &st.notes))
}

fn tagged(kind: Aside, lines: &[String]) -> impl Iterator<Item = (Aside, &str)> {
    lines.iter().map(move |l| (kind, l.as_str()))
}

/// One unexplained move of an unstable judge.
pub(super) struct MoveCells<'a> {
    /// The score before.
    pub before: String,
    /// The score after.
    pub after: String,
    /// The earlier run's id.
    pub base: &'a str,
    /// The later run's id.
    pub new: &'a str,
}

/// The first `most` moves of an unstable judge, and how many more there are.
pub(super) fn moves(u: &Unstable, most: usize) -> (Vec<MoveCells<'_>>, usize) {
    let shown = u
        .moves
        .iter()
        .take(most)
        .map(|m| MoveCells {
            before: fmt_score(Some(m.before)),
            after: fmt_score(Some(m.after)),
            base: &m.base,
            new: &m.new,
        })
        .collect();
    (shown, u.moves.len().saturating_sub(most))
}

/// `; and K more` when moves were left out, else empty.
pub(super) fn and_more(more: usize) -> String {
    if more > 0 {
        format!("; and {more} more")
    } else {
        String::new()
    }
}
