//! Embeddings made again: every message's and thread's when the embedder changed or on demand
//! (`ai reindex`), and the words' that have none yet.

use crate::state::{MemoryHandle, ShutdownSignal, StatsHandle};
use crate::unit_vectors::UnitVectors;
use ai_smartness_vectors::EmbedderKind;
use std::path::PathBuf;

/// Why `ai reindex` did not run to the end.
#[derive(Debug, thiserror::Error)]
pub enum ReindexError {
    #[error("a reindex is already running")]
    AlreadyRunning,
    #[error(transparent)]
    Embedding(#[from] ai_smartness_vectors::EmbedError),
}

/// Records which embedder made the stored embeddings: vectors of two models are not comparable,
/// so a change of embedder triggers a reindex at start.
const EMBEDDER_META: &str = "embedder.json";

/// What `embedder.json` records: which embedder made the stored vectors, and their size.
#[derive(serde::Serialize, serde::Deserialize)]
struct EmbedderMeta {
    kind: EmbedderKind,
    /// Written for a person reading the file; the kind alone decides.
    #[serde(default)]
    dim: usize,
}

/// Makes the memory's embeddings again.
#[derive(Clone)]
pub struct Reindexer {
    /// Whose texts are embedded again, and saved after.
    memory: MemoryHandle,
    /// Says a reindex is running (one at a time).
    stats: StatsHandle,
    /// Makes the units' vectors again once the messages' are.
    units: UnitVectors,
    /// Where the embedder that made the stored embeddings is recorded.
    db: PathBuf,
}

impl Reindexer {
    pub fn new(
        memory: MemoryHandle,
        stats: StatsHandle,
        units: UnitVectors,
        db: PathBuf,
    ) -> Reindexer {
        Reindexer {
            memory,
            stats,
            units,
            db,
        }
    }

    /// At start: a reindex when the stored embeddings were made by an embedder whose vectors are
    /// not comparable with the current one's.
    pub async fn reindex_if_embedder_changed(&self) {
        let meta = self.db.join(EMBEDDER_META);
        let current = self.memory.embed().kind();
        let stored: Option<EmbedderKind> = std::fs::read(&meta)
            .ok()
            .and_then(|b| serde_json::from_slice::<EmbedderMeta>(&b).ok())
            .map(|m| m.kind);
        let has_embeddings = self
            .memory
            .lock()
            .graph
            .threads()
            .any(|t| t.embedding.is_some());
        if stored == Some(current) {
            return;
        }
        if let Some(stored) = stored.filter(|s| s.comparable_with(current)) {
            tracing::info!(
                "stored embeddings were made by {stored}, comparable with {current}: kept"
            );
            self.write_embedder_meta();
            return;
        }
        if has_embeddings {
            tracing::warn!("stored embeddings were made by {stored:?}, now {current}: reindexing");
            if let Err(e) = self.reindex().await {
                tracing::error!("reindex failed: {e}");
            }
        } else {
            self.write_embedder_meta();
        }
    }

    /// Embeds, a chunk at a time, the words of the memory that have no vector yet (all of them on
    /// the first start after an upgrade; none once the word file has them). Captures go first:
    /// each chunk is one request to the embedding thread, and theirs queue in between.
    pub async fn embed_missing_words(&self, mut shutdown: ShutdownSignal) {
        const CHUNK: usize = 256;
        let waiting = self.memory.lock().index.new_word_count();
        let mut done = 0;
        while self.memory.lock().index.new_word_count() > 0 {
            tokio::select! {
                n = self.memory.embed_new_words(CHUNK) => done += n,
                _ = shutdown.recv() => return,
            }
        }
        if done > 0 {
            tracing::info!("{done} of {waiting} words without a vector embedded");
            // The word lists and vectors passed through were a burst of allocations.
            crate::release_free_memory();
        }
    }

