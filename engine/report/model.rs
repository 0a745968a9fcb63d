//! What a report reads: the result document, as written to JSON.
//!
//! Reports read the saved document, not the engine's in-memory types, so that
//! `caldera report` and `caldera diff` render a result written by an earlier run (or an
//! earlier caldera of the same result format) exactly as `caldera run` renders a fresh
//! one. Every field is optional here: a report shows what the document has and never
//! makes up what it lacks.

use std::path::Path;

use indexmap::IndexMap;
use serde::Deserialize;
use serde_json::Value;

use crate::diag::{Code, Diagnostic, Span};
use crate::report::json::RESULT_FORMAT;
use crate::run::result::RunResult;

/// Result files larger than this are refused rather than read into memory.
pub(crate) const MAX_RESULT_BYTES: u64 = 512 * 1024 * 1024;

/// A run result, as a report reads it.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct Report {
    /// The result format of the document (`RESULT_FORMAT` when absent).
    pub result_format: Option<u32>,
    /// The caldera that wrote it.
    pub caldera_version: Option<String>,
    /// The run id.
    pub run_id: String,
    /// When it ran.
    pub timestamp: String,
    /// The suite's name.
    pub suite: String,
    /// `heuristic` or `llm`.
    pub mode: String,
    /// The model or panel.
    pub model: Option<String>,
    /// The provider.
    pub provider: Option<String>,
    /// Calls, tokens, cost.
    pub usage: Option<UsageView>,
    /// Agreement of a panel of models.
    pub panel: Option<RunPanelView>,
    /// One entry per judge.
    pub dimensions: Vec<Dimension>,
    /// The weighted score.
    pub total_score: Option<f64>,
    /// Mean confidence over scored judges.
    pub average_confidence: Option<f64>,
    /// The decision label.
    pub decision: String,
    /// What the decision rests on, when the document says.
    pub gate: Option<GateView>,
    /// The suite's fields that identify a record in evidence comparisons, when it names
    /// them.
    pub identity_keys: Option<Vec<String>>,
    /// Counts and problems.
    pub summary: SummaryView,
    /// What was read.
    pub inputs: InputsView,
    /// The whole document as JSON text, for the JSON format ([`Report::document`]).
    /// Text, not a parsed value beside the typed view: that second copy made a report
    /// need about twelve times the size of the result in memory.
    #[serde(skip)]
    source: std::sync::Arc<str>,
}

/// Whether a verdict carries a score.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// A score was given.
    Scored,
    /// No score, with a reason.
    #[default]
    Unscored,
    /// Evidence or scoring failed.
    Error,
}

impl Status {
    /// The word reports print.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Scored => "scored",
            Status::Unscored => "unscored",
            Status::Error => "error",
        }
    }
}

/// One dimension of the result.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct Dimension {
    /// The dimension's name.
    pub name: String,
    /// Scored, unscored or error.
    pub status: Status,
    /// `heuristic` or `llm`.
    pub source: String,
    /// The final score.
    pub score: Option<f64>,
    /// The weight as written.
    pub weight: f64,
    /// The weight over the suite's total.
    pub normalized_weight: f64,
    /// score x normalized weight.
    pub weighted_score: Option<f64>,
    /// 0..1.
    pub confidence: Option<f64>,
    /// Why.
    pub reasoning: String,
    /// Evidence points the verdict cites.
    pub evidence_cited: Vec<String>,
    /// Improvements.
    pub recommendations: Vec<String>,
    /// Sub-dimension scores.
    pub sub_scores: IndexMap<String, Value>,
    /// Failed assertions.
    pub assertion_failures: Vec<AssertionView>,
    /// The score before a cap.
    pub score_before_cap: Option<f64>,
    /// The cap applied.
    pub cap_applied: Option<f64>,
    /// The score needed to pass.
    pub pass_threshold: Option<f64>,
    /// Whether the score passed.
    pub passed: Option<bool>,
    /// Why there is no score.
    pub unscored_reason: Option<String>,
    /// Per-repo verdicts (`scope: repo` judges).
    pub repos: Vec<RepoView>,
    /// The spread of per-repo scores.
    pub spread: Option<SpreadView>,
    /// The heuristic's verdict beside a model's.
    pub heuristic: Option<HeuristicView>,
    /// Each panel member's verdict.
    pub model_verdicts: Vec<ModelVerdictView>,
    /// The panel's ratings and agreement on this dimension.
    pub panel: Option<DimensionPanelView>,
    /// The evidence the verdict rests on.
    pub evidence: Value,
}

