//! The roof over the services: [`Daemon`] bundles every handle and service, for the parts that
//! wire things together (the router, the listener, the periodic tasks, the start-up). The
//! services sit below it and build on the handles of [`crate::state`] alone, so imports in this
//! crate point one way: app, then router and services, then state.

use crate::assistant::{Assistant, AssistantService};
use crate::compact::Compact;
use crate::consolidation::Consolidator;
use crate::inject::Inject;
use crate::llm_tasks::{LlmState, Refiner};
use crate::memory_service::MemoryService;
use crate::recall::Recall;
use crate::reindex::Reindexer;
use crate::runs::{RunRegistry, Runs};
use crate::settings::Settings;
use crate::state::{
    CaptureHandle, ConfigHandle, Lifecycle, MemoryHandle, PruneHandle, StatsHandle,
};
use crate::unit_vectors::UnitVectors;
use ai_smartness_proto::paths::ProjectPaths;
use ai_smartness_store::rules::RulesFile;
use chrono::{DateTime, Utc};
use std::sync::Arc;

/// Every handle and service of the daemon, cheap to clone: what the router, the listener, the
/// periodic tasks and the start-up hold. Services get only the handles they use.
#[derive(Clone)]
pub struct Daemon {
    /// Where the project's files are (config, user rules, hook records, the log).
    paths: ProjectPaths,
    /// The user rules' one owner: read by inject and the assistant, changed by the router.
    rules: Arc<RulesFile>,
    /// The memory's handle, for the parts that wire things together (the prune, the start-up).
    memory: MemoryHandle,
    /// Threads and bridges listed and edited, and search.
    memory_service: MemoryService,
    /// The mode and the user rules.
    settings: Settings,
    /// Captures journaled and queued; `sync` waits on what is processed.
    capture: CaptureHandle,
    /// The config in force; `ai mode` replaces it.
    config: ConfigHandle,
    /// The stop and the tracked tasks every connection and task belongs to.
    life: Lifecycle,
    /// The counters `ai status` and `ai health` report.
    stats: StatsHandle,
    /// Asks the prune task for a prune now.
    prune: PruneHandle,
    /// The optional LLM's background work, and which LLM is in use.
    refiner: Refiner,
    /// Context for prompts and the session brief.
    inject: Inject,
    /// Recall, timeline and remember (the MCP tools).
    recall: Recall,
    /// The compaction synthesis.
    compact: Compact,
    /// Tidying the threads, when idle and on demand.
    consolidator: Consolidator,
    /// Embeddings made again (`ai reindex`, a changed embedder, words without a vector).
    reindexer: Reindexer,
    /// The vectors of long captures' units, made when the model is free.
    unit_vectors: UnitVectors,
    /// Chats and automations.
    assistant: Assistant,
    /// Workflow runs.
    runs: Runs,
    /// The dashboard, once `ai ui` started it ([`crate::ui`] starts it).
    dashboard: DashboardSlot,
    /// Sends shared memory to the team store.
    team_sync: crate::team_sync::TeamSync,
}

/// The dashboard's place in the daemon: empty until the first `ui` request starts it, then the
/// running dashboard until the daemon stops.
#[derive(Clone)]
pub struct DashboardSlot {
    /// The running dashboard, once started.
    started: Arc<tokio::sync::OnceCell<ai_smartness_dashboard::Dashboard>>,
    /// What its connections may hold: their number comes out of the daemon's file budget,
    /// beside the socket's.
    limits: ai_smartness_dashboard::Limits,
}

impl DashboardSlot {
    fn new(limits: ai_smartness_dashboard::Limits) -> DashboardSlot {
        DashboardSlot {
            started: Arc::default(),
            limits,
        }
    }

    /// The dashboard, started or not.
    pub fn cell(&self) -> &tokio::sync::OnceCell<ai_smartness_dashboard::Dashboard> {
        &self.started
    }

    pub fn limits(&self) -> ai_smartness_dashboard::Limits {
        self.limits
    }
}

/// The handles and the loaded records [`Daemon::new`] wires the services from (each field is
/// the [`Daemon`]'s of the same name, or what its service is built on).
pub(crate) struct Parts {
    pub paths: ProjectPaths,
    pub memory: MemoryHandle,
    pub capture: CaptureHandle,
    pub config: ConfigHandle,
    pub life: Lifecycle,
    pub stats: StatsHandle,
    pub prune: PruneHandle,
    pub llm: LlmState,
    pub sessions: AssistantService,
    pub runs: RunRegistry,
    /// What the dashboard's connections may hold (its share of the daemon's file budget).
    pub dashboard_limits: ai_smartness_dashboard::Limits,
}

