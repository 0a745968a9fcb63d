//! `Doc`: the one in-memory form of every JSON document a run reads.
//!
//! Why not `serde_json::Value`? A run joins results to ground truth (`repos`), hands the
//! same documents to JSONPath selectors and to minijinja expressions, and keeps evidence
//! records that point into them. With `serde_json::Value` each of those would be a deep
//! copy. `Doc` shares its arrays, maps and strings through `Arc`, so a clone is a pointer
//! copy, and it implements both `jsonpath_rust::Queryable` (selectors run on it
//! directly) and a lazy `minijinja` object view (expressions read it without converting
//! the whole tree).
//!
//! Size matters: a run keeps every document in memory, and a finding is a dozen members.
//! A `Doc` is 16 bytes (strings are thin pointers, [`Str`], with the length beside the
//! text), and objects with the same keys share one list of them (see [`DocMap`]), so a
//! finding's member costs 16 bytes, where `serde_json::Value` with an `IndexMap`
//! spends about 100.

use std::cell::RefCell;
use std::collections::HashSet;
use std::fmt;
use std::sync::Arc;

use minijinja::value::{Enumerator, Object, ObjectRepr, Value, ValueKind};
use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};

mod map;

pub use map::{DocMap, KeyCache, MapBuilder, Shapes};

/// A shared, immutable string: one pointer wide (the length lives in the allocation),
/// so `Doc` and object members stay small. Clones are a reference-count increment.
pub type Str = arcstr::ArcStr;

const _: () = assert!(std::mem::size_of::<Doc>() == 16, "Doc must stay 16 bytes");

/// A JSON value with shared, immutable containers.
#[derive(Clone, Debug, Default, PartialEq)]
pub enum Doc {
    /// JSON `null` (also what a missing value reads as).
    #[default]
    Null,
    /// `true` / `false`.
    Bool(bool),
    /// A number that fits an `i64`.
    Int(i64),
    /// Any other number.
    Float(f64),
    /// A string.
    Str(Str),
    /// An array.
    Array(Arc<DocSeq>),
    /// An object, keys in document order.
    Object(Arc<DocObj>),
}

impl Doc {
    /// Builds an object from key/value pairs (keys kept in the given order).
    pub fn object<K: Into<Str>>(pairs: impl IntoIterator<Item = (K, Doc)>) -> Doc {
        Doc::Object(Arc::new(DocObj(
            pairs.into_iter().map(|(k, v)| (k.into(), v)).collect(),
            false,
        )))
    }

    /// Builds a record of a record list: like [`Doc::object`], but fields named `_x` are
    /// private (readable by name, never listed or written).
    pub fn record<K: Into<Arc<str>>>(pairs: impl IntoIterator<Item = (K, Doc)>) -> Doc {
        let map: DocMap = pairs.into_iter().map(|(k, v)| (k.into(), v)).collect();
        let private = map.keys().any(|k| is_private_key(k));
        Doc::Object(Arc::new(DocObj(map, private)))
    }

    /// The member `key` of an object, `None` for anything else.
    pub fn field(&self, key: &str) -> Option<&Doc> {
        match self {
            Doc::Object(map) => map.get(key),
            _ => None,
        }
    }

    /// Follows a dotted path (`metadata.repo_id`); numeric segments index arrays.
    pub fn dotted(&self, path: &str) -> Option<&Doc> {
        path.split('.').try_fold(self, |cur, seg| match cur {
            Doc::Object(map) => map.get(seg),
            Doc::Array(items) => seg.parse::<usize>().ok().and_then(|i| items.get(i)),
            _ => None,
        })
    }

    /// An unsigned JSON number as a document holds it: an integer while it fits in
    /// `i64`, a float past that. (The parser and the id skim read numbers alike.)
    pub(crate) fn of_u64(v: u64) -> Doc {
        i64::try_from(v).map_or(Doc::Float(v as f64), Doc::Int)
    }

