//! Maps whose keys come from the data: `to_map` (Python's `dict(pairs)` and
//! `{r[key]: r for r in records}`) and `map_values` (`{k: f(v) for k, v in m.items()}`).
//!
//! minijinja's `dict()` only takes literal keyword names, so without these a
//! judge could only build maps with a fixed set of keys.

use indexmap::IndexMap;
use minijinja::value::{Kwargs, Rest, ValueKind, ValueOrKwargs, from_args};
use minijinja::{Error, ErrorKind, State, Value};

use super::args::{Args, describe, is_nothing, map_values as values_of};
use super::path::lookup;

/// `to_map(items, key=none, value=none)`: a map built from `[key, value]`
/// pairs, or from records keyed by the value at the `key` path (each record,
/// or the value at the `value` path, becoming the entry). As Python's `dict`:
/// keys keep the position of their first appearance and the last value wins.
pub(crate) fn to_map(raw: Rest<ValueOrKwargs>) -> Result<Value, Error> {
    let args = Args::bind("to_map", &["items", "key", "value"], 1, raw)?;
    let key_path = args.text(1)?;
    let value_path = args.text(2)?;
    let source = args.raw(0);
    let items = if source.kind() == ValueKind::Map {
        // A map is its own pairs: `to_map(m, value='n')` projects its values.
        source
            .try_iter()
            .map(|keys| {
                keys.map(|k| {
                    let v = source.get_item(&k).unwrap_or(Value::UNDEFINED);
                    Value::from(vec![k, v])
                })
                .collect()
            })
            .unwrap_or_default()
    } else {
        args.items(0)?
    };
    let mut out: IndexMap<Value, Value> = IndexMap::with_capacity(items.len());
    for (index, item) in items.iter().enumerate() {
        let (key, value) = match &key_path {
            Some(path) => (lookup(item, path), item.clone()),
            None if source.kind() == ValueKind::Map || is_pair(item) => (
                item.get_item(&Value::from(0)).unwrap_or_default(),
                item.get_item(&Value::from(1)).unwrap_or_default(),
            ),
            None => {
                return Err(args.fail(format_args!(
                    "item {index} must be a [key, value] pair (or give `key=` to key records by a field), got {}",
                    describe(item)
                )));
            }
        };
        if is_nothing(&key) {
            return Err(args.fail(format_args!(
                "item {index} has no key{}: {}",
                key_path
                    .as_deref()
                    .map(|p| format!(" at '{p}'"))
                    .unwrap_or_default(),
                describe(item)
            )));
        }
        let value = match &value_path {
            Some(path) => lookup(&value, path),
            None => value,
        };
        out.insert(key, value);
    }
    Ok(Value::from_pairs(out))
}

fn is_pair(item: &Value) -> bool {
    item.kind() == ValueKind::Seq && item.len() == Some(2)
}

/// `map_values(map, filter, *args, **kwargs)` or `map_values(map, attribute=path,
/// default=none)`: the same keys, in the same order, each value passed through the
/// named filter (with the given arguments, keyword ones included) or replaced by
/// its value at a dotted path.
pub(super) fn map_values(state: &mut State, raw: Rest<ValueOrKwargs>) -> Result<Value, Error> {
    let argv: Vec<Value> = raw.into_values();
    let (positional, kwargs): (&[Value], Kwargs) = from_args(&argv)?;
    let Some(map) = positional.first() else {
        return Err(Error::new(
            ErrorKind::MissingArgument,
            "map_values() is missing its required argument 'map'",
        ));
    };
    if is_nothing(map) {
        return Ok(Value::from_pairs(Vec::<(Value, Value)>::new()));
    }
    if map.kind() != ValueKind::Map {
        return Err(Error::new(
            ErrorKind::InvalidOperation,
            format!(
                "map_values(): argument 'map' must be a map, got {}",
                describe(map)
            ),
        ));
    }
    let keys: Vec<Value> = map.try_iter()?.collect();
    let values = values_of(map);
    // Without a filter name, `attribute=` projects; with one, every keyword argument
    // belongs to the filter (`map_values('map', attribute='id')`).
    if positional.len() == 1 && kwargs.has("attribute") {
        let path: String = kwargs.get("attribute")?;
        let default: Option<Value> = kwargs.get("default")?;
        kwargs.assert_all_used()?;
        let out = keys.into_iter().zip(values).map(|(k, v)| {
            let found = lookup(&v, &path);
            let found = match (&default, is_nothing(&found)) {
                (Some(d), true) => d.clone(),
                _ => found,
            };
            (k, found)
        });
        return Ok(Value::from_pairs(out.collect::<Vec<_>>()));
    }
    let Some(name) = positional.get(1) else {
        return Err(Error::new(
            ErrorKind::MissingArgument,
            "map_values() needs a filter name or `attribute=`",
        ));
    };
    let Some(name) = name.as_str() else {
        return Err(Error::new(
            ErrorKind::InvalidOperation,
            format!(
                "map_values(): the filter name must be a string, got {}",
                describe(name)
            ),
        ));
    };
    // Every argument after the name goes to the filter, the keyword map included.
    let rest: Vec<Value> = argv.iter().skip(2).cloned().collect();
    let mut out = Vec::with_capacity(keys.len());
    for (k, v) in keys.into_iter().zip(values) {
        let mut call = Vec::with_capacity(rest.len() + 1);
        call.push(v);
        call.extend(rest.iter().cloned());
        out.push((k, apply_filter(state, name, &call)?));
    }
    Ok(Value::from_pairs(out))
}

