//! Captures on their way into the memory: admitted and journaled (durable before they are
//! acknowledged), queued for the worker in journal order, and marked processed once saved.

use super::stats::StatsHandle;
use ai_smartness_capture::admit::{self, Admission, CaptureRecord};
use ai_smartness_capture::SkipReason;
use ai_smartness_core::clock::SharedClock;
use ai_smartness_proto::protocol::CaptureRequest;
use ai_smartness_store::journal::{Journal, JournalEntry, Sink};
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use tokio::sync::{watch, Notify};

/// What became of an admitted capture.
#[derive(Debug, Clone, PartialEq)]
pub enum Journaled {
    /// Durable in the journal under this seq; the worker will place it.
    Queued(u64),
    /// Nothing worth keeping (empty, private only, too short): not journaled.
    Skipped(SkipReason),
}

/// Why a capture was not journaled.
#[derive(Debug, thiserror::Error)]
pub enum CaptureError {
    /// The client sent something invalid.
    #[error("{0}")]
    Refused(#[from] admit::Refused),
    /// The journal could not make it durable (a full disk, say): nothing was acknowledged.
    #[error("capture not recorded: {0}")]
    Journal(String),
    #[error("capture not recorded: {0}")]
    Internal(String),
}

/// Journaled captures waiting for the worker, in journal order. Fed by the journal's writer
/// thread in seq order (see [`CaptureQueue::sink`]) and by the replay at start.
#[derive(Clone, Default)]
pub struct CaptureQueue {
    /// Shared with the journal's writer thread, which pushes as entries become durable.
    entries: Arc<Mutex<VecDeque<JournalEntry<CaptureRecord>>>>,
    /// Wakes the capture worker.
    work: Arc<Notify>,
}

impl CaptureQueue {
    /// What the journal hands each new durable entry to: the worker then sees captures in
    /// exactly the journal's order and checkpoints only what it processed.
    pub fn sink(&self) -> Sink<CaptureRecord> {
        let queue = self.clone();
        Box::new(move |entries: Vec<_>| queue.push(entries))
    }

    fn push(&self, entries: impl IntoIterator<Item = JournalEntry<CaptureRecord>>) {
        self.entries
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .extend(entries);
        self.work.notify_one();
    }
}

/// Cheap to clone: every clone feeds the same journal and queue.
#[derive(Clone)]
pub struct CaptureHandle {
    parts: Arc<Parts>,
}

struct Parts {
    /// Every capture is durable here before it is acknowledged.
    journal: Journal<CaptureRecord>,
    /// What the worker takes its captures from.
    queue: CaptureQueue,
    /// The highest journal seq processed and saved: `sync`, `compact` and `remember` wait on
    /// it, the worker advances it.
    processed: watch::Sender<u64>,
    /// Dates admissions (a capture from the future is dated now).
    clock: SharedClock,
    /// Captures received, skipped and refused are counted there.
    stats: StatsHandle,
    /// How much of a capture is kept (the config in force says).
    config: super::ConfigHandle,
}

impl CaptureHandle {
    /// Captures into `journal`, fed to `queue`, processed up to `processed` already.
    pub fn new(
        journal: Journal<CaptureRecord>,
        queue: CaptureQueue,
        processed: u64,
        clock: SharedClock,
        stats: StatsHandle,
        config: super::ConfigHandle,
    ) -> CaptureHandle {
        CaptureHandle {
            parts: Arc::new(Parts {
                journal,
                queue,
                processed: watch::channel(processed).0,
                clock,
                stats,
                config,
            }),
        }
    }

    /// Admits a capture (checked, bounded, its time clamped, cleaned and redacted, off the async
    /// workers) and journals it durably: no byte of a secret reaches the journal. The capture
    /// is acknowledged once this returns `Journaled`.
    pub async fn journal_capture(&self, req: CaptureRequest) -> Result<Journaled, CaptureError> {
        let now = self.parts.clock.now();
        let max_chars = self.parts.config.capture_max_chars();
        let admitted = tokio::task::spawn_blocking(move || admit::admit(req, now, max_chars))
            .await
            .map_err(|e| CaptureError::Internal(e.to_string()))?
            .map_err(CaptureError::Refused)?;
        let record = match admitted {
            Admission::Skip(reason) => {
                self.parts.stats.lock().captures_skipped += 1;
                return Ok(Journaled::Skipped(reason));
            }
            Admission::Journal {
                record,
                clamped_from,
            } => {
                if let Some(at) = clamped_from {
                    tracing::warn!(
                        "a {} capture dated {at} is in the future: dated now instead",
                        record.tool
                    );
                }
                *record
            }
        };
        let mark = record.request_mark;
        match self.parts.journal.append(now, record).await {
            Ok(entry) => {
                let mut stats = self.parts.stats.lock();
                // A request's mark is no capture: nothing of it is stored.
                if !mark {
                    stats.captures_received += 1;
                }
                stats.capture_refusals.succeeded();
                Ok(Journaled::Queued(entry.seq))
            }
            Err(e) => {
                self.parts.stats.lock().capture_refusals.failed(&e, now);
                Err(CaptureError::Journal(e.to_string()))
            }
        }
    }

    /// Queues journaled captures for the worker (the replay at start).
    pub fn enqueue(&self, entries: impl IntoIterator<Item = JournalEntry<CaptureRecord>>) {
        self.parts.queue.push(entries);
    }

    /// Up to `max` journaled captures waiting for the worker, oldest first.
    pub fn take_captures(&self, max: usize) -> Vec<JournalEntry<CaptureRecord>> {
        let mut q = self
            .parts
            .queue
            .entries
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        let n = q.len().min(max);
        q.drain(..n).collect()
    }

    /// Resolves when captures are enqueued (the worker waits on it when the queue is empty).
    pub async fn captures_queued(&self) {
        self.parts.queue.work.notified().await
    }

    /// The seq of the last capture journaled.
    pub fn last_seq(&self) -> u64 {
        self.parts.journal.last_seq()
    }

    /// Captures journaled but not yet checkpointed.
    pub fn pending(&self) -> u64 {
        self.parts.journal.pending()
    }

    /// Waits until every capture up to `seq` is processed; false if the daemon is gone first.
    pub async fn wait_processed(&self, seq: u64) -> bool {
        let mut rx = self.parts.processed.subscribe();
        let processed = rx.wait_for(|done| *done >= seq).await.is_ok();
        processed
    }

    /// The worker is done with every capture up to `seq`.
    pub fn mark_processed(&self, seq: u64) {
        self.parts.processed.send_replace(seq);
    }

    /// Forgets the journal's entries up to `seq`, saved in the memory. Blocking: it writes and
    /// syncs.
    pub fn checkpoint_blocking(&self, seq: u64) -> Result<(), ai_smartness_store::StoreError> {
        self.parts.journal.checkpoint(seq)
    }
}
