//! Loads one judge file into a [`JudgePlan`], collecting every problem as a diagnostic:
//! JSONPath that does not parse, expressions and templates that do not compile, names
//! used before they are defined, band tables that cannot work, prompts that are missing.

mod bands;
mod prompt;

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use minijinja::Environment;

use crate::diag::{Code, Diagnostic, Span, did_you_mean_help};
use crate::doc::Doc;
use crate::evidence::builtins::pattern::{PATTERN_ARG, compile};
use crate::evidence::compiled::Expr;
use crate::evidence::plan::{
    ConditionalPlan, RecordsPlan, TextKind, ValuePlan, classify, condition_source, expression_inner,
};
use crate::evidence::select::Selector;
use crate::load::names::{FreeNames, Known, Uses, scan, template_code};
use crate::load::patterns::{calls, literal_string};
use crate::load::yaml::{self, KeyIndex};
use crate::render::{CONTEXT_NAMES, REPO_SCOPE_NAMES};
use crate::reply::{CompiledFormat, FormatError, SharedFormat};
use crate::spec::judge::{Computed, EvidenceValue, HeuristicSpec, JudgeSpec, LlmUse, Scope};
use crate::spec::verdict_format::VerdictFormat;
use crate::verdict::assertions::AssertionPlan;
use crate::verdict::heuristic::HeuristicPlan;

/// Default `pass_threshold`: the framework's WEAK_PASS line. The suite loader and
/// the judge loader both fall back to it; it lives here, below the suite loader.
pub(crate) const DEFAULT_PASS_THRESHOLD: f64 = 3.0;

/// A judge ready to run.
#[derive(Debug, Clone)]
pub struct JudgePlan {
    /// The judge file.
    pub file: PathBuf,
    /// What the user wrote.
    pub spec: JudgeSpec,
    /// Evidence, classified and parsed.
    pub evidence: Vec<(String, ValuePlan)>,
    /// The heuristic with its expressions compiled and defaults filled in.
    pub heuristic: Option<HeuristicPlan>,
    /// The assertions with their expressions compiled, in order.
    pub assertions: Vec<AssertionPlan>,
    /// The score a verdict needs to pass: the judge's own, else the suite's (filled in
    /// when the suite is loaded).
    pub pass_threshold: f64,
    /// The prompt template, when the judge has one that could be read.
    pub prompt: Option<PromptFile>,
    /// The verdict format in force: the judge's own, or the default JSON object on a
    /// 1-5 scale. It is what the cache key hashes (a model call carries it compiled,
    /// as [`JudgePlan::format`]).
    pub verdict_format: VerdictFormat,
    /// [`JudgePlan::verdict_format`] compiled once here, so neither a prompt nor a reply
    /// compiles it again (every model call of this judge carries it); the error (reported
    /// at load) when it cannot read any reply.
    pub format: Result<SharedFormat, FormatError>,
    /// Key locations, for diagnostics raised while running.
    pub index: KeyIndex,
    /// The free names of its expressions and templates.
    pub free_names: FreeNames,
    /// Thinking before the verdict: the judge's `reasoning:`, else the suite's.
    pub reasoning: Option<crate::provider::Reasoning>,
    /// The output token limit of its model calls (larger with reasoning, which thinks
    /// within it).
    pub max_tokens: u32,
    /// The suite's `prompt_cache` (filled in when the suite is loaded).
    pub prompt_cache: crate::spec::suite::PromptCache,
    /// The suite's `cap_note` (filled in when the suite is loaded).
    pub cap_note: crate::spec::cap_note::CapNote,
}

impl JudgePlan {
    /// What a verdict needs of this judge.
    pub fn judge(&self) -> crate::verdict::combine::JudgeRef<'_> {
        crate::verdict::combine::JudgeRef {
            spec: &self.spec,
            pass_threshold: self.pass_threshold,
            cap_note: self.cap_note,
        }
    }
}

/// A prompt template read from disk.
#[derive(Debug, Clone)]
pub struct PromptFile {
    /// Where it is.
    pub path: PathBuf,
    /// Its text.
    pub text: String,
}

/// Shared inputs of the checks.
pub(crate) struct Checker<'a> {
    /// The render environment.
    pub env: &'a Environment<'static>,
    /// Known functions, filters, tests.
    pub known: &'a Known<'a>,
    /// Prompts must resolve inside the project root.
    pub confinement: &'a crate::load::confine::Confinement,
    /// Names the suite's own evidence defines (visible to every judge).
    pub shared: Vec<String>,
    /// The suite's `verdict_transport`, for judges whose `verdict` does not say.
    pub transport: Option<crate::spec::verdict_format::Transport>,
    /// The suite's `reasoning`, for judges whose own does not say (checked at the suite).
    pub reasoning: Option<crate::spec::reasoning::ReasoningSpec>,
}

