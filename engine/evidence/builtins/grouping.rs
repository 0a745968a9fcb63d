//! Grouping by a key: `count_by`, `group_by`, `distinct`.
//!
//! minijinja's `groupby` and `unique` sort their output; evidence shown to a
//! judge (and to an LLM) reads better in the order the tool reported, so
//! these keep first-appearance order.
//!
//! The attribute is a dotted path whose integer segments index lists
//! (`'location.0'`, `'location.-1'` for the last), or a bare integer
//! (`count_by(pairs, 0)`) for items that are lists themselves, such as the
//! `[key, value]` pairs of `items`.

use indexmap::IndexMap;
use minijinja::value::{Rest, ValueOrKwargs};
use minijinja::{Error, Value};

use super::args::{Args, is_nothing};
use super::path::{canonical, key_of};

/// The group key of `item`, with `default` standing in for a missing one.
fn group_key(item: &Value, attribute: Option<&str>, default: &Value) -> Value {
    let key = key_of(item, attribute);
    if is_nothing(&key) {
        default.clone()
    } else {
        canonical(&key)
    }
}

/// The `attribute` argument as a path: a string as written, an integer as
/// the one-segment path that indexes list items.
fn attribute_arg(args: &Args, i: usize) -> Result<Option<String>, Error> {
    match args.present(i) {
        Some(value) if value.is_integer() => Ok(value.as_i64().map(|index| index.to_string())),
        Some(value) if value.as_str().is_none() => {
            Err(args.error(i, "a string path or an integer index", &value))
        }
        _ => args.text(i),
    }
}

fn default_arg(args: &Args, i: usize) -> Value {
    if args.supplied(i) {
        args.raw(i)
    } else {
        Value::from("unknown")
    }
}

/// `count_by(items, attribute=none, default="unknown")`: key -> count.
pub(crate) fn count_by(raw: Rest<ValueOrKwargs>) -> Result<Value, Error> {
    let args = Args::bind("count_by", &["items", "attribute", "default"], 1, raw)?;
    let attribute = attribute_arg(&args, 1)?;
    let default = default_arg(&args, 2);
    let mut counts: IndexMap<Value, usize> = IndexMap::new();
    for item in args.items(0)? {
        *counts
            .entry(group_key(&item, attribute.as_deref(), &default))
            .or_default() += 1;
    }
    Ok(Value::from_pairs(counts))
}

/// `group_by(items, attribute=none, default="unknown")`: key -> items.
pub(crate) fn group_by(raw: Rest<ValueOrKwargs>) -> Result<Value, Error> {
    let args = Args::bind("group_by", &["items", "attribute", "default"], 1, raw)?;
    let attribute = attribute_arg(&args, 1)?;
    let default = default_arg(&args, 2);
    let mut groups: IndexMap<Value, Vec<Value>> = IndexMap::new();
    for item in args.items(0)? {
        groups
            .entry(group_key(&item, attribute.as_deref(), &default))
            .or_default()
            .push(item);
    }
    Ok(Value::from_pairs(groups))
}

/// `distinct(items, attribute=none)`: the first item for each key. Items
/// without the attribute share the key `none`.
pub(crate) fn distinct(raw: Rest<ValueOrKwargs>) -> Result<Value, Error> {
    let args = Args::bind("distinct", &["items", "attribute"], 1, raw)?;
    let attribute = attribute_arg(&args, 1)?;
    let mut seen: IndexMap<Value, Value> = IndexMap::new();
    for item in args.items(0)? {
        let key = group_key(&item, attribute.as_deref(), &Value::from(()));
        seen.entry(key).or_insert(item);
    }
    Ok(Value::from(seen.into_values().collect::<Vec<_>>()))
}

#[cfg(test)]
mod tests {
    use super::super::testutil::{error, json, json_lazy};
    use serde_json::json;

    fn findings() -> serde_json::Value {
        json!({"f": [
            {"sev": "LOW", "id": 1, "loc": {"file": "b.tf"}},
            {"sev": "HIGH", "id": 2, "loc": {"file": "a.tf"}},
            {"sev": "LOW", "id": 3},
            {"id": 4, "loc": {"file": "b.tf"}},
        ]})
    }

