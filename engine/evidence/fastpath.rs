//! Native versions of the filters judges run over every finding: `selectattr`,
//! `rejectattr`, `select`, `reject`, `map(attribute=...)`, `unique` and `list`, for lists
//! that are JSON documents.
//!
//! minijinja's own filters convert each item to a value, build an argument vector and
//! call the test through dynamic dispatch: fine for tens of items, slow for millions.
//! Here a `Doc` list is walked directly and the result stays a `Doc` list, so a chain of
//! filters stays on the fast path. Anything these do not decide exactly as minijinja
//! would (other tests, mixed types, undefined operands, plain minijinja lists) goes to
//! minijinja's own filter, so results never differ; a test checks both give the same.

use std::borrow::Cow;
use std::cmp::Ordering;

use minijinja::value::{Kwargs, Rest, Value, ValueKind, ValueOrKwargs, from_args};
use minijinja::{Error, State, filters};

use crate::doc::{Doc, DocSeq, KeyCache};

/// Registers the overrides on `env` (after minijinja's built-ins).
pub(crate) fn register(env: &mut minijinja::Environment<'_>) {
    env.add_filter("selectattr", selectattr);
    env.add_filter("rejectattr", rejectattr);
    env.add_filter("select", select);
    env.add_filter("reject", reject);
    env.add_filter("map", map);
    env.add_filter("unique", unique);
    env.add_filter("list", list);
}

fn doc_list(value: &Value) -> Option<std::sync::Arc<DocSeq>> {
    value.downcast_object::<DocSeq>()
}

/// A test's argument, converted once per filter call: a document, or the items of a
/// list that is not one (a concatenation such as `ids + aliases`, a list an expression
/// built), kept as minijinja values and compared without converting each (converting
/// a string allocates).
enum Arg {
    Doc(Doc),
    Items(Vec<Value>),
}

impl Arg {
    fn of(value: &Value) -> Arg {
        let is_doc = value.downcast_object_ref::<DocSeq>().is_some()
            || value.downcast_object_ref::<crate::doc::DocObj>().is_some();
        match value.kind() {
            minijinja::value::ValueKind::Seq if !is_doc => match value.try_iter() {
                Ok(items) => Arg::Items(items.collect()),
                Err(_) => Arg::Doc(Doc::from_value(value)),
            },
            _ => Arg::Doc(Doc::from_value(value)),
        }
    }
}

/// Decides `test(field, arg)` natively; `None` when minijinja must decide.
fn native_test(test: Option<&str>, field: Option<&Doc>, args: &[Arg]) -> Option<bool> {
    match (test, field) {
        (None, None) => Some(false),
        (None, Some(d)) => Some(truthy(d)),
        (Some("defined"), f) if args.is_empty() => Some(f.is_some()),
        (Some("undefined"), f) if args.is_empty() => Some(f.is_none()),
        (_, None) => None,
        (Some("none"), Some(d)) if args.is_empty() => Some(d.is_null()),
        (Some("true"), Some(d)) if args.is_empty() => Some(matches!(d, Doc::Bool(true))),
        (Some("false"), Some(d)) if args.is_empty() => Some(matches!(d, Doc::Bool(false))),
        (Some("number"), Some(d)) if args.is_empty() => {
            Some(matches!(d, Doc::Int(_) | Doc::Float(_)))
        }
        (Some("string"), Some(d)) if args.is_empty() => Some(matches!(d, Doc::Str(_))),
        (Some("mapping"), Some(d)) if args.is_empty() => Some(matches!(d, Doc::Object(_))),
        (Some("in"), Some(d)) if args.len() == 1 => match &args[0] {
            Arg::Doc(Doc::Array(items)) => any_same(items.iter(), |x| same(d, x)),
            Arg::Items(items) => any_same(items.iter(), |x| same_value(d, x)),
            Arg::Doc(_) => None,
        },
        (Some(name), Some(d)) if args.len() == 1 => {
            let Arg::Doc(arg) = &args[0] else {
                return None;
            };
            match name {
                "equalto" | "eq" | "==" => same(d, arg),
                "ne" | "!=" => same(d, arg).map(|b| !b),
                "lt" | "lessthan" | "<" => order(d, arg).map(|o| o == Ordering::Less),
                "le" | "<=" => order(d, arg).map(|o| o != Ordering::Greater),
                "gt" | "greaterthan" | ">" => order(d, arg).map(|o| o == Ordering::Greater),
                "ge" | ">=" => order(d, arg).map(|o| o != Ordering::Less),
                _ => None,
            }
        }
        _ => None,
    }
}