/// Loads and checks the judge at `path`.
pub(crate) fn load_judge(
    path: &Path,
    checker: &Checker<'_>,
) -> (Option<JudgePlan>, Vec<Diagnostic>) {
    let source = match yaml::read_text(path) {
        Ok(s) => s,
        Err(d) => return (None, vec![d]),
    };
    let parsed = match yaml::parse::<JudgeSpec>(path, &source) {
        Ok(p) => p,
        Err(d) => return (None, d),
    };
    let mut cx = JudgeCx {
        file: path,
        source: &parsed.source,
        index: &parsed.index,
        checker,
        diags: Vec::new(),
        used: HashSet::new(),
        compiled: HashMap::new(),
        free_names: FreeNames::new(),
        per_repo: parsed.value.scope == Scope::Repo,
    };
    let spec = parsed.value;
    cx.check_basics(&spec);
    let evidence = cx.plan_evidence(&spec);
    let names: Vec<String> = spec.evidence.keys().cloned().collect();
    cx.check_heuristic(&spec, &names);
    cx.check_assertions(&spec, &names);
    let prompt = cx.check_prompt(&spec, &names);
    let verdict_format = with_transport(spec.verdict.clone(), checker.transport);
    let format = CompiledFormat::new(&verdict_format).map(|f| {
        let heuristic = spec.heuristic.as_ref();
        let names: Vec<String> = heuristic
            .map(|h| h.sub_scores.keys().cloned().collect())
            .unwrap_or_default();
        let scale = heuristic.and_then(|h| h.sub_score_scale).unwrap_or([1, 5]);
        SharedFormat::from(f.with_sub_scores(&names, scale))
    });
    if spec.verdict.is_some()
        && let Err(e) = &format
    {
        let d = Diagnostic::error(
            Code::VerdictFormat,
            format!("this verdict format cannot read any reply: {e}"),
        );
        let d = cx.diag(d, "verdict");
        cx.push(d);
    }
    cx.warn_unused(&spec, &names, prompt.as_ref());
    let mut compile = |src: &str| cx.compile(src);
    let heuristic = spec
        .heuristic
        .as_ref()
        .map(|h| HeuristicPlan::new(h, &mut compile));
    let assertions = spec
        .assertions
        .iter()
        .map(|a| AssertionPlan::new(a, &mut compile))
        .collect();
    let pass_threshold = spec.pass_threshold.unwrap_or(DEFAULT_PASS_THRESHOLD);
    let (reasoning, max_tokens) = match (&spec.reasoning, &checker.reasoning) {
        (Some(own), _) => match crate::load::reasoning::resolve(own) {
            Ok((r, max)) => (Some(r), max),
            Err((key, message)) => {
                let d = Diagnostic::error(Code::OutOfRange, message);
                let d = cx.diag(d, &format!("reasoning.{key}"));
                cx.push(d);
                (None, crate::load::reasoning::VERDICT_MAX_TOKENS)
            }
        },
        (None, Some(suite)) => crate::load::reasoning::resolve(suite).map_or(
            (None, crate::load::reasoning::VERDICT_MAX_TOKENS),
            |(r, max)| (Some(r), max),
        ),
        (None, None) => (None, crate::load::reasoning::VERDICT_MAX_TOKENS),
    };
    let plan = JudgePlan {
        file: path.to_owned(),
        spec,
        evidence,
        heuristic,
        assertions,
        pass_threshold,
        prompt,
        verdict_format,
        format,
        index: parsed.index.clone(),
        free_names: cx.free_names,
        reasoning,
        max_tokens,
        prompt_cache: crate::spec::suite::PromptCache::default(),
        cap_note: crate::spec::cap_note::CapNote::default(),
    };
    (Some(plan), cx.diags)
}

/// Plans the suite's own evidence (`suite.yaml`'s `evidence:`), checked like a judge's.
pub(crate) fn plan_suite_evidence(
    file: &Path,
    source: &str,
    index: &KeyIndex,
    evidence: &indexmap::IndexMap<String, EvidenceValue>,
    checker: &Checker<'_>,
) -> (Vec<(String, ValuePlan)>, FreeNames, Vec<Diagnostic>) {
    let mut cx = JudgeCx {
        file,
        source,
        index,
        checker,
        diags: Vec::new(),
        used: HashSet::new(),
        compiled: HashMap::new(),
        free_names: FreeNames::new(),
        per_repo: false,
    };
    let plan = cx.plan_map(evidence, CONTEXT_NAMES.to_vec());
    (plan, cx.free_names, cx.diags)
}

struct JudgeCx<'a> {
    file: &'a Path,
    source: &'a str,
    index: &'a KeyIndex,
    checker: &'a Checker<'a>,
    diags: Vec<Diagnostic>,
    /// Names read by any expression, template or heuristic.
    used: HashSet<String>,
    /// Every expression compiled so far, by source.
    compiled: HashMap<String, Expr>,
    /// The free names of every expression and template checked so far.
    free_names: FreeNames,
    /// A `scope: repo` judge: its `repos` and `results` hold only the repo judged.
    per_repo: bool,
}

/// Where names come from, for one expression.
struct NameScope<'s> {
    available: Vec<&'s str>,
    later: &'s [String],
    /// Record items whose keys cannot be known statically: unknown names are allowed.
    open: bool,
}

impl<'a> JudgeCx<'a> {
    fn diag(&self, d: Diagnostic, path: &str) -> Diagnostic {
        d.in_file(self.file)
            .at(self.index.value_span(path))
            .key(path)
    }

    fn key_diag(&self, d: Diagnostic, path: &str) -> Diagnostic {
        d.in_file(self.file).at(self.index.key_span(path)).key(path)
    }

    /// Locates `d` at `word` inside the value at `path` (or the whole value).
    fn at_word(&self, d: Diagnostic, path: &str, word: &str) -> Diagnostic {
        d.in_file(self.file)
            .at(self.word_span(path, word).or(self.index.value_span(path)))
            .key(path)
    }

    /// Narrows the span of `path`'s value to the first occurrence of `word` in it.
    fn word_span(&self, path: &str, word: &str) -> Option<Span> {
        let span = self.index.value_span(path)?;
        let text = self.source.get(span.start..span.end)?;
        let at = find_word(text, word)?;
        Some(Span::from_offsets(
            self.source,
            span.start + at,
            span.start + at + word.len(),
        ))
    }

    /// The expression `src` compiled; the checks and the plan share one compilation.
    fn compile(&mut self, src: &str) -> Expr {
        self.compiled
            .entry(src.to_owned())
            .or_insert_with(|| Expr::compile(crate::render::shared(), src))
            .clone()
    }

    fn push(&mut self, d: Diagnostic) {
        self.diags.push(d);
    }

