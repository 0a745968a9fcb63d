//! Aggregation over games or repositories: macro vs micro averages, mean ± std.
//!
//! Macro averaging takes each game's metric and averages them, so every game weighs the
//! same; micro averaging pools the counts first, so every vulnerability weighs the same.
//! They differ whenever games differ in size, and a report should show both.
//!
//! Three choices a published figure depends on are [`AggregateOptions`] of
//! [`macro_micro_with`] and [`Stats::of`], because real reference runs made them
//! differently: the standard deviation's denominator ([`StdConvention`]), how values are
//! added up ([`Summation`]) and the per-game F1 formula ([`F1Rule`]).

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

/// How a list of values is added up.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Summation {
    /// Left to right from `0.0` (Python's `sum` before 3.12, and any running total
    /// `x += v`).
    #[default]
    Sequential,
    /// Neumaier's compensated sum ([`compensated_sum`]), the algorithm of Python's `sum`
    /// over floats since 3.12. The two differ only in the last digits of long lists.
    Compensated,
}

/// Which F1 formula a game's F1 follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum F1Rule {
    /// `2tp / (2tp + fp + fn)` from the counts ([`Counts::f1`]).
    #[default]
    Counts,
    /// `2PR / (P + R)` of the already-rounded precision and recall ([`f1_of`]), the way
    /// most Python frameworks write it. The same number as [`F1Rule::Counts`] up to the
    /// last bit; a figure printed to 16 digits needs the one its producer used.
    Harmonic,
}

impl F1Rule {
    /// The F1 of `counts` under this rule.
    #[must_use]
    pub fn f1(self, counts: &Counts) -> f64 {
        match self {
            F1Rule::Counts => counts.f1(),
            F1Rule::Harmonic => f1_of(counts.precision(), counts.recall()),
        }
    }
}

/// The choices an aggregation leaves open; the default is the sample standard deviation,
/// sequential sums and F1 from the counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct AggregateOptions {
    /// The standard deviation's denominator.
    pub std: StdConvention,
    /// How values are added up (the sum, the mean and the squares of the deviations).
    pub summation: Summation,
    /// The per-game F1 formula (the pooled counts' F1 too).
    pub f1: F1Rule,
}

/// Neumaier's compensated sum, step for step as CPython 3.12's `sum` over floats, so a
/// figure Python printed is reproduced to the last digit.
#[must_use]
pub fn compensated_sum(values: &[f64]) -> f64 {
    let (mut total, mut compensation) = (0.0_f64, 0.0_f64);
    for &x in values {
        let t = total + x;
        if total.abs() >= x.abs() {
            compensation += (total - t) + x;
        } else {
            compensation += (x - t) + total;
        }
        total = t;
    }
    if compensation != 0.0 && compensation.is_finite() {
        total += compensation;
    }
    total
}

/// The sum of `values` under `summation` (`0.0` for none).
#[must_use]
pub fn sum(values: &[f64], summation: Summation) -> f64 {
    match summation {
        Summation::Sequential => values.iter().fold(0.0, |a, b| a + b),
        Summation::Compensated => compensated_sum(values),
    }
}

/// Count, sum, mean, one standard deviation and range of a list of values, under chosen
/// [`StdConvention`] and [`Summation`].
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Stats {
    /// Number of values.
    pub n: usize,
    /// The sum (`0.0` for no values).
    pub sum: f64,
    /// Arithmetic mean; `None` for no values.
    pub mean: Option<f64>,
    /// Standard deviation; `None` where its denominator is zero (no values; one value
    /// under [`StdConvention::Sample`]).
    pub std: Option<f64>,
    /// Smallest value; `None` for no values.
    pub min: Option<f64>,
    /// Largest value; `None` for no values.
    pub max: Option<f64>,
}

