//! Loads a suite folder: `suite.yaml`, then every judge, then the checks that need the
//! whole suite (duplicate dimensions, weights, the decision table).

use std::path::{Path, PathBuf};

use minijinja::Environment;

use crate::diag::{Code, Diagnostic};
use crate::load::confine::{Confinement, RootOptions, glob_base};
use crate::load::judge::{Checker, DEFAULT_PASS_THRESHOLD, JudgePlan, load_judge};
use crate::load::names::Known;
use crate::load::yaml::{self, KeyIndex};
use crate::spec::suite::{DecisionRow, SuiteSpec};

/// A loaded suite.
#[derive(Debug, Clone)]
pub struct Suite {
    /// The suite folder.
    pub dir: PathBuf,
    /// Its `suite.yaml`.
    pub file: PathBuf,
    /// What it says.
    pub spec: SuiteSpec,
    /// Key locations in `suite.yaml`.
    pub index: KeyIndex,
    /// The suite's own evidence, computed once per run before the judges.
    pub evidence: Vec<(String, crate::evidence::plan::ValuePlan)>,
    /// The free names of its evidence's expressions and templates.
    pub free_names: crate::load::names::FreeNames,
    /// The judges, in run order.
    pub judges: Vec<JudgePlan>,
    /// The folder everything the suite names must resolve inside.
    pub confinement: Confinement,
    /// The settings in force, defaults filled in once here.
    pub resolved: Resolved,
}

/// A suite's settings with their defaults filled in, so no use site fills them again.
#[derive(Debug, Clone)]
pub struct Resolved {
    /// The decision table (the framework's unless the suite declares one).
    pub decision: Vec<DecisionRow>,
    /// The pass threshold of judges that do not set their own (3.0 unless declared).
    pub pass_threshold: f64,
    /// The least share of scored units for a passing run (0.9 unless declared).
    pub min_coverage: f64,
    /// The model of LLM mode when the command line names none (`sonnet` unless declared).
    pub model: String,
    /// The suite's `model_catalogue:` file, read and checked.
    pub catalogue: Option<crate::spec::catalogue::CatalogueSpec>,
}

impl Resolved {
    fn of(spec: &SuiteSpec) -> Resolved {
        Resolved {
            decision: spec.decision.clone().unwrap_or_else(default_decision),
            pass_threshold: spec.pass_threshold.unwrap_or(DEFAULT_PASS_THRESHOLD),
            min_coverage: spec.min_coverage.unwrap_or(DEFAULT_MIN_COVERAGE),
            model: spec.model.clone().unwrap_or_else(|| DEFAULT_MODEL.into()),
            catalogue: None,
        }
    }
}

impl Suite {
    /// The decision table in force.
    pub fn decision_table(&self) -> Vec<DecisionRow> {
        self.resolved.decision.clone()
    }

    /// The pass threshold in force for judges that do not set one.
    pub fn pass_threshold(&self) -> f64 {
        self.resolved.pass_threshold
    }

    /// The least share of scored units for a passing run.
    pub fn min_coverage(&self) -> f64 {
        self.resolved.min_coverage
    }

    /// The judges' weights, which every verdict's share is taken from.
    pub fn weights(&self) -> crate::verdict::combine::SuiteWeights {
        crate::verdict::combine::SuiteWeights::of(self.judges.iter().map(|j| &j.spec))
    }
}

/// Default `model`.
pub(crate) const DEFAULT_MODEL: &str = "sonnet";

/// Default `min_coverage`: one unit in ten may go unscored (a flaky reply, a repo
/// without data) before the run fails for want of scores.
pub(crate) const DEFAULT_MIN_COVERAGE: f64 = 0.9;

/// The framework's decision table: >= 4.0 STRONG_PASS, >= 3.5 PASS, >= 3.0 WEAK_PASS,
/// else FAIL.
pub(crate) fn default_decision() -> Vec<DecisionRow> {
    [
        (Some(4.0), "STRONG_PASS"),
        (Some(3.5), "PASS"),
        (Some(3.0), "WEAK_PASS"),
        (None, "FAIL"),
    ]
    .into_iter()
    .map(|(min, label)| DecisionRow {
        min,
        label: label.into(),
    })
    .collect()
}

/// Loads the suite in `dir` with the default project root; see `load_suite_with`.
pub fn load_suite(dir: &Path, env: &Environment<'static>) -> (Option<Suite>, Vec<Diagnostic>) {
    load_suite_with(dir, env, &RootOptions::default())
}

