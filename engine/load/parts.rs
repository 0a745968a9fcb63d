//! Which part of a run each piece of suite evidence and each judge belongs to, told at
//! load: the seam along which `caldera run --shard` splits a run and `caldera merge`
//! joins it again.
//!
//! - **Constant**: reads no document and nothing computed from one (`suite`, `inputs`,
//!   constants): the same wherever it is computed.
//! - **Per-repo**: suite evidence that is a record list over `$.repos[*]` whose every
//!   field reads only its item (`id`, `file`, `stem`, `result`, `truth`, `item`, the
//!   record's own earlier fields), `suite`, `inputs` and constant evidence; a
//!   `scope: repo` judge that reads no suite evidence but constants. Its value for a repo
//!   depends on that repo alone, so any set of repos can be computed apart.
//! - **Aggregate**: reads per-repo and aggregate evidence, never a document: computed
//!   after the per-repo phase from the records of every repo.
//! - **Whole**: anything else reading `repos`, `results` or `truth` (or the whole root
//!   through a selector): it needs every document at once.
//!
//! The classification is conservative: what it cannot prove per-repo or aggregate is
//! whole, with the first read that makes it so (its file, line and key path), which
//! `caldera validate` and `caldera plan` show per judge.

use std::path::{Path, PathBuf};

use crate::evidence::plan::{RecordsPlan, ValuePlan};
use crate::load::judge::JudgePlan;
use crate::load::names::FreeNames;
use crate::load::suite::Suite;
use crate::load::yaml::KeyIndex;
use crate::spec::judge::Scope;
use crate::verdict::assertions::ForEachPlan;

/// The names of the run context that hold documents of every repo.
pub(crate) const DOCUMENT_NAMES: [&str; 3] = ["repos", "results", "truth"];

/// What an item of `$.repos[*]` holds, plus `item` itself: all a per-repo record reads.
const REPO_ITEM_NAMES: [&str; 6] = ["id", "file", "stem", "result", "truth", "item"];

/// Context names that hold no document: the same in every part of a run.
const SHARED_NAMES: [&str; 2] = ["suite", "inputs"];

/// The part of a run a piece of evidence or a judge belongs to.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Part {
    /// Reads no document, directly or through other evidence.
    Constant,
    /// Computed for each repo from that repo alone.
    PerRepo,
    /// Computed from per-repo records (and other aggregates) after the per-repo phase.
    Aggregate,
    /// Needs every document at once; why.
    Whole(Why),
}

impl Part {
    /// `constant`, `per-repo`, `aggregate` or `whole`.
    pub(crate) fn label(&self) -> &'static str {
        match self {
            Part::Constant => "constant",
            Part::PerRepo => "per-repo",
            Part::Aggregate => "aggregate",
            Part::Whole(_) => "whole",
        }
    }

    /// The reason, for a whole part.
    pub(crate) fn why(&self) -> Option<&Why> {
        match self {
            Part::Whole(why) => Some(why),
            _ => None,
        }
    }
}

/// The first read that makes a part whole.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Why {
    /// The file it is written in.
    pub file: PathBuf,
    /// Its 1-based line, when it can be found.
    pub line: Option<usize>,
    /// Its key path in the file (`evidence.scans.for_each`), or empty when unknown.
    pub key: String,
    /// What it reads, in words.
    pub reason: String,
}

impl std::fmt::Display for Why {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", crate::diag::display_path(&self.file))?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
        }
        if !self.key.is_empty() {
            write!(f, " at `{}`", self.key)?;
        }
        write!(f, ": {}", self.reason)
    }
}

/// The parts of a suite: each piece of suite evidence and each judge, in suite order.
#[derive(Debug, Clone)]
pub(crate) struct Parts {
    /// Suite evidence name -> part.
    pub evidence: Vec<(String, Part)>,
    /// One per judge of `suite.judges`, same order.
    pub judges: Vec<Part>,
}

impl Parts {
    /// Whether anything needs every document at once.
    pub(crate) fn any_whole(&self) -> bool {
        self.evidence
            .iter()
            .map(|(_, p)| p)
            .chain(&self.judges)
            .any(|p| matches!(p, Part::Whole(_)))
    }

