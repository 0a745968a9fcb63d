//! A run's inputs: results and ground truth read once from their folders, plus the
//! suite's other named inputs, with every problem reported at once. The run context is
//! built from them (`run::context`).

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use indexmap::IndexMap;

use crate::diag::{Code, Diagnostic};
use crate::doc::Doc;
use crate::load::documents::{
    Document, Keep, ReadRules, Sink, Skipped, outside_project, parse_json_file_as,
    read_folder_in_chunks, reread,
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
pub(crate) struct Inputs {
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
    pub(crate) fn results_without_truth(&self) -> Vec<String> {
        self.results
            .iter()
            .filter(|r| !self.truth.iter().any(|t| t.id == r.id))
            .map(|r| r.id.clone())
            .collect()
    }

    /// Ground-truth ids with no result.
    pub(crate) fn truth_without_results(&self) -> Vec<String> {
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
pub(crate) fn load_inputs(suite: &Suite, overrides: &Overrides) -> Result<Inputs, Vec<Diagnostic>> {
    load(suite, overrides, false, None)
}

/// [`load_inputs`] keeping only the documents of the repos `keep` says yes to (a
/// shard's): every result and ground-truth file is still parsed, for its id and size,
/// but the others' documents are dropped as they are read and come back `null`.
pub(crate) fn load_inputs_keeping(
    suite: &Suite,
    overrides: &Overrides,
    keep: Keep<'_>,
) -> Result<Inputs, Vec<Diagnostic>> {
    load(suite, overrides, false, Some(keep))
}

/// What a streaming read hands its caller, chunk by chunk: a few dozen repos' results
/// with their ground truth and every named input, in file order.
pub(crate) type ChunkSink<'a> = &'a mut dyn FnMut(&Inputs);

/// [`load_inputs`] a chunk of results at a time: the ground truth is read first (ids
/// and files only), then each chunk of results is parsed, joined with its repos' ground
/// truth (read again) and given to `sink`, and its documents dropped. What comes back
/// is the inputs as [`load_inputs`] reads them, every document `null`; the problems are
/// the same, in the same order. `sink` is not called once a problem is found before the
/// results are read.
///
/// With `keep` (a shard's), only the repos it says yes to go to `sink`; the others'
/// documents are dropped as they are parsed, as [`load_inputs_keeping`] drops them.
pub(crate) fn load_inputs_streaming(
    suite: &Suite,
    overrides: &Overrides,
    keep: Option<Keep<'_>>,
    sink: ChunkSink<'_>,
) -> Result<Inputs, Vec<Diagnostic>> {
    let none = |_: &str| false;
    Streaming {
        sink,
        drop_all: &none,
        keep,
    }
    .load(suite, overrides)
}

/// The documents of `picks` (indices into `shells.results`) read again, with their
/// ground truth: the inputs a sample of a streamed run is, as if taken from the inputs
/// read whole (ground truth in file order, everything else as `shells` has it).
pub(crate) fn reread_results(
    suite: &Suite,
    shells: &Inputs,
    picks: &[usize],
) -> Result<Inputs, Vec<Diagnostic>> {
    let spec = &suite.spec.inputs;
    let results: Vec<Document> = picks
        .iter()
        .map(|&i| {
            reread(
                &shells.results[i],
                &folder_rules(&spec.results, &spec.unwrap),
            )
        })
        .collect::<Result<_, _>>()
        .map_err(|d| vec![d])?;
    let wanted = |id: &str| results.iter().any(|r| r.id == id);
    let truth = reread_truth(suite, &shells.truth, &wanted)?;
    Ok(Inputs {
        results,
        truth,
        ..shells.clone()
    })
}

/// The ground truth of the repos `wanted` says yes to, read again from the files a
/// first read found, in file order.
fn reread_truth(
    suite: &Suite,
    shells: &[Document],
    wanted: &dyn Fn(&str) -> bool,
) -> Result<Vec<Document>, Vec<Diagnostic>> {
    let spec = &suite.spec.inputs;
    let plain = FolderInput::plain("");
    let input = spec.ground_truth.as_ref().unwrap_or(&plain);
    let rules = folder_rules(input, &spec.unwrap_truth);
    shells
        .iter()
        .filter(|t| wanted(&t.id))
        .map(|t| reread(t, &rules))
        .collect::<Result<_, _>>()
        .map_err(|d| vec![d])
}

/// What reading one file of `input` again needs (its id is known).
fn folder_rules<'a>(input: &FolderInput, unwrap: &'a [String]) -> ReadRules<'a> {
    ReadRules {
        key: &[],
        unwrap,
        json: input.json,
        skip_unreadable: false,
        run_file: None,
        confine: None,
        keep: None,
    }
}

/// A streaming read: where chunks go, the rule that drops every ground-truth document
/// on its first read, and which repos' results go to the sink (all when `None`).
struct Streaming<'s> {
    sink: ChunkSink<'s>,
    drop_all: Keep<'s>,
    keep: Option<Keep<'s>>,
}

