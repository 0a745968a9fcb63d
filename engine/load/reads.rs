//! The field reads of an expression or template, for the data check of `caldera
//! validate` (`run/probe.rs`): every way a judge names a place in its inputs, as a
//! [`Read`] the probe can follow through the data to tell a typo from a real absence.
//!
//! - dotted paths: `truth.expected.cves`;
//! - subscripts: `repos[0].result`, `d['key']`, and computed ones (`xs[i].id`, followed
//!   into every item);
//! - `.get('key', default)`, which reads as `.key` (and is how authors read an optional
//!   key, so a misspelled one would otherwise score silently);
//! - attribute strings of filters that take one (`map(attribute='a.b')`,
//!   `selectattr('a.b')`, `rejectattr`, `sort`, `unique`, `sum`, `min`, `max`,
//!   `groupby`), read in every item of the list they filter;
//! - string paths of caldera's built-ins (`get(d, 'a.b')`, `sort_by`, `top(by=)`,
//!   `count_by`, `group_by`, `distinct`, `to_map`).
//!
//! It also finds the *guards*: paths tested (`x is defined`, `x is not none`) or used
//! as a condition (`if x`, `x and …`). Where a guard is undefined or `none`, the reads
//! under it are not taken as typos: the branch did not run, or the value is optional.
//!
//! One pass over the tokens of `names.rs`, no parser: the scan runs on every expression
//! `validate` evaluates. What it cannot follow (a path through a call result, a slice)
//! it leaves out rather than guess, so it never reports a path that exists.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::ops::Range;

use crate::load::names::{KEYWORDS, Role, Tok, role, spanned_tokens, template_parts};

/// One step of a read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Seg {
    /// A map key (`.key`, `['key']`, `.get('key')`, a step of an attribute string).
    Key(String),
    /// A list index (`[0]`, `.0` in an attribute string).
    Index(i64),
    /// Every item of a list (a computed subscript, or the items a filter goes over).
    Each,
}

/// One read: where it goes, and its text as written (to point at it in the file).
#[derive(Clone, Debug)]
pub(crate) struct Read {
    /// The steps, from a name of the scope.
    pub segments: Vec<Seg>,
    /// The text that names it in the source.
    pub written: String,
    /// Reads that are alternatives of one another (the arguments of `coalesce`, the
    /// sides of `or`) share a group: one of them matching is enough.
    pub group: Option<usize>,
    /// The branch the read is in: conditions that must hold (or not) for it to run
    /// (`<% if c %>`, `x if c else y`).
    pub conditions: Vec<Condition>,
}

/// A condition of a branch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Condition {
    /// The expression, as written.
    pub source: String,
    /// Whether the branch runs when it is true (else when it is false).
    pub holds: bool,
    /// The names it reads (a condition on a loop variable cannot be evaluated alone).
    pub names: Vec<String>,
}

/// The reads and guards of one expression or template.
#[derive(Debug, Default)]
pub(crate) struct Reads {
    /// Each read once, in order of first sight.
    pub reads: Vec<Read>,
    /// Paths tested or used as conditions.
    pub guards: Vec<Vec<Seg>>,
}

/// The reads of `source`: a template when it holds `<<` or `<%`, else an expression.
pub(crate) fn reads(source: &str) -> Reads {
    let mut out = Reads::default();
    let mut loops = HashMap::new();
    if source.contains("<<") || source.contains("<%") {
        // Group ids of each part start after the last part's.
        let mut base = 0;
        let mut blocks = Blocks::default();
        for (code, statement) in template_parts(source) {
            let keyword = if statement { first_word(code) } else { "" };
            blocks.before(keyword);
            let outer = blocks.conditions();
            base += scan(code, statement, base, &outer, &mut loops, &mut out);
            blocks.after(keyword, code);
        }
    } else {
        scan(source, false, 0, &[], &mut loops, &mut out);
    }
    out
}

fn first_word(code: &str) -> &str {
    code.split_whitespace().next().unwrap_or("")
}

/// The `if` blocks a template part is in (`for` blocks only keep the nesting right).
#[derive(Default)]
struct Blocks {
    open: Vec<Block>,
}

