//! Regular expressions: the `matching` test, `regex_search`, `regex_findall`,
//! `regex_replace` and `regex_split`, with Python's `re` semantics where they
//! differ from the `regex` crate's (replacement syntax, `findall` shapes,
//! `split` keeping groups).
//!
//! The engine is the `regex` crate: matching takes time linear in the text, so
//! a pattern cannot blow up on hostile tool output (no backreferences, no
//! look-around; a pattern that uses them is refused with that reason).
//! Patterns are compiled once and kept in a process-wide cache; literal
//! patterns are compiled when the judge loads, so a bad one is a load error
//! with its location, never a failure halfway through a run.

use std::collections::HashMap;
use std::sync::{OnceLock, RwLock};

use minijinja::value::{Rest, ValueOrKwargs};
use minijinja::{Error, Value};
use regex::{Regex, RegexBuilder};

use super::args::{Args, is_nothing};

/// Largest compiled program a pattern may produce (bounds memory for hostile patterns).
const SIZE_LIMIT: usize = 4 << 20;
/// Longest pattern accepted.
const MAX_PATTERN: usize = 10_000;
/// Distinct patterns kept compiled; beyond this they are compiled per call.
const CACHE_ENTRIES: usize = 4096;

type Cache = RwLock<HashMap<(String, bool), Regex>>;

fn cache() -> &'static Cache {
    static CACHE: OnceLock<Cache> = OnceLock::new();
    CACHE.get_or_init(|| RwLock::new(HashMap::new()))
}

/// Compiles `pattern` (cached). The error is a one-line reason, without the
/// crate's multi-line caret drawing, so it reads well inside a diagnostic.
pub(crate) fn compile(pattern: &str, ignore_case: bool) -> Result<Regex, String> {
    let key = (pattern.to_owned(), ignore_case);
    if let Ok(map) = cache().read()
        && let Some(re) = map.get(&key)
    {
        return Ok(re.clone());
    }
    if pattern.len() > MAX_PATTERN {
        return Err(format!(
            "the pattern is {} characters long; the limit is {MAX_PATTERN}",
            pattern.len()
        ));
    }
    let re = RegexBuilder::new(pattern)
        .case_insensitive(ignore_case)
        .size_limit(SIZE_LIMIT)
        .build()
        .map_err(|e| explain(&e))?;
    if let Ok(mut map) = cache().write()
        && map.len() < CACHE_ENTRIES
    {
        map.insert(key, re.clone());
    }
    Ok(re)
}

/// The reason a pattern does not compile, on one line, with a hint for the
/// features Python has and a linear-time engine cannot offer.
fn explain(e: &regex::Error) -> String {
    let text = e.to_string();
    let reason = text
        .lines()
        .rev()
        .find(|l| l.starts_with("error:"))
        .map(|l| l.trim_start_matches("error:").trim().to_owned())
        .unwrap_or_else(|| text.lines().last().unwrap_or_default().trim().to_owned());
    if reason.contains("look-around") || reason.contains("backreferences") {
        format!(
            "{reason} (caldera's regular expressions run in linear time, so look-around and backreferences are not available)"
        )
    } else {
        reason
    }
}

/// The text argument: a string, or absent (`None`). Numbers and other values
/// are errors: matching `3` against `\d` is usually a mistake worth seeing.
fn text_arg(args: &Args, i: usize) -> Result<Option<String>, Error> {
    let value = args.raw(i);
    if is_nothing(&value) {
        return Ok(None);
    }
    match value.as_str() {
        Some(s) => Ok(Some(s.to_owned())),
        None => Err(args.error(i, "a string", &value)),
    }
}

fn pattern_arg(args: &Args, i: usize, ignore_case: bool) -> Result<Regex, Error> {
    let value = args.raw(i);
    let Some(pattern) = value.as_str() else {
        return Err(args.error(i, "a pattern string", &value));
    };
    compile(pattern, ignore_case).map_err(|e| args.fail(format_args!("invalid pattern: {e}")))
}

/// Test `text is matching(pattern, ignore_case=false)`: the pattern is found
/// anywhere in the text (Python's `re.search`); anchor with `^...$` for the
/// whole text. A missing text does not match.
pub(crate) fn matching(raw: Rest<ValueOrKwargs>) -> Result<Value, Error> {
    let args = Args::bind("matching", &["text", "pattern", "ignore_case"], 2, raw)?;
    let re = pattern_arg(&args, 1, args.flag(2, false)?)?;
    Ok(Value::from(
        text_arg(&args, 0)?.is_some_and(|t| re.is_match(&t)),
    ))
}

