//! Periodic work: the prune every five minutes (configurable), and on demand through its
//! command channel (`ai threads --prune`, `ai mode`).

use super::state::{Daemon, PruneCommand};
use crate::memory::engine::PruneReport;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio::time::MissedTickBehavior;

pub async fn prune_loop(daemon: Daemon, mut commands: mpsc::Receiver<PruneCommand>) {
    let secs = daemon.config().daemon.prune_interval_secs.max(1);
    let mut tick = tokio::time::interval(Duration::from_secs(secs));
    // A suspended laptop must not wake up to a burst of prunes.
    tick.set_missed_tick_behavior(MissedTickBehavior::Skip);
    tick.tick().await; // the first tick is immediate; startup is not a reason to prune
    let mut shutdown = daemon.subscribe_shutdown();
    loop {
        tokio::select! {
            _ = tick.tick() => {
                let r = prune(&daemon, true, true).await;
                tracing::info!("scheduled prune: {r:?}");
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
    let quota = daemon.config().quota();
    let report = {
        let mut mem = daemon.memory();
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
    daemon.stats().last_prune = Some(now);
    daemon.flush().await;
    super::release_free_memory();
    report
}
