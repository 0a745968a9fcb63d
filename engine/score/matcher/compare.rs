//! Field comparators and the records they read from.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet, HashMap};

use indexmap::IndexMap;

use super::Comparator;

/// Something with named text fields: a finding or a ground-truth item.
pub trait Record {
    /// Text of the field `name`; `None` when absent or null.
    fn field(&self, name: &str) -> Option<Cow<'_, str>>;
}

/// JSON objects: `name` is a dotted path (`location.path`); a segment that is a number
/// indexes an array. Strings are used as they are, numbers and booleans as written in
/// JSON, arrays of scalars as their items joined by spaces, objects as compact JSON.
impl Record for serde_json::Value {
    fn field(&self, name: &str) -> Option<Cow<'_, str>> {
        let mut v = self;
        for seg in name.split('.') {
            v = match v {
                serde_json::Value::Object(m) => m.get(seg)?,
                serde_json::Value::Array(a) => a.get(seg.parse::<usize>().ok()?)?,
                _ => return None,
            };
        }
        text(v)
    }
}

fn text(v: &serde_json::Value) -> Option<Cow<'_, str>> {
    use serde_json::Value;
    match v {
        Value::Null => None,
        Value::String(s) => Some(Cow::Borrowed(s)),
        Value::Number(_) | Value::Bool(_) | Value::Object(_) => Some(Cow::Owned(v.to_string())),
        Value::Array(items) => {
            let parts: Vec<String> = items
                .iter()
                .filter_map(|i| match i {
                    Value::Array(_) | Value::Object(_) => Some(i.to_string()),
                    _ => text(i).map(Cow::into_owned),
                })
                .collect();
            Some(Cow::Owned(parts.join(" ")))
        }
    }
}

macro_rules! map_record {
    ($($map:ident),*) => {$(
        impl<V: AsRef<str>> Record for $map<String, V> {
            fn field(&self, name: &str) -> Option<Cow<'_, str>> {
                self.get(name).map(|v| Cow::Borrowed(v.as_ref()))
            }
        }
    )*};
}
map_record!(BTreeMap, HashMap, IndexMap);

impl Comparator {
    /// Similarity in `[0, 1]` of two field values.
    #[must_use]
    pub fn compare(self, a: &str, b: &str) -> f64 {
        let hit = |x: bool| if x { 1.0 } else { 0.0 };
        match self {
            Comparator::Equal => hit(a.trim() == b.trim()),
            Comparator::Contains => {
                let (a, b) = (a.trim().to_lowercase(), b.trim().to_lowercase());
                hit(!a.is_empty() && !b.is_empty() && (a.contains(&b) || b.contains(&a)))
            }
            Comparator::SameBaseName => {
                let (a, b) = (base_name(a), base_name(b));
                hit(!a.is_empty() && a.eq_ignore_ascii_case(b))
            }
            Comparator::SharedWords => jaccard(&words(a), &words(b)),
        }
    }
}

/// Last segment after `/`, `\` or `:` (so a file path's basename, the name in
/// `module::name` or an ARN's resource), ignoring trailing separators. Dots are not
/// separators: they belong to file extensions and to `type.name` resource addresses.
fn base_name(s: &str) -> &str {
    let s = s.trim().trim_end_matches(['/', '\\', ':']);
    s.rsplit(['/', '\\', ':']).next().unwrap_or(s)
}

/// Lower-cased runs of letters and digits.
fn words(s: &str) -> BTreeSet<String> {
    s.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// `|A ∩ B| / |A ∪ B|`; two empty sets score 0 (no words, no evidence of a match).
#[allow(clippy::cast_precision_loss)]
fn jaccard(a: &BTreeSet<String>, b: &BTreeSet<String>) -> f64 {
    let union = a.union(b).count();
    if union == 0 {
        0.0
    } else {
        a.intersection(b).count() as f64 / union as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A list field reads as its items joined by spaces; an item that is itself a list
    /// or an object keeps its JSON text, so its own items are not run together.
    #[test]
    fn a_list_reads_as_its_items_and_nested_values_as_json() {
        let v = json!(["CVE-1", 2, true, null, ["a", "b"], {"k": 1}]);
        assert_eq!(
            text(&v).as_deref(),
            Some(r#"CVE-1 2 true ["a","b"] {"k":1}"#)
        );
        assert_eq!(text(&json!(null)), None);
    }

    #[test]
    fn comparators() {
        assert_eq!(Comparator::Equal.compare("CVE-1", " CVE-1 "), 1.0);
        assert_eq!(Comparator::Equal.compare("CVE-1", "cve-1"), 0.0);
        assert_eq!(
            Comparator::Contains.compare("S3 Bucket", "aws s3 bucket acl"),
            1.0
        );
        assert_eq!(
            Comparator::Contains.compare("aws_s3_bucket_acl.logs", "S3_BUCKET"),
            1.0
        );
        assert_eq!(Comparator::Contains.compare("", "anything"), 0.0);
        assert_eq!(
            Comparator::SameBaseName.compare("src/app/main.tf", "main.tf"),
            1.0
        );
        assert_eq!(
            Comparator::SameBaseName.compare("a\\b\\Main.tf", "x/main.tf/"),
            1.0
        );
        assert_eq!(
            Comparator::SameBaseName.compare("crate::util::parse", "parse"),
            1.0
        );
        assert_eq!(Comparator::SameBaseName.compare("main.tf", "vars.tf"), 0.0);
        assert_eq!(Comparator::SameBaseName.compare("/", "/"), 0.0);
        let j = Comparator::SharedWords.compare(
            "Overly permissive KMS key policy",
            "KMS key policy is too permissive",
        );
        assert!((j - 4.0 / 7.0).abs() < 1e-12, "{j}");
        assert_eq!(Comparator::SharedWords.compare("", "--"), 0.0);
    }

    #[test]
    fn json_fields() {
        let v = json!({"id": "F1", "loc": {"path": "a/b.tf", "line": 7}, "tags": ["iam", "kms"], "x": null});
        assert_eq!(v.field("id").as_deref(), Some("F1"));
        assert_eq!(v.field("loc.path").as_deref(), Some("a/b.tf"));
        assert_eq!(v.field("loc.line").as_deref(), Some("7"));
        assert_eq!(v.field("tags").as_deref(), Some("iam kms"));
        assert_eq!(v.field("tags.1").as_deref(), Some("kms"));
        assert_eq!(v.field("x"), None);
        assert_eq!(v.field("nope.deeper"), None);
        let mut m = BTreeMap::new();
        m.insert("id".to_string(), "V1");
        assert_eq!(m.field("id").as_deref(), Some("V1"));
    }
}
