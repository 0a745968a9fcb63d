//! A judge file: one evaluation dimension as data.
//!
//! Types only; `load` turns them into the resolved plan the engine runs, and
//! `schemas/judge.schema.json` is generated from them.

use std::borrow::Cow;

use indexmap::IndexMap;
use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::{Deserialize, Serialize};

use crate::spec::SHAPE_ERROR;
use crate::spec::strict;

/// One judge: a dimension, its weight, how evidence is computed, how it is scored.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(title = "caldera judge", example = example_judge())]
pub struct JudgeSpec {
    /// The dimension this judge scores, snake_case; unique within a suite.
    #[schemars(example = &"vulnerability_accuracy")]
    pub dimension: String,

    /// Relative weight in the suite's overall score (> 0). Weights are normalised by their
    /// sum, so 0.35 among weights summing to 1.5 counts for 0.35 / 1.5.
    #[serde(deserialize_with = "strict::number")]
    #[schemars(
        example = 0.35,
        extend("exclusiveMinimum" = 0, "maximum" = f64::MAX)
    )]
    pub weight: f64,

    /// What the judge checks, and any deliberate departure from an earlier judge.
    #[serde(default)]
    #[schemars(example = &"Known CVEs detected and severity counts within expected ranges.")]
    pub description: Option<String>,

    /// `suite`: one verdict over all repos (default). `repo`: one verdict per repo, then
    /// their mean, with the spread reported.
    #[serde(default)]
    #[schemars(example = &"repo")]
    pub scope: Scope,

    /// The score this judge must reach to pass (default: the suite's, else 3).
    #[serde(default, deserialize_with = "strict::opt_number")]
    #[schemars(range(min = 1, max = 5), example = 3)]
    pub pass_threshold: Option<f64>,

    /// Named values computed in order. A value is a JSONPath selector (`$...`), an
    /// expression (`<< expr >>`), a text with `<< >>` parts, a constant, or a record list
    /// (`for_each` + `fields`). Each sees the run context and every earlier name.
    #[serde(default)]
    #[schemars(example = serde_json::json!({"total": "<< scans | length >>", "ids": "$.repos[*].id"}))]
    pub evidence: IndexMap<String, EvidenceValue>,

    /// How to score without an LLM. A judge without one is unscored in heuristic mode.
    #[serde(default)]
    #[schemars(example = serde_json::json!({"metric": "rate", "bands": [{"min": 90, "score": 5}, {"score": 2}], "reasoning": "rate << rate >>%"}))]
    pub heuristic: Option<HeuristicSpec>,

    /// Checks that run in every mode; a failure is listed on the verdict and may cap it.
    #[serde(default)]
    #[schemars(example = serde_json::json!([{"that": "<< rate >= 50 >>", "message": "rate << rate >>% is below 50%", "cap": 2}]))]
    pub assertions: Vec<AssertionSpec>,

    /// How to read the model's reply. Default: a JSON object with an integer `score`
    /// 1-5, `confidence`, `reasoning`, `evidence_cited`, `recommendations`, `sub_scores`.
    #[serde(default)]
    pub verdict: Option<crate::spec::verdict_format::VerdictFormat>,

    /// `auto` (default): in LLM mode the judge's prompt goes to the model. `never`: the
    /// judge never calls a model; its heuristic scores it in every mode, and an LLM run
    /// says so on its verdict (for checks a model adds nothing to, such as counts).
    #[serde(default)]
    pub llm: LlmUse,

    /// Thinking before the verdict in LLM mode (default: the suite's `reasoning`, else
    /// none).
    #[serde(default)]
    pub reasoning: Option<crate::spec::reasoning::ReasoningSpec>,

    /// The prompt template for LLM mode, relative to this file.
    #[serde(default)]
    #[schemars(example = &"../../prompts/trivy/vulnerability_accuracy.md")]
    pub prompt: Option<String>,
}

/// Whether a judge calls a model in LLM mode.
#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
#[schemars(example = &"never")]
pub enum LlmUse {
    /// Its prompt goes to the model in LLM mode.
    #[default]
    Auto,
    /// Scored by its heuristic in every mode.
    Never,
}

/// Whether a judge gives one verdict for the suite or one per repo.
#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Scope {
    /// One verdict over all repos.
    #[default]
    Suite,
    /// One verdict per repo; the judge's score is their mean.
    Repo,
}