impl Daemon {
    /// Wires each service to the handles it uses.
    pub(crate) fn new(parts: Parts) -> Daemon {
        let Parts {
            paths,
            memory,
            capture,
            config,
            life,
            stats,
            prune,
            llm,
            sessions,
            runs,
            dashboard_limits,
        } = parts;
        let llm = Arc::new(llm);
        let (rules, problem) = RulesFile::open(paths.user_rules());
        if let Some(e) = problem {
            // The config watch reports it for `ai health` too; the rules stay empty till fixed.
            tracing::error!("user rules not loaded: {e}");
        }
        let rules = Arc::new(rules);
        let refiner = Refiner::new(llm.clone(), memory.clone(), config.clone(), life.clone());
        let runs = Runs::new(
            Arc::new(runs),
            llm.clone(),
            config.clone(),
            capture.clone(),
            life.clone(),
            memory.clock().clone(),
            paths.root.clone(),
        );
        let team_sync = crate::team_sync::TeamSync::new(
            memory.clone(),
            config.clone(),
            life.clone(),
            paths.root.clone(),
            paths.db(),
        );
        let unit_vectors = UnitVectors::new(memory.clone());
        Daemon {
            memory_service: MemoryService::new(memory.clone(), team_sync.clone()),
            settings: Settings::new(
                paths.config(),
                config.clone(),
                memory.clone(),
                prune.clone(),
                rules.clone(),
            ),
            inject: Inject::new(
                memory.clone(),
                capture.clone(),
                config.clone(),
                stats.clone(),
                life.clone(),
                rules.clone(),
                team_sync.clone(),
            ),
            recall: Recall::new(memory.clone(), capture.clone(), team_sync.clone()),
            compact: Compact::new(
                memory.clone(),
                capture.clone(),
                stats.clone(),
                refiner.clone(),
            ),
            consolidator: Consolidator::new(
                memory.clone(),
                config.clone(),
                stats.clone(),
                life.clone(),
            ),
            reindexer: Reindexer::new(
                memory.clone(),
                stats.clone(),
                unit_vectors.clone(),
                paths.db(),
            ),
            unit_vectors,
            assistant: Assistant::new(
                Arc::new(sessions),
                memory.clone(),
                config.clone(),
                llm,
                life.clone(),
                runs.clone(),
                crate::assistant::ProjectFiles {
                    paths: paths.clone(),
                    rules: rules.clone(),
                },
            ),
            runs,
            dashboard: DashboardSlot::new(dashboard_limits),
            team_sync: team_sync.clone(),
            refiner,
            paths,
            rules,
            memory,
            capture,
            config,
            life,
            stats,
            prune,
        }
    }

    pub fn paths(&self) -> &ProjectPaths {
        &self.paths
    }

    pub fn rules(&self) -> &Arc<RulesFile> {
        &self.rules
    }

    pub fn memory(&self) -> &MemoryHandle {
        &self.memory
    }

    pub fn memory_service(&self) -> &MemoryService {
        &self.memory_service
    }

    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    pub fn capture(&self) -> &CaptureHandle {
        &self.capture
    }

    pub fn config(&self) -> &ConfigHandle {
        &self.config
    }

    pub fn life(&self) -> &Lifecycle {
        &self.life
    }

    pub fn stats(&self) -> &StatsHandle {
        &self.stats
    }

    pub fn prune(&self) -> &PruneHandle {
        &self.prune
    }

    /// The optional LLM's background work, and which LLM is in use.
    pub fn refiner(&self) -> &Refiner {
        &self.refiner
    }

    pub fn inject(&self) -> &Inject {
        &self.inject
    }

    pub fn recall(&self) -> &Recall {
        &self.recall
    }

    pub fn compact(&self) -> &Compact {
        &self.compact
    }

    pub fn consolidator(&self) -> &Consolidator {
        &self.consolidator
    }

    pub fn reindexer(&self) -> &Reindexer {
        &self.reindexer
    }

    pub fn unit_vectors(&self) -> &UnitVectors {
        &self.unit_vectors
    }

    pub fn assistant(&self) -> &Assistant {
        &self.assistant
    }

    pub fn runs(&self) -> &Runs {
        &self.runs
    }

    pub fn dashboard(&self) -> &DashboardSlot {
        &self.dashboard
    }

    pub fn team_sync(&self) -> &crate::team_sync::TeamSync {
        &self.team_sync
    }

    /// The time now, by the daemon's clock.
    pub fn now(&self) -> DateTime<Utc> {
        self.memory.now()
    }
}

#[cfg(test)]
impl Daemon {
    /// A daemon in this process on `root` (its `.ai/` created), with no listener and no task
    /// running: for tests of what handlers and background jobs do to the state.
    pub(crate) fn for_tests(
        root: &std::path::Path,
        memory: ai_smartness_core::memory::engine::Memory,
        llm: LlmState,
    ) -> Daemon {
        let paths = ProjectPaths::new(root.to_path_buf());
        std::fs::create_dir_all(paths.db()).unwrap();
        let store = ai_smartness_store::Store::open(&paths.db()).unwrap();
        let (journal, _) = ai_smartness_store::journal::Journal::open(
            &paths.db().join("journal"),
            &paths.db().join("quarantine"),
        )
        .unwrap();
        let clock = ai_smartness_core::clock::system();
        let stats = StatsHandle::default();
        let memory = MemoryHandle::new(
            memory,
            store,
            ai_smartness_embed::EmbedService::start(
                Box::new(ai_smartness_vectors::HashedTfIdf::new()),
                None,
            ),
            ai_smartness_store::words::WordVectorFile::in_db(
                &paths.db(),
                ai_smartness_vectors::EmbedderKind::HashedTfidf,
            ),
            Box::new(ai_smartness_capture::extract::LocalExtractor),
            clock.clone(),
            stats.clone(),
        );
        let config = ConfigHandle::new(ai_smartness_config::Config::default());
        let capture = CaptureHandle::new(
            journal,
            crate::state::CaptureQueue::default(),
            0,
            clock.clone(),
            stats.clone(),
            config.clone(),
        );
        Daemon::new(Parts {
            memory,
            capture,
            config,
            life: Lifecycle::start(clock.now()),
            stats,
            prune: PruneHandle::new(tokio::sync::mpsc::channel(1).0),
            sessions: AssistantService::open(&paths.db()).unwrap(),
            runs: RunRegistry::open(&paths.db(), ai_smartness_core::clock::system()).unwrap(),
            paths,
            llm,
            dashboard_limits: crate::connections::Limits::for_fd_limit(1024).dashboard(),
        })
    }
}
