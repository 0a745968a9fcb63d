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
use crate::evidence::eval::Context;
use crate::llm::batch::BatchReport;
use crate::llm::executor::JobOutcome;
use crate::run::result::{Concurrency, InputSummary, Problem};
use crate::verdict::combine::Unit;
use crate::verdict::heuristic::HeuristicOutcome;
use crate::verdict::types::AssertionFailure;

/// The `format` of a partial result.
pub(crate) const PARTIAL_FORMAT: &str = "caldera-partial/2";

/// Wraps a record (an object whose `_fields` are private).
const RECORD: &str = "\u{0}record";
/// Wraps an object one of whose own keys starts with NUL.
const OBJECT: &str = "\u{0}object";
/// Wraps a number JSON cannot hold, as text (`NaN`, `inf`, `-inf`).
const FLOAT: &str = "\u{0}float";

/// One shard's share of a run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Partial {
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
    pub named: IndexMap<String, Faithful>,
    /// Per-repo suite evidence: name -> repo id -> that repo's records.
    pub records: IndexMap<String, IndexMap<String, Vec<Faithful>>>,
    /// Per-repo judges: dimension -> one unit per repo of the shard, in run order.
    pub units: IndexMap<String, Vec<PartialUnit>>,
    /// LLM mode: the settings and the outcome of every per-repo call of the shard
    /// (`None`: heuristic scoring).
    pub llm: Option<PartialLlm>,
}

/// How a shard was scored in LLM mode, and the outcomes of its per-repo calls.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct PartialLlm {
    /// The provider that answered; `None` when no judge of the suite asks a model.
    pub provider: Option<String>,
    /// The models asked (one, or a panel), as resolved for the suite.
    pub models: Vec<String>,
    /// `--repeat`.
    pub repeat: u32,
    /// `--settle`.
    pub settle: Option<u32>,
    /// Every per-repo call of the shard with its outcome, in call order.
    pub outcomes: Vec<JobOutcome>,
    /// USD the shard's budget counted (`--max-cost`; 0 without one).
    pub spent: f64,
    /// What the shard's concurrency limit did.
    pub concurrency: Concurrency,
    /// The shard's batches (`--batch`).
    pub batch: Option<BatchReport>,
}

/// Folder and file overrides of the command line, as written.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub(crate) struct PartialOverrides {
    /// `--results`.
    pub results: Option<String>,
    /// `--ground-truth`.
    pub ground_truth: Option<String>,
    /// `--input NAME=FILE` (`None`: `NAME=`).
    pub inputs: IndexMap<String, Option<String>>,
}

/// One repo's unit of a per-repo judge: all its verdict is made of.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct PartialUnit {
    /// The repo id.
    pub repo: String,
    /// The evidence (faithful), or why it could not be computed.
    pub evidence: Result<IndexMap<String, Faithful>, crate::evidence::error::EvalError>,
    /// Failed assertions.
    pub failures: Vec<AssertionFailure>,
    /// Whether the assertions ran.
    pub assertions_ran: bool,
    /// The heuristic's outcome.
    pub heuristic: HeuristicOutcome,
}

impl Partial {
    /// Drops the private evidence (`_name`) of the per-repo units scored so far, for a
    /// heuristic run: their verdicts are made, and neither the result nor the merge
    /// reads it again, so a working value (every finding of a repo, say) does not stay
    /// in memory, or in a partial, for every repo until the run ends. (A shard of an LLM
    /// run keeps it: a prompt may read a private name.)
    pub(crate) fn drop_private_evidence(&mut self) {
        for unit in self.units.values_mut().flatten() {
            if let Ok(evidence) = &mut unit.evidence {
                evidence.retain(|name, _| !crate::evidence::eval::is_private(name));
            }
        }
    }
}

impl PartialUnit {
    /// The unit again, as the merge scores it (its evidence kept, without the context
    /// it was computed in).
    pub(crate) fn to_unit(&self) -> Unit {
        Unit {
            repo: Some(self.repo.clone()),
            ctx: Context {
                names: IndexMap::new(),
            },
            evidence: self
                .evidence
                .as_ref()
                .map(|ev| ev.iter().map(|(k, v)| (k.clone(), v.0.clone())).collect())
                .map_err(Clone::clone),
            failures: self.failures.clone(),
            assertions_ran: self.assertions_ran,
            heuristic: self.heuristic.clone(),
        }
    }
}

