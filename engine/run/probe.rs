//! `caldera validate` on a suite's own inputs (and `caldera run` on its inputs, as `data`
//! problems of the result): every judge is evaluated on them, and what only data can
//! show is reported with file, line and key path:
//!
//! - a field path (`truth.expectd.cves`) or name that never matched anything, with the
//!   keys found where it stopped (a misspelled path reads as undefined, which minijinja
//!   lets through: the judge would fall through to `when_no_data` or count nothing).
//!   Every read `load/reads.rs` finds is followed: `.get('k')`, subscripts, attribute
//!   strings of filters, string paths of built-ins, loop variables. A read under a guard
//!   that is undefined or `none` (a branch that did not run), into an empty list, or
//!   with an alternative that matched does not count;
//! - a JSONPath selector that never matched anything (a `null` it matched counts), with
//!   how far it got and the keys there;
//! - an expression that raised (an unknown filter named in a string, a type error);
//! - record-list items whose keys shadow a run-context name the record reads.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use indexmap::IndexMap;
use minijinja::value::{Value, ValueKind};
use minijinja::{Environment, Expression};

use crate::diag::{Code, Diagnostic, Span, did_you_mean_help};
use crate::doc::Doc;
use crate::evidence::eval::{Context, EvalError, Probe, evaluate_probed, full_scope};
use crate::evidence::plan::{RecordsPlan, ValuePlan, condition_source};
use crate::evidence::select::{Reach, Selector};
use crate::load::inputs::Inputs;
use crate::load::judge::JudgePlan;
use crate::load::names::FreeNames;
use crate::load::reads::{Condition, Seg, display};
use crate::load::suite::Suite;
use crate::load::yaml::KeyIndex;
use crate::render::CONTEXT_NAMES;
use crate::run::context::{build_context, repo_context};
use crate::spec::judge::{AssertionSpec, HeuristicSpec, Scope};
use crate::verdict::heuristic;

/// Evaluates the suite and every judge on `inputs`; returns what the data showed.
pub(crate) fn check_with_data(
    env: &Environment<'static>,
    suite: &Suite,
    inputs: &Inputs,
) -> Vec<Diagnostic> {
    let mut ctx = build_context(suite, inputs);
    let suite_probe = FileProbe::new(&suite.file, &suite.index, &suite.free_names);
    match evaluate_probed(env, &suite.evidence, &ctx, Some(&suite_probe)) {
        Ok(shared) => ctx.names.extend(shared),
        Err(e) => {
            suite_probe.error(&e);
            // Every judge reads the suite's evidence: nothing more can be checked.
            return suite_probe.report();
        }
    }
    let mut out = suite_probe.report();
    // Judges are independent once the suite's evidence is in: checked side by side,
    // reported in suite order.
    out.extend(
        crate::par::map(&suite.judges, |plan| check_judge(env, plan, &ctx))
            .into_iter()
            .flatten(),
    );
    out
}

/// Evaluates one judge on every unit (the suite, or each repo) and reports.
fn check_judge(env: &Environment<'static>, plan: &JudgePlan, ctx: &Context) -> Vec<Diagnostic> {
    let probe = FileProbe::new(&plan.file, &plan.index, &plan.free_names);
    let units: Vec<Context> = match plan.spec.scope {
        Scope::Suite => vec![ctx.clone()],
        Scope::Repo => match ctx.names.get("repos") {
            Some(Doc::Array(repos)) => repos.iter().map(|r| repo_context(ctx, r)).collect(),
            _ => Vec::new(),
        },
    };
    for unit in &units {
        let evidence = match evaluate_probed(env, &plan.evidence, unit, Some(&probe)) {
            Ok(ev) => ev,
            Err(e) => {
                probe.error(&e);
                continue;
            }
        };
        let scope = full_scope(unit, &evidence);
        if let (Some(h), Some(compiled)) = (&plan.spec.heuristic, &plan.heuristic) {
            probe_heuristic(&probe, h, &scope);
            if let Err(e) = heuristic::checked(env, compiled, &evidence, &scope) {
                probe.error(&e);
            }
        }
        let root = unit.root_with(&evidence);
        probe_assertions(env, &probe, plan, &scope, &root);
    }
    probe.report()
}

