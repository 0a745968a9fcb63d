//! Computes a judge's evidence: each name in order, each seeing the run context and every
//! earlier name.

use indexmap::IndexMap;
use minijinja::value::Value;
use minijinja::{Environment, Expression, Template};

use crate::doc::Doc;
use crate::evidence::plan::{RecordsPlan, ValuePlan};
use crate::evidence::scope::Scope;

/// Evidence: named values in definition order.
pub type Evidence = IndexMap<String, Doc>;

/// An evidence value that could not be computed.
#[derive(Debug, Clone, PartialEq)]
pub struct EvalError {
    /// Where in the judge file (`evidence.per_repo.fields.cves`).
    pub key_path: String,
    /// Which record item, when the error happened inside a record list.
    pub item: Option<String>,
    /// What went wrong.
    pub message: String,
}

impl std::fmt::Display for EvalError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.key_path)?;
        if let Some(item) = &self.item {
            write!(f, " (item {item})")?;
        }
        write!(f, ": {}", self.message)
    }
}

/// The names every expression can read, plus the JSONPath root they form.
#[derive(Clone, Debug)]
pub struct Context {
    /// Name -> document (`results`, `truth`, `repos`, `suite`, `inputs`, and in per-repo
    /// scope `repo`, `id`, `result`).
    pub names: IndexMap<String, Doc>,
}

impl Context {
    /// The context as a JSONPath root, with the evidence computed so far.
    fn root_with(&self, evidence: &Evidence) -> Doc {
        Doc::object(
            self.names
                .iter()
                .chain(evidence.iter())
                .map(|(k, v)| (k.as_str(), v.clone())),
        )
    }

    fn scope(&self) -> Scope {
        Scope::new().with_names(
            self.names
                .iter()
                .map(|(k, v)| (k.clone(), v.to_value()))
                .collect(),
        )
    }
}

/// Whether an evidence name is private (`_name`): computed and readable by expressions,
/// but left out of the result document and of the evidence a prompt shows.
pub fn is_private(name: &str) -> bool {
    name.starts_with('_')
}

/// The names heuristics, assertions and prompts see: the run context and every
/// evidence value.
pub fn full_scope(ctx: &Context, evidence: &Evidence) -> Value {
    ctx.scope()
        .with_names(
            evidence
                .iter()
                .map(|(k, v)| (k.clone(), v.to_value()))
                .collect(),
        )
        .into_value()
}

/// Evaluates a condition or value expression in `scope`.
pub fn eval_expr(env: &Environment<'static>, src: &str, scope: &Value) -> Result<Value, String> {
    env.compile_expression(src)
        .and_then(|e| e.eval(scope))
        .map_err(|e| error_text(&e))
}

/// Renders a text field: a template when it has `<< >>` or `<% %>` parts, else as is.
pub fn render_text(
    env: &Environment<'static>,
    text: &str,
    scope: &Value,
) -> Result<String, String> {
    if !(text.contains("<<") || text.contains("<%")) {
        return Ok(text.to_owned());
    }
    env.render_str(text, scope).map_err(|e| error_text(&e))
}

/// Formats a minijinja error as one line (kind, detail, no debug dump).
pub fn error_text(err: &minijinja::Error) -> String {
    let mut text = match err.detail() {
        Some(detail) => format!("{}: {detail}", err.kind()),
        None => err.kind().to_string(),
    };
    let mut source = std::error::Error::source(err);
    while let Some(inner) = source {
        text.push_str(": ");
        text.push_str(&inner.to_string());
        source = inner.source();
    }
    text
}

