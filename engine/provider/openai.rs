//! OpenAI-compatible chat completions (`POST {base}/chat/completions`): OpenAI
//! itself and local servers (vLLM, llama.cpp, Ollama), which need no key.

use std::time::Duration;

use serde::Deserialize;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::{ProviderError, ProviderReply, ProviderRequest, Secret, Usage, http_client};

const NAME: &str = "openai";
/// Used when `OPENAI_BASE_URL` is not set.
pub const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";

/// A chat-completions client. `Debug` shows the base URL, never the key.
#[derive(Clone)]
pub struct OpenAiProvider {
    base_url: String,
    key: Option<Secret>,
    timeout: Duration,
    client: reqwest::Client,
}

impl std::fmt::Debug for OpenAiProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenAiProvider")
            .field("base_url", &self.base_url)
            .field("key", &self.key)
            .field("timeout", &self.timeout)
            .finish()
    }
}

#[derive(Deserialize)]
struct CompletionResponse {
    #[serde(default)]
    choices: Vec<Choice>,
    #[serde(default)]
    usage: Option<ApiUsage>,
    #[serde(default)]
    model: Option<String>,
}

#[derive(Deserialize)]
struct Choice {
    message: ChoiceMessage,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct ChoiceMessage {
    #[serde(default)]
    content: Option<String>,
}

#[derive(Deserialize)]
struct ApiUsage {
    #[serde(default)]
    prompt_tokens: u64,
    #[serde(default)]
    completion_tokens: u64,
    #[serde(default)]
    completion_tokens_details: Option<CompletionDetails>,
    #[serde(default)]
    prompt_tokens_details: Option<PromptDetails>,
}

#[derive(Deserialize)]
struct PromptDetails {
    #[serde(default)]
    cached_tokens: u64,
}

#[derive(Deserialize)]
struct CompletionDetails {
    #[serde(default)]
    reasoning_tokens: u64,
}

impl OpenAiProvider {
    /// A client for `base_url` (default [`DEFAULT_BASE_URL`]); the key is optional.
    pub fn new(
        base_url: Option<&str>,
        key: Option<Secret>,
        timeout: Duration,
    ) -> Result<Self, ProviderError> {
        let base_url = super::base_url(base_url, DEFAULT_BASE_URL);
        Ok(OpenAiProvider {
            client: http_client(NAME, timeout, &base_url)?,
            base_url,
            key,
            timeout,
        })
    }

    /// The base URL requests go to.
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    /// Sends one request.
    pub async fn complete(
        &self,
        request: &ProviderRequest,
    ) -> Result<ProviderReply, ProviderError> {
        let builder = self
            .client
            .post(format!("{}/chat/completions", self.base_url))
            .json(&self.body(request));
        let text = self.send(builder, super::MAX_BODY_BYTES).await?;
        self.reply_from_value(serde_json::from_str(&text).map_err(|e| {
            ProviderError::InvalidResponse {
                provider: NAME,
                message: e.to_string(),
            }
        })?)
    }

    /// The chat-completions request body for `request`: what a direct call sends, and
    /// the `body` of a batch request line.
    pub fn body(&self, request: &ProviderRequest) -> Value {
        let mut messages = Vec::with_capacity(request.messages.len() + 1);
        if let Some(system) = &request.system {
            messages.push(json!({"role": "system", "content": system}));
        }
        messages.extend(request.messages.iter().map(|m| json!(m)));
        let mut body = json!({
            "model": request.model,
            "messages": messages,
        });
        if let Some(t) = request.temperature {
            body["temperature"] = json!(t);
        }
        if let Some(schema) = &request.response_schema {
            body["response_format"] = json!({
                "type": "json_schema",
                "json_schema": {"name": "verdict", "strict": true, "schema": schema},
            });
        }
        if let Some(prefix) = request
            .cache
            .zip(request.messages.first())
            .and_then(|(hint, first)| hint.split(&first.content))
            .map(|(prefix, _)| prefix)
        {
            // OpenAI caches prefixes by itself; the key routes requests that share this
            // prefix to the same cache.
            let system = request.system.as_deref().unwrap_or_default();
            let digest = Sha256::digest(format!("{system}\u{0}{prefix}").as_bytes());
            body["prompt_cache_key"] = json!(format!("caldera-{}", &hex::encode(digest)[..32]));
        }
        if let Some(effort) = request.reasoning.and_then(|r| r.effort) {
            body["reasoning_effort"] = json!(effort.as_str());
        }
        // OpenAI's own API has replaced `max_tokens` with `max_completion_tokens`
        // (newer models reject the old name, reasoning models everywhere); local servers
        // still read `max_tokens`. A request without a temperature is for a reasoning
        // model (the executor leaves it out for them alone).
        let reasoning_model = request.temperature.is_none() || request.reasoning.is_some();
        let limit_key = if self.base_url.contains("api.openai.com") || reasoning_model {
            "max_completion_tokens"
        } else {
            "max_tokens"
        };
        body[limit_key] = json!(request.max_tokens);
        body
    }

    /// Reads a chat completion already parsed as JSON (a direct answer, or the `body`
    /// of a batch's output line), with the key redacted from its text.
    pub fn reply_from_value(&self, value: Value) -> Result<ProviderReply, ProviderError> {
        let parsed: CompletionResponse =
            serde_json::from_value(value).map_err(|e| ProviderError::InvalidResponse {
                provider: NAME,
                message: e.to_string(),
            })?;
        let choice =
            parsed
                .choices
                .into_iter()
                .next()
                .ok_or_else(|| ProviderError::InvalidResponse {
                    provider: NAME,
                    message: "no choices in the response".into(),
                })?;
        let usage = parsed.usage.map_or(Usage::default(), |u| {
            // `prompt_tokens` counts the cached part too; caldera's input tokens are the
            // uncached ones, as Anthropic reports them.
            let cached = u.prompt_tokens_details.map_or(0, |d| d.cached_tokens);
            Usage {
                input_tokens: u.prompt_tokens.saturating_sub(cached),
                output_tokens: u.completion_tokens,
                reasoning_tokens: u
                    .completion_tokens_details
                    .map_or(0, |d| d.reasoning_tokens),
                cache_write_tokens: 0,
                cache_read_tokens: cached,
            }
        });
        let text = choice.message.content.unwrap_or_default();
        Ok(ProviderReply {
            // A key echoed back must not reach the result, the log or the cache.
            text: self.redact(&text),
            usage,
            thinking: None,
            truncated: choice.finish_reason.as_deref() == Some("length"),
            model: parsed.model,
        })
    }

    /// `text` with the key, when there is one, redacted.
    pub(crate) fn redact(&self, text: &str) -> String {
        self.key
            .as_ref()
            .map_or_else(|| text.to_owned(), |k| k.redact(text))
    }

    /// Sends a request with the key (when there is one) as a bearer token and reads at
    /// most `cap` bytes of the answer; a non-success status becomes
    /// [`ProviderError::Http`] with the key redacted from the message.
    pub(crate) async fn send(
        &self,
        mut builder: reqwest::RequestBuilder,
        cap: usize,
    ) -> Result<String, ProviderError> {
        if let Some(key) = &self.key {
            builder = builder.bearer_auth(key.expose());
        }
        super::exchange(NAME, self.timeout, builder, cap, self.key.as_ref()).await
    }

    /// The HTTP client (shared with the batch calls).
    pub(crate) fn client(&self) -> &reqwest::Client {
        &self.client
    }
}
