//! Two runs of one suite compared: per dimension the score before and after, the delta
//! and what it means (improved, regressed, within noise, lost its score); the evidence
//! leaves that changed; problems new and gone; and for `scope: repo` judges the paired
//! per-repo deltas with a seeded bootstrap interval, so a change within noise is not
//! called a regression.

pub(crate) mod leaves;

use std::collections::{HashMap, HashSet};

use serde::Serialize;

use crate::report::model::{AssertionView, Dimension, ProblemView, Report, Status};
use crate::score::bootstrap::{
    BootstrapCi, DEFAULT_LEVEL, DEFAULT_RESAMPLES, DEFAULT_SEED, paired_mean_ci,
};
pub(crate) use leaves::EvidenceDelta;

/// Scores that differ by less than this are equal (they are printed to two decimals).
pub(crate) const EPSILON: f64 = 1e-9;

/// One run, as a comparison names it.
#[derive(Debug, Clone, Serialize)]
pub struct RunRef {
    /// Its run id.
    pub run_id: String,
    /// When it ran.
    pub timestamp: String,
    /// `heuristic` or `llm`.
    pub mode: String,
    /// Its model or panel.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Its decision.
    pub decision: String,
    /// Its weighted score.
    pub total_score: Option<f64>,
}

impl RunRef {
    /// The run `r` is (a comparison's side, a history's row).
    pub fn of(r: &Report) -> RunRef {
        RunRef {
            run_id: r.run_id.clone(),
            timestamp: r.timestamp.clone(),
            mode: r.mode.clone(),
            model: r.model.clone(),
            decision: r.decision.clone(),
            total_score: r.total_score,
        }
    }
}

/// What a dimension's move means.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Change {
    /// Up by more than the tolerance.
    Improved,
    /// Down by more than the tolerance (a regression).
    Regressed,
    /// Within the tolerance.
    Unchanged,
    /// Down, but the per-repo bootstrap interval contains zero: not a regression.
    WithinNoise,
    /// Scored before, not now (a regression).
    LostScore,
    /// Not scored before, scored now.
    GainedScore,
    /// Without a score on both sides.
    StillUnscored,
    /// Only in the new run.
    Added,
    /// Only in the base run.
    Removed,
}

impl Change {
    /// The word reports print.
    pub fn as_str(self) -> &'static str {
        match self {
            Change::Improved => "improved",
            Change::Regressed => "regressed",
            Change::Unchanged => "unchanged",
            Change::WithinNoise => "within noise",
            Change::LostScore => "lost its score",
            Change::GainedScore => "gained a score",
            Change::StillUnscored => "unscored in both",
            Change::Added => "added",
            Change::Removed => "removed",
        }
    }

    /// Whether `--fail-on regression` fails on it.
    pub fn is_regression(self) -> bool {
        matches!(self, Change::Regressed | Change::LostScore)
    }
}

/// One repo's scores in both runs.
#[derive(Debug, Clone, Serialize)]
pub struct RepoPair {
    /// The repo id.
    pub repo: String,
    /// Its base score.
    pub before: f64,
    /// Its new score.
    pub after: f64,
    /// after - before.
    pub delta: f64,
}

/// Paired per-repo deltas of a `scope: repo` judge.
#[derive(Debug, Clone, Serialize)]
pub struct RepoDeltas {
    /// Repos scored in both runs, in the new run's order.
    pub pairs: Vec<RepoPair>,
    /// Repos scored in only one run (left out of the pairs).
    pub unpaired: Vec<String>,
    /// The bootstrap interval of the mean delta (two pairs or more).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ci: Option<BootstrapCi>,
}

/// One dimension compared.
#[derive(Debug, Clone, Serialize)]
pub struct DimensionDelta {
    /// The dimension.
    pub name: String,
    /// Its base score.
    pub before: Option<f64>,
    /// Its new score.
    pub after: Option<f64>,
    /// after - before, when both scored.
    pub delta: Option<f64>,
    /// Base status.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status_before: Option<&'static str>,
    /// New status.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status_after: Option<&'static str>,
    /// Whether it passed its threshold before.
    pub passed_before: Option<bool>,
    /// Whether it passes now.
    pub passed_after: Option<bool>,
    /// What the move means.
    pub change: Change,
    /// Paired per-repo deltas (`scope: repo` judges).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub repos: Option<RepoDeltas>,
    /// Evidence leaves that changed.
    pub evidence: EvidenceDelta,
}

