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

/// `zip(*lists)`: Python's `zip`, as a list of lists, as long as the shortest
/// list (a missing list counts as empty).
pub(crate) fn zip(raw: Rest<ValueOrKwargs>) -> Result<Value, Error> {
    let values = raw.into_values();
    if values.last().is_some_and(Value::is_kwargs) {
        return Err(Error::new(
            minijinja::ErrorKind::TooManyArguments,
            "zip() takes no keyword arguments",
        ));
    }
    let mut lists = Vec::with_capacity(values.len());
    for (i, v) in values.iter().enumerate() {
        if is_nothing(v) {
            lists.push(Vec::new());
            continue;
        }
        match v.kind() {
            ValueKind::Seq | ValueKind::Iterable => {
                lists.push(v.try_iter().map(Iterator::collect).unwrap_or_default())
            }
            _ => {
                return Err(Error::new(
                    minijinja::ErrorKind::InvalidOperation,
                    format!(
                        "zip(): argument {i} must be a list, got {}",
                        super::args::describe(v)
                    ),
                ));
            }
        }
    }
    let len = lists.iter().map(Vec::len).min().unwrap_or(0);
    Ok(Value::from(
        (0..len)
            .map(|n| Value::from(lists.iter().map(|l| l[n].clone()).collect::<Vec<_>>()))
            .collect::<Vec<_>>(),
    ))
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

/// `tag(items, label)`: each item paired with `label`, as `[label, item]`, so a record
/// list over the pairs still knows where each item came from (e.g. its repo). Same
/// result as `([label] * (items | length)) | zip(items)`, built natively.
pub(crate) fn tag(raw: Rest<ValueOrKwargs>) -> Result<Value, Error> {
    let args = Args::bind("tag", &["items", "label"], 2, raw)?;
    let label = crate::doc::Doc::from_value(&args.raw(1));
    let pairs: Vec<crate::doc::Doc> = args
        .items(0)?
        .iter()
        .map(|item| crate::doc::Doc::from(vec![label.clone(), crate::doc::Doc::from_value(item)]))
        .collect();
    Ok(crate::doc::Doc::from(pairs).to_value())
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

    /// Kind of list `expr` gives with `x` bound to `docs`: the native document list
    /// (`DocSeq`) or a plain one.
    fn is_document_list(expr: &str, docs: &serde_json::Value) -> bool {
        let env = super::super::testutil::env();
        let x = crate::doc::Doc::from_json(docs).to_value();
        let v = env
            .compile_expression(expr)
            .unwrap_or_else(|e| panic!("compile {expr}: {e:#}"))
            .eval(minijinja::context! { x })
            .unwrap_or_else(|e| panic!("eval {expr}: {e:#}"));
        v.downcast_object_ref::<crate::doc::DocSeq>().is_some()
    }

    /// Only a list made wholly of documents becomes a document list (so the filters
    /// after it run on the native path); one plain value in it, or nothing at all,
    /// keeps it a plain list, whose items keep their own kinds.
    #[test]
    fn only_all_document_results_become_a_document_list() {
        let docs = json!([[{"id": 1}], [{"id": 2}, {"id": 3}]]);
        assert!(is_document_list("flatten(x)", &docs));
        assert!(is_document_list("x|flatten", &docs));
        assert!(!is_document_list("flatten([x[0], [1]])", &docs));
        assert!(!is_document_list("flatten([[1], ['a']])", &docs));
        assert!(!is_document_list("flatten([])", &docs));
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

#[cfg(test)]
mod tag_tests {
    #[test]
    fn tag_pairs_items_with_a_label() {
        let env = crate::render::environment();
        let v = env
            .compile_expression("tag([{'id': 1}, {'id': 2}], 'r') | map(attribute='1.id') | list")
            .unwrap()
            .eval(())
            .unwrap();
        assert_eq!(crate::doc::Doc::from_value(&v).to_string(), "[1,2]");
        let ctx = minijinja::context! { xs => vec![1, 2, 3] };
        let eval = |e: &str| {
            let v = env.compile_expression(e).unwrap().eval(&ctx).unwrap();
            crate::doc::Doc::from_value(&v).to_string()
        };
        assert_eq!(
            eval("tag(xs, 'r')"),
            eval("(['r'] * (xs | length)) | zip(xs) | list")
        );
        let empty = env
            .compile_expression("tag(none, 'r') | length")
            .unwrap()
            .eval(())
            .unwrap();
        assert_eq!(empty.as_i64(), Some(0));
    }
}