/// A failed assertion.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(default)]
pub struct AssertionView {
    /// Its message.
    pub message: String,
    /// Its cap.
    pub cap: Option<f64>,
    /// The repo, for per-repo judges.
    pub repo: Option<String>,
}

/// One repo's verdict.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct RepoView {
    /// The repo id.
    pub repo: String,
    /// Scored, unscored or error.
    pub status: Status,
    /// Its score.
    pub score: Option<f64>,
    /// Its confidence.
    pub confidence: Option<f64>,
    /// Why.
    pub reasoning: String,
    /// Why there is no score.
    pub unscored_reason: Option<String>,
    /// Its evidence.
    pub evidence: Value,
}

/// The spread of per-repo scores.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct SpreadView {
    /// Lowest.
    pub min: f64,
    /// Highest.
    pub max: f64,
    /// Sample standard deviation.
    pub std: Option<f64>,
    /// Scored repos.
    pub n: usize,
}

/// The heuristic's view in LLM mode.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct HeuristicView {
    /// Scored or not.
    pub status: Status,
    /// Its score.
    pub score: Option<f64>,
    /// Its reasoning.
    pub reasoning: String,
}

/// One panel member's verdict.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct ModelVerdictView {
    /// The model.
    pub model: String,
    /// The repo, for per-repo judges.
    pub repo: Option<String>,
    /// Its score.
    pub score: f64,
    /// Its confidence.
    pub confidence: f64,
    /// Its reasoning.
    pub reasoning: String,
}

/// Agreement on one dimension.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct DimensionPanelView {
    /// Each model's score per unit.
    pub ratings: IndexMap<String, Vec<Option<f64>>>,
    /// Agreement statistics.
    pub agreement: Option<AgreementView>,
    /// Why statistics are missing or thin.
    pub note: Option<String>,
}

/// Agreement statistics of a panel.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct AgreementView {
    /// Items rated.
    pub n_items: usize,
    /// The raters.
    pub raters: Vec<String>,
    /// Cohen's kappa per pair, keyed `"<a>_vs_<b>"`.
    pub pairwise_kappa: IndexMap<String, KappaView>,
    /// Mean pairwise kappa.
    pub mean_kappa: Option<f64>,
    /// Its verbal strength.
    pub mean_kappa_interpretation: Value,
    /// Fleiss' kappa.
    pub fleiss: KappaView,
    /// Krippendorff's alpha, nominal.
    pub alpha_nominal: AlphaView,
    /// Krippendorff's alpha, ordinal.
    pub alpha_ordinal: AlphaView,
    /// Unanimous agreement.
    pub agreement: UnanimousView,
}

/// One kappa coefficient.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct KappaView {
    /// The coefficient (`None` when undefined).
    pub kappa: Option<f64>,
    /// Its verbal strength.
    pub interpretation: Value,
}

/// Krippendorff's alpha.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct AlphaView {
    /// The coefficient.
    pub alpha: Option<f64>,
    /// Its verbal strength.
    pub interpretation: Value,
}

/// Unanimous agreement.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct UnanimousView {
    /// Items on which every rater agreed.
    pub unanimous_items: usize,
    /// Their share.
    pub rate: Option<f64>,
}

/// Agreement over the whole run.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct RunPanelView {
    /// The models.
    pub models: Vec<String>,
    /// Units rated.
    pub items: usize,
    /// Ratings missing.
    pub missing_ratings: usize,
    /// Unweighted statistics.
    pub agreement: Option<AgreementView>,
    /// The suite's target for the mean kappa.
    pub kappa_target: Option<f64>,
    /// Set when agreement is below target or undefined.
    pub warning: Option<String>,
    /// A large panel's pairwise kappas, summarised (past a handful of models).
    pub pairwise: Option<PairwiseView>,
}

/// A large panel's pairwise kappas summarised, per weighting (unweighted read here).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct PairwiseView {
    /// Unweighted kappa.
    pub unweighted: DigestView,
}

/// What a person reads of many pairs.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct DigestView {
    /// Pairs in all.
    pub n_pairs: usize,
    /// The least agreeing pairs.
    pub lowest: Vec<PairEndView>,
    /// Each model's mean kappa with the others.
    pub by_model: indexmap::IndexMap<String, Option<f64>>,
}

