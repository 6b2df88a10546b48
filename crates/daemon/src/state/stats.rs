//! The counters `ai status` and `ai health` report, shared by the parts that count.

use ai_smartness_replies::Stats;
use chrono::{DateTime, Utc};
use std::sync::{Arc, Mutex, MutexGuard};

/// Cheap to clone: every clone counts into the same [`Stats`].
#[derive(Clone, Default)]
pub struct StatsHandle {
    /// One lock over all counters: an update is a few field writes, never held across an await.
    stats: Arc<Mutex<Stats>>,
    /// When the last request arrived (consolidation waits for the daemon to be idle): the
    /// daemon's own state, not a counter it reports.
    last_request: Arc<Mutex<Option<std::time::Instant>>>,
}

impl StatsHandle {
    /// Counters starting from `stats` (what the start-up found: quarantined files, say).
    pub fn new(stats: Stats) -> StatsHandle {
        StatsHandle {
            stats: Arc::new(Mutex::new(stats)),
            last_request: Arc::default(),
        }
    }

    /// Counts a request, and notes when it came.
    pub fn count_request(&self) {
        self.lock().requests += 1;
        *self.last_request.lock().unwrap_or_else(|p| p.into_inner()) =
            Some(std::time::Instant::now());
    }

    /// Whether no request came for `quiet` (none at all counts as quiet).
    pub fn idle_for(&self, quiet: std::time::Duration) -> bool {
        self.last_request
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .is_none_or(|t| t.elapsed() >= quiet)
    }

    /// The counters, locked. Poisoning is survived: they are plain data.
    pub fn lock(&self) -> MutexGuard<'_, Stats> {
        self.stats.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A copy of the counters as they are now.
    pub fn snapshot(&self) -> Stats {
        self.lock().clone()
    }

    /// Records that a hook binary reached the daemon (`ai health` shows when each last did).
    pub fn note_hook(&self, hook: &str, now: DateTime<Utc>) {
        self.lock().hooks.insert(hook.to_string(), now);
    }
}
