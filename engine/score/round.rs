//! Rounding of the figures a result reports (confidences, weighted scores, costs): half
//! away from zero on the value scaled by a power of ten, one rule everywhere, so the same
//! figure reads the same in every report. (Judges' own `pyround`, `pct` and `ratio`
//! round like Python instead; see `evidence::builtins::rounding`.)

/// `x` rounded to `places` decimals.
#[must_use]
pub fn to(x: f64, places: i32) -> f64 {
    // Powers of ten up to 10^22 are exact in f64, so the scale is the literal it names.
    let scale = 10f64.powi(places);
    (x * scale).round() / scale
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scales_are_exact_and_halves_go_away_from_zero() {
        assert_eq!(10f64.powi(2), 100.0);
        assert_eq!(10f64.powi(4), 10_000.0);
        assert_eq!(10f64.powi(6), 1e6);
        assert_eq!(to(0.125, 2), 0.13);
        assert_eq!(to(-0.125, 2), -0.13);
        assert_eq!(to(1.23456789, 4), 1.2346);
        assert_eq!(to(2.000_000_4, 6), 2.0);
    }
}
