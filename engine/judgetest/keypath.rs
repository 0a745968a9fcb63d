//! Key paths into JSON values, as expectations write them: `a.b[0].c`, with `["odd.key"]`
//! for a key that holds a dot or a bracket.

use serde_json::Value;

/// One step of a key path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Step {
    /// An object key.
    Key(String),
    /// An array index.
    Index(usize),
}

/// Parses `path`, or says what is wrong with it.
pub(crate) fn parse(path: &str) -> Result<Vec<Step>, String> {
    let mut steps = Vec::new();
    let mut rest = path;
    while !rest.is_empty() {
        if let Some(inner) = rest.strip_prefix('[') {
            let close = inner
                .find(']')
                .ok_or_else(|| format!("key path `{path}`: `[` without `]`"))?;
            let body = &inner[..close];
            steps.push(bracket(body).ok_or_else(|| {
                format!("key path `{path}`: `[{body}]` is neither an index nor a quoted key")
            })?);
            rest = &inner[close + 1..];
        } else {
            let end = rest.find(['.', '[']).unwrap_or(rest.len());
            if end == 0 {
                return Err(format!("key path `{path}`: empty key"));
            }
            steps.push(Step::Key(rest[..end].to_owned()));
            rest = &rest[end..];
        }
        if let Some(after) = rest.strip_prefix('.') {
            if after.is_empty() {
                return Err(format!("key path `{path}` ends with `.`"));
            }
            rest = after;
        }
    }
    if steps.is_empty() {
        return Err("empty key path".into());
    }
    Ok(steps)
}

fn bracket(body: &str) -> Option<Step> {
    if let Ok(i) = body.parse::<usize>() {
        return Some(Step::Index(i));
    }
    let quoted = body
        .strip_prefix('"')
        .and_then(|b| b.strip_suffix('"'))
        .or_else(|| body.strip_prefix('\'').and_then(|b| b.strip_suffix('\'')))?;
    Some(Step::Key(quoted.to_owned()))
}

/// The value at `steps`, or where the path stops leading anywhere (the keys that exist
/// there, for a "did you mean").
pub(crate) fn lookup<'a>(root: &'a Value, steps: &[Step]) -> Result<&'a Value, String> {
    let mut here = root;
    for (i, step) in steps.iter().enumerate() {
        let next = match (step, here) {
            (Step::Key(k), Value::Object(map)) => map.get(k).ok_or_else(|| {
                let keys = map.keys().map(String::as_str);
                match crate::diag::did_you_mean(k, keys) {
                    Some(near) => format!("no key `{k}` (did you mean `{near}`?)"),
                    None => format!(
                        "no key `{k}` (keys there: {})",
                        map.keys().take(12).cloned().collect::<Vec<_>>().join(", ")
                    ),
                }
            }),
            (Step::Index(n), Value::Array(items)) => items
                .get(*n)
                .ok_or_else(|| format!("index {n} is past the end (length {})", items.len())),
            (step, other) => Err(format!(
                "{} cannot be applied to {}",
                describe(step),
                kind(other)
            )),
        };
        here = next.map_err(|e| {
            if i == 0 {
                e
            } else {
                format!("{e} after `{}`", render(&steps[..i]))
            }
        })?;
    }
    Ok(here)
}

fn describe(step: &Step) -> String {
    match step {
        Step::Key(k) => format!("key `{k}`"),
        Step::Index(i) => format!("index [{i}]"),
    }
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a mapping",
    }
}

/// Writes steps back as a key path.
pub(crate) fn render(steps: &[Step]) -> String {
    let mut out = String::new();
    for step in steps {
        match step {
            Step::Index(i) => out.push_str(&format!("[{i}]")),
            Step::Key(k) if k.contains(['.', '[', ']']) => out.push_str(&format!("[\"{k}\"]")),
            Step::Key(k) => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(k);
            }
        }
    }
    out
}

/// Whether two JSON values are equal, numbers to a relative 1e-9 (so `80` equals `80.0`
/// and a mean computed in another order still matches).
pub(crate) fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_f64(), y.as_f64()) {
            (Some(x), Some(y)) => (x - y).abs() <= 1e-9 * x.abs().max(y.abs()).max(1.0),
            _ => x == y,
        },
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same(v, w)))
        }
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn paths_parse_and_render_back() {
        let steps = parse(r#"per_repo[0].tp"#).unwrap();
        assert_eq!(
            steps,
            [
                Step::Key("per_repo".into()),
                Step::Index(0),
                Step::Key("tp".into())
            ]
        );
        assert_eq!(render(&steps), "per_repo[0].tp");
        let odd = parse(r#"kinds["a.b"][2]"#).unwrap();
        assert_eq!(odd[1], Step::Key("a.b".into()));
        assert_eq!(render(&odd), r#"kinds["a.b"][2]"#);
        for bad in ["", "a..b", "a.", "a[x]", "a[0"] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn lookups_say_where_they_stop() {
        let doc = json!({"summary": {"total": 3, "rates": [1.5, 2]}});
        let at = |p: &str| lookup(&doc, &parse(p).unwrap());
        assert_eq!(at("summary.rates[1]").unwrap(), &json!(2));
        assert_eq!(
            at("summary.totl").unwrap_err(),
            "no key `totl` (did you mean `total`?) after `summary`"
        );
        assert!(at("summary.rates[5]").unwrap_err().contains("past the end"));
        assert!(at("summary.total.x").unwrap_err().contains("a number"));
    }

    #[test]
    fn numbers_compare_with_tolerance() {
        assert!(same(&json!(80), &json!(80.0)));
        assert!(same(
            &json!([1, {"a": 0.1}]),
            &json!([1.0, {"a": 0.1000000000001}])
        ));
        assert!(!same(&json!(80), &json!(80.01)));
        assert!(!same(&json!("80"), &json!(80)));
    }
}
