//! A judge's declared verdict format, checked once ([`CompiledFormat::new`]) and shared
//! by every call made for the judge ([`SharedFormat`]); it also writes the prompt's
//! instructions for the reply and the re-ask. Reading a reply with it is `read.rs`.

use regex::Regex;
use serde::Serialize;
use serde_json::Value;

use super::error::{FormatError, ReplyError};
use crate::spec::verdict_format::{FormatKind, NumberKind, Transport, VerdictFormat};
use crate::verdict::schema::BoundSchema;

/// A validated [`VerdictFormat`], ready to read replies.
#[derive(Debug, Clone)]
pub struct CompiledFormat {
    pub(super) spec: VerdictFormat,
    pub(super) regex: Option<Regex>,
    pub(super) score_group: Option<usize>,
    pub(super) pointer: String,
    /// The verdict schema, with `transport: schema`.
    pub(super) bound: Option<BoundSchema>,
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::verdict_format::Pick;

    fn default() -> CompiledFormat {
        CompiledFormat::new(&VerdictFormat::default()).unwrap()
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
