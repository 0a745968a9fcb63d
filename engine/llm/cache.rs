//! A content-addressed cache of parsed verdicts on disk.
//!
//! The key is the sha256 of everything that decides a reply: provider, model
//! id, system prompt, rendered prompt, generation parameters and the verdict
//! format. One file per entry (`<dir>/<2 hex>/<64 hex>.json`), written to a
//! temporary file and renamed into place, so a run killed halfway leaves only
//! whole entries and a restart makes none of the finished calls again. Only
//! replies that parsed into a verdict are stored.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::provider::Usage;
use crate::spec::verdict_format::VerdictFormat;
use crate::verdict::reply::ParsedVerdict;

/// How the cache is used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CacheMode {
    /// Read hits, write new verdicts.
    #[default]
    On,
    /// Neither read nor write.
    Off,
    /// Read hits, never write (a shared or checked-in cache).
    ReadOnly,
    /// Ignore existing entries, call again and overwrite them.
    Refresh,
    /// Only read; a miss is an error and no call is made (reproduce a run offline).
    Replay,
}

impl CacheMode {
    /// Whether lookups happen.
    pub fn reads(self) -> bool {
        matches!(
            self,
            CacheMode::On | CacheMode::ReadOnly | CacheMode::Replay
        )
    }

    /// Whether new verdicts are stored.
    pub fn writes(self) -> bool {
        matches!(self, CacheMode::On | CacheMode::Refresh)
    }
}

/// Cache I/O failures (a corrupt entry is a miss, not an error).
#[derive(Debug, thiserror::Error)]
pub enum CacheError {
    /// Reading or writing the cache directory failed.
    #[error("cache {path}: {source}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
}

/// Everything that decides a reply.
#[derive(Debug, Clone, Serialize)]
pub struct KeyInputs<'a> {
    /// Provider kind name (`anthropic`, `openai`, `claude-cli`).
    pub provider: &'a str,
    /// Resolved model id.
    pub model: &'a str,
    /// System prompt.
    pub system: Option<&'a str>,
    /// Rendered prompt.
    pub prompt: &'a str,
    /// Output token limit.
    pub max_tokens: u32,
    /// Sampling temperature.
    pub temperature: f32,
    /// How the reply is read.
    pub format: &'a VerdictFormat,
    /// Which ask of `--repeat N` this is; 0, the only ask without repeats, is left out of
    /// the key so that entries stored before repeats existed stay valid.
    #[serde(skip_serializing_if = "is_zero")]
    pub repeat: u32,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// The key's inputs in short form, stored in each entry to explain misses.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KeySummary {
    /// Provider kind name.
    pub provider: String,
    /// Resolved model id.
    pub model: String,
    /// sha256 of the rendered prompt.
    pub prompt_sha256: String,
    /// sha256 of the system prompt (empty string when none).
    pub system_sha256: String,
    /// Output token limit.
    pub max_tokens: u32,
    /// Sampling temperature.
    pub temperature: f32,
    /// sha256 of the verdict format's canonical JSON.
    pub format_sha256: String,
    /// The repeat index (`--repeat`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub repeat: u32,
}

/// A computed cache key.
#[derive(Debug, Clone, PartialEq)]
pub struct CacheKey {
    /// 64 hex digits.
    pub hex: String,
    /// The inputs, summarised.
    pub summary: KeySummary,
}

impl std::fmt::Display for CacheKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = &self.summary;
        write!(
            f,
            "{} (provider {}, model {}, prompt sha256 {}, system sha256 {}, max_tokens {}, \
             temperature {}, format sha256 {})",
            short(&self.hex),
            s.provider,
            s.model,
            short(&s.prompt_sha256),
            if s.system_sha256.is_empty() {
                "-"
            } else {
                short(&s.system_sha256)
            },
            s.max_tokens,
            s.temperature,
            short(&s.format_sha256)
        )
    }
}

fn short(hex: &str) -> &str {
    hex.get(..12).unwrap_or(hex)
}

fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

impl CacheKey {
    /// Hashes the inputs (a versioned, length-delimited JSON encoding, so no two
    /// different input sets can produce the same byte string).
    pub fn new(inputs: &KeyInputs<'_>) -> CacheKey {
        let canonical = serde_json::json!({ "v": 1, "inputs": inputs }).to_string();
        let format_json = serde_json::to_string(inputs.format).unwrap_or_default();
        CacheKey {
            hex: sha256_hex(canonical.as_bytes()),
            summary: KeySummary {
                provider: inputs.provider.to_string(),
                model: inputs.model.to_string(),
                prompt_sha256: sha256_hex(inputs.prompt.as_bytes()),
                system_sha256: inputs
                    .system
                    .map(|s| sha256_hex(s.as_bytes()))
                    .unwrap_or_default(),
                max_tokens: inputs.max_tokens,
                temperature: inputs.temperature,
                format_sha256: sha256_hex(format_json.as_bytes()),
                repeat: inputs.repeat,
            },
        }
    }
}

