//! Finding the JSON objects in a reply's free text, in linear time, and telling an
//! object that gives one key twice.

use serde::Deserialize;
use serde_json::Value;

/// What a scan of a reply found.
#[derive(Debug, Default)]
pub(super) struct Found<'a> {
    /// Complete top-level JSON objects, in reply order, with their text.
    pub(super) objects: Vec<(Value, &'a str)>,
    /// The character offset of a JSON-looking object that never closes.
    pub(super) truncated_at: Option<usize>,
    /// The first complaint about balanced braces that were not JSON.
    pub(super) invalid: Option<String>,
}

/// Finds every top-level JSON object in free text.
///
/// Braces inside JSON strings (with escapes) do not count, so `{"r": "use {x}"}`
/// is one object. An opening brace followed by a quote that never closes means a
/// cut-off object; anything after it is nested in it and is not read, because a
/// fragment of a truncated answer is a guess.
///
/// Each `{` is matched as if scanned from there alone, but the matches come from one
/// [`BraceIndex`] built in a single pass, so a reply full of unclosed braces costs
/// linear time rather than a rescan to its end per brace.
pub(super) fn find_objects(text: &str) -> Found<'_> {
    let bytes = text.as_bytes();
    let braces = BraceIndex::new(bytes);
    let mut found = Found::default();
    let mut i = 0;
    while let Some(offset) = bytes[i..].iter().position(|&b| b == b'{') {
        i += offset;
        match braces.closing(i) {
            Some(end) => {
                let slice = &text[i..=end];
                match serde_json::from_str::<Value>(slice) {
                    Ok(v @ Value::Object(_)) => {
                        found.objects.push((v, slice));
                        // The search goes on from the closing brace (not a `{`).
                        i = end;
                        continue;
                    }
                    Ok(_) => {}
                    Err(e) => {
                        if found.invalid.is_none() && looks_like_json(&bytes[i + 1..]) {
                            found.invalid = Some(e.to_string());
                        }
                    }
                }
            }
            None => {
                if looks_like_json(&bytes[i + 1..]) {
                    found.truncated_at = Some(text[..i].chars().count());
                    break;
                }
            }
        }
        i += 1;
    }
    found
}

/// The first key that an object in `json` (valid JSON) gives twice, at any depth.
/// serde_json keeps the last of repeated keys silently; a verdict must not be read
/// from text that says two things.
pub(super) fn repeated_key(json: &str) -> Option<String> {
    match serde_json::from_str::<NoRepeat>(json) {
        Ok(_) => None,
        Err(e) => {
            let msg = e.to_string();
            msg.strip_prefix(REPEATED)
                .and_then(|rest| rest.split('`').next())
                .map(str::to_owned)
        }
    }
}

const REPEATED: &str = "repeated key `";

/// Walks JSON and fails on the first repeated key of an object.
struct NoRepeat;

impl<'de> Deserialize<'de> for NoRepeat {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(NoRepeatVisitor)
    }
}

struct NoRepeatVisitor;

