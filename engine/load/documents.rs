//! Reads analysis results and ground truth: every non-dot `*.json` of a folder, in file
//! name order, keyed by the first present key field, else the file stem.
//!
//! Strict where the original framework was lenient: a file that is not valid JSON is an
//! error naming file, line and column (not silently skipped), and two files naming the
//! same repo is an error naming both.

use std::path::{Path, PathBuf};

use indexmap::IndexMap;

use crate::diag::{Code, Diagnostic, Span};
use crate::doc::Doc;

/// One loaded document.
#[derive(Debug, Clone)]
pub struct Document {
    /// The repo id it names.
    pub id: String,
    /// The (unwrapped) content.
    pub doc: Doc,
    /// Where it came from.
    pub file: PathBuf,
    /// The envelope key that was unwrapped, if any.
    pub unwrapped: Option<String>,
    /// Its size in bytes.
    pub bytes: u64,
}

/// How to read a folder of documents.
#[derive(Debug, Clone)]
pub struct ReadRules<'a> {
    /// Candidate fields naming the repo (dotted paths).
    pub key: &'a [String],
    /// Envelope keys to unwrap, in order.
    pub unwrap: &'a [String],
}

/// Lists the `*.json` files of `dir` (dot files ignored), sorted by name.
pub fn list_json(dir: &Path) -> Result<Vec<PathBuf>, Diagnostic> {
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
                && p.extension().is_some_and(|x| x == "json")
                && !p
                    .file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with('.'))
        })
        .collect();
    files.sort();
    Ok(files)
}

/// Parses one JSON file into a `Doc`, with a located error.
pub fn parse_json_file(path: &Path) -> Result<(Doc, u64), Diagnostic> {
    READ_BUFFER.with(|buffer| match buffer.try_borrow_mut() {
        Ok(mut bytes) => {
            let parsed = read_into(path, &mut bytes).and_then(|()| parse_bytes(path, &bytes));
            if bytes.capacity() > KEEP_BUFFER_UP_TO {
                *bytes = Vec::new();
            }
            parsed
        }
        Err(_) => {
            let mut bytes = Vec::new();
            read_into(path, &mut bytes).and_then(|()| parse_bytes(path, &bytes))
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
    bytes.clear();
    std::fs::File::open(path)
        .and_then(|mut f| f.read_to_end(bytes))
        .map(|_| ())
        .map_err(|e| Diagnostic::error(Code::Io, format!("cannot read file: {e}")).in_file(path))
}

fn parse_bytes(path: &Path, bytes: &[u8]) -> Result<(Doc, u64), Diagnostic> {
    let size = bytes.len() as u64;
    match serde_json::from_slice::<Doc>(bytes) {
        Ok(doc) => Ok((doc, size)),
        Err(e) => {
            let text = String::from_utf8_lossy(bytes);
            let span =
                (e.line() > 0).then(|| Span::at_line_col(&text, e.line(), e.column().max(1), 1));
            let msg = e.to_string();
            let msg = msg.split(" at line ").next().unwrap_or(&msg).to_owned();
            Err(
                Diagnostic::error(Code::JsonSyntax, format!("not valid JSON: {msg}"))
                    .in_file(path)
                    .at(span)
                    .help("fix or remove the file; caldera does not skip unreadable inputs"),
            )
        }
    }
}

/// Reads every document of `dir`. Parsing runs on all cores; errors from every file are
/// collected.
pub fn read_folder(dir: &Path, rules: &ReadRules<'_>) -> Result<Vec<Document>, Vec<Diagnostic>> {
    let files = list_json(dir).map_err(|d| vec![d])?;
    let parsed = parse_parallel(&files);
    let mut docs: Vec<Document> = Vec::with_capacity(files.len());
    let mut errors = Vec::new();
    let mut seen: IndexMap<String, PathBuf> = IndexMap::new();
    for (file, result) in files.into_iter().zip(parsed) {
        let (doc, bytes) = match result {
            Ok(d) => d,
            Err(e) => {
                errors.push(e);
                continue;
            }
        };
        let id = repo_id(&doc, rules.key).unwrap_or_else(|| {
            file.file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default()
        });
        if let Some(first) = seen.get(&id) {
            errors.push(
                Diagnostic::error(
                    Code::DuplicateRepo,
                    format!(
                        "two files name the repo `{id}`: {} and {}",
                        crate::diag::display_path(first),
                        crate::diag::display_path(&file)
                    ),
                )
                .in_file(&file)
                .help("each repo must appear once; remove one file or give it its own id"),
            );
            continue;
        }
        seen.insert(id.clone(), file.clone());
        let (doc, unwrapped) = unwrap(doc, rules.unwrap);
        docs.push(Document {
            id,
            doc,
            file,
            unwrapped,
            bytes,
        });
    }
    if errors.is_empty() {
        Ok(docs)
    } else {
        Err(errors)
    }
}

/// The first key field holding a non-empty string (or number).
pub fn repo_id(doc: &Doc, key: &[String]) -> Option<String> {
    key.iter().find_map(|k| match doc.dotted(k) {
        Some(Doc::Str(s)) if !s.is_empty() => Some(s.to_string()),
        Some(Doc::Int(i)) => Some(i.to_string()),
        _ => None,
    })
}

/// Unwraps the first envelope key present whose value is an object.
fn unwrap(doc: Doc, keys: &[String]) -> (Doc, Option<String>) {
    for k in keys {
        if let Some(inner @ Doc::Object(_)) = doc.field(k) {
            return (inner.clone(), Some(k.clone()));
        }
    }
    (doc, None)
}

fn parse_parallel(files: &[PathBuf]) -> Vec<Result<(Doc, u64), Diagnostic>> {
    let workers = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(files.len().max(1));
    if workers <= 1 {
        return files.iter().map(|f| parse_json_file(f)).collect();
    }
    let next = std::sync::atomic::AtomicUsize::new(0);
    let mut slots: Vec<Option<Result<(Doc, u64), Diagnostic>>> = Vec::new();
    slots.resize_with(files.len(), || None);
    let results = std::sync::Mutex::new(slots);
    std::thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some(file) = files.get(i) else { break };
                    let r = parse_json_file(file);
                    if let Ok(mut slots) = results.lock() {
                        slots[i] = Some(r);
                    }
                }
            });
        }
    });
    results
        .into_inner()
        .unwrap_or_default()
        .into_iter()
        .zip(files)
        .map(|(r, f)| {
            r.unwrap_or_else(|| Err(Diagnostic::error(Code::Io, "file was not read").in_file(f)))
        })
        .collect()
}
