//! LLM providers: the Anthropic Messages API, OpenAI-compatible chat completions,
//! and the `claude` CLI as a fallback; and the two batch APIs (`batch_api`).
//!
//! A provider turns one [`ProviderRequest`] into one [`ProviderReply`]; retries,
//! caching, budgets and parsing live above it (`crate::llm`). Enum dispatch keeps
//! the set closed and lets `Debug` be written by hand so that no key ever prints.

pub mod anthropic;
pub mod batch_api;
pub mod batches;
pub mod claude_cli;
pub mod doctor;
pub mod limiter;
pub mod models;
pub mod openai;
pub mod openai_batches;
pub mod retry;

use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Serialize};

pub use anthropic::AnthropicProvider;
pub use claude_cli::ClaudeCliProvider;
pub use openai::OpenAiProvider;

/// One message of a conversation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Message {
    /// `user` or `assistant`.
    pub role: Role,
    /// The text.
    pub content: String,
}

/// Who said a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The engine.
    User,
    /// The model (used for the re-ask, which quotes the unreadable reply).
    Assistant,
}

/// What a provider is asked: a resolved model id and a conversation.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProviderRequest {
    /// Full model id for the APIs; for the CLI, the alias as the user wrote it.
    pub model: String,
    /// The system prompt, if any.
    pub system: Option<String>,
    /// The conversation; the first message is the rendered prompt.
    pub messages: Vec<Message>,
    /// Upper bound on output tokens.
    pub max_tokens: u32,
    /// Sampling temperature (judges use 0 for repeatability), for the APIs that take
    /// one: the Anthropic Messages API no longer declares it (and its current models
    /// refuse any value but the default), and OpenAI reasoning models refuse it, so
    /// `None` there.
    pub temperature: Option<f32>,
    /// The verdict's JSON Schema, for a schema-bound judge on a provider that binds
    /// replies (`transport: schema`); `None` asks for text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub response_schema: Option<std::sync::Arc<serde_json::Value>>,
    /// Thinking before the answer, for a judge with `reasoning:` on a model that takes
    /// it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<Reasoning>,
    /// The prompt prefix the provider may cache, for a prompt asked again within the
    /// cache's lifetime (`--repeat`, a re-ask).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache: Option<CacheHint>,
}

/// What of a request a provider may keep in its prompt cache: the system prompt and
/// the first `prefix_bytes` bytes of the first message (the whole prompt, when the same
/// prompt is asked again).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct CacheHint {
    /// Where the cacheable part of the first message ends (a character boundary).
    pub prefix_bytes: usize,
}

impl CacheHint {
    /// The first message split at the hint: the cacheable prefix and the rest (empty
    /// when the whole prompt is cached). `None` when the hint does not fall inside it.
    pub fn split<'t>(&self, text: &'t str) -> Option<(&'t str, &'t str)> {
        (self.prefix_bytes > 0 && text.is_char_boundary(self.prefix_bytes))
            .then(|| text.split_at(self.prefix_bytes))
    }
}

/// Thinking asked of a model: an effort level, or (Anthropic) a token budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reasoning {
    /// How hard to think.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub effort: Option<crate::spec::reasoning::Effort>,
    /// Manual extended thinking with this budget (Anthropic); adaptive thinking without.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub budget_tokens: Option<u32>,
}

/// Token counts reported by the provider.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Prompt tokens.
    pub input_tokens: u64,
    /// Completion tokens, thinking and reasoning included (they are billed as output).
    pub output_tokens: u64,
    /// Of `output_tokens`, those the model spent reasoning, when the provider says
    /// (OpenAI `completion_tokens_details.reasoning_tokens`; Anthropic does not itemise
    /// thinking).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub reasoning_tokens: u64,
    /// Input tokens written to the provider's prompt cache (billed above the input price;
    /// not in `input_tokens`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cache_write_tokens: u64,
    /// Input tokens read from the provider's prompt cache (billed at a fraction of the
    /// input price; not in `input_tokens`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cache_read_tokens: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// A provider's answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProviderReply {
    /// The text of the reply (all text blocks joined).
    pub text: String,
    /// Token usage; zero when the provider does not report it (the CLI).
    pub usage: Usage,
    /// The model's thinking, when it shows it (Anthropic thinking blocks): kept for the
    /// interaction log, never read as the verdict.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking: Option<String>,
    /// The provider stopped at `max_tokens` (`stop_reason: max_tokens`, `finish_reason: length`).
    pub truncated: bool,
    /// The model id the provider says answered, when it says.
    pub model: Option<String>,
}

