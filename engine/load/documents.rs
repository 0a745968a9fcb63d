//! Reads analysis results and ground truth: every non-dot `*.json` (or gzip-compressed
//! `*.json.gz`, see [`crate::load::gzip`]) of a folder, in file name order, keyed by the
//! first present key field, else the file stem.
//!
//! Strict where the original framework was lenient: a file that is not valid JSON is an
//! error naming file, line and column (skipped only when the input says
//! `skip_unreadable`, and then listed), and two files naming the same repo is an error
//! naming both. Run folders (`<run>/output.json`) are read when the input names the file.
//!
//! An input may be anything: a file a suite names could be a link to the process's
//! environment or a key file. So a diagnostic about an input says what the file is (its
//! path, its size, where parsing stopped and what was expected there) and never quotes
//! what it holds (see [`Diagnostic::unquoted`]).

use std::path::{Path, PathBuf};

use indexmap::IndexMap;

use crate::diag::{Code, Diagnostic, Span};
use crate::doc::Doc;
use crate::load::confine::Confinement;
use crate::load::gzip;
use crate::spec::suite::JsonMode;

/// One loaded document.
#[derive(Debug, Clone)]
pub(crate) struct Document {
    /// The repo id it names.
    pub id: String,
    /// The (unwrapped) content.
    pub doc: Doc,
    /// Where it came from.
    pub file: PathBuf,
    /// Its size in bytes.
    pub bytes: u64,
}

/// How to read a folder of documents.
#[derive(Clone)]
pub(crate) struct ReadRules<'a> {
    /// Candidate fields naming the repo (dotted paths).
    pub key: &'a [String],
    /// Envelope keys to unwrap, in order.
    pub unwrap: &'a [String],
    /// Strict JSON, or also Python's `NaN` / `Infinity`.
    pub json: JsonMode,
    /// Skip (and report) unreadable files instead of failing.
    pub skip_unreadable: bool,
    /// The file read in each run folder (`<dir>/<run>/<run_file>`), when run folders
    /// are read.
    pub run_file: Option<&'a str>,
    /// When the folder was named by a suite or a test case (not on the command line):
    /// every file read, links resolved, must be inside this project.
    pub confine: Option<&'a Confinement>,
    /// Keeps only the documents of the repos this says yes to: the others are dropped
    /// as soon as they are parsed (their id, file and size stay, their content becomes
    /// `null`), so a shard holds its own repos' documents only. `None` keeps all.
    pub keep: Option<Keep<'a>>,
}

/// Which repos' documents a read keeps (see [`ReadRules::keep`]).
pub(crate) type Keep<'a> = &'a (dyn Fn(&str) -> bool + Sync);

/// A file that was skipped because it could not be read, and why.
#[derive(Debug, Clone)]
pub(crate) struct Skipped {
    /// The file.
    pub file: PathBuf,
    /// The diagnostic that would have stopped the run.
    pub reason: Diagnostic,
}

/// What reading a folder gave.
#[derive(Debug, Clone, Default)]
pub(crate) struct Folder {
    /// The documents, in file order.
    pub docs: Vec<Document>,
    /// Files skipped as unreadable (only with `skip_unreadable`).
    pub skipped: Vec<Skipped>,
}

/// Lists the `*.json` and `*.json.gz` files of `dir` (dot files ignored), sorted by name.
pub(crate) fn list_json(dir: &Path) -> Result<Vec<PathBuf>, Diagnostic> {
    if !dir.is_dir() {
        return Err(Diagnostic::error(
            Code::MissingPath,
            format!("folder {} does not exist", crate::diag::display_path(dir)),
        )
        .in_file(dir));
    }
    let entries = std::fs::read_dir(dir).map_err(|e| {
        Diagnostic::error(Code::Io, format!("cannot list folder: {e}")).in_file(dir)
    })?;
    let mut files: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| {
            p.is_file()
                && (p.extension().is_some_and(|x| x == "json") || gzip::is_json_gz(p))
                && !p
                    .file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with('.'))
        })
        .collect();
    files.sort();
    Ok(files)
}

