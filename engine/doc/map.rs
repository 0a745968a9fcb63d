//! `DocMap`: the members of a JSON object, in document order.
//!
//! Why not `IndexMap`? Almost every object a run reads is small (a finding has about a
//! dozen members), and millions of them stay alive for the whole run. An `IndexMap`
//! keeps a hash per entry plus a separate hash table for each of them, and every lookup
//! hashes the key. A plain vector of pairs is about half the memory, and a linear scan
//! over a dozen short keys (pointer comparison first: keys are interned while parsing)
//! is faster than hashing. Objects above [`INDEX_ABOVE`] members get a hash index on the
//! side, so a large object never degrades to a long scan.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use super::Doc;

/// Objects with more members than this get a hash index; smaller ones are scanned.
pub const INDEX_ABOVE: usize = 16;

type Index = HashMap<Arc<str>, usize, foldhash::fast::RandomState>;

/// An ordered JSON object. Inserting a key that is present replaces its value in place
/// (the key keeps its first position), as `IndexMap::insert` does.
#[derive(Clone, Default)]
pub struct DocMap {
    entries: Vec<(Arc<str>, Doc)>,
    /// Key -> position, only once the object has more than [`INDEX_ABOVE`] members.
    index: Option<Box<Index>>,
}

/// Whether `stored` is `key`: the same interned string, or equal text.
#[inline]
fn same_key(stored: &Arc<str>, key: &str) -> bool {
    let s: &str = stored;
    (s.as_ptr() == key.as_ptr() && s.len() == key.len()) || s == key
}

impl DocMap {
    /// An empty object.
    pub fn new() -> DocMap {
        DocMap::default()
    }

    /// An empty object with room for `n` members.
    pub fn with_capacity(n: usize) -> DocMap {
        DocMap {
            entries: Vec::with_capacity(n),
            index: None,
        }
    }

    /// The number of members.
    #[inline]
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the object has no members.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The position of `key`, if present.
    #[inline]
    pub fn get_index_of(&self, key: &str) -> Option<usize> {
        match &self.index {
            Some(index) => index.get(key).copied(),
            None => self.entries.iter().position(|(k, _)| same_key(k, key)),
        }
    }

    /// The value of `key`, if present.
    #[inline]
    pub fn get(&self, key: &str) -> Option<&Doc> {
        match &self.index {
            Some(index) => index.get(key).map(|&i| &self.entries[i].1),
            None => self
                .entries
                .iter()
                .find(|(k, _)| same_key(k, key))
                .map(|(_, v)| v),
        }
    }

    /// Whether `key` is a member.
    pub fn contains_key(&self, key: &str) -> bool {
        self.get_index_of(key).is_some()
    }

    /// The member at position `i`.
    pub fn get_index(&self, i: usize) -> Option<(&Arc<str>, &Doc)> {
        self.entries.get(i).map(|(k, v)| (k, v))
    }

    /// Sets `key` to `value`. A present key keeps its position and the old value is
    /// returned; a new key goes last.
    pub fn insert(&mut self, key: Arc<str>, value: Doc) -> Option<Doc> {
        if let Some(i) = self.get_index_of(&key) {
            return Some(std::mem::replace(&mut self.entries[i].1, value));
        }
        let at = self.entries.len();
        match &mut self.index {
            Some(index) => {
                index.insert(key.clone(), at);
            }
            None if at >= INDEX_ABOVE => {
                let mut index =
                    Index::with_capacity_and_hasher(at * 2, foldhash::fast::RandomState::default());
                for (i, (k, _)) in self.entries.iter().enumerate() {
                    index.insert(k.clone(), i);
                }
                index.insert(key.clone(), at);
                self.index = Some(Box::new(index));
            }
            None => {}
        }
        self.entries.push((key, value));
        None
    }

