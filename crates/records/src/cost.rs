//! Tokens and dollars spent on LLM calls, per UTC day, and the limits checked before each
//! call: what `ai status` shows. The ledger that counts them and its file are the daemon's
//! (`llm_tasks::costs`).

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Refusals before a call; `None` means no limit.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Limits {
    /// Input estimate plus `max_tokens` may not exceed this.
    pub max_tokens_per_call: Option<u32>,
    /// Today's spend plus this call's worst case may not exceed this.
    pub max_cost_per_day_usd: Option<f64>,
}

/// Counters of a day, a model, or all time.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Totals {
    /// Calls that answered.
    pub calls: u64,
    /// Calls that failed after their retries.
    pub failed_calls: u64,
    /// Uncached input tokens.
    pub input_tokens: u64,
    /// Output tokens.
    pub output_tokens: u64,
    /// Input tokens read from the prompt cache.
    pub cache_read_tokens: u64,
    /// Input tokens written to the prompt cache.
    pub cache_write_tokens: u64,
    /// Dollars.
    pub cost_usd: f64,
}

impl Totals {
    /// All tokens.
    pub fn tokens(&self) -> u64 {
        self.input_tokens + self.output_tokens + self.cache_read_tokens + self.cache_write_tokens
    }
}

/// One UTC day.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct DayUsage {
    /// The day's counters.
    #[serde(flatten)]
    pub totals: Totals,
    /// The same per `provider/model`.
    pub by_model: BTreeMap<String, Totals>,
}

/// What `ai status` shows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UsageSnapshot {
    /// Today, `YYYY-MM-DD` UTC.
    pub day: String,
    /// Today's counters.
    pub today: DayUsage,
    /// All time.
    pub total: Totals,
    /// The limits in force.
    pub limits: Limits,
}
