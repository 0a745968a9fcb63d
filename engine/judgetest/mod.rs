//! `caldera test`: judges tested like code.
//!
//! A suite keeps cases beside its judges, `cases/<case>/`: a small results folder, ground
//! truth (the case's own `truth/`, or the suite's), a `case.yaml` saying so, and an
//! `expect.yaml` saying what each judge must conclude there (score or range, status,
//! evidence values by key path, assertion outcomes). A case is judged in heuristic mode,
//! and in LLM mode too when it declares `llm:`; LLM mode is offline, answered from
//! recorded replies (cassettes) stored with the case. Every judge with expectations is
//! one check; a check passes when everything written holds.

pub(crate) mod cassette;
pub(crate) mod check;
pub(crate) mod keypath;
pub(crate) mod update;

use std::path::{Path, PathBuf};

use minijinja::Environment;

use crate::diag::{Code, Diagnostic};
use crate::load::confine::Confinement;
use crate::load::inputs::{Inputs, Overrides, load_case_inputs};
use crate::load::suite::Suite;
use crate::load::yaml;
use crate::run::llm::{LlmOptions, run_llm_on};
use crate::spec::case::{CaseSpec, ExpectSpec, JudgeExpect};
use crate::verdict::combine::{Unit, heuristic_verdict};
use crate::verdict::types::Verdict;

use self::check::Observed;

/// The folder of a suite that holds its cases.
pub(crate) const CASES_DIR: &str = "cases";

/// A case as read from disk.
#[derive(Debug, Clone)]
pub(crate) struct Case {
    /// The folder name.
    pub name: String,
    /// The case folder.
    pub dir: PathBuf,
    /// `case.yaml`.
    pub spec: CaseSpec,
    /// `expect.yaml` (empty when the file does not exist yet).
    pub expect: ExpectSpec,
}

impl Case {
    /// Where the expectations live.
    pub(crate) fn expect_file(&self) -> PathBuf {
        self.dir.join("expect.yaml")
    }
}

/// Which mode a check ran in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Mode {
    /// Heuristic bands.
    Heuristic,
    /// Model replies from the case's cassettes.
    Llm,
}

impl Mode {
    /// The name in output.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Mode::Heuristic => "heuristic",
            Mode::Llm => "llm",
        }
    }
}

/// One judge of one case in one mode, and what did not hold.
#[derive(Debug, Clone, serde::Serialize)]
pub(crate) struct CheckResult {
    /// The case.
    pub case: String,
    /// The judge's dimension.
    pub judge: String,
    /// The mode.
    pub mode: Mode,
    /// One sentence per expectation that did not hold; empty when the check passed.
    pub failures: Vec<String>,
}

impl CheckResult {
    /// `case::judge`, with the mode for LLM checks.
    pub(crate) fn name(&self) -> String {
        match self.mode {
            Mode::Heuristic => format!("{}::{}", self.case, self.judge),
            Mode::Llm => format!("{}::{} (llm)", self.case, self.judge),
        }
    }

    /// Whether every expectation held.
    pub(crate) fn passed(&self) -> bool {
        self.failures.is_empty()
    }
}

/// What running a case gave: its checks, and what it actually observed (for `--update`).
#[derive(Debug, Default)]
pub(crate) struct CaseRun {
    /// The checks, heuristic first.
    pub checks: Vec<CheckResult>,
    /// Every judge's observed verdict per mode, in suite order.
    pub observed: Vec<(Mode, Observed)>,
    /// Judges (by dimension) whose LLM verdict rests on a missing, stale or unreadable
    /// cassette: `--update` leaves their LLM expectations as they were.
    pub cassette_problems: Vec<String>,
}

/// How cases run.
#[derive(Debug, Clone, Default)]
pub(crate) struct TestOptions {
    /// `--record`: ask a provider for every LLM case's replies and rewrite its cassettes
    /// before checking.
    pub record: Option<cassette::RecordOptions>,
    /// The command that records cassettes, for messages (`caldera test <suite> --record`).
    pub record_hint: String,
}

/// The case folders of a suite (`<suite>/cases/*/case.yaml`), sorted by name.
pub(crate) fn discover(suite_dir: &Path) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(suite_dir.join(CASES_DIR))
        .map(|rd| {
            rd.filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| p.join("case.yaml").is_file())
                .collect()
        })
        .unwrap_or_default();
    dirs.sort();
    dirs
}

/// Reads `case.yaml` and `expect.yaml` of a case folder, with located diagnostics. Both
/// must resolve inside the suite's project (`confinement`), links followed: a case file
/// that does not parse is quoted in the error, and `expect.yaml` is rewritten by
/// `--update`.
pub(crate) fn load_case(dir: &Path, confinement: &Confinement) -> Result<Case, Vec<Diagnostic>> {
    let name = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let outside: Vec<Diagnostic> = ["case.yaml", "expect.yaml"]
        .iter()
        .map(|f| dir.join(f))
        .filter(|p| std::fs::symlink_metadata(p).is_ok() && !confinement.permits(p))
        .map(|p| crate::load::documents::outside_project(&p, confinement))
        .collect();
    if !outside.is_empty() {
        return Err(outside);
    }
    let spec = parse_file::<CaseSpec>(&dir.join("case.yaml"))?.unwrap_or_default();
    let expect = parse_file::<ExpectSpec>(&dir.join("expect.yaml"))?.unwrap_or_default();
    Ok(Case {
        name,
        dir: dir.to_path_buf(),
        spec,
        expect,
    })
}

