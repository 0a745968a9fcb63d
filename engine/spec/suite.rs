//! `suite.yaml`: what a suite reads and how its verdicts combine.
//!
//! Types here carry no behaviour: they are what a user can write, documented key by key.
//! The JSON Schema in `schemas/suite.schema.json` is generated from them.

use indexmap::IndexMap;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::spec::strict;

/// A suite: the judges of one analysis tool, plus `suite.yaml`.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(
    title = "caldera suite",
    example = example_suite()
)]
pub struct SuiteSpec {
    /// The suite's name, usually the analysis tool's (`trivy`).
    #[schemars(example = &"trivy")]
    pub suite: String,

    /// What the suite evaluates, in a sentence.
    #[serde(default)]
    #[schemars(example = &"Quality of Trivy scanner output against ground truth.")]
    pub description: Option<String>,

    /// Where the run context comes from.
    #[schemars(example = serde_json::json!({"results": "../../ground-truth/trivy/outputs", "ground_truth": "../../ground-truth/trivy/expected"}))]
    pub inputs: InputsSpec,

    /// Default model for LLM mode: an alias (`sonnet`, `opus`, `haiku`) or a full model id.
    /// `--model` overrides it.
    #[serde(default)]
    #[schemars(example = &"sonnet")]
    pub model: Option<String>,

    /// Extra model aliases, added to (or overriding) the built-in table.
    #[serde(default)]
    #[schemars(example = example_aliases())]
    pub model_aliases: IndexMap<String, String>,

    /// Model prices in US dollars per million tokens, added to (or overriding) the
    /// built-in table; a key is a full model id or an id prefix (`claude-sonnet-4-5`
    /// prices every dated snapshot). `caldera plan` and a run's cost use them; a model
    /// without a price has an unknown cost, never $0.
    #[serde(default)]
    #[schemars(example = serde_json::json!({"my-local-model": {"input_per_mtok": 0.0, "output_per_mtok": 0.0}}))]
    pub prices: IndexMap<String, Price>,

    /// A model catalogue file (the form of caldera's built-in one: aliases, limits,
    /// prices, batch factors, deprecation and end-of-life dates), relative to this
    /// folder and inside the project. Its entries replace the built-in entries of the
    /// same id, so a new model or a changed price needs no new caldera; `model_aliases`
    /// and `prices` still apply over it. `caldera schema models` prints its schema.
    #[serde(default)]
    #[schemars(example = &"../models.yaml")]
    pub model_catalogue: Option<String>,

    /// How LLM mode asks for verdicts, for judges whose `verdict` does not say:
    /// `text` (the default: the reply is read as text) or `schema` (the provider binds
    /// the reply to the verdict's JSON Schema; judges with a regex or label format keep
    /// `text`).
    #[serde(default)]
    #[schemars(example = &"schema")]
    pub verdict_transport: Option<crate::spec::verdict_format::Transport>,

    /// Thinking before the verdict, for judges whose own `reasoning` does not say.
    #[serde(default)]
    pub reasoning: Option<crate::spec::reasoning::ReasoningSpec>,

    /// Provider prompt caching in LLM mode: `auto` (the default) marks a prompt cacheable
    /// when it will be asked again within the cache's lifetime (`--repeat`), `on` marks
    /// every prompt (a re-ask or a re-run within minutes then reads it; a prompt asked
    /// once pays the write premium), `off` never.
    #[serde(default)]
    pub prompt_cache: PromptCache,

    /// With a panel of models (`--models a,b,c`): the mean pairwise kappa below which the
    /// run carries a warning (default 0.70, the usual bar for publishable agreement).
    /// `caldera calibrate` flags a judge whose weighted kappa against people is below it.
    #[serde(default, deserialize_with = "strict::opt_number")]
    #[schemars(range(min = -1.0, max = 1.0), example = 0.7)]
    pub kappa_target: Option<f64>,

    /// `normalised` (default): judge weights are meant to sum to 1.0 and `validate` warns
    /// when they do not. `relative`: weights are shares of their sum, whatever it is (for
    /// suites that keep an earlier framework's weights).
    #[serde(default)]
    pub weights: WeightsMode,

    /// With a panel of models: how their scores combine into the dimension's score.
    /// `median` (default; the lower middle for an even count), `mean` (rounded to the
    /// nearest integer, halves up), or `majority` (a score more than half the models gave;
    /// without one the unit is unscored).
    #[serde(default)]
    pub consensus: Consensus,