    fn context_names(&self, spec: &JudgeSpec) -> Vec<&'a str> {
        let mut v: Vec<&'a str> = CONTEXT_NAMES.to_vec();
        if spec.scope == Scope::Repo {
            v.extend(REPO_SCOPE_NAMES);
        }
        v.extend(self.checker.shared.iter().map(String::as_str));
        v
    }

    /// In a `scope: repo` judge, `repos` and `results` hold only the repo being judged:
    /// a judge written as if they held every repo (`repos | length`, a loop over all
    /// results) counts one. Said where it reads them, once per place.
    fn warn_per_repo_list(&mut self, path: &str, name: &str) {
        if !self.per_repo {
            return;
        }
        let already = self.diags.iter().any(|d| {
            d.code == Code::PerRepoContext
                && d.key_path.as_deref() == Some(path)
                && d.message.contains(&format!("`{name}`"))
        });
        if already {
            return;
        }
        let d = Diagnostic::warning(
            Code::PerRepoContext,
            format!(
                "in a `scope: repo` judge `{name}` holds only the repo being judged, not every repo"
            ),
        )
        .help(
            "read the repo as `repo` (`id`, `result`, `truth`); for figures over every repo, \
             compute them in the suite's `evidence:` (every judge sees it) or use `scope: suite`",
        );
        let d = self.at_word(d, path, name);
        self.push(d);
    }

    fn check_basics(&mut self, spec: &JudgeSpec) {
        if let Some(why) = crate::load::confine::file_name_problem(&spec.dimension) {
            // `caldera test --record` writes `cassettes/<dimension>.json`.
            let d = Diagnostic::error(
                Code::WrongType,
                format!(
                    "dimension `{}` cannot be used as a file name: {why}",
                    crate::diag::printable_line(&spec.dimension)
                ),
            )
            .help("name the dimension with letters, digits, `_` and `-`, e.g. `fix_availability`");
            let d = self.diag(d, "dimension");
            self.push(d);
        }
        if !spec.weight.is_finite() {
            // An infinite weight turns the weighted mean into inf / inf = NaN.
            let d = Diagnostic::error(
                Code::NotFinite,
                format!("weight must be a finite number, got {}", spec.weight),
            )
            .help("weights are relative; give every judge a finite share such as 0.25");
            let d = self.diag(d, "weight");
            self.push(d);
        } else if spec.weight <= 0.0 {
            let d = Diagnostic::error(
                Code::WeightNotPositive,
                format!("weight must be greater than 0, got {}", spec.weight),
            )
            .help("weights are relative; use a small positive number to count a judge for little");
            let d = self.diag(d, "weight");
            self.push(d);
        }
        if let Some(t) = spec.pass_threshold {
            self.check_score_f(t, "pass_threshold");
        }
    }

    fn check_score(&mut self, score: i64, path: &str) {
        self.check_score_f(score as f64, path);
    }

    fn check_score_f(&mut self, score: f64, path: &str) {
        if !(1.0..=5.0).contains(&score) {
            let d = Diagnostic::error(
                Code::ScoreOutOfRange,
                format!("score must be between 1 and 5, got {score}"),
            );
            let d = self.diag(d, path);
            self.push(d);
        }
    }

    fn check_confidence(&mut self, c: f64, path: &str) {
        if !(0.0..=1.0).contains(&c) {
            let d = Diagnostic::error(
                Code::ConfidenceOutOfRange,
                format!("confidence must be between 0 and 1, got {c}"),
            );
            let d = self.diag(d, path);
            self.push(d);
        }
    }

    // ------------------------------------------------------------------ evidence

    fn plan_evidence(&mut self, spec: &JudgeSpec) -> Vec<(String, ValuePlan)> {
        let ctx = self.context_names(spec);
        self.plan_map(&spec.evidence, ctx)
    }

    fn plan_map(
        &mut self,
        evidence: &indexmap::IndexMap<String, EvidenceValue>,
        ctx: Vec<&str>,
    ) -> Vec<(String, ValuePlan)> {
        let names: Vec<String> = evidence.keys().cloned().collect();
        let mut out = Vec::new();
        for (i, (name, value)) in evidence.iter().enumerate() {
            let path = format!("evidence.{name}");
            let mut available: Vec<&str> = ctx.clone();
            available.extend(names[..i].iter().map(String::as_str));
            let scope = NameScope {
                available,
                later: &names[i + 1..],
                open: false,
            };
            if let Some(plan) = self.plan_value(value, &path, &scope) {
                out.push((name.clone(), plan));
            }
        }
        out
    }

    fn plan_value(
        &mut self,
        value: &EvidenceValue,
        path: &str,
        scope: &NameScope<'_>,
    ) -> Option<ValuePlan> {
        match value {
            EvidenceValue::Number(n) => {
                Some(ValuePlan::Const(if n.fract() == 0.0 && n.abs() < 9e15 {
                    Doc::Int(*n as i64)
                } else {
                    Doc::Float(*n)
                }))
            }
            EvidenceValue::Bool(b) => Some(ValuePlan::Const(Doc::Bool(*b))),
            EvidenceValue::Text(text) => self.plan_text(text, path, scope),
            EvidenceValue::Conditional(c) => {
                let condition = self.plan_condition(c.condition.as_deref(), path, scope);
                let value = self.plan_value(&c.value, &format!("{path}.value"), scope)?;
                Some(ValuePlan::Conditional(Box::new(ConditionalPlan {
                    condition,
                    omit_empty: c.omit_empty,
                    value,
                })))
            }
            EvidenceValue::Records(rec) => {
                let plan = self.plan_records(rec, path, scope)?;
                if rec.condition.is_none() && !rec.omit_empty {
                    return Some(plan);
                }
                let condition = self.plan_condition(rec.condition.as_deref(), path, scope);
                Some(ValuePlan::Conditional(Box::new(ConditionalPlan {
                    condition,
                    omit_empty: rec.omit_empty,
                    value: plan,
                })))
            }
        }
    }

    /// Names a record list hides from its expressions: a field named like a run-context
    /// name, and, over repos, the run's `truth` map read as if it were still visible
    /// (`truth[key]`: inside the list `truth` is the repo's own ground truth).
    fn warn_shadowing(
        &mut self,
        rec: &crate::spec::judge::RecordsSpec,
        path: &str,
        over_repos: bool,
    ) {
        let texts: Vec<Option<&str>> = rec
            .fields
            .values()
            .map(|v| match v {
                EvidenceValue::Text(t) => Some(t.as_str()),
                EvidenceValue::Conditional(c) => match &c.value {
                    EvidenceValue::Text(t) => Some(t.as_str()),
                    _ => None,
                },
                _ => None,
            })
            .collect();
        for (i, name) in rec.fields.keys().enumerate() {
            if !CONTEXT_NAMES.contains(&name.as_str()) {
                continue;
            }
            // Harmless unless something after the field reads the name.
            let read_after = texts[i + 1..]
                .iter()
                .flatten()
                .chain(rec.key.as_deref().iter())
                .chain(rec.value.as_deref().iter())
                .any(|t| find_word(t, name).is_some());
            if !read_after {
                continue;
            }
            let d = Diagnostic::warning(
                Code::ShadowedName,
                format!(
                    "field `{name}` of the record list `{path}` shadows the run context's `{name}`: the fields after it read the field"
                ),
            )
            .help(format!(
                "rename the field, or copy the run's `{name}` to an evidence name before the record list (`_all_{name}: << {name} >>`)"
            ));
            let d = self.key_diag(d, &format!("{path}.fields.{name}"));
            self.push(d);
        }
        if !over_repos {
            return;
        }
        let sources = rec
            .fields
            .iter()
            .filter_map(|(f, v)| match v {
                EvidenceValue::Text(t) => Some((format!("{path}.fields.{f}"), t.as_str())),
                _ => None,
            })
            .chain(
                rec.filter
                    .iter()
                    .map(|t| (format!("{path}.where"), t.as_str())),
            )
            .chain(rec.key.iter().map(|t| (format!("{path}.key"), t.as_str())))
            .chain(
                rec.value
                    .iter()
                    .map(|t| (format!("{path}.value"), t.as_str())),
            );
        let mut found = Vec::new();
        for (at, text) in sources {
            if indexes_by_variable(text, "truth") {
                found.push(at);
            }
        }
        for at in found {
            let d = Diagnostic::warning(
                Code::ShadowedName,
                format!(
                    "`truth[...]` inside `{path}`: over repos, the item key `truth` (this repo's ground truth) shadows the run context's `truth` (every repo's, by id)"
                ),
            )
            .note("a repo without ground truth has `truth: null` here, so the lookup silently gives nothing")
            .help("to look up the run's map, copy it before the record list (`_all_truth: << truth >>`) and index that");
            let d = self.at_word(d, &at, "truth");
            self.push(d);
        }
    }

    /// The `if:` of a conditional value, checked in the value's own scope.
    fn plan_condition(
        &mut self,
        condition: Option<&str>,
        path: &str,
        scope: &NameScope<'_>,
    ) -> Option<Expr> {
        let c = condition?;
        let src = condition_source(c);
        self.check_expr(src, &format!("{path}.if"), scope);
        Some(self.compile(src))
    }

    fn plan_records(
        &mut self,
        rec: &crate::spec::judge::RecordsSpec,
        path: &str,
        scope: &NameScope<'_>,
    ) -> Option<ValuePlan> {
        let fe_path = format!("{path}.for_each");
        let for_each = self.plan_text(&rec.for_each, &fe_path, scope)?;
        if matches!(for_each, ValuePlan::Const(_) | ValuePlan::Template(_)) {
            let d = Diagnostic::error(
                Code::WrongType,
                "for_each must be a JSONPath selector (`$...`) or an expression (`<< ... >>`)",
            );
            let d = self.diag(d, &fe_path);
            self.push(d);
            return None;
        }
        let over_repos = rec.for_each.trim().starts_with("$.repos")
            || rec
                .for_each
                .trim()
                .trim_start_matches("<<")
                .trim()
                .starts_with("repos");
        // Nested in another list's fields: the enclosing item is `outer`.
        let nested = scope.available.contains(&"item");
        let mut available = scope.available.clone();
        available.extend(["item", "loop"]);
        if nested {
            available.push("outer");
        }
        if let Some(name) = self.item_name(rec, path) {
            available.push(name);
        }
        if over_repos {
            available.extend(["id", "result", "truth"]);
        }
        let item_scope = NameScope {
            available: available.clone(),
            later: scope.later,
            open: !over_repos,
        };
        let filter = rec.filter.as_ref().and_then(|f| {
            let p = format!("{path}.where");
            let src = condition_source(f);
            self.check_expr(src, &p, &item_scope)
                .then(|| self.compile(src))
        });
        self.warn_shadowing(rec, path, over_repos);
        let mut fields = Vec::new();
        let field_names: Vec<String> = rec.fields.keys().cloned().collect();
        for (j, (fname, fvalue)) in rec.fields.iter().enumerate() {
            let fpath = format!("{path}.fields.{fname}");
            let mut avail = available.clone();
            avail.extend(field_names[..j].iter().map(String::as_str));
            let mut later: Vec<String> = field_names[j + 1..].to_vec();
            later.extend(scope.later.iter().cloned());
            let fscope = NameScope {
                available: avail,
                later: &later,
                open: !over_repos,
            };
            if let Some(p) = self.plan_value(fvalue, &fpath, &fscope) {
                fields.push((fname.clone(), p));
            }
        }
        if rec.fields.is_empty() && rec.value.is_none() {
            let d = Diagnostic::error(
                Code::MissingKey,
                "a record list needs `fields` (a record per item) or `value` (one value per item)",
            );
            let d = self.diag(d, path);
            self.push(d);
        }
        // `key` and `value` are computed after every field.
        let mut after = available.clone();
        after.extend(field_names.iter().map(String::as_str));
        let after_scope = NameScope {
            available: after,
            later: scope.later,
            open: !over_repos,
        };
        let entry = |cx: &mut Self, text: &Option<String>, name: &str| {
            text.as_ref().and_then(|t| {
                let p = format!("{path}.{name}");
                let plan = cx.plan_text(t, &p, &after_scope)?;
                if matches!(plan, ValuePlan::Const(_)) {
                    let d = Diagnostic::error(
                        Code::WrongType,
                        format!("`{name}` must be a selector (`$...`) or an expression (`<< ... >>`), computed per item"),
                    );
                    let d = cx.diag(d, &p);
                    cx.push(d);
                    return None;
                }
                Some(plan)
            })
        };
        let key = entry(self, &rec.key, "key");
        let value = entry(self, &rec.value, "value");
        Some(ValuePlan::Records(Box::new(RecordsPlan {
            for_each,
            filter,
            fields,
            key,
            value,
            as_name: rec.as_name.clone(),
        })))
    }

    /// The `as:` name of a record list when it can name the item: a plain name that
    /// hides none of the names a list gives (`item`, `loop`, `outer`) or the run
    /// context's. Anything else is an error here, so no expression reads the wrong value.
    fn item_name<'r>(
        &mut self,
        rec: &'r crate::spec::judge::RecordsSpec,
        path: &str,
    ) -> Option<&'r str> {
        let name = rec.as_name.as_deref()?;
        let plain = name
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        let taken = ["item", "loop", "outer"]
            .iter()
            .chain(CONTEXT_NAMES)
            .any(|n| *n == name);
        if plain && !taken {
            return Some(name);
        }
        let why = if plain {
            format!("`{name}` is a name the record list or the run context already gives")
        } else {
            format!("`{}` is not a name", crate::diag::printable_line(name))
        };
        let d = Diagnostic::error(
            Code::WrongType,
            format!("`as` must name the item with a name of its own: {why}"),
        )
        .help(
            "use letters, digits and `_`, other than `item`, `loop`, `outer` and the run \
             context's names, e.g. `as: file`",
        );
        let d = self.diag(d, &format!("{path}.as"));
        self.push(d);
        None
    }

    fn plan_text(&mut self, text: &str, path: &str, scope: &NameScope<'_>) -> Option<ValuePlan> {
        match classify(text) {
            TextKind::Selector(sel) => match Selector::parse(sel) {
                Ok(s) => {
                    // Inside a record list `$` is the item; elsewhere it is the run context.
                    if !scope.available.contains(&"item") {
                        let root = sel.trim_start_matches('$').trim_start_matches('.');
                        if let Some(name) = ["repos", "results"]
                            .into_iter()
                            .find(|n| root.starts_with(n))
                        {
                            self.warn_per_repo_list(path, name);
                        }
                    }
                    Some(ValuePlan::Select(s))
                }
                Err(msg) => {
                    let d = Diagnostic::error(
                        Code::JsonpathSyntax,
                        format!("JSONPath `{sel}` does not parse: {msg}"),
                    )
                    .help("selectors follow RFC 9535, e.g. `$.repos[*].id` or `$.vulnerabilities[?@.severity == 'HIGH']`");
                    let d = self.diag(d, path);
                    self.push(d);
                    None
                }
            },
            TextKind::Expr(src) => self
                .check_expr(src, path, scope)
                .then(|| ValuePlan::Expr(self.compile(src))),
            TextKind::Template(src) => self
                .check_template(src, path, scope)
                .then(|| ValuePlan::Template(src.to_owned())),
            TextKind::Literal(s) => Some(ValuePlan::Const(Doc::from(s))),
        }
    }

    /// Compiles an expression and checks its names; true when it is usable.
    fn check_expr(&mut self, src: &str, path: &str, scope: &NameScope<'_>) -> bool {
        let compiled = self.compile(src);
        match compiled.compiled() {
            Ok(expr) => {
                // The compiled form calls the bounded operators (`a + b` is
                // `__caldera_add(a, b)`): names the judge never wrote.
                let mut free: Vec<String> = expr
                    .undeclared_variables(false)
                    .into_iter()
                    .filter(|n| !crate::evidence::operators::is_operator_function(n))
                    .collect();
                free.sort();
                let uses = scan(src, free);
                let literals_ok =
                    self.check_literals(src, path) & self.check_loop_fields(src, path);
                let ok = self.check_uses(&uses, path, scope) && literals_ok;
                self.free_names.insert(src.to_owned(), uses.names);
                ok
            }
            Err(e) => {
                let d = Diagnostic::error(
                    Code::ExpressionSyntax,
                    format!("expression does not compile: {e}"),
                )
                .note(format!("expression: {src}"));
                let d = self.diag(d, path);
                self.push(d);
                false
            }
        }
    }

    /// Compiles a template and checks its names; true when it is usable.
    fn check_template(&mut self, src: &str, path: &str, scope: &NameScope<'_>) -> bool {
        let env = self.checker.env;
        match env.template_from_str(src) {
            Ok(t) => {
                let mut free: Vec<String> = t.undeclared_variables(false).into_iter().collect();
                free.sort();
                let code = template_code(src);
                let uses = scan(&code, free);
                let literals_ok =
                    self.check_literals(&code, path) & self.check_loop_fields(&code, path);
                let ok = self.check_uses(&uses, path, scope) && literals_ok;
                self.free_names.insert(src.to_owned(), uses.names);
                ok
            }
            Err(e) => {
                let d = Diagnostic::error(
                    Code::TemplateSyntax,
                    format!(
                        "template does not compile: {}",
                        crate::evidence::limits::error_text(&e)
                    ),
                );
                let d = self.diag(d, path);
                self.push(d);
                false
            }
        }
    }

    fn check_uses(&mut self, uses: &Uses, path: &str, scope: &NameScope<'_>) -> bool {
        let known = self.checker.known;
        let mut ok = true;
        for name in &uses.names {
            self.used.insert(name.clone());
            if name == "repos" || name == "results" {
                self.warn_per_repo_list(path, name);
            }
            if scope.available.contains(&name.as_str()) || known.is_global(name) {
                continue;
            }
            // In a record list over items of unknown shape, the name may be an item key.
            if scope.later.iter().any(|l| l == name) && !scope.open {
                let d = Diagnostic::error(
                    Code::NameUsedBeforeDefined,
                    format!("`{name}` is used before it is defined"),
                )
                .help(format!(
                    "evidence is computed in order: move `{name}` above this entry"
                ));
                let d = self.at_word(d, path, name);
                self.push(d);
                ok = false;
                continue;
            }
            if scope.open {
                continue;
            }
            let (code, what, help) = if uses.calls.contains(name) {
                let globals: Vec<&str> = known.globals().collect();
                (
                    Code::UnknownFunction,
                    format!("unknown function `{name}`"),
                    did_you_mean_help(name, globals),
                )
            } else {
                (
                    Code::UnknownName,
                    format!("unknown name `{name}`"),
                    did_you_mean_help(name, scope.available.iter().copied()).or_else(|| {
                        Some(format!(
                            "names available here: {}",
                            scope.available.join(", ")
                        ))
                    }),
                )
            };
            let d = self.at_word(Diagnostic::error(code, what).maybe_help(help), path, name);
            self.push(d);
            ok = false;
        }
        let unknown_filters = uses.filters.iter().filter(|f| !known.is_filter(f));
        let unknown_tests = uses.tests.iter().filter(|t| !known.is_test(t));
        let unknown: Vec<(&str, &String, Vec<&'static str>)> = unknown_filters
            .map(|f| ("filter", f, known.filter_candidates()))
            .chain(unknown_tests.map(|t| ("test", t, known.test_candidates())))
            .collect();
        for (kind, name, candidates) in unknown {
            let d = Diagnostic::error(Code::UnknownFunction, format!("unknown {kind} `{name}`"))
                .maybe_help(did_you_mean_help(name, candidates.iter().copied()));
            let d = self.at_word(d, path, name);
            self.push(d);
            ok = false;
        }
        ok
    }

    /// Checks the literal arguments of built-in calls: regular expressions are compiled
    /// now (and kept compiled for the run), and tests or filters named by a string
    /// (`select('odd')`, `selectattr('a', 'eq', 1)`, `map('upper')`) must exist. True
    /// when every literal is usable.
    /// Every `loop.<field>` read names a field `loop` has: an unknown one is undefined on
    /// every item, which no data check could tell from a value that is absent.
    fn check_loop_fields(&mut self, code: &str, path: &str) -> bool {
        let mut ok = true;
        let mut seen = Vec::new();
        for segments in crate::load::names::paths(code) {
            let [first, field, ..] = segments.as_slice() else {
                continue;
            };
            let fields = || {
                crate::evidence::eval::LOOP_ITEM_FIELDS
                    .iter()
                    .chain(LOOP_EXTRA_FIELDS)
                    .copied()
            };
            if *first != "loop" || fields().any(|f| f == *field) || seen.contains(field) {
                continue;
            }
            seen.push(*field);
            let d = Diagnostic::error(Code::UnknownName, format!("`loop` has no field `{field}`"))
                .note(format!(
                    "its fields: {}",
                    fields().collect::<Vec<_>>().join(", ")
                ))
                .maybe_help(crate::diag::did_you_mean_help(field, fields()));
            let d = self.diag(d, path);
            self.push(d);
            ok = false;
        }
        ok
    }

    fn check_literals(&mut self, code: &str, path: &str) -> bool {
        let mut names: Vec<&str> = PATTERN_ARG.iter().map(|(n, _)| *n).collect();
        names.extend(NAMED_CALLEE.iter().map(|(n, ..)| *n));
        let mut ok = true;
        for call in calls(code, &names) {
            if let Some(&(_, at, test)) = NAMED_CALLEE.iter().find(|(n, ..)| *n == call.name) {
                // `map(attribute=...)` names no filter.
                if call.name == "map" && call.keywords.iter().any(|(k, _)| *k == "attribute") {
                    continue;
                }
                let Some(named) = call
                    .positional
                    .get(at)
                    .and_then(|a| literal_string(self.checker.env, a))
                else {
                    continue;
                };
                ok &= self.check_named_callee(&call, &named, test, path);
                if let Some(&(_, p)) = PATTERN_ARG.iter().find(|(n, _)| *n == named)
                    && let Some(arg) = call.positional.get(at + p)
                {
                    ok &= self.check_pattern(&named, arg, false, path);
                }
                continue;
            }
            let index = PATTERN_ARG
                .iter()
                .find(|(n, _)| *n == call.name)
                .map_or(1, |(_, i)| *i);
            let Some(arg) = call.arg(index, "pattern") else {
                continue;
            };
            let ignore_case = call.keywords.contains(&("ignore_case", "true"));
            ok &= self.check_pattern(call.name, arg, ignore_case, path);
        }
        ok
    }

    /// A test or filter named by a string argument must exist.
    fn check_named_callee(
        &mut self,
        call: &crate::load::patterns::Call<'_>,
        named: &str,
        test: bool,
        path: &str,
    ) -> bool {
        let known = self.checker.known;
        let (exists, kind, candidates) = if test {
            (known.is_test(named), "test", known.test_candidates())
        } else {
            (known.is_filter(named), "filter", known.filter_candidates())
        };
        if exists {
            return true;
        }
        let contains = (named == "contains").then(|| {
            "there is no `contains` test: for text use `matching` (a regular expression, e.g. `selectattr('message', 'matching', 'SQL')`); for a list-valued field holding a value use `containing` (`selectattr('tags', 'containing', 'sql')`); for a value in a list, `in` (`selectattr('id', 'in', ids)`)".to_owned()
        });
        let help = contains.or_else(|| did_you_mean_help(named, candidates.iter().copied())).or_else(|| {
            (call.name == "select" || call.name == "reject").then(|| {
                format!(
                    "`{}('x')` takes a test name; to keep items whose attribute `x` is true, write `{}attr('x')`",
                    call.name, call.name
                )
            })
        });
        let d = Diagnostic::error(
            Code::UnknownFunction,
            format!("unknown {kind} `{named}` (named in `{}`)", call.name),
        )
        .maybe_help(help)
        .note(format!(
            "`{}` looks the {kind} up by name only when it runs; caldera checks it now",
            call.name
        ));
        let d = self.at_text(d, path, named);
        self.push(d);
        false
    }

    /// A literal pattern must compile; it stays compiled for the run.
    fn check_pattern(&mut self, name: &str, arg: &str, ignore_case: bool, path: &str) -> bool {
        let Some(pattern) = literal_string(self.checker.env, arg) else {
            return true;
        };
        if pattern.contains('\u{8}') {
            let d = Diagnostic::warning(
                Code::RegexSyntax,
                format!("the pattern given to `{name}` holds a backspace character"),
            )
            .note("in a string literal `\\b` is a backspace, as in a Python string without `r`")
            .help("write `\\\\b` for a word boundary");
            let d = self.at_text(d, path, arg);
            self.push(d);
        }
        let Err(e) = compile(&pattern, ignore_case) else {
            return true;
        };
        let d = Diagnostic::error(
            Code::RegexSyntax,
            format!("the pattern given to `{name}` does not compile: {e}"),
        )
        .note(format!("pattern: {pattern}"))
        .help("patterns follow Python's `re` syntax without look-around or backreferences (the `regex` crate)");
        let d = self.at_text(d, path, arg);
        self.push(d);
        false
    }

    /// Locates `d` at the first occurrence of `text` inside the value at `path`.
    fn at_text(&self, d: Diagnostic, path: &str, text: &str) -> Diagnostic {
        let span = self.index.value_span(path).and_then(|span| {
            let value = self.source.get(span.start..span.end)?;
            let at = value.find(text)?;
            Some(Span::from_offsets(
                self.source,
                span.start + at,
                span.start + at + text.len(),
            ))
        });
        d.in_file(self.file)
            .at(span.or(self.index.value_span(path)))
            .key(path)
    }

    // ------------------------------------------------------------------ heuristic

    fn check_heuristic(&mut self, spec: &JudgeSpec, names: &[String]) {
        let Some(h) = &spec.heuristic else {
            let d = if spec.llm == LlmUse::Never {
                Diagnostic::error(
                    Code::NoHeuristic,
                    format!(
                        "judge `{}` never calls a model (`llm: never`) and has no heuristic: nothing can score it",
                        spec.dimension
                    ),
                )
            } else {
                Diagnostic::warning(
                    Code::NoHeuristic,
                    format!(
                        "judge `{}` has no heuristic: it is unscored in heuristic mode",
                        spec.dimension
                    ),
                )
            }
            .help("add a `heuristic:` with a metric and bands (or a `score`) to score it without an LLM");
            let d = self.key_diag(d, "dimension");
            self.push(d);
            return;
        };
        let mut available: Vec<&str> = self.context_names(spec);
        available.extend(names.iter().map(String::as_str));
        let scope = NameScope {
            available,
            later: &[],
            open: false,
        };
        self.check_scoring(h, names, &scope);
        if let Some(nd) = &h.when_no_data {
            self.check_expr(
                condition_source(&nd.condition),
                "heuristic.when_no_data.if",
                &scope,
            );
            self.check_computed(&nd.score, "heuristic.when_no_data.score", true, &scope);
            if let Some(c) = &nd.confidence {
                self.check_computed(c, "heuristic.when_no_data.confidence", false, &scope);
            }
            self.check_text(&nd.reasoning, "heuristic.when_no_data.reasoning", &scope);
            self.check_recommendations(
                &nd.recommendations,
                "heuristic.when_no_data.recommendations",
                &scope,
            );
        }
        if let Some(c) = &h.confidence {
            self.check_computed(c, "heuristic.confidence", false, &scope);
        }
        if let Some([lo, hi]) = h.sub_score_scale
            && lo >= hi
        {
            let d = Diagnostic::error(
                Code::ScoreOutOfRange,
                format!("sub_score_scale must go from low to high, got [{lo}, {hi}]"),
            );
            let d = self.diag(d, "heuristic.sub_score_scale");
            self.push(d);
        }
        self.check_text(&h.reasoning, "heuristic.reasoning", &scope);
        for (i, a) in h.adjust.iter().enumerate() {
            self.check_expr(
                condition_source(&a.condition),
                &format!("heuristic.adjust[{i}].if"),
                &scope,
            );
            self.check_text(&a.reason, &format!("heuristic.adjust[{i}].reason"), &scope);
        }
        for (i, t) in h.evidence_cited.iter().enumerate() {
            self.check_text(t, &format!("heuristic.evidence_cited[{i}]"), &scope);
        }
        self.check_recommendations(&h.recommendations, "heuristic.recommendations", &scope);
        for (name, expr) in &h.sub_scores {
            self.check_expr(
                condition_source(expr),
                &format!("heuristic.sub_scores.{name}"),
                &scope,
            );
        }
    }

    /// How the heuristic scores: `metric` with `bands`, or a `score` of its own.
    fn check_scoring(&mut self, h: &HeuristicSpec, names: &[String], scope: &NameScope<'_>) {
        match (&h.metric, &h.score) {
            (Some(_), Some(_)) => {
                let d = Diagnostic::error(
                    Code::WrongType,
                    "a heuristic scores with `metric` and `bands`, or with a `score` of its own, not both",
                );
                let d = self.key_diag(d, "heuristic.score");
                self.push(d);
            }
            (None, None) => {
                let d = Diagnostic::error(
                    Code::MissingKey,
                    "a heuristic needs `metric` and `bands`, or a `score` (a number or an expression)",
                );
                let d = self.key_diag(d, "heuristic");
                self.push(d);
            }
            (None, Some(score)) => {
                self.check_computed(score, "heuristic.score", true, scope);
                if !h.bands.is_empty() {
                    let d = Diagnostic::error(
                        Code::WrongType,
                        "`bands` need a `metric`; with a `score` of its own the heuristic has no bands",
                    );
                    let d = self.key_diag(d, "heuristic.bands");
                    self.push(d);
                }
                if h.and_metric.is_some() {
                    let d = Diagnostic::error(
                        Code::WrongType,
                        "`and_metric` bounds bands; with a `score` of its own the heuristic has none, so it would be ignored",
                    )
                    .help("remove `and_metric`, or score through `metric` and `bands` with `and:` bounds");
                    let d = self.key_diag(d, "heuristic.and_metric");
                    self.push(d);
                }
            }
            (Some(metric), None) => {
                self.used.insert(metric.clone());
                if !names.contains(metric) {
                    let d = Diagnostic::error(
                        Code::MetricNotEvidence,
                        format!("heuristic metric `{metric}` is not an evidence name"),
                    )
                    .maybe_help(self.metric_help(metric, names));
                    let d = self.diag(d, "heuristic.metric");
                    self.push(d);
                }
                self.check_and_metric(h, names);
                self.check_bands(&h.bands, h.and_metric.is_some());
            }
        }
    }

    /// Why a metric that is no evidence name of the judge is not one. A name of the
    /// suite's evidence is visible to expressions but is no metric (a band table reads
    /// one of the judge's own values, recorded on its verdict): say so and how to use it.
    /// Otherwise, the judge's closest name.
    fn metric_help(&self, metric: &str, names: &[String]) -> Option<String> {
        if self.checker.shared.iter().any(|s| s == metric) {
            return Some(format!(
                "`{metric}` is suite evidence, and suite names do not count as a \
                 metric: add evidence to the judge that reads it, such as \
                 `{metric}_value: << {metric} >>`, and name that"
            ));
        }
        did_you_mean_help(metric, names.iter().map(String::as_str))
    }

    /// A score (`score: true`, 1-5) or a confidence (0..1), constant or computed.
    fn check_computed(&mut self, value: &Computed, path: &str, score: bool, scope: &NameScope<'_>) {
        match value {
            Computed::Number(n) if score => {
                if n.fract() != 0.0 {
                    let d = Diagnostic::error(
                        Code::ScoreOutOfRange,
                        format!("a score is an integer, got {n}"),
                    );
                    let d = self.diag(d, path);
                    self.push(d);
                } else {
                    self.check_score_f(*n, path);
                }
            }
            Computed::Number(n) => self.check_confidence(*n, path),
            Computed::Expr(src) => {
                if expression_inner(src).is_none() {
                    let d = Diagnostic::error(
                        Code::WrongType,
                        format!("expected a number or an expression `<< ... >>`, got `{src}`"),
                    );
                    let d = self.diag(d, path);
                    self.push(d);
                    return;
                }
                self.check_expr(condition_source(src), path, scope);
            }
        }
    }

    fn check_recommendations(
        &mut self,
        recs: &[crate::spec::judge::RecommendationSpec],
        path: &str,
        scope: &NameScope<'_>,
    ) {
        for (i, r) in recs.iter().enumerate() {
            if let Some(c) = &r.condition {
                self.check_expr(condition_source(c), &format!("{path}[{i}].if"), scope);
            }
            self.check_text(&r.text, &format!("{path}[{i}].text"), scope);
        }
    }

    /// A text field (`reasoning`, `message`): a template when it has `<< >>` parts.
    fn check_text(&mut self, text: &str, path: &str, scope: &NameScope<'_>) {
        if text.contains("<<") || text.contains("<%") {
            self.check_template(text, path, scope);
        }
    }

    fn check_assertions(&mut self, spec: &JudgeSpec, names: &[String]) {
        let mut available: Vec<&str> = self.context_names(spec);
        available.extend(names.iter().map(String::as_str));
        let scope = NameScope {
            available,
            later: &[],
            open: false,
        };
        for (i, a) in spec.assertions.iter().enumerate() {
            let path = format!("assertions[{i}]");
            let mut item_scope = NameScope {
                available: scope.available.clone(),
                later: &[],
                open: false,
            };
            if let Some(fe) = &a.for_each {
                let fe_path = format!("{path}.for_each");
                if let Some(plan) = self.plan_text(fe, &fe_path, &scope)
                    && matches!(plan, ValuePlan::Const(_) | ValuePlan::Template(_))
                {
                    let d = Diagnostic::error(
                        Code::WrongType,
                        "for_each must be a JSONPath selector (`$...`) or an expression (`<< ... >>`)",
                    );
                    let d = self.diag(d, &fe_path);
                    self.push(d);
                }
                item_scope.available.extend(["item", "loop"]);
                // The items' keys are names too; their shape is known only when it runs.
                item_scope.open = true;
            }
            let scope = &item_scope;
            match &a.failures {
                Some(f) => {
                    self.check_failures_alone(a, &path);
                    self.check_expr(condition_source(f), &format!("{path}.failures"), scope);
                }
                None if a.that.is_empty() || a.message.is_empty() => {
                    self.check_that_and_message(a, &path);
                }
                None => {
                    self.check_expr(condition_source(&a.that), &format!("{path}.that"), scope);
                    self.check_text(&a.message, &format!("{path}.message"), scope);
                }
            }
            if let Some(cap) = a.cap {
                self.check_score(cap, &format!("{path}.cap"));
            }
        }
    }

    /// `failures` gives the messages itself: a `that` or `message` beside it would never
    /// be read.
    fn check_failures_alone(&mut self, a: &crate::spec::judge::AssertionSpec, path: &str) {
        for (key, given) in [("that", &a.that), ("message", &a.message)] {
            if given.is_empty() {
                continue;
            }
            let d = Diagnostic::error(
                Code::WrongType,
                format!("`{key}` beside `failures`: an assertion is `that` + `message`, or `failures` alone"),
            )
            .help("`failures` gives the failure messages itself (an empty list passes); drop `that` and `message`, or drop `failures`");
            let d = self.key_diag(d, &format!("{path}.{key}"));
            self.push(d);
        }
    }

    /// An assertion without `failures` needs both `that` and `message`.
    fn check_that_and_message(&mut self, a: &crate::spec::judge::AssertionSpec, path: &str) {
        let missing = if a.that.is_empty() { "that" } else { "message" };
        let d = Diagnostic::error(
            Code::MissingKey,
            format!("missing required key `{missing}`"),
        )
        .help("an assertion is `that` (a condition) + `message`, or `failures` (an expression giving a list of messages)");
        let d = self.diag(d, path);
        self.push(d);
    }

    // ------------------------------------------------------------------ prompt
}

