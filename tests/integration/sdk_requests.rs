//! Every request caldera sends, in every mode, checked against the official SDKs' own
//! request types (`scripts/check_requests.py`: no undeclared key, right literals and
//! headers). The requests are captured by a loopback server; the check needs Python with
//! `anthropic==2.14.0` and `openai==3.57.0` (installed by `.ci/run`) and says loudly
//! when they are missing.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};

use crate::binary::{Caldera, Ran};

use super::llm_server::{MockServer, Seen, Step, anthropic_text, multipart_parts, openai_text};

/// The verdict object, with every sub-score a schema-bound request declares.
fn verdict_for(seen: &Seen) -> String {
    let schema = seen
        .body
        .pointer("/output_config/format/schema")
        .or_else(|| seen.body.pointer("/response_format/json_schema/schema"));
    let mut reply = json!({"score": 4, "confidence": 0.9, "reasoning": "fine",
                           "evidence_cited": [], "recommendations": []});
    if let Some(names) = schema.and_then(|s| s["properties"]["sub_scores"]["required"].as_array()) {
        let subs: serde_json::Map<String, Value> = names
            .iter()
            .filter_map(|n| n.as_str())
            .map(|n| (n.to_owned(), json!(3)))
            .collect();
        reply["sub_scores"] = Value::Object(subs);
    }
    reply.to_string()
}

fn answer(i: usize, seen: &Seen) -> Step {
    match seen.path.as_str() {
        "/v1/messages/count_tokens" => Step::Reply {
            status: 200,
            headers: vec![],
            body: json!({"input_tokens": 42}).to_string(),
        },
        // Batches are only captured: the run then gives up on them.
        p if p.starts_with("/v1/messages/batches") => super::llm_server::error(400, vec![]),
        // An OpenAI batch's input file is taken (and captured), its batch refused.
        "/v1/files" => Step::Reply {
            status: 200,
            headers: vec![],
            body: json!({"id": "file-1", "object": "file", "bytes": 1, "created_at": 1,
                         "filename": "caldera-batch.jsonl", "purpose": "batch",
                         "status": "processed"})
            .to_string(),
        },
        "/v1/batches" => super::llm_server::error(400, vec![]),
        "/v1/chat/completions" => openai_text(&verdict_for(seen), "stop"),
        // Every fifth direct answer is unreadable, so re-asks are sent too.
        _ if i % 5 == 4 && seen.body.get("output_config").is_none() => {
            anthropic_text("no verdict here", "end_turn")
        }
        _ => anthropic_text(&verdict_for(seen), "end_turn"),
    }
}

/// A copy of the trivy suite with `lines` added to suite.yaml.
fn project(lines: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    crate::gates::copy_trivy(dir.path());
    let suite = dir.path().join("judges.d/trivy/suite.yaml");
    let text = std::fs::read_to_string(&suite).unwrap();
    std::fs::write(&suite, format!("{text}\n{lines}\n")).unwrap();
    dir
}

/// Runs caldera in `root` against `base`, on the OpenAI API or Anthropic's. Exit statuses
/// vary by mode (a batch that is refused leaves judges unscored); the requests are what
/// is checked.
fn caldera(root: &Path, base: &str, openai: bool, args: &[&str]) -> Ran {
    let cmd = Caldera::new()
        .dir(root)
        // Batch states are sealed with a key kept under the state folder: the test's own.
        .env("XDG_STATE_HOME", root.join(".state"));
    let cmd = if openai {
        cmd.env("OPENAI_BASE_URL", format!("{base}/v1"))
    } else {
        cmd.env("ANTHROPIC_API_KEY", "k")
            .env("ANTHROPIC_BASE_URL", base)
    };
    cmd.args(args).run()
}

/// The captured requests as the checker reads them.
fn records(seen: &[Seen], mode: &str) -> Vec<Value> {
    let mut out = Vec::new();
    for s in seen {
        let headers: serde_json::Map<String, Value> = s
            .headers
            .iter()
            .map(|(k, v)| (k.clone(), json!(v)))
            .collect();
        let mut push = |api: &str, body: &Value| {
            out.push(json!({"api": api, "mode": mode, "headers": headers, "body": body}));
        };
        match s.path.as_str() {
            "/v1/messages" => push("anthropic", &s.body),
            "/v1/messages/count_tokens" => push("anthropic-count", &s.body),
            "/v1/messages/batches" => {
                for item in s.body["requests"].as_array().into_iter().flatten() {
                    push("anthropic-batch", item);
                }
            }
            "/v1/chat/completions" => push("openai", &s.body),
            // Each line of an uploaded batch input file: `{custom_id, method, url, body}`.
            "/v1/files" => {
                for (name, content) in multipart_parts(s) {
                    assert_eq!(name == "purpose", content == b"batch", "{name}");
                    let text = String::from_utf8_lossy(&content).into_owned();
                    for line in text.lines().filter(|_| name == "file") {
                        push("openai-batch", &serde_json::from_str(line).unwrap());
                    }
                }
            }
            "/v1/batches" => push("openai-batch-create", &s.body),
            _ => {}
        }
    }
    out
}

