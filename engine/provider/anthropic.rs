//! The Anthropic Messages API (`POST {base}/v1/messages`).

use std::time::Duration;

use serde::Deserialize;
use serde_json::json;

use super::{
    ProviderError, ProviderReply, ProviderRequest, Secret, Usage, error_message, http_client,
    retry_after, transport_error,
};

const NAME: &str = "anthropic";
/// The API version this client speaks; pinned so responses keep their shape.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";
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
}

#[derive(Deserialize)]
struct ApiUsage {
    #[serde(default)]
    input_tokens: u64,
    #[serde(default)]
    output_tokens: u64,
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
        let mut body = json!({
            "model": request.model,
            "max_tokens": request.max_tokens,
            "temperature": request.temperature,
            "messages": request.messages,
        });
        if let Some(system) = &request.system {
            body["system"] = json!(system);
        }
        let response = self
            .client
            .post(format!("{}/v1/messages", self.base_url))
            .header("x-api-key", self.key.expose())
            .header("anthropic-version", ANTHROPIC_VERSION)
            .json(&body)
            .send()
            .await
            .map_err(|e| transport_error(NAME, self.timeout, &e))?;
        let status = response.status();
        let wait = retry_after(response.headers());
        let text = response
            .text()
            .await
            .map_err(|e| transport_error(NAME, self.timeout, &e))?;
        if !status.is_success() {
            return Err(ProviderError::Http {
                provider: NAME,
                status: status.as_u16(),
                message: self.key.redact(&error_message(&text)),
                retry_after: wait,
            });
        }
        let parsed: MessagesResponse =
            serde_json::from_str(&text).map_err(|e| ProviderError::InvalidResponse {
                provider: NAME,
                message: e.to_string(),
            })?;
        let reply: Vec<&str> = parsed
            .content
            .iter()
            .filter(|b| b.kind == "text")
            .filter_map(|b| b.text.as_deref())
            .collect();
        let usage = parsed.usage.map_or(Usage::default(), |u| Usage {
            input_tokens: u.input_tokens,
            output_tokens: u.output_tokens,
        });
        Ok(ProviderReply {
            text: reply.join(""),
            usage,
            truncated: parsed.stop_reason.as_deref() == Some("max_tokens"),
            model: parsed.model,
        })
    }
}