/// `regex_search(text, pattern, group=0, ignore_case=false)`: the first match
/// (or the given group of it, by number or name), `none` when nothing matches.
pub(crate) fn regex_search(raw: Rest<ValueOrKwargs>) -> Result<Value, Error> {
    let args = Args::bind(
        "regex_search",
        &["text", "pattern", "group", "ignore_case"],
        2,
        raw,
    )?;
    let re = pattern_arg(&args, 1, args.flag(3, false)?)?;
    let Some(text) = text_arg(&args, 0)? else {
        return Ok(Value::from(()));
    };
    let group = args.present(2).unwrap_or(Value::from(0));
    let Some(caps) = re.captures(&text) else {
        return Ok(Value::from(()));
    };
    let found = if let Some(name) = group.as_str() {
        if !re.capture_names().any(|n| n == Some(name)) {
            return Err(args.fail(format_args!("the pattern has no group named '{name}'")));
        }
        caps.name(name)
    } else if let Some(n) = group.as_usize() {
        if n >= re.captures_len() {
            return Err(args.fail(format_args!(
                "the pattern has {} group(s); group {n} does not exist",
                re.captures_len() - 1
            )));
        }
        caps.get(n)
    } else {
        return Err(args.error(2, "a group number or name", &group));
    };
    Ok(found.map_or(Value::from(()), |m| Value::from(m.as_str())))
}

/// `regex_findall(text, pattern, ignore_case=false)`: Python's `re.findall`.
/// Without groups, every match; with one group, that group of every match;
/// with several, a list of their groups per match. A group that took no part
/// in a match is `""`, as in Python.
pub(crate) fn regex_findall(raw: Rest<ValueOrKwargs>) -> Result<Value, Error> {
    let args = Args::bind("regex_findall", &["text", "pattern", "ignore_case"], 2, raw)?;
    let re = pattern_arg(&args, 1, args.flag(2, false)?)?;
    let Some(text) = text_arg(&args, 0)? else {
        return Ok(Value::from(Vec::<Value>::new()));
    };
    let groups = re.captures_len() - 1;
    let out: Vec<Value> = re
        .captures_iter(&text)
        .map(|caps| {
            let group = |i: usize| Value::from(caps.get(i).map_or("", |m| m.as_str()));
            match groups {
                0 => group(0),
                1 => group(1),
                n => Value::from((1..=n).map(group).collect::<Vec<_>>()),
            }
        })
        .collect();
    Ok(Value::from(out))
}

/// `regex_replace(text, pattern, replacement, count=0, ignore_case=false)`:
/// Python's `re.sub`. The replacement is written as in Python: `\1` or
/// `\g<name>` for a group, `\\` for a backslash; `$` is literal. `count=0`
/// replaces every match. A missing text gives `none`.
pub(crate) fn regex_replace(raw: Rest<ValueOrKwargs>) -> Result<Value, Error> {
    let args = Args::bind(
        "regex_replace",
        &["text", "pattern", "replacement", "count", "ignore_case"],
        3,
        raw,
    )?;
    let re = pattern_arg(&args, 1, args.flag(4, false)?)?;
    let repl_value = args.raw(2);
    let Some(repl) = repl_value.as_str() else {
        return Err(args.error(2, "a string", &repl_value));
    };
    let template = python_replacement(repl, &re).map_err(|e| args.fail(e))?;
    let count = args.count(3)?.unwrap_or(0);
    let Some(text) = text_arg(&args, 0)? else {
        return Ok(Value::from(()));
    };
    Ok(Value::from(
        re.replacen(&text, count, template.as_str()).into_owned(),
    ))
}

/// `regex_split(text, pattern, maxsplit=0, ignore_case=false)`: Python's
/// `re.split`: the pieces between matches, with the text of every group of
/// the pattern in between (`none` for a group that took no part).
pub(crate) fn regex_split(raw: Rest<ValueOrKwargs>) -> Result<Value, Error> {
    let args = Args::bind(
        "regex_split",
        &["text", "pattern", "maxsplit", "ignore_case"],
        2,
        raw,
    )?;
    let re = pattern_arg(&args, 1, args.flag(3, false)?)?;
    let max = args.count(2)?.unwrap_or(0);
    let Some(text) = text_arg(&args, 0)? else {
        return Ok(Value::from(Vec::<Value>::new()));
    };
    let mut out = Vec::new();
    let mut last = 0;
    for (n, caps) in re.captures_iter(&text).enumerate() {
        if max > 0 && n >= max {
            break;
        }
        let Some(whole) = caps.get(0) else { continue };
        out.push(Value::from(&text[last..whole.start()]));
        for g in 1..caps.len() {
            out.push(
                caps.get(g)
                    .map_or(Value::from(()), |m| Value::from(m.as_str())),
            );
        }
        last = whole.end();
    }
    out.push(Value::from(&text[last..]));
    Ok(Value::from(out))
}