/// One evidence value.
#[derive(Clone, Debug, Serialize, PartialEq)]
#[serde(untagged)]
pub enum EvidenceValue {
    /// A JSONPath selector (`$.a.b`), an expression (`<< expr >>`), a text with `<< >>`
    /// parts, or a plain string constant.
    Text(String),
    /// A number constant.
    Number(f64),
    /// A boolean constant.
    Bool(bool),
    /// A list of records: one per item of `for_each`.
    Records(Box<RecordsSpec>),
    /// A value left out when a condition is false or the value is empty.
    Conditional(Box<ConditionalSpec>),
}

/// A value that may be left out: `{value, if, omit_empty}`. Left out means absent from
/// the result and the prompt, and undefined for later expressions (test it with
/// `is defined`).
#[derive(Clone, Debug, Serialize, JsonSchema, PartialEq)]
#[serde(deny_unknown_fields)]
#[schemars(example = example_conditional())]
pub struct ConditionalSpec {
    /// The value: a selector, an expression, a text with `<< >>` parts, a constant or a
    /// record list.
    #[schemars(example = &"<< findings | length >>")]
    pub value: EvidenceValue,

    /// `<< expression >>`: when false, the value is not computed and the name is left out.
    #[serde(default, rename = "if", skip_serializing_if = "Option::is_none")]
    #[schemars(example = &"<< findings | length > 0 >>")]
    pub condition: Option<String>,

    /// When true, an empty value (`null`, `""`, `[]`, `{}`) is left out.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    #[schemars(example = true)]
    pub omit_empty: bool,
}

/// A record list: for every item selected by `for_each`, the `fields` are computed with
/// the item as JSONPath root `$` and its keys as names in expressions.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema, PartialEq)]
#[serde(deny_unknown_fields)]
#[schemars(example = example_records())]
pub struct RecordsSpec {
    /// The items: a JSONPath selector over the run context or an `<< expression >>`
    /// giving a list.
    #[schemars(example = &"$.repos[?@.truth != null]")]
    pub for_each: String,

    /// Keep only items for which this `<< expression >>` is true (item keys are names).
    #[serde(default, rename = "where")]
    #[schemars(example = &"<< result.vulnerabilities | length > 0 >>")]
    pub filter: Option<String>,

    /// The record's fields, computed in order; later fields see earlier ones. A field is
    /// a selector, an expression, a text, a constant or a record list of its own over the
    /// item (nested: its fields see the enclosing item as `outer`). Fields whose name
    /// starts with `_` are private: later fields and expressions read them, results and
    /// prompts do not show them.
    #[serde(default)]
    #[schemars(
        example = serde_json::json!({"repo": "$.id", "found": "<< result.vulnerabilities | length >>"}),
        with = "IndexMap<String, FieldValue>"
    )]
    pub fields: IndexMap<String, EvidenceValue>,

    /// Makes the list a map: this `<< expression >>` (or selector), computed after the
    /// fields, gives each entry's key (a string or number). Entries keep item order; two
    /// items with the same key are an error.
    #[serde(default)]
    #[schemars(example = &"<< language >>")]
    pub key: Option<String>,

    /// Each entry is this `<< expression >>` (or selector), computed after the fields,
    /// instead of the record of fields: `{key: << id >>, value: << n >>}` gives `{id: n}`.
    #[serde(default)]
    #[schemars(example = &"<< findings | length >>")]
    pub value: Option<String>,

    /// `<< expression >>`: when false the whole list is not computed and the name is left
    /// out (per item, use `where`).
    #[serde(default, rename = "if", skip_serializing_if = "Option::is_none")]
    #[schemars(example = &"<< findings | length > 0 >>")]
    pub condition: Option<String>,

    /// When true, an empty result (`[]` or `{}`) is left out.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    #[schemars(example = true)]
    pub omit_empty: bool,

    /// A name for the item, besides `item`: visible in this list's fields and in the
    /// record lists nested in them (where `item` is the inner item), e.g. `as: file`
    /// over files, read as `file.path` in a list of its functions.
    #[serde(default, rename = "as", skip_serializing_if = "Option::is_none")]
    #[schemars(example = &"file")]
    pub as_name: Option<String>,
}

