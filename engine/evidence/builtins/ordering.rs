//! Ordering: `sort_by`, `top`.
//!
//! minijinja's `sort` places none/undefined by type order, which puts
//! records missing a score at the head of a descending list. Judges want
//! "the top N by severity" to skip unscored items, so missing keys always
//! sort last, in either direction, and ties keep input order.

use std::cmp::Ordering;

use minijinja::value::{Rest, ValueOrKwargs};
use minijinja::{Error, Value};

use super::args::{Args, is_nothing};
use super::path::key_of;

/// Stable sort by key; missing keys last regardless of `reverse`.
fn sorted(items: Vec<Value>, by: Option<&str>, reverse: bool) -> Vec<Value> {
    let mut keyed: Vec<(Value, Value)> = items
        .into_iter()
        .map(|item| (key_of(&item, by), item))
        .collect();
    keyed.sort_by(|(a, _), (b, _)| match (is_nothing(a), is_nothing(b)) {
        (true, true) => Ordering::Equal,
        (true, false) => Ordering::Greater,
        (false, true) => Ordering::Less,
        (false, false) if reverse => b.cmp(a),
        (false, false) => a.cmp(b),
    });
    keyed.into_iter().map(|(_, item)| item).collect()
}

/// `sort_by(items, attribute=none, reverse=false)`.
pub(crate) fn sort_by(raw: Rest<ValueOrKwargs>) -> Result<Value, Error> {
    let args = Args::bind("sort_by", &["items", "attribute", "reverse"], 1, raw)?;
    let attribute = args.text(1)?;
    let reverse = args.flag(2, false)?;
    Ok(Value::from(sorted(
        args.items(0)?,
        attribute.as_deref(),
        reverse,
    )))
}

/// `top(items, n, by=none, reverse=true)`: the first `n` after sorting by
/// `by` (largest first by default); without `by`, the first `n` as given.
pub(crate) fn top(raw: Rest<ValueOrKwargs>) -> Result<Value, Error> {
    let args = Args::bind("top", &["items", "n", "by", "reverse"], 2, raw)?;
    let n = match args.count(1)? {
        Some(n) => n,
        None => return Err(args.error(1, "a non-negative integer", &args.raw(1))),
    };
    let by = args.text(2)?;
    let reverse = args.flag(3, true)?;
    let items = args.items(0)?;
    let mut ordered = match by {
        Some(by) => sorted(items, Some(&by), reverse),
        None => items,
    };
    ordered.truncate(n);
    Ok(Value::from(ordered))
}

#[cfg(test)]
mod tests {
    use super::super::testutil::{error, json, json_lazy};
    use serde_json::json;

    fn rows() -> serde_json::Value {
        json!({"r": [
            {"id": "a", "s": {"v": 2}},
            {"id": "b"},
            {"id": "c", "s": {"v": 5}},
            {"id": "d", "s": {"v": 2.0}},
            {"id": "e", "s": {"v": null}},
        ]})
    }

    #[test]
    fn sort_by_is_stable_with_missing_last() {
        assert_eq!(
            json("sort_by(r, 's.v')|map(attribute='id')|list", rows()),
            r#"["a","d","c","b","e"]"#
        );
        assert_eq!(
            json_lazy(
                "r|sort_by('s.v', reverse=true)|map(attribute='id')|list",
                rows()
            ),
            r#"["c","a","d","b","e"]"#
        );
        assert_eq!(json("sort_by([3, 1, 2])", json!({})), "[1,2,3]");
        assert_eq!(json("sort_by(none, 'x')", json!({})), "[]");
    }

    #[test]
    fn top_takes_largest_first() {
        assert_eq!(
            json("top(r, 2, by='s.v')|map(attribute='id')|list", rows()),
            r#"["c","a"]"#
        );
        assert_eq!(
            json("top(r, 2, 's.v', false)|map(attribute='id')|list", rows()),
            r#"["a","d"]"#
        );
        assert_eq!(
            json_lazy("top(r, 2)|map(attribute='id')|list", rows()),
            r#"["a","b"]"#
        );
        assert_eq!(json("top([1, 2], 10)", json!({})), "[1,2]");
        assert_eq!(json("top([], 3, by='x')", json!({})), "[]");
        assert_eq!(json("top([1, 2], 0)", json!({})), "[]");
    }

    #[test]
    fn errors_name_the_argument() {
        let msg = error("top([1], -1)", json!({}));
        assert!(
            msg.contains("top(): argument 'n' must be a non-negative integer, got number -1"),
            "{msg}"
        );
        let msg = error("top([1], none)", json!({}));
        assert!(
            msg.contains("argument 'n' must be a non-negative integer, got none"),
            "{msg}"
        );
        let msg = error("sort_by([1], reverse=1)", json!({}));
        assert!(
            msg.contains("argument 'reverse' must be true or false"),
            "{msg}"
        );
    }
}
