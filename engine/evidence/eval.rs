//! Computes a judge's evidence: each name in order, each seeing the run context and every
//! earlier name.

use indexmap::IndexMap;
use minijinja::value::Value;
use minijinja::{Environment, Expression, Template};

use crate::doc::Doc;
use crate::evidence::compiled::Expr;
use crate::evidence::operators::bounded_template;
use crate::evidence::plan::{RecordsPlan, ValuePlan, is_empty};
use crate::evidence::scope::NameStack;

/// Evidence: named values in definition order.
pub(crate) type Evidence = IndexMap<String, Doc>;

pub(crate) use crate::evidence::error::{ErrorKind, EvalError};

/// The names every expression can read, plus the JSONPath root they form.
#[derive(Clone, Debug)]
pub(crate) struct Context {
    /// Name -> document (`results`, `truth`, `repos`, `suite`, `inputs`, and in per-repo
    /// scope `repo`, `id`, `result`).
    pub names: IndexMap<String, Doc>,
}

impl Context {
    /// The context as a JSONPath root, with the evidence computed so far.
    pub(crate) fn root_with(&self, evidence: &Evidence) -> Doc {
        Doc::object(
            self.names
                .iter()
                .chain(evidence.iter())
                .map(|(k, v)| (k.as_str(), v.clone())),
        )
    }

    fn scope(&self) -> NameStack {
        NameStack::new().with_names(
            self.names
                .iter()
                .map(|(k, v)| (k.clone(), v.to_value()))
                .collect(),
        )
    }
}

/// Whether an evidence name is private (`_name`): computed and readable by expressions,
/// but left out of the result document and of the evidence a prompt shows.
pub(crate) fn is_private(name: &str) -> bool {
    name.starts_with('_')
}

/// The names heuristics, assertions and prompts see: the run context and every
/// evidence value.
pub(crate) fn full_scope(ctx: &Context, evidence: &Evidence) -> Value {
    ctx.scope()
        .with_names(
            evidence
                .iter()
                .map(|(k, v)| (k.clone(), v.to_value()))
                .collect(),
        )
        .into_value()
}

/// Evaluates a condition or value expression in `scope` (tests compare the compiled
/// forms with it).
#[cfg(test)]
pub(crate) fn eval_expr(
    env: &Environment<'static>,
    src: &str,
    scope: &Value,
) -> Result<Value, EvalError> {
    env.compile_expression(&crate::evidence::operators::bounded_expression(src))
        .and_then(|e| e.eval(scope))
        .map_err(|e| EvalError::from_minijinja(&e))
}

/// Renders a text field: a template when it has `<< >>` or `<% %>` parts, else as is.
pub(crate) fn render_text(
    env: &Environment<'static>,
    text: &str,
    scope: &Value,
) -> Result<String, EvalError> {
    if !(text.contains("<<") || text.contains("<%")) {
        return Ok(text.to_owned());
    }
    env.template_from_str(&bounded_template(text))
        .and_then(|t| crate::evidence::limits::render(&t, scope))
        .map_err(|e| EvalError::from_minijinja(&e))
}

/// Watches an evaluation: every expression with the names it is evaluated with, every
/// selector with what it found, every record list with its items. `caldera validate`
/// uses it to find, on a suite's own inputs, field paths and selectors that never match.
pub(crate) trait Probe: Sync {
    /// The expression or template `source` at `path` is evaluated with `scope`.
    fn expression(&self, path: &str, source: &str, scope: &Value);
    /// The selector at `path` gave `found`.
    fn selected(&self, path: &str, found: &Doc);
    /// The selector `sel` at `path` gave `found` in `root` (so a probe can tell how far
    /// it got, and a `null` it matched from nothing).
    fn selected_in(
        &self,
        path: &str,
        sel: &crate::evidence::select::Selector,
        root: &Doc,
        found: &Doc,
    ) {
        let _ = (sel, root);
        self.selected(path, found);
    }
    /// The record list at `path` goes over `items`.
    fn records(&self, path: &str, rec: &RecordsPlan, items: &[Doc]);
    /// The expression or template `source` at `path` is not evaluated for `item`, which
    /// the record list's `where` dropped (`scope` is the item's): its reads of the item
    /// can still be checked against the item's shape.
    fn filtered_out(&self, path: &str, source: &str, item: &Doc, scope: &Value) {
        let _ = (path, source, item, scope);
    }
}

/// Tells `probe` about a value about to be computed with `scope` (expressions and the
/// conditions of conditional values).
fn observe_before(probe: Option<&dyn Probe>, plan: &ValuePlan, path: &str, scope: &Value) {
    let Some(probe) = probe else { return };
    match plan {
        ValuePlan::Expr(e) => probe.expression(path, e.source(), scope),
        ValuePlan::Template(src) => probe.expression(path, src, scope),
        ValuePlan::Conditional(c) => {
            if let Some(cond) = &c.condition {
                probe.expression(&format!("{path}.if"), cond.source(), scope);
            }
            observe_before(Some(probe), &c.value, &format!("{path}.value"), scope);
        }
        _ => {}
    }
}

/// Tells `probe` what a selector found.
fn observe_after(probe: Option<&dyn Probe>, plan: &ValuePlan, path: &str, found: Option<&Doc>) {
    let Some(probe) = probe else { return };
    match plan {
        ValuePlan::Select(_) => probe.selected(path, found.unwrap_or(&Doc::Null)),
        ValuePlan::Conditional(c) if found.is_some() => {
            observe_after(Some(probe), &c.value, &format!("{path}.value"), found);
        }
        _ => {}
    }
}

/// Evaluates `plan` in `ctx`.
pub(crate) fn evaluate(
    env: &Environment<'static>,
    plan: &[(String, ValuePlan)],
    ctx: &Context,
) -> Result<Evidence, EvalError> {
    evaluate_probed(env, plan, ctx, None)
}

/// Evaluates `plan` in `ctx`, telling `probe` what it evaluates.
pub(crate) fn evaluate_probed(
    env: &Environment<'static>,
    plan: &[(String, ValuePlan)],
    ctx: &Context,
    probe: Option<&dyn Probe>,
) -> Result<Evidence, EvalError> {
    let mut evidence = Evidence::new();
    let base = ctx.scope();
    // Phase timings for `CALDERA_PROFILE=1` (the CLI's logger turns the level on).
    let profile = log::log_enabled!(target: "caldera::profile", log::Level::Debug);
    for (name, value) in plan {
        let started = std::time::Instant::now();
        let path = format!("evidence.{name}");
        let scope = base.clone().with_names(
            evidence
                .iter()
                .map(|(k, v)| (k.clone(), v.to_value()))
                .collect(),
        );
        let computed = compute(env, value, ctx, &evidence, &scope, &path, probe)?;
        if profile {
            log::debug!(
                target: "caldera::profile",
                "{path}: {:.1} ms",
                started.elapsed().as_secs_f64() * 1e3
            );
        }
        if let Some(computed) = computed {
            evidence.insert(name.clone(), computed);
        }
    }
    Ok(evidence)
}

