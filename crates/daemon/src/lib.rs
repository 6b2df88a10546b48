//! The per-project daemon, in layers (each imports only from the layers below it):
//!
//! - [`app`]: the roof. [`app::Daemon`] bundles every handle and service for the parts that wire
//!   things together: the [`listener`] (connections within their limits), the [`server`] (each
//!   connection's frames under its timeouts), the [`router`], the periodic prune and retention
//!   ([`tasks`]), the dashboard ([`ui`]) and the start-up here;
//! - the [`router`]: the one place that knows both the protocol and the services. It maps each
//!   request to a service call and the result (a typed reply or a [`ServiceError`]) to a
//!   response; [`overview`] gathers `ai status` and `ai health` from every service;
//! - the services, each a small struct holding only the handles it uses: [`memory_service`]
//!   (threads and bridges listed and edited, search), [`inject`], [`recall`], [`compact`],
//!   [`consolidation`], [`reindex`], [`llm_tasks`] (the optional LLM's background work),
//!   [`assistant`], [`runs`], [`team_sync`], the capture [`worker`] and [`config_watch`];
//! - the handles of [`state`] (memory, captures, config, lifecycle, stats, prune), cheap to
//!   clone, their fields private.
//!
//! [`lifecycle`] is the process's own: one daemon per project, detaching, stale sockets.

pub mod app;
pub mod assistant;
pub mod compact;
pub mod config_watch;
pub mod connections;
pub mod consolidation;
mod framebuf;
pub mod inject;
pub mod lifecycle;
pub mod listener;
pub mod llm_tasks;
pub mod memory_service;
pub mod overview;
pub mod recall;
pub mod reindex;
pub mod router;
pub mod runs;
pub mod server;
mod service_error;
pub mod settings;
pub mod state;
pub mod tasks;
pub mod team_sync;
pub mod ui;
pub mod unit_vectors;
pub mod worker;

use ai_smartness_capture::extract::LocalExtractor;
use ai_smartness_config::Config;
use ai_smartness_core::clock::SharedClock;
use ai_smartness_core::memory::engine::Memory;
use ai_smartness_core::memory::graph::Graph;
use ai_smartness_embed::EmbedService;
use ai_smartness_proto::paths::ProjectPaths;
use ai_smartness_replies::Stats;
use ai_smartness_store::journal::Journal;
use ai_smartness_store::words::WordVectorFile;
use ai_smartness_store::Store;
use app::Daemon;
pub use service_error::ServiceError;
use state::{
    CaptureHandle, CaptureQueue, ConfigHandle, Lifecycle, MemoryHandle, PruneHandle, StatsHandle,
};
use std::path::PathBuf;
use tokio::sync::mpsc;

