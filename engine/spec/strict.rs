//! Strict scalars: numbers and booleans read the way an editor's YAML 1.2 schema check
//! reads them, so a file caldera accepts is one the JSON Schema accepts, and back.
//!
//! serde-saphyr on its own converts a quoted `"0.35"` into a number and a quoted
//! `"true"` into a boolean when the target type asks for one; an editor sees text there
//! and refuses it. These readers take the value's own YAML type instead
//! (`deserialize_any`): a number must be written as a number (`0.35`, `1`, `0x1`), a
//! whole number may be written `2` or `2.0` (JSON Schema cannot tell them apart), and a
//! boolean must be `true` or `false`.

use indexmap::IndexMap;
use serde::de::{self, Deserializer, MapAccess, SeqAccess, Unexpected, Visitor};

/// What a number field says it expects.
const A_NUMBER: &str = "a number";
/// What a whole-number field says it expects.
const A_WHOLE_NUMBER: &str = "a whole number";

#[derive(Clone, Copy)]
struct Number;

impl<'de> Visitor<'de> for Number {
    type Value = f64;
    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(A_NUMBER)
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<f64, E> {
        Ok(v as f64)
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<f64, E> {
        Ok(v as f64)
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<f64, E> {
        Ok(v)
    }
}

#[derive(Clone, Copy)]
struct Whole;

impl<'de> Visitor<'de> for Whole {
    type Value = i64;
    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(A_WHOLE_NUMBER)
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<i64, E> {
        Ok(v)
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<i64, E> {
        i64::try_from(v).map_err(|_| E::invalid_value(Unexpected::Unsigned(v), &self))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<i64, E> {
        if v.fract() == 0.0 && v.abs() < 9.0e15 {
            Ok(v as i64)
        } else {
            Err(E::invalid_value(Unexpected::Float(v), &self))
        }
    }
}

struct Flag;

impl<'de> Visitor<'de> for Flag {
    type Value = bool;
    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("`true` or `false`")
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<bool, E> {
        Ok(v)
    }
}

/// An optional value: YAML `null` (or `~`) is `None`, anything else goes to `inner`.
struct Maybe<V>(V);

impl<'de, V: Visitor<'de>> Visitor<'de> for Maybe<V> {
    type Value = Option<V::Value>;
    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.expecting(f)
    }
    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self.0).map(Some)
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
        self.0.visit_i64(v).map(Some)
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
        self.0.visit_u64(v).map(Some)
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
        self.0.visit_f64(v).map(Some)
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Self::Value, E> {
        self.0.visit_bool(v).map(Some)
    }
}

/// A number.
pub fn number<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    d.deserialize_any(Number)
}

/// An optional number.
pub fn opt_number<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
    d.deserialize_any(Maybe(Number))
}

/// A whole number (`2` or `2.0`).
pub fn whole<'de, D: Deserializer<'de>>(d: D) -> Result<i64, D::Error> {
    d.deserialize_any(Whole)
}

/// An optional whole number.
pub fn opt_whole<'de, D: Deserializer<'de>>(d: D) -> Result<Option<i64>, D::Error> {
    d.deserialize_any(Maybe(Whole))
}

/// A boolean.
pub fn flag<'de, D: Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
    d.deserialize_any(Flag)
}

/// Two numbers, `[min, max]`.
pub fn number_pair<'de, D: Deserializer<'de>>(d: D) -> Result<[f64; 2], D::Error> {
    struct Pair;
    impl<'de> Visitor<'de> for Pair {
        type Value = [f64; 2];
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("two numbers `[min, max]`")
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<[f64; 2], A::Error> {
            let mut out = [0.0; 2];
            for (i, slot) in out.iter_mut().enumerate() {
                *slot = seq
                    .next_element_seed(Seed(Number))?
                    .ok_or_else(|| de::Error::invalid_length(i, &self))?;
            }
            if seq.next_element::<de::IgnoredAny>()?.is_some() {
                return Err(de::Error::invalid_length(3, &self));
            }
            Ok(out)
        }
    }
    d.deserialize_seq(Pair)
}

/// An optional map of text to numbers (verdict labels).
pub fn opt_number_map<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<Option<IndexMap<String, f64>>, D::Error> {
    struct Labels;
    impl<'de> Visitor<'de> for Labels {
        type Value = Option<IndexMap<String, f64>>;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a map from labels to numbers")
        }
        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            let mut out = IndexMap::new();
            while let Some(key) = map.next_key::<String>()? {
                let value = map.next_value_seed(Seed(Number))?;
                out.insert(key, value);
            }
            Ok(Some(out))
        }
    }
    d.deserialize_any(Labels)
}

/// A visitor used as a seed (for list items and map values).
struct Seed<V>(V);

impl<'de, V: Visitor<'de>> de::DeserializeSeed<'de> for Seed<V> {
    type Value = V::Value;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<V::Value, D::Error> {
        d.deserialize_any(self.0)
    }
}
