//! The Anthropic Messages API (`POST {base}/v1/messages`).

use std::time::Duration;

use serde::Deserialize;
use serde_json::json;

use super::{ProviderError, ProviderReply, ProviderRequest, Secret, Usage, http_client};

const NAME: &str = "anthropic";
/// The API version this client speaks; pinned so responses keep their shape.
pub const ANTHROPIC_VERSION: &str = "2026-10-21";
/// Used when `ANTHROPIC_BASE_URL` is not set.
pub const DEFAULT_BASE_URL: &str = "https://api.anthropic.com";

/// A client for the Messages API. `Debug` shows the base URL, never the key.
#[derive(Clone)]
pub struct AnthropicProvider {
    base_url: String,
    key: Secret,
    timeout: Duration,
    client: reqwest::Client,
}

impl std::fmt::Debug for AnthropicProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AnthropicProvider")
            .field("base_url", &self.base_url)
            .field("key", &self.key)
            .field("timeout", &self.timeout)
            .finish()
    }
}

#[derive(Deserialize)]
struct MessagesResponse {
    #[serde(default)]
    content: Vec<ContentBlock>,
    #[serde(default)]
    stop_reason: Option<String>,
    #[serde(default)]
    usage: Option<ApiUsage>,
    #[serde(default)]
    model: Option<String>,
}

#[derive(Deserialize)]
struct ContentBlock {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    thinking: Option<String>,
}

#[derive(Deserialize)]
struct ApiUsage {
    #[serde(default)]
    input_tokens: u64,
    #[serde(default)]
    output_tokens: u64,
    #[serde(default)]
    cache_creation_input_tokens: Option<u64>,
    #[serde(default)]
    cache_read_input_tokens: Option<u64>,
}

