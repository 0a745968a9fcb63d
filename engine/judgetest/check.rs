//! Compares what a judge concluded in a case with what its expectations say.

use minijinja::Environment;
use serde_json::Value;

use crate::evidence::eval::full_scope;
use crate::judgetest::keypath;
use crate::load::judge::JudgePlan;
use crate::spec::case::{AssertionOutcome, ExpectedStatus, JudgeExpect, ScoreExpect};
use crate::spec::judge::Scope;
use crate::verdict::assertions::check as check_assertions;
use crate::verdict::combine::Unit;
use crate::verdict::types::{Score, Status, Verdict};

/// One assertion of a judge and how it came out over the judge's units.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct AssertionSeen {
    /// Its position in the judge's `assertions`.
    pub index: usize,
    /// Its `message` as written (the template, not the rendered text).
    pub message: String,
    /// `Some(true)` held on every unit, `Some(false)` failed on some unit, `None` not
    /// evaluated anywhere it did not fail (the evidence could not be computed).
    pub held: Option<bool>,
}

/// Evaluates each assertion of `plan` on its own over every unit, so that a case can say
/// which assertion held (a verdict lists only the rendered messages of failures).
pub(crate) fn assertion_outcomes(
    env: &Environment<'static>,
    plan: &JudgePlan,
    units: &[Unit],
) -> Vec<AssertionSeen> {
    let scopes: Vec<Option<(minijinja::Value, crate::doc::Doc, Option<&str>)>> = units
        .iter()
        .map(|u| {
            u.evidence.as_ref().ok().map(|ev| {
                (
                    full_scope(&u.ctx, ev),
                    u.ctx.root_with(ev),
                    u.repo.as_deref(),
                )
            })
        })
        .collect();
    plan.spec
        .assertions
        .iter()
        .zip(&plan.assertions)
        .enumerate()
        .map(|(index, (spec, compiled))| {
            let mut held = (!units.is_empty()).then_some(true);
            for scope in &scopes {
                match scope {
                    Some((scope, root, repo)) => {
                        let one = std::slice::from_ref(compiled);
                        if !check_assertions(env, one, scope, root, *repo).is_empty() {
                            held = Some(false);
                        }
                    }
                    None if held == Some(true) => held = None,
                    None => {}
                }
            }
            AssertionSeen {
                index,
                message: spec.message.clone(),
                held,
            }
        })
        .collect()
}

/// A judge's verdict as the checks read it.
#[derive(Debug, Clone)]
pub(crate) struct Observed {
    /// The dimension.
    pub dimension: String,
    /// Scored, unscored or error.
    pub status: Status,
    /// The score after caps.
    pub score: Option<Score>,
    /// Whether it reaches the pass threshold.
    pub passed: Option<bool>,
    /// Why there is no score.
    pub reason: Option<String>,
    /// The evidence: the judge's own, or `{repo id: evidence}` for a `scope: repo` judge.
    pub evidence: Value,
    /// Each assertion's outcome.
    pub assertions: Vec<AssertionSeen>,
}

impl Observed {
    /// Reads a verdict.
    pub(crate) fn of(plan: &JudgePlan, v: &Verdict, assertions: Vec<AssertionSeen>) -> Observed {
        let evidence = match plan.spec.scope {
            Scope::Suite => serde_json::to_value(&v.evidence).unwrap_or(Value::Null),
            Scope::Repo => Value::Object(
                v.repos
                    .iter()
                    .map(|r| {
                        let ev = serde_json::to_value(&r.evidence).unwrap_or(Value::Null);
                        (r.repo.clone(), ev)
                    })
                    .collect(),
            ),
        };
        Observed {
            dimension: v.dimension.clone(),
            status: v.status,
            score: v.score,
            passed: v.passed,
            reason: v.unscored_reason.clone(),
            evidence,
            assertions,
        }
    }

    /// The status as expectations write it.
    pub(crate) fn expected_status(&self) -> ExpectedStatus {
        match self.status {
            Status::Scored => ExpectedStatus::Scored,
            Status::Unscored => ExpectedStatus::Unscored,
            Status::Error => ExpectedStatus::Error,
        }
    }

    /// The assertion a key of `assertions:` names: its message as written, or its index.
    pub(crate) fn assertion(&self, key: &str) -> Option<&AssertionSeen> {
        self.assertions
            .iter()
            .find(|a| a.message == key)
            .or_else(|| {
                let i: usize = key.parse().ok()?;
                self.assertions.get(i)
            })
    }
}

