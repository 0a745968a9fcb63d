//! `match`: set matching of detected items against expected ones.
//!
//! This is the core of most judges (which known CVEs did the scanner find?).
//! Both sides are deduplicated first so that a tool repeating a finding is
//! neither rewarded nor punished twice; the scores follow scikit-learn's
//! definitions so figures can be checked against it.

use indexmap::IndexMap;
use minijinja::value::{Rest, ValueOrKwargs};
use minijinja::{Error, Value};

use super::args::{Args, is_nothing};
use super::path::{canonical, key_of};

const PARAMS: &[&str] = &["detected", "expected", "by", "ignore_case", "zero_division"];

/// `match(detected, expected, by=none, ignore_case=false, zero_division=0.0)`.
pub(crate) fn match_sets(raw: Rest<ValueOrKwargs>) -> Result<Value, Error> {
    let args = Args::bind("match", PARAMS, 2, raw)?;
    let by = args.text(2)?;
    let ignore_case = args.flag(3, false)?;
    let zero_division = if args.supplied(4) && args.present(4).is_none() {
        None
    } else {
        Some(args.number_or(4, 0.0)?)
    };
    let detected = distinct_keys(&args.items(0)?, by.as_deref(), ignore_case);
    let expected = distinct_keys(&args.items(1)?, by.as_deref(), ignore_case);

    let mut matched = Vec::new();
    let mut missed = Vec::new();
    for (norm, shown) in &expected {
        if detected.contains_key(norm) {
            matched.push(shown.clone());
        } else {
            missed.push(shown.clone());
        }
    }
    let extra: Vec<Value> = detected
        .iter()
        .filter(|(norm, _)| !expected.contains_key(*norm))
        .map(|(_, shown)| shown.clone())
        .collect();

    let scores = Scores::new(matched.len(), extra.len(), missed.len(), zero_division);
    Ok(Value::from_pairs([
        ("expected", Value::from(expected.len())),
        ("detected", Value::from(detected.len())),
        ("tp", Value::from(matched.len())),
        ("fp", Value::from(extra.len())),
        ("fn", Value::from(missed.len())),
        ("matched", Value::from(matched)),
        ("missed", Value::from(missed)),
        ("extra", Value::from(extra)),
        ("precision", opt_float(scores.precision)),
        ("recall", opt_float(scores.recall)),
        ("f1", opt_float(scores.f1)),
    ]))
}

/// Comparison keys in first-seen order: normalised key -> key as first seen.
/// Items whose key is none or undefined cannot be matched and are skipped.
fn distinct_keys(items: &[Value], by: Option<&str>, ignore_case: bool) -> IndexMap<Value, Value> {
    let mut keys = IndexMap::new();
    for item in items {
        let key = key_of(item, by);
        if is_nothing(&key) {
            continue;
        }
        let norm = match key.as_str() {
            Some(text) if ignore_case => Value::from(text.to_lowercase()),
            _ => canonical(&key),
        };
        keys.entry(norm).or_insert(key);
    }
    keys
}

fn opt_float(value: Option<f64>) -> Value {
    value.map_or(Value::from(()), Value::from)
}

/// Precision, recall and F1 with scikit-learn's zero-denominator rule: a
/// ratio whose denominator is zero takes `zero_division` (none allowed).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Scores {
    pub(crate) precision: Option<f64>,
    pub(crate) recall: Option<f64>,
    pub(crate) f1: Option<f64>,
}

