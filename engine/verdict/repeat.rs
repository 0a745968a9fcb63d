//! `--repeat N` (epochs): every unit asked of every model N times. One ask of a model is
//! one sample of a noisy rater; repeats show how much its score moves on the same prompt.
//! The unit's score from one model is the median of its repeats (the lower middle for an
//! even count, as panels do), and a judge whose repeats disagree is flagged as unstable.

use serde::Serialize;

use crate::verdict::scoring::Scoring;

/// One unit and model's scores across repeats.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct RepeatRun {
    /// The repo, for per-repo judges.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub repo: Option<String>,
    /// The model asked, as the suite names it.
    pub model: String,
    /// One score per ask, in order; null where an ask gave no verdict.
    pub scores: Vec<Option<i64>>,
    /// Highest minus lowest score given (null with no score).
    pub range: Option<i64>,
    /// Sample standard deviation (n-1) of the scores given; null under two scores.
    pub std: Option<f64>,
}

impl RepeatRun {
    /// The run of `scores` for one unit and model.
    pub fn new(repo: Option<String>, model: &str, scores: Vec<Option<i64>>) -> RepeatRun {
        let given: Vec<i64> = scores.iter().flatten().copied().collect();
        let range = given
            .iter()
            .max()
            .zip(given.iter().min())
            .map(|(hi, lo)| hi - lo);
        RepeatRun {
            repo,
            model: model.to_owned(),
            std: sample_std(&given),
            range,
            scores,
        }
    }

    /// Whether the scores given differ.
    pub fn disagrees(&self) -> bool {
        self.range.is_some_and(|r| r > 0)
    }
}

/// A judge's repeats: the spread of each unit and model.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Repeats {
    /// Asks per unit and model.
    pub n: u32,
    /// Each unit and model's scores.
    pub runs: Vec<RepeatRun>,
    /// The largest range over the runs (0 when every run agrees with itself).
    pub max_range: i64,
    /// Mean of the runs' standard deviations (null when none is defined).
    pub mean_std: Option<f64>,
    /// Whether the repeats of some unit and model disagree.
    pub unstable: bool,
    /// Asks not sent because a unit's first repeats agreed (`--settle`): calls saved.
    #[serde(skip_serializing_if = "is_zero")]
    pub settled: u32,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

impl Repeats {
    /// Summarises `runs` of `n` asks each.
    pub fn of(n: u32, runs: Vec<RepeatRun>) -> Repeats {
        let stds: Vec<f64> = runs.iter().filter_map(|r| r.std).collect();
        Repeats {
            n,
            max_range: runs.iter().filter_map(|r| r.range).max().unwrap_or(0),
            mean_std: (!stds.is_empty()).then(|| stds.iter().sum::<f64>() / stds.len() as f64),
            unstable: runs.iter().any(RepeatRun::disagrees),
            runs,
            settled: 0,
        }
    }

    /// A sentence naming the runs that disagree, for the run summary.
    pub fn describe_unstable(&self) -> Option<String> {
        let parts: Vec<String> = self
            .runs
            .iter()
            .filter(|r| r.disagrees())
            .map(|r| {
                let scores: Vec<String> = r
                    .scores
                    .iter()
                    .map(|s| s.map_or_else(|| "-".to_owned(), |s| s.to_string()))
                    .collect();
                match &r.repo {
                    Some(repo) => format!("{} on {repo}: {}", r.model, scores.join(", ")),
                    None => format!("{}: {}", r.model, scores.join(", ")),
                }
            })
            .collect();
        (!parts.is_empty()).then(|| {
            format!(
                "unstable: {} repeats of the same prompt gave different scores ({})",
                self.n,
                parts.join("; ")
            )
        })
    }
}

/// One model's verdict on a unit from its repeats: the median score (lower middle for an
/// even count), with the reasoning of the repeat nearest to it and the mean confidence.
/// `None` when no repeat gave a verdict.
pub(crate) fn repeat_consensus(mut scorings: Vec<Scoring>, failures: &[String]) -> Option<Scoring> {
    if scorings.is_empty() {
        return None;
    }
    let mut scores: Vec<i64> = scorings.iter().map(|s| s.score).collect();
    scores.sort_unstable();
    let median = scores[(scores.len() - 1) / 2];
    let confidence = scorings.iter().map(|s| s.confidence).sum::<f64>() / scorings.len() as f64;
    let listed: Vec<String> = scorings.iter().map(|s| s.score.to_string()).collect();
    let nearest = scorings
        .iter()
        .position(|s| s.score == median)
        .unwrap_or_default();
    let mut chosen = scorings.swap_remove(nearest);
    let without = if failures.is_empty() {
        String::new()
    } else {
        format!(" [without: {}]", failures.join("; "))
    };
    chosen.reasoning = format!(
        "median {median} of {} repeats (scores {}){without}. {}",
        listed.len(),
        listed.join(", "),
        chosen.reasoning
    );
    chosen.confidence = crate::score::round::to(confidence, 2);
    Some(chosen)
}

fn sample_std(values: &[i64]) -> Option<f64> {
    if values.len() < 2 {
        return None;
    }
    let n = values.len() as f64;
    let mean = values.iter().sum::<i64>() as f64 / n;
    let var = values
        .iter()
        .map(|v| (*v as f64 - mean).powi(2))
        .sum::<f64>()
        / (n - 1.0);
    Some(var.sqrt())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scoring(score: i64, confidence: f64) -> Scoring {
        Scoring {
            score,
            confidence,
            reasoning: format!("said {score}"),
            ..Scoring::default()
        }
    }

    #[test]
    fn median_of_repeats_with_the_nearest_reasoning() {
        let s =
            repeat_consensus(vec![scoring(4, 0.9), scoring(2, 0.5), scoring(4, 0.7)], &[]).unwrap();
        assert_eq!(s.score, 4);
        assert!((s.confidence - 0.7).abs() < 1e-12);
        assert!(
            s.reasoning
                .starts_with("median 4 of 3 repeats (scores 4, 2, 4). said 4")
        );
        // An even count takes the lower middle.
        let s = repeat_consensus(vec![scoring(5, 1.0), scoring(3, 1.0)], &["#2: x".into()]);
        assert_eq!(s.map(|s| s.score), Some(3));
        assert_eq!(repeat_consensus(Vec::new(), &[]), None);
    }

    #[test]
    fn spread_and_instability() {
        let steady = RepeatRun::new(None, "sonnet", vec![Some(4), Some(4), None]);
        assert_eq!((steady.range, steady.std), (Some(0), Some(0.0)));
        let shaky = RepeatRun::new(Some("r1".into()), "opus", vec![Some(2), Some(4), Some(3)]);
        assert_eq!(shaky.range, Some(2));
        assert!((shaky.std.unwrap() - 1.0).abs() < 1e-12);
        let r = Repeats::of(3, vec![steady.clone(), shaky]);
        assert!(r.unstable);
        assert_eq!(r.max_range, 2);
        assert!((r.mean_std.unwrap() - 0.5).abs() < 1e-12);
        assert_eq!(
            r.describe_unstable().as_deref(),
            Some(
                "unstable: 3 repeats of the same prompt gave different scores (opus on r1: 2, 4, 3)"
            )
        );
        let calm = Repeats::of(3, vec![steady]);
        assert!(!calm.unstable && calm.describe_unstable().is_none());
    }
}