/// Why a call failed. Messages never contain API keys.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ProviderError {
    /// A non-success HTTP status.
    #[error("HTTP {status} from {provider}: {message}")]
    Http {
        /// Which provider.
        provider: &'static str,
        /// The status code.
        status: u16,
        /// The server's error message (or the start of its body).
        message: String,
        /// What `retry-after-ms` / `retry-after` asked for.
        retry_after: Option<Duration>,
    },
    /// No answer within the per-request timeout.
    #[error("{provider} did not answer within {}s", after.as_secs_f64())]
    Timeout {
        /// Which provider.
        provider: &'static str,
        /// The timeout.
        after: Duration,
    },
    /// Could not connect, or the connection dropped.
    #[error("connection to {provider} failed: {message}")]
    Connection {
        /// Which provider.
        provider: &'static str,
        /// What happened.
        message: String,
    },
    /// A success status with a body we cannot read.
    #[error("unexpected response from {provider}: {message}")]
    InvalidResponse {
        /// Which provider.
        provider: &'static str,
        /// What was wrong.
        message: String,
    },
    /// The `claude` CLI failed.
    #[error("`claude` CLI failed: {0}")]
    Cli(String),
    /// The provider is not configured (no key, no binary).
    #[error("{0}")]
    Config(String),
}

impl ProviderError {
    /// Whether trying again may help: rate limits, overload, server errors,
    /// timeouts and dropped connections. Client errors (400, 401, 404) never.
    pub fn is_retryable(&self) -> bool {
        match self {
            ProviderError::Http { status, .. } => retryable_status(*status),
            ProviderError::Timeout { .. } | ProviderError::Connection { .. } => true,
            ProviderError::InvalidResponse { .. }
            | ProviderError::Cli(_)
            | ProviderError::Config(_) => false,
        }
    }

    /// The delay the server asked for, if any.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            ProviderError::Http { retry_after, .. } => *retry_after,
            _ => None,
        }
    }
}

/// Whether an answer with this HTTP status may succeed when asked again: rate limits,
/// overload, server errors and timeouts; client errors (400, 401, 404) never.
pub(crate) fn retryable_status(status: u16) -> bool {
    matches!(status, 408 | 409 | 429 | 529) || (500..=599).contains(&status)
}

/// A secret (an API key). Its `Debug` and `Display` print `***`.
#[derive(Clone)]
pub struct Secret {
    value: String,
    /// The key as it may be written encoded (see [`Secret::redact`]), made on first use.
    encoded: std::sync::OnceLock<Option<regex::Regex>>,
}

impl PartialEq for Secret {
    fn eq(&self, other: &Self) -> bool {
        self.value == other.value
    }
}

impl Eq for Secret {}

impl Secret {
    /// Wraps a key.
    pub fn new(value: impl Into<String>) -> Self {
        Secret {
            value: value.into(),
            encoded: std::sync::OnceLock::new(),
        }
    }

    /// The key, for a request header only.
    pub fn expose(&self) -> &str {
        &self.value
    }

    /// Replaces any occurrence of the key in `text` (servers sometimes echo it), also
    /// where any of its characters is written as a JSON escape (`\u0073`, `\/`) or
    /// percent-encoded (`%73`): text that is decoded later (a verdict's JSON, a URL)
    /// would otherwise turn into the key after redaction. Redact before decoding and
    /// before cutting a text short, so no part of the key survives a cut.
    pub fn redact(&self, text: &str) -> String {
        if self.value.len() < 4 {
            return text.to_string();
        }
        let plain = text.replace(&self.value, "[redacted]");
        if !plain.contains(['\\', '%']) {
            return plain;
        }
        match self.encoded.get_or_init(|| encoded_pattern(&self.value)) {
            Some(pattern) => pattern.replace_all(&plain, "[redacted]").into_owned(),
            None => plain,
        }
    }
}