/// Loads the suite in `dir`; returns it (when `suite.yaml` parsed) and every diagnostic.
/// Every path the suite names must resolve inside the project root (see
/// [`crate::load::confine`]).
pub(crate) fn load_suite_with(
    dir: &Path,
    env: &Environment<'static>,
    root: &RootOptions,
) -> (Option<Suite>, Vec<Diagnostic>) {
    let mut diags = Vec::new();
    if !dir.is_dir() {
        let d = Diagnostic::error(
            Code::MissingPath,
            format!(
                "suite folder {} does not exist",
                crate::diag::display_path(dir)
            ),
        )
        .in_file(dir);
        let d = match sibling_suites(dir) {
            Some(h) => d.help(h),
            None => d,
        };
        return (None, vec![d]);
    }
    let file = dir.join("suite.yaml");
    let source = match std::fs::symlink_metadata(&file) {
        Ok(_) => match yaml::read_text(&file) {
            Ok(s) => s,
            Err(d) => return (None, vec![d]),
        },
        Err(_) => {
            return (
                None,
                vec![
                    Diagnostic::error(
                        Code::MissingPath,
                        format!("{} has no suite.yaml", crate::diag::display_path(dir)),
                    )
                    .in_file(dir)
                    .help("a suite folder holds suite.yaml plus one YAML file per judge"),
                ],
            );
        }
    };
    let parsed = match yaml::parse::<SuiteSpec>(&file, &source) {
        Ok(p) => p,
        Err(d) => return (None, d),
    };
    check_decision(&parsed.value, &parsed.index, &file, &mut diags);
    check_suite_name(&parsed.value, &parsed.index, &file, &mut diags);
    check_named_inputs(&parsed.value, &parsed.index, &file, &mut diags);

    let confinement = Confinement::for_suite(dir, root);
    let listed = Listed {
        spec: &parsed.value,
        index: &parsed.index,
        file: &file,
    };
    let judge_files = match judge_files(dir, &listed, &confinement, &mut diags) {
        Some(f) => f,
        None => return (None, diags),
    };
    check_confined(
        &parsed.value,
        &parsed.index,
        &file,
        dir,
        &confinement,
        &mut diags,
    );
    let known = Known::new(env);
    let mut checker = Checker {
        env,
        known: &known,
        confinement: &confinement,
        shared: Vec::new(),
        transport: parsed.value.verdict_transport,
        reasoning: parsed.value.reasoning.clone(),
    };
    if let Some(reasoning) = &parsed.value.reasoning
        && let Err((key, message)) = crate::load::reasoning::resolve(reasoning)
    {
        let key = format!("reasoning.{key}");
        diags.push(
            Diagnostic::error(Code::OutOfRange, message)
                .in_file(&file)
                .at(parsed.index.value_span(&key))
                .key(key),
        );
    }
    let (shared_plan, free_names, shared_diags) = crate::load::judge::plan_suite_evidence(
        &file,
        &parsed.source,
        &parsed.index,
        &parsed.value.evidence,
        &checker,
    );
    diags.extend(shared_diags);
    checker.shared = parsed.value.evidence.keys().cloned().collect();
    let mut judges: Vec<JudgePlan> = Vec::new();
    // Judge files are independent until here: read, checked and compiled side by side.
    for (plan, d) in crate::par::map(&judge_files, |path| load_judge(path, &checker)) {
        diags.extend(d);
        if let Some(plan) = plan {
            if let Some(first) = judges
                .iter()
                .find(|j| j.spec.dimension == plan.spec.dimension)
            {
                diags.push(
                    Diagnostic::error(
                        Code::DuplicateDimension,
                        format!(
                            "dimension `{}` is already judged by {}",
                            plan.spec.dimension,
                            crate::diag::display_path(&first.file)
                        ),
                    )
                    .in_file(&plan.file)
                    .at(plan.index.value_span("dimension"))
                    .key("dimension"),
                );
                continue;
            }
            judges.push(plan);
        }
    }
    let total: f64 = judges
        .iter()
        .map(|j| j.spec.weight)
        .filter(|w| w.is_finite() && *w > 0.0)
        .sum();
    if !judges.is_empty()
        && total > 0.0
        && (total - 1.0).abs() > 1e-9
        && parsed.value.weights == crate::spec::suite::WeightsMode::Normalised
    {
        diags.push(
            Diagnostic::warning(
                Code::WeightsNotNormalised,
                format!("judge weights sum to {total:.3}, not 1.0"),
            )
            .in_file(&file)
            .at(judges_span(&parsed.index))
            .key("judges")
            .note("weights are normalised by their sum: a judge counts for weight / sum")
            .help("scale the weights to sum to 1.0, or declare `weights: relative` in suite.yaml"),
        );
    }
    let mut resolved = Resolved::of(&parsed.value);
    resolved.catalogue = crate::load::catalogue::read(
        &parsed.value,
        (&file, &parsed.index),
        dir,
        &confinement,
        &mut diags,
    );
    for judge in &mut judges {
        judge.pass_threshold = judge.spec.pass_threshold.unwrap_or(resolved.pass_threshold);
        judge.prompt_cache = parsed.value.prompt_cache;
        judge.cap_note = parsed.value.cap_note;
    }
    let suite = Suite {
        dir: dir.to_path_buf(),
        file,
        spec: parsed.value,
        index: parsed.index,
        evidence: shared_plan,
        free_names,
        judges,
        confinement,
        resolved,
    };
    (Some(suite), diags)
}

