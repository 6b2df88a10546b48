//! The daemon's shared state behind a cheap-to-clone handle. Handlers and periodic tasks hold a
//! [`Daemon`]; the memory lock is a std mutex never held across an `.await`.

use crate::capture::admit::{self, Admission, CaptureRecord};
use crate::capture::extract::Extractor;
use crate::capture::SkipReason;
use crate::clock::SharedClock;
use crate::config::Config;
use crate::embed::quant::QVec;
use crate::embed::EmbedService;
use crate::memory::engine::Memory;
use crate::memory::graph::Changes;
use crate::paths::ProjectPaths;
use crate::protocol::CaptureRequest;
use crate::retrieve::related::{query_words, MAX_EMBEDDED_WITH_QUERY};
use crate::retrieve::QueryVectors;
use crate::store::journal::{Journal, JournalEntry};
use crate::store::words::WordVectorFile;
use crate::store::Store;
use chrono::{DateTime, Utc};
use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard, RwLock};
use tokio::sync::{mpsc, oneshot, watch, Notify};

/// What the prune task can be asked to do.
pub enum PruneCommand {
    RunNow {
        threads: bool,
        bridges: bool,
        reply: oneshot::Sender<crate::memory::engine::PruneReport>,
    },
}

pub use crate::replies::{CaptureRefusals, ConfigProblem, Refusing, Stats};

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

/// Cheap to clone: everything lives behind one `Arc`.
#[derive(Clone)]
pub struct Daemon {
    /// Private: the rest of the daemon goes through the accessors below.
    inner: Arc<Inner>,
}

pub(crate) struct Inner {
    pub paths: ProjectPaths,
    /// Where time comes from (decay, ids, expiries).
    pub clock: SharedClock,
    /// The whole memory; locked briefly, never across an await.
    pub memory: Mutex<Memory>,
    pub store: Store,
    /// Every capture is durable here before it is acknowledged.
    pub journal: Journal<CaptureRecord>,
    /// Journaled captures waiting for the worker, in journal order.
    /// Fed by the journal's writer thread in seq order (and by the replay at start).
    pub queue: Arc<Mutex<VecDeque<JournalEntry<CaptureRecord>>>>,
    /// Wakes the capture worker.
    pub work: Arc<Notify>,
    /// The highest journal seq processed and saved; `sync` waits on it.
    pub processed: watch::Sender<u64>,
    pub embed: EmbedService,
    /// Keeps the memory's word vectors across restarts (appended as words arrive).
    pub word_file: WordVectorFile,
    pub extractor: Box<dyn Extractor>,
    pub config: RwLock<Config>,
    pub stats: Mutex<Stats>,
    pub started_at: DateTime<Utc>,
    /// Turns true once on shutdown; every task and connection listens. A value, not a message:
    /// a task that starts listening after the stop was asked for still sees it.
    pub shutdown: watch::Sender<bool>,
    pub prune_tx: mpsc::Sender<PruneCommand>,
    /// Rankings by query, valid while the memory does not change.
    pub retrieval_cache: crate::retrieve::Cache,
    /// Every task spawned for a request (rounds, runs, syntheses, saves in the background,
    /// connections): shutdown waits for them (bounded) instead of cutting them off.
    pub tasks: tokio_util::task::TaskTracker,
    /// Serialises flushes, so an older copy of a thread is never written after a newer one.
    pub flush_lock: Mutex<()>,
    /// The optional LLM and its background work (off when `llm.provider` is `none`).
    pub llm: super::llm_tasks::LlmState,
    /// Chat and automation sessions over the memory.
    pub assistant: super::assistant::AssistantService,
    /// Workflow runs.
    pub runs: super::runs::Runs,
}

impl Daemon {
    /// The handle over the daemon's parts.
    pub(crate) fn new(parts: Inner) -> Daemon {
        Daemon {
            inner: Arc::new(parts),
        }
    }

    /// The local extractor (titles, topics, decisions) captures and queries go through.
    pub fn extractor(&self) -> &dyn Extractor {
        self.inner.extractor.as_ref()
    }

    /// The highest journal seq processed and saved: `sync` and `compact` wait on it, the
    /// worker advances it.
    pub fn processed(&self) -> &watch::Sender<u64> {
        &self.inner.processed
    }

    /// When this daemon started.
    pub fn started_at(&self) -> DateTime<Utc> {
        self.inner.started_at
    }

    /// Rankings by query, valid while the memory does not change.
    pub fn retrieval_cache(&self) -> &crate::retrieve::Cache {
        &self.inner.retrieval_cache
    }

    /// The tasks spawned for requests ([`Daemon::spawn`]); shutdown closes and waits for them.
    pub fn tasks(&self) -> &tokio_util::task::TaskTracker {
        &self.inner.tasks
    }

    pub fn paths(&self) -> &ProjectPaths {
        &self.inner.paths
    }