/// Shows every expression of a heuristic to the probe.
fn probe_heuristic(probe: &FileProbe<'_>, h: &HeuristicSpec, scope: &Value) {
    let mut sites: Vec<(String, &str)> = vec![("heuristic.reasoning".into(), &h.reasoning)];
    if let Some(nd) = &h.when_no_data {
        sites.push((
            "heuristic.when_no_data.if".into(),
            condition_source(&nd.condition),
        ));
        sites.push(("heuristic.when_no_data.reasoning".into(), &nd.reasoning));
    }
    for (i, a) in h.adjust.iter().enumerate() {
        sites.push((
            format!("heuristic.adjust[{i}].if"),
            condition_source(&a.condition),
        ));
        sites.push((format!("heuristic.adjust[{i}].reason"), &a.reason));
    }
    for (i, r) in h.recommendations.iter().enumerate() {
        if let Some(c) = &r.condition {
            sites.push((
                format!("heuristic.recommendations[{i}].if"),
                condition_source(c),
            ));
        }
        sites.push((format!("heuristic.recommendations[{i}].text"), &r.text));
    }
    for (i, t) in h.evidence_cited.iter().enumerate() {
        sites.push((format!("heuristic.evidence_cited[{i}]"), t));
    }
    for (name, e) in &h.sub_scores {
        sites.push((format!("heuristic.sub_scores.{name}"), condition_source(e)));
    }
    for (path, src) in sites {
        probe.expression(&path, src, scope);
    }
}

/// Runs the assertions, showing their expressions to the probe (per item for `for_each`)
/// and reporting those that could not be evaluated.
fn probe_assertions(
    env: &Environment<'static>,
    probe: &FileProbe<'_>,
    plan: &JudgePlan,
    scope: &Value,
    root: &Doc,
) {
    for (i, (a, compiled)) in plan
        .spec
        .assertions
        .iter()
        .zip(&plan.assertions)
        .enumerate()
    {
        let path = format!("assertions[{i}]");
        match &a.for_each {
            None => probe_check(probe, a, &path, scope),
            Some(fe) => {
                let fe_path = format!("{path}.for_each");
                let items_of = || match &compiled.for_each {
                    Some(plan) => crate::verdict::assertions::items_of(plan, scope, root),
                    None => Ok(Vec::new()),
                };
                if fe.trim().starts_with('$') {
                    if let Ok(items) = items_of() {
                        probe.selected(&fe_path, &Doc::from(items));
                    }
                } else {
                    probe.expression(&fe_path, condition_source(fe), scope);
                }
                let items = items_of().unwrap_or_default();
                for n in 0..items.len() {
                    let item_scope = crate::verdict::assertions::item_scope(scope, &items, n);
                    probe_check(probe, a, &path, &item_scope);
                }
            }
        }
    }
    let failures = crate::verdict::assertions::check(env, &plan.assertions, scope, root, None);
    for e in failures.iter().filter_map(|f| f.error.as_ref()) {
        probe.error(e);
    }
}

/// Shows the probe what an assertion evaluates in `scope`: `that` and `message`, or
/// `failures`.
fn probe_check(probe: &FileProbe<'_>, a: &AssertionSpec, path: &str, scope: &Value) {
    if let Some(f) = &a.failures {
        probe.expression(&format!("{path}.failures"), condition_source(f), scope);
        return;
    }
    probe.expression(&format!("{path}.that"), condition_source(&a.that), scope);
    probe.expression(&format!("{path}.message"), &a.message, scope);
}

// ------------------------------------------------------------------ the probe

