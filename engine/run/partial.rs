//! The partial result a shard writes (`caldera run --shard K/N`) and `caldera merge`
//! reads: the per-repo records and units of one shard's repos, and what every shard
//! records alike so the merge can check they belong together (the suite's and the
//! inputs' fingerprints, the full id list, N).
//!
//! Documents are written faithfully, not as results show them: a record's private
//! `_fields` are kept (an aggregate computed at merge may read them), and numbers that
//! JSON cannot hold (NaN, infinities) are kept too. Objects that need it are wrapped in
//! a one-key object whose key starts with a NUL character; a document's own keys that
//! start with one are wrapped as well, so reading back is never ambiguous.
//!
//! The document carries a SHA-256 digest of its body: a partial edited after it was
//! written is refused.

use std::path::Path;
use std::sync::Arc;

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::doc::Doc;
use crate::run::result::{InputSummary, Problem};
use crate::verdict::heuristic::HeuristicOutcome;
use crate::verdict::types::AssertionFailure;

/// The `format` of a partial result.
pub const PARTIAL_FORMAT: &str = "caldera-partial/1";

/// Wraps a record (an object whose `_fields` are private).
const RECORD: &str = "\u{0}record";
/// Wraps an object one of whose own keys starts with NUL.
const OBJECT: &str = "\u{0}object";
/// Wraps a number JSON cannot hold, as text (`NaN`, `inf`, `-inf`).
const FLOAT: &str = "\u{0}float";

/// One shard's share of a run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Partial {
    /// The caldera version that wrote it.
    pub caldera: String,
    /// The suite's name.
    pub suite: String,
    /// The suite folder, as the shard was given it.
    pub suite_path: String,
    /// SHA-256 of the engine version, suite.yaml, every judge file and prompt.
    pub suite_fingerprint: String,
    /// SHA-256 of the inputs layout: every repo id in run order, the folders, the named
    /// inputs.
    pub inputs_fingerprint: String,
    /// K of K/N (1-based).
    pub shard: u32,
    /// N of K/N.
    pub shards: u32,
    /// The shard's run id.
    pub run_id: String,
    /// `--results`, `--ground-truth` and `--input` as the shard was given them, so a
    /// merge that runs deferred whole judges reads the same inputs.
    pub overrides: PartialOverrides,
    /// Every repo id, in the order of a single run.
    pub repos: Vec<String>,
    /// The ids of this shard's repos, in run order.
    pub shard_repos: Vec<String>,
    /// Whole judges and evidence left to the merge (`--defer-whole`).
    pub deferred: Vec<String>,
    /// What a single run reads, as a single run reports it.
    pub input_summary: InputSummary,
    /// The single run's input problems (repos on one side only, skipped files).
    pub input_problems: Vec<Problem>,
    /// The single run's data check (shard 1 only; the others leave it empty).
    pub data_problems: Vec<Problem>,
    /// The suite's named inputs.
    pub named: IndexMap<String, Value>,
    /// Per-repo suite evidence: name -> repo id -> that repo's records.
    pub records: IndexMap<String, IndexMap<String, Vec<Value>>>,
    /// Per-repo judges: dimension -> one unit per repo of the shard, in run order.
    pub units: IndexMap<String, Vec<PartialUnit>>,
}

/// Folder and file overrides of the command line, as written.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct PartialOverrides {
    /// `--results`.
    pub results: Option<String>,
    /// `--ground-truth`.
    pub ground_truth: Option<String>,
    /// `--input NAME=FILE` (`None`: `NAME=`).
    pub inputs: IndexMap<String, Option<String>>,
}

/// One repo's unit of a per-repo judge: all its verdict is made of.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PartialUnit {
    /// The repo id.
    pub repo: String,
    /// The evidence (faithful), or why it could not be computed.
    pub evidence: Result<Value, String>,
    /// Failed assertions.
    pub failures: Vec<AssertionFailure>,
    /// Whether the assertions ran.
    pub assertions_ran: bool,
    /// The heuristic's outcome.
    pub heuristic: HeuristicOutcome,
}

/// The text of a partial result: `format`, `digest` and `body`.
pub fn to_text(partial: &Partial) -> Result<String, String> {
    let body = serde_json::to_value(partial).map_err(|e| e.to_string())?;
    let digest = digest(&body);
    let doc = serde_json::json!({ "format": PARTIAL_FORMAT, "digest": digest, "body": body });
    serde_json::to_string(&doc).map_err(|e| e.to_string())
}

/// Reads a partial result, refusing another format or a body that does not match its
/// digest. The error names the file.
pub fn read(path: &Path) -> Result<Partial, String> {
    let shown = crate::diag::display_path(path);
    let text = std::fs::read_to_string(path).map_err(|e| format!("{shown}: cannot read: {e}"))?;
    let doc: Value = serde_json::from_str(&text)
        .map_err(|e| format!("{shown}: not a partial result (not JSON: {e})"))?;
    let format = doc.get("format").and_then(Value::as_str);
    if format != Some(PARTIAL_FORMAT) {
        return Err(format!(
            "{shown}: not a partial result: `format` is {}, expected `{PARTIAL_FORMAT}` (written by `caldera run --shard K/N`)",
            format.map_or("missing".to_owned(), |f| format!("`{f}`"))
        ));
    }
    let body = doc.get("body").cloned().unwrap_or(Value::Null);
    let written = doc.get("digest").and_then(Value::as_str).unwrap_or("");
    if written != digest(&body) {
        return Err(format!(
            "{shown}: the partial result was changed after it was written (its digest does not match its body); run the shard again"
        ));
    }
    serde_json::from_value(body).map_err(|e| format!("{shown}: malformed partial result: {e}"))
}

