//! Retrying provider calls: exponential backoff with jitter, honouring the server's
//! `retry-after`, bounded in attempts and in time, each attempt under the run's
//! adaptive concurrency limit ([`Limiter`]).
//!
//! Two kinds of trouble are told apart. A failure (a 500, a timeout, a dropped
//! connection) counts against `max_attempts`. A "slow down" answer (429, 529) is not a
//! failure of the request but a sign of too many requests: it lowers the limit, and the
//! request waits its turn again, bounded by `max_rate_limited` answers and, above all,
//! by `max_total`, the time the request may spend on its retries. Time spent queued
//! behind the run's own limit is not counted: that wait is ours, not the server's.
//! `backon`'s `ExponentialBuilder` gives the jittered delays; a server asking for more
//! time than is left ends the retries at once rather than sleeping past the budget.

use std::time::{Duration, Instant};

use backon::{BackoffBuilder, ExponentialBuilder};

use super::limiter::{Limiter, Permit, Signal};
use super::{Provider, ProviderError, ProviderReply, ProviderRequest};

/// How hard to try.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RetryPolicy {
    /// Attempts in all for failures (server errors, timeouts, dropped connections),
    /// the first included (at least 1).
    pub max_attempts: u32,
    /// "Slow down" answers (429, 529) a request may get before it gives up.
    pub max_rate_limited: u32,
    /// First backoff delay.
    pub min_delay: Duration,
    /// Largest backoff delay (a `retry-after` may ask for more, within `max_total`).
    pub max_delay: Duration,
    /// Time a request may spend on attempts and waits between them (not counting the
    /// queue for a slot under the concurrency limit); no retry starts past it.
    pub max_total: Duration,
    /// Random jitter on each delay, so parallel calls do not retry in lockstep.
    pub jitter: bool,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_attempts: 5,
            max_rate_limited: 30,
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
            max_rate_limited: 1,
            ..RetryPolicy::default()
        }
    }
}

/// The result of a retried call and how many attempts it took.
#[derive(Debug)]
pub struct Attempted<T = ProviderReply> {
    /// The final result.
    pub result: Result<T, ProviderError>,
    /// Attempts made (1 = no retry).
    pub attempts: u32,
    /// Why the retries stopped, when they stopped on an error that could have been
    /// retried (the attempt count or the time budget ran out).
    pub gave_up: Option<String>,
}

/// Calls `provider` until it succeeds, fails permanently, or the policy gives up.
/// `first` is a slot already taken for the first attempt, if the caller holds one.
pub async fn complete_with_retry(
    provider: &Provider,
    request: &ProviderRequest,
    policy: &RetryPolicy,
    limiter: &Limiter,
    first: Option<Permit<'_>>,
) -> Attempted {
    retry_with(|| provider.complete(request), policy, limiter, first).await
}

/// Whether an error asks the client to send less (429 rate limit, 529 overloaded).
pub fn is_slow_down(err: &ProviderError) -> bool {
    matches!(
        err,
        ProviderError::Http {
            status: 429 | 529,
            ..
        }
    )
}

fn signal_of<T>(result: &Result<T, ProviderError>) -> Signal {
    match result {
        Ok(_) => Signal::Success,
        Err(e) if is_slow_down(e) => Signal::RateLimited,
        Err(_) => Signal::Neutral,
    }
}

