//! The daemon's shared state, split into narrow handles, each cheap to clone and each in its own
//! module with its fields private: [`MemoryHandle`] (the memory and what reads or writes it),
//! [`CaptureHandle`] (journal, worker queue, processed seq), [`ConfigHandle`], [`Lifecycle`]
//! (stop signal, tracked tasks), [`StatsHandle`] (counters) and [`PruneHandle`]. [`Daemon`]
//! bundles them for the parts that wire things together. The memory lock is a std mutex never
//! held across an `.await`.

mod capture;
mod config;
mod lifecycle;
mod memory;
mod prune;
mod stats;

pub use crate::replies::{CaptureRefusals, ConfigProblem, Refusing, Stats};
pub use capture::{CaptureError, CaptureHandle, CaptureQueue, Journaled};
pub use config::ConfigHandle;
pub use lifecycle::{Lifecycle, ShutdownSignal};
pub use memory::MemoryHandle;
pub use prune::{PruneCommand, PruneHandle};
pub use stats::StatsHandle;

use crate::capture::admit::CaptureRecord;
use crate::capture::extract::Extractor;
use crate::clock::SharedClock;
use crate::config::Config;
use crate::embed::EmbedService;
use crate::memory::engine::Memory;
use crate::paths::ProjectPaths;
use crate::protocol::CaptureRequest;
use crate::retrieve::QueryVectors;
use crate::store::journal::JournalEntry;
use crate::store::Store;
use chrono::{DateTime, Utc};
use std::sync::{Arc, MutexGuard};

/// Every handle of the daemon, cheap to clone.
#[derive(Clone)]
pub struct Daemon {
    /// Where the project's files are.
    paths: ProjectPaths,
    memory: MemoryHandle,
    capture: CaptureHandle,
    config: ConfigHandle,
    life: Lifecycle,
    stats: StatsHandle,
    prune: PruneHandle,
    /// The optional LLM and its background work (off when `llm.provider` is `none`).
    llm: Arc<super::llm_tasks::LlmState>,
    /// Chat and automation sessions over the memory.
    assistant: Arc<super::assistant::AssistantService>,
    /// Workflow runs.
    runs: Arc<super::runs::Runs>,
}

/// What [`Daemon::new`] is made of.
pub(crate) struct Parts {
    pub paths: ProjectPaths,
    pub memory: MemoryHandle,
    pub capture: CaptureHandle,
    pub config: ConfigHandle,
    pub life: Lifecycle,
    pub stats: StatsHandle,
    pub prune: PruneHandle,
    pub llm: super::llm_tasks::LlmState,
    pub assistant: super::assistant::AssistantService,
    pub runs: super::runs::Runs,
}

impl Daemon {
    /// The bundle of `parts`.
    pub(crate) fn new(parts: Parts) -> Daemon {
        Daemon {
            paths: parts.paths,
            memory: parts.memory,
            capture: parts.capture,
            config: parts.config,
            life: parts.life,
            stats: parts.stats,
            prune: parts.prune,
            llm: Arc::new(parts.llm),
            assistant: Arc::new(parts.assistant),
            runs: Arc::new(parts.runs),
        }
    }

    /// The local extractor (titles, topics, decisions) captures and queries go through.
    pub fn extractor(&self) -> &dyn Extractor {
        self.memory.extractor()
    }

    /// When this daemon started.
    pub fn started_at(&self) -> DateTime<Utc> {
        self.life.started_at()
    }

    /// Rankings by query, valid while the memory does not change.
    pub fn retrieval_cache(&self) -> &crate::retrieve::Cache {
        self.memory.retrieval_cache()
    }

    /// The tasks spawned for requests ([`Daemon::spawn`]); shutdown closes and waits for them.
    pub fn tasks(&self) -> &tokio_util::task::TaskTracker {
        self.life.tasks()
    }

    pub fn paths(&self) -> &ProjectPaths {
        &self.paths
    }

    pub fn now(&self) -> DateTime<Utc> {
        self.memory.now()
    }