/// Whether any item is equal; `None` as soon as one cannot be compared natively.
fn any_same<T>(
    items: impl Iterator<Item = T>,
    mut eq: impl FnMut(T) -> Option<bool>,
) -> Option<bool> {
    for x in items {
        if eq(x)? {
            return Some(true);
        }
    }
    Some(false)
}

/// [`same`] against a minijinja value, without converting strings.
fn same_value(d: &Doc, v: &Value) -> Option<bool> {
    match v.kind() {
        minijinja::value::ValueKind::String => match d {
            Doc::Str(s) => Some(s.as_str() == v.as_str()?),
            _ => None,
        },
        minijinja::value::ValueKind::Number
        | minijinja::value::ValueKind::Bool
        | minijinja::value::ValueKind::None => same(d, &Doc::from_value(v)),
        _ => None,
    }
}

fn truthy(d: &Doc) -> bool {
    match d {
        Doc::Null => false,
        Doc::Bool(b) => *b,
        Doc::Int(i) => *i != 0,
        Doc::Float(f) => *f != 0.0,
        Doc::Str(s) => !s.is_empty(),
        Doc::Array(a) => !a.is_empty(),
        Doc::Object(o) => !o.is_empty(),
    }
}

/// Equality for values of one kind (numbers count as one kind); `None` across kinds.
fn same(a: &Doc, b: &Doc) -> Option<bool> {
    match (a, b) {
        (Doc::Int(x), Doc::Int(y)) => Some(x == y),
        (Doc::Int(_) | Doc::Float(_), Doc::Int(_) | Doc::Float(_)) => Some(num(a)? == num(b)?),
        (Doc::Str(x), Doc::Str(y)) => Some(x == y),
        (Doc::Bool(x), Doc::Bool(y)) => Some(x == y),
        (Doc::Null, Doc::Null) => Some(true),
        _ => None,
    }
}

/// Ordering for two numbers or two strings; `None` otherwise.
fn order(a: &Doc, b: &Doc) -> Option<Ordering> {
    match (a, b) {
        (Doc::Int(x), Doc::Int(y)) => Some(x.cmp(y)),
        (Doc::Int(_) | Doc::Float(_), Doc::Int(_) | Doc::Float(_)) => num(a)?.partial_cmp(&num(b)?),
        (Doc::Str(x), Doc::Str(y)) => Some(x.cmp(y)),
        _ => None,
    }
}

fn num(d: &Doc) -> Option<f64> {
    match d {
        Doc::Int(i) => Some(*i as f64),
        Doc::Float(f) => Some(*f),
        _ => None,
    }
}

/// A dotted path over documents, as minijinja's `get_path` reads it, split once per
/// filter call and read from every item of a list: each segment keeps a [`KeyCache`],
/// so the same member of items of one shape is found without scanning their keys.
struct Path<'s> {
    segs: Vec<Seg<'s>>,
}

struct Seg<'s> {
    name: &'s str,
    /// The segment as an array index, when it is one.
    index: Option<usize>,
    cache: KeyCache,
}

impl<'s> Path<'s> {
    fn new(attr: &'s str) -> Path<'s> {
        Path {
            segs: attr
                .split('.')
                .map(|name| Seg {
                    name,
                    index: name.parse().ok(),
                    cache: KeyCache::default(),
                })
                .collect(),
        }
    }

    fn get<'a>(&mut self, d: &'a Doc) -> Option<&'a Doc> {
        let mut cur = d;
        for seg in &mut self.segs {
            cur = match cur {
                Doc::Object(map) => map.get_cached(seg.name, &mut seg.cache)?,
                Doc::Array(items) => items.get(seg.index?)?,
                _ => return None,
            };
        }
        Some(cur)
    }
}

fn select_native(
    items: &DocSeq,
    attr: &str,
    test: Option<&str>,
    args: &[Value],
    invert: bool,
) -> Option<Value> {
    let args: Vec<Arg> = args.iter().map(Arg::of).collect();
    let args = args.as_slice();
    let mut path = Path::new(attr);
    let mut out = Vec::new();
    for item in items.iter() {
        if !matches!(item, Doc::Object(_)) {
            return None;
        }
        if native_test(test, path.get(item), args)? != invert {
            out.push(item.clone());
        }
    }
    // A kept selection may live as long as the run (evidence): give back what doubling
    // over-allocated.
    if out.capacity() > out.len() + out.len() / 8 {
        out.shrink_to_fit();
    }
    Some(Doc::from(out).to_value())
}

