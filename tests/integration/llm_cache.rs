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
    let server = MockServer::start(|_, _| anthropic_text(GOOD, "end_turn")).await;
    let replay = Executor::replay(
        ProviderKind::Anthropic,
        &server.base,
        dir.path(),
        options(1),
    );
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
                reason.contains(&format!(
                    "provider anthropic at {}, model claude-sonnet-5-5",
                    server.base
                )),
                "{reason}"
            );
            assert!(reason.contains("is empty"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
    // Fill the cache, then replay: hits are served, a changed prompt names what differs.
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

/// The one cache file of a cache folder that holds a single entry.
fn only_entry(dir: &std::path::Path) -> std::path::PathBuf {
    let mut files = Vec::new();
    for shard in std::fs::read_dir(dir).unwrap() {
        for file in std::fs::read_dir(shard.unwrap().path()).unwrap() {
            files.push(file.unwrap().path());
        }
    }
    assert_eq!(files.len(), 1, "{files:?}");
    files.remove(0)
}

fn edit(path: &std::path::Path, change: impl Fn(&mut serde_json::Value)) {
    let mut entry: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    change(&mut entry);
    std::fs::write(path, entry.to_string()).unwrap();
}

/// A change made to a stored entry.
type Edit = dyn Fn(&mut serde_json::Value);

/// An edited or torn entry is never served: live, it is a miss that says why (and the
/// fresh verdict replaces it); under replay, the job is unscored with that reason.
#[tokio::test]
async fn entries_are_checked_before_use() {
    let server = MockServer::start(|_, _| anthropic_text(GOOD, "end_turn")).await;
    let replay = |dir: &std::path::Path| {
        Executor::replay(ProviderKind::Anthropic, &server.base, dir, options(1))
    };
    let cases: Vec<(&str, Box<Edit>)> = vec![
        (
            "score 9.5 is outside the scale 1 to 5",
            Box::new(|e| {
                e["verdict"]["score"] = 9.5.into();
                e["verdict"]["confidence"] = 7.into();
            }),
        ),
        (
            "confidence 7 is outside 0..1",
            Box::new(|e| e["verdict"]["confidence"] = 7.into()),
        ),
        (
            "score 3.5 is not a whole number",
            Box::new(|e| e["verdict"]["score"] = 3.5.into()),
        ),
        (
            "it is not a cache entry",
            Box::new(|e| e["verdict"]["sub_scores"] = serde_json::json!({"depth": "x"})),
        ),
        (
            "its stored reply reads as score 4 and confidence 0.9, not the stored verdict's 2 and 0.9",
            Box::new(|e| e["verdict"]["score"] = 2.into()),
        ),
        ("its key", Box::new(|e| e["key"] = "0".repeat(64).into())),
        (
            "its recorded inputs differ from the request in: model",
            Box::new(|e| e["inputs"]["model"] = "another-model".into()),
        ),
    ];
    for (expected, change) in cases {
        let dir = tempfile::tempdir().unwrap();
        run(&server, dir.path(), CacheMode::On, jobs(1)).await;
        let path = only_entry(dir.path());
        edit(&path, change);
        let out = replay(dir.path()).run(jobs(1)).await;
        match &out[0].outcome {
            Outcome::Unscored {
                kind: UnscoredKind::BadCacheEntry,
                reason,
                ..
            } => {
                assert!(reason.contains(expected), "{expected}: {reason}");
                assert!(reason.contains(&path.display().to_string()), "{reason}");
            }
            other => panic!("{expected}: {other:?}"),
        }
        assert!(out[0].cache_problem.as_deref().unwrap().contains(expected));
        // Live: asked again, the problem kept beside the fresh verdict, the entry replaced.
        let hits = server.hits();
        let mut opts = options(1);
        opts.cache = Some(Cache::new(dir.path(), CacheMode::On));
        let out = Executor::new(anthropic(&server, Duration::from_secs(5)), opts)
            .run(jobs(1))
            .await;
        let scored = out[0].outcome.scored().expect("asked again");
        assert!(!scored.cached);
        assert_eq!(scored.verdict.confidence, Some(0.9));
        assert_eq!(server.hits(), hits + 1);
        assert!(out[0].cache_problem.as_deref().unwrap().contains(expected));
        let again = replay(dir.path()).run(jobs(1)).await;
        assert!(again[0].outcome.scored().is_some_and(|s| s.cached));
        assert!(again[0].cache_problem.is_none());
    }
    // A torn file is a reported miss too.
    let dir = tempfile::tempdir().unwrap();
    run(&server, dir.path(), CacheMode::On, jobs(1)).await;
    let path = only_entry(dir.path());
    std::fs::write(&path, "{\"key\": \"ab").unwrap();
    let out = replay(dir.path()).run(jobs(1)).await;
    assert!(
        matches!(&out[0].outcome, Outcome::Unscored { kind: UnscoredKind::BadCacheEntry, reason, .. } if reason.contains("not a cache entry")),
        "{out:?}"
    );
}

/// Verdicts are keyed by the endpoint too: another server's entries are misses.
#[tokio::test]
async fn entries_are_keyed_by_endpoint() {
    let first = MockServer::start(|_, _| anthropic_text(GOOD, "end_turn")).await;
    let second = MockServer::start(|_, _| anthropic_text(GOOD, "end_turn")).await;
    let dir = tempfile::tempdir().unwrap();
    run(&first, dir.path(), CacheMode::On, jobs(2)).await;
    let out = run(&second, dir.path(), CacheMode::On, jobs(2)).await;
    assert!(out.iter().all(|o| o.scored().is_some_and(|s| !s.cached)));
    assert_eq!(second.hits(), 2, "the second server is asked");
    let replay = Executor::replay(
        ProviderKind::Anthropic,
        "http://127.0.0.1:9",
        dir.path(),
        options(1),
    );
    match &replay.run(jobs(1)).await[0].outcome {
        Outcome::Unscored {
            kind: UnscoredKind::ReplayMiss,
            reason,
            ..
        } => assert!(reason.contains("differs in: endpoint"), "{reason}"),
        other => panic!("{other:?}"),
    }
}

/// The cache key changes with every input that decides a reply, and only with those: one
/// field changed at a time, each gives a key of its own.
#[test]
fn the_key_changes_with_every_input_that_decides_a_reply() {
    use caldera::llm::cache::{CacheKey, KeyInputs};
    use caldera::spec::verdict_format::VerdictFormat;
    let format = VerdictFormat::default();
    let regex = VerdictFormat {
        scale: [1.0, 10.0],
        ..VerdictFormat::default()
    };
    let base = KeyInputs {
        provider: "anthropic",
        endpoint: "https://api.anthropic.com",
        model: "claude-sonnet-4-5",
        system: Some("judge"),
        prompt: "rate this",
        max_tokens: 2048,
        temperature: 0.0,
        format: &format,
        repeat: 0,
        reasoning: None,
    };
    let key = |k: &KeyInputs<'_>| CacheKey::new(k).hex;
    let same = key(&KeyInputs { ..base.clone() });
    assert_eq!(key(&base), same, "the key is a function of its inputs");
    let variants = [
        (
            "provider",
            KeyInputs {
                provider: "openai",
                ..base.clone()
            },
        ),
        (
            "endpoint",
            KeyInputs {
                endpoint: "http://127.0.0.1:9",
                ..base.clone()
            },
        ),
        (
            "model",
            KeyInputs {
                model: "claude-opus-4-1",
                ..base.clone()
            },
        ),
        (
            "system prompt",
            KeyInputs {
                system: Some("other"),
                ..base.clone()
            },
        ),
        (
            "no system prompt",
            KeyInputs {
                system: None,
                ..base.clone()
            },
        ),
        (
            "prompt",
            KeyInputs {
                prompt: "rate that",
                ..base.clone()
            },
        ),
        (
            "max tokens",
            KeyInputs {
                max_tokens: 1024,
                ..base.clone()
            },
        ),
        (
            "temperature",
            KeyInputs {
                temperature: 0.5,
                ..base.clone()
            },
        ),
        (
            "verdict format",
            KeyInputs {
                format: &regex,
                ..base.clone()
            },
        ),
        (
            "repeat",
            KeyInputs {
                repeat: 1,
                ..base.clone()
            },
        ),
        (
            "reasoning",
            KeyInputs {
                reasoning: Some(caldera::provider::Reasoning {
                    effort: Some(caldera::spec::reasoning::Effort::High),
                    budget_tokens: None,
                }),
                ..base.clone()
            },
        ),
    ];
    let mut seen = std::collections::HashSet::from([same]);
    for (what, inputs) in &variants {
        assert!(
            seen.insert(key(inputs)),
            "changing the {what} left the key as it was"
        );
    }
}

/// The stored entry at `path`, as JSON.
fn stored(path: &std::path::Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).expect("a JSON entry")
}

/// A reply other than `GOOD`: score 2 and its own reasoning.
const OTHER: &str = r#"{"score": 2, "confidence": 0.6, "reasoning": "second opinion", "evidence_cited": [], "recommendations": [], "sub_scores": {}}"#;

/// A way of breaking an entry file's text.
type Corrupt = dyn Fn(&str) -> String;

/// An entry file that is not JSON (truncated, emptied, overwritten with text) is a live
/// miss that names the file and why, the job is asked again, and the fresh verdict
/// replaces the broken file.
#[tokio::test]
async fn a_corrupt_entry_is_a_reported_miss_and_is_rewritten() {
    let server = MockServer::start(|_, _| anthropic_text(GOOD, "end_turn")).await;
    let truncations: [(&str, Box<Corrupt>); 3] = [
        ("cut in half", Box::new(|t| t[..t.len() / 2].to_owned())),
        ("emptied", Box::new(|_| String::new())),
        (
            "not JSON",
            Box::new(|_| "not a cache entry at all".to_owned()),
        ),
    ];
    for (what, corrupt) in truncations {
        let dir = tempfile::tempdir().unwrap();
        run(&server, dir.path(), CacheMode::On, jobs(1)).await;
        let path = only_entry(dir.path());
        let original = stored(&path);
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::write(&path, corrupt(&text)).unwrap();

        let hits = server.hits();
        let mut opts = options(1);
        opts.cache = Some(Cache::new(dir.path(), CacheMode::On));
        let out = Executor::new(anthropic(&server, Duration::from_secs(5)), opts)
            .run(jobs(1))
            .await;
        let scored = out[0].outcome.scored().expect("asked again");
        assert!(!scored.cached, "{what}");
        assert_eq!(server.hits(), hits + 1, "{what}: one new call");
        let problem = out[0]
            .cache_problem
            .as_deref()
            .expect("the miss is reported");
        assert!(problem.contains("not a cache entry"), "{what}: {problem}");
        assert!(
            problem.contains(&path.display().to_string()),
            "{what}: {problem}"
        );

        // Rewritten in place: a whole entry again, same key, the reply's verdict.
        assert_eq!(only_entry(dir.path()), path);
        let rewritten = stored(&path);
        assert_eq!(rewritten["key"], original["key"], "{what}");
        assert_eq!(
            path.file_stem().and_then(|s| s.to_str()),
            rewritten["key"].as_str()
        );
        assert_eq!(rewritten["reply"], GOOD, "{what}");
        assert_eq!(rewritten["verdict"]["score"], 4.0, "{what}");
        let again = run(&server, dir.path(), CacheMode::On, jobs(1)).await;
        assert!(again[0].scored().is_some_and(|s| s.cached), "{what}");
        assert_eq!(
            server.hits(),
            hits + 1,
            "{what}: served from the rewritten entry"
        );
    }
}

/// `refresh` asks again although an entry exists, and the entry file then holds the new
/// reply and verdict, which a later run is served from.
#[tokio::test]
async fn refresh_rewrites_an_existing_entry() {
    let asked = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = asked.clone();
    let server = MockServer::start(move |_, _| {
        let n = counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        anthropic_text(if n == 0 { GOOD } else { OTHER }, "end_turn")
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    run(&server, dir.path(), CacheMode::On, jobs(1)).await;
    let path = only_entry(dir.path());
    let before = std::fs::read_to_string(&path).unwrap();
    assert_eq!(stored(&path)["verdict"]["score"], 4.0);

    let out = run(&server, dir.path(), CacheMode::Refresh, jobs(1)).await;
    let scored = out[0].scored().expect("scored");
    assert!(!scored.cached);
    assert_eq!(scored.verdict.score, 2.0);
    assert_eq!(server.hits(), 2);

    assert_eq!(only_entry(dir.path()), path, "the same key, one file");
    let after = std::fs::read_to_string(&path).unwrap();
    assert_ne!(after, before);
    let entry = stored(&path);
    assert_eq!(entry["reply"], OTHER);
    assert_eq!(entry["verdict"]["score"], 2.0);
    assert_eq!(entry["verdict"]["reasoning"], "second opinion");

    let served = run(&server, dir.path(), CacheMode::On, jobs(1)).await;
    let served = served[0].scored().expect("scored");
    assert!(served.cached);
    assert_eq!(served.verdict.score, 2.0);
    assert_eq!(server.hits(), 2, "no call after the refresh");
}

/// What a writer killed between its write and its rename leaves behind: temporary files
/// (`.<entry file name>.tmp-<pid>-<n>`) beside the entries, whole or torn. They are
/// never read as entries, never reported, and do not stop the run.
#[tokio::test]
async fn leftover_temporary_files_are_never_read() {
    let server = MockServer::start(|_, _| anthropic_text(GOOD, "end_turn")).await;
    let dir = tempfile::tempdir().unwrap();
    run(&server, dir.path(), CacheMode::On, jobs(1)).await;
    let path = only_entry(dir.path());
    let text = std::fs::read_to_string(&path).unwrap();
    let name = path.file_name().unwrap().to_str().unwrap().to_owned();
    let shard = path.parent().unwrap();
    // The entry was never renamed into place: only its temporary files exist, one whole
    // (the rename did not happen) and one torn.
    std::fs::remove_file(&path).unwrap();
    let whole = shard.join(format!(".{name}.tmp-999999-0"));
    let torn = shard.join(format!(".{name}.tmp-999999-1"));
    std::fs::write(&whole, &text).unwrap();
    std::fs::write(&torn, &text[..text.len() / 3]).unwrap();

    // Replay: a plain miss, not a verdict from the temporary file, not a bad entry.
    let replay = Executor::replay(
        ProviderKind::Anthropic,
        &server.base,
        dir.path(),
        options(1),
    );
    let out = replay.run(jobs(1)).await;
    assert!(
        matches!(
            &out[0].outcome,
            Outcome::Unscored {
                kind: UnscoredKind::ReplayMiss,
                ..
            }
        ),
        "{out:?}"
    );
    assert!(out[0].cache_problem.is_none(), "{out:?}");

    // Live: asked, stored under the entry's own name, nothing reported.
    let out = run(&server, dir.path(), CacheMode::On, jobs(1)).await;
    assert!(out[0].scored().is_some_and(|s| !s.cached));
    assert_eq!(server.hits(), 2);
    assert_eq!(stored(&path)["verdict"]["score"], 4.0);

    // With the entry back, the leftovers beside it change nothing: a hit.
    let out = run(&server, dir.path(), CacheMode::On, jobs(1)).await;
    assert!(out[0].scored().is_some_and(|s| s.cached));
    assert_eq!(server.hits(), 2);
    assert!(
        whole.exists() && torn.exists(),
        "the test's leftovers are still there"
    );
}
