//! The OpenAI Batch API: upload a JSON Lines file of chat-completions requests
//! (`POST {base}/files`, `purpose=batch`), create a batch from it (`POST {base}/batches`),
//! ask how it is doing (`GET {base}/batches/{id}`), then read its output and error files
//! (`GET {base}/files/{id}/content`).
//!
//! Every call goes to the base URL the key is meant for (as a direct call does): the
//! files are named by id, never fetched from an address the server gives. Each line of
//! the input is `{custom_id, method: "POST", url: "/v1/chat/completions", body}`, the
//! body exactly what a direct call sends ([`OpenAiProvider::body`]); each line of the
//! output and error files is `{id, custom_id, response: {status_code, request_id, body},
//! error}`, a 200 answer read as a direct reply is.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::{Value, json};

use super::batches::{ItemResult, MAX_RESULTS_BYTES};
use super::{OpenAiProvider, ProviderError, ProviderRequest};

const NAME: &str = "openai";
/// The endpoint every request of a batch goes to (the API wants it in full, with `/v1`,
/// whatever the base URL).
pub const ENDPOINT: &str = "/v1/chat/completions";
/// Most requests in one input file (the API's limit).
pub const MAX_REQUESTS: usize = 50_000;
/// Largest input file, in bytes: the API takes 200 MB, read here as the smaller
/// 200,000,000 so no reading of "MB" is over it.
pub const MAX_BYTES: usize = 200_000_000;
/// Errors of a failed batch named in a reason before the rest are counted.
const MAX_ERRORS_NAMED: usize = 5;

/// A batch as the API describes it (only what the engine reads).
#[derive(Debug, Clone, Deserialize)]
pub struct OpenAiBatch {
    /// `batch_...`.
    pub id: String,
    /// `validating`, `in_progress`, `finalizing`, `completed`, `failed`, `expired`,
    /// `cancelling` or `cancelled`.
    pub status: String,
    /// The file of the requests that were answered with a 200.
    #[serde(default)]
    pub output_file_id: Option<String>,
    /// The file of the requests that were answered with an error, or never ran.
    #[serde(default)]
    pub error_file_id: Option<String>,
    /// Why a batch `failed` (its input did not validate, or a limit was reached).
    #[serde(default)]
    pub errors: Option<BatchErrors>,
    /// Counts by state.
    #[serde(default)]
    pub request_counts: Option<RequestCounts>,
}

impl OpenAiBatch {
    /// Whether the batch is over: its files (or its errors) can be read.
    pub fn ended(&self) -> bool {
        matches!(
            self.status.as_str(),
            "completed" | "failed" | "expired" | "cancelled"
        )
    }
}

/// The `errors` of a batch.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct BatchErrors {
    /// One per problem found.
    #[serde(default)]
    pub data: Vec<BatchError>,
}

/// One problem of a failed batch.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct BatchError {
    /// `invalid_json_line`, `model_mismatch`, `token_limit_exceeded`, ...
    #[serde(default)]
    pub code: Option<String>,
    /// The input line (from 1) it is about, if any.
    #[serde(default)]
    pub line: Option<u64>,
    /// What was wrong.
    #[serde(default)]
    pub message: Option<String>,
}

/// How far a batch has come.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct RequestCounts {
    /// Requests in the batch.
    #[serde(default)]
    pub total: u64,
    /// Answered with a 200.
    #[serde(default)]
    pub completed: u64,
    /// Failed.
    #[serde(default)]
    pub failed: u64,
}

/// One request as a line of the input file.
pub fn input_line(custom_id: &str, body: Value) -> Value {
    json!({"custom_id": custom_id, "method": "POST", "url": ENDPOINT, "body": body})
}

impl OpenAiProvider {
    /// The batch request line for `request`: its body exactly as a direct call sends it.
    pub fn batch_line(&self, custom_id: &str, request: &ProviderRequest) -> Value {
        input_line(custom_id, self.body(request))
    }

    /// Uploads `jsonl` as a batch input file; returns the file's id.
    pub async fn upload_batch_file(&self, jsonl: &[u8]) -> Result<String, ProviderError> {
        let boundary = boundary_for(jsonl);
        let builder = self
            .client()
            .post(format!("{}/files", self.base_url()))
            .header(
                reqwest::header::CONTENT_TYPE,
                format!("multipart/form-data; boundary={boundary}"),
            )
            .body(multipart_body(&boundary, jsonl));
        let text = self.send(builder, super::MAX_BODY_BYTES).await?;
        #[derive(Deserialize)]
        struct FileObject {
            id: String,
        }
        parse::<FileObject>(&text).map(|f| f.id)
    }

