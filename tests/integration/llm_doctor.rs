//! `doctor` rows: key presence, reachability without spending tokens, the CLI's version.

use std::collections::HashMap;
use std::time::Duration;

use caldera::provider::doctor::diagnose_with;

use super::llm_server::{GOOD, MockServer, anthropic_text};

#[tokio::test]
async fn rows_say_what_is_usable_and_why() {
    let server = MockServer::start(|_, _| anthropic_text(GOOD, "end_turn")).await;
    // A port held by this test but never listened on: connections are refused for as
    // long as the socket lives (a port released after binding could be taken by anyone).
    let held = tokio::net::TcpSocket::new_v4().unwrap();
    held.bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let closed = held.local_addr().unwrap();
    let env: HashMap<&str, String> = HashMap::from([
        ("ANTHROPIC_API_KEY", "sk-secret-value-1234".to_string()),
        ("ANTHROPIC_BASE_URL", server.base.clone()),
        ("OPENAI_BASE_URL", format!("http://{closed}/v1")),
    ]);
    let lookup = move |name: &str| env.get(name).cloned();
    let dir = tempfile::tempdir().unwrap();
    let rows = diagnose_with(&lookup, dir.path().as_os_str(), Duration::from_secs(2)).await;
    let names: Vec<&str> = rows.iter().map(|r| r.provider).collect();
    assert_eq!(names, ["anthropic", "openai", "claude-cli"]);

    assert!(rows[0].usable, "{:?}", rows[0]);
    assert_eq!(rows[0].checks[0], "ANTHROPIC_API_KEY is set");
    assert!(
        rows[0].checks[1].ends_with("accepts connections"),
        "{:?}",
        rows[0]
    );
    assert_eq!(server.hits(), 0, "a TCP connect is not a request");

    assert!(!rows[1].usable);
    assert!(
        rows[1].checks[0].contains("fine for a local server"),
        "{:?}",
        rows[1]
    );
    assert!(
        rows[1].checks[1].contains("is not reachable"),
        "{:?}",
        rows[1]
    );

    assert!(!rows[2].usable);
    assert_eq!(rows[2].checks, ["`claude` was not found on PATH"]);
    assert!(!format!("{rows:?}").contains("sk-secret-value-1234"));
}
