//! Verdicts for the unit tests of what is computed over a run's verdicts (the decision,
//! the gate, the run result's summary): real verdicts, made by the heuristic path from a
//! judge spec, then given the status and score a test needs.

use crate::spec::judge::JudgeSpec;
use crate::verdict::combine::{JudgeRef, SuiteWeights, heuristic_verdict};
use crate::verdict::types::{RepoVerdict, Score, Status, Verdict};

/// A verdict named `name` of weight `weight`, with the given status and score.
pub(crate) fn dim(name: &str, weight: f64, status: Status, score: Option<Score>) -> Verdict {
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

pub(crate) fn scored(name: &str, weight: f64, score: f64) -> Verdict {
    let s = if score.fract() == 0.0 {
        Score::Single(score as i64)
    } else {
        Score::Mean(score)
    };
    dim(name, weight, Status::Scored, Some(s))
}

pub(crate) fn repo(name: &str, status: Status, score: Option<i64>) -> RepoVerdict {
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
