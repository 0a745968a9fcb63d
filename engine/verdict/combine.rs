//! One judge's verdict from its units and their scores: caps from failed assertions, and
//! for a per-repo judge one verdict per repo combined by mean, with the spread. Every
//! score source (heuristic, one model, a panel) ends here, so a verdict reads the same
//! whichever source scored it.

use crate::doc::Doc;
use crate::evidence::eval::{Context, Evidence};
use crate::score::reaches;
use crate::spec::cap_note::CapNote;
use crate::spec::judge::{JudgeSpec, Scope};
use crate::verdict::assertions::lowest_cap;
use crate::verdict::heuristic::HeuristicOutcome;
use crate::verdict::types::{
    AssertionFailure, HeuristicSide, RepoVerdict, Score, Scoring, Source, Spread, Status, Verdict,
};

/// One unit of judgement: the whole suite, or one repo of a per-repo judge.
#[derive(Debug, Clone)]
pub(crate) struct Unit {
    /// The repo, for per-repo judges.
    pub repo: Option<String>,
    /// The context its evidence was computed in (checks of `caldera test` read it again).
    pub ctx: Context,
    /// Its evidence, or why it could not be computed.
    pub evidence: Result<Evidence, crate::evidence::error::EvalError>,
    /// Failed assertions.
    pub failures: Vec<AssertionFailure>,
    /// Whether the assertions were evaluated (not when the evidence failed).
    pub assertions_ran: bool,
    /// The heuristic's outcome (computed in every mode: it is free).
    pub heuristic: HeuristicOutcome,
}

/// The score a source gives one unit: the heuristic's outcome (heuristic mode) or a
/// model's, read into the same shape (LLM mode).
pub(crate) type UnitScore = HeuristicOutcome;

/// What every verdict of a suite is weighed against: its share of the weights. (The bar a
/// verdict must reach is its plan's `pass_threshold`, filled in at load.)
#[derive(Clone, Copy, Debug)]
pub struct SuiteWeights {
    /// The sum of the judges' weights (weights are relative).
    pub total: f64,
}

impl SuiteWeights {
    /// The weights of a suite's judges.
    pub fn of<'a>(specs: impl IntoIterator<Item = &'a JudgeSpec>) -> SuiteWeights {
        SuiteWeights {
            total: specs.into_iter().map(|s| s.weight).sum(),
        }
    }
}

/// What a verdict needs of its judge: the spec as written and the bar it must reach
/// (the judge's own threshold or the suite's, resolved at load). Verdicts are made from
/// this rather than the loaded plan so that verdict/ stays below load/.
#[derive(Clone, Copy, Debug)]
pub struct JudgeRef<'a> {
    /// The judge as written.
    pub spec: &'a JudgeSpec,
    /// The score its verdict needs to pass.
    pub pass_threshold: f64,
    /// Whether a capped score's reasoning gets the cap's note (the suite's `cap_note`).
    pub cap_note: crate::spec::cap_note::CapNote,
}

/// The verdict of `judge` over `units`, each scored by `scores` (same order).
pub(crate) fn verdict(
    judge: JudgeRef<'_>,
    units: &[Unit],
    scores: &[UnitScore],
    source: Source,
    weights: SuiteWeights,
) -> Verdict {
    let mut base = empty_verdict(judge, source, weights);
    record_assertions(&mut base, units);
    if judge.spec.scope == Scope::Suite {
        return suite_verdict(base, units, scores, judge.cap_note);
    }
    per_repo_verdict(base, units, scores, judge.cap_note)
}

/// The verdict of `judge` from its heuristic alone.
pub(crate) fn heuristic_verdict(
    judge: JudgeRef<'_>,
    units: &[Unit],
    weights: SuiteWeights,
) -> Verdict {
    let scores: Vec<UnitScore> = units.iter().map(|u| u.heuristic.clone()).collect();
    verdict(judge, units, &scores, Source::Heuristic, weights)
}