/// One pair at an end of the ranking.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct PairEndView {
    /// `a~b`.
    pub pair: String,
    /// Its kappa.
    pub kappa: f64,
}

/// Model usage.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct UsageView {
    /// Verdicts asked for.
    pub calls: usize,
    /// Of those, the ones that ended with a verdict.
    pub verdicts: usize,
    /// Answered from the cache.
    pub cached: usize,
    /// Requests that reached a provider, retries and re-asks included.
    pub requests: u64,
    /// Input tokens.
    pub input_tokens: u64,
    /// Output tokens.
    pub output_tokens: u64,
    /// Of the output tokens, those spent reasoning (where the provider itemises them).
    pub reasoning_tokens: u64,
    /// Prompt tokens written to the providers' prompt caches.
    pub cache_write_tokens: u64,
    /// Prompt tokens read from the providers' prompt caches.
    pub cache_read_tokens: u64,
    /// Cost in USD; `None` when unknown (a call of a model without a price).
    pub cost_usd: Option<f64>,
}

impl UsageView {
    /// The tokens as reports show them: input and output, then the prompt cache's
    /// writes and reads and the reasoning share of the output where there are any.
    pub fn tokens_text(&self) -> String {
        let mut text = format!(
            "{} input + {} output tokens",
            self.input_tokens, self.output_tokens
        );
        if self.reasoning_tokens > 0 {
            text.push_str(&format!(" ({} reasoning)", self.reasoning_tokens));
        }
        if self.cache_write_tokens + self.cache_read_tokens > 0 {
            text.push_str(&format!(
                ", prompt cache {} written + {} read",
                self.cache_write_tokens, self.cache_read_tokens
            ));
        }
        text
    }

    /// The cost as reports show it: `$0.0123`, or `cost unknown`.
    pub fn cost_text(&self) -> String {
        self.cost_usd
            .map_or_else(|| "cost unknown".to_owned(), |c| format!("${c:.4}"))
    }
}

/// What the decision rests on.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct GateView {
    /// The exact score the decision table was read with.
    pub decision_score: Option<f64>,
    /// Share of units with a score.
    pub coverage: Option<f64>,
    /// Units asked for.
    pub units: usize,
    /// Units with a score.
    pub scored_units: usize,
    /// True when a gate failed the run whatever its score.
    pub blocked: bool,
    /// One line: why the decision is what it is.
    pub reason: String,
    /// The decision table's bars (none in results written before they were recorded).
    pub bars: Vec<f64>,
}

/// Counts and problems.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct SummaryView {
    /// Judges.
    pub judges: usize,
    /// Judges with a score.
    pub scored: usize,
    /// Judges without one.
    pub unscored: usize,
    /// Judges in error.
    pub errors: usize,
    /// Failed assertions.
    pub failed_assertions: usize,
    /// Judges that passed.
    pub passed: usize,
    /// Everything worth a look.
    pub problems: Vec<ProblemView>,
}

/// Something the run calls out.
#[derive(Debug, Clone, Default, Deserialize, serde::Serialize, PartialEq, Eq, Hash)]
#[serde(default)]
pub struct ProblemView {
    /// The dimension, when it is about one judge.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dimension: Option<String>,
    /// Its kind.
    pub kind: String,
    /// What happened.
    pub message: String,
}

impl ProblemView {
    /// `[kind] who: message`, the one-line form every format prints.
    pub fn line(&self) -> String {
        format!(
            "[{}] {}: {}",
            self.kind,
            self.dimension.as_deref().unwrap_or("run"),
            self.message
        )
    }
}

/// What was read.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct InputsView {
    /// The results folder.
    pub results_dir: String,
    /// The ground-truth folder.
    pub ground_truth_dir: Option<String>,
    /// Result documents.
    pub results: usize,
    /// Ground-truth documents.
    pub ground_truth: usize,
}

impl Report {
    /// The report of a finished run (through its JSON document, so a fresh run and a
    /// saved one render the same). An error means the result type and this view have
    /// drifted apart; it names the key path.
    pub fn of(result: &RunResult) -> Result<Report, String> {
        Report::from_text(crate::report::json::to_text(result))
    }

