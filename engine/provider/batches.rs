//! The Anthropic Message Batches API: create a batch of Messages requests, ask how it
//! is doing, read its results.
//!
//! Results are read from `{base}/v1/messages/batches/{id}/results`, built from the base
//! URL the key is meant for, never from the `results_url` the server names: the key
//! travels only to the origin it was configured for.
//!
//! [`ItemResult`] is what either batch API says of one request; the OpenAI Batch API is
//! in [`super::openai_batches`], and [`super::batch_api`] puts the two behind one face.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::anthropic::{AnthropicProvider, reply_from_value};
use super::{ProviderError, ProviderReply};

/// Most requests in one batch (the API's limit).
pub const MAX_REQUESTS: usize = 100_000;
/// Largest body of one batch, in bytes (the API's limit is 256 MB; a margin is kept for
/// the envelope).
pub const MAX_BYTES: usize = 256 * 1024 * 1024 - 64 * 1024;

/// One request of a batch.
#[derive(Debug, Clone, Serialize)]
pub struct BatchItem {
    /// Unique within the batch: `[a-zA-Z0-9_-]{1,64}`.
    pub custom_id: String,
    /// The Messages API request body.
    pub params: Value,
}

/// How far a batch has come.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
pub struct RequestCounts {
    /// Not finished yet.
    #[serde(default)]
    pub processing: u64,
    /// Answered.
    #[serde(default)]
    pub succeeded: u64,
    /// Failed.
    #[serde(default)]
    pub errored: u64,
    /// Canceled before they ran.
    #[serde(default)]
    pub canceled: u64,
    /// Not run within the batch's 24 hours.
    #[serde(default)]
    pub expired: u64,
}

/// A batch as the API describes it.
#[derive(Debug, Clone, Deserialize)]
pub struct BatchStatus {
    /// `msgbatch_...`.
    pub id: String,
    /// `in_progress`, `canceling` or `ended`.
    pub processing_status: String,
    /// Counts by state.
    #[serde(default)]
    pub request_counts: RequestCounts,
}

impl BatchStatus {
    /// Whether results can be read.
    pub fn ended(&self) -> bool {
        self.processing_status == "ended"
    }
}

/// What became of one request of a batch.
#[derive(Debug, Clone, PartialEq)]
pub enum ItemResult {
    /// The model answered.
    Succeeded(ProviderReply),
    /// The request failed; `kind` is the API's error type (`api_error`,
    /// `invalid_request_error`, ...).
    Errored {
        /// The error type.
        kind: String,
        /// The message.
        message: String,
    },
    /// Canceled before it ran.
    Canceled,
    /// Not run before the batch expired.
    Expired,
    /// The request failed, and the API's answer says outright whether sending it again
    /// may help (the OpenAI Batch API: an error status in the error file, or a batch
    /// that failed before it ran).
    Failed {
        /// What went wrong, as the API said it (the key redacted).
        reason: String,
        /// Whether a follow-up batch may succeed.
        retry: bool,
    },
}

impl ItemResult {
    /// Whether sending the same request again may succeed: a server-side error or an
    /// expiry may; a request the API refused as invalid, or a canceled one, will not.
    pub fn retryable(&self) -> bool {
        match self {
            ItemResult::Errored { kind, .. } => matches!(
                kind.as_str(),
                "api_error" | "overloaded_error" | "rate_limit_error" | "timeout_error"
            ),
            ItemResult::Expired => true,
            ItemResult::Failed { retry, .. } => *retry,
            ItemResult::Succeeded(_) | ItemResult::Canceled => false,
        }
    }
}

impl AnthropicProvider {
    fn batches_url(&self) -> String {
        format!("{}/v1/messages/batches", self.base_url())
    }

    /// Creates a batch of `items`.
    pub async fn create_batch<T: Serialize>(
        &self,
        items: &[T],
    ) -> Result<BatchStatus, ProviderError> {
        let body = serde_json::json!({ "requests": items });
        let text = self
            .send(self.client().post(self.batches_url()).json(&body))
            .await?;
        parse(&text)
    }

    /// The batch's state now.
    pub async fn batch_status(&self, id: &str) -> Result<BatchStatus, ProviderError> {
        let text = self
            .send(self.client().get(format!("{}/{id}", self.batches_url())))
            .await?;
        parse(&text)
    }