    /// Creates a batch of the requests in the uploaded file `input_file_id`.
    pub async fn create_openai_batch(
        &self,
        input_file_id: &str,
    ) -> Result<OpenAiBatch, ProviderError> {
        let body = json!({
            "input_file_id": input_file_id,
            "endpoint": ENDPOINT,
            "completion_window": "24h",
        });
        let builder = self
            .client()
            .post(format!("{}/batches", self.base_url()))
            .json(&body);
        parse(&self.send(builder, super::MAX_BODY_BYTES).await?)
    }

    /// The batch's state now.
    pub async fn openai_batch_status(&self, id: &str) -> Result<OpenAiBatch, ProviderError> {
        let builder = self
            .client()
            .get(format!("{}/batches/{id}", self.base_url()));
        parse(&self.send(builder, super::MAX_BODY_BYTES).await?)
    }

    /// What became of each request of an ended batch, by `custom_id`: the lines of its
    /// output and error files, or, for a batch that `failed` before it ran, its errors
    /// (`lines`: the custom ids by input line, to name the request an error is about).
    pub async fn openai_batch_results(
        &self,
        batch: &OpenAiBatch,
        lines: &BTreeMap<u64, String>,
    ) -> Result<Vec<(String, ItemResult)>, ProviderError> {
        if batch.status == "failed" {
            let errors = batch.errors.clone().unwrap_or_default().data;
            return Ok(self.failed_batch(&errors, lines));
        }
        let mut results = Vec::new();
        for file in [&batch.output_file_id, &batch.error_file_id]
            .into_iter()
            .flatten()
        {
            let builder = self
                .client()
                .get(format!("{}/files/{file}/content", self.base_url()));
            let text = self.send(builder, MAX_RESULTS_BYTES).await?;
            for line in text.lines().filter(|l| !l.trim().is_empty()) {
                results.push(self.result_line(line)?);
            }
        }
        Ok(results)
    }

    /// Reads one line of an output or error file.
    pub fn result_line(&self, line: &str) -> Result<(String, ItemResult), ProviderError> {
        let value: Value = parse(line)?;
        let id = value["custom_id"]
            .as_str()
            .ok_or_else(|| invalid("a batch result line without a custom_id"))?
            .to_owned();
        let response = &value["response"];
        let status = response["status_code"].as_u64();
        if status == Some(200) {
            let reply = self.reply_from_value(response["body"].clone())?;
            return Ok((id, ItemResult::Succeeded(reply)));
        }
        if let Some(status) = status {
            // An error answer: its body is the error a direct call would have had.
            let body = self.redact(&response["body"].to_string());
            let message = self.redact(&super::error_message(&body));
            let retry = u16::try_from(status).is_ok_and(super::retryable_status);
            let reason = format!("HTTP {status}: {message}");
            return Ok((id, ItemResult::Failed { reason, retry }));
        }
        let error = &value["error"];
        let code = error["code"].as_str().unwrap_or("unknown");
        let item = match code {
            "batch_expired" => ItemResult::Expired,
            "batch_cancelled" => ItemResult::Canceled,
            _ => ItemResult::Failed {
                reason: format!(
                    "{code}: {}",
                    self.redact(error["message"].as_str().unwrap_or_default())
                ),
                retry: false,
            },
        };
        Ok((id, item))
    }

    /// The results of a batch that failed before it ran: a request an error names by
    /// its line is refused for good (its line is what is wrong); every other request
    /// may go again in a follow-up batch, and says why its batch failed.
    fn failed_batch(
        &self,
        errors: &[BatchError],
        lines: &BTreeMap<u64, String>,
    ) -> Vec<(String, ItemResult)> {
        let describe = |e: &BatchError| {
            let code = e.code.as_deref().unwrap_or("unknown");
            let message = self.redact(e.message.as_deref().unwrap_or_default());
            match e.line {
                Some(line) => format!("{code} at line {line}: {message}"),
                None => format!("{code}: {message}"),
            }
        };
        let mut named: BTreeMap<&str, Vec<String>> = BTreeMap::new();
        for error in errors {
            if let Some(id) = error.line.and_then(|l| lines.get(&l)) {
                named.entry(id.as_str()).or_default().push(describe(error));
            }
        }
        let mut summary: Vec<String> = errors.iter().take(MAX_ERRORS_NAMED).map(describe).collect();
        if errors.len() > MAX_ERRORS_NAMED {
            summary.push(format!("and {} more", errors.len() - MAX_ERRORS_NAMED));
        }
        let summary = if summary.is_empty() {
            "the API gave no reason".to_owned()
        } else {
            summary.join("; ")
        };
        lines
            .values()
            .map(|id| {
                let item = match named.get(id.as_str()) {
                    Some(own) => ItemResult::Failed {
                        reason: format!("its batch failed on this request: {}", own.join("; ")),
                        retry: false,
                    },
                    None => ItemResult::Failed {
                        reason: format!("its batch failed before it ran: {summary}"),
                        retry: true,
                    },
                };
                (id.clone(), item)
            })
            .collect()
    }
}

