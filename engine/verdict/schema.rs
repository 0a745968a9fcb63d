//! Schema-bound verdicts: the JSON Schema of a judge's verdict object, handed to the
//! provider so the reply is an object of the right shape (or a protocol error), and the
//! check of every reply against it.
//!
//! The schema is the strict subset both providers accept: every object closed
//! (`additionalProperties: false`) with every property required, integer scores as an
//! `enum` of the scale's whole numbers (numeric bounds are not accepted everywhere).
//! A provider that binds the reply still is not trusted: the reply must deserialise
//! into the verdict's exact shape, and then it is read by the judge's format as a text
//! reply would be (scale, confidence range, repeated keys), so a bound reply can only
//! be stricter than a text one.

use indexmap::IndexMap;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::spec::verdict_format::{FormatKind, NumberKind, VerdictFormat};

/// An integer scale wider than this is sent as a bare `integer` (the range is checked on
/// the reply instead of listed in the schema).
const MAX_ENUM: f64 = 100.0;

/// The verdict schema of a judge, with what its check needs.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct BoundSchema {
    schema: Value,
    sub_scores: Vec<String>,
}

/// Why a format cannot be bound to a schema (a judge-author error).
pub(crate) const UNBINDABLE: &str = "`transport: schema` needs the default JSON verdict: \
     `kind: json`, the score at `/score`, no `labels` and no `tie`";

impl BoundSchema {
    /// The schema of `format`'s verdict object with the judge's declared `sub_scores`
    /// (integers on `sub_scale`); `None` for a format whose reply is not that object.
    pub(crate) fn of(
        format: &VerdictFormat,
        sub_scores: &[String],
        sub_scale: [i64; 2],
    ) -> Option<Self> {
        let default_shape = format.kind == FormatKind::Json
            && format.field.as_deref().is_none_or(|f| f == "/score")
            && format.labels.is_none()
            && format.tie.is_none();
        if !default_shape {
            return None;
        }
        let mut properties = serde_json::Map::new();
        properties.insert("score".into(), score_schema(format));
        properties.insert(
            "confidence".into(),
            json!({"type": "number", "description": "How sure you are, from 0.0 to 1.0."}),
        );
        properties.insert(
            "reasoning".into(),
            json!({"type": "string", "description": "Why this score, citing the evidence."}),
        );
        properties.insert(
            "evidence_cited".into(),
            strings("The facts the score rests on."),
        );
        properties.insert(
            "recommendations".into(),
            strings("Changes that would improve the tool's output."),
        );
        if !sub_scores.is_empty() {
            properties.insert(
                "sub_scores".into(),
                sub_scores_schema(sub_scores, sub_scale),
            );
        }
        let required: Vec<&String> = properties.keys().collect();
        let schema = json!({
            "type": "object",
            "properties": properties,
            "required": required,
            "additionalProperties": false,
        });
        Some(BoundSchema {
            schema,
            sub_scores: sub_scores.to_vec(),
        })
    }

    /// The JSON Schema sent to the provider.
    pub(crate) fn schema(&self) -> &Value {
        &self.schema
    }

    /// Checks that `reply` is exactly one verdict object of this schema's shape; the
    /// message names the first violation, to be quoted back to the model.
    pub(crate) fn check(&self, reply: &str) -> Result<(), String> {
        let shape: Shape = serde_json::from_str(reply.trim())
            .map_err(|e| format!("the reply does not match the verdict schema: {e}"))?;
        match (&shape.sub_scores, self.sub_scores.is_empty()) {
            (Some(_), true) => {
                return Err(
                    "the reply does not match the verdict schema: unknown field `sub_scores`"
                        .into(),
                );
            }
            (None, false) => {
                return Err(
                    "the reply does not match the verdict schema: missing field `sub_scores`"
                        .into(),
                );
            }
            _ => {}
        }
        if let Some(given) = &shape.sub_scores {
            for name in &self.sub_scores {
                if !given.contains_key(name) {
                    return Err(format!(
                        "the reply does not match the verdict schema: missing field `sub_scores.{name}`"
                    ));
                }
            }
            if let Some(extra) = given.keys().find(|k| !self.sub_scores.contains(k)) {
                return Err(format!(
                    "the reply does not match the verdict schema: unknown field `sub_scores.{extra}`"
                ));
            }
        }
        Ok(())
    }
}

/// The verdict object's exact shape: serde names a missing, unknown or mistyped field.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)] // Read for its shape only; the format reads the values.
struct Shape {
    score: serde_json::Number,
    confidence: f64,
    reasoning: String,
    evidence_cited: Vec<String>,
    recommendations: Vec<String>,
    #[serde(default)]
    sub_scores: Option<IndexMap<String, i64>>,
}

