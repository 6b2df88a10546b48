//! The daemon's run inside the process: when it started, the stop every task listens for, and
//! the tasks spawned for requests that the stop waits for. (The process itself, its lock and
//! pid file, is [`crate::lifecycle`].)

use chrono::{DateTime, Utc};
use std::sync::Arc;
use tokio::sync::watch;
use tokio_util::task::TaskTracker;

/// Cheap to clone: every clone shares one stop and one set of tasks.
#[derive(Clone)]
pub struct Lifecycle {
    parts: Arc<Parts>,
}

struct Parts {
    /// For `ai status`'s uptime, and to save at shutdown the sessions changed since.
    started_at: DateTime<Utc>,
    /// Turns true once on shutdown; every task and connection listens. A value, not a message:
    /// a task that starts listening after the stop was asked for still sees it.
    shutdown: watch::Sender<bool>,
    /// Every task spawned for a request (rounds, runs, syntheses, saves in the background,
    /// connections): shutdown waits for them (bounded) instead of cutting them off.
    tasks: TaskTracker,
}

impl Lifecycle {
    /// A daemon run starting now.
    pub fn start(started_at: DateTime<Utc>) -> Lifecycle {
        Lifecycle {
            parts: Arc::new(Parts {
                started_at,
                shutdown: watch::channel(false).0,
                tasks: TaskTracker::new(),
            }),
        }
    }

    /// When this daemon started.
    pub fn started_at(&self) -> DateTime<Utc> {
        self.parts.started_at
    }

    /// Asks every task and connection to stop.
    pub fn trigger_shutdown(&self) {
        self.parts.shutdown.send_replace(true);
    }

    pub fn subscribe_shutdown(&self) -> ShutdownSignal {
        ShutdownSignal(self.parts.shutdown.subscribe())
    }

    /// Spawns `task` among the tracked tasks: shutdown waits for it.
    pub fn spawn<F>(&self, task: F) -> tokio::task::JoinHandle<F::Output>
    where
        F: std::future::Future + Send + 'static,
        F::Output: Send + 'static,
    {
        self.parts.tasks.spawn(task)
    }

    /// The tasks spawned for requests ([`Lifecycle::spawn`]); shutdown closes and waits for them.
    pub fn tasks(&self) -> &TaskTracker {
        &self.parts.tasks
    }
}

/// Resolves once the daemon is stopping (at once if it already is).
pub struct ShutdownSignal(watch::Receiver<bool>);

impl ShutdownSignal {
    /// Waits for the stop. A dropped sender means the daemon is gone: that is a stop too.
    pub async fn recv(&mut self) {
        let _ = self.0.wait_for(|stopping| *stopping).await;
    }
}