/// `select`/`reject` over the items themselves; `None` when minijinja must decide.
fn select_items_native(
    items: &DocSeq,
    test: Option<&str>,
    args: &[Value],
    invert: bool,
) -> Option<Value> {
    let args: Vec<Arg> = args.iter().map(Arg::of).collect();
    let mut out = Vec::new();
    for item in items.iter() {
        if native_test(test, Some(item), &args)? != invert {
            out.push(item.clone());
        }
    }
    Some(Doc::from(out).to_value())
}

/// `select`: native over document lists, else minijinja's.
pub(crate) fn select(
    state: &mut State,
    value: Value,
    test_name: Option<Cow<'_, str>>,
    args: Rest<ValueOrKwargs>,
) -> Result<Value, Error> {
    select_items(state, value, test_name, args, false)
}

/// `reject`: native over document lists, else minijinja's.
pub(crate) fn reject(
    state: &mut State,
    value: Value,
    test_name: Option<Cow<'_, str>>,
    args: Rest<ValueOrKwargs>,
) -> Result<Value, Error> {
    select_items(state, value, test_name, args, true)
}

fn select_items(
    state: &mut State,
    value: Value,
    test_name: Option<Cow<'_, str>>,
    args: Rest<ValueOrKwargs>,
    invert: bool,
) -> Result<Value, Error> {
    let argv = values(args);
    if let Some(items) = doc_list(&value)
        && let Some(v) = select_items_native(&items, test_name.as_deref(), &argv, invert)
    {
        return Ok(v);
    }
    let fallback = if invert {
        filters::reject
    } else {
        filters::select
    };
    fallback(state, value, test_name, rest(argv)).map(Value::from)
}

/// `unique` of a document list of strings (without `attribute`): the first of each,
/// compared lower-cased unless `case_sensitive=true`, as minijinja compares them. Other
/// lists go to minijinja's.
pub(crate) fn unique(state: &State, value: Value, kwargs: Kwargs) -> Result<Value, Error> {
    if let Some(items) = doc_list(&value)
        && !kwargs.has("attribute")
        && let Ok(case_sensitive) = kwargs.get::<Option<bool>>("case_sensitive")
        && kwargs.assert_all_used().is_ok()
        && let Some(out) = unique_strings(&items, case_sensitive.unwrap_or(false))
    {
        return Ok(Doc::from(out).to_value());
    }
    filters::unique(state, value, kwargs)
}

fn unique_strings(items: &DocSeq, case_sensitive: bool) -> Option<Vec<Doc>> {
    let mut seen: std::collections::HashSet<Cow<'_, str>, foldhash::fast::RandomState> =
        std::collections::HashSet::default();
    let mut out = Vec::new();
    for item in items.iter() {
        let Doc::Str(s) = item else { return None };
        // Lower-casing changes nothing in ASCII text without capitals; anything else
        // goes through `to_lowercase`, as minijinja's does (titlecase letters too).
        let unchanged = s.is_ascii() && !s.bytes().any(|b| b.is_ascii_uppercase());
        let key = if case_sensitive || unchanged {
            Cow::Borrowed(s.as_str())
        } else {
            Cow::Owned(s.to_lowercase())
        };
        if seen.insert(key) {
            out.push(item.clone());
        }
    }
    Some(out)
}

fn values(args: Rest<ValueOrKwargs>) -> Vec<Value> {
    args.into_values()
}

/// `selectattr`: native over document lists, else minijinja's.
pub(crate) fn selectattr(
    state: &mut State,
    value: Value,
    attr: Cow<'_, str>,
    test_name: Option<Cow<'_, str>>,
    args: Rest<ValueOrKwargs>,
) -> Result<Value, Error> {
    select_attr(state, value, attr, test_name, args, false)
}

/// `rejectattr`: native over document lists, else minijinja's.
pub(crate) fn rejectattr(
    state: &mut State,
    value: Value,
    attr: Cow<'_, str>,
    test_name: Option<Cow<'_, str>>,
    args: Rest<ValueOrKwargs>,
) -> Result<Value, Error> {
    select_attr(state, value, attr, test_name, args, true)
}

