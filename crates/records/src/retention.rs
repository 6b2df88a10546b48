//! How many and how old of a kind of record the periodic prune keeps (set in `config.json`
//! under `retention`). The prune itself is in the store.

use serde::{Deserialize, Serialize};

/// How many and how old: what a kind of record keeps before the periodic prune deletes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Keep {
    /// The newest this many are kept.
    pub max_count: usize,
    /// Anything older than this many days goes, whatever the count.
    pub max_age_days: u32,
}

impl Default for Keep {
    fn default() -> Self {
        Keep {
            max_count: 200,
            max_age_days: 90,
        }
    }
}