/// Scoring without an LLM: a band table over one metric, or a score of its own.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HeuristicSpec {
    /// The evidence name the bands read (a number).
    #[serde(default)]
    #[schemars(example = &"cve_detection_rate")]
    pub metric: Option<String>,

    /// Bands tried in order; the first whose bounds all hold gives the score. The last
    /// band should have no bounds (a catch-all).
    #[serde(default)]
    #[schemars(example = serde_json::json!([{"min": 90, "score": 5}, {"min": 70, "score": 4}, {"score": 2}]), length(min = 1))]
    pub bands: Vec<Band>,

    /// A second evidence name (a number) for scores that need two figures at once: a
    /// band may bound it under `and:` (`{ min: 95, and: { min: 3 }, score: 4 }`), and then
    /// matches only when the bounds of both metrics hold.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(example = &"formats_covered")]
    pub and_metric: Option<String>,

    /// Instead of `metric` and `bands`: the score itself, a constant (a judge that always
    /// gives 3 when it has data) or an `<< expression >>` giving an integer 1-5.
    #[serde(default)]
    #[schemars(example = 3, with = "Option<ComputedScore>")]
    pub score: Option<Computed>,

    /// When this condition holds there is nothing to judge: give this score instead of
    /// the bands (never silently; the reasoning says why).
    #[serde(default)]
    #[schemars(example = serde_json::json!({"if": "<< total == 0 >>", "score": 3, "reasoning": "nothing to check"}))]
    pub when_no_data: Option<NoDataSpec>,

    /// Confidence of a banded verdict, 0..1 (default 0.8): a number or an
    /// `<< expression >>` (e.g. lower when no repo has ground truth).
    #[serde(default)]
    #[schemars(example = 0.8, with = "Option<ComputedConfidence>")]
    pub confidence: Option<Computed>,

    /// Why the score is what it is: a text with `<< >>` parts.
    #[schemars(example = &"CVE detection rate << cve_detection_rate >>%")]
    pub reasoning: String,

    /// Adjustments applied after the bands, in order (the score stays within 1-5).
    #[serde(default)]
    #[schemars(example = serde_json::json!([{"if": "<< missing > 0 >>", "by": -1, "reason": "<< missing >> required ids missing"}]))]
    pub adjust: Vec<AdjustSpec>,

    /// Evidence points to cite: texts with `<< >>` parts; empty results are dropped.
    #[serde(default)]
    #[schemars(example = serde_json::json!(["<< matched >> of << expected >> known CVEs found"]))]
    pub evidence_cited: Vec<String>,

    /// Recommendations, each shown when its condition holds.
    #[serde(default)]
    #[schemars(example = serde_json::json!([{"if": "<< missed | length > 0 >>", "text": "Investigate << missed | join(', ') >>"}]))]
    pub recommendations: Vec<RecommendationSpec>,

    /// Sub-scores: name -> `<< expression >>` giving an integer on `sub_score_scale`.
    #[serde(default)]
    #[schemars(example = serde_json::json!({"cve_identification": "<< 5 if rate >= 90 else 3 >>"}))]
    pub sub_scores: IndexMap<String, String>,

    /// The scale of the sub-scores, `[lowest, highest]` integers (default `[1, 5]`); the
    /// lowest comes first (`caldera validate` checks the order, which a schema cannot).
    #[serde(default)]
    #[schemars(example = serde_json::json!([0, 100]), extend("default" = [1, 5]))]
    pub sub_score_scale: Option<[i64; 2]>,
}

/// A number written as a constant or computed by an `<< expression >>`.
#[derive(Clone, Debug, Serialize, PartialEq)]
#[serde(untagged)]
pub enum Computed {
    /// A constant.
    Number(f64),
    /// An expression giving the number.
    Expr(String),
}

impl<'de> Deserialize<'de> for Computed {
    fn deserialize<D: Deserializer<'de>>(de: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Computed;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a number or an expression `<< ... >>`")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Computed, E> {
                Ok(Computed::Number(v as f64))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Computed, E> {
                Ok(Computed::Number(v as f64))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Computed, E> {
                Ok(Computed::Number(v))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Computed, E> {
                Ok(Computed::Expr(v.to_owned()))
            }
        }
        de.deserialize_any(V)
    }
}

impl JsonSchema for Computed {
    fn schema_name() -> Cow<'static, str> {
        "Computed".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "description": "A number, or an expression `<< ... >>` computing it.",
            "anyOf": [
                {"type": "number"},
                {"type": "string", "pattern": "^\\s*<<[\\s\\S]*>>\\s*$"}
            ]
        })
    }
}

/// The schema of a [`Computed`] score: a whole number 1-5 or an expression (the loader
/// refuses other constants).
pub struct ComputedScore;

