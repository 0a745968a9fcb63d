//! Reading a judge's reply into a verdict.
//!
//! A reply is untrusted text. The parser never guesses: a score that is missing,
//! out of the judge's scale, fractional on an integer judge, or inside a JSON
//! object that was cut off is a [`ReplyError`]. Its message is written to be
//! quoted back to the model on the single re-ask, so it says what was wrong and
//! what a readable reply looks like.

use indexmap::IndexMap;
use regex::Regex;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::spec::verdict_format::{FormatKind, NumberKind, Pick, Transport, VerdictFormat};
use crate::verdict::schema::BoundSchema;

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

/// The declared format itself is unusable (a judge-author error, never the model's).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum FormatError {
    /// The scale is not `[min, max]` with finite `min < max`.
    #[error("scale [{0}, {1}] must be two finite numbers with min < max")]
    BadScale(f64, f64),
    /// A regex format without a pattern.
    #[error("a `regex` verdict format needs a `pattern`")]
    MissingPattern,
    /// The pattern does not compile.
    #[error("pattern does not compile: {0}")]
    BadPattern(String),
    /// The pattern has no capture group to read the score from.
    #[error("pattern `{0}` has no capture group; put the score in `( )` or `(?<score> )`")]
    NoGroup(String),
    /// A key that only applies to the other kind.
    #[error("`{key}` does not apply to a `{kind}` verdict format")]
    NotApplicable {
        /// The offending key.
        key: &'static str,
        /// The declared kind.
        kind: &'static str,
    },
    /// A JSON pointer that does not start with `/`.
    #[error("field `{0}` must be a JSON Pointer such as `/score`")]
    BadPointer(String),
    /// A label whose score lies outside the scale.
    #[error("label `{label}` maps to {value}, outside the scale [{min}, {max}]")]
    LabelOutOfScale {
        /// The label.
        label: String,
        /// Its score.
        value: f64,
        /// Scale minimum.
        min: f64,
        /// Scale maximum.
        max: f64,
    },
    /// An empty label map.
    #[error("`labels` is empty")]
    EmptyLabels,
    /// `transport: schema` on a format whose reply is not the default verdict object.
    #[error("{}", crate::verdict::schema::UNBINDABLE)]
    Unbindable,
    /// A `tie` that cannot be read.
    #[error("{0}")]
    BadTie(String),
}

/// Why a reply could not be read. Messages are addressed to the model.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ReplyError {
    /// Nothing but whitespace.
    #[error("the reply was empty")]
    Empty,
    /// No `{ ... }` object anywhere.
    #[error("the reply contains no JSON object")]
    NoJson,
    /// An object starts but never closes.
    #[error(
        "the JSON object starting at character {at} is cut off before its closing brace \
         (the reply may have hit the token limit); send the complete object"
    )]
    TruncatedJson {
        /// Character offset of the opening brace.
        at: usize,
    },
    /// Balanced braces that are not valid JSON.
    #[error("the text between braces is not valid JSON: {detail}")]
    InvalidJson {
        /// serde_json's complaint.
        detail: String,
    },
    /// Objects were found but none has the score.
    #[error("no JSON object in the reply has the field `{field}`")]
    MissingField {
        /// The JSON pointer, e.g. `/score`.
        field: String,
    },
    /// The score field holds something that is not a number (or a known label).
    #[error("`{field}` must be a number, found {found}")]
    NotANumber {
        /// Where it was read from.
        field: String,
        /// What was there, as JSON or text.
        found: String,
    },
    /// A fractional score on an integer judge.
    #[error("score {value} is not a whole number; use a whole number from {min} to {max}")]
    NotInteger {
        /// The score given.
        value: f64,
        /// Scale minimum.
        min: f64,
        /// Scale maximum.
        max: f64,
    },
    /// A score outside the scale.
    #[error("score {value} is outside the scale {min} to {max}")]
    OutOfScale {
        /// The score given.
        value: f64,
        /// Scale minimum.
        min: f64,
        /// Scale maximum.
        max: f64,
    },
    /// Confidence outside 0..1.
    #[error("confidence {value} must be a number from 0 to 1")]
    BadConfidence {
        /// What was there, as JSON.
        value: String,
    },
    /// A sub-score that is not a number.
    #[error("sub_scores.{name} must be a number, found {found}")]
    BadSubScore {
        /// The sub-score's name.
        name: String,
        /// What was there, as JSON.
        found: String,
    },
    /// The pattern never matched.
    #[error("the reply contains no verdict of the form `{pattern}`")]
    NoMatch {
        /// The declared pattern.
        pattern: String,
    },
    /// A captured text that is not one of the declared labels.
    #[error("`{found}` is not one of the allowed verdicts: {known}")]
    UnknownLabel {
        /// The captured text.
        found: String,
        /// The allowed labels, comma-separated.
        known: String,
    },
    /// `pick: unique` and the matches disagree.
    #[error("the reply gives conflicting verdicts ({found}); give exactly one")]
    Conflicting {
        /// The disagreeing matches, comma-separated.
        found: String,
    },
    /// A JSON object that gives one key twice: which one is meant cannot be told.
    #[error("the JSON object gives `{key}` more than once; give each key once")]
    RepeatedKey {
        /// The repeated key.
        key: String,
    },
    /// A schema-bound reply that is not the verdict object the schema describes.
    #[error("{detail}")]
    SchemaViolation {
        /// The first violation, named.
        detail: String,
    },
    /// The reply stopped at the token limit and the format cannot vouch for the part read.
    #[error("the reply was cut off at the token limit before the verdict was complete")]
    Truncated,
    /// Longer than any verdict needs: not read at all.
    #[error(
        "the reply is {bytes} bytes long, more than the {limit} a verdict may take; \
         reply with the verdict alone"
    )]
    TooLong {
        /// The reply's length in bytes.
        bytes: usize,
        /// [`MAX_REPLY_BYTES`].
        limit: usize,
    },
}

