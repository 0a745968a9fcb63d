//! What calls cost, and a budget that refuses to start a call that could break it.
//!
//! The guard is deliberately pessimistic: before a call it reserves the most the
//! call could cost (prompt tokens estimated generously from its length, plus the
//! full `max_tokens` of output), and after the call it keeps only the real cost.
//! Concurrent calls therefore can never jointly overshoot `--max-cost`.

use std::sync::Mutex;

use crate::provider::Usage;
use crate::provider::models::Price;

/// Why a call was not started.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum BudgetError {
    /// Starting the call could exceed the budget.
    #[error(
        "budget: this call could cost up to ${estimate:.4}, and ${committed:.4} of the \
         ${limit:.4} --max-cost is already spent or committed"
    )]
    Exceeded {
        /// The budget.
        limit: f64,
        /// Spent plus reserved by calls in flight.
        committed: f64,
        /// The most this call could cost.
        estimate: f64,
    },
    /// No price is known, so the guard cannot vouch for the call.
    #[error(
        "budget: no price is known for model `{model}`; give it one under `prices:` in the \
         suite ({{{model}: {{input_per_mtok, output_per_mtok}}}}) or drop --max-cost"
    )]
    UnknownPrice {
        /// The model id.
        model: String,
    },
}

/// An upper estimate of the tokens in `text`: one token per 3 bytes, which
/// over-counts English (about 4 bytes per token) so estimates err high.
pub fn estimate_tokens(text: &str) -> u64 {
    (text.len() as u64).div_ceil(3)
}

/// The most a call could cost: all of `prompt_texts` in, `max_tokens` out.
pub fn estimate_cost(price: &Price, prompt_texts: &[&str], max_tokens: u32) -> f64 {
    let input: u64 = prompt_texts.iter().map(|t| estimate_tokens(t)).sum::<u64>() + 16;
    crate::provider::models::cost(price, input, u64::from(max_tokens))
}

/// The cost of a finished call, when the model's price is known.
pub fn call_cost(
    price: Option<Price>,
    info: Option<&crate::provider::models::ModelInfo>,
    usage: &Usage,
) -> Option<f64> {
    price.map(|p| crate::provider::models::usage_cost(&p, info, usage))
}

#[derive(Debug, Default)]
struct State {
    spent: f64,
    reserved: f64,
}

/// A spending limit shared by all calls of a run.
#[derive(Debug)]
pub struct Budget {
    limit: f64,
    state: Mutex<State>,
}

/// Money set aside for one call in flight; give it back with [`Budget::settle`].
#[derive(Debug)]
#[must_use = "settle the reservation once the call has finished"]
pub struct Reservation {
    amount: f64,
}

impl Budget {
    /// A budget of `limit_usd` dollars.
    pub fn new(limit_usd: f64) -> Self {
        Budget {
            limit: limit_usd,
            state: Mutex::new(State::default()),
        }
    }

    /// The limit.
    pub fn limit(&self) -> f64 {
        self.limit
    }

    /// Reserves `estimate` dollars, or refuses if that could exceed the limit.
    pub fn reserve(&self, estimate: f64) -> Result<Reservation, BudgetError> {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let committed = state.spent + state.reserved;
        if committed + estimate > self.limit {
            return Err(BudgetError::Exceeded {
                limit: self.limit,
                committed,
                estimate,
            });
        }
        state.reserved += estimate;
        Ok(Reservation { amount: estimate })
    }

    /// Releases a reservation and records what the call really cost.
    pub fn settle(&self, reservation: Reservation, actual: f64) {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        state.reserved = (state.reserved - reservation.amount).max(0.0);
        state.spent += actual;
    }

    /// Records money spent without a reservation (a batch request sent by an earlier,
    /// interrupted run).
    pub fn record(&self, actual: f64) {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        state.spent += actual;
    }

    /// Dollars spent so far by finished calls.
    pub fn spent(&self) -> f64 {
        self.state.lock().unwrap_or_else(|p| p.into_inner()).spent
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reservations_block_concurrent_overshoot() {
        let b = Budget::new(1.0);
        let r1 = b.reserve(0.6).unwrap();
        assert!(matches!(b.reserve(0.6), Err(BudgetError::Exceeded { .. })));
        b.settle(r1, 0.1);
        let r2 = b.reserve(0.6).unwrap();
        b.settle(r2, 0.2);
        assert!((b.spent() - 0.3).abs() < 1e-12);
    }

    #[test]
    fn estimates_err_high() {
        let price = Price {
            input_per_mtok: 3.0,
            output_per_mtok: 15.0,
        };
        let prompt = "word ".repeat(4000); // ~5k real tokens
        let est = estimate_cost(&price, &[&prompt], 1000);
        let real = crate::provider::models::cost(&price, 5000, 1000);
        assert!(est >= real, "{est} < {real}");
    }
}
