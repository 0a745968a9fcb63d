//! Prepares the units of judgement: for every judge, the whole suite or each repo, with
//! its evidence, the outcome of its assertions and its heuristic's outcome. Everything a
//! score source needs is computed here once, whatever the source.

use minijinja::Environment;

use crate::doc::Doc;
use crate::evidence::eval::{Context, evaluate, full_scope};
use crate::load::judge::JudgePlan;
use crate::load::suite::Suite;
use crate::run::context::repo_context;
use crate::spec::judge::Scope;
use crate::verdict::assertions::check;
use crate::verdict::combine::Unit;
use crate::verdict::heuristic::{self, HeuristicOutcome};

/// Computes the units of `plan`: evidence, assertions and heuristic outcome.
pub fn prepare(env: &Environment<'static>, plan: &JudgePlan, ctx: &Context) -> Vec<Unit> {
    match plan.spec.scope {
        Scope::Suite => vec![prepare_unit(env, plan, ctx.clone(), None)],
        Scope::Repo => {
            let repos = match ctx.names.get("repos") {
                Some(Doc::Array(items)) => items.0.clone(),
                _ => Vec::new(),
            };
            repos
                .iter()
                .map(|repo| {
                    let id = repo
                        .field("id")
                        .and_then(Doc::as_str)
                        .unwrap_or_default()
                        .to_owned();
                    prepare_unit(env, plan, repo_context(ctx, repo), Some(id))
                })
                .collect()
        }
    }
}

fn prepare_unit(
    env: &Environment<'static>,
    plan: &JudgePlan,
    ctx: Context,
    repo: Option<String>,
) -> Unit {
    let evidence = evaluate(env, &plan.evidence, &ctx).map_err(|e| e.to_string());
    let (failures, heuristic) = match &evidence {
        Ok(ev) => {
            let scope = full_scope(&ctx, ev);
            let root = ctx.root_with(ev);
            let failures = check(env, &plan.assertions, &scope, &root, repo.as_deref());
            let heuristic = match &plan.heuristic {
                Some(h) => heuristic::evaluate(env, h, ev, &scope),
                None => HeuristicOutcome::Unscored(
                    "the judge has no heuristic; it is scored only in LLM mode".into(),
                ),
            };
            (failures, heuristic)
        }
        Err(e) => (
            Vec::new(),
            HeuristicOutcome::Error(format!("evidence could not be computed: {e}")),
        ),
    };
    Unit {
        repo,
        ctx,
        assertions_ran: evidence.is_ok(),
        evidence,
        failures,
        heuristic,
    }
}

/// Computes every judge's units, judges spread over the cores; results come back in
/// suite order.
pub fn prepare_all(env: &Environment<'static>, suite: &Suite, ctx: &Context) -> Vec<Vec<Unit>> {
    let n = suite.judges.len();
    let workers = std::thread::available_parallelism()
        .map_or(1, |w| w.get())
        .min(n)
        .max(1);
    if workers == 1 {
        return suite.judges.iter().map(|p| prepare(env, p, ctx)).collect();
    }
    let next = std::sync::atomic::AtomicUsize::new(0);
    let slots: std::sync::Mutex<Vec<Option<Vec<Unit>>>> =
        std::sync::Mutex::new((0..n).map(|_| None).collect());
    std::thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some(plan) = suite.judges.get(i) else {
                        break;
                    };
                    let units = prepare(env, plan, ctx);
                    if let Ok(mut slots) = slots.lock() {
                        slots[i] = Some(units);
                    }
                }
            });
        }
    });
    slots
        .into_inner()
        .unwrap_or_default()
        .into_iter()
        .map(Option::unwrap_or_default)
        .collect()
}