    /// The string, for `Str`.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Doc::Str(s) => Some(s),
            _ => None,
        }
    }

    /// Whether this is `null`.
    pub fn is_null(&self) -> bool {
        matches!(self, Doc::Null)
    }

    /// The name of the JSON type, for messages.
    pub fn type_name(&self) -> &'static str {
        match self {
            Doc::Null => "null",
            Doc::Bool(_) => "boolean",
            Doc::Int(_) | Doc::Float(_) => "number",
            Doc::Str(_) => "string",
            Doc::Array(_) => "array",
            Doc::Object(_) => "object",
        }
    }

    /// A value for minijinja: scalars convert, containers are wrapped lazily.
    pub fn to_value(&self) -> Value {
        match self {
            Doc::Null => Value::from(()),
            Doc::Bool(b) => Value::from(*b),
            Doc::Int(i) => Value::from(*i),
            Doc::Float(f) => Value::from(*f),
            // Up to 22 bytes minijinja stores inline, without allocating.
            Doc::Str(s) => Value::from(s.as_str()),
            // The containers are the minijinja objects themselves: handing one to an
            // expression is a reference-count increment, not an allocation.
            Doc::Array(items) => Value::from_dyn_object(items.clone()),
            Doc::Object(map) => Value::from_dyn_object(map.clone()),
        }
    }

    /// Converts a minijinja value back. Wrapped documents are unwrapped without copying;
    /// anything else is walked. `undefined` becomes `null`.
    pub fn from_value(value: &Value) -> Doc {
        if let Some(seq) = value.downcast_object::<DocSeq>() {
            return Doc::Array(seq);
        }
        if let Some(obj) = value.downcast_object::<DocObj>() {
            return Doc::Object(obj);
        }
        match value.kind() {
            ValueKind::Undefined | ValueKind::None => Doc::Null,
            ValueKind::Bool => Doc::Bool(value.is_true()),
            ValueKind::Number => {
                if value.is_integer() {
                    match value.as_i64() {
                        Some(i) => Doc::Int(i),
                        None => f64::try_from(value.clone()).map_or(Doc::Null, Doc::Float),
                    }
                } else {
                    f64::try_from(value.clone()).map_or(Doc::Null, Doc::Float)
                }
            }
            ValueKind::String => Doc::Str(Str::from(value.as_str().unwrap_or_default())),
            ValueKind::Map => {
                let mut map = MapBuilder::default();
                if let Ok(keys) = value.try_iter() {
                    for key in keys {
                        let item = value.get_item(&key).unwrap_or_default();
                        let name: Str = match key.as_str() {
                            Some(s) => Str::from(s),
                            None => Str::from(key.to_string()),
                        };
                        map.insert(name, Doc::from_value(&item));
                    }
                }
                Doc::Object(Arc::new(DocObj(map.finish(), false)))
            }
            ValueKind::Seq | ValueKind::Iterable => Doc::Array(Arc::new(DocSeq(
                value
                    .try_iter()
                    .map(|it| it.map(|v| Doc::from_value(&v)).collect())
                    .unwrap_or_default(),
            ))),
            ValueKind::Bytes | ValueKind::Plain | ValueKind::Invalid => {
                Doc::Str(Str::from(value.to_string()))
            }
            _ => Doc::Str(Str::from(value.to_string())),
        }
    }

    /// Converts from `serde_json::Value` (used for small values built in code).
    pub fn from_json(value: &serde_json::Value) -> Doc {
        match value {
            serde_json::Value::Null => Doc::Null,
            serde_json::Value::Bool(b) => Doc::Bool(*b),
            serde_json::Value::Number(n) => match n.as_i64() {
                Some(i) => Doc::Int(i),
                None => Doc::Float(n.as_f64().unwrap_or(f64::NAN)),
            },
            serde_json::Value::String(s) => Doc::Str(Str::from(s.as_str())),
            serde_json::Value::Array(items) => {
                Doc::Array(Arc::new(DocSeq(items.iter().map(Doc::from_json).collect())))
            }
            serde_json::Value::Object(map) => Doc::Object(Arc::new(DocObj(
                map.iter()
                    .map(|(k, v)| (Str::from(k.as_str()), Doc::from_json(v)))
                    .collect(),
                false,
            ))),
        }
    }

    /// Converts to `serde_json::Value` (reports, snapshots).
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or(serde_json::Value::Null)
    }
}

