//! How many requests may be in flight to a provider: an adaptive limit, additive
//! increase and multiplicative decrease (AIMD), as TCP and rate-limited clients use.
//!
//! `--concurrency` is the ceiling and the starting point. A "slow down" answer (429, 529)
//! halves the limit; every success adds `1 / limit`, about one slot per round of
//! requests, until the ceiling. A server that takes one request at a time thus settles
//! near its capacity instead of answering most requests with 429 until they give up.
//! As in TCP, only an answer to a request sent since the last cut cuts again: a burst
//! of 429s to requests sent together is one signal, halving the limit once, not down
//! to one at once.
//!
//! Permits come from a tokio [`Semaphore`] (fair, first come first served); lowering
//! the limit forgets free permits and, while too many are in use, keeps returned ones
//! until the debt is paid.

use std::sync::Mutex;

use tokio::sync::{Semaphore, SemaphorePermit};

/// What a request's answer says about the server's capacity.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signal {
    /// Answered: room for a little more.
    Success,
    /// "Slow down" (429, 529): halve the limit.
    RateLimited,
    /// Anything else (a 500, a timeout): says nothing about capacity.
    Neutral,
}

#[derive(Debug)]
struct State {
    /// The limit, fractional so that additive increase can creep up.
    limit: f64,
    /// Permits in existence (in use or free): `floor(limit)` once debts are paid.
    granted: usize,
    /// Permits in use that must be forgotten, not returned, when released.
    debt: usize,
    /// Lowest and highest whole limit reached, for reports and tests.
    lowest: usize,
    /// Times the limit was cut.
    cuts: u64,
}

/// The adaptive limit shared by every call of a run.
#[derive(Debug)]
pub struct Limiter {
    semaphore: Semaphore,
    ceiling: usize,
    state: Mutex<State>,
}

/// Leave to send one request. Report how it went with [`Permit::finish`]; a permit
/// dropped without a report counts as [`Signal::Neutral`].
#[derive(Debug)]
pub struct Permit<'a> {
    limiter: &'a Limiter,
    permit: Option<SemaphorePermit<'a>>,
    /// The number of cuts when the permit was granted.
    generation: u64,
}

/// What the limiter did over a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LimiterStats {
    /// The whole limit now.
    pub limit: usize,
    /// The lowest whole limit reached.
    pub lowest: usize,
    /// Times a "slow down" answer cut the limit.
    pub cuts: u64,
}

impl Limiter {
    /// A limit starting at, and never above, `ceiling` (at least 1).
    pub fn new(ceiling: usize) -> Limiter {
        let ceiling = ceiling.max(1);
        Limiter {
            semaphore: Semaphore::new(ceiling),
            ceiling,
            state: Mutex::new(State {
                limit: ceiling as f64,
                granted: ceiling,
                debt: 0,
                lowest: ceiling,
                cuts: 0,
            }),
        }
    }