/// A pattern matching `key` with any of its ASCII characters written as a JSON `\u`
/// escape (hex in either case), as `\/` for a slash, or percent-encoded.
fn encoded_pattern(key: &str) -> Option<regex::Regex> {
    let hex_digit = |d: char| {
        if d.is_ascii_digit() {
            d.to_string()
        } else {
            format!("[{}{}]", d.to_ascii_lowercase(), d.to_ascii_uppercase())
        }
    };
    let mut pattern = String::new();
    for c in key.chars() {
        let literal = regex::escape(&c.to_string());
        if !c.is_ascii() {
            pattern.push_str(&literal);
            continue;
        }
        let hex: String = format!("{:02x}", c as u32).chars().map(hex_digit).collect();
        pattern.push_str(&format!("(?:{literal}|\\\\u00{hex}|%{hex}"));
        if c == '/' {
            pattern.push_str("|\\\\/");
        }
        pattern.push(')');
    }
    regex::Regex::new(&pattern).ok()
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
    }
}

/// Which kind of provider; the names users type on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ProviderKind {
    /// Anthropic Messages API.
    Anthropic,
    /// An OpenAI-compatible chat completions endpoint.
    Openai,
    /// The `claude` command-line tool.
    ClaudeCli,
}

impl ProviderKind {
    /// The stable name used in cache keys, logs and `doctor`.
    pub fn name(self) -> &'static str {
        match self {
            ProviderKind::Anthropic => "anthropic",
            ProviderKind::Openai => "openai",
            ProviderKind::ClaudeCli => "claude-cli",
        }
    }
}

/// The endpoint name of the `claude` CLI in cache keys.
pub const CLI_ENDPOINT: &str = "cli";

/// A configured provider.
#[derive(Debug, Clone)]
pub enum Provider {
    /// Anthropic Messages API.
    Anthropic(AnthropicProvider),
    /// OpenAI-compatible chat completions.
    Openai(OpenAiProvider),
    /// The `claude` CLI.
    ClaudeCli(ClaudeCliProvider),
}

impl Provider {
    /// Sends one request (no retries here; see [`retry`]).
    pub async fn complete(
        &self,
        request: &ProviderRequest,
    ) -> Result<ProviderReply, ProviderError> {
        match self {
            Provider::Anthropic(p) => p.complete(request).await,
            Provider::Openai(p) => p.complete(request).await,
            Provider::ClaudeCli(p) => p.complete(request).await,
        }
    }

    /// Which kind this is.
    pub fn kind(&self) -> ProviderKind {
        match self {
            Provider::Anthropic(_) => ProviderKind::Anthropic,
            Provider::Openai(_) => ProviderKind::Openai,
            Provider::ClaudeCli(_) => ProviderKind::ClaudeCli,
        }
    }

    /// Where requests go, for logs and cache keys: the base URL of an API, `cli` for the
    /// `claude` CLI (which always talks to Anthropic, wherever the binary lives).
    pub fn endpoint(&self) -> String {
        match self {
            Provider::Anthropic(p) => p.base_url().to_string(),
            Provider::Openai(p) => p.base_url().to_string(),
            Provider::ClaudeCli(_) => CLI_ENDPOINT.to_string(),
        }
    }

    /// The endpoint a provider of `kind` built from the environment would use, without
    /// building it (no key needed): what `--replay` keys its lookups by, so a replay
    /// reads the verdicts of the server the same command would call.
    pub fn endpoint_from_env(kind: ProviderKind) -> String {
        let env = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
        match kind {
            ProviderKind::Anthropic => base_url(
                env("ANTHROPIC_BASE_URL").as_deref(),
                anthropic::DEFAULT_BASE_URL,
            ),
            ProviderKind::Openai => {
                base_url(env("OPENAI_BASE_URL").as_deref(), openai::DEFAULT_BASE_URL)
            }
            ProviderKind::ClaudeCli => CLI_ENDPOINT.to_string(),
        }
    }

    /// Whether the provider takes aliases itself (the CLI does), so they are not resolved.
    pub fn wants_alias(&self) -> bool {
        matches!(self, Provider::ClaudeCli(_))
    }

    /// Whether the provider can bind a reply to a JSON Schema (the `claude` CLI cannot:
    /// its replies are read as text).
    pub fn binds_schemas(&self) -> bool {
        !matches!(self, Provider::ClaudeCli(_))
    }

