//! `flatten`: nested lists to a flat list.
//!
//! Tool output is often a list of results each holding a list of findings;
//! `map(attribute='findings')|flatten` turns that into one list to match.

use minijinja::value::{Rest, ValueKind, ValueOrKwargs};
use minijinja::{Error, Value};

use super::args::{Args, is_nothing};

/// `flatten(items, depth=1)`: lists are spliced in up to `depth` levels;
/// `depth=none` flattens fully. Strings and maps are kept whole, and
/// none/undefined inside are kept as items.
pub(crate) fn flatten(raw: Rest<ValueOrKwargs>) -> Result<Value, Error> {
    let args = Args::bind("flatten", &["items", "depth"], 1, raw)?;
    let depth = if args.supplied(1) {
        args.count(1)?
    } else {
        Some(1)
    };
    let mut out = Vec::new();
    for item in args.items(0)? {
        splice(item, depth, &mut out);
    }
    // Documents in, a document list out: later filters then run on the native path
    // (`evidence::fastpath`). Anything else stays a plain list.
    if !out.is_empty()
        && out
            .iter()
            .all(|v| v.downcast_object_ref::<crate::doc::DocObj>().is_some())
    {
        let docs: Vec<crate::doc::Doc> = out.iter().map(crate::doc::Doc::from_value).collect();
        return Ok(crate::doc::Doc::from(docs).to_value());
    }
    Ok(Value::from(out))
}

fn splice(item: Value, depth: Option<usize>, out: &mut Vec<Value>) {
    let is_list = matches!(item.kind(), ValueKind::Seq | ValueKind::Iterable);
    match (is_list && !is_nothing(&item), depth) {
        (true, Some(0)) | (false, _) => out.push(item),
        (true, depth) => {
            let inner = depth.map(|d| d - 1);
            if let Ok(iter) = item.try_iter() {
                for child in iter {
                    splice(child, inner, out);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::{error, json, json_lazy};
    use serde_json::json;

    #[test]
    fn flattens_one_level_by_default() {
        let ctx = json!({"x": [[1, [2]], 3, [], ["ab", {"k": [4]}]]});
        assert_eq!(
            json("flatten(x)", ctx.clone()),
            r#"[1,[2],3,"ab",{"k":[4]}]"#
        );
        assert_eq!(
            json_lazy("x|flatten", ctx.clone()),
            r#"[1,[2],3,"ab",{"k":[4]}]"#
        );
        assert_eq!(
            json("flatten(x, 0)", ctx.clone()),
            r#"[[1,[2]],3,[],["ab",{"k":[4]}]]"#
        );
        assert_eq!(
            json_lazy("flatten(x, depth=none)", ctx),
            r#"[1,2,3,"ab",{"k":[4]}]"#
        );
    }

    #[test]
    fn empty_and_missing() {
        assert_eq!(json("flatten([])", json!({})), "[]");
        assert_eq!(json("flatten(none)", json!({})), "[]");
        assert_eq!(json("flatten([none, [none]])", json!({})), "[null,null]");
    }

    #[test]
    fn rejects_bad_depth() {
        let msg = error("flatten([], 'deep')", json!({}));
        assert!(
            msg.contains(
                "flatten(): argument 'depth' must be a non-negative integer, got string \"deep\""
            ),
            "{msg}"
        );
    }
}