impl JsonSchema for ComputedScore {
    fn schema_name() -> Cow<'static, str> {
        "ComputedScore".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "description": "A score 1-5, or an expression `<< ... >>` computing it.",
            "anyOf": [
                {"type": "integer", "minimum": 1, "maximum": 5},
                {"type": "string", "pattern": "^\\s*<<[\\s\\S]*>>\\s*$"}
            ]
        })
    }
}

/// The schema of a [`Computed`] confidence: a number 0..1 or an expression.
pub struct ComputedConfidence;

impl JsonSchema for ComputedConfidence {
    fn schema_name() -> Cow<'static, str> {
        "ComputedConfidence".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "description": "A confidence 0..1, or an expression `<< ... >>` computing it.",
            "anyOf": [
                {"type": "number", "minimum": 0, "maximum": 1},
                {"type": "string", "pattern": "^\\s*<<[\\s\\S]*>>\\s*$"}
            ]
        })
    }
}

/// One band: all given bounds must hold.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq)]
#[serde(deny_unknown_fields)]
#[schemars(example = example_band())]
pub struct Band {
    /// metric >= min.
    #[serde(default, deserialize_with = "strict::opt_number")]
    #[schemars(example = 90.0)]
    pub min: Option<f64>,
    /// metric > above.
    #[serde(default, deserialize_with = "strict::opt_number")]
    #[schemars(example = 50.0)]
    pub above: Option<f64>,
    /// metric <= max.
    #[serde(default, deserialize_with = "strict::opt_number")]
    #[schemars(example = 5.0)]
    pub max: Option<f64>,
    /// metric < below.
    #[serde(default, deserialize_with = "strict::opt_number")]
    #[schemars(example = 1.0)]
    pub below: Option<f64>,
    /// The score, 1-5.
    #[serde(deserialize_with = "strict::whole")]
    #[schemars(range(min = 1, max = 5), example = 4)]
    pub score: i64,
    /// Bounds on the heuristic's `and_metric`, which must hold too.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(example = serde_json::json!({"min": 3}))]
    pub and: Option<BandBounds>,
}

/// Bounds on a band's second metric (`and_metric`): all given bounds must hold.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct BandBounds {
    /// and_metric >= min.
    #[serde(default, deserialize_with = "strict::opt_number")]
    pub min: Option<f64>,
    /// and_metric > above.
    #[serde(default, deserialize_with = "strict::opt_number")]
    pub above: Option<f64>,
    /// and_metric <= max.
    #[serde(default, deserialize_with = "strict::opt_number")]
    pub max: Option<f64>,
    /// and_metric < below.
    #[serde(default, deserialize_with = "strict::opt_number")]
    pub below: Option<f64>,
}

impl BandBounds {
    /// The same bounds as a band's, so one matcher and one checker serve both.
    pub fn as_band(&self) -> Band {
        Band {
            min: self.min,
            above: self.above,
            max: self.max,
            below: self.below,
            ..Band::default()
        }
    }
}

/// The no-data rule of a heuristic.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NoDataSpec {
    /// `<< expression >>`: true when there is nothing to judge.
    #[serde(rename = "if")]
    #[schemars(example = &"<< total_expected == 0 >>")]
    pub condition: String,
    /// The score to give, 1-5: a number or an `<< expression >>`.
    #[schemars(example = 4, with = "ComputedScore")]
    pub score: Computed,
    /// Its confidence, 0..1 (default 0.4: little was seen): a number or an
    /// `<< expression >>`.
    #[serde(default)]
    #[schemars(example = 0.4, with = "Option<ComputedConfidence>")]
    pub confidence: Option<Computed>,
    /// Why: a text with `<< >>` parts.
    #[schemars(example = &"No ground truth lists known CVEs.")]
    pub reasoning: String,
    /// Recommendations of a no-data verdict, each shown when its condition holds.
    #[serde(default)]
    #[schemars(example = serde_json::json!([{"text": "Add ground truth for the sample repos"}]))]
    pub recommendations: Vec<RecommendationSpec>,
}

/// A score adjustment.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(example = example_adjust())]
pub struct AdjustSpec {
    /// `<< expression >>`: when true the adjustment applies.
    #[serde(rename = "if")]
    #[schemars(example = &"<< missing | length > 0 >>")]
    pub condition: String,
    /// Points to add (negative to subtract); the result stays within 1-5.
    #[serde(deserialize_with = "strict::whole")]
    #[schemars(example = -1)]
    pub by: i64,
    /// Why, appended to the reasoning: a text with `<< >>` parts.
    #[schemars(example = &"<< missing | length >> required ids missing")]
    pub reason: String,
}

