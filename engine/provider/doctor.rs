//! `caldera doctor`: which providers can be used here, and why not.
//!
//! Nothing here spends tokens: keys are checked for presence only, endpoints
//! with a TCP connect to their host and port, and the CLI with `--version`.

use std::time::Duration;

use serde::Serialize;

use super::claude_cli;

/// One provider's status.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DoctorRow {
    /// Provider kind name.
    pub provider: &'static str,
    /// Whether a run could use it now.
    pub usable: bool,
    /// Where it would send requests (URL or program path), if known.
    pub endpoint: Option<String>,
    /// Key presence, reachability, version: the reasons behind `usable`.
    pub checks: Vec<String>,
}

/// Checks every provider against this process's environment; `timeout`
/// bounds each network or process probe.
pub async fn diagnose(timeout: Duration) -> Vec<DoctorRow> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    diagnose_with(&|name| std::env::var(name).ok(), &path, timeout).await
}

/// [`diagnose`] with the environment and `PATH` given explicitly (for tests and
/// for callers that resolve settings from files as well as the environment).
pub async fn diagnose_with(
    lookup: &(dyn Fn(&str) -> Option<String> + Sync),
    path: &std::ffi::OsStr,
    timeout: Duration,
) -> Vec<DoctorRow> {
    let env = |name: &str| lookup(name).filter(|v| !v.trim().is_empty());
    let mut rows = Vec::new();

    let base =
        env("ANTHROPIC_BASE_URL").unwrap_or_else(|| super::anthropic::DEFAULT_BASE_URL.into());
    let mut checks = Vec::new();
    let key = env("ANTHROPIC_API_KEY").is_some();
    checks.push(if key {
        "ANTHROPIC_API_KEY is set".into()
    } else {
        "ANTHROPIC_API_KEY is not set".into()
    });
    let reachable = reach(&base, timeout, &mut checks).await;
    rows.push(DoctorRow {
        provider: "anthropic",
        usable: key && reachable,
        endpoint: Some(base),
        checks,
    });

    let base = env("OPENAI_BASE_URL").unwrap_or_else(|| super::openai::DEFAULT_BASE_URL.into());
    let official = base.contains("api.openai.com");
    let mut checks = Vec::new();
    let key = env("OPENAI_API_KEY").is_some();
    checks.push(match (key, official) {
        (true, _) => "OPENAI_API_KEY is set".into(),
        (false, true) => "OPENAI_API_KEY is not set (required by api.openai.com)".into(),
        (false, false) => "OPENAI_API_KEY is not set (fine for a local server)".into(),
    });
    let reachable = reach(&base, timeout, &mut checks).await;
    rows.push(DoctorRow {
        provider: "openai",
        usable: (key || !official) && reachable,
        endpoint: Some(base),
        checks,
    });

    let mut checks = Vec::new();
    let (usable, endpoint) = match claude_cli::find_in_path("claude", path) {
        None => {
            checks.push("`claude` was not found on PATH".into());
            (false, None)
        }
        Some(path) => {
            checks.push(format!("found {}", path.display()));
            let ok = match claude_cli::version(&path, timeout).await {
                Ok(v) => {
                    checks.push(format!("version {v}"));
                    true
                }
                Err(e) => {
                    checks.push(format!("`claude --version` failed: {e}"));
                    false
                }
            };
            (ok, Some(path.display().to_string()))
        }
    };
    rows.push(DoctorRow {
        provider: "claude-cli",
        usable,
        endpoint,
        checks,
    });
    rows
}

/// TCP-connects to the URL's host and port; records the result in `checks`.
async fn reach(url: &str, timeout: Duration, checks: &mut Vec<String>) -> bool {
    let Ok(parsed) = reqwest::Url::parse(url) else {
        checks.push(format!("{url} is not a valid URL"));
        return false;
    };
    let (Some(host), Some(port)) = (parsed.host_str(), parsed.port_or_known_default()) else {
        checks.push(format!("{url} has no host"));
        return false;
    };
    let host = host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_string();
    match tokio::time::timeout(
        timeout,
        tokio::net::TcpStream::connect((host.as_str(), port)),
    )
    .await
    {
        Ok(Ok(_)) => {
            checks.push(format!("{host}:{port} accepts connections"));
            true
        }
        Ok(Err(e)) => {
            checks.push(format!("{host}:{port} is not reachable: {e}"));
            false
        }
        Err(_) => {
            checks.push(format!(
                "{host}:{port} did not answer within {}s",
                timeout.as_secs_f64()
            ));
            false
        }
    }
}
