//! `DocMap`: the members of a JSON object, in document order.
//!
//! Why not `IndexMap`? Almost every object a run reads is small (a finding has about a
//! dozen members), and millions of them stay alive for the whole run. An `IndexMap`
//! keeps a hash per entry plus a separate hash table for each of them, and every lookup
//! hashes the key.
//!
//! Here an object is its values plus a shared **shape**: the list of its keys in order.
//! The findings of one scan all have the same keys, so they share one shape, and an
//! object costs its values (16 bytes each) and a pointer. A lookup scans the shape's keys
//! (pointer comparison first: keys are interned while parsing), which for a dozen keys
//! is faster than hashing; shapes above [`INDEX_ABOVE`] keys carry a hash index, so a
//! large object never degrades to a long scan. A [`KeyCache`] remembers where a key was
//! in the last shape it saw, so reading one attribute of every item of a list is a
//! pointer comparison per item.
//!
//! A map is built once (through [`MapBuilder`], or `collect`) and then only read.

use std::cell::RefCell;
use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, LazyLock};

use super::{Doc, Str};

/// Shapes with more keys than this get a hash index; smaller ones are scanned.
pub(super) const INDEX_ABOVE: usize = 16;

type Index = HashMap<Str, usize, foldhash::fast::RandomState>;

/// The keys of an object, in order, shared by every object with the same keys.
#[derive(Debug)]
struct Shape {
    keys: Box<[Str]>,
    /// Key -> position, only above [`INDEX_ABOVE`] keys.
    index: Option<Index>,
}

impl Shape {
    fn new(keys: Box<[Str]>) -> Shape {
        let index = (keys.len() > INDEX_ABOVE).then(|| {
            let mut index =
                Index::with_capacity_and_hasher(keys.len(), foldhash::fast::RandomState::default());
            for (i, k) in keys.iter().enumerate() {
                index.insert(k.clone(), i);
            }
            index
        });
        Shape { keys, index }
    }

    #[inline]
    fn position(&self, key: &str) -> Option<usize> {
        match &self.index {
            Some(index) => index.get(key).copied(),
            None => self.keys.iter().position(|k| same_key(k, key)),
        }
    }
}

static EMPTY_SHAPE: LazyLock<Arc<Shape>> = LazyLock::new(|| Arc::new(Shape::new(Box::default())));

/// An ordered JSON object, immutable once built.
#[derive(Clone)]
pub struct DocMap {
    shape: Arc<Shape>,
    values: Box<[Doc]>,
}

impl Default for DocMap {
    fn default() -> DocMap {
        DocMap {
            shape: EMPTY_SHAPE.clone(),
            values: Box::default(),
        }
    }
}

/// Whether `stored` is `key`: the same interned string, or equal text.
#[inline]
fn same_key(stored: &Str, key: &str) -> bool {
    let s: &str = stored.as_str();
    (s.as_ptr() == key.as_ptr() && s.len() == key.len()) || s == key
}

impl DocMap {
    /// An empty object.
    pub fn new() -> DocMap {
        DocMap::default()
    }

    /// The number of members.
    #[inline]
    pub fn len(&self) -> usize {
        self.values.len()
    }

    /// Whether the object has no members.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// The position of `key`, if present.
    #[inline]
    pub fn get_index_of(&self, key: &str) -> Option<usize> {
        self.shape.position(key)
    }

    /// The value of `key`, if present.
    #[inline]
    pub fn get(&self, key: &str) -> Option<&Doc> {
        self.values.get(self.get_index_of(key)?)
    }

    /// Whether `key` is a member.
    pub fn contains_key(&self, key: &str) -> bool {
        self.get_index_of(key).is_some()
    }

    /// The member at position `i`.
    pub fn get_index(&self, i: usize) -> Option<(&Str, &Doc)> {
        Some((self.shape.keys.get(i)?, self.values.get(i)?))
    }