impl fmt::Display for Doc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match serde_json::to_string(self) {
            Ok(s) => f.write_str(&s),
            Err(_) => Err(fmt::Error),
        }
    }
}

// ---------------------------------------------------------------- release

static EXIT_WITHOUT_FREEING: std::sync::atomic::AtomicBool =
    std::sync::atomic::AtomicBool::new(false);

/// Makes [`release`] leave values to the operating system: for a process that exits
/// once its run is done (the command-line tool), not for a library caller.
pub fn exit_without_freeing() {
    EXIT_WITHOUT_FREEING.store(true, std::sync::atomic::Ordering::Relaxed);
}

static ON_STREAMING: std::sync::OnceLock<fn()> = std::sync::OnceLock::new();

/// Registers what the process does when a run starts streaming (at most once; later
/// calls are ignored). A streamed run frees each chunk of documents and at once
/// allocates the next, of about the same size: an allocator that returns freed pages to
/// the system quickly (the binary's does, for the peak of runs that read their inputs
/// whole) would spend the time saved by streaming handing them back and faulting them
/// in again. The binary owns the allocator, so it says what to change.
pub fn on_streaming(hook: fn()) {
    let _ = ON_STREAMING.set(hook);
}

/// Tells the process a streamed read is about to start (see [`on_streaming`]); called
/// before the read spawns its threads.
pub(crate) fn streaming_starts() {
    if let Some(hook) = ON_STREAMING.get() {
        hook();
    }
}

/// Frees `value` (a run's documents and evidence), or, in a process that exits once the
/// run is done (see [`exit_without_freeing`]), leaves it to the operating system, which
/// takes the whole address space back at once: freeing the millions of objects of a
/// 1 GB run one by one costs about a second on one core.
pub fn release<T>(value: T) {
    if EXIT_WITHOUT_FREEING.load(std::sync::atomic::Ordering::Relaxed) {
        std::mem::forget(value);
    } else {
        drop(value);
    }
}

// ---------------------------------------------------------------- serde

impl Serialize for Doc {
    fn serialize<S: Serializer>(&self, ser: S) -> Result<S::Ok, S::Error> {
        match self {
            Doc::Null => ser.serialize_unit(),
            Doc::Bool(b) => ser.serialize_bool(*b),
            Doc::Int(i) => ser.serialize_i64(*i),
            Doc::Float(x) if x.is_finite() => ser.serialize_f64(*x),
            Doc::Float(_) => ser.serialize_unit(),
            Doc::Str(s) => ser.serialize_str(s),
            Doc::Array(items) => {
                let mut seq = ser.serialize_seq(Some(items.len()))?;
                for item in items.iter() {
                    seq.serialize_element(item)?;
                }
                seq.end()
            }
            Doc::Object(map) => {
                let shown = if map.1 {
                    map.keys().filter(|k| map.shows(k)).count()
                } else {
                    map.len()
                };
                let mut out = ser.serialize_map(Some(shown))?;
                for (k, v) in map.iter().filter(|(k, _)| map.shows(k)) {
                    out.serialize_entry(&**k, v)?;
                }
                out.end()
            }
        }
    }
}

impl<'de> Deserialize<'de> for Doc {
    fn deserialize<D: Deserializer<'de>>(de: D) -> Result<Doc, D::Error> {
        PARSER.with(|parser| match parser.try_borrow_mut() {
            Ok(visitor) => {
                visitor.start_document();
                de.deserialize_any(&*visitor)
            }
            // A document read while another is being read on this thread (not done
            // today) gets its own parser state.
            Err(_) => de.deserialize_any(&DocVisitor::default()),
        })
    }
}