/// What was seen in one file (a judge or `suite.yaml`), by key path.
struct FileProbe<'a> {
    file: &'a Path,
    index: &'a KeyIndex,
    /// The free names found at load, so expressions are not parsed again.
    free_names: &'a FreeNames,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// Field paths read by each expression.
    paths: IndexMap<String, Site>,
    /// Each selector by key path: whether it ever found something, and else how far it
    /// got at best.
    selectors: IndexMap<String, SelectorSeen>,
    /// Item keys shadowing a context name: (record list path, name) -> example item.
    shadows: IndexMap<(String, String), String>,
    /// Evaluation errors: key path -> (the first error raised there, times).
    errors: IndexMap<String, (EvalError, usize)>,
}

/// What one selector found over the suite's inputs.
#[derive(Default)]
struct SelectorSeen {
    found: bool,
    reach: Option<Reach>,
}

/// The reads of one expression, and its guards.
struct Site {
    traced: Vec<Traced>,
    guards: Vec<Vec<Seg>>,
}

/// One field path of one expression.
struct Traced {
    segments: Vec<Seg>,
    /// The path as written, to point at it in the file.
    written: String,
    /// Alternatives share a group (`coalesce(a.x, a.y)`): one matching is enough.
    group: Option<usize>,
    /// The conditions of the branch it is in, compiled, with the truth each needs.
    branch: Vec<(Arc<Expression<'static, 'static>>, bool)>,
    matched: bool,
    /// How many leading segments were found at best, and the keys there.
    deepest: usize,
    keys: BTreeSet<String>,
    times: usize,
}

/// Keys kept per traced path, for "did you mean".
const KEYS_KEPT: usize = 64;

