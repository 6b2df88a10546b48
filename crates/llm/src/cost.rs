//! What a call may cost, known before it is made, and the [`Spending`] check a client makes
//! around each call. The ledger that counts the spending and the limits it enforces live above
//! this crate (the daemon's `llm_tasks::costs`): a provider knows prices, not budgets.

use crate::registry::Pricing;
use crate::{ChatRequest, LlmError, Usage};

/// What a call may use at most, known before it is made.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CallEstimate {
    /// Prompt tokens, estimated at 4 bytes a token.
    pub input_tokens: u64,
    /// The request's `max_tokens`.
    pub max_output_tokens: u32,
    /// The cost if all input is uncached and the output is as long as allowed.
    pub max_cost_usd: f64,
}

impl CallEstimate {
    /// The estimate of `req` at `pricing`.
    pub fn for_request(req: &ChatRequest, pricing: &Pricing) -> CallEstimate {
        let bytes = serde_json::to_string(&req.system).map_or(0, |s| s.len())
            + serde_json::to_string(&req.messages).map_or(0, |s| s.len())
            + serde_json::to_string(&req.tools).map_or(0, |s| s.len());
        let input_tokens = (bytes as u64).div_ceil(4);
        let worst = Usage {
            input_tokens,
            output_tokens: u64::from(req.max_tokens),
            ..Usage::default()
        };
        CallEstimate {
            input_tokens,
            max_output_tokens: req.max_tokens,
            max_cost_usd: pricing.cost(&worst),
        }
    }
}

/// What a client checks before a call and tells after it: limits and the usage ledger live
/// above the provider crate.
pub trait Spending: Send + Sync + std::fmt::Debug {
    /// Refuses a call that would break a limit (an error of kind
    /// [`crate::ErrorKind::BudgetExceeded`]); the call is not made.
    fn check(&self, estimate: &CallEstimate) -> Result<(), LlmError>;
    /// Counts a call that answered. Never fails the call: a ledger that cannot be saved is the
    /// ledger's to report.
    fn record(&self, provider: &str, model: &str, usage: &Usage, cost_usd: f64);
    /// Counts a call that failed after its retries.
    fn record_failure(&self, provider: &str, model: &str);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_estimate_is_the_worst_case() {
        let pricing = Pricing::new(1.0, 5.0, 0.1, 1.25);
        let req = ChatRequest {
            max_tokens: 100,
            ..ChatRequest::simple("", "hello")
        };
        let est = CallEstimate::for_request(&req, &pricing);
        assert!(est.input_tokens > 0 && est.input_tokens < 50);
        assert_eq!(est.max_output_tokens, 100);
        let want = (est.input_tokens as f64 * 1.0 + 100.0 * 5.0) / 1e6;
        assert!((est.max_cost_usd - want).abs() < 1e-12);
    }
}