    /// Builds the requested provider from the environment, or picks one:
    /// `ANTHROPIC_API_KEY` -> Anthropic, else `OPENAI_API_KEY` or `OPENAI_BASE_URL`
    /// -> OpenAI-compatible, else a `claude` on `PATH`. `timeout` bounds each request.
    pub fn from_env(
        kind: Option<ProviderKind>,
        timeout: Duration,
    ) -> Result<Provider, ProviderError> {
        let env = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
        match kind {
            Some(ProviderKind::Anthropic) => {
                let key = env("ANTHROPIC_API_KEY")
                    .ok_or_else(|| ProviderError::Config("ANTHROPIC_API_KEY is not set".into()))?;
                Ok(Provider::Anthropic(AnthropicProvider::new(
                    env("ANTHROPIC_BASE_URL").as_deref(),
                    Secret::new(key),
                    timeout,
                )?))
            }
            Some(ProviderKind::Openai) => Ok(Provider::Openai(OpenAiProvider::new(
                env("OPENAI_BASE_URL").as_deref(),
                env("OPENAI_API_KEY").map(Secret::new),
                timeout,
            )?)),
            Some(ProviderKind::ClaudeCli) => {
                let program = claude_cli::find_on_path("claude").ok_or_else(|| {
                    ProviderError::Config("`claude` was not found on PATH".into())
                })?;
                Ok(Provider::ClaudeCli(ClaudeCliProvider::new(
                    program, timeout,
                )))
            }
            None => {
                if env("ANTHROPIC_API_KEY").is_some() {
                    Provider::from_env(Some(ProviderKind::Anthropic), timeout)
                } else if env("OPENAI_API_KEY").is_some() || env("OPENAI_BASE_URL").is_some() {
                    // A base URL without a key is a local server (vLLM, llama.cpp, Ollama).
                    Provider::from_env(Some(ProviderKind::Openai), timeout)
                } else if claude_cli::find_on_path("claude").is_some() {
                    Provider::from_env(Some(ProviderKind::ClaudeCli), timeout)
                } else {
                    Err(ProviderError::Config(
                        "no LLM provider available: set ANTHROPIC_API_KEY or OPENAI_API_KEY, \
                         or install the `claude` CLI; or run with --heuristic to score without an LLM"
                            .into(),
                    ))
                }
            }
        }
    }
}

/// The base URL requests go to: the given one or the default, without a trailing slash.
pub(crate) fn base_url(given: Option<&str>, default: &str) -> String {
    given.unwrap_or(default).trim_end_matches('/').to_string()
}

/// Installs rustls' `ring` crypto provider once per process. reqwest is built
/// without a default provider (no aws-lc/cmake build); a second install attempt
/// returns an error that only says one is already there, so it is ignored.
pub fn install_crypto_provider() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

/// Builds the shared HTTP client for the API providers. For a plain-http `base_url` (a
/// local server, a test double) no root certificates are loaded: reading the system's
/// store costs several milliseconds of every start, and such a client never verifies
/// a certificate (it can reach no https server).
pub(crate) fn http_client(
    provider: &'static str,
    timeout: Duration,
    base_url: &str,
) -> Result<reqwest::Client, ProviderError> {
    install_crypto_provider();
    let mut builder = reqwest::Client::builder()
        // A redirect would carry the key to wherever it points (reqwest strips
        // `Authorization` across origins, but not `x-api-key`): model calls follow none,
        // and a 3xx is reported as the error it is.
        .redirect(reqwest::redirect::Policy::none())
        .timeout(timeout)
        .connect_timeout(timeout.min(Duration::from_secs(10)))
        .user_agent(concat!("caldera/", env!("CARGO_PKG_VERSION")));
    if is_plain_http(base_url) {
        builder = builder.tls_certs_only(Vec::new());
    }
    builder
        .build()
        .map_err(|e| ProviderError::Config(format!("cannot build the {provider} HTTP client: {e}")))
}

