//! Name checks for expressions and templates: which names, functions, filters and tests
//! a piece of minijinja uses, and whether each exists where it is used.

use std::collections::HashMap;
use std::sync::Mutex;

use minijinja::{Environment, ErrorKind};

use crate::load::patterns::{is_word, skip_string};

/// The free names of every expression and template a file holds, by source text (as
/// written, without `<< >>` for an expression), sorted. Found once at load; the data
/// check of `caldera validate` reads them instead of parsing every expression again.
pub(crate) type FreeNames = HashMap<String, Vec<String>>;

/// What an expression or template refers to.
#[derive(Debug, Default)]
pub(crate) struct Uses {
    /// Free variables (names not defined inside the expression itself).
    pub names: Vec<String>,
    /// Names called as functions (`name(`).
    pub calls: Vec<String>,
    /// Filters (`| name`).
    pub filters: Vec<String>,
    /// Tests (`is name`, `is not name`).
    pub tests: Vec<String>,
}

/// One token of expression text, as far as name checks need to tell: identifiers,
/// string and number literals, and one byte of anything else.
#[derive(Clone, Copy, PartialEq, Debug)]
pub(crate) enum Tok<'a> {
    Ident(&'a str),
    Punct(u8),
    /// A string literal's text between its quotes (escapes left as written).
    Str(&'a str),
    /// A number, with any letters glued to it (`1e5`).
    Num(&'a str),
    Other,
}

/// Splits expression text into [`Tok`]s. String literals are skipped whole, so their
/// contents never look like filters or calls. Identifiers are ASCII, as in minijinja
/// without its `unicode` feature. One pass and no regex: the scan runs on every
/// expression of every judge at load, before the first model call.
fn tokens(code: &str) -> Vec<Tok<'_>> {
    spanned_tokens(code).into_iter().map(|(t, _)| t).collect()
}

/// [`tokens`] with the byte range each one covers in `code`.
pub(crate) fn spanned_tokens(code: &str) -> Vec<(Tok<'_>, std::ops::Range<usize>)> {
    let bytes = code.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        let start = i;
        let tok = if b.is_ascii_whitespace() {
            i += 1;
            continue;
        } else if b == b'"' || b == b'\'' {
            i = skip_string(bytes, i);
            // The text between the quotes, when the string is closed.
            match code.get(start + 1..i.saturating_sub(1)) {
                Some(text) if i > start + 1 && bytes.get(i - 1) == Some(&b) => Tok::Str(text),
                _ => Tok::Other,
            }
        } else if b.is_ascii_alphabetic() || b == b'_' {
            i = word_end(bytes, i);
            Tok::Ident(&code[start..i])
        } else if b.is_ascii_digit() {
            // A number, with any letters glued to it (`1e5`): never a name.
            i = word_end(bytes, i);
            Tok::Num(&code[start..i])
        } else {
            i += 1;
            if b.is_ascii() {
                Tok::Punct(b)
            } else {
                Tok::Other
            }
        };
        out.push((tok, start..i));
    }
    out
}

/// The end of the identifier or number that starts at `i`.
fn word_end(bytes: &[u8], mut i: usize) -> usize {
    while i < bytes.len() && is_word(bytes[i]) {
        i += 1;
    }
    i
}

/// What an identifier is, from the tokens before it.
#[derive(PartialEq)]
pub(crate) enum Role {
    /// `| name`.
    Filter,
    /// `is name`, `is not name`.
    Test,
    /// `x.name`.
    Attribute,
    /// The `not` of `is not`.
    Negation,
    /// A name read, or called when `(` follows.
    Name,
}