/// Applies the filter `name`, naming it when it does not exist.
pub(crate) fn apply_filter(state: &mut State, name: &str, args: &[Value]) -> Result<Value, Error> {
    state.apply_filter(name, args).map_err(|e| {
        if e.kind() == ErrorKind::UnknownFilter {
            Error::new(ErrorKind::UnknownFilter, format!("unknown filter `{name}`"))
        } else {
            e
        }
    })
}

#[cfg(test)]
mod tests {
    use super::super::testutil::{error, json};
    use serde_json::json;

    fn engine_json(expr: &str, ctx: serde_json::Value) -> String {
        let env = crate::render::environment();
        let v = env
            .compile_expression(expr)
            .and_then(|e| e.eval(crate::doc::Doc::from_json(&ctx).to_value()))
            .unwrap_or_else(|e| panic!("{expr}: {e:#}"));
        serde_json::to_string(&v).unwrap()
    }

    #[test]
    fn to_map_from_pairs_is_pythons_dict() {
        let ctx = json!({"p": [["b", 1], ["a", 2], ["b", 3]]});
        assert_eq!(json("to_map(p)", ctx.clone()), r#"{"b":3,"a":2}"#);
        assert_eq!(json("to_map([])", ctx.clone()), "{}");
        assert!(error("to_map([1, 2])", ctx).contains("item 0 must be a [key, value] pair"));
    }

    /// A pair is a list of exactly two: a longer list, or a two-key map or two-letter
    /// string, is refused rather than read as a key and a value.
    #[test]
    fn to_map_refuses_what_is_not_exactly_a_pair() {
        let ctx = json!({"m": {"a": 1, "b": 2}});
        for items in ["[['a', 1, 2]]", "[['a']]", "[m]", "['ab']"] {
            let msg = error(&format!("to_map({items})"), ctx.clone());
            assert!(
                msg.contains("item 0 must be a [key, value] pair"),
                "{items}: {msg}"
            );
        }
    }

    #[test]
    fn to_map_keys_records_by_a_field() {
        let ctx = json!({"r": [{"lang": "go", "n": 2}, {"lang": "rs", "n": 5}]});
        assert_eq!(
            json("to_map(r, key='lang', value='n')", ctx.clone()),
            r#"{"go":2,"rs":5}"#
        );
        assert_eq!(
            json(
                "r | to_map('lang') | map_values(attribute='n')",
                ctx.clone()
            ),
            r#"{"go":2,"rs":5}"#
        );
        assert!(error("to_map(r, key='x')", ctx).contains("item 0 has no key at 'x'"));
    }

    /// `default=` stands in for a value missing at the `attribute` path, and only
    /// for a missing one.
    #[test]
    fn map_values_attribute_default_fills_only_missing_values() {
        let ctx = json!({"m": {"a": {"n": 2}, "b": {}, "c": {"n": 0}}});
        assert_eq!(
            engine_json("map_values(m, attribute='n', default=7)", ctx.clone()),
            r#"{"a":2,"b":7,"c":0}"#
        );
        assert_eq!(
            engine_json("map_values(m, attribute='n')", ctx),
            r#"{"a":2,"b":null,"c":0}"#
        );
    }

    /// An unknown filter is named in the error; any other error of the filter comes
    /// through as the filter gave it.
    #[test]
    fn map_values_names_an_unknown_filter_and_passes_other_errors_through() {
        let env = crate::render::environment();
        let ctx = crate::doc::Doc::from_json(&json!({"m": {"a": [1]}})).to_value();
        let fail = |expr: &str| match env.compile_expression(expr).unwrap().eval(&ctx) {
            Ok(v) => panic!("expected an error from {expr}, got {v:?}"),
            Err(e) => (e.kind(), format!("{e:#}")),
        };
        let (kind, msg) = fail("map_values(m, 'no_such_filter')");
        assert_eq!(kind, minijinja::ErrorKind::UnknownFilter);
        assert!(msg.contains("unknown filter `no_such_filter`"), "{msg}");
        let (kind, msg) = fail("map_values(m, 'first', 1, 2)");
        assert_ne!(kind, minijinja::ErrorKind::UnknownFilter, "{msg}");
        assert!(!msg.contains("unknown filter"), "{msg}");
    }

    #[test]
    fn map_values_applies_a_filter_with_its_keyword_arguments() {
        let ctx = json!({"m": {"x": [3, 1, 2], "y": []}});
        assert_eq!(
            engine_json("m | map_values('length')", ctx.clone()),
            r#"{"x":3,"y":0}"#
        );
        assert_eq!(
            engine_json("map_values(m, 'sort_by', reverse=true)", ctx.clone()),
            r#"{"x":[3,2,1],"y":[]}"#
        );
        assert_eq!(engine_json("map_values(none, 'length')", ctx), "{}");
        let ctx = json!({"m": {"h": [{"id": 1}, {"id": 2}]}});
        assert_eq!(
            engine_json(
                "m | map_values('map', attribute='id') | map_values('list')",
                ctx
            ),
            r#"{"h":[1,2]}"#
        );
    }
}