/// A redirect answer, as an error: model calls never follow one, since the key would
/// travel with it to another origin. The message names where it pointed, so the base URL
/// can be set to the final address.
pub(crate) fn redirect_refused(
    provider: &'static str,
    status: reqwest::StatusCode,
    headers: &reqwest::header::HeaderMap,
) -> Option<ProviderError> {
    if !status.is_redirection() {
        return None;
    }
    let location = headers
        .get(reqwest::header::LOCATION)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("(no location)");
    Some(ProviderError::Http {
        provider,
        status: status.as_u16(),
        message: format!(
            "the server redirects to {location}; model calls do not follow redirects, so the \
             key never travels to another address: set the base URL to the final address"
        ),
        retry_after: None,
    })
}

/// The most bytes of a response body read: a reply longer than the parser would read
/// (escaped as JSON inside the provider's envelope, at most twice as long) plus room
/// for the envelope. A server streaming more is cut off instead of filling memory.
pub const MAX_BODY_BYTES: usize = 2 * MAX_REPLY_BYTES + (64 << 10);

/// The longest reply that is read (1 MiB). A verdict with its reasoning is a few
/// kilobytes; anything near this is a runaway or hostile reply, and refusing it keeps
/// the time and memory reading takes bounded. The reply parser holds replies to it too.
pub const MAX_REPLY_BYTES: usize = 1 << 20;

/// Reads a response body, refusing one longer than `cap` bytes (usually
/// [`MAX_BODY_BYTES`]) before it is held in memory whole.
pub(crate) async fn read_capped(
    provider: &'static str,
    timeout: Duration,
    mut response: reqwest::Response,
    cap: usize,
) -> Result<String, ProviderError> {
    let too_long = |n: u64| ProviderError::InvalidResponse {
        provider,
        message: format!(
            "the response body is {n} bytes or more, above the {cap}-byte limit; \
             it was not read"
        ),
    };
    if let Some(n) = response.content_length()
        && n > cap as u64
    {
        return Err(too_long(n));
    }
    let mut body: Vec<u8> = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|e| transport_error(provider, timeout, &e))?
    {
        if body.len() + chunk.len() > cap {
            return Err(too_long((body.len() + chunk.len()) as u64));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(String::from_utf8_lossy(&body).into_owned())
}

/// Sends one prepared request (headers and key already on it) and reads the body: the
/// one send-and-status path of the HTTP providers, so a redirect, a slow-down hint or an
/// error body is handled the same whoever the provider is. A non-success status becomes
/// [`ProviderError::Http`] with `key`, when there is one, redacted from the message.
pub(crate) async fn exchange(
    provider: &'static str,
    timeout: Duration,
    builder: reqwest::RequestBuilder,
    cap: usize,
    key: Option<&Secret>,
) -> Result<String, ProviderError> {
    let response = builder
        .send()
        .await
        .map_err(|e| transport_error(provider, timeout, &e))?;
    let status = response.status();
    let redact = |text: &str| key.map_or_else(|| text.to_owned(), |k| k.redact(text));
    // The `Location` may echo the key: redacted like a body.
    if let Some(e) = redirect_refused(provider, status, response.headers()) {
        return Err(match e {
            ProviderError::Http {
                provider,
                status,
                message,
                retry_after,
            } => ProviderError::Http {
                provider,
                status,
                message: redact(&message),
                retry_after,
            },
            other => other,
        });
    }
    let wait = retry_after(response.headers());
    let text = read_capped(provider, timeout, response, cap).await?;
    if !status.is_success() {
        // Redacted before the message is read out of the body (which decodes JSON
        // escapes) and cut short, then again once decoded.
        let message = error_message(&redact(&text));
        return Err(ProviderError::Http {
            provider,
            status: status.as_u16(),
            message: redact(&message),
            retry_after: wait,
        });
    }
    Ok(text)
}

/// Whether `url` is plain http (no TLS).
fn is_plain_http(url: &str) -> bool {
    url.get(..7)
        .is_some_and(|scheme| scheme.eq_ignore_ascii_case("http://"))
}

/// Maps a reqwest error into a [`ProviderError`] (keys travel in headers, never
/// in URLs, so the message may name the URL).
pub(crate) fn transport_error(
    provider: &'static str,
    timeout: Duration,
    err: &reqwest::Error,
) -> ProviderError {
    if err.is_timeout() {
        return ProviderError::Timeout {
            provider,
            after: timeout,
        };
    }
    let mut message = err.to_string();
    let mut source = std::error::Error::source(err);
    while let Some(s) = source {
        message.push_str(": ");
        message.push_str(&s.to_string());
        source = s.source();
    }
    if err.is_connect() || err.is_request() || err.is_body() {
        ProviderError::Connection { provider, message }
    } else if err.is_decode() {
        ProviderError::InvalidResponse { provider, message }
    } else {
        ProviderError::Connection { provider, message }
    }
}

/// Reads `retry-after-ms` (milliseconds) or `retry-after` (seconds or an HTTP date).
pub(crate) fn retry_after(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    let get = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
    };
    if let Some(ms) = get("retry-after-ms").and_then(|v| v.parse::<f64>().ok())
        && ms.is_finite()
        && ms >= 0.0
    {
        return Some(Duration::from_secs_f64(ms / 1000.0));
    }
    let value = get("retry-after")?;
    if let Ok(secs) = value.parse::<f64>() {
        return (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs));
    }
    let when = chrono::DateTime::parse_from_rfc2822(value).ok()?;
    let wait = when.with_timezone(&chrono::Utc) - chrono::Utc::now();
    Some(wait.to_std().unwrap_or(Duration::ZERO))
}