impl<'a> FileProbe<'a> {
    fn new(file: &'a Path, index: &'a KeyIndex, free_names: &'a FreeNames) -> FileProbe<'a> {
        FileProbe {
            file,
            index,
            free_names,
            state: Mutex::new(State::default()),
        }
    }

    fn error(&self, e: &EvalError) {
        if let Ok(mut s) = self.state.lock() {
            s.errors
                .entry(e.key_path.clone())
                .or_insert((e.clone(), 0))
                .1 += 1;
        }
    }

    fn locate(&self, d: Diagnostic, path: &str, text: Option<&str>) -> Diagnostic {
        let span = self.index.value_span(path);
        let narrowed = text.and_then(|t| {
            let span = span?;
            let source = std::fs::read_to_string(self.file).ok()?;
            let value = source.get(span.start..span.end)?;
            let at = value.find(t)?;
            Some(Span::from_offsets(
                &source,
                span.start + at,
                span.start + at + t.len(),
            ))
        });
        let d = d.in_file(self.file).at(narrowed.or(span));
        if path.is_empty() { d } else { d.key(path) }
    }

    /// Everything seen, as diagnostics in key-path order of first sight.
    fn report(&self) -> Vec<Diagnostic> {
        let Ok(state) = self.state.lock() else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for (path, (e, times)) in &state.errors {
            let d = e.to_diagnostic();
            let d = if *times > 1 {
                d.note(format!("raised {times} times on the suite's inputs"))
            } else {
                d.note("raised on the suite's inputs")
            };
            out.push(self.locate(d, path, None));
        }
        for ((path, name), item) in &state.shadows {
            let d = Diagnostic::warning(
                Code::ShadowedName,
                format!(
                    "items of `{path}` have a key `{name}`, which shadows the run context's `{name}` inside the record list (and the record reads `{name}`)"
                ),
            )
            .note(format!("for example item {item}"))
            .help(format!(
                "read the item's key as `item.{name}`; for the run's `{name}`, copy it to an evidence name before the record list (`_all_{name}: << {name} >>`)"
            ));
            out.push(self.locate(d, &format!("{path}.for_each"), None));
        }
        for (path, seen) in &state.selectors {
            if seen.found {
                continue;
            }
            out.push(self.locate(selector_never_matched(seen.reach.as_ref()), path, None));
        }
        for (path, site) in &state.paths {
            let alternative_matched = |t: &Traced| {
                t.group.is_some()
                    && site
                        .traced
                        .iter()
                        .any(|other| other.group == t.group && other.matched)
            };
            // The same path read in several branches: one report, none if it matched.
            let mut seen: Vec<&[Seg]> = Vec::new();
            let path_matched = |t: &Traced| {
                site.traced
                    .iter()
                    .any(|other| other.matched && other.segments == t.segments)
            };
            for t in site.traced.iter().filter(|t| {
                !t.matched && t.times > 0 && !alternative_matched(t) && !path_matched(t)
            }) {
                if seen.contains(&t.segments.as_slice()) {
                    continue;
                }
                seen.push(&t.segments);
                out.push(self.locate(never_matched(t), path, Some(&t.written)));
            }
        }
        // In the order of the file.
        out.sort_by_key(|d| d.span.map_or(0, |s| s.start));
        out
    }
}

/// The warning for a selector that never matched: how far it got, the keys found there
/// and "did you mean", as for field paths.
fn selector_never_matched(reach: Option<&Reach>) -> Diagnostic {
    let d = Diagnostic::warning(
        Code::NeverMatched,
        "this selector never matched anything in the suite's inputs",
    );
    let generic =
        "check each step of the path against the documents (a misspelled key selects nothing)";
    let Some(reach) = reach.filter(|r| r.steps > 0) else {
        return d.help(generic);
    };
    let Some(missing) = &reach.missing else {
        return d
            .note(format!(
                "`{}` was found, but not the next step",
                reach.found
            ))
            .help(generic);
    };
    if reach.keys.is_empty() {
        return d
            .note(format!(
                "`{}` was found but has no key `{missing}`",
                reach.found
            ))
            .help(generic);
    }
    let keys: Vec<&str> = reach.keys.iter().map(String::as_str).take(12).collect();
    let d = d.note(format!(
        "`{}` was found; its keys include: {}",
        reach.found,
        keys.join(", ")
    ));
    match did_you_mean_help(missing, reach.keys.iter().map(String::as_str)) {
        Some(h) => d.help(h.replacen('`', &format!("`{}.", reach.found), 1)),
        None => d.help(generic),
    }
}

/// The warning for a path that never matched.
fn never_matched(t: &Traced) -> Diagnostic {
    let text = display(&t.segments);
    if t.segments.len() == 1 {
        return Diagnostic::warning(
            Code::NeverMatched,
            format!("`{text}` is never defined where it is read, on any of the suite's inputs"),
        )
        .note(format!(
            "read {} time(s); it was undefined each time",
            t.times
        ))
        .maybe_help(crate::diag::did_you_mean_help(
            &text,
            t.keys.iter().map(String::as_str),
        ));
    }
    let found = display(&t.segments[..t.deepest]);
    let missing = match &t.segments[t.deepest.min(t.segments.len() - 1)] {
        Seg::Key(k) => k.clone(),
        other => display(std::slice::from_ref(other)),
    };
    let mut d = Diagnostic::warning(
        Code::NeverMatched,
        format!("field path `{text}` never matched anything in the suite's inputs"),
    )
    .note(format!(
        "read {} time(s); it was undefined each time, so it counts as missing (and may send the judge to `when_no_data`)",
        t.times
    ));
    if t.deepest == 0 {
        // The keys kept at depth 0 are the names in scope where it was read.
        let first = display(&t.segments[..1]);
        let help = crate::diag::did_you_mean_help(&first, t.keys.iter().map(String::as_str));
        return d
            .note(format!("`{first}` itself was never defined"))
            .maybe_help(help);
    }
    if !t.keys.is_empty() {
        let keys: Vec<&str> = t.keys.iter().map(String::as_str).take(12).collect();
        d = d.note(format!(
            "`{found}` was found; its keys include: {}",
            keys.join(", ")
        ));
        let prefix = format!("{found}.");
        d = d.maybe_help(
            did_you_mean_help(&missing, t.keys.iter().map(String::as_str))
                .map(|h| h.replacen('`', &format!("`{prefix}"), 1)),
        );
    } else {
        d = d.note(format!("`{found}` was found but has no key `{missing}`"));
    }
    d
}

impl Probe for FileProbe<'_> {
    fn expression(&self, path: &str, source: &str, scope: &Value) {
        let Ok(mut state) = self.state.lock() else {
            return;
        };
        let site = state
            .paths
            .entry(path.to_owned())
            .or_insert_with(|| site(source, self.free_names.get(source)));
        let guards = &site.guards;
        for t in site.traced.iter_mut().filter(|t| !t.matched) {
            trace(t, guards, scope);
        }
    }

