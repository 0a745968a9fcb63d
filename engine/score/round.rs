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

/// `score` with `places` decimals, or as many more as it takes to stand on the same side
/// of every bar in `bars` as the exact score does ([`crate::score::reaches`]): 2.996 is
/// `3.00` with two decimals, which reads as reaching a bar of 3 that 2.996 does not, so it
/// is shown as `2.996`. A figure put next to the bars of a decision then explains it. At
/// most 15 decimals; past that, the shortest text that reads back as `score`.
#[must_use]
pub fn decisive(score: f64, bars: &[f64], places: usize) -> String {
    use crate::score::reaches;
    for places in places..=15 {
        let text = format!("{score:.places$}");
        let same_side = text
            .parse::<f64>()
            .is_ok_and(|shown| bars.iter().all(|&b| reaches(shown, b) == reaches(score, b)));
        if same_side {
            return text;
        }
    }
    score.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// By hand, against the default bars 4, 3.5 and 3.
    #[test]
    fn decisive_adds_the_digits_that_keep_a_score_below_its_bar() {
        let bars = [4.0, 3.5, 3.0];
        assert_eq!(decisive(2.996, &bars, 2), "2.996");
        assert_eq!(decisive(2.99996, &bars, 4), "2.99996");
        assert_eq!(decisive(3.4951, &bars, 2), "3.495");
        // Rounding down onto a bar, or up away from every bar, needs nothing more.
        assert_eq!(decisive(3.501, &bars, 2), "3.50");
        assert_eq!(decisive(3.666_666_666_666_667, &bars, 2), "3.67");
        assert_eq!(decisive(3.5, &bars, 2), "3.50");
        // Floating-point noise below a bar reaches it, and is shown as reaching it.
        assert_eq!(decisive(3.299_999_999_999_999_4, &[3.3], 4), "3.3000");
        // No bars: the decimals asked for.
        assert_eq!(decisive(2.996, &[], 2), "3.00");
        // Below by less than 15 decimals show: the exact text.
        assert_eq!(decisive(3.0 - 2e-9, &bars, 2), "2.999999998");
        assert_eq!(decisive(f64::NAN, &bars, 2), "NaN");
    }

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
