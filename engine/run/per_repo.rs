//! The per-repo phase of a run: per-repo suite evidence records and `scope: repo`
//! judges' units, computed for a set of repos into a [`Partial`], from inputs held in
//! memory or read a chunk at a time. A shard runs it on its repos and a streamed run on
//! every repo; the aggregate phase (`run::shard::merge`) takes it from there.

use indexmap::IndexMap;
use minijinja::Environment;

use crate::diag::Diagnostic;
use crate::doc::Doc;
use crate::evidence::eval::{Context, evaluate};
use crate::load::documents::Keep;
use crate::load::inputs::{Inputs, Overrides, load_inputs_streaming};
use crate::load::parts::{Part, Parts, classify};
use crate::load::suite::Suite;
use crate::run::RunError;
use crate::run::context::{build_context, evidence_error};
use crate::run::partial::{Faithful, Partial, PartialUnit};
use crate::run::units::prepare;
use crate::verdict::combine::Unit;

/// The environment variable that turns streaming off.
pub(crate) const NO_STREAM_VAR: &str = "CALDERA_NO_STREAM";

/// Whether `CALDERA_NO_STREAM` asks every run and shard to read its inputs whole.
pub(crate) fn turned_off() -> bool {
    std::env::var_os(NO_STREAM_VAR).is_some_and(|v| !v.is_empty())
}

/// Constant and per-repo suite evidence, then the per-repo judges' units, for the
/// repos of `inputs`.
pub(crate) fn per_repo_phase(
    env: &Environment<'static>,
    suite: &Suite,
    parts: &Parts,
    inputs: &Inputs,
    partial: &mut Partial,
) -> Result<(), Vec<Diagnostic>> {
    let mut ctx = build_context(suite, inputs);
    let repo_items = match ctx.names.get("repos") {
        Some(Doc::Array(items)) => items.0.clone(),
        _ => Vec::new(),
    };
    for (entry, (_, part)) in suite.evidence.iter().zip(&parts.evidence) {
        let (name, plan) = entry;
        match part {
            Part::Constant => {
                let value = evaluate(env, std::slice::from_ref(entry), &ctx)
                    .map_err(|e| vec![evidence_error(suite, &e)])?;
                ctx.names.extend(value);
            }
            Part::PerRepo => {
                let mut by_repo = IndexMap::new();
                for item in &repo_items {
                    let (id, records) = repo_records(env, suite, (name, plan), &ctx, item)?;
                    by_repo.insert(id, records);
                }
                // A streaming run comes here once per chunk of repos.
                partial
                    .records
                    .entry(name.clone())
                    .or_default()
                    .extend(by_repo);
            }
            Part::Aggregate | Part::Whole(_) => {}
        }
    }
    for (plan, part) in suite.judges.iter().zip(&parts.judges) {
        if *part == Part::PerRepo {
            let units = prepare(env, plan, &ctx);
            partial
                .units
                .entry(plan.spec.dimension.clone())
                .or_default()
                .extend(units.iter().map(to_partial_unit));
        }
    }
    Ok(())
}

/// The records one repo contributes to a per-repo record list: the list evaluated with
/// `repos` holding that repo alone (its fields read only the item).
fn repo_records(
    env: &Environment<'static>,
    suite: &Suite,
    (name, plan): (&String, &crate::evidence::plan::ValuePlan),
    ctx: &Context,
    item: &Doc,
) -> Result<(String, Vec<Faithful>), Vec<Diagnostic>> {
    let id = item
        .field("id")
        .and_then(Doc::as_str)
        .unwrap_or_default()
        .to_owned();
    let mut one = ctx.clone();
    one.names
        .insert("repos".to_owned(), Doc::from(vec![item.clone()]));
    let entry = [(name.clone(), plan.clone())];
    let value = evaluate(env, &entry, &one).map_err(|e| vec![evidence_error(suite, &e)])?;
    let records = match value.get(name) {
        Some(Doc::Array(items)) => items.iter().cloned().map(Faithful).collect(),
        _ => Vec::new(),
    };
    Ok((id, records))
}

fn to_partial_unit(unit: &Unit) -> PartialUnit {
    PartialUnit {
        repo: unit.repo.clone().unwrap_or_default(),
        evidence: unit
            .evidence
            .as_ref()
            .map(|ev| {
                ev.iter()
                    .map(|(k, v)| (k.clone(), Faithful(v.clone())))
                    .collect()
            })
            .map_err(Clone::clone),
        failures: unit.failures.clone(),
        assertions_ran: unit.assertions_ran,
        heuristic: unit.heuristic.clone(),
    }
}

/// The per-repo phase over the inputs read a chunk at a time: the records and units of
/// the repos `keep` says yes to (every repo when `None`) go into `partial`, their private
/// evidence dropped chunk by chunk. What comes back is the inputs' shells (every document
/// `null`), for what the whole read tells: repo order, summary, problems.
pub(crate) fn per_repo_streamed(
    env: &Environment<'static>,
    suite: &Suite,
    (overrides, keep): (&Overrides, Option<Keep<'_>>),
    partial: &mut Partial,
) -> Result<Inputs, RunError> {
    let parts = classify(suite);
    crate::doc::streaming_starts();
    let mut failed: Option<Vec<Diagnostic>> = None;
    let mut chunk = |inputs: &Inputs| {
        if failed.is_none()
            && let Err(e) = per_repo_phase(env, suite, &parts, inputs, partial)
        {
            failed = Some(e);
        }
        partial
            .shard_repos
            .extend(inputs.results.iter().map(|d| d.id.clone()));
        partial.drop_private_evidence();
    };
    let shells = load_inputs_streaming(suite, overrides, keep, &mut chunk)?;
    if let Some(e) = failed {
        return Err(e.into());
    }
    // With no repo of its own, the partial still lists every per-repo part, empty, as a
    // read in memory leaves it.
    for (name, part) in &parts.evidence {
        if *part == Part::PerRepo {
            partial.records.entry(name.clone()).or_default();
        }
    }
    for (plan, part) in suite.judges.iter().zip(&parts.judges) {
        if *part == Part::PerRepo {
            partial
                .units
                .entry(plan.spec.dimension.clone())
                .or_default();
        }
    }
    Ok(shells)
}
