//! A document's repo id without building the document. A shard keeps a few repos out of
//! many, and every file must still be read for its id (it may be a field inside); a
//! streamed run reads the ground truth once for ids only. Building each document to
//! throw it away is most of what such a read costs.
//!
//! The skim walks the JSON with serde_json's own reader, so it sees the syntax errors a
//! full parse sees, and it checks the one thing [`Doc`]'s parser adds: no key twice in
//! an object. It keeps only what lies on the key paths. It answers only when the full
//! parse would accept the file: on anything else (a syntax error, a repeated key, or
//! two keys whose hashes meet) it gives up, and the caller parses the file in full,
//! which then words the problem as it always does.

use std::fmt;
use std::hash::BuildHasher;

use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};

use crate::doc::Doc;

/// The parts of `bytes` (strict JSON) that lie on the dotted `key` paths, as a document
/// [`Doc::dotted`] reads the same values from; `None` when the full parse must decide.
pub(crate) fn skim(bytes: &[u8], key: &[String]) -> Option<Doc> {
    let paths: Vec<Vec<&str>> = key.iter().map(|k| k.split('.').collect()).collect();
    let wanted: Vec<&[&str]> = paths.iter().map(Vec::as_slice).collect();
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let doc = Node { wanted: &wanted }.deserialize(&mut de).ok()?;
    de.end().ok()?;
    Some(doc)
}

/// One value of the walk, with the remainders of the key paths that reach it. With none
/// left the value is only checked; a scalar a path ends at is kept; an object or list
/// keeps what the longer paths reach in it (a path ending at one finds no id there,
/// as in the full document).
struct Node<'a> {
    wanted: &'a [&'a [&'a str]],
}

impl<'de> DeserializeSeed<'de> for Node<'_> {
    type Value = Doc;
    fn deserialize<D: de::Deserializer<'de>>(self, de: D) -> Result<Doc, D::Error> {
        de.deserialize_any(self)
    }
}

/// Paths that go on past a member named `name` (or item number `name`), without it.
fn next<'a>(wanted: &[&'a [&'a str]], name: &str) -> Vec<&'a [&'a str]> {
    wanted
        .iter()
        .filter(|p| p.first() == Some(&name))
        .map(|p| &p[1..])
        .collect()
}

impl<'de> Visitor<'de> for Node<'_> {
    type Value = Doc;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_unit<E>(self) -> Result<Doc, E> {
        Ok(Doc::Null)
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
        // Only a value a path ends at is kept; any other string costs nothing.
        Ok(if self.wanted.is_empty() {
            Doc::Null
        } else {
            Doc::from(v)
        })
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Doc, A::Error> {
        let mut kept = Vec::new();
        let mut i = 0usize;
        loop {
            let wanted = if self.wanted.is_empty() {
                Vec::new()
            } else {
                next(self.wanted, &i.to_string())
            };
            let Some(item) = seq.next_element_seed(Node { wanted: &wanted })? else {
                break;
            };
            if !self.wanted.is_empty() {
                // Every item keeps its place, as paths name items by number; the ones
                // no path enters are kept empty.
                kept.push(item);
            }
            i += 1;
        }
        Ok(Doc::from(kept))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Doc, A::Error> {
        let mut seen: Vec<u64> = Vec::new();
        let mut kept: Vec<(String, Doc)> = Vec::new();
        while let Some(key) = map.next_key::<Key<'de>>()? {
            let hash = key_hash(key.as_str());
            if seen.contains(&hash) {
                // The same key twice, or two keys of one hash: the full parse decides.
                return Err(de::Error::custom("a repeated key"));
            }
            seen.push(hash);
            let wanted = if self.wanted.is_empty() {
                Vec::new()
            } else {
                next(self.wanted, key.as_str())
            };
            let value = map.next_value_seed(Node { wanted: &wanted })?;
            if !wanted.is_empty() {
                kept.push((key.as_str().to_owned(), value));
            }
        }
        Ok(Doc::object(kept))
    }
}

/// A key as the reader gives it: borrowed from the file when it has no escapes.
enum Key<'de> {
    Borrowed(&'de str),
    Owned(String),
}

impl Key<'_> {
    fn as_str(&self) -> &str {
        match self {
            Key::Borrowed(s) => s,
            Key::Owned(s) => s,
        }
    }
}

impl<'de> de::Deserialize<'de> for Key<'de> {
    fn deserialize<D: de::Deserializer<'de>>(de: D) -> Result<Key<'de>, D::Error> {
        struct KeyVisitor;
        impl<'de> Visitor<'de> for KeyVisitor {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object key")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Key<'de>, E> {
                Ok(Key::Borrowed(v))
            }
            fn visit_str<E>(self, v: &str) -> Result<Key<'de>, E> {
                Ok(Key::Owned(v.to_owned()))
            }
        }
        de.deserialize_str(KeyVisitor)
    }
}