/// Parses a YAML file, or `None` when it does not exist.
fn parse_file<T: serde::de::DeserializeOwned + schemars::JsonSchema>(
    path: &Path,
) -> Result<Option<T>, Vec<Diagnostic>> {
    let source = match std::fs::read_to_string(path) {
        Ok(s) => s,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            return Err(vec![
                Diagnostic::error(Code::Io, format!("cannot read file: {e}")).in_file(path),
            ]);
        }
    };
    yaml::parse::<T>(path, &source).map(|p| Some(p.value))
}

/// Reads a case's inputs: its results and ground truth, as `case.yaml` says.
pub(crate) fn case_inputs(suite: &Suite, case: &Case) -> Result<Inputs, Vec<Diagnostic>> {
    let results = match case.spec.results.as_deref() {
        Some("suite") => None,
        Some(folder) => Some(case.dir.join(folder)),
        None => Some(case.dir.join("results")),
    };
    let own_truth = case.dir.join("truth");
    let (ground_truth, without_truth) = match case.spec.ground_truth.as_deref() {
        Some("suite") => (None, false),
        Some("none") => (None, true),
        Some(folder) => (Some(case.dir.join(folder)), false),
        None if own_truth.is_dir() => (Some(own_truth), false),
        None => (None, true),
    };
    // `..Default::default()` keeps this right when overrides gain fields.
    #[allow(clippy::needless_update)]
    let overrides = Overrides {
        results,
        ground_truth,
        inputs: case
            .spec
            .inputs
            .iter()
            .map(|(k, v)| (k.clone(), v.as_ref().map(|f| case.dir.join(f))))
            .collect(),
        ..Overrides::default()
    };
    let mut inputs = load_case_inputs(suite, &overrides)?;
    if without_truth {
        inputs.truth.clear();
        inputs.truth_dir = None;
    }
    Ok(inputs)
}

/// Runs one case: heuristic mode, then LLM mode from cassettes when the case has `llm:`.
/// Input problems come back as diagnostics (the case could not run at all).
pub(crate) fn run_case(
    env: &Environment<'static>,
    suite: &Suite,
    case: &Case,
    options: &TestOptions,
) -> Result<CaseRun, Vec<Diagnostic>> {
    let inputs = case_inputs(suite, case)?;
    let ctx = crate::run::context::shared_context(env, suite, &inputs)?;
    let units = crate::run::prepare_all(env, suite, &ctx);
    let assertions: Vec<Vec<check::AssertionSeen>> = suite
        .judges
        .iter()
        .zip(&units)
        .map(|(plan, u)| check::assertion_outcomes(env, plan, u))
        .collect();
    let mut run = CaseRun::default();
    let heuristic = heuristic_verdicts(suite, &units);
    let observed = observe(suite, &heuristic, &assertions);
    run.checks.extend(checks(
        case,
        suite,
        Mode::Heuristic,
        &case.expect.heuristic,
        &observed,
        &[],
    ));
    run.observed
        .extend(observed.into_iter().map(|o| (Mode::Heuristic, o)));
    if let Some(llm) = &case.spec.llm {
        let (verdicts, issues) = llm_verdicts(env, suite, case, &inputs, &units, llm, options)?;
        let observed = observe(suite, &verdicts, &assertions);
        run.cassette_problems = issues
            .iter()
            .map(|(j, _)| suite.judges[*j].spec.dimension.clone())
            .collect();
        run.checks.extend(checks(
            case,
            suite,
            Mode::Llm,
            &case.expect.llm,
            &observed,
            &issues,
        ));
        run.observed
            .extend(observed.into_iter().map(|o| (Mode::Llm, o)));
    }
    run.checks
        .extend(nothing_checked(case, &run.cassette_problems));
    Ok(run)
}

/// The judge name of a check that fails because nothing was checked.
pub(crate) const NOTHING_CHECKED: &str = "(nothing checked)";

