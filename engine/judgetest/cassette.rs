//! Cassettes: a model's recorded reply per rendered prompt, stored with a test case
//! (`cases/<case>/cassettes/<dimension>.json`), so LLM mode runs in tests without a
//! provider.
//!
//! Each reply is stored with the sha256 of the prompt (and system prompt) it answered.
//! Before a case runs, every prompt the run would send is rendered and looked up: a
//! reply recorded for another prompt is a stale cassette, reported as such and never
//! replaced by a call. Replies that match are placed in a scratch cache under the key the
//! executor computes, and the case runs through the same path as `caldera run --replay`.

use std::path::{Path, PathBuf};

use minijinja::Environment;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::diag::{Code, Diagnostic};
use crate::llm::cache::{Cache, CacheEntry, CacheMode, Lookup};
use crate::load::inputs::Inputs;
use crate::load::suite::Suite;
use crate::provider::ProviderKind;
use crate::run::llm::{LlmOptions, PlannedCall, cache_key, model_table, plan_calls, run_llm_on};
use crate::verdict::combine::Unit;

/// The recorded replies of one judge in one case (`caldera schema cassette`).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(title = "caldera cassette")]
pub(crate) struct CassetteFile {
    /// The judge's dimension.
    pub judge: String,
    /// One entry per call: per unit and model.
    pub calls: Vec<Cassette>,
}

/// One recorded reply.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Cassette {
    /// The model as the case names it (alias or id).
    pub model: String,
    /// The repo, for per-repo judges.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repo: Option<String>,
    /// sha256 of the rendered prompt the reply answers.
    pub prompt_sha256: String,
    /// sha256 of the system prompt sent with it.
    pub system_sha256: String,
    /// Who answered: the provider kind and the full model id.
    pub recorded_with: String,
    /// The reply, as the model wrote it.
    pub reply: String,
}

/// How `--record` reaches a provider.
#[derive(Debug, Clone)]
pub(crate) struct RecordOptions {
    /// `--provider` (automatic from the environment when `None`).
    pub provider: Option<ProviderKind>,
    /// Per-request timeout.
    pub timeout: std::time::Duration,
}

/// A private folder under the system temp directory, removed when dropped. Its name is
/// random and it is created new (never an existing folder) with mode 0700: a folder
/// someone else made at a predictable name beforehand is never used.
#[derive(Debug)]
pub(crate) struct ScratchDir(tempfile::TempDir);

impl ScratchDir {
    /// A fresh, empty folder of this user's only.
    pub(crate) fn new(what: &str) -> std::io::Result<ScratchDir> {
        let prefix = format!("caldera-{what}-");
        let mut builder = tempfile::Builder::new();
        builder.prefix(&prefix);
        // Only this user may list or plant files in it (it holds the replies replayed).
        #[cfg(unix)]
        builder.permissions(std::os::unix::fs::PermissionsExt::from_mode(0o700));
        builder.tempdir().map(ScratchDir)
    }

    /// The folder.
    pub(crate) fn path(&self) -> &Path {
        self.0.path()
    }
}

fn sha256_hex(text: &str) -> String {
    hex::encode(Sha256::digest(text.as_bytes()))
}

/// The cassette file of a judge in a case.
pub(crate) fn file_of(case_dir: &Path, dimension: &str) -> PathBuf {
    case_dir.join("cassettes").join(format!("{dimension}.json"))
}