/// The role of the identifier `name` at token `k`.
pub(crate) fn role(toks: &[Tok<'_>], k: usize, name: &str) -> Role {
    let before = |n: usize| k.checked_sub(n).map(|j| toks[j]);
    match (before(2), before(1)) {
        (_, Some(Tok::Punct(b'|'))) => Role::Filter,
        (_, Some(Tok::Punct(b'.'))) => Role::Attribute,
        (_, Some(Tok::Ident("is"))) if name == "not" => Role::Negation,
        (_, Some(Tok::Ident("is"))) | (Some(Tok::Ident("is")), Some(Tok::Ident("not"))) => {
            Role::Test
        }
        _ => Role::Name,
    }
}

/// Operator words: never a name, never a call when `(` follows.
pub(crate) const KEYWORDS: &[&str] = &["not", "and", "or", "in", "if", "else", "is"];

/// Scans expression text (for a template: the text inside its delimiters) for calls,
/// filters and tests, each listed once in order of first use. Free variables come from
/// minijinja itself.
pub(crate) fn scan(code: &str, names: Vec<String>) -> Uses {
    let toks = tokens(code);
    let mut uses = Uses {
        names,
        ..Uses::default()
    };
    let push = |list: &mut Vec<String>, name: &str| {
        if !list.iter().any(|x| x == name) {
            list.push(name.to_owned());
        }
    };
    for (k, &tok) in toks.iter().enumerate() {
        let Tok::Ident(name) = tok else { continue };
        match role(&toks, k, name) {
            Role::Filter => push(&mut uses.filters, name),
            Role::Test => push(&mut uses.tests, name),
            Role::Attribute | Role::Negation => {}
            // `name(` not reached through `.` (a method), `|` or `is`.
            Role::Name => {
                if toks.get(k + 1) == Some(&Tok::Punct(b'(')) && !KEYWORDS.contains(&name) {
                    push(&mut uses.calls, name);
                }
            }
        }
    }
    uses
}

/// The dotted paths expression text reads (`truth.expected.cves`), as segments in order
/// of appearance: not filters or tests, not a keyword argument's name, and without the
/// last segment of a call (`a.items()` reads `a`; `pct(x)` reads nothing by itself).
pub(crate) fn paths(code: &str) -> Vec<Vec<&str>> {
    let toks = tokens(code);
    let tok = |k: usize| toks.get(k).copied();
    let mut out = Vec::new();
    let mut k = 0;
    while k < toks.len() {
        let Tok::Ident(first) = toks[k] else {
            k += 1;
            continue;
        };
        let read = role(&toks, k, first) == Role::Name && !KEYWORDS.contains(&first);
        let mut segments = vec![first];
        let mut end = k;
        while tok(end + 1) == Some(Tok::Punct(b'.')) {
            let Some(Tok::Ident(next)) = tok(end + 2) else {
                break;
            };
            segments.push(next);
            end += 2;
        }
        k = end + 1;
        if !read {
            continue;
        }
        match (tok(end + 1), tok(end + 2)) {
            (Some(Tok::Punct(b'(')), _) => {
                segments.pop();
            }
            (Some(Tok::Punct(b'=')), next) if next != Some(Tok::Punct(b'=')) => continue,
            _ => {}
        }
        if !segments.is_empty() {
            out.push(segments);
        }
    }
    out
}

/// The code parts of a template (inside `<< >>` and `<% %>`, without the `-` of
/// whitespace control), joined by newlines.
pub(crate) fn template_code(src: &str) -> String {
    let parts: Vec<&str> = template_parts(src).into_iter().map(|(c, _)| c).collect();
    parts.join("\n")
}

/// The code parts of a template in order, each with whether it is a statement
/// (`<% %>`) rather than an expression (`<< >>`).
pub(crate) fn template_parts(src: &str) -> Vec<(&str, bool)> {
    let mut parts = Vec::new();
    let mut rest = src;
    loop {
        let open = match (rest.find("<<"), rest.find("<%")) {
            (Some(a), Some(b)) => a.min(b),
            (Some(a), None) | (None, Some(a)) => a,
            (None, None) => break,
        };
        let statement = rest[open..].starts_with("<%");
        let inner = &rest[open + 2..];
        let close = if statement { "%>" } else { ">>" };
        let inner = if statement {
            inner.strip_prefix('-').unwrap_or(inner)
        } else {
            inner
        };
        match inner.find(close) {
            Some(end) => {
                let code = &inner[..end];
                let code = if statement {
                    code.strip_suffix('-').unwrap_or(code)
                } else {
                    code
                };
                parts.push((code, statement));
                rest = &inner[end + 2..];
            }
            // Not closed: look for the next opening after this one.
            None => rest = &rest[open + 1..],
        }
    }
    parts
}

/// Which functions, filters and tests the environment knows. Filters and tests have no
/// listing API, so existence is probed once per name (cheap, cached).
pub(crate) struct Known<'env> {
    env: &'env Environment<'static>,
    globals: Vec<String>,
    probed: Mutex<HashMap<(bool, String), bool>>,
}

impl<'env> Known<'env> {
    /// Reads the environment's globals.
    pub(crate) fn new(env: &'env Environment<'static>) -> Known<'env> {
        Known {
            env,
            globals: env.globals().map(|(n, _)| n.to_owned()).collect(),
            probed: Mutex::new(HashMap::new()),
        }
    }

    /// Global functions and values a judge may write, for suggestions: the engine's own
    /// helpers (`__caldera_*`, what bounded operators are rewritten to) are left out.
    pub(crate) fn globals(&self) -> impl Iterator<Item = &str> {
        self.globals
            .iter()
            .map(String::as_str)
            .filter(|n| !n.starts_with("__caldera"))
    }

    /// Whether `name` is a global.
    pub(crate) fn is_global(&self, name: &str) -> bool {
        self.globals.iter().any(|g| g == name)
    }

    /// Whether `name` is a filter.
    pub(crate) fn is_filter(&self, name: &str) -> bool {
        self.probe(false, name)
    }

    /// Whether `name` is a test.
    pub(crate) fn is_test(&self, name: &str) -> bool {
        self.probe(true, name)
    }

    fn probe(&self, test: bool, name: &str) -> bool {
        let key = (test, name.to_owned());
        if let Ok(cache) = self.probed.lock()
            && let Some(hit) = cache.get(&key)
        {
            return *hit;
        }
        let src = if test {
            format!("none is {name}")
        } else {
            format!("none | {name}")
        };
        let exists = match self.env.compile_expression(&src) {
            Ok(expr) => match expr.eval(()) {
                Ok(_) => true,
                Err(e) => !matches!(e.kind(), ErrorKind::UnknownFilter | ErrorKind::UnknownTest),
            },
            Err(_) => false,
        };
        if let Ok(mut cache) = self.probed.lock() {
            cache.insert(key, exists);
        }
        exists
    }

    /// Candidate filter names for "did you mean".
    pub(crate) fn filter_candidates(&self) -> Vec<&'static str> {
        let mut v: Vec<&'static str> = crate::evidence::builtins::names()
            .filter(|(_, r)| r.filter)
            .map(|(n, _)| n)
            .collect();
        v.extend(MINIJINJA_FILTERS);
        v
    }

    /// Candidate test names for "did you mean".
    pub(crate) fn test_candidates(&self) -> Vec<&'static str> {
        let mut v: Vec<&'static str> = crate::evidence::builtins::names()
            .filter(|(_, r)| r.test)
            .map(|(n, _)| n)
            .collect();
        v.extend(MINIJINJA_TESTS);
        v
    }
}