impl Streaming<'_> {
    /// [`load`] with ground truth and named inputs read first, so each chunk of results
    /// comes with them; their problems are put back after the results', where a whole
    /// read reports them.
    fn load(self, suite: &Suite, overrides: &Overrides) -> Result<Inputs, Vec<Diagnostic>> {
        let (results_dir, truth_dir) = folders(suite, overrides);
        let mut read = Reading {
            keep: Some(self.drop_all),
            ..Reading::default()
        };
        let truth = read.truth(suite, overrides, truth_dir.as_deref());
        let truth_problems = read.take_problems();
        read.unknown_overrides(suite, overrides);
        let named = read.named(suite, overrides);
        let named_problems = read.take_problems();
        read.keep = self.keep;
        let clean = truth_problems.0.is_empty() && named_problems.0.is_empty();
        let mut failed = Vec::new();
        let mut chunk = |docs: Vec<Document>| {
            // The kept repos' documents move to the chunk; their shells stay in place.
            let mut shells = docs;
            let mut kept = Vec::new();
            for d in &mut shells {
                let chosen = overrides.repos.is_empty() || overrides.repos.contains(&d.id);
                if chosen && self.keep.is_none_or(|keep| keep(&d.id)) {
                    let doc = std::mem::replace(&mut d.doc, Doc::Null);
                    kept.push(Document { doc, ..d.clone() });
                }
            }
            let wanted = |id: &str| kept.iter().any(|r| r.id == id);
            // Once a chunk failed, the rest are only read for their problems.
            if failed.is_empty() && !kept.is_empty() {
                match reread_truth(suite, &truth, &wanted) {
                    Ok(truth) => (self.sink)(&Inputs {
                        results_dir: results_dir.clone(),
                        truth_dir: truth_dir.clone(),
                        results: kept,
                        truth,
                        named: named.clone(),
                        bytes: 0,
                        skipped: Vec::new(),
                    }),
                    Err(e) => failed.extend(e),
                }
            }
            shells_of(shells)
        };
        let sink: Option<Sink<'_>> = if clean { Some(&mut chunk) } else { None };
        let results = read.results(suite, overrides, &results_dir, sink);
        read.put_back(truth_problems);
        read.put_back(named_problems);
        read.errors.extend(failed);
        finish(
            suite,
            overrides,
            read,
            (results_dir, truth_dir),
            (results, truth),
            named,
        )
    }
}

/// Reads the suite's inputs as a test case names them: the folders and files of
/// `overrides` come from `case.yaml`, written by whoever wrote the suite, so they are
/// confined to the project as the suite's own are.
pub(crate) fn load_case_inputs(
    suite: &Suite,
    overrides: &Overrides,
) -> Result<Inputs, Vec<Diagnostic>> {
    load(suite, overrides, true, None)
}

fn load(
    suite: &Suite,
    overrides: &Overrides,
    confine_overrides: bool,
    keep: Option<Keep<'_>>,
) -> Result<Inputs, Vec<Diagnostic>> {
    let (results_dir, truth_dir) = folders(suite, overrides);
    let mut read = Reading {
        confine_overrides,
        keep,
        ..Reading::default()
    };
    let results = read.results(suite, overrides, &results_dir, None);
    let truth = read.truth(suite, overrides, truth_dir.as_deref());
    read.unknown_overrides(suite, overrides);
    let named = read.named(suite, overrides);
    finish(
        suite,
        overrides,
        read,
        (results_dir, truth_dir),
        (results, truth),
        named,
    )
}

/// The results folder and the ground-truth folder, overrides first.
fn folders(suite: &Suite, overrides: &Overrides) -> (PathBuf, Option<PathBuf>) {
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
    (results_dir, truth_dir)
}

