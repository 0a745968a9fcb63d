//! Name checks for expressions and templates: which names, functions, filters and tests
//! a piece of minijinja uses, and whether each exists where it is used.

use std::collections::HashMap;
use std::sync::Mutex;

use minijinja::{Environment, ErrorKind};
use regex::Regex;
use std::sync::OnceLock;

/// What an expression or template refers to.
#[derive(Debug, Default)]
pub struct Uses {
    /// Free variables (names not defined inside the expression itself).
    pub names: Vec<String>,
    /// Names called as functions (`name(`).
    pub calls: Vec<String>,
    /// Filters (`| name`).
    pub filters: Vec<String>,
    /// Tests (`is name`, `is not name`).
    pub tests: Vec<String>,
}

/// Removes string literals so their contents never look like filters or calls.
fn strip_strings(src: &str) -> String {
    static RE: OnceLock<Regex> = OnceLock::new();
    let re = RE.get_or_init(|| {
        Regex::new(r#""(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'"#).unwrap_or_else(|_| unreachable!())
    });
    re.replace_all(src, "''").into_owned()
}

/// Scans expression text (for a template: the text inside its delimiters) for calls,
/// filters and tests. Free variables come from minijinja itself.
pub fn scan(code: &str, names: Vec<String>) -> Uses {
    // Identifiers are ASCII in minijinja (without its `unicode` feature), so the classes
    // are ASCII: Unicode `\w` and `\b` tables made compiling these a quarter of the
    // time `caldera validate` takes.
    static RES: OnceLock<(Regex, Regex, Regex)> = OnceLock::new();
    let (call, filter, test) = RES.get_or_init(|| {
        (
            Regex::new(r"(^|[^.A-Za-z0-9_])([A-Za-z_][A-Za-z0-9_]*)\s*\(")
                .unwrap_or_else(|_| unreachable!()),
            Regex::new(r"\|\s*([A-Za-z_][A-Za-z0-9_]*)").unwrap_or_else(|_| unreachable!()),
            Regex::new(r"(?-u:\b)is\s+(?:not\s+)?([A-Za-z_][A-Za-z0-9_]*)")
                .unwrap_or_else(|_| unreachable!()),
        )
    });
    let code = strip_strings(code);
    let collect = |re: &Regex, group: usize| -> Vec<String> {
        let mut out: Vec<String> = re
            .captures_iter(&code)
            .filter_map(|c| c.get(group).map(|m| m.as_str().to_owned()))
            .collect();
        out.dedup();
        out
    };
    // A call is `name(` not reached through `.`, `|` (filter arguments) or `is` (tests).
    let mut calls: Vec<String> = Vec::new();
    for c in call.captures_iter(&code) {
        let Some(m) = c.get(2) else { continue };
        let before = code[..m.start()].trim_end();
        let via_filter_or_test = before.ends_with('|')
            || before.ends_with(" is")
            || before.ends_with(" is not")
            || before == "is";
        let keyword = matches!(
            m.as_str(),
            "not" | "and" | "or" | "in" | "if" | "else" | "is"
        );
        if !via_filter_or_test && !keyword && !calls.iter().any(|x| x == m.as_str()) {
            calls.push(m.as_str().to_owned());
        }
    }
    Uses {
        names,
        calls,
        filters: collect(filter, 1),
        tests: collect(test, 1),
    }
}

/// The code parts of a template (inside `<< >>` and `<% %>`).
pub fn template_code(src: &str) -> String {
    static RE: OnceLock<Regex> = OnceLock::new();
    let re = RE.get_or_init(|| {
        Regex::new(r"(?s)<<(.*?)>>|<%-?(.*?)-?%>").unwrap_or_else(|_| unreachable!())
    });
    re.captures_iter(src)
        .filter_map(|c| c.get(1).or_else(|| c.get(2)).map(|m| m.as_str().to_owned()))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Which functions, filters and tests the environment knows. Filters and tests have no
/// listing API, so existence is probed once per name (cheap, cached).
pub struct Known<'env> {
    env: &'env Environment<'static>,
    globals: Vec<String>,
    probed: Mutex<HashMap<(bool, String), bool>>,
}

impl<'env> Known<'env> {
    /// Reads the environment's globals.
    pub fn new(env: &'env Environment<'static>) -> Known<'env> {
        Known {
            env,
            globals: env.globals().map(|(n, _)| n.to_owned()).collect(),
            probed: Mutex::new(HashMap::new()),
        }
    }

    /// Global functions and values.
    pub fn globals(&self) -> impl Iterator<Item = &str> {
        self.globals.iter().map(String::as_str)
    }

    /// Whether `name` is a global.
    pub fn is_global(&self, name: &str) -> bool {
        self.globals.iter().any(|g| g == name)
    }

    /// Whether `name` is a filter.
    pub fn is_filter(&self, name: &str) -> bool {
        self.probe(false, name)
    }

    /// Whether `name` is a test.
    pub fn is_test(&self, name: &str) -> bool {
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
    pub fn filter_candidates(&self) -> Vec<&'static str> {
        let mut v: Vec<&'static str> = crate::evidence::builtins::names()
            .filter(|(_, r)| r.filter)
            .map(|(n, _)| n)
            .collect();
        v.extend(MINIJINJA_FILTERS);
        v
    }

    /// Candidate test names for "did you mean".
    pub fn test_candidates(&self) -> Vec<&'static str> {
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
    fn template_code_parts() {
        assert_eq!(
            template_code("a << x | f >> b <% if y %>c<% endif %>"),
            " x | f \n if y \n endif "
        );
    }
}