/// Every folder and file `suite.yaml` names for its inputs must resolve inside the
/// project root: a suite cannot read (and send to a model) a file elsewhere on the
/// machine unless the user allows it on the command line.
fn check_confined(
    spec: &SuiteSpec,
    index: &KeyIndex,
    file: &Path,
    dir: &Path,
    confinement: &Confinement,
    diags: &mut Vec<Diagnostic>,
) {
    let inputs = &spec.inputs;
    // (key path, as written, the part that must be inside: a glob's fixed prefix)
    let mut named: Vec<(String, &str, &str)> = vec![(
        "inputs.results".into(),
        &inputs.results.folder,
        &inputs.results.folder,
    )];
    if let Some(g) = &inputs.ground_truth {
        named.push(("inputs.ground_truth".into(), &g.folder, &g.folder));
    }
    for (name, input) in &inputs.files {
        if let Some(f) = &input.file {
            named.push((format!("inputs.files.{name}.file"), f, f));
        }
        if let Some(g) = &input.newest {
            named.push((format!("inputs.files.{name}.newest"), g, glob_base(g)));
        }
    }
    if !confinement.allow_outside {
        check_run_files(inputs, index, file, diags);
    }
    for (key, rel, fixed) in named {
        let path = dir.join(fixed);
        if confinement.permits(&path) {
            continue;
        }
        diags.push(
            Diagnostic::error(
                Code::InputOutsideProject,
                format!("`{rel}` resolves outside the project"),
            )
            .in_file(file)
            .at(index.value_span(&key))
            .key(key)
            .note(format!(
                "project root: {}",
                crate::diag::display_path(&confinement.root)
            ))
            .help(
                "keep inputs inside the project, name the folder on the command line \
                 (--results, --ground-truth, --input), or pass --root / --allow-outside-root",
            ),
        );
    }
}

/// A `run_file` names a file inside each run folder: a plain relative path. With `..` or
/// an absolute path it would read one file anywhere, whatever folder holds the runs
/// (the suite's, or one named on the command line), unless `--allow-outside-root`.
fn check_run_files(
    inputs: &crate::spec::suite::InputsSpec,
    index: &KeyIndex,
    file: &Path,
    diags: &mut Vec<Diagnostic>,
) {
    let folders = [("inputs.results", Some(&inputs.results))]
        .into_iter()
        .chain([("inputs.ground_truth", inputs.ground_truth.as_ref())]);
    for (key, input) in folders {
        let Some(run_file) = input.and_then(|i| i.run_file.as_deref()) else {
            continue;
        };
        let plain = !run_file.is_empty()
            && Path::new(run_file)
                .components()
                .all(|c| matches!(c, std::path::Component::Normal(_)));
        if plain {
            continue;
        }
        let key = format!("{key}.run_file");
        diags.push(
            Diagnostic::error(
                Code::InputOutsideProject,
                format!(
                    "run_file `{run_file}` leaves its run folder: it must be a relative path without `..`"
                ),
            )
            .in_file(file)
            .at(index.value_span(&key))
            .key(key)
            .help("name the file as it lies in each run folder, e.g. `output.json`"),
        );
    }
}

/// What `suite.yaml` says and where, for diagnostics about the files it lists.
struct Listed<'a> {
    spec: &'a SuiteSpec,
    index: &'a KeyIndex,
    file: &'a Path,
}