#[derive(Debug, thiserror::Error)]
pub enum DaemonError {
    #[error(transparent)]
    Lifecycle(#[from] lifecycle::LifecycleError),
    #[error("storage: {0}")]
    Store(#[from] ai_smartness_store::StoreError),
    #[error("config: {0}")]
    Config(#[from] ai_smartness_config::ConfigError),
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

impl DaemonError {
    /// The daemon stopped because another one holds the project: not a failure to record, and
    /// the one to wait for is the other.
    pub fn another_runs(&self) -> bool {
        matches!(
            self,
            DaemonError::Lifecycle(lifecycle::LifecycleError::AlreadyRunning(_))
        )
    }
}

/// How to run the daemon.
pub struct Options {
    pub clock: SharedClock,
    /// Where the model files and ONNX Runtime live.
    pub data_dir: PathBuf,
    /// Told when the daemon answers, or why it could not start (a starter that forked it
    /// waits on it).
    pub start: Option<std::sync::Arc<lifecycle::StartPipe>>,
}

/// Runs the daemon in this process until shutdown. Builds its own runtime: call it before any
/// runtime exists (and after daemonizing, when detaching).
pub fn run(paths: ProjectPaths, opts: Options) -> Result<(), DaemonError> {
    let start = opts.start.clone();
    let ran = run_until_stopped(paths, opts);
    if let (Err(e), Some(start)) = (&ran, start) {
        if e.another_runs() {
            start.another_runs();
        } else {
            start.failed(&e.to_string());
        }
    }
    ran
}

fn run_until_stopped(paths: ProjectPaths, opts: Options) -> Result<(), DaemonError> {
    // Everything the daemon creates is its user's alone: the memory, the journal, the logs.
    // (On Windows the files take the access list of `.ai/`, under the user's own profile or
    // project, which `ensure_private_ai_dir` checks the user owns.)
    // SAFETY: umask only changes this process's file-creation mask.
    #[cfg(unix)]
    unsafe {
        libc::umask(0o077);
    }
    paths.ensure_private_ai_dir()?;
    // Checked before anything else, so a broken config is reported at once.
    Config::load(&paths.config())?;
    std::fs::create_dir_all(paths.db())?;
    let _lock = lifecycle::acquire_lock(&paths)?;
    tune_malloc();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .thread_name("ai-daemon")
        .build()?;
    runtime.block_on(serve(paths, opts))
}

async fn serve(paths: ProjectPaths, opts: Options) -> Result<(), DaemonError> {
    let socket = paths.socket();
    if let Some(problem) = ai_smartness_proto::paths::socket_path_problem(&socket) {
        return Err(DaemonError::Io(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            problem,
        )));
    }
    // A socket outside `.ai/` is in a folder of its own (a named pipe is in no folder).
    let elsewhere = cfg!(unix) && socket != paths.preferred_socket();
    if let Some(dir) = socket.parent().filter(|_| elsewhere) {
        // Never a folder someone else made: refused, not used.
        ai_smartness_proto::paths::ensure_private_dir(dir)?;
    }
    lifecycle::clear_stale_socket(&socket)?;
    // Bind first so clients can connect while the memory loads; they queue until we accept.
    let listener = bind_private(&socket)?;
    if elsewhere {
        let _ = ai_smartness_proto::atomic::write_atomic(
            &paths.socket_pointer(),
            socket.display().to_string().as_bytes(),
        );
    }
    lifecycle::write_pid_file(&paths, &socket)?;
    lifecycle::clear_start_failure(&paths);
    if let Some(start) = &opts.start {
        start.ready();
    }

    let config = Config::load(&paths.config())?;
    let (llm, llm_jobs) = llm_tasks::setup(&config, &paths, opts.clock.clone());
    // The model loads on its own thread while the memory loads: start-up costs the longer of
    // the two, not their sum.
    let data_dir = opts.data_dir.clone();
    let model = std::thread::Builder::new()
        .name("model-load".into())
        .spawn(move || {
            // The prompts' session first, at normal priority (it runs on the thread that asks,
            // with no pool of its own); then this thread gives way, so that the pool ONNX
            // Runtime starts for the captures' session inherits the lower priority.
            let queries = ai_smartness_embed::load_query_embedder(&data_dir);
            ai_smartness_embed::lower_thread_priority();
            let (embedder, degraded) = ai_smartness_embed::load_best(&data_dir);
            let queries = queries.filter(|_| degraded.is_none());
            (embedder, degraded, queries)
        })?;
    let store = Store::open(&paths.db())?;
    let loaded = store.load()?;
    // The journal's writer feeds the worker's queue itself, so the worker sees captures in
    // exactly the journal's order and checkpoints only what it processed.
    let queue = CaptureQueue::default();
    let sink = queue.sink();
    let (journal, mut replay) = Journal::open_with_sink(
        &paths.db().join("journal"),
        &paths.db().join("quarantine"),
        Default::default(),
        sink,
    )?;
    // A kill between a save and its checkpoint leaves saved captures in the replay: skip them.
    if !replay.is_empty() {
        let stored = stored_journal_seqs(&loaded.threads, replay[0].seq);
        let before = replay.len();
        replay.retain(|e| !stored.contains(&e.seq));
        if replay.len() < before {
            tracing::info!(
                "{} replayed captures were already saved, skipped",
                before - replay.len()
            );
        }
    }
    let (embedder, degraded, queries) = match model.join() {
        Ok(loaded) => loaded,
        Err(_) => (
            Box::new(ai_smartness_vectors::HashedTfIdf::new())
                as Box<dyn ai_smartness_vectors::Embedder>,
            Some("the model loader panicked".to_string()),
            None,
        ),
    };
    let embed = EmbedService::start_with_queries(embedder, queries, degraded);
    tracing::info!(
        "daemon {} started: {} threads, {} bridges, {} captures to replay, embedder {}",
        std::process::id(),
        loaded.threads.len(),
        loaded.bridges.len(),
        replay.len(),
        embed.kind()
    );
    let stats = StatsHandle::new(Stats {
        quarantined_at_start: loaded.quarantined.len(),
        indexes_rebuilt_at_start: loaded.indexes_rebuilt,
        ..Stats::default()
    });
    let sessions = assistant::AssistantService::open(&paths.db())?;
    let runs = runs::RunRegistry::open(&paths.db(), opts.clock.clone())?;
    let (prune_tx, prune_rx) = mpsc::channel(8);
    let last_seq = journal.last_seq();
    let replay_from = replay
        .first()
        .map(|e| e.seq.saturating_sub(1))
        .unwrap_or(last_seq);
    let mut memory = Memory::new(Graph::from_loaded(loaded.threads, loaded.bridges));
    let word_file = WordVectorFile::in_db(&paths.db(), embed.kind());
    memory.load_word_vectors(word_file.load());
    let memory = MemoryHandle::new(
        memory,
        store,
        embed,
        word_file,
        Box::new(LocalExtractor),
        opts.clock.clone(),
        stats.clone(),
    );
    let config = ConfigHandle::new(config);
    let capture = CaptureHandle::new(
        journal,
        queue,
        replay_from,
        opts.clock.clone(),
        stats.clone(),
        config.clone(),
    );
    let limits = connections::Limits::for_this_process();
    let daemon = Daemon::new(app::Parts {
        paths: paths.clone(),
        memory,
        capture,
        config,
        life: Lifecycle::start(opts.clock.now()),
        stats,
        prune: PruneHandle::new(prune_tx),
        llm,
        sessions,
        runs,
        dashboard_limits: limits.dashboard(),
    });
    daemon.capture().enqueue(replay);
    release_free_memory();

    let worker = worker::Worker::new(
        daemon.memory().clone(),
        daemon.capture().clone(),
        daemon.stats().clone(),
        daemon.refiner().clone(),
        daemon.unit_vectors().clone(),
        daemon.life().clone(),
    );
    let config_watch = config_watch::ConfigWatch::new(
        paths.clone(),
        daemon.config().clone(),
        daemon.stats().clone(),
        daemon.prune().clone(),
        daemon.life().clone(),
        opts.clock.clone(),
        daemon.rules().clone(),
    )
    .with_llm_costs(
        daemon
            .refiner()
            .runtime()
            .and_then(|llm| llm.costs().cloned()),
    );
    let reindexer = daemon.reindexer().clone();
    let words = daemon.reindexer().clone();
    let words_stop = daemon.life().subscribe_shutdown();

    let mut tasks = tokio::task::JoinSet::new();
    tasks.spawn(worker.run());
    tasks.spawn(tasks::prune_loop(daemon.clone(), prune_rx));
    tasks.spawn(daemon.consolidator().clone().idle_loop());
    let connections = connections::Connections::new(limits);
    tasks.spawn(listener::listen(daemon.clone(), listener, connections));
    tasks.spawn(signals(daemon.life().clone()));
    tasks.spawn(config_watch.run());
    tasks.spawn(async move { reindexer.reindex_if_embedder_changed().await });
    tasks.spawn(async move { words.embed_missing_words(words_stop).await });
    tasks.spawn(
        daemon
            .unit_vectors()
            .clone()
            .run(daemon.life().subscribe_shutdown()),
    );
    tasks.spawn(daemon.assistant().clone().run_scheduler());
    tasks.spawn(daemon.assistant().clone().run_watchdog());
    tasks.spawn(daemon.team_sync().clone().run());
    if let Some(jobs) = llm_jobs {
        tasks.spawn(daemon.refiner().clone().run(jobs));
    }

    let mut shutdown_rx = daemon.life().subscribe_shutdown();
    let _ = shutdown_rx.recv().await;
    tracing::info!("shutting down: draining the capture queue");
    // Drain: the worker finishes the queue; the other tasks stop at the broadcast.
    let drain = async { while tasks.join_next().await.is_some() {} };
    if tokio::time::timeout(std::time::Duration::from_secs(20), drain)
        .await
        .is_err()
    {
        tracing::warn!("some tasks did not stop in time; unprocessed captures stay in the journal");
    }
    // Work spawned for requests (a round, a run, a background save) finishes or is cut at
    // the same bound.
    let life = daemon.life();
    life.tasks().close();
    if tokio::time::timeout(std::time::Duration::from_secs(10), life.tasks().wait())
        .await
        .is_err()
    {
        tracing::warn!(
            "{} request tasks did not finish in time; they are cut",
            life.tasks().len()
        );
    }
    daemon.memory().flush().await;
    daemon.refiner().flush_costs().await;
    // A round cut short by the stop may hold changes it had not saved yet.
    daemon.assistant().persist_open(life.started_at()).await;
    let _ = std::fs::remove_file(&socket);
    let _ = std::fs::remove_file(paths.pid_file());
    tracing::info!("daemon stopped");
    Ok(())
}

/// Hands memory freed after a burst (loading 10,000 files, a reindex) back to the system:
/// glibc keeps freed heap pages otherwise, and a resident daemon should not sit on them.
pub fn release_free_memory() {
    // SAFETY: malloc_trim only releases free heap memory; it touches no live allocation.
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    unsafe {
        libc::malloc_trim(0);
    }
    // Other allocators (macOS's, musl's) hand free pages back by themselves.
}

/// Two glibc habits that make a resident daemon sit on memory it no longer uses. Each thread
/// that allocates gets its own heap arena (up to 8 per core), and each keeps its free pages:
/// the daemon's many short-lived threads (blocking pool, embedding, journal) would spread the
/// same memory over many arenas; two are plenty for a daemon that mostly waits. And a large
/// block freed raises the size from which blocks are mapped apart (up to 32 MB): a prompt's
/// ranking buffers (a few MB at 100,000 units) then come from the heap, which keeps their
/// pages once freed. A fixed threshold keeps them mapped apart, returned on free (about 15 MB
/// less resident at 100,000 units). Called before any thread exists.
fn tune_malloc() {
    // SAFETY: mallopt only tunes the allocator; called while the process is single-threaded.
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 2);
        libc::mallopt(libc::M_MMAP_THRESHOLD, 128 * 1024);
    }
    // Other allocators have no per-thread arenas and return large blocks by themselves.
}

/// Binds the local socket (a Unix socket here, through `interprocess`), readable and writable
/// by its owner only (mode 0600). The file is the daemon's to remove: the listener leaves it.
#[cfg(unix)]
fn bind_private(
    socket: &std::path::Path,
) -> std::io::Result<interprocess::local_socket::tokio::Listener> {
    use interprocess::local_socket::{GenericFilePath, ListenerOptions, ToFsName};
    use std::os::unix::fs::PermissionsExt;
    let options = ListenerOptions::new()
        .name(socket.to_fs_name::<GenericFilePath>()?)
        .reclaim_name(false);
    // SAFETY: umask only changes this process's file-creation mask; restored right after.
    let old = unsafe { libc::umask(0o177) };
    let bound = options.create_tokio();
    unsafe { libc::umask(old) };
    let listener = bound?;
    std::fs::set_permissions(socket, std::fs::Permissions::from_mode(0o600))?;
    Ok(listener)
}

/// Creates the named pipe (through `interprocess`) with an access list that lets this user
/// alone open it: the equivalent of mode 0600 (the default list would let every user read it).
/// Its first instance is created with `FILE_FLAG_FIRST_PIPE_INSTANCE`, so a pipe of the same
/// name made first by someone else makes this fail rather than share the name.
#[cfg(windows)]
fn bind_private(
    socket: &std::path::Path,
) -> std::io::Result<interprocess::local_socket::tokio::Listener> {
    use interprocess::local_socket::{GenericFilePath, ListenerOptions, ToFsName};
    use interprocess::os::windows::local_socket::ListenerOptionsExt;
    use interprocess::os::windows::security_descriptor::SecurityDescriptor;
    let me = ai_smartness_proto::windows_user::current_user_sid()?;
    // Protected (inherits nothing), one entry: full access for this user's SID.
    let sddl = widestring::U16CString::from_str(format!("D:P(A;;GA;;;{me})"))
        .map_err(std::io::Error::other)?;
    let only_me = SecurityDescriptor::deserialize(&sddl)?;
    ListenerOptions::new()
        .name(socket.to_fs_name::<GenericFilePath>()?)
        .security_descriptor(only_me)
        .create_tokio()
}

#[cfg(unix)]
async fn signals(life: Lifecycle) {
    use tokio::signal::unix::{signal, SignalKind};
    let (Ok(mut term), Ok(mut int)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) else {
        tracing::warn!("cannot listen for signals");
        return;
    };
    let mut shutdown = life.subscribe_shutdown();
    tokio::select! {
        _ = term.recv() => tracing::info!("SIGTERM received"),
        _ = int.recv() => tracing::info!("SIGINT received"),
        _ = shutdown.recv() => return,
    }
    life.trigger_shutdown();
}

/// Windows: Ctrl+C or Ctrl+Break when run in a console (`ai daemon run`); a detached daemon has
/// none and stops on a shutdown request.
#[cfg(windows)]
async fn signals(life: Lifecycle) {
    use tokio::signal::windows::{ctrl_break, ctrl_c};
    let (Ok(mut c), Ok(mut brk)) = (ctrl_c(), ctrl_break()) else {
        tracing::warn!("cannot listen for console signals");
        return;
    };
    let mut shutdown = life.subscribe_shutdown();
    tokio::select! {
        _ = c.recv() => tracing::info!("Ctrl+C received"),
        _ = brk.recv() => tracing::info!("Ctrl+Break received"),
        _ = shutdown.recv() => return,
    }
    life.trigger_shutdown();
}

/// Journal seqs at or above `from` that stored messages came from.
fn stored_journal_seqs(
    threads: &[ai_smartness_core::memory::types::Thread],
    from: u64,
) -> std::collections::HashSet<u64> {
    threads
        .iter()
        .flat_map(|t| &t.messages)
        .filter_map(|m| m.metadata.get(worker::JOURNAL_SEQ)?.as_u64())
        .filter(|&s| s >= from)
        .collect()
}
