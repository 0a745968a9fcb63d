//! Assertions: checks over the evidence that run in every mode. A failure is listed on
//! the verdict; an assertion that cannot even be evaluated counts as failed (never as
//! passed), with the error as its message. An assertion with `for_each` is checked per
//! item: each failing item is one failure with its own message. An assertion with
//! `failures` computes its list of messages: each is one failure, in the list's order.

use minijinja::Environment;
use minijinja::value::Value;

use crate::doc::Doc;
use crate::evidence::compiled::Expr;
use crate::evidence::error::{ErrorKind, EvalError};
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
    /// The condition that must hold, or the expression giving the failure messages.
    pub check: Check,
    /// The message template of a failure.
    pub message: String,
    /// The score cap of a failure.
    pub cap: Option<i64>,
}

/// What an assertion evaluates.
#[derive(Debug, Clone)]
pub enum Check {
    /// `that`: a condition; when false, one failure with `message`.
    That(Expr),
    /// `failures`: the list of failure messages itself.
    Failures(Expr),
}

/// Where an assertion's items come from.
#[derive(Debug, Clone)]
pub enum ForEachPlan {
    /// A selector over the run context and evidence, or why it does not parse.
    Select(Result<Selector, EvalError>),
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
            check: match &spec.failures {
                Some(f) => Check::Failures(compile(condition_source(f))),
                None => Check::That(compile(condition_source(&spec.that))),
            },
            message: spec.message.clone(),
            cap: spec.cap,
        }
    }
}

/// Runs every assertion; returns the failures in order. `root` is the JSONPath root
/// (run context and evidence) for a selector `for_each`.
pub(crate) fn check(
    env: &Environment<'static>,
    assertions: &[AssertionPlan],
    scope: &Value,
    root: &Doc,
    repo: Option<&str>,
) -> Vec<AssertionFailure> {
    let mut failures = Vec::new();
    let failure = |(message, error): Failed, cap, item: Option<String>| AssertionFailure {
        message,
        cap,
        repo: repo.map(str::to_owned),
        item,
        error,
    };
    for (i, a) in assertions.iter().enumerate() {
        let Some(for_each) = &a.for_each else {
            for failed in messages(env, a, i, scope, None) {
                failures.push(failure(failed, a.cap, None));
            }
            continue;
        };
        let items = match items_of(for_each, scope, root) {
            Ok(items) => items,
            Err(e) => {
                let message = format!("assertions[{i}].for_each could not be evaluated: {e}");
                let error = e.at(format!("assertions[{i}].for_each"));
                failures.push(failure((message, Some(error)), a.cap, None));
                continue;
            }
        };
        for (n, item) in items.iter().enumerate() {
            let label = item_label(item, n);
            let item_scope = item_scope(scope, &items, n);
            for failed in messages(env, a, i, &item_scope, Some(&label)) {
                failures.push(failure(failed, a.cap, Some(label.clone())));
            }
        }
    }
    failures
}

/// A failure's message, and the error when the assertion could not be evaluated.
type Failed = (String, Option<EvalError>);

/// The failure messages of assertion `i` in `scope` (of item `label`, when per item):
/// none when it holds. One that cannot be evaluated fails with the error.
fn messages(
    env: &Environment<'static>,
    a: &AssertionPlan,
    i: usize,
    scope: &Value,
    label: Option<&str>,
) -> Vec<Failed> {
    // The message words the key as the judge reads it (`assertions[0]` for `that`); the
    // error keeps the key path a diagnostic locates (`assertions[0].that`).
    let unevaluated = |key: &str, located: &str, e: EvalError| {
        let message = match label {
            Some(l) => format!("assertions[{i}]{key} could not be evaluated for item {l}: {e}"),
            None => format!("assertions[{i}]{key} could not be evaluated: {e}"),
        };
        let error = e.at(format!("assertions[{i}].{located}")).for_item(label);
        (message, Some(error))
    };
    match &a.check {
        Check::That(that) => match that.eval(scope) {
            Ok(v) if v.is_true() => Vec::new(),
            Ok(_) => vec![(render_message(env, &a.message, scope), None)],
            Err(e) => vec![unevaluated("", "that", e)],
        },
        Check::Failures(list) => match list.eval(scope).map(|v| Doc::from_value(&v)) {
            Ok(Doc::Array(items)) => items.0.iter().map(|m| (message_text(m), None)).collect(),
            // A misspelled name gives undefined: never a pass.
            Ok(other) => vec![unevaluated(
                ".failures",
                "failures",
                EvalError::new(
                    ErrorKind::Shape,
                    format!("it must give a list of messages, got {}", other.type_name()),
                ),
            )],
            Err(e) => vec![unevaluated(".failures", "failures", e)],
        },
    }
}

