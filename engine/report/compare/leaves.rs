//! Evidence leaves that changed between two runs, with their key paths.
//!
//! Both sides are walked together. Objects are compared key by key; lists are matched by
//! identity where they have one (a list of distinct strings by value, a list of records
//! by a field whose values are distinct on both sides: the first of the suite's
//! `identity_keys`, such as `repo` or, in the trivy suite, `cve_id`), so an inserted item
//! reads as one addition rather than every later item changing; otherwise by position.
//! Which fields identify a record is the suite's to say, not this module's. Paths are JSONPath (`$.evidence.cve_matching[?@.cve=='CVE-1'].status`).
//! The walk is bounded in depth and nodes so a hostile document cannot exhaust memory.
//! Changes are ordered most significant first: shallow paths (the headline metrics)
//! before deep ones, larger relative numeric moves before smaller.

use std::collections::{HashMap, HashSet};

use serde::Serialize;
use serde_json::Value;

/// Nodes visited per dimension; beyond, the comparison says it stopped.
pub(crate) const MAX_NODES: usize = 200_000;

/// Nesting followed; deeper values count as one leaf.
pub(crate) const MAX_DEPTH: usize = 64;

/// Changes shown per dimension (the count of all of them is kept).
pub(crate) const SHOWN: usize = 12;

/// The fields that identify a record, most preferred first, for a suite that names none
/// (`identity_keys` in suite.yaml): names any tool's records may carry.
pub(crate) const DEFAULT_IDENTITY_KEYS: [&str; 6] = ["id", "repo", "name", "key", "path", "file"];

/// How a leaf changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LeafKind {
    /// The value differs.
    Changed,
    /// Only the new run has it.
    Added,
    /// Only the base run has it.
    Removed,
}

/// One leaf that differs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LeafChange {
    /// Its key path.
    pub path: String,
    /// How it changed.
    pub kind: LeafKind,
    /// The base value.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub before: Option<Value>,
    /// The new value.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub after: Option<Value>,
}

impl LeafChange {
    /// `path: before -> after`, values shortened.
    pub fn line(&self) -> String {
        match self.kind {
            LeafKind::Changed => format!(
                "{}: {} -> {}",
                self.path,
                short(self.before.as_ref()),
                short(self.after.as_ref())
            ),
            LeafKind::Added => format!("{}: added {}", self.path, short(self.after.as_ref())),
            LeafKind::Removed => {
                format!(
                    "{}: removed (was {})",
                    self.path,
                    short(self.before.as_ref())
                )
            }
        }
    }
}

/// A value in at most 60 characters.
pub(crate) fn short(v: Option<&Value>) -> String {
    let text = v.map_or_else(|| "-".to_owned(), Value::to_string);
    if text.chars().count() > 60 {
        let cut: String = text.chars().take(57).collect();
        format!("{cut}...")
    } else {
        text
    }
}

/// The changed leaves of one dimension, most significant first, at most [`SHOWN`].
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct EvidenceDelta {
    /// The most significant changes.
    pub changes: Vec<LeafChange>,
    /// How many leaves changed in all.
    pub total: usize,
    /// Set when the documents had more than [`MAX_NODES`] nodes and the rest was not
    /// compared.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub truncated: bool,
}

/// Compares two values leaf by leaf under `root` (a path such as `$.evidence`); records
/// of a list are matched by the first of `keys` that tells them apart. Equal values are
/// known equal from one comparison, without a walk that names every key path: most
/// evidence is the same from one run to the next (`caldera history` compares hundreds of
/// pairs), and a large equal document is then compared whole rather than cut at
/// [`MAX_NODES`].
pub(crate) fn diff(root: &str, before: &Value, after: &Value, keys: &[String]) -> EvidenceDelta {
    if before == after {
        return EvidenceDelta::default();
    }
    let mut walk = Walk {
        keys,
        changes: Vec::new(),
        nodes: 0,
        truncated: false,
    };
    walk.values(root, Some(before), Some(after), 0);
    let total = walk.changes.len();
    let mut changes = walk.changes;
    rank(&mut changes);
    EvidenceDelta {
        changes,
        total,
        truncated: walk.truncated,
    }
}

struct Walk<'k> {
    /// The fields that identify a record, most preferred first.
    keys: &'k [String],
    changes: Vec<LeafChange>,
    nodes: usize,
    truncated: bool,
}

