//! Built-in functions, filters and tests of the evidence language.
//!
//! Judges compute evidence with minijinja expressions (`<< expr >>`); these
//! built-ins cover what minijinja's own library lacks for judging tool
//! output: set matching with precision/recall, Python-compatible rounding,
//! ranges, grouping in first-seen order, keyword classification, tolerant
//! comparison, a few statistics and detection scoring (precision, recall,
//! F1, evasion, macro and micro averages over games). The user reference is
//! `docs/functions.md`; a test keeps it in step with [`BUILTINS`].
//!
//! Every built-in has the same Rust signature (all arguments as a
//! [`Rest`] of values and keyword maps, bound by name in [`args`]), so one
//! table can register it as a function, a filter and/or a test.
//!
//! minijinja's `sum(attribute="a.b")` already follows dotted paths, so there
//! is no `sum_of`.

mod access;
mod approx;
mod args;
mod classify;
mod concentration;
mod dates;
mod detection;
mod findings;
mod flatten;
mod grouping;
mod maps;
mod membership;
pub(crate) use maps::apply_filter;
mod matching;
mod ordering;
mod path;
pub(crate) mod pattern;
mod ranges;
mod rounding;
mod stats;
#[cfg(test)]
mod testutil;

use minijinja::value::{Rest, ValueOrKwargs};
use minijinja::{Environment, Error, Value};

/// The shape every built-in shares.
type BuiltinFn = fn(Rest<ValueOrKwargs>) -> Result<Value, Error>;

/// Where a built-in is visible in expressions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Roles {
    /// Callable as `name(...)`.
    pub function: bool,
    /// Usable as `subject|name(...)`; the subject is the first argument.
    pub filter: bool,
    /// Usable as `subject is name(...)`.
    pub test: bool,
}

const FUNCTION_AND_FILTER: Roles = Roles {
    function: true,
    filter: true,
    test: false,
};
const FUNCTION_ONLY: Roles = Roles {
    function: true,
    filter: false,
    test: false,
};
const TEST_ONLY: Roles = Roles {
    function: false,
    filter: false,
    test: true,
};
const TEST_AND_FUNCTION: Roles = Roles {
    function: true,
    filter: false,
    test: true,
};

/// Every built-in: name, roles, implementation.
const BUILTINS: &[(&str, Roles, BuiltinFn)] = &[
    ("match", FUNCTION_AND_FILTER, matching::match_sets),
    ("within", TEST_AND_FUNCTION, ranges::within),
    ("bounds", FUNCTION_AND_FILTER, ranges::bounds),
    ("fmt_range", FUNCTION_AND_FILTER, ranges::fmt_range),
    ("pct", FUNCTION_AND_FILTER, rounding::pct),
    ("ratio", FUNCTION_AND_FILTER, rounding::ratio),
    ("pyround", FUNCTION_AND_FILTER, rounding::pyround),
    ("count_by", FUNCTION_AND_FILTER, grouping::count_by),
    ("group_by", FUNCTION_AND_FILTER, grouping::group_by),
    ("distinct", FUNCTION_AND_FILTER, grouping::distinct),
    ("sort_by", FUNCTION_AND_FILTER, ordering::sort_by),
    ("top", FUNCTION_AND_FILTER, ordering::top),
    ("classify", FUNCTION_AND_FILTER, classify::classify),
    ("close_to", TEST_ONLY, approx::close_to),
    ("approx_eq", FUNCTION_ONLY, approx::approx_eq),
    ("flatten", FUNCTION_AND_FILTER, flatten::flatten),
    ("tag", FUNCTION_AND_FILTER, flatten::tag),
    ("get", FUNCTION_AND_FILTER, access::get),
    ("coalesce", FUNCTION_AND_FILTER, access::coalesce),
    ("keys", FUNCTION_AND_FILTER, access::keys),
    ("values", FUNCTION_AND_FILTER, access::values),
    ("gini", FUNCTION_AND_FILTER, concentration::gini),
    ("hhi", FUNCTION_AND_FILTER, concentration::hhi),
    ("mean", FUNCTION_AND_FILTER, stats::mean),
    ("median", FUNCTION_AND_FILTER, stats::median),
    ("stdev", FUNCTION_AND_FILTER, stats::stdev),
    ("detection", FUNCTION_ONLY, detection::detection),
    (
        "summary_stats",
        FUNCTION_AND_FILTER,
        detection::summary_stats,
    ),
    ("macro_micro", FUNCTION_AND_FILTER, detection::macro_micro),
    (
        "manifest_accuracy",
        FUNCTION_ONLY,
        detection::manifest_accuracy,
    ),
    (
        "hallucination_rate",
        FUNCTION_ONLY,
        detection::hallucination_rate,
    ),
    (
        "corroboration_rate",
        FUNCTION_ONLY,
        detection::corroboration_rate,
    ),
    ("match_findings", FUNCTION_ONLY, findings::match_findings),
    ("matching", TEST_AND_FUNCTION, pattern::matching),
    ("regex_search", FUNCTION_AND_FILTER, pattern::regex_search),
    ("regex_findall", FUNCTION_AND_FILTER, pattern::regex_findall),
    ("regex_replace", FUNCTION_AND_FILTER, pattern::regex_replace),
    ("regex_split", FUNCTION_AND_FILTER, pattern::regex_split),
    ("to_map", FUNCTION_AND_FILTER, maps::to_map),
    ("zip", FUNCTION_AND_FILTER, flatten::zip),
    ("containing", TEST_ONLY, membership::containing),
    ("days_between", FUNCTION_AND_FILTER, dates::days_between),
];