/// Computes one evidence value; `None` when a conditional value is left out.
fn compute(
    env: &Environment<'static>,
    value: &ValuePlan,
    ctx: &Context,
    evidence: &Evidence,
    scope: &NameStack,
    path: &str,
    probe: Option<&dyn Probe>,
) -> Result<Option<Doc>, EvalError> {
    Ok(Some(match value {
        ValuePlan::Select(sel) => {
            let root = ctx.root_with(evidence);
            let found = sel.select(&root).map_err(|e| e.at(path))?;
            if let Some(probe) = probe {
                probe.selected_in(path, sel, &root, &found);
            }
            found
        }
        ValuePlan::Records(rec) => {
            let at = ListAt {
                path,
                probe,
                budget: &NestedBudget::default(),
                nested: false,
            };
            eval_records(env, rec, scope, &ctx.root_with(evidence), &at)?
        }
        ValuePlan::Conditional(c) => {
            if let (Some(probe), Some(cond)) = (probe, &c.condition) {
                probe.expression(
                    &format!("{path}.if"),
                    cond.source(),
                    &scope.clone().into_value(),
                );
            }
            if let Some(cond) = &c.condition {
                let holds = cond
                    .eval(&scope.clone().into_value())
                    .map_err(|e| e.at(format!("{path}.if")))?;
                if !holds.is_true() {
                    return Ok(None);
                }
            }
            let inner = compute(
                env,
                &c.value,
                ctx,
                evidence,
                scope,
                &format!("{path}.value"),
                probe,
            )?;
            return Ok(inner.filter(|d| !(c.omit_empty && is_empty(d))));
        }
        other => {
            let compiled = Compiled::new(env, other, path)?;
            let scope = scope.clone().into_value();
            observe_before(probe, other, path, &scope);
            compiled.eval(&scope, &Doc::Null, path, None)?
        }
    }))
}

/// A value plan ready to evaluate for every item of a block: its expressions as compiled
/// at load, its template compiled here (once per evaluation block, so record lists do not
/// recompile per item).
enum Compiled<'env> {
    Select(&'env crate::evidence::select::Selector),
    Expr(&'env Expression<'static, 'static>),
    Template(Template<'env, 'env>),
    /// A template with `~` or `+`, rewritten to the bounded operators: the rewritten
    /// text belongs to no plan, so it is compiled again for each evaluation.
    Bounded(&'env Environment<'static>, String),
    Const(Doc),
    /// A record list nested in a record's fields, evaluated per item of the outer list.
    Records {
        env: &'env Environment<'static>,
        plan: &'env RecordsPlan,
        outer: Option<&'env Nesting<'env>>,
    },
    Conditional {
        condition: Option<&'env Expression<'static, 'static>>,
        omit_empty: bool,
        value: Box<Compiled<'env>>,
    },
}

impl<'env> Compiled<'env> {
    fn new(
        env: &'env Environment<'static>,
        plan: &'env ValuePlan,
        path: &str,
    ) -> Result<Compiled<'env>, EvalError> {
        Compiled::in_list(env, plan, path, None)
    }

    /// Like [`Compiled::new`], for a field of a record list: a nested list is
    /// evaluated with `outer`'s budget and probe.
    fn in_list(
        env: &'env Environment<'static>,
        plan: &'env ValuePlan,
        path: &str,
        outer: Option<&'env Nesting<'env>>,
    ) -> Result<Compiled<'env>, EvalError> {
        let err = |e: EvalError| e.at(path);
        // An expression that did not compile at load fails here, before any item, as it
        // would if it were compiled here.
        let expr = |e: &'env Expr| e.compiled().map_err(|m| err(m.clone()));
        Ok(match plan {
            ValuePlan::Select(s) => Compiled::Select(s),
            ValuePlan::Expr(e) => Compiled::Expr(expr(e)?),
            ValuePlan::Template(src) => match bounded_template(src) {
                std::borrow::Cow::Borrowed(_) => Compiled::Template(
                    env.template_from_str(src)
                        .map_err(|e| err(EvalError::from_minijinja(&e)))?,
                ),
                std::borrow::Cow::Owned(bounded) => {
                    env.template_from_str(&bounded)
                        .map_err(|e| err(EvalError::from_minijinja(&e)))?;
                    Compiled::Bounded(env, bounded)
                }
            },
            ValuePlan::Const(d) => Compiled::Const(d.clone()),
            ValuePlan::Records(plan) => Compiled::Records { env, plan, outer },
            ValuePlan::Conditional(c) => Compiled::Conditional {
                condition: c.condition.as_ref().map(expr).transpose()?,
                omit_empty: c.omit_empty,
                value: Box::new(Compiled::in_list(env, &c.value, path, outer)?),
            },
        })
    }

    /// Like [`Compiled::eval`], but a conditional value may be left out (`None`).
    fn eval_opt(
        &self,
        scope: &Value,
        root: &Doc,
        path: &str,
        item: Option<&str>,
    ) -> Result<Option<Doc>, EvalError> {
        let Compiled::Conditional {
            condition,
            omit_empty,
            value,
        } = self
        else {
            return self.eval(scope, root, path, item).map(Some);
        };
        if let Some(c) = condition {
            let holds = c.eval(scope).map_err(|e| {
                EvalError::from_minijinja(&e)
                    .at(format!("{path}.if"))
                    .for_item(item)
            })?;
            if !holds.is_true() {
                return Ok(None);
            }
        }
        let v = value.eval_opt(scope, root, path, item)?;
        Ok(v.filter(|d| !(*omit_empty && is_empty(d))))
    }

    fn eval(
        &self,
        scope: &Value,
        root: &Doc,
        path: &str,
        item: Option<&str>,
    ) -> Result<Doc, EvalError> {
        let err = |e: EvalError| e.at(path).for_item(item);
        let mj = |e: minijinja::Error| err(EvalError::from_minijinja(&e));
        match self {
            Compiled::Select(s) => s.select(root).map_err(err),
            Compiled::Expr(e) => e.eval(scope).map(|v| Doc::from_value(&v)).map_err(mj),
            Compiled::Template(t) => crate::evidence::limits::render(t, scope)
                .map(Doc::from)
                .map_err(mj),
            Compiled::Bounded(env, src) => env
                .template_from_str(src)
                .and_then(|t| crate::evidence::limits::render(&t, scope))
                .map(Doc::from)
                .map_err(mj),
            Compiled::Const(d) => Ok(d.clone()),
            Compiled::Records { env, plan, outer } => {
                let Some(outer) = outer else {
                    return Err(err(EvalError::new(
                        ErrorKind::Shape,
                        "a record list is nested only in a record's fields",
                    )));
                };
                // `$` is the outer item; `outer` names it inside, over the outer scope.
                let scope = NameStack::new()
                    .with(scope.clone())
                    .with_names(std::iter::once(("outer".to_owned(), root.to_value())).collect());
                let at = ListAt {
                    path,
                    probe: outer.probe,
                    budget: outer.budget,
                    nested: true,
                };
                eval_records(env, plan, &scope, root, &at)
            }
            Compiled::Conditional { .. } => self
                .eval_opt(scope, root, path, item)
                .map(Option::unwrap_or_default),
        }
    }
}

/// A short label for an item in error messages: its `id`/`repo` field, else its index.
pub(crate) fn item_label(item: &Doc, index: usize) -> String {
    ["id", "repo", "name"]
        .iter()
        .find_map(|k| item.field(k).and_then(Doc::as_str).map(str::to_owned))
        .unwrap_or_else(|| format!("#{index}"))
}

/// Where a record list is evaluated: its key path, the probe watching, and the budget
/// its nested lists share.
struct ListAt<'a> {
    path: &'a str,
    probe: Option<&'a dyn Probe>,
    budget: &'a NestedBudget,
    /// Inside another list's fields: its items count against the budget.
    nested: bool,
}

/// The records that nested lists under one evidence name have computed: a list per
/// item of a list multiplies, so their total is bounded (a top-level list is bounded by
/// its input, and stays unbounded so large inputs still run).
#[derive(Default)]
struct NestedBudget(std::sync::atomic::AtomicUsize);

impl NestedBudget {
    /// Counts `n` more items, or the error once the total passes the bound.
    fn take(&self, n: usize, path: &str) -> Result<(), EvalError> {
        use crate::evidence::limits::MAX_NESTED_RECORDS;
        let before = self.0.fetch_add(n, std::sync::atomic::Ordering::Relaxed);
        if before.saturating_add(n) <= MAX_NESTED_RECORDS {
            return Ok(());
        }
        Err(EvalError {
            kind: ErrorKind::Budget,
            key_path: path.to_owned(),
            item: None,
            message: format!(
                "nested record lists would go over more than {MAX_NESTED_RECORDS} items under one evidence name; narrow their `for_each` or `where`"
            ),
        })
    }
}