/// A failure message from an item of a `failures` list: a text as it is, anything else
/// as JSON.
fn message_text(item: &Doc) -> String {
    match item {
        Doc::Str(s) => s.to_string(),
        other => other.to_string(),
    }
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
) -> Result<Vec<Doc>, EvalError> {
    match for_each {
        ForEachPlan::Select(sel) => sel.as_ref().map_err(Clone::clone)?.matches(root),
        ForEachPlan::Expr(e) => match Doc::from_value(&e.eval(scope)?) {
            Doc::Array(items) => Ok(items.0.clone()),
            Doc::Null => Ok(Vec::new()),
            other => Err(EvalError::new(
                ErrorKind::Shape,
                format!("for_each must give a list, got {}", other.type_name()),
            )),
        },
        ForEachPlan::Invalid => Err(EvalError::new(
            ErrorKind::Shape,
            "for_each must be a selector or an expression",
        )),
    }
}

/// The names one item sees: the unit's names, the item's keys, `item` and `loop`.
pub(crate) fn item_scope(scope: &Value, items: &[Doc], n: usize) -> Value {
    let item = &items[n];
    let mut layered = NameStack::new().with(scope.clone());
    if matches!(item, Doc::Object(_)) {
        layered = layered.with(item.to_value());
    }
    // The same `loop` as in a record list (a map of its fields).
    let loop_info = crate::evidence::eval::LoopInfo::value(n, items);
    let names: indexmap::IndexMap<String, Value> = [
        ("item".to_owned(), item.to_value()),
        ("loop".to_owned(), loop_info),
    ]
    .into_iter()
    .collect();
    layered.with_names(names).into_value()
}

