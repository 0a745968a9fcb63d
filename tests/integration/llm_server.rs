//! A tiny scripted HTTP/1.1 server for the provider tests.
//!
//! It speaks just enough HTTP (request line, headers, `content-length` body,
//! keep-alive) to stand in for the Anthropic and OpenAI endpoints. A script
//! decides each answer from the request's sequence number and content.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// A request as the server saw it.
#[derive(Debug, Clone)]
pub struct Seen {
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: serde_json::Value,
    /// The body as sent (a multipart upload is no JSON).
    pub raw: Vec<u8>,
    /// Requests being answered when this one arrived, this one included.
    pub in_flight: usize,
}

impl Seen {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// What to do with one request.
pub enum Step {
    Reply {
        status: u16,
        headers: Vec<(&'static str, String)>,
        body: String,
    },
    Delay(Duration, Box<Step>),
    /// Drop the connection without answering.
    Close,
}

type Script = dyn Fn(usize, &Seen) -> Step + Send + Sync;

pub struct MockServer {
    pub base: String,
    hits: Arc<AtomicUsize>,
    seen: Arc<Mutex<Vec<Seen>>>,
    flight: Arc<Flight>,
}

/// Requests being answered now, and the most at once.
#[derive(Default)]
struct Flight {
    now: AtomicUsize,
    peak: AtomicUsize,
}

impl MockServer {
    pub async fn start(
        script: impl Fn(usize, &Seen) -> Step + Send + Sync + 'static,
    ) -> MockServer {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let hits = Arc::new(AtomicUsize::new(0));
        let seen = Arc::new(Mutex::new(Vec::new()));
        let script: Arc<Script> = Arc::new(script);
        let flight = Arc::new(Flight::default());
        let (h, s, f) = (hits.clone(), seen.clone(), flight.clone());
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                tokio::spawn(serve(
                    stream,
                    script.clone(),
                    h.clone(),
                    s.clone(),
                    f.clone(),
                ));
            }
        });
        MockServer {
            base,
            hits,
            seen,
            flight,
        }
    }

    /// The most requests that were being answered at the same time.
    pub fn peak_in_flight(&self) -> usize {
        self.flight.peak.load(Ordering::SeqCst)
    }

    /// Requests answered or dropped so far.
    pub fn hits(&self) -> usize {
        self.hits.load(Ordering::SeqCst)
    }

    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

async fn serve(
    mut stream: TcpStream,
    script: Arc<Script>,
    hits: Arc<AtomicUsize>,
    seen: Arc<Mutex<Vec<Seen>>>,
    flight: Arc<Flight>,
) {
    let mut buf = Vec::new();
    loop {
        let head_end = loop {
            if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break i + 4;
            }
            let mut chunk = [0u8; 4096];
            match stream.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
        };
        let head = String::from_utf8_lossy(&buf[..head_end]).to_string();
        let mut lines = head.split("\r\n");
        let path = lines
            .next()
            .unwrap_or("")
            .split(' ')
            .nth(1)
            .unwrap_or("")
            .to_string();
        let headers: Vec<(String, String)> = lines
            .filter_map(|l| l.split_once(':'))
            .map(|(k, v)| (k.trim().to_lowercase(), v.trim().to_string()))
            .collect();
        let len: usize = headers
            .iter()
            .find(|(k, _)| k == "content-length")
            .and_then(|(_, v)| v.parse().ok())
            .unwrap_or(0);
        while buf.len() < head_end + len {
            let mut chunk = [0u8; 4096];
            match stream.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
        }
        let raw = buf[head_end..head_end + len].to_vec();
        let body = serde_json::from_slice(&raw).unwrap_or(serde_json::Value::Null);
        buf.drain(..head_end + len);
        let now = flight.now.fetch_add(1, Ordering::SeqCst) + 1;
        flight.peak.fetch_max(now, Ordering::SeqCst);
        let request = Seen {
            path,
            headers,
            body,
            raw,
            in_flight: now,
        };
        let mut step = {
            // Numbered, recorded and scripted under one lock, so the order of `seen` is
            // the order of the script's decisions.
            let mut seen = seen.lock().unwrap();
            let index = hits.fetch_add(1, Ordering::SeqCst);
            seen.push(request.clone());
            script(index, &request)
        };
        let answered = loop {
            match step {
                Step::Delay(d, next) => {
                    tokio::time::sleep(d).await;
                    step = *next;
                }
                Step::Close => break false,
                Step::Reply {
                    status,
                    headers,
                    body,
                } => {
                    let mut out = format!(
                        "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\n",
                        body.len()
                    );
                    for (k, v) in headers {
                        out.push_str(&format!("{k}: {v}\r\n"));
                    }
                    out.push_str("\r\n");
                    out.push_str(&body);
                    break stream.write_all(out.as_bytes()).await.is_ok();
                }
            }
        };
        flight.now.fetch_sub(1, Ordering::SeqCst);
        if !answered {
            return;
        }
    }
}