    fn filtered_out(&self, path: &str, source: &str, item: &Doc, scope: &Value) {
        let Ok(mut state) = self.state.lock() else {
            return;
        };
        let site = state
            .paths
            .entry(path.to_owned())
            .or_insert_with(|| site(source, self.free_names.get(source)));
        // Only what the item holds: `item.key`, or a key of the item read as a name; and
        // not in a branch, whose conditions may read fields the item never got.
        let of_item = |t: &Traced| match t.segments.first() {
            Some(Seg::Key(root)) => {
                t.branch.is_empty() && (root == "item" || item.field(root).is_some())
            }
            _ => false,
        };
        let guards = &site.guards;
        for t in site.traced.iter_mut().filter(|t| !t.matched && of_item(t)) {
            trace(t, guards, scope);
        }
    }

    fn selected(&self, path: &str, found: &Doc) {
        if let Ok(mut state) = self.state.lock() {
            state.selectors.entry(path.to_owned()).or_default().found |= hit(found);
        }
    }

    fn selected_in(&self, path: &str, sel: &Selector, root: &Doc, found: &Doc) {
        let Ok(mut state) = self.state.lock() else {
            return;
        };
        let seen = state.selectors.entry(path.to_owned()).or_default();
        if seen.found || hit(found) {
            seen.found = true;
            return;
        }
        match sel.reach(root) {
            // It matched a `null`, or stopped at an empty list: nothing misspelled.
            Some(r) if r.complete || r.empty_list => seen.found = true,
            Some(r) if seen.reach.as_ref().is_none_or(|old| r.steps > old.steps) => {
                seen.reach = Some(r);
            }
            _ => {}
        }
    }

    fn records(&self, path: &str, rec: &RecordsPlan, items: &[Doc]) {
        if over_repos(&rec.for_each) {
            return; // their keys (`id`, `result`, `truth`) are the documented join
        }
        // The context names the record reads, found once for all its items.
        let mut read: Option<Vec<&str>> = None;
        for (n, item) in items.iter().enumerate() {
            let Doc::Object(map) = item else { continue };
            for name in CONTEXT_NAMES {
                if map.get(name).is_none() {
                    continue;
                }
                let read = read.get_or_insert_with(|| {
                    CONTEXT_NAMES
                        .iter()
                        .copied()
                        .filter(|name| reads(rec, name, self.free_names))
                        .collect()
                });
                if read.contains(name) {
                    let label = crate::evidence::eval::item_label(item, n);
                    if let Ok(mut state) = self.state.lock() {
                        state
                            .shadows
                            .entry((path.to_owned(), (*name).to_owned()))
                            .or_insert(label);
                    }
                }
            }
        }
    }
}

/// Whether a selector's result holds something.
fn hit(found: &Doc) -> bool {
    match found {
        Doc::Null => false,
        Doc::Array(items) => !items.is_empty(),
        _ => true,
    }
}

/// Whether a record list goes over the run's repos (the loader's rule).
fn over_repos(for_each: &ValuePlan) -> bool {
    match for_each {
        ValuePlan::Select(s) => s.source.trim().starts_with("$.repos"),
        ValuePlan::Expr(e) => e.source().trim().starts_with("repos"),
        _ => false,
    }
}

/// Whether any expression of the record list reads `name` as a name.
fn reads(rec: &RecordsPlan, name: &str, free: &FreeNames) -> bool {
    let text = |p: &ValuePlan| match p {
        ValuePlan::Expr(e) => first_segment_is(e.source(), name, free),
        ValuePlan::Template(s) => first_segment_is(s, name, free),
        _ => false,
    };
    rec.fields.iter().any(|(_, p)| text(p))
        || rec.key.as_ref().is_some_and(text)
        || rec.value.as_ref().is_some_and(text)
}

