//! A run's inputs: results and ground truth read once from their folders, plus the
//! suite's other named inputs, with every problem reported at once. The run context is
//! built from them (`run::context`).

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use indexmap::IndexMap;

use crate::diag::{Code, Diagnostic};
use crate::doc::Doc;
use crate::load::documents::{
    Document, Keep, ReadRules, Skipped, outside_project, parse_json_file_as, read_folder,
};
use crate::load::suite::Suite;
use crate::spec::suite::{FolderInput, JsonMode};

/// Folder overrides from the command line.
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    /// `--results`.
    pub results: Option<PathBuf>,
    /// `--ground-truth`.
    pub ground_truth: Option<PathBuf>,
    /// `--input name=path`: a named input of `suite.yaml` read from this file for one run
    /// (relative to the working directory, as the other command-line paths are); `None`
    /// runs without it (`null`, as a missing optional file).
    pub inputs: IndexMap<String, Option<PathBuf>>,
    /// `--repo id`: only these repos' results and ground truth are kept (all when empty).
    pub repos: Vec<String>,
}

/// Everything a run read.
#[derive(Debug, Clone)]
pub struct Inputs {
    /// The results folder.
    pub results_dir: PathBuf,
    /// The ground-truth folder, when the suite has one.
    pub truth_dir: Option<PathBuf>,
    /// Analysis results, in file order.
    pub results: Vec<Document>,
    /// Ground truth, in file order.
    pub truth: Vec<Document>,
    /// Other named inputs.
    pub named: IndexMap<String, Doc>,
    /// Bytes read.
    pub bytes: u64,
    /// Files skipped as unreadable (inputs with `skip_unreadable`), with the input's key.
    pub skipped: Vec<(String, Skipped)>,
}

impl Inputs {
    /// Result ids with no ground truth.
    pub fn results_without_truth(&self) -> Vec<String> {
        self.results
            .iter()
            .filter(|r| !self.truth.iter().any(|t| t.id == r.id))
            .map(|r| r.id.clone())
            .collect()
    }

    /// Ground-truth ids with no result.
    pub fn truth_without_results(&self) -> Vec<String> {
        self.truth
            .iter()
            .filter(|t| !self.results.iter().any(|r| r.id == t.id))
            .map(|t| t.id.clone())
            .collect()
    }
}

/// Reads the suite's inputs; every problem is returned, not only the first. The folders
/// and files of `overrides` are the user's choice (command-line flags) and may be
/// anywhere; what the suite names must be inside its project.
pub fn load_inputs(suite: &Suite, overrides: &Overrides) -> Result<Inputs, Vec<Diagnostic>> {
    load(suite, overrides, false, None)
}

/// [`load_inputs`] keeping only the documents of the repos `keep` says yes to (a
/// shard's): every result and ground-truth file is still parsed, for its id and size,
/// but the others' documents are dropped as they are read and come back `null`.
pub fn load_inputs_keeping(
    suite: &Suite,
    overrides: &Overrides,
    keep: Keep<'_>,
) -> Result<Inputs, Vec<Diagnostic>> {
    load(suite, overrides, false, Some(keep))
}

/// Reads the suite's inputs as a test case names them: the folders and files of
/// `overrides` come from `case.yaml`, written by whoever wrote the suite, so they are
/// confined to the project as the suite's own are.
pub fn load_case_inputs(suite: &Suite, overrides: &Overrides) -> Result<Inputs, Vec<Diagnostic>> {
    load(suite, overrides, true, None)
}

fn load(
    suite: &Suite,
    overrides: &Overrides,
    confine_overrides: bool,
    keep: Option<Keep<'_>>,
) -> Result<Inputs, Vec<Diagnostic>> {
    let spec = &suite.spec.inputs;
    let results_dir = overrides
        .results
        .clone()
        .unwrap_or_else(|| suite.dir.join(&spec.results.folder));
    let truth_dir = overrides.ground_truth.clone().or_else(|| {
        spec.ground_truth
            .as_ref()
            .map(|g| suite.dir.join(&g.folder))
    });
    let mut read = Reading {
        confine_overrides,
        keep,
        ..Reading::default()
    };
    let results = read.folder(
        suite,
        &results_dir,
        &spec.results,
        &spec.unwrap,
        ("inputs.results", overrides.results.is_some()),
    );
    let truth_overridden = overrides.ground_truth.is_some();
    let truth = match (&truth_dir, &spec.ground_truth) {
        (Some(dir), Some(input)) => read.folder(
            suite,
            dir,
            input,
            &spec.unwrap_truth,
            ("inputs.ground_truth", truth_overridden),
        ),
        (Some(dir), None) => read.folder(
            suite,
            dir,
            &FolderInput::plain(""),
            &spec.unwrap_truth,
            ("inputs.ground_truth", truth_overridden),
        ),
        (None, _) => Vec::new(),
    };
    read.unknown_overrides(suite, overrides);
    let named = read.named(suite, overrides);
    let Reading {
        errors, skipped, ..
    } = read;
    if !errors.is_empty() {
        return Err(errors);
    }
    let (results, truth) = keep_repos(results, truth, &overrides.repos)?;
    if results.is_empty() {
        return Err(vec![nothing_to_judge(&results_dir)]);
    }
    let bytes = results.iter().chain(&truth).map(|d| d.bytes).sum();
    Ok(Inputs {
        results_dir,
        truth_dir,
        results,
        truth,
        named,
        bytes,
        skipped,
    })
}