impl AnthropicProvider {
    /// A client for `base_url` (default [`DEFAULT_BASE_URL`]); `timeout` bounds each request.
    pub fn new(
        base_url: Option<&str>,
        key: Secret,
        timeout: Duration,
    ) -> Result<Self, ProviderError> {
        let base_url = super::base_url(base_url, DEFAULT_BASE_URL);
        Ok(AnthropicProvider {
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
        let text = self
            .send(
                self.client
                    .post(format!("{}/v1/messages", self.base_url))
                    .json(&body(request)),
            )
            .await?;
        reply_from_text(&text).map(|r| self.redacted(r))
    }

    /// `text` with the key redacted (a batch request's error message).
    pub(crate) fn redact(&self, text: &str) -> String {
        self.key.redact(text)
    }

    /// `reply` with the key redacted: a key echoed back must not reach the result, the
    /// log or the cache (batch results pass through here too).
    pub(crate) fn redacted(&self, mut reply: ProviderReply) -> ProviderReply {
        reply.text = self.key.redact(&reply.text);
        reply
    }

    /// Sends a request to the API with the key and version headers; a non-success
    /// status becomes [`ProviderError::Http`] (the key redacted from the message).
    pub(crate) async fn send(
        &self,
        builder: reqwest::RequestBuilder,
    ) -> Result<String, ProviderError> {
        self.send_capped(builder, super::MAX_BODY_BYTES).await
    }

    /// [`Self::send`] with its own limit on the body read (a batch's results hold many
    /// replies).
    pub(crate) async fn send_capped(
        &self,
        builder: reqwest::RequestBuilder,
        cap: usize,
    ) -> Result<String, ProviderError> {
        let builder = builder
            .header("x-api-key", self.key.expose())
            .header("anthropic-version", ANTHROPIC_VERSION);
        super::exchange(NAME, self.timeout, builder, cap, Some(&self.key)).await
    }

    /// The HTTP client (shared with the batch calls).
    pub(crate) fn client(&self) -> &reqwest::Client {
        &self.client
    }
}

/// The Messages API request body for `request` (also a batch item's `params`).
pub fn body(request: &ProviderRequest) -> serde_json::Value {
    let mut body = json!({
        "model": request.model,
        "max_tokens": request.max_tokens,
        "messages": messages(request),
    });
    if let Some(system) = &request.system {
        body["system"] = json!(system);
    }
    if let Some(schema) = &request.response_schema {
        // Structured outputs: the reply is one text block holding JSON of this schema.
        body["output_config"] = json!({"format": {"type": "json_schema", "schema": schema}});
    }
    if let Some(reasoning) = request.reasoning {
        // No forced tool and no temperature are ever sent, the two things thinking
        // refuses; the budget was checked against max_tokens at load.
        body["thinking"] = match reasoning.budget_tokens {
            Some(budget) => json!({"type": "enabled", "budget_tokens": budget}),
            None => json!({"type": "adaptive"}),
        };
        if let Some(effort) = reasoning.effort {
            body["output_config"]["effort"] = json!(effort.as_str());
        }
    }
    body
}

/// The conversation, with the first message split into a cached prefix (its block
/// carries `cache_control`, so the system prompt and the prefix are cached together)
/// and the rest, when the request allows caching.
fn messages(request: &ProviderRequest) -> serde_json::Value {
    let mut out: Vec<serde_json::Value> = request.messages.iter().map(|m| json!(m)).collect();
    let (Some(hint), Some(first)) = (request.cache, request.messages.first()) else {
        return json!(out);
    };
    let Some((prefix, rest)) = hint.split(&first.content) else {
        return json!(out);
    };
    let mut blocks = vec![json!({
        "type": "text",
        "text": prefix,
        "cache_control": {"type": "ephemeral"},
    })];
    if !rest.is_empty() {
        blocks.push(json!({"type": "text", "text": rest}));
    }
    out[0]["content"] = json!(blocks);
    json!(out)
}

/// Reads a Messages API response from its text.
pub fn reply_from_text(text: &str) -> Result<ProviderReply, ProviderError> {
    let parsed: MessagesResponse =
        serde_json::from_str(text).map_err(|e| ProviderError::InvalidResponse {
            provider: NAME,
            message: e.to_string(),
        })?;
    Ok(reply_from(parsed))
}

/// Reads a Messages API response already parsed as JSON (a batch item's `message`).
pub fn reply_from_value(value: serde_json::Value) -> Result<ProviderReply, ProviderError> {
    let parsed: MessagesResponse =
        serde_json::from_value(value).map_err(|e| ProviderError::InvalidResponse {
            provider: NAME,
            message: e.to_string(),
        })?;
    Ok(reply_from(parsed))
}

fn reply_from(parsed: MessagesResponse) -> ProviderReply {
    let reply: Vec<&str> = parsed
        .content
        .iter()
        .filter(|b| b.kind == "text")
        .filter_map(|b| b.text.as_deref())
        .collect();
    let usage = parsed.usage.map_or(Usage::default(), |u| Usage {
        input_tokens: u.input_tokens,
        output_tokens: u.output_tokens,
        reasoning_tokens: 0,
        cache_write_tokens: u.cache_creation_input_tokens.unwrap_or(0),
        cache_read_tokens: u.cache_read_input_tokens.unwrap_or(0),
    });
    let thinking: Vec<&str> = parsed
        .content
        .iter()
        .filter(|b| b.kind == "thinking")
        .filter_map(|b| b.thinking.as_deref())
        .collect();
    ProviderReply {
        text: reply.join(""),
        usage,
        thinking: (!thinking.is_empty()).then(|| thinking.join("\n")),
        truncated: parsed.stop_reason.as_deref() == Some("max_tokens"),
        model: parsed.model,
    }
}

#[derive(Deserialize)]
struct CountResponse {
    input_tokens: u64,
}

impl AnthropicProvider {
    /// Counts the input tokens of a request with the token-counting endpoint
    /// (`POST {base}/v1/messages/count_tokens`): no model runs and nothing is billed.
    /// Used by `caldera plan --count-tokens` only; a plan never calls it otherwise.
    pub async fn count_tokens(&self, request: &ProviderRequest) -> Result<u64, ProviderError> {
        let mut body = json!({
            "model": request.model,
            "messages": request.messages,
        });
        if let Some(system) = &request.system {
            body["system"] = json!(system);
        }
        // The same path as a message: redirects refused, the body read within its cap.
        let text = self
            .send(
                self.client
                    .post(format!("{}/v1/messages/count_tokens", self.base_url))
                    .json(&body),
            )
            .await?;
        serde_json::from_str::<CountResponse>(&text)
            .map(|c| c.input_tokens)
            .map_err(|e| ProviderError::InvalidResponse {
                provider: NAME,
                message: e.to_string(),
            })
    }
}
