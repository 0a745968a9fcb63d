//! Retrying provider calls: exponential backoff with jitter, honouring the
//! server's `retry-after`, bounded in attempts and in total time.
//!
//! Built on `backon`: its `ExponentialBuilder` gives the jittered schedule, and
//! its `adjust` hook swaps in the server's requested delay and enforces the
//! overall deadline (a server asking for more time than is left ends the retries
//! now rather than sleeping past the deadline).

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use backon::{ExponentialBuilder, Retryable};

use super::{Provider, ProviderError, ProviderReply, ProviderRequest};

/// How hard to try.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RetryPolicy {
    /// Attempts in all, including the first (at least 1).
    pub max_attempts: u32,
    /// First backoff delay.
    pub min_delay: Duration,
    /// Largest backoff delay (a `retry-after` may ask for more, within `max_total`).
    pub max_delay: Duration,
    /// No retry is started after this much time since the first attempt.
    pub max_total: Duration,
    /// Random jitter on each delay, so parallel calls do not retry in lockstep.
    pub jitter: bool,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_attempts: 5,
            min_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(30),
            max_total: Duration::from_secs(180),
            jitter: true,
        }
    }
}

impl RetryPolicy {
    /// No retries at all.
    pub fn none() -> Self {
        RetryPolicy {
            max_attempts: 1,
            ..RetryPolicy::default()
        }
    }
}

/// The result of a retried call and how many attempts it took.
#[derive(Debug)]
pub struct Attempted {
    /// The final result.
    pub result: Result<ProviderReply, ProviderError>,
    /// Attempts made (1 = no retry).
    pub attempts: u32,
}

/// Calls `provider` until it succeeds, fails permanently, or the policy gives up.
pub async fn complete_with_retry(
    provider: &Provider,
    request: &ProviderRequest,
    policy: &RetryPolicy,
) -> Attempted {
    let attempts = Arc::new(AtomicU32::new(0));
    let counter = attempts.clone();
    let call = || {
        counter.fetch_add(1, Ordering::Relaxed);
        provider.complete(request)
    };
    let result = retry(call, policy).await;
    Attempted {
        result,
        attempts: attempts.load(Ordering::Relaxed),
    }
}

/// The retry loop over any fallible async call, for callers with their own call.
pub async fn retry<F, Fut, T>(call: F, policy: &RetryPolicy) -> Result<T, ProviderError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, ProviderError>>,
{
    let mut backoff = ExponentialBuilder::default()
        .with_min_delay(policy.min_delay)
        .with_max_delay(policy.max_delay)
        .with_max_times(policy.max_attempts.saturating_sub(1) as usize);
    if policy.jitter {
        backoff = backoff.with_jitter();
    }
    let start = Instant::now();
    let max_total = policy.max_total;
    call.retry(backoff)
        .sleep(tokio::time::sleep)
        .when(ProviderError::is_retryable)
        .adjust(move |err: &ProviderError, next: Option<Duration>| {
            let next = next?;
            let wait = err.retry_after().map_or(next, |asked| {
                asked.max(next.min(asked + Duration::from_millis(250)))
            });
            (start.elapsed() + wait <= max_total).then_some(wait)
        })
        .await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn http(status: u16, retry_after: Option<Duration>) -> ProviderError {
        ProviderError::Http {
            provider: "t",
            status,
            message: String::new(),
            retry_after,
        }
    }

    fn fast(max_attempts: u32) -> RetryPolicy {
        RetryPolicy {
            max_attempts,
            min_delay: Duration::from_millis(1),
            max_delay: Duration::from_millis(5),
            max_total: Duration::from_secs(5),
            jitter: true,
        }
    }

    #[tokio::test]
    async fn retries_transient_errors_then_gives_up() {
        let mut n = 0;
        let r: Result<(), _> = retry(
            || {
                n += 1;
                async { Err(http(503, None)) }
            },
            &fast(3),
        )
        .await;
        assert!(r.is_err());
        assert_eq!(n, 3);
    }

    #[tokio::test]
    async fn does_not_retry_client_errors() {
        let mut n = 0;
        let r: Result<(), _> = retry(
            || {
                n += 1;
                async { Err(http(400, None)) }
            },
            &fast(3),
        )
        .await;
        assert!(r.is_err());
        assert_eq!(n, 1);
    }

    #[tokio::test]
    async fn honours_retry_after_and_the_total_deadline() {
        let t = Instant::now();
        let mut n = 0;
        let r = retry(
            || {
                n += 1;
                let first = n == 1;
                async move {
                    if first {
                        Err(http(429, Some(Duration::from_millis(120))))
                    } else {
                        Ok(7)
                    }
                }
            },
            &fast(3),
        )
        .await;
        assert_eq!(r, Ok(7));
        assert!(t.elapsed() >= Duration::from_millis(120));
        // A retry-after longer than the whole budget ends the retries at once.
        let policy = RetryPolicy {
            max_total: Duration::from_millis(50),
            ..fast(5)
        };
        let mut calls = 0;
        let r: Result<(), _> = retry(
            || {
                calls += 1;
                async { Err(http(429, Some(Duration::from_secs(60)))) }
            },
            &policy,
        )
        .await;
        assert!(r.is_err());
        assert_eq!(calls, 1, "no retry is scheduled past the deadline");
    }
}
