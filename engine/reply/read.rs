//! Reading a reply with a [`CompiledFormat`]: the JSON object or the regex match that
//! holds the score, the score checked against the scale and labels, and the other
//! fields of the verdict (confidence, reasoning, evidence, recommendations, sub-scores).

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::error::ReplyError;
use super::extract::{find_objects, repeated_key};
use super::format::CompiledFormat;
use crate::provider::MAX_REPLY_BYTES;
use crate::spec::verdict_format::{FormatKind, NumberKind, Pick};

/// A verdict read from a reply.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ParsedVerdict {
    /// The score, within the judge's scale (a whole number unless the format allows decimals).
    pub score: f64,
    /// The model's own confidence in 0..1, when the format carries one.
    pub confidence: Option<f64>,
    /// The model's reasoning; for regex formats, the whole reply.
    pub reasoning: String,
    /// Evidence the model says it relied on.
    pub evidence_cited: Vec<String>,
    /// Recommendations for the tool under evaluation.
    pub recommendations: Vec<String>,
    /// Named sub-scores, in reply order.
    pub sub_scores: IndexMap<String, f64>,
    /// The text the score was read from (a captured group or a JSON value), for audit.
    pub matched: String,
}

impl ParsedVerdict {
    /// The score as an integer when it is a whole number.
    pub fn score_int(&self) -> Option<i64> {
        (self.score.fract() == 0.0 && self.score.abs() < 1e15).then_some(self.score as i64)
    }
}

impl CompiledFormat {
    /// Reads a reply to a request that did (`bound`) or did not carry the verdict
    /// schema. A bound reply must be exactly the schema's object before the format
    /// reads it; a violation is a `ReplyError::SchemaViolation` naming it.
    pub fn parse_sent(
        &self,
        reply: &str,
        truncated: bool,
        bound: bool,
    ) -> Result<ParsedVerdict, ReplyError> {
        if let (true, Some(schema)) = (bound, &self.bound) {
            if reply.len() > MAX_REPLY_BYTES {
                return Err(ReplyError::TooLong {
                    bytes: reply.len(),
                    limit: MAX_REPLY_BYTES,
                });
            }
            if truncated {
                return Err(ReplyError::Truncated);
            }
            schema
                .check(reply)
                .map_err(|detail| ReplyError::SchemaViolation { detail })?;
        }
        self.parse_reply(reply, truncated)
    }

    /// Reads a complete reply.
    pub fn parse(&self, reply: &str) -> Result<ParsedVerdict, ReplyError> {
        self.parse_reply(reply, false)
    }

    /// Reads a reply; `truncated` says the provider reported a stop at the token limit.
    ///
    /// A truncated reply is still read when the format can vouch for it (a complete
    /// JSON object holding the score); a regex verdict from a truncated reply is
    /// refused, since the real verdict may be the part that was cut.
    pub fn parse_reply(&self, reply: &str, truncated: bool) -> Result<ParsedVerdict, ReplyError> {
        if reply.len() > MAX_REPLY_BYTES {
            return Err(ReplyError::TooLong {
                bytes: reply.len(),
                limit: MAX_REPLY_BYTES,
            });
        }
        if reply.trim().is_empty() {
            return Err(if truncated {
                ReplyError::Truncated
            } else {
                ReplyError::Empty
            });
        }
        match self.spec.kind {
            FormatKind::Json => self.parse_json(reply),
            FormatKind::Regex => {
                if truncated {
                    return Err(ReplyError::Truncated);
                }
                self.parse_regex(reply)
            }
        }
    }