impl Stats {
    /// Summarises `values`. Sequential summation gives [`Summary::of`]'s mean and
    /// deviations (two passes); compensated summation divides the compensated sum, and
    /// adds the squared deviations from that mean the same way.
    #[must_use]
    pub fn of(values: &[f64], std: StdConvention, summation: Summation) -> Stats {
        let n = values.len();
        let summary = Summary::of(values);
        let total = sum(values, summation);
        let (mean, std) = match summation {
            Summation::Sequential => (summary.mean, summary.std(std)),
            Summation::Compensated => {
                #[allow(clippy::cast_precision_loss)]
                let mean = (n > 0).then(|| total / n as f64);
                let dof = match std {
                    StdConvention::Sample => n.saturating_sub(1),
                    StdConvention::Population => n,
                };
                let std = mean.filter(|_| dof > 0).map(|m| {
                    let squares: Vec<f64> = values.iter().map(|v| (v - m) * (v - m)).collect();
                    #[allow(clippy::cast_precision_loss)]
                    let variance = compensated_sum(&squares) / dof as f64;
                    variance.sqrt()
                });
                (mean, std)
            }
        };
        Stats {
            n,
            sum: total,
            mean,
            std,
            min: summary.min,
            max: summary.max,
        }
    }
}

/// Macro averages under chosen [`AggregateOptions`]: the per-game metrics summarised.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct MacroStats {
    /// Per-game precision.
    pub precision: Stats,
    /// Per-game recall.
    pub recall: Stats,
    /// Per-game F1 under the options' [`F1Rule`].
    pub f1: Stats,
    /// Per-game evasion, `fn / manifest size` (0 for an empty manifest), the reference
    /// framework's rule; see [`super::detection::evasion_rate_of_manifest`].
    pub evasion_of_manifest: Stats,
    /// F1 of the precision and recall means; `0.0` with no games.
    pub f1_of_means: f64,
}

/// Macro averages under chosen options, and the pooled counts.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct MacroMicroStats {
    /// Number of games.
    pub n_games: usize,
    /// Averages of per-game metrics.
    #[serde(rename = "macro")]
    pub macro_: MacroStats,
    /// The pooled counts, which the micro metrics are computed from.
    pub pooled: Counts,
}