thread_local! {
    /// The parser state of this thread, reused from one document to the next: its
    /// tables and scratch space are allocated once per thread, not once per file (fresh
    /// memory costs the kernel a page clear per page), and documents read on one thread
    /// share key strings and shapes.
    static PARSER: RefCell<DocVisitor> = RefCell::default();
}

/// Interns object keys, and short string values, while parsing: documents repeat the
/// same few keys and enum-like values (severities, types, versions) thousands of times,
/// and sharing them saves both allocations and memory.
#[derive(Default)]
struct DocVisitor {
    keys: RefCell<Interner>,
    values: RefCell<Interner>,
    /// One scratch map per nesting level (see [`MapBuilder::take_exact`]).
    scratch: RefCell<Vec<MapBuilder>>,
    /// Objects with the same keys share their list of keys.
    shapes: RefCell<Shapes>,
    /// One scratch list per nesting level: arrays are copied out at their exact size.
    scratch_seqs: RefCell<Vec<Vec<Doc>>>,
}

/// Values longer than this are not interned: long text rarely repeats exactly.
const INTERN_VALUES_UP_TO: usize = 32;

/// Strings seen so far, looked up by text. Bounded, so a document of unique strings
/// costs one lookup each and no more memory.
#[derive(Default)]
struct Interner(HashSet<Str, foldhash::fast::RandomState>);

impl Interner {
    const CAP: usize = 4096;

    fn intern(&mut self, s: &str) -> Str {
        if let Some(k) = self.0.get(s) {
            return k.clone();
        }
        let k = Str::from(s);
        if self.0.len() < Self::CAP {
            self.0.insert(k.clone());
        }
        k
    }

    fn is_full(&self) -> bool {
        self.0.len() >= Self::CAP
    }
}

impl DocVisitor {
    fn intern(&self, key: &str) -> Str {
        self.keys.borrow_mut().intern(key)
    }

    /// Readies the state for the next document: values are interned per document (ids
    /// rarely repeat across files, and a full table would stop interning); keys and
    /// shapes carry over, unless their tables are full.
    fn start_document(&self) {
        self.values.borrow_mut().0.clear();
        let mut keys = self.keys.borrow_mut();
        let mut shapes = self.shapes.borrow_mut();
        if keys.is_full() || shapes.is_full() {
            // Shapes are keyed by the identity of interned keys: they go together.
            keys.0.clear();
            shapes.clear();
        }
    }
}

/// A seed that carries the interner down the tree.
struct DocSeed<'a>(&'a DocVisitor);

impl<'de> de::DeserializeSeed<'de> for DocSeed<'_> {
    type Value = Doc;
    fn deserialize<D: Deserializer<'de>>(self, de: D) -> Result<Doc, D::Error> {
        de.deserialize_any(self.0)
    }
}

/// A key seed that interns; `predicted` is the key at this position in the previous
/// object of this nesting level: in a list of objects of one shape it is nearly always
/// the key, and comparing the text with it is cheaper than hashing.
struct KeySeed<'a>(&'a DocVisitor, Option<&'a Str>);

impl<'de> de::DeserializeSeed<'de> for KeySeed<'_> {
    type Value = Str;
    fn deserialize<D: Deserializer<'de>>(self, de: D) -> Result<Str, D::Error> {
        struct KeyVisitor<'a>(&'a DocVisitor, Option<&'a Str>);
        impl Visitor<'_> for KeyVisitor<'_> {
            type Value = Str;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object key")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Str, E> {
                match self.1 {
                    Some(p) if p.as_str() == v => Ok(p.clone()),
                    _ => Ok(self.0.intern(v)),
                }
            }
        }
        de.deserialize_str(KeyVisitor(self.0, self.1))
    }
}