    /// Reads a document from its text (no intermediate `serde_json::Value`, whose copy
    /// of a large evidence section would cost several times the text); the error names
    /// the key path that does not fit.
    pub(crate) fn from_text(text: String) -> Result<Report, String> {
        let mut de = serde_json::Deserializer::from_str(&text);
        let mut report: Report = serde_path_to_error::deserialize(&mut de)
            .map_err(|e| format!("`{}`: {}", e.path(), e.inner()))?;
        report.source = text.into();
        Ok(report)
    }

    /// The bars of the decision table (see `GateView::bars`); none when the document
    /// does not record them, and then scores are shown with their usual decimals.
    pub fn bars(&self) -> &[f64] {
        self.gate.as_ref().map_or(&[], |g| g.bars.as_slice())
    }

    /// Reads a document; the error names the key path that does not fit.
    pub fn from_value(doc: Value) -> Result<Report, String> {
        let source = serde_json::to_string(&doc).unwrap_or_default();
        let mut report: Report = serde_path_to_error::deserialize(doc)
            .map_err(|e| format!("`{}`: {}", e.path(), e.inner()))?;
        report.source = source.into();
        Ok(report)
    }

    /// The whole document, for the JSON format and evidence that has no typed view
    /// (parsed again from the text on each call).
    pub fn document(&self) -> Value {
        serde_json::from_str(&self.source).unwrap_or_default()
    }

    /// Reads a saved result: a located diagnostic for a missing, oversized, malformed or
    /// foreign file, and for a result format this caldera cannot read.
    pub fn read(path: &Path) -> Result<Report, Diagnostic> {
        let meta = std::fs::metadata(path).map_err(|e| {
            let code = if e.kind() == std::io::ErrorKind::NotFound {
                Code::MissingPath
            } else {
                Code::Io
            };
            Diagnostic::error(code, format!("cannot read the result: {e}")).in_file(path)
        })?;
        if meta.len() > MAX_RESULT_BYTES {
            return Err(Diagnostic::error(
                Code::Io,
                format!(
                    "the file is {} bytes, above the {MAX_RESULT_BYTES}-byte limit for a result",
                    meta.len()
                ),
            )
            .in_file(path));
        }
        let bytes = if crate::load::gzip::is_json_gz(path) {
            // A compressed result (`gzip results/trivy/*.json` to keep many runs): the
            // same limit holds for what it inflates to.
            let mut bytes = Vec::new();
            crate::load::gzip::read_into(path, &mut bytes, MAX_RESULT_BYTES)?;
            bytes
        } else {
            std::fs::read(path).map_err(|e| {
                Diagnostic::error(Code::Io, format!("cannot read the result: {e}")).in_file(path)
            })?
        };
        // Two passes over the bytes, neither building a tree of the whole document: the
        // top-level keys first (syntax, and whether this is a result this caldera
        // reads), then the typed view.
        let skeleton = match serde_json::from_slice::<Skeleton>(&bytes) {
            Ok(s) => s.0,
            Err(e) => {
                // Located, never quoted: the file may be anything (a link to the
                // process's environment).
                let (msg, span) = located(&e, &bytes);
                return Err(
                    Diagnostic::error(Code::JsonSyntax, format!("not valid JSON: {msg}"))
                        .in_file(path)
                        .at(span)
                        .unquoted()
                        .note(format!(
                            "the file holds {} bytes; its content is not shown",
                            bytes.len()
                        )),
                );
            }
        };
        check_shape(&skeleton).map_err(|(key, msg)| {
            Diagnostic::error(Code::WrongType, msg)
                .in_file(path)
                .key(key)
                .help("a result is the JSON file `caldera run` writes (results/<suite>/<run id>.json)")
        })?;
        let mut de = serde_json::Deserializer::from_slice(&bytes);
        let mut report: Report = serde_path_to_error::deserialize(&mut de).map_err(|e| {
            let (msg, span) = located(e.inner(), &bytes);
            Diagnostic::error(
                Code::WrongType,
                format!(
                    "not a caldera result: `{}`: {}",
                    e.path(),
                    without_values(&msg)
                ),
            )
            .in_file(path)
            .at(span)
            .unquoted()
        })?;
        report.source = String::from_utf8(bytes)
            .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
            .into();
        Ok(report)
    }

    /// The format of the document.
    pub fn format(&self) -> u32 {
        self.result_format.unwrap_or(RESULT_FORMAT)
    }