    /// The members in order.
    pub fn iter(&self) -> Iter<'_> {
        Iter(self.shape.keys.iter().zip(self.values.iter()))
    }

    /// The keys in order.
    pub fn keys(&self) -> impl DoubleEndedIterator<Item = &Str> + ExactSizeIterator {
        self.shape.keys.iter()
    }

    /// The values in order.
    pub fn values(&self) -> impl DoubleEndedIterator<Item = &Doc> + ExactSizeIterator {
        self.values.iter()
    }

    /// The first member.
    pub fn first(&self) -> Option<(&Str, &Doc)> {
        self.get_index(0)
    }

    /// The last member.
    pub fn last(&self) -> Option<(&Str, &Doc)> {
        self.get_index(self.len().checked_sub(1)?)
    }

    /// [`DocMap::get`] through `cache`; `key` must be the same text on every call that
    /// shares the cache.
    #[inline]
    pub fn get_cached(&self, key: &str, cache: &mut KeyCache) -> Option<&Doc> {
        match &cache.last {
            Some((shape, at)) if Arc::ptr_eq(shape, &self.shape) => {
                at.and_then(|i| self.values.get(i))
            }
            _ => {
                let at = self.get_index_of(key);
                cache.last = Some((self.shape.clone(), at));
                at.and_then(|i| self.values.get(i))
            }
        }
    }
}

/// Where a key was in the last shape it was looked up in, for reading one key of many
/// objects (the items of a list, where a filter reads one attribute of each). Objects of
/// that shape answer without a scan, present or absent; any other object takes the
/// ordinary lookup, which then updates the cache, so results are the same either way.
#[derive(Debug, Default)]
pub struct KeyCache {
    last: Option<(Arc<Shape>, Option<usize>)>,
}

/// Shapes already made, looked up by the identity of their (interned) keys, so objects
/// with the same keys share one shape. Bounded: past the cap, new shapes are made but
/// not remembered (a document of ever-different keys costs a shape per object, as it
/// would without sharing, and no more).
#[derive(Default)]
pub struct Shapes {
    table: HashMap<Box<[usize]>, Arc<Shape>, foldhash::fast::RandomState>,
    ids: Vec<usize>,
}

impl Shapes {
    const CAP: usize = 4096;

    /// Whether no more shapes are remembered.
    pub(crate) fn is_full(&self) -> bool {
        self.table.len() >= Self::CAP
    }

    /// Forgets every shape (objects keep theirs).
    pub(crate) fn clear(&mut self) {
        self.table.clear();
    }

    /// The shape of `keys`: a remembered one with the very same key strings, else new.
    fn shape(&mut self, keys: &[Str]) -> Arc<Shape> {
        if keys.is_empty() {
            return EMPTY_SHAPE.clone();
        }
        self.ids.clear();
        self.ids
            .extend(keys.iter().map(|k| k.as_str().as_ptr() as usize));
        if let Some(shape) = self.table.get(self.ids.as_slice()) {
            return shape.clone();
        }
        // The table holds the shape, and so its keys: their addresses stay unique while
        // they identify it.
        let shape = Arc::new(Shape::new(keys.into()));
        if self.table.len() < Self::CAP {
            self.table.insert(self.ids.as_slice().into(), shape.clone());
        }
        shape
    }
}

thread_local! {
    /// Shapes of objects built in code (records of a record list share one).
    static BUILT_SHAPES: RefCell<Shapes> = RefCell::default();
}

/// Collects the members of an object being built. Inserting a key that is present
/// replaces its value in place (the key keeps its first position), as `IndexMap::insert`
/// does and as JSON parsers commonly read a repeated key.
#[derive(Default)]
pub struct MapBuilder {
    keys: Vec<Str>,
    values: Vec<Doc>,
    /// Key -> position, only once the object has more than [`INDEX_ABOVE`] members.
    index: Option<Index>,
    /// The shape of the last map this builder made (see [`MapBuilder::predicted_key`]).
    last: Option<Arc<Shape>>,
}

impl MapBuilder {
    /// The key the last map made by this builder had at the position of the next one:
    /// a parser reusing one builder per nesting level gets the keys of the previous
    /// sibling, which in a list of objects of one shape are the keys to come.
    #[inline]
    pub(crate) fn predicted_key(&self) -> Option<&Str> {
        self.last.as_ref()?.keys.get(self.keys.len())
    }

    /// An empty builder with room for `n` members.
    pub fn with_capacity(n: usize) -> MapBuilder {
        MapBuilder {
            keys: Vec::with_capacity(n),
            values: Vec::with_capacity(n),
            index: None,
            last: None,
        }
    }