/// The files of `dir` to read, each with the id it has when its key fields name none:
/// every `*.json` (its stem), then with `run_file` every `<run>/<run_file>` (the run
/// folder's name). Dot files and folders are ignored; each group is sorted by name.
pub(crate) fn list_documents(
    dir: &Path,
    run_file: Option<&str>,
) -> Result<Vec<(PathBuf, String)>, Diagnostic> {
    let mut out: Vec<(PathBuf, String)> = list_json(dir)?
        .into_iter()
        .map(|f| {
            let stem = gzip::document_stem(&f);
            (f, stem)
        })
        .collect();
    let Some(run_file) = run_file else {
        return Ok(out);
    };
    let mut runs: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| Diagnostic::error(Code::Io, format!("cannot list folder: {e}")).in_file(dir))?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| {
            p.is_dir()
                && !p
                    .file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with('.'))
        })
        .collect();
    runs.sort();
    for run in runs {
        let file = run.join(run_file);
        if file.is_file() {
            let name = run
                .file_name()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default();
            out.push((file, name));
        }
    }
    Ok(out)
}

/// Parses one JSON file in the given mode, with a located error.
pub(crate) fn parse_json_file_as(path: &Path, mode: JsonMode) -> Result<(Doc, u64), Diagnostic> {
    READ_BUFFER.with(|buffer| match buffer.try_borrow_mut() {
        Ok(mut bytes) => {
            let parsed = read_into(path, &mut bytes).and_then(|()| parse_bytes(path, &bytes, mode));
            if bytes.capacity() > KEEP_BUFFER_UP_TO {
                *bytes = Vec::new();
            }
            parsed
        }
        Err(_) => {
            let mut bytes = Vec::new();
            read_into(path, &mut bytes).and_then(|()| parse_bytes(path, &bytes, mode))
        }
    })
}