/// A multipart boundary found nowhere in `content` (random, and checked).
fn boundary_for(content: &[u8]) -> String {
    loop {
        let boundary = format!("caldera-{:032x}", rand::random::<u128>());
        let clash = content
            .windows(boundary.len())
            .any(|w| w == boundary.as_bytes());
        if !clash {
            return boundary;
        }
    }
}

/// The `multipart/form-data` body of an upload: `purpose=batch` and the file.
fn multipart_body(boundary: &str, jsonl: &[u8]) -> Vec<u8> {
    let mut body = Vec::with_capacity(jsonl.len() + 512);
    body.extend_from_slice(
        format!(
            "--{boundary}\r\nContent-Disposition: form-data; name=\"purpose\"\r\n\r\nbatch\r\n\
             --{boundary}\r\nContent-Disposition: form-data; name=\"file\"; \
             filename=\"caldera-batch.jsonl\"\r\nContent-Type: application/jsonl\r\n\r\n"
        )
        .as_bytes(),
    );
    body.extend_from_slice(jsonl);
    body.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
    body
}

fn invalid(what: &str) -> ProviderError {
    ProviderError::InvalidResponse {
        provider: NAME,
        message: what.to_owned(),
    }
}

fn parse<T: serde::de::DeserializeOwned>(text: &str) -> Result<T, ProviderError> {
    serde_json::from_str(text)
        .map_err(|e| invalid(&format!("a batch response that cannot be read: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::Secret;
    use std::time::Duration;

    fn provider() -> OpenAiProvider {
        OpenAiProvider::new(
            Some("http://127.0.0.1:9/v1"),
            Some(Secret::new("sk-line-secret-0123")),
            Duration::from_secs(1),
        )
        .unwrap()
    }

    #[test]
    fn output_and_error_lines_of_every_kind_are_read() {
        let p = provider();
        let ok = r#"{"id":"r1","custom_id":"a","response":{"status_code":200,"request_id":"q","body":{"model":"gpt-4.1","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":1}}},"error":null}"#;
        let (id, r) = p.result_line(ok).unwrap();
        let ItemResult::Succeeded(reply) = r else {
            panic!("{r:?}")
        };
        assert_eq!((id.as_str(), reply.text.as_str()), ("a", "hi"));
        assert_eq!(reply.usage.input_tokens, 3);
        let server = r#"{"id":"r2","custom_id":"b","response":{"status_code":500,"request_id":"q","body":{"error":{"message":"boom sk-line-secret-0123","type":"server_error"}}},"error":null}"#;
        let (_, r) = p.result_line(server).unwrap();
        assert_eq!(
            r,
            ItemResult::Failed {
                reason: "HTTP 500: boom [redacted]".into(),
                retry: true
            }
        );
        let bad = r#"{"id":"r3","custom_id":"c","response":{"status_code":400,"request_id":"q","body":{"error":{"message":"bad"}}},"error":null}"#;
        assert!(!p.result_line(bad).unwrap().1.retryable());
        let expired = r#"{"id":"r4","custom_id":"d","response":null,"error":{"code":"batch_expired","message":"late"}}"#;
        assert_eq!(p.result_line(expired).unwrap().1, ItemResult::Expired);
        let cancelled = r#"{"id":"r5","custom_id":"e","response":null,"error":{"code":"batch_cancelled","message":"x"}}"#;
        assert_eq!(p.result_line(cancelled).unwrap().1, ItemResult::Canceled);
        assert!(p.result_line(r#"{"response":null}"#).is_err());
    }

    #[test]
    fn a_failed_batch_refuses_the_lines_it_names_and_sends_the_others_again() {
        let lines: BTreeMap<u64, String> = [(1, "a".to_owned()), (2, "b".to_owned())].into();
        let errors = [BatchError {
            code: Some("invalid_request".into()),
            line: Some(2),
            message: Some("bad body".into()),
        }];
        let results = provider().failed_batch(&errors, &lines);
        assert_eq!(
            results,
            [
                (
                    "a".to_owned(),
                    ItemResult::Failed {
                        reason:
                            "its batch failed before it ran: invalid_request at line 2: bad body"
                                .into(),
                        retry: true
                    }
                ),
                (
                    "b".to_owned(),
                    ItemResult::Failed {
                        reason:
                            "its batch failed on this request: invalid_request at line 2: bad body"
                                .into(),
                        retry: false
                    }
                )
            ]
        );
    }

    #[test]
    fn the_upload_boundary_is_not_in_the_file() {
        let boundary = boundary_for(b"{\"a\":1}\n");
        let body = String::from_utf8(multipart_body(&boundary, b"{\"a\":1}\n")).unwrap();
        assert!(body.starts_with(&format!("--{boundary}\r\n")), "{body}");
        assert!(body.contains("name=\"purpose\"\r\n\r\nbatch\r\n"), "{body}");
        assert!(
            body.ends_with(&format!("{{\"a\":1}}\n\r\n--{boundary}--\r\n")),
            "{body}"
        );
    }
}