/// A case that checks nothing passes nothing: one failing check for a case without any
/// expectation, and one for a case that asks for LLM mode without `llm:` expectations
/// (its cassettes were never recorded, say: the verdicts were replay misses and nothing
/// compared them). Without this, such a case counted its other checks as passed and
/// LLM mode looked tested.
fn nothing_checked(case: &Case, cassette_problems: &[String]) -> Vec<CheckResult> {
    let failing = |mode: Mode, failure: String| CheckResult {
        case: case.name.clone(),
        judge: NOTHING_CHECKED.to_owned(),
        mode,
        failures: vec![failure],
    };
    let mut out = Vec::new();
    if case.expect.heuristic.is_empty() && case.expect.llm.is_empty() {
        out.push(failing(
            Mode::Heuristic,
            "expect.yaml has no expectations: the case checks nothing; write what its \
             judges must conclude (`caldera test <suite> <case> --update` writes the current \
             verdicts, to review)"
                .to_owned(),
        ));
    }
    if case.spec.llm.is_some() && case.expect.llm.is_empty() {
        let cassettes = if cassette_problems.is_empty() {
            String::new()
        } else {
            format!(
                " ({} judge(s) have no recorded cassette or a stale one: {})",
                cassette_problems.len(),
                cassette_problems.join(", ")
            )
        };
        out.push(failing(
            Mode::Llm,
            format!(
                "the case asks for LLM mode but expect.yaml has no `llm:` expectations: \
                 nothing is checked in LLM mode{cassettes}; record the replies with \
                 `--record`, then write the expectations with `--update`"
            ),
        ));
    }
    out
}

/// Every judge's verdict as checks read it, in suite order.
fn observe(
    suite: &Suite,
    verdicts: &[Verdict],
    assertions: &[Vec<check::AssertionSeen>],
) -> Vec<Observed> {
    suite
        .judges
        .iter()
        .zip(verdicts)
        .zip(assertions)
        .map(|((plan, v), a)| Observed::of(plan, v, a.clone()))
        .collect()
}

/// Every judge's heuristic verdict over prepared units, in suite order.
fn heuristic_verdicts(suite: &Suite, units: &[Vec<Unit>]) -> Vec<Verdict> {
    let weights = suite.weights();
    suite
        .judges
        .iter()
        .zip(units)
        .map(|(plan, units)| heuristic_verdict(plan.judge(), units, weights))
        .collect()
}

/// Every judge's LLM verdict, answered from the case's cassettes through the same path
/// as `caldera run --replay` (no provider exists in that path, so nothing can be sent),
/// and the cassette problems per judge index.
fn llm_verdicts(
    env: &Environment<'static>,
    suite: &Suite,
    case: &Case,
    inputs: &Inputs,
    units: &[Vec<Unit>],
    llm: &crate::spec::case::LlmCaseSpec,
    options: &TestOptions,
) -> Result<(Vec<Verdict>, CassetteIssues), Vec<Diagnostic>> {
    let models = crate::run::llm::models_for(suite, &llm.models);
    if let Some(record) = &options.record {
        cassette::record(env, suite, inputs, units, &case.dir, &models, record)?;
    }
    let cache = cassette::ScratchDir::new("replay").map_err(|e| {
        vec![Diagnostic::error(
            Code::Io,
            format!("cannot create a scratch folder: {e}"),
        )]
    })?;
    let issues = cassette::seed(env, suite, units, &models, &case.dir, cache.path())
        .into_iter()
        .map(|(j, message)| (j, format!("{message}; {}", options.record_hint)))
        .collect();
    let opts = LlmOptions {
        provider: Some(crate::provider::ProviderKind::Anthropic),
        models,
        replay: true,
        cache_dir: cache.path().to_path_buf(),
        progress: false,
        log: None,
        concurrency: 4,
        ..LlmOptions::default()
    };
    let result = run_llm_on(env, suite, inputs, &opts)?;
    Ok((result.dimensions, issues))
}

/// Cassette problems by judge index.
type CassetteIssues = Vec<(usize, String)>;

/// One check per judge with expectations in `mode`; a dimension the suite does not have is
/// a failing check that says so.
fn checks(
    case: &Case,
    suite: &Suite,
    mode: Mode,
    expect: &indexmap::IndexMap<String, JudgeExpect>,
    observed: &[Observed],
    issues: &[(usize, String)],
) -> Vec<CheckResult> {
    expect
        .iter()
        .map(|(dimension, want)| {
            let index = suite
                .judges
                .iter()
                .position(|j| &j.spec.dimension == dimension);
            // A verdict without its recorded replies says nothing about the judge: the
            // cassette problem is the failure, and the expectations wait for a recording.
            let failures = match index {
                Some(j) => {
                    let f: Vec<String> = issues
                        .iter()
                        .filter(|(i, _)| *i == j)
                        .map(|(_, m)| m.clone())
                        .collect();
                    if f.is_empty() {
                        check::check(&suite.judges[j], want, &observed[j])
                    } else {
                        f
                    }
                }
                None => vec![unknown_judge(suite, dimension)],
            };
            CheckResult {
                case: case.name.clone(),
                judge: dimension.clone(),
                mode,
                failures,
            }
        })
        .collect()
}

fn unknown_judge(suite: &Suite, dimension: &str) -> String {
    let names = suite.judges.iter().map(|j| j.spec.dimension.as_str());
    match crate::diag::did_you_mean(dimension, names) {
        Some(near) => format!("the suite has no judge `{dimension}`; did you mean `{near}`?"),
        None => format!("the suite has no judge `{dimension}`"),
    }
}