    /// The score a judge must reach to pass, unless the judge says otherwise (default 3).
    #[serde(default, deserialize_with = "strict::opt_number")]
    #[schemars(range(min = 1, max = 5), example = 3)]
    pub pass_threshold: Option<f64>,

    /// Whether a judge that ends in `error` may leave the run passing. By default a run
    /// with an errored judge fails, naming the judge: a tool must not raise its grade by
    /// breaking the field a judge reads. When allowed, an errored judge still counts at
    /// the lowest score (1) in the score the decision rests on. `--allow-errors` sets it
    /// for one run.
    #[serde(default)]
    #[schemars(example = false)]
    pub allow_errors: bool,

    /// The least share of units that must be scored for the run to pass, from 0 to 1
    /// (default 0.9). A unit is one verdict asked for: a suite-scope judge, one repo of a
    /// `scope: repo` judge, one model of a panel. Below it the decision is FAIL and the
    /// summary says how many units were scored.
    #[serde(default)]
    #[schemars(range(min = 0, max = 1), example = 0.9)]
    pub min_coverage: Option<f64>,

    /// Decision labels on the weighted 1-5 score; the first row whose `min` the score
    /// reaches wins, and the last row must have no `min`. Default: >= 4.0 STRONG_PASS,
    /// >= 3.5 PASS, >= 3.0 WEAK_PASS, else FAIL.
    #[serde(default)]
    #[schemars(example = serde_json::json!([{"min": 4.0, "label": "STRONG_PASS"}, {"min": 3.5, "label": "PASS"}, {"min": 3.0, "label": "WEAK_PASS"}, {"label": "FAIL"}]), length(min = 1))]
    pub decision: Option<Vec<DecisionRow>>,

    /// The fields that identify a record of an evidence list when two results are compared
    /// (`caldera diff`, `--baseline`), most preferred first: two lists of records are
    /// matched item to item by the first of these fields that every record on both sides
    /// has, with distinct values (then by the first record's other fields, in order), so
    /// an inserted finding reads as one addition and its neighbours do not change. Default:
    /// `id`, `repo`, `name`, `key`, `path`, `file`. The result records the list, so
    /// `caldera diff` of two saved results uses it too.
    #[serde(default)]
    #[schemars(example = serde_json::json!(["repo", "cve_id", "path"]))]
    pub identity_keys: Option<Vec<String>>,

    /// The reasoning of a score a failed assertion capped: `note` (default) puts `score
    /// capped from N to M by failed assertions: ...` before it; `keep` leaves it as the
    /// judge wrote it (the verdict still carries `score_before_cap`, `cap_applied` and
    /// the failures, and the run summary lists them).
    #[serde(default)]
    pub cap_note: crate::spec::cap_note::CapNote,

    /// Evidence computed once per run, before any judge, and visible to every judge by
    /// name (e.g. one normalised record per repo). Same language as a judge's evidence.
    #[serde(default)]
    #[schemars(example = serde_json::json!({"scans": {"for_each": "$.repos[*]", "fields": {"repo": "$.id"}}}))]
    pub evidence: IndexMap<String, crate::spec::judge::EvidenceValue>,

    /// Judge files to run, in order, relative to the suite folder. Default: every
    /// `*.yaml` / `*.yml` file of the folder except `suite.yaml`, sorted by name.
    #[serde(default)]
    #[schemars(example = example_judges(), length(min = 1))]
    pub judges: Option<Vec<String>>,
}

/// How a panel's scores combine.
#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
#[schemars(example = &"median")]
pub enum Consensus {
    /// The median score.
    #[default]
    Median,
    /// The mean score, rounded.
    Mean,
    /// A strict majority, else unscored.
    Majority,
}

/// How judge weights are meant.
#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
#[schemars(example = &"relative")]
pub enum WeightsMode {
    /// Weights sum to 1.0 (a warning otherwise).
    #[default]
    Normalised,
    /// Weights are relative; the overall score divides by their sum.
    Relative,
}