fn select_attr(
    state: &mut State,
    value: Value,
    attr: Cow<'_, str>,
    test_name: Option<Cow<'_, str>>,
    args: Rest<ValueOrKwargs>,
    invert: bool,
) -> Result<Value, Error> {
    let argv = values(args);
    if let Some(items) = doc_list(&value) {
        if !invert
            && matches!(test_name.as_deref(), Some("equalto" | "eq" | "=="))
            && let [arg] = argv.as_slice()
            && let Some(key) = arg.as_str().filter(|_| arg.kind() == ValueKind::String)
            && let Some(v) = lookup::select_equal(&items, &attr, key)
        {
            return Ok(v);
        }
        if let Some(v) = select_native(&items, &attr, test_name.as_deref(), &argv, invert) {
            return Ok(v);
        }
    }
    let fallback = if invert {
        filters::rejectattr
    } else {
        filters::selectattr
    };
    fallback(state, value, attr, test_name, rest(argv)).map(Value::from)
}

/// `list | selectattr(attr, 'equalto', text)` repeated over the same list, as a record
/// list does when each record looks up "its" item of another list (`scans |
/// selectattr('repo', 'equalto', repo) | first`): a scan per record makes that quadratic
/// in the number of repos. The first call on a list builds an index from the attribute's
/// text to the items' positions, and later calls on that very list (the same shared
/// allocation) read it. Only lists whose every item has the attribute as a string are
/// indexed: anywhere else the plain filter decides, exactly as before.
mod lookup {
    use std::cell::RefCell;
    use std::collections::HashMap;
    use std::sync::Arc;

    use minijinja::value::Value;

    use super::Path;
    use crate::doc::{Doc, DocSeq, Str};

    /// Lists shorter than this are scanned: building an index would not pay.
    const INDEX_FROM: usize = 64;

    struct Index {
        /// Held, so its address cannot be reused by another list while cached.
        list: Arc<DocSeq>,
        attr: String,
        /// `None` when the list cannot be indexed (an item without a string attribute).
        positions: Option<HashMap<Str, Vec<u32>, foldhash::fast::RandomState>>,
    }

    thread_local! {
        /// The index of the list last looked up on this thread.
        static LAST: RefCell<Option<Index>> = const { RefCell::new(None) };
    }

    /// The items whose `attr` equals `key`, as a document list; `None` when the list is
    /// not indexable (the caller then filters as usual).
    pub(super) fn select_equal(items: &Arc<DocSeq>, attr: &str, key: &str) -> Option<Value> {
        if items.len() < INDEX_FROM || items.len() > u32::MAX as usize {
            return None;
        }
        LAST.with(|last| {
            let mut last = last.try_borrow_mut().ok()?;
            let cached = last
                .as_ref()
                .is_some_and(|ix| Arc::ptr_eq(&ix.list, items) && ix.attr == attr);
            if !cached {
                *last = Some(Index {
                    list: items.clone(),
                    attr: attr.to_owned(),
                    positions: build(items, attr),
                });
            }
            let positions = last.as_ref()?.positions.as_ref()?;
            let hits: Vec<Doc> = positions
                .get(key)
                .map(|at| at.iter().map(|&i| items[i as usize].clone()).collect())
                .unwrap_or_default();
            Some(Doc::from(hits).to_value())
        })
    }

    /// The index this thread holds: its list's length, its attribute and whether the
    /// list could be indexed (tests only).
    #[cfg(test)]
    pub(super) fn held() -> Option<(usize, String, bool)> {
        LAST.with(|l| {
            l.borrow()
                .as_ref()
                .map(|ix| (ix.list.len(), ix.attr.clone(), ix.positions.is_some()))
        })
    }

    /// Drops this thread's index (tests only).
    #[cfg(test)]
    pub(super) fn forget() {
        LAST.with(|l| *l.borrow_mut() = None);
    }

    fn build(
        items: &DocSeq,
        attr: &str,
    ) -> Option<HashMap<Str, Vec<u32>, foldhash::fast::RandomState>> {
        let mut path = Path::new(attr);
        let mut positions: HashMap<Str, Vec<u32>, foldhash::fast::RandomState> = HashMap::default();
        for (i, item) in items.iter().enumerate() {
            if !matches!(item, Doc::Object(_)) {
                return None;
            }
            let Some(Doc::Str(s)) = path.get(item) else {
                return None;
            };
            positions.entry(s.clone()).or_default().push(i as u32);
        }
        Some(positions)
    }
}