/// Macro averages of per-game precision, recall, F1 and evasion (the reference
/// framework's rule) under `options`, with the pooled counts.
///
/// [`macro_micro`] is the same over the default options, with both standard deviations
/// and the micro metrics computed.
#[must_use]
pub fn macro_micro_with(games: &[Counts], options: AggregateOptions) -> MacroMicroStats {
    let per = |f: &dyn Fn(&Counts) -> f64| {
        let values: Vec<f64> = games.iter().map(f).collect();
        Stats::of(&values, options.std, options.summation)
    };
    let precision = per(&Counts::precision);
    let recall = per(&Counts::recall);
    MacroMicroStats {
        n_games: games.len(),
        macro_: MacroStats {
            precision,
            recall,
            f1: per(&|c| options.f1.f1(c)),
            evasion_of_manifest: per(&Counts::evasion_of_manifest),
            f1_of_means: f1_of(precision.mean.unwrap_or(0.0), recall.mean.unwrap_or(0.0)),
        },
        pooled: games.iter().copied().sum(),
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

    /// As Python's `sum([inf, 1.0])` is inf: a compensation that is no longer a number
    /// (inf - inf along the way) is dropped rather than added.
    #[test]
    fn an_infinite_total_is_not_turned_into_nan() {
        assert_eq!(compensated_sum(&[f64::INFINITY, 1.0]), f64::INFINITY);
        assert_eq!(
            compensated_sum(&[1.0, f64::NEG_INFINITY]),
            f64::NEG_INFINITY
        );
        // Python: sum([0.1] * 10) == 1.0, where a plain sum gives 0.9999999999999999.
        assert_eq!(compensated_sum(&[0.1; 10]), 1.0);
    }

    /// Two passes keep the spread of large, close values: the deviations of 1e9 + 0.1
    /// .. 1e9 + 0.4 are those of 0.1 .. 0.4, whose sample std is sqrt(0.05 / 3) =
    /// 0.1290994. (A one-pass sum of squares minus n x mean^2 cancels to a negative
    /// variance here.)
    #[test]
    fn the_spread_of_large_close_values_survives() {
        let s = Summary::of(&[1e9 + 0.1, 1e9 + 0.2, 1e9 + 0.3, 1e9 + 0.4]);
        let sample = s.std_sample.unwrap();
        assert!((sample - (0.05f64 / 3.0).sqrt()).abs() < 1e-6, "{sample}");
        let population = s.std_population.unwrap();
        assert!(
            (population - (0.05f64 / 4.0).sqrt()).abs() < 1e-6,
            "{population}"
        );
    }

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

    #[test]
    fn compensated_sums_keep_what_sequential_sums_round_away() {
        // 1e16 + 1 rounds back to 1e16 (the spacing there is 2); the compensation keeps
        // the 1. Python 3.11 `sum` gives 0.0, 3.12 gives 1.0.
        let v = [1e16, 1.0, -1e16];
        assert_eq!(sum(&v, Summation::Sequential), 0.0);
        assert_eq!(sum(&v, Summation::Compensated), 1.0);
        assert_eq!(compensated_sum(&v), 1.0);
        // 0.1 + 0.2 + 0.3: 0.6000000000000001 left to right, 0.6 compensated.
        let tenths = [0.1, 0.2, 0.3];
        assert_eq!(sum(&tenths, Summation::Sequential), 0.600_000_000_000_000_1);
        assert_eq!(sum(&tenths, Summation::Compensated), 0.6);
        assert_eq!(sum(&[], Summation::Sequential), 0.0);
        assert_eq!(sum(&[], Summation::Compensated), 0.0);
        assert_eq!(Summation::default(), Summation::Sequential);
    }

    #[test]
    fn stats_under_each_convention() {
        let v = [1.0, 2.0, 3.0, 4.0];
        // Squared deviations from 2.5: 2.25 + 0.25 + 0.25 + 2.25 = 5.
        let sample = Stats::of(&v, StdConvention::Sample, Summation::Sequential);
        assert_eq!(
            (sample.n, sample.sum, sample.mean, sample.min, sample.max),
            (4, 10.0, Some(2.5), Some(1.0), Some(4.0))
        );
        assert_eq!(sample.std, Some((5.0f64 / 3.0).sqrt()));
        assert_eq!(sample.std, Some(1.290_994_448_735_805_6));
        let population = Stats::of(&v, StdConvention::Population, Summation::Sequential);
        assert_eq!(population.std, Some(1.118_033_988_749_895));
        // Exact binary values: both summations agree.
        assert_eq!(
            Stats::of(&v, StdConvention::Sample, Summation::Compensated),
            sample
        );
        // 0.1, 0.2, 0.3: compensated, the sum is 0.6 and the mean 0.6 / 3, just below
        // 0.2; left to right the mean is 0.6000000000000001 / 3, just above it.
        let tenths = [0.1, 0.2, 0.3];
        let seq = Stats::of(&tenths, StdConvention::Sample, Summation::Sequential);
        let comp = Stats::of(&tenths, StdConvention::Sample, Summation::Compensated);
        assert_eq!(seq.mean, Some(0.200_000_000_000_000_04));
        assert_eq!(comp.mean, Some(0.199_999_999_999_999_98));
        assert_eq!((seq.sum, comp.sum), (0.600_000_000_000_000_1, 0.6));
        assert_eq!(comp.std, Some(0.099_999_999_999_999_99));
        let comp_pop = Stats::of(&tenths, StdConvention::Population, Summation::Compensated);
        assert_eq!(comp_pop.std, Some(0.081_649_658_092_772_6));
        // One value: no sample deviation, a population deviation of 0; none: nothing.
        for summation in [Summation::Sequential, Summation::Compensated] {
            let one = Stats::of(&[0.7], StdConvention::Sample, summation);
            assert_eq!((one.mean, one.std, one.sum), (Some(0.7), None, 0.7));
            let one = Stats::of(&[0.7], StdConvention::Population, summation);
            assert_eq!(one.std, Some(0.0));
            let none = Stats::of(&[], StdConvention::Population, summation);
            assert_eq!(
                (none.n, none.sum, none.mean, none.std, none.min),
                (0, 0.0, None, None, None)
            );
        }
    }

    #[test]
    fn f1_rules() {
        // tp 1, fp 0, fn 4: 2 / 6 from the counts; P = 1, R = 0.2, 0.4 / 1.2 harmonic,
        // one bit above.
        let c = Counts::new(1, 0, 4);
        assert_eq!(F1Rule::Counts.f1(&c), 0.333_333_333_333_333_3);
        assert_eq!(F1Rule::Harmonic.f1(&c), 0.333_333_333_333_333_37);
        assert_eq!(F1Rule::Harmonic.f1(&Counts::new(0, 3, 2)), 0.0);
        assert_eq!(F1Rule::default(), F1Rule::Counts);
    }

    #[test]
    fn macro_micro_under_options() {
        let games = [
            Counts::new(3, 1, 0),
            Counts::new(0, 0, 2),
            Counts::new(2, 2, 1),
            Counts::new(4, 0, 0),
        ];
        let plain = macro_micro(&games);
        let r = macro_micro_with(&games, AggregateOptions::default());
        assert_eq!(r.n_games, 4);
        assert_eq!(r.pooled, Counts::new(9, 3, 3));
        // Precision 0.75, 0, 0.5, 1: mean 0.5625, sum 2.25, squared deviations 0.546875.
        assert_eq!(r.macro_.precision.sum, 2.25);
        assert_eq!(r.macro_.precision.mean, Some(0.5625));
        assert_eq!(r.macro_.precision.std, Some((0.546_875f64 / 3.0).sqrt()));
        // The defaults are `macro_micro`'s figures.
        assert_eq!(r.macro_.precision.std, plain.macro_.precision.std_sample);
        assert_eq!(r.macro_.recall.mean, plain.macro_.recall.mean);
        assert_eq!(r.macro_.f1.mean, plain.macro_.f1.mean);
        assert_eq!(
            r.macro_.evasion_of_manifest.mean,
            plain.macro_.evasion_of_manifest.mean
        );
        assert_eq!(r.macro_.f1_of_means, plain.macro_.f1_of_means);
        assert_eq!(r.pooled, plain.micro.counts);
        let population = macro_micro_with(
            &games,
            AggregateOptions {
                std: StdConvention::Population,
                ..AggregateOptions::default()
            },
        );
        assert_eq!(
            population.macro_.precision.std,
            Some((0.546_875f64 / 4.0).sqrt())
        );
        // F1 per game 6/7, 0, 4/7, 1 from the counts; harmonic, the same numbers here.
        let harmonic = macro_micro_with(
            &games,
            AggregateOptions {
                f1: F1Rule::Harmonic,
                ..AggregateOptions::default()
            },
        );
        assert_eq!(
            (harmonic.macro_.f1.min, harmonic.macro_.f1.max),
            (Some(0.0), Some(1.0))
        );
        assert!(close(
            harmonic.macro_.f1.mean,
            (6.0 / 7.0 + 4.0 / 7.0 + 1.0) / 4.0
        ));
        let empty = macro_micro_with(&[], AggregateOptions::default());
        assert_eq!(
            (empty.n_games, empty.macro_.f1_of_means, empty.pooled),
            (0, 0.0, Counts::default())
        );
        assert_eq!(empty.macro_.precision.mean, None);
    }
}
