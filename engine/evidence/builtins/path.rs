//! Dotted-path lookup (`a.b.0.c`) over any map- or list-like value.
//!
//! The engine wraps JSON documents in lazy objects, so the lookup only uses
//! the generic `Value` protocol. Missing steps give undefined instead of an
//! error: built-ins decide what absence means for them.

use minijinja::Value;
use minijinja::value::ValueKind;

/// Follows `path` from `value`. An empty path is the value itself.
///
/// On maps a segment is first tried as a string key (JSON object keys such
/// as `"0"` are strings), then, if it is an integer, as a numeric key. On
/// lists an integer segment indexes (negative counts from the end).
pub(crate) fn lookup(value: &Value, path: &str) -> Value {
    if path.is_empty() {
        return value.clone();
    }
    let mut current = value.clone();
    for segment in path.split('.') {
        current = step(&current, segment);
        if current.is_undefined() {
            break;
        }
    }
    current
}

fn step(value: &Value, segment: &str) -> Value {
    let index = segment.parse::<i64>().ok();
    match value.kind() {
        ValueKind::Map | ValueKind::Plain => {
            let found = value
                .get_item(&Value::from(segment))
                .unwrap_or(Value::UNDEFINED);
            match (found.is_undefined(), index) {
                (true, Some(i)) => value.get_item(&Value::from(i)).unwrap_or(Value::UNDEFINED),
                _ => found,
            }
        }
        ValueKind::Seq | ValueKind::Iterable => match index {
            Some(i) => value.get_item(&Value::from(i)).unwrap_or(Value::UNDEFINED),
            None => Value::UNDEFINED,
        },
        _ => Value::UNDEFINED,
    }
}

/// The comparison key of an item: the item itself without a path, else the
/// value at the path. Scalars have no fields, so a path applies to
/// maps only and a scalar item is its own key; this lets a list of ids be
/// matched against a list of records.
///
/// A list item is indexed when the path starts with a number (`'1'` is the
/// second element of each `[key, value]` pair); otherwise it is its own key.
pub(crate) fn key_of(item: &Value, path: Option<&str>) -> Value {
    match path {
        Some(path) if matches!(item.kind(), ValueKind::Map | ValueKind::Plain) => {
            lookup(item, path)
        }
        Some(path)
            if matches!(item.kind(), ValueKind::Seq)
                && path
                    .split('.')
                    .next()
                    .is_some_and(|s| s.parse::<i64>().is_ok()) =>
        {
            lookup(item, path)
        }
        _ => item.clone(),
    }
}

/// A form of `value` fit for hashing: maps become plain maps with sorted
/// keys, lists plain lists, recursively. minijinja hashes a map by its
/// pairs in iteration order while equality ignores order, so two equal maps
/// written in different key order (or one lazy, one plain) would otherwise
/// land in different hash buckets and never match.
pub(crate) fn canonical(value: &Value) -> Value {
    match value.kind() {
        ValueKind::Map => {
            let mut pairs: Vec<(Value, Value)> = match value.try_iter() {
                Ok(keys) => keys
                    .map(|key| {
                        let item = value.get_item(&key).unwrap_or(Value::UNDEFINED);
                        (canonical(&key), canonical(&item))
                    })
                    .collect(),
                Err(_) => Vec::new(),
            };
            pairs.sort_by(|a, b| a.0.cmp(&b.0));
            Value::from_pairs(pairs)
        }
        ValueKind::Seq | ValueKind::Iterable => match value.try_iter() {
            Ok(items) => Value::from(items.map(|item| canonical(&item)).collect::<Vec<_>>()),
            Err(_) => value.clone(),
        },
        _ => value.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The value of a minijinja expression, as a judge would build it.
    fn eval(expr: &str) -> Value {
        let env = minijinja::Environment::new();
        env.compile_expression(expr).unwrap().eval(()).unwrap()
    }

    #[test]
    fn a_numeric_segment_reads_an_integer_key_of_a_map_when_no_text_key_matches() {
        // Maps built in expressions (group_by over numbers, `{1: ...}`) have integer keys.
        let by_number = eval("{1: 'one', 2: 'two'}");
        assert_eq!(lookup(&by_number, "2"), Value::from("two"));
        let by_text = eval("{'2': 'text two'}");
        assert_eq!(lookup(&by_text, "2"), Value::from("text two"));
    }

    #[test]
    fn a_list_item_is_indexed_only_by_a_path_that_starts_with_a_number() {
        let pair = Value::from(vec![Value::from("rule-a"), Value::from(3)]);
        assert_eq!(key_of(&pair, Some("1")), Value::from(3));
        assert_eq!(key_of(&pair, Some("0")), Value::from("rule-a"));
        // A named path does not apply to a list: the list is its own key.
        assert_eq!(key_of(&pair, Some("name")), pair);
        // A scalar has no fields, whatever the path: it is its own key.
        assert_eq!(key_of(&Value::from(7), Some("1")), Value::from(7));
    }
}
