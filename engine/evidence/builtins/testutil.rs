//! Helpers for the unit tests: evaluate judge expressions through a real
//! `Environment` so that registration is exercised too.

use minijinja::{Environment, Value};

/// An environment with every built-in registered.
pub(crate) fn env() -> Environment<'static> {
    let mut env = Environment::new();
    super::register(&mut env);
    env
}

/// Evaluates `expr` against `ctx` (anything serialisable), panicking with the
/// error so a failing test shows the message.
pub(crate) fn eval(expr: &str, ctx: serde_json::Value) -> Value {
    let env = env();
    let compiled = env
        .compile_expression(expr)
        .unwrap_or_else(|e| panic!("compile {expr}: {e:#}"));
    compiled
        .eval(Value::from(minijinja::value::Serde(&ctx)))
        .unwrap_or_else(|e| panic!("eval {expr}: {e:#}"))
}

/// Evaluates `expr` and renders the result as compact JSON for comparison.
pub(crate) fn json(expr: &str, ctx: serde_json::Value) -> String {
    serde_json::to_string(&eval(expr, ctx)).expect("result serialises")
}

/// Evaluates `expr`, expecting an error; returns its full message.
pub(crate) fn error(expr: &str, ctx: serde_json::Value) -> String {
    let env = env();
    let compiled = env
        .compile_expression(expr)
        .unwrap_or_else(|e| panic!("compile {expr}: {e:#}"));
    match compiled.eval(Value::from(minijinja::value::Serde(&ctx))) {
        Ok(v) => panic!("expected an error from {expr}, got {v:?}"),
        Err(e) => format!("{e:#}"),
    }
}

/// A JSON document exposed lazily as a minijinja object, like the engine
/// does, so tests prove the built-ins never assume concrete map types.
#[derive(Debug)]
pub(crate) struct Lazy(pub serde_json::Value);

impl Lazy {
    pub(crate) fn wrap(json: &serde_json::Value) -> Value {
        match json {
            serde_json::Value::Object(_) | serde_json::Value::Array(_) => {
                Value::from_object(Lazy(json.clone()))
            }
            scalar => Value::from(minijinja::value::Serde(scalar)),
        }
    }
}

impl minijinja::value::Object for Lazy {
    fn repr(self: &std::sync::Arc<Self>) -> minijinja::value::ObjectRepr {
        match self.0 {
            serde_json::Value::Array(_) => minijinja::value::ObjectRepr::Seq,
            _ => minijinja::value::ObjectRepr::Map,
        }
    }

    fn get_value(self: &std::sync::Arc<Self>, key: &Value) -> Option<Value> {
        match &self.0 {
            serde_json::Value::Array(items) => items.get(key.as_usize()?).map(Lazy::wrap),
            serde_json::Value::Object(map) => map.get(key.as_str()?).map(Lazy::wrap),
            _ => None,
        }
    }

    fn enumerate(self: &std::sync::Arc<Self>) -> minijinja::value::Enumerator {
        match &self.0 {
            serde_json::Value::Array(items) => minijinja::value::Enumerator::Seq(items.len()),
            serde_json::Value::Object(map) => minijinja::value::Enumerator::Values(
                map.keys().map(|k| Value::from(k.as_str())).collect(),
            ),
            _ => minijinja::value::Enumerator::Empty,
        }
    }
}

/// Like [`eval`], with every top-level context entry wrapped as [`Lazy`].
pub(crate) fn eval_lazy(expr: &str, ctx: serde_json::Value) -> Value {
    let env = env();
    let compiled = env
        .compile_expression(expr)
        .unwrap_or_else(|e| panic!("compile {expr}: {e:#}"));
    let serde_json::Value::Object(entries) = ctx else {
        panic!("context must be a JSON object");
    };
    let context = Value::from_pairs(entries.iter().map(|(k, v)| (k.as_str(), Lazy::wrap(v))));
    compiled
        .eval(context)
        .unwrap_or_else(|e| panic!("eval {expr}: {e:#}"))
}

/// [`eval_lazy`] rendered as compact JSON.
pub(crate) fn json_lazy(expr: &str, ctx: serde_json::Value) -> String {
    serde_json::to_string(&eval_lazy(expr, ctx)).expect("result serialises")
}
