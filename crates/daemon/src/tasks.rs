//! Periodic work: the prune every five minutes (configurable), and on demand through its
//! command channel (`ai threads --prune`, `ai mode`).

use super::app::Daemon;
use super::state::PruneCommand;
use ai_smartness_core::memory::engine::PruneReport;
use ai_smartness_store::retention;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio::time::MissedTickBehavior;

pub async fn prune_loop(daemon: Daemon, mut commands: mpsc::Receiver<PruneCommand>) {
    let secs = daemon.config().get().daemon.prune_interval_secs.max(1);
    let mut tick = tokio::time::interval(Duration::from_secs(secs));
    // A suspended laptop must not wake up to a burst of prunes.
    tick.set_missed_tick_behavior(MissedTickBehavior::Skip);
    tick.tick().await; // the first tick is immediate; startup is not a reason to prune
    let mut shutdown = daemon.life().subscribe_shutdown();
    loop {
        tokio::select! {
            _ = tick.tick() => {
                let r = prune(&daemon, true, true).await;
                tracing::info!("scheduled prune: {r:?}");
                daemon.refiner().flush_costs().await;
                let kept = apply_retention(&daemon).await;
                if kept.deleted() > 0 {
                    tracing::info!("retention: {kept:?}");
                }
            }
            Some(cmd) = commands.recv() => match cmd {
                PruneCommand::RunNow { threads, bridges, reply } => {
                    let r = prune(&daemon, threads, bridges).await;
                    tracing::info!("prune on demand: {r:?}");
                    let _ = reply.send(r);
                }
            },
            _ = shutdown.recv() => break,
        }
    }
}

/// One prune: decay and suspension of threads, quota, then bridges. Idempotent.
pub async fn prune(daemon: &Daemon, threads: bool, bridges: bool) -> PruneReport {
    let now = daemon.now();
    let quota = daemon.config().get().quota();
    let report = {
        let mut mem = daemon.memory().lock();
        let mut r = PruneReport::default();
        if threads {
            r = mem.prune_threads(now, quota);
        }
        if bridges {
            let b = mem.prune_bridges(now);
            r.bridges_deleted = b.bridges_deleted;
            r.bridges_weakened = b.bridges_weakened;
            r.bridges_restored = b.bridges_restored;
            r.bridges = b.bridges;
            r.active_threads = b.active_threads;
        }
        r
    };
    daemon.stats().lock().last_prune = Some(now);
    daemon.memory().flush().await;
    super::release_free_memory();
    report
}

/// What one retention pass deleted.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct RetentionReport {
    pub sessions: usize,
    pub runs: usize,
    pub syntheses: usize,
    pub quarantined: usize,
}

impl RetentionReport {
    pub fn deleted(&self) -> usize {
        self.sessions + self.runs + self.syntheses + self.quarantined
    }
}

/// A folder of `.ai/db/` whose files retention deletes by age.
struct AgedFolder {
    /// What its files are, for the log.
    what: &'static str,
    /// Its name under `.ai/db/`.
    name: &'static str,
    /// A file's `NAME.reason.txt` goes with it (quarantined files).
    notes: bool,
    /// The newest file stays whatever its age (the synthesis a continuation reads).
    keep_newest: bool,
    /// Which files it holds; others are left alone.
    is_record: fn(&str) -> bool,
}

const SYNTHESES: AgedFolder = AgedFolder {
    what: "syntheses",
    name: "synthesis",
    notes: false,
    keep_newest: true,
    is_record: |name| name.ends_with(".json"),
};

const QUARANTINE: AgedFolder = AgedFolder {
    what: "quarantined files",
    name: "quarantine",
    notes: true,
    keep_newest: false,
    is_record: |_| true,
};

/// Deletes what the `retention` settings no longer keep: ended sessions, finished runs,
/// synthesis files (the newest stays) and quarantined files. File work runs on a blocking
/// thread; a failure is logged and the rest goes on.
pub async fn apply_retention(daemon: &Daemon) -> RetentionReport {
    let keep = daemon.config().get().retention;
    let now = daemon.now();
    let sessions = daemon.assistant().prune_ended(keep.sessions, now).await;
    let runs = daemon.runs().clone();
    let db = daemon.paths().db();
    let files = tokio::task::spawn_blocking(move || {
        let log = |what: &str, r: std::io::Result<usize>| {
            r.unwrap_or_else(|e| {
                tracing::warn!("retention of {what} failed: {e}");
                0
            })
        };
        let runs = log("runs", runs.prune_finished(keep.runs, now));
        let [syntheses, quarantined] = [(SYNTHESES, keep.synthesis), (QUARANTINE, keep.quarantine)]
            .map(|(folder, keep)| {
                let pruned = retention::prune_folder(
                    &db.join(folder.name),
                    keep,
                    now,
                    folder.notes,
                    folder.keep_newest,
                    folder.is_record,
                );
                log(folder.what, pruned)
            });
        (runs, syntheses, quarantined)
    })
    .await;
    let (runs, syntheses, quarantined) = files.unwrap_or_else(|e| {
        tracing::error!("retention panicked: {e}");
        (0, 0, 0)
    });
    RetentionReport {
        sessions,
        runs,
        syntheses,
        quarantined,
    }
}