/// Reads an error body: `{"error": {"message": ...}}` (both APIs) or the body's start.
pub(crate) fn error_message(body: &str) -> String {
    let parsed: Option<serde_json::Value> = serde_json::from_str(body).ok();
    let message = parsed.as_ref().and_then(|v| {
        v.pointer("/error/message")
            .or_else(|| v.pointer("/message"))
            .or_else(|| v.get("error").filter(|e| e.is_string()))
            .and_then(|m| m.as_str())
            .map(str::to_string)
    });
    message.unwrap_or_else(|| body.chars().take(300).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> reqwest::header::HeaderMap {
        let mut h = reqwest::header::HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, v.parse().unwrap());
        }
        h
    }

    #[test]
    fn redaction_finds_the_key_verbatim_json_escaped_and_percent_encoded() {
        let key = Secret::new("sk-a/B9");
        let escaped = r"sk\u002Da\/\u0042\u0039";
        let percent = "%73%6b-a%2FB9";
        let text = format!("1 sk-a/B9 2 {escaped} 3 {percent} 4 sk-a/B8");
        assert_eq!(
            key.redact(&text),
            "1 [redacted] 2 [redacted] 3 [redacted] 4 sk-a/B8"
        );
    }

    #[test]
    fn an_error_body_is_redacted_before_it_is_cut() {
        let key = Secret::new("sk-test-0123456789");
        let body = format!("{}{}", "x".repeat(295), key.expose());
        let message = key.redact(&error_message(&key.redact(&body)));
        assert!(!message.contains("sk-te"), "{message}");
        assert!(message.ends_with("x[reda"), "{message}");
    }

    #[test]
    fn retry_after_in_seconds_milliseconds_and_as_an_http_date() {
        assert_eq!(
            retry_after(&headers(&[("retry-after", "7")])),
            Some(Duration::from_secs(7))
        );
        assert_eq!(
            retry_after(&headers(&[("retry-after", "1.5")])),
            Some(Duration::from_millis(1500))
        );
        // `retry-after-ms` wins over `retry-after`.
        assert_eq!(
            retry_after(&headers(&[("retry-after-ms", "250"), ("retry-after", "9")])),
            Some(Duration::from_millis(250))
        );
        // An HTTP date ten minutes ahead: about 600 s (the clock moves while it runs).
        let later = (chrono::Utc::now() + chrono::Duration::seconds(600)).to_rfc2822();
        let wait = retry_after(&headers(&[("retry-after", &later)])).expect("a date is read");
        assert!(
            (595..=600).contains(&wait.as_secs()),
            "{wait:?} for a date 600 s ahead"
        );
        // A date in the past means now; nonsense and negatives are no delay at all.
        let earlier = (chrono::Utc::now() - chrono::Duration::seconds(60)).to_rfc2822();
        assert_eq!(
            retry_after(&headers(&[("retry-after", &earlier)])),
            Some(Duration::ZERO)
        );
        assert_eq!(retry_after(&headers(&[("retry-after", "soon")])), None);
        assert_eq!(retry_after(&headers(&[("retry-after", "-3")])), None);
        assert_eq!(retry_after(&headers(&[])), None);
    }
}
