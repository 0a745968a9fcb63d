//! A paired bootstrap confidence interval for a mean difference.
//!
//! Comparing two runs repo by repo gives paired differences (the same repo scored before
//! and after). Their mean says how much a dimension moved; the bootstrap interval says
//! whether that movement is larger than what resampling the same repos would produce, so a
//! change within noise is not called a regression. The generator is ChaCha8 from a stated
//! seed, whose stream is fixed across releases: the same inputs give the same interval on
//! every machine.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;

/// The seed `caldera diff` uses, stated in every interval it prints.
pub const DEFAULT_SEED: u64 = 20_240_601;

/// The resamples `caldera diff` draws.
pub const DEFAULT_RESAMPLES: usize = 2_000;

/// The confidence level `caldera diff` reports.
pub const DEFAULT_LEVEL: f64 = 0.95;

/// A percentile bootstrap interval for the mean of paired differences.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BootstrapCi {
    /// Pairs.
    pub n: usize,
    /// Mean of the differences.
    pub mean: f64,
    /// Lower bound.
    pub low: f64,
    /// Upper bound.
    pub high: f64,
    /// Confidence level (0.95).
    pub level: f64,
    /// Resamples drawn.
    pub resamples: usize,
    /// The generator's seed.
    pub seed: u64,
    /// The method, in words.
    pub method: &'static str,
}

impl BootstrapCi {
    /// Whether the interval contains zero: the data cannot tell the change from noise.
    pub fn contains_zero(&self) -> bool {
        self.low <= 0.0 && self.high >= 0.0
    }

    /// One sentence for reports.
    pub fn sentence(&self) -> String {
        format!(
            "paired mean delta {:+.2} over {} repos, {:.0}% bootstrap CI [{:+.2}, {:+.2}] ({} resamples, seed {})",
            self.mean,
            self.n,
            self.level * 100.0,
            self.low,
            self.high,
            self.resamples,
            self.seed
        )
    }
}

/// The percentile bootstrap interval of the mean of `deltas`: `resamples` means of `n`
/// draws with replacement, and their `(1 - level) / 2` and `(1 + level) / 2` quantiles
/// (linear interpolation between order statistics). `None` for fewer than two pairs,
/// where resampling has nothing to vary, or for a level outside (0, 1).
pub fn paired_mean_ci(
    deltas: &[f64],
    level: f64,
    resamples: usize,
    seed: u64,
) -> Option<BootstrapCi> {
    let n = deltas.len();
    if n < 2 || resamples == 0 || !(level > 0.0 && level < 1.0) {
        return None;
    }
    let mean = deltas.iter().sum::<f64>() / n as f64;
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut means: Vec<f64> = (0..resamples)
        .map(|_| (0..n).map(|_| deltas[rng.random_range(0..n)]).sum::<f64>() / n as f64)
        .collect();
    means.sort_by(f64::total_cmp);
    let tail = (1.0 - level) / 2.0;
    Some(BootstrapCi {
        n,
        mean,
        low: quantile(&means, tail),
        high: quantile(&means, 1.0 - tail),
        level,
        resamples,
        seed,
        method: "percentile bootstrap of the mean of paired per-repo deltas",
    })
}