/// Translates a Python replacement string into the `regex` crate's syntax,
/// checking group references against the pattern.
fn python_replacement(repl: &str, re: &Regex) -> Result<String, String> {
    let mut out = String::with_capacity(repl.len());
    let mut chars = repl.chars().peekable();
    let group_ref = |name: &str| -> Result<String, String> {
        let known = match name.parse::<usize>() {
            Ok(n) => n < re.captures_len(),
            Err(_) => re.capture_names().any(|g| g == Some(name)),
        };
        if known {
            Ok(format!("${{{name}}}"))
        } else {
            Err(format!(
                "the replacement refers to group {name}, which the pattern does not have"
            ))
        }
    };
    while let Some(c) = chars.next() {
        match c {
            '$' => out.push_str("$$"),
            '\\' => match chars.next() {
                Some('\\') => out.push('\\'),
                Some('n') => out.push('\n'),
                Some('t') => out.push('\t'),
                Some('r') => out.push('\r'),
                Some(d) if d.is_ascii_digit() => {
                    let mut num = d.to_string();
                    if let Some(&next) = chars.peek()
                        && next.is_ascii_digit()
                    {
                        num.push(next);
                        chars.next();
                    }
                    out.push_str(&group_ref(&num)?);
                }
                Some('g') => {
                    if chars.next() != Some('<') {
                        return Err("`\\g` must be followed by `<name>`".into());
                    }
                    let name: String = chars.by_ref().take_while(|&c| c != '>').collect();
                    out.push_str(&group_ref(&name)?);
                }
                Some(other) if other.is_ascii_alphabetic() => {
                    return Err(format!("bad escape `\\{other}` in the replacement"));
                }
                Some(other) => {
                    out.push('\\');
                    out.push(other);
                }
                None => return Err("the replacement ends with a lone backslash".into()),
            },
            other => out.push(other),
        }
    }
    Ok(out)
}

/// The built-ins that take a pattern, and the position of the pattern among
/// their arguments when called as a function (one less as a filter or test).
pub(crate) const PATTERN_ARG: &[(&str, usize)] = &[
    ("matching", 1),
    ("regex_search", 1),
    ("regex_findall", 1),
    ("regex_replace", 1),
    ("regex_split", 1),
];

#[cfg(test)]
mod tests {
    use super::super::testutil::{error, json};
    use serde_json::json;

    #[test]
    fn matching_searches_anywhere_unless_anchored() {
        let ctx = json!({"sha": "0123456789abcdef0123456789abcdef01234567", "n": 3});
        assert_eq!(
            json("sha is matching('^[0-9a-f]{40}$')", ctx.clone()),
            "true"
        );
        assert_eq!(json("'xx12' is matching('\\\\d+')", ctx.clone()), "true");
        assert_eq!(json("'ABC' is matching('abc')", ctx.clone()), "false");
        assert_eq!(
            json("'ABC' is matching('abc', ignore_case=true)", ctx.clone()),
            "true"
        );
        assert_eq!(json("missing is matching('x')", ctx.clone()), "false");
        assert!(error("n is matching('3')", ctx).contains("argument 'text' must be a string"));
    }

    #[test]
    fn search_gives_a_group_or_none() {
        let ctx = json!({"t": "see CWE-79 and cwe_89"});
        assert_eq!(
            json(
                "regex_search(t, 'CWE[-_]?(\\\\d+)', 1, ignore_case=true)",
                ctx.clone()
            ),
            "\"79\""
        );
        assert_eq!(
            json("regex_search(t, '(?P<n>\\\\d+)', 'n')", ctx.clone()),
            "\"79\""
        );
        assert_eq!(json("regex_search(t, 'zzz')", ctx.clone()), "null");
        assert!(error("regex_search(t, '(a)', 2)", ctx).contains("group 2 does not exist"));
    }

    #[test]
    fn findall_has_pythons_shapes() {
        let ctx = json!({"t": "CWE-79, cwe-89; CWE-1"});
        assert_eq!(
            json(
                "regex_findall(t, 'cwe-\\\\d+', ignore_case=true)",
                ctx.clone()
            ),
            r#"["CWE-79","cwe-89","CWE-1"]"#
        );
        assert_eq!(
            json("t | regex_findall('CWE-(\\\\d+)')", ctx.clone()),
            r#"["79","1"]"#
        );
        assert_eq!(
            json("regex_findall('a1 b', '([a-z])(\\\\d)?')", ctx.clone()),
            r#"[["a","1"],["b",""]]"#
        );
        assert_eq!(json("regex_findall(none, 'x')", ctx), "[]");
    }