    #[test]
    fn count_by_keeps_first_appearance_order() {
        assert_eq!(
            json("count_by(f, 'sev')", findings()),
            r#"{"LOW":2,"HIGH":1,"unknown":1}"#
        );
        assert_eq!(
            json_lazy("f|count_by('loc.file', default='?')", findings()),
            r#"{"b.tf":2,"a.tf":1,"?":1}"#
        );
        assert_eq!(
            json("count_by(['b', 'a', 'b'])", json!({})),
            r#"{"b":2,"a":1}"#
        );
        assert_eq!(json("count_by(none, 'x')", json!({})), "{}");
    }

    #[test]
    fn group_by_collects_items() {
        assert_eq!(
            json("keys(group_by(f, 'sev'))", findings()),
            r#"["LOW","HIGH","unknown"]"#
        );
        assert_eq!(
            json(
                "(f|group_by('sev')).LOW|map(attribute='id')|list",
                findings()
            ),
            "[1,3]"
        );
        assert_eq!(
            json_lazy("group_by(f, 'loc.file')['b.tf']|length", findings()),
            "2"
        );
        assert_eq!(json("group_by([], 'x')", json!({})), "{}");
    }

    #[test]
    fn distinct_keeps_first_items() {
        assert_eq!(json("distinct([3, 1, 3, 2, 1])", json!({})), "[3,1,2]");
        assert_eq!(
            json("distinct(f, 'sev')|map(attribute='id')|list", findings()),
            "[1,2,4]"
        );
        assert_eq!(
            json_lazy(
                "distinct(f, attribute='loc.file')|map(attribute='id')|list",
                findings()
            ),
            "[1,2,3]"
        );
        assert_eq!(json("distinct(missing)", json!({})), "[]");
    }

    #[test]
    fn map_keys_group_regardless_of_key_order() {
        // Several keys: indexmap compares a lone entry without hashing.
        let ctx = json!({"xs": [
            {"k": {"a": 1, "b": 2}}, {"k": {"a": 2}}, {"k": {"b": 2, "a": 1}}, {"k": {"a": 3}}
        ]});
        assert_eq!(
            json_lazy("count_by(xs, 'k')|values", ctx.clone()),
            "[2,1,1]"
        );
        assert_eq!(json("distinct(xs, 'k')|length", ctx), "3");
    }

    #[test]
    fn grouping_by_an_index_into_a_list_valued_field() {
        let ctx = json!({"f": [
            {"id": 1, "location": ["a.tf", 3]},
            {"id": 2, "location": ["b.tf", 9]},
            {"id": 3, "location": ["a.tf", 7]},
            {"id": 4, "location": []},
            {"id": 5},
        ]});
        assert_eq!(
            json("count_by(f, 'location.0')", ctx.clone()),
            r#"{"a.tf":2,"b.tf":1,"unknown":2}"#
        );
        assert_eq!(
            json_lazy("count_by(f, 'location.-1', default='?')", ctx.clone()),
            r#"{"3":1,"9":1,"7":1,"?":2}"#
        );
        assert_eq!(
            json_lazy(
                "group_by(f, 'location.0')['a.tf']|map(attribute='id')|list",
                ctx
            ),
            "[1,3]"
        );
    }

    #[test]
    fn grouping_pairs_by_an_integer_index() {
        let ctx = json!({"pairs": [["x", 1], ["y", 2], ["x", 3], ["z"]]});
        assert_eq!(
            json("count_by(pairs, 0)", ctx.clone()),
            r#"{"x":2,"y":1,"z":1}"#
        );
        assert_eq!(
            json_lazy("count_by(pairs, attribute=-1)", ctx.clone()),
            r#"{"1":1,"2":1,"3":1,"z":1}"#
        );
        assert_eq!(
            json("group_by(pairs, 1, default='none')|keys", ctx.clone()),
            r#"[1,2,3,"none"]"#
        );
        assert_eq!(
            json("distinct(pairs, 0)|map('last')|list", ctx),
            r#"[1,2,"z"]"#
        );
    }

    #[test]
    fn errors_name_the_argument() {
        let msg = error("count_by({'a': 1}, 'x')", json!({}));
        assert!(
            msg.contains("count_by(): argument 'items' must be a list, got map"),
            "{msg}"
        );
        let msg = error("group_by([], 5.5)", json!({}));
        assert!(
            msg.contains("group_by(): argument 'attribute' must be a string path or an integer index, got number 5.5"),
            "{msg}"
        );
    }
}