    /// One line when judges were left without a score by the `--max-cost` budget or by
    /// replay misses: such a run measured too little to pass or fail (exit 3). The
    /// executor's reasons for those two cases start with `budget:` and `replay:` (inside
    /// a panel's reason, one per model, after the model's name). Units are counted as
    /// the table counts them: a `scope: repo` judge's repos (not the judge as well), and
    /// each model of a panel. A model without a price is named with how to price it:
    /// raising the budget cannot help it.
    pub fn incomplete(&self) -> Option<String> {
        let mut over_budget = StoppedUnits::default();
        let mut unpriced = StoppedUnits::default();
        let mut replay = StoppedUnits::default();
        let mut models: Vec<String> = Vec::new();
        for (who, reason) in self.unscored_units() {
            let stopped = StoppedCalls::of(reason);
            over_budget.add(&who, stopped.over_budget);
            unpriced.add(&who, stopped.unpriced.len());
            replay.add(&who, stopped.replay);
            for model in stopped.unpriced {
                if !models.contains(&model) {
                    models.push(model);
                }
            }
        }
        let mut parts = Vec::new();
        if unpriced.count > 0 {
            let named: Vec<String> = models.iter().map(|m| format!("`{m}`")).collect();
            parts.push(format!(
                "{} unit(s) ({}) were not asked: no price is known for {}, so --max-cost \
                 cannot vouch for a call; give {} a price under `prices:` in the suite \
                 ({{{}: {{input_per_mtok, output_per_mtok}}}}), or drop --max-cost",
                unpriced.count,
                unpriced.list(),
                named.join(", "),
                if models.len() == 1 { "it" } else { "each" },
                models.first().map_or("model", String::as_str),
            ));
        }
        if over_budget.count > 0 {
            parts.push(format!(
                "the --max-cost budget stopped the calls of {} unit(s) ({}); raise --max-cost, \
                 or score with --heuristic",
                over_budget.count,
                over_budget.list()
            ));
        }
        if replay.count > 0 {
            parts.push(format!(
                "--replay found no cached verdict for {} unit(s) ({}); run once without \
                 --replay to fill the cache",
                replay.count,
                replay.list()
            ));
        }
        (!parts.is_empty()).then(|| format!("incomplete: {}", parts.join("; and ")))
    }

    /// Every unit without a score that says why, named as the run summary names it:
    /// a `scope: repo` judge's repos, else the judge.
    fn unscored_units(&self) -> Vec<(String, &str)> {
        let mut units = Vec::new();
        for d in &self.dimensions {
            if d.repos.is_empty() {
                if d.status != Status::Scored
                    && let Some(reason) = &d.unscored_reason
                {
                    units.push((d.name.clone(), reason.as_str()));
                }
                continue;
            }
            for r in d.repos.iter().filter(|r| r.status != Status::Scored) {
                if let Some(reason) = &r.unscored_reason {
                    units.push((format!("{} / {}", d.name, r.repo), reason.as_str()));
                }
            }
        }
        units
    }

    /// The dimension called `name`.
    pub fn dimension(&self, name: &str) -> Option<&Dimension> {
        self.dimensions.iter().find(|d| d.name == name)
    }
}

/// Units whose calls were not made for one cause: how many (a panel's unit counts
/// once per model), and their names.
#[derive(Debug, Default)]
struct StoppedUnits {
    count: usize,
    names: Vec<String>,
}

impl StoppedUnits {
    /// Counts `calls` calls of the unit `who` (none: nothing to count).
    fn add(&mut self, who: &str, calls: usize) {
        if calls > 0 {
            self.count += calls;
            self.names.push(who.to_owned());
        }
    }

    /// The first five names, and how many more.
    fn list(&self) -> String {
        let shown: Vec<&str> = self.names.iter().take(5).map(String::as_str).collect();
        let more = self.names.len().saturating_sub(5);
        if more > 0 {
            format!("{} and {more} more", shown.join(", "))
        } else {
            shown.join(", ")
        }
    }
}

/// The calls of one unit that were not made, read from its reason: one `budget: ` or
/// `replay: ` segment per model (at the start, or after a model's name and `: `).
#[derive(Debug, Default, PartialEq)]
struct StoppedCalls {
    /// Calls the budget could not cover.
    over_budget: usize,
    /// Models with no price, one per call.
    unpriced: Vec<String>,
    /// Calls with no cached verdict to replay.
    replay: usize,
}

