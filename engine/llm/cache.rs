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
//! So is anything at an entry's path that is not a regular file of a sane size (a FIFO,
//! a link, a device: see [`super::bounded`]), which is refused without being read.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::provider::{MAX_REPLY_BYTES, Usage};
use crate::reply::{CompiledFormat, ParsedVerdict};
use crate::spec::verdict_format::{NumberKind, VerdictFormat};

use super::bounded::{Refusal, read_regular_file};
pub use super::writer::CacheError;
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
    /// Thinking asked for (a judge's `reasoning:`); left out of the key when there is
    /// none, so entries stored before reasoning existed stay valid.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<crate::provider::Reasoning>,
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

/// The largest cache entry read: a reply is at most [`MAX_REPLY_BYTES`], stored twice
/// (the reply, and the verdict read from it) with JSON escapes (up to six bytes for one);
/// a file above it is no entry this cache wrote, and is refused unread.
pub const MAX_ENTRY_BYTES: u64 = 16 * MAX_REPLY_BYTES as u64;

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
        let unusable = |why: String| {
            Ok(Lookup::Invalid(format!(
                "the cache entry {} is unusable: {why}",
                path.display()
            )))
        };
        let bytes = match read_regular_file(&path, MAX_ENTRY_BYTES) {
            Ok(bytes) => bytes,
            Err(Refusal::Missing) => return Ok(Lookup::Miss),
            Err(Refusal::Io(source)) => return Err(CacheError::Io { path, source }),
            Err(refusal) => return unusable(refusal.to_string()),
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
            .filter_map(|f| read_regular_file(&f.path(), MAX_ENTRY_BYTES).ok())
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::verdict_format::VerdictFormat;

    /// The base request's key: sha256 of
    /// `{"v":2,"inputs":{"provider":"anthropic","endpoint":"https://api.example","model":"m1",
    /// "system":null,"prompt":"p","max_tokens":100,"temperature":0.0,
    /// "format":{"kind":"json","scale":[1.0,5.0],"numbers":"integer"}}}`.
    const BASE_HEX: &str = "5213c6300b9f1d59f377049181203ee443f52d6ea35c1ae87c6eab29e540b3b2";
    /// The same with `"repeat":1` after the format.
    const REPEAT_HEX: &str = "f5853262fc7e8036a4ef8a2c138c4f2d592cdb557f1682a6f8783151ec4d79e9";
    /// sha256 of `p`, of `s`, and of the default format's JSON.
    const P_SHA: &str = "148de9c5a7a44d19e56cd9ae1a554bf67847afb0c58f6e12fa29ac7ddfca9940";
    const S_SHA: &str = "043a718774c572bd8a25adbeb1bfcd5c0256ae11cecf9f9c3f925d0e52beaf89";
    const FORMAT_SHA: &str = "31a04b1cca0f4fbdd2fec9baf2b88fb9f9c9c4f835adbd5c79c3fb09d1adf913";
    const REPLY: &str =
        r#"{"score": 4, "confidence": 0.8, "reasoning": "ok", "sub_scores": {"a": 2}}"#;

    fn inputs(format: &VerdictFormat) -> KeyInputs<'_> {
        KeyInputs {
            provider: "anthropic",
            endpoint: "https://api.example",
            model: "m1",
            system: None,
            prompt: "p",
            max_tokens: 100,
            temperature: 0.0,
            format,
            repeat: 0,
            reasoning: None,
        }
    }

    fn base_key() -> CacheKey {
        CacheKey::new(&inputs(&VerdictFormat::default()))
    }

    fn compiled(spec: &VerdictFormat) -> CompiledFormat {
        CompiledFormat::new(spec).unwrap()
    }

    /// A valid entry for `key`, its verdict read from `reply`.
    fn entry_for(key: &CacheKey, format: &CompiledFormat, reply: &str) -> CacheEntry {
        CacheEntry {
            key: key.hex.clone(),
            inputs: key.summary.clone(),
            reply: reply.to_owned(),
            verdict: format.parse(reply).unwrap(),
            usage: Usage {
                input_tokens: 10,
                output_tokens: 5,
                reasoning_tokens: 0,
                cache_write_tokens: 0,
                cache_read_tokens: 0,
            },
            reasked: false,
            created: "2024-01-01T00:00:00Z".to_owned(),
        }
    }

    fn base_entry() -> (CacheKey, CompiledFormat, CacheEntry) {
        let key = base_key();
        let format = compiled(&VerdictFormat::default());
        let entry = entry_for(&key, &format, REPLY);
        (key, format, entry)
    }

    /// The base summary with one input changed, for each input, with the name
    /// `differing` gives it.
    fn one_change_each() -> Vec<(&'static str, CacheKey)> {
        let f = VerdictFormat::default();
        let ten = VerdictFormat {
            scale: [1.0, 10.0],
            ..VerdictFormat::default()
        };
        let base = inputs(&f);
        vec![
            (
                "provider",
                CacheKey::new(&KeyInputs {
                    provider: "openai",
                    ..base.clone()
                }),
            ),
            (
                "endpoint",
                CacheKey::new(&KeyInputs {
                    endpoint: "http://localhost:8080",
                    ..base.clone()
                }),
            ),
            (
                "model",
                CacheKey::new(&KeyInputs {
                    model: "m2",
                    ..base.clone()
                }),
            ),
            (
                "prompt",
                CacheKey::new(&KeyInputs {
                    prompt: "q",
                    ..base.clone()
                }),
            ),
            (
                "system prompt",
                CacheKey::new(&KeyInputs {
                    system: Some("s"),
                    ..base.clone()
                }),
            ),
            (
                "max_tokens",
                CacheKey::new(&KeyInputs {
                    max_tokens: 101,
                    ..base.clone()
                }),
            ),
            (
                "temperature",
                CacheKey::new(&KeyInputs {
                    temperature: 0.5,
                    ..base.clone()
                }),
            ),
            (
                "verdict format",
                CacheKey::new(&KeyInputs {
                    format: &ten,
                    ..base.clone()
                }),
            ),
            (
                "repeat index",
                CacheKey::new(&KeyInputs {
                    repeat: 1,
                    ..base.clone()
                }),
            ),
        ]
    }

    #[test]
    fn the_key_is_the_sha256_of_the_v2_encoding() {
        let key = base_key();
        assert_eq!(key.hex, BASE_HEX);
        assert_eq!(
            key.summary,
            KeySummary {
                provider: "anthropic".to_owned(),
                endpoint: "https://api.example".to_owned(),
                model: "m1".to_owned(),
                prompt_sha256: P_SHA.to_owned(),
                system_sha256: String::new(),
                max_tokens: 100,
                temperature: 0.0,
                format_sha256: FORMAT_SHA.to_owned(),
                repeat: 0,
            }
        );
        // Repeat 0 is left out of the encoding; any other repeat is in it.
        let f = VerdictFormat::default();
        let repeat = CacheKey::new(&KeyInputs {
            repeat: 1,
            ..inputs(&f)
        });
        assert_eq!(repeat.hex, REPEAT_HEX);
        assert_eq!(repeat.summary.repeat, 1);
        let system = CacheKey::new(&KeyInputs {
            system: Some("s"),
            ..inputs(&f)
        });
        assert_eq!(system.summary.system_sha256, S_SHA);
    }

    #[test]
    fn equal_inputs_give_equal_keys_and_each_input_changes_the_key() {
        assert_eq!(base_key(), base_key());
        let mut seen = std::collections::HashSet::new();
        seen.insert(base_key().hex);
        for (name, key) in one_change_each() {
            assert!(seen.insert(key.hex), "{name} did not change the key");
        }
        // Another system prompt than `s` changes it too.
        let f = VerdictFormat::default();
        let other = CacheKey::new(&KeyInputs {
            system: Some("t"),
            ..inputs(&f)
        });
        assert!(seen.insert(other.hex));
    }

    #[test]
    fn differing_names_each_input_that_differs() {
        let base = base_key().summary;
        assert!(differing(&base, &base).is_empty());
        let mut all = base.clone();
        for (name, key) in one_change_each() {
            assert_eq!(differing(&base, &key.summary), vec![name]);
            assert_eq!(differing(&key.summary, &base), vec![name]);
            let s = key.summary;
            match name {
                "provider" => all.provider = s.provider,
                "endpoint" => all.endpoint = s.endpoint,
                "model" => all.model = s.model,
                "prompt" => all.prompt_sha256 = s.prompt_sha256,
                "system prompt" => all.system_sha256 = s.system_sha256,
                "max_tokens" => all.max_tokens = s.max_tokens,
                "temperature" => all.temperature = s.temperature,
                "verdict format" => all.format_sha256 = s.format_sha256,
                _ => all.repeat = s.repeat,
            }
        }
        assert_eq!(
            differing(&base, &all),
            vec![
                "provider",
                "endpoint",
                "model",
                "prompt",
                "system prompt",
                "max_tokens",
                "temperature",
                "verdict format",
                "repeat index"
            ]
        );
    }

    #[test]
    fn a_key_displays_its_short_hashes() {
        assert_eq!(
            base_key().to_string(),
            "5213c6300b9f (provider anthropic at https://api.example, model m1, prompt sha256 \
             148de9c5a7a4, system sha256 -, max_tokens 100, temperature 0, format sha256 \
             31a04b1cca0f)"
        );
        let f = VerdictFormat::default();
        let system = CacheKey::new(&KeyInputs {
            system: Some("s"),
            temperature: 0.5,
            ..inputs(&f)
        });
        let shown = system.to_string();
        assert!(shown.contains("system sha256 043a718774c5,"), "{shown}");
        assert!(shown.contains("temperature 0.5,"), "{shown}");
    }

    #[test]
    fn modes_read_and_write_as_documented() {
        let table = [
            (CacheMode::On, true, true),
            (CacheMode::Off, false, false),
            (CacheMode::ReadOnly, true, false),
            (CacheMode::Refresh, false, true),
            (CacheMode::Replay, true, false),
        ];
        for (mode, reads, writes) in table {
            assert_eq!((mode.reads(), mode.writes()), (reads, writes), "{mode:?}");
        }
    }

    #[test]
    fn a_sound_entry_validates() {
        let (key, format, entry) = base_entry();
        assert_eq!(validate(&entry, &key, &format), Ok(()));
        // The ends of the scale and of 0..1 are inside.
        for reply in [
            r#"{"score": 1, "confidence": 0}"#,
            r#"{"score": 5, "confidence": 1}"#,
            r#"{"score": 3}"#,
        ] {
            let entry = entry_for(&key, &format, reply);
            assert_eq!(validate(&entry, &key, &format), Ok(()), "{reply}");
        }
        // A decimal format takes a fractional score.
        let decimal = VerdictFormat {
            numbers: NumberKind::Decimal,
            ..VerdictFormat::default()
        };
        let key = CacheKey::new(&inputs(&decimal));
        let format = compiled(&decimal);
        let entry = entry_for(&key, &format, r#"{"score": 3.5}"#);
        assert_eq!(validate(&entry, &key, &format), Ok(()));
    }

    #[test]
    fn an_entry_under_another_key_is_refused() {
        let (key, format, mut entry) = base_entry();
        entry.key = "abc".to_owned();
        assert_eq!(
            validate(&entry, &key, &format),
            Err("its key abc is not the key it is stored under (5213c6300b9f)".to_owned())
        );
    }

    #[test]
    fn an_entry_recorded_for_other_inputs_is_refused() {
        let (key, format, mut entry) = base_entry();
        entry.inputs.model = "m2".to_owned();
        entry.inputs.max_tokens = 1;
        assert_eq!(
            validate(&entry, &key, &format),
            Err("its recorded inputs differ from the request in: model, max_tokens".to_owned())
        );
    }

    #[test]
    fn a_score_off_the_scale_is_refused() {
        let (key, format, entry) = base_entry();
        for (score, why) in [
            (6.0, "score 6 is outside the scale 1 to 5"),
            (0.0, "score 0 is outside the scale 1 to 5"),
            (5.5, "score 5.5 is outside the scale 1 to 5"),
            (0.5, "score 0.5 is outside the scale 1 to 5"),
            (f64::NAN, "score NaN is outside the scale 1 to 5"),
            (f64::INFINITY, "score inf is outside the scale 1 to 5"),
        ] {
            let mut e = entry.clone();
            e.verdict.score = score;
            assert_eq!(validate(&e, &key, &format), Err(why.to_owned()));
        }
        let mut e = entry;
        e.verdict.score = 3.5;
        assert_eq!(
            validate(&e, &key, &format),
            Err("score 3.5 is not a whole number".to_owned())
        );
    }

    #[test]
    fn a_confidence_outside_0_to_1_is_refused() {
        let (key, format, entry) = base_entry();
        for (c, why) in [
            (1.5, "confidence 1.5 is outside 0..1"),
            (-0.1, "confidence -0.1 is outside 0..1"),
            (f64::NAN, "confidence NaN is outside 0..1"),
            (f64::INFINITY, "confidence inf is outside 0..1"),
        ] {
            let mut e = entry.clone();
            e.verdict.confidence = Some(c);
            assert_eq!(validate(&e, &key, &format), Err(why.to_owned()));
        }
    }

    #[test]
    fn a_sub_score_that_is_not_a_number_is_refused() {
        let (key, format, entry) = base_entry();
        let mut e = entry.clone();
        e.verdict.sub_scores.insert("a".to_owned(), f64::NAN);
        assert_eq!(
            validate(&e, &key, &format),
            Err("sub-score `a` is NaN, not a number".to_owned())
        );
        let mut e = entry;
        e.verdict
            .sub_scores
            .insert("b".to_owned(), f64::NEG_INFINITY);
        assert_eq!(
            validate(&e, &key, &format),
            Err("sub-score `b` is -inf, not a number".to_owned())
        );
    }

    #[test]
    fn a_verdict_its_reply_does_not_read_as_is_refused() {
        let (key, format, entry) = base_entry();
        let mut e = entry.clone();
        e.verdict.score = 3.0;
        assert_eq!(
            validate(&e, &key, &format),
            Err(
                "its stored reply reads as score 4 and confidence 0.8, not the stored \
                 verdict's 3 and 0.8"
                    .to_owned()
            )
        );
        let mut e = entry.clone();
        e.verdict.confidence = None;
        assert_eq!(
            validate(&e, &key, &format),
            Err(
                "its stored reply reads as score 4 and confidence 0.8, not the stored \
                 verdict's 4 and none"
                    .to_owned()
            )
        );
        // Any field counts, not only score and confidence.
        let mut e = entry.clone();
        e.verdict.reasoning = "edited".to_owned();
        assert!(validate(&e, &key, &format).is_err());
        let mut e = entry;
        e.reply = "no verdict here".to_owned();
        let why = validate(&e, &key, &format).unwrap_err();
        assert!(
            why.starts_with("its stored reply does not read as a verdict: "),
            "{why}"
        );
    }

    #[test]
    fn put_then_get_round_trips_through_the_sharded_file() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::new(dir.path(), CacheMode::On);
        assert_eq!((cache.mode(), cache.dir()), (CacheMode::On, dir.path()));
        let (key, format, entry) = base_entry();
        assert_eq!(cache.get(&key, &format).unwrap(), Lookup::Miss);
        assert_eq!(cache.written(), 0);
        cache.put(&entry);
        assert!(cache.flush().is_empty());
        assert_eq!(cache.written(), 1);
        assert!(
            dir.path()
                .join("52")
                .join(format!("{BASE_HEX}.json"))
                .is_file()
        );
        assert_eq!(
            cache.get(&key, &format).unwrap(),
            Lookup::Hit(Box::new(entry))
        );
        // The repeat index is stored and read back.
        let f = VerdictFormat::default();
        let key = CacheKey::new(&KeyInputs {
            repeat: 1,
            ..inputs(&f)
        });
        let entry = entry_for(&key, &format, REPLY);
        cache.put(&entry);
        assert!(cache.flush().is_empty());
        assert_eq!(cache.written(), 2);
        assert!(
            dir.path()
                .join("f5")
                .join(format!("{REPEAT_HEX}.json"))
                .is_file()
        );
        assert_eq!(
            cache.get(&key, &format).unwrap(),
            Lookup::Hit(Box::new(entry))
        );
    }

    #[test]
    fn each_mode_reads_and_writes_as_it_says() {
        let dir = tempfile::tempdir().unwrap();
        let (key, format, entry) = base_entry();
        let hit = Lookup::Hit(Box::new(entry.clone()));
        for mode in [CacheMode::Off, CacheMode::ReadOnly, CacheMode::Replay] {
            let cache = Cache::new(dir.path(), mode);
            assert_eq!(cache.mode(), mode);
            cache.put(&entry);
            assert!(cache.flush().is_empty());
            assert_eq!(cache.written(), 0, "{mode:?}");
            assert!(!dir.path().join("52").exists(), "{mode:?} wrote");
        }
        let refresh = Cache::new(dir.path(), CacheMode::Refresh);
        refresh.put(&entry);
        assert!(refresh.flush().is_empty());
        assert_eq!(refresh.written(), 1);
        // Refresh ignores what is stored; the others that read find it.
        assert_eq!(refresh.get(&key, &format).unwrap(), Lookup::Miss);
        let off = Cache::new(dir.path(), CacheMode::Off);
        assert_eq!(off.get(&key, &format).unwrap(), Lookup::Miss);
        for mode in [CacheMode::On, CacheMode::ReadOnly, CacheMode::Replay] {
            let cache = Cache::new(dir.path(), mode);
            assert_eq!(cache.get(&key, &format).unwrap(), hit, "{mode:?}");
        }
    }

    #[test]
    fn an_unusable_file_is_an_invalid_lookup_that_says_why() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::new(dir.path(), CacheMode::On);
        let (key, format, entry) = base_entry();
        let path = dir.path().join("52").join(format!("{BASE_HEX}.json"));
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, "{\"key\": \"torn").unwrap();
        let Lookup::Invalid(why) = cache.get(&key, &format).unwrap() else {
            panic!("a torn file was used");
        };
        assert!(why.starts_with("the cache entry "), "{why}");
        assert!(why.contains(&path.display().to_string()), "{why}");
        assert!(why.contains(": it is not a cache entry ("), "{why}");
        // A whole entry that fails a check.
        let mut bad = entry;
        bad.verdict.score = 9.0;
        std::fs::write(&path, serde_json::to_vec(&bad).unwrap()).unwrap();
        assert_eq!(
            cache.get(&key, &format).unwrap(),
            Lookup::Invalid(format!(
                "the cache entry {} is unusable: score 9 is outside the scale 1 to 5",
                path.display()
            ))
        );
        // A folder in its place is refused as no entry, unread.
        std::fs::remove_file(&path).unwrap();
        std::fs::create_dir(&path).unwrap();
        assert_eq!(
            cache.get(&key, &format).unwrap(),
            Lookup::Invalid(format!(
                "the cache entry {} is unusable: it is a folder, not a regular file; it was not read",
                path.display()
            ))
        );
    }

    /// Looks `key` up on another thread, failing the test (not hanging it) when the
    /// lookup does not return within ten seconds.
    fn get_within_seconds(cache: Cache, key: CacheKey, format: CompiledFormat) -> Lookup {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(cache.get(&key, &format));
        });
        rx.recv_timeout(std::time::Duration::from_secs(10))
            .expect("the lookup returned")
            .expect("a refusal is a lookup, not an error")
    }

    #[cfg(unix)]
    #[test]
    fn a_fifo_a_device_link_or_a_huge_file_as_an_entry_is_a_refused_miss_not_a_hang() {
        let dir = tempfile::tempdir().unwrap();
        let (key, format, _) = base_entry();
        let path = dir.path().join("52").join(format!("{BASE_HEX}.json"));
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let lookup = || {
            get_within_seconds(
                Cache::new(dir.path(), CacheMode::On),
                key.clone(),
                format.clone(),
            )
        };
        let refused = |lookup: Lookup, what: &str| {
            let Lookup::Invalid(why) = lookup else {
                panic!("{what} was used: {lookup:?}");
            };
            assert!(why.contains(&path.display().to_string()), "{why}");
            assert!(why.contains(what), "{why}");
        };
        // A FIFO: opening it for reading would wait for a writer that never comes.
        rustix::fs::mkfifoat(rustix::fs::CWD, &path, rustix::fs::Mode::RUSR).unwrap();
        refused(lookup(), "it is a FIFO, not a regular file");
        // A regular file far above any entry: refused by its size, not read.
        std::fs::remove_file(&path).unwrap();
        std::fs::File::create(&path)
            .unwrap()
            .set_len(100 << 20)
            .unwrap();
        refused(lookup(), "-byte limit; it was not read");
        // A link to /dev/zero: read, it would fill memory.
        std::fs::remove_file(&path).unwrap();
        std::os::unix::fs::symlink("/dev/zero", &path).unwrap();
        refused(lookup(), "it is a symbolic link, not a regular file");
    }

    #[test]
    fn a_failed_write_is_reported_by_flush() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("file");
        std::fs::write(&file, "").unwrap();
        let cache = Cache::new(file.join("cache"), CacheMode::On);
        cache.put(&base_entry().2);
        assert_eq!(cache.flush().len(), 1);
        assert_eq!(cache.written(), 0);
        assert!(cache.flush().is_empty());
    }

    #[test]
    fn explain_miss_names_the_nearest_entry_and_what_differs() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::new(dir.path(), CacheMode::On);
        let key = base_key();
        assert_eq!(
            cache.explain_miss(&key),
            format!(
                "no entry for key {key}; the cache at {} is empty",
                dir.path().display()
            )
        );
        let format = compiled(&VerdictFormat::default());
        let f = VerdictFormat::default();
        let far = CacheKey::new(&KeyInputs {
            model: "m2",
            prompt: "q",
            max_tokens: 1,
            ..inputs(&f)
        });
        let near = CacheKey::new(&KeyInputs {
            model: "m2",
            ..inputs(&f)
        });
        let middle = CacheKey::new(&KeyInputs {
            model: "m2",
            repeat: 3,
            ..inputs(&f)
        });
        for k in [&far, &near, &middle] {
            cache.put(&entry_for(k, &format, REPLY));
        }
        assert!(cache.flush().is_empty());
        // Files that are not entries are passed over.
        let shard = dir.path().join("00");
        std::fs::create_dir_all(&shard).unwrap();
        std::fs::write(shard.join("junk.json"), "not json").unwrap();
        let mut same = entry_for(&key, &format, REPLY);
        same.key = "00".repeat(32);
        std::fs::write(
            shard.join("leftover.tmp"),
            serde_json::to_vec(&same).unwrap(),
        )
        .unwrap();
        assert_eq!(
            cache.explain_miss(&key),
            format!("no entry for key {key}; the nearest entry differs in: model")
        );
        // An entry with the very same inputs under another key.
        cache.put(&same);
        assert!(cache.flush().is_empty());
        assert_eq!(
            cache.explain_miss(&key),
            format!(
                "no entry for key {key}; an entry with the same inputs exists under another \
                 key (cache format changed?)"
            )
        );
    }

    #[test]
    fn explain_miss_breaks_ties_by_the_first_entry_found() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::new(dir.path(), CacheMode::On);
        let format = compiled(&VerdictFormat::default());
        let f = VerdictFormat::default();
        let key = base_key();
        // Two entries, each one input away from the request.
        for k in [
            CacheKey::new(&KeyInputs {
                model: "m2",
                ..inputs(&f)
            }),
            CacheKey::new(&KeyInputs {
                prompt: "q",
                ..inputs(&f)
            }),
        ] {
            cache.put(&entry_for(&k, &format, REPLY));
        }
        assert!(cache.flush().is_empty());
        let first = cache.entries().next().unwrap();
        let named = differing(&key.summary, &first.inputs);
        assert_eq!(named.len(), 1);
        assert_eq!(
            cache.explain_miss(&key),
            format!(
                "no entry for key {key}; the nearest entry differs in: {}",
                named[0]
            )
        );
    }
}