    /// The results of an ended batch, by `custom_id`, in the order the API gives them.
    pub async fn batch_results(
        &self,
        id: &str,
    ) -> Result<Vec<(String, ItemResult)>, ProviderError> {
        let text = self
            .send_capped(
                self.client()
                    .get(format!("{}/{id}/results", self.batches_url())),
                MAX_RESULTS_BYTES,
            )
            .await?;
        text.lines()
            .filter(|l| !l.trim().is_empty())
            .map(|line| {
                parse_result_line(line).map(|(id, item)| match item {
                    ItemResult::Succeeded(reply) => {
                        (id, ItemResult::Succeeded(self.redacted(reply)))
                    }
                    // An error message may echo the key as a reply may.
                    ItemResult::Errored { kind, message } => (
                        id,
                        ItemResult::Errored {
                            kind,
                            message: self.redact(&message),
                        },
                    ),
                    other => (id, other),
                })
            })
            .collect()
    }
}

/// The most bytes of one batch's results read: the API takes at most 256 MB of requests
/// in a batch, and replies are capped much shorter than prompts.
pub(crate) const MAX_RESULTS_BYTES: usize = 512 << 20;

fn parse<T: serde::de::DeserializeOwned>(text: &str) -> Result<T, ProviderError> {
    serde_json::from_str(text).map_err(|e| ProviderError::InvalidResponse {
        provider: "anthropic",
        message: format!("a batch response that cannot be read: {e}"),
    })
}

/// Reads one line of a batch's results.
pub fn parse_result_line(line: &str) -> Result<(String, ItemResult), ProviderError> {
    let value: Value = parse(line)?;
    let invalid = |what: &str| ProviderError::InvalidResponse {
        provider: "anthropic",
        message: format!("a batch result line {what}"),
    };
    let id = value["custom_id"]
        .as_str()
        .ok_or_else(|| invalid("without a custom_id"))?
        .to_owned();
    let result = &value["result"];
    let item = match result["type"].as_str() {
        Some("succeeded") => ItemResult::Succeeded(reply_from_value(result["message"].clone())?),
        Some("errored") => {
            // The error object is `{type, message}`, or wrapped as `{type: error, error}`.
            let error = match result["error"].get("error") {
                Some(inner) => inner,
                None => &result["error"],
            };
            ItemResult::Errored {
                kind: error["type"].as_str().unwrap_or("unknown").to_owned(),
                message: error["message"].as_str().unwrap_or_default().to_owned(),
            }
        }
        Some("canceled") => ItemResult::Canceled,
        Some("expired") => ItemResult::Expired,
        _ => return Err(invalid("with an unknown result type")),
    };
    Ok((id, item))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn result_lines_of_every_kind_are_read() {
        let ok = r#"{"custom_id":"a","result":{"type":"succeeded","message":{"content":[{"type":"text","text":"hi"}],"stop_reason":"end_turn","usage":{"input_tokens":3,"output_tokens":1},"model":"m"}}}"#;
        let (id, r) = parse_result_line(ok).unwrap();
        assert_eq!(id, "a");
        let ItemResult::Succeeded(reply) = r else {
            panic!("{r:?}")
        };
        assert_eq!((reply.text.as_str(), reply.usage.input_tokens), ("hi", 3));
        let wrapped = r#"{"custom_id":"b","result":{"type":"errored","error":{"type":"error","error":{"type":"api_error","message":"boom"}}}}"#;
        let (_, r) = parse_result_line(wrapped).unwrap();
        assert!(r.retryable(), "{r:?}");
        let flat = r#"{"custom_id":"c","result":{"type":"errored","error":{"type":"invalid_request_error","message":"bad"}}}"#;
        let (_, r) = parse_result_line(flat).unwrap();
        assert_eq!(
            r,
            ItemResult::Errored {
                kind: "invalid_request_error".into(),
                message: "bad".into()
            }
        );
        assert!(!r.retryable());
        let (_, r) = parse_result_line(r#"{"custom_id":"d","result":{"type":"expired"}}"#).unwrap();
        assert!(r.retryable());
        assert!(parse_result_line(r#"{"custom_id":"e","result":{"type":"odd"}}"#).is_err());
    }
}