/// minijinja's own filters, for suggestions only (existence is always probed).
const MINIJINJA_FILTERS: &[&str] = &[
    "abs",
    "attr",
    "batch",
    "bool",
    "capitalize",
    "count",
    "d",
    "default",
    "dictsort",
    "first",
    "float",
    "groupby",
    "indent",
    "int",
    "items",
    "join",
    "last",
    "length",
    "lines",
    "list",
    "lower",
    "map",
    "max",
    "min",
    "reject",
    "rejectattr",
    "replace",
    "reverse",
    "round",
    "select",
    "selectattr",
    "slice",
    "sort",
    "split",
    "string",
    "sum",
    "title",
    "tojson",
    "trim",
    "unique",
    "upper",
];

/// minijinja's own tests, for suggestions only.
const MINIJINJA_TESTS: &[&str] = &[
    "boolean",
    "defined",
    "divisibleby",
    "endingwith",
    "eq",
    "even",
    "false",
    "filter",
    "float",
    "ge",
    "gt",
    "in",
    "integer",
    "iterable",
    "le",
    "lower",
    "lt",
    "mapping",
    "ne",
    "none",
    "number",
    "odd",
    "safe",
    "sameas",
    "sequence",
    "startingwith",
    "string",
    "test",
    "true",
    "undefined",
    "upper",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scans_calls_filters_tests_outside_strings() {
        let u = scan(
            "pct(a, b) | round(1) + x.method(1) if y is not defined else 'z | fake(' ",
            vec![],
        );
        assert_eq!(u.calls, vec!["pct"]);
        assert_eq!(u.filters, vec!["round"]);
        assert_eq!(u.tests, vec!["defined"]);
    }

    #[test]
    fn scans_nested_calls_arguments_and_escaped_strings() {
        let u = scan(
            r#"outer(inner(x)) | round(pct(a, b)) is not within(1e5, 2) and "a\" | f(" | lower"#,
            vec![],
        );
        assert_eq!(u.calls, vec!["outer", "inner", "pct"]);
        assert_eq!(u.filters, vec!["round", "lower"]);
        assert_eq!(u.tests, vec!["within"]);
        // Each name once, in order of first use; `if (` and `not (` are no calls.
        let u = scan("a | b | a | b if (c | b) else not (d)", vec![]);
        assert_eq!(u.filters, vec!["b", "a"]);
        assert!(u.calls.is_empty());
    }

    #[test]
    fn paths_skip_filters_tests_methods_and_keyword_names() {
        let got: Vec<String> =
            paths("a.b.c | f(x.y) is not t and m.items() and g(k=v.w, n == 1) or 'p.q' >= r . s")
                .into_iter()
                .map(|s| s.join("."))
                .collect();
        assert_eq!(got, ["a.b.c", "x.y", "m", "v.w", "n", "r.s"]);
    }

    #[test]
    fn probes_filters_and_tests() {
        let env = crate::render::environment();
        let known = Known::new(&env);
        assert!(known.is_filter("length"));
        assert!(known.is_filter("pct"));
        assert!(!known.is_filter("lenght"));
        assert!(known.is_test("within"));
        assert!(known.is_test("defined"));
        assert!(!known.is_test("defind"));
        assert!(known.is_global("match"));
    }

    #[test]
    fn the_engines_own_helpers_are_no_global_a_judge_is_offered() {
        let env = crate::render::environment();
        assert!(env.globals().any(|(n, _)| n.starts_with("__caldera")));
        let known = Known::new(&env);
        assert!(known.globals().all(|g| !g.starts_with("__caldera")));
    }

    #[test]
    fn template_code_parts() {
        assert_eq!(
            template_code("a << x | f >> b <% if y %>c<% endif %>"),
            " x | f \n if y \n endif "
        );
        assert_eq!(
            template_code("<%- for x in y -%><<x>><%%>"),
            " for x in y \nx\n"
        );
        // An opening that is never closed is text; a later part still counts.
        assert_eq!(template_code("a << b <% c %>"), " c ");
        assert_eq!(template_code("no code"), "");
    }
}