impl StoppedCalls {
    fn of(reason: &str) -> StoppedCalls {
        let segment_starts = |label: &'static str| {
            reason
                .match_indices(label)
                .filter(|(i, _)| *i == 0 || reason[..*i].ends_with(": "))
                .map(move |(i, _)| &reason[i + label.len()..])
        };
        let mut stopped = StoppedCalls::default();
        for rest in segment_starts("budget: ") {
            let unpriced = rest
                .strip_prefix("no price is known for model `")
                .and_then(|r| r.split_once('`'));
            match unpriced {
                Some((model, _)) => stopped.unpriced.push(model.to_owned()),
                None => stopped.over_budget += 1,
            }
        }
        stopped.replay = segment_starts("replay: ").count();
        stopped
    }
}

/// The message of a JSON error without its position, and the position as a span.
fn located(e: &serde_json::Error, bytes: &[u8]) -> (String, Option<Span>) {
    let span = (e.line() > 0).then(|| {
        Span::at_line_col(
            &String::from_utf8_lossy(bytes),
            e.line(),
            e.column().max(1),
            1,
        )
    });
    let msg = e.to_string();
    let msg = msg.split(" at line ").next().unwrap_or(&msg).to_owned();
    (msg, span)
}

/// A type error's message without the text it found: serde quotes a string or character
/// value (`invalid type: string "...", expected f64`) and an unknown variant, and a file
/// that is not a result may hold anything (a key in a field a result has as a number).
/// The place and what was expected are kept.
fn without_values(msg: &str) -> String {
    static QUOTED: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(
            r#"(?s)\b(string|character) (?:"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')|unknown variant `.*`, expected"#,
        )
        .unwrap_or_else(|e| unreachable!("a fixed pattern: {e}"))
    });
    QUOTED
        .replace_all(msg, |c: &regex::Captures<'_>| match c.get(1) {
            Some(kind) => format!("{} (not shown)", kind.as_str()),
            None => "unknown variant (not shown), expected".to_owned(),
        })
        .into_owned()
}

/// The top level of a document, as [`check_shape`] reads it: an object keeps its keys,
/// with scalar values as they are and lists and objects as `null`; anything else is an
/// empty list. Read without building the rest of the document.
struct Skeleton(Value);

impl<'de> Deserialize<'de> for Skeleton {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Top;
        impl<'de> serde::de::Visitor<'de> for Top {
            type Value = Value;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON document")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<Value, A::Error> {
                let mut top = serde_json::Map::new();
                while let Some((key, Scalar(value))) = map.next_entry::<String, Scalar>()? {
                    top.insert(key, value);
                }
                Ok(Value::Object(top))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<Value, A::Error> {
                while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {}
                Ok(Value::Array(Vec::new()))
            }
            fn visit_bool<E>(self, _: bool) -> Result<Value, E> {
                Ok(Value::Array(Vec::new()))
            }
            fn visit_i64<E>(self, _: i64) -> Result<Value, E> {
                Ok(Value::Array(Vec::new()))
            }
            fn visit_u64<E>(self, _: u64) -> Result<Value, E> {
                Ok(Value::Array(Vec::new()))
            }
            fn visit_f64<E>(self, _: f64) -> Result<Value, E> {
                Ok(Value::Array(Vec::new()))
            }
            fn visit_str<E>(self, _: &str) -> Result<Value, E> {
                Ok(Value::Array(Vec::new()))
            }
            fn visit_unit<E>(self) -> Result<Value, E> {
                Ok(Value::Array(Vec::new()))
            }
        }
        d.deserialize_any(Top).map(Skeleton)
    }
}

/// One top-level value of a [`Skeleton`]: a scalar as it is, a list or object as `null`.
struct Scalar(Value);

impl<'de> Deserialize<'de> for Scalar {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Any;
        impl<'de> serde::de::Visitor<'de> for Any {
            type Value = Value;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON value")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<Value, A::Error> {
                while map
                    .next_entry::<serde::de::IgnoredAny, serde::de::IgnoredAny>()?
                    .is_some()
                {}
                Ok(Value::Null)
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<Value, A::Error> {
                while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {}
                Ok(Value::Null)
            }
            fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
                Ok(v.into())
            }
            fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
                Ok(v.into())
            }
            fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
                Ok(v.into())
            }
            fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
                Ok(v.into())
            }
            fn visit_str<E>(self, v: &str) -> Result<Value, E> {
                Ok(v.into())
            }
            fn visit_unit<E>(self) -> Result<Value, E> {
                Ok(Value::Null)
            }
        }
        d.deserialize_any(Any).map(Scalar)
    }
}

