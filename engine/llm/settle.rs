//! Repeats that stop once they agree (`--repeat N --settle K`).
//!
//! The asks of one unit and model form a group. Its first K asks go out as usual; the
//! asks after them wait until those K have ended, and are not sent when all K gave a
//! verdict and every verdict gave the same score: the unit is settled. When any of the K
//! disagree or ended without a verdict, the rest are asked. The rule is explicit and
//! conservative: agreement is judged on the first K only, never on a running tally.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde::Serialize;
use tokio::sync::watch;

/// Where a job stands in its group.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Settle {
    /// The unit and model (every repeat of them shares it).
    pub group: String,
    /// Which repeat this is (0-based).
    pub index: u32,
    /// How many first asks must agree.
    pub first: u32,
}

/// The groups of a run.
#[derive(Debug, Default)]
pub(super) struct SettleGroups {
    groups: Mutex<HashMap<String, Arc<Group>>>,
}

#[derive(Debug)]
struct Group {
    scores: Mutex<Vec<Option<f64>>>,
    /// `None` while the first asks run; then whether they agreed, on which score.
    outcome: watch::Sender<Option<Option<f64>>>,
}

/// Records a first ask's score when dropped (no verdict unless [`Recorder::score`] was
/// called), so a first ask that ends in any way, a failed task included, never leaves
/// the rest of its group waiting.
pub(super) struct Recorder {
    group: Arc<Group>,
    first: u32,
    score: Option<f64>,
}

impl Recorder {
    /// The score this ask gave.
    pub(super) fn score(&mut self, score: Option<f64>) {
        self.score = score;
    }
}

impl Drop for Recorder {
    fn drop(&mut self) {
        let mut scores = self.group.scores.lock().unwrap_or_else(|p| p.into_inner());
        scores.push(self.score);
        if scores.len() as u32 == self.first {
            let agreed = scores
                .first()
                .copied()
                .flatten()
                .filter(|s| scores.iter().all(|o| *o == Some(*s)));
            self.group.outcome.send_replace(Some(agreed));
        }
    }
}

impl SettleGroups {
    fn group(&self, name: &str) -> Arc<Group> {
        let mut groups = self.groups.lock().unwrap_or_else(|p| p.into_inner());
        groups
            .entry(name.to_owned())
            .or_insert_with(|| {
                Arc::new(Group {
                    scores: Mutex::new(Vec::new()),
                    outcome: watch::channel(None).0,
                })
            })
            .clone()
    }

    /// For one of the first asks: the recorder of its score.
    pub(super) fn recorder(&self, settle: &Settle) -> Recorder {
        Recorder {
            group: self.group(&settle.group),
            first: settle.first,
            score: None,
        }
    }

    /// For an ask after the first ones: waits for them, and gives the score they all
    /// agreed on (the ask is then not sent), or `None` (it is asked).
    pub(super) async fn agreed(&self, settle: &Settle) -> Option<f64> {
        let mut rx = self.group(&settle.group).outcome.subscribe();
        let outcome = rx.wait_for(Option::is_some).await.ok()?;
        outcome.flatten()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settle(index: u32) -> Settle {
        Settle {
            group: "g".into(),
            index,
            first: 2,
        }
    }

    #[tokio::test]
    async fn the_rest_wait_for_the_first_asks_and_skip_only_when_they_agree() {
        let groups = Arc::new(SettleGroups::default());
        let later = {
            let groups = groups.clone();
            tokio::spawn(async move { groups.agreed(&settle(2)).await })
        };
        let mut a = groups.recorder(&settle(0));
        a.score(Some(4.0));
        drop(a);
        tokio::task::yield_now().await;
        assert!(
            !later.is_finished(),
            "went before the second first ask ended"
        );
        let mut b = groups.recorder(&settle(1));
        b.score(Some(4.0));
        drop(b);
        assert_eq!(later.await.unwrap(), Some(4.0));
    }

    #[tokio::test]
    async fn disagreement_or_a_missing_verdict_asks_the_rest() {
        for second in [Some(3.0), None] {
            let groups = SettleGroups::default();
            let mut a = groups.recorder(&settle(0));
            a.score(Some(4.0));
            drop(a);
            let mut b = groups.recorder(&settle(1));
            b.score(second);
            drop(b);
            assert_eq!(groups.agreed(&settle(2)).await, None, "{second:?}");
        }
    }
}