#[derive(Default)]
struct Block {
    is_if: bool,
    /// Conditions of earlier branches (`if`, `elif`): false in this one.
    earlier: Vec<(String, Vec<String>)>,
    /// The condition of this branch; none in `else`.
    current: Option<(String, Vec<String>)>,
}

impl Blocks {
    /// Before the part with statement `keyword` is scanned: an `elif` or `else` leaves
    /// the branch before it (its own condition runs only when the earlier ones are false).
    fn before(&mut self, keyword: &str) {
        if matches!(keyword, "elif" | "else")
            && let Some(block) = self.open.last_mut().filter(|b| b.is_if)
            && let Some(c) = block.current.take()
        {
            block.earlier.push(c);
        }
    }

    /// After it: an `if` or `elif` opens its branch, `for` a block; `endif`, `endfor`
    /// close one.
    fn after(&mut self, keyword: &str, code: &str) {
        let condition = || {
            let text = code.trim_start().strip_prefix(keyword).unwrap_or("").trim();
            (text.to_owned(), names_in(text))
        };
        match keyword {
            "if" => self.open.push(Block {
                is_if: true,
                earlier: Vec::new(),
                current: Some(condition()),
            }),
            "elif" => {
                if let Some(block) = self.open.last_mut() {
                    block.current = Some(condition());
                }
            }
            "for" => self.open.push(Block::default()),
            "endif" | "endfor" => {
                self.open.pop();
            }
            _ => {}
        }
    }

    /// The conditions of the branches the next part is in.
    fn conditions(&self) -> Vec<Condition> {
        let mut out = Vec::new();
        for block in &self.open {
            for (source, names) in &block.earlier {
                out.push(Condition {
                    source: source.clone(),
                    holds: false,
                    names: names.clone(),
                });
            }
            if let Some((source, names)) = &block.current {
                out.push(Condition {
                    source: source.clone(),
                    holds: true,
                    names: names.clone(),
                });
            }
        }
        out
    }
}

/// The names an expression reads (not functions, filters, tests or attributes).
fn names_in(code: &str) -> Vec<String> {
    let toks: Vec<Tok<'_>> = spanned_tokens(code).into_iter().map(|(t, _)| t).collect();
    let mut out: Vec<String> = Vec::new();
    for (k, tok) in toks.iter().enumerate() {
        if let Tok::Ident(name) = tok
            && role(&toks, k, name) == Role::Name
            && !KEYWORDS.contains(name)
            && !matches!(*name, "true" | "false" | "none" | "True" | "False" | "None")
            && toks.get(k + 1) != Some(&Tok::Punct(b'('))
            && !out.iter().any(|n| n == name)
        {
            out.push((*name).to_owned());
        }
    }
    out
}

/// A path as a reader writes it: `repos[0].result.findings`, `repos[*].id` for every item.
pub(crate) fn display(segments: &[Seg]) -> String {
    let mut s = String::new();
    for (i, seg) in segments.iter().enumerate() {
        match seg {
            Seg::Key(k) if i == 0 => s.push_str(k),
            Seg::Key(k) if is_identifier(k) => {
                s.push('.');
                s.push_str(k);
            }
            Seg::Key(k) => {
                let _ = write!(s, "['{k}']");
            }
            Seg::Index(n) => {
                let _ = write!(s, "[{n}]");
            }
            Seg::Each => s.push_str("[*]"),
        }
    }
    s
}

fn is_identifier(k: &str) -> bool {
    let mut chars = k.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// The steps of an attribute string: `'a.0.b'` is key `a`, index 0, key `b`.
fn attribute_path(text: &str) -> Option<Vec<Seg>> {
    // Empty, or several attributes at once (`'a,b'`): not one path.
    if text.is_empty() || text.contains([',', ' ']) {
        return None;
    }
    text.split('.')
        .map(|part| match part.parse::<i64>() {
            Ok(n) => Some(Seg::Index(n)),
            Err(_) if part.is_empty() => None,
            Err(_) => Some(Seg::Key(part.to_owned())),
        })
        .collect()
}

/// The tokens of one piece of code, with its text.
struct Code<'a> {
    text: &'a str,
    toks: Vec<Tok<'a>>,
    spans: Vec<Range<usize>>,
    /// For each token, the group its reads belong to (see [`Read::group`]).
    groups: Vec<Option<usize>>,
    /// For each token, the branch it is in (the template's, then inline `if`s).
    branches: Vec<Vec<Condition>>,
}