/// Two runs compared.
#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    /// The suite.
    pub suite: String,
    /// The base run.
    pub base: RunRef,
    /// The new run.
    pub new: RunRef,
    /// new - base weighted score.
    pub total_delta: Option<f64>,
    /// Whether the decision changed.
    pub decision_changed: bool,
    /// A drop up to this much is not a regression.
    pub tolerance: f64,
    /// Every dimension of either run, new run's order first.
    pub dimensions: Vec<DimensionDelta>,
    /// Problems of the new run the base did not have.
    pub problems_new: Vec<ProblemView>,
    /// Problems of the base run the new one no longer has.
    pub problems_gone: Vec<ProblemView>,
    /// One line per regression (empty: none): a dimension that regressed or lost its
    /// score, and an assertion that fails now and did not in the base run.
    pub regressions: Vec<String>,
    /// What the reader should know (different modes or models).
    pub notes: Vec<String>,
    /// Position in `dimensions` of the first delta of each name: reporters look every
    /// dimension up, and a result may have thousands.
    #[serde(skip)]
    index: HashMap<String, usize>,
}

impl Comparison {
    /// The delta of dimension `name`.
    pub fn dimension(&self, name: &str) -> Option<&DimensionDelta> {
        self.index.get(name).map(|&i| &self.dimensions[i])
    }
}

/// Why two results cannot be compared.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Incompatible {
    /// Different suites.
    #[error("the results are of different suites: `{base}` (base) and `{new}` (new)")]
    Suite {
        /// Base suite.
        base: String,
        /// New suite.
        new: String,
    },
    /// Different result formats.
    #[error(
        "the results are of different result formats: {base} (base) and {new} (new); \
         render each with `caldera report` instead"
    )]
    Format {
        /// Base format.
        base: u32,
        /// New format.
        new: u32,
    },
}

/// Compares `base` with `new`. A drop of up to `tolerance` is not a regression.
pub fn compare(base: &Report, new: &Report, tolerance: f64) -> Result<Comparison, Incompatible> {
    if base.suite != new.suite {
        return Err(Incompatible::Suite {
            base: base.suite.clone(),
            new: new.suite.clone(),
        });
    }
    if base.format() != new.format() {
        return Err(Incompatible::Format {
            base: base.format(),
            new: new.format(),
        });
    }
    let tolerance = tolerance.max(0.0);
    let keys = identity_keys(base, new);
    let keys = keys.as_slice();
    let base_dims = by_name(&base.dimensions);
    let new_dims = by_name(&new.dimensions);
    let mut dimensions: Vec<DimensionDelta> = new
        .dimensions
        .iter()
        .map(|d| {
            let base = base_dims.get(d.name.as_str()).copied();
            dimension_delta((base, Some(d)), tolerance, keys)
        })
        .collect();
    dimensions.extend(
        base.dimensions
            .iter()
            .filter(|d| !new_dims.contains_key(d.name.as_str()))
            .map(|d| dimension_delta((Some(d), None), tolerance, keys)),
    );
    let mut regressions: Vec<String> = dimensions
        .iter()
        .filter(|d| d.change.is_regression())
        .map(regression_line)
        .collect();
    regressions.extend(newly_failed(&base_dims, new));
    let mut index = HashMap::with_capacity(dimensions.len());
    for (i, d) in dimensions.iter().enumerate() {
        index.entry(d.name.clone()).or_insert(i);
    }
    Ok(Comparison {
        index,
        suite: new.suite.clone(),
        base: RunRef::of(base),
        new: RunRef::of(new),
        total_delta: base
            .total_score
            .zip(new.total_score)
            .map(|(a, b)| round(b - a)),
        decision_changed: base.decision != new.decision,
        tolerance,
        dimensions,
        problems_new: only_in(&new.summary.problems, &base.summary.problems),
        problems_gone: only_in(&base.summary.problems, &new.summary.problems),
        regressions,
        notes: notes(base, new),
    })
}

/// Assertions that fail in `new` and did not in `base`, one line each. They are
/// regressions whatever the score did: a failed assertion whose cap does not lower the
/// score (a HIGH finding newly missed by a judge already below its cap) would otherwise
/// pass the gate unseen. An assertion failing on both sides is not new, even when the
/// numbers in its message moved (`rate 9.0% is above 5%` then `10.2%`): failures are
/// matched by dimension, repo, cap and message with its numbers set aside, as a multiset
/// (a per-item assertion failing on one more item has one new failure).
fn newly_failed(base: &HashMap<&str, &Dimension>, new: &Report) -> Vec<String> {
    let mut lines = Vec::new();
    for d in &new.dimensions {
        let mut before: Vec<AssertionKey> = base
            .get(d.name.as_str())
            .map(|b| b.assertion_failures.iter().map(assertion_key).collect())
            .unwrap_or_default();
        for f in &d.assertion_failures {
            let key = assertion_key(f);
            if let Some(at) = before.iter().position(|k| *k == key) {
                before.swap_remove(at);
                continue;
            }
            let repo = f
                .repo
                .as_deref()
                .map_or(String::new(), |r| format!(" (repo {r})"));
            lines.push(format!(
                "{} newly failed an assertion: {}{repo}",
                d.name, f.message
            ));
        }
    }
    lines
}