impl<'de> serde::de::Visitor<'de> for NoRepeatVisitor {
    type Value = NoRepeat;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("JSON")
    }
    fn visit_bool<E>(self, _: bool) -> Result<NoRepeat, E> {
        Ok(NoRepeat)
    }
    fn visit_i64<E>(self, _: i64) -> Result<NoRepeat, E> {
        Ok(NoRepeat)
    }
    fn visit_u64<E>(self, _: u64) -> Result<NoRepeat, E> {
        Ok(NoRepeat)
    }
    fn visit_f64<E>(self, _: f64) -> Result<NoRepeat, E> {
        Ok(NoRepeat)
    }
    fn visit_str<E>(self, _: &str) -> Result<NoRepeat, E> {
        Ok(NoRepeat)
    }
    fn visit_unit<E>(self) -> Result<NoRepeat, E> {
        Ok(NoRepeat)
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<NoRepeat, A::Error> {
        while seq.next_element::<NoRepeat>()?.is_some() {}
        Ok(NoRepeat)
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<NoRepeat, A::Error> {
        let mut seen = std::collections::HashSet::new();
        while let Some(key) = map.next_key::<String>()? {
            if !seen.insert(key.clone()) {
                return Err(serde::de::Error::custom(format!("{REPEATED}{key}`")));
            }
            map.next_value::<NoRepeat>()?;
        }
        Ok(NoRepeat)
    }
}

/// True when the text after `{` starts like a JSON object (a key or `}`).
fn looks_like_json(rest: &[u8]) -> bool {
    rest.iter()
        .find(|b| !b.is_ascii_whitespace())
        .is_none_or(|&b| b == b'"' || b == b'}')
}

/// Where a scan started at any `{` finds its closing brace, for every `{` at once.
///
/// A scan honours JSON strings, so where it stands depends on where it started: the
/// same `"` opens a string for one start and closes one for another. But a scan is
/// only ever in one of three states (outside a string, inside one, just after a
/// backslash inside one), and two scans in the same state at the same byte go on
/// identically. The nodes (byte, state) therefore form a forest whose edges follow
/// the text; `potential` is the brace depth still to be closed from a node to the end,
/// and the scan started at a `{` closes at the first node whose potential is back up
/// to that brace's own. `next_higher` holds, per node, the first later node with a
/// higher potential; since potentials move by at most one per byte, it is computed
/// from the end in constant time per node.
struct BraceIndex {
    /// Per node `byte * 3 + state`: the first later node with a higher potential, or
    /// [`BraceIndex::NONE`].
    /// (32 bits: replies are capped far below 4 GB, see
    /// [`MAX_REPLY_BYTES`](crate::provider::MAX_REPLY_BYTES).)
    next_higher: Vec<u32>,
}

impl BraceIndex {
    const NONE: u32 = u32::MAX;
    const OUTSIDE: usize = 0;
    const IN_STRING: usize = 1;
    const ESCAPED: usize = 2;

    fn new(bytes: &[u8]) -> BraceIndex {
        let nodes = (bytes.len() + 1) * 3;
        // Open braces minus closed ones from a node to the end of the text.
        let mut potential = vec![0i32; nodes];
        let mut next_higher = vec![Self::NONE; nodes];
        for (at, &b) in bytes.iter().enumerate().rev() {
            for state in [Self::OUTSIDE, Self::IN_STRING, Self::ESCAPED] {
                let node = at * 3 + state;
                let parent = (at + 1) * 3 + Self::step(state, b);
                potential[node] = Self::depth_change(state, b) + potential[parent];
                // At most three hops: each lands exactly one level higher.
                let mut candidate = parent as u32;
                while candidate != Self::NONE && potential[candidate as usize] <= potential[node] {
                    candidate = next_higher[candidate as usize];
                }
                next_higher[node] = candidate;
            }
        }
        BraceIndex { next_higher }
    }

    /// The state after reading `b` in `state`.
    fn step(state: usize, b: u8) -> usize {
        match (state, b) {
            (Self::OUTSIDE, b'"') => Self::IN_STRING,
            (Self::OUTSIDE, _) => Self::OUTSIDE,
            (Self::IN_STRING, b'\\') => Self::ESCAPED,
            (Self::IN_STRING, b'"') => Self::OUTSIDE,
            _ => Self::IN_STRING,
        }
    }

    fn depth_change(state: usize, b: u8) -> i32 {
        match (state, b) {
            (Self::OUTSIDE, b'{') => 1,
            (Self::OUTSIDE, b'}') => -1,
            _ => 0,
        }
    }

    /// The index of the brace closing the `{` at `start`, scanning from `start` alone.
    fn closing(&self, start: usize) -> Option<usize> {
        let after = (start + 1) * 3 + Self::OUTSIDE;
        let found = *self.next_higher.get(after)?;
        (found != Self::NONE).then(|| found as usize / 3 - 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The brace matching of the single-pass index is the one a scan from each brace
    /// alone gives (the reference below, quadratic on unclosed braces).
    fn closing_by_rescan(bytes: &[u8], start: usize) -> Option<usize> {
        let (mut depth, mut in_string, mut escaped) = (0usize, false, false);
        for (offset, &b) in bytes[start..].iter().enumerate() {
            if in_string {
                if escaped {
                    escaped = false;
                } else if b == b'\\' {
                    escaped = true;
                } else if b == b'"' {
                    in_string = false;
                }
                continue;
            }
            match b {
                b'"' => in_string = true,
                b'{' => depth += 1,
                b'}' => {
                    depth -= 1;
                    if depth == 0 {
                        return Some(start + offset);
                    }
                }
                _ => {}
            }
        }
        None
    }

    proptest::proptest! {
        #[test]
        fn brace_index_matches_a_scan_from_each_brace(
            text in proptest::collection::vec(
                proptest::sample::select(vec![b'{', b'}', b'"', b'\\', b'a', b':']),
                0..80,
            )
        ) {
            let index = BraceIndex::new(&text);
            for (i, &b) in text.iter().enumerate() {
                if b == b'{' {
                    proptest::prop_assert_eq!(index.closing(i), closing_by_rescan(&text, i));
                }
            }
        }
    }
}
