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
    with_bytes_of(path, |bytes| parse_bytes(path, bytes, mode))
}

/// `f` given the bytes of `path` (inflated for `.json.gz`), read into this thread's
/// buffer.
fn with_bytes_of<T>(
    path: &Path,
    f: impl FnOnce(&[u8]) -> Result<T, Diagnostic>,
) -> Result<T, Diagnostic> {
    READ_BUFFER.with(|buffer| match buffer.try_borrow_mut() {
        Ok(mut bytes) => {
            let done = read_into(path, &mut bytes).and_then(|()| f(&bytes));
            if bytes.capacity() > KEEP_BUFFER_UP_TO {
                *bytes = Vec::new();
            }
            done
        }
        Err(_) => {
            let mut bytes = Vec::new();
            read_into(path, &mut bytes).and_then(|()| f(&bytes))
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

/// Reads every document of `dir`, handing them to `sink` [`STREAM_CHUNK`] files at a time
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
    let mut accepting = Accepting::default();
    match sink.as_mut() {
        None => {
            let parsed = parse_parallel(&files, rules);
            let docs = accepting.chunk(&files, parsed, rules);
            accepting.folder.docs.extend(docs);
        }
        Some(sink) => {
            for_each_chunk_parsed_ahead(&files, rules, |chunk, parsed| {
                let docs = accepting.chunk(chunk, parsed, rules);
                accepting.folder.docs.extend(sink(docs));
            });
        }
    }
    let Accepting { folder, errors, .. } = accepting;
    if errors.is_empty() {
        Ok(folder)
    } else {
        Err(errors)
    }
}

/// `each` given every [`STREAM_CHUNK`] of `files` parsed, in order, while the next chunk
/// is parsed on another thread: a streaming read's computing overlaps its reading, as a
/// whole read's does across files, at the cost of one chunk more in memory (the parser
/// waits until its chunk is taken, so never more than two are held).
fn for_each_chunk_parsed_ahead(
    files: &[(PathBuf, String)],
    rules: &ReadRules<'_>,
    mut each: impl FnMut(&[(PathBuf, String)], Vec<Parsed>),
) {
    let (send, receive) = std::sync::mpsc::sync_channel(0);
    std::thread::scope(|s| {
        s.spawn(move || {
            for chunk in files.chunks(STREAM_CHUNK) {
                // The receiver is gone only when `each` panicked; the scope re-raises it.
                if send.send((chunk, parse_parallel(chunk, rules))).is_err() {
                    break;
                }
            }
        });
        for (chunk, parsed) in receive {
            each(chunk, parsed);
        }
    });
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
        let Some(keep) = rules.keep else {
            let (doc, bytes) = parse_json_file_as(f, rules.json)?;
            return Ok((doc, bytes, None));
        };
        with_bytes_of(f, |bytes| {
            let size = bytes.len() as u64;
            if let Some(id) = skimmed_id(bytes, rules, fallback)
                && !keep(&id)
            {
                return Ok((Doc::Null, size, Some(id)));
            }
            let (doc, size) = parse_bytes(f, bytes, rules.json)?;
            let id = repo_id(&doc, rules.key).unwrap_or_else(|| fallback.clone());
            if keep(&id) {
                Ok((doc, size, Some(id)))
            } else {
                // Dropped now, whatever the run does with memory at exit: this is the point.
                drop(doc);
                Ok((Doc::Null, size, Some(id)))
            }
        })
    })
}

/// The repo id of a strict JSON file's `bytes`, read without building its document
/// ([`crate::load::skim`]); `None` when only a full parse can tell (a lenient input, a
/// file that does not parse cleanly), which then says why.
fn skimmed_id(bytes: &[u8], rules: &ReadRules<'_>, fallback: &str) -> Option<String> {
    if rules.json != JsonMode::Strict {
        return None;
    }
    let part = crate::load::skim::skim(bytes, rules.key)?;
    Some(repo_id(&part, rules.key).unwrap_or_else(|| fallback.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A strict read of one file, as the loader makes it.
    fn parse_json_file(path: &Path) -> Result<(Doc, u64), Diagnostic> {
        parse_json_file_as(path, JsonMode::Strict)
    }

    /// Every document of `dir`, in one chunk.
    fn read_folder(dir: &Path, rules: &ReadRules<'_>) -> Result<Folder, Vec<Diagnostic>> {
        read_folder_in_chunks(dir, rules, None)
    }
    use std::io::Write;

    fn write(path: &Path, text: &str) {
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).expect("create folder");
        }
        std::fs::write(path, text).expect("write file");
    }

    fn write_gz(path: &Path, text: &str) {
        let file = std::fs::File::create(path).expect("create file");
        let mut gz = flate2::write::GzEncoder::new(file, flate2::Compression::fast());
        gz.write_all(text.as_bytes()).expect("write gzip");
        gz.finish().expect("finish gzip");
    }

    fn names(files: &[PathBuf]) -> Vec<String> {
        files
            .iter()
            .map(|f| f.file_name().unwrap().to_string_lossy().into_owned())
            .collect()
    }

    fn rules<'a>(key: &'a [String], unwrap: &'a [String]) -> ReadRules<'a> {
        ReadRules {
            key,
            unwrap,
            json: JsonMode::Strict,
            skip_unreadable: false,
            run_file: None,
            confine: None,
            keep: None,
        }
    }

    fn ids(folder: &Folder) -> Vec<&str> {
        folder.docs.iter().map(|d| d.id.as_str()).collect()
    }

    /// Only `*.json` and `*.json.gz` files count, in name order; dot files, folders
    /// named like documents and other files are left out; a missing folder is an error.
    #[test]
    fn list_json_takes_document_files_in_name_order() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        write(&d.join("b.json"), "{}");
        write(&d.join("a.json"), "{}");
        write_gz(&d.join("c.json.gz"), "{}");
        write(&d.join(".hidden.json"), "{}");
        write(&d.join("notes.txt"), "");
        std::fs::create_dir(d.join("folder.json")).unwrap();
        let files = list_json(d).expect("lists");
        assert_eq!(names(&files), ["a.json", "b.json", "c.json.gz"]);
        let err = list_json(&d.join("missing")).unwrap_err();
        assert_eq!(err.code, Code::MissingPath);
        assert!(err.message.contains("does not exist"), "{}", err.message);
    }

    /// With a run file, each run folder holding it comes after the plain files, named
    /// by its folder; dot folders and runs without the file are left out.
    #[test]
    fn list_documents_adds_run_folders_holding_the_run_file() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        write(&d.join("a.json"), "{}");
        write(&d.join("r2/output.json"), "{}");
        write(&d.join("r1/output.json"), "{}");
        write(&d.join(".old/output.json"), "{}");
        write(&d.join("r3/other.json"), "{}");
        let listed = list_documents(d, Some("output.json")).expect("lists");
        let got: Vec<(String, &str)> = listed
            .iter()
            .map(|(f, id)| {
                let rel = f.strip_prefix(d).unwrap().to_string_lossy().into_owned();
                (rel, id.as_str())
            })
            .collect();
        assert_eq!(
            got,
            [
                ("a.json".to_owned(), "a"),
                ("r1/output.json".to_owned(), "r1"),
                ("r2/output.json".to_owned(), "r2"),
            ]
        );
        assert_eq!(list_documents(d, None).expect("lists").len(), 1);
    }

    /// A file parses to its document and its size in bytes; a file that cannot be read
    /// is an I/O error, not a parse error.
    #[test]
    fn a_file_parses_to_its_document_and_size() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("a.json");
        write(&file, r#"{"n": 7}"#);
        let (doc, size) = parse_json_file(&file).expect("parses");
        assert_eq!(doc.field("n"), Some(&Doc::Int(7)));
        assert_eq!(size, 8);
        let err = parse_json_file(&dir.path().join("none.json")).unwrap_err();
        assert_eq!(err.code, Code::Io);
        assert!(err.message.contains("cannot read file"), "{}", err.message);
    }

    /// A syntax error is located; a strict read of a file with `NaN` suggests the
    /// lenient mode, and a file without one does not; the lenient read locates its own
    /// errors too.
    #[test]
    fn parse_errors_are_located_and_nan_suggests_lenient_mode() {
        let dir = tempfile::tempdir().unwrap();
        let nan = dir.path().join("nan.json");
        write(&nan, "{\"a\": NaN}");
        let err = parse_json_file_as(&nan, JsonMode::Strict).unwrap_err();
        assert_eq!(err.code, Code::JsonSyntax);
        assert!(
            err.help.as_deref().unwrap_or("").contains("json: lenient"),
            "{err:?}"
        );
        let (doc, _) = parse_json_file_as(&nan, JsonMode::Lenient).expect("lenient reads NaN");
        assert!(matches!(doc.field("a"), Some(Doc::Float(x)) if x.is_nan()));

        let bad = dir.path().join("bad.json");
        write(&bad, "{\n  \"a\": }");
        for mode in [JsonMode::Strict, JsonMode::Lenient] {
            let err = parse_json_file_as(&bad, mode).unwrap_err();
            assert_eq!(err.code, Code::JsonSyntax, "{mode:?}");
            let help = err.help.as_deref().unwrap_or("");
            assert!(help.contains("skip_unreadable"), "{mode:?}: {help}");
            assert!(!help.contains("json: lenient"), "{mode:?}: {help}");
            let span = err.span.expect("located");
            assert_eq!((span.line, span.column), (2, 8), "{mode:?}");
            assert!(err.unquoted, "{mode:?}");
        }
        // A duplicate key next to a NaN is a duplicate key, not a NaN problem.
        let dup_nan = dir.path().join("dup.json");
        write(&dup_nan, "{\"a\": 1, \"a\": 2, \"b\": \"NaN\"}");
        let err = parse_json_file_as(&dup_nan, JsonMode::Strict).unwrap_err();
        assert_eq!(err.code, Code::DuplicateKey);
        assert_eq!(
            err.help.as_deref(),
            Some("JSON readers disagree on which one counts; keep one")
        );
    }

    /// A duplicate key is named and pointed at where it appears the second time.
    #[test]
    fn a_duplicate_key_is_pointed_at() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("dup.json");
        let text = "{\"ab\": 1,\n \"ab\": 2}";
        write(&file, text);
        let err = parse_json_file(&file).unwrap_err();
        assert_eq!(err.code, Code::DuplicateKey);
        assert_eq!(err.message, "key `ab` appears twice in the same object");
        let span = err.span.expect("located");
        assert_eq!(&text[span.start..span.end], "\"ab\"");
        assert_eq!(span.start, 11);
        assert_eq!(span.line, 2);
    }

    /// A read buffer is kept for the next file up to its limit, and given back past it.
    #[test]
    fn the_read_buffer_is_kept_up_to_its_limit() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("a.json");
        write(&file, "{}");
        let capacity_after_parse = |capacity: usize| {
            READ_BUFFER.with(|b| *b.borrow_mut() = Vec::with_capacity(capacity));
            parse_json_file(&file).expect("parses");
            READ_BUFFER.with(|b| b.borrow().capacity())
        };
        assert_eq!(KEEP_BUFFER_UP_TO, 64 * 1024 * 1024);
        assert_eq!(capacity_after_parse(64), 64);
        assert_eq!(capacity_after_parse(KEEP_BUFFER_UP_TO), KEEP_BUFFER_UP_TO);
        assert_eq!(capacity_after_parse(KEEP_BUFFER_UP_TO + 1), 0);
    }

    /// A folder read gives every document keyed by its first present key field (a
    /// string, or a number), else its file stem, with the first object envelope
    /// unwrapped.
    #[test]
    fn a_folder_read_keys_and_unwraps_documents() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        write(
            &d.join("1.json"),
            r#"{"repo": "", "id": 7, "result": {"n": 1}}"#,
        );
        write(
            &d.join("2.json"),
            r#"{"repo": "two", "data": 3, "result": {"n": 2}}"#,
        );
        write(&d.join("3.json"), r#"{"data": {"n": 3}}"#);
        let key = vec!["repo".to_owned(), "id".to_owned()];
        let unwrap = vec!["data".to_owned(), "result".to_owned()];
        let folder = read_folder(d, &rules(&key, &unwrap)).expect("reads");
        assert_eq!(ids(&folder), ["7", "two", "3"]);
        let n: Vec<Option<&Doc>> = folder.docs.iter().map(|d| d.doc.field("n")).collect();
        assert_eq!(
            n,
            [Some(&Doc::Int(1)), Some(&Doc::Int(2)), Some(&Doc::Int(3))]
        );
        assert_eq!(folder.docs[2].bytes, 18);
        let plain = read_folder(d, &rules(&[], &[])).expect("reads");
        assert_eq!(ids(&plain), ["1", "2", "3"]);
        // Without envelope keys nothing is unwrapped.
        assert!(plain.docs[0].doc.field("result").is_some());
    }

    /// `repo_id`: the first key field holding a non-empty string or an integer.
    #[test]
    fn repo_id_is_the_first_non_empty_key_field() {
        let key = vec!["a.name".to_owned(), "id".to_owned()];
        let doc = |v: serde_json::Value| Doc::from_json(&v);
        let d = doc(serde_json::json!({"a": {"name": "x"}, "id": 1}));
        assert_eq!(repo_id(&d, &key).as_deref(), Some("x"));
        let d = doc(serde_json::json!({"a": {"name": ""}, "id": 12}));
        assert_eq!(repo_id(&d, &key).as_deref(), Some("12"));
        let d = doc(serde_json::json!({"a": {"name": ""}, "id": true}));
        assert_eq!(repo_id(&d, &key), None);
    }

    /// Two files naming one repo are an error naming both; unreadable files stop the
    /// read, or with `skip_unreadable` are listed and the rest is read.
    #[test]
    fn duplicates_and_unreadable_files_are_reported() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        write(&d.join("a.json"), r#"{"repo": "r"}"#);
        write(&d.join("b.json"), r#"{"repo": "r"}"#);
        let key = vec!["repo".to_owned()];
        let errs = read_folder(d, &rules(&key, &[])).unwrap_err();
        assert_eq!(errs.len(), 1);
        assert_eq!(errs[0].code, Code::DuplicateRepo);
        assert!(
            errs[0].message.contains("two files name the repo `r`"),
            "{}",
            errs[0].message
        );
        assert!(errs[0].message.contains("a.json") && errs[0].message.contains("b.json"));

        std::fs::remove_file(d.join("b.json")).unwrap();
        write(&d.join("c.json"), "{");
        let errs = read_folder(d, &rules(&key, &[])).unwrap_err();
        assert_eq!(errs.len(), 1);
        assert_eq!(errs[0].code, Code::JsonSyntax);
        let skipping = ReadRules {
            skip_unreadable: true,
            ..rules(&key, &[])
        };
        let folder = read_folder(d, &skipping).expect("skips");
        assert_eq!(ids(&folder), ["r"]);
        assert_eq!(folder.skipped.len(), 1);
        assert!(folder.skipped[0].file.ends_with("c.json"));
        assert_eq!(folder.skipped[0].reason.code, Code::JsonSyntax);
    }

    /// A confined read refuses files that resolve outside the project, naming them, and
    /// reads those inside.
    #[test]
    fn a_confined_read_refuses_files_outside_the_project() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("project");
        write(&root.join("in/a.json"), "{}");
        write(&dir.path().join("out/b.json"), "{}");
        let confine = Confinement::for_suite(
            &root,
            &crate::load::confine::RootOptions {
                root: Some(root.clone()),
                allow_outside: false,
            },
        );
        let confined = ReadRules {
            confine: Some(&confine),
            ..rules(&[], &[])
        };
        let folder = read_folder(&root.join("in"), &confined).expect("inside is read");
        assert_eq!(ids(&folder), ["a"]);
        let errs = read_folder(&dir.path().join("out"), &confined).unwrap_err();
        assert_eq!(errs.len(), 1);
        assert_eq!(errs[0].code, Code::InputOutsideProject);
        assert!(
            errs[0].message.contains("resolves outside the project"),
            "{}",
            errs[0].message
        );
        assert!(errs[0].message.contains("b.json"), "{}", errs[0].message);
    }

    /// A document read again is the same document, unwrapped the same way.
    #[test]
    fn reread_gives_the_document_again() {
        let dir = tempfile::tempdir().unwrap();
        write(&dir.path().join("a.json"), r#"{"result": {"n": 5}}"#);
        let unwrap = vec!["result".to_owned()];
        let r = rules(&[], &unwrap);
        let folder = read_folder(dir.path(), &r).expect("reads");
        let again = reread(&folder.docs[0], &r).expect("rereads");
        assert_eq!(again.id, "a");
        assert_eq!(again.doc, folder.docs[0].doc);
        assert_eq!(again.doc.field("n"), Some(&Doc::Int(5)));
        assert_eq!(again.bytes, folder.docs[0].bytes);
        assert_eq!(again.file, folder.docs[0].file);
    }

    /// A read that keeps some repos drops the others' content but keeps their id.
    #[test]
    fn a_read_keeping_some_repos_drops_the_others_content() {
        let dir = tempfile::tempdir().unwrap();
        write(&dir.path().join("a.json"), r#"{"n": 1}"#);
        write(&dir.path().join("b.json"), r#"{"n": 2}"#);
        let keep = |id: &str| id == "b";
        let r = ReadRules {
            keep: Some(&keep),
            ..rules(&[], &[])
        };
        let folder = read_folder(dir.path(), &r).expect("reads");
        assert_eq!(ids(&folder), ["a", "b"]);
        assert_eq!(folder.docs[0].doc, Doc::Null);
        assert_eq!(folder.docs[1].doc.field("n"), Some(&Doc::Int(2)));
    }
}