/// Reads a cassette file; `Ok(None)` when there is none.
pub(crate) fn load(path: &Path) -> Result<Option<CassetteFile>, String> {
    match std::fs::read_to_string(path) {
        Ok(text) => serde_json::from_str(&text).map(Some).map_err(|e| {
            format!(
                "cassette {} cannot be read: {e}",
                crate::diag::display_path(path)
            )
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(format!(
            "cassette {} cannot be read: {e}",
            crate::diag::display_path(path)
        )),
    }
}

/// [`load`], for a cassette that resolves inside the suite's project (links followed).
fn load_confined(path: &Path, suite: &Suite) -> Result<Option<CassetteFile>, String> {
    if std::fs::symlink_metadata(path).is_ok() && !suite.confinement.permits(path) {
        return Err(format!(
            "cassette {} resolves outside the project; it was not read",
            crate::diag::display_path(path)
        ));
    }
    load(path)
}

/// Places every recorded reply that answers the prompt the run would send now into the
/// cache at `cache_dir`. Returns the problems per judge index: a missing cassette, a
/// stale one (the prompt changed since it was recorded), a reply that cannot be read.
pub(crate) fn seed(
    env: &Environment<'static>,
    suite: &Suite,
    units: &[Vec<Unit>],
    models: &[String],
    case_dir: &Path,
    cache_dir: &Path,
) -> Vec<(usize, String)> {
    let (planned, _) = plan_calls(env, suite, units, models, 1);
    let table = model_table(suite);
    // The endpoint a replay run keys its lookups by.
    let endpoint = crate::provider::Provider::endpoint_from_env(ProviderKind::Anthropic);
    let cache = Cache::new(cache_dir, CacheMode::On);
    let mut files: indexmap::IndexMap<usize, Result<Option<CassetteFile>, String>> =
        indexmap::IndexMap::new();
    let mut issues = Vec::new();
    for call in &planned {
        let dimension = &suite.judges[call.judge].spec.dimension;
        let file = files
            .entry(call.judge)
            .or_insert_with(|| load_confined(&file_of(case_dir, dimension), suite));
        let found = match file {
            Err(e) => Err(e.clone()),
            Ok(file) => find(file.as_ref(), call),
        };
        let problem = found.and_then(|c| {
            let key = cache_key(ProviderKind::Anthropic, &endpoint, &table, &call.job);
            let verdict =
                call.job.format.parse_reply(&c.reply, false).map_err(|e| {
                    format!("the cassette reply of {} cannot be read: {e}", who(call))
                })?;
            cache.put(&CacheEntry {
                key: key.hex,
                inputs: key.summary,
                reply: c.reply.clone(),
                verdict,
                usage: crate::provider::Usage::default(),
                reasked: false,
                created: chrono::Utc::now().to_rfc3339(),
            });
            Ok(())
        });
        if let Err(message) = problem {
            issues.push((call.judge, message));
        }
    }
    // Entries are written by a background writer: on disk before the replay reads them.
    for e in cache.flush() {
        issues.push((
            0,
            format!("a cassette could not be placed in the cache: {e}"),
        ));
    }
    issues
}

/// The cassette answering `call`, or why there is none that may be used.
fn find<'a>(file: Option<&'a CassetteFile>, call: &PlannedCall) -> Result<&'a Cassette, String> {
    let request = &call.job.request;
    let recorded = file.and_then(|f| {
        f.calls
            .iter()
            .find(|c| c.model == request.model && c.repo == call.job.item)
    });
    let Some(c) = recorded else {
        return Err(format!("no cassette for {}", who(call)));
    };
    let prompt = sha256_hex(&request.prompt);
    let system = sha256_hex(request.system.as_deref().unwrap_or_default());
    if c.prompt_sha256 != prompt || c.system_sha256 != system {
        let what = if c.prompt_sha256 != prompt {
            "prompt"
        } else {
            "system prompt"
        };
        return Err(format!(
            "stale cassette for {}: the {what} changed since the reply was recorded \
             (recorded for sha256 {}, the run sends {}); it was not sent to any model",
            who(call),
            short(if what == "prompt" {
                &c.prompt_sha256
            } else {
                &c.system_sha256
            }),
            short(if what == "prompt" { &prompt } else { &system })
        ));
    }
    Ok(c)
}