/// A 200 in the Anthropic Messages shape.
pub fn anthropic_text(text: &str, stop_reason: &str) -> Step {
    let body = serde_json::json!({
        "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-test",
        "content": [{"type": "text", "text": text}],
        "stop_reason": stop_reason,
        "usage": {"input_tokens": 100, "output_tokens": 20}
    });
    Step::Reply {
        status: 200,
        headers: vec![],
        body: body.to_string(),
    }
}

/// A 200 in the OpenAI chat-completions shape.
pub fn openai_text(text: &str, finish_reason: &str) -> Step {
    let body = serde_json::json!({
        "id": "chatcmpl-1", "object": "chat.completion", "model": "gpt-test",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": finish_reason}],
        "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}
    });
    Step::Reply {
        status: 200,
        headers: vec![],
        body: body.to_string(),
    }
}

/// An error status with a JSON error body.
pub fn error(status: u16, headers: Vec<(&'static str, String)>) -> Step {
    let body = serde_json::json!({"type": "error", "error": {"type": "api_error", "message": format!("mock {status}")}});
    Step::Reply {
        status,
        headers,
        body: body.to_string(),
    }
}

pub const GOOD: &str = r#"{"score": 4, "confidence": 0.9, "reasoning": "fine", "evidence_cited": ["a"], "recommendations": [], "sub_scores": {}}"#;

/// The text of a message's `content`: a string, or the text of its blocks (a prompt
/// split for the provider's prompt cache arrives as blocks).
pub fn content_text(content: &serde_json::Value) -> String {
    match content {
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Array(blocks) => blocks
            .iter()
            .filter_map(|b| b["text"].as_str())
            .collect::<Vec<_>>()
            .join(""),
        _ => String::new(),
    }
}

/// The parts of a `multipart/form-data` request, by name: what an OpenAI file upload
/// sends (`purpose`, `file`). Empty when the request is not multipart.
pub fn multipart_parts(seen: &Seen) -> Vec<(String, Vec<u8>)> {
    let Some(boundary) = seen
        .header("content-type")
        .and_then(|t| t.split_once("boundary="))
        .map(|(_, b)| format!("--{}", b.trim_matches('"')))
    else {
        return Vec::new();
    };
    let raw = &seen.raw;
    let starts: Vec<usize> = (0..raw.len().saturating_sub(boundary.len()) + 1)
        .filter(|&i| raw[i..].starts_with(boundary.as_bytes()))
        .collect();
    starts
        .windows(2)
        .filter_map(|w| {
            let part = &raw[w[0] + boundary.len()..w[1]];
            let split = part.windows(4).position(|x| x == b"\r\n\r\n")?;
            let head = String::from_utf8_lossy(&part[..split]);
            let name = head.split("name=\"").nth(1)?.split('"').next()?.to_owned();
            let body = &part[split + 4..];
            Some((name, body.strip_suffix(b"\r\n").unwrap_or(body).to_vec()))
        })
        .collect()
}
