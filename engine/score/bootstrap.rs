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
