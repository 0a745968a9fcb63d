//! Assertions: checks over the evidence that run in every mode. A failure is listed on
//! the verdict; an assertion that cannot even be evaluated counts as failed (never as
//! passed), with the error as its message. An assertion with `for_each` is checked per
//! item: each failing item is one failure with its own message.

use minijinja::Environment;
use minijinja::value::Value;

use crate::doc::Doc;
use crate::evidence::compiled::Expr;
use crate::evidence::eval::{item_label, render_text};
use crate::evidence::plan::{TextKind, classify, condition_source};
use crate::evidence::scope::NameStack;
use crate::evidence::select::Selector;
use crate::spec::judge::AssertionSpec;
use crate::verdict::types::AssertionFailure;

/// An assertion resolved at load: its expressions compiled.
#[derive(Debug, Clone)]
pub struct AssertionPlan {
    /// The items it is checked for, when it has `for_each`.
    pub for_each: Option<ForEachPlan>,
    /// The condition that must hold.
    pub that: Expr,
    /// The message template of a failure.
    pub message: String,
    /// The score cap of a failure.
    pub cap: Option<i64>,
}

/// Where an assertion's items come from.
#[derive(Debug, Clone)]
pub enum ForEachPlan {
    /// A selector over the run context and evidence, or why it does not parse.
    Select(Result<Selector, String>),
    /// An expression giving the list.
    Expr(Expr),
    /// Neither (reported at load).
    Invalid,
}

impl AssertionPlan {
    /// Resolves `spec`: the condition (with or without `<< >>`) and the `for_each`
    /// selector or expression, compiled (expressions with `compile`).
    pub fn new(spec: &AssertionSpec, compile: &mut dyn FnMut(&str) -> Expr) -> AssertionPlan {
        AssertionPlan {
            for_each: spec.for_each.as_deref().map(|fe| match classify(fe) {
                TextKind::Selector(sel) => ForEachPlan::Select(Selector::parse(sel)),
                TextKind::Expr(src) => ForEachPlan::Expr(compile(src)),
                _ => ForEachPlan::Invalid,
            }),
            that: compile(condition_source(&spec.that)),
            message: spec.message.clone(),
            cap: spec.cap,
        }
    }
}

/// Runs every assertion; returns the failures in order. `root` is the JSONPath root
/// (run context and evidence) for a selector `for_each`.
pub fn check(
    env: &Environment<'static>,
    assertions: &[AssertionPlan],
    scope: &Value,
    root: &Doc,
    repo: Option<&str>,
) -> Vec<AssertionFailure> {
    let mut failures = Vec::new();
    let failure = |message: String, cap, item: Option<String>| AssertionFailure {
        message,
        cap,
        repo: repo.map(str::to_owned),
        item,
    };
    for (i, a) in assertions.iter().enumerate() {
        let Some(for_each) = &a.for_each else {
            let message = match a.that.eval(scope) {
                Ok(v) if v.is_true() => continue,
                Ok(_) => render_message(env, &a.message, scope),
                Err(e) => format!("assertions[{i}] could not be evaluated: {e}"),
            };
            failures.push(failure(message, a.cap, None));
            continue;
        };
        let items = match items_of(for_each, scope, root) {
            Ok(items) => items,
            Err(e) => {
                let message = format!("assertions[{i}].for_each could not be evaluated: {e}");
                failures.push(failure(message, a.cap, None));
                continue;
            }
        };
        for (n, item) in items.iter().enumerate() {
            let label = item_label(item, n);
            let item_scope = item_scope(scope, &items, n);
            let message = match a.that.eval(&item_scope) {
                Ok(v) if v.is_true() => continue,
                Ok(_) => render_message(env, &a.message, &item_scope),
                Err(e) => format!("assertions[{i}] could not be evaluated for item {label}: {e}"),
            };
            failures.push(failure(message, a.cap, Some(label)));
        }
    }
    failures
}

fn render_message(env: &Environment<'static>, message: &str, scope: &Value) -> String {
    render_text(env, message, scope)
        .unwrap_or_else(|e| format!("{message} (message could not be rendered: {e})"))
}

/// The items an assertion checks: a selector over `root`, or an expression's list (a
/// missing list has no items).
pub(crate) fn items_of(
    for_each: &ForEachPlan,
    scope: &Value,
    root: &Doc,
) -> Result<Vec<Doc>, String> {
    match for_each {
        ForEachPlan::Select(sel) => sel.as_ref().map_err(Clone::clone)?.matches(root),
        ForEachPlan::Expr(e) => match Doc::from_value(&e.eval(scope)?) {
            Doc::Array(items) => Ok(items.0.clone()),
            Doc::Null => Ok(Vec::new()),
            other => Err(format!(
                "for_each must give a list, got {}",
                other.type_name()
            )),
        },
        ForEachPlan::Invalid => Err("for_each must be a selector or an expression".into()),
    }
}

/// The names one item sees: the unit's names, the item's keys, `item` and `loop`.
pub(crate) fn item_scope(scope: &Value, items: &[Doc], n: usize) -> Value {
    let item = &items[n];
    let mut layered = NameStack::new().with(scope.clone());
    if matches!(item, Doc::Object(_)) {
        layered = layered.with(item.to_value());
    }
    let at = |i: Option<usize>| {
        i.and_then(|i| items.get(i))
            .map_or(Value::from(()), Doc::to_value)
    };
    let loop_info = Value::from_iter([
        ("index0", Value::from(n)),
        ("index", Value::from(n + 1)),
        ("first", Value::from(n == 0)),
        ("last", Value::from(n + 1 == items.len())),
        ("length", Value::from(items.len())),
        ("previtem", at(n.checked_sub(1))),
        ("nextitem", at(Some(n + 1))),
    ]);
    let names: indexmap::IndexMap<String, Value> = [
        ("item".to_owned(), item.to_value()),
        ("loop".to_owned(), loop_info),
    ]
    .into_iter()
    .collect();
    layered.with_names(names).into_value()
}

/// The lowest cap among `failures`.
pub fn lowest_cap(failures: &[AssertionFailure]) -> Option<i64> {
    failures.iter().filter_map(|f| f.cap).min()
}