/// Built-ins that call other filters by name, so they need the render state.
type StatefulFn = fn(&mut minijinja::State, Rest<ValueOrKwargs>) -> Result<Value, Error>;

/// Every stateful built-in: name, roles, implementation.
const STATEFUL: &[(&str, Roles, StatefulFn)] =
    &[("map_values", FUNCTION_AND_FILTER, maps::map_values)];

/// Registers every built-in on `env` in each of its roles.
pub(crate) fn register(env: &mut Environment<'_>) {
    for &(name, roles, func) in BUILTINS {
        if roles.function {
            env.add_function(name, func);
        }
        if roles.filter {
            env.add_filter(name, func);
        }
        if roles.test {
            env.add_test(name, func);
        }
    }
    for &(name, roles, func) in STATEFUL {
        if roles.function {
            env.add_function(name, func);
        }
        if roles.filter {
            env.add_filter(name, func);
        }
    }
}

/// The names and roles of all built-ins, e.g. for `caldera` to list them
/// or to suggest a name on a typo.
pub(crate) fn names() -> impl Iterator<Item = (&'static str, Roles)> {
    BUILTINS
        .iter()
        .map(|&(name, roles, _)| (name, roles))
        .chain(STATEFUL.iter().map(|&(name, roles, _)| (name, roles)))
}

#[cfg(test)]
mod tests {
    use super::testutil::{env, json};
    use super::{BUILTINS, names};
    use serde_json::json;
    use std::path::Path;

    /// Whether evaluating `expr` got past name resolution: any outcome but
    /// an unknown-filter/test error means the name is registered.
    fn resolves(expr: &str, unknown: minijinja::ErrorKind) -> bool {
        let env = env();
        let compiled = env.compile_expression(expr).expect("compiles");
        match compiled.eval(minijinja::Value::UNDEFINED) {
            Ok(_) => true,
            Err(err) => err.kind() != unknown,
        }
    }

    #[test]
    fn every_builtin_is_registered_in_its_roles() {
        use minijinja::ErrorKind::{UnknownFilter, UnknownTest};
        let env = env();
        for (name, roles) in names() {
            let filter = resolves(&format!("none|{name}"), UnknownFilter);
            assert_eq!(filter, roles.filter, "filter {name}");
            let test = resolves(&format!("none is {name}"), UnknownTest);
            assert_eq!(test, roles.test, "test {name}");
            let global = env.globals().any(|(global, _)| global == name);
            assert_eq!(global, roles.function, "function {name}");
        }
    }

    #[test]
    fn names_are_unique() {
        let mut seen = std::collections::HashSet::new();
        for (name, _, _) in BUILTINS {
            assert!(seen.insert(name), "duplicate built-in {name}");
        }
    }