/// What a nested list takes from the list around it.
struct Nesting<'a> {
    probe: Option<&'a dyn Probe>,
    budget: &'a NestedBudget,
}

fn eval_records(
    env: &Environment<'static>,
    rec: &RecordsPlan,
    scope: &NameStack,
    root: &Doc,
    at: &ListAt<'_>,
) -> Result<Doc, EvalError> {
    let (path, probe) = (at.path, at.probe);
    let for_each_path = format!("{path}.for_each");
    let items = match &rec.for_each {
        ValuePlan::Select(sel) => {
            let items = sel.matches(root).map_err(|e| e.at(&for_each_path))?;
            if let Some(probe) = probe {
                probe.selected_in(&for_each_path, sel, root, &Doc::from(items.clone()));
            }
            items
        }
        other => {
            let compiled = Compiled::new(env, other, &for_each_path)?;
            let scope = scope.clone().into_value();
            observe_before(probe, other, &for_each_path, &scope);
            match compiled.eval(&scope, root, &for_each_path, None)? {
                Doc::Array(items) => items.0.clone(),
                Doc::Null => Vec::new(),
                got => {
                    return Err(EvalError::new(
                        ErrorKind::Shape,
                        format!("for_each must give a list, got {}", got.type_name()),
                    )
                    .at(for_each_path));
                }
            }
        }
    };
    if at.nested {
        at.budget.take(items.len(), path)?;
    }
    if let Some(probe) = probe {
        probe.records(path, rec, &items);
    }
    let filter_path = format!("{path}.where");
    // Large lists are split over the cores; each worker compiles its own templates
    // (cheap) and the records come back in item order. A probed evaluation stays on one
    // thread, so what it reports comes in item order.
    let workers = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(items.len() / PARALLEL_MIN_ITEMS)
        .max(1);
    // A list reading `loop.prevrecord` needs each record before the next: one thread.
    if workers == 1 || probe.is_some() || reads_prevrecord(rec) {
        let at = ItemsAt {
            path,
            filter_path: &filter_path,
            probe,
            budget: at.budget,
        };
        let entries = eval_items(env, rec, scope, &items, 0..items.len(), &at)?;
        return assemble(rec, entries, path);
    }
    let chunk = items.len().div_ceil(workers);
    let parts: Vec<Result<Vec<Entry>, EvalError>> = std::thread::scope(|s| {
        let items = &items;
        let handles: Vec<_> = (0..items.len())
            .step_by(chunk)
            .map(|start| {
                let filter_path = &filter_path;
                let budget = at.budget;
                let range = start..(start + chunk).min(items.len());
                s.spawn(move || {
                    let at = ItemsAt {
                        path,
                        filter_path,
                        probe: None,
                        budget,
                    };
                    eval_items(env, rec, scope, items, range, &at)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join().unwrap_or_else(|_| {
                    Err(EvalError::new(
                        ErrorKind::Other,
                        "a worker evaluating this record list failed",
                    )
                    .at(path))
                })
            })
            .collect()
    });
    let mut out = Vec::with_capacity(items.len());
    for part in parts {
        out.extend(part?);
    }
    assemble(rec, out, path)
}

/// One computed item of a record list: its key (when the list is a map), its value
/// (the record, or `value:`), and a label for messages.
struct Entry {
    key: Option<crate::doc::Str>,
    value: Doc,
    label: String,
}

/// The list of values, or with `key:` the map of them (two items with one key are an
/// error: a map that silently kept one of them would hide the other from the score).
fn assemble(rec: &RecordsPlan, entries: Vec<Entry>, path: &str) -> Result<Doc, EvalError> {
    if rec.key.is_none() {
        return Ok(Doc::from(
            entries.into_iter().map(|e| e.value).collect::<Vec<_>>(),
        ));
    }
    let mut map: IndexMap<crate::doc::Str, (Doc, String)> = IndexMap::with_capacity(entries.len());
    for e in entries {
        let key = e.key.unwrap_or_else(|| crate::doc::Str::from(""));
        if let Some((_, first)) = map.get(&key) {
            return Err(EvalError {
                kind: ErrorKind::Shape,
                key_path: format!("{path}.key"),
                item: Some(e.label.clone()),
                message: format!(
                    "two items have the key `{key}` (items {first} and {}); keys of a map must be unique",
                    e.label
                ),
            });
        }
        map.insert(key, (e.value, e.label));
    }
    Ok(Doc::object(map.into_iter().map(|(k, (v, _))| (k, v))))
}

/// A map key from a computed value: a string, or an integer written as one.
fn entry_key(value: Doc, path: &str, label: &str) -> Result<crate::doc::Str, EvalError> {
    match value {
        Doc::Str(s) => Ok(s),
        Doc::Int(i) => Ok(crate::doc::Str::from(i.to_string())),
        other => Err(EvalError {
            kind: ErrorKind::Shape,
            key_path: path.to_owned(),
            item: Some(label.to_owned()),
            message: format!(
                "a map key must be a string or an integer, got {} ({other})",
                other.type_name()
            ),
        }),
    }
}

/// Record lists shorter than this are evaluated on one thread.
const PARALLEL_MIN_ITEMS: usize = 32;

/// The fields computed so far for the current item: one layer, filled in place, so a
/// record of n fields costs n insertions rather than n scope rebuilds.
#[derive(Debug, Default)]
struct FieldsLayer(std::sync::Mutex<IndexMap<crate::doc::Str, Value>>);

impl minijinja::value::Object for FieldsLayer {
    fn get_value(self: &std::sync::Arc<Self>, key: &Value) -> Option<Value> {
        let name = key.as_str()?;
        self.0.lock().ok()?.get(name).cloned()
    }
    fn enumerate(self: &std::sync::Arc<Self>) -> minijinja::value::Enumerator {
        let keys = self
            .0
            .lock()
            .map(|m| m.keys().map(|k| Value::from(k.as_str())).collect())
            .unwrap_or_default();
        minijinja::value::Enumerator::Values(keys)
    }
}

/// The `loop` name inside a record list, as in a Jinja `for` loop: the position of the
/// item among the items of `for_each` (before `where`) and its neighbours. Assertions
/// over `for_each` items see the same object. In a record list, `loop.prevrecord` is the
/// record computed for the previous kept item (running totals), `none` for the first.
#[derive(Debug)]
pub(crate) struct LoopInfo {
    index0: usize,
    length: usize,
    previtem: Doc,
    nextitem: Doc,
    /// `None` outside record lists, where there are no computed records.
    prevrecord: Option<Doc>,
}

impl LoopInfo {
    /// `loop` for the item at `index0` of `all`.
    pub(crate) fn value(index0: usize, all: &[Doc]) -> Value {
        Value::from_object(LoopInfo::at(index0, all))
    }

    /// `loop` for the item at `index0` of `all` in a record list, whose previous kept
    /// item's record was `prevrecord`.
    fn in_records(index0: usize, all: &[Doc], prevrecord: Doc) -> Value {
        Value::from_object(LoopInfo {
            prevrecord: Some(prevrecord),
            ..LoopInfo::at(index0, all)
        })
    }

    fn at(index0: usize, all: &[Doc]) -> LoopInfo {
        LoopInfo {
            index0,
            length: all.len(),
            previtem: index0
                .checked_sub(1)
                .and_then(|p| all.get(p))
                .cloned()
                .unwrap_or_default(),
            nextitem: all.get(index0 + 1).cloned().unwrap_or_default(),
            prevrecord: None,
        }
    }
}

/// The fields of `loop` for every item; a record list's also has `prevrecord` (the
/// loader checks a judge's reads of `loop` against these).
pub(crate) const LOOP_ITEM_FIELDS: &[&str] = &[
    "index0",
    "index",
    "revindex0",
    "revindex",
    "first",
    "last",
    "length",
    "previtem",
    "nextitem",
];

impl minijinja::value::Object for LoopInfo {
    fn get_value(self: &std::sync::Arc<Self>, key: &Value) -> Option<Value> {
        Some(match key.as_str()? {
            "index0" => Value::from(self.index0),
            "index" => Value::from(self.index0 + 1),
            "revindex0" => Value::from(self.length - self.index0 - 1),
            "revindex" => Value::from(self.length - self.index0),
            "first" => Value::from(self.index0 == 0),
            "last" => Value::from(self.index0 + 1 == self.length),
            "length" => Value::from(self.length),
            "previtem" => self.previtem.to_value(),
            "nextitem" => self.nextitem.to_value(),
            "prevrecord" => self.prevrecord.as_ref()?.to_value(),
            _ => return None,
        })
    }
    fn enumerate(self: &std::sync::Arc<Self>) -> minijinja::value::Enumerator {
        match self.prevrecord {
            None => minijinja::value::Enumerator::Str(LOOP_ITEM_FIELDS),
            Some(_) => minijinja::value::Enumerator::Iter(Box::new(
                LOOP_ITEM_FIELDS
                    .iter()
                    .chain(&["prevrecord"])
                    .map(|n| Value::from(*n))
                    .collect::<Vec<_>>()
                    .into_iter(),
            )),
        }
    }
}

/// Whether any expression of the record list reads the name `word` (so `loop` is only
/// built for the lists that use it).
fn mentions(rec: &RecordsPlan, word: &str) -> bool {
    any_source(rec, &|s: &str| {
        s.match_indices(word).any(|(at, _)| {
            let before = s[..at].chars().next_back();
            let after = s[at + word.len()..].chars().next();
            !before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '.')
                && !after.is_some_and(|c| c.is_alphanumeric() || c == '_')
        })
    })
}

/// Whether the record list may read `loop.prevrecord` (a plain text search: a false
/// positive only costs the list its threads).
fn reads_prevrecord(rec: &RecordsPlan) -> bool {
    any_source(rec, &|s: &str| s.contains("prevrecord"))
}

/// Whether `has` holds for the source of any expression or template of the list's own
/// fields, `where`, `key` or `value`.
fn any_source(rec: &RecordsPlan, has: &dyn Fn(&str) -> bool) -> bool {
    fn any_text(p: &ValuePlan, has: &dyn Fn(&str) -> bool) -> bool {
        match p {
            ValuePlan::Expr(e) => has(e.source()),
            ValuePlan::Template(s) => has(s),
            ValuePlan::Conditional(c) => {
                c.condition.as_ref().is_some_and(|e| has(e.source())) || any_text(&c.value, has)
            }
            _ => false,
        }
    }
    let text = |p: &ValuePlan| any_text(p, has);
    rec.fields.iter().any(|(_, p)| text(p))
        || rec.filter.as_ref().is_some_and(|e| has(e.source()))
        || rec.key.as_ref().is_some_and(text)
        || rec.value.as_ref().is_some_and(text)
}

/// Where a record list's items are evaluated: its key paths, and the probe watching.
struct ItemsAt<'a> {
    path: &'a str,
    filter_path: &'a str,
    probe: Option<&'a dyn Probe>,
    budget: &'a NestedBudget,
}

