//! `caldera plan --count-tokens`: input tokens counted by the provider instead of
//! estimated. Each distinct prompt is counted once per model (repeats share a count);
//! a count that fails falls back to the estimate, and the plan says so.

use std::collections::HashMap;
use std::sync::Arc;

use sha2::{Digest, Sha256};

use crate::diag::{Code, Diagnostic};
use crate::provider::models::ModelTable;
use crate::provider::{Message, Provider, ProviderKind, ProviderRequest, Role};
use crate::run::llm::PlannedCall;

/// Counts in flight at once.
const CONCURRENCY: usize = 8;

/// What a count is keyed by: the model id and a hash of the system and user prompts.
pub(crate) fn key(table: &ModelTable, call: &PlannedCall) -> (String, String) {
    let request = &call.job.request;
    let mut hash = Sha256::new();
    hash.update(request.system.as_deref().unwrap_or_default().as_bytes());
    hash.update([0]);
    hash.update(request.prompt.as_bytes());
    (
        table.resolve(&request.model).to_owned(),
        hex::encode(hash.finalize()),
    )
}

/// Counts the input tokens of every distinct prompt of `calls`. Only the Anthropic API
/// has a counting endpoint; another provider, or no key, is an error (exit 2), since the
/// user asked for counts and an estimate would pass for one.
pub(crate) fn count_all(
    kind: ProviderKind,
    table: &ModelTable,
    calls: &[PlannedCall],
    timeout: std::time::Duration,
    notes: &mut Vec<String>,
) -> Result<HashMap<(String, String), u64>, Vec<Diagnostic>> {
    let unavailable = |message: String| {
        vec![
            Diagnostic::error(Code::ProviderUnavailable, message)
                .help("drop --count-tokens to estimate tokens from the prompts' length"),
        ]
    };
    if kind != ProviderKind::Anthropic {
        return Err(unavailable(format!(
            "--count-tokens needs the Anthropic API (its token-counting endpoint); the provider is {}",
            kind.name()
        )));
    }
    let provider = match Provider::from_env(Some(kind), timeout) {
        Ok(Provider::Anthropic(p)) => Arc::new(p),
        Ok(_) => {
            return Err(unavailable(
                "the Anthropic provider could not be built".into(),
            ));
        }
        Err(e) => return Err(unavailable(e.to_string())),
    };
    let mut distinct: HashMap<(String, String), ProviderRequest> = HashMap::new();
    for call in calls {
        let k = key(table, call);
        distinct
            .entry(k.clone())
            .or_insert_with(|| ProviderRequest {
                model: k.0,
                system: call.job.request.system.clone(),
                messages: vec![Message {
                    role: Role::User,
                    content: call.job.request.prompt.clone(),
                }],
                max_tokens: call.job.request.max_tokens,
                temperature: None,
                response_schema: call
                    .job
                    .format
                    .response_schema()
                    .cloned()
                    .map(std::sync::Arc::new),
                reasoning: call.job.request.reasoning,
                cache: None,
            });
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| {
            vec![Diagnostic::error(
                Code::Io,
                format!("cannot start the async runtime: {e}"),
            )]
        })?;
    let results = runtime.block_on(async {
        let gate = Arc::new(tokio::sync::Semaphore::new(CONCURRENCY));
        let mut set = tokio::task::JoinSet::new();
        for (k, request) in distinct {
            let (provider, gate) = (provider.clone(), gate.clone());
            set.spawn(async move {
                let _permit = gate.acquire_owned().await.ok();
                (k, provider.count_tokens(&request).await)
            });
        }
        let mut out = Vec::new();
        while let Some(joined) = set.join_next().await {
            if let Ok(r) = joined {
                out.push(r);
            }
        }
        out
    });
    let mut counts = HashMap::new();
    for ((model, prompt), result) in results {
        match result {
            Ok(n) => {
                counts.insert((model, prompt), n);
            }
            Err(e) => notes.push(format!(
                "token count failed for a prompt to {model} ({e}); its tokens are estimated"
            )),
        }
    }
    Ok(counts)
}
