//! One face for the two batch APIs, so `--batch` has one loop (`crate::llm::batch`)
//! whichever provider it sends through: Anthropic's Message Batches
//! ([`super::batches`]) and the OpenAI Batch API ([`super::openai_batches`]).
//!
//! What differs is kept here: how one request is written into a batch, how a batch is
//! made (one call for Anthropic; an uploaded file, then a batch, for OpenAI), how its
//! state reads, where its results come from, and the limits (OpenAI also takes one
//! model per batch).

use std::collections::BTreeMap;

use serde_json::Value;

use super::batches::{self, BatchItem, ItemResult};
use super::openai_batches::{self, OpenAiBatch};
use super::{AnthropicProvider, OpenAiProvider, Provider, ProviderError, ProviderRequest};

/// The batch API of a provider that has one.
#[derive(Debug, Clone, Copy)]
pub enum BatchApi<'a> {
    /// Anthropic's Message Batches.
    Anthropic(&'a AnthropicProvider),
    /// The OpenAI Batch API.
    OpenAi(&'a OpenAiProvider),
}

/// A batch's requests, ready to be made into a batch: sent again as they are if
/// creating the batch has to be retried (an OpenAI file is not uploaded twice).
#[derive(Debug, Clone)]
pub enum Prepared {
    /// Anthropic: the requests go in the create call itself.
    Requests(Vec<Value>),
    /// OpenAI: the id of the uploaded input file.
    File(String),
}

/// A batch as one look at it found it.
#[derive(Debug, Clone)]
pub struct Polled {
    /// The batch's id.
    pub id: String,
    /// The API's own word for its state (`in_progress`, `ended`, `completed`, ...).
    pub status: String,
    /// Whether its results can be read.
    pub ended: bool,
    /// Requests answered.
    pub succeeded: u64,
    /// Requests failed.
    pub errored: u64,
    /// Requests not run in time.
    pub expired: u64,
    /// Requests over, whatever became of them.
    pub done: u64,
    /// Requests in the batch.
    pub total: u64,
    /// What reading an OpenAI batch's results needs (its files, or its errors).
    openai: Option<OpenAiBatch>,
}

impl<'a> BatchApi<'a> {
    /// The batch API of `provider`; the `claude` CLI has none.
    pub fn of(provider: &'a Provider) -> Option<Self> {
        match provider {
            Provider::Anthropic(p) => Some(BatchApi::Anthropic(p)),
            Provider::Openai(p) => Some(BatchApi::OpenAi(p)),
            Provider::ClaudeCli(_) => None,
        }
    }

    /// What a batch is called in messages.
    pub fn noun(&self) -> &'static str {
        match self {
            BatchApi::Anthropic(_) => "Message Batch",
            BatchApi::OpenAi(_) => "OpenAI batch",
        }
    }

    /// Most requests in one batch.
    pub fn max_requests(&self) -> usize {
        match self {
            BatchApi::Anthropic(_) => batches::MAX_REQUESTS,
            BatchApi::OpenAi(_) => openai_batches::MAX_REQUESTS,
        }
    }

    /// Largest batch, in bytes of its requests as written by [`Self::entry`] (one
    /// newline each counted).
    pub fn max_bytes(&self) -> usize {
        match self {
            BatchApi::Anthropic(_) => batches::MAX_BYTES,
            BatchApi::OpenAi(_) => openai_batches::MAX_BYTES,
        }
    }

    /// Whether every request of a batch must ask the same model (the OpenAI Batch API
    /// refuses a file that mixes models).
    pub fn one_model_per_batch(&self) -> bool {
        matches!(self, BatchApi::OpenAi(_))
    }

    /// Whether a batch's requests are uploaded as a file before the batch is created
    /// (OpenAI), a step of its own to retry.
    pub fn uploads(&self) -> bool {
        matches!(self, BatchApi::OpenAi(_))
    }

    /// `request` as one request of a batch: `{custom_id, params}` for Anthropic, the
    /// input file line `{custom_id, method, url, body}` for OpenAI.
    pub fn entry(&self, custom_id: &str, request: &ProviderRequest) -> Value {
        match self {
            BatchApi::Anthropic(_) => serde_json::to_value(BatchItem {
                custom_id: custom_id.to_owned(),
                params: super::anthropic::body(request),
            })
            .unwrap_or_default(),
            BatchApi::OpenAi(p) => p.batch_line(custom_id, request),
        }
    }

    /// Readies `entries` for [`Self::create`]: uploads them as the input file (OpenAI).
    pub async fn prepare(&self, entries: &[Value]) -> Result<Prepared, ProviderError> {
        match self {
            BatchApi::Anthropic(_) => Ok(Prepared::Requests(entries.to_vec())),
            BatchApi::OpenAi(p) => {
                let mut jsonl = Vec::new();
                for entry in entries {
                    jsonl.extend_from_slice(entry.to_string().as_bytes());
                    jsonl.push(b'\n');
                }
                p.upload_batch_file(&jsonl).await.map(Prepared::File)
            }
        }
    }

    /// Creates the batch; returns its id.
    pub async fn create(&self, prepared: &Prepared) -> Result<String, ProviderError> {
        match (self, prepared) {
            (BatchApi::Anthropic(p), Prepared::Requests(items)) => {
                p.create_batch(items).await.map(|s| s.id)
            }
            (BatchApi::OpenAi(p), Prepared::File(file)) => {
                p.create_openai_batch(file).await.map(|b| b.id)
            }
            _ => Err(ProviderError::Config(
                "a batch was prepared for another batch API".into(),
            )),
        }
    }

    /// The batch's state now.
    pub async fn status(&self, id: &str) -> Result<Polled, ProviderError> {
        match self {
            BatchApi::Anthropic(p) => {
                let s = p.batch_status(id).await?;
                let c = &s.request_counts;
                let done = c.succeeded + c.errored + c.canceled + c.expired;
                Ok(Polled {
                    ended: s.ended(),
                    id: s.id,
                    status: s.processing_status,
                    succeeded: c.succeeded,
                    errored: c.errored,
                    expired: c.expired,
                    done,
                    total: done + c.processing,
                    openai: None,
                })
            }
            BatchApi::OpenAi(p) => {
                let b = p.openai_batch_status(id).await?;
                let c = b.request_counts.clone().unwrap_or_default();
                Ok(Polled {
                    id: b.id.clone(),
                    status: b.status.clone(),
                    ended: b.ended(),
                    succeeded: c.completed,
                    errored: c.failed,
                    expired: 0,
                    done: c.completed + c.failed,
                    total: c.total,
                    openai: Some(b),
                })
            }
        }
    }

    /// The results of an ended batch, by `custom_id`. `lines` names each request by its
    /// place in the batch (from 1), for an error the API gives by line.
    pub async fn results(
        &self,
        polled: &Polled,
        lines: &BTreeMap<u64, String>,
    ) -> Result<Vec<(String, ItemResult)>, ProviderError> {
        match (self, &polled.openai) {
            (BatchApi::Anthropic(p), _) => p.batch_results(&polled.id).await,
            (BatchApi::OpenAi(p), Some(batch)) => p.openai_batch_results(batch, lines).await,
            (BatchApi::OpenAi(p), None) => {
                let batch = p.openai_batch_status(&polled.id).await?;
                p.openai_batch_results(&batch, lines).await
            }
        }
    }
}
