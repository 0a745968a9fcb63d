//! Reading values: `get`, `coalesce`, `keys`, `values`.
//!
//! minijinja 3 has no `keys`/`values` filters (only `items` and `dictsort`),
//! and `x.a.b` fails loudly on a missing step in strict mode, so judges need
//! a forgiving dotted-path `get` for optional fields of tool output.

use minijinja::value::{Rest, ValueKind, ValueOrKwargs};
use minijinja::{Error, Value};

use super::args::{Args, is_nothing, map_values};
use super::path::lookup;

/// `get(obj, path, default=none)`: the value at a dotted path, or `default`
/// when a step is missing or the value found is `none`.
pub(crate) fn get(raw: Rest<ValueOrKwargs>) -> Result<Value, Error> {
    let args = Args::bind("get", &["obj", "path", "default"], 2, raw)?;
    let path = args.raw(1);
    let found = if let Some(text) = path.as_str() {
        lookup(&args.raw(0), text)
    } else if path.is_integer() {
        lookup(&args.raw(0), &path.to_string())
    } else {
        return Err(args.error(1, "a dotted path string such as \"a.b.0\"", &path));
    };
    Ok(if is_nothing(&found) {
        args.present(2).unwrap_or(Value::from(()))
    } else {
        found
    })
}

/// `coalesce(a, b, ...)`: the first argument that is neither none nor
/// undefined; `none` when there is none.
pub(crate) fn coalesce(raw: Rest<ValueOrKwargs>) -> Result<Value, Error> {
    let mut values = raw.into_values();
    if values.last().is_some_and(Value::is_kwargs) {
        return Err(Error::new(
            minijinja::ErrorKind::TooManyArguments,
            "coalesce() takes no keyword arguments",
        ));
    }
    let position = values.iter().position(|v| !is_nothing(v));
    Ok(position.map_or(Value::from(()), |i| values.swap_remove(i)))
}

/// `keys(map)`: the keys in the map's own order; `none` gives `[]`.
pub(crate) fn keys(raw: Rest<ValueOrKwargs>) -> Result<Value, Error> {
    let args = Args::bind("keys", &["map"], 1, raw)?;
    let map = map_arg(&args)?;
    Ok(Value::from(match map {
        Some(map) => map.try_iter().map(Iterator::collect).unwrap_or_default(),
        None => Vec::new(),
    }))
}

/// `values(map)`: the values in the map's own key order; `none` gives `[]`.
pub(crate) fn values(raw: Rest<ValueOrKwargs>) -> Result<Value, Error> {
    let args = Args::bind("values", &["map"], 1, raw)?;
    let map = map_arg(&args)?;
    Ok(Value::from(match map {
        Some(map) => map_values(&map),
        None => Vec::new(),
    }))
}

fn map_arg(args: &Args) -> Result<Option<Value>, Error> {
    match args.present(0) {
        None => Ok(None),
        Some(map) if map.kind() == ValueKind::Map => Ok(Some(map)),
        Some(other) => Err(args.error(0, "a map", &other)),
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::{error, json, json_lazy};
    use serde_json::json;

    fn doc() -> serde_json::Value {
        json!({"doc": {"a": {"b": [{"c": 1}, {"c": 2, "n": null}]}, "0": "zero", "z": 1, "y": 2}})
    }

    #[test]
    fn get_follows_dotted_paths_into_lists() {
        assert_eq!(json("get(doc, 'a.b.1.c')", doc()), "2");
        assert_eq!(json("get(doc, 'a.b.-1.c')", doc()), "2");
        assert_eq!(json_lazy("get(doc, 'a.b.0.c')", doc()), "1");
        assert_eq!(json_lazy("doc|get('a.b.1.c')", doc()), "2");
    }

    #[test]
    fn get_prefers_string_keys_that_look_like_numbers() {
        assert_eq!(json("get(doc, '0')", doc()), "\"zero\"");
        assert_eq!(json_lazy("get(doc, '0')", doc()), "\"zero\"");
    }

    #[test]
    fn get_gives_default_for_missing_and_null() {
        assert_eq!(json("get(doc, 'a.x.y')", doc()), "null");
        assert_eq!(json("get(doc, 'a.b.9.c', 'd')", doc()), "\"d\"");
        assert_eq!(json("get(doc, 'a.b.1.n', default=0)", doc()), "0");
        assert_eq!(json("get(nothing, 'a', 5)", doc()), "5");
        assert_eq!(json("get(doc, '')|length", doc()), "4");
    }

    #[test]
    fn get_rejects_a_non_path() {
        let msg = error("get(doc, [1])", doc());
        assert!(
            msg.contains("get(): argument 'path' must be a dotted path"),
            "{msg}"
        );
        assert!(msg.contains("got sequence [1]"), "{msg}");
    }

    #[test]
    fn coalesce_skips_none_and_undefined() {
        assert_eq!(json("coalesce(none, missing, 0, 3)", json!({})), "0");
        assert_eq!(json("coalesce(none, missing)", json!({})), "null");
        assert_eq!(json("coalesce()", json!({})), "null");
        assert_eq!(json("missing|coalesce('x')", json!({})), "\"x\"");
        assert!(error("coalesce(1, x=2)", json!({})).contains("no keyword"));
    }

    #[test]
    fn keys_and_values_keep_document_order() {
        let ctx = json!({"m": {"z": 1, "a": 2, "m": 3}});
        assert_eq!(json("keys(m)", ctx.clone()), r#"["z","a","m"]"#);
        assert_eq!(json("m|values", ctx.clone()), "[1,2,3]");
        assert_eq!(json_lazy("keys(m)", ctx.clone()), r#"["z","a","m"]"#);
        assert_eq!(json_lazy("values(m)", ctx), "[1,2,3]");
        assert_eq!(json("keys(none)", json!({})), "[]");
        assert_eq!(json("values(missing)", json!({})), "[]");
        let msg = error("keys([1])", json!({}));
        assert!(
            msg.contains("keys(): argument 'map' must be a map"),
            "{msg}"
        );
    }
}