impl Scores {
    pub(crate) fn new(tp: usize, fp: usize, fn_: usize, zero_division: Option<f64>) -> Scores {
        let ratio = |num: usize, den: usize| {
            if den == 0 {
                zero_division
            } else {
                Some(num as f64 / den as f64)
            }
        };
        Scores {
            precision: ratio(tp, tp + fp),
            recall: ratio(tp, tp + fn_),
            // 2tp / (2tp + fp + fn) equals 2PR / (P + R) wherever both are
            // defined, and is 0 (not undefined) when tp = 0 but fp + fn > 0,
            // as in scikit-learn.
            f1: ratio(2 * tp, 2 * tp + fp + fn_),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::{error, eval, json, json_lazy};
    use super::Scores;
    use serde_json::json;

    #[test]
    fn counts_and_lists_follow_input_order() {
        let ctx = json!({"d": ["c", "a", "x", "a", "y"], "e": ["a", "b", "c"]});
        let out = json("match(d, e)", ctx);
        assert_eq!(
            out,
            r#"{"expected":3,"detected":4,"tp":2,"fp":2,"fn":1,"matched":["a","c"],"missed":["b"],"extra":["x","y"],"precision":0.5,"recall":0.6666666666666666,"f1":0.5714285714285714}"#
        );
    }

    #[test]
    fn fn_key_is_reachable_by_attribute_and_item() {
        let ctx = json!({"d": ["a"], "e": ["a", "b"]});
        assert_eq!(json("match(d, e).fn", ctx.clone()), "1");
        assert_eq!(json("match(d, e)['fn']", ctx.clone()), "1");
        assert_eq!(json("(d|match(e)).recall", ctx), "0.5");
    }

    #[test]
    fn by_uses_dotted_paths_and_mixes_with_scalars() {
        let ctx = json!({
            "d": [{"vuln": {"id": "CVE-1"}}, {"vuln": {"id": "CVE-3"}}, {"vuln": {}}],
            "e": ["CVE-1", "CVE-2"]
        });
        let out = json("match(d, e, by='vuln.id')", ctx.clone());
        assert!(
            out.contains(r#""matched":["CVE-1"],"missed":["CVE-2"],"extra":["CVE-3"]"#),
            "{out}"
        );
        assert_eq!(json_lazy("match(d, e, by='vuln.id').tp", ctx.clone()), "1");
        assert_eq!(json_lazy("match(d, e, by='vuln.id').detected", ctx), "2");
    }

    #[test]
    fn ignore_case_reports_first_seen_spelling() {
        let ctx = json!({"d": ["cve-1", "CVE-9"], "e": ["CVE-1"]});
        assert_eq!(json("match(d, e).tp", ctx.clone()), "0");
        let out = json("match(d, e, ignore_case=true)", ctx);
        assert!(
            out.contains(r#""matched":["CVE-1"],"missed":[],"extra":["CVE-9"]"#),
            "{out}"
        );
    }

    #[test]
    fn empty_and_missing_sides_use_zero_division() {
        let out = json("match([], [])", json!({}));
        assert!(
            out.contains(r#""precision":0.0,"recall":0.0,"f1":0.0"#),
            "{out}"
        );
        let out = json("match(none, missing, zero_division=1)", json!({}));
        assert!(
            out.contains(r#""precision":1.0,"recall":1.0,"f1":1.0"#),
            "{out}"
        );
        let out = json("match([], ['a'], zero_division=none)", json!({}));
        assert!(
            out.contains(r#""precision":null,"recall":0.0,"f1":0.0"#),
            "{out}"
        );
    }

    #[test]
    fn map_items_match_regardless_of_key_order_or_laziness() {
        // Several entries per side: indexmap compares a lone entry without
        // hashing, which would hide a hash mismatch.
        let ctx = json!({
            "d": [{"a": 1, "b": [{"x": 1, "y": 2}]}, {"a": 2}, {"a": 3}],
            "e": [{"a": 4}, {"b": [{"y": 2, "x": 1}], "a": 1}, {"a": 5}]
        });
        assert_eq!(json("match(d, e).tp", ctx.clone()), "1");
        assert_eq!(json_lazy("match(d, e).tp", ctx.clone()), "1");
        assert_eq!(
            json_lazy(
                "match(d, [{'a': 1, 'b': [{'x': 1, 'y': 2}]}, {'a': 0}]).tp",
                ctx
            ),
            "1"
        );
    }

    #[test]
    fn numbers_match_across_int_and_float() {
        assert_eq!(json("match([1, 2.0], [2, 3]).tp", json!({})), "1");
    }

    #[test]
    fn rejects_wrong_types_with_argument_names() {
        let msg = error("match('abc', [])", json!({}));
        assert!(
            msg.contains("match(): argument 'detected' must be a list, got string \"abc\""),
            "{msg}"
        );
        let msg = error("match([], [], by=3)", json!({}));
        assert!(
            msg.contains("argument 'by' must be a string, got number 3"),
            "{msg}"
        );
        let msg = error("match([], [], ignore_case='yes')", json!({}));
        assert!(
            msg.contains("argument 'ignore_case' must be true or false"),
            "{msg}"
        );
        let msg = error("match([], [], bye='id')", json!({}));
        assert!(msg.contains("unknown keyword argument 'bye'"), "{msg}");
        let msg = error("match([])", json!({}));
        assert!(
            msg.contains("missing its required argument 'expected'"),
            "{msg}"
        );
    }

    #[test]
    fn f1_is_zero_not_undefined_when_nothing_matches() {
        let s = Scores::new(0, 3, 2, Some(1.0));
        assert_eq!(
            (s.precision, s.recall, s.f1),
            (Some(0.0), Some(0.0), Some(0.0))
        );
        let s = Scores::new(3, 1, 1, None);
        assert_eq!(s.f1, Some(0.75));
        assert!(eval("match(['a'], ['a']).f1", json!({})) == minijinja::Value::from(1.0));
    }
}
