//! JSONPath selectors (RFC 9535, parsed once at load by jsonpath-rust).
//!
//! A selector whose segments are only names and indices is *singular* (RFC 9535 §2.3.5.1):
//! it yields one value or `null`. Any other selector yields the list of matched values.
//! Paths made of names, indices and wildcards are walked directly over `Doc` (no path
//! strings are built); everything else goes through jsonpath-rust.

use std::sync::Arc;

use jsonpath_rust::parser::model::{JpQuery, Segment, Selector as JpSelector};
use jsonpath_rust::query::js_path_process;

use crate::doc::Doc;
use crate::evidence::error::{ErrorKind, EvalError};

/// A parsed selector.
#[derive(Clone, Debug)]
pub struct Selector {
    /// The text as written.
    pub source: String,
    query: Arc<JpQuery>,
    singular: bool,
    simple: Option<Vec<Step>>,
}

#[derive(Clone, Debug)]
enum Step {
    Name(String),
    Index(i64),
    Wildcard,
}

impl Selector {
    /// Parses `source`; the error is jsonpath-rust's message, on one line.
    pub fn parse(source: &str) -> Result<Selector, EvalError> {
        let query = jsonpath_rust::parser::parse_json_path(source)
            .map_err(|e| EvalError::new(ErrorKind::Syntax, one_line(&e.to_string())))?;
        let singular = query.segments.iter().all(|s| {
            matches!(
                s,
                Segment::Selector(JpSelector::Name(_)) | Segment::Selector(JpSelector::Index(_))
            )
        });
        let simple = query
            .segments
            .iter()
            .map(|s| match s {
                Segment::Selector(JpSelector::Name(n)) => Some(Step::Name(n.clone())),
                Segment::Selector(JpSelector::Index(i)) => Some(Step::Index(*i)),
                Segment::Selector(JpSelector::Wildcard) => Some(Step::Wildcard),
                _ => None,
            })
            .collect();
        Ok(Selector {
            source: source.to_owned(),
            query: Arc::new(query),
            singular,
            simple,
        })
    }

    /// Whether the selector yields one value rather than a list.
    pub fn is_singular(&self) -> bool {
        self.singular
    }

    /// Runs the selector on `root`: a value (singular) or an array of matches.
    pub fn select(&self, root: &Doc) -> Result<Doc, EvalError> {
        let hits = self.matches(root)?;
        if self.singular {
            Ok(hits.into_iter().next().unwrap_or(Doc::Null))
        } else {
            Ok(Doc::from(hits))
        }
    }

    /// All matched values, in document order.
    pub fn matches(&self, root: &Doc) -> Result<Vec<Doc>, EvalError> {
        if let Some(steps) = &self.simple {
            let mut current = vec![root.clone()];
            for step in steps {
                let mut next = Vec::with_capacity(current.len());
                for node in &current {
                    match (step, node) {
                        (Step::Name(n), Doc::Object(map)) => {
                            if let Some(v) = map.get(n.as_str()) {
                                next.push(v.clone());
                            }
                        }
                        (Step::Index(i), Doc::Array(items)) => {
                            let len = items.len() as i64;
                            let idx = if *i < 0 { len + i } else { *i };
                            if let Some(v) = usize::try_from(idx).ok().and_then(|i| items.get(i)) {
                                next.push(v.clone());
                            }
                        }
                        (Step::Wildcard, Doc::Array(items)) => next.extend(items.iter().cloned()),
                        (Step::Wildcard, Doc::Object(map)) => next.extend(map.values().cloned()),
                        _ => {}
                    }
                }
                current = next;
            }
            return Ok(current);
        }
        let refs = js_path_process(&self.query, root)
            .map_err(|e| EvalError::new(ErrorKind::Selector, e.to_string()))?;
        Ok(refs.into_iter().map(|r| r.val().clone()).collect())
    }
}

/// How far a selector of names, indices and wildcards got in a document (see
/// [`Selector::reach`]).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Reach {
    /// Whether every step found something (a `null` counts: the key is there).
    pub complete: bool,
    /// The selector up to the last step that found something (`$.repos[*].result`).
    pub found: String,
    /// The name the next step looked for, when it was a name.
    pub missing: Option<String>,
    /// The keys of the objects where that name was looked for, for "did you mean".
    pub keys: Vec<String>,
    /// How many steps found something.
    pub steps: usize,
    /// Whether it stopped at an empty list (a wildcard or index with nothing to take):
    /// nothing there to check, rather than a misspelled key.
    pub empty_list: bool,
}

/// Keys kept for "did you mean".
const REACH_KEYS: usize = 64;

impl Selector {
    /// How far the selector gets in `root`, step by step; `None` for a selector with
    /// filters, slices or descendants, which is not followed step by step.
    pub fn reach(&self, root: &Doc) -> Option<Reach> {
        let steps = self.simple.as_ref()?;
        let mut current = vec![root.clone()];
        let mut found = String::from("$");
        for (n, step) in steps.iter().enumerate() {
            let mut next = Vec::new();
            let mut keys = std::collections::BTreeSet::new();
            let mut lists = false;
            for node in &current {
                match (step, node) {
                    (Step::Name(name), Doc::Object(map)) => match map.get(name.as_str()) {
                        Some(v) => next.push(v.clone()),
                        None => keys.extend(map.keys().take(REACH_KEYS).map(|k| k.to_string())),
                    },
                    (Step::Index(i), Doc::Array(items)) => {
                        lists = true;
                        let idx = if *i < 0 { items.len() as i64 + i } else { *i };
                        next.extend(
                            usize::try_from(idx)
                                .ok()
                                .and_then(|i| items.get(i))
                                .cloned(),
                        );
                    }
                    (Step::Wildcard, Doc::Array(items)) => {
                        lists = true;
                        next.extend(items.iter().cloned());
                    }
                    (Step::Wildcard, Doc::Object(map)) => next.extend(map.values().cloned()),
                    _ => {}
                }
            }
            if next.is_empty() {
                return Some(Reach {
                    complete: false,
                    found,
                    missing: match step {
                        Step::Name(name) => Some(name.clone()),
                        _ => None,
                    },
                    keys: keys.into_iter().take(REACH_KEYS).collect(),
                    steps: n,
                    empty_list: lists,
                });
            }
            match step {
                Step::Name(name) => found.push_str(&format!(".{name}")),
                Step::Index(i) => found.push_str(&format!("[{i}]")),
                Step::Wildcard => found.push_str("[*]"),
            }
            current = next;
        }
        Some(Reach {
            complete: true,
            found,
            steps: steps.len(),
            ..Reach::default()
        })
    }
}