/// The fields of `loop` beyond an item's ([`crate::evidence::eval::LOOP_ITEM_FIELDS`]):
/// a record list's `prevrecord`, and a template `for` loop's, which a template inside a
/// record can open (`depth`, `cycle`, ...).
const LOOP_EXTRA_FIELDS: &[&str] = &["prevrecord", "depth", "depth0", "cycle", "changed"];

/// Built-ins that take the name of a test (`true`) or filter (`false`) as a string, and
/// the position of that name among their arguments in filter form.
const NAMED_CALLEE: &[(&str, usize, bool)] = &[
    ("select", 0, true),
    ("reject", 0, true),
    ("selectattr", 1, true),
    ("rejectattr", 1, true),
    ("map", 0, false),
];

/// Whether `text` indexes `name` with something other than a string literal
/// (`truth[key]`, not `truth['expected']`).
fn indexes_by_variable(text: &str, name: &str) -> bool {
    let pattern = format!("{name}[");
    text.match_indices(&pattern).any(|(at, _)| {
        let before_ok = text[..at]
            .chars()
            .next_back()
            .is_none_or(|c| !(c.is_alphanumeric() || c == '_' || c == '.'));
        let index = text[at + pattern.len()..].trim_start();
        before_ok && !(index.starts_with('\'') || index.starts_with('"'))
    })
}