impl<'a> Code<'a> {
    fn tok(&self, k: usize) -> Option<Tok<'a>> {
        self.toks.get(k).copied()
    }

    fn is(&self, k: usize, b: u8) -> bool {
        self.tok(k) == Some(Tok::Punct(b))
    }

    /// The index of the bracket closing the one at `open`, or the end.
    fn closing(&self, open: usize) -> usize {
        let mut depth = 0usize;
        for k in open..self.toks.len() {
            match self.toks[k] {
                Tok::Punct(b'(' | b'[' | b'{') => depth += 1,
                Tok::Punct(b')' | b']' | b'}') => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        return k;
                    }
                }
                _ => {}
            }
        }
        self.toks.len()
    }

    /// The text of tokens `from..to`.
    fn text_of(&self, from: usize, to: usize) -> &'a str {
        match (
            self.spans.get(from),
            to.checked_sub(1).and_then(|t| self.spans.get(t)),
        ) {
            (Some(a), Some(b)) if b.end >= a.start => &self.text[a.start..b.end],
            _ => "",
        }
    }

    /// The arguments between `open` (a `(`) and its closing `)`: positional ones as token
    /// ranges, keyword ones by name.
    fn arguments(&self, open: usize) -> Arguments {
        let close = self.closing(open);
        let mut args = Arguments::default();
        let mut start = open + 1;
        let mut depth = 0usize;
        for k in open + 1..=close {
            match self.tok(k) {
                Some(Tok::Punct(b'(' | b'[' | b'{')) => depth += 1,
                Some(Tok::Punct(b')' | b']' | b'}')) if depth > 0 => depth -= 1,
                Some(Tok::Punct(b',')) if depth == 0 => {
                    self.push_argument(&mut args, start, k);
                    start = k + 1;
                }
                _ if k == close => self.push_argument(&mut args, start, k),
                _ => {}
            }
        }
        args
    }

    fn push_argument(&self, args: &mut Arguments, from: usize, to: usize) {
        if from >= to {
            return;
        }
        match (self.tok(from), self.tok(from + 1), self.tok(from + 2)) {
            (Some(Tok::Ident(name)), Some(Tok::Punct(b'=')), next)
                if next != Some(Tok::Punct(b'=')) =>
            {
                args.keyword.push((name.to_owned(), from + 2..to));
            }
            _ => args.positional.push(from..to),
        }
    }

    /// The string literal that is the whole of token range `r`.
    fn string(&self, r: &Range<usize>) -> Option<&'a str> {
        match (r.len(), self.tok(r.start)) {
            (1, Some(Tok::Str(s))) => Some(s),
            _ => None,
        }
    }
}

#[derive(Default)]
struct Arguments {
    positional: Vec<Range<usize>>,
    keyword: Vec<(String, Range<usize>)>,
}

impl Arguments {
    /// The argument at position `n` or named `name`.
    fn get(&self, n: Option<usize>, name: &str) -> Option<&Range<usize>> {
        self.keyword
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, r)| r)
            .or_else(|| n.and_then(|n| self.positional.get(n)))
    }
}

/// Words before a path that make it a condition.
const GUARD_BEFORE: &[&str] = &["if", "elif", "and", "not"];
/// Words after a path that make it a condition.
const GUARD_AFTER: &[&str] = &["and", "else"];
/// Tests that ask whether a value is there, or of which kind it is (`x is mapping and
/// x.k`): the path they test is a guard. Other tests (`x is sameas true`) read a value.
const GUARD_TESTS: &[&str] = &[
    "defined",
    "undefined",
    "none",
    "mapping",
    "sequence",
    "string",
    "number",
    "iterable",
    "boolean",
    "integer",
    "float",
];

/// Whether the path ending before token `end` is tested for presence or kind.
fn tested(code: &Code<'_>, end: usize) -> bool {
    if code.tok(end) != Some(Tok::Ident("is")) {
        return false;
    }
    let test = match code.tok(end + 1) {
        Some(Tok::Ident("not")) => code.tok(end + 2),
        other => other,
    };
    matches!(test, Some(Tok::Ident(t)) if GUARD_TESTS.contains(&t))
}