/// The inputs of a run: analysis results, ground truth and other named files.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct InputsSpec {
    /// Folder of analysis outputs (`*.json`, also gzip-compressed `*.json.gz`), relative
    /// to `suite.yaml`: a path, or
    /// `{folder, json, skip_unreadable, run_file}`. `--results` overrides the folder.
    #[schemars(example = &"../../ground-truth/trivy/outputs")]
    pub results: FolderInput,

    /// Folder of ground-truth files (`*.json`, also `*.json.gz`), relative to
    /// `suite.yaml`: a path, or
    /// `{folder, json, skip_unreadable, run_file}`. `--ground-truth` overrides the folder.
    #[serde(default)]
    #[schemars(example = &"../../ground-truth/trivy/expected")]
    pub ground_truth: Option<FolderInput>,

    /// How a document names its repo: the first of these fields (dotted paths allowed)
    /// that holds a non-empty string wins; otherwise the file stem. Applies to results
    /// and ground truth alike.
    #[serde(default = "default_key")]
    #[schemars(example = example_key())]
    pub key: Vec<String>,

    /// Envelope keys to unwrap, tried in order: when a result document has this
    /// top-level key holding an object, that object is what judges see.
    #[serde(default = "default_unwrap")]
    #[schemars(example = example_unwrap())]
    pub unwrap: Vec<String>,

    /// Envelope keys to unwrap in ground-truth documents (default: none).
    #[serde(default)]
    #[schemars(example = serde_json::json!(["expected"]))]
    pub unwrap_truth: Vec<String>,

    /// How a ground-truth document names its repo, when it differs from a result
    /// (`metadata.scenario` against a result's `repo_id`): fields tried in order as
    /// `key` is, else the file stem. Default: the same fields as `key`.
    #[serde(default)]
    #[schemars(example = serde_json::json!(["metadata.repo", "repository"]))]
    pub truth_key: Option<Vec<String>>,

    /// Other named inputs a judge may read as `inputs.<name>`.
    #[serde(default)]
    #[schemars(example = serde_json::json!({"baseline": {"file": "../../baselines/trivy.json", "optional": true}}))]
    pub files: IndexMap<String, NamedInput>,

    /// When true, a results folder without result files is judged (zero repos: `repos`
    /// is empty, and `suite.results_dir` names the folder) instead of refusing the run.
    /// A missing folder is still an error.
    #[serde(default)]
    #[schemars(example = true)]
    pub allow_empty: bool,
}

/// One named input: a single file or the newest file matching a glob.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(example = example_named_input())]
pub struct NamedInput {
    /// One JSON file, relative to `suite.yaml`.
    #[serde(default)]
    #[schemars(example = &"../../baselines/trivy.json")]
    pub file: Option<String>,

    /// A glob (relative to `suite.yaml`); the most recently modified match is read.
    #[serde(default)]
    #[schemars(example = &"../../runs/trivy-*.json")]
    pub newest: Option<String>,

    /// When true, a missing file gives `null` instead of an error.
    #[serde(default, deserialize_with = "strict::flag")]
    #[schemars(example = true)]
    pub optional: bool,

    /// `strict` (default) or `lenient`: also read `NaN`, `Infinity` and `-Infinity`, as
    /// Python's `json` module writes them.
    #[serde(default)]
    pub json: JsonMode,

    /// When true, a file that cannot be read or parsed gives `null`, and the run lists it
    /// among its problems, instead of stopping the run.
    #[serde(default)]
    #[schemars(example = true)]
    pub skip_unreadable: bool,
}

/// A folder of JSON documents: a path, or the path with options (see [`FolderForm`]).
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct FolderInput {
    /// The folder, relative to `suite.yaml`.
    pub folder: String,
    /// How strictly its JSON is read.
    pub json: JsonMode,
    /// Whether unreadable files are skipped (and listed) instead of stopping the run.
    pub skip_unreadable: bool,
    /// The file read in each run folder, if run folders are read.
    pub run_file: Option<String>,
}

impl FolderInput {
    /// A plain folder with the default options.
    pub fn plain(folder: impl Into<String>) -> FolderInput {
        FolderInput {
            folder: folder.into(),
            json: JsonMode::Strict,
            skip_unreadable: false,
            run_file: None,
        }
    }
}

/// How strictly JSON is read.
#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
#[schemars(example = &"lenient")]
pub enum JsonMode {
    /// Standard JSON only.
    #[default]
    Strict,
    /// Standard JSON plus `NaN`, `Infinity` and `-Infinity`.
    Lenient,
}

/// A folder input written as a mapping.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(example = example_folder_input())]
pub struct FolderForm {
    /// The folder, relative to `suite.yaml`.
    #[schemars(example = &"../../runs")]
    folder: String,