/// Byte offset of `word` in `text` as a whole word.
fn find_word(text: &str, word: &str) -> Option<usize> {
    let bytes = text.as_bytes();
    let mut from = 0;
    while let Some(i) = text[from..].find(word) {
        let at = from + i;
        let before_ok =
            at == 0 || !(bytes[at - 1].is_ascii_alphanumeric() || bytes[at - 1] == b'_');
        let end = at + word.len();
        let after_ok =
            end >= bytes.len() || !(bytes[end].is_ascii_alphanumeric() || bytes[end] == b'_');
        if before_ok && after_ok {
            return Some(at);
        }
        from = at + word.len().max(1);
    }
    None
}

/// The judge's verdict format with the transport in force: its own, else the suite's
/// where the format can be bound to a schema (a regex or label format keeps text). Text
/// is left unwritten, so a text judge's cache key is the one it always had.
fn with_transport(
    declared: Option<crate::spec::verdict_format::VerdictFormat>,
    suite: Option<crate::spec::verdict_format::Transport>,
) -> crate::spec::verdict_format::VerdictFormat {
    let mut format = declared.unwrap_or_default();
    if format.transport.is_none()
        && suite == Some(crate::spec::verdict_format::Transport::Schema)
        && crate::verdict::schema::BoundSchema::of(&format, &[], [1, 5]).is_some()
    {
        format.transport = suite;
    }
    format
}