/// `map(attribute='a.b')` without a default: native over document lists when every item
/// has the attribute (a missing one reads as undefined, which documents cannot hold).
pub(crate) fn map(
    state: &mut State,
    value: Value,
    args: Rest<ValueOrKwargs>,
) -> Result<Value, Error> {
    let argv = values(args);
    if let Some(items) = doc_list(&value)
        && let Ok((positional, kwargs)) = from_args::<(&[Value], Kwargs)>(&argv)
        && positional.is_empty()
        && !kwargs.has("default")
        && let Ok(Some(attr)) = kwargs.get::<Option<String>>("attribute")
    {
        let mut out = Vec::with_capacity(items.len());
        let mut complete = true;
        let mut path = Path::new(&attr);
        for item in items.iter() {
            match path.get(item) {
                Some(v) => out.push(v.clone()),
                None => {
                    complete = false;
                    break;
                }
            }
        }
        if complete {
            return Ok(Doc::from(out).to_value());
        }
    }
    // Filter mapping: minijinja's `map` drops keyword arguments (`map('sort_by', 'x',
    // reverse=true)` would silently sort ascending), so every argument after the filter
    // name, the keyword map included, is passed on here.
    if let Ok((positional, kwargs)) = from_args::<(&[Value], Kwargs)>(&argv)
        && !kwargs.has("attribute")
        && let Some(name) = positional.first().and_then(Value::as_str)
    {
        let rest: Vec<Value> = argv.iter().skip(1).cloned().collect();
        let mut out = Vec::new();
        if value.is_undefined() {
            return Ok(Value::from(Vec::<Value>::new()));
        }
        for item in value.try_iter()? {
            let mut call = Vec::with_capacity(rest.len() + 1);
            call.push(item);
            call.extend(rest.iter().cloned());
            out.push(crate::evidence::builtins::apply_filter(state, name, &call)?);
        }
        return Ok(Value::from(out));
    }
    filters::map(state, value, rest(argv)).map(Value::from)
}

/// `list`: a document list already is one.
pub(crate) fn list(state: &State, value: Value) -> Result<Value, Error> {
    if doc_list(&value).is_some() {
        return Ok(value);
    }
    filters::list(state, value)
}

