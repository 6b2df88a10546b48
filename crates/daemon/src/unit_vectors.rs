//! The vectors of the units of long captures, made in the background. A capture is placed as
//! soon as its own (short) text is embedded; its units, which together hold its whole text,
//! take the model far longer (about a second for a long file read), and until they have a
//! vector each reads as its message and is found by its words. So a burst of tool calls, or an
//! `ai import` of a long history, is placed in seconds, and the model catches up when nothing
//! else waits for it (its requests go last on the embedder's thread).
//!
//! The work list is the memory itself (the units without a vector), so nothing is queued here
//! but a count of requests; a stop or a crash loses nothing: the next pass finds what is left.

use crate::state::{MemoryHandle, ShutdownSignal};
use ai_smartness_core::memory::engine::Memory;
use ai_smartness_core::memory::types::{Message, Thread};
use std::collections::HashSet;
use std::sync::Arc;
use tokio::sync::watch;

/// Units embedded between two saves: vectors can always be made again, so a crash between
/// saves costs model time, never data, and a thread's message log is not rewritten per batch.
const SAVE_EVERY: usize = 1_024;

/// Makes the missing unit vectors; cheap to clone.
#[derive(Clone)]
pub struct UnitVectors {
    /// Whose units are embedded, and saved after.
    memory: MemoryHandle,
    shared: Arc<Shared>,
}

struct Shared {
    /// Bumped when units may be waiting (a batch of captures placed, a reindex): the filler
    /// runs a pass for each change it sees.
    requested: watch::Sender<u64>,
    /// The last request whose pass has ended: every unit known by then has its vector (or
    /// could not get one).
    filled: watch::Sender<u64>,
}

impl UnitVectors {
    pub fn new(memory: MemoryHandle) -> UnitVectors {
        UnitVectors {
            memory,
            shared: Arc::new(Shared {
                // Starts requested: a store written before units existed, or saved before its
                // units were embedded, is completed at start.
                requested: watch::Sender::new(1),
                filled: watch::Sender::new(0),
            }),
        }
    }

    /// Units may be waiting: the filler makes a pass (requests made meanwhile share one).
    pub fn request(&self) {
        self.shared.requested.send_modify(|n| *n += 1);
    }

    /// Waits until every unit in the memory now has its vector (or the filler has stopped
    /// trying: a failing embedder leaves them read as their messages).
    pub async fn settled(&self) {
        let asked = *self.shared.requested.borrow();
        let mut filled = self.shared.filled.subscribe();
        // An error means the filler is gone (shutdown): nothing more will come.
        let _ = filled.wait_for(|done| *done >= asked).await;
    }

    /// Runs passes until `shutdown`.
    pub async fn run(self, mut shutdown: ShutdownSignal) {
        let mut requested = self.shared.requested.subscribe();
        loop {
            let asked = *requested.borrow_and_update();
            let Some(done) = self.fill(&mut shutdown).await else {
                return;
            };
            if done > 0 {
                tracing::debug!("{done} unit vectors made");
            }
            self.shared.filled.send_replace(asked);
            tokio::select! {
                changed = requested.changed() => if changed.is_err() { return },
                _ = shutdown.recv() => return,
            }
        }
    }

    /// Passes until every unit has its vector: consolidation may move a message to another
    /// thread while a pass embeds its units, and the pass then cannot store them; the next one
    /// finds them where they are. Stops when a pass stores nothing (a failing embedder); `None`
    /// when stopped.
    async fn fill(&self, shutdown: &mut ShutdownSignal) -> Option<usize> {
        let mut total = 0;
        loop {
            let missing = self.missing();
            if missing.is_empty() {
                return Some(total);
            }
            let done = self.fill_once(&missing, shutdown).await?;
            if done == 0 {
                return Some(total);
            }
            total += done;
        }
    }

    /// One pass over `missing`, a batch at a time: how many vectors it stored.
    async fn fill_once(&self, missing: &[UnitKey], shutdown: &mut ShutdownSignal) -> Option<usize> {
        let mut done = 0;
        let mut unsaved = 0;
        for batch in missing.chunks(ai_smartness_embed::IDLE_BATCH) {
            let (keys, texts) = self.texts(batch);
            if !texts.is_empty() {
                let embedding = self.memory.embed().embed_when_idle(texts);
                let vectors = tokio::select! {
                    v = embedding => v,
                    _ = shutdown.recv() => return None,
                };
                match vectors {
                    Ok(v) if v.len() == keys.len() => {
                        let stored = self.store(&keys, v);
                        done += stored;
                        unsaved += stored;
                    }
                    Ok(_) | Err(_) => {
                        tracing::warn!("units could not be embedded: they read as their messages");
                        break;
                    }
                }
            }
            if unsaved >= SAVE_EVERY {
                self.memory.flush().await;
                unsaved = 0;
            }
        }
        if unsaved > 0 {
            self.memory.flush().await;
        }
        Some(done)
    }

    /// (thread, message id, unit) of every unit without a vector.
    fn missing(&self) -> Vec<UnitKey> {
        let mem = self.memory.lock();
        without_vector(&mem)
            .map(|(t, m, unit)| UnitKey {
                thread: t.id.clone(),
                message: m.id.clone(),
                unit,
            })
            .collect()
    }

    /// What to embed for each unit still in the memory where it was found (consolidation may
    /// have moved or removed it since: the next pass finds it where it is).
    fn texts(&self, batch: &[UnitKey]) -> (Vec<UnitKey>, Vec<String>) {
        let mem = self.memory.lock();
        batch
            .iter()
            .filter_map(|key| {
                let m = mem
                    .graph
                    .thread(&key.thread)?
                    .messages
                    .iter()
                    .find(|m| m.id == key.message)?;
                let label = m.unit_label(key.unit).unwrap_or_default();
                let text =
                    ai_smartness_capture::units::embedding_text(label, m.unit_text(key.unit));
                Some((key.clone(), text))
            })
            .unzip()
    }

    /// Stores each vector on its unit, if its message is still where it was found: how many.
    fn store(&self, keys: &[UnitKey], vectors: Vec<Vec<f32>>) -> usize {
        let mut mem = self.memory.lock();
        let mut touched = HashSet::new();
        let mut stored = 0;
        for (key, v) in keys.iter().zip(vectors) {
            let unit = mem
                .graph
                .thread_mut(&key.thread)
                .and_then(|t| t.messages.iter_mut().find(|m| m.id == key.message))
                .and_then(|m| m.units.get_mut(key.unit));
            if let Some(u) = unit {
                u.embedding = Some(ai_smartness_vectors::quant::QVec::from_unit(&v));
                touched.insert(key.thread.as_str());
                stored += 1;
            }
        }
        for t in touched {
            mem.graph.messages_rewritten(t);
            mem.refresh_vectors(t);
        }
        stored
    }
}

/// Units of `memory` still without a vector, for `ai status` (one look at each unit: well
/// under a millisecond for a year of work).
pub fn missing_count(memory: &Memory) -> usize {
    without_vector(memory).count()
}

/// Every unit of `memory` without a vector: its thread, its message, its place in the message.
fn without_vector(memory: &Memory) -> impl Iterator<Item = (&Thread, &Message, usize)> {
    memory.graph.threads().flat_map(|t| {
        t.messages.iter().flat_map(move |m| {
            m.units
                .iter()
                .enumerate()
                .filter(|(_, u)| u.embedding.is_none())
                .map(move |(k, _)| (t, m, k))
        })
    })
}

/// Where one unit is: its thread, its message, its place among the message's units.
#[derive(Debug, Clone)]
struct UnitKey {
    thread: String,
    message: String,
    unit: usize,
}