/// The retry loop over any fallible async call, each attempt under `limiter`.
pub async fn retry_with<F, Fut, T>(
    mut call: F,
    policy: &RetryPolicy,
    limiter: &Limiter,
    mut first: Option<Permit<'_>>,
) -> Attempted<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, ProviderError>>,
{
    let mut backoff = ExponentialBuilder::default()
        .with_min_delay(policy.min_delay)
        .with_max_delay(policy.max_delay)
        .without_max_times();
    if policy.jitter {
        backoff = backoff.with_jitter();
    }
    let mut delays = backoff.build();
    let (mut attempts, mut failures, mut slow_downs) = (0u32, 0u32, 0u32);
    let mut spent = Duration::ZERO;
    loop {
        let permit = match first.take() {
            Some(p) => p,
            None => limiter.acquire().await,
        };
        let clock = Instant::now();
        attempts += 1;
        let result = call().await;
        permit.finish(signal_of(&result));
        spent += clock.elapsed();
        let err = match result {
            Ok(v) => return done(Ok(v), attempts, None),
            Err(e) if !e.is_retryable() => return done(Err(e), attempts, None),
            Err(e) => e,
        };
        if is_slow_down(&err) {
            slow_downs += 1;
            if slow_downs >= policy.max_rate_limited.max(1) {
                let why = format!("{slow_downs} rate-limit answers, the most a request takes");
                return done(Err(err), attempts, Some(why));
            }
        } else {
            failures += 1;
            if failures >= policy.max_attempts.max(1) {
                let why = format!("{failures} failed attempts, the most a request makes");
                return done(Err(err), attempts, Some(why));
            }
        }
        let next = delays.next().unwrap_or(policy.max_delay);
        let wait = err.retry_after().map_or(next, |asked| {
            asked.max(next.min(asked + Duration::from_millis(250)))
        });
        if spent + wait > policy.max_total {
            let why = format!(
                "waiting {:.1}s more would pass the {:.0}s retry budget",
                wait.as_secs_f64(),
                policy.max_total.as_secs_f64()
            );
            return done(Err(err), attempts, Some(why));
        }
        tokio::time::sleep(wait).await;
        spent += wait;
    }
}