fn rest(values: Vec<Value>) -> Rest<ValueOrKwargs> {
    Rest(values.into_iter().map(ValueOrKwargs::from).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every expression gives the same JSON with and without the overrides.
    #[test]
    fn native_filters_agree_with_minijinja() {
        let data: Doc = serde_json::from_str(
            r#"{"xs": [
                {"s": "HIGH", "c": 7.5, "n": 1, "t": true, "m": {"k": "a"}},
                {"s": "LOW", "c": 2, "n": 0, "t": false, "m": {"k": "b"}},
                {"s": "HIGH", "c": null, "n": 3, "m": {"k": "a"}},
                {"s": "MEDIUM", "c": 9, "n": -1, "t": true, "m": {}},
                {"s": 5, "c": "7.0", "n": 2.5, "t": null}
            ], "ids": ["HIGH", "LOW"],
            "words": ["a", "B", "b", "A", "", "Straße", "STRASSE", "straße", "İ", "i̇", "ǅ", "ǆ", "x"]}"#,
        )
        .unwrap();
        let exprs = [
            "xs | selectattr('s', 'equalto', 'HIGH') | list",
            "xs | selectattr('c', 'number') | selectattr('c', 'ge', 7.0) | list",
            "xs | selectattr('c', 'ge', 7.0) | list",
            "xs | rejectattr('s', 'in', ids) | list",
            "xs | selectattr('s', 'in', ids) | list",
            "xs | selectattr('t') | list",
            "xs | rejectattr('t') | list",
            "xs | selectattr('t', 'defined') | list",
            "xs | selectattr('c', 'none') | list",
            "xs | selectattr('m.k', 'equalto', 'a') | list",
            "xs | selectattr('n', 'lt', 1) | list",
            "xs | selectattr('n', 'ne', 0) | list",
            "xs | map(attribute='s') | list",
            "xs | map(attribute='t') | list",
            "xs | map(attribute='t', default='x') | list",
            "xs | map(attribute='m.k') | list",
            "xs | selectattr('s', 'string') | map(attribute='n') | sum",
            "xs | list | length",
            "xs | map(attribute='t') | select | list",
            "xs | map(attribute='t') | reject | list",
            "xs | map(attribute='n') | select('gt', 0) | list",
            "xs | map(attribute='s') | select('in', ids) | list",
            "xs | map(attribute='s') | reject('in', ids) | list",
            "xs | map(attribute='s') | select('string') | list",
            "xs | map(attribute='s') | select('startingwith', 'H') | list",
            "xs | map(attribute='m') | select | list",
            "words | unique | list",
            "words | unique(case_sensitive=true) | list",
            "xs | map(attribute='s') | unique | list",
            "xs | unique(attribute='s') | list",
            "words | select | unique | list",
            "xs | map(attribute='s') | select('in', ids + ['MEDIUM']) | list",
            "xs | map(attribute='s') | reject('in', ids + words) | list",
            "xs | map(attribute='n') | select('in', [1, 2.5, 'x'] + [3]) | list",
            "xs | map(attribute='n') | select('in', [1, 2.5] + [3.0]) | list",
            "xs | selectattr('s', 'in', ids + ['MEDIUM']) | list",
            "xs | selectattr('t', 'in', [true] + [none]) | list",
            // A list literal is a plain minijinja list (`a + b` above is minijinja's lazy
            // concatenation, read as a document): its items are compared one by one, and
            // natively only while every pair is of one kind (a number against a string
            // sends the whole filter to minijinja), hence the `string` selections.
            "xs | selectattr('s', 'string') | map(attribute='s') | select('in', ['HIGH', 'MEDIUM']) | list",
            "xs | selectattr('s', 'string') | map(attribute='s') | reject('in', ['LOW']) | list",
            "xs | selectattr('s', 'string') | selectattr('s', 'in', ['LOW', 'x']) | list",
            "xs | map(attribute='s') | reject('in', ['LOW', 5]) | list",
            "xs | selectattr('n', 'in', [1, 2.5, none]) | list",
            "xs | selectattr('t', 'in', [false]) | list",
            "long | selectattr('id', 'equalto', 'r3') | list",
            "long | selectattr('id', 'equalto', 'r3') | map(attribute='n') | list",
            "long | selectattr('id', 'eq', 'r39') | first",
            "long | selectattr('id', '==', 'absent') | list",
            "long | selectattr('id', 'equalto', 3) | list",
            "long | selectattr('n', 'equalto', 'r3') | list",
            "mixed | selectattr('id', 'equalto', 'r3') | list",
            "long | rejectattr('id', 'equalto', 'r3') | list | length",
        ];
        let mut data = data;
        if let Doc::Object(m) = &data {
            let mut pairs: Vec<(String, Doc)> =
                m.iter().map(|(k, v)| (k.to_string(), v.clone())).collect();
            // Long enough to be indexed: some ids repeat, one item lacks `id` in `mixed`.
            let long: Vec<Doc> = (0..100)
                .map(|i| {
                    Doc::object([
                        ("id", Doc::from(format!("r{}", i % 40))),
                        ("n", Doc::Int(i)),
                    ])
                })
                .collect();
            let mut mixed = long.clone();
            mixed.push(Doc::object([("n", Doc::Int(-1))]));
            pairs.push(("long".into(), Doc::from(long)));
            pairs.push(("mixed".into(), Doc::from(mixed)));
            data = Doc::object(pairs);
        }
        let fast = crate::render::environment();
        let mut slow = minijinja::Environment::new();
        crate::evidence::builtins::register(&mut slow);
        for e in exprs {
            let a = fast
                .compile_expression(e)
                .unwrap()
                .eval(data.to_value())
                .map(|v| Doc::from_value(&v).to_string());
            let b = slow
                .compile_expression(e)
                .unwrap()
                .eval(data.to_value())
                .map(|v| Doc::from_value(&v).to_string());
            assert_eq!(
                a.as_ref().map_err(|e| e.kind()),
                b.as_ref().map_err(|e| e.kind()),
                "{e}"
            );
        }
    }

    /// Every case the native filters decide stays a document list (so a chain of filters
    /// stays on the fast path) and gives what minijinja's own filter gives.
    #[test]
    fn native_cases_stay_document_lists_and_agree_with_minijinja() {
        let rows: Doc = serde_json::from_str(
            r#"{"rows": [
                {"s": "HIGH", "c": 7.5, "n": 1, "t": true, "m": {"k": "a"}, "z": null, "u": null, "a": [1]},
                {"s": "LOW", "c": 2, "n": 0, "t": false, "m": {"k": "b"}, "z": 1, "u": null, "a": [2, 3]},
                {"s": "high", "c": 9, "n": 2, "t": true, "m": {}, "z": null, "u": null, "a": [1]}
            ], "ids": ["HIGH", "x"]}"#,
        )
        .unwrap();
        let mut tests: Vec<String> = [
            "'t'",
            "'missing'",
            "'t', 'defined'",
            "'missing', 'undefined'",
            "'z', 'none'",
            "'t', 'true'",
            "'t', 'false'",
            "'c', 'number'",
            "'s', 'string'",
            "'m', 'mapping'",
            "'s', 'in', ids",
            "'s', 'in', ids + ['LOW']",
            "'c', 'ge', 7.0",
            "'s', 'lt', 'M'",
            "'s', 'equalto', 'LOW'",
            "'t', 'equalto', true",
            "'u', 'equalto', none",
            "'c', 'equalto', 2.0",
            "'a.0', 'equalto', 1",
        ]
        .into_iter()
        .map(str::to_owned)
        .collect();
        for op in [
            "equalto",
            "eq",
            "==",
            "ne",
            "!=",
            "lt",
            "lessthan",
            "<",
            "le",
            "<=",
            "gt",
            "greaterthan",
            ">",
            "ge",
            ">=",
        ] {
            tests.push(format!("'n', '{op}', 1"));
        }
        let mut exprs: Vec<String> = Vec::new();
        for t in &tests {
            exprs.push(format!("rows | selectattr({t})"));
            exprs.push(format!("rows | rejectattr({t})"));
        }
        for tail in [
            "select",
            "reject",
            "select('gt', 0)",
            "reject('lt', 1)",
            "select('in', [1, 2])",
            "select('in', [1] + [2])",
            "select('number')",
        ] {
            exprs.push(format!("rows | map(attribute='n') | {tail}"));
        }
        exprs.extend(
            [
                "rows | map(attribute='s') | unique",
                "rows | map(attribute='s') | unique(case_sensitive=true)",
                "rows | map(attribute='c') | list",
                "rows | map(attribute='s') | list",
                "rows | list",
            ]
            .map(str::to_owned),
        );
        let fast = crate::render::environment();
        let mut slow = minijinja::Environment::new();
        crate::evidence::builtins::register(&mut slow);
        for e in &exprs {
            let a = fast
                .compile_expression(e)
                .unwrap()
                .eval(rows.to_value())
                .unwrap();
            assert!(a.downcast_object_ref::<DocSeq>().is_some(), "{e}: {a:?}");
            let b = slow
                .compile_expression(e)
                .unwrap()
                .eval(rows.to_value())
                .unwrap();
            assert_eq!(Doc::from_value(&a), Doc::from_value(&b), "{e}");
        }
    }

    /// Evaluates `e` over `data` with the overrides and with minijinja's own filters,
    /// each as JSON or the error's kind.
    fn both_ways(data: &Doc, e: &str) -> [Result<String, minijinja::ErrorKind>; 2] {
        let fast = crate::render::environment();
        let mut slow = minijinja::Environment::new();
        crate::evidence::builtins::register(&mut slow);
        [&fast, &slow].map(|env| {
            env.compile_expression(e)
                .unwrap()
                .eval(data.to_value())
                .map(|v| Doc::from_value(&v).to_string())
                .map_err(|e| e.kind())
        })
    }

    /// Edge cases the native tests must decide as minijinja does: tests given the
    /// wrong number of arguments (minijinja's error), integers past 2^53 (compared
    /// exactly, not as floats), numbers of both kinds, and the truth of empty lists and
    /// of `0.0`.
    #[test]
    fn edge_cases_agree_with_minijinja() {
        let data: Doc = serde_json::from_str(
            r#"{"xs": [{"t": true, "c": 2, "b": 9007199254740993}, {"t": false, "c": 2.5, "b": 9007199254740992}],
                "vals": [[], [1], 0.0, 1.5, {}, ""],
                "big": [9007199254740993, 9007199254740992]}"#,
        )
        .unwrap();
        let mut exprs: Vec<String> = Vec::new();
        for test in [
            "defined",
            "undefined",
            "none",
            "true",
            "false",
            "number",
            "string",
            "mapping",
        ] {
            exprs.push(format!("xs | selectattr('t', '{test}', 1) | list"));
            exprs.push(format!(
                "xs | map(attribute='t') | select('{test}', 1) | list"
            ));
        }
        exprs.extend(
            [
                "xs | selectattr('t', 'in') | list",
                "xs | selectattr('t', 'in', [true], 1) | list",
                "xs | selectattr('c', 'equalto', 2, 3) | list",
                "xs | selectattr('c', 'equalto', 2.0) | list",
                "xs | selectattr('c', 'lt', 2.5) | list",
                "xs | selectattr('t', 'equalto', false) | list",
                "xs | selectattr('b', 'equalto', 9007199254740992) | list",
                "xs | selectattr('b', 'lt', 9007199254740993) | list",
                "xs | selectattr('b', 'gt', 9007199254740992) | list",
                "big | select('equalto', 9007199254740992) | list",
                "big | select('lt', 9007199254740993) | list",
                "big | select('in', [9007199254740992] + []) | list",
                "vals | select | list",
                "vals | reject | list",
            ]
            .map(str::to_owned),
        );
        for e in &exprs {
            let [fast, slow] = both_ways(&data, e);
            assert_eq!(fast, slow, "{e}");
        }
    }

    /// `map` with a filter name passes every other argument on, keyword ones included
    /// (minijinja's own drops them), and maps nothing over an undefined value.
    #[test]
    fn map_by_filter_name_passes_keyword_arguments() {
        let env = crate::render::environment();
        let eval = |e: &str| {
            env.compile_expression(e)
                .unwrap()
                .eval(minijinja::context! {})
                .map(|v| v.to_string())
        };
        assert_eq!(
            eval("[[3, 1, 2]] | map('sort', reverse=true) | list").unwrap(),
            "[[3, 2, 1]]"
        );
        assert_eq!(
            eval("['a', 'b'] | map('upper') | list").unwrap(),
            "['A', 'B']"
        );
        assert_eq!(eval("nothing | map('upper') | list").unwrap(), "[]");
    }

    /// `selectattr(attr, 'equalto', text)` on a list of 64 items or more indexes the list
    /// once by that attribute (a list with an item lacking it is not indexable); shorter
    /// lists, and other tests, are scanned.
    #[test]
    fn long_lists_are_indexed_once_per_list_and_attribute() {
        let env = crate::render::environment();
        let row = |i: usize| {
            Doc::object([
                ("id", Doc::from(format!("r{}", i % 10))),
                ("k", Doc::from(format!("k{i}"))),
            ])
        };
        let list = |n: usize| Doc::from((0..n).map(row).collect::<Vec<_>>());
        let mut mixed: Vec<Doc> = (0..80).map(row).collect();
        mixed.push(Doc::object([("k", Doc::from("k"))]));
        let data = Doc::object([
            ("long", list(64)),
            ("short", list(63)),
            ("other", list(70)),
            ("mixed", Doc::from(mixed)),
        ]);
        let last = lookup::held;
        let run = |e: &str| {
            let v = env
                .compile_expression(e)
                .unwrap()
                .eval(data.to_value())
                .unwrap();
            Doc::from_value(&v).to_string()
        };
        lookup::forget();
        run("short | selectattr('id', 'equalto', 'r3') | list");
        assert_eq!(last(), None);
        assert_eq!(
            run("long | selectattr('id', 'equalto', 'r3') | map(attribute='k') | join(',')"),
            r#""k3,k13,k23,k33,k43,k53,k63""#
        );
        assert_eq!(last(), Some((64, "id".to_owned(), true)));
        // Another attribute of the same list, then another list: each indexed anew.
        assert_eq!(
            run("long | selectattr('k', 'equalto', 'k5') | map(attribute='id') | join"),
            r#""r5""#
        );
        assert_eq!(last(), Some((64, "k".to_owned(), true)));
        assert_eq!(
            run("other | selectattr('k', 'equalto', 'k65') | map(attribute='id') | join"),
            r#""r5""#
        );
        assert_eq!(last(), Some((70, "k".to_owned(), true)));
        assert_eq!(
            run("mixed | selectattr('id', 'equalto', 'r1') | length"),
            "8"
        );
        assert_eq!(last(), Some((81, "id".to_owned(), false)));
    }
}