/// Scans one expression, or one part of a template. `loops` maps the loop variables
/// seen so far (`for r in repos`) to the path of their items; group ids start at `base`.
/// Returns how many group ids the part may use.
fn scan(
    text: &str,
    statement: bool,
    base: usize,
    outer: &[Condition],
    loops: &mut HashMap<String, Vec<Seg>>,
    out: &mut Reads,
) -> usize {
    let (toks, spans): (Vec<_>, Vec<_>) = spanned_tokens(text).into_iter().unzip();
    let ids = toks.len() + 1;
    let groups = alternatives(&toks, base);
    let mut code = Code {
        text,
        toks,
        spans,
        groups,
        branches: Vec::new(),
    };
    code.branches = inline_branches(&code, statement, outer);
    let for_loop = statement && code.tok(0) == Some(Tok::Ident("for"));
    for k in 0..code.toks.len() {
        let Some(Tok::Ident(name)) = code.tok(k) else {
            continue;
        };
        if role(&code.toks, k, name) != Role::Name || KEYWORDS.contains(&name) {
            continue;
        }
        if statement && k == 0 {
            continue; // `for`, `if`, `set`, `endif`, ...
        }
        if code.is(k + 1, b'(') {
            builtin_call(&code, k, name, loops, out);
            continue;
        }
        if code.is(k + 1, b'=') && !code.is(k + 2, b'=') {
            continue; // a keyword argument's name
        }
        if for_loop && k == 1 && code.tok(2) == Some(Tok::Ident("in")) {
            // `for r in <path>`: `r` stands for each item of the path.
            match chain(&code, 3, loops) {
                // Not `for x in range(..)`: a call's result is not followed.
                Some((mut items, end)) if !code.is(end, b'(') => {
                    items.push(Seg::Each);
                    loops.insert(name.to_owned(), items);
                }
                _ => {
                    loops.remove(name);
                }
            }
            continue;
        }
        let Some((segments, end)) = chain(&code, k, loops) else {
            continue;
        };
        let before = k.checked_sub(1).and_then(|j| code.tok(j));
        let after = code.tok(end);
        // `if x`, `and x`: a condition when nothing but the end of the condition follows
        // (`or xs | selectattr(..)` reads `xs` for its value).
        let ends = matches!(after, None | Some(Tok::Punct(b')')))
            || matches!(after, Some(Tok::Ident(w)) if GUARD_AFTER.contains(&w));
        let guard = matches!(after, Some(Tok::Ident(w)) if GUARD_AFTER.contains(&w))
            || tested(&code, end)
            || (ends && matches!(before, Some(Tok::Ident(w)) if GUARD_BEFORE.contains(&w)));
        let group = if guard {
            out.guards.push(segments.clone());
            None
        } else {
            code.groups[k]
        };
        filters(&code, k, end, &segments, group, out);
        push(out, &code, k, segments, code.text_of(k, end), group);
    }
    ids
}

/// Adds a read found at token `k`, once per branch it is in.
fn push(
    out: &mut Reads,
    code: &Code<'_>,
    k: usize,
    segments: Vec<Seg>,
    written: &str,
    group: Option<usize>,
) {
    let conditions = code.branches.get(k).cloned().unwrap_or_default();
    if !out
        .reads
        .iter()
        .any(|r| r.segments == segments && r.conditions == conditions)
    {
        out.reads.push(Read {
            segments,
            written: written.to_owned(),
            group,
            conditions,
        });
    }
}

