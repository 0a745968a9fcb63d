//! Literal arguments of built-in calls, read from expression text at load time: the
//! regular expression given to `matching`, `regex_search`, ... (compiled once, here, so a
//! bad pattern is a load error with its location) and the test or filter named by a
//! string to `select`, `selectattr`, `map`, ... (an unknown name would otherwise only
//! fail when the judge runs).

use minijinja::Environment;

/// How a built-in was called.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Form {
    /// `name(a, b)`.
    Function,
    /// `a | name(b)` or `a is name(b)`: the subject is the first argument.
    Subject,
}

/// One call found in the text.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Call<'a> {
    /// The called name.
    pub name: &'a str,
    /// Function or filter/test form.
    pub form: Form,
    /// Positional arguments as written (trimmed).
    pub positional: Vec<&'a str>,
    /// Keyword arguments as written.
    pub keywords: Vec<(&'a str, &'a str)>,
}

impl<'a> Call<'a> {
    /// The argument a function-form call has at `index` (or, for a filter or test, at
    /// `index - 1`), or the keyword `name`.
    pub(crate) fn arg(&self, index: usize, name: &str) -> Option<&'a str> {
        let i = match self.form {
            Form::Function => Some(index),
            Form::Subject => index.checked_sub(1),
        };
        i.and_then(|i| self.positional.get(i).copied()).or_else(|| {
            self.keywords
                .iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| *v)
        })
    }
}

/// Every call of one of `names` in `code`, with its arguments split at top-level commas.
/// Text inside string literals is never taken for a call.
pub(crate) fn calls<'a>(code: &'a str, names: &[&str]) -> Vec<Call<'a>> {
    let bytes = code.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        if c == b'\'' || c == b'"' {
            i = skip_string(bytes, i);
            continue;
        }
        if !(c.is_ascii_alphabetic() || c == b'_') || (i > 0 && is_word(bytes[i - 1])) {
            i += 1;
            continue;
        }
        let start = i;
        while i < bytes.len() && is_word(bytes[i]) {
            i += 1;
        }
        let name = &code[start..i];
        let mut j = i;
        while j < bytes.len() && bytes[j].is_ascii_whitespace() {
            j += 1;
        }
        if j >= bytes.len() || bytes[j] != b'(' || !names.contains(&name) {
            continue;
        }
        let before = code[..start].trim_end();
        if before.ends_with('.') {
            continue; // a method, not the built-in
        }
        let form = if before.ends_with('|')
            || before.ends_with(" is")
            || before.ends_with(" not")
            || before == "is"
        {
            Form::Subject
        } else {
            Form::Function
        };
        let Some(args) = split_args(code, j + 1) else {
            break;
        };
        let mut positional = Vec::new();
        let mut keywords = Vec::new();
        for a in args {
            match keyword(a) {
                Some((k, v)) => keywords.push((k, v)),
                None if !a.is_empty() => positional.push(a),
                None => {}
            }
        }
        out.push(Call {
            name,
            form,
            positional,
            keywords,
        });
        // Continue inside the arguments: calls may nest.
        i = j + 1;
    }
    out
}

/// The value of a string literal written in an expression (`'a\\d'`), as minijinja
/// reads it; `None` when `text` is not exactly one string literal.
pub(crate) fn literal_string(env: &Environment<'static>, text: &str) -> Option<String> {
    let t = text.trim();
    let quote = t.as_bytes().first().copied()?;
    if !(quote == b'\'' || quote == b'"') || skip_string(t.as_bytes(), 0) != t.len() {
        return None;
    }
    let value = env.compile_expression(t).ok()?.eval(()).ok()?;
    value.as_str().map(str::to_owned)
}

pub(crate) fn is_word(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// The index just past the string literal starting at `start` (the end of the text when
/// it is never closed).
pub(crate) fn skip_string(bytes: &[u8], start: usize) -> usize {
    let quote = bytes[start];
    let mut i = start + 1;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b if b == quote => return i + 1,
            _ => i += 1,
        }
    }
    bytes.len()
}