/// Whether a field path of the expression or template `source` starts at `name`.
fn first_segment_is(source: &str, name: &str, free: &FreeNames) -> bool {
    with_free_reads(source, free.get(source), |found, _| {
        found
            .reads
            .iter()
            .any(|r| matches!(r.segments.first(), Some(Seg::Key(root)) if root == name))
    })
    .unwrap_or(false)
}

/// What following a path through one scope showed.
#[derive(Clone, Copy, PartialEq)]
enum Outcome {
    Matched,
    Missed,
    /// Nothing to check: a guard of the path is undefined or `none` (the branch did not
    /// run, the value is optional), or a list it goes into is empty.
    Unchecked,
}

/// Items of one list followed for a path through `[*]`: enough to find a key some items
/// have, bounded so a large input does not slow `validate` down.
const ITEMS_FOLLOWED: usize = 1000;

/// Follows `t` in `scope`, noting how far it got. A read under a guard that is undefined
/// or `none` does not count.
fn trace(t: &mut Traced, guards: &[Vec<Seg>], scope: &Value) {
    if !branch_runs(&t.branch, scope) {
        return;
    }
    let segments = t.segments.clone();
    let outcome = Walk {
        segments: &segments,
        guards,
        t,
    }
    .step(scope, 0);
    match outcome {
        Outcome::Matched => {
            t.times += 1;
            t.matched = true;
        }
        Outcome::Missed => t.times += 1,
        Outcome::Unchecked => {}
    }
}

/// Whether the branch of a read runs in `scope`: each condition has the truth it needs
/// (one that cannot be evaluated is taken to hold: the read is checked).
fn branch_runs(branch: &[(Arc<Expression<'static, 'static>>, bool)], scope: &Value) -> bool {
    branch
        .iter()
        .all(|(condition, holds)| match condition.eval(scope) {
            Ok(value) => value.is_true() == *holds,
            Err(_) => true,
        })
}

/// The conditions of a branch that can be evaluated in the scope of the expression:
/// those that read only its free names (not a loop variable), compiled.
/// Each condition is compiled once per expression (`compiled`, by its text).
fn compile_branch(
    conditions: Vec<Condition>,
    free: &[String],
    compiled: &mut HashMap<String, Option<Arc<Expression<'static, 'static>>>>,
) -> Vec<(Arc<Expression<'static, 'static>>, bool)> {
    let env = crate::render::shared();
    conditions
        .into_iter()
        .filter(|c| c.names.iter().all(|n| free.contains(n)))
        .filter_map(|c| {
            let expr = compiled
                .entry(c.source.clone())
                .or_insert_with(|| env.compile_expression_owned(c.source).ok().map(Arc::new))
                .clone()?;
            Some((expr, c.holds))
        })
        .collect()
}

/// One walk of a path through a scope.
struct Walk<'w> {
    segments: &'w [Seg],
    guards: &'w [Vec<Seg>],
    t: &'w mut Traced,
}