/// Evaluates the items `range` of `all` into entries.
fn eval_items(
    env: &Environment<'static>,
    rec: &RecordsPlan,
    scope: &NameStack,
    all: &[Doc],
    range: std::ops::Range<usize>,
    at: &ItemsAt<'_>,
) -> Result<Vec<Entry>, EvalError> {
    let (path, filter_path, probe) = (at.path, at.filter_path, at.probe);
    let offset = range.start;
    let items = &all[range];
    let uses_loop = mentions(rec, "loop");
    let loop_key = crate::doc::Str::from("loop");
    let filter = rec
        .filter
        .as_ref()
        .map(|f| f.compiled().map_err(|e| e.clone().at(filter_path)))
        .transpose()?;
    let nesting = Nesting {
        probe,
        budget: at.budget,
    };
    // Names are shared, not re-allocated per item.
    let fields: Vec<(crate::doc::Str, String, Compiled<'_>)> = rec
        .fields
        .iter()
        .map(|(name, plan)| {
            let p = format!("{path}.fields.{name}");
            Compiled::in_list(env, plan, &p, Some(&nesting))
                .map(|c| (crate::doc::Str::from(name.as_str()), p, c))
        })
        .collect::<Result<_, _>>()?;
    let as_key = rec.as_name.as_deref().map(crate::doc::Str::from);
    let item_key = crate::doc::Str::from("item");
    let key_path = format!("{path}.key");
    let value_path = format!("{path}.value");
    let key_c = rec
        .key
        .as_ref()
        .map(|p| Compiled::new(env, p, &key_path))
        .transpose()?;
    let value_c = rec
        .value
        .as_ref()
        .map(|p| Compiled::new(env, p, &value_path))
        .transpose()?;

    let mut out = Vec::with_capacity(items.len());
    // The record of the previous kept item, for `loop.prevrecord`.
    let mut prev_record = Doc::Null;
    for (i, item) in items.iter().enumerate() {
        let mut item_scope = scope.clone();
        if matches!(item, Doc::Object(_)) {
            item_scope = item_scope.with(item.to_value());
        }
        let layer = std::sync::Arc::new(FieldsLayer::default());
        if let Ok(mut m) = layer.0.lock() {
            m.insert(item_key.clone(), item.to_value());
            if let Some(k) = &as_key {
                m.insert(k.clone(), item.to_value());
            }
            if uses_loop {
                let at = offset + i;
                m.insert(
                    loop_key.clone(),
                    LoopInfo::in_records(at, all, prev_record.clone()),
                );
            }
        }
        let item_value = item_scope
            .with(Value::from_dyn_object(layer.clone()))
            .into_value();
        if let (Some(probe), Some(f)) = (probe, &rec.filter) {
            probe.expression(filter_path, f.source(), &item_value);
        }
        if let Some(f) = &filter {
            let keep = f.eval(&item_value).map_err(|e| {
                EvalError::from_minijinja(&e)
                    .at(filter_path)
                    .for_item(Some(&item_label(item, offset + i)))
            })?;
            if !keep.is_true() {
                if let Some(probe) = probe {
                    for ((_, p, _), (_, plan)) in fields.iter().zip(&rec.fields) {
                        match plan {
                            ValuePlan::Expr(e) => {
                                probe.filtered_out(p, e.source(), item, &item_value)
                            }
                            ValuePlan::Template(t) => probe.filtered_out(p, t, item, &item_value),
                            _ => {}
                        }
                    }
                }
                continue;
            }
        }
        let mut record: Vec<(crate::doc::Str, Doc)> = Vec::with_capacity(fields.len());
        for ((name, p, compiled), (_, plan)) in fields.iter().zip(&rec.fields) {
            observe_before(probe, plan, p, &item_value);
            let value = compiled.eval_opt(&item_value, item, p, None).map_err(|e| {
                if e.kind == ErrorKind::Budget {
                    return e;
                }
                // An error inside a nested list names both items.
                let outer = item_label(item, offset + i);
                EvalError {
                    item: Some(match &e.item {
                        Some(inner) => format!("{outer} > {inner}"),
                        None => outer,
                    }),
                    ..e
                }
            })?;
            observe_after(probe, plan, p, value.as_ref());
            let Some(value) = value else { continue };
            if let Ok(mut m) = layer.0.lock() {
                m.insert(name.clone(), value.to_value());
            }
            record.push((name.clone(), value));
        }
        let label = item_label(item, offset + i);
        for (plan, p) in [(&rec.key, &key_path), (&rec.value, &value_path)] {
            if let Some(plan) = plan {
                observe_before(probe, plan, p, &item_value);
            }
        }
        let key = match &key_c {
            Some(c) => {
                let k = c.eval(&item_value, item, &key_path, Some(&label))?;
                Some(entry_key(k, &key_path, &label)?)
            }
            None => None,
        };
        let fields_record = Doc::record(record);
        let value = match &value_c {
            Some(c) => c.eval(&item_value, item, &value_path, Some(&label))?,
            None => fields_record.clone(),
        };
        if uses_loop {
            prev_record = fields_record;
        }
        out.push(Entry { key, value, label });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evidence::plan::ConditionalPlan;
    use crate::evidence::select::Selector;

    fn expr(src: &str) -> ValuePlan {
        ValuePlan::Expr(Expr::compile(crate::render::shared(), src))
    }

    fn ctx() -> Context {
        let repos: Doc = serde_json::from_str(
            r#"[{"id": "a", "result": {"v": [1, 2, 3]}, "truth": {"n": 2}},
                {"id": "b", "result": {"v": []}, "truth": null}]"#,
        )
        .unwrap();
        let mut names = IndexMap::new();
        names.insert("repos".to_owned(), repos);
        Context { names }
    }

    #[test]
    fn evaluates_in_order_with_records() {
        let env = crate::render::environment();
        let plan = vec![
            (
                "per_repo".to_owned(),
                ValuePlan::Records(Box::new(RecordsPlan {
                    for_each: ValuePlan::Select(
                        Selector::parse("$.repos[?@.truth != null]").unwrap(),
                    ),
                    filter: None,
                    fields: vec![
                        (
                            "repo".to_owned(),
                            ValuePlan::Select(Selector::parse("$.id").unwrap()),
                        ),
                        ("found".to_owned(), expr("result.v | length")),
                        ("ok".to_owned(), expr("found >= truth.n")),
                    ],
                    key: None,
                    value: None,
                    as_name: None,
                })),
            ),
            (
                "total".to_owned(),
                expr("per_repo | sum(attribute='found')"),
            ),
            (
                "msg".to_owned(),
                ValuePlan::Template("<< total >> found".into()),
            ),
        ];
        let ev = evaluate(&env, &plan, &ctx()).unwrap();
        assert_eq!(
            ev["per_repo"].to_string(),
            r#"[{"repo":"a","found":3,"ok":true}]"#
        );
        assert_eq!(ev["total"], Doc::Int(3));
        assert_eq!(ev["msg"], Doc::from("3 found"));
    }

    fn keyed(key: &str, value: Option<&str>) -> Vec<(String, ValuePlan)> {
        vec![(
            "m".to_owned(),
            ValuePlan::Records(Box::new(RecordsPlan {
                for_each: ValuePlan::Select(Selector::parse("$.repos[*]").unwrap()),
                filter: None,
                fields: vec![("n".to_owned(), expr("result.v | length"))],
                key: Some(expr(key)),
                value: value.map(expr),
                as_name: None,
            })),
        )]
    }

    #[test]
    fn a_key_makes_a_map_in_item_order() {
        let env = crate::render::environment();
        let ev = evaluate(&env, &keyed("id", None), &ctx()).unwrap();
        assert_eq!(ev["m"].to_string(), r#"{"a":{"n":3},"b":{"n":0}}"#);
        let ev = evaluate(&env, &keyed("id", Some("n * 2")), &ctx()).unwrap();
        assert_eq!(ev["m"].to_string(), r#"{"a":6,"b":0}"#);
    }

    #[test]
    fn duplicate_and_unusable_keys_are_errors() {
        let env = crate::render::environment();
        let err = evaluate(&env, &keyed("'same'", None), &ctx()).unwrap_err();
        assert_eq!(err.key_path, "evidence.m.key");
        assert!(
            err.message.contains("two items have the key `same`"),
            "{}",
            err.message
        );
        let err = evaluate(&env, &keyed("truth", None), &ctx()).unwrap_err();
        assert!(
            err.message.contains("must be a string or an integer"),
            "{}",
            err.message
        );
    }

    #[test]
    fn loop_and_private_fields() {
        let env = crate::render::environment();
        let plan = vec![
            (
                "r".to_owned(),
                ValuePlan::Records(Box::new(RecordsPlan {
                    for_each: expr("[1, 5, 7]"),
                    filter: Some(Expr::compile(crate::render::shared(), "item != 5")),
                    fields: vec![
                        ("_d".to_owned(), expr("item - (loop.previtem or 0)")),
                        ("i".to_owned(), expr("loop.index0")),
                        ("d".to_owned(), expr("_d")),
                        ("last".to_owned(), expr("loop.last")),
                    ],
                    key: None,
                    value: None,
                    as_name: None,
                })),
            ),
            ("private_sum".to_owned(), expr("r | sum(attribute='_d')")),
            ("listed".to_owned(), expr("r[0] | list")),
        ];
        let ev = evaluate(&env, &plan, &ctx()).unwrap();
        // `_d` is read by later expressions but neither written nor listed.
        assert_eq!(
            ev["r"].to_string(),
            r#"[{"i":0,"d":1,"last":false},{"i":2,"d":2,"last":true}]"#
        );
        assert_eq!(ev["private_sum"], Doc::Int(3));
        assert_eq!(ev["listed"].to_string(), r#"["i","d","last"]"#);
    }

    #[test]
    fn errors_name_the_key_and_item() {
        let env = crate::render::environment();
        let plan = vec![(
            "per_repo".to_owned(),
            ValuePlan::Records(Box::new(RecordsPlan {
                for_each: ValuePlan::Select(Selector::parse("$.repos[*]").unwrap()),
                filter: None,
                fields: vec![("bad".to_owned(), expr("truth.n + 1"))],
                key: None,
                value: None,
                as_name: None,
            })),
        )];
        let err = evaluate(&env, &plan, &ctx()).unwrap_err();
        assert_eq!(err.key_path, "evidence.per_repo.fields.bad");
        assert_eq!(err.item.as_deref(), Some("b"));
    }

    fn list(
        for_each: ValuePlan,
        fields: Vec<(&str, ValuePlan)>,
        as_name: Option<&str>,
    ) -> ValuePlan {
        ValuePlan::Records(Box::new(RecordsPlan {
            for_each,
            filter: None,
            fields: fields.into_iter().map(|(n, p)| (n.to_owned(), p)).collect(),
            key: None,
            value: None,
            as_name: as_name.map(str::to_owned),
        }))
    }

    fn select(sel: &str) -> ValuePlan {
        ValuePlan::Select(Selector::parse(sel).unwrap())
    }

    /// A field that is a record list goes over the outer item (`$` is the outer item),
    /// and its fields see the inner item's keys, `outer`, the outer `as:` name, the outer
    /// fields computed before it, and their own `loop`.
    #[test]
    fn a_nested_record_list_sees_its_item_outer_and_the_as_name() {
        let env = crate::render::environment();
        let inner = list(
            select("$.result.v[*]"),
            vec![
                ("v", expr("item")),
                ("repo", expr("scan.id ~ '/' ~ outer.id")),
                ("n", expr("n")),
                ("i", expr("loop.index0")),
            ],
            None,
        );
        let plan = vec![(
            "scans".to_owned(),
            list(
                select("$.repos[*]"),
                vec![("n", expr("result.v | length")), ("vs", inner)],
                Some("scan"),
            ),
        )];
        let ev = evaluate(&env, &plan, &ctx()).unwrap();
        assert_eq!(
            ev["scans"].to_string(),
            r#"[{"n":3,"vs":[{"v":1,"repo":"a/a","n":3,"i":0},{"v":2,"repo":"a/a","n":3,"i":1},{"v":3,"repo":"a/a","n":3,"i":2}]},{"n":0,"vs":[]}]"#
        );
    }

    /// `loop.prevrecord` is the record of the previous item the list kept (private
    /// fields included, `none` first), so a running total holds over a list long enough
    /// to be split over threads, and past items `where` dropped.
    #[test]
    fn loop_prevrecord_carries_a_running_total_over_kept_items() {
        let env = crate::render::environment();
        let plan = vec![(
            "r".to_owned(),
            ValuePlan::Records(Box::new(RecordsPlan {
                for_each: expr("range(1, 201)"),
                filter: Some(Expr::compile(crate::render::shared(), "item % 7 != 0")),
                fields: vec![
                    (
                        "_total".to_owned(),
                        expr("(loop.prevrecord._total if loop.prevrecord else 0) + item"),
                    ),
                    ("first".to_owned(), expr("loop.prevrecord is none")),
                ],
                key: None,
                value: Some(expr("_total")),
                as_name: None,
            })),
        )];
        let ev = evaluate(&env, &plan, &ctx()).unwrap();
        let Doc::Array(totals) = &ev["r"] else {
            panic!("a list: {}", ev["r"])
        };
        let kept: Vec<i64> = (1..=200).filter(|i| i % 7 != 0).collect();
        let expected: Vec<Doc> = kept
            .iter()
            .scan(0, |sum, i| {
                *sum += i;
                Some(Doc::Int(*sum))
            })
            .collect();
        assert_eq!(totals.0, expected);
    }

    /// An error inside a nested list names the outer item and the inner one.
    #[test]
    fn an_error_in_a_nested_list_names_both_items() {
        let env = crate::render::environment();
        let inner = list(
            select("$.result.v[*]"),
            vec![("bad", expr("item + 'x'"))],
            None,
        );
        let plan = vec![(
            "scans".to_owned(),
            list(select("$.repos[*]"), vec![("vs", inner)], None),
        )];
        let err = evaluate(&env, &plan, &ctx()).unwrap_err();
        assert_eq!(err.key_path, "evidence.scans.fields.vs.fields.bad");
        assert_eq!(err.item.as_deref(), Some("a > #0"));
    }

    /// Nested lists multiply: past their budget under one evidence name the judge is in
    /// error before their items are evaluated, while a top-level list of the same length
    /// runs.
    #[test]
    fn nested_record_lists_stop_at_their_item_budget() {
        use crate::evidence::limits::MAX_NESTED_RECORDS;
        let env = crate::render::environment();
        let many: Doc = Doc::from(
            (0..=MAX_NESTED_RECORDS as i64)
                .map(Doc::Int)
                .collect::<Vec<_>>(),
        );
        let mut names = IndexMap::new();
        names.insert(
            "outers".to_owned(),
            Doc::from(vec![Doc::object([("xs", many.clone())])]),
        );
        let ctx = Context { names };
        let inner = list(select("$.xs[*]"), vec![("x", select("$"))], None);
        let plan = vec![(
            "o".to_owned(),
            list(select("$.outers[*]"), vec![("inner", inner)], None),
        )];
        let err = evaluate(&env, &plan, &ctx).unwrap_err();
        assert_eq!(err.key_path, "evidence.o.fields.inner");
        assert_eq!(err.kind, ErrorKind::Budget);
        assert!(
            err.message.contains("nested record lists"),
            "{}",
            err.message
        );
        // The total is at fault, not the item it was passed on: none is named, so the
        // error is the same whichever thread got there first.
        assert_eq!(err.item, None);
    }

    /// An expression that did not compile at load fails where and as its text would:
    /// the key, no item (before any item is read, even over no items), the compiler's
    /// message.
    #[test]
    fn an_expression_that_did_not_compile_fails_before_any_item() {
        let env = crate::render::environment();
        let from_text = eval_expr(&env, "item +", &Value::from(())).unwrap_err();
        let over = |for_each: &str, field: ValuePlan| {
            vec![(
                "r".to_owned(),
                ValuePlan::Records(Box::new(RecordsPlan {
                    for_each: ValuePlan::Select(Selector::parse(for_each).unwrap()),
                    filter: None,
                    fields: vec![("bad".to_owned(), field)],
                    key: None,
                    value: None,
                    as_name: None,
                })),
            )]
        };
        for for_each in ["$.repos[*]", "$.none[*]"] {
            let err = evaluate(&env, &over(for_each, expr("item +")), &ctx()).unwrap_err();
            assert_eq!(err.key_path, "evidence.r.fields.bad");
            assert_eq!(err.item, None);
            assert_eq!(err.message, from_text.message);
        }
        let conditional = ValuePlan::Conditional(Box::new(ConditionalPlan {
            condition: Some(Expr::compile(crate::render::shared(), "item +")),
            omit_empty: false,
            value: expr("1"),
        }));
        let err = evaluate(&env, &[("c".to_owned(), conditional)], &ctx()).unwrap_err();
        assert_eq!(err.key_path, "evidence.c.if");
        assert_eq!(err.message, from_text.message);
    }

    #[test]
    fn an_eval_error_shows_its_key_path_item_and_message() {
        let mut err = EvalError {
            kind: ErrorKind::Other,
            key_path: "evidence.x".into(),
            item: Some("a".into()),
            message: "boom".into(),
        };
        assert_eq!(err.to_string(), "evidence.x (item a): boom");
        err.item = None;
        assert_eq!(err.to_string(), "evidence.x: boom");
    }

    /// Expressions, conditions and templates read the run context's names, not only
    /// selectors.
    #[test]
    fn expressions_read_the_run_context() {
        let env = crate::render::environment();
        let plan = vec![
            ("n".to_owned(), expr("repos | length")),
            (
                "c".to_owned(),
                ValuePlan::Conditional(Box::new(ConditionalPlan {
                    condition: Some(Expr::compile(crate::render::shared(), "repos")),
                    omit_empty: false,
                    value: ValuePlan::Template("<< repos[1].id >>".into()),
                })),
            ),
        ];
        let ev = evaluate(&env, &plan, &ctx()).unwrap();
        assert_eq!(ev["n"], Doc::Int(2));
        assert_eq!(ev["c"], Doc::from("b"));
    }

    /// What heuristics, assertions and prompts see: the context's names and every
    /// evidence value, an evidence value shadowing a context name of the same name.
    #[test]
    fn the_full_scope_holds_the_context_and_the_evidence() {
        let env = crate::render::environment();
        let mut evidence = Evidence::new();
        evidence.insert("found".into(), Doc::Int(7));
        let scope = full_scope(&ctx(), &evidence);
        assert_eq!(eval_expr(&env, "found", &scope), Ok(Value::from(7)));
        assert_eq!(eval_expr(&env, "repos[0].id", &scope), Ok(Value::from("a")));
        evidence.insert("repos".into(), Doc::Int(1));
        let scope = full_scope(&ctx(), &evidence);
        assert_eq!(eval_expr(&env, "repos", &scope), Ok(Value::from(1)));
        // Listed once each, in the order they were first defined.
        let names: Vec<String> = scope.try_iter().unwrap().map(|v| v.to_string()).collect();
        assert_eq!(names, ["repos", "found"]);
    }

    fn omitted(omit_empty: bool, value: &str) -> ValuePlan {
        ValuePlan::Conditional(Box::new(ConditionalPlan {
            condition: None,
            omit_empty,
            value: expr(value),
        }))
    }

    /// `omit_empty` leaves out `null`, `""`, `[]` and `{}`, and only those, at the top
    /// level and in a record's fields; without it an empty value is kept. A record's
    /// field whose `if` is false is left out.
    #[test]
    fn omit_empty_leaves_out_only_empty_values() {
        let env = crate::render::environment();
        let cases = [
            ("e", true, "[]"),
            ("f", true, "[0]"),
            ("g", false, "''"),
            ("h", true, "0"),
        ];
        let mut plan: Vec<(String, ValuePlan)> = cases
            .iter()
            .map(|(n, omit, v)| (n.to_string(), omitted(*omit, v)))
            .collect();
        let mut fields: Vec<_> = cases
            .iter()
            .map(|(n, omit, v)| (*n, omitted(*omit, v)))
            .collect();
        // A field whose `if` is false is left out too.
        fields.push(("y", cond("item", expr("2"))));
        fields.push(("z", cond("not item", expr("3"))));
        plan.push(("r".to_owned(), list(expr("[1]"), fields, None)));
        let ev = evaluate(&env, &plan, &ctx()).unwrap();
        let top: Vec<&str> = ev.keys().map(String::as_str).collect();
        assert_eq!(top, ["f", "g", "h", "r"]);
        assert_eq!(ev["r"].to_string(), r#"[{"f":[0],"g":"","h":0,"y":2}]"#);
    }

    #[test]
    fn render_text_renders_only_texts_with_template_parts() {
        let env = crate::render::environment();
        let scope = minijinja::context! { n => 2 };
        let render = |t: &str| render_text(&env, t, &scope);
        assert_eq!(render("n is {{ n }}").as_deref(), Ok("n is {{ n }}"));
        assert_eq!(render("n is << n * 2 >>").as_deref(), Ok("n is 4"));
        assert_eq!(render("<% if n %>some<% endif %>").as_deref(), Ok("some"));
        assert_eq!(render("<< 'a' ~ n >>").as_deref(), Ok("a2"));
        assert!(render("<< n + >>").is_err());
    }

    /// Records every call a probe gets (`selected_in` is left to its default, which
    /// tells `selected`).
    #[derive(Default)]
    struct Recorder(std::sync::Mutex<Vec<String>>);

    impl Recorder {
        fn push(&self, line: String) {
            self.0.lock().unwrap().push(line);
        }
    }

    impl Probe for Recorder {
        fn expression(&self, path: &str, source: &str, scope: &Value) {
            let id = scope.get_attr("id").unwrap_or_default();
            self.push(format!("expr {path} `{source}` id={id}"));
        }
        fn selected(&self, path: &str, found: &Doc) {
            self.push(format!("selected {path} {found}"));
        }
        fn records(&self, path: &str, _rec: &RecordsPlan, items: &[Doc]) {
            self.push(format!("records {path} {}", items.len()));
        }
        fn filtered_out(&self, path: &str, source: &str, item: &Doc, _scope: &Value) {
            self.push(format!("filtered {path} `{source}` {item}"));
        }
    }

    fn cond(condition: &str, value: ValuePlan) -> ValuePlan {
        ValuePlan::Conditional(Box::new(ConditionalPlan {
            condition: Some(Expr::compile(crate::render::shared(), condition)),
            omit_empty: false,
            value,
        }))
    }

    /// A probe hears of every expression before it is evaluated (with the item's scope
    /// in a record list), of what every selector found, of every record list's items and
    /// of the fields `where` kept from being evaluated, in evaluation order.
    #[test]
    fn a_probe_hears_every_expression_selector_and_record_list() {
        let env = crate::render::environment();
        let repos: Doc = serde_json::from_str(
            r#"[{"id": "a", "v": [1, 2]}, {"id": "b", "v": []}, {"id": "c", "v": [1], "skip": true}]"#,
        )
        .unwrap();
        let ctx = Context {
            names: IndexMap::from([("repos".to_owned(), repos)]),
        };
        let records = ValuePlan::Records(Box::new(RecordsPlan {
            for_each: select("$.repos[*]"),
            filter: Some(Expr::compile(crate::render::shared(), "not skip")),
            fields: vec![
                ("n".to_owned(), expr("v | length")),
                ("k".to_owned(), select("$.id")),
                ("c".to_owned(), cond("n > 0", select("$.v[0]"))),
                ("t".to_owned(), ValuePlan::Template("<< id >>!".into())),
            ],
            key: Some(expr("id")),
            value: Some(expr("n")),
            as_name: None,
        }));
        let plan = vec![
            ("s".to_owned(), select("$.repos[0].id")),
            ("e".to_owned(), expr("s ~ '?'")),
            ("t".to_owned(), ValuePlan::Template("<< e >>!".into())),
            ("c".to_owned(), cond("e", select("$.s"))),
            ("r".to_owned(), records),
            (
                "q".to_owned(),
                list(expr("[1]"), vec![("x", expr("item"))], None),
            ),
        ];
        let probe = Recorder::default();
        let ev = evaluate_probed(&env, &plan, &ctx, Some(&probe)).unwrap();
        assert_eq!(ev["r"].to_string(), r#"{"a":2,"b":0}"#);
        let calls = probe.0.into_inner().unwrap();
        let expected = [
            r#"selected evidence.s "a""#,
            "expr evidence.e `s ~ '?'` id=",
            "expr evidence.t `<< e >>!` id=",
            "expr evidence.c.if `e` id=",
            r#"selected evidence.c.value "a""#,
            r#"selected evidence.r.for_each [{"id":"a","v":[1,2]},{"id":"b","v":[]},{"id":"c","v":[1],"skip":true}]"#,
            "records evidence.r 3",
            "expr evidence.r.where `not skip` id=a",
            "expr evidence.r.fields.n `v | length` id=a",
            r#"selected evidence.r.fields.k "a""#,
            "expr evidence.r.fields.c.if `n > 0` id=a",
            "selected evidence.r.fields.c.value 1",
            "expr evidence.r.fields.t `<< id >>!` id=a",
            "expr evidence.r.key `id` id=a",
            "expr evidence.r.value `n` id=a",
            "expr evidence.r.where `not skip` id=b",
            "expr evidence.r.fields.n `v | length` id=b",
            r#"selected evidence.r.fields.k "b""#,
            "expr evidence.r.fields.c.if `n > 0` id=b",
            "expr evidence.r.fields.t `<< id >>!` id=b",
            "expr evidence.r.key `id` id=b",
            "expr evidence.r.value `n` id=b",
            "expr evidence.r.where `not skip` id=c",
            r#"filtered evidence.r.fields.n `v | length` {"id":"c","v":[1],"skip":true}"#,
            r#"filtered evidence.r.fields.t `<< id >>!` {"id":"c","v":[1],"skip":true}"#,
            "expr evidence.q.for_each `[1]` id=",
            "records evidence.q 1",
            "expr evidence.q.fields.x `item` id=",
        ];
        assert_eq!(calls, expected, "{calls:#?}");
    }

    /// `loop` in a record list has every name of a Jinja loop and `prevrecord`; outside
    /// record lists (assertions) it has no `prevrecord`.
    #[test]
    fn loop_names_in_a_record_list() {
        let env = crate::render::environment();
        let fields = [
            "index",
            "revindex0",
            "revindex",
            "first",
            "last",
            "length",
            "previtem",
            "nextitem",
        ];
        let mut plan_fields: Vec<(&str, ValuePlan)> = fields
            .iter()
            .map(|f| (*f, expr(&format!("loop.{f}"))))
            .collect();
        plan_fields.push(("prev", expr("loop.prevrecord.index")));
        plan_fields.push(("names", expr("loop | list | join(',')")));
        plan_fields.push(("other", expr("loop.other is undefined")));
        let plan = vec![(
            "r".to_owned(),
            list(expr("[10, 20, 30]"), plan_fields, None),
        )];
        let ev = evaluate(&env, &plan, &ctx()).unwrap();
        let names =
            "index0,index,revindex0,revindex,first,last,length,previtem,nextitem,prevrecord";
        let rows: Vec<String> = (0..3)
            .map(|i| {
                let prev = if i == 0 { "null".to_owned() } else { i.to_string() };
                let previtem = if i == 0 { "null".to_owned() } else { (10 * i).to_string() };
                let nextitem = if i == 2 { "null".to_owned() } else { (10 * i + 20).to_string() };
                format!(
                    r#"{{"index":{},"revindex0":{},"revindex":{},"first":{},"last":{},"length":3,"previtem":{previtem},"nextitem":{nextitem},"prev":{prev},"names":"{names}","other":true}}"#,
                    i + 1,
                    2 - i,
                    3 - i,
                    i == 0,
                    i == 2,
                )
            })
            .collect();
        assert_eq!(ev["r"].to_string(), format!("[{}]", rows.join(",")));
        let outside = LoopInfo::value(1, &[Doc::Int(1), Doc::Int(2)]);
        let names: Vec<String> = outside.try_iter().unwrap().map(|v| v.to_string()).collect();
        assert_eq!(names.join(","), names_without_prevrecord());
        assert!(outside.get_attr("prevrecord").unwrap().is_undefined());
        assert_eq!(outside.get_attr("last").unwrap(), Value::from(true));
    }

    fn names_without_prevrecord() -> &'static str {
        "index0,index,revindex0,revindex,first,last,length,previtem,nextitem"
    }

    fn filtered(
        for_each: &str,
        filter: Option<&str>,
        fields: Vec<(&str, ValuePlan)>,
    ) -> RecordsPlan {
        RecordsPlan {
            for_each: expr(for_each),
            filter: filter.map(|f| Expr::compile(crate::render::shared(), f)),
            fields: fields.into_iter().map(|(n, p)| (n.to_owned(), p)).collect(),
            key: None,
            value: None,
            as_name: None,
        }
    }

    /// A list long enough to be split over threads gives its records in item order,
    /// with `loop` counting over the whole list, and fails with the first error in item
    /// order. (On a one-core machine the list runs on one thread and this still holds.)
    #[test]
    fn a_long_list_split_over_threads_keeps_item_order() {
        let env = crate::render::environment();
        let n = 40 * PARALLEL_MIN_ITEMS as i64;
        let rec = filtered(
            &format!("range({n})"),
            Some("item % 3 != 0"),
            vec![("i", expr("loop.index0")), ("x", expr("item * 2"))],
        );
        let plan = vec![("r".to_owned(), ValuePlan::Records(Box::new(rec)))];
        let ev = evaluate(&env, &plan, &ctx()).unwrap();
        let expected: Vec<String> = (0..n)
            .filter(|i| i % 3 != 0)
            .map(|i| format!(r#"{{"i":{i},"x":{}}}"#, i * 2))
            .collect();
        assert_eq!(ev["r"].to_string(), format!("[{}]", expected.join(",")));
        let failing = filtered(
            &format!("range({n})"),
            None,
            vec![(
                "x",
                expr(&format!(
                    "(item ~ 'x') + 1 if item >= {} else item",
                    n - 300
                )),
            )],
        );
        let plan = vec![("r".to_owned(), ValuePlan::Records(Box::new(failing)))];
        let err = evaluate(&env, &plan, &ctx()).unwrap_err();
        assert_eq!(err.item, Some(format!("#{}", n - 300)));
    }

    /// A probed list stays on one thread however long it is, so the probe hears of its
    /// items in order.
    #[test]
    fn a_probed_long_list_is_heard_in_item_order() {
        let env = crate::render::environment();
        let n = 4 * PARALLEL_MIN_ITEMS;
        let rec = filtered(&format!("range({n})"), Some("item >= 0"), vec![]);
        let plan = vec![("r".to_owned(), ValuePlan::Records(Box::new(rec)))];
        let probe = Recorder::default();
        evaluate_probed(&env, &plan, &ctx(), Some(&probe)).unwrap();
        let calls = probe.0.into_inner().unwrap();
        assert_eq!(calls.len(), 2 + n, "{calls:#?}");
        assert_eq!(calls[1], format!("records evidence.r {n}"));
    }

    /// Records the names an expression's scope lists, for the field `probe`.
    #[derive(Default)]
    struct Names(std::sync::Mutex<Vec<String>>);

    impl Probe for Names {
        fn expression(&self, path: &str, _source: &str, scope: &Value) {
            if path.ends_with(".probe") {
                let names = scope.try_iter().unwrap().map(|v| v.to_string());
                self.0
                    .lock()
                    .unwrap()
                    .push(names.collect::<Vec<_>>().join(","));
            }
        }
        fn selected(&self, _path: &str, _found: &Doc) {}
        fn records(&self, _path: &str, _rec: &RecordsPlan, _items: &[Doc]) {}
    }

    /// The names a record's field sees, as validate lists them: the context, the item's
    /// keys, `item`, the `as:` name, `loop` only when the list reads the name `loop` as a
    /// word (not `item.loop`, `loops`, `xloop` or `_loop`), and the fields before it.
    #[test]
    fn a_fields_scope_lists_item_keys_item_loop_when_read_and_earlier_fields() {
        let env = crate::render::environment();
        let names_of = |reads: &str| {
            let mut rec = filtered(
                "[{'k': 1}]",
                None,
                vec![("a", expr(reads)), ("probe", expr("1"))],
            );
            rec.as_name = Some("it".into());
            let plan = vec![("r".to_owned(), ValuePlan::Records(Box::new(rec)))];
            let probe = Names::default();
            evaluate_probed(&env, &plan, &ctx(), Some(&probe)).unwrap();
            probe.0.into_inner().unwrap().join(";")
        };
        for not_loop in ["item.loop", "'loops'", "xloop", "_loop", "loop_"] {
            assert_eq!(names_of(not_loop), "repos,k,item,it,a", "{not_loop}");
        }
        for reads_loop in ["1 + loop.index0", "(loop)", "[loop]"] {
            assert_eq!(
                names_of(reads_loop),
                "repos,k,item,it,loop,a",
                "{reads_loop}"
            );
        }
    }

    /// `loop` is there wherever the list reads it: a template field, a condition or a
    /// conditional value, `where`, `key` or `value`.
    #[test]
    fn loop_is_built_wherever_the_list_reads_it() {
        let env = crate::render::environment();
        let base = || filtered("['a', 'b']", None, vec![]);
        let mut lists = Vec::new();
        let mut rec = base();
        rec.fields = vec![("i".into(), ValuePlan::Template("<< loop.index >>".into()))];
        lists.push((rec, r#"[{"i":"1"},{"i":"2"}]"#));
        let mut rec = base();
        rec.fields = vec![("i".into(), cond("loop.first", expr("1")))];
        lists.push((rec, r#"[{"i":1},{}]"#));
        let mut rec = base();
        rec.fields = vec![("i".into(), cond("true", expr("loop.index")))];
        lists.push((rec, r#"[{"i":1},{"i":2}]"#));
        let mut rec = base();
        rec.filter = Some(Expr::compile(crate::render::shared(), "loop.last"));
        rec.fields = vec![("i".into(), expr("item"))];
        lists.push((rec, r#"[{"i":"b"}]"#));
        let mut rec = base();
        rec.key = Some(expr("loop.index0"));
        lists.push((rec, r#"{"0":{},"1":{}}"#));
        let mut rec = base();
        rec.value = Some(expr("loop.revindex"));
        lists.push((rec, "[2,1]"));
        for (rec, want) in lists {
            let plan = vec![("r".to_owned(), ValuePlan::Records(Box::new(rec)))];
            let ev = evaluate(&env, &plan, &ctx()).unwrap();
            assert_eq!(ev["r"].to_string(), want);
        }
    }

    /// An item without `id`, `repo` or `name` is named by its index in errors of `where`,
    /// of a field and of a duplicate key.
    #[test]
    fn errors_name_an_unnamed_item_by_its_index() {
        let env = crate::render::environment();
        let run = |rec: RecordsPlan| {
            let plan = vec![("r".to_owned(), ValuePlan::Records(Box::new(rec)))];
            evaluate(&env, &plan, &ctx()).unwrap_err()
        };
        let err = run(filtered("[1, 2, 'x']", Some("item + 1"), vec![]));
        assert_eq!(
            (err.key_path.as_str(), err.item.as_deref()),
            ("evidence.r.where", Some("#2"))
        );
        let err = run(filtered("[1, 2, 'x']", None, vec![("y", expr("item + 1"))]));
        assert_eq!(
            (err.key_path.as_str(), err.item.as_deref()),
            ("evidence.r.fields.y", Some("#2"))
        );
        let mut keyed = filtered("[1, 2, 3]", None, vec![]);
        keyed.key = Some(expr("'k' if item > 1 else 'first'"));
        let err = run(keyed);
        assert_eq!(err.item.as_deref(), Some("#2"));
        assert!(err.message.contains("(items #1 and #2)"), "{}", err.message);
    }
}