fn who(call: &PlannedCall) -> String {
    match &call.job.item {
        Some(repo) => format!("model `{}` on repo `{repo}`", call.job.request.model),
        None => format!("model `{}`", call.job.request.model),
    }
}

fn short(hex: &str) -> &str {
    hex.get(..12).unwrap_or(hex)
}

/// `--record`: asks the provider every call of the case (no cache is read) and rewrites
/// the cassettes of every judge that has a prompt. A call that ends without a readable
/// reply is reported and leaves no cassette.
pub(crate) fn record(
    env: &Environment<'static>,
    suite: &Suite,
    inputs: &Inputs,
    units: &[Vec<Unit>],
    case_dir: &Path,
    models: &[String],
    options: &RecordOptions,
) -> Result<(), Vec<Diagnostic>> {
    let io = |e: std::io::Error| vec![Diagnostic::error(Code::Io, e.to_string())];
    let scratch = ScratchDir::new("record").map_err(io)?;
    let opts = LlmOptions {
        provider: options.provider,
        models: models.to_vec(),
        cache: CacheMode::Refresh,
        cache_dir: scratch.path().to_path_buf(),
        progress: false,
        log: None,
        timeout: options.timeout,
        ..LlmOptions::default()
    };
    let result = run_llm_on(env, suite, inputs, &opts)?;
    let kind: ProviderKind = result
        .provider
        .as_deref()
        .and_then(|p| serde_json::from_value(serde_json::Value::from(p)).ok())
        .unwrap_or(ProviderKind::Anthropic);
    let (planned, _) = plan_calls(env, suite, units, models, 1);
    let table = model_table(suite);
    let stored = Cache::new(scratch.path(), CacheMode::On);
    let endpoint = crate::provider::Provider::endpoint_from_env(kind);
    let mut files: indexmap::IndexMap<usize, CassetteFile> = indexmap::IndexMap::new();
    for call in &planned {
        let key = cache_key(kind, &endpoint, &table, &call.job);
        let dimension = &suite.judges[call.judge].spec.dimension;
        let file = files.entry(call.judge).or_insert_with(|| CassetteFile {
            judge: dimension.clone(),
            calls: Vec::new(),
        });
        match stored.get(&key, &call.job.format) {
            Ok(Lookup::Hit(entry)) => file.calls.push(Cassette {
                model: call.job.request.model.clone(),
                repo: call.job.item.clone(),
                prompt_sha256: sha256_hex(&call.job.request.prompt),
                system_sha256: sha256_hex(call.job.request.system.as_deref().unwrap_or_default()),
                recorded_with: format!("{} {}", kind.name(), key.summary.model),
                reply: entry.reply,
            }),
            _ => log::warn!(
                "{dimension}: no readable reply from {} to record; see the judge's \
                 verdict for why",
                who(call)
            ),
        }
    }
    for (j, file) in files {
        let path = file_of(case_dir, &suite.judges[j].spec.dimension);
        write(&path, &file).map_err(io)?;
        log::info!("recorded {}", crate::diag::display_path(&path));
    }
    Ok(())
}

/// Writes a cassette through the atomic writer: a link planted where the cassette goes is
/// refused, never followed.
fn write(path: &Path, file: &CassetteFile) -> std::io::Result<()> {
    let mut text = serde_json::to_string_pretty(file).map_err(std::io::Error::other)?;
    text.push('\n');
    crate::outfile::write_atomic(path, text.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    #[test]
    fn scratch_folders_are_private_and_fresh() {
        use std::os::unix::fs::PermissionsExt;
        let a = ScratchDir::new("replay").unwrap();
        let b = ScratchDir::new("replay").unwrap();
        assert_ne!(a.path(), b.path());
        for dir in [&a, &b] {
            let mode = std::fs::metadata(dir.path()).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o700, "{}", dir.path().display());
            assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
        }
        let gone = a.path().to_path_buf();
        drop(a);
        assert!(!gone.exists(), "removed when dropped");
    }
}
