//! Consolidation while the daemon is idle, and on demand (`ai consolidate`): see
//! [`ai_smartness_core::memory::consolidate`].

use super::state::{ConfigHandle, Lifecycle, MemoryHandle, StatsHandle};
use ai_smartness_core::memory::consolidate::Budget;
use ai_smartness_replies::ConsolidationReport;
use std::time::{Duration, Instant};

/// The idle check runs at least this often (more often when the idle time is shorter).
const CHECK_AT_MOST_EVERY: Duration = Duration::from_secs(30);
/// An idle pass plans for at most this long (the memory is locked meanwhile).
const IDLE_BUDGET: Budget = Budget {
    time: Duration::from_millis(200),
};

/// Tidies the threads: merges, splits, retitles.
#[derive(Clone)]
pub struct Consolidator {
    /// What is tidied, and saved after.
    memory: MemoryHandle,
    /// How long the daemon must be idle, read at each check.
    config: ConfigHandle,
    /// When the last request came: idle means none for a while.
    stats: StatsHandle,
    /// The stop the idle loop ends at.
    life: Lifecycle,
}

impl Consolidator {
    pub fn new(
        memory: MemoryHandle,
        config: ConfigHandle,
        stats: StatsHandle,
        life: Lifecycle,
    ) -> Consolidator {
        Consolidator {
            memory,
            config,
            stats,
            life,
        }
    }

    /// Runs a pass whenever the daemon has had no request for `daemon.consolidate_idle_secs` and
    /// the memory changed since the last pass (the setting is read at each check, so an edit of
    /// `config.json` applies without a restart).
    pub async fn idle_loop(self) {
        let mut shutdown = self.life.subscribe_shutdown();
        let first = Duration::from_secs(self.config.get().daemon.consolidate_idle_secs.max(1));
        let mut tick = tokio::time::interval(
            (first / 2).clamp(Duration::from_millis(500), CHECK_AT_MOST_EVERY),
        );
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        tick.tick().await;
        let mut seen_version: Option<u64> = None;
        loop {
            tokio::select! {
                _ = tick.tick() => {}
                _ = shutdown.recv() => break,
            }
            let idle_secs = self.config.get().daemon.consolidate_idle_secs;
            if idle_secs == 0 {
                continue;
            }
            let idle_after = Duration::from_secs(idle_secs);
            let idle = self.stats.idle_for(idle_after);
            let version = self.memory.lock().graph.version();
            if !idle || seen_version == Some(version) {
                continue;
            }
            let report = self.run(false, IDLE_BUDGET).await;
            if !report.consolidation.is_empty() {
                tracing::info!(
                    "consolidation: {} merged, {} split, {} retitled in {} ms",
                    report.consolidation.merges.len(),
                    report.consolidation.splits.len(),
                    report.consolidation.retitles.len(),
                    report.elapsed_ms
                );
            }
            seen_version = Some(self.memory.lock().graph.version());
        }
    }

    /// One pass, on a blocking thread (the memory lock is held while it plans and applies), then
    /// saved.
    pub async fn run(&self, dry_run: bool, budget: Budget) -> ConsolidationReport {
        let memory = self.memory.clone();
        let started = Instant::now();
        let consolidation = tokio::task::spawn_blocking(move || {
            let now = memory.now();
            let mut mem = memory.lock();
            let plan = mem.plan_consolidation(budget);
            if dry_run {
                plan
            } else {
                mem.apply_consolidation(&plan, now)
            }
        })
        .await
        .unwrap_or_default();
        if !dry_run && !consolidation.is_empty() {
            self.memory.flush().await;
        }
        ConsolidationReport {
            dry_run,
            consolidation,
            elapsed_ms: started.elapsed().as_millis() as u64,
        }
    }
}