    #[test]
    fn every_builtin_is_documented() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/functions.md");
        let doc = std::fs::read_to_string(&path).expect("docs/functions.md exists");
        let headings: Vec<&str> = doc
            .lines()
            .filter_map(|line| line.strip_prefix("### "))
            .map(|h| h.trim().trim_matches('`'))
            .collect();
        let missing: Vec<&str> = names()
            .map(|(name, _)| name)
            .filter(|name| !headings.contains(name))
            .collect();
        assert!(missing.is_empty(), "undocumented built-ins: {missing:?}");
        let unknown: Vec<&&str> = headings
            .iter()
            .filter(|h| !names().any(|(name, _)| name == **h))
            .collect();
        assert!(
            unknown.is_empty(),
            "documented but not built in: {unknown:?}"
        );
    }

    #[test]
    fn every_doc_example_compiles() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/functions.md");
        let doc = std::fs::read_to_string(&path).expect("docs/functions.md exists");
        let env = env();
        // Only fenced code blocks hold examples; prose mentions `<<` too.
        let mut fenced = String::new();
        let mut inside = false;
        for line in doc.lines() {
            if line.starts_with("```") {
                inside = !inside;
            } else if inside {
                fenced.push_str(line);
                fenced.push('\n');
            }
        }
        let mut count = 0;
        for chunk in fenced.split("<<").skip(1) {
            let Some((expr, _)) = chunk.split_once(">>") else {
                panic!("unterminated example: {chunk}");
            };
            if let Err(err) = env.compile_expression(expr) {
                panic!("example does not compile: << {expr} >>: {err:#}");
            }
            count += 1;
        }
        assert!(count >= names().count(), "only {count} examples");
    }

    #[test]
    fn runnable_doc_examples_give_their_result() {
        // A line `<< expr >>  # -> json` in a fenced block is run, in the engine's own
        // environment, and must give that result.
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/functions.md");
        let doc = std::fs::read_to_string(&path).expect("docs/functions.md exists");
        let env = crate::render::environment();
        let mut inside = false;
        let mut count = 0;
        for line in doc.lines() {
            if line.starts_with("```") {
                inside = !inside;
                continue;
            }
            let Some((code, expected)) = line.split_once("  # -> ") else {
                continue;
            };
            if !inside {
                continue;
            }
            let expr = code
                .trim()
                .strip_prefix("<<")
                .and_then(|c| c.strip_suffix(">>"))
                .unwrap_or_else(|| panic!("not an expression: {code}"));
            let got = env
                .compile_expression(expr)
                .and_then(|e| e.eval(()))
                .unwrap_or_else(|e| panic!("<< {expr} >> fails: {e:#}"));
            let got = crate::doc::Doc::from_value(&got).to_json();
            let want: serde_json::Value = serde_json::from_str(expected)
                .unwrap_or_else(|e| panic!("expected result of << {expr} >> is not JSON: {e}"));
            assert_eq!(got, want, "<< {expr} >>");
            count += 1;
        }
        assert!(count >= 10, "only {count} runnable examples");
    }

    #[test]
    fn builtin_sum_already_follows_dotted_paths() {
        // The reason there is no `sum_of`: minijinja's `sum` does this.
        let ctx = json!({"xs": [{"a": {"b": 2}}, {"a": {"b": 3}}, {"a": {}}]});
        assert_eq!(json("xs|sum(attribute='a.b')", ctx), "5");
    }
}

#[cfg(test)]
mod strict_tests {
    use minijinja::{UndefinedBehavior, Value};

    /// The engine may run with strict undefined; missing variables must
    /// still reach the built-ins as "absent" instead of failing the call.
    fn eval_strict(expr: &str) -> Result<Value, minijinja::Error> {
        let mut env = super::testutil::env();
        env.set_undefined_behavior(UndefinedBehavior::Strict);
        let compiled = env.compile_expression(expr)?;
        compiled.eval(minijinja::context! { doc => minijinja::context! { a => 1 } })
    }

    #[test]
    fn missing_values_reach_builtins_under_strict_undefined() {
        assert_eq!(
            eval_strict("coalesce(missing, 1)").ok(),
            Some(Value::from(1))
        );
        assert_eq!(eval_strict("get(doc, 'b.c', 7)").ok(), Some(Value::from(7)));
        assert_eq!(
            eval_strict("match(missing, ['a']).fn").ok(),
            Some(Value::from(1))
        );
        assert_eq!(
            eval_strict("missing is within(3)").ok(),
            Some(Value::from(false))
        );
    }
}