    /// The memory, locked.
    pub fn memory(&self) -> MutexGuard<'_, Memory> {
        self.memory.lock()
    }

    pub fn stats(&self) -> MutexGuard<'_, Stats> {
        self.stats.lock()
    }

    pub fn config(&self) -> Config {
        self.config.get()
    }

    pub fn set_config(&self, c: Config) {
        self.config.set(c)
    }

    /// The LLM runtime when an LLM is in use (else every step stays local).
    pub fn llm(&self) -> Option<&Arc<super::llm_tasks::LlmRuntime>> {
        self.llm.runtime()
    }

    pub fn assistant(&self) -> &super::assistant::AssistantService {
        &self.assistant
    }

    pub fn runs(&self) -> &super::runs::Runs {
        &self.runs
    }

    /// Which LLM is in use, or why none is.
    pub fn llm_state(&self) -> &super::llm_tasks::LlmState {
        &self.llm
    }

    pub fn embed(&self) -> &EmbedService {
        self.memory.embed()
    }

    pub async fn embed_query(
        &self,
        text: String,
    ) -> Result<QueryVectors, crate::embed::EmbedError> {
        self.memory.embed_query(text).await
    }

    pub async fn embed_new_words(&self, max: usize) -> usize {
        self.memory.embed_new_words(max).await
    }

    /// Asks the prune task for work (`ai mode`, a lowered quota).
    pub fn prune(&self) -> &PruneHandle {
        &self.prune
    }

    pub fn store(&self) -> &Store {
        self.memory.store()
    }

    pub fn capture(&self) -> &CaptureHandle {
        &self.capture
    }

    pub async fn journal_capture(&self, req: CaptureRequest) -> Result<Journaled, CaptureError> {
        self.capture.journal_capture(req).await
    }

    /// Asks every task and connection to stop.
    pub fn trigger_shutdown(&self) {
        self.life.trigger_shutdown()
    }

    pub fn subscribe_shutdown(&self) -> ShutdownSignal {
        self.life.subscribe_shutdown()
    }

    /// Queues journaled captures for the worker.
    pub fn enqueue(&self, entries: impl IntoIterator<Item = JournalEntry<CaptureRecord>>) {
        self.capture.enqueue(entries)
    }

    pub fn take_captures(&self, max: usize) -> Vec<JournalEntry<CaptureRecord>> {
        self.capture.take_captures(max)
    }

    pub async fn captures_queued(&self) {
        self.capture.captures_queued().await
    }

    /// Where time comes from.
    pub fn clock(&self) -> &SharedClock {
        self.memory.clock()
    }

    pub async fn flush(&self) -> bool {
        self.memory.flush().await
    }

    /// Spawns `task` among the daemon's tracked tasks: shutdown waits for it.
    pub fn spawn<F>(&self, task: F) -> tokio::task::JoinHandle<F::Output>
    where
        F: std::future::Future + Send + 'static,
        F::Output: Send + 'static,
    {
        self.life.spawn(task)
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
        self.memory.flush_blocking()
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
        let (journal, _) = crate::store::journal::Journal::open(
            &paths.db().join("journal"),
            &paths.db().join("quarantine"),
        )
        .unwrap();
        let clock = crate::clock::system();
        let stats = StatsHandle::default();
        let memory = MemoryHandle::new(
            memory,
            store,
            EmbedService::start(Box::new(crate::embed::HashedTfIdf::new()), None),
            crate::store::words::WordVectorFile::in_db(
                &paths.db(),
                crate::embed::EmbedderKind::HashedTfidf,
            ),
            Box::new(crate::capture::extract::LocalExtractor),
            clock.clone(),
            stats.clone(),
        );
        let capture = CaptureHandle::new(
            journal,
            CaptureQueue::default(),
            0,
            clock.clone(),
            stats.clone(),
        );
        Daemon::new(Parts {
            memory,
            capture,
            config: ConfigHandle::new(Config::default()),
            life: Lifecycle::start(Utc::now()),
            stats,
            prune: PruneHandle::new(tokio::sync::mpsc::channel(1).0),
            assistant: super::assistant::AssistantService::open(&paths.db()).unwrap(),
            runs: super::runs::Runs::open(&paths.db(), crate::clock::system()).unwrap(),
            paths,
            llm,
        })
    }
}