/// The text of a partial result: `format`, `digest` and `body`, in that order, the
/// digest taken over the body's bytes as written.
pub(crate) fn to_text(partial: &Partial) -> Result<String, String> {
    let body = serde_json::to_string(partial).map_err(|e| e.to_string())?;
    let digest = hex(&Sha256::digest(body.as_bytes()));
    Ok(format!("{HEAD}{digest}\",\"body\":{body}}}"))
}

/// How every partial result starts, up to its digest.
const HEAD: &str = "{\"format\":\"caldera-partial/2\",\"digest\":\"";

/// Reads a partial result, refusing another format or a body that does not match its
/// digest (a partial changed after it was written, even only reformatted). The error
/// names the file. The body is read straight into documents, never as a JSON tree.
pub(crate) fn read(path: &Path) -> Result<Partial, String> {
    let shown = crate::diag::display_path(path);
    let text = std::fs::read_to_string(path).map_err(|e| format!("{shown}: cannot read: {e}"))?;
    let Some(rest) = text.trim_end().strip_prefix(HEAD) else {
        return Err(not_partial(&shown, &text));
    };
    let (digest, body) = match (rest.get(..64), rest.get(64..)) {
        (Some(d), Some(b)) => (d, b),
        _ => return Err(not_partial(&shown, &text)),
    };
    let body = body
        .strip_prefix("\",\"body\":")
        .and_then(|b| b.strip_suffix('}'))
        .ok_or_else(|| changed(&shown))?;
    if hex(&Sha256::digest(body.as_bytes())) != digest {
        return Err(changed(&shown));
    }
    serde_json::from_str(body).map_err(|e| format!("{shown}: malformed partial result: {e}"))
}

fn changed(shown: &str) -> String {
    format!(
        "{shown}: the partial result was changed after it was written (its digest does not match its body); run the shard again"
    )
}

/// Why a file is not a partial result: its `format`, when it has one.
fn not_partial(shown: &str, text: &str) -> String {
    let format = serde_json::from_str::<Value>(text)
        .ok()
        .and_then(|v| v.get("format").and_then(Value::as_str).map(str::to_owned));
    if format.as_deref() == Some("caldera-partial/1") {
        return format!(
            "{shown}: a partial result of an older format (`caldera-partial/1`, before shards recorded their LLM calls), expected `{PARTIAL_FORMAT}`: run the shard again with this caldera"
        );
    }
    format!(
        "{shown}: not a partial result: `format` is {}, expected `{PARTIAL_FORMAT}` (written by `caldera run --shard K/N`)",
        format.map_or("missing".to_owned(), |f| format!("`{f}`"))
    )
}

/// Lower-case hex of `bytes`.
pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Which shard of `n` repo `id` belongs to (1-based): the first 8 bytes of the SHA-256
/// of its id, big-endian, modulo `n`. Fixed, so every machine and version agrees.
pub(crate) fn shard_of(id: &str, n: u32) -> u32 {
    let hash = Sha256::digest(id.as_bytes());
    let mut first = [0u8; 8];
    first.copy_from_slice(&hash[..8]);
    (u64::from_be_bytes(first) % u64::from(n.max(1))) as u32 + 1
}

/// A document written faithfully: private record fields and non-finite numbers kept
/// (see the module's doc). Written and read without a JSON tree in between.
#[derive(Debug, Clone)]
pub(crate) struct Faithful(pub Doc);

impl Serialize for Faithful {
    fn serialize<S: serde::Serializer>(&self, ser: S) -> Result<S::Ok, S::Error> {
        use serde::ser::{SerializeMap, SerializeSeq};
        match &self.0 {
            Doc::Float(x) if !x.is_finite() => {
                let mut m = ser.serialize_map(Some(1))?;
                m.serialize_entry(FLOAT, &x.to_string())?;
                m.end()
            }
            Doc::Array(items) => {
                let mut seq = ser.serialize_seq(Some(items.len()))?;
                for item in items.iter() {
                    seq.serialize_element(&Faithful(item.clone()))?;
                }
                seq.end()
            }
            Doc::Object(map) => {
                let tag = if map.1 {
                    Some(RECORD)
                } else if map.keys().any(|k| k.starts_with('\u{0}')) {
                    Some(OBJECT)
                } else {
                    None
                };
                let members = Members(&self.0);
                match tag {
                    Some(tag) => {
                        let mut m = ser.serialize_map(Some(1))?;
                        m.serialize_entry(tag, &members)?;
                        m.end()
                    }
                    None => members.serialize(ser),
                }
            }
            other => other.serialize(ser),
        }
    }
}