/// What reading the inputs collected besides documents: every problem, so all are
/// reported at once, and the files skipped as unreadable.
#[derive(Default)]
struct Reading<'k> {
    errors: Vec<Diagnostic>,
    skipped: Vec<(String, Skipped)>,
    /// The overrides were named by a test case: confined as the suite's own paths.
    confine_overrides: bool,
    /// Only these repos' documents are kept (a shard's).
    keep: Option<Keep<'k>>,
}

impl Reading<'_> {
    /// Whether a path read for an input is held to the project: always when the suite
    /// names it, and for an override when a test case named it.
    fn confined(&self, overridden: bool) -> bool {
        !overridden || self.confine_overrides
    }

    /// The documents of one folder input (none when it cannot be read); `key` is the
    /// input's key in suite.yaml and whether an override replaced its folder.
    fn folder(
        &mut self,
        suite: &Suite,
        dir: &Path,
        input: &FolderInput,
        unwrap: &[String],
        (key, overridden): (&str, bool),
    ) -> Vec<Document> {
        let confine = self.confined(overridden).then_some(&suite.confinement);
        if let Some(c) = confine
            && !c.permits(dir)
        {
            self.errors.push(outside_project(dir, c).key(key));
            return Vec::new();
        }
        let rules = ReadRules {
            key: &suite.spec.inputs.key,
            unwrap,
            json: input.json,
            skip_unreadable: input.skip_unreadable,
            run_file: input.run_file.as_deref(),
            confine,
            keep: self.keep,
        };
        match read_folder(dir, &rules) {
            Ok(folder) => {
                self.skipped
                    .extend(folder.skipped.into_iter().map(|s| (key.to_owned(), s)));
                folder.docs
            }
            Err(e) => {
                self.errors.extend(e.into_iter().map(|d| annotate(d, key)));
                Vec::new()
            }
        }
    }

    /// `--input name=...` naming an input the suite does not declare.
    fn unknown_overrides(&mut self, suite: &Suite, overrides: &Overrides) {
        let files = &suite.spec.inputs.files;
        for name in overrides.inputs.keys().filter(|n| !files.contains_key(*n)) {
            self.errors.push(
                Diagnostic::error(
                    Code::MissingPath,
                    format!("--input {name}=...: the suite has no named input `{name}`"),
                )
                .maybe_help(crate::diag::did_you_mean_help(
                    name,
                    files.keys().map(String::as_str),
                ))
                .note(format!(
                    "named inputs are declared under `inputs.files` of {}",
                    crate::diag::display_path(&suite.file)
                )),
            );
        }
    }

    /// The suite's named inputs, each from its override when one is given.
    fn named(&mut self, suite: &Suite, overrides: &Overrides) -> IndexMap<String, Doc> {
        let mut named = IndexMap::new();
        for (name, input) in &suite.spec.inputs.files {
            let read = match overrides.inputs.get(name) {
                Some(Some(path)) if self.confine_overrides && !suite.confinement.permits(path) => {
                    Err(outside_project(path, &suite.confinement))
                }
                Some(Some(path)) => read_override(name, path, input.json),
                Some(None) => Ok(Doc::Null),
                None => read_named(suite, name, input),
            };
            let key = format!("inputs.files.{name}");
            match read {
                Ok(doc) => {
                    named.insert(name.clone(), doc);
                }
                // Only an unreadable file is skipped; a missing one is `optional`'s business.
                Err(d) if input.skip_unreadable && d.code != Code::MissingPath => {
                    let file = d.file.clone().unwrap_or_default();
                    self.skipped.push((key, Skipped { file, reason: d }));
                    named.insert(name.clone(), Doc::Null);
                }
                Err(d) => self.errors.push(d.key(key).note(format!(
                    "named input `{name}` of {}",
                    crate::diag::display_path(&suite.file)
                ))),
            }
        }
        named
    }
}