/// Splits the arguments starting at `from` (just after `(`) up to the matching `)`.
fn split_args(code: &str, from: usize) -> Option<Vec<&str>> {
    let bytes = code.as_bytes();
    let mut depth = 0usize;
    let mut args = Vec::new();
    let mut arg_start = from;
    let mut i = from;
    while i < bytes.len() {
        match bytes[i] {
            b'\'' | b'"' => {
                i = skip_string(bytes, i);
                continue;
            }
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' | b'}' if depth > 0 => depth -= 1,
            b')' => {
                args.push(code[arg_start..i].trim());
                return Some(args);
            }
            b',' if depth == 0 => {
                args.push(code[arg_start..i].trim());
                arg_start = i + 1;
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// `name=value` at the top level of one argument (not `==`).
fn keyword(arg: &str) -> Option<(&str, &str)> {
    let eq = arg.find('=')?;
    let (k, rest) = arg.split_at(eq);
    let k = k.trim();
    if rest.starts_with("==") || k.is_empty() || !k.bytes().all(is_word) {
        return None;
    }
    Some((k, rest[1..].trim()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_calls_in_every_form() {
        let code = "regex_findall(x.a(1, [2, 3]), 'a,b') | length + (t | regex_search('q(', group=1)) \
                    if t is not matching(\"z\") else 'regex_split(1, 2)' ~ o.regex_split(p, q)";
        let found = calls(
            code,
            &["regex_findall", "regex_search", "matching", "regex_split"],
        );
        assert_eq!(found.len(), 3, "{found:?}");
        assert_eq!(found[0].form, Form::Function);
        assert_eq!(found[0].arg(1, "pattern"), Some("'a,b'"));
        assert_eq!(found[1].form, Form::Subject);
        assert_eq!(found[1].arg(1, "pattern"), Some("'q('"));
        assert_eq!(found[1].keywords, vec![("group", "1")]);
        assert_eq!(found[2].form, Form::Subject);
        assert_eq!(found[2].arg(1, "pattern"), Some("\"z\""));
    }

    /// The calls of `names` in `code`, as `name form positional keywords` lines.
    fn found(code: &str, names: &[&str]) -> Vec<String> {
        calls(code, names)
            .iter()
            .map(|c| {
                format!(
                    "{} {:?} {:?} {:?}",
                    c.name, c.form, c.positional, c.keywords
                )
            })
            .collect()
    }

    /// A call is a whole word followed by `(` (spaces allowed): not the tail of a
    /// longer name, not a method, not a name without arguments, not text in a string.
    #[test]
    fn a_call_is_a_whole_name_before_a_parenthesis() {
        let names = &["f", "_g", "g2"];
        assert_eq!(found("f(1)", names), ["f Function [\"1\"] []"]);
        assert_eq!(found("f (1)", names), ["f Function [\"1\"] []"]);
        assert_eq!(
            found("_g(a) + g2(b)", names),
            ["_g Function [\"a\"] []", "g2 Function [\"b\"] []"]
        );
        assert!(found("xf(1) + f_(2) + 2f(3)", names).is_empty());
        assert!(found("o.f(1) + o . f(2)", names).is_empty());
        assert!(found("x | f", names).is_empty());
        assert!(found("f", names).is_empty());
        assert!(found("h(1) ~ 'f(2)' ~ \"f(3)\"", names).is_empty());
        assert!(found("'it\\'s f(1)'", names).is_empty());
    }

    /// Filter and test forms, `not` included, take the subject as the first argument.
    #[test]
    fn filters_and_tests_take_the_subject_first() {
        let names = &["m"];
        for code in [
            "x | m(1)",
            "x|m(1)",
            "x is m(1)",
            "x is not m(1)",
            "is m(1)",
        ] {
            assert_eq!(found(code, names), ["m Subject [\"1\"] []"], "{code}");
        }
        for code in ["this(m(1))", "[m(1)]", "a, m(1)", "x isnt m(1)"] {
            assert_eq!(found(code, names), ["m Function [\"1\"] []"], "{code}");
        }
    }

    /// Arguments split at top-level commas only, keywords apart (`==`, `<=` and the
    /// like are not keywords), empty arguments dropped; calls inside arguments are found
    /// too; an unclosed call ends the search.
    #[test]
    fn arguments_split_at_top_level_commas() {
        let names = &["f", "g"];
        assert_eq!(
            found("f(a(1, 2), [3, 4], {'k': 5}, 'x,)', b=(6, 7))", names),
            ["f Function [\"a(1, 2)\", \"[3, 4]\", \"{'k': 5}\", \"'x,)'\"] [(\"b\", \"(6, 7)\")]"]
        );
        assert_eq!(
            found("f(a == 1, b <= 2, c != 3, =4, d= 5 )", names),
            ["f Function [\"a == 1\", \"b <= 2\", \"c != 3\", \"=4\"] [(\"d\", \"5\")]"]
        );
        assert_eq!(found("f()", names), ["f Function [] []"]);
        assert_eq!(found("f(1,)", names), ["f Function [\"1\"] []"]);
        assert_eq!(
            found("f(g(1), 2)", names),
            ["f Function [\"g(1)\", \"2\"] []", "g Function [\"1\"] []"]
        );
        assert_eq!(found("f(1) + g(2", names), ["f Function [\"1\"] []"]);
        assert!(found("g(1 + f(2)", names).is_empty());
    }

    /// `arg`: by position (one less for a filter or test, whose subject is argument 0),
    /// else by keyword.
    #[test]
    fn arguments_are_found_by_position_or_keyword() {
        let call = &calls("f(a, b, k=c)", &["f"])[0];
        assert_eq!(call.arg(0, "x"), Some("a"));
        assert_eq!(call.arg(1, "x"), Some("b"));
        assert_eq!(call.arg(2, "k"), Some("c"));
        assert_eq!(call.arg(2, "x"), None);
        let call = &calls("s | f(a, k=c)", &["f"])[0];
        assert_eq!(call.arg(0, "x"), None);
        assert_eq!(call.arg(0, "k"), Some("c"));
        assert_eq!(call.arg(1, "x"), Some("a"));
        assert_eq!(call.arg(2, "k"), Some("c"));
    }

    /// The end of a string literal: past its closing quote (an escaped quote does not
    /// close it), or the end of the text when it is never closed.
    #[test]
    fn string_literals_end_at_their_own_closing_quote() {
        assert_eq!(skip_string(b"'ab' x", 0), 4);
        assert_eq!(skip_string(b"x \"a'b\" y", 2), 7);
        assert_eq!(skip_string(b"'a\\'b' c", 0), 6);
        assert_eq!(skip_string(b"'abc", 0), 4);
        assert_eq!(skip_string(b"'a\\", 0), 3);
        assert!(is_word(b'a') && is_word(b'Z') && is_word(b'0') && is_word(b'_'));
        assert!(!is_word(b'.') && !is_word(b' ') && !is_word(b'('));
    }

    #[test]
    fn reads_literals_as_minijinja_does() {
        let env = crate::render::environment();
        assert_eq!(literal_string(&env, r"'a\\d'"), Some(r"a\d".into()));
        assert_eq!(literal_string(&env, "'a' ~ b"), None);
        assert_eq!(literal_string(&env, "x"), None);
        assert_eq!(literal_string(&env, " \"a'b\" "), Some("a'b".into()));
        assert_eq!(literal_string(&env, "'a' 'b'"), None);
        assert_eq!(literal_string(&env, "'abc"), None);
        assert_eq!(literal_string(&env, ""), None);
        assert_eq!(literal_string(&env, "'a' ~"), None);
    }
}
