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

    #[test]
    fn reads_literals_as_minijinja_does() {
        let env = crate::render::environment();
        assert_eq!(literal_string(&env, r"'a\\d'"), Some(r"a\d".into()));
        assert_eq!(literal_string(&env, "'a' ~ b"), None);
        assert_eq!(literal_string(&env, "x"), None);
    }
}