    /// Whether every judge and every piece of suite evidence is per-repo, aggregate or
    /// constant: the run can go repo by repo.
    pub(crate) fn streamable(&self) -> bool {
        !self.any_whole()
    }
}

/// Classifies `suite`'s evidence and judges.
pub(crate) fn classify(suite: &Suite) -> Parts {
    let file = Located::new(&suite.file, &suite.index, &suite.free_names);
    let mut evidence: Vec<(String, Part)> = Vec::new();
    for (name, plan) in &suite.evidence {
        let key = format!("evidence.{name}");
        let part = file.suite_evidence(plan, &key, &evidence);
        evidence.push((name.clone(), part));
    }
    let judges = suite
        .judges
        .iter()
        .map(|j| classify_judge(j, &evidence))
        .collect();
    Parts { evidence, judges }
}

/// A judge's part: per-repo for a `scope: repo` judge reading only constant suite
/// evidence, aggregate for a suite judge reading no document, else whole.
fn classify_judge(plan: &JudgePlan, suite_parts: &[(String, Part)]) -> Part {
    let file = Located::new(&plan.file, &plan.index, &plan.free_names);
    let mut reads = Vec::new();
    for (name, value) in &plan.evidence {
        file.reads(value, &format!("evidence.{name}"), false, &mut reads);
    }
    for (i, a) in plan.assertions.iter().enumerate() {
        let key = format!("assertions.{i}.for_each");
        match &a.for_each {
            Some(ForEachPlan::Select(Ok(sel))) => reads.push(file.selector(&sel.source, &key)),
            Some(ForEachPlan::Select(Err(_)) | ForEachPlan::Invalid) => {}
            Some(ForEachPlan::Expr(e)) => file.names(e.source(), &key, &mut reads),
            None => {}
        }
    }
    // Heuristic and assertion texts: every expression and template of the file.
    let mut sources: Vec<&String> = plan.free_names.keys().collect();
    sources.sort();
    for source in sources {
        file.names(source, "", &mut reads);
    }
    let own: Vec<&str> = plan.evidence.iter().map(|(n, _)| n.as_str()).collect();
    let reads: Vec<&Read> = reads
        .iter()
        .filter(|r| r.name.as_deref().is_none_or(|n| !own.contains(&n)))
        .collect();
    match plan.spec.scope {
        Scope::Repo => repo_judge_part(&reads, suite_parts, &file),
        Scope::Suite => suite_judge_part(&reads, suite_parts, &file),
    }
}

/// A per-repo judge reads its own repo's documents; suite evidence other than constants
/// is computed over every repo.
fn repo_judge_part(reads: &[&Read], suite_parts: &[(String, Part)], file: &Located<'_>) -> Part {
    for r in reads {
        let Some(name) = &r.name else {
            return Part::Whole(file.why(r, "a selector over the whole run context"));
        };
        if let Some((_, part)) = suite_parts.iter().find(|(n, _)| n == name)
            && *part != Part::Constant
        {
            return Part::Whole(file.why(
                r,
                &format!(
                    "reads suite evidence `{name}` ({}), computed over every repo",
                    part.label()
                ),
            ));
        }
    }
    Part::PerRepo
}

/// A suite judge is aggregate when it reads no document and no whole suite evidence.
fn suite_judge_part(reads: &[&Read], suite_parts: &[(String, Part)], file: &Located<'_>) -> Part {
    if let Some(why) = first_whole(reads, suite_parts, file) {
        return Part::Whole(why);
    }
    Part::Aggregate
}

/// The first read of a document, of the whole root or of whole suite evidence.
fn first_whole(reads: &[&Read], suite_parts: &[(String, Part)], file: &Located<'_>) -> Option<Why> {
    reads.iter().find_map(|r| match &r.name {
        None => Some(file.why(r, "a selector over the whole run context")),
        Some(n) if DOCUMENT_NAMES.contains(&n.as_str()) => {
            Some(file.why(r, &format!("reads `{n}`, every repo's documents at once")))
        }
        Some(n) => match suite_parts.iter().find(|(s, _)| s == n) {
            Some((_, Part::Whole(_))) => Some(file.why(
                r,
                &format!("reads suite evidence `{n}`, which needs every document"),
            )),
            _ => None,
        },
    })
}

