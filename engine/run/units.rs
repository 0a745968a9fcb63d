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
pub(crate) fn prepare(env: &Environment<'static>, plan: &JudgePlan, ctx: &Context) -> Vec<Unit> {
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
    let evidence = evaluate(env, &plan.evidence, &ctx);
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
pub(crate) fn prepare_all(
    env: &Environment<'static>,
    suite: &Suite,
    ctx: &Context,
) -> Vec<Vec<Unit>> {
    crate::par::map(&suite.judges, |plan| prepare(env, plan, ctx))
}