/// A recommendation shown when its condition holds.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RecommendationSpec {
    /// `<< expression >>`; omitted means always.
    #[serde(default, rename = "if")]
    #[schemars(example = &"<< missing | length > 0 >>")]
    pub condition: Option<String>,
    /// The recommendation: a text with `<< >>` parts.
    #[schemars(example = &"Report fixed versions for every finding")]
    pub text: String,
}

/// A check run in every mode: `that` + `message`, or `failures`.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(example = example_assertion())]
#[schemars(extend("anyOf" = [{"required": ["that", "message"]}, {"required": ["failures"]}]))]
pub struct AssertionSpec {
    /// Checks every item of this list (a selector or an `<< expression >>`): `that` and
    /// `message` then see the item's keys as names, `item` and `loop`, and each failing
    /// item is its own failure with its own message. The cap applies once.
    #[serde(default)]
    #[schemars(example = &"<< per_repo >>")]
    pub for_each: Option<String>,

    /// `<< expression >>` that must be true (with `message`; or `failures` instead).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    #[schemars(example = &"<< per_repo | length > 0 >>")]
    pub that: String,
    /// Shown when it is false: a text with `<< >>` parts.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    #[schemars(example = &"No analysis result matched a ground-truth file")]
    pub message: String,
    /// When it fails, the score is capped at this value (1-5); the verdict reports the
    /// score before and after.
    #[serde(default, deserialize_with = "strict::opt_whole")]
    #[schemars(range(min = 1, max = 5), example = 2)]
    pub cap: Option<i64>,

    /// Instead of `that` and `message`: an `<< expression >>` giving a list of failure
    /// messages, in the order to report them. An empty list passes; each message is a
    /// failure of its own; anything but a list is a failure saying what it got.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(example = &"<< missing | map('format_missing') | list >>")]
    pub failures: Option<String>,
}

// ------------------------------------------------------------------ evidence values

