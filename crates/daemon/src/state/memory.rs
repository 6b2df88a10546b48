//! The memory and what reads or writes it: its lock, the store it is saved to, the embedder
//! and the extractor its texts go through, the ranking cache, the clock it is dated by.

use super::stats::StatsHandle;
use ai_smartness_capture::extract::Extractor;
use ai_smartness_core::clock::SharedClock;
use ai_smartness_core::memory::engine::Memory;
use ai_smartness_core::memory::graph::Changes;
use ai_smartness_core::retrieve::related::{query_words, MAX_EMBEDDED_WITH_QUERY};
use ai_smartness_core::retrieve::QueryVectors;
use ai_smartness_embed::EmbedService;
use ai_smartness_replies::Refusing;
use ai_smartness_store::words::WordVectorFile;
use ai_smartness_store::Store;
use ai_smartness_vectors::quant::QVec;
use chrono::{DateTime, Utc};
use std::sync::{Arc, Mutex, MutexGuard};

/// Cheap to clone: every clone locks the same memory.
#[derive(Clone)]
pub struct MemoryHandle {
    parts: Arc<Parts>,
}

struct Parts {
    /// The whole memory; locked briefly, never across an await.
    memory: Mutex<Memory>,
    /// Where the memory is saved (and the compaction syntheses next to it).
    store: Store,
    /// Serialises flushes, so an older copy of a thread is never written after a newer one.
    flush_lock: Mutex<()>,
    /// Rankings by query, valid while the memory does not change.
    retrieval_cache: ai_smartness_core::retrieve::Cache,
    /// The embedding thread every text of the memory and every query goes through.
    embed: EmbedService,
    /// Keeps the memory's word vectors across restarts (appended as words arrive).
    word_file: WordVectorFile,
    /// Titles, topics and decisions of captures and queries, found locally.
    extractor: Box<dyn Extractor>,
    /// Where time comes from (decay, ids, expiries).
    clock: SharedClock,
    /// A failed save is counted and reported there (`ai health`) until a save works again.
    stats: StatsHandle,
    /// Counts the saves that wrote a change: whoever shows the memory (the dashboard) waits on
    /// it. A value, not a queue: a slow reader sees the latest count, nothing piles up.
    saved: tokio::sync::watch::Sender<u64>,
}

impl MemoryHandle {
    pub fn new(
        memory: Memory,
        store: Store,
        embed: EmbedService,
        word_file: WordVectorFile,
        extractor: Box<dyn Extractor>,
        clock: SharedClock,
        stats: StatsHandle,
    ) -> MemoryHandle {
        MemoryHandle {
            parts: Arc::new(Parts {
                memory: Mutex::new(memory),
                store,
                flush_lock: Mutex::new(()),
                retrieval_cache: Default::default(),
                embed,
                word_file,
                extractor,
                clock,
                stats,
                saved: tokio::sync::watch::channel(0).0,
            }),
        }
    }

    /// Changes each time a save writes something (threads or bridges changed).
    pub fn subscribe_saved(&self) -> tokio::sync::watch::Receiver<u64> {
        self.parts.saved.subscribe()
    }

    /// The memory, locked. Poisoning is survived: the memory is plain data.
    pub fn lock(&self) -> MutexGuard<'_, Memory> {
        self.parts.memory.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn now(&self) -> DateTime<Utc> {
        self.parts.clock.now()
    }

    /// Where time comes from.
    pub fn clock(&self) -> &SharedClock {
        &self.parts.clock
    }

    pub fn store(&self) -> &Store {
        &self.parts.store
    }

    pub fn embed(&self) -> &EmbedService {
        &self.parts.embed
    }

    /// The local extractor (titles, topics, decisions) captures and queries go through.
    pub fn extractor(&self) -> &dyn Extractor {
        self.parts.extractor.as_ref()
    }

    /// Rankings by query, valid while the memory does not change.
    pub fn retrieval_cache(&self) -> &ai_smartness_core::retrieve::Cache {
        &self.parts.retrieval_cache
    }

    /// A query's embedding (of the text without the words most of the memory shares, pooled
    /// from one pass of the model over the text:
    /// [`ai_smartness_vectors::Embedder::embed_focused`]), and its words' vectors for related
    /// words (from the memory's table, else embedded now, a few at most), off the memory lock,
    /// before the background work queued. Every search of the memory embeds its query here.
    pub async fn embed_query(
        &self,
        text: String,
    ) -> Result<QueryVectors, ai_smartness_vectors::EmbedError> {
        let plan = self.plan_query(&text);
        self.embed_planned(text, plan).await
    }

    /// What [`MemoryHandle::embed_query`] reads from the memory, under its lock, before the
    /// model runs: the query's words are known from here on (a team search asks for them while
    /// the query is embedded).
    pub fn plan_query(&self, text: &str) -> QueryPlan {
        let mem = self.lock();
        let mut known = Vec::new();
        let mut missing = Vec::new();
        for (stem, word) in query_words(text, &mem.index) {
            match mem.words.get(&stem) {
                Some(v) => known.push((stem, v)),
                None if missing.len() < MAX_EMBEDDED_WITH_QUERY => missing.push((stem, word)),
                None => {}
            }
        }
        QueryPlan {
            leave_out: mem.index.common_word_ranges(text),
            known,
            missing,
        }
    }

