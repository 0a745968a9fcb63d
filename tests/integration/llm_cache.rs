//! The verdict cache through the executor: hits make no calls, replay misses are errors.

use std::time::Duration;

use caldera::llm::cache::{Cache, CacheMode};
use caldera::llm::executor::{Executor, Job, Outcome, UnscoredKind};
use caldera::provider::ProviderKind;

use super::llm_http::{KEY, anthropic, job, options};
use super::llm_server::{GOOD, MockServer, anthropic_text};

fn jobs(n: usize) -> Vec<Job> {
    (0..n)
        .map(|i| job(&format!("j{i}"), &format!("prompt number {i}")))
        .collect()
}

async fn run(
    server: &MockServer,
    dir: &std::path::Path,
    mode: CacheMode,
    jobs: Vec<Job>,
) -> Vec<Outcome> {
    let mut opts = options(2);
    opts.cache = Some(Cache::new(dir, mode));
    let out = Executor::new(anthropic(server, Duration::from_secs(5)), opts)
        .run(jobs)
        .await;
    out.into_iter().map(|o| o.outcome).collect()
}

#[tokio::test]
async fn a_second_run_makes_no_calls() {
    let server = MockServer::start(|_, _| anthropic_text(GOOD, "end_turn")).await;
    let dir = tempfile::tempdir().unwrap();
    let first = run(&server, dir.path(), CacheMode::On, jobs(6)).await;
    assert!(first.iter().all(|o| o.scored().is_some_and(|s| !s.cached)));
    assert_eq!(server.hits(), 6);
    let second = run(&server, dir.path(), CacheMode::On, jobs(6)).await;
    assert_eq!(
        server.hits(),
        6,
        "the second run must not call the provider"
    );
    for (a, b) in first.iter().zip(&second) {
        let (a, b) = (a.scored().unwrap(), b.scored().unwrap());
        assert!(b.cached);
        assert_eq!((b.attempts, b.cost_usd), (0, Some(0.0)));
        assert_eq!(a.verdict, b.verdict);
    }
    // Nothing secret on disk, and no temporary files left behind.
    for shard in std::fs::read_dir(dir.path()).unwrap() {
        for file in std::fs::read_dir(shard.unwrap().path()).unwrap() {
            let path = file.unwrap().path();
            assert!(path.extension().is_some_and(|e| e == "json"), "{path:?}");
            assert!(!std::fs::read_to_string(&path).unwrap().contains(KEY));
        }
    }
}

#[tokio::test]
async fn a_restarted_run_only_calls_for_what_is_missing() {
    let server = MockServer::start(|_, _| anthropic_text(GOOD, "end_turn")).await;
    let dir = tempfile::tempdir().unwrap();
    run(&server, dir.path(), CacheMode::On, jobs(3)).await;
    assert_eq!(server.hits(), 3);
    run(&server, dir.path(), CacheMode::On, jobs(8)).await;
    assert_eq!(server.hits(), 8, "only the five new jobs are called");
}

#[tokio::test]
async fn modes_refresh_read_only_and_off() {
    let server = MockServer::start(|_, _| anthropic_text(GOOD, "end_turn")).await;
    let dir = tempfile::tempdir().unwrap();
    run(&server, dir.path(), CacheMode::ReadOnly, jobs(2)).await;
    assert_eq!(
        std::fs::read_dir(dir.path())
            .map(|d| d.count())
            .unwrap_or(0),
        0,
        "read-only never writes"
    );
    run(&server, dir.path(), CacheMode::On, jobs(2)).await;
    run(&server, dir.path(), CacheMode::ReadOnly, jobs(2)).await;
    assert_eq!(server.hits(), 4, "read-only reads");
    run(&server, dir.path(), CacheMode::Refresh, jobs(2)).await;
    assert_eq!(server.hits(), 6, "refresh calls again");
    run(&server, dir.path(), CacheMode::Off, jobs(2)).await;
    assert_eq!(server.hits(), 8, "off ignores the cache");
}

#[tokio::test]
async fn unreadable_replies_are_not_cached() {
    let server = MockServer::start(|_, _| anthropic_text("no verdict here", "end_turn")).await;
    let dir = tempfile::tempdir().unwrap();
    let out = run(&server, dir.path(), CacheMode::On, jobs(1)).await;
    assert!(matches!(
        out[0],
        Outcome::Unscored {
            kind: UnscoredKind::Unreadable,
            ..
        }
    ));
    run(&server, dir.path(), CacheMode::On, jobs(1)).await;
    assert_eq!(server.hits(), 4, "both runs ask and re-ask");
}

#[tokio::test]
async fn replay_misses_are_errors_that_say_why() {
    let dir = tempfile::tempdir().unwrap();
    let replay = Executor::replay(ProviderKind::Anthropic, dir.path(), options(1));
    let out = replay.run(jobs(1)).await;
    match &out[0].outcome {
        Outcome::Unscored {
            kind: UnscoredKind::ReplayMiss,
            reason,
            attempts: 0,
            ..
        } => {
            assert!(reason.contains("no entry for key"), "{reason}");
            assert!(
                reason.contains("provider anthropic, model claude-sonnet-4-5-20250929"),
                "{reason}"
            );
            assert!(reason.contains("is empty"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
    // Fill the cache, then replay: hits are served, a changed prompt names what differs.
    let server = MockServer::start(|_, _| anthropic_text(GOOD, "end_turn")).await;
    run(&server, dir.path(), CacheMode::On, jobs(2)).await;
    let out = replay.run(jobs(2)).await;
    assert!(
        out.iter()
            .all(|o| o.outcome.scored().is_some_and(|s| s.cached))
    );
    let mut changed = job("j0", "prompt number 0, edited");
    changed.request.max_tokens = 999;
    let out = replay.run(vec![changed]).await;
    match &out[0].outcome {
        Outcome::Unscored {
            kind: UnscoredKind::ReplayMiss,
            reason,
            ..
        } => {
            assert!(
                reason.contains("differs in: prompt, max_tokens"),
                "{reason}"
            )
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(server.hits(), 2);
}