    /// Sets `key` to `value`; true when the key was there already (its value replaced),
    /// so a parser can refuse a repeated key.
    pub fn insert(&mut self, key: Str, value: Doc) -> bool {
        let found = match &self.index {
            Some(index) => index.get(key.as_str()).copied(),
            None => self.keys.iter().position(|k| same_key(k, &key)),
        };
        if let Some(i) = found {
            self.values[i] = value;
            return true;
        }
        let at = self.keys.len();
        match &mut self.index {
            Some(index) => {
                index.insert(key.clone(), at);
            }
            None if at >= INDEX_ABOVE => {
                let mut index =
                    Index::with_capacity_and_hasher(at * 2, foldhash::fast::RandomState::default());
                for (i, k) in self.keys.iter().enumerate() {
                    index.insert(k.clone(), i);
                }
                index.insert(key.clone(), at);
                self.index = Some(index);
            }
            None => {}
        }
        self.keys.push(key);
        self.values.push(value);
        false
    }

    /// The map (its shape shared with earlier maps of this thread with the same keys).
    pub fn finish(mut self) -> DocMap {
        BUILT_SHAPES.with(|shapes| self.take_exact(&mut shapes.borrow_mut()))
    }

    /// The map of the members so far, its shape from `shapes` and its values in storage
    /// of exactly their size, leaving the builder empty but with its capacity: a parser
    /// reuses one builder per nesting level instead of growing a vector per object.
    pub(crate) fn take_exact(&mut self, shapes: &mut Shapes) -> DocMap {
        let shape = shapes.shape(&self.keys);
        self.keys.clear();
        self.index = None;
        self.last = Some(shape.clone());
        DocMap {
            shape,
            values: self.values.drain(..).collect(),
        }
    }
}

/// The members of a [`DocMap`] in order, as `(&key, &value)`.
#[derive(Clone)]
pub struct Iter<'a>(std::iter::Zip<std::slice::Iter<'a, Str>, std::slice::Iter<'a, Doc>>);

impl<'a> Iterator for Iter<'a> {
    type Item = (&'a Str, &'a Doc);
    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        self.0.next()
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        self.0.size_hint()
    }
}

impl DoubleEndedIterator for Iter<'_> {
    fn next_back(&mut self) -> Option<Self::Item> {
        self.0.next_back()
    }
}

impl ExactSizeIterator for Iter<'_> {}

impl<'a> IntoIterator for &'a DocMap {
    type Item = (&'a Str, &'a Doc);
    type IntoIter = Iter<'a>;
    fn into_iter(self) -> Iter<'a> {
        self.iter()
    }
}

impl IntoIterator for DocMap {
    type Item = (Str, Doc);
    type IntoIter = std::iter::Zip<std::vec::IntoIter<Str>, std::vec::IntoIter<Doc>>;
    fn into_iter(self) -> Self::IntoIter {
        let keys: Vec<Str> = self.shape.keys.to_vec();
        keys.into_iter().zip(self.values.into_vec())
    }
}

impl<K: Into<Str>> FromIterator<(K, Doc)> for DocMap {
    fn from_iter<I: IntoIterator<Item = (K, Doc)>>(iter: I) -> DocMap {
        let iter = iter.into_iter();
        let mut map = MapBuilder::with_capacity(iter.size_hint().0);
        for (k, v) in iter {
            map.insert(k.into(), v);
        }
        map.finish()
    }
}

/// Equal when both have the same members with equal values, in any order (as
/// `IndexMap` compares).
impl PartialEq for DocMap {
    fn eq(&self, other: &DocMap) -> bool {
        self.len() == other.len() && self.iter().all(|(k, v)| other.get(k) == Some(v))
    }
}

