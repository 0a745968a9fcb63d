//! Aggregation over games or repositories: macro vs micro averages, mean ± std.
//!
//! Macro averaging takes each game's metric and averages them, so every game weighs the
//! same; micro averaging pools the counts first, so every vulnerability weighs the same.
//! They differ whenever games differ in size, and a report should show both.

use serde::{Deserialize, Serialize};

use super::detection::{Counts, DetectionMetrics, f1_of};

/// Which denominator a standard deviation uses.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum StdConvention {
    /// `n - 1` (Bessel's correction): the games are a sample of what the tool would do.
    /// This is the default and what the adversarial-IaC summaries publish.
    #[default]
    Sample,
    /// `n`: the games are the whole population of interest (numpy's default, `ddof=0`).
    Population,
}

/// Mean, spread and range of a list of values.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Summary {
    /// Number of values.
    pub n: usize,
    /// Arithmetic mean; `None` for no values.
    pub mean: Option<f64>,
    /// Sample standard deviation (`n - 1`); `None` for fewer than two values, where it
    /// is undefined (a single game says nothing about spread).
    pub std_sample: Option<f64>,
    /// Population standard deviation (`n`); `0.0` for one value, `None` for none.
    pub std_population: Option<f64>,
    /// Smallest value; `None` for no values.
    pub min: Option<f64>,
    /// Largest value; `None` for no values.
    pub max: Option<f64>,
}

impl Summary {
    /// Summarises `values`. NaN values are kept (they propagate into mean and std), so
    /// a NaN upstream is visible rather than silently dropped.
    #[must_use]
    #[allow(clippy::cast_precision_loss)]
    pub fn of(values: &[f64]) -> Self {
        let n = values.len();
        if n == 0 {
            return Self {
                n,
                mean: None,
                std_sample: None,
                std_population: None,
                min: None,
                max: None,
            };
        }
        let mean = values.iter().sum::<f64>() / n as f64;
        // Two passes: numerically sound for the small lists a benchmark produces.
        let ss: f64 = values.iter().map(|v| (v - mean) * (v - mean)).sum();
        Self {
            n,
            mean: Some(mean),
            std_sample: (n > 1).then(|| (ss / (n - 1) as f64).sqrt()),
            std_population: Some((ss / n as f64).sqrt()),
            min: values.iter().copied().reduce(f64::min),
            max: values.iter().copied().reduce(f64::max),
        }
    }

    /// The standard deviation under `convention`.
    #[must_use]
    pub fn std(&self, convention: StdConvention) -> Option<f64> {
        match convention {
            StdConvention::Sample => self.std_sample,
            StdConvention::Population => self.std_population,
        }
    }
}

/// Macro averages: the per-game metrics summarised.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct MacroAverages {
    /// Per-game precision.
    pub precision: Summary,
    /// Per-game recall.
    pub recall: Summary,
    /// Per-game F1 (the mean of F1s, not the F1 of the means).
    pub f1: Summary,
    /// Per-game evasion, `1 - recall`.
    pub evasion: Summary,
    /// Per-game evasion, `fn / manifest size` (0 for an empty manifest), the reference
    /// framework's rule; see [`super::detection::evasion_rate_of_manifest`].
    pub evasion_of_manifest: Summary,
    /// F1 of the macro precision and recall means, which some papers report as
    /// "macro F1"; `0.0` with no games.
    pub f1_of_means: f64,
}

/// Macro and micro averages side by side.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct MacroMicro {
    /// Number of games.
    pub n_games: usize,
    /// Averages of per-game metrics.
    #[serde(rename = "macro")]
    pub macro_: MacroAverages,
    /// Metrics of the pooled counts.
    pub micro: DetectionMetrics,
    /// Micro evasion by the reference framework's rule.
    pub micro_evasion_of_manifest: f64,
}

/// Macro and micro precision, recall, F1 and evasion over per-game counts.
///
/// Per-game zero denominators follow [`Counts`] (0.0), so a game where the tool reported
/// nothing pulls macro precision down; micro precision ignores it.
#[must_use]
pub fn macro_micro(games: &[Counts]) -> MacroMicro {
    let per = |f: fn(&Counts) -> f64| Summary::of(&games.iter().map(f).collect::<Vec<_>>());
    let precision = per(Counts::precision);
    let recall = per(Counts::recall);
    let pooled: Counts = games.iter().copied().sum();
    MacroMicro {
        n_games: games.len(),
        macro_: MacroAverages {
            precision,
            recall,
            f1: per(Counts::f1),
            evasion: per(Counts::evasion),
            evasion_of_manifest: per(Counts::evasion_of_manifest),
            f1_of_means: f1_of(precision.mean.unwrap_or(0.0), recall.mean.unwrap_or(0.0)),
        },
        micro: pooled.metrics(),
        micro_evasion_of_manifest: pooled.evasion_of_manifest(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: Option<f64>, b: f64) -> bool {
        a.is_some_and(|a| (a - b).abs() < 1e-12)
    }

    #[test]
    fn four_games_macro_vs_micro() {
        // (3,1,0), (0,0,2) with no findings, (2,2,1), (4,0,0).
        let games = [
            Counts::new(3, 1, 0),
            Counts::new(0, 0, 2),
            Counts::new(2, 2, 1),
            Counts::new(4, 0, 0),
        ];
        let r = macro_micro(&games);
        assert_eq!(r.n_games, 4);
        assert!(close(r.macro_.precision.mean, 0.5625));
        assert!(close(r.macro_.recall.mean, 2.0 / 3.0));
        assert!(close(r.macro_.f1.mean, 0.607_142_857_142_857_1));
        assert!(close(r.macro_.evasion.mean, 1.0 / 3.0));
        assert!(close(
            r.macro_.precision.std_population,
            0.369_754_986_443_726
        ));
        assert!(close(
            r.macro_.precision.std_sample,
            0.426_956_281_914_983_25
        ));
        assert!(close(r.macro_.recall.std_sample, 0.471_404_520_791_031_7));
        assert_eq!(
            (r.macro_.precision.min, r.macro_.precision.max),
            (Some(0.0), Some(1.0))
        );
        assert!((r.macro_.f1_of_means - 0.610_169_491_525_423_8).abs() < 1e-12);
        assert_eq!(r.micro.counts, Counts::new(9, 3, 3));
        assert!((r.micro.precision - 0.75).abs() < 1e-12);
        assert!((r.micro.recall - 0.75).abs() < 1e-12);
        assert!((r.micro.f1 - 0.75).abs() < 1e-12);
        assert!((r.micro.evasion - 0.25).abs() < 1e-12);
        let json = serde_json::to_value(r).unwrap();
        assert!(json["macro"]["precision"]["std_sample"].is_number());
    }

    #[test]
    fn std_conventions_and_degenerate_lists() {
        let one = Summary::of(&[0.7]);
        assert_eq!(one.std(StdConvention::Sample), None);
        assert_eq!(one.std(StdConvention::Population), Some(0.0));
        assert_eq!((one.min, one.max, one.n), (Some(0.7), Some(0.7), 1));
        let none = Summary::of(&[]);
        assert_eq!(
            (none.mean, none.std_population, none.min),
            (None, None, None)
        );
        let two = Summary::of(&[1.0, 3.0]);
        assert!(close(two.std_sample, 2f64.sqrt()));
        assert!(close(two.std_population, 1.0));
        assert_eq!(StdConvention::default(), StdConvention::Sample);
        let empty = macro_micro(&[]);
        assert_eq!(empty.macro_.f1_of_means, 0.0);
        assert_eq!(empty.micro.precision, 0.0);
    }
}