fn done<T>(
    result: Result<T, ProviderError>,
    attempts: u32,
    gave_up: Option<String>,
) -> Attempted<T> {
    Attempted {
        result,
        attempts,
        gave_up,
    }
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
            max_rate_limited: 4,
            min_delay: Duration::from_millis(1),
            max_delay: Duration::from_millis(5),
            max_total: Duration::from_secs(5),
            jitter: true,
        }
    }

    /// Retries `answer(n)` for attempts n = 1, 2, ...; a retry loop still going after
    /// 3 s (every test policy ends far sooner) fails the test rather than hang it.
    async fn run<T>(
        policy: &RetryPolicy,
        mut answer: impl FnMut(u32) -> Result<T, ProviderError>,
    ) -> Attempted<T> {
        let limiter = Limiter::new(2);
        let mut n = 0;
        let retried = retry_with(
            || {
                n += 1;
                std::future::ready(answer(n))
            },
            policy,
            &limiter,
            None,
        );
        tokio::time::timeout(Duration::from_secs(3), retried)
            .await
            .expect("the retries did not end")
    }

    #[tokio::test]
    async fn retries_transient_errors_then_gives_up() {
        let r: Attempted<()> = run(&fast(3), |_| Err(http(503, None))).await;
        assert!(r.result.is_err());
        assert_eq!(r.attempts, 3);
        assert!(r.gave_up.unwrap().contains("3 failed attempts"));
    }

    #[tokio::test]
    async fn does_not_retry_client_errors() {
        let r: Attempted<()> = run(&fast(3), |_| Err(http(400, None))).await;
        assert!(r.result.is_err());
        assert_eq!((r.attempts, r.gave_up), (1, None));
    }

    #[tokio::test]
    async fn rate_limits_do_not_use_up_the_failure_attempts() {
        // Two failures allowed, four rate-limit answers: a 429 run of three then a
        // success is fine, and failures and 429s are counted apart.
        let r = run(&fast(2), |n| match n {
            1..=3 => Err(http(429, Some(Duration::ZERO))),
            4 => Err(http(500, None)),
            _ => Ok(n),
        })
        .await;
        assert_eq!(r.result, Ok(5));
        assert_eq!(r.attempts, 5);
        let r: Attempted<()> = run(&fast(2), |_| Err(http(429, Some(Duration::ZERO)))).await;
        assert_eq!(r.attempts, 4);
        assert!(r.gave_up.unwrap().contains("4 rate-limit answers"));
    }

    #[tokio::test]
    async fn honours_retry_after_and_the_time_budget() {
        let t = Instant::now();
        let r = run(&fast(3), |n| {
            if n == 1 {
                Err(http(429, Some(Duration::from_millis(120))))
            } else {
                Ok(7)
            }
        })
        .await;
        assert_eq!(r.result, Ok(7));
        assert!(t.elapsed() >= Duration::from_millis(120));
        // A retry-after longer than the whole budget ends the retries at once.
        let policy = RetryPolicy {
            max_total: Duration::from_millis(50),
            ..fast(5)
        };
        let r: Attempted<()> =
            run(&policy, |_| Err(http(429, Some(Duration::from_secs(60))))).await;
        assert_eq!(r.attempts, 1);
        assert!(r.gave_up.unwrap().contains("retry budget"));
    }

    /// A policy whose backoff is exactly `delay` each time, within `max_total`.
    fn steady(delay: Duration, max_total: Duration) -> RetryPolicy {
        RetryPolicy {
            max_attempts: 100,
            max_rate_limited: 100,
            min_delay: delay,
            max_delay: delay,
            max_total,
            jitter: false,
        }
    }

    /// The reason the retries stop at once when the wait is more than the budget of 5 s.
    fn too_long(wait: f64) -> String {
        format!("waiting {wait:.1}s more would pass the 5s retry budget")
    }

    #[test]
    fn the_policies_are_as_documented() {
        let d = RetryPolicy::default();
        assert_eq!((d.max_attempts, d.max_rate_limited), (5, 30));
        assert_eq!(
            (d.min_delay, d.max_delay, d.max_total, d.jitter),
            (
                Duration::from_millis(500),
                Duration::from_secs(30),
                Duration::from_secs(180),
                true
            )
        );
        let none = RetryPolicy::none();
        assert_eq!((none.max_attempts, none.max_rate_limited), (1, 1));
        assert_eq!(none.max_total, d.max_total);
    }

    #[test]
    fn slow_down_answers_are_429_and_529_only() {
        for status in [429, 529] {
            assert!(is_slow_down(&http(status, None)), "{status}");
            assert_eq!(
                signal_of::<()>(&Err(http(status, None))),
                Signal::RateLimited
            );
        }
        for status in [400, 408, 500, 503] {
            assert!(!is_slow_down(&http(status, None)), "{status}");
            assert_eq!(signal_of::<()>(&Err(http(status, None))), Signal::Neutral);
        }
        let timeout = ProviderError::Timeout {
            provider: "t",
            after: Duration::from_secs(1),
        };
        assert!(!is_slow_down(&timeout));
        assert_eq!(signal_of::<()>(&Err(timeout)), Signal::Neutral);
        assert_eq!(signal_of(&Ok(1)), Signal::Success);
    }

    #[tokio::test]
    async fn a_slow_down_cuts_the_limit_and_a_success_does_not() {
        let limiter = Limiter::new(4);
        let policy = fast(3);
        let mut n = 0;
        let r = retry_with(
            || {
                n += 1;
                std::future::ready(if n == 1 {
                    Err(http(529, Some(Duration::ZERO)))
                } else {
                    Ok(n)
                })
            },
            &policy,
            &limiter,
            None,
        )
        .await;
        assert_eq!((r.result.unwrap(), r.attempts), (2, 2));
        assert_eq!(limiter.stats().cuts, 1);
        assert_eq!(limiter.stats().lowest, 2);
    }

    #[tokio::test]
    async fn errors_that_cannot_be_retried_stop_at_once() {
        let permanent = [
            http(401, None),
            http(404, None),
            ProviderError::InvalidResponse {
                provider: "t",
                message: "not json".into(),
            },
            ProviderError::Cli("exit 1".into()),
            ProviderError::Config("no key".into()),
        ];
        for e in permanent {
            let shown = e.to_string();
            let mut once = Some(e);
            let r: Attempted<()> = run(&fast(5), |_| Err(once.take().unwrap())).await;
            assert_eq!((r.attempts, r.gave_up), (1, None), "{shown}");
            assert_eq!(r.result.unwrap_err().to_string(), shown);
        }
        // After retried failures, a permanent one ends the retries without giving up.
        let r: Attempted<()> = run(&fast(5), |n| match n {
            1 => Err(http(503, None)),
            2 => Err(http(429, None)),
            _ => Err(http(401, None)),
        })
        .await;
        assert_eq!((r.attempts, r.gave_up), (3, None));
    }

    #[tokio::test]
    async fn failures_and_slow_downs_are_counted_apart() {
        // Two failures allowed: the second failure ends it, the slow-downs between
        // them do not count.
        let r: Attempted<()> = run(&fast(2), |n| {
            Err(if n % 2 == 1 {
                http(429, Some(Duration::ZERO))
            } else {
                ProviderError::Timeout {
                    provider: "t",
                    after: Duration::from_secs(1),
                }
            })
        })
        .await;
        assert_eq!(r.attempts, 4);
        assert_eq!(
            r.gave_up.as_deref(),
            Some("2 failed attempts, the most a request makes")
        );
        // Four slow-downs allowed, failures between them do not count.
        let r: Attempted<()> = run(&fast(10), |n| {
            Err(if n % 2 == 1 {
                http(503, None)
            } else {
                http(529, Some(Duration::ZERO))
            })
        })
        .await;
        assert_eq!(r.attempts, 8);
        assert_eq!(
            r.gave_up.as_deref(),
            Some("4 rate-limit answers, the most a request takes")
        );
        // A success on the last allowed attempt is a success.
        let r = run(
            &fast(3),
            |n| if n < 3 { Err(http(500, None)) } else { Ok(n) },
        )
        .await;
        assert_eq!((r.result.unwrap(), r.attempts, r.gave_up), (3, 3, None));
    }

    #[tokio::test]
    async fn zero_attempts_means_one() {
        let policy = RetryPolicy {
            max_attempts: 0,
            max_rate_limited: 0,
            ..fast(0)
        };
        let r: Attempted<()> = run(&policy, |_| Err(http(500, None))).await;
        assert_eq!(r.attempts, 1);
        assert_eq!(
            r.gave_up.as_deref(),
            Some("1 failed attempts, the most a request makes")
        );
        let r: Attempted<()> = run(&policy, |_| Err(http(429, None))).await;
        assert_eq!(r.attempts, 1);
        assert_eq!(
            r.gave_up.as_deref(),
            Some("1 rate-limit answers, the most a request takes")
        );
    }

    #[tokio::test]
    async fn the_wait_is_the_backoff_without_a_retry_after() {
        let policy = steady(Duration::from_secs(7), Duration::from_secs(5));
        let r: Attempted<()> = run(&policy, |_| Err(http(503, None))).await;
        assert_eq!(r.attempts, 1);
        assert_eq!(r.gave_up, Some(too_long(7.0)));
    }

    #[tokio::test]
    async fn a_retry_after_is_the_least_wait_and_at_most_250_ms_more() {
        let budget = Duration::from_secs(5);
        let cases = [
            // Backoff 1 ms, asked 10 s: the server's 10 s.
            (Duration::from_millis(1), 10.0, 10.0),
            // Backoff 10.1 s, asked 10 s: the backoff, within 250 ms of what was asked.
            (Duration::from_millis(10_100), 10.0, 10.1),
            // Backoff 60 s, asked 20 s: 20 s and 250 ms at most.
            (Duration::from_secs(60), 20.0, 20.25),
        ];
        for (backoff, asked, wait) in cases {
            let policy = steady(backoff, budget);
            let r: Attempted<()> = run(&policy, |_| {
                Err(http(429, Some(Duration::from_secs_f64(asked))))
            })
            .await;
            assert_eq!(r.attempts, 1);
            assert_eq!(r.gave_up, Some(too_long(wait)), "asked {asked}");
        }
    }

    #[tokio::test]
    async fn the_budget_counts_every_wait() {
        // Waits of 10 ms in a 25 ms budget: two waits fit, the third would pass it.
        let policy = steady(Duration::from_millis(10), Duration::from_millis(25));
        let t = Instant::now();
        let r: Attempted<()> = run(&policy, |_| Err(http(503, None))).await;
        assert_eq!(r.attempts, 3);
        assert_eq!(
            r.gave_up.as_deref(),
            Some("waiting 0.0s more would pass the 0s retry budget")
        );
        assert!(t.elapsed() >= Duration::from_millis(20));
        // A wait within the budget is taken.
        let policy = steady(Duration::from_millis(10), Duration::from_secs(5));
        let r = run(
            &policy,
            |n| if n < 2 { Err(http(503, None)) } else { Ok(n) },
        )
        .await;
        assert_eq!((r.result.unwrap(), r.attempts, r.gave_up), (2, 2, None));
    }
}