pub use crate::provider::MAX_REPLY_BYTES;

/// A validated [`VerdictFormat`], ready to read replies.
#[derive(Debug, Clone)]
pub struct CompiledFormat {
    spec: VerdictFormat,
    regex: Option<Regex>,
    score_group: Option<usize>,
    pointer: String,
    /// The verdict schema, with `transport: schema`.
    bound: Option<BoundSchema>,
}

impl CompiledFormat {
    /// Validates a declared format; every problem here is the judge author's to fix.
    pub fn new(spec: &VerdictFormat) -> Result<Self, FormatError> {
        let [min, max] = spec.scale;
        if !(min.is_finite() && max.is_finite() && min < max) {
            return Err(FormatError::BadScale(min, max));
        }
        if let Some(labels) = &spec.labels {
            if labels.is_empty() {
                return Err(FormatError::EmptyLabels);
            }
            for (label, &value) in labels {
                if !(min..=max).contains(&value) {
                    return Err(FormatError::LabelOutOfScale {
                        label: label.clone(),
                        value,
                        min,
                        max,
                    });
                }
            }
        }
        if let Some(tie) = &spec.tie {
            if tie.same.len() < 2 {
                return Err(FormatError::BadTie(
                    "`tie.same` needs at least two pointers".into(),
                ));
            }
            if let Some(p) = tie.same.iter().find(|p| !p.starts_with('/')) {
                return Err(FormatError::BadPointer(p.clone()));
            }
            if !(min..=max).contains(&tie.score) {
                return Err(FormatError::BadTie(format!(
                    "`tie.score` {} is outside the scale [{min}, {max}]",
                    tie.score
                )));
            }
        }
        let mut compiled = CompiledFormat {
            spec: spec.clone(),
            regex: None,
            score_group: None,
            pointer: "/score".to_string(),
            bound: None,
        };
        if spec.transport == Some(Transport::Schema) {
            compiled.bound =
                Some(BoundSchema::of(spec, &[], [1, 5]).ok_or(FormatError::Unbindable)?);
        }
        match spec.kind {
            FormatKind::Json => {
                if spec.pattern.is_some() {
                    return Err(FormatError::NotApplicable {
                        key: "pattern",
                        kind: "json",
                    });
                }
                if spec.pick.is_some() {
                    return Err(FormatError::NotApplicable {
                        key: "pick",
                        kind: "json",
                    });
                }
                if let Some(field) = &spec.field {
                    if !field.starts_with('/') {
                        return Err(FormatError::BadPointer(field.clone()));
                    }
                    compiled.pointer = field.clone();
                }
            }
            FormatKind::Regex => {
                if spec.tie.is_some() {
                    return Err(FormatError::NotApplicable {
                        key: "tie",
                        kind: "regex",
                    });
                }
                if spec.field.is_some() {
                    return Err(FormatError::NotApplicable {
                        key: "field",
                        kind: "regex",
                    });
                }
                let pattern = spec.pattern.as_deref().ok_or(FormatError::MissingPattern)?;
                let regex =
                    Regex::new(pattern).map_err(|e| FormatError::BadPattern(e.to_string()))?;
                if regex.captures_len() < 2 {
                    return Err(FormatError::NoGroup(pattern.to_string()));
                }
                compiled.score_group = regex.capture_names().position(|n| n == Some("score"));
                compiled.regex = Some(regex);
            }
        }
        Ok(compiled)
    }

