//! The gate: what the decision rests on and what overrules the decision table. No
//! scored judge gives `NO_SCORE`; a judge in error, unless errors are allowed, or
//! coverage below the suite's minimum fails the run (`FAIL`, blocked) whatever its
//! score. The exit status is read from this by the command (`cli::run`).

use serde::Serialize;

use crate::spec::suite::DecisionRow;
use crate::verdict::decision::{Decision, FLOOR, decide, decision_score};
use crate::verdict::types::{Status, Verdict};

/// Units asked for and units scored: a suite-scope judge is one unit, a per-repo judge
/// one per repo; with a panel, one per model and unit.
pub(crate) fn coverage(dims: &[Verdict]) -> (usize, usize) {
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
pub(crate) fn gate(
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::suite::default_decision;
    use crate::verdict::panel::DimensionPanel;
    use crate::verdict::testutil::{dim, repo, scored};

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
}
