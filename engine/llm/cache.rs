//! A content-addressed cache of parsed verdicts on disk.
//!
//! The key is the sha256 of everything that decides a reply: provider, model
//! id, system prompt, rendered prompt, generation parameters and the verdict
//! format, and the endpoint the request went to (so a run pointed at another server
//! never reports the first server's verdicts). One file per entry
//! (`<dir>/<2 hex>/<64 hex>.json`), written to a temporary file and renamed into place
//! by the cache's own writer threads (off the request path: see [`super::writer`]), so
//! a run killed halfway leaves only whole entries and a restart makes none of the
//! finished calls again. Only replies that parsed into a verdict are stored.
//!
//! An entry is checked before it is used: its key and inputs must match the request,
//! its score must lie on the format's scale, its confidence in 0..1, and its stored
//! reply must still read as its stored verdict. A file that fails any check (torn,
//! hand-edited, written by an older reader) is a miss that says why, never a score.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::provider::Usage;
use crate::spec::verdict_format::{NumberKind, VerdictFormat};
use crate::verdict::reply::{CompiledFormat, ParsedVerdict};

use super::writer::{WRITER_THREADS, Writer};

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
    /// Where requests go: the provider's base URL (`cli` for the `claude` CLI).
    pub endpoint: &'a str,
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
    /// The provider's base URL (empty in entries written before endpoints were keyed).
    #[serde(default)]
    pub endpoint: String,
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
            "{} (provider {} at {}, model {}, prompt sha256 {}, system sha256 {}, \
             max_tokens {}, temperature {}, format sha256 {})",
            short(&self.hex),
            s.provider,
            s.endpoint,
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
        // v2: the endpoint joined the inputs; v1 entries are misses.
        let canonical = serde_json::json!({ "v": 2, "inputs": inputs }).to_string();
        let format_json = serde_json::to_string(inputs.format).unwrap_or_default();
        CacheKey {
            hex: sha256_hex(canonical.as_bytes()),
            summary: KeySummary {
                provider: inputs.provider.to_string(),
                endpoint: inputs.endpoint.to_string(),
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

/// What a lookup found.
#[derive(Debug, Clone, PartialEq)]
pub enum Lookup {
    /// A valid entry for the key.
    Hit(Box<CacheEntry>),
    /// Nothing stored (or the mode does not read).
    Miss,
    /// A file is stored under the key but cannot be trusted; the sentence says why.
    Invalid(String),
}

/// Checks a stored entry against the request it would answer: the key and inputs
/// match, the score lies on the format's scale (a whole number unless the format takes
/// decimals), the confidence is in 0..1, sub-scores are finite, and the stored reply
/// still reads as the stored verdict (so an edited verdict, or one read by an older,
/// laxer reader, is never served).
pub fn validate(entry: &CacheEntry, key: &CacheKey, format: &CompiledFormat) -> Result<(), String> {
    if entry.key != key.hex {
        return Err(format!(
            "its key {} is not the key it is stored under ({})",
            short(&entry.key),
            short(&key.hex)
        ));
    }
    let differ = differing(&key.summary, &entry.inputs);
    if !differ.is_empty() {
        return Err(format!(
            "its recorded inputs differ from the request in: {}",
            differ.join(", ")
        ));
    }
    let v = &entry.verdict;
    let [lo, hi] = format.spec().scale;
    if !v.score.is_finite() || v.score < lo || v.score > hi {
        return Err(format!(
            "score {} is outside the scale {lo} to {hi}",
            v.score
        ));
    }
    if format.spec().numbers == NumberKind::Integer && v.score.fract() != 0.0 {
        return Err(format!("score {} is not a whole number", v.score));
    }
    if let Some(c) = v.confidence
        && !(c.is_finite() && (0.0..=1.0).contains(&c))
    {
        return Err(format!("confidence {c} is outside 0..1"));
    }
    if let Some((name, value)) = v.sub_scores.iter().find(|(_, x)| !x.is_finite()) {
        return Err(format!("sub-score `{name}` is {value}, not a number"));
    }
    match format.parse(&entry.reply) {
        Ok(reread) if reread == *v => Ok(()),
        Ok(reread) => Err(format!(
            "its stored reply reads as score {} and confidence {}, not the stored verdict's {} and {}",
            reread.score,
            opt(reread.confidence),
            v.score,
            opt(v.confidence)
        )),
        Err(e) => Err(format!("its stored reply does not read as a verdict: {e}")),
    }
}

fn opt(x: Option<f64>) -> String {
    x.map_or_else(|| "none".to_owned(), |x| x.to_string())
}

/// The on-disk cache.
#[derive(Debug)]
pub struct Cache {
    dir: PathBuf,
    mode: CacheMode,
    /// Started on the first write.
    writer: OnceLock<Writer>,
}

impl Cache {
    /// A cache in `dir` (created on first write).
    pub fn new(dir: impl Into<PathBuf>, mode: CacheMode) -> Cache {
        Cache {
            dir: dir.into(),
            mode,
            writer: OnceLock::new(),
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

    /// The stored entry for `key`, if the mode reads and one exists and holds up:
    /// see [`validate`]. `format` is the format the request's reply is read with.
    pub fn get(&self, key: &CacheKey, format: &CompiledFormat) -> Result<Lookup, CacheError> {
        if !self.mode.reads() {
            return Ok(Lookup::Miss);
        }
        let path = self.path_of(&key.hex);
        let bytes = match std::fs::read(&path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Lookup::Miss),
            Err(source) => return Err(CacheError::Io { path, source }),
        };
        let unusable = |why: String| {
            Ok(Lookup::Invalid(format!(
                "the cache entry {} is unusable: {why}",
                path.display()
            )))
        };
        let entry = match serde_json::from_slice::<CacheEntry>(&bytes) {
            Ok(entry) => entry,
            Err(e) => return unusable(format!("it is not a cache entry ({e})")),
        };
        match validate(&entry, key, format) {
            Ok(()) => Ok(Lookup::Hit(Box::new(entry))),
            Err(why) => unusable(why),
        }
    }

    /// Stores an entry if the mode writes. The entry is queued for the cache's writer
    /// threads (temporary file, fsync, rename: see [`Writer`]), so the caller never
    /// waits on the disk; [`Cache::flush`] waits for every queued entry.
    pub fn put(&self, entry: &CacheEntry) {
        if !self.mode.writes() {
            return;
        }
        let bytes = serde_json::to_vec_pretty(entry).unwrap_or_default();
        let writer = self.writer.get_or_init(|| Writer::new(WRITER_THREADS));
        writer.enqueue(self.path_of(&entry.key), bytes);
    }

    /// Entries this cache has written so far.
    pub fn written(&self) -> u64 {
        self.writer.get().map_or(0, Writer::written)
    }

    /// Waits until every stored entry is on disk, durably; returns the writes that
    /// failed since the last flush.
    pub fn flush(&self) -> Vec<CacheError> {
        self.writer.get().map(Writer::flush).unwrap_or_default()
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
    if a.endpoint != b.endpoint {
        out.push("endpoint");
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