    /// [`MemoryHandle::embed_query`] of `text` as `plan` (made for that same text) says.
    pub async fn embed_planned(
        &self,
        text: String,
        plan: QueryPlan,
    ) -> Result<QueryVectors, ai_smartness_vectors::EmbedError> {
        let QueryPlan {
            leave_out,
            known: mut words,
            missing,
        } = plan;
        let started = std::time::Instant::now();
        let (whole, focused) = self.embed().embed_focused(text, leave_out).await?;
        let pass = started.elapsed();
        // The focus alone: blending the whole text back in did no better (LoCoMo evidence
        // recall at 1,000 tokens 0.821 / 0.605 multi-hop blended, 0.825 / 0.606 alone).
        let embedding = focused.unwrap_or(whole);
        let texts = missing.iter().map(|(_, w)| w.clone()).collect();
        let vectors = self.embed().embed_for_query(texts).await?;
        tracing::debug!(
            "query embedded in {pass:?}, then {} new words in {:?}",
            missing.len(),
            started.elapsed() - pass
        );
        for ((stem, _), v) in missing.into_iter().zip(vectors) {
            words.push((stem, QVec::from_unit(&v)));
        }
        Ok(QueryVectors { embedding, words })
    }

    /// Gives up to `max` of the memory's new words their vector (see
    /// [`ai_smartness_core::retrieve::related`]), and keeps them in the word file. Returns how many; a
    /// failure is logged, and those words go without.
    pub async fn embed_new_words(&self, max: usize) -> usize {
        let words = self.lock().index.take_new_words(max);
        if words.is_empty() {
            return 0;
        }
        let texts = words.iter().map(|(_, w)| w.clone()).collect();
        let vectors = match self.embed().embed_kept_elsewhere(texts).await {
            Ok(v) => v,
            Err(e) => {
                tracing::warn!("{} words left without a vector: {e}", words.len());
                return 0;
            }
        };
        let rows: Vec<(String, QVec)> = words
            .into_iter()
            .zip(vectors)
            .filter(|(_, v)| v.len() == ai_smartness_vectors::DIM)
            .map(|((stem, _), v)| (stem, QVec::from_unit(&v)))
            .collect();
        {
            let mut mem = self.lock();
            for (stem, v) in &rows {
                mem.words.insert(stem, v);
            }
        }
        let n = rows.len();
        let parts = Arc::clone(&self.parts);
        let saved = tokio::task::spawn_blocking(move || parts.word_file.append(&rows)).await;
        if let Ok(Err(e)) = saved {
            tracing::warn!("word vectors not saved (they will be embedded again): {e}");
        }
        n
    }

    /// Writes what changed in the memory to disk, off the async workers. A failed write is put
    /// back to be retried at the next flush (and counted); the journal is only checkpointed
    /// after a successful flush, so nothing is lost either way.
    pub async fn flush(&self) -> bool {
        let memory = self.clone();
        tokio::task::spawn_blocking(move || memory.flush_blocking())
            .await
            .unwrap_or(false)
    }

    /// [`MemoryHandle::flush`] on the calling thread (a blocking one).
    pub fn flush_blocking(&self) -> bool {
        let _serial = self
            .parts
            .flush_lock
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        let changes = self.lock().graph.take_changes();
        if changes.is_empty() {
            return true;
        }
        match self.write_changes(&changes) {
            Ok(()) => {
                self.lock().graph.saved(&changes);
                self.parts.saved.send_modify(|n| *n += 1);
                if self.parts.stats.lock().save_failing.take().is_some() {
                    tracing::info!("saving the memory works again");
                }
                true
            }
            Err(e) => {
                let now = self.now();
                let mut stats = self.parts.stats.lock();
                stats.persist_errors += 1;
                if stats.save_failing.is_none() {
                    tracing::error!("saving the memory failed, will retry: {e}");
                    stats.save_failing = Some(Refusing {
                        reason: e.to_string(),
                        since: now,
                    });
                }
                drop(stats);
                self.lock().graph.restore_changes(&changes);
                false
            }
        }
    }

    fn write_changes(&self, c: &Changes) -> Result<(), ai_smartness_store::StoreError> {
        let store = &self.parts.store;
        // One folder fsync per batch, not one per file.
        store.save_threads(&c.save_threads)?;
        store.save_bridges(&c.save_bridges)?;
        for id in &c.delete_bridges {
            store.delete_bridge(id)?;
        }
        for id in &c.delete_threads {
            store.delete_thread(id)?;
        }
        if c.indexes {
            // Ids taken under the lock; serialized and written after it is released, so the
            // hooks waiting on the memory do not wait on the disk.
            let snapshot = {
                let mem = self.lock();
                store.index_snapshot(mem.graph.threads(), mem.graph.bridges())
            };
            store.write_index_snapshot(snapshot)?;
        }
        Ok(())
    }
}

/// A query's words, read from the memory before it is embedded ([`MemoryHandle::plan_query`]).
#[derive(Debug, Clone, Default)]
pub struct QueryPlan {
    /// Where the words most of the memory shares are in the text: left out of its focus.
    leave_out: Vec<std::ops::Range<usize>>,
    /// Words of the query with a vector in the memory's table: (stem, vector).
    known: Vec<(String, QVec)>,
    /// Words without one, embedded with the query: (stem, word as written).
    missing: Vec<(String, String)>,
}

impl QueryPlan {
    /// The stems of the query's words, in the order its embedded words will have: those the
    /// memory knows, then those embedded with the query.
    pub fn stems(&self) -> impl Iterator<Item = &str> {
        self.known
            .iter()
            .map(|(s, _)| s.as_str())
            .chain(self.missing.iter().map(|(s, _)| s.as_str()))
    }
}