thread_local! {
    /// The bytes of the file being parsed, one buffer per thread reused across files:
    /// fresh memory for every file costs the kernel a page clear per page.
    static READ_BUFFER: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// A buffer grown past this by a large file is given back rather than kept.
const KEEP_BUFFER_UP_TO: usize = 64 << 20;

fn read_into(path: &Path, bytes: &mut Vec<u8>) -> Result<(), Diagnostic> {
    use std::io::Read;
    if gzip::is_json_gz(path) {
        return gzip::read_into(path, bytes, gzip::MAX_INFLATED_BYTES);
    }
    bytes.clear();
    std::fs::File::open(path)
        .and_then(|mut f| f.read_to_end(bytes))
        .map(|_| ())
        .map_err(|e| Diagnostic::error(Code::Io, format!("cannot read file: {e}")).in_file(path))
}

/// Parses `bytes`, read from `path`. A diagnostic locates the problem and gives the
/// file's size, and never quotes the file.
fn parse_bytes(path: &Path, bytes: &[u8], mode: JsonMode) -> Result<(Doc, u64), Diagnostic> {
    parse_bytes_quoted(path, bytes, mode).map_err(|d| {
        d.unquoted().note(format!(
            "the file holds {} bytes; its content is not shown",
            bytes.len()
        ))
    })
}

fn parse_bytes_quoted(path: &Path, bytes: &[u8], mode: JsonMode) -> Result<(Doc, u64), Diagnostic> {
    let size = bytes.len() as u64;
    if bytes.starts_with(b"\xEF\xBB\xBF") {
        let text = String::from_utf8_lossy(bytes);
        return Err(Diagnostic::error(
            Code::JsonSyntax,
            "the file starts with a byte-order mark (BOM), which JSON does not allow",
        )
        .in_file(path)
        .at(Some(Span::at_line_col(&text, 1, 1, 3)))
        .help("save the file as UTF-8 without a BOM"));
    }
    let parsed = match mode {
        JsonMode::Strict => serde_json::from_slice::<Doc>(bytes).map_err(|e| (e, Vec::new())),
        JsonMode::Lenient => crate::load::lenient::parse(bytes),
    };
    match parsed {
        Ok(doc) => Ok((doc, size)),
        Err((e, shifts)) => {
            let text = String::from_utf8_lossy(bytes);
            if mode == JsonMode::Strict {
                let non_finite = !e.to_string().starts_with("duplicate key")
                    && ["NaN", "Infinity"].iter().any(|t| text.contains(t));
                let d = json_error(path, bytes, &e);
                return Err(if non_finite {
                    d.help("a file written by Python's json module may hold NaN or Infinity; declare `json: lenient` on this input to read them")
                } else {
                    d
                });
            }
            let column = crate::load::lenient::original_column(&shifts, e.line(), e.column());
            let span = (e.line() > 0).then(|| Span::at_line_col(&text, e.line(), column.max(1), 1));
            let msg = e.to_string();
            let msg = msg.split(" at line ").next().unwrap_or(&msg).to_owned();
            Err(Diagnostic::error(Code::JsonSyntax, format!("not valid JSON: {msg}"))
                .in_file(path)
                .at(span)
                .help("fix or remove the file, or declare `skip_unreadable: true` on this input to skip and list such files"))
        }
    }
}

/// A located diagnostic for a JSON file that does not parse; a duplicate key is named
/// and pointed at.
fn json_error(path: &Path, bytes: &[u8], e: &serde_json::Error) -> Diagnostic {
    let text = String::from_utf8_lossy(bytes);
    let span = (e.line() > 0).then(|| Span::at_line_col(&text, e.line(), e.column().max(1), 1));
    let msg = e.to_string();
    let msg = msg.split(" at line ").next().unwrap_or(&msg).to_owned();
    if let Some(key) = msg
        .strip_prefix("duplicate key `")
        .and_then(|rest| rest.split('`').next())
    {
        // serde_json stops at the end of the object: point at the key's last occurrence
        // before it.
        let quoted = format!("\"{key}\"");
        let span = span.map(|s| match text[..s.start].rfind(&quoted) {
            Some(at) => Span::from_offsets(&text, at, at + quoted.len()),
            None => s,
        });
        return Diagnostic::error(
            Code::DuplicateKey,
            format!("key `{key}` appears twice in the same object"),
        )
        .in_file(path)
        .at(span)
        .help("JSON readers disagree on which one counts; keep one");
    }
    Diagnostic::error(Code::JsonSyntax, format!("not valid JSON: {msg}"))
        .in_file(path)
        .at(span)
        .help("fix or remove the file, or declare `skip_unreadable: true` on this input to skip and list such files")
}

/// What a streaming read does with each chunk of documents: it is given them (file
/// order, duplicates and skipped files left out) and gives back what the folder keeps
/// of them, their contents usually dropped.
pub(crate) type Sink<'a> = &'a mut dyn FnMut(Vec<Document>) -> Vec<Document>;

/// Files parsed at once by a streaming read: enough to keep every core busy, few enough
/// that the chunk's documents are a small part of the input.
pub(crate) const STREAM_CHUNK: usize = 32;

/// [`read_folder`], handing the documents to `sink` [`STREAM_CHUNK`] files at a time
/// when one is given (one chunk of every file otherwise), so a caller can compute what
/// it needs from a chunk and drop it before the next is parsed.
pub(crate) fn read_folder_in_chunks(
    dir: &Path,
    rules: &ReadRules<'_>,
    mut sink: Option<Sink<'_>>,
) -> Result<Folder, Vec<Diagnostic>> {
    let files = list_documents(dir, rules.run_file).map_err(|d| vec![d])?;
    if let Some(confinement) = rules.confine {
        let outside: Vec<Diagnostic> = files
            .iter()
            .filter(|(f, _)| !confinement.permits(f))
            .map(|(f, _)| outside_project(f, confinement))
            .collect();
        if !outside.is_empty() {
            return Err(outside);
        }
    }
    let size = if sink.is_some() {
        STREAM_CHUNK
    } else {
        files.len().max(1)
    };
    let mut accepting = Accepting::default();
    for chunk in files.chunks(size) {
        let parsed = parse_parallel(chunk, rules);
        let docs = accepting.chunk(chunk, parsed, rules);
        let kept = match sink.as_mut() {
            Some(sink) => sink(docs),
            None => docs,
        };
        accepting.folder.docs.extend(kept);
    }
    let Accepting { folder, errors, .. } = accepting;
    if errors.is_empty() {
        Ok(folder)
    } else {
        Err(errors)
    }
}

/// The documents of a folder read so far, with the problems found and the ids seen (a
/// repo named twice is an error wherever the second file is).
#[derive(Default)]
struct Accepting {
    folder: Folder,
    errors: Vec<Diagnostic>,
    seen: IndexMap<String, PathBuf>,
}

impl Accepting {
    /// The documents of one chunk of parsed files; the chunk's unreadable files and
    /// duplicate ids go to the folder's skipped files and errors.
    fn chunk(
        &mut self,
        files: &[(PathBuf, String)],
        parsed: Vec<Parsed>,
        rules: &ReadRules<'_>,
    ) -> Vec<Document> {
        let mut docs = Vec::new();
        for ((file, fallback), result) in files.iter().zip(parsed) {
            let file = file.clone();
            let (doc, bytes, known) = match result {
                Ok(d) => d,
                Err(e) if rules.skip_unreadable => {
                    self.folder.skipped.push(Skipped { file, reason: e });
                    continue;
                }
                Err(e) => {
                    self.errors.push(e);
                    continue;
                }
            };
            let id = known.unwrap_or_else(|| repo_id(&doc, rules.key).unwrap_or(fallback.clone()));
            if let Some(first) = self.seen.get(&id) {
                self.errors.push(duplicate_repo(&id, first, &file));
                continue;
            }
            self.seen.insert(id.clone(), file.clone());
            let doc = unwrap(doc, rules.unwrap);
            docs.push(Document {
                id,
                doc,
                file,
                bytes,
            });
        }
        docs
    }
}

fn duplicate_repo(id: &str, first: &Path, file: &Path) -> Diagnostic {
    Diagnostic::error(
        Code::DuplicateRepo,
        format!(
            "two files name the repo `{id}`: {} and {}",
            crate::diag::display_path(first),
            crate::diag::display_path(file)
        ),
    )
    .in_file(file)
    .help("each repo must appear once; remove one file or give it its own id")
}

/// One document read again from its file, as a read with `rules` read it (a streaming
/// run reads a repo's ground truth when its results come up).
pub(crate) fn reread(document: &Document, rules: &ReadRules<'_>) -> Result<Document, Diagnostic> {
    let (doc, bytes) = parse_json_file_as(&document.file, rules.json)?;
    let doc = unwrap(doc, rules.unwrap);
    Ok(Document {
        id: document.id.clone(),
        doc,
        file: document.file.clone(),
        bytes,
    })
}

/// A file of a suite's or case's input folder that resolves outside the project (a
/// link pointing out, or a `run_file` that climbs out of its run folder).
pub(crate) fn outside_project(file: &Path, confinement: &Confinement) -> Diagnostic {
    Diagnostic::error(
        Code::InputOutsideProject,
        format!(
            "{} resolves outside the project; it was not read",
            crate::diag::display_path(file)
        ),
    )
    .note(format!(
        "project root: {}",
        crate::diag::display_path(&confinement.root)
    ))
    .help("keep what a suite or its test cases name inside the project, or pass --root / --allow-outside-root (folders named on the command line, --results, --ground-truth, --input, may be anywhere)")
}

/// The first key field holding a non-empty string (or number).
pub(crate) fn repo_id(doc: &Doc, key: &[String]) -> Option<String> {
    key.iter().find_map(|k| match doc.dotted(k) {
        Some(Doc::Str(s)) if !s.is_empty() => Some(s.to_string()),
        Some(Doc::Int(i)) => Some(i.to_string()),
        _ => None,
    })
}

/// Unwraps the first envelope key present whose value is an object.
fn unwrap(doc: Doc, keys: &[String]) -> Doc {
    for k in keys {
        if let Some(inner @ Doc::Object(_)) = doc.field(k) {
            return inner.clone();
        }
    }
    doc
}

/// One file parsed: its document, its size, and its repo id when a read that keeps only
/// some repos already found it.
type Parsed = Result<(Doc, u64, Option<String>), Diagnostic>;

/// Every file parsed, over the cores; with [`ReadRules::keep`], a document not kept is
/// dropped on its worker and comes back as its id alone.
fn parse_parallel(files: &[(PathBuf, String)], rules: &ReadRules<'_>) -> Vec<Parsed> {
    crate::par::map(files, |(f, fallback)| {
        let (doc, bytes) = parse_json_file_as(f, rules.json)?;
        let Some(keep) = rules.keep else {
            return Ok((doc, bytes, None));
        };
        let id = repo_id(&doc, rules.key).unwrap_or_else(|| fallback.clone());
        if keep(&id) {
            Ok((doc, bytes, Some(id)))
        } else {
            // Dropped now, whatever the run does with memory at exit: this is the point.
            drop(doc);
            Ok((Doc::Null, bytes, Some(id)))
        }
    })
}
