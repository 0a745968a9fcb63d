//! Assertions: checks over the evidence that run in every mode. A failure is listed on
//! the verdict; an assertion that cannot even be evaluated counts as failed (never as
//! passed), with the error as its message.

use minijinja::Environment;
use minijinja::value::Value;

use crate::evidence::eval::{eval_expr, render_text};
use crate::evidence::plan::condition_source;
use crate::spec::judge::AssertionSpec;
use crate::verdict::types::AssertionFailure;

/// Runs every assertion; returns the failures in order.
pub fn check(
    env: &Environment<'static>,
    assertions: &[AssertionSpec],
    scope: &Value,
    repo: Option<&str>,
) -> Vec<AssertionFailure> {
    let mut failures = Vec::new();
    for (i, a) in assertions.iter().enumerate() {
        let message = match eval_expr(env, condition_source(&a.that), scope) {
            Ok(v) if v.is_true() => continue,
            Ok(_) => render_text(env, &a.message, scope)
                .unwrap_or_else(|e| format!("{} (message could not be rendered: {e})", a.message)),
            Err(e) => format!("assertions[{i}] could not be evaluated: {e}"),
        };
        failures.push(AssertionFailure {
            message,
            cap: a.cap,
            repo: repo.map(str::to_owned),
        });
    }
    failures
}

/// The lowest cap among `failures`.
pub fn lowest_cap(failures: &[AssertionFailure]) -> Option<i64> {
    failures.iter().filter_map(|f| f.cap).min()
}