fn score_schema(format: &VerdictFormat) -> Value {
    let [lo, hi] = format.scale;
    let description = format!("The score, from {lo} to {hi}.");
    match format.numbers {
        NumberKind::Decimal => json!({"type": "number", "description": description}),
        NumberKind::Integer if hi - lo <= MAX_ENUM => {
            let first = lo.ceil() as i64;
            let last = hi.floor() as i64;
            json!({"type": "integer", "enum": (first..=last).collect::<Vec<i64>>(), "description": description})
        }
        NumberKind::Integer => json!({"type": "integer", "description": description}),
    }
}

fn strings(description: &str) -> Value {
    json!({"type": "array", "items": {"type": "string"}, "description": description})
}

fn sub_scores_schema(names: &[String], [lo, hi]: [i64; 2]) -> Value {
    let one = json!({"type": "integer", "enum": (lo..=hi).collect::<Vec<i64>>()});
    let properties: serde_json::Map<String, Value> =
        names.iter().map(|n| (n.clone(), one.clone())).collect();
    json!({
        "type": "object",
        "properties": properties,
        "required": names,
        "additionalProperties": false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bound(subs: &[&str]) -> BoundSchema {
        let subs: Vec<String> = subs.iter().map(|s| s.to_string()).collect();
        BoundSchema::of(&VerdictFormat::default(), &subs, [1, 5]).unwrap()
    }

    const GOOD: &str = r#"{"score": 4, "confidence": 0.8, "reasoning": "r", "evidence_cited": [], "recommendations": ["x"]}"#;

    #[test]
    fn the_default_verdict_has_a_closed_schema_with_every_field_required() {
        let s = bound(&[]);
        let schema = s.schema();
        assert_eq!(schema["additionalProperties"], false);
        assert_eq!(
            schema["required"],
            json!([
                "score",
                "confidence",
                "reasoning",
                "evidence_cited",
                "recommendations"
            ])
        );
        assert_eq!(
            schema["properties"]["score"]["enum"],
            json!([1, 2, 3, 4, 5])
        );
    }

    #[test]
    fn declared_sub_scores_are_required_and_closed() {
        let s = bound(&["coverage"]);
        let subs = &s.schema()["properties"]["sub_scores"];
        assert_eq!(subs["required"], json!(["coverage"]));
        assert_eq!(subs["additionalProperties"], false);
        let with = GOOD.replace('}', r#", "sub_scores": {"coverage": 3}}"#);
        assert_eq!(s.check(&with), Ok(()));
        let err = s.check(GOOD).unwrap_err();
        assert!(err.contains("missing field `sub_scores`"), "{err}");
        let other = GOOD.replace('}', r#", "sub_scores": {"coverage": 3, "extra": 1}}"#);
        assert!(s.check(&other).unwrap_err().contains("`sub_scores.extra`"));
    }

    #[test]
    fn every_violation_is_named() {
        let s = bound(&[]);
        assert_eq!(s.check(GOOD), Ok(()));
        for (reply, named) in [
            (
                r#"{"score": 4, "reasoning": "r", "evidence_cited": [], "recommendations": []}"#,
                "missing field `confidence`",
            ),
            (&GOOD.replace("\"r\"", "3"), "invalid type"),
            (
                &GOOD.replace('}', r#", "mood": "happy"}"#),
                "unknown field `mood`",
            ),
            (&format!("Here it is: {GOOD}"), "expected value"),
            (&format!("{GOOD} {GOOD}"), "trailing characters"),
        ] {
            let err = s.check(reply).unwrap_err();
            assert!(err.contains(named), "{reply}: {err}");
        }
    }

    #[test]
    fn formats_other_than_the_default_object_cannot_be_bound() {
        let regex = VerdictFormat {
            kind: FormatKind::Regex,
            pattern: Some("(\\d)".into()),
            ..VerdictFormat::default()
        };
        assert!(BoundSchema::of(&regex, &[], [1, 5]).is_none());
        let pointer = VerdictFormat {
            field: Some("/rank".into()),
            ..VerdictFormat::default()
        };
        assert!(BoundSchema::of(&pointer, &[], [1, 5]).is_none());
        let decimal = VerdictFormat {
            numbers: NumberKind::Decimal,
            scale: [0.0, 10.0],
            ..VerdictFormat::default()
        };
        let s = BoundSchema::of(&decimal, &[], [1, 5]).unwrap();
        assert_eq!(s.schema()["properties"]["score"]["type"], "number");
    }
}