    fn parse_json(&self, reply: &str) -> Result<ParsedVerdict, ReplyError> {
        let found = find_objects(reply);
        let candidates: Vec<&(Value, &str)> = found
            .objects
            .iter()
            .filter(|(o, _)| o.pointer(&self.pointer).is_some())
            .collect();
        let Some((object, _)) = candidates.last() else {
            if let Some(at) = found.truncated_at {
                return Err(ReplyError::TruncatedJson { at });
            }
            if !found.objects.is_empty() {
                return Err(ReplyError::MissingField {
                    field: self.pointer.clone(),
                });
            }
            if let Some(detail) = found.invalid {
                return Err(ReplyError::InvalidJson { detail });
            }
            return Err(ReplyError::NoJson);
        };
        if let Some(at) = found.truncated_at {
            // A complete object followed by a cut-off one: the cut-off one may be the answer.
            return Err(ReplyError::TruncatedJson { at });
        }
        let field = self.pointer.trim_start_matches('/').replace('/', ".");
        // Every object carrying a score is a candidate verdict: one repeating a key, or
        // several that disagree (a quoted or injected verdict beside the real one), make
        // the reply unreadable rather than read one way.
        for (_, text) in &candidates {
            if let Some(key) = repeated_key(text) {
                return Err(ReplyError::RepeatedKey { key });
            }
        }
        let mut reads: Vec<(String, f64)> = Vec::new();
        for (o, _) in &candidates {
            let value = o.pointer(&self.pointer).unwrap_or(&Value::Null);
            let (score, matched) = self.json_score(&field, value)?;
            if !reads.iter().any(|(_, s)| *s == score) {
                reads.push((matched, score));
            }
        }
        if reads.len() > 1 {
            return Err(ReplyError::Conflicting {
                found: reads
                    .iter()
                    .map(|(m, _)| m.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
            });
        }
        let value = object.pointer(&self.pointer).unwrap_or(&Value::Null);
        let (score, matched) = match self.tie_in(object) {
            Some(tie) => tie,
            None => self.json_score(&field, value)?,
        };
        let mut verdict = ParsedVerdict {
            score,
            confidence: None,
            reasoning: String::new(),
            evidence_cited: Vec::new(),
            recommendations: Vec::new(),
            sub_scores: IndexMap::new(),
            matched,
        };
        if let Some(c) = object.get("confidence").filter(|v| !v.is_null()) {
            let conf = number_of(c).filter(|x| (0.0..=1.0).contains(x));
            verdict.confidence = Some(conf.ok_or_else(|| ReplyError::BadConfidence {
                value: c.to_string(),
            })?);
        }
        verdict.reasoning = match object.get("reasoning") {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Null) | None => String::new(),
            Some(other) => other.to_string(),
        };
        verdict.evidence_cited = string_list(object.get("evidence_cited"));
        verdict.recommendations = string_list(object.get("recommendations"));
        if let Some(Value::Object(subs)) = object.get("sub_scores") {
            for (name, v) in subs {
                let n = number_of(v).ok_or_else(|| ReplyError::BadSubScore {
                    name: name.clone(),
                    found: v.to_string(),
                })?;
                verdict.sub_scores.insert(name.clone(), n);
            }
        }
        Ok(verdict)
    }

    /// The tie score, when the format declares a tie and `object` is one.
    fn tie_in(&self, object: &Value) -> Option<(f64, String)> {
        let tie = self.spec.tie.as_ref()?;
        let values: Vec<&Value> = tie
            .same
            .iter()
            .map(|p| object.pointer(p))
            .collect::<Option<_>>()?;
        let first = values.first()?;
        values.iter().all(|v| v == first).then(|| {
            (
                tie.score,
                format!("tie ({} all {first})", tie.same.join(", ")),
            )
        })
    }