/// Everything in `want` that does not hold for `seen`, one sentence each.
pub(crate) fn check(plan: &JudgePlan, want: &JudgeExpect, seen: &Observed) -> Vec<String> {
    if checks_nothing(want) {
        // An entry with nothing in it would pass whatever the judge concludes.
        return vec![format!(
            "{} checks nothing: give at least one of `status`, `score`, `passed`, `reason`, \
             `evidence`, `assertions`",
            plan.spec.dimension
        )];
    }
    let mut out = Vec::new();
    let why = || match &seen.reason {
        Some(r) => format!(" ({}: {r})", status_name(seen.expected_status())),
        None => String::new(),
    };
    if let Some(status) = want.status
        && status != seen.expected_status()
    {
        out.push(format!(
            "status: expected {}, got {}{}",
            status_name(status),
            status_name(seen.expected_status()),
            why()
        ));
    }
    if let Some(score) = &want.score {
        match seen.score {
            None => out.push(format!(
                "score: expected {}, got no score{}",
                describe_score(score),
                why()
            )),
            Some(s) if !score_holds(score, s.value()) => out.push(format!(
                "score: expected {}, got {}",
                describe_score(score),
                number(s.value())
            )),
            Some(_) => {}
        }
    }
    if let Some(passed) = want.passed
        && seen.passed != Some(passed)
    {
        out.push(format!(
            "passed: expected {passed}, got {}",
            seen.passed
                .map_or_else(|| "none (no score)".to_owned(), |p| p.to_string())
        ));
    }
    if let Some(text) = &want.reason
        && !seen
            .reason
            .as_deref()
            .is_some_and(|r| r.contains(text.as_str()))
    {
        out.push(format!(
            "reason: expected it to contain {text:?}, got {:?}",
            seen.reason.as_deref().unwrap_or("none")
        ));
    }
    out.extend(check_evidence(want, seen));
    out.extend(check_assertion_outcomes(plan, want, seen));
    out
}

/// Whether a judge's expectations are empty, so that any verdict would pass them.
fn checks_nothing(want: &JudgeExpect) -> bool {
    want.status.is_none()
        && want.score.is_none()
        && want.passed.is_none()
        && want.reason.is_none()
        && want.evidence.is_empty()
        && want.assertions.is_empty()
}

fn check_evidence(want: &JudgeExpect, seen: &Observed) -> Vec<String> {
    let mut out = Vec::new();
    for (path, expected) in &want.evidence {
        let steps = match keypath::parse(path) {
            Ok(s) => s,
            Err(e) => {
                out.push(format!("evidence: {e}"));
                continue;
            }
        };
        match keypath::lookup(&seen.evidence, &steps) {
            Err(e) => out.push(format!("evidence `{path}`: {e}")),
            Ok(actual) if !keypath::same(expected, actual) => out.push(format!(
                "evidence `{path}`: expected {}, got {}",
                compact(expected),
                compact(actual)
            )),
            Ok(_) => {}
        }
    }
    out
}

fn check_assertion_outcomes(plan: &JudgePlan, want: &JudgeExpect, seen: &Observed) -> Vec<String> {
    let mut out = Vec::new();
    for (key, expected) in &want.assertions {
        let Some(a) = seen.assertion(key) else {
            let written = plan.spec.assertions.iter().map(|a| a.message.as_str());
            let hint = crate::diag::did_you_mean(key, written)
                .map(|m| format!("; did you mean {m:?}?"))
                .unwrap_or_else(|| {
                    format!(
                        " (it has {} assertion(s); name one by its message or its position from 0)",
                        plan.spec.assertions.len()
                    )
                });
            out.push(format!(
                "assertion {key:?}: the judge has no such assertion{hint}"
            ));
            continue;
        };
        let held = match a.held {
            Some(h) => h,
            None => {
                out.push(format!(
                    "assertion {key:?}: was not evaluated (the evidence could not be computed)"
                ));
                continue;
            }
        };
        let want_held = *expected == AssertionOutcome::Held;
        if held != want_held {
            out.push(format!(
                "assertion {key:?}: expected {}, got {}",
                outcome_name(want_held),
                outcome_name(held)
            ));
        }
    }
    out
}

/// Whether `score` satisfies the expectation (exact to 1e-9, ranges inclusive).
pub(crate) fn score_holds(want: &ScoreExpect, score: f64) -> bool {
    match want {
        ScoreExpect::Exact(x) => (score - x).abs() <= 1e-9,
        ScoreExpect::Range(r) => {
            r.min.is_none_or(|m| score >= m - 1e-9) && r.max.is_none_or(|m| score <= m + 1e-9)
        }
    }
}

fn describe_score(want: &ScoreExpect) -> String {
    match want {
        ScoreExpect::Exact(x) => number(*x),
        ScoreExpect::Range(r) => match (r.min, r.max) {
            (Some(lo), Some(hi)) => format!("{} to {}", number(lo), number(hi)),
            (Some(lo), None) => format!("at least {}", number(lo)),
            (None, Some(hi)) => format!("at most {}", number(hi)),
            (None, None) => "any score".into(),
        },
    }
}

/// A number as people write it: integers without a fraction, others to 6 places.
pub(crate) fn number(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{}", x as i64)
    } else {
        let s = format!("{x:.6}");
        s.trim_end_matches('0').trim_end_matches('.').to_owned()
    }
}

fn compact(v: &Value) -> String {
    let s = v.to_string();
    if s.chars().count() > 200 {
        format!("{}...", s.chars().take(200).collect::<String>())
    } else {
        s
    }
}

fn status_name(s: ExpectedStatus) -> &'static str {
    match s {
        ExpectedStatus::Scored => "scored",
        ExpectedStatus::Unscored => "unscored",
        ExpectedStatus::Error => "error",
    }
}

fn outcome_name(held: bool) -> &'static str {
    if held { "held" } else { "failed" }
}