/// An unscored verdict carrying the judge's name, weight and threshold.
fn empty_verdict(judge: JudgeRef<'_>, source: Source, weights: SuiteWeights) -> Verdict {
    let spec = judge.spec;
    let normalized_weight = if weights.total > 0.0 {
        spec.weight / weights.total
    } else {
        0.0
    };
    Verdict {
        name: spec.dimension.clone(),
        dimension: spec.dimension.clone(),
        status: Status::Unscored,
        source,
        score: None,
        weight: spec.weight,
        normalized_weight,
        weighted_score: None,
        confidence: None,
        reasoning: String::new(),
        evidence_cited: Vec::new(),
        recommendations: Vec::new(),
        sub_scores: Default::default(),
        ground_truth_passed: Some(true),
        assertions_ran: true,
        ground_truth_failures: Vec::new(),
        assertion_failures: Vec::new(),
        score_before_cap: None,
        cap_applied: None,
        pass_threshold: judge.pass_threshold,
        passed: None,
        unscored_reason: None,
        raw_response: String::new(),
        model_score: None,
        repos: Vec::new(),
        spread: None,
        heuristic: None,
        llm_calls: Vec::new(),
        model_verdicts: Vec::new(),
        panel: None,
        repeats: None,
        note: None,
        evidence: Doc::Null,
    }
}

/// Every unit's failed assertions, and whether they all held (null when some did not
/// run: an errored judge never claims its checks passed).
fn record_assertions(v: &mut Verdict, units: &[Unit]) {
    let failures: Vec<AssertionFailure> = units.iter().flat_map(|u| u.failures.clone()).collect();
    v.assertions_ran = units.iter().all(|u| u.assertions_ran);
    v.ground_truth_passed = if !failures.is_empty() {
        Some(false)
    } else {
        v.assertions_ran.then_some(true)
    };
    v.ground_truth_failures = failures
        .iter()
        .map(|f| match &f.repo {
            Some(r) => format!("[{r}] {}", f.message),
            None => f.message.clone(),
        })
        .collect();
    v.assertion_failures = failures;
}

fn suite_verdict(
    mut base: Verdict,
    units: &[Unit],
    scores: &[UnitScore],
    cap_note: CapNote,
) -> Verdict {
    let (Some(unit), Some(score)) = (units.first(), scores.first()) else {
        base.status = Status::Error;
        base.unscored_reason = Some("no unit was judged".into());
        return base;
    };
    base.evidence = evidence_doc(unit);
    apply_unit(&mut base, unit, score, cap_note);
    finish(&mut base);
    base
}

/// One verdict per repo, then their mean and spread.
fn per_repo_verdict(
    mut base: Verdict,
    units: &[Unit],
    scores: &[UnitScore],
    cap_note: CapNote,
) -> Verdict {
    let mut scored: Vec<i64> = Vec::new();
    let mut confidences = Vec::new();
    for (unit, score) in units.iter().zip(scores) {
        let mut one = base.clone();
        one.assertion_failures = unit.failures.clone();
        apply_unit(&mut one, unit, score, cap_note);
        if let Some(Score::Single(s)) = one.score {
            scored.push(s);
        }
        if let Some(c) = one.confidence {
            confidences.push(c);
        }
        base.repos.push(RepoVerdict {
            repo: unit.repo.clone().unwrap_or_default(),
            status: one.status,
            score: one.score.map(|s| s.value() as i64),
            confidence: one.confidence,
            reasoning: one.reasoning,
            unscored_reason: one.unscored_reason,
            evidence: evidence_doc(unit),
        });
    }
    if scored.is_empty() {
        no_repo_scored(&mut base, units.len());
        return base;
    }
    let mean = scored.iter().sum::<i64>() as f64 / scored.len() as f64;
    base.spread = Some(spread(&scored, mean));
    base.status = Status::Scored;
    base.score = Some(Score::Mean(mean));
    base.confidence = Some(round2(
        confidences.iter().sum::<f64>() / confidences.len().max(1) as f64,
    ));
    base.reasoning = format!(
        "mean of {} repo scores ({} of {} repos scored)",
        scored.len(),
        scored.len(),
        units.len()
    );
    let not_scored: Vec<&str> = base
        .repos
        .iter()
        .filter(|r| r.status != Status::Scored)
        .map(|r| r.repo.as_str())
        .collect();
    if !not_scored.is_empty() {
        base.reasoning
            .push_str(&format!("; not scored: {}", not_scored.join(", ")));
    }
    finish(&mut base);
    base
}