    /// Moves the members out into a map whose storage is exactly their size, leaving
    /// `self` empty but with its capacity, so a parser can reuse one scratch map per
    /// nesting level instead of growing (and over-allocating) a vector per object.
    pub(crate) fn take_exact(&mut self) -> DocMap {
        if self.index.is_some() {
            let mut map = std::mem::take(self);
            map.entries.shrink_to_fit();
            return map;
        }
        let mut entries = Vec::with_capacity(self.entries.len());
        entries.append(&mut self.entries);
        DocMap {
            entries,
            index: None,
        }
    }

    /// The members in order.
    pub fn iter(&self) -> Iter<'_> {
        Iter(self.entries.iter())
    }

    /// The keys in order.
    pub fn keys(&self) -> impl DoubleEndedIterator<Item = &Arc<str>> + ExactSizeIterator {
        self.entries.iter().map(|(k, _)| k)
    }

    /// The values in order.
    pub fn values(&self) -> impl DoubleEndedIterator<Item = &Doc> + ExactSizeIterator {
        self.entries.iter().map(|(_, v)| v)
    }

    /// The first member.
    pub fn first(&self) -> Option<(&Arc<str>, &Doc)> {
        self.get_index(0)
    }

    /// The last member.
    pub fn last(&self) -> Option<(&Arc<str>, &Doc)> {
        self.entries.last().map(|(k, v)| (k, v))
    }
}

/// The members of a [`DocMap`] in order, as `(&key, &value)`.
#[derive(Clone)]
pub struct Iter<'a>(std::slice::Iter<'a, (Arc<str>, Doc)>);

impl<'a> Iterator for Iter<'a> {
    type Item = (&'a Arc<str>, &'a Doc);
    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        self.0.next().map(|(k, v)| (k, v))
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        self.0.size_hint()
    }
}

impl DoubleEndedIterator for Iter<'_> {
    fn next_back(&mut self) -> Option<Self::Item> {
        self.0.next_back().map(|(k, v)| (k, v))
    }
}

impl ExactSizeIterator for Iter<'_> {}

impl<'a> IntoIterator for &'a DocMap {
    type Item = (&'a Arc<str>, &'a Doc);
    type IntoIter = Iter<'a>;
    fn into_iter(self) -> Iter<'a> {
        self.iter()
    }
}

impl IntoIterator for DocMap {
    type Item = (Arc<str>, Doc);
    type IntoIter = std::vec::IntoIter<(Arc<str>, Doc)>;
    fn into_iter(self) -> Self::IntoIter {
        self.entries.into_iter()
    }
}

impl<K: Into<Arc<str>>> FromIterator<(K, Doc)> for DocMap {
    fn from_iter<I: IntoIterator<Item = (K, Doc)>>(iter: I) -> DocMap {
        let iter = iter.into_iter();
        let mut map = DocMap::with_capacity(iter.size_hint().0);
        map.extend(iter);
        map
    }
}

impl<K: Into<Arc<str>>> Extend<(K, Doc)> for DocMap {
    fn extend<I: IntoIterator<Item = (K, Doc)>>(&mut self, iter: I) {
        for (k, v) in iter {
            self.insert(k.into(), v);
        }
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

    fn key(s: &str) -> Arc<str> {
        Arc::from(s)
    }

    /// Small and indexed maps must behave the same: order, replacement in place,
    /// lookups by equal text that is not the same allocation.
    #[test]
    fn small_and_indexed_maps_keep_order_and_replace_in_place() {
        for n in [3, INDEX_ABOVE, INDEX_ABOVE + 1, 100] {
            let mut m = DocMap::new();
            for i in 0..n {
                assert_eq!(m.insert(key(&format!("k{i}")), Doc::Int(i as i64)), None);
            }
            assert_eq!(m.index.is_some(), n > INDEX_ABOVE, "n = {n}");
            let old = m.insert(key("k1"), Doc::from("again"));
            assert_eq!(old, Some(Doc::Int(1)));
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
    }
}