/// The judge files: those `judges:` lists, else every YAML file of the folder. Each must
/// resolve inside the project, links followed: a judge file is read and, when it does not
/// parse, quoted in the error.
fn judge_files(
    dir: &Path,
    listed: &Listed<'_>,
    confinement: &Confinement,
    diags: &mut Vec<Diagnostic>,
) -> Option<Vec<PathBuf>> {
    let Listed { spec, index, file } = *listed;
    let files: Vec<PathBuf> = match &spec.judges {
        Some(list) => {
            let mut out = Vec::new();
            for (i, name) in list.iter().enumerate() {
                let p = dir.join(name);
                if p.exists() && !confinement.permits(&p) {
                    diags.push(
                        judge_outside(name, confinement, file)
                            .at(index.value_span(&format!("judges[{i}]")))
                            .key(format!("judges[{i}]")),
                    );
                } else if p.exists() {
                    out.push(p);
                } else {
                    diags.push(
                        Diagnostic::error(
                            Code::MissingPath,
                            format!("judge file `{name}` does not exist"),
                        )
                        .in_file(file)
                        .at(index.value_span(&format!("judges[{i}]")))
                        .key(format!("judges[{i}]")),
                    );
                }
            }
            out
        }
        None => {
            let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
                .map(|rd| {
                    rd.filter_map(Result::ok)
                        .map(|e| e.path())
                        .filter(|p| {
                            p.is_file()
                                && p.extension().is_some_and(|x| x == "yaml" || x == "yml")
                                && p.file_stem().is_some_and(|s| s != "suite")
                                && !p
                                    .file_name()
                                    .and_then(|n| n.to_str())
                                    .is_some_and(|n| n.starts_with('.'))
                        })
                        .collect()
                })
                .unwrap_or_default();
            out.sort();
            let (inside, outside): (Vec<PathBuf>, Vec<PathBuf>) =
                out.into_iter().partition(|p| confinement.permits(p));
            for p in outside {
                let name = p.file_name().unwrap_or_default().to_string_lossy();
                diags.push(judge_outside(&name, confinement, file).in_file(&p));
            }
            inside
        }
    };
    if files.is_empty() && diags.is_empty() {
        diags.push(
            Diagnostic::error(Code::NoJudges, "the suite has no judge files")
                .in_file(file)
                .at(judges_span(index))
                .key("judges")
                .help("add one YAML file per judge next to suite.yaml"),
        );
        return None;
    }
    Some(files)
}

/// The suite's name becomes a file name (`results/<suite>/<run>.json`,
/// `<out-dir>/<suite>.<ext>`): one plain component, or results land anywhere.
/// A named input reads one file (`file`) or the newest match of a glob (`newest`):
/// exactly one of them, checked when the suite loads so the error points at the input
/// (reading the inputs would find it later, without a place in the file).
fn check_named_inputs(
    spec: &SuiteSpec,
    index: &KeyIndex,
    file: &Path,
    diags: &mut Vec<Diagnostic>,
) {
    for (name, input) in &spec.inputs.files {
        let how = match (&input.file, &input.newest) {
            (Some(_), None) | (None, Some(_)) => continue,
            (Some(_), Some(_)) => "has both `file` and `newest`",
            (None, None) => "has neither `file` nor `newest`",
        };
        let key = format!("inputs.files.{name}");
        diags.push(
            Diagnostic::error(
                Code::WrongType,
                format!("named input `{name}` {how}: it needs exactly one of them"),
            )
            .in_file(file)
            .at(index.value_span(&key))
            .key(key)
            .help(
                "`file` reads one file; `newest` reads the most recently modified match of a glob",
            ),
        );
    }
}

fn check_suite_name(spec: &SuiteSpec, index: &KeyIndex, file: &Path, diags: &mut Vec<Diagnostic>) {
    if let Some(why) = crate::load::confine::file_name_problem(&spec.suite) {
        diags.push(
            Diagnostic::error(
                Code::WrongType,
                format!(
                    "suite name `{}` cannot be used as a file name: {why}",
                    crate::diag::printable_line(&spec.suite)
                ),
            )
            .in_file(file)
            .at(index.value_span("suite"))
            .key("suite")
            .help("name the suite with letters, digits, `_` and `-`, e.g. `semgrep`"),
        );
    }
}

/// A judge file that resolves outside the project.
fn judge_outside(name: &str, confinement: &Confinement, file: &Path) -> Diagnostic {
    Diagnostic::error(
        Code::InputOutsideProject,
        format!("judge file `{name}` resolves outside the project; it was not read"),
    )
    .in_file(file)
    .note(format!(
        "project root: {}",
        crate::diag::display_path(&confinement.root)
    ))
    .help("keep judge files inside the project, or pass --root / --allow-outside-root")
}