/// A per-repo judge none of whose repos scored: an error if some repo errored, with the
/// first reason.
fn no_repo_scored(v: &mut Verdict, n_units: usize) {
    let errors = v.repos.iter().filter(|r| r.status == Status::Error).count();
    v.status = if errors > 0 {
        Status::Error
    } else {
        Status::Unscored
    };
    v.unscored_reason = Some(if n_units == 0 {
        "no repo to judge".into()
    } else {
        let first = v
            .repos
            .iter()
            .find_map(|r| r.unscored_reason.clone())
            .unwrap_or_default();
        format!("no repo could be scored ({n_units} repos; first reason: {first})")
    });
}

/// The spread of repo scores around their `mean`; the standard deviation is the sample
/// one (n-1), undefined for one repo.
fn spread(scored: &[i64], mean: f64) -> Spread {
    let std = (scored.len() > 1).then(|| {
        let var = scored
            .iter()
            .map(|s| (*s as f64 - mean).powi(2))
            .sum::<f64>()
            / (scored.len() - 1) as f64;
        var.sqrt()
    });
    Spread {
        min: scored.iter().copied().min().unwrap_or_default(),
        max: scored.iter().copied().max().unwrap_or_default(),
        std,
        n: scored.len(),
    }
}

/// The evidence as reported: every name except private ones (`_name`), which are
/// working values for expressions (say, every finding) kept out of results and prompts.
fn evidence_doc(unit: &Unit) -> Doc {
    match &unit.evidence {
        Ok(ev) => Doc::object(
            ev.iter()
                .filter(|(k, _)| !crate::evidence::eval::is_private(k))
                .map(|(k, v)| (k.as_str(), v.clone())),
        ),
        Err(_) => Doc::Null,
    }
}

/// Applies a unit's score and caps to `v` (with `cap_note`'s note on a capped score).
fn apply_unit(v: &mut Verdict, unit: &Unit, score: &UnitScore, cap_note: CapNote) {
    match score {
        HeuristicOutcome::Scored(s) => {
            let Scoring {
                score,
                confidence,
                reasoning,
                evidence_cited,
                recommendations,
                sub_scores,
                raw_response,
                model_score,
            } = s.clone();
            let mut final_score = score;
            let mut reasoning = reasoning;
            if let Some(cap) = lowest_cap(&unit.failures)
                && cap < score
            {
                final_score = cap;
                v.score_before_cap = Some(score);
                v.cap_applied = Some(cap);
                if cap_note == CapNote::Note {
                    reasoning = format!(
                        "score capped from {score} to {cap} by failed assertions: {}. {reasoning}",
                        cap_reasons(&unit.failures)
                    );
                }
            }
            v.status = Status::Scored;
            v.score = Some(Score::Single(final_score));
            v.confidence = Some(confidence);
            v.reasoning = reasoning;
            v.evidence_cited = evidence_cited;
            v.recommendations = recommendations;
            v.sub_scores = sub_scores;
            v.raw_response = raw_response;
            v.model_score = model_score;
        }
        HeuristicOutcome::Unscored(reason) => {
            v.status = Status::Unscored;
            v.unscored_reason = Some(reason.clone());
            v.reasoning = format!("unscored: {reason}");
        }
        HeuristicOutcome::Error(reason) => {
            v.status = Status::Error;
            v.unscored_reason = Some(reason.clone());
            v.reasoning = format!("error: {reason}");
        }
    }
}

/// The messages of the failures that carry a cap: the first few, then how many more
/// (a per-item assertion may fail for hundreds of items; all are listed on the verdict).
fn cap_reasons(failures: &[AssertionFailure]) -> String {
    const SHOWN: usize = 3;
    let capped: Vec<&str> = failures
        .iter()
        .filter(|f| f.cap.is_some())
        .map(|f| f.message.as_str())
        .collect();
    let mut text = capped
        .iter()
        .take(SHOWN)
        .copied()
        .collect::<Vec<_>>()
        .join("; ");
    if capped.len() > SHOWN {
        text.push_str(&format!(" (and {} more)", capped.len() - SHOWN));
    }
    text
}

/// The weighted score and whether the verdict passes, from its final score.
fn finish(v: &mut Verdict) {
    if let Some(s) = v.score.map(Score::value) {
        v.weighted_score = Some(round4(s * v.normalized_weight));
        v.passed = Some(reaches(s, v.pass_threshold));
    }
}

fn round2(x: f64) -> f64 {
    crate::score::round::to(x, 2)
}

fn round4(x: f64) -> f64 {
    crate::score::round::to(x, 4)
}