/// The branch of each token: `outer` (the template's), then the inline `x if c else y`
/// it is in (`x` runs when `c` holds, `y` when it does not).
fn inline_branches(code: &Code<'_>, statement: bool, outer: &[Condition]) -> Vec<Vec<Condition>> {
    let toks = &code.toks;
    let n = toks.len();
    let mut out = vec![outer.to_vec(); n];
    for i in 0..n {
        if toks[i] != Tok::Ident("if") || (statement && i == 0) {
            continue;
        }
        let Some(e) = matching_else(toks, i) else {
            continue;
        };
        let stop = |t: Tok<'_>| matches!(t, Tok::Punct(b',' | b':')) || t == Tok::Ident("else");
        // Back to the start of the value: a `,`, `:`, `else` or opening bracket.
        let mut start = i;
        let mut depth = 0usize;
        while start > 0 {
            match toks[start - 1] {
                Tok::Punct(b')' | b']' | b'}') => depth += 1,
                Tok::Punct(b'(' | b'[' | b'{') if depth == 0 => break,
                Tok::Punct(b'(' | b'[' | b'{') => depth -= 1,
                t if depth == 0 && stop(t) => break,
                _ => {}
            }
            start -= 1;
        }
        // On to the end of the other value: a `,`, `:` or closing bracket.
        let mut end = e + 1;
        let mut depth = 0usize;
        while end < n {
            match toks[end] {
                Tok::Punct(b'(' | b'[' | b'{') => depth += 1,
                Tok::Punct(b')' | b']' | b'}') if depth == 0 => break,
                Tok::Punct(b')' | b']' | b'}') => depth -= 1,
                Tok::Punct(b',' | b':') if depth == 0 => break,
                _ => {}
            }
            end += 1;
        }
        let source = code.text_of(i + 1, e).to_owned();
        let names = names_in(&source);
        for (range, holds) in [(start..i, true), (e + 1..end, false)] {
            for branch in &mut out[range] {
                branch.push(Condition {
                    source: source.clone(),
                    holds,
                    names: names.clone(),
                });
            }
        }
    }
    out
}

