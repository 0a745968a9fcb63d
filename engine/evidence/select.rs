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
    pub fn parse(source: &str) -> Result<Selector, String> {
        let query =
            jsonpath_rust::parser::parse_json_path(source).map_err(|e| one_line(&e.to_string()))?;
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
    pub fn select(&self, root: &Doc) -> Result<Doc, String> {
        let hits = self.matches(root)?;
        if self.singular {
            Ok(hits.into_iter().next().unwrap_or(Doc::Null))
        } else {
            Ok(Doc::from(hits))
        }
    }

    /// All matched values, in document order.
    pub fn matches(&self, root: &Doc) -> Result<Vec<Doc>, String> {
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
        let refs = js_path_process(&self.query, root).map_err(|e| e.to_string())?;
        Ok(refs.into_iter().map(|r| r.val().clone()).collect())
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

    #[test]
    fn bad_selector_is_an_error() {
        assert!(Selector::parse("$.a[").is_err());
        assert!(Selector::parse("a.b").is_err());
    }
}