/// The `q` quantile of sorted values, interpolating linearly (numpy's default).
fn quantile(sorted: &[f64], q: f64) -> f64 {
    let pos = q * (sorted.len() - 1) as f64;
    let lo = pos.floor() as usize;
    let hi = pos.ceil() as usize;
    let frac = pos - lo as f64;
    sorted[lo] + (sorted[hi] - sorted[lo]) * frac
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ci(low: f64, high: f64) -> BootstrapCi {
        BootstrapCi {
            n: 12,
            mean: 0.25,
            low,
            high,
            level: 0.95,
            resamples: 2000,
            seed: 7,
            method: "m",
        }
    }

    #[test]
    fn an_interval_contains_zero_at_or_between_its_ends() {
        assert!(ci(-1.0, 1.0).contains_zero());
        assert!(ci(0.0, 1.0).contains_zero());
        assert!(ci(-1.0, 0.0).contains_zero());
        assert!(!ci(0.5, 1.0).contains_zero());
        assert!(!ci(-1.0, -0.5).contains_zero());
        assert_eq!(
            ci(-0.125, 0.5).sentence(),
            "paired mean delta +0.25 over 12 repos, 95% bootstrap CI [-0.12, +0.50] (2000 resamples, seed 7)"
        );
    }

    /// Two pairs are enough to resample; a level must lie strictly between 0 and 1.
    #[test]
    fn two_pairs_suffice_and_the_level_is_open() {
        assert!(paired_mean_ci(&[0.0, 1.0], 0.95, 100, 1).is_some());
        assert!(paired_mean_ci(&[0.0, 1.0], 0.0, 100, 1).is_none());
        assert!(paired_mean_ci(&[0.0, 1.0], 1.0, 100, 1).is_none());
        assert!(paired_mean_ci(&[1.0], 0.5, 100, 1).is_none());
    }

    /// The interval's ends are the (1 - level)/2 and (1 + level)/2 quantiles: for the
    /// deltas 0..9 the mean of 10 draws has sd sqrt(8.25)/sqrt(10) = 0.908, so a 95%
    /// interval is about 4.5 -+ 1.96 x 0.908 = [2.72, 6.28] (a 90% one would be
    /// [3.01, 5.99], an 80% one [3.34, 5.66]).
    #[test]
    fn the_ends_are_the_level_quantiles() {
        let deltas: Vec<f64> = (0..10).map(f64::from).collect();
        let c = paired_mean_ci(&deltas, 0.95, 20_000, 11).unwrap();
        assert!((2.5..2.95).contains(&c.low), "{}", c.low);
        assert!((6.05..6.5).contains(&c.high), "{}", c.high);
    }

    #[test]
    fn the_same_seed_gives_the_same_interval() {
        let d = [-1.0, 0.0, -2.0, 1.0, -1.0, 0.0];
        let a = paired_mean_ci(&d, 0.95, 2000, 7).unwrap();
        let b = paired_mean_ci(&d, 0.95, 2000, 7).unwrap();
        assert_eq!(a, b);
        assert!((a.mean - (-0.5)).abs() < 1e-12);
        assert!(a.low <= a.mean && a.mean <= a.high);
        assert!(a.contains_zero(), "mixed small deltas are noise: {a:?}");
    }

    #[test]
    fn a_consistent_drop_excludes_zero() {
        let d = [-1.0, -2.0, -1.0, -1.0, -2.0, -1.0, -1.0, -1.0];
        let ci = paired_mean_ci(&d, 0.95, 2000, DEFAULT_SEED).unwrap();
        assert!(ci.high < 0.0, "{ci:?}");
        // Bounds never leave the range of the data.
        assert!(ci.low >= -2.0 && ci.high <= -1.0);
    }

    #[test]
    fn constant_deltas_give_a_point_and_one_pair_gives_none() {
        let ci = paired_mean_ci(&[1.0, 1.0, 1.0], 0.95, 500, 1).unwrap();
        assert_eq!((ci.low, ci.high), (1.0, 1.0));
        assert!(paired_mean_ci(&[1.0], 0.95, 500, 1).is_none());
        assert!(paired_mean_ci(&[1.0, 2.0], 1.0, 500, 1).is_none());
    }

    #[test]
    fn quantiles_interpolate_like_numpy() {
        let v = [1.0, 2.0, 3.0, 4.0];
        assert_eq!(quantile(&v, 0.0), 1.0);
        assert_eq!(quantile(&v, 1.0), 4.0);
        assert!((quantile(&v, 0.5) - 2.5).abs() < 1e-12);
        assert!((quantile(&v, 0.025) - 1.075).abs() < 1e-12);
    }
}