/// The inputs from what was read, or every problem found.
fn finish(
    suite: &Suite,
    overrides: &Overrides,
    read: Reading<'_>,
    (results_dir, truth_dir): (PathBuf, Option<PathBuf>),
    (results, truth): (Vec<Document>, Vec<Document>),
    named: IndexMap<String, Doc>,
) -> Result<Inputs, Vec<Diagnostic>> {
    let Reading {
        errors, skipped, ..
    } = read;
    if !errors.is_empty() {
        return Err(errors);
    }
    let (results, truth) = keep_repos(results, truth, &overrides.repos)?;
    if results.is_empty() && !suite.spec.inputs.allow_empty {
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

/// Documents with their contents dropped: id, file and size stay.
fn shells_of(docs: Vec<Document>) -> Vec<Document> {
    docs.into_iter()
        .map(|d| Document {
            doc: Doc::Null,
            ..d
        })
        .collect()
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
    /// The results folder's documents, handed to `sink` chunk by chunk when one is given.
    fn results(
        &mut self,
        suite: &Suite,
        overrides: &Overrides,
        dir: &Path,
        sink: Option<Sink<'_>>,
    ) -> Vec<Document> {
        let spec = &suite.spec.inputs;
        self.folder(
            suite,
            dir,
            &spec.results,
            (&spec.key, &spec.unwrap),
            ("inputs.results", overrides.results.is_some()),
            sink,
        )
    }

    /// The ground-truth folder's documents (none without a folder).
    fn truth(&mut self, suite: &Suite, overrides: &Overrides, dir: Option<&Path>) -> Vec<Document> {
        let spec = &suite.spec.inputs;
        let overridden = overrides.ground_truth.is_some();
        // Ground truth may name its repos by other fields than the results do.
        let truth_key = spec.truth_key.as_deref().unwrap_or(&spec.key);
        let plain = FolderInput::plain("");
        let Some(dir) = dir else {
            return Vec::new();
        };
        let input = spec.ground_truth.as_ref().unwrap_or(&plain);
        self.folder(
            suite,
            dir,
            input,
            (truth_key, &spec.unwrap_truth),
            ("inputs.ground_truth", overridden),
            None,
        )
    }

    /// The problems and skipped files found so far, taken out (to be put back later).
    fn take_problems(&mut self) -> (Vec<Diagnostic>, Vec<(String, Skipped)>) {
        (
            std::mem::take(&mut self.errors),
            std::mem::take(&mut self.skipped),
        )
    }

    /// Problems taken out by [`Reading::take_problems`], after those found since.
    fn put_back(&mut self, (errors, skipped): (Vec<Diagnostic>, Vec<(String, Skipped)>)) {
        self.errors.extend(errors);
        self.skipped.extend(skipped);
    }

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
        (id_keys, unwrap): (&[String], &[String]),
        (key, overridden): (&str, bool),
        sink: Option<Sink<'_>>,
    ) -> Vec<Document> {
        let confine = self.confined(overridden).then_some(&suite.confinement);
        if let Some(c) = confine
            && !c.permits(dir)
        {
            self.errors.push(outside_project(dir, c).key(key));
            return Vec::new();
        }
        let rules = ReadRules {
            key: id_keys,
            unwrap,
            json: input.json,
            skip_unreadable: input.skip_unreadable,
            run_file: input.run_file.as_deref(),
            confine,
            keep: self.keep,
        };
        match read_folder_in_chunks(dir, &rules, sink) {
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
    .help("to judge an empty folder (judges see zero repos), set `inputs.allow_empty: true` in suite.yaml")
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A project folder holding a suite: files are written relative to the suite.
    struct Project {
        _tmp: tempfile::TempDir,
        /// The suite folder, which is also the project root.
        dir: PathBuf,
    }

    impl Project {
        fn new() -> Project {
            let tmp = tempfile::tempdir().expect("temp folder");
            let dir = tmp.path().join("suite");
            std::fs::create_dir(&dir).expect("suite folder");
            Project { _tmp: tmp, dir }
        }

        /// A path beside the project, outside it.
        fn outside(&self, rel: &str) -> PathBuf {
            self._tmp.path().join(rel)
        }

        fn write(&self, rel: &str, text: &str) -> PathBuf {
            let path = self.dir.join(rel);
            write_at(&path, text);
            path
        }

        /// The suite with `inputs` (YAML, indented under `inputs:`) and one judge.
        fn suite(&self, inputs: &str) -> Suite {
            self.write(
                "count.yaml",
                "dimension: coverage\nweight: 1.0\nevidence:\n  n: << repos | length >>\nheuristic:\n  metric: n\n  bands:\n    - { min: 1, score: 4 }\n    - { score: 2 }\n  reasoning: << n >> repos\n",
            );
            self.write(
                "suite.yaml",
                &format!("suite: t\ninputs:\n{inputs}\njudges: [count.yaml]\n"),
            );
            let env = crate::render::environment();
            let (suite, diags) = crate::load::suite::load_suite(&self.dir, &env);
            suite.unwrap_or_else(|| panic!("suite loads: {diags:?}"))
        }
    }

    fn write_at(path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().expect("parent")).expect("folders");
        std::fs::write(path, text).expect("write");
    }

    fn ids(docs: &[Document]) -> Vec<&str> {
        docs.iter().map(|d| d.id.as_str()).collect()
    }

    fn errors(result: Result<Inputs, Vec<Diagnostic>>) -> Vec<Diagnostic> {
        match result {
            Ok(_) => panic!("expected errors"),
            Err(e) => e,
        }
    }

    /// Results and ground truth in file order, each keyed by its own fields and
    /// unwrapped by its own envelope; what has no counterpart is listed; sizes add up.
    #[test]
    fn results_and_ground_truth_are_read_and_paired() {
        let p = Project::new();
        p.write("r/1.json", r#"{"id": "a", "data": {"n": 1}}"#);
        p.write("r/2.json", r#"{"id": "b", "data": {"n": 2}}"#);
        p.write("gt/x.json", r#"{"repo": "a", "expected": {"m": 1}}"#);
        p.write("gt/y.json", r#"{"repo": "c", "expected": {"m": 3}}"#);
        let suite = p.suite(
            "  results: r\n  ground_truth: gt\n  key: [id]\n  unwrap: [data]\n  truth_key: [repo]\n  unwrap_truth: [expected]",
        );
        let inputs = load_inputs(&suite, &Overrides::default()).expect("loads");
        assert_eq!(ids(&inputs.results), ["a", "b"]);
        assert_eq!(ids(&inputs.truth), ["a", "c"]);
        assert_eq!(inputs.results[1].doc.field("n"), Some(&Doc::Int(2)));
        assert_eq!(inputs.truth[1].doc.field("m"), Some(&Doc::Int(3)));
        assert_eq!(inputs.results_without_truth(), ["b"]);
        assert_eq!(inputs.truth_without_results(), ["c"]);
        let sizes: u64 = inputs
            .results
            .iter()
            .chain(&inputs.truth)
            .map(|d| d.bytes)
            .sum();
        assert_eq!(inputs.bytes, sizes);
        assert!(inputs.bytes > 0);
        assert_eq!(inputs.results_dir, p.dir.join("r"));
        assert_eq!(inputs.truth_dir, Some(p.dir.join("gt")));
        assert!(inputs.skipped.is_empty());
    }

    /// Folders given on the command line replace the suite's, and may be anywhere; a
    /// test case's are held to the project, as the suite's own folders are.
    #[test]
    fn overridden_folders_are_confined_only_for_test_cases() {
        let p = Project::new();
        p.write("r/a.json", "{}");
        p.write("gt/a.json", "{}");
        let out = p.outside("elsewhere");
        write_at(&out.join("b.json"), "{}");
        write_at(&p.outside("truth/b.json"), "{}");
        let suite = p.suite("  results: r\n  ground_truth: gt");
        let overrides = Overrides {
            results: Some(out.clone()),
            ground_truth: Some(p.outside("truth")),
            ..Overrides::default()
        };
        let inputs = load_inputs(&suite, &overrides).expect("loads");
        assert_eq!(ids(&inputs.results), ["b"]);
        assert_eq!(ids(&inputs.truth), ["b"]);
        assert_eq!(inputs.results_dir, out);
        let errs = errors(load_case_inputs(&suite, &overrides));
        let keys: Vec<(Code, Option<&str>)> = errs
            .iter()
            .map(|d| (d.code, d.key_path.as_deref()))
            .collect();
        assert_eq!(
            keys,
            [
                (Code::InputOutsideProject, Some("inputs.results")),
                (Code::InputOutsideProject, Some("inputs.ground_truth")),
            ]
        );
        let inside = Overrides {
            results: Some(p.dir.join("r")),
            ..Overrides::default()
        };
        let inputs = load_case_inputs(&suite, &inside).expect("inside the project");
        assert_eq!(ids(&inputs.results), ["a"]);
    }

    /// A folder the suite names outside its project is refused, named by its key.
    #[test]
    fn a_suite_folder_outside_the_project_is_refused() {
        let p = Project::new();
        write_at(&p.outside("out/a.json"), "{}");
        let suite = p.suite("  results: ../out");
        let errs = errors(load_inputs(&suite, &Overrides::default()));
        assert_eq!(errs.len(), 1);
        assert_eq!(errs[0].code, Code::InputOutsideProject);
        assert_eq!(errs[0].key_path.as_deref(), Some("inputs.results"));
    }

    /// Every problem is reported at once: a missing folder says which key set it, a
    /// file that does not parse does not get that note.
    #[test]
    fn every_folder_problem_is_reported_with_its_key() {
        let p = Project::new();
        p.write("r/a.json", "{");
        let suite = p.suite("  results: r\n  ground_truth: gt");
        let errs = errors(load_inputs(&suite, &Overrides::default()));
        assert_eq!(errs.len(), 2, "{errs:?}");
        assert_eq!(errs[0].code, Code::JsonSyntax);
        assert_eq!(errs[0].key_path, None);
        assert!(
            errs[0].notes.iter().all(|n| !n.contains("set by")),
            "{:?}",
            errs[0].notes
        );
        assert_eq!(errs[1].code, Code::MissingPath);
        assert!(
            errs[1]
                .notes
                .iter()
                .any(|n| n.contains("set by `inputs.ground_truth`")),
            "{:?}",
            errs[1].notes
        );
    }

    /// Unreadable files of an input that skips them are listed under the input's key.
    #[test]
    fn skipped_files_carry_their_inputs_key() {
        let p = Project::new();
        p.write("r/a.json", "{}");
        p.write("r/b.json", "{");
        p.write("gt/c.json", "nope");
        let suite = p.suite(
            "  results: {folder: r, skip_unreadable: true}\n  ground_truth: {folder: gt, skip_unreadable: true}",
        );
        let inputs = load_inputs(&suite, &Overrides::default()).expect("loads");
        let skipped: Vec<(&str, bool)> = inputs
            .skipped
            .iter()
            .map(|(k, s)| {
                (
                    k.as_str(),
                    s.file.ends_with("b.json") || s.file.ends_with("c.json"),
                )
            })
            .collect();
        assert_eq!(
            skipped,
            [("inputs.results", true), ("inputs.ground_truth", true)]
        );
        assert_eq!(ids(&inputs.results), ["a"]);
    }

    /// No result is nothing to judge, unless the suite allows an empty folder.
    #[test]
    fn an_empty_results_folder_is_refused_unless_allowed() {
        let p = Project::new();
        std::fs::create_dir_all(p.dir.join("r")).unwrap();
        let suite = p.suite("  results: r");
        let errs = errors(load_inputs(&suite, &Overrides::default()));
        assert_eq!(errs.len(), 1);
        assert_eq!(errs[0].code, Code::MissingPath);
        assert!(
            errs[0].message.contains("there is nothing to judge"),
            "{}",
            errs[0].message
        );
        assert!(
            errs[0]
                .help
                .as_deref()
                .unwrap_or("")
                .contains("allow_empty")
        );
        let suite = p.suite("  results: r\n  allow_empty: true");
        let inputs = load_inputs(&suite, &Overrides::default()).expect("allowed");
        assert!(inputs.results.is_empty());
    }

    /// `--repo` keeps those repos' results and ground truth; a repo no result names is
    /// an error with a suggestion.
    #[test]
    fn repos_on_the_command_line_are_kept_or_refused() {
        let p = Project::new();
        for id in ["alpha", "beta", "gamma"] {
            p.write(&format!("r/{id}.json"), "{}");
            p.write(&format!("gt/{id}.json"), "{}");
        }
        let suite = p.suite("  results: r\n  ground_truth: gt");
        let only = |repos: &[&str]| Overrides {
            repos: repos.iter().map(|r| (*r).to_owned()).collect(),
            ..Overrides::default()
        };
        let inputs = load_inputs(&suite, &only(&["gamma", "alpha"])).expect("loads");
        assert_eq!(ids(&inputs.results), ["alpha", "gamma"]);
        assert_eq!(ids(&inputs.truth), ["alpha", "gamma"]);
        let errs = errors(load_inputs(&suite, &only(&["alpha", "betta", "x"])));
        let messages: Vec<&str> = errs.iter().map(|d| d.message.as_str()).collect();
        assert_eq!(
            messages,
            [
                "--repo betta: no result names repo `betta`",
                "--repo x: no result names repo `x`"
            ]
        );
        assert!(
            errs[0].help.as_deref().unwrap_or("").contains("beta"),
            "{:?}",
            errs[0].help
        );
    }

    /// Named inputs: a file, the newest match of a pattern, `null` when optional and
    /// absent; a missing one, or one that names both or neither, is an error.
    #[test]
    fn named_inputs_are_read_from_their_file_or_newest_match() {
        let p = Project::new();
        p.write("r/a.json", "{}");
        p.write("base.json", r#"{"v": 1}"#);
        let old = p.write("runs/1.json", r#"{"v": "old"}"#);
        let new = p.write("runs/2.json", r#"{"v": "new"}"#);
        let t = SystemTime::now();
        std::fs::File::options()
            .write(true)
            .open(&old)
            .unwrap()
            .set_modified(t - std::time::Duration::from_secs(60))
            .unwrap();
        std::fs::File::options()
            .write(true)
            .open(&new)
            .unwrap()
            .set_modified(t)
            .unwrap();
        let suite = p.suite(
            "  results: r\n  files:\n    base: {file: base.json}\n    last: {newest: 'runs/*.json'}\n    opt: {file: none.json, optional: true}\n    optnew: {newest: 'none/*.json', optional: true}",
        );
        let inputs = load_inputs(&suite, &Overrides::default()).expect("loads");
        assert_eq!(inputs.named["base"].field("v"), Some(&Doc::Int(1)));
        assert_eq!(inputs.named["last"].field("v"), Some(&Doc::from("new")));
        assert_eq!(inputs.named["opt"], Doc::Null);
        assert_eq!(inputs.named["optnew"], Doc::Null);
        let keys: Vec<&str> = inputs.named.keys().map(String::as_str).collect();
        assert_eq!(keys, ["base", "last", "opt", "optnew"]);

        let suite = p.suite(
            "  results: r\n  files:\n    gone: {file: none.json}\n    nomatch: {newest: 'none/*.json'}\n    both: {file: base.json, newest: 'runs/*.json'}",
        );
        let errs = errors(load_inputs(&suite, &Overrides::default()));
        let got: Vec<(Code, Option<&str>)> = errs
            .iter()
            .map(|d| (d.code, d.key_path.as_deref()))
            .collect();
        assert_eq!(
            got,
            [
                (Code::MissingPath, Some("inputs.files.gone")),
                (Code::MissingPath, Some("inputs.files.nomatch")),
                (Code::WrongType, Some("inputs.files.both")),
            ]
        );
        assert!(
            errs[0].message.contains("none.json does not exist"),
            "{}",
            errs[0].message
        );
        assert!(
            errs[1].message.contains("no file matches"),
            "{}",
            errs[1].message
        );
        assert!(
            errs.iter()
                .all(|d| d.notes.iter().any(|n| n.contains("named input `")))
        );
    }

    /// A named input that does not parse is skipped (and `null`) when the input says
    /// so; a missing one is still an error.
    #[test]
    fn unreadable_named_inputs_are_skipped_when_the_input_says_so() {
        let p = Project::new();
        p.write("r/a.json", "{}");
        p.write("bad.json", "{");
        let suite =
            p.suite("  results: r\n  files:\n    bad: {file: bad.json, skip_unreadable: true}");
        let inputs = load_inputs(&suite, &Overrides::default()).expect("loads");
        assert_eq!(inputs.named["bad"], Doc::Null);
        assert_eq!(inputs.skipped.len(), 1);
        assert_eq!(inputs.skipped[0].0, "inputs.files.bad");
        assert!(inputs.skipped[0].1.file.ends_with("bad.json"));
        let suite =
            p.suite("  results: r\n  files:\n    gone: {file: none.json, skip_unreadable: true}");
        let errs = errors(load_inputs(&suite, &Overrides::default()));
        assert_eq!(errs.len(), 1);
        assert_eq!(errs[0].code, Code::MissingPath);
    }

    /// A named input linked from inside the project to a file outside is refused.
    #[cfg(unix)]
    #[test]
    fn a_named_input_linking_outside_the_project_is_refused() {
        let p = Project::new();
        p.write("r/a.json", "{}");
        let target = p.outside("secret.json");
        write_at(&target, "{}");
        std::os::unix::fs::symlink(&target, p.dir.join("link.json")).unwrap();
        let suite = p.suite("  results: r\n  files:\n    l: {file: link.json}");
        let errs = errors(load_inputs(&suite, &Overrides::default()));
        assert_eq!(errs.len(), 1);
        assert_eq!(errs[0].code, Code::InputOutsideProject);
        assert!(errs[0].message.contains("resolves outside the project"));
    }

    /// `--input name=path` reads that file (which must exist), `--input name=` none; a
    /// name the suite does not declare is an error with a suggestion; a test case's
    /// override is held to the project.
    #[test]
    fn named_input_overrides() {
        let p = Project::new();
        p.write("r/a.json", "{}");
        p.write("base.json", r#"{"v": 1}"#);
        let other = p.outside("other.json");
        write_at(&other, r#"{"v": 2}"#);
        let suite = p.suite(
            "  results: r\n  files:\n    base: {file: base.json}\n    extra: {file: base.json}",
        );
        let with = |pairs: &[(&str, Option<PathBuf>)]| Overrides {
            inputs: pairs
                .iter()
                .map(|(k, v)| ((*k).to_owned(), v.clone()))
                .collect(),
            ..Overrides::default()
        };
        let inputs = load_inputs(
            &suite,
            &with(&[("base", Some(other.clone())), ("extra", None)]),
        )
        .expect("loads");
        assert_eq!(inputs.named["base"].field("v"), Some(&Doc::Int(2)));
        assert_eq!(inputs.named["extra"], Doc::Null);

        let errs = errors(load_inputs(
            &suite,
            &with(&[("base", Some(p.outside("none.json"))), ("bsae", None)]),
        ));
        assert_eq!(errs.len(), 2, "{errs:?}");
        assert!(
            errs[0]
                .message
                .contains("--input bsae=...: the suite has no named input `bsae`")
        );
        assert!(errs[0].help.as_deref().unwrap_or("").contains("base"));
        assert!(
            errs[1].message.contains("--input base="),
            "{}",
            errs[1].message
        );
        assert!(
            errs[1].message.contains("no such file"),
            "{}",
            errs[1].message
        );

        let errs = errors(load_case_inputs(
            &suite,
            &with(&[("base", Some(other.clone()))]),
        ));
        assert_eq!(errs.len(), 1);
        assert_eq!(errs[0].code, Code::InputOutsideProject);
        let inside = with(&[("base", Some(p.dir.join("base.json")))]);
        let inputs = load_case_inputs(&suite, &inside).expect("inside the project");
        assert_eq!(inputs.named["base"].field("v"), Some(&Doc::Int(1)));
    }

    /// A shard's read keeps only its repos' documents, every id and size staying.
    #[test]
    fn a_read_keeping_some_repos_keeps_their_documents_only() {
        let p = Project::new();
        p.write("r/a.json", r#"{"n": 1}"#);
        p.write("r/b.json", r#"{"n": 2}"#);
        p.write("gt/a.json", r#"{"n": 3}"#);
        p.write("gt/b.json", r#"{"n": 4}"#);
        let suite = p.suite("  results: r\n  ground_truth: gt");
        let keep = |id: &str| id == "b";
        let inputs = load_inputs_keeping(&suite, &Overrides::default(), &keep).expect("loads");
        assert_eq!(ids(&inputs.results), ["a", "b"]);
        assert_eq!(inputs.results[0].doc, Doc::Null);
        assert_eq!(inputs.results[1].doc.field("n"), Some(&Doc::Int(2)));
        assert_eq!(inputs.truth[0].doc, Doc::Null);
        assert_eq!(inputs.truth[1].doc.field("n"), Some(&Doc::Int(4)));
    }

    /// A streaming read hands over each chunk's results with their ground truth and the
    /// named inputs, and gives back what a whole read gives, every document `null`; a
    /// sample is read again as the whole read had it.
    #[test]
    fn a_streaming_read_gives_what_a_whole_read_gives() {
        let p = Project::new();
        for (i, id) in ["a", "b", "c"].iter().enumerate() {
            p.write(
                &format!("r/{id}.json"),
                &format!(r#"{{"data": {{"n": {i}}}}}"#),
            );
        }
        p.write("gt/b.json", r#"{"m": 1}"#);
        p.write("gt/d.json", r#"{"m": 2}"#);
        p.write("base.json", r#"{"v": 1}"#);
        let suite = p.suite(
            "  results: r\n  ground_truth: gt\n  unwrap: [data]\n  files:\n    base: {file: base.json}",
        );
        let whole = load_inputs(&suite, &Overrides::default()).expect("loads");
        let mut seen = Vec::new();
        let mut sink = |chunk: &Inputs| {
            seen.push((
                ids(&chunk.results).join(","),
                ids(&chunk.truth).join(","),
                chunk.results[1].doc.field("n").cloned(),
                chunk.named["base"].field("v").cloned(),
            ));
        };
        let shells =
            load_inputs_streaming(&suite, &Overrides::default(), None, &mut sink).expect("streams");
        assert_eq!(
            seen,
            [(
                "a,b,c".to_owned(),
                "b".to_owned(),
                Some(Doc::Int(1)),
                Some(Doc::Int(1))
            )]
        );
        assert_eq!(ids(&shells.results), ids(&whole.results));
        assert_eq!(ids(&shells.truth), ids(&whole.truth));
        assert!(
            shells
                .results
                .iter()
                .chain(&shells.truth)
                .all(|d| d.doc == Doc::Null)
        );
        assert_eq!(shells.bytes, whole.bytes);
        assert_eq!(shells.named, whole.named);

        let sample = reread_results(&suite, &shells, &[1, 0]).expect("rereads");
        assert_eq!(ids(&sample.results), ["b", "a"]);
        assert_eq!(sample.results[0].doc, whole.results[1].doc);
        assert_eq!(ids(&sample.truth), ["b"]);
        assert_eq!(sample.truth[0].doc, whole.truth[0].doc);

        let only_c = Overrides {
            repos: vec!["c".to_owned()],
            ..Overrides::default()
        };
        let mut seen = Vec::new();
        let mut sink = |chunk: &Inputs| seen.push(ids(&chunk.results).join(","));
        let shells = load_inputs_streaming(&suite, &only_c, None, &mut sink).expect("streams");
        assert_eq!(seen, ["c"]);
        assert_eq!(ids(&shells.results), ["c"]);

        // A shard's read: every repo is listed, only the kept ones reach the sink, with
        // their own ground truth.
        let not_a = |id: &str| id != "a";
        let mut seen = Vec::new();
        let mut sink = |chunk: &Inputs| {
            seen.push((ids(&chunk.results).join(","), ids(&chunk.truth).join(",")));
            assert_eq!(chunk.results[0].doc, whole.results[1].doc);
        };
        let shells = load_inputs_streaming(&suite, &Overrides::default(), Some(&not_a), &mut sink)
            .expect("streams");
        assert_eq!(seen, [("b,c".to_owned(), "b".to_owned())]);
        assert_eq!(ids(&shells.results), ids(&whole.results));
    }

    /// A streaming read hands over nothing when only the ground truth failed, or only
    /// a named input did.
    #[test]
    fn a_streaming_read_hands_over_nothing_after_one_early_problem() {
        let p = Project::new();
        p.write("r/a.json", "{}");
        p.write("base.json", "{}");
        p.write("gt/a.json", "{");
        let truth_fails =
            p.suite("  results: r\n  ground_truth: gt\n  files:\n    base: {file: base.json}");
        p.write("gt2/a.json", "{}");
        let named_fails =
            p.suite("  results: r\n  ground_truth: gt2\n  files:\n    gone: {file: none.json}");
        for suite in [truth_fails, named_fails] {
            let mut chunks = 0;
            let mut sink = |_: &Inputs| chunks += 1;
            let errs = errors(load_inputs_streaming(
                &suite,
                &Overrides::default(),
                None,
                &mut sink,
            ));
            assert_eq!(errs.len(), 1, "{errs:?}");
            assert_eq!(chunks, 0, "{errs:?}");
        }
    }

    /// A chunk with none of the repos `--repo` asks for is not handed over.
    #[test]
    fn a_streaming_read_skips_chunks_without_a_wanted_repo() {
        let p = Project::new();
        for i in 0..super::super::documents::STREAM_CHUNK + 3 {
            p.write(&format!("r/{i:03}.json"), "{}");
        }
        let suite = p.suite("  results: r");
        let only = Overrides {
            repos: vec!["001".to_owned()],
            ..Overrides::default()
        };
        let mut seen = Vec::new();
        let mut sink = |chunk: &Inputs| seen.push(ids(&chunk.results).join(","));
        let shells = load_inputs_streaming(&suite, &only, None, &mut sink).expect("streams");
        assert_eq!(seen, ["001"]);
        assert_eq!(ids(&shells.results), ["001"]);
    }

    /// Shells keep a document's id, file and size, never its content.
    #[test]
    fn shells_keep_everything_but_the_content() {
        let doc = Document {
            id: "a".to_owned(),
            doc: Doc::from_json(&serde_json::json!({"n": 1})),
            file: PathBuf::from("r/a.json"),
            bytes: 9,
        };
        let shells = shells_of(vec![doc]);
        assert_eq!(shells.len(), 1);
        let shell = &shells[0];
        assert_eq!(shell.doc, Doc::Null);
        assert_eq!(
            (shell.id.as_str(), shell.file.as_path(), shell.bytes),
            ("a", Path::new("r/a.json"), 9)
        );
    }

    /// A streaming read reports the same problems as a whole read, in the same order,
    /// and hands over nothing once ground truth or a named input failed.
    #[test]
    fn a_streaming_read_reports_problems_as_a_whole_read_does() {
        let p = Project::new();
        p.write("r/a.json", "{");
        p.write("r/b.json", "{}");
        p.write("gt/b.json", "{");
        let suite =
            p.suite("  results: r\n  ground_truth: gt\n  files:\n    gone: {file: none.json}");
        let whole = errors(load_inputs(&suite, &Overrides::default()));
        let mut chunks = 0;
        let mut sink = |_: &Inputs| chunks += 1;
        let streamed = errors(load_inputs_streaming(
            &suite,
            &Overrides::default(),
            None,
            &mut sink,
        ));
        let files = |e: &[Diagnostic]| -> Vec<(Code, Option<PathBuf>)> {
            e.iter().map(|d| (d.code, d.file.clone())).collect()
        };
        assert_eq!(files(&streamed), files(&whole));
        assert_eq!(whole.len(), 3, "{whole:?}");
        assert_eq!(chunks, 0);
    }
}