impl<'de> Deserialize<'de> for EvidenceValue {
    /// Hand-written so a record list with a bad key reports that key (an untagged enum
    /// would only say "did not match any variant").
    fn deserialize<D: Deserializer<'de>>(de: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = EvidenceValue;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(
                    "a selector `$...`, an expression `<< ... >>`, a constant, \
                     or a record list {for_each, fields}",
                )
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<EvidenceValue, E> {
                Ok(EvidenceValue::Text(v.to_owned()))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<EvidenceValue, E> {
                Ok(EvidenceValue::Text(v))
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> Result<EvidenceValue, E> {
                Ok(EvidenceValue::Bool(v))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<EvidenceValue, E> {
                Ok(EvidenceValue::Number(v as f64))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<EvidenceValue, E> {
                Ok(EvidenceValue::Number(v as f64))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<EvidenceValue, E> {
                Ok(EvidenceValue::Number(v))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<EvidenceValue, A::Error> {
                let form = MapForm::deserialize(de::value::MapAccessDeserializer::new(map))?;
                form.into_value()
            }
        }
        de.deserialize_any(V)
    }
}

/// Every key a mapping under an evidence name may hold; which of them are given decides
/// the form (a record list with `for_each`, else a conditional `value`). Read in one pass
/// so an unknown key is reported where it is, with the keys that are known.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct MapForm {
    #[serde(default)]
    for_each: Option<String>,
    #[serde(default, rename = "where")]
    filter: Option<String>,
    #[serde(default)]
    fields: Option<IndexMap<String, EvidenceValue>>,
    #[serde(default)]
    key: Option<String>,
    #[serde(default)]
    value: Option<EvidenceValue>,
    #[serde(default, rename = "if")]
    condition: Option<String>,
    #[serde(default)]
    omit_empty: bool,
    #[serde(default, rename = "as")]
    as_name: Option<String>,
}

impl MapForm {
    fn into_value<E: de::Error>(self) -> Result<EvidenceValue, E> {
        let Some(for_each) = self.for_each else {
            if let Some(k) = [
                ("where", self.filter.is_some()),
                ("fields", self.fields.is_some()),
                ("key", self.key.is_some()),
                ("as", self.as_name.is_some()),
            ]
            .iter()
            .find_map(|(k, given)| given.then_some(*k))
            {
                return Err(E::custom(format!(
                    "{SHAPE_ERROR}`{k}` belongs to a record list, which needs `for_each`"
                )));
            }
            let Some(value) = self.value else {
                return Err(E::custom(format!(
                    "{SHAPE_ERROR}a mapping here is a record list (`for_each` + `fields`) or a conditional value (`value` + `if` / `omit_empty`)"
                )));
            };
            return Ok(EvidenceValue::Conditional(Box::new(ConditionalSpec {
                value,
                condition: self.condition,
                omit_empty: self.omit_empty,
            })));
        };
        let value = match self.value {
            None => None,
            Some(EvidenceValue::Text(t)) => Some(t),
            Some(_) => {
                return Err(E::custom(format!(
                    "{SHAPE_ERROR}`value` of a record list is a selector or an expression computed per item"
                )));
            }
        };
        Ok(EvidenceValue::Records(Box::new(RecordsSpec {
            for_each,
            filter: self.filter,
            fields: self.fields.unwrap_or_default(),
            key: self.key,
            value,
            condition: self.condition,
            omit_empty: self.omit_empty,
            as_name: self.as_name,
        })))
    }
}

impl JsonSchema for EvidenceValue {
    fn schema_name() -> Cow<'static, str> {
        "EvidenceValue".into()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        let records = generator.subschema_for::<RecordsSpec>();
        let conditional = generator.subschema_for::<ConditionalSpec>();
        json_schema!({
            "description": "A JSONPath selector (`$...`), an expression (`<< expr >>`), a text with `<< >>` parts, a constant, a record list, or a conditional value.",
            "examples": ["$.repos[*].id", "<< pct(total_detected, total_expected) >>"],
            "anyOf": [
                {"type": "string", "description": "Selector, expression, template or string constant."},
                {"type": "number", "description": "A number constant."},
                {"type": "boolean", "description": "A boolean constant."},
                records,
                conditional
            ]
        })
    }
}

/// The schema of a record field: an evidence value, a nested record list included.
pub struct FieldValue;

impl JsonSchema for FieldValue {
    fn schema_name() -> Cow<'static, str> {
        "FieldValue".into()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        // The conditional form, which a field may take too (a reference in the
        // generator's own definitions section).
        let conditional = generator.subschema_for::<ConditionalSpec>();
        let records = generator.subschema_for::<RecordsSpec>();
        json_schema!({
            "description": "A JSONPath selector (`$...`) over the item, an expression (`<< expr >>`), a text with `<< >>` parts, a constant, a conditional value (`{value, if, omit_empty}`), or a record list nested over the item (its fields see the enclosing item as `outer`).",
            "examples": ["$.id", "<< result.vulnerabilities | length >>"],
            "anyOf": [
                {"type": "string", "description": "Selector, expression, template or string constant."},
                {"type": "number", "description": "A number constant."},
                {"type": "boolean", "description": "A boolean constant."},
                records,
                conditional
            ]
        })
    }
}

// ------------------------------------------------------------------ schema examples

fn example_judge() -> serde_json::Value {
    serde_json::json!({
        "dimension": "vulnerability_accuracy",
        "weight": 0.35,
        "evidence": {
            "total_expected": "<< repos | map(attribute='truth.expected.known_cves') | select | map('length') | sum >>"
        },
        "heuristic": {
            "metric": "total_expected",
            "bands": [{"min": 1, "score": 4}, {"score": 2}],
            "reasoning": "<< total_expected >> known CVEs"
        }
    })
}
fn example_records() -> serde_json::Value {
    serde_json::json!({
        "for_each": "$.repos[?@.truth]",
        "fields": {"repo": "$.id", "found": "<< result.vulnerabilities | length >>"}
    })
}
fn example_conditional() -> serde_json::Value {
    serde_json::json!({"value": "<< findings | selectattr('severity', 'eq', 'CRITICAL') | list >>", "omit_empty": true})
}
fn example_band() -> serde_json::Value {
    serde_json::json!({"min": 90, "score": 5})
}
fn example_adjust() -> serde_json::Value {
    serde_json::json!({"if": "<< not all_in_range >>", "by": -1, "reason": "a count is out of its expected range"})
}
fn example_assertion() -> serde_json::Value {
    serde_json::json!({"that": "<< per_repo | length > 0 >>", "message": "no result matched any ground truth", "cap": 2})
}