    pub fn now(&self) -> DateTime<Utc> {
        self.inner.clock.now()
    }

    /// The memory, locked. Poisoning is survived: the memory is plain data.
    pub fn memory(&self) -> MutexGuard<'_, Memory> {
        self.inner.memory.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn stats(&self) -> MutexGuard<'_, Stats> {
        self.inner.stats.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn config(&self) -> Config {
        self.inner
            .config
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    pub fn set_config(&self, c: Config) {
        *self.inner.config.write().unwrap_or_else(|p| p.into_inner()) = c;
    }

    /// The LLM runtime when an LLM is in use (else every step stays local).
    pub fn llm(&self) -> Option<&Arc<super::llm_tasks::LlmRuntime>> {
        self.inner.llm.runtime()
    }

    pub fn assistant(&self) -> &super::assistant::AssistantService {
        &self.inner.assistant
    }

    pub fn runs(&self) -> &super::runs::Runs {
        &self.inner.runs
    }

    /// Which LLM is in use, or why none is.
    pub fn llm_state(&self) -> &super::llm_tasks::LlmState {
        &self.inner.llm
    }

    pub fn embed(&self) -> &EmbedService {
        &self.inner.embed
    }

    /// A query's embedding (of the text without the words most of the memory shares, pooled
    /// from one pass of the model over the text: [`crate::embed::Embedder::embed_focused`]),
    /// and its words' vectors for related words (from the memory's table, else embedded now, a
    /// few at most), off the memory lock, before the background work queued. Every search of
    /// the memory embeds its query here.
    pub async fn embed_query(
        &self,
        text: String,
    ) -> Result<QueryVectors, crate::embed::EmbedError> {
        let (leave_out, mut words, missing) = {
            let mem = self.memory();
            let mut words = Vec::new();
            let mut missing = Vec::new();
            for (stem, word) in query_words(&text, &mem.index) {
                match mem.words.get(&stem) {
                    Some(v) => words.push((stem, v)),
                    None if missing.len() < MAX_EMBEDDED_WITH_QUERY => missing.push((stem, word)),
                    None => {}
                }
            }
            (mem.index.common_word_ranges(&text), words, missing)
        };
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
    /// [`crate::retrieve::related`]), and keeps them in the word file. Returns how many; a
    /// failure is logged, and those words go without.
    pub async fn embed_new_words(&self, max: usize) -> usize {
        let words = self.memory().index.take_new_words(max);
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
            .filter(|(_, v)| v.len() == crate::embed::DIM)
            .map(|((stem, _), v)| (stem, QVec::from_unit(&v)))
            .collect();
        {
            let mut mem = self.memory();
            for (stem, v) in &rows {
                mem.words.insert(stem, v);
            }
        }
        let n = rows.len();
        let d = self.clone();
        let saved = tokio::task::spawn_blocking(move || d.inner.word_file.append(&rows)).await;
        if let Ok(Err(e)) = saved {
            tracing::warn!("word vectors not saved (they will be embedded again): {e}");
        }
        n
    }

    /// Asks the prune task for work (`ai mode`, a lowered quota).
    pub fn prune_sender(&self) -> &mpsc::Sender<PruneCommand> {
        &self.inner.prune_tx
    }

    pub fn store(&self) -> &Store {
        &self.inner.store
    }

    pub fn journal(&self) -> &Journal<CaptureRecord> {
        &self.inner.journal
    }

    /// Admits a capture (checked, bounded, its time clamped, cleaned and redacted, off the async
    /// workers) and journals it durably: no byte of a secret reaches the journal. The capture
    /// is acknowledged once this returns `Journaled`.
    pub async fn journal_capture(&self, req: CaptureRequest) -> Result<Journaled, CaptureError> {
        let now = self.now();
        let admitted = tokio::task::spawn_blocking(move || admit::admit(req, now))
            .await
            .map_err(|e| CaptureError::Internal(e.to_string()))?
            .map_err(CaptureError::Refused)?;
        let record = match admitted {
            Admission::Skip(reason) => {
                self.stats().captures_skipped += 1;
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
        match self.journal().append(now, record).await {
            Ok(entry) => {
                self.stats().captures_received += 1;
                self.stats().capture_refusals.succeeded();
                Ok(Journaled::Queued(entry.seq))
            }
            Err(e) => {
                self.stats().capture_refusals.failed(&e, now);
                Err(CaptureError::Journal(e.to_string()))
            }
        }
    }

    /// Asks every task and connection to stop.
    pub fn trigger_shutdown(&self) {
        self.inner.shutdown.send_replace(true);
    }

    pub fn subscribe_shutdown(&self) -> ShutdownSignal {
        ShutdownSignal(self.inner.shutdown.subscribe())
    }

    /// Queues journaled captures for the worker.
    pub fn enqueue(&self, entries: impl IntoIterator<Item = JournalEntry<CaptureRecord>>) {
        self.inner
            .queue
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .extend(entries);
        self.inner.work.notify_one();
    }

    /// Up to `max` journaled captures waiting for the worker, oldest first.
    pub fn take_captures(&self, max: usize) -> Vec<JournalEntry<CaptureRecord>> {
        let mut q = self.inner.queue.lock().unwrap_or_else(|p| p.into_inner());
        let n = q.len().min(max);
        q.drain(..n).collect()
    }

    /// Resolves when captures are enqueued (the worker waits on it when the queue is empty).
    pub async fn captures_queued(&self) {
        self.inner.work.notified().await
    }

    /// Where time comes from.
    pub fn clock(&self) -> &SharedClock {
        &self.inner.clock
    }

    /// Writes what changed in the memory to disk, off the async workers. A failed write is put
    /// back to be retried at the next flush (and counted); the journal is only checkpointed
    /// after a successful flush, so nothing is lost either way.
    pub async fn flush(&self) -> bool {
        let d = self.clone();
        tokio::task::spawn_blocking(move || d.flush_blocking())
            .await
            .unwrap_or(false)
    }

    /// Spawns `task` among the daemon's tracked tasks (see `Inner::tasks`): shutdown waits for
    /// it.
    pub fn spawn<F>(&self, task: F) -> tokio::task::JoinHandle<F::Output>
    where
        F: std::future::Future + Send + 'static,
        F::Output: Send + 'static,
    {
        self.inner.tasks.spawn(task)
    }

    /// Writes the LLM cost counts not saved yet (they are saved in batches), on a blocking
    /// thread.
    pub async fn flush_costs(&self) {
        let Some(costs) = self.llm().and_then(|l| l.client().costs()).cloned() else {
            return;
        };
        match tokio::task::spawn_blocking(move || costs.flush()).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => tracing::warn!("LLM cost counts not saved yet: {e}"),
            Err(e) => tracing::error!("saving LLM cost counts panicked: {e}"),
        }
    }

    pub fn flush_blocking(&self) -> bool {
        let _serial = self
            .inner
            .flush_lock
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        let changes = self.memory().graph.take_changes();
        if changes.is_empty() {
            return true;
        }
        match self.write_changes(&changes) {
            Ok(()) => {
                self.memory().graph.saved(&changes);
                if self.stats().save_failing.take().is_some() {
                    tracing::info!("saving the memory works again");
                }
                true
            }
            Err(e) => {
                let now = self.now();
                let mut stats = self.stats();
                stats.persist_errors += 1;
                if stats.save_failing.is_none() {
                    tracing::error!("saving the memory failed, will retry: {e}");
                    stats.save_failing = Some(Refusing {
                        reason: e.to_string(),
                        since: now,
                    });
                }
                drop(stats);
                self.memory().graph.restore_changes(&changes);
                false
            }
        }
    }

    fn write_changes(&self, c: &Changes) -> Result<(), crate::store::StoreError> {
        let store = &self.inner.store;
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
                let mem = self.memory();
                store.index_snapshot(mem.graph.threads(), mem.graph.bridges())
            };
            store.write_index_snapshot(snapshot)?;
        }
        Ok(())
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

#[cfg(test)]
impl Daemon {
    /// A daemon in this process on `root` (its `.ai/` created), with no listener and no task
    /// running: for tests of what handlers and background jobs do to the state.
    pub(crate) fn for_tests(
        root: &std::path::Path,
        memory: Memory,
        llm: super::llm_tasks::LlmState,
    ) -> Daemon {
        let paths = ProjectPaths::new(root.to_path_buf());
        std::fs::create_dir_all(paths.db()).unwrap();
        let store = Store::open(&paths.db()).unwrap();
        let (journal, _) =
            Journal::open(&paths.db().join("journal"), &paths.db().join("quarantine")).unwrap();
        let shutdown = watch::channel(false).0;
        let (prune_tx, _) = mpsc::channel(1);
        Daemon {
            inner: Arc::new(Inner {
                clock: crate::clock::system(),
                memory: Mutex::new(memory),
                store,
                journal,
                queue: Arc::default(),
                work: Arc::default(),
                processed: watch::channel(0).0,
                embed: EmbedService::start(Box::new(crate::embed::HashedTfIdf::new()), None),
                word_file: WordVectorFile::in_db(
                    &paths.db(),
                    crate::embed::EmbedderKind::HashedTfidf,
                ),
                extractor: Box::new(crate::capture::extract::LocalExtractor),
                config: RwLock::new(Config::default()),
                stats: Mutex::default(),
                started_at: Utc::now(),
                shutdown,
                prune_tx,
                retrieval_cache: Default::default(),
                tasks: tokio_util::task::TaskTracker::new(),
                flush_lock: Mutex::new(()),
                assistant: super::assistant::AssistantService::open(&paths.db()).unwrap(),
                runs: super::runs::Runs::open(&paths.db(), crate::clock::system()).unwrap(),
                paths,
                llm,
            }),
        }
    }
}