/// Evaluates `plan` in `ctx`.
pub fn evaluate(
    env: &Environment<'static>,
    plan: &[(String, ValuePlan)],
    ctx: &Context,
) -> Result<Evidence, EvalError> {
    let mut evidence = Evidence::new();
    let base = ctx.scope();
    let profile = std::env::var_os("CALDERA_PROFILE").is_some();
    for (name, value) in plan {
        let started = std::time::Instant::now();
        let path = format!("evidence.{name}");
        let scope = base.clone().with_names(
            evidence
                .iter()
                .map(|(k, v)| (k.clone(), v.to_value()))
                .collect(),
        );
        let computed = match value {
            ValuePlan::Select(sel) => {
                sel.select(&ctx.root_with(&evidence))
                    .map_err(|message| EvalError {
                        key_path: path.clone(),
                        item: None,
                        message,
                    })?
            }
            ValuePlan::Records(rec) => {
                eval_records(env, rec, &scope, &ctx.root_with(&evidence), &path)?
            }
            other => {
                let compiled = Compiled::new(env, other, &path)?;
                compiled.eval(&scope.into_value(), &Doc::Null, &path, None)?
            }
        };
        if profile {
            eprintln!(
                "profile: {path}: {:.1} ms",
                started.elapsed().as_secs_f64() * 1e3
            );
        }
        evidence.insert(name.clone(), computed);
    }
    Ok(evidence)
}

/// A value plan with its expression or template compiled (once per evaluation block, so
/// record lists do not recompile per item).
enum Compiled<'env> {
    Select(&'env crate::evidence::select::Selector),
    Expr(Expression<'env, 'env>),
    Template(Template<'env, 'env>),
    Const(Doc),
    Records,
}

impl<'env> Compiled<'env> {
    fn new(
        env: &'env Environment<'static>,
        plan: &'env ValuePlan,
        path: &str,
    ) -> Result<Compiled<'env>, EvalError> {
        let err = |e: minijinja::Error| EvalError {
            key_path: path.to_owned(),
            item: None,
            message: error_text(&e),
        };
        Ok(match plan {
            ValuePlan::Select(s) => Compiled::Select(s),
            ValuePlan::Expr(src) => Compiled::Expr(env.compile_expression(src).map_err(err)?),
            ValuePlan::Template(src) => {
                Compiled::Template(env.template_from_str(src).map_err(err)?)
            }
            ValuePlan::Const(d) => Compiled::Const(d.clone()),
            ValuePlan::Records(_) => Compiled::Records,
        })
    }

    fn eval(
        &self,
        scope: &Value,
        root: &Doc,
        path: &str,
        item: Option<&str>,
    ) -> Result<Doc, EvalError> {
        let err = |message: String| EvalError {
            key_path: path.to_owned(),
            item: item.map(str::to_owned),
            message,
        };
        match self {
            Compiled::Select(s) => s.select(root).map_err(err),
            Compiled::Expr(e) => e
                .eval(scope)
                .map(|v| Doc::from_value(&v))
                .map_err(|e| err(error_text(&e))),
            Compiled::Template(t) => t
                .render(scope)
                .map(Doc::from)
                .map_err(|e| err(error_text(&e))),
            Compiled::Const(d) => Ok(d.clone()),
            Compiled::Records => Err(err("record lists cannot be nested".into())),
        }
    }
}

/// A short label for an item in error messages: its `id`/`repo` field, else its index.
fn item_label(item: &Doc, index: usize) -> String {
    ["id", "repo", "name"]
        .iter()
        .find_map(|k| item.field(k).and_then(Doc::as_str).map(str::to_owned))
        .unwrap_or_else(|| format!("#{index}"))
}