impl fmt::Debug for DocMap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(s: &str) -> Str {
        Str::from(s)
    }

    #[test]
    fn a_map_is_three_words() {
        assert_eq!(std::mem::size_of::<DocMap>(), 24);
    }

    /// Small and indexed maps must behave the same: order, replacement in place,
    /// lookups by equal text that is not the same allocation, whether built by
    /// collecting or by a reused parser builder.
    #[test]
    fn small_and_indexed_maps_keep_order_and_replace_in_place() {
        let mut reused = MapBuilder::default();
        let mut shapes = Shapes::default();
        for n in [3, INDEX_ABOVE, INDEX_ABOVE + 1, 100] {
            let pairs = (0..n)
                .map(|i| (format!("k{i}"), Doc::Int(i as i64)))
                .chain([("k1".to_owned(), Doc::from("again"))]);
            let collected: DocMap = pairs.clone().collect();
            for (k, v) in pairs {
                reused.insert(key(&k), v);
            }
            let taken = reused.take_exact(&mut shapes);
            for m in [collected, taken] {
                assert_eq!(m.shape.index.is_some(), n > INDEX_ABOVE, "n = {n}");
                assert_eq!(m.len(), n);
                assert_eq!(m.get_index(1).map(|(k, _)| &**k), Some("k1"));
                assert_eq!(m.get(&String::from("k1")), Some(&Doc::from("again")));
                assert_eq!(m.get(&format!("k{}", n - 1)), Some(&Doc::Int(n as i64 - 1)));
                assert_eq!(m.get("absent"), None);
                let keys: Vec<String> = m.keys().map(|k| k.to_string()).collect();
                let want: Vec<String> = (0..n).map(|i| format!("k{i}")).collect();
                assert_eq!(keys, want);
            }
        }
    }

    /// Objects with the same key strings share a shape; equal text in other strings
    /// makes another shape (identity, not text, is what is shared).
    #[test]
    fn shapes_are_shared_by_key_identity() {
        let (id, sev) = (key("id"), key("severity"));
        let mut shapes = Shapes::default();
        let mut b = MapBuilder::default();
        let mut build = |pairs: Vec<(Str, Doc)>| {
            for (k, v) in pairs {
                b.insert(k, v);
            }
            b.take_exact(&mut shapes)
        };
        let x = build(vec![
            (id.clone(), Doc::Int(1)),
            (sev.clone(), Doc::from("A")),
        ]);
        let y = build(vec![
            (id.clone(), Doc::Int(2)),
            (sev.clone(), Doc::from("B")),
        ]);
        let z = build(vec![
            (key("id"), Doc::Int(3)),
            (sev.clone(), Doc::from("C")),
        ]);
        assert!(Arc::ptr_eq(&x.shape, &y.shape));
        assert!(!Arc::ptr_eq(&x.shape, &z.shape));
        assert_eq!(z.get("id"), Some(&Doc::Int(3)));
        assert_eq!(y.get("severity"), Some(&Doc::from("B")));
    }

    /// A cached lookup gives what a plain lookup gives, whatever the shape of the
    /// object: same key at another position, absent key, equal text in another
    /// allocation, large indexed objects.
    #[test]
    fn cached_lookups_agree_with_plain_ones() {
        let shared = key("severity");
        let a: DocMap = [
            (key("id"), Doc::Int(1)),
            (shared.clone(), Doc::from("HIGH")),
        ]
        .into_iter()
        .collect();
        let b: DocMap = [(shared.clone(), Doc::from("LOW")), (key("id"), Doc::Int(2))]
            .into_iter()
            .collect();
        let c: DocMap = [(key("id"), Doc::Int(3))].into_iter().collect();
        let d: DocMap = [
            (key("id"), Doc::Int(4)),
            (key("severity"), Doc::from("MEDIUM")),
        ]
        .into_iter()
        .collect();
        let big: DocMap = (0..40)
            .map(|i| (key(&format!("k{i}")), Doc::Int(i)))
            .chain([(shared.clone(), Doc::from("CRITICAL"))])
            .collect();
        let mut cache = KeyCache::default();
        for m in [&a, &a, &b, &c, &c, &d, &a, &big, &big, &b] {
            assert_eq!(m.get_cached("severity", &mut cache), m.get("severity"));
        }
    }

    #[test]
    fn equality_ignores_order_like_indexmap() {
        let a: DocMap = [("x", Doc::Int(1)), ("y", Doc::Int(2))]
            .into_iter()
            .collect();
        let b: DocMap = [("y", Doc::Int(2)), ("x", Doc::Int(1))]
            .into_iter()
            .collect();
        let c: DocMap = [("y", Doc::Int(3)), ("x", Doc::Int(1))]
            .into_iter()
            .collect();
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert_eq!(format!("{a:?}"), r#"{"x": Int(1), "y": Int(2)}"#);
        let none: [(&str, Doc); 0] = [];
        assert_eq!(DocMap::default(), none.into_iter().collect::<DocMap>());
    }
}