fn sdks_installed() -> bool {
    Command::new("python3")
        .args([
            "-c",
            "import anthropic, openai, sys; sys.exit(0 if (anthropic.__version__, openai.__version__) == ('2.14.0', '3.57.0') else 1)",
        ])
        .status()
        .is_ok_and(|s| s.success())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_request_of_every_mode_matches_the_official_sdk_types() {
    if !sdks_installed() {
        crate::shared::skipped(
            "python3 with anthropic==2.14.0 and openai==3.57.0 is not installed \
             (pip install anthropic==2.14.0 openai==3.57.0); the SDK request check did not run",
        );
        return;
    }
    let server = MockServer::start(answer).await;
    let base = server.base.clone();
    let modes: Vec<(&str, &str, bool, Vec<&str>)> = vec![
        ("direct", "", false, vec![]),
        (
            "panel-repeat",
            "",
            false,
            vec!["--models", "sonnet,opus", "--repeat", "2"],
        ),
        (
            "schema-reasoning",
            "verdict_transport: schema\nreasoning: {effort: medium}",
            false,
            vec![],
        ),
        (
            "thinking-budget",
            "reasoning: {budget_tokens: 2048, max_tokens: 6000}",
            false,
            vec![],
        ),
        ("batch", "", false, vec!["--batch"]),
        (
            "openai",
            "verdict_transport: schema",
            true,
            vec!["--provider", "openai", "--model", "gpt-4.1"],
        ),
        (
            "openai-batch",
            "verdict_transport: schema",
            true,
            vec!["--provider", "openai", "--model", "gpt-4.1", "--batch"],
        ),
        (
            "openai-reasoning",
            "reasoning: {effort: high}",
            true,
            vec!["--provider", "openai", "--model", "o4-mini"],
        ),
    ];
    let mut all = Vec::new();
    for (mode, lines, openai, extra) in modes {
        let dir = project(lines);
        let before = server.seen().len();
        let root: PathBuf = dir.path().to_path_buf();
        let base = base.clone();
        let mut args = vec![
            "run",
            "judges.d/trivy",
            "--timeout",
            "5",
            "--cache-dir",
            ".cache",
        ];
        args.extend(extra);
        let args: Vec<String> = args.into_iter().map(str::to_owned).collect();
        tokio::task::spawn_blocking(move || {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            caldera(&root, &base, openai, &args);
        })
        .await
        .unwrap();
        let seen = server.seen();
        let got = records(&seen[before..], mode);
        assert!(!got.is_empty(), "mode {mode} sent no request");
        all.extend(got);
    }
    // Token counting (`caldera plan --count-tokens`).
    let dir = project("");
    let before = server.seen().len();
    let (root, b) = (dir.path().to_path_buf(), base.clone());
    tokio::task::spawn_blocking(move || {
        caldera(
            &root,
            &b,
            false,
            &["plan", "judges.d/trivy", "--count-tokens"],
        );
    })
    .await
    .unwrap();
    all.extend(records(&server.seen()[before..], "count-tokens"));
    for api in [
        "anthropic",
        "anthropic-count",
        "anthropic-batch",
        "openai",
        "openai-batch",
        "openai-batch-create",
    ] {
        assert!(
            all.iter().any(|r| r["api"] == api),
            "no {api} request was captured"
        );
    }
    let reasked = all.iter().any(|r| {
        r["body"]["messages"]
            .as_array()
            .is_some_and(|m| m.iter().any(|m| m["role"] == "assistant"))
    });
    assert!(reasked, "a re-ask was captured");

    let file = tempfile::NamedTempFile::new().unwrap();
    let text: String = all.iter().map(|r| format!("{r}\n")).collect();
    std::fs::write(file.path(), text).unwrap();
    let out = Command::new("python3")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/check_requests.py"))
        .arg(file.path())
        .output()
        .expect("python3 runs");
    let report = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "requests the SDK types refuse:\n{report}"
    );
    assert!(
        report.contains(&format!("{} passed, 0 failed", all.len())),
        "{report}"
    );
}