    /// The declared format this was compiled from.
    pub fn spec(&self) -> &VerdictFormat {
        &self.spec
    }

    /// The format with the judge's declared sub-scores in its verdict schema (a format
    /// that is not schema-bound is unchanged).
    pub fn with_sub_scores(mut self, names: &[String], scale: [i64; 2]) -> Self {
        if self.bound.is_some() {
            self.bound = BoundSchema::of(&self.spec, names, scale);
        }
        self
    }

    /// The JSON Schema a provider that binds replies is handed, with `transport: schema`.
    pub fn response_schema(&self) -> Option<&Value> {
        self.bound.as_ref().map(BoundSchema::schema)
    }

    /// Reads a reply to a request that did (`bound`) or did not carry the verdict
    /// schema. A bound reply must be exactly the schema's object before the format
    /// reads it; a violation is a [`ReplyError::SchemaViolation`] naming it.
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

    /// Instructions for the prompt's `response_format` slot, matching this format.
    pub fn instructions(&self) -> String {
        let [min, max] = self.spec.scale;
        let kind = match self.spec.numbers {
            NumberKind::Integer => "a whole number",
            NumberKind::Decimal => "a number",
        };
        match self.spec.kind {
            FormatKind::Json if self.pointer == "/score" && self.spec.labels.is_none() => format!(
                "Reply with one JSON object and nothing else:\n\
                 {{\"score\": <{kind} from {min} to {max}>, \"confidence\": <0.0 to 1.0>, \
                 \"reasoning\": \"<why>\", \"evidence_cited\": [\"<fact>\", ...], \
                 \"recommendations\": [\"<change>\", ...], \"sub_scores\": {{\"<name>\": <number>}}}}"
            ),
            FormatKind::Json => format!(
                "Reply with one JSON object whose value at `{}` is {}.",
                self.pointer,
                self.value_phrase(kind, min, max)
            ),
            FormatKind::Regex => format!(
                "State your verdict in text matching the regular expression `{}`, where the \
                 captured part is {}.",
                self.spec.pattern.as_deref().unwrap_or_default(),
                self.value_phrase(kind, min, max)
            ),
        }
    }

    /// The follow-up message for the one re-ask after an unreadable reply.
    pub fn reask_message(&self, error: &ReplyError) -> String {
        self.reask_message_text(&error.to_string())
    }

    /// [`CompiledFormat::reask_message`] from the error's text (a re-ask rebuilt from
    /// a batch's saved state).
    pub fn reask_message_text(&self, error: &str) -> String {
        format!(
            "Your previous reply could not be read as a verdict: {error}.\n{}",
            self.instructions()
        )
    }