/// Folds a multi-line parser message (`--> 1:9`, a caret drawing, `= expected string`)
/// into "at column 9: expected string".
fn one_line(message: &str) -> String {
    let column = message
        .split("-->")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|pos| pos.split(':').nth(1))
        .map(str::to_owned);
    let expected = message
        .lines()
        .find_map(|l| l.trim().strip_prefix("= "))
        .map(str::to_owned);
    match (column, expected) {
        (Some(c), Some(e)) => format!("at column {c}: {e}"),
        (None, Some(e)) => e,
        _ => message.lines().next().unwrap_or(message).trim().to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(s: &str) -> Doc {
        serde_json::from_str(s).unwrap()
    }

    #[test]
    fn singular_and_list_selectors() {
        let d = doc(r#"{"a": {"b": [1, 2, {"c": 3}]}, "xs": [{"n": 1}, {"n": 5}]}"#);
        let s = Selector::parse("$.a.b[2].c").unwrap();
        assert!(s.is_singular());
        assert_eq!(s.select(&d).unwrap(), Doc::Int(3));
        assert_eq!(
            Selector::parse("$.a.zz").unwrap().select(&d).unwrap(),
            Doc::Null
        );
        let w = Selector::parse("$.xs[*].n").unwrap();
        assert!(!w.is_singular());
        assert_eq!(w.select(&d).unwrap().to_string(), "[1,5]");
        let f = Selector::parse("$.xs[?@.n > 2].n").unwrap();
        assert_eq!(f.select(&d).unwrap().to_string(), "[5]");
        let neg = Selector::parse("$.a.b[-1].c").unwrap();
        assert_eq!(neg.select(&d).unwrap(), Doc::Int(3));
        let desc = Selector::parse("$..n").unwrap();
        assert_eq!(desc.select(&d).unwrap().to_string(), "[1,5]");
    }

    #[test]
    fn fast_path_agrees_with_jsonpath_rust() {
        let d = doc(r#"{"a": [{"b": 1}, {"b": 2}, {"c": 3}], "m": {"x": 1, "y": 2}}"#);
        for path in ["$.a[*].b", "$.a[0]", "$.m[*]", "$.a[5].b", "$.a[-2].b"] {
            let s = Selector::parse(path).unwrap();
            let fast = s.matches(&d).unwrap();
            let slow: Vec<Doc> = js_path_process(&s.query, &d)
                .unwrap()
                .into_iter()
                .map(|r| r.val().clone())
                .collect();
            assert_eq!(fast, slow, "{path}");
        }
    }

    /// By hand: where each selector stops, what it looked for there and what was there
    /// instead; a filter is not followed step by step.
    #[test]
    fn reach_names_the_step_that_found_nothing() {
        let d = doc(r#"{"a": [{"b": 1}, {"b": 2, "c": 3}], "m": {"x": 1}, "e": []}"#);
        let reach = |path: &str| Selector::parse(path).unwrap().reach(&d);
        let whole = |found: &str, steps| Reach {
            complete: true,
            found: found.to_owned(),
            steps,
            ..Reach::default()
        };
        assert_eq!(reach("$.a[0].b"), Some(whole("$.a[0].b", 3)));
        assert_eq!(reach("$.a[-1].c"), Some(whole("$.a[-1].c", 3)));
        assert_eq!(reach("$.m[*]"), Some(whole("$.m[*]", 2)));
        assert_eq!(
            reach("$.a[0].c"),
            Some(Reach {
                found: "$.a[0]".to_owned(),
                missing: Some("c".to_owned()),
                keys: vec!["b".to_owned()],
                steps: 2,
                ..Reach::default()
            })
        );
        for (path, found, steps) in [
            ("$.e[*].x", "$.e", 1),
            ("$.a[5]", "$.a", 1),
            ("$.a[-3]", "$.a", 1),
        ] {
            let stop = Reach {
                found: found.to_owned(),
                steps,
                empty_list: true,
                ..Reach::default()
            };
            assert_eq!(reach(path), Some(stop), "{path}");
        }
        assert_eq!(reach("$.a[?@.b > 1]"), None);
    }

    #[test]
    fn parse_errors_fold_to_one_line_with_the_column() {
        let err = Selector::parse("$.a[").unwrap_err();
        assert_eq!(err.message, "at column 5: expected selector");
        assert_eq!(err.kind, crate::evidence::error::ErrorKind::Syntax);
        let drawn = " --> 1:9\n  |\n1 | $.a.'b\n  |         ^---\n  |\n  = expected string";
        assert_eq!(one_line(drawn), "at column 9: expected string");
        assert_eq!(one_line("bad\n  = expected name"), "expected name");
        assert_eq!(one_line("  no parse \nmore"), "no parse");
    }

    #[test]
    fn bad_selector_is_an_error() {
        assert!(Selector::parse("$.a[").is_err());
        assert!(Selector::parse("a.b").is_err());
    }
}