/// A fixed-seed hash of a key: equal keys always meet; unequal keys meeting only sends
/// the file to the full parse.
fn key_hash(key: &str) -> u64 {
    foldhash::fast::FixedState::with_seed(0x5eed).hash_one(key)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::documents::repo_id;

    fn keys(k: &[&str]) -> Vec<String> {
        k.iter().map(|s| (*s).to_owned()).collect()
    }

    /// Whatever the skim answers, the full parse accepts the file and reads the same id
    /// from it; where the full parse refuses, the skim gives up.
    fn agrees(text: &str, key: &[&str]) -> Option<String> {
        let key = keys(key);
        let full = serde_json::from_slice::<Doc>(text.as_bytes());
        let skimmed = skim(text.as_bytes(), &key);
        match (&full, &skimmed) {
            (Ok(doc), Some(part)) => {
                assert_eq!(repo_id(part, &key), repo_id(doc, &key), "{text}");
            }
            (Err(_), Some(_)) => panic!("the skim accepted what the parse refuses: {text}"),
            _ => {}
        }
        skimmed.map(|part| repo_id(&part, &key).unwrap_or_default())
    }

    #[test]
    fn the_id_read_by_a_skim_is_the_one_the_document_holds() {
        let key = ["id", "metadata.repo_id", "meta.list.1.name"];
        let some = |s: &str| Some(s.to_owned());
        assert_eq!(
            agrees(r#"{"id": "a", "x": [1, {"y": 2}]}"#, &key),
            some("a")
        );
        assert_eq!(
            agrees(r#"{"x": 1, "metadata": {"repo_id": "b"}}"#, &key),
            some("b")
        );
        assert_eq!(agrees(r#"{"metadata": {"repo_id": 7}}"#, &key), some("7"));
        // The first key holding a non-empty string or an integer wins, as in a document.
        assert_eq!(
            agrees(r#"{"id": "", "metadata": {"repo_id": "c"}}"#, &key),
            some("c")
        );
        assert_eq!(
            agrees(r#"{"id": 1.5, "metadata": {"repo_id": "c"}}"#, &key),
            some("c")
        );
        assert_eq!(
            agrees(r#"{"id": {"a": 1}, "metadata": {"repo_id": "d"}}"#, &key),
            some("d")
        );
        assert_eq!(agrees(r#"{"id": 18446744073709551615}"#, &key), some(""));
        assert_eq!(
            agrees(
                r#"{"meta": {"list": [{"name": "z"}, {"name": "e"}]}}"#,
                &key
            ),
            some("e")
        );
        assert_eq!(
            agrees(r#"{"meta": {"list": [{"name": "z"}]}}"#, &key),
            some("")
        );
        assert_eq!(agrees(r#"{"i\u0064": "escaped"}"#, &key), some("escaped"));
        assert_eq!(agrees(r#"[{"id": "in a list"}]"#, &key), some(""));
        assert_eq!(agrees(r#"{"other": "no id"}"#, &[]), some(""));
    }

    /// Only what lies on a key path is kept, each value as the document holds it.
    #[test]
    fn a_skim_keeps_the_key_paths_alone() {
        let text = r#"{"id": -3, "a": {"b": true, "c": 1.5, "d": null, "e": "x"},
                       "l": [{"n": "skip"}, {"n": "keep", "m": 2}], "z": {"id": "deep"}}"#;
        let part = skim(
            text.as_bytes(),
            &keys(&["id", "a.b", "a.c", "a.d", "l.1.n"]),
        );
        let want: Doc = serde_json::from_str(
            r#"{"id": -3, "a": {"b": true, "c": 1.5, "d": null}, "l": [{}, {"n": "keep"}]}"#,
        )
        .unwrap();
        assert_eq!(part, Some(want));
        assert_eq!(agrees(text, &["id"]), Some("-3".to_owned()));
    }

    #[test]
    fn what_the_full_parse_refuses_the_skim_gives_up_on() {
        let key = ["id"];
        for text in [
            r#"{"id": "a", "id": "b"}"#,
            r#"{"id": "a", "deep": [{"k": 1, "k": 2}]}"#,
            r#"{"id": "a", "deep": {"k\u0031": 1, "k1": 2}}"#,
            r#"{"id": "a""#,
            r#"{"id": "a"} trailing"#,
            r#"{"id": NaN}"#,
            "\u{feff}{\"id\": \"a\"}",
            r#"{"id": "a", "x": [1, 2,]}"#,
        ] {
            assert_eq!(agrees(text, &key), None, "{text}");
        }
        let deep = format!("{}{}", "[".repeat(200), "]".repeat(200));
        assert_eq!(agrees(&deep, &key), None);
    }
}