    fn write_embedder_meta(&self) {
        let meta = self.db.join(EMBEDDER_META);
        let body = EmbedderMeta {
            kind: self.memory.embed().kind(),
            dim: ai_smartness_vectors::DIM,
        };
        if let Err(e) = ai_smartness_proto::atomic::write_json_atomic(&meta, &body) {
            tracing::warn!("cannot record the embedder: {e}");
        }
    }

    /// Recomputes every message's embedding and every thread's from them ([`fold_focus`]).
    ///
    /// [`fold_focus`]: ai_smartness_core::memory::engine::fold_focus
    /// Returns the number of threads reindexed.
    pub async fn reindex(&self) -> Result<usize, ReindexError> {
        {
            // One at a time: two would embed everything twice and race on the vectors.
            let mut stats = self.stats.lock();
            if stats.reindexing {
                return Err(ReindexError::AlreadyRunning);
            }
            stats.reindexing = true;
        }
        let ids: Vec<String> = self
            .memory
            .lock()
            .graph
            .threads()
            .map(|t| t.id.clone())
            .collect();
        let mut done = 0;
        let result = async {
            for chunk in ids.chunks(64) {
                // Copy the texts out, embed without the lock, then write back.
                let mut texts = Vec::new();
                let mut spans = Vec::new();
                {
                    let mem = self.memory.lock();
                    for id in chunk {
                        let Some(t) = mem.graph.thread(id) else {
                            continue;
                        };
                        let start = texts.len();
                        for m in &t.messages {
                            let source = m
                                .metadata
                                .get("source_type")
                                .and_then(|v| v.as_str())
                                .and_then(|s| s.parse().ok())
                                .unwrap_or(ai_smartness_capture::SourceType::Command);
                            let extraction = self
                                .memory
                                .extractor()
                                .extract(&m.content, source)
                                .unwrap_or_default();
                            texts.push(ai_smartness_capture::embedding_text(
                                &m.content,
                                &extraction,
                                source,
                            ));
                        }
                        spans.push((id.clone(), start, texts.len()));
                    }
                }
                let vectors = self.memory.embed().embed(texts).await?;
                let mut mem = self.memory.lock();
                for (id, start, end) in spans {
                    let Some(t) = mem.graph.thread_mut(&id) else {
                        continue;
                    };
                    if start == end {
                        t.embedding = None;
                        continue;
                    }
                    let mut focus: Option<Vec<f32>> = None;
                    for (i, (m, v)) in t.messages.iter_mut().zip(&vectors[start..end]).enumerate() {
                        // Through 8 bits at each step, as the capture path stores it.
                        let old = focus.take();
                        let next =
                            ai_smartness_core::memory::engine::fold_focus(old.as_deref(), i, v);
                        focus = Some(ai_smartness_vectors::quant::QVec::from_unit(&next).to_f32());
                        m.embedding = Some(ai_smartness_vectors::quant::QVec::from_unit(v));
                        // Its units are embedded again below.
                        for u in &mut m.units {
                            u.embedding = None;
                        }
                    }
                    t.embedding = focus.map(|c| ai_smartness_vectors::quant::QVec::from_unit(&c));
                    // Every message's vector changed: its log is written afresh.
                    mem.graph.messages_rewritten(&id);
                    mem.refresh_vectors(&id);
                    done += 1;
                }
            }
            Ok::<(), ReindexError>(())
        }
        .await;
        let result = match result {
            Ok(()) => {
                self.units.request();
                self.units.settled().await;
                Ok(())
            }
            e => e,
        };
        self.stats.lock().reindexing = false;
        // The vectors may have changed length (another embedder): the index takes them all again.
        self.memory.lock().refresh_all_vectors();
        result?;
        self.memory.flush().await;
        self.write_embedder_meta();
        crate::release_free_memory();
        tracing::info!(
            "reindexed {done} threads with {}",
            self.memory.embed().kind()
        );
        Ok(done)
    }
}