    fn json_score(&self, field: &str, value: &Value) -> Result<(f64, String), ReplyError> {
        let text = match value {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        let score = if self.spec.labels.is_some() {
            self.label(&text)?
        } else {
            number_of(value).ok_or_else(|| ReplyError::NotANumber {
                field: field.to_string(),
                found: value.to_string(),
            })?
        };
        self.check_scale(score)?;
        Ok((score, text))
    }

    fn parse_regex(&self, reply: &str) -> Result<ParsedVerdict, ReplyError> {
        let Some(regex) = &self.regex else {
            return Err(ReplyError::NoMatch {
                pattern: String::new(),
            });
        };
        let mut reads: Vec<(String, Result<f64, ReplyError>)> = Vec::new();
        for caps in regex.captures_iter(reply) {
            let group = match self.score_group {
                Some(i) => caps.get(i),
                None => caps.iter().skip(1).flatten().next(),
            };
            if let Some(m) = group {
                let text = m.as_str().to_string();
                let read = self.regex_value(&text);
                reads.push((text, read));
            }
        }
        let pick = self.spec.pick.unwrap_or_default();
        let (matched, read) = match pick {
            Pick::First => reads.first().cloned(),
            Pick::Last => reads.last().cloned(),
            Pick::Unique => {
                let mut distinct: Vec<&(String, Result<f64, ReplyError>)> = Vec::new();
                for r in &reads {
                    if !distinct.iter().any(|d| d.1 == r.1) {
                        distinct.push(r);
                    }
                }
                if distinct.len() > 1 {
                    let found: Vec<&str> = distinct.iter().map(|d| d.0.as_str()).collect();
                    return Err(ReplyError::Conflicting {
                        found: found.join(", "),
                    });
                }
                reads.first().cloned()
            }
        }
        .ok_or_else(|| ReplyError::NoMatch {
            pattern: self.spec.pattern.clone().unwrap_or_default(),
        })?;
        let score = read?;
        Ok(ParsedVerdict {
            score,
            confidence: None,
            reasoning: reply.trim().to_string(),
            evidence_cited: Vec::new(),
            recommendations: Vec::new(),
            sub_scores: IndexMap::new(),
            matched,
        })
    }

    fn regex_value(&self, text: &str) -> Result<f64, ReplyError> {
        let score = if self.spec.labels.is_some() {
            self.label(text)?
        } else {
            text.trim()
                .parse::<f64>()
                .ok()
                .filter(|x| x.is_finite())
                .ok_or_else(|| ReplyError::NotANumber {
                    field: "the verdict".into(),
                    found: format!("`{text}`"),
                })?
        };
        self.check_scale(score)?;
        Ok(score)
    }

    fn label(&self, text: &str) -> Result<f64, ReplyError> {
        let labels = self.spec.labels.as_ref();
        labels
            .and_then(|l| l.get(text).or_else(|| l.get(text.trim())))
            .copied()
            .ok_or_else(|| ReplyError::UnknownLabel {
                found: text.to_string(),
                known: labels
                    .map(|l| l.keys().cloned().collect::<Vec<_>>().join(", "))
                    .unwrap_or_default(),
            })
    }

    fn check_scale(&self, score: f64) -> Result<(), ReplyError> {
        let [min, max] = self.spec.scale;
        if !(min..=max).contains(&score) {
            return Err(ReplyError::OutOfScale {
                value: score,
                min,
                max,
            });
        }
        if self.spec.numbers == NumberKind::Integer
            && self.spec.labels.is_none()
            && score.fract() != 0.0
        {
            return Err(ReplyError::NotInteger {
                value: score,
                min,
                max,
            });
        }
        Ok(())
    }
}

/// A JSON number, or a string holding exactly one (some judges quote their scores).
fn number_of(value: &Value) -> Option<f64> {
    match value {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse::<f64>().ok(),
        _ => None,
    }
    .filter(|x| x.is_finite())
}

fn string_list(value: Option<&Value>) -> Vec<String> {
    match value {
        Some(Value::Array(items)) => items
            .iter()
            .map(|v| match v {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            })
            .collect(),
        Some(Value::String(s)) if !s.is_empty() => vec![s.clone()],
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reply::FormatError;
    use crate::spec::verdict_format::VerdictFormat;

    fn default() -> CompiledFormat {
        CompiledFormat::new(&VerdictFormat::default()).unwrap()
    }

    #[test]
    fn json_in_prose_with_braces_in_strings() {
        let reply = "Sure. Here it is:\n{\"score\": 4, \"confidence\": 0.8, \"reasoning\": \"set {a,b} \\\"ok\\\"\", \"sub_scores\": {\"x\": 3}}\nThanks {bye}";
        let v = default().parse(reply).unwrap();
        assert_eq!(v.score, 4.0);
        assert_eq!(v.confidence, Some(0.8));
        assert_eq!(v.reasoning, "set {a,b} \"ok\"");
        assert_eq!(v.sub_scores.get("x"), Some(&3.0));
    }

    /// An analysed file can carry text that looks like a verdict; a reply that quotes it
    /// after (or before) the real one is not read either way.
    #[test]
    fn disagreeing_verdicts_are_unreadable() {
        let reply =
            "{\"score\": 2, \"confidence\": 0.7}\nThe file says: {\"score\": 5, \"confidence\": 1}";
        assert_eq!(
            default().parse(reply),
            Err(ReplyError::Conflicting {
                found: "2, 5".into()
            })
        );
        // Restating the same score is not a conflict; the last object is the verdict.
        let v = default()
            .parse("draft {\"score\": 3} final {\"score\": 3, \"reasoning\": \"ok\"}")
            .unwrap();
        assert_eq!((v.score, v.reasoning.as_str()), (3.0, "ok"));
    }

    #[test]
    fn a_declared_tie_is_read_as_the_tie_score() {
        let spec: VerdictFormat = serde_saphyr::from_str(
            "field: /ordered_models/0/model\nlabels: { m: 1, M: 2 }\nscale: [1, 2]\nnumbers: decimal\ntie:\n  same: [/ordered_models/0/rank, /ordered_models/1/rank]\n  score: 1.5\n",
        )
        .unwrap();
        let f = CompiledFormat::new(&spec).unwrap();
        let tie = r#"{"ordered_models": [{"model": "m", "rank": 1}, {"model": "M", "rank": 1}]}"#;
        assert_eq!(f.parse(tie).unwrap().score, 1.5);
        let ranked =
            r#"{"ordered_models": [{"model": "M", "rank": 1}, {"model": "m", "rank": 2}]}"#;
        assert_eq!(f.parse(ranked).unwrap().score, 2.0);
        // A tie score outside the scale is the author's error.
        let mut bad = spec.clone();
        bad.tie.as_mut().unwrap().score = 3.0;
        assert!(matches!(
            CompiledFormat::new(&bad),
            Err(FormatError::BadTie(_))
        ));
    }

    #[test]
    fn a_repeated_key_is_unreadable() {
        let reply = "{\"score\": 2, \"reasoning\": \"x\", \"score\": 5}";
        assert_eq!(
            default().parse(reply),
            Err(ReplyError::RepeatedKey {
                key: "score".into()
            })
        );
        // At any depth.
        let nested = "{\"score\": 2, \"sub_scores\": {\"a\": 1, \"a\": 5}}";
        assert_eq!(
            default().parse(nested),
            Err(ReplyError::RepeatedKey { key: "a".into() })
        );
    }

    /// A regex format without `pick` refuses a revised verdict instead of taking the last.
    #[test]
    fn regex_default_refuses_disagreement() {
        let spec: VerdictFormat =
            serde_saphyr::from_str("kind: regex\npattern: '\\[\\[(\\d+)\\]\\]'\nscale: [1, 10]\n")
                .unwrap();
        let f = CompiledFormat::new(&spec).unwrap();
        assert_eq!(
            f.parse("Rating: [[7]], revised to [[10]]"),
            Err(ReplyError::Conflicting {
                found: "7, 10".into()
            })
        );
        assert_eq!(f.parse("[[9]] ... so [[9]]").unwrap().score, 9.0);
    }

    #[test]
    fn fenced_json() {
        let reply = "```json\n{\n  \"score\": 2,\n  \"evidence_cited\": [\"a\"]\n}\n```";
        let v = default().parse(reply).unwrap();
        assert_eq!(v.score, 2.0);
        assert_eq!(v.evidence_cited, vec!["a".to_string()]);
    }

    #[test]
    fn truncated_is_an_error_even_with_a_complete_nested_object() {
        let reply = "{\"verdict\": {\"score\": 4}, \"reasoning\": \"long";
        assert_eq!(
            default().parse(reply),
            Err(ReplyError::TruncatedJson { at: 0 })
        );
        let reply = "{\"score\": 4, \"reasoning\": \"cut";
        assert!(matches!(
            default().parse(reply),
            Err(ReplyError::TruncatedJson { .. })
        ));
    }

    #[test]
    fn scale_and_integer_checks() {
        assert!(matches!(
            default().parse("{\"score\": 6}"),
            Err(ReplyError::OutOfScale { .. })
        ));
        assert!(matches!(
            default().parse("{\"score\": 3.5}"),
            Err(ReplyError::NotInteger { .. })
        ));
        assert!(matches!(
            default().parse("{\"score\": 3, \"confidence\": 1.5}"),
            Err(ReplyError::BadConfidence { .. })
        ));
        assert!(matches!(
            default().parse("{\"score\": \"high\"}"),
            Err(ReplyError::NotANumber { .. })
        ));
        assert_eq!(default().parse("no json here"), Err(ReplyError::NoJson));
        assert_eq!(default().parse("  "), Err(ReplyError::Empty));
        assert!(matches!(
            default().parse("{\"grade\": 3}"),
            Err(ReplyError::MissingField { .. })
        ));
    }

    #[test]
    fn regex_pick_and_labels() {
        let spec = VerdictFormat {
            kind: FormatKind::Regex,
            pattern: Some(r"\[\[([AB][<>=]{1,2}[AB])\]\]".into()),
            pick: Some(Pick::Unique),
            labels: Some(IndexMap::from([
                ("A>>B".to_string(), 1.0),
                ("A>B".to_string(), 1.0),
                ("A=B".to_string(), 1.5),
                ("B>A".to_string(), 2.0),
            ])),
            scale: [1.0, 2.0],
            ..VerdictFormat::default()
        };
        let f = CompiledFormat::new(&spec).unwrap();
        assert_eq!(f.parse("x [[A>>B]] and [[A>B]]").unwrap().score, 1.0);
        assert!(matches!(
            f.parse("[[A>B]] [[B>A]]"),
            Err(ReplyError::Conflicting { .. })
        ));
        assert!(matches!(
            f.parse("[[B>>A]]"),
            Err(ReplyError::UnknownLabel { .. })
        ));
        assert!(matches!(
            f.parse("nothing"),
            Err(ReplyError::NoMatch { .. })
        ));
        assert_eq!(f.parse_reply("[[A>B]]", true), Err(ReplyError::Truncated));
    }

    #[test]
    fn a_megabyte_of_unclosed_braces_is_read_in_one_pass() {
        // Half a million `{` that never close: a rescan per brace is 10^11 steps.
        let reply = "{a".repeat(500_000);
        assert_eq!(default().parse(&reply), Err(ReplyError::NoJson));
        let reply = format!("{}{{\"score\": 4}}", "{a ".repeat(300_000));
        assert_eq!(default().parse(&reply).map(|v| v.score), Ok(4.0));
    }

    #[test]
    fn a_reply_longer_than_the_cap_is_unreadable() {
        let reply = format!(
            "{{\"score\": 3, \"reasoning\": \"{}\"}}",
            "x".repeat(MAX_REPLY_BYTES)
        );
        let err = default().parse(&reply).unwrap_err();
        assert!(matches!(
            err,
            ReplyError::TooLong {
                limit: MAX_REPLY_BYTES,
                ..
            }
        ));
        assert!(err.to_string().contains("reply with the verdict alone"));
        let fits = format!("{{\"score\": 3, \"reasoning\": \"{}\"}}", "x".repeat(1000));
        assert_eq!(default().parse(&fits).map(|v| v.score), Ok(3.0));
    }

    /// The cap is inclusive: a reply of exactly `MAX_REPLY_BYTES` bytes is read, one byte
    /// more is not.
    #[test]
    fn the_reply_cap_admits_exactly_its_size() {
        let frame = "{\"score\": 3, \"reasoning\": \"\"}".len();
        let exactly = format!(
            "{{\"score\": 3, \"reasoning\": \"{}\"}}",
            "x".repeat(MAX_REPLY_BYTES - frame)
        );
        assert_eq!(exactly.len(), MAX_REPLY_BYTES);
        assert_eq!(default().parse(&exactly).map(|v| v.score), Ok(3.0));
        let over = format!("{exactly} ");
        assert_eq!(
            default().parse(&over),
            Err(ReplyError::TooLong {
                bytes: MAX_REPLY_BYTES + 1,
                limit: MAX_REPLY_BYTES
            })
        );
    }

    #[test]
    fn whole_scores_convert_and_others_do_not() {
        let v = |score: f64| ParsedVerdict {
            score,
            ..default().parse("{\"score\": 1}").unwrap()
        };
        assert_eq!(v(4.0).score_int(), Some(4));
        assert_eq!(v(-2.0).score_int(), Some(-2));
        assert_eq!(v(0.0).score_int(), Some(0));
        assert_eq!(v(3.5).score_int(), None);
        assert_eq!(v(-0.25).score_int(), None);
        // Past 1e15 a float no longer says which integer it is meant to be.
        assert_eq!(
            v(999_999_999_999_999.0).score_int(),
            Some(999_999_999_999_999)
        );
        assert_eq!(v(1e15).score_int(), None);
        assert_eq!(v(-1e15).score_int(), None);
        assert_eq!(v(f64::INFINITY).score_int(), None);
        assert_eq!(v(f64::NAN).score_int(), None);
    }

    /// Some judges quote their numbers: a string holding exactly one number is read as
    /// it; anything else in a string is not a number, and neither is a non-finite one.
    #[test]
    fn quoted_numbers_are_read_and_other_strings_are_not() {
        let v = default()
            .parse(r#"{"score": " 4 ", "confidence": "0.5", "sub_scores": {"a": "2.5"}}"#)
            .unwrap();
        assert_eq!((v.score, v.confidence), (4.0, Some(0.5)));
        assert_eq!(v.sub_scores.get("a"), Some(&2.5));
        assert!(matches!(
            default().parse(r#"{"score": "4 of 5"}"#),
            Err(ReplyError::NotANumber { .. })
        ));
        assert!(matches!(
            default().parse(r#"{"score": "inf"}"#),
            Err(ReplyError::NotANumber { .. })
        ));
    }

    /// Braces in prose are not JSON; braces that start like JSON but do not parse are
    /// reported as broken JSON, wherever they stand in the reply.
    #[test]
    fn prose_braces_are_no_json_and_broken_objects_say_why() {
        assert_eq!(
            default().parse("see {this} and {that}"),
            Err(ReplyError::NoJson)
        );
        for reply in [
            r#"{"score": 3,}"#,
            r#"Verdict: {"score": 3,}"#,
            r#"{ "score": 3 "confidence": 1 }"#,
        ] {
            assert!(
                matches!(default().parse(reply), Err(ReplyError::InvalidJson { .. })),
                "{reply}: {:?}",
                default().parse(reply)
            );
        }
        // The first broken object is the one reported.
        let Err(ReplyError::InvalidJson { detail }) = default().parse(r#"{"a": 1,} then {"b" 2}"#)
        else {
            panic!("broken JSON expected")
        };
        assert!(detail.contains("trailing comma"), "{detail}");
    }

    /// An empty object before the verdict is skipped, not read again and again.
    #[test]
    fn an_empty_object_is_passed_over() {
        assert_eq!(
            default().parse(r#"{} {"score": 3}"#).map(|v| v.score),
            Ok(3.0)
        );
    }

    /// Lists may be written as one string; an empty string is an empty list, and a
    /// non-string item is kept as its JSON text.
    #[test]
    fn cited_evidence_and_recommendations_accept_one_string() {
        let v = default()
            .parse(r#"{"score": 3, "evidence_cited": "one fact", "recommendations": ""}"#)
            .unwrap();
        assert_eq!(v.evidence_cited, vec!["one fact".to_owned()]);
        assert!(v.recommendations.is_empty());
        let v = default()
            .parse(r#"{"score": 3, "evidence_cited": ["a", 2, null]}"#)
            .unwrap();
        assert_eq!(v.evidence_cited, vec!["a", "2", "null"]);
    }
}
