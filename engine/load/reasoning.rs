//! `reasoning:` checked against what the APIs accept, so a run never sends a
//! combination a provider refuses (a thinking budget below 1,024 or not below
//! `max_tokens`), and resolved into what a request carries.

use crate::provider::Reasoning;
use crate::spec::reasoning::ReasoningSpec;

/// The output limit of a verdict without reasoning: enough for the JSON object with its
/// reasoning and recommendations.
pub(crate) const VERDICT_MAX_TOKENS: u32 = 2048;
/// The output limit of a reasoning call when the judge does not set one: room to think
/// plus a verdict's 2,048.
pub(crate) const DEFAULT_MAX_TOKENS: u32 = 16_000;
/// The smallest thinking budget Anthropic accepts.
pub(crate) const MIN_BUDGET: i64 = 1024;

/// The request settings of `spec`: what to ask and the output limit; the error says
/// which value the API would refuse and why.
pub(crate) fn resolve(spec: &ReasoningSpec) -> Result<(Reasoning, u32), (&'static str, String)> {
    let max_tokens = match spec.max_tokens {
        None => DEFAULT_MAX_TOKENS,
        Some(n) => u32::try_from(n).ok().filter(|n| *n > 0).ok_or((
            "max_tokens",
            format!("max_tokens {n} must be a positive whole number"),
        ))?,
    };
    let budget_tokens = match spec.budget_tokens {
        None => None,
        Some(b) if b < MIN_BUDGET => {
            return Err((
                "budget_tokens",
                format!(
                    "a thinking budget of {b} tokens is below the {MIN_BUDGET} the API accepts"
                ),
            ));
        }
        Some(b) if b >= i64::from(max_tokens) => {
            return Err((
                "budget_tokens",
                format!(
                    "a thinking budget of {b} tokens must be below max_tokens ({max_tokens}): \
                     thinking counts toward the output limit, and the API refuses a budget \
                     that leaves no room for the answer"
                ),
            ));
        }
        Some(b) => Some(b as u32),
    };
    Ok((
        Reasoning {
            effort: spec.effort,
            budget_tokens,
        },
        max_tokens,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::reasoning::Effort;

    #[test]
    fn budgets_the_api_refuses_are_refused_here() {
        let spec = |budget: i64, max: Option<i64>| ReasoningSpec {
            budget_tokens: Some(budget),
            max_tokens: max,
            ..ReasoningSpec::default()
        };
        assert_eq!(resolve(&spec(1023, None)).unwrap_err().0, "budget_tokens");
        assert_eq!(
            resolve(&spec(4096, Some(4096))).unwrap_err().0,
            "budget_tokens"
        );
        assert!(resolve(&spec(4096, Some(4097))).is_ok());
        assert_eq!(
            resolve(&ReasoningSpec {
                max_tokens: Some(0),
                ..ReasoningSpec::default()
            })
            .unwrap_err()
            .0,
            "max_tokens"
        );
    }

    #[test]
    fn effort_alone_thinks_adaptively_within_the_default_limit() {
        let (r, max) = resolve(&ReasoningSpec {
            effort: Some(Effort::High),
            ..ReasoningSpec::default()
        })
        .unwrap();
        assert_eq!(
            (r.effort, r.budget_tokens, max),
            (Some(Effort::High), None, DEFAULT_MAX_TOKENS)
        );
    }
}