fn check_decision(spec: &SuiteSpec, index: &KeyIndex, file: &Path, diags: &mut Vec<Diagnostic>) {
    if let Some(t) = spec.pass_threshold
        && !(1.0..=5.0).contains(&t)
    {
        diags.push(
            Diagnostic::error(
                Code::ScoreOutOfRange,
                format!("pass_threshold must be between 1 and 5, got {t}"),
            )
            .in_file(file)
            .at(index.value_span("pass_threshold"))
            .key("pass_threshold"),
        );
    }
    if let Some(c) = spec.min_coverage
        && !(0.0..=1.0).contains(&c)
    {
        diags.push(
            Diagnostic::error(
                Code::OutOfRange,
                format!("min_coverage is a share from 0 to 1, got {c}"),
            )
            .in_file(file)
            .at(index.value_span("min_coverage"))
            .key("min_coverage")
            .help("0.9 means nine units in ten must be scored"),
        );
    }
    if let Some(k) = spec.kappa_target
        && !(-1.0..=1.0).contains(&k)
    {
        diags.push(
            Diagnostic::error(
                Code::OutOfRange,
                format!("kappa_target must be between -1 and 1, got {k}"),
            )
            .in_file(file)
            .at(index.value_span("kappa_target"))
            .key("kappa_target")
            .help("kappa is 1 for perfect agreement and 0 for chance; 0.7 is the usual bar"),
        );
    }
    let Some(rows) = &spec.decision else { return };
    if rows.is_empty() {
        diags.push(
            Diagnostic::error(Code::DecisionTable, "the decision table has no rows")
                .in_file(file)
                .at(index.value_span("decision"))
                .key("decision")
                .help("end the table with a row without `min`, such as `- { label: FAIL }`"),
        );
        return;
    }
    let mut prev: Option<f64> = None;
    for (i, row) in rows.iter().enumerate() {
        let path = format!("decision[{i}]");
        let last = i + 1 == rows.len();
        if let Some(m) = row.min
            && !(1.0..=5.0).contains(&m)
        {
            let min_path = format!("{path}.min");
            diags.push(
                Diagnostic::error(
                    Code::ScoreOutOfRange,
                    format!("a decision row's `min` must be between 1 and 5, got {m}"),
                )
                .in_file(file)
                .at(index.value_span(&min_path))
                .key(min_path)
                .help("the weighted score it is compared with lies between 1 and 5"),
            );
            continue;
        }
        match row.min {
            None if !last => diags.push(
                Diagnostic::error(
                    Code::DecisionTable,
                    "only the last decision row may omit `min`; the rows after it can never match",
                )
                .in_file(file)
                .at(index.value_span(&path))
                .key(&path),
            ),
            Some(_) if last => diags.push(
                Diagnostic::error(
                    Code::DecisionTable,
                    "the last decision row must have no `min`, so every score gets a label",
                )
                .in_file(file)
                .at(index.value_span(&path))
                .key(&path)
                .help("add a final row such as `- { label: FAIL }`"),
            ),
            Some(m) => {
                if prev.is_some_and(|p| m >= p) {
                    diags.push(
                        Diagnostic::error(
                            Code::DecisionTable,
                            format!(
                                "decision rows must go from high to low: {m} follows {}",
                                prev.unwrap_or_default()
                            ),
                        )
                        .in_file(file)
                        .at(index.value_span(&path))
                        .key(&path),
                    );
                }
                prev = Some(m);
            }
            None => {}
        }
    }
}

/// "did you mean" for a suite folder that does not exist, from its siblings.
fn sibling_suites(dir: &Path) -> Option<String> {
    let parent = dir.parent()?;
    let name = dir.file_name()?.to_str()?;
    let names: Vec<String> = std::fs::read_dir(parent)
        .ok()?
        .filter_map(Result::ok)
        .filter(|e| e.path().join("suite.yaml").is_file())
        .filter_map(|e| e.file_name().to_str().map(str::to_owned))
        .collect();
    crate::diag::did_you_mean_help(name, names.iter().map(String::as_str))
}

/// Where a problem of the judge list as a whole points: the `judges` key, or the suite's
/// name when the list is implicit (every YAML file of the folder).
fn judges_span(index: &KeyIndex) -> Option<crate::diag::Span> {
    index
        .exact_key_span("judges")
        .or_else(|| index.exact_key_span("suite"))
}