/// Every member of an object, private ones included.
struct Members<'a>(&'a Doc);

impl Serialize for Members<'_> {
    fn serialize<S: serde::Serializer>(&self, ser: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let Doc::Object(map) = self.0 else {
            return ser.serialize_unit();
        };
        let mut m = ser.serialize_map(Some(map.len()))?;
        for (k, v) in map.iter() {
            m.serialize_entry(&**k, &Faithful(v.clone()))?;
        }
        m.end()
    }
}

impl<'de> Deserialize<'de> for Faithful {
    fn deserialize<D: serde::Deserializer<'de>>(de: D) -> Result<Faithful, D::Error> {
        let doc = Doc::deserialize(de)?;
        Ok(Faithful(decode(&doc).unwrap_or(doc)))
    }
}

/// The document [`Faithful`] wrote, from its wrapped form; `None` when nothing in it
/// was wrapped (the same document is kept, not copied).
fn decode(doc: &Doc) -> Option<Doc> {
    match doc {
        Doc::Array(items) => {
            let changed: Vec<Option<Doc>> = items.iter().map(decode).collect();
            changed.iter().any(Option::is_some).then(|| {
                Doc::from(
                    changed
                        .into_iter()
                        .zip(items.iter())
                        .map(|(c, d)| c.unwrap_or_else(|| d.clone()))
                        .collect::<Vec<_>>(),
                )
            })
        }
        Doc::Object(map) if map.len() == 1 => {
            let (k, v) = map.iter().next()?;
            match (&**k, v) {
                (RECORD, Doc::Object(inner)) => Some(Doc::record(inner.iter().map(|(k, v)| {
                    (
                        Arc::<str>::from(&**k),
                        decode(v).unwrap_or_else(|| v.clone()),
                    )
                }))),
                (OBJECT, Doc::Object(_)) => Some(plain(v)),
                (FLOAT, Doc::Str(x)) => Some(Doc::Float(x.parse::<f64>().unwrap_or(f64::NAN))),
                _ => decode(v).map(|inner| Doc::object([(&**k, inner)])),
            }
        }
        Doc::Object(map) => {
            let changed: Vec<Option<Doc>> = map.values().map(decode).collect();
            changed
                .iter()
                .any(Option::is_some)
                .then(|| plain_with(doc, changed))
        }
        _ => None,
    }
}

/// An object's members decoded, as a plain object.
fn plain(doc: &Doc) -> Doc {
    let Doc::Object(map) = doc else {
        return doc.clone();
    };
    let changed: Vec<Option<Doc>> = map.values().map(decode).collect();
    plain_with(doc, changed)
}

fn plain_with(doc: &Doc, changed: Vec<Option<Doc>>) -> Doc {
    let Doc::Object(map) = doc else {
        return doc.clone();
    };
    Doc::object(
        map.iter()
            .zip(changed)
            .map(|((k, v), c)| (&**k, c.unwrap_or_else(|| v.clone()))),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn is_record(doc: &Doc) -> bool {
        matches!(doc, Doc::Object(o) if o.1)
    }

    #[test]
    fn faithful_keeps_private_fields_odd_keys_and_non_finite_numbers() {
        let rec = Doc::record([
            (Arc::<str>::from("a"), Doc::Int(1)),
            (Arc::<str>::from("_b"), Doc::Float(f64::NAN)),
        ]);
        let odd = Doc::object([("\u{0}record", Doc::Float(f64::INFINITY))]);
        let doc = Doc::from(vec![rec, odd, Doc::Float(2.0)]);
        let text = serde_json::to_string(&Faithful(doc)).unwrap();
        let back: Faithful = serde_json::from_str(&text).unwrap();
        let Doc::Array(items) = &back.0 else {
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