/// What identifies a failed assertion across two runs: its repo, its cap and its message
/// with every run of digits (and the decimal point inside one) replaced by `#`.
type AssertionKey = (Option<String>, Option<u64>, String);

fn assertion_key(f: &AssertionView) -> AssertionKey {
    let mut shape = String::with_capacity(f.message.len());
    let mut in_number = false;
    for c in f.message.chars() {
        let digit = c.is_ascii_digit() || (in_number && c == '.');
        if digit && !in_number {
            shape.push('#');
        } else if !digit {
            shape.push(c);
        }
        in_number = digit;
    }
    (f.repo.clone(), f.cap.map(f64::to_bits), shape)
}

/// Dimensions by name, the first of each name (as a linear search finds it). A result
/// may hold thousands of dimensions: every lookup is then one hash probe, not a scan.
fn by_name(dims: &[Dimension]) -> HashMap<&str, &Dimension> {
    let mut map = HashMap::with_capacity(dims.len());
    for d in dims {
        map.entry(d.name.as_str()).or_insert(d);
    }
    map
}

/// `name: 4 -> 3 (-1)` and why it counts.
fn regression_line(d: &DimensionDelta) -> String {
    match d.change {
        Change::LostScore => format!(
            "{} lost its score ({} -> {})",
            d.name,
            d.status_before.unwrap_or("-"),
            d.status_after.unwrap_or("-")
        ),
        _ => format!(
            "{} {} -> {} ({})",
            d.name,
            crate::present::number::fmt_score(d.before),
            crate::present::number::fmt_score(d.after),
            crate::present::number::fmt_delta(d.delta)
        ),
    }
}

/// The fields that identify a record in evidence lists: the new result's suite's, else
/// the base's, else [`leaves::DEFAULT_IDENTITY_KEYS`].
fn identity_keys(base: &Report, new: &Report) -> Vec<String> {
    new.identity_keys
        .clone()
        .or_else(|| base.identity_keys.clone())
        .unwrap_or_else(|| {
            leaves::DEFAULT_IDENTITY_KEYS
                .iter()
                .map(|k| (*k).to_owned())
                .collect()
        })
}

fn dimension_delta(
    (base, new): (Option<&Dimension>, Option<&Dimension>),
    tolerance: f64,
    keys: &[String],
) -> DimensionDelta {
    let name = new.or(base).map(|d| d.name.clone()).unwrap_or_default();
    let scored = |d: Option<&Dimension>| {
        d.filter(|d| d.status == Status::Scored)
            .and_then(|d| d.score)
    };
    let (before, after) = (scored(base), scored(new));
    let delta = before.zip(after).map(|(a, b)| round(b - a));
    let repos = match (base, new) {
        (Some(a), Some(b)) if !a.repos.is_empty() || !b.repos.is_empty() => Some(repo_deltas(a, b)),
        _ => None,
    };
    let change = classify(base, new, delta, repos.as_ref(), tolerance);
    let null = serde_json::Value::Null;
    let evidence = match (base, new) {
        (Some(a), Some(b)) => {
            let mut e = leaves::diff("$.evidence", &a.evidence, &b.evidence, keys);
            if !a.repos.is_empty() || !b.repos.is_empty() {
                merge(&mut e, repo_evidence(a, b, keys));
            }
            e
        }
        _ => leaves::diff("$.evidence", &null, &null, keys),
    };
    DimensionDelta {
        name,
        before,
        after,
        delta,
        status_before: base.map(|d| d.status.as_str()),
        status_after: new.map(|d| d.status.as_str()),
        passed_before: base.and_then(|d| d.passed),
        passed_after: new.and_then(|d| d.passed),
        change,
        repos,
        evidence,
    }
}

