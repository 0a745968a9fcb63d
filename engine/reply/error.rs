//! What can go wrong reading a reply: the judge's declared format is unusable
//! ([`FormatError`], the author's to fix), or a reply cannot be read ([`ReplyError`],
//! whose message is quoted back to the model on the single re-ask).

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
        /// [`MAX_REPLY_BYTES`](crate::provider::MAX_REPLY_BYTES).
        limit: usize,
    },
}