/// Nothing to judge is bad input, not a low score: a run over no results would
/// otherwise score whatever its judges say about emptiness.
fn nothing_to_judge(results_dir: &Path) -> Diagnostic {
    Diagnostic::error(
        Code::MissingPath,
        format!(
            "folder {} has no *.json result files: there is nothing to judge",
            crate::diag::display_path(results_dir)
        ),
    )
    .in_file(results_dir)
    .note("set by `inputs.results` in suite.yaml, or the matching command-line flag")
}

/// Keeps the documents of `repos` (all when empty); an id that names no result is an
/// error with a did-you-mean.
fn keep_repos(
    results: Vec<Document>,
    truth: Vec<Document>,
    repos: &[String],
) -> Result<(Vec<Document>, Vec<Document>), Vec<Diagnostic>> {
    if repos.is_empty() {
        return Ok((results, truth));
    }
    let unknown: Vec<Diagnostic> = repos
        .iter()
        .filter(|id| !results.iter().any(|r| &r.id == *id))
        .map(|id| {
            Diagnostic::error(
                Code::MissingPath,
                format!("--repo {id}: no result names repo `{id}`"),
            )
            .maybe_help(crate::diag::did_you_mean_help(
                id,
                results.iter().map(|r| r.id.as_str()),
            ))
        })
        .collect();
    if !unknown.is_empty() {
        return Err(unknown);
    }
    let keep = |d: &Document| repos.contains(&d.id);
    Ok((
        results.into_iter().filter(keep).collect(),
        truth.into_iter().filter(keep).collect(),
    ))
}

fn annotate(d: Diagnostic, key: &str) -> Diagnostic {
    if d.code == Code::MissingPath {
        d.note(format!(
            "set by `{key}` in suite.yaml, or the matching command-line flag"
        ))
    } else {
        d
    }
}

fn read_named(
    suite: &Suite,
    name: &str,
    input: &crate::spec::suite::NamedInput,
) -> Result<Doc, Diagnostic> {
    let dir = &suite.dir;
    let path = match (&input.file, &input.newest) {
        (Some(f), None) => Some(dir.join(f)),
        (None, Some(pattern)) => newest_match(&dir.join(pattern).to_string_lossy())?,
        _ => {
            return Err(Diagnostic::error(
                Code::WrongType,
                format!("named input `{name}` needs exactly one of `file` or `newest`"),
            ));
        }
    };
    match path {
        // Checked again on the file itself: a link inside the project may point out.
        Some(p) if p.is_file() && !suite.confinement.permits(&p) => Err(Diagnostic::error(
            Code::InputOutsideProject,
            format!(
                "named input `{name}`: {} resolves outside the project",
                crate::diag::display_path(&p)
            ),
        )
        .help("pass --allow-outside-root to read it anyway")),
        Some(p) if p.is_file() => parse_json_file_as(&p, input.json).map(|(d, _)| d),
        Some(_) | None if input.optional => Ok(Doc::Null),
        Some(p) => Err(Diagnostic::error(
            Code::MissingPath,
            format!(
                "named input `{name}`: {} does not exist",
                crate::diag::display_path(&p)
            ),
        )
        .help("mark it `optional: true` if a run may go without it")),
        None => Err(Diagnostic::error(
            Code::MissingPath,
            format!("named input `{name}`: no file matches"),
        )
        .help("mark it `optional: true` if a run may go without it")),
    }
}

/// A named input given on the command line: it must exist (asking for a file that is
/// not there is a mistake, whatever `optional` says in the suite).
fn read_override(name: &str, path: &Path, json: JsonMode) -> Result<Doc, Diagnostic> {
    if !path.is_file() {
        return Err(Diagnostic::error(
            Code::MissingPath,
            format!(
                "--input {name}={}: no such file",
                crate::diag::display_path(path)
            ),
        ));
    }
    parse_json_file_as(path, json).map(|(d, _)| d)
}

/// The most recently modified file matching `pattern`.
fn newest_match(pattern: &str) -> Result<Option<PathBuf>, Diagnostic> {
    let paths = glob::glob(pattern).map_err(|e| {
        Diagnostic::error(Code::WrongType, format!("invalid glob `{pattern}`: {e}"))
    })?;
    Ok(paths
        .filter_map(Result::ok)
        .filter(|p| p.is_file())
        .max_by_key(|p| {
            std::fs::metadata(p)
                .and_then(|m| m.modified())
                .unwrap_or(SystemTime::UNIX_EPOCH)
        }))
}