fn classify(
    base: Option<&Dimension>,
    new: Option<&Dimension>,
    delta: Option<f64>,
    repos: Option<&RepoDeltas>,
    tolerance: f64,
) -> Change {
    let (Some(a), Some(b)) = (base, new) else {
        return if new.is_some() {
            Change::Added
        } else {
            Change::Removed
        };
    };
    let (was, is) = (a.status == Status::Scored, b.status == Status::Scored);
    match (was, is, delta) {
        (true, false, _) => Change::LostScore,
        (false, true, _) => Change::GainedScore,
        (false, false, _) | (true, true, None) => Change::StillUnscored,
        (true, true, Some(d)) if d < -tolerance - EPSILON => {
            // A per-repo judge moves by its repos: a drop whose interval holds zero is noise.
            match repos.and_then(|r| r.ci.as_ref()) {
                Some(ci) if ci.contains_zero() => Change::WithinNoise,
                _ => Change::Regressed,
            }
        }
        (true, true, Some(d)) if d > tolerance + EPSILON => Change::Improved,
        _ => Change::Unchanged,
    }
}

/// Each repo's score: the first scored verdict of each repo id with a score (what a
/// linear search for a scored verdict finds), in one pass, so pairing 300,000 repos is
/// 300,000 hash probes rather than a scan per repo.
fn repo_scores(d: &Dimension) -> HashMap<&str, Option<f64>> {
    let mut map = HashMap::with_capacity(d.repos.len());
    for r in d.repos.iter().filter(|r| r.status == Status::Scored) {
        map.entry(r.repo.as_str()).or_insert(r.score);
    }
    map
}

fn repo_deltas(base: &Dimension, new: &Dimension) -> RepoDeltas {
    let (base_scores, new_scores) = (repo_scores(base), repo_scores(new));
    let score =
        |scores: &HashMap<&str, Option<f64>>, repo: &str| scores.get(repo).copied().flatten();
    let in_new: HashSet<&str> = new.repos.iter().map(|r| r.repo.as_str()).collect();
    let mut pairs = Vec::new();
    let mut unpaired = Vec::new();
    for r in &new.repos {
        match (score(&base_scores, &r.repo), score(&new_scores, &r.repo)) {
            (Some(before), Some(after)) => pairs.push(RepoPair {
                repo: r.repo.clone(),
                before,
                after,
                delta: after - before,
            }),
            _ => unpaired.push(r.repo.clone()),
        }
    }
    for r in &base.repos {
        if !in_new.contains(r.repo.as_str()) {
            unpaired.push(r.repo.clone());
        }
    }
    let deltas: Vec<f64> = pairs.iter().map(|p| p.delta).collect();
    RepoDeltas {
        ci: paired_mean_ci(&deltas, DEFAULT_LEVEL, DEFAULT_RESAMPLES, DEFAULT_SEED),
        pairs,
        unpaired,
    }
}

/// Evidence of per-repo verdicts, compared repo by repo (by id, not position).
fn repo_evidence(base: &Dimension, new: &Dimension, keys: &[String]) -> EvidenceDelta {
    let mut all = EvidenceDelta::default();
    let null = serde_json::Value::Null;
    let mut base_evidence = HashMap::with_capacity(base.repos.len());
    for b in &base.repos {
        base_evidence.entry(b.repo.as_str()).or_insert(&b.evidence);
    }
    for r in &new.repos {
        let before = base_evidence.get(r.repo.as_str()).copied().unwrap_or(&null);
        let root = format!(
            "$.repos['{}']",
            r.repo.replace('\\', "\\\\").replace('\'', "\\'")
        );
        merge(
            &mut all,
            leaves::diff(&format!("{root}.evidence"), before, &r.evidence, keys),
        );
    }
    all
}

fn merge(into: &mut EvidenceDelta, more: EvidenceDelta) {
    into.total += more.total;
    into.truncated |= more.truncated;
    into.changes.extend(more.changes);
    leaves::rank(&mut into.changes);
}

/// Problems of `a` that `b` does not have (by hash, not a scan of `b` per problem).
fn only_in(a: &[ProblemView], b: &[ProblemView]) -> Vec<ProblemView> {
    let b: HashSet<&ProblemView> = b.iter().collect();
    a.iter().filter(|p| !b.contains(p)).cloned().collect()
}

fn notes(base: &Report, new: &Report) -> Vec<String> {
    let mut notes = Vec::new();
    if base.mode != new.mode {
        notes.push(format!(
            "the runs were scored differently ({} then {}): deltas mix scorer and tool changes",
            base.mode, new.mode
        ));
    } else if base.model != new.model {
        notes.push(format!(
            "the runs used different models ({} then {})",
            base.model.as_deref().unwrap_or("-"),
            new.model.as_deref().unwrap_or("-")
        ));
    }
    notes
}

fn round(v: f64) -> f64 {
    crate::score::round::to(v, 6)
}