    /// `strict` (default) or `lenient`: also read `NaN`, `Infinity` and `-Infinity`, as
    /// Python's `json` module writes them (non-finite numbers are shown as `null` in
    /// results and prompts, and never satisfy a band).
    #[serde(default)]
    json: JsonMode,

    /// When true, a file that cannot be read or parsed is skipped and listed among the
    /// run's problems, instead of stopping the run.
    #[serde(default)]
    #[schemars(example = true)]
    skip_unreadable: bool,

    /// Also read run folders: `<folder>/<run>/<run_file>` (e.g. `output.json`, as the
    /// original framework's loaders did), named by the key fields, else by the run
    /// folder's name.
    #[serde(default)]
    #[schemars(example = &"output.json")]
    run_file: Option<String>,
}

impl JsonSchema for FolderInput {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "FolderInput".into()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let form = generator.subschema_for::<FolderForm>();
        schemars::json_schema!({
            "description": "A folder path relative to suite.yaml, or the folder with options.",
            "anyOf": [{"type": "string"}, form]
        })
    }
}

impl<'de> Deserialize<'de> for FolderInput {
    /// A path, or a mapping with `folder` (reported key by key when wrong).
    fn deserialize<D: serde::Deserializer<'de>>(de: D) -> Result<Self, D::Error> {
        use serde::de::{self, MapAccess, Visitor};
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = FolderInput;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a folder path or {folder, json, skip_unreadable, run_file}")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<FolderInput, E> {
                Ok(FolderInput::plain(v))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<FolderInput, A::Error> {
                let f = FolderForm::deserialize(de::value::MapAccessDeserializer::new(map))?;
                Ok(FolderInput {
                    folder: f.folder,
                    json: f.json,
                    skip_unreadable: f.skip_unreadable,
                    run_file: f.run_file,
                })
            }
        }
        de.deserialize_any(V)
    }
}

/// One row of the decision table.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema, PartialEq)]
#[serde(deny_unknown_fields)]
#[schemars(example = example_decision_row())]
pub struct DecisionRow {
    /// The lowest weighted score (inclusive) that earns this label; omit on the last row.
    #[serde(default, deserialize_with = "strict::opt_number")]
    #[schemars(range(min = 1, max = 5), example = 3.5)]
    pub min: Option<f64>,

    /// The label (`STRONG_PASS`, `PASS`, `WEAK_PASS`, `FAIL`, or your own).
    #[schemars(example = &"PASS")]
    pub label: String,
}

fn default_key() -> Vec<String> {
    vec!["id".into(), "metadata.repo_id".into()]
}

fn default_unwrap() -> Vec<String> {
    vec!["data".into()]
}

fn example_suite() -> serde_json::Value {
    serde_json::json!({
        "suite": "trivy",
        "inputs": {"results": "../../ground-truth/trivy/outputs", "ground_truth": "../../ground-truth/trivy/expected"},
        "model": "sonnet"
    })
}
fn example_aliases() -> serde_json::Value {
    serde_json::json!({"fast": "claude-haiku-4-5"})
}
fn example_judges() -> serde_json::Value {
    serde_json::json!(["vulnerability_accuracy.yaml", "severity_accuracy.yaml"])
}
fn example_key() -> serde_json::Value {
    serde_json::json!(["id", "metadata.repo_id"])
}
fn example_unwrap() -> serde_json::Value {
    serde_json::json!(["data", "results"])
}
fn example_named_input() -> serde_json::Value {
    serde_json::json!({"newest": "../../runs/*.json", "optional": true})
}
fn example_folder_input() -> serde_json::Value {
    serde_json::json!({"folder": "../../runs", "json": "lenient", "skip_unreadable": true, "run_file": "output.json"})
}
fn example_decision_row() -> serde_json::Value {
    serde_json::json!({"min": 3.5, "label": "PASS"})
}

/// US dollars per million tokens.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Price {
    /// Dollars per million input (prompt) tokens.
    pub input_per_mtok: f64,
    /// Dollars per million output (completion) tokens.
    pub output_per_mtok: f64,
}

/// When prompts are marked for the provider's prompt cache.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PromptCache {
    /// Where the prompt will be asked again (`--repeat`).
    #[default]
    Auto,
    /// Every prompt.
    On,
    /// None.
    Off,
}