impl Walk<'_> {
    fn values(&mut self, path: &str, a: Option<&Value>, b: Option<&Value>, depth: usize) {
        self.nodes += 1;
        if self.nodes > MAX_NODES {
            self.truncated = true;
            return;
        }
        match (a, b) {
            (Some(Value::Object(x)), Some(Value::Object(y))) if depth < MAX_DEPTH => {
                for (k, v) in x {
                    self.values(&key_path(path, k), Some(v), y.get(k), depth + 1);
                }
                for (k, v) in y.iter().filter(|(k, _)| !x.contains_key(*k)) {
                    self.values(&key_path(path, k), None, Some(v), depth + 1);
                }
            }
            (Some(Value::Array(x)), Some(Value::Array(y))) if depth < MAX_DEPTH => {
                self.lists(path, x, y, depth);
            }
            (a, b) if a == b => {}
            (a, b) => self.changes.push(LeafChange {
                path: path.to_owned(),
                kind: match (a, b) {
                    (Some(_), Some(_)) => LeafKind::Changed,
                    (None, _) => LeafKind::Added,
                    (_, None) => LeafKind::Removed,
                },
                before: a.cloned(),
                after: b.cloned(),
            }),
        }
    }

    fn lists(&mut self, path: &str, x: &[Value], y: &[Value], depth: usize) {
        if let Some(ids) = identity(x, y, self.keys) {
            let (ix, iy) = (ids.of(x), ids.of(y));
            let at_y: HashMap<String, usize> = iy
                .iter()
                .enumerate()
                .map(|(j, id)| (id.to_string(), j))
                .collect();
            let in_x: HashSet<String> = ix.iter().map(Value::to_string).collect();
            for (item, id) in x.iter().zip(&ix) {
                let other = at_y.get(&id.to_string()).map(|j| &y[*j]);
                self.values(&ids.path(path, id), Some(item), other, depth + 1);
            }
            for (item, id) in y.iter().zip(&iy) {
                if !in_x.contains(&id.to_string()) {
                    self.values(&ids.path(path, id), None, Some(item), depth + 1);
                }
            }
            return;
        }
        for i in 0..x.len().max(y.len()) {
            self.values(&format!("{path}[{i}]"), x.get(i), y.get(i), depth + 1);
        }
    }
}

/// How the items of a list are told apart.
enum Identity {
    /// Distinct scalars: an item is its value.
    Value,
    /// Records with a field of distinct scalar values.
    Field(String),
}

impl Identity {
    fn of(&self, items: &[Value]) -> Vec<Value> {
        items
            .iter()
            .map(|v| match self {
                Identity::Value => v.clone(),
                Identity::Field(k) => v.get(k).cloned().unwrap_or(Value::Null),
            })
            .collect()
    }

    fn path(&self, path: &str, id: &Value) -> String {
        let lit = literal(id);
        match self {
            Identity::Value => format!("{path}[?@=={lit}]"),
            Identity::Field(k) => format!("{}=={lit}]", key_path(&format!("{path}[?@"), k)),
        }
    }
}

/// The identity of a list pair: by value when every item on both sides is a distinct
/// string; else by the first field that every item on both sides has as a distinct
/// scalar, trying `keys` first and then the first record's other fields in order; else
/// none (compared by position).
fn identity(x: &[Value], y: &[Value], keys: &[String]) -> Option<Identity> {
    if x.is_empty() || y.is_empty() {
        return None;
    }
    let scalar = |v: &Value| matches!(v, Value::String(_) | Value::Number(_) | Value::Bool(_));
    let distinct = |vals: &[&Value]| {
        let mut seen = HashSet::with_capacity(vals.len());
        vals.iter().all(|v| seen.insert(v.to_string()))
    };
    // Strings are names (CVE ids, packages, repos): a list of distinct ones is a set.
    // Numbers keep their positions (a list of them is usually a vector).
    if x.iter().chain(y).all(Value::is_string) {
        let (vx, vy): (Vec<&Value>, Vec<&Value>) = (x.iter().collect(), y.iter().collect());
        return (distinct(&vx) && distinct(&vy)).then_some(Identity::Value);
    }
    let first = x.first()?.as_object()?;
    let others = first.keys().filter(|k| !keys.contains(k));
    keys.iter()
        .chain(others)
        .find(|k| {
            let fx: Option<Vec<&Value>> = x
                .iter()
                .map(|v| v.get(k.as_str()).filter(|f| scalar(f)))
                .collect();
            let fy: Option<Vec<&Value>> = y
                .iter()
                .map(|v| v.get(k.as_str()).filter(|f| scalar(f)))
                .collect();
            matches!((fx, fy), (Some(fx), Some(fy)) if distinct(&fx) && distinct(&fy))
        })
        .map(|k| Identity::Field(k.clone()))
}

/// A JSONPath literal: strings in single quotes, other scalars as JSON.
fn literal(v: &Value) -> String {
    match v {
        Value::String(s) => format!("'{}'", s.replace('\\', "\\\\").replace('\'', "\\'")),
        other => other.to_string(),
    }
}

/// Orders changes most significant first and keeps [`SHOWN`] (a stable sort: equal
/// significance keeps document order).
pub(crate) fn rank(changes: &mut Vec<LeafChange>) {
    changes.sort_by(|x, y| significance(x).total_cmp(&significance(y)).reverse());
    changes.truncate(SHOWN);
}

