//! Drives the LLM executor against a mock server, for `benches/llm_concurrency.sh`.
//!
//! ```text
//! cargo run --release --example llm_bench -- --base http://127.0.0.1:PORT \
//!     --jobs 200 --concurrency 16 --cache-dir DIR [--cache on|off] [--api anthropic|openai]
//! ```
//!
//! Prints one JSON line: wall time, scored/unscored counts, provider attempts,
//! cache hits.

// A benchmark driver reports on stdout.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::time::{Duration, Instant};

use caldera::llm::cache::{Cache, CacheMode};
use caldera::llm::executor::{Executor, ExecutorOptions, Job, LlmRequest, ProgressMode};
use caldera::provider::{AnthropicProvider, OpenAiProvider, Provider, Secret};
use caldera::spec::verdict_format::VerdictFormat;

fn arg(args: &[String], name: &str) -> Option<String> {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .cloned()
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let base = arg(&args, "--base").ok_or("--base URL is required")?;
    let jobs: usize = arg(&args, "--jobs")
        .unwrap_or_else(|| "200".into())
        .parse()?;
    let concurrency: usize = arg(&args, "--concurrency")
        .unwrap_or_else(|| "16".into())
        .parse()?;
    let api = arg(&args, "--api").unwrap_or_else(|| "anthropic".into());
    let timeout = Duration::from_secs(30);
    let provider = match api.as_str() {
        "openai" => Provider::Openai(OpenAiProvider::new(
            Some(&format!("{base}/v1")),
            None,
            timeout,
        )?),
        _ => Provider::Anthropic(AnthropicProvider::new(
            Some(&base),
            Secret::new("bench-key"),
            timeout,
        )?),
    };
    let mode = match arg(&args, "--cache").as_deref() {
        Some("off") => CacheMode::Off,
        _ => CacheMode::On,
    };
    let cache = arg(&args, "--cache-dir").map(|dir| Cache::new(dir, mode));
    let options = ExecutorOptions {
        concurrency,
        cache,
        progress: ProgressMode::Hidden,
        ..ExecutorOptions::default()
    };
    let batch: Vec<Job> = (0..jobs)
        .map(|i| {
            Job::new(
                format!("job-{i}"),
                "bench",
                Some(format!("item-{i}")),
                LlmRequest {
                    max_tokens: 512,
                    ..LlmRequest::new("sonnet", format!("Judge item {i} of the benchmark."))
                },
                &VerdictFormat::default(),
            )
        })
        .collect::<Result<_, _>>()?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let start = Instant::now();
    let outcomes = runtime.block_on(Executor::new(provider, options).run(batch));
    let wall = start.elapsed().as_secs_f64();
    let scored: Vec<_> = outcomes.iter().filter_map(|o| o.outcome.scored()).collect();
    let attempts: u32 = scored.iter().map(|s| s.attempts).sum();
    let cached = scored.iter().filter(|s| s.cached).count();
    println!(
        "{}",
        serde_json::json!({
            "jobs": jobs, "concurrency": concurrency, "wall_s": (wall * 1000.0).round() / 1000.0,
            "scored": scored.len(), "unscored": outcomes.len() - scored.len(),
            "provider_attempts": attempts, "cache_hits": cached,
        })
    );
    Ok(())
}