/// One name an expression reads, or a selector's root name (`None`: the selector starts
/// at the root itself and may read anything), with where it is written.
#[derive(Debug, Clone)]
struct Read {
    name: Option<String>,
    key: String,
    written: String,
}

/// A file being classified: its text (to find lines), key index and free names.
struct Located<'a> {
    file: &'a Path,
    text: String,
    index: &'a KeyIndex,
    free: &'a FreeNames,
}

impl<'a> Located<'a> {
    fn new(file: &'a Path, index: &'a KeyIndex, free: &'a FreeNames) -> Located<'a> {
        Located {
            file,
            text: std::fs::read_to_string(file).unwrap_or_default(),
            index,
            free,
        }
    }

    /// Where `read` is: its key's line, else the line its text is first written on.
    fn why(&self, read: &Read, reason: &str) -> Why {
        let line = (!read.key.is_empty())
            .then(|| self.index.value_span(&read.key).map(|s| s.line))
            .flatten()
            .or_else(|| {
                self.text
                    .find(&read.written)
                    .map(|at| self.text[..at].matches('\n').count() + 1)
            });
        Why {
            file: self.file.to_path_buf(),
            line,
            key: read.key.clone(),
            reason: format!("{reason}: `{}`", short(&read.written)),
        }
    }

    /// The part of one piece of suite evidence, given the parts before it.
    fn suite_evidence(&self, plan: &ValuePlan, key: &str, before: &[(String, Part)]) -> Part {
        if let ValuePlan::Records(rec) = plan
            && self.per_repo_records(rec, key, before)
        {
            return Part::PerRepo;
        }
        let mut reads = Vec::new();
        self.reads(plan, key, false, &mut reads);
        let reads: Vec<&Read> = reads.iter().collect();
        if let Some(why) = first_whole(&reads, before, self) {
            return Part::Whole(why);
        }
        let reads_records = reads.iter().any(|r| {
            r.name.as_deref().is_some_and(|n| {
                before
                    .iter()
                    .any(|(b, p)| b == n && matches!(p, Part::PerRepo | Part::Aggregate))
            })
        });
        if reads_records {
            Part::Aggregate
        } else {
            Part::Constant
        }
    }

    /// A record list over `$.repos[*]` (a list, not a map) whose every expression reads
    /// only its item, its earlier fields, `suite`, `inputs` and constant evidence.
    fn per_repo_records(&self, rec: &RecordsPlan, key: &str, before: &[(String, Part)]) -> bool {
        let over_repos = matches!(&rec.for_each, ValuePlan::Select(s)
            if s.source.split_whitespace().collect::<String>() == "$.repos[*]");
        if !over_repos || rec.key.is_some() {
            return false;
        }
        let constant = |n: &str| before.iter().any(|(b, p)| b == n && *p == Part::Constant);
        let mut fields: Vec<&str> = Vec::new();
        let allowed = |reads: &[Read], fields: &[&str]| {
            reads.iter().all(|r| {
                r.name.as_deref().is_some_and(|n| {
                    REPO_ITEM_NAMES.contains(&n)
                        || SHARED_NAMES.contains(&n)
                        || fields.contains(&n)
                        || constant(n)
                })
            })
        };
        if let Some(filter) = &rec.filter {
            let mut reads = Vec::new();
            self.names(filter.source(), &format!("{key}.where"), &mut reads);
            if !allowed(&reads, &fields) {
                return false;
            }
        }
        for (name, value) in &rec.fields {
            let mut reads = Vec::new();
            self.reads(value, &format!("{key}.fields.{name}"), true, &mut reads);
            if !allowed(&reads, &fields) {
                return false;
            }
            fields.push(name);
        }
        if let Some(value) = &rec.value {
            let mut reads = Vec::new();
            self.reads(value, &format!("{key}.value"), true, &mut reads);
            if !allowed(&reads, &fields) {
                return false;
            }
        }
        true
    }

    /// Every read of `plan` at `key`. Inside a record's item (`in_item`), selectors read
    /// the item, not the context.
    fn reads(&self, plan: &ValuePlan, key: &str, in_item: bool, out: &mut Vec<Read>) {
        match plan {
            ValuePlan::Select(sel) if !in_item => out.push(self.selector(&sel.source, key)),
            ValuePlan::Select(_) | ValuePlan::Const(_) => {}
            ValuePlan::Expr(e) => self.names(e.source(), key, out),
            ValuePlan::Template(t) => self.names(t, key, out),
            ValuePlan::Conditional(c) => {
                if let Some(cond) = &c.condition {
                    self.names(cond.source(), &format!("{key}.if"), out);
                }
                self.reads(&c.value, key, in_item, out);
            }
            ValuePlan::Records(rec) => {
                self.reads(&rec.for_each, &format!("{key}.for_each"), in_item, out);
                if let Some(f) = &rec.filter {
                    self.names(f.source(), &format!("{key}.where"), out);
                }
                for (name, value) in &rec.fields {
                    self.reads(value, &format!("{key}.fields.{name}"), true, out);
                }
                for (k, value) in [("key", &rec.key), ("value", &rec.value)] {
                    if let Some(value) = value {
                        self.reads(value, &format!("{key}.{k}"), true, out);
                    }
                }
            }
        }
    }

    /// The free names of an expression or template. One whose names were not recorded
    /// at load cannot be told apart: it reads the whole root, as far as this knows.
    fn names(&self, source: &str, key: &str, out: &mut Vec<Read>) {
        let read = |name: Option<String>| Read {
            name,
            key: key.to_owned(),
            written: source.trim().to_owned(),
        };
        match self.free.get(source) {
            Some(names) => out.extend(
                names
                    .iter()
                    .filter(|n| !only_called(source, n))
                    .map(|n| read(Some(n.clone()))),
            ),
            None => out.push(read(None)),
        }
    }

    /// A selector's root name: `$.name...` or `$['name']...`; `None` for anything that
    /// starts at the root itself (`$..x`, `$[*]`, `$.*`).
    fn selector(&self, source: &str, key: &str) -> Read {
        Read {
            name: root_name(source),
            key: key.to_owned(),
            written: source.trim().to_owned(),
        }
    }
}

/// `text` on one line, cut to 80 characters.
fn short(text: &str) -> String {
    let line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match line.char_indices().nth(80) {
        Some((at, _)) => format!("{}...", &line[..at]),
        None => line,
    }
}

/// Whether `name` is only ever called in `source` (`coalesce(...)`): a function of the
/// environment, not a name of the context.
fn only_called(source: &str, name: &str) -> bool {
    use crate::load::names::{Tok, spanned_tokens};
    let toks: Vec<Tok<'_>> = spanned_tokens(source).into_iter().map(|(t, _)| t).collect();
    let mut uses = toks
        .iter()
        .enumerate()
        .filter(|(_, t)| **t == Tok::Ident(name))
        .peekable();
    uses.peek().is_some()
        && uses.all(|(i, _)| {
            toks.get(i + 1) == Some(&Tok::Punct(b'('))
                && (i == 0 || toks.get(i - 1) != Some(&Tok::Punct(b'.')))
        })
}

/// The first name a selector steps into, when it names one.
fn root_name(source: &str) -> Option<String> {
    let rest = source.trim().strip_prefix('$')?;
    if let Some(dotted) = rest.strip_prefix('.') {
        let name: String = dotted
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == '-')
            .collect();
        return (!name.is_empty() && !dotted.starts_with('.')).then_some(name);
    }
    let quoted = rest.strip_prefix('[')?;
    let quote = quoted.chars().next().filter(|c| *c == '\'' || *c == '"')?;
    let inner = &quoted[1..];
    let end = inner.find(quote)?;
    inner[end + 1..]
        .starts_with(']')
        .then(|| inner[..end].to_owned())
}

#[cfg(test)]
mod tests {
    use super::root_name;

    #[test]
    fn root_name_is_the_first_step_when_it_names_one() {
        assert_eq!(root_name("$.repos[*]").as_deref(), Some("repos"));
        assert_eq!(root_name("$['scans'][0]").as_deref(), Some("scans"));
        assert_eq!(root_name("$.scans").as_deref(), Some("scans"));
        assert_eq!(root_name("$..id"), None);
        assert_eq!(root_name("$[*]"), None);
        assert_eq!(root_name("$.*"), None);
        assert_eq!(root_name("$"), None);
    }
}