    fn value_phrase(&self, kind: &str, min: f64, max: f64) -> String {
        match &self.spec.labels {
            Some(labels) => {
                let keys: Vec<&str> = labels.keys().map(String::as_str).collect();
                format!("one of {}", keys.join(", "))
            }
            None => format!("{kind} from {min} to {max}"),
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

/// A [`CompiledFormat`] shared by the plan it was compiled for and every model call made
/// from that plan, so a reply is read without compiling the format again.
///
/// It compares, prints and serialises as the [`VerdictFormat`] it was compiled from:
/// two calls with the same declared format are the same call, and the cache key, which
/// hashes the declared format, is the one the declared format alone would give.
#[derive(Clone)]
pub struct SharedFormat(std::sync::Arc<CompiledFormat>);

impl SharedFormat {
    /// Compiles a declared format; the error is [`CompiledFormat::new`]'s.
    pub fn new(spec: &VerdictFormat) -> Result<Self, FormatError> {
        CompiledFormat::new(spec).map(Self::from)
    }

    /// The declared format this was compiled from.
    pub fn spec(&self) -> &VerdictFormat {
        self.0.spec()
    }
}

impl From<CompiledFormat> for SharedFormat {
    fn from(format: CompiledFormat) -> Self {
        SharedFormat(std::sync::Arc::new(format))
    }
}

impl std::ops::Deref for SharedFormat {
    type Target = CompiledFormat;

    fn deref(&self) -> &CompiledFormat {
        &self.0
    }
}

impl PartialEq for SharedFormat {
    fn eq(&self, other: &Self) -> bool {
        self.spec() == other.spec()
    }
}

impl std::fmt::Debug for SharedFormat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.spec().fmt(f)
    }
}

impl Serialize for SharedFormat {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.spec().serialize(serializer)
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

/// What a scan of a reply found.
#[derive(Debug, Default)]
struct Found<'a> {
    /// Complete top-level JSON objects, in reply order, with their text.
    objects: Vec<(Value, &'a str)>,
    /// The character offset of a JSON-looking object that never closes.
    truncated_at: Option<usize>,
    /// The first complaint about balanced braces that were not JSON.
    invalid: Option<String>,
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
fn find_objects(text: &str) -> Found<'_> {
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
fn repeated_key(json: &str) -> Option<String> {
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
    /// (32 bits: replies are capped far below 4 GB, see [`MAX_REPLY_BYTES`].)
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

    /// The prompt's `response_format` text, one per kind of format: the default object,
    /// another field, labels, and a regex.
    #[test]
    fn instructions_name_the_field_the_scale_and_the_labels() {
        assert_eq!(
            default().instructions(),
            "Reply with one JSON object and nothing else:\n{\"score\": <a whole number from 1 to 5>, \
             \"confidence\": <0.0 to 1.0>, \"reasoning\": \"<why>\", \"evidence_cited\": [\"<fact>\", ...], \
             \"recommendations\": [\"<change>\", ...], \"sub_scores\": {\"<name>\": <number>}}"
        );
        let other: VerdictFormat =
            serde_saphyr::from_str("field: /grade\nscale: [0, 10]\nnumbers: decimal\n").unwrap();
        let f = CompiledFormat::new(&other).unwrap();
        assert_eq!(f.spec(), &other);
        assert_eq!(
            f.instructions(),
            "Reply with one JSON object whose value at `/grade` is a number from 0 to 10."
        );
        let labelled: VerdictFormat =
            serde_saphyr::from_str("labels: { bad: 1, good: 2 }\nscale: [1, 2]\n").unwrap();
        assert_eq!(
            CompiledFormat::new(&labelled).unwrap().instructions(),
            "Reply with one JSON object whose value at `/score` is one of bad, good."
        );
        let regex: VerdictFormat =
            serde_saphyr::from_str("kind: regex\npattern: 'Score: (\\d)'\n").unwrap();
        assert_eq!(
            CompiledFormat::new(&regex).unwrap().instructions(),
            "State your verdict in text matching the regular expression `Score: (\\d)`, where \
             the captured part is a whole number from 1 to 5."
        );
    }

    /// The one re-ask says what was wrong and repeats the instructions.
    #[test]
    fn the_reask_names_the_problem_and_repeats_the_instructions() {
        let f = default();
        let expected = format!(
            "Your previous reply could not be read as a verdict: the reply contains no JSON object.\n{}",
            f.instructions()
        );
        assert_eq!(f.reask_message(&ReplyError::NoJson), expected);
        assert_eq!(
            f.reask_message_text("the reply contains no JSON object"),
            expected
        );
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

    /// A shared format prints as the format it was compiled from (what a job's debug
    /// output and a failed test show).
    #[test]
    fn a_shared_format_prints_as_its_declared_format() {
        let spec = VerdictFormat::default();
        let shared = SharedFormat::new(&spec).unwrap();
        assert_eq!(format!("{shared:?}"), format!("{spec:?}"));
    }

    #[test]
    fn bad_formats_are_rejected() {
        let no_group = VerdictFormat {
            kind: FormatKind::Regex,
            pattern: Some(r"\d+".into()),
            ..VerdictFormat::default()
        };
        assert!(matches!(
            CompiledFormat::new(&no_group),
            Err(FormatError::NoGroup(_))
        ));
        let scale = VerdictFormat {
            scale: [5.0, 1.0],
            ..VerdictFormat::default()
        };
        assert!(matches!(
            CompiledFormat::new(&scale),
            Err(FormatError::BadScale(..))
        ));
    }

    #[test]
    fn yaml_declarations_are_strict_and_documented() {
        let ok: VerdictFormat =
            serde_saphyr::from_str("kind: regex\npattern: 'Score: (\\d)'\npick: first\n").unwrap();
        assert_eq!(ok.pick, Some(Pick::First));
        assert_eq!(ok.scale, [1.0, 5.0]);
        let typo = serde_saphyr::from_str::<VerdictFormat>("kind: regex\npatern: '(x)'\n");
        assert!(typo.is_err(), "unknown keys are rejected");
        let schema = serde_json::to_string(&schemars::schema_for!(VerdictFormat)).unwrap();
        assert!(
            schema.contains("capture group"),
            "field docs reach the schema"
        );
    }
}