    #[test]
    fn replace_takes_python_replacements() {
        let ctx = json!({"t": "v1.2.3 costs $5"});
        assert_eq!(
            json(
                "regex_replace(t, '(\\\\d+)\\\\.(\\\\d+)', '\\\\2.\\\\1')",
                ctx.clone()
            ),
            r#""v2.1.3 costs $5""#
        );
        assert_eq!(
            json("regex_replace(t, '\\\\d', '#', count=2)", ctx.clone()),
            r##""v#.#.3 costs $5""##
        );
        assert_eq!(
            json("regex_replace(t, '\\\\s+', '$')", ctx.clone()),
            r#""v1.2.3$costs$$5""#
        );
        assert_eq!(
            json(
                "regex_replace(t, '(?P<d>\\\\d)', '<\\\\g<d>>')",
                ctx.clone()
            ),
            r#""v<1>.<2>.<3> costs $<5>""#
        );
        assert!(error("regex_replace(t, 'x', '\\\\3')", ctx.clone()).contains("group 3"));
        assert!(error("regex_replace(t, 'x', '\\\\q')", ctx).contains("bad escape"));
    }

    #[test]
    fn split_keeps_groups_as_python_does() {
        let ctx = json!({});
        assert_eq!(
            json("regex_split('a, b;c', '[,;]\\\\s*')", ctx.clone()),
            r#"["a","b","c"]"#
        );
        assert_eq!(
            json("regex_split('a1b', '(\\\\d)')", ctx.clone()),
            r#"["a","1","b"]"#
        );
        assert_eq!(
            json("regex_split('a1b2c', '\\\\d', maxsplit=1)", ctx),
            r#"["a","b2c"]"#
        );
    }

    /// A group is referred to by a name the pattern has, or a number below its count
    /// of groups (0 is the whole match): anything else is an error, not an empty text.
    #[test]
    fn group_references_must_exist_in_the_pattern() {
        let ctx = json!({"t": "ab"});
        let msg = error("regex_search(t, '(?P<x>a)', 'y')", ctx.clone());
        assert!(msg.contains("the pattern has no group named 'y'"), "{msg}");
        let msg = error("regex_replace(t, 'a', '<\\\\1>')", ctx.clone());
        assert!(msg.contains("refers to group 1"), "{msg}");
        assert_eq!(
            json("regex_replace(t, '(a)', '<\\\\1>')", ctx.clone()),
            r#""<a>b""#
        );
        let msg = error("regex_replace(t, '(?P<x>a)', '\\\\g<y>')", ctx.clone());
        assert!(msg.contains("refers to group y"), "{msg}");
        assert_eq!(
            json("regex_replace(t, '(?P<x>a)', '\\\\g<x>!')", ctx),
            r#""a!b""#
        );
    }

    /// As in Python, a backslash before anything but a letter, a digit or a known
    /// escape is kept as written; only unknown letter escapes are errors.
    #[test]
    fn other_escapes_in_a_replacement_are_kept() {
        assert_eq!(
            json("regex_replace('a.b', '[.]', '\\\\.')", json!({})),
            r#""a\\.b""#
        );
        assert_eq!(
            json("regex_replace('a.b', '[.]', '\\\\&')", json!({})),
            r#""a\\&b""#
        );
    }

    /// Patterns up to the length limit compile; one character more is refused with
    /// the reason.
    #[test]
    fn the_pattern_length_limit_is_inclusive() {
        let longest = "a".repeat(super::MAX_PATTERN);
        assert!(super::compile(&longest, false).is_ok());
        let too_long = "a".repeat(super::MAX_PATTERN + 1);
        let msg = super::compile(&too_long, false).unwrap_err();
        assert_eq!(
            msg,
            format!(
                "the pattern is {} characters long; the limit is {}",
                super::MAX_PATTERN + 1,
                super::MAX_PATTERN
            )
        );
    }

    /// A compiled pattern is kept (while there is room) and the cache never holds more
    /// than its limit: past it, patterns still compile, per call. One test, since the
    /// cache is shared by the whole process.
    #[test]
    fn compiled_patterns_are_cached_up_to_the_limit() {
        let cached = |p: &str| {
            super::cache()
                .read()
                .expect("cache lock")
                .contains_key(&(p.to_owned(), false))
        };
        let probe = "cache-probe-(first)";
        super::compile(probe, false).expect("compiles");
        assert!(cached(probe), "a compiled pattern is kept");
        for i in 0..=super::CACHE_ENTRIES {
            super::compile(&format!("cache-fill-{i}"), false).expect("compiles");
        }
        let len = super::cache().read().expect("cache lock").len();
        assert_eq!(len, super::CACHE_ENTRIES);
        let late = "cache-probe-(late)";
        assert!(super::compile(late, false).is_ok());
        assert!(!cached(late), "past the limit a pattern is not kept");
    }

    #[test]
    fn bad_patterns_say_why() {
        let ctx = json!({});
        let msg = error("'a' is matching('(')", ctx.clone());
        assert!(msg.contains("invalid pattern"), "{msg}");
        let msg = error("'a' is matching('(?=a)')", ctx);
        assert!(msg.contains("linear time"), "{msg}");
    }
}
