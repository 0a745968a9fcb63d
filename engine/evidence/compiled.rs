//! Expressions compiled once, when a judge is loaded, and evaluated for every unit
//! (the suite, or each repo) without being parsed again.

use std::sync::Arc;

use minijinja::Expression;
use minijinja::value::Value;

use crate::evidence::error::EvalError;

/// One expression as the judge wrote it, with its compiled form.
///
/// An expression that does not compile keeps the compiler's message: load reports it as
/// a diagnostic, and evaluating it gives the same error an evaluation from the text
/// would, so a plan built from a judge with errors still behaves as the text says.
#[derive(Clone)]
pub struct Expr {
    source: String,
    compiled: Result<Arc<Expression<'static, 'static>>, EvalError>,
}

impl Expr {
    /// Compiles `source` against `env`, which must live as long as the plans (the
    /// loader passes the process-wide one, `render::shared`). Taking it as an argument
    /// keeps evidence/ below render/, which registers evidence's functions.
    pub fn compile(env: &'static minijinja::Environment<'static>, source: &str) -> Expr {
        let bounded = crate::evidence::operators::bounded_expression(source).into_owned();
        let compiled = env
            .compile_expression_owned(bounded)
            .map(Arc::new)
            .map_err(|e| EvalError::from_minijinja(&e));
        Expr {
            source: source.to_owned(),
            compiled,
        }
    }

    /// The expression as written (without `<< >>`).
    pub fn source(&self) -> &str {
        &self.source
    }

    /// The compiled expression, or the compiler's error.
    pub fn compiled(&self) -> Result<&Expression<'static, 'static>, &EvalError> {
        self.compiled.as_deref()
    }

    /// Evaluates the expression in `scope`; the error is not yet located (the caller
    /// knows the key path).
    pub fn eval(&self, scope: &Value) -> Result<Value, EvalError> {
        self.compiled()
            .map_err(Clone::clone)?
            .eval(scope)
            .map_err(|e| EvalError::from_minijinja(&e))
    }
}

impl std::fmt::Debug for Expr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Expr").field(&self.source).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn evaluates_like_the_text_and_keeps_compile_errors() {
        let env = crate::render::shared();
        let e = Expr::compile(env, "n * 2");
        let v = e.eval(&minijinja::context! { n => 21 }).unwrap();
        assert_eq!(v, Value::from(42));
        let bad = Expr::compile(env, "n *");
        let from_text = crate::evidence::eval::eval_expr(
            &crate::render::environment(),
            "n *",
            &Value::from(()),
        );
        assert_eq!(bad.eval(&Value::from(())), from_text);
        assert!(bad.compiled().is_err());
    }

    #[test]
    fn debug_shows_the_source() {
        let e = Expr::compile(crate::render::shared(), "n * 2");
        assert_eq!(format!("{e:?}"), r#"Expr("n * 2")"#);
        assert_eq!(e.source(), "n * 2");
    }
}