/// The keys every result has, and a format this caldera reads.
fn check_shape(doc: &Value) -> Result<(), (String, String)> {
    let Some(obj) = doc.as_object() else {
        return Err((
            "$".into(),
            "not a caldera result: the document is not a JSON object".into(),
        ));
    };
    for key in ["suite", "dimensions", "decision"] {
        if !obj.contains_key(key) {
            return Err((
                key.into(),
                format!("not a caldera result: it has no `{key}`"),
            ));
        }
    }
    match obj.get("result_format").map(Value::as_u64) {
        None => Ok(()),
        Some(Some(f)) if f == u64::from(RESULT_FORMAT) => Ok(()),
        Some(Some(f)) => Err((
            "result_format".into(),
            format!(
                "result format {f} is not one this caldera reads (it reads format {RESULT_FORMAT}); \
                 render it with the caldera that wrote it ({})",
                obj.get("caldera_version")
                    .and_then(Value::as_str)
                    .unwrap_or("version unknown")
            ),
        )),
        Some(None) => Err((
            "result_format".into(),
            "`result_format` is not a whole number".into(),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(dimensions: Value) -> Report {
        Report::from_value(serde_json::json!({
            "suite": "s", "decision": "NO_SCORE", "dimensions": dimensions
        }))
        .unwrap()
    }

    const OVER: &str = "budget: this call could cost up to $0.0100, and $0.0000 of the $0.0010 --max-cost is already spent or committed";

    #[test]
    fn the_incomplete_line_counts_units_as_the_table_does() {
        // A `scope: repo` judge counts its repos, not itself as well; a panel's unit
        // counts once per model stopped.
        let r = report(serde_json::json!([
            {"name": "per_repo", "status": "unscored",
             "unscored_reason": format!("no model gave a verdict: m: {OVER}"),
             "repos": [
                {"repo": "a", "status": "unscored", "unscored_reason": format!("no model gave a verdict: m: {OVER}")},
                {"repo": "b", "status": "unscored", "unscored_reason": format!("no model gave a verdict: m: {OVER}")}
             ]},
            {"name": "panel", "status": "unscored",
             "unscored_reason": format!("no model gave a verdict: m1: {OVER}; m2: {OVER}; m3: {OVER}")}
        ]));
        let line = r.incomplete().unwrap();
        assert!(
            line.starts_with(
                "incomplete: the --max-cost budget stopped the calls of 5 unit(s) (per_repo / a, per_repo / b, panel)"
            ),
            "{line}"
        );
    }

    #[test]
    fn type_errors_name_the_expected_type_without_the_value_found() {
        for (msg, want) in [
            (
                r#"invalid type: string "sk-\"TOP\" SECRET", expected f64"#,
                "invalid type: string (not shown), expected f64",
            ),
            (
                "invalid type: character 'x', expected a sequence",
                "invalid type: character (not shown), expected a sequence",
            ),
            (
                "unknown variant `TOP`, SECRET`, expected one of `scored`, `unscored`, `error`",
                "unknown variant (not shown), expected one of `scored`, `unscored`, `error`",
            ),
            (
                "invalid type: integer `3`, expected a string",
                "invalid type: integer `3`, expected a string",
            ),
        ] {
            assert_eq!(without_values(msg), want);
        }
    }

    #[test]
    fn an_unpriced_model_is_named_with_how_to_price_it() {
        let unpriced = crate::llm::cost::BudgetError::UnknownPrice {
            model: "house-model".into(),
        }
        .to_string();
        let r = report(serde_json::json!([
            {"name": "a", "status": "unscored",
             "unscored_reason": format!("no model gave a verdict: house-model: {unpriced}")},
            {"name": "b", "status": "unscored",
             "unscored_reason": format!("no model gave a verdict: sonnet: {OVER}")}
        ]));
        assert_eq!(
            r.incomplete().unwrap(),
            "incomplete: 1 unit(s) (a) were not asked: no price is known for `house-model`, so \
             --max-cost cannot vouch for a call; give it a price under `prices:` in the suite \
             ({house-model: {input_per_mtok, output_per_mtok}}), or drop --max-cost; and the \
             --max-cost budget stopped the calls of 1 unit(s) (b); raise --max-cost, or score \
             with --heuristic"
        );
    }
}