/// The lowest cap among `failures`.
pub(crate) fn lowest_cap(failures: &[AssertionFailure]) -> Option<i64> {
    failures.iter().filter_map(|f| f.cap).min()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The plans of assertions written in YAML, compiled as the loader compiles them.
    fn plans(yaml: &str) -> Vec<AssertionPlan> {
        let specs: Vec<AssertionSpec> = serde_saphyr::from_str(yaml).expect("valid assertions");
        let env = crate::render::shared();
        specs
            .iter()
            .map(|a| AssertionPlan::new(a, &mut |src: &str| Expr::compile(env, src)))
            .collect()
    }

    /// Runs `yaml`'s assertions with `names` (a JSON object) as scope and root.
    fn run(yaml: &str, names: serde_json::Value, repo: Option<&str>) -> Vec<AssertionFailure> {
        let root = Doc::from_json(&names);
        check(
            crate::render::shared(),
            &plans(yaml),
            &root.to_value(),
            &root,
            repo,
        )
    }

    fn failure(message: &str, cap: Option<i64>, item: Option<&str>) -> AssertionFailure {
        AssertionFailure {
            message: message.into(),
            cap,
            repo: None,
            item: item.map(str::to_owned),
            error: None,
        }
    }

    #[test]
    fn a_failed_assertion_records_its_rendered_message_and_cap() {
        let yaml = "- { that: << n > 0 >>, message: 'n is << n >>', cap: 2 }\n- { that: << n < 9 >>, message: holds }\n";
        assert_eq!(
            run(yaml, serde_json::json!({"n": 0}), None),
            vec![failure("n is 0", Some(2), None)]
        );
        assert_eq!(run(yaml, serde_json::json!({"n": 1}), None), vec![]);
        // The repo is recorded on every failure.
        let f = run(yaml, serde_json::json!({"n": -1}), Some("r1"));
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].repo.as_deref(), Some("r1"));
        assert_eq!(f[0].message, "n is -1");
    }

    #[test]
    fn an_assertion_that_cannot_be_evaluated_fails_with_the_error() {
        // Adding a number to a text raises.
        let f = run(
            "- { that: << s + 1 > 0 >>, message: never shown, cap: 3 }\n",
            serde_json::json!({"s": "text"}),
            None,
        );
        assert_eq!(f.len(), 1);
        assert!(
            f[0].message
                .starts_with("assertions[0] could not be evaluated: "),
            "{}",
            f[0].message
        );
        assert_eq!(f[0].cap, Some(3));
        // A message that cannot be rendered keeps the text, with the error.
        let f = run(
            "- { that: << false >>, message: 'bad << s + 1 >>' }\n",
            serde_json::json!({"s": "text"}),
            None,
        );
        assert!(
            f[0].message
                .starts_with("bad << s + 1 >> (message could not be rendered: "),
            "{}",
            f[0].message
        );
    }

    /// `failures` gives the messages: each its own failure, in the list's order, with the
    /// assertion's cap; an empty list passes; anything but a list (a misspelled name
    /// included) is a failure saying what it got; per item, each message names its item.
    #[test]
    fn failures_give_one_failure_per_message_in_the_lists_order() {
        let yaml = "- { failures: << xs | reverse | list >>, cap: 2 }\n";
        assert_eq!(
            run(yaml, serde_json::json!({"xs": ["a", "b", 3]}), None),
            vec![
                failure("3", Some(2), None),
                failure("b", Some(2), None),
                failure("a", Some(2), None),
            ]
        );
        assert_eq!(run(yaml, serde_json::json!({"xs": []}), None), vec![]);
        let f = run(
            "- { failures: << xz >> }\n",
            serde_json::json!({"xs": []}),
            None,
        );
        assert_eq!(f.len(), 1);
        assert_eq!(
            f[0].message,
            "assertions[0].failures could not be evaluated: it must give a list of messages, got null"
        );
        let yaml = "- { for_each: << rs >>, failures: << bad >> }\n";
        let names =
            serde_json::json!({"rs": [{"id": "r1", "bad": ["x", "y"]}, {"id": "r2", "bad": []}]});
        assert_eq!(
            run(yaml, names, None),
            vec![
                failure("x", None, Some("r1")),
                failure("y", None, Some("r1"))
            ]
        );
    }

    #[test]
    fn for_each_gives_one_failure_per_failing_item() {
        let names = serde_json::json!({"xs": [
            {"id": "a", "v": 1}, {"id": "b", "v": 5}, {"v": 0}
        ]});
        // Items 0 and 2 fail (v < 2); item 2 has no id, so it is named by position (and its
        // missing id renders empty).
        let expected = vec![
            failure("a has 1", Some(2), Some("a")),
            failure(" has 0", Some(2), Some("#2")),
        ];
        for fe in ["$.xs[*]", "<< xs >>"] {
            let yaml = format!(
                "- {{ for_each: '{fe}', that: << v >= 2 >>, message: '<< id >> has << v >>', cap: 2 }}\n"
            );
            assert_eq!(run(&yaml, names.clone(), None), expected, "{fe}");
        }
        // Every item holds: no failure.
        let yaml = "- { for_each: << xs >>, that: << v >= 0 >>, message: m }\n";
        assert_eq!(run(yaml, names.clone(), None), vec![]);
        // A missing list has no items.
        let yaml = "- { for_each: << nothing >>, that: << false >>, message: m }\n";
        assert_eq!(run(yaml, names, None), vec![]);
    }

    /// One entry of an item's `loop` value, read whether it is a map or a list of
    /// (name, value) pairs.
    fn loop_entry(scope: &Value, name: &str) -> String {
        let l = scope.get_attr("loop").expect("loop is set");
        let direct = l.get_attr(name).expect("readable");
        if !direct.is_undefined() {
            return direct.to_string();
        }
        l.try_iter()
            .expect("a list of pairs")
            .find(|pair| {
                pair.get_item(&Value::from(0))
                    .ok()
                    .as_ref()
                    .and_then(Value::as_str)
                    == Some(name)
            })
            .map(|pair| pair.get_item(&Value::from(1)).unwrap().to_string())
            .unwrap_or_else(|| panic!("loop has no {name}"))
    }

    #[test]
    fn each_item_sees_itself_its_keys_and_its_place() {
        let items = vec![Doc::Int(10), Doc::Int(20), Doc::Int(30)];
        let outer = Doc::object([("n", Doc::Int(7))]).to_value();
        let place = |n: usize| {
            let scope = item_scope(&outer, &items, n);
            assert_eq!(
                scope.get_attr("n").unwrap(),
                Value::from(7),
                "unit names stay"
            );
            let names = [
                "index0", "index", "first", "last", "length", "previtem", "nextitem",
            ];
            let mut out = vec![scope.get_attr("item").unwrap().to_string()];
            out.extend(names.iter().map(|k| loop_entry(&scope, k)));
            out.join(" ")
        };
        // index = index0 + 1; last when index == length; previtem/nextitem are the
        // neighbours, none past either end (written as minijinja shows values).
        assert_eq!(place(0), "10 0 1 True False 3 None 20");
        assert_eq!(place(1), "20 1 2 False False 3 10 30");
        assert_eq!(place(2), "30 2 3 False True 3 20 None");
        // An object item's keys are names.
        let objects = vec![Doc::object([("v", Doc::Int(4))])];
        assert_eq!(
            item_scope(&outer, &objects, 0).get_attr("v").unwrap(),
            Value::from(4)
        );
    }

    #[test]
    fn loop_fields_are_readable_in_conditions() {
        let f = run(
            "- { for_each: << xs >>, that: << loop.index0 != 1 >>, message: m }\n",
            serde_json::json!({"xs": [10, 20, 30]}),
            None,
        );
        // Only the second item (index0 1) fails.
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].item.as_deref(), Some("#1"));
    }

    #[test]
    fn items_see_item_in_conditions() {
        let f = run(
            "- { for_each: << xs >>, that: << item != 20 >>, message: 'got << item >>' }\n",
            serde_json::json!({"xs": [10, 20, 30]}),
            None,
        );
        assert_eq!(f, vec![failure("got 20", None, Some("#1"))]);
    }

    #[test]
    fn a_for_each_that_gives_no_list_fails_once() {
        let f = run(
            "- { for_each: << n >>, that: << true >>, message: m, cap: 1 }\n",
            serde_json::json!({"n": 3}),
            None,
        );
        assert_eq!(f.len(), 1);
        assert_eq!(
            f[0].message,
            "assertions[0].for_each could not be evaluated: for_each must give a list, got number"
        );
        assert_eq!((f[0].cap, f[0].item.as_deref()), (Some(1), None));
    }

    #[test]
    fn an_item_that_cannot_be_evaluated_fails_with_its_label() {
        let f = run(
            "- { for_each: << xs >>, that: << v + 1 > 0 >>, message: m }\n",
            serde_json::json!({"xs": [{"id": "a", "v": "text"}]}),
            None,
        );
        assert_eq!(f.len(), 1);
        assert!(
            f[0].message
                .starts_with("assertions[0] could not be evaluated for item a: "),
            "{}",
            f[0].message
        );
    }

    #[test]
    fn the_lowest_cap_wins() {
        let fails = |caps: &[Option<i64>]| -> Vec<AssertionFailure> {
            caps.iter().map(|c| failure("m", *c, None)).collect()
        };
        assert_eq!(
            lowest_cap(&fails(&[Some(3), None, Some(2), Some(4)])),
            Some(2)
        );
        assert_eq!(lowest_cap(&fails(&[Some(4)])), Some(4));
        assert_eq!(lowest_cap(&fails(&[None, None])), None);
        assert_eq!(lowest_cap(&[]), None);
    }
}