impl<'de> Visitor<'de> for &DocVisitor {
    type Value = Doc;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_unit<E>(self) -> Result<Doc, E> {
        Ok(Doc::Null)
    }
    fn visit_none<E>(self) -> Result<Doc, E> {
        Ok(Doc::Null)
    }
    fn visit_some<D: Deserializer<'de>>(self, de: D) -> Result<Doc, D::Error> {
        de.deserialize_any(self)
    }
    fn visit_bool<E>(self, v: bool) -> Result<Doc, E> {
        Ok(Doc::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Doc, E> {
        Ok(Doc::Int(v))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Doc, E> {
        Ok(Doc::of_u64(v))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Doc, E> {
        Ok(Doc::Float(v))
    }
    fn visit_str<E>(self, v: &str) -> Result<Doc, E> {
        if v.len() <= INTERN_VALUES_UP_TO {
            return Ok(Doc::Str(self.values.borrow_mut().intern(v)));
        }
        Ok(Doc::Str(Str::from(v)))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Doc, A::Error> {
        let mut items = self.scratch_seqs.borrow_mut().pop().unwrap_or_default();
        while let Some(item) = seq.next_element_seed(DocSeed(self))? {
            items.push(item);
        }
        // Moved into storage of exactly their number; the scratch keeps its capacity.
        let mut exact = Vec::with_capacity(items.len());
        exact.append(&mut items);
        self.scratch_seqs.borrow_mut().push(items);
        Ok(Doc::Array(Arc::new(DocSeq(exact))))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Doc, A::Error> {
        let mut out = self.scratch.borrow_mut().pop().unwrap_or_default();
        while let Some(key) = map.next_key_seed(KeySeed(self, out.predicted_key()))? {
            let value = map.next_value_seed(DocSeed(self))?;
            // Readers disagree on which of two equal keys counts (the first, the last,
            // an error): a document that says both is refused rather than guessed at.
            if out.insert(key.clone(), value) {
                return Err(de::Error::custom(format!(
                    "duplicate key `{key}` in the same object"
                )));
            }
        }
        let exact = out.take_exact(&mut self.shapes.borrow_mut());
        self.scratch.borrow_mut().push(out);
        Ok(Doc::Object(Arc::new(DocObj(exact, false))))
    }
}

// ---------------------------------------------------------------- conversions

impl From<&str> for Doc {
    fn from(s: &str) -> Doc {
        Doc::Str(Str::from(s))
    }
}
impl From<String> for Doc {
    fn from(s: String) -> Doc {
        Doc::Str(Str::from(s))
    }
}
impl From<Str> for Doc {
    fn from(s: Str) -> Doc {
        Doc::Str(s)
    }
}
impl From<bool> for Doc {
    fn from(b: bool) -> Doc {
        Doc::Bool(b)
    }
}
impl From<i64> for Doc {
    fn from(i: i64) -> Doc {
        Doc::Int(i)
    }
}
impl From<f64> for Doc {
    fn from(f: f64) -> Doc {
        Doc::Float(f)
    }
}
impl From<Vec<Doc>> for Doc {
    fn from(items: Vec<Doc>) -> Doc {
        Doc::Array(Arc::new(DocSeq(items)))
    }
}

// ---------------------------------------------------------------- JSONPath

impl jsonpath_rust::query::queryable::Queryable for Doc {
    fn get(&self, key: &str) -> Option<&Self> {
        self.field(key)
    }
    fn as_array(&self) -> Option<&Vec<Self>> {
        match self {
            Doc::Array(items) => Some(&items.0),
            _ => None,
        }
    }
    fn as_object(&self) -> Option<Vec<(&str, &Self)>> {
        match self {
            Doc::Object(map) => Some(map.iter().map(|(k, v)| (&**k, v)).collect()),
            _ => None,
        }
    }
    fn as_str(&self) -> Option<&str> {
        Doc::as_str(self)
    }
    fn as_i64(&self) -> Option<i64> {
        match self {
            Doc::Int(i) => Some(*i),
            Doc::Float(f) if f.fract() == 0.0 && f.abs() < 9.0e15 => Some(*f as i64),
            _ => None,
        }
    }
    fn as_f64(&self) -> Option<f64> {
        match self {
            Doc::Int(i) => Some(*i as f64),
            Doc::Float(f) => Some(*f),
            _ => None,
        }
    }
    fn as_bool(&self) -> Option<bool> {
        match self {
            Doc::Bool(b) => Some(*b),
            _ => None,
        }
    }
    fn null() -> Self {
        Doc::Null
    }
}

// ---------------------------------------------------------------- minijinja view

/// An array's items; also its minijinja view (items convert when read).
#[derive(Debug, Default, PartialEq)]
pub struct DocSeq(pub Vec<Doc>);

/// An object's members; also its minijinja view (members convert when read).
///
/// The flag marks a record computed by a judge whose fields starting with `_` are
/// private: expressions read them by name, but they are not listed (iteration, `items`,
/// `tojson`, copies with `dict`) and not written to results or prompts.
#[derive(Debug, Default, PartialEq)]
pub struct DocObj(pub DocMap, pub bool);

/// Whether a record field is private (`_name`).
pub fn is_private_key(key: &str) -> bool {
    key.starts_with('_')
}

impl DocObj {
    /// Whether `key` is listed and written (not a private field of a record).
    fn shows(&self, key: &str) -> bool {
        !(self.1 && is_private_key(key))
    }
}

impl std::ops::Deref for DocSeq {
    type Target = Vec<Doc>;
    fn deref(&self) -> &Vec<Doc> {
        &self.0
    }
}

impl std::ops::Deref for DocObj {
    type Target = DocMap;
    fn deref(&self) -> &DocMap {
        &self.0
    }
}

impl Object for DocSeq {
    fn repr(self: &Arc<Self>) -> ObjectRepr {
        ObjectRepr::Seq
    }
    fn get_value(self: &Arc<Self>, key: &Value) -> Option<Value> {
        let idx = key.as_i64()?;
        let len = self.0.len() as i64;
        let idx = if idx < 0 { len + idx } else { idx };
        usize::try_from(idx)
            .ok()
            .and_then(|i| self.0.get(i))
            .map(Doc::to_value)
    }
    fn enumerate(self: &Arc<Self>) -> Enumerator {
        Enumerator::Seq(self.0.len())
    }
    fn enumerator_len(self: &Arc<Self>) -> Option<usize> {
        Some(self.0.len())
    }
}

impl Object for DocObj {
    fn repr(self: &Arc<Self>) -> ObjectRepr {
        ObjectRepr::Map
    }
    fn get_value(self: &Arc<Self>, key: &Value) -> Option<Value> {
        self.0.get(key.as_str()?).map(Doc::to_value)
    }
    fn enumerate(self: &Arc<Self>) -> Enumerator {
        let keys: Vec<Value> = self
            .0
            .keys()
            .filter(|k| self.shows(k.as_str()))
            .map(|k| Value::from(k.as_str()))
            .collect();
        Enumerator::Values(keys)
    }
    fn enumerator_len(self: &Arc<Self>) -> Option<usize> {
        Some(if self.1 {
            self.0.keys().filter(|k| self.shows(k)).count()
        } else {
            self.0.len()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use jsonpath_rust::query::js_path_process;

    fn doc(text: &str) -> Doc {
        serde_json::from_str(text).unwrap()
    }

    #[test]
    fn parses_and_serializes_in_document_order() {
        let d = doc(r#"{"b": 1, "a": [true, null, 2.5, "x"], "big": 18446744073709551615}"#);
        assert_eq!(
            serde_json::to_string(&d).unwrap(),
            r#"{"b":1,"a":[true,null,2.5,"x"],"big":1.8446744073709552e+19}"#
        );
    }

    #[test]
    fn jsonpath_runs_on_doc() {
        let d = doc(r#"{"repos": [{"id": "a", "n": 3}, {"id": "b", "n": 0}]}"#);
        let q = jsonpath_rust::parser::parse_json_path("$.repos[?@.n > 1].id").unwrap();
        let hits: Vec<Doc> = js_path_process(&q, &d)
            .unwrap()
            .into_iter()
            .map(|r| r.val().clone())
            .collect();
        assert_eq!(hits, vec![Doc::from("a")]);
    }

    #[test]
    fn minijinja_reads_lazily_and_round_trips() {
        let d = doc(r#"{"xs": [1, 2, 3], "m": {"k": "v"}}"#);
        let env = minijinja::Environment::new();
        let expr = env.compile_expression("xs | sum + (m.k | length)").unwrap();
        let out = expr.eval(d.to_value()).unwrap();
        assert_eq!(out.as_i64(), Some(7));
        let back = Doc::from_value(&d.to_value());
        assert_eq!(back, d);
        let built = env
            .compile_expression("{'a': [1, none], 'b': 'x'}")
            .unwrap();
        assert_eq!(
            Doc::from_value(&built.eval(()).unwrap()).to_string(),
            r#"{"a":[1,null],"b":"x"}"#
        );
    }

    /// A repeated key keeps its first position and takes the last value, in small and
    /// in indexed objects alike; repeated short values share one allocation.
    #[test]
    fn duplicate_keys_and_interned_values() {
        // A repeated key is refused in small and indexed objects alike: which of the two
        // counts is not for caldera to guess.
        let err = serde_json::from_str::<Doc>(r#"{"a": 1, "b": 2, "a": 3}"#).unwrap_err();
        assert!(err.to_string().contains("duplicate key `a`"), "{err}");
        let many: Vec<String> = (0..20).map(|i| format!(r#""k{i}": {i}"#)).collect();
        let err = serde_json::from_str::<Doc>(&format!(r#"{{{}, "k3": "x"}}"#, many.join(", ")))
            .unwrap_err();
        assert!(err.to_string().contains("duplicate key `k3`"), "{err}");
        let d = doc(&format!(r#"{{{}}}"#, many.join(", ")));
        assert_eq!(d.field("k3"), Some(&Doc::Int(3)));
        assert_eq!(d.field("k19"), Some(&Doc::Int(19)));
        let d = doc(r#"[{"s": "HIGH"}, {"s": "HIGH"}]"#);
        match (d.dotted("0.s"), d.dotted("1.s")) {
            (Some(Doc::Str(a)), Some(Doc::Str(b))) => assert!(Str::ptr_eq(a, b)),
            other => panic!("unexpected {other:?}"),
        }
    }

    /// The parser state carried from one document to the next on a thread (interned
    /// keys, shapes, predicted keys) never changes what a document reads as: objects in
    /// varying key order, a document with more distinct keys than the tables hold, and
    /// documents after it.
    #[test]
    fn documents_parsed_in_a_row_read_as_alone() {
        let varied = r#"[{"a":1,"b":2},{"b":3,"a":4},{"a":5},{"c":6,"a":7,"b":8},{"a":9,"b":10}]"#;
        let keys: Vec<String> = (0..5000)
            .map(|i| format!(r#""k{i}":{{"k{i}":{i}}}"#))
            .collect();
        let wide = format!("{{{}}}", keys.join(","));
        let nested = r#"{"a":{"a":{"a":1}},"b":[{"a":2},{"a":3,"c":4}]}"#;
        for text in [varied, &wide, varied, nested, &wide, nested] {
            let d: Doc = serde_json::from_str(text).unwrap();
            let v: serde_json::Value = serde_json::from_str(text).unwrap();
            assert_eq!(
                serde_json::to_string(&d).unwrap(),
                serde_json::to_string(&v).unwrap()
            );
        }
        // A repeated key is still refused after the reused builders saw other documents.
        assert!(serde_json::from_str::<Doc>(r#"{"b":[{"a":3,"a":4}]}"#).is_err());
    }

    #[test]
    fn dotted_paths() {
        let d = doc(r#"{"metadata": {"repo_id": "r1"}, "xs": [{"a": 1}]}"#);
        assert_eq!(d.dotted("metadata.repo_id"), Some(&Doc::from("r1")));
        assert_eq!(d.dotted("xs.0.a"), Some(&Doc::Int(1)));
        assert_eq!(d.dotted("xs.1.a"), None);
    }
}
