//! `classify`: first-match keyword table.
//!
//! Judges bucket free text (file paths, rule ids, messages) into a few
//! labels, e.g. IaC files into dockerfile / terraform / other. A table of
//! plain keywords in the judge YAML is easier to review than a regex and
//! cannot fail to compile.

use minijinja::value::{Rest, ValueKind, ValueOrKwargs};
use minijinja::{Error, Value};

use super::args::{Args, describe, is_nothing};

/// Whether a (lower-cased) text hits one keyword.
type Matcher = fn(&str, &str) -> bool;

/// The row keys that hold keywords, and how each compares with the text.
const MATCHERS: &[(&str, Matcher)] = &[
    ("contains", |text, word| text.contains(word)),
    ("startswith", |text, word| text.starts_with(word)),
    ("endswith", |text, word| text.ends_with(word)),
    ("equals", |text, word| text == word),
];

/// `classify(text, table, default=none)`.
pub(crate) fn classify(raw: Rest<ValueOrKwargs>) -> Result<Value, Error> {
    let args = Args::bind("classify", &["text", "table", "default"], 2, raw)?;
    let default = args.raw(2);
    let default = if is_nothing(&default) {
        Value::from(())
    } else {
        default
    };
    let text = args.raw(0);
    let table = args.items(1)?;
    let text = if is_nothing(&text) {
        None
    } else {
        match text.as_str() {
            Some(s) => Some(s.to_lowercase()),
            None => return Err(args.error(0, "a string", &text)),
        }
    };
    // Every row is validated even when an earlier one matches, so that a
    // broken table fails on the first item rather than on a rare one.
    let mut winner = None;
    for (index, row) in table.iter().enumerate() {
        let rule = Rule::parse(&args, index, row)?;
        if winner.is_none()
            && let Some(text) = &text
            && rule.hits(text)
        {
            winner = Some(rule.label);
        }
    }
    Ok(winner.unwrap_or(default))
}

/// One validated table row.
struct Rule {
    label: Value,
    /// (matcher index into MATCHERS, lower-cased keywords)
    tests: Vec<(usize, Vec<String>)>,
}

impl Rule {
    fn parse(args: &Args, index: usize, row: &Value) -> Result<Rule, Error> {
        let bad = |what: String| args.fail(format_args!("table row {index}: {what}"));
        if row.kind() != ValueKind::Map {
            return Err(bad(format!(
                "must be a map {{label, contains, startswith, endswith, equals}}, got {}",
                describe(row)
            )));
        }
        let mut label = None;
        let mut tests = Vec::new();
        let keys = row.try_iter().map_err(|_| bad("cannot be read".into()))?;
        for key in keys {
            let value = row.get_item(&key).unwrap_or(Value::UNDEFINED);
            let name = key.as_str().unwrap_or_default();
            if name == "label" {
                label = Some(value);
                continue;
            }
            let Some(matcher) = MATCHERS.iter().position(|(m, _)| *m == name) else {
                return Err(bad(format!(
                    "unknown key {}; allowed: label, contains, startswith, endswith, equals",
                    describe(&key)
                )));
            };
            tests.push((
                matcher,
                keywords(&value).ok_or_else(|| {
                    bad(format!(
                        "'{name}' must be a string or a list of strings, got {}",
                        describe(&value)
                    ))
                })?,
            ));
        }
        let label = match label {
            Some(label) if !is_nothing(&label) => label,
            _ => return Err(bad(format!("has no 'label' (in {})", describe(row)))),
        };
        Ok(Rule { label, tests })
    }

    fn hits(&self, text: &str) -> bool {
        self.tests.iter().any(|(matcher, words)| {
            let test = MATCHERS[*matcher].1;
            words.iter().any(|word| test(text, word))
        })
    }
}

/// A keyword list, lower-cased; a single string is a one-word list.
fn keywords(value: &Value) -> Option<Vec<String>> {
    if let Some(word) = value.as_str() {
        return Some(vec![word.to_lowercase()]);
    }
    if !matches!(value.kind(), ValueKind::Seq | ValueKind::Iterable) {
        return None;
    }
    value
        .try_iter()
        .ok()?
        .map(|word| word.as_str().map(str::to_lowercase))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::super::testutil::{error, json, json_lazy};
    use serde_json::json;

    fn table() -> serde_json::Value {
        json!({"t": [
            {"label": "dockerfile", "endswith": ["dockerfile", ".dockerfile"], "startswith": "dockerfile."},
            {"label": "terraform", "endswith": [".tf", ".tfvars"]},
            {"label": "k8s", "contains": ["k8s/", "/manifests/"]},
            {"label": "compose", "equals": ["docker-compose.yml"]},
        ]})
    }

    #[test]
    fn first_matching_row_wins_case_insensitively() {
        let t = table();
        assert_eq!(
            json("classify('app/Dockerfile', t)", t.clone()),
            r#""dockerfile""#
        );
        assert_eq!(
            json("'Dockerfile.prod'|classify(t)", t.clone()),
            r#""dockerfile""#
        );
        assert_eq!(
            json_lazy("classify('infra/MAIN.TF', t)", t.clone()),
            r#""terraform""#
        );
        assert_eq!(
            json_lazy("classify('k8s/main.tf', t)", t.clone()),
            r#""terraform""#
        );
        assert_eq!(
            json("classify('deploy/K8S/app.yaml', t)", t.clone()),
            r#""k8s""#
        );
        assert_eq!(
            json("classify('Docker-Compose.yml', t)", t.clone()),
            r#""compose""#
        );
    }

    #[test]
    fn default_when_nothing_matches_or_text_missing() {
        let t = table();
        assert_eq!(json("classify('README.md', t)", t.clone()), "null");
        assert_eq!(
            json("classify('README.md', t, 'other')", t.clone()),
            r#""other""#
        );
        assert_eq!(
            json("classify(none, t, default='other')", t.clone()),
            r#""other""#
        );
        assert_eq!(json("classify('x', [], 'other')", t), r#""other""#);
    }

    #[test]
    fn broken_tables_are_reported() {
        let msg = error(
            "classify('a', [{'label': 'x', 'contain': ['a']}])",
            json!({}),
        );
        assert!(
            msg.contains("table row 0: unknown key string \"contain\""),
            "{msg}"
        );
        let msg = error(
            "classify('a', [{'label': 'x', 'contains': ['a']}, {'contains': 'b'}])",
            json!({}),
        );
        assert!(msg.contains("table row 1: has no 'label'"), "{msg}");
        // A label of none is no label: the row would otherwise classify as none.
        let msg = error(
            "classify('a', [{'label': none, 'contains': 'a'}])",
            json!({}),
        );
        assert!(msg.contains("table row 0: has no 'label'"), "{msg}");
        let msg = error(
            "classify('a', [{'label': 'x', 'contains': [1]}])",
            json!({}),
        );
        assert!(
            msg.contains("'contains' must be a string or a list of strings"),
            "{msg}"
        );
        let msg = error("classify('a', ['x'])", json!({}));
        assert!(msg.contains("table row 0: must be a map"), "{msg}");
        let msg = error("classify(3, [])", json!({}));
        assert!(
            msg.contains("classify(): argument 'text' must be a string, got number 3"),
            "{msg}"
        );
    }
}
