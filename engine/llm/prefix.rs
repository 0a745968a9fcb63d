//! Prompts that share a cacheable prefix go out leader first.
//!
//! A provider writes a prompt-cache entry only once its answer to the first request has
//! begun, so the repeats of one prompt sent at the same moment would all miss and all pay
//! the write premium. The first job with a given prefix (model, system prompt, prefix
//! text) asks at once; the others wait until its first ask has finished (or failed), then
//! read the entry it wrote. Waiting holds no concurrency slot.

use std::collections::HashMap;
use std::sync::Mutex;

use sha2::{Digest, Sha256};
use tokio::sync::watch;

/// The leaders of the prefixes seen so far.
#[derive(Debug, Default)]
pub(super) struct PrefixGates {
    gates: Mutex<HashMap<[u8; 32], watch::Receiver<()>>>,
}

/// Held by the first job of a prefix while it asks; dropping it lets the others go.
#[derive(Debug)]
pub(super) struct Leader(#[allow(dead_code)] watch::Sender<()>);

/// The key of a prefix: who answers it and what it holds.
pub(super) fn prefix_key(model: &str, system: Option<&str>, prefix: &str) -> [u8; 32] {
    let mut h = Sha256::new();
    for part in [model, system.unwrap_or_default(), prefix] {
        h.update((part.len() as u64).to_le_bytes());
        h.update(part.as_bytes());
    }
    h.finalize().into()
}

impl PrefixGates {
    /// Waits for this prefix's turn: the first caller leads at once (and gets the guard
    /// to drop when its first ask is done); later callers wait for the leader.
    pub(super) async fn turn(&self, key: [u8; 32]) -> Option<Leader> {
        let waiting = {
            let mut gates = self.gates.lock().unwrap_or_else(|p| p.into_inner());
            match gates.get(&key) {
                Some(rx) => rx.clone(),
                None => {
                    let (tx, rx) = watch::channel(());
                    gates.insert(key, rx);
                    return Some(Leader(tx));
                }
            }
        };
        let mut waiting = waiting;
        // The sender is never used to send: it is dropped when the leader's ask ends,
        // which ends this wait.
        while waiting.changed().await.is_ok() {}
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::time::Duration;

    #[tokio::test]
    async fn followers_wait_for_the_leader_and_other_prefixes_do_not() {
        let gates = Arc::new(PrefixGates::default());
        let a = prefix_key("m", None, "shared");
        let leader = gates.turn(a).await.expect("the first caller leads");
        let follower = {
            let gates = gates.clone();
            tokio::spawn(async move { gates.turn(a).await.is_none() })
        };
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(
            !follower.is_finished(),
            "a follower went before its leader finished"
        );
        // Another prefix is not held up.
        assert!(gates.turn(prefix_key("m", None, "other")).await.is_some());
        drop(leader);
        assert!(
            follower.await.unwrap(),
            "the follower goes once the leader is done"
        );
        // Later callers of a finished prefix go at once.
        assert!(gates.turn(a).await.is_none());
    }

    #[test]
    fn the_key_separates_its_parts() {
        assert_ne!(prefix_key("ab", None, "c"), prefix_key("a", None, "bc"));
        assert_ne!(prefix_key("m", Some("s"), "p"), prefix_key("m", None, "p"));
    }
}
