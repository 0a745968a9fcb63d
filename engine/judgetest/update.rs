//! `caldera test --update`: rewrites a case's `expect.yaml` from what its judges concluded,
//! after a review. What was written stays in its form where it still holds (a score range
//! that still contains the score, a reason text still contained); everything else takes
//! the observed value. Judges without expectations get their status and score, and every
//! assertion's outcome, so a new case starts complete.

use indexmap::IndexMap;

use crate::judgetest::check::{Observed, score_holds};
use crate::judgetest::{Case, CaseRun, Mode, keypath};
use crate::spec::case::{AssertionOutcome, ExpectSpec, ExpectedStatus, JudgeExpect, ScoreExpect};

/// The first line of every expectations file: the schema for editors.
pub(crate) const MODELINE: &str =
    "# yaml-language-server: $schema=../../../../schemas/expect.schema.json";

/// The updated expectations of `case`, and notes on what could not be kept.
///
/// An LLM verdict that rests on a missing, stale or unreadable cassette (`unreplayable`)
/// says nothing about the judge: its expectations are kept as they were.
pub(crate) fn updated(case: &Case, run: &CaseRun) -> (ExpectSpec, Vec<String>) {
    let mut notes = Vec::new();
    let mut spec = ExpectSpec::default();
    for (mode, seen) in &run.observed {
        let old = match mode {
            Mode::Heuristic => &case.expect.heuristic,
            Mode::Llm => &case.expect.llm,
        };
        let prev = old.get(&seen.dimension).cloned();
        let fresh = if *mode == Mode::Llm && run.cassette_problems.contains(&seen.dimension) {
            notes.push(format!(
                "{}: the llm expectations of `{}` were not updated: its cassettes cannot be replayed",
                case.name, seen.dimension
            ));
            match prev {
                Some(p) => p,
                None => continue,
            }
        } else {
            refresh(&prev.unwrap_or_default(), seen, &mut notes)
        };
        let target = match mode {
            Mode::Heuristic => &mut spec.heuristic,
            Mode::Llm => &mut spec.llm,
        };
        target.insert(seen.dimension.clone(), fresh);
    }
    for (mode, old) in [
        (Mode::Heuristic, &case.expect.heuristic),
        (Mode::Llm, &case.expect.llm),
    ] {
        for dimension in old.keys() {
            let kept = run
                .observed
                .iter()
                .any(|(m, o)| *m == mode && &o.dimension == dimension);
            if !kept {
                notes.push(format!(
                    "{}: dropped the {} expectations of `{dimension}`, which is not a judge of the suite{}",
                    case.name,
                    mode.name(),
                    if mode == Mode::Llm { " (or the case has no `llm:`)" } else { "" }
                ));
            }
        }
    }
    (spec, notes)
}

/// One judge's expectations brought in line with what was observed.
fn refresh(prev: &JudgeExpect, seen: &Observed, notes: &mut Vec<String>) -> JudgeExpect {
    let status = seen.expected_status();
    let score = seen.score.map(|s| match &prev.score {
        Some(want) if score_holds(want, s.value()) => *want,
        _ => ScoreExpect::Exact(s.value()),
    });
    let reason = match (&seen.reason, &prev.reason) {
        (None, _) => None,
        (Some(r), Some(text)) if r.contains(text.as_str()) => Some(text.clone()),
        (Some(r), _) if status != ExpectedStatus::Scored => Some(r.clone()),
        (Some(_), _) => None,
    };
    let mut evidence = IndexMap::new();
    for path in prev.evidence.keys() {
        let value =
            keypath::parse(path).and_then(|steps| keypath::lookup(&seen.evidence, &steps).cloned());
        match value {
            Ok(v) => {
                evidence.insert(path.clone(), v);
            }
            Err(e) => notes.push(format!(
                "{}: dropped evidence `{path}`: {e}",
                seen.dimension
            )),
        }
    }
    JudgeExpect {
        status: Some(status),
        score,
        passed: prev.passed.and(seen.passed),
        reason,
        evidence,
        assertions: assertions(prev, seen, notes),
    }
}

/// The assertion outcomes: the keys already written, or every assertion for a judge that
/// had none (keyed by message, or by position where two messages are the same).
fn assertions(
    prev: &JudgeExpect,
    seen: &Observed,
    notes: &mut Vec<String>,
) -> IndexMap<String, AssertionOutcome> {
    let outcome = |held: bool| {
        if held {
            AssertionOutcome::Held
        } else {
            AssertionOutcome::Failed
        }
    };
    let mut out = IndexMap::new();
    if prev.assertions.is_empty() {
        for a in &seen.assertions {
            let twice = seen
                .assertions
                .iter()
                .filter(|b| b.message == a.message)
                .count()
                > 1;
            // An assertion with `failures` has no message of its own.
            let key = if twice || a.message.is_empty() {
                a.index.to_string()
            } else {
                a.message.clone()
            };
            if let Some(held) = a.held {
                out.insert(key, outcome(held));
            }
        }
        return out;
    }
    for key in prev.assertions.keys() {
        match seen.assertion(key).and_then(|a| a.held) {
            Some(held) => {
                out.insert(key.clone(), outcome(held));
            }
            None => notes.push(format!(
                "{}: dropped assertion {key:?}: no such assertion, or it was not evaluated",
                seen.dimension
            )),
        }
    }
    out
}

/// The text of an expectations file.
pub(crate) fn render(spec: &ExpectSpec) -> Result<String, String> {
    let mut body = serde_saphyr::to_string(spec).map_err(|e| e.to_string())?;
    if !body.ends_with('\n') {
        body.push('\n');
    }
    Ok(format!(
        "{MODELINE}\n# What each judge must conclude in this case. `caldera test --update` rewrites this\n# file from the judges' verdicts; review the diff before committing it.\n{body}"
    ))
}
