//! The decision: the label of a run, read from the suite's decision table
//! (`STRONG_PASS`, `PASS`, `WEAK_PASS`, `FAIL` by default) with the score the
//! verdicts give, and the scores it is read from (the weighted score shown, and the
//! decision score, where a unit without a score counts at the floor).
//! What can overrule the table (errors, coverage) is the gate, `gate.rs`.

use serde::Serialize;

use crate::score::reaches;
use crate::spec::suite::DecisionRow;
use crate::verdict::types::{Status, Verdict};

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

/// Label when no judge produced a score.
pub(crate) const NO_SCORE: &str = "NO_SCORE";

/// Weighted score over scored judges, exact (shown rounded, never decided rounded).
pub(crate) fn weighted_score(dims: &[Verdict]) -> Option<f64> {
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
pub(crate) const FLOOR: f64 = 1.0;

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
pub(crate) fn decision_score(dims: &[Verdict]) -> Option<f64> {
    if !dims.iter().any(|d| d.status == Status::Scored) {
        return None;
    }
    let total_w: f64 = dims.iter().map(|d| d.weight).sum();
    (total_w > 0.0).then(|| dims.iter().map(|d| floored(d) * d.weight).sum::<f64>() / total_w)
}

/// The failing label the gates give.
pub(crate) const FAIL: &str = "FAIL";

/// The first decision row whose `min` the score reaches.
pub(crate) fn decide(score: Option<f64>, table: &[DecisionRow]) -> Decision {
    let Some(s) = score else {
        return Decision::NoScore;
    };
    table
        .iter()
        .find(|r| r.min.is_none_or(|m| reaches(s, m)))
        .map_or(Decision::NoScore, |r| Decision::Label(r.label.clone()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::suite::default_decision;
    use crate::verdict::testutil::{dim, repo, scored};
    use crate::verdict::types::Score;

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