/// One stored verdict.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CacheEntry {
    /// The key (64 hex digits).
    pub key: String,
    /// What the key was computed from.
    pub inputs: KeySummary,
    /// The reply text that parsed.
    pub reply: String,
    /// The verdict read from it.
    pub verdict: ParsedVerdict,
    /// Tokens the original call(s) used.
    pub usage: Usage,
    /// Whether the verdict needed the re-ask.
    pub reasked: bool,
    /// When it was stored (RFC 3339).
    pub created: String,
}

/// The on-disk cache.
#[derive(Debug)]
pub struct Cache {
    dir: PathBuf,
    mode: CacheMode,
}

static TMP_COUNTER: AtomicU64 = AtomicU64::new(0);

impl Cache {
    /// A cache in `dir` (created on first write).
    pub fn new(dir: impl Into<PathBuf>, mode: CacheMode) -> Cache {
        Cache {
            dir: dir.into(),
            mode,
        }
    }

    /// The mode.
    pub fn mode(&self) -> CacheMode {
        self.mode
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn path_of(&self, hex: &str) -> PathBuf {
        self.dir
            .join(hex.get(..2).unwrap_or("xx"))
            .join(format!("{hex}.json"))
    }

    /// The stored entry for `key`, if the mode reads and one exists.
    pub fn get(&self, key: &CacheKey) -> Result<Option<CacheEntry>, CacheError> {
        if !self.mode.reads() {
            return Ok(None);
        }
        let path = self.path_of(&key.hex);
        match std::fs::read(&path) {
            // A torn or hand-edited file is treated as absent; the next write replaces it.
            Ok(bytes) => Ok(serde_json::from_slice::<CacheEntry>(&bytes)
                .ok()
                .filter(|e| e.key == key.hex)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(source) => Err(CacheError::Io { path, source }),
        }
    }

    /// Stores an entry if the mode writes: temp file in the same directory, then rename.
    pub fn put(&self, entry: &CacheEntry) -> Result<(), CacheError> {
        if !self.mode.writes() {
            return Ok(());
        }
        let path = self.path_of(&entry.key);
        let dir = path.parent().unwrap_or(&self.dir).to_path_buf();
        std::fs::create_dir_all(&dir).map_err(|source| CacheError::Io {
            path: dir.clone(),
            source,
        })?;
        let tmp = dir.join(format!(
            ".{}.tmp-{}-{}",
            entry.key,
            std::process::id(),
            TMP_COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        let bytes = serde_json::to_vec_pretty(entry).unwrap_or_default();
        let write = || -> std::io::Result<()> {
            let mut file = std::fs::File::create(&tmp)?;
            file.write_all(&bytes)?;
            file.sync_all()?;
            std::fs::rename(&tmp, &path)
        };
        write().map_err(|source| {
            let _ = std::fs::remove_file(&tmp);
            CacheError::Io {
                path: path.clone(),
                source,
            }
        })
    }

    /// Says why `key` is not in the cache: the stored entry whose inputs share
    /// the most with the key, and which inputs differ.
    pub fn explain_miss(&self, key: &CacheKey) -> String {
        let mut best: Option<(usize, Vec<&'static str>)> = None;
        for entry in self.entries() {
            let diff = differing(&key.summary, &entry.inputs);
            if best.as_ref().is_none_or(|(n, _)| diff.len() < *n) {
                best = Some((diff.len(), diff));
            }
        }
        match best {
            None => format!(
                "no entry for key {key}; the cache at {} is empty",
                self.dir.display()
            ),
            Some((_, diff)) if diff.is_empty() => {
                format!(
                    "no entry for key {key}; an entry with the same inputs exists under another key (cache format changed?)"
                )
            }
            Some((_, diff)) => format!(
                "no entry for key {key}; the nearest entry differs in: {}",
                diff.join(", ")
            ),
        }
    }

    fn entries(&self) -> impl Iterator<Item = CacheEntry> {
        let shards = std::fs::read_dir(&self.dir).into_iter().flatten().flatten();
        shards
            .filter_map(|shard| std::fs::read_dir(shard.path()).ok())
            .flat_map(|files| files.flatten())
            .filter(|f| f.path().extension().is_some_and(|e| e == "json"))
            .filter_map(|f| std::fs::read(f.path()).ok())
            .filter_map(|bytes| serde_json::from_slice::<CacheEntry>(&bytes).ok())
    }
}

fn differing(a: &KeySummary, b: &KeySummary) -> Vec<&'static str> {
    let mut out = Vec::new();
    if a.provider != b.provider {
        out.push("provider");
    }
    if a.model != b.model {
        out.push("model");
    }
    if a.prompt_sha256 != b.prompt_sha256 {
        out.push("prompt");
    }
    if a.system_sha256 != b.system_sha256 {
        out.push("system prompt");
    }
    if a.max_tokens != b.max_tokens {
        out.push("max_tokens");
    }
    if a.temperature != b.temperature {
        out.push("temperature");
    }
    if a.format_sha256 != b.format_sha256 {
        out.push("verdict format");
    }
    if a.repeat != b.repeat {
        out.push("repeat index");
    }
    out
}