/// Adds the heuristic's verdict beside a model's, so a reader sees both and a gap is
/// visible.
pub(crate) fn attach_heuristic(v: &mut Verdict, units: &[Unit]) {
    let scored: Vec<i64> = units
        .iter()
        .filter_map(|u| match &u.heuristic {
            HeuristicOutcome::Scored(s) => Some(s.score),
            _ => None,
        })
        .collect();
    let status = if scored.is_empty() {
        Status::Unscored
    } else {
        Status::Scored
    };
    let reason = units.iter().find_map(|u| match &u.heuristic {
        HeuristicOutcome::Unscored(r) | HeuristicOutcome::Error(r) => Some(r.clone()),
        HeuristicOutcome::Scored(_) => None,
    });
    let reasoning = units.first().and_then(|u| match &u.heuristic {
        HeuristicOutcome::Scored(s) => Some(s.reasoning.clone()),
        _ => None,
    });
    v.heuristic = Some(HeuristicSide {
        status,
        score: match (units.len(), scored.as_slice()) {
            (_, []) => None,
            (1, [one]) => Some(Score::Single(*one)),
            _ => Some(Score::Mean(
                scored.iter().sum::<i64>() as f64 / scored.len() as f64,
            )),
        },
        reasoning: reasoning.or(reason).unwrap_or_default(),
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evidence::eval::Context;

    fn spec(scope: &str, weight: f64) -> JudgeSpec {
        serde_saphyr::from_str(&format!("dimension: d\nweight: {weight}\nscope: {scope}\n"))
            .expect("a valid judge")
    }

    fn judge(spec: &JudgeSpec, pass_threshold: f64) -> JudgeRef<'_> {
        JudgeRef {
            spec,
            pass_threshold,
            cap_note: CapNote::Note,
        }
    }

    fn scored(score: i64, confidence: f64) -> HeuristicOutcome {
        HeuristicOutcome::Scored(Scoring {
            score,
            confidence,
            reasoning: format!("gave {score}"),
            ..Scoring::default()
        })
    }

    fn unit(
        repo: Option<&str>,
        outcome: HeuristicOutcome,
        failures: &[(&str, Option<i64>)],
    ) -> Unit {
        Unit {
            repo: repo.map(str::to_owned),
            ctx: Context {
                names: Default::default(),
            },
            evidence: Ok(Evidence::new()),
            failures: failures
                .iter()
                .map(|(m, cap)| AssertionFailure {
                    message: (*m).to_owned(),
                    cap: *cap,
                    repo: repo.map(str::to_owned),
                    item: None,
                    error: None,
                })
                .collect(),
            assertions_ran: true,
            heuristic: outcome,
        }
    }

    fn total(t: f64) -> SuiteWeights {
        SuiteWeights { total: t }
    }

    #[test]
    fn a_cap_below_the_score_lowers_it_and_says_so() {
        let spec = spec("suite", 1.0);
        let units = [unit(
            None,
            scored(5, 0.8),
            &[("a", Some(3)), ("b", Some(2)), ("c", None)],
        )];
        let v = heuristic_verdict(judge(&spec, 3.0), &units, total(4.0));
        assert_eq!(v.status, Status::Scored);
        assert_eq!(v.source, Source::Heuristic);
        // min(3, 2) = 2 < 5.
        assert_eq!(v.score, Some(Score::Single(2)));
        assert_eq!(v.score_before_cap, Some(5));
        assert_eq!(v.cap_applied, Some(2));
        assert_eq!(
            v.reasoning,
            "score capped from 5 to 2 by failed assertions: a; b. gave 5"
        );
        // weight 1 of 4 -> 0.25; 2 x 0.25 = 0.5; 2 < 3 fails.
        assert_eq!(v.normalized_weight, 0.25);
        assert_eq!(v.weighted_score, Some(0.5));
        assert_eq!(v.passed, Some(false));
        assert_eq!(v.confidence, Some(0.8));
        assert_eq!(v.ground_truth_passed, Some(false));
        assert_eq!(v.ground_truth_failures, vec!["a", "b", "c"]);
        assert_eq!(v.assertion_failures.len(), 3);
    }

    /// `cap_note: keep` leaves a capped score's reasoning as the judge wrote it, per repo
    /// too; the score is capped and the verdict still says from what and by which cap.
    #[test]
    fn cap_note_keep_leaves_the_reasoning_as_written() {
        for scope in ["suite", "repo"] {
            let spec = spec(scope, 1.0);
            let units = [unit(Some("r1"), scored(5, 0.8), &[("a", Some(2))])];
            let keep = JudgeRef {
                cap_note: CapNote::Keep,
                ..judge(&spec, 3.0)
            };
            let v = heuristic_verdict(keep, &units, total(1.0));
            assert_eq!(v.score.map(Score::value), Some(2.0), "{scope}");
            let reasoning = match scope {
                "repo" => v.repos[0].reasoning.clone(),
                _ => v.reasoning.clone(),
            };
            assert_eq!(reasoning, "gave 5", "{scope}");
            assert_eq!(v.assertion_failures.len(), 1, "{scope}");
            if scope == "suite" {
                assert_eq!((v.score_before_cap, v.cap_applied), (Some(5), Some(2)));
            }
        }
    }

    #[test]
    fn a_cap_at_or_above_the_score_changes_nothing() {
        let spec = spec("suite", 1.0);
        for cap in [3, 4] {
            let units = [unit(None, scored(3, 0.8), &[("m", Some(cap))])];
            let v = heuristic_verdict(judge(&spec, 3.0), &units, total(1.0));
            assert_eq!(v.score, Some(Score::Single(3)), "cap {cap}");
            assert_eq!(
                (v.score_before_cap, v.cap_applied),
                (None, None),
                "cap {cap}"
            );
            assert_eq!(v.reasoning, "gave 3");
            // 3 x 1 = 3, which reaches 3.
            assert_eq!(v.weighted_score, Some(3.0));
            assert_eq!(v.passed, Some(true));
        }
    }

    #[test]
    fn weights_are_shares_of_the_suite_total() {
        let a = spec("suite", 1.0);
        let b = spec("suite", 0.5);
        assert_eq!(SuiteWeights::of([&a, &b]).total, 1.5);
        // 1 / 3 of the weights; 4 x 1/3 = 1.33333... -> 1.3333.
        let units = [unit(None, scored(4, 0.8), &[])];
        let v = heuristic_verdict(judge(&a, 3.0), &units, total(3.0));
        assert_eq!(v.normalized_weight, 1.0 / 3.0);
        assert_eq!(v.weighted_score, Some(1.3333));
        assert_eq!(v.ground_truth_passed, Some(true));
        // No weights at all: a share of nothing, not a division by zero.
        let v = heuristic_verdict(judge(&a, 3.0), &units, total(0.0));
        assert_eq!(v.normalized_weight, 0.0);
        assert_eq!(v.weighted_score, Some(0.0));
    }

    #[test]
    fn an_unscored_or_errored_unit_leaves_the_verdict_without_a_score() {
        let spec = spec("suite", 1.0);
        let units = [unit(None, HeuristicOutcome::Unscored("why".into()), &[])];
        let v = heuristic_verdict(judge(&spec, 3.0), &units, total(1.0));
        assert_eq!(v.status, Status::Unscored);
        assert_eq!(v.unscored_reason.as_deref(), Some("why"));
        assert_eq!(v.reasoning, "unscored: why");
        assert_eq!((v.score, v.weighted_score, v.passed), (None, None, None));
        let units = [unit(None, HeuristicOutcome::Error("bad".into()), &[])];
        let v = heuristic_verdict(judge(&spec, 3.0), &units, total(1.0));
        assert_eq!(v.status, Status::Error);
        assert_eq!(v.reasoning, "error: bad");
        let v = heuristic_verdict(judge(&spec, 3.0), &[], total(1.0));
        assert_eq!(v.status, Status::Error);
        assert_eq!(v.unscored_reason.as_deref(), Some("no unit was judged"));
    }

    #[test]
    fn assertions_that_did_not_run_never_pass() {
        let spec = spec("suite", 1.0);
        let mut u = unit(None, HeuristicOutcome::Error("no evidence".into()), &[]);
        u.assertions_ran = false;
        u.evidence = Err(crate::evidence::error::EvalError::new(
            crate::evidence::error::ErrorKind::Other,
            "no evidence",
        ));
        let v = heuristic_verdict(judge(&spec, 3.0), &[u], total(1.0));
        assert!(!v.assertions_ran);
        assert_eq!(v.ground_truth_passed, None);
        assert_eq!(v.evidence, Doc::Null);
    }

    #[test]
    fn the_evidence_shown_leaves_out_private_names() {
        let spec = spec("suite", 1.0);
        let mut u = unit(None, scored(4, 0.8), &[]);
        u.evidence = Ok([
            ("a".to_owned(), Doc::Int(1)),
            ("_p".to_owned(), Doc::Int(2)),
        ]
        .into_iter()
        .collect());
        let v = heuristic_verdict(judge(&spec, 3.0), &[u], total(1.0));
        assert_eq!(v.evidence, Doc::object([("a", Doc::Int(1))]));
    }

    #[test]
    fn a_per_repo_verdict_is_the_exact_mean_with_the_sample_spread() {
        let spec = spec("repo", 1.0);
        // a: 5 capped to 1; b, c: 3; d: unscored.
        let units = [
            unit(Some("a"), scored(5, 0.8), &[("low", Some(1))]),
            unit(Some("b"), scored(3, 0.7), &[]),
            unit(Some("c"), scored(3, 0.7), &[]),
            unit(
                Some("d"),
                HeuristicOutcome::Unscored("no metric".into()),
                &[],
            ),
        ];
        let v = heuristic_verdict(judge(&spec, 2.0), &units, total(1.0));
        assert_eq!(v.status, Status::Scored);
        // (1 + 3 + 3) / 3 = 7/3, not rounded.
        assert_eq!(v.score, Some(Score::Mean(7.0 / 3.0)));
        // 7/3 x 1 = 2.33333... -> 2.3333; 2.33 >= 2 passes.
        assert_eq!(v.weighted_score, Some(2.3333));
        assert_eq!(v.passed, Some(true));
        // (0.8 + 0.7 + 0.7) / 3 = 0.7333... -> 0.73.
        assert_eq!(v.confidence, Some(0.73));
        // Deviations from 7/3: -4/3, 2/3, 2/3; squares 16/9 + 4/9 + 4/9 = 24/9; over
        // n - 1 = 2: 4/3; std = sqrt(4/3) = 1.1547...
        let sp = v.spread.clone().expect("a spread");
        assert_eq!((sp.min, sp.max, sp.n), (1, 3, 3));
        assert!(
            (sp.std.unwrap() - (4.0_f64 / 3.0).sqrt()).abs() < 1e-12,
            "{sp:?}"
        );
        assert_eq!(
            v.reasoning,
            "mean of 3 repo scores (3 of 4 repos scored); not scored: d"
        );
        let repos: Vec<(&str, Status, Option<i64>)> = v
            .repos
            .iter()
            .map(|r| (r.repo.as_str(), r.status, r.score))
            .collect();
        assert_eq!(
            repos,
            vec![
                ("a", Status::Scored, Some(1)),
                ("b", Status::Scored, Some(3)),
                ("c", Status::Scored, Some(3)),
                ("d", Status::Unscored, None),
            ]
        );
        assert_eq!(v.repos[3].unscored_reason.as_deref(), Some("no metric"));
        assert_eq!(v.ground_truth_failures, vec!["[a] low"]);
    }

    #[test]
    fn the_spread_of_two_repos_and_of_one() {
        let spec = spec("repo", 1.0);
        let units = [
            unit(Some("a"), scored(2, 0.5), &[]),
            unit(Some("b"), scored(4, 0.5), &[]),
        ];
        let v = heuristic_verdict(judge(&spec, 3.0), &units, total(1.0));
        // mean 3; deviations -1, 1; (1 + 1) / (2 - 1) = 2; std sqrt(2).
        assert_eq!(v.score, Some(Score::Mean(3.0)));
        let sp = v.spread.clone().unwrap();
        assert_eq!((sp.min, sp.max, sp.n), (2, 4, 2));
        assert!((sp.std.unwrap() - 2.0_f64.sqrt()).abs() < 1e-12, "{sp:?}");
        assert_eq!(v.reasoning, "mean of 2 repo scores (2 of 2 repos scored)");
        // One repo: a mean, no standard deviation.
        let v = heuristic_verdict(judge(&spec, 3.0), &units[1..], total(1.0));
        assert_eq!(v.score, Some(Score::Mean(4.0)));
        let sp = v.spread.clone().unwrap();
        assert_eq!((sp.min, sp.max, sp.n, sp.std), (4, 4, 1, None));
    }

    #[test]
    fn a_per_repo_judge_without_a_scored_repo() {
        let spec = spec("repo", 1.0);
        let unscored = |r| {
            unit(
                Some(r),
                HeuristicOutcome::Unscored(format!("{r} has none")),
                &[],
            )
        };
        let v = heuristic_verdict(
            judge(&spec, 3.0),
            &[unscored("a"), unscored("b")],
            total(1.0),
        );
        assert_eq!(v.status, Status::Unscored);
        assert_eq!(
            v.unscored_reason.as_deref(),
            Some("no repo could be scored (2 repos; first reason: a has none)")
        );
        assert_eq!((v.score, v.spread.is_none()), (None, true));
        let errored = unit(Some("b"), HeuristicOutcome::Error("broke".into()), &[]);
        let v = heuristic_verdict(judge(&spec, 3.0), &[unscored("a"), errored], total(1.0));
        assert_eq!(
            v.status,
            Status::Error,
            "one errored repo makes it an error"
        );
        let v = heuristic_verdict(judge(&spec, 3.0), &[], total(1.0));
        assert_eq!(v.status, Status::Unscored);
        assert_eq!(v.unscored_reason.as_deref(), Some("no repo to judge"));
    }

    #[test]
    fn a_suite_judge_gives_one_score() {
        let spec = spec("suite", 1.0);
        let v = verdict(
            judge(&spec, 3.0),
            &[unit(None, scored(1, 0.5), &[])],
            &[scored(4, 0.6)],
            Source::Llm,
            total(1.0),
        );
        // The score given, not the unit's heuristic; a single score, not a mean.
        assert_eq!(v.score, Some(Score::Single(4)));
        assert_eq!(v.source, Source::Llm);
        assert!(v.spread.is_none());
    }

    #[test]
    fn a_cap_of_exactly_three_failures_names_them_all() {
        let failures: Vec<AssertionFailure> = (0..3)
            .map(|i| AssertionFailure {
                message: format!("m{i}"),
                cap: Some(2),
                repo: None,
                item: None,
                error: None,
            })
            .collect();
        assert_eq!(cap_reasons(&failures), "m0; m1; m2");
        assert_eq!(cap_reasons(&failures[..2]), "m0; m1");
    }

    #[test]
    fn the_heuristic_beside_a_model() {
        let spec = spec("repo", 1.0);
        let mut v = heuristic_verdict(judge(&spec, 3.0), &[], total(1.0));
        let side = |v: &Verdict| {
            let h = v.heuristic.clone().expect("attached");
            (h.status, h.score, h.reasoning)
        };
        attach_heuristic(&mut v, &[unit(None, scored(4, 0.8), &[])]);
        assert_eq!(
            side(&v),
            (Status::Scored, Some(Score::Single(4)), "gave 4".to_owned())
        );
        // (2 + 5) / 2 = 3.5; the first unit has no score, so its reason is shown.
        let units = [
            unit(Some("a"), HeuristicOutcome::Unscored("why".into()), &[]),
            unit(Some("b"), scored(2, 0.8), &[]),
            unit(Some("c"), scored(5, 0.8), &[]),
        ];
        attach_heuristic(&mut v, &units);
        assert_eq!(
            side(&v),
            (Status::Scored, Some(Score::Mean(3.5)), "why".to_owned())
        );
        // Two units, one scored: still a mean.
        attach_heuristic(&mut v, &units[..2]);
        assert_eq!(
            side(&v),
            (Status::Scored, Some(Score::Mean(2.0)), "why".to_owned())
        );
        attach_heuristic(
            &mut v,
            &[unit(None, HeuristicOutcome::Error("bad".into()), &[])],
        );
        assert_eq!(side(&v), (Status::Unscored, None, "bad".to_owned()));
    }

    #[test]
    fn a_cap_names_the_first_failures_and_counts_the_rest() {
        let failures: Vec<AssertionFailure> = (0..5)
            .map(|i| AssertionFailure {
                message: format!("item {i} failed"),
                cap: Some(2 + i % 2),
                repo: None,
                item: Some(format!("#{i}")),
                error: None,
            })
            .collect();
        assert_eq!(lowest_cap(&failures), Some(2));
        assert_eq!(
            cap_reasons(&failures),
            "item 0 failed; item 1 failed; item 2 failed (and 2 more)"
        );
    }
}