/// Higher is more significant: shallow paths first, then larger relative numeric moves.
fn significance(c: &LeafChange) -> f64 {
    let depth = c.path.matches(['.', '[']).count() as f64;
    let moved = match (
        c.before.as_ref().and_then(Value::as_f64),
        c.after.as_ref().and_then(Value::as_f64),
    ) {
        (Some(a), Some(b)) => 0.3 + 0.6 * ((b - a).abs() / a.abs().max(b.abs()).max(1e-9)).min(1.0),
        _ if c.kind == LeafKind::Changed => 0.3,
        _ => 0.2,
    };
    -depth + moved
}

/// `path.key`, or `path['key']` when the key is not a plain name.
pub(crate) fn key_path(path: &str, key: &str) -> String {
    let plain = !key.is_empty()
        && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !key.starts_with(|c: char| c.is_ascii_digit());
    if plain {
        format!("{path}.{key}")
    } else {
        format!(
            "{path}['{}']",
            key.replace('\\', "\\\\").replace('\'', "\\'")
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn defaults() -> Vec<String> {
        DEFAULT_IDENTITY_KEYS.map(str::to_owned).to_vec()
    }

    fn keys(names: &[&str]) -> Vec<String> {
        names.iter().map(|k| (*k).to_owned()).collect()
    }

    /// Records whose `severity` happens to be distinct on both sides and whose `cve_id`
    /// is: by the defaults, which name no CVE field, the first record's first distinct
    /// field (`severity`) identifies them; a suite that names `cve_id` gets them matched
    /// by CVE, so a changed severity is one change, not a removal and an addition.
    #[test]
    fn the_suite_names_the_fields_that_identify_a_record() {
        let a = json!({"found": [
            {"severity": "HIGH", "cve_id": "CVE-1"},
            {"severity": "LOW", "cve_id": "CVE-2"}]});
        let b = json!({"found": [
            {"severity": "CRITICAL", "cve_id": "CVE-1"},
            {"severity": "LOW", "cve_id": "CVE-2"}]});
        let lines = |keys: &[String]| -> Vec<String> {
            diff("$.evidence", &a, &b, keys)
                .changes
                .iter()
                .map(LeafChange::line)
                .collect()
        };
        assert_eq!(
            lines(&defaults()),
            [
                "$.evidence.found[?@.severity=='HIGH']: removed (was {\"severity\":\"HIGH\",\"cve_id\":\"CVE-1\"})",
                "$.evidence.found[?@.severity=='CRITICAL']: added {\"severity\":\"CRITICAL\",\"cve_id\":\"CVE-1\"}",
            ]
        );
        assert_eq!(
            lines(&keys(&["cve_id"])),
            ["$.evidence.found[?@.cve_id=='CVE-1'].severity: \"HIGH\" -> \"CRITICAL\""]
        );
        // No key at all: the first distinct field still beats positions.
        assert_eq!(lines(&[]), lines(&defaults()));
    }

    #[test]
    fn changed_added_and_removed_leaves_have_paths() {
        let a = json!({"rate": 50, "rows": [[1], [2]], "gone": true,
            "per_repo": [{"repo": "a", "missed": ["x"]}, {"repo": "c", "missed": []}]});
        let b = json!({"rate": 80, "rows": [[1], [3]], "odd key": 1,
            "per_repo": [{"repo": "b", "missed": []}, {"repo": "a", "missed": ["x", "y"]}, {"repo": "c", "missed": []}]});
        let d = diff("$.evidence", &a, &b, &defaults());
        let lines: Vec<String> = d.changes.iter().map(LeafChange::line).collect();
        assert_eq!(d.total, 6, "{lines:#?}");
        assert_eq!(
            lines[0], "$.evidence.rate: 50 -> 80",
            "headline metric first"
        );
        for want in [
            "$.evidence['odd key']: added 1",
            "$.evidence.gone: removed (was true)",
            "$.evidence.rows[1][0]: 2 -> 3",
            // Records are matched by `repo`, strings by value: one insertion each.
            "$.evidence.per_repo[?@.repo=='b']: added {\"repo\":\"b\",\"missed\":[]}",
            "$.evidence.per_repo[?@.repo=='a'].missed[?@=='y']: added \"y\"",
        ] {
            assert!(lines.contains(&want.to_owned()), "{want} not in {lines:#?}");
        }
    }

    #[test]
    fn equal_documents_past_the_node_bound_are_compared_whole() {
        let wide = Value::Array((0..MAX_NODES + 10).map(|i| json!([i])).collect());
        let d = diff("$", &wide, &wide.clone(), &[]);
        assert_eq!(d, EvidenceDelta::default());
    }

    #[test]
    fn deep_and_wide_documents_are_bounded() {
        let (mut deep, mut other) = (json!(1), json!(2));
        for _ in 0..100 {
            deep = json!([deep]);
            other = json!([other]);
        }
        let d = diff("$", &deep, &other, &defaults());
        assert_eq!(d.total, 1);
        assert_eq!(d.changes[0].path.matches("[0]").count(), MAX_DEPTH);
        let wide = Value::Array((0..MAX_NODES + 10).map(|i| json!([i])).collect());
        let d = diff("$", &wide, &json!([[-1]]), &defaults());
        assert!(d.truncated);
        assert_eq!(d.changes.len(), SHOWN);
    }
}
