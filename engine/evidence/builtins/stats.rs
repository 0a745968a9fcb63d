//! Small statistics: `mean`, `median`, `stdev`.
//!
//! minijinja has `sum`, `min` and `max` but no averages. Results are floats;
//! where a statistic is undefined (no data) the result is `none` rather than
//! a made-up 0, so a judge can tell "no data" from "zero".

use minijinja::value::{Rest, ValueOrKwargs};
use minijinja::{Error, Value};

use super::args::Args;

pub(crate) fn mean_of(values: &[f64]) -> Option<f64> {
    if values.is_empty() {
        None
    } else {
        Some(values.iter().sum::<f64>() / values.len() as f64)
    }
}

pub(crate) fn median_of(values: &[f64]) -> Option<f64> {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let n = sorted.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(sorted[n / 2]),
        _ => Some((sorted[n / 2 - 1] + sorted[n / 2]) / 2.0),
    }
}

/// Two-pass standard deviation (sum of squared deviations from the mean),
/// which avoids the cancellation of the one-pass formula.
pub(crate) fn stdev_of(values: &[f64], sample: bool) -> Option<f64> {
    let n = values.len();
    let dof = if sample { n.checked_sub(1)? } else { n };
    if dof == 0 {
        return None;
    }
    let mean = mean_of(values)?;
    let squares: f64 = values.iter().map(|x| (x - mean).powi(2)).sum();
    Some((squares / dof as f64).sqrt())
}

fn opt(value: Option<f64>) -> Value {
    value.map_or(Value::from(()), Value::from)
}

/// `mean(values)`: arithmetic mean; none for no values.
pub(crate) fn mean(raw: Rest<ValueOrKwargs>) -> Result<Value, Error> {
    let args = Args::bind("mean", &["values"], 1, raw)?;
    Ok(opt(mean_of(&args.numbers(0)?)))
}

/// `median(values)`: middle value, mean of the two middle ones for an even
/// count; none for no values.
pub(crate) fn median(raw: Rest<ValueOrKwargs>) -> Result<Value, Error> {
    let args = Args::bind("median", &["values"], 1, raw)?;
    Ok(opt(median_of(&args.numbers(0)?)))
}

/// `stdev(values, sample=true)`: standard deviation; none for fewer than
/// two values (sample) or none at all (population).
pub(crate) fn stdev(raw: Rest<ValueOrKwargs>) -> Result<Value, Error> {
    let args = Args::bind("stdev", &["values", "sample"], 1, raw)?;
    let sample = args.flag(1, true)?;
    Ok(opt(stdev_of(&args.numbers(0)?, sample)))
}

#[cfg(test)]
mod tests {
    use super::super::testutil::{error, json, json_lazy};
    use super::stdev_of;
    use serde_json::json;

    #[test]
    fn mean_and_median() {
        assert_eq!(json("mean([1, 2, 3, 4])", json!({})), "2.5");
        assert_eq!(json("[3, 1, 2]|median", json!({})), "2.0");
        assert_eq!(json("median([4, 1, 3, 2])", json!({})), "2.5");
        assert_eq!(json("mean([])", json!({})), "null");
        assert_eq!(json("median(none)", json!({})), "null");
        assert_eq!(
            json_lazy("mean(m)", json!({"m": {"a": 1, "b": 2.5}})),
            "1.75"
        );
    }

    /// By hand: one value is its own median, five values have a middle one (the third
    /// of `[1, 2, 3, 4, 5]`), six the mean of the third and fourth. A list of three
    /// alone cannot tell `n % 2` from `n / 2` (both are 1).
    #[test]
    fn median_of_one_five_and_six_values_by_hand() {
        assert_eq!(json("median([7])", json!({})), "7.0");
        assert_eq!(json("median([5, 1, 4, 2, 3])", json!({})), "3.0");
        assert_eq!(json("median([6, 1, 5, 2, 4, 3])", json!({})), "3.5");
    }

    #[test]
    fn stdev_sample_and_population() {
        // Python: statistics.stdev([2,4,4,4,5,5,7,9]) = 2.138089935299395,
        // statistics.pstdev(...) = 2.0.
        let xs = json!({"xs": [2, 4, 4, 4, 5, 5, 7, 9]});
        assert_eq!(json("stdev(xs)", xs.clone()), "2.138089935299395");
        assert_eq!(json("stdev(xs, sample=false)", xs.clone()), "2.0");
        assert_eq!(json_lazy("xs|stdev(false)", xs), "2.0");
        assert_eq!(json("stdev([5])", json!({})), "null");
        assert_eq!(json("stdev([5], sample=false)", json!({})), "0.0");
        assert_eq!(json("stdev([], sample=false)", json!({})), "null");
        assert_eq!(
            stdev_of(&[1e9 + 4.0, 1e9 + 7.0, 1e9 + 13.0, 1e9 + 16.0], true),
            Some(30f64.sqrt())
        );
    }

    #[test]
    fn errors_name_the_item() {
        let msg = error("mean([1, none])", json!({}));
        assert!(
            msg.contains("mean(): item 1 of argument 'values' must be a number, got none"),
            "{msg}"
        );
        let msg = error("stdev([1, 2], sample='no')", json!({}));
        assert!(
            msg.contains("argument 'sample' must be true or false"),
            "{msg}"
        );
    }
}
