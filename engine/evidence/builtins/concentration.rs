//! Concentration indices: `gini`, `hhi`.
//!
//! Used to judge whether findings pile up in a few files or rules (a sign of
//! a noisy rule) or spread evenly. Both accept a list of numbers or a map
//! (its values), so `gini(count_by(findings, 'path'))` reads naturally.

use minijinja::value::{Rest, ValueOrKwargs};
use minijinja::{Error, Value};

use super::args::Args;

/// Population Gini coefficient of non-negative values: the mean absolute
/// difference over all ordered pairs divided by twice the mean, computed
/// from the sorted values as (2 * sum(i * x_i)) / (n * sum(x)) - (n + 1) / n
/// with 1-based ranks. 0 for empty input or an all-zero total.
pub(crate) fn gini_of(values: &[f64]) -> f64 {
    let n = values.len() as f64;
    let total: f64 = values.iter().sum();
    if values.is_empty() || total == 0.0 {
        return 0.0;
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let ranked: f64 = sorted
        .iter()
        .enumerate()
        .map(|(i, x)| (i as f64 + 1.0) * x)
        .sum();
    (2.0 * ranked) / (n * total) - (n + 1.0) / n
}

/// Herfindahl-Hirschman index on shares of the total (0..1): the sum of
/// squared shares. 0 for empty input or an all-zero total.
pub(crate) fn hhi_of(values: &[f64]) -> f64 {
    let total: f64 = values.iter().sum();
    if total == 0.0 {
        return 0.0;
    }
    values.iter().map(|x| (x / total).powi(2)).sum()
}

/// Reads argument 0 as non-negative numbers.
fn non_negative(args: &Args) -> Result<Vec<f64>, Error> {
    let values = args.numbers(0)?;
    if let Some((index, x)) = values
        .iter()
        .enumerate()
        .find(|(_, x)| **x < 0.0 || x.is_nan())
    {
        return Err(args.fail(format_args!(
            "item {index} of argument 'values' must be a non-negative number, got {x}"
        )));
    }
    Ok(values)
}

/// `gini(values)`.
pub(crate) fn gini(raw: Rest<ValueOrKwargs>) -> Result<Value, Error> {
    let args = Args::bind("gini", &["values"], 1, raw)?;
    Ok(Value::from(gini_of(&non_negative(&args)?)))
}

/// `hhi(values)`.
pub(crate) fn hhi(raw: Rest<ValueOrKwargs>) -> Result<Value, Error> {
    let args = Args::bind("hhi", &["values"], 1, raw)?;
    Ok(Value::from(hhi_of(&non_negative(&args)?)))
}

#[cfg(test)]
mod tests {
    use super::super::testutil::{error, json, json_lazy};
    use super::{gini_of, hhi_of};
    use serde_json::json;

    /// The pairwise definition, to check the sorted formula against.
    fn gini_pairwise(xs: &[f64]) -> f64 {
        let n = xs.len() as f64;
        let mean = xs.iter().sum::<f64>() / n;
        let diffs: f64 = xs
            .iter()
            .flat_map(|a| xs.iter().map(move |b| (a - b).abs()))
            .sum();
        diffs / (2.0 * n * n * mean)
    }

    #[test]
    fn gini_known_values() {
        assert_eq!(gini_of(&[]), 0.0);
        assert_eq!(gini_of(&[0.0, 0.0]), 0.0);
        assert_eq!(gini_of(&[5.0, 5.0, 5.0]), 0.0);
        // One holder of everything among four: (n-1)/n.
        assert!((gini_of(&[0.0, 0.0, 0.0, 8.0]) - 0.75).abs() < 1e-12);
        // [1, 2, 3, 4]: mean abs difference 1.25, mean 2.5 -> 0.25.
        assert!((gini_of(&[4.0, 1.0, 3.0, 2.0]) - 0.25).abs() < 1e-12);
        let xs = [3.0, 0.5, 7.0, 7.0, 1.25, 0.0, 9.0];
        assert!((gini_of(&xs) - gini_pairwise(&xs)).abs() < 1e-12);
    }

    #[test]
    fn hhi_known_values() {
        assert_eq!(hhi_of(&[]), 0.0);
        assert_eq!(hhi_of(&[0.0]), 0.0);
        assert_eq!(hhi_of(&[7.0]), 1.0);
        assert_eq!(hhi_of(&[1.0, 1.0, 1.0, 1.0]), 0.25);
        // Shares 0.5, 0.3, 0.2 -> 0.25 + 0.09 + 0.04.
        assert!((hhi_of(&[50.0, 30.0, 20.0]) - 0.38).abs() < 1e-12);
    }

    #[test]
    fn through_the_environment() {
        assert_eq!(json("gini([1, 2, 3, 4])", json!({})), "0.25");
        assert_eq!(json("[50, 30, 20]|hhi|pyround(2)", json!({})), "0.38");
        assert_eq!(json("gini(none)", json!({})), "0.0");
        assert_eq!(json("hhi([])", json!({})), "0.0");
        let ctx = json!({"c": {"a.tf": 1, "b.tf": 1, "c.tf": 2}});
        assert_eq!(json("hhi(c)", ctx.clone()), "0.375");
        assert_eq!(json_lazy("hhi(c)", ctx), "0.375");
    }

    /// Zero is a count like any other (a file with no findings): only values below
    /// zero are refused.
    #[test]
    fn zero_values_are_accepted() {
        assert_eq!(json("gini([0, 0, 0, 8])", json!({})), "0.75");
        assert_eq!(json("hhi([0, 2, 2])", json!({})), "0.5");
        assert_eq!(json("gini([0, 0])", json!({})), "0.0");
    }

    #[test]
    fn rejects_negative_and_non_numbers() {
        let msg = error("gini([1, -2])", json!({}));
        assert!(
            msg.contains(
                "gini(): item 1 of argument 'values' must be a non-negative number, got -2"
            ),
            "{msg}"
        );
        let msg = error("hhi([1, 'x'])", json!({}));
        assert!(
            msg.contains("hhi(): item 1 of argument 'values' must be a number, got string \"x\""),
            "{msg}"
        );
        let msg = error("hhi('abc')", json!({}));
        assert!(msg.contains("argument 'values' must be a list"), "{msg}");
    }
}