/// The `else` of the inline `if` at `i`, at its bracket depth (nested `if`s between
/// have their own).
fn matching_else(toks: &[Tok<'_>], i: usize) -> Option<usize> {
    let mut depth = 0usize;
    let mut nested = 0usize;
    for (k, tok) in toks.iter().enumerate().skip(i + 1) {
        match tok {
            Tok::Punct(b'(' | b'[' | b'{') => depth += 1,
            Tok::Punct(b')' | b']' | b'}') if depth == 0 => return None,
            Tok::Punct(b')' | b']' | b'}') => depth -= 1,
            Tok::Ident("if") if depth == 0 => nested += 1,
            Tok::Ident("else") if depth == 0 && nested == 0 => return Some(k),
            Tok::Ident("else") if depth == 0 => nested -= 1,
            _ => {}
        }
    }
    None
}

/// The group of each token: the bracket it sits in, when that is the argument list of
/// `coalesce` or holds an `or` (at its own depth); else none. Ids are `base` plus the
/// region's, so groups of different parts of a template differ.
fn alternatives(toks: &[Tok<'_>], base: usize) -> Vec<Option<usize>> {
    let mut enclosing = Vec::with_capacity(toks.len());
    let mut stack: Vec<usize> = Vec::new();
    // Region id: the index of its opening bracket plus one; 0 for the top level.
    let mut has_or = vec![false; toks.len() + 1];
    let mut coalesce = vec![false; toks.len() + 1];
    for (k, tok) in toks.iter().enumerate() {
        match tok {
            Tok::Punct(b'(' | b'[' | b'{') => {
                enclosing.push(stack.last().copied().unwrap_or(0));
                stack.push(k + 1);
                coalesce[k + 1] =
                    *tok == Tok::Punct(b'(') && k > 0 && toks[k - 1] == Tok::Ident("coalesce");
            }
            Tok::Punct(b')' | b']' | b'}') => {
                stack.pop();
                enclosing.push(stack.last().copied().unwrap_or(0));
            }
            _ => {
                let region = stack.last().copied().unwrap_or(0);
                if *tok == Tok::Ident("or") {
                    has_or[region] = true;
                }
                enclosing.push(region);
            }
        }
    }
    enclosing
        .into_iter()
        .map(|r| (has_or[r] || coalesce[r]).then_some(base + r))
        .collect()
}

/// The path starting at the name at `k` (`a.b[0]['c'].get('d')`), with a loop variable
/// replaced by the items it stands for; and the token after it. `None` when the path
/// goes through something that cannot be followed.
fn chain(
    code: &Code<'_>,
    k: usize,
    loops: &HashMap<String, Vec<Seg>>,
) -> Option<(Vec<Seg>, usize)> {
    let Some(Tok::Ident(root)) = code.tok(k) else {
        return None;
    };
    let mut segments = match loops.get(root) {
        Some(items) => items.clone(),
        None => vec![Seg::Key(root.to_owned())],
    };
    let mut j = k + 1;
    loop {
        match code.tok(j) {
            Some(Tok::Punct(b'.')) => match (code.tok(j + 1), code.is(j + 2, b'(')) {
                (Some(Tok::Ident("get")), true) => {
                    // `.get('key', ...)` reads `.key`; any other argument: stop here.
                    let args = code.arguments(j + 2);
                    match args.positional.first().and_then(|r| code.string(r)) {
                        Some(key) => segments.push(Seg::Key(key.to_owned())),
                        None => break,
                    }
                    j = code.closing(j + 2) + 1;
                }
                // A method call: the path ends at its receiver.
                (Some(Tok::Ident(_)), true) => break,
                (Some(Tok::Ident(key)), false) => {
                    segments.push(Seg::Key(key.to_owned()));
                    j += 2;
                }
                (Some(Tok::Num(n)), _) => match n.parse::<i64>() {
                    Ok(n) => {
                        segments.push(Seg::Index(n));
                        j += 2;
                    }
                    Err(_) => break,
                },
                _ => break,
            },
            Some(Tok::Punct(b'[')) => {
                let close = code.closing(j);
                let inner = &code.toks[(j + 1).min(close)..close];
                let seg = match inner {
                    [Tok::Num(n)] => Seg::Index(n.parse().ok()?),
                    [Tok::Punct(b'-'), Tok::Num(n)] => Seg::Index(-n.parse::<i64>().ok()?),
                    [Tok::Str(s)] => Seg::Key((*s).to_owned()),
                    // A slice has the items of the list: the path stands for the list,
                    // as long as nothing is read from the slice itself.
                    _ if inner.contains(&Tok::Punct(b':')) => {
                        let after = code.tok(close + 1);
                        if matches!(after, Some(Tok::Punct(b'.' | b'['))) {
                            return None;
                        }
                        return Some((segments, close + 1));
                    }
                    [] => return None,
                    _ => Seg::Each,
                };
                segments.push(seg);
                j = close + 1;
            }
            _ => break,
        }
    }
    Some((segments, j))
}

/// Attribute strings in the filters after the path `receiver` (the `|` at `at`), read
/// in each item of the list the filter goes over.
fn filters(
    code: &Code<'_>,
    k: usize,
    mut at: usize,
    receiver: &[Seg],
    group: Option<usize>,
    out: &mut Reads,
) {
    let mut items: Vec<Seg> = receiver.to_vec();
    items.push(Seg::Each);
    let mut first = true;
    while code.is(at, b'|') {
        let Some(Tok::Ident(filter)) = code.tok(at + 1) else {
            return;
        };
        let (args, next) = if code.is(at + 2, b'(') {
            (code.arguments(at + 2), code.closing(at + 2) + 1)
        } else {
            (Arguments::default(), at + 2)
        };
        let attribute = |n: Option<usize>, name: &str| -> Option<(Vec<Seg>, &str)> {
            let text = code.string(args.get(n, name)?)?;
            Some((attribute_path(text)?, text))
        };
        let mut read_in_items = |found: Option<(Vec<Seg>, &str)>| {
            if let Some((path, text)) = found {
                let mut full = items.clone();
                full.extend(path);
                push(out, code, k, full, text, group);
            }
        };
        match filter {
            "list" | "reverse" | "select" | "reject" | "unique" | "sort" => {
                read_in_items(attribute(None, "attribute"));
            }
            // `selectattr('a', 'undefined')` asks whether items have `a`: no typo check.
            "selectattr" | "rejectattr"
                if args
                    .positional
                    .get(1)
                    .and_then(|r| code.string(r))
                    .is_some_and(|t| PRESENCE_TESTS.contains(&t)) => {}
            "selectattr" | "rejectattr" => read_in_items(attribute(Some(0), "attribute")),
            "sort_by" => read_in_items(attribute(Some(0), "attribute")),
            "top" => read_in_items(attribute(Some(1), "by")),
            "flatten" if args.positional.is_empty() && args.keyword.is_empty() => {
                items.push(Seg::Each);
            }
            "map" => match attribute(None, "attribute") {
                Some((path, text)) => {
                    read_in_items(Some((path.clone(), text)));
                    items.extend(path);
                }
                None => return,
            },
            "sum" | "min" | "max" => return read_in_items(attribute(None, "attribute")),
            "groupby" | "count_by" | "group_by" | "distinct" => {
                return read_in_items(attribute(Some(0), "attribute"));
            }
            "to_map" => {
                read_in_items(attribute(Some(0), "key"));
                return read_in_items(attribute(Some(1), "value"));
            }
            // `detected | match(expected, by='a')`: `a` in the items of both.
            "match" if first => {
                read_in_items(attribute(Some(1), "by"));
                if let (Some(mut other), Some((path, text))) = (
                    args.get(Some(0), "expected")
                        .and_then(|r| plain_path(code, r, &HashMap::new())),
                    attribute(Some(1), "by"),
                ) {
                    other.push(Seg::Each);
                    other.extend(path);
                    push(out, code, k, other, text, group);
                }
                return;
            }
            "get" | "attr" if first => {
                let name = if filter == "get" { "path" } else { "name" };
                if let Some((path, text)) = attribute(Some(0), name) {
                    let mut full = receiver.to_vec();
                    full.extend(path);
                    push(out, code, k, full, text, group);
                }
                return;
            }
            _ => return,
        }
        first = false;
        at = next;
    }
}

/// Tests that ask whether a value is there.
const PRESENCE_TESTS: &[&str] = &["defined", "undefined", "none"];

/// String paths given to caldera's built-ins called as functions: `get(d, 'a.b')` reads
/// `d.a.b`; `sort_by(xs, 'a')`, `count_by(xs, 'a')` and the like read `a` in each item.
fn builtin_call(
    code: &Code<'_>,
    k: usize,
    name: &str,
    loops: &HashMap<String, Vec<Seg>>,
    out: &mut Reads,
) {
    // The arguments that are lists (or, for `get`, the object) and the string paths read
    // in their items.
    type Params = &'static [(Option<usize>, &'static str)];
    let (lists, paths): (Params, Params) = match name {
        "get" => (&[(Some(0), "obj")], &[(Some(1), "path")]),
        "sort_by" | "count_by" | "group_by" | "distinct" => {
            (&[(Some(0), "items")], &[(Some(1), "attribute")])
        }
        "top" => (&[(Some(0), "items")], &[(Some(2), "by")]),
        "to_map" => (
            &[(Some(0), "items")],
            &[(Some(1), "key"), (Some(2), "value")],
        ),
        "match" => (
            &[(Some(0), "detected"), (Some(1), "expected")],
            &[(Some(2), "by")],
        ),
        _ => return,
    };
    let args = code.arguments(k + 1);
    for (n, list) in lists {
        let Some(mut base) = args.get(*n, list).and_then(|r| plain_path(code, r, loops)) else {
            continue;
        };
        if name != "get" {
            base.push(Seg::Each);
        }
        for (n, key) in paths {
            let Some(text) = args.get(*n, key).and_then(|r| code.string(r)) else {
                continue;
            };
            if let Some(path) = attribute_path(text) {
                let mut full = base.clone();
                full.extend(path);
                push(out, code, k, full, text, code.groups[k]);
            }
        }
    }
}

