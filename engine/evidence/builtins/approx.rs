//! Tolerant comparison: test `close_to`, function `approx_eq`.
//!
//! Scores computed as floats rarely equal a published figure exactly;
//! assertions compare within an absolute or relative tolerance, the rule of
//! Python's `math.isclose`: |a-b| <= max(abs, rel * max(|a|, |b|)).

use minijinja::value::{Rest, ValueOrKwargs};
use minijinja::{Error, Value};

use super::args::{Args, is_nothing};

const PARAMS: &[&str] = &["a", "b", "abs", "rel"];

/// Whether `a` and `b` are within the tolerance.
pub(crate) fn is_close(a: f64, b: f64, abs_tol: f64, rel_tol: f64) -> bool {
    if a == b {
        return true;
    }
    (a - b).abs() <= abs_tol.max(rel_tol * a.abs().max(b.abs()))
}

fn compare(func: &'static str, raw: Rest<ValueOrKwargs>) -> Result<Value, Error> {
    let args = Args::bind(func, PARAMS, 2, raw)?;
    let abs_tol = args.number_or(2, 0.0)?;
    let rel_tol = args.number_or(3, 0.0)?;
    for (i, tol) in [(2, abs_tol), (3, rel_tol)] {
        if tol < 0.0 || tol.is_nan() {
            return Err(args.error(i, "a non-negative number", &args.raw(i)));
        }
    }
    // A missing value is close to nothing; an assertion on a value the tool
    // never produced must fail rather than error.
    if is_nothing(&args.raw(0)) || is_nothing(&args.raw(1)) {
        return Ok(Value::from(false));
    }
    let a = args.number(0)?;
    let b = args.number(1)?;
    Ok(Value::from(is_close(a, b, abs_tol, rel_tol)))
}

/// Test: `a is close_to(b, abs=0, rel=0)`.
pub(crate) fn close_to(raw: Rest<ValueOrKwargs>) -> Result<Value, Error> {
    compare("close_to", raw)
}

/// Function: `approx_eq(a, b, abs=0, rel=0)`.
pub(crate) fn approx_eq(raw: Rest<ValueOrKwargs>) -> Result<Value, Error> {
    compare("approx_eq", raw)
}

#[cfg(test)]
mod tests {
    use super::super::testutil::{error, json, json_lazy};
    use super::is_close;
    use serde_json::json;

    #[test]
    fn tolerance_rule() {
        assert!(is_close(1.0, 1.0, 0.0, 0.0));
        assert!(!is_close(0.1 + 0.2, 0.3, 0.0, 0.0));
        assert!(is_close(0.1 + 0.2, 0.3, 1e-12, 0.0));
        assert!(is_close(100.0, 101.0, 0.0, 0.01));
        assert!(!is_close(100.0, 102.0, 0.0, 0.01));
        assert!(is_close(100.0, 102.0, 2.0, 0.01));
    }

    #[test]
    fn test_and_function_forms() {
        assert_eq!(
            json("0.5714 is close_to(0.5714285, abs=0.001)", json!({})),
            "true"
        );
        assert_eq!(
            json("0.57 is close_to(0.5714285, abs=0.001)", json!({})),
            "false"
        );
        assert_eq!(json("approx_eq(10, 10.5, rel=0.05)", json!({})), "true");
        assert_eq!(json("approx_eq(10, 11, 0.5)", json!({})), "false");
        assert_eq!(json("3 is close_to(3)", json!({})), "true");
        assert_eq!(
            json_lazy(
                "s.f1 is close_to(0.8, abs=0.01)",
                json!({"s": {"f1": 0.805}})
            ),
            "true"
        );
    }

    #[test]
    fn missing_values_are_not_close() {
        assert_eq!(json("none is close_to(1)", json!({})), "false");
        assert_eq!(json("approx_eq(1, missing, abs=5)", json!({})), "false");
    }

    #[test]
    fn bad_arguments() {
        let msg = error("approx_eq('1', 1)", json!({}));
        assert!(
            msg.contains("approx_eq(): argument 'a' must be a number, got string \"1\""),
            "{msg}"
        );
        let msg = error("1 is close_to(1, abs=-1)", json!({}));
        assert!(
            msg.contains("close_to(): argument 'abs' must be a non-negative number, got number -1"),
            "{msg}"
        );
        let msg = error("1 is close_to(1, tol=1)", json!({}));
        assert!(msg.contains("unknown keyword argument 'tol'"), "{msg}");
    }
}