/// SHA-256 of a JSON value as serde_json writes it, in hex.
fn digest(body: &Value) -> String {
    hex(&Sha256::digest(
        serde_json::to_string(body).unwrap_or_default().as_bytes(),
    ))
}

/// Lower-case hex of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Which shard of `n` repo `id` belongs to (1-based): the first 8 bytes of the SHA-256
/// of its id, big-endian, modulo `n`. Fixed, so every machine and version agrees.
pub fn shard_of(id: &str, n: u32) -> u32 {
    let hash = Sha256::digest(id.as_bytes());
    let mut first = [0u8; 8];
    first.copy_from_slice(&hash[..8]);
    (u64::from_be_bytes(first) % u64::from(n.max(1))) as u32 + 1
}

/// `doc` as JSON, keeping private record fields and non-finite numbers.
pub fn encode(doc: &Doc) -> Value {
    match doc {
        Doc::Null => Value::Null,
        Doc::Bool(b) => Value::Bool(*b),
        Doc::Int(i) => Value::from(*i),
        Doc::Float(x) => match serde_json::Number::from_f64(*x) {
            Some(n) => Value::Number(n),
            None => wrap(FLOAT, Value::String(x.to_string())),
        },
        Doc::Str(s) => Value::String(s.to_string()),
        Doc::Array(items) => Value::Array(items.iter().map(encode).collect()),
        Doc::Object(map) => {
            let members: serde_json::Map<String, Value> = map
                .iter()
                .map(|(k, v)| (k.to_string(), encode(v)))
                .collect();
            if map.1 {
                wrap(RECORD, Value::Object(members))
            } else if map.keys().any(|k| k.starts_with('\u{0}')) {
                wrap(OBJECT, Value::Object(members))
            } else {
                Value::Object(members)
            }
        }
    }
}

fn wrap(tag: &str, inner: Value) -> Value {
    let mut m = serde_json::Map::new();
    m.insert(tag.to_owned(), inner);
    Value::Object(m)
}

/// The document [`encode`] wrote.
pub fn decode(value: &Value) -> Doc {
    match value {
        Value::Object(m) if m.len() == 1 => match m.iter().next() {
            Some((k, Value::Object(inner))) if k == RECORD => Doc::record(
                inner
                    .iter()
                    .map(|(k, v)| (Arc::<str>::from(k.as_str()), decode(v))),
            ),
            Some((k, Value::Object(inner))) if k == OBJECT => object(inner),
            Some((k, Value::String(x))) if k == FLOAT => {
                Doc::Float(x.parse::<f64>().unwrap_or(f64::NAN))
            }
            _ => object(m),
        },
        Value::Object(m) => object(m),
        Value::Array(items) => Doc::from(items.iter().map(decode).collect::<Vec<_>>()),
        other => Doc::from_json(other),
    }
}

fn object(m: &serde_json::Map<String, Value>) -> Doc {
    Doc::object(m.iter().map(|(k, v)| (k.as_str(), decode(v))))
}

/// Whether an object's private flag survives: used by tests.
pub fn is_record(doc: &Doc) -> bool {
    matches!(doc, Doc::Object(o) if o.1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encode_keeps_private_fields_odd_keys_and_non_finite_numbers() {
        let rec = Doc::record([
            (Arc::<str>::from("a"), Doc::Int(1)),
            (Arc::<str>::from("_b"), Doc::Float(f64::NAN)),
        ]);
        let odd = Doc::object([("\u{0}record", Doc::Float(f64::INFINITY))]);
        let doc = Doc::from(vec![rec, odd, Doc::Float(2.0)]);
        let back = decode(&encode(&doc));
        let Doc::Array(items) = &back else {
            panic!("not a list")
        };
        assert!(is_record(&items[0]));
        assert!(matches!(items[0].field("_b"), Some(Doc::Float(x)) if x.is_nan()));
        assert!(!is_record(&items[1]));
        assert!(matches!(items[1].field("\u{0}record"), Some(Doc::Float(x)) if x.is_infinite()));
        assert!(matches!(items[2], Doc::Float(x) if x == 2.0));
    }

    #[test]
    fn shard_of_is_fixed_and_within_range() {
        // Pinned: a change of algorithm would split old shards differently.
        let n = 7;
        let got: Vec<u32> = ["a", "b", "critical-cves"]
            .iter()
            .map(|id| shard_of(id, n))
            .collect();
        assert!(got.iter().all(|k| (1..=n).contains(k)));
        assert_eq!(shard_of("a", 1), 1);
        assert_eq!(got, PINNED.to_vec());
    }

    /// `shard_of` of "a", "b", "critical-cves" with N = 7.
    const PINNED: [u32; 3] = [5, 1, 2];
}