/// The path that is the whole of token range `r` (`xs`, `a.b[0]`), if it is one.
fn plain_path(
    code: &Code<'_>,
    r: &Range<usize>,
    loops: &HashMap<String, Vec<Seg>>,
) -> Option<Vec<Seg>> {
    if !matches!(code.tok(r.start), Some(Tok::Ident(_))) {
        return None;
    }
    match chain(code, r.start, loops)? {
        (path, end) if end == r.end => Some(path),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(source: &str) -> Vec<String> {
        reads(source)
            .reads
            .iter()
            .map(|r| display(&r.segments))
            .collect()
    }

    #[test]
    fn follows_get_subscripts_and_attribute_strings() {
        assert_eq!(
            texts("d.get('total_functons', 0) + repos[0].result['x y'][i].id"),
            ["d.total_functons", "repos[0].result['x y'][*].id", "i"]
        );
        assert_eq!(
            texts(
                "repos | selectattr('truth') | map(attribute='result.vulns') | flatten | sum(attribute='n')"
            ),
            [
                "repos[*].truth",
                "repos[*].result.vulns",
                "repos[*].result.vulns[*].n",
                "repos"
            ]
        );
        assert_eq!(
            texts(
                "get(d, 'a.0.b', 1) + (xs | sort_by('k.v') | length) + count_by(ys, attribute='s')"
            ),
            ["d.a[0].b", "d", "xs[*].k.v", "xs", "ys[*].s", "ys"]
        );
        assert_eq!(
            texts(
                "match(found, truth.cves, by='id') + (found | match(expected, by='k.v')).tp + (x | attr('n'))"
            ),
            [
                "found[*].id",
                "truth.cves[*].id",
                "found",
                "truth.cves",
                "found[*].k.v",
                "expected[*].k.v",
                "expected",
                "x.n",
                "x"
            ]
        );
        // A method other than `.get`, a slice read from and a call result are not
        // followed further; a slice by itself stands for its list.
        assert_eq!(
            texts("a.items() + b[1:].x + f(c).d + e[:2]"),
            ["a", "c", "e"]
        );
    }

    #[test]
    fn alternatives_share_a_group_and_parts_of_a_template_do_not() {
        let groups = |src: &str| -> Vec<Option<usize>> {
            reads(src).reads.iter().map(|r| r.group).collect()
        };
        let g = groups("coalesce(a.x, a.y) + b.z");
        assert!(g[0].is_some() && g[0] == g[1] && g[2].is_none(), "{g:?}");
        let g = groups("(a.x or a.y) + (b.x or b.y)");
        assert!(g[0] == g[1] && g[2] == g[3] && g[0] != g[2], "{g:?}");
        let g = groups("<< (p or q) >> text << (r or s) >> << coalesce(t, u) >>");
        assert!(g[0] == g[1] && g[0] != g[2] && g[2] != g[4], "{g:?}");
        // A sum is no alternative.
        assert_eq!(groups("a.x + a.y"), [None, None]);
    }

    #[test]
    fn reads_know_the_branch_they_are_in() {
        let branch = |src: &str, path: &str| -> Vec<(String, bool)> {
            reads(src)
                .reads
                .iter()
                .find(|r| display(&r.segments) == path)
                .map(|r| {
                    r.conditions
                        .iter()
                        .map(|c| (c.source.clone(), c.holds))
                        .collect()
                })
                .unwrap_or_default()
        };
        let t = "<% if a %><< x.p >><% elif b %><< x.q >><% else %><< x.r >><% endif %><< x.s >>";
        assert_eq!(branch(t, "x.p"), [("a".to_owned(), true)]);
        assert_eq!(
            branch(t, "x.q"),
            [("a".to_owned(), false), ("b".to_owned(), true)]
        );
        assert_eq!(
            branch(t, "x.r"),
            [("a".to_owned(), false), ("b".to_owned(), false)]
        );
        assert!(branch(t, "x.s").is_empty());
        let e = "f(y.p | g(1) if c.d else y.q, y.r) + (y.s if k else y.t if m else y.u)";
        assert_eq!(branch(e, "y.p"), [("c.d".to_owned(), true)]);
        assert_eq!(branch(e, "y.q"), [("c.d".to_owned(), false)]);
        assert!(branch(e, "y.r").is_empty());
        assert_eq!(
            branch(e, "y.t"),
            [("k".to_owned(), false), ("m".to_owned(), true)]
        );
        assert_eq!(
            branch(e, "y.u"),
            [("k".to_owned(), false), ("m".to_owned(), false)]
        );
    }

    #[test]
    fn follows_loop_variables_and_finds_guards() {
        let r = reads("<% for r in repos %><< r.result.n >><% endfor %>");
        let got: Vec<String> = r.reads.iter().map(|r| display(&r.segments)).collect();
        assert_eq!(got, ["repos", "repos[*].result.n"]);
        let r = reads("<% if baseline is not none %><< baseline.score >><% endif %>");
        assert_eq!(r.guards, vec![vec![Seg::Key("baseline".into())]]);
        let r = reads("x.y if x else 0");
        assert_eq!(r.guards, vec![vec![Seg::Key("x".into())]]);
    }
}
