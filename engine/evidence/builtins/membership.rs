//! Membership with the container as the subject: the `containing` test.
//!
//! minijinja's `in` test puts the member first (`x is in(list)`), so
//! `selectattr('severity', 'in', ['HIGH', 'CRITICAL'])` works but there is
//! no way to keep the records whose *list-valued* field holds a value
//! (`selectattr('tags', ...)`): judges had to loop in a template
//! (`for r in rows if 'x' in r.tags`) or compute a boolean field first.
//! `containing` is that missing direction. A record without the field is
//! not containing anything, so a partial tool output filters instead of
//! failing the judge.

use minijinja::value::{Rest, ValueKind, ValueOrKwargs};
use minijinja::{Error, Value};

use super::args::{Args, is_nothing};

/// `subject is containing(value)`: whether the list `subject` has an element
/// equal to `value`, the string `subject` has `value` as a substring, or the
/// map `subject` has `value` as a key. A missing subject (none or undefined)
/// contains nothing; any other subject is an error naming it.
pub(crate) fn containing(raw: Rest<ValueOrKwargs>) -> Result<Value, Error> {
    let args = Args::bind("containing", &["subject", "value"], 2, raw)?;
    let subject = args.raw(0);
    let value = args.raw(1);
    let found = match subject.kind() {
        _ if is_nothing(&subject) => false,
        ValueKind::Seq | ValueKind::Iterable => subject
            .try_iter()
            .map_err(|_| args.error(0, EXPECTED, &subject))?
            .any(|item| item == value),
        ValueKind::String => match value.as_str() {
            Some(needle) => subject.as_str().unwrap_or_default().contains(needle),
            None => return Err(args.error(1, "a string when the subject is a string", &value)),
        },
        ValueKind::Map => !subject
            .get_item(&value)
            .unwrap_or(Value::UNDEFINED)
            .is_undefined(),
        _ => return Err(args.error(0, EXPECTED, &subject)),
    };
    Ok(Value::from(found))
}

/// What `containing` accepts as its subject, for error messages.
const EXPECTED: &str = "a list, a string or a map";

#[cfg(test)]
mod tests {
    use super::super::testutil::{error, json, json_lazy};
    use serde_json::json;

    fn rows() -> serde_json::Value {
        json!({"rows": [
            {"id": 1, "tags": ["sql", "high"]},
            {"id": 2, "tags": ["xss"]},
            {"id": 3},
            {"id": 4, "tags": null},
            {"id": 5, "tags": ["high"]},
        ]})
    }

    #[test]
    fn containing_selects_records_whose_list_field_holds_the_value() {
        assert_eq!(
            json(
                "rows|selectattr('tags', 'containing', 'high')|map(attribute='id')|list",
                rows()
            ),
            "[1,5]"
        );
        assert_eq!(
            json_lazy(
                "rows|rejectattr('tags', 'containing', 'high')|map(attribute='id')|list",
                rows()
            ),
            "[2,3,4]"
        );
    }

    #[test]
    fn containing_reads_lists_strings_and_maps() {
        assert_eq!(json("[1, 2] is containing(2)", json!({})), "true");
        assert_eq!(json("[1, 2] is containing(2.0)", json!({})), "true");
        assert_eq!(json("[[1, 2]] is containing([1, 2])", json!({})), "true");
        assert_eq!(json("'abc' is containing('bc')", json!({})), "true");
        assert_eq!(json("{'a': 1} is containing('a')", json!({})), "true");
        assert_eq!(json("{'a': 1} is containing('b')", json!({})), "false");
        assert_eq!(json("missing is containing('a')", json!({})), "false");
        assert_eq!(
            json(
                "[['a'], ['b', 'a'], []]|select('containing', 'a')|list|length",
                json!({})
            ),
            "2"
        );
    }

    #[test]
    fn containing_on_a_number_names_the_subject() {
        let msg = error("5 is containing(1)", json!({}));
        assert!(
            msg.contains(
                "containing(): argument 'subject' must be a list, a string or a map, got number 5"
            ),
            "{msg}"
        );
        let msg = error("'abc' is containing(1)", json!({}));
        assert!(
            msg.contains("argument 'value' must be a string when the subject is a string"),
            "{msg}"
        );
    }
}