impl Walk<'_> {
    /// Whether the first `n` segments are a guard.
    fn guarded(&self, n: usize) -> bool {
        n > 0
            && self
                .guards
                .iter()
                .any(|g| g.as_slice() == &self.segments[..n])
    }

    /// Follows the path from `value`, the value at its first `depth` segments.
    fn step(&mut self, value: &Value, depth: usize) -> Outcome {
        if depth == self.segments.len() {
            return Outcome::Matched;
        }
        if self.segments[depth] == Seg::Each {
            return self.each(value, depth);
        }
        // Plain items (ids, not records) are their own key for caldera's built-ins
        // (`match(ids, records, by='id')`): no key to look for in them.
        if depth > 0
            && self.segments[depth - 1] == Seg::Each
            && matches!(
                value.kind(),
                ValueKind::String | ValueKind::Number | ValueKind::Bool
            )
        {
            return Outcome::Unchecked;
        }
        let next = match &self.segments[depth] {
            Seg::Key(k) => value.get_attr(k).unwrap_or(Value::UNDEFINED),
            Seg::Index(n) => value.get_item(&Value::from(*n)).unwrap_or(Value::UNDEFINED),
            Seg::Each => Value::UNDEFINED,
        };
        if (next.is_undefined() || next.is_none()) && self.guarded(depth + 1) {
            return Outcome::Unchecked;
        }
        if next.is_undefined() {
            self.missed_at(value, depth);
            return Outcome::Missed;
        }
        self.step(&next, depth + 1)
    }

    /// `[*]`: matched when some item matches; nothing to check in an empty list (or in
    /// a map, whose items are its keys).
    fn each(&mut self, value: &Value, depth: usize) -> Outcome {
        if value.kind() != ValueKind::Seq {
            return Outcome::Unchecked;
        }
        let Ok(items) = value.try_iter() else {
            return Outcome::Unchecked;
        };
        let mut outcome = Outcome::Unchecked;
        for item in items.take(ITEMS_FOLLOWED) {
            match self.step(&item, depth + 1) {
                Outcome::Matched => return Outcome::Matched,
                Outcome::Missed => outcome = Outcome::Missed,
                Outcome::Unchecked => {}
            }
        }
        outcome
    }

    /// Notes that segment `depth` was missing in `value`, with the keys found there.
    fn missed_at(&mut self, value: &Value, depth: usize) {
        let t = &mut *self.t;
        if depth < t.deepest {
            return;
        }
        if depth > t.deepest {
            t.keys.clear();
        }
        t.deepest = depth;
        if value.kind() == ValueKind::Map
            && let Ok(keys) = value.try_iter()
        {
            for k in keys.take(KEYS_KEPT) {
                if t.keys.len() < KEYS_KEPT {
                    t.keys.insert(k.to_string());
                }
            }
        }
    }
}

/// The reads of an expression or template whose root is a free name (not a loop
/// variable of the template, not a function, filter or test), and its guards. `free`
/// is the source's free names when load found them; else they are found here.
fn site(source: &str, free: Option<&Vec<String>>) -> Site {
    let built = with_free_reads(source, free, |found, free| {
        let mut compiled = HashMap::new();
        let traced = found
            .reads
            .into_iter()
            .map(|r| Traced {
                segments: r.segments,
                written: r.written,
                group: r.group,
                branch: compile_branch(r.conditions, free, &mut compiled),
                matched: false,
                deepest: 0,
                keys: BTreeSet::new(),
                times: 0,
            })
            .collect();
        Site {
            traced,
            guards: found.guards,
        }
    });
    built.unwrap_or(Site {
        traced: Vec::new(),
        guards: Vec::new(),
    })
}

/// Calls `f` with the reads of `source` whose root is a free name, and the free names;
/// `None` when `source` does not compile.
fn with_free_reads<T>(
    source: &str,
    free: Option<&Vec<String>>,
    f: impl FnOnce(crate::load::reads::Reads, &[String]) -> T,
) -> Option<T> {
    let parsed;
    let free: &[String] = match free {
        Some(free) => free,
        None => {
            let template = source.contains("<<") || source.contains("<%");
            parsed = free_names(source, template)?;
            &parsed
        }
    };
    let mut found = crate::load::reads::reads(source);
    found
        .reads
        .retain(|r| matches!(r.segments.first(), Some(Seg::Key(root)) if free.contains(root)));
    Some(f(found, free))
}

/// The free names of `source`, parsed here; `None` when it does not compile.
fn free_names(source: &str, template: bool) -> Option<Vec<String>> {
    let env = crate::render::shared();
    let free = if template {
        env.template_from_str(source)
            .ok()?
            .undeclared_variables(false)
    } else {
        env.compile_expression(source)
            .ok()?
            .undeclared_variables(false)
    };
    Some(free.into_iter().collect())
}