    /// Waits for room under the limit. The semaphore is never closed, so this only
    /// waits; were it closed, the request goes without a permit rather than never.
    pub async fn acquire(&self) -> Permit<'_> {
        let permit = self.semaphore.acquire().await.ok();
        Permit {
            limiter: self,
            permit,
            generation: self.lock().cuts,
        }
    }

    /// The current limit and what happened to it.
    pub fn stats(&self) -> LimiterStats {
        let s = self.lock();
        LimiterStats {
            limit: s.limit.floor() as usize,
            lowest: s.lowest,
            cuts: s.cuts,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Applies a signal, then returns or forgets the permit.
    fn release(&self, permit: Option<SemaphorePermit<'_>>, generation: u64, signal: Signal) {
        let mut s = self.lock();
        match signal {
            Signal::RateLimited if generation == s.cuts => self.cut(&mut s),
            Signal::RateLimited => {}
            Signal::Success => self.grow(&mut s),
            Signal::Neutral => {}
        }
        if let Some(permit) = permit {
            if s.debt > 0 {
                s.debt -= 1;
                permit.forget();
            } else {
                drop(permit);
            }
        }
    }

    /// Halves the limit (never below 1): forgets free permits, and owes the rest.
    fn cut(&self, s: &mut State) {
        let before = s.granted;
        s.limit = (s.limit / 2.0).max(1.0);
        s.cuts += 1;
        let target = s.limit.floor() as usize;
        if target >= before {
            return;
        }
        s.granted = target;
        s.lowest = s.lowest.min(target);
        let excess = before - target;
        let forgotten = self.semaphore.forget_permits(excess);
        s.debt += excess - forgotten;
    }

    /// Adds `1 / limit` (up to the ceiling); a new whole permit first pays off debt.
    fn grow(&self, s: &mut State) {
        s.limit = (s.limit + 1.0 / s.limit).min(self.ceiling as f64);
        let target = s.limit.floor() as usize;
        if target <= s.granted {
            return;
        }
        let mut more = target - s.granted;
        s.granted = target;
        let paid = more.min(s.debt);
        s.debt -= paid;
        more -= paid;
        if more > 0 {
            self.semaphore.add_permits(more);
        }
    }
}

impl Permit<'_> {
    /// Reports how the request went and gives the permit back.
    pub fn finish(mut self, signal: Signal) {
        let permit = self.permit.take();
        self.limiter.release(permit, self.generation, signal);
    }
}

impl Drop for Permit<'_> {
    fn drop(&mut self) {
        if let Some(permit) = self.permit.take() {
            self.limiter
                .release(Some(permit), self.generation, Signal::Neutral);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn halves_once_per_burst_and_creeps_back() {
        let l = Limiter::new(8);
        let burst = acquire_n(&l, 8).await;
        // Every request of a burst answered 429: one signal, one cut.
        for p in burst {
            p.finish(Signal::RateLimited);
        }
        assert_eq!((l.stats().limit, l.stats().cuts), (4, 1));
        assert_eq!(
            l.semaphore.available_permits(),
            4,
            "debts paid by the returns"
        );
        // Requests sent at the new limit cut again, down to one and never below.
        for expected in [2, 1, 1] {
            l.acquire().await.finish(Signal::RateLimited);
            assert_eq!(l.stats().limit, expected);
        }
        assert_eq!(l.stats().lowest, 1);
        assert_eq!(l.semaphore.available_permits(), 1);
        // One success at limit 1 adds a whole slot; then about one per round.
        l.acquire().await.finish(Signal::Success);
        assert_eq!(l.stats().limit, 2);
        assert_eq!(l.semaphore.available_permits(), 2);
        for _ in 0..40 {
            l.acquire().await.finish(Signal::Success);
        }
        assert_eq!(l.stats().limit, 8, "never above the ceiling");
        assert_eq!(l.semaphore.available_permits(), 8);
    }

    #[tokio::test]
    async fn a_cut_while_permits_are_out_is_owed_then_paid() {
        let l = Limiter::new(4);
        let mut out = acquire_n(&l, 4).await;
        out.pop().unwrap().finish(Signal::RateLimited);
        assert_eq!(l.stats().limit, 2);
        // Three permits still out against a limit of two: the next return is kept.
        out.pop().unwrap().finish(Signal::Neutral);
        assert_eq!(l.semaphore.available_permits(), 0);
        out.pop().unwrap().finish(Signal::Neutral);
        assert_eq!(l.semaphore.available_permits(), 1);
        out.pop().unwrap().finish(Signal::Neutral);
        assert_eq!(l.semaphore.available_permits(), 2);
    }

    #[tokio::test]
    async fn neutral_answers_and_drops_change_nothing() {
        let l = Limiter::new(3);
        l.acquire().await.finish(Signal::Neutral);
        drop(l.acquire().await);
        assert_eq!(l.stats().limit, 3);
        assert_eq!(l.semaphore.available_permits(), 3);
    }

    async fn acquire_n(l: &Limiter, n: usize) -> Vec<Permit<'_>> {
        let mut out = Vec::new();
        for _ in 0..n {
            out.push(l.acquire().await);
        }
        out
    }
}
