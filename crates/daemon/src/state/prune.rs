//! Asking the prune task ([`crate::tasks`]) for a prune now: `ai threads --prune`, and a lower
//! quota (`ai mode`, an edit of `config.json`) that suspends the lightest threads at once.

use ai_smartness_core::memory::engine::PruneReport;
use tokio::sync::{mpsc, oneshot};

/// What the prune task can be asked to do.
pub enum PruneCommand {
    RunNow {
        threads: bool,
        bridges: bool,
        reply: oneshot::Sender<PruneReport>,
    },
}

/// Cheap to clone: a sender to the one prune task.
#[derive(Clone)]
pub struct PruneHandle {
    /// One task prunes, so two prunes never interleave their changes.
    commands: mpsc::Sender<PruneCommand>,
}

impl PruneHandle {
    pub fn new(commands: mpsc::Sender<PruneCommand>) -> PruneHandle {
        PruneHandle { commands }
    }

    /// Asks for a prune of the threads, the bridges, or both; the report comes on the
    /// receiver. `None` when the daemon is stopping (the task takes no more work).
    pub async fn run_now(
        &self,
        threads: bool,
        bridges: bool,
    ) -> Option<oneshot::Receiver<PruneReport>> {
        let (reply, report) = oneshot::channel();
        self.commands
            .send(PruneCommand::RunNow {
                threads,
                bridges,
                reply,
            })
            .await
            .ok()?;
        Some(report)
    }
}