/// The results folder a suite reads by default, for "do its inputs exist".
pub(crate) fn default_results(suite: &Suite) -> PathBuf {
    suite.dir.join(&suite.spec.inputs.results.folder)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(source: &str) -> Vec<String> {
        site(source, None)
            .traced
            .into_iter()
            .map(|t| display(&t.segments))
            .collect()
    }

    /// The longest read of `source`, traced once in `scope`.
    fn traced(source: &str, scope: &serde_json::Value) -> Traced {
        let mut site = site(source, None);
        site.traced.sort_by_key(|t| t.segments.len());
        let Some(mut t) = site.traced.pop() else {
            panic!("no read in {source}");
        };
        trace(&mut t, &site.guards, &Doc::from_json(scope).to_value());
        t
    }

    #[test]
    fn finds_field_paths_but_not_calls_filters_tests_or_loop_names() {
        assert_eq!(
            texts(
                "truth.expected.cves | length > pct(a.b, c) if x.y is defined and z.items() else 'q.r'"
            ),
            vec!["truth.expected.cves", "a.b", "c", "x.y", "z"]
        );
        assert_eq!(
            texts("<% for f in findings %><< f.rule >> << f.x | default(d.e) >><% endfor %>"),
            vec!["findings", "findings[*].rule", "findings[*].x", "d.e"]
        );
        assert_eq!(
            texts("sort_by(xs, 'a', reverse=true)"),
            vec!["xs[*].a", "xs"]
        );
    }

    #[test]
    fn traces_how_far_a_path_gets() {
        let scope = serde_json::json!({"truth": {"expected": {"cves": [1]}}});
        let t = traced("truth.expectd.cves", &scope);
        assert!(!t.matched);
        assert_eq!(t.deepest, 1);
        assert!(t.keys.contains("expected"));
        let d = never_matched(&t);
        assert_eq!(d.help.as_deref(), Some("did you mean `truth.expected`?"));
        assert!(traced("truth.expected.cves", &scope).matched);
    }

    #[test]
    fn traces_into_every_item_and_reports_the_keys_of_items() {
        let scope =
            serde_json::json!({"repos": [{"result": {}}, {"result": {"vulnerabilities": []}}]});
        let t = traced(
            "repos | map(attribute='result.vulnerabilitiez') | list",
            &scope,
        );
        assert!(!t.matched);
        assert_eq!(display(&t.segments), "repos[*].result.vulnerabilitiez");
        assert_eq!(t.deepest, 3);
        let d = never_matched(&t);
        assert_eq!(
            d.help.as_deref(),
            Some("did you mean `repos[*].result.vulnerabilities`?")
        );
        assert!(traced("repos[1].result.vulnerabilities", &scope).matched);
        // An empty list has nothing to check: not counted as a read.
        let t = traced("xs | map(attribute='a')", &serde_json::json!({"xs": []}));
        assert_eq!((t.matched, t.times), (false, 0));
    }

    #[test]
    fn reads_under_an_undefined_or_none_guard_do_not_count() {
        let scope = serde_json::json!({"baseline": null});
        let t = traced(
            "<% if baseline is not none %><< baseline.synthetic_score >><% endif %>",
            &scope,
        );
        assert_eq!(t.times, 0);
        let t = traced("bonus if bonus is defined else 0", &serde_json::json!({}));
        assert_eq!(t.times, 0);
        // A branch whose condition is false where it is read did not run.
        let t = traced(
            "<% if use_baseline %><< baseline.synthetic_score >><% endif %>",
            &serde_json::json!({"use_baseline": false, "baseline": {}}),
        );
        assert_eq!(t.times, 0);
        let t = traced(
            "baseline.synthetic_score if use_baseline else 0",
            &serde_json::json!({"use_baseline": true, "baseline": {}}),
        );
        assert_eq!((t.matched, t.times), (false, 1));
        // With the guard's value there, a misspelled key under it is still a miss.
        let t = traced(
            "<% if baseline is not none %><< baseline.synthetic_scor >><% endif %>",
            &serde_json::json!({"baseline": {"synthetic_score": 1}}),
        );
        assert_eq!((t.matched, t.times), (false, 1));
    }
}