fn eval_records(
    env: &Environment<'static>,
    rec: &RecordsPlan,
    scope: &Scope,
    root: &Doc,
    path: &str,
) -> Result<Doc, EvalError> {
    let for_each_path = format!("{path}.for_each");
    let items = match &rec.for_each {
        ValuePlan::Select(sel) => sel.matches(root).map_err(|message| EvalError {
            key_path: for_each_path.clone(),
            item: None,
            message,
        })?,
        other => {
            let compiled = Compiled::new(env, other, &for_each_path)?;
            match compiled.eval(&scope.clone().into_value(), root, &for_each_path, None)? {
                Doc::Array(items) => items.0.clone(),
                Doc::Null => Vec::new(),
                got => {
                    return Err(EvalError {
                        key_path: for_each_path,
                        item: None,
                        message: format!("for_each must give a list, got {}", got.type_name()),
                    });
                }
            }
        }
    };
    let filter_path = format!("{path}.where");
    // Large lists are split over the cores; each worker compiles its own expressions
    // (cheap) and the records come back in item order.
    let workers = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(items.len() / PARALLEL_MIN_ITEMS)
        .max(1);
    if workers == 1 {
        return eval_items(env, rec, scope, &items, 0, path, &filter_path).map(Doc::from);
    }
    let chunk = items.len().div_ceil(workers);
    let parts: Vec<Result<Vec<Doc>, EvalError>> = std::thread::scope(|s| {
        let handles: Vec<_> = items
            .chunks(chunk)
            .enumerate()
            .map(|(i, part)| {
                let filter_path = &filter_path;
                s.spawn(move || eval_items(env, rec, scope, part, i * chunk, path, filter_path))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join().unwrap_or_else(|_| {
                    Err(EvalError {
                        key_path: path.to_owned(),
                        item: None,
                        message: "a worker evaluating this record list failed".into(),
                    })
                })
            })
            .collect()
    });
    let mut out = Vec::with_capacity(items.len());
    for part in parts {
        out.extend(part?);
    }
    Ok(Doc::from(out))
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

/// Evaluates `items` (starting at index `offset` of the whole list) into records.
fn eval_items(
    env: &Environment<'static>,
    rec: &RecordsPlan,
    scope: &Scope,
    items: &[Doc],
    offset: usize,
    path: &str,
    filter_path: &str,
) -> Result<Vec<Doc>, EvalError> {
    let filter = rec
        .filter
        .as_deref()
        .map(|src| {
            env.compile_expression(src).map_err(|e| EvalError {
                key_path: filter_path.to_owned(),
                item: None,
                message: error_text(&e),
            })
        })
        .transpose()?;
    // Names are shared, not re-allocated per item.
    let fields: Vec<(crate::doc::Str, String, Compiled<'_>)> = rec
        .fields
        .iter()
        .map(|(name, plan)| {
            let p = format!("{path}.fields.{name}");
            Compiled::new(env, plan, &p).map(|c| (crate::doc::Str::from(name.as_str()), p, c))
        })
        .collect::<Result<_, _>>()?;
    let item_key = crate::doc::Str::from("item");

    let mut out = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let mut item_scope = scope.clone();
        if matches!(item, Doc::Object(_)) {
            item_scope = item_scope.with(item.to_value());
        }
        let layer = std::sync::Arc::new(FieldsLayer::default());
        if let Ok(mut m) = layer.0.lock() {
            m.insert(item_key.clone(), item.to_value());
        }
        let item_value = item_scope
            .with(Value::from_dyn_object(layer.clone()))
            .into_value();
        if let Some(f) = &filter {
            let keep = f.eval(&item_value).map_err(|e| EvalError {
                key_path: filter_path.to_owned(),
                item: Some(item_label(item, offset + i)),
                message: error_text(&e),
            })?;
            if !keep.is_true() {
                continue;
            }
        }
        let mut record: Vec<(crate::doc::Str, Doc)> = Vec::with_capacity(fields.len());
        for (name, p, compiled) in &fields {
            let value = compiled
                .eval(&item_value, item, p, None)
                .map_err(|e| EvalError {
                    item: Some(item_label(item, offset + i)),
                    ..e
                })?;
            if let Ok(mut m) = layer.0.lock() {
                m.insert(name.clone(), value.to_value());
            }
            record.push((name.clone(), value));
        }
        out.push(Doc::object(record));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evidence::select::Selector;

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
                        (
                            "found".to_owned(),
                            ValuePlan::Expr("result.v | length".into()),
                        ),
                        ("ok".to_owned(), ValuePlan::Expr("found >= truth.n".into())),
                    ],
                })),
            ),
            (
                "total".to_owned(),
                ValuePlan::Expr("per_repo | sum(attribute='found')".into()),
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

    #[test]
    fn errors_name_the_key_and_item() {
        let env = crate::render::environment();
        let plan = vec![(
            "per_repo".to_owned(),
            ValuePlan::Records(Box::new(RecordsPlan {
                for_each: ValuePlan::Select(Selector::parse("$.repos[*]").unwrap()),
                filter: None,
                fields: vec![("bad".to_owned(), ValuePlan::Expr("truth.n + 1".into()))],
            })),
        )];
        let err = evaluate(&env, &plan, &ctx()).unwrap_err();
        assert_eq!(err.key_path, "evidence.per_repo.fields.bad");
        assert_eq!(err.item.as_deref(), Some("b"));
    }
}
