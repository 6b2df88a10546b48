//! The LLM's work in the daemon, all of it off the hook path.
//!
//! Hooks never wait for an LLM: a capture is acknowledged once journaled, and the worker places
//! it with the local pipeline as it always does. When an LLM is configured, the worker then hands
//! [`Job`]s to one background task through a bounded queue (a full queue skips the job and
//! counts it: the local result simply stays). The task, one call at a time:
//!
//! - **extraction**: refines the thread the capture went to (title, topics,
//!   summary, decisions, questions);
//! - **coherence**: a capture whose local coherence with the pending Glob/Grep
//!   result was uncertain (0.3–0.6) and that started a thread becomes its CHILD_OF if the LLM
//!   scores it above 0.6;
//! - **borderline reactivation**: a suspended thread 0.15–0.35 similar to a
//!   capture is reactivated if the LLM says the capture concerns it, and linked to the capture's
//!   thread by a bridge (the capture stays where it was placed);
//! - **bridge typing**: new gossip EXTENDS bridges, batched, may become DEPENDS, CONTRADICTS or
//!   REPLACES.
//!
//! The compaction synthesis runs as its own task ([`Refiner::spawn_synthesis`]) so it never
//! queues behind extractions. `ai health` reads a cached reachability check, refreshed in the
//! background ([`LlmRuntime::health`]). Every call is logged on the tracing target `llm`.

use super::state::{ConfigHandle, Lifecycle, MemoryHandle};
use ai_smartness_capture::extract::Extraction;
use ai_smartness_capture::source::SourceType;
use ai_smartness_config::{Config, LlmConfig};
use ai_smartness_core::clock::SharedClock;
use ai_smartness_core::memory::engine::{CoherenceBand, Decision, Outcome};
use ai_smartness_core::memory::refine::Refinement;
use ai_smartness_core::memory::types::{BridgeStatus, BridgeType, Thread, ThreadStatus};
use ai_smartness_llm::answers::{self, Answer, AskError};
use ai_smartness_llm::cost::{CostTracker, Limits};
use ai_smartness_llm::prompts::{self, ThreadBrief};
use ai_smartness_llm::{ChatRequest, ErrorKind, LlmClient, ProviderKind, ProviderSettings};
use ai_smartness_proto::paths::ProjectPaths;
use ai_smartness_replies::{LlmView, UsageToday};
use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::Value;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};
use tokio::sync::mpsc;

/// Jobs waiting for the LLM at most; beyond, new jobs are skipped and counted.
pub const QUEUE_CAPACITY: usize = 256;
/// Bridges typed in one call.
pub const RELATION_BATCH: usize = 8;
/// A reachability result older than this is refreshed in the background when `ai health` asks.
pub const REACH_TTL_SECS: i64 = 60;
/// Capture-thread/suspended-thread pairs already asked about are not asked again (bounded).
const MAX_ASKED_PAIRS: usize = 4096;
/// Recent messages per thread quoted in a synthesis prompt.
const SYNTHESIS_RECENT: usize = 3;

/// One piece of background work for the LLM.
#[derive(Debug, Clone)]
pub enum Job {
    /// Extract a stored capture and refine its thread.
    Refine(RefineJob),
    /// Decide an uncertain coherence with a Glob/Grep result.
    Coherence(CoherenceJob),
    /// Decide a borderline reactivation.
    Reactivation(ReactivationJob),
    /// Type new gossip bridges (batched by the task).
    Bridges(Vec<String>),
}

/// See [`Job::Refine`].
#[derive(Debug, Clone)]
pub struct RefineJob {
    /// The thread the capture went to.
    pub thread_id: String,
    /// The stored message.
    pub message_id: String,
    /// The thread's title just after the capture was placed (a later rename wins).
    pub title_before: String,
    /// Which extraction prompt to use.
    pub source: SourceType,
    /// The prepared (cleaned, redacted) content.
    pub content: Arc<str>,
    /// What the local extractor found, replaced by the LLM's.
    pub local: Extraction,
}

/// See [`Job::Coherence`].
#[derive(Debug, Clone)]
pub struct CoherenceJob {
    /// The thread the capture started.
    pub child: String,
    /// The Glob/Grep thread it may belong under.
    pub parent: String,
    /// The local score (orphan band), for the log.
    pub local_score: f64,
    /// The capture's source type.
    pub source: SourceType,
    /// The prepared content.
    pub content: Arc<str>,
}

/// See [`Job::Reactivation`].
#[derive(Debug, Clone)]
pub struct ReactivationJob {
    /// The suspended thread.
    pub suspended: String,
    /// The thread the capture went to (linked to the suspended one on a yes).
    pub related: String,
    /// The local similarity (borderline band), for the log.
    pub similarity: f64,
    /// The prepared content.
    pub content: Arc<str>,
}

/// What the worker knows of one placed capture, to derive the LLM's jobs from.
#[derive(Debug)]
pub struct Placed<'a> {
    /// Where the local pipeline put it.
    pub outcome: &'a Outcome,
    /// Its source type.
    pub source: SourceType,
    /// Its prepared content.
    pub content: &'a str,
    /// The local extraction.
    pub local: Extraction,
    /// Its thread's title just after.
    pub title_before: String,
}

/// The jobs one placed capture gives the LLM: always an extraction; a coherence check when the
/// local score was uncertain and the capture started a thread; a reactivation question for a
/// borderline suspended thread; the new gossip bridges to type.
pub fn jobs_for(p: Placed<'_>) -> Vec<Job> {
    let o = p.outcome;
    // A repeat stored nothing new: nothing to refine, no token spent on it.
    if o.decision == Decision::Repeat {
        return Vec::new();
    }
    let content: Arc<str> = Arc::from(p.content);
    let mut jobs = vec![Job::Refine(RefineJob {
        thread_id: o.thread_id.clone(),
        message_id: o.message_id.clone(),
        title_before: p.title_before,
        source: p.source,
        content: content.clone(),
        local: p.local,
    })];
    if let (Some((score, CoherenceBand::Orphan)), Some(parent), Decision::NewThread) =
        (o.coherence, &o.context_thread, o.decision)
    {
        jobs.push(Job::Coherence(CoherenceJob {
            child: o.thread_id.clone(),
            parent: parent.clone(),
            local_score: score,
            source: p.source,
            content: content.clone(),
        }));
    }
    if let Some((suspended, similarity)) = &o.borderline_suspended {
        jobs.push(Job::Reactivation(ReactivationJob {
            suspended: suspended.clone(),
            related: o.thread_id.clone(),
            similarity: *similarity,
            content,
        }));
    }
    if !o.new_bridges.is_empty() {
        jobs.push(Job::Bridges(o.new_bridges.clone()));
    }
    jobs
}

/// Which LLM the daemon uses.
#[derive(Debug)]
pub enum LlmState {
    /// `provider: "none"`: the local pipeline only, as without this module.
    Off,
    /// A provider is configured but cannot be used (unknown, no `claude` binary, `auto` found
    /// nothing): the local pipeline only, and `ai health` says why.
    Fallback {
        /// What the config asked for.
        provider: String,
        /// Why it is not in use.
        reason: String,
    },
    /// An LLM is in use.
    On(Arc<LlmRuntime>),
}

impl LlmState {
    /// The runtime when an LLM is in use.
    pub fn runtime(&self) -> Option<&Arc<LlmRuntime>> {
        match self {
            LlmState::On(r) => Some(r),
            _ => None,
        }
    }
}

pub use ai_smartness_replies::Counters;

/// Whether the provider answers, as last seen.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Reach {
    /// `None` until the first check.
    pub answers: Option<bool>,
    /// When it was seen.
    pub checked_at: Option<DateTime<Utc>>,
    /// How long the check took.
    pub latency_ms: Option<u64>,
    /// What failed, when it did.
    pub error: Option<String>,
    /// `ping` (the health check) or `call` (a real call).
    pub via: Option<&'static str>,
}

/// The LLM in use and the state of its background work.
#[derive(Debug)]
pub struct LlmRuntime {
    client: LlmClient,
    jobs: mpsc::Sender<Job>,
    counters: Mutex<Counters>,
    reach: Mutex<Reach>,
    /// A reachability check is running (only one at a time).
    refreshing: AtomicBool,
    /// One synthesis at a time (a second compaction waits for the first).
    synthesis: tokio::sync::Mutex<()>,
    /// Pairs already asked about (bounded: the least used are forgotten first).
    asked: quick_cache::sync::Cache<(String, String), ()>,
    /// When a reachability check was made, by the daemon's clock.
    clock: SharedClock,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// What the provider factory needs, from the `llm` section (the key stays in the environment:
/// only its variable's name is passed).
pub fn provider_settings(c: &LlmConfig, config: &Config) -> ProviderSettings {
    ProviderSettings {
        provider: c.provider.trim().to_string(),
        model: c.model_for(config.mode),
        base_url: c.base_url.clone().filter(|u| !u.trim().is_empty()),
        api_key_env: c.api_key_env.clone().filter(|k| !k.trim().is_empty()),
        claude_path: c
            .claude_cli_path
            .as_deref()
            .filter(|p| !p.trim().is_empty())
            .map(PathBuf::from),
        ping_timeout: secs(c.timeouts.ping_secs),
        ..ProviderSettings::default()
    }
}

fn secs(n: u64) -> Duration {
    Duration::from_secs(n.max(1))
}

/// Builds the LLM the config names, with its ledger in `.ai/llm_usage.json`; the receiver is
/// for [`Refiner::run`]. Any failure leaves the daemon on its local pipeline.
pub fn setup(
    config: &Config,
    paths: &ProjectPaths,
    clock: SharedClock,
) -> (LlmState, Option<mpsc::Receiver<Job>>) {
    let c = &config.llm;
    if !c.is_enabled() {
        return (LlmState::Off, None);
    }
    let provider = match ai_smartness_llm::build(&provider_settings(c, config)) {
        Ok(p) if p.kind() == ProviderKind::Local => {
            let reason = "no provider found in the environment (no API key variable set, no \
                          `claude` on PATH)";
            tracing::warn!(target: "llm", event = "llm_fallback", provider = %c.provider, reason);
            return (
                LlmState::Fallback {
                    provider: c.provider.clone(),
                    reason: reason.into(),
                },
                None,
            );
        }
        Ok(p) => p,
        Err(e) => {
            tracing::warn!(target: "llm", event = "llm_fallback", provider = %c.provider, reason = %e);
            return (
                LlmState::Fallback {
                    provider: c.provider.clone(),
                    reason: e.to_string(),
                },
                None,
            );
        }
    };
    let limits = Limits {
        max_tokens_per_call: c.max_tokens_per_call,
        max_cost_per_day_usd: c.max_cost_per_day_usd,
    };
    let ledger_clock = clock.clone();
    let costs = Arc::new(CostTracker::open_with_clock(
        &paths.ai_dir,
        limits,
        Arc::new(move || ledger_clock.now()),
    ));
    tracing::info!(
        target: "llm",
        event = "llm_ready",
        provider = provider.id(),
        model = %c.model_for(config.mode).unwrap_or_else(|| provider.default_model().to_string()),
        max_tokens_per_call = c.max_tokens_per_call,
        max_cost_per_day_usd = c.max_cost_per_day_usd,
    );
    let (runtime, rx) = LlmRuntime::new(LlmClient::new(provider).with_costs(costs), clock);
    (LlmState::On(Arc::new(runtime)), Some(rx))
}

impl LlmRuntime {
    /// A runtime around `client`, and the receiving end of its job queue (for [`Refiner::run`]).
    pub fn new(client: LlmClient, clock: SharedClock) -> (LlmRuntime, mpsc::Receiver<Job>) {
        let (tx, rx) = mpsc::channel(QUEUE_CAPACITY);
        let runtime = LlmRuntime {
            client,
            jobs: tx,
            counters: Mutex::default(),
            reach: Mutex::default(),
            refreshing: AtomicBool::new(false),
            synthesis: tokio::sync::Mutex::new(()),
            asked: quick_cache::sync::Cache::new(MAX_ASKED_PAIRS),
            clock,
        };
        (runtime, rx)
    }

    /// The counters so far.
    pub fn counters(&self) -> Counters {
        lock(&self.counters).clone()
    }

    /// The client (provider, retries, limits, ledger).
    pub fn client(&self) -> &LlmClient {
        &self.client
    }

    /// Queues a job without waiting: a full queue skips it (counted; the local result stays).
    pub fn submit(&self, job: Job) {
        match self.jobs.try_send(job) {
            Ok(()) => lock(&self.counters).queued += 1,
            Err(mpsc::error::TrySendError::Full(_)) => {
                let skipped = {
                    let mut c = lock(&self.counters);
                    c.skipped_queue_full += 1;
                    c.skipped_queue_full
                };
                // One line for the first and every hundredth: a burst must not flood the log.
                if skipped == 1 || skipped % 100 == 0 {
                    tracing::warn!(target: "llm", event = "llm_queue_full", skipped, capacity = QUEUE_CAPACITY);
                }
            }
            Err(mpsc::error::TrySendError::Closed(_)) => {}
        }
    }

    fn count(&self, f: impl FnOnce(&mut Counters)) {
        f(&mut lock(&self.counters));
    }

    /// Records what a call says about reachability: an answer (even malformed) proves it
    /// answers; a network, timeout, auth or server failure proves it does not.
    fn note<T>(&self, r: &Result<T, AskError>, started: Instant) {
        let answers = match r {
            Ok(_) | Err(AskError::Malformed(_)) => true,
            Err(AskError::Llm(e)) => match e.kind {
                ErrorKind::Network
                | ErrorKind::Timeout
                | ErrorKind::AuthError
                | ErrorKind::ServerError => false,
                _ => return,
            },
        };
        *lock(&self.reach) = Reach {
            answers: Some(answers),
            checked_at: Some(self.clock.now()),
            latency_ms: Some(started.elapsed().as_millis() as u64),
            error: match r {
                Err(AskError::Llm(e)) if !answers => Some(e.to_string()),
                _ => None,
            },
            via: Some("call"),
        };
    }

    /// The jobs waiting.
    pub fn queue_len(&self) -> usize {
        QUEUE_CAPACITY - self.jobs.capacity()
    }

    /// `ai status`: the provider, the usage and cost (today and total) with the limits, and the
    /// background work.
    pub fn status(&self, config: &Config) -> LlmView {
        let p = self.client.provider();
        LlmView {
            model: Some(
                config
                    .llm
                    .model_for(config.mode)
                    .unwrap_or_else(|| p.default_model().to_string()),
            ),
            usage: self.client.costs().map(|c| c.snapshot()),
            jobs: Some(lock(&self.counters).clone()),
            queue: Some(self.queue_len()),
            ..LlmView::named(p.id(), p.id())
        }
    }

    /// `ai health`: the cached reachability (a stale one is refreshed in the background, so
    /// the command never waits for the provider) and today's usage.
    pub fn health(self: &Arc<Self>, ping_secs: u64, life: &Lifecycle) -> LlmView {
        let reach = lock(&self.reach).clone();
        let stale = reach
            .checked_at
            .is_none_or(|at| (self.clock.now() - at).num_seconds() >= REACH_TTL_SECS);
        if stale {
            refresh_reach(self, ping_secs, life);
        }
        let p = self.client.provider();
        let usage = self.client.costs().map(|c| c.snapshot());
        LlmView {
            answers: reach.answers,
            checked_at: reach
                .checked_at
                .map(|d| d.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)),
            latency_ms: reach.latency_ms,
            error: reach.error,
            via: reach.via.map(str::to_string),
            usage_today: usage.as_ref().map(|u| UsageToday {
                day: u.day.clone(),
                calls: u.today.totals.calls,
                failed_calls: u.today.totals.failed_calls,
                tokens: u.today.totals.tokens(),
                cost_usd: u.today.totals.cost_usd,
            }),
            limits: usage.map(|u| u.limits),
            ..LlmView::named(p.id(), p.id())
        }
    }
}

/// `ai status` and `ai health` for a daemon without an LLM in use.
pub fn local_view(state: &LlmState) -> Option<LlmView> {
    match state {
        LlmState::Off => Some(LlmView::named("none", "local fallback")),
        LlmState::Fallback { provider, reason } => Some(LlmView {
            error: Some(reason.clone()),
            answers: Some(false),
            ..LlmView::named(provider, "local fallback")
        }),
        LlmState::On(_) => None,
    }
}

/// Checks reachability in the background (one check at a time).
fn refresh_reach(llm: &Arc<LlmRuntime>, ping_secs: u64, life: &Lifecycle) {
    if llm.refreshing.swap(true, Ordering::SeqCst) {
        return;
    }
    let limit = secs(ping_secs) + Duration::from_secs(2);
    let llm = Arc::clone(llm);
    life.spawn(async move {
        let started = Instant::now();
        let r = match tokio::time::timeout(limit, llm.client.ping()).await {
            Ok(r) => r.map_err(|e| e.to_string()),
            Err(_) => Err(format!("no answer within {limit:?}")),
        };
        *lock(&llm.reach) = Reach {
            answers: Some(r.is_ok()),
            checked_at: Some(llm.clock.now()),
            latency_ms: Some(started.elapsed().as_millis() as u64),
            error: r.err(),
            via: Some("ping"),
        };
        llm.refreshing.store(false, Ordering::SeqCst);
    });
}

/// The optional LLM's work for the daemon: the background refinements of what the worker
/// placed, the compaction synthesis, the reachability `ai health` shows, the cost ledger.
#[derive(Clone)]
pub struct Refiner {
    /// Which LLM is in use, or why none is.
    llm: Arc<LlmState>,
    /// What the refinements read and change.
    memory: MemoryHandle,
    /// Timeouts, models and language, read at each call (an edit applies at the next).
    config: ConfigHandle,
    /// The stop the background task listens for; syntheses and checks run as tracked tasks.
    life: Lifecycle,
}

impl Refiner {
    pub fn new(
        llm: Arc<LlmState>,
        memory: MemoryHandle,
        config: ConfigHandle,
        life: Lifecycle,
    ) -> Refiner {
        Refiner {
            llm,
            memory,
            config,
            life,
        }
    }

    /// The runtime when an LLM is in use (else every step stays local).
    pub fn runtime(&self) -> Option<&Arc<LlmRuntime>> {
        self.llm.runtime()
    }

    /// `ai status`: the LLM in use and its work, or why none is.
    pub fn status(&self, config: &Config) -> Option<LlmView> {
        match self.runtime() {
            Some(l) => Some(l.status(config)),
            None => local_view(&self.llm),
        }
    }

    /// `ai health`: the cached reachability (never waits for the provider), or why no LLM is
    /// in use.
    pub fn health(&self) -> Option<LlmView> {
        match self.runtime() {
            Some(l) => {
                let ping_secs = self.config.get().llm.timeouts.ping_secs;
                Some(l.health(ping_secs, &self.life))
            }
            None => local_view(&self.llm),
        }
    }

    /// Queues the jobs the worker derived from a batch: never waited for.
    pub fn submit(&self, jobs: Vec<Job>) {
        if let Some(llm) = self.runtime() {
            for job in jobs {
                llm.submit(job);
            }
        }
    }

    /// Writes the LLM cost counts not saved yet (they are saved in batches), on a blocking
    /// thread.
    pub async fn flush_costs(&self) {
        let Some(costs) = self.runtime().and_then(|l| l.client().costs()).cloned() else {
            return;
        };
        match tokio::task::spawn_blocking(move || costs.flush()).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => tracing::warn!("LLM cost counts not saved yet: {e}"),
            Err(e) => tracing::error!("saving LLM cost counts panicked: {e}"),
        }
    }

    /// The background task: takes jobs in order, one LLM call at a time, until shutdown (an
    /// in-flight call is dropped then: its local result stays).
    pub async fn run(self, mut jobs: mpsc::Receiver<Job>) {
        let Some(llm) = self.runtime().cloned() else {
            return;
        };
        refresh_reach(&llm, self.config.get().llm.timeouts.ping_secs, &self.life);
        let mut shutdown = self.life.subscribe_shutdown();
        let mut bridges: Vec<String> = Vec::new();
        loop {
            // Bridges go when a batch is full, or when nothing else waits (a burst of captures
            // is extracted first, so the bridges are typed with the refined titles).
            if bridges.len() >= RELATION_BATCH || (!bridges.is_empty() && jobs.is_empty()) {
                let batch: Vec<String> =
                    bridges.drain(..bridges.len().min(RELATION_BATCH)).collect();
                tokio::select! {
                    _ = self.type_bridges(&llm, batch) => {}
                    _ = shutdown.recv() => break,
                }
                continue;
            }
            let job = tokio::select! {
                j = jobs.recv() => match j {
                    Some(j) => j,
                    None => break,
                },
                _ = shutdown.recv() => break,
            };
            tokio::select! {
                _ = self.run_job(&llm, job, &mut bridges) => {}
                _ = shutdown.recv() => break,
            }
        }
    }

    async fn run_job(&self, llm: &LlmRuntime, job: Job, bridges: &mut Vec<String>) {
        match job {
            Job::Refine(j) => self.refine(llm, j).await,
            Job::Coherence(j) => self.coherence(llm, j).await,
            Job::Reactivation(j) => {
                let pair = (j.related.clone(), j.suspended.clone());
                let fresh = llm.asked.get(&pair).is_none();
                llm.asked.insert(pair, ());
                if fresh {
                    self.reactivation(llm, j).await;
                }
            }
            Job::Bridges(ids) => bridges.extend(ids),
        }
    }
}

/// The model for the current mode, on a prompt.
fn with_model(config: &Config, req: ChatRequest) -> ChatRequest {
    ChatRequest {
        model: config.llm.model_for(config.mode),
        ..req
    }
}

fn error_kind(e: &AskError) -> &'static str {
    match e {
        AskError::Llm(e) => e.kind.as_str(),
        AskError::Malformed(_) => "malformed_json",
    }
}

fn brief(t: &Thread) -> ThreadBrief {
    ThreadBrief {
        title: t.title.clone(),
        summary: t.summary.clone(),
        topics: t.topics.iter().take(12).cloned().collect(),
        ..ThreadBrief::default()
    }
}

impl Refiner {
    async fn refine(&self, llm: &LlmRuntime, j: RefineJob) {
        let config = self.config.get();
        let req = with_model(
            &config,
            prompts::extraction(
                j.source,
                &j.content,
                &config.language,
                secs(config.llm.timeouts.extraction_secs),
            ),
        );
        let started = Instant::now();
        let r = answers::ask_json(&llm.client, req, "extraction", answers::parse_extraction).await;
        llm.note(&r, started);
        let a: Answer<Extraction> = match r {
            Ok(a) => a,
            Err(e) => {
                llm.count(|c| {
                    c.extractions_kept_local += 1;
                    c.failed += u64::from(matches!(e, AskError::Llm(_)));
                });
                tracing::warn!(target: "llm", event = "llm_extraction", outcome = "kept_local",
                thread_id = %j.thread_id, message_id = %j.message_id,
                error_kind = error_kind(&e), error = %e);
                return;
            }
        };
        let applied = self.memory.lock().apply_llm_extraction(&Refinement {
            thread_id: &j.thread_id,
            message_id: &j.message_id,
            title_before: &j.title_before,
            local: &j.local,
            llm: &a.value,
        });
        match applied {
            Ok(done) => {
                self.memory.flush().await;
                llm.count(|c| c.extractions += 1);
                tracing::info!(target: "llm", event = "llm_extraction", outcome = "applied",
                thread_id = %j.thread_id, message_id = %j.message_id, model = %a.model,
                corrected = a.corrected, title_changed = done.title,
                summary_changed = done.summary, topics_changed = done.topics);
            }
            Err(e) => {
                tracing::info!(target: "llm", event = "llm_extraction", outcome = "stale",
                thread_id = %j.thread_id, message_id = %j.message_id, reason = %e);
            }
        }
    }

    async fn coherence(&self, llm: &LlmRuntime, j: CoherenceJob) {
        let context = {
            let mem = self.memory.lock();
            let orphan = mem
                .graph
                .thread(&j.child)
                .is_some_and(|t| t.parent_id.is_none());
            mem.graph
                .thread(&j.parent)
                .filter(|_| orphan)
                .and_then(|t| t.messages.first())
                .map(|m| {
                    let tool = m.metadata.get("tool").and_then(Value::as_str);
                    (m.content.clone(), tool.unwrap_or("").to_string())
                })
        };
        let Some((context, tool)) = context else {
            return;
        };
        let config = self.config.get();
        let req = with_model(
            &config,
            prompts::coherence(
                &tool,
                &context,
                j.source,
                &j.content,
                secs(config.llm.timeouts.coherence_secs),
            ),
        );
        llm.count(|c| c.coherence_checks += 1);
        let started = Instant::now();
        let r = answers::ask_json(&llm.client, req, "coherence", answers::parse_coherence).await;
        llm.note(&r, started);
        let score = match r {
            Ok(a) => a.value,
            Err(e) => {
                llm.count(|c| c.failed += u64::from(matches!(e, AskError::Llm(_))));
                tracing::warn!(target: "llm", event = "llm_coherence", outcome = "kept_local",
                thread_id = %j.child, context_thread = %j.parent, error_kind = error_kind(&e),
                error = %e);
                return;
            }
        };
        let band = CoherenceBand::of(score);
        let mut adopted = false;
        if band == CoherenceBand::Child {
            let now = self.memory.now();
            adopted = self
                .memory
                .lock()
                .adopt_child(&j.child, &j.parent, score, now)
                .unwrap_or(false);
            if adopted {
                self.memory.flush().await;
                llm.count(|c| c.coherence_children += 1);
            }
        }
        tracing::info!(target: "llm", event = "llm_coherence", outcome = "decided",
        thread_id = %j.child, context_thread = %j.parent, local_score = j.local_score,
        llm_score = score, band = ?band, adopted);
    }

    async fn reactivation(&self, llm: &LlmRuntime, j: ReactivationJob) {
        let thread = {
            let mem = self.memory.lock();
            mem.graph
                .thread(&j.suspended)
                .filter(|t| t.status == ThreadStatus::Suspended)
                .map(brief)
        };
        let Some(thread) = thread else {
            return;
        };
        let config = self.config.get();
        let req = with_model(
            &config,
            prompts::reactivation(
                &thread,
                &j.content,
                secs(config.llm.timeouts.coherence_secs),
            ),
        );
        llm.count(|c| c.reactivation_checks += 1);
        let started = Instant::now();
        let r = answers::ask_json(
            &llm.client,
            req,
            "reactivation",
            answers::parse_reactivation,
        )
        .await;
        llm.note(&r, started);
        let related = match r {
            Ok(a) => a.value,
            Err(e) => {
                llm.count(|c| c.failed += u64::from(matches!(e, AskError::Llm(_))));
                tracing::warn!(target: "llm", event = "llm_reactivation", outcome = "kept_local",
                thread_id = %j.suspended, error_kind = error_kind(&e), error = %e);
                return;
            }
        };
        let mut woken = false;
        if related {
            let now = self.memory.now();
            woken = self
                .memory
                .lock()
                .reactivate_related(&j.suspended, &j.related, now)
                .unwrap_or(false);
            self.memory.flush().await;
            if woken {
                llm.count(|c| c.reactivations += 1);
            }
        }
        tracing::info!(target: "llm", event = "llm_reactivation", outcome = "decided",
        thread_id = %j.suspended, capture_thread = %j.related, similarity = j.similarity,
        related, reactivated = woken);
    }

    async fn type_bridges(&self, llm: &LlmRuntime, ids: Vec<String>) {
        let pairs: Vec<(String, ThreadBrief, ThreadBrief)> = {
            let mem = self.memory.lock();
            ids.iter()
                .filter_map(|id| {
                    let b = mem.graph.bridge(id)?;
                    if b.relation_type != BridgeType::Extends || b.status == BridgeStatus::Invalid {
                        return None;
                    }
                    let a = mem.graph.thread(&b.source_id)?;
                    let t = mem.graph.thread(&b.target_id)?;
                    Some((id.clone(), brief(a), brief(t)))
                })
                .collect()
        };
        if pairs.is_empty() {
            return;
        }
        let config = self.config.get();
        let briefs: Vec<(ThreadBrief, ThreadBrief)> = pairs
            .iter()
            .map(|(_, a, b)| (a.clone(), b.clone()))
            .collect();
        let req = with_model(
            &config,
            prompts::relations(&briefs, secs(config.llm.timeouts.extraction_secs)),
        );
        let n = pairs.len();
        llm.count(|c| c.bridges_checked += n as u64);
        let started = Instant::now();
        let r = answers::ask_json(&llm.client, req, "relations", |t| {
            answers::parse_relations(t, n)
        })
        .await;
        llm.note(&r, started);
        let relations = match r {
            Ok(a) => a.value,
            Err(e) => {
                llm.count(|c| c.failed += u64::from(matches!(e, AskError::Llm(_))));
                tracing::warn!(target: "llm", event = "llm_relations", outcome = "kept_local",
                bridges = n, error_kind = error_kind(&e), error = %e);
                return;
            }
        };
        let retyped = {
            let mut mem = self.memory.lock();
            relations
                .iter()
                .filter(|r| {
                    mem.retype_bridge(&pairs[r.pair].0, r.relation, r.b_to_a, &r.reason)
                        .unwrap_or(false)
                })
                .count()
        };
        if retyped > 0 {
            self.memory.flush().await;
            llm.count(|c| c.bridges_retyped += retyped as u64);
        }
        tracing::info!(target: "llm", event = "llm_relations", outcome = "decided", bridges = n,
        answered = relations.len(), retyped);
    }

    /// After the local synthesis of a compaction was saved (at `at`, so under that file name):
    /// asks the LLM for its synthesis of the same threads in the background, and replaces the file
    /// with it when it comes. `SessionStart(compact)` injects whichever is there.
    pub fn spawn_synthesis(
        &self,
        at: DateTime<Utc>,
        local: ai_smartness_core::memory::synthesis::Synthesis,
    ) {
        let Some(llm) = self.runtime().cloned() else {
            return;
        };
        let refiner = self.clone();
        self.life.spawn(async move {
        let _one_at_a_time = llm.synthesis.lock().await;
        let ids: Vec<&str> = local.threads.iter().map(|t| t.id.as_str()).collect();
        let threads: Vec<ThreadBrief> = {
            let mem = refiner.memory.lock();
            ids.iter()
                .filter_map(|id| mem.graph.thread(id))
                .map(|t| {
                    let last = |v: &[String]| v.iter().rev().take(5).rev().cloned().collect();
                    let skip = t.messages.len().saturating_sub(SYNTHESIS_RECENT);
                    ThreadBrief {
                        decisions: last(&t.decisions),
                        questions: last(&t.questions),
                        recent: t.messages[skip..]
                            .iter()
                            .map(|m| m.content.clone())
                            .collect(),
                        ..brief(t)
                    }
                })
                .collect()
        };
        if threads.is_empty() {
            return;
        }
        let config = refiner.config.get();
        let req = with_model(
            &config,
            prompts::synthesis(
                &threads,
                &config.language,
                secs(config.llm.timeouts.synthesis_secs),
            ),
        );
        let started = Instant::now();
        let r = answers::ask_json(&llm.client, req, "synthesis", answers::parse_synthesis).await;
        llm.note(&r, started);
        let a = match r {
            Ok(a) => a,
            Err(e) => {
                llm.count(|c| c.failed += u64::from(matches!(e, AskError::Llm(_))));
                tracing::warn!(target: "llm", event = "llm_synthesis", outcome = "kept_local",
                    error_kind = error_kind(&e), error = %e);
                return;
            }
        };
        let mut v = local;
        v.summary = a.value.summary;
        v.decisions_made = a.value.decisions_made;
        v.open_questions = a.value.open_questions;
        v.key_insights = a.value.key_insights;
        v.generator = "llm".into();
        v.model = Some(a.model.clone());
        let memory = refiner.memory.clone();
        let saved =
            tokio::task::spawn_blocking(move || memory.store().save_synthesis(at, &v)).await;
        match saved {
            Ok(Ok(path)) => {
                llm.count(|c| c.syntheses += 1);
                tracing::info!(target: "llm", event = "llm_synthesis", outcome = "replaced",
                    path = %path.display(), model = %a.model, corrected = a.corrected);
            }
            Ok(Err(e)) => {
                tracing::warn!(target: "llm", event = "llm_synthesis", outcome = "not_saved", error = %e)
            }
            Err(e) => {
                tracing::warn!(target: "llm", event = "llm_synthesis", outcome = "not_saved", error = %e)
            }
        }
    });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn outcome() -> Outcome {
        Outcome {
            decision: Decision::NewThread,
            thread_id: "thread_a".into(),
            message_id: "msg_a".into(),
            similarity: 0.0,
            bridges_created: 1,
            coherence: Some((0.45, CoherenceBand::Orphan)),
            context_thread: Some("thread_glob".into()),
            borderline_suspended: Some(("thread_old".into(), 0.2)),
            new_bridges: vec!["bridge_1".into()],
        }
    }

    fn kinds(jobs: &[Job]) -> Vec<&'static str> {
        jobs.iter()
            .map(|j| match j {
                Job::Refine(_) => "refine",
                Job::Coherence(_) => "coherence",
                Job::Reactivation(_) => "reactivation",
                Job::Bridges(_) => "bridges",
            })
            .collect()
    }

    fn placed(o: &Outcome) -> Placed<'_> {
        Placed {
            outcome: o,
            source: SourceType::Read,
            content: "content",
            local: Extraction::default(),
            title_before: "t".into(),
        }
    }

    #[test]
    fn a_capture_gives_the_jobs_its_outcome_calls_for() {
        let o = outcome();
        assert_eq!(
            kinds(&jobs_for(placed(&o))),
            ["refine", "coherence", "reactivation", "bridges"]
        );
        // Continued an existing thread, confident coherence, nothing borderline: extraction only.
        let o = Outcome {
            decision: Decision::Continue,
            borderline_suspended: None,
            new_bridges: Vec::new(),
            ..outcome()
        };
        assert_eq!(kinds(&jobs_for(placed(&o))), ["refine"]);
        let o = Outcome {
            coherence: Some((0.7, CoherenceBand::Child)),
            borderline_suspended: None,
            new_bridges: Vec::new(),
            ..outcome()
        };
        assert_eq!(kinds(&jobs_for(placed(&o))), ["refine"]);
    }

    #[test]
    fn none_is_off_and_an_unknown_provider_falls_back() {
        let dir = tempfile::tempdir().unwrap();
        let paths = ProjectPaths::new(dir.path().to_path_buf());
        let (state, rx) = setup(
            &Config::default(),
            &paths,
            ai_smartness_core::clock::system(),
        );
        assert!(matches!(state, LlmState::Off) && rx.is_none());
        let mut c = Config::default();
        c.llm.provider = "no-such-llm".into();
        let (state, rx) = setup(&c, &paths, ai_smartness_core::clock::system());
        assert!(matches!(state, LlmState::Fallback { .. }) && rx.is_none());
        assert_eq!(local_view(&state).unwrap().in_use, "local fallback");
        assert!(!dir.path().join(".ai/llm_usage.json").exists());
    }

    /// A provider answering from a script, recording what it was asked.
    #[derive(Debug, Default)]
    struct Scripted {
        answers: Mutex<std::collections::VecDeque<String>>,
        seen: Mutex<Vec<ChatRequest>>,
    }

    impl ai_smartness_llm::Provider for Scripted {
        fn id(&self) -> &str {
            "anthropic"
        }
        fn kind(&self) -> ProviderKind {
            ProviderKind::AnthropicMessages
        }
        fn default_model(&self) -> &str {
            "claude-haiku-5-5"
        }
        fn complete<'a>(
            &'a self,
            req: &'a ChatRequest,
            _: Option<&'a ai_smartness_llm::EventSink<'a>>,
        ) -> ai_smartness_llm::BoxFuture<
            'a,
            Result<ai_smartness_llm::ChatResponse, ai_smartness_llm::LlmError>,
        > {
            Box::pin(async move {
                lock(&self.seen).push(req.clone());
                let text = lock(&self.answers).pop_front().ok_or_else(|| {
                    ai_smartness_llm::LlmError::new(ErrorKind::Network, "the script is over")
                })?;
                Ok(ai_smartness_llm::ChatResponse {
                    text,
                    tool_calls: Vec::new(),
                    stop_reason: Some("end_turn".into()),
                    model: "claude-haiku-5-5".into(),
                    usage: ai_smartness_llm::Usage {
                        input_tokens: 100,
                        output_tokens: 20,
                        ..Default::default()
                    },
                    cost_usd: None,
                })
            })
        }
        fn ping(&self) -> ai_smartness_llm::BoxFuture<'_, Result<(), ai_smartness_llm::LlmError>> {
            Box::pin(async { Ok(()) })
        }
    }

    struct Rig {
        _dir: tempfile::TempDir,
        refiner: Refiner,
        memory: MemoryHandle,
        llm: Arc<LlmRuntime>,
        script: Arc<Scripted>,
        _jobs: mpsc::Receiver<Job>,
    }

    impl Rig {
        /// An in-process daemon over `memory` whose LLM answers `answers` in order.
        fn new(memory: ai_smartness_core::memory::engine::Memory, answers: &[&str]) -> Rig {
            let dir = tempfile::tempdir().unwrap();
            let script = Arc::new(Scripted::default());
            lock(&script.answers).extend(answers.iter().map(|a| a.to_string()));
            let costs = Arc::new(CostTracker::open(
                &dir.path().join(".ai"),
                Limits::default(),
            ));
            let client = LlmClient::new(script.clone())
                .with_retry(ai_smartness_llm::retry::RetryPolicy::none())
                .with_costs(costs);
            let (runtime, jobs) = LlmRuntime::new(client, ai_smartness_core::clock::system());
            let llm = Arc::new(runtime);
            let daemon =
                crate::app::Daemon::for_tests(dir.path(), memory, LlmState::On(llm.clone()));
            Rig {
                _dir: dir,
                refiner: daemon.refiner().clone(),
                memory: daemon.memory().clone(),
                llm,
                script,
                _jobs: jobs,
            }
        }

        fn asked(&self) -> Vec<String> {
            lock(&self.script.seen)
                .iter()
                .map(|r| {
                    r.messages
                        .iter()
                        .map(|m| m.text())
                        .collect::<Vec<_>>()
                        .join("\n")
                })
                .collect()
        }
    }

    /// A capture on a few axes of a 16-dimension space (shared axes: similar captures).
    fn cap(
        tool: &str,
        title: &str,
        topics: &[&str],
        axes: &[usize],
    ) -> ai_smartness_core::memory::engine::Capture {
        let mut v = vec![0f32; 16];
        for &a in axes {
            v[a] = 1.0;
        }
        ai_smartness_core::memory::engine::normalize(&mut v);
        ai_smartness_core::memory::engine::Capture {
            tool: tool.into(),
            source_type: ai_smartness_capture::source::source_for_tool(tool),
            author: ai_smartness_core::memory::types::Author::Assistant,
            content: format!("{title}: the content"),
            extraction: Extraction {
                title: title.into(),
                summary: format!("{title} summary"),
                subjects: topics.iter().map(|s| s.to_string()).collect(),
                ..Extraction::default()
            },
            embedding: v,
            at: Utc::now(),
            metadata: serde_json::Map::new(),
            units: Vec::new(),
        }
    }

    #[tokio::test]
    async fn an_uncertain_follow_up_becomes_a_child_when_the_llm_says_so() {
        let mut m = ai_smartness_core::memory::engine::Memory::default();
        let g = m
            .ingest(cap("Glob", "store files", &["store"], &[0]))
            .thread_id;
        let c = m.ingest(cap("Read", "parser", &["parser"], &[5])).thread_id;
        let d = m.ingest(cap("Read", "lexer", &["lexer"], &[9])).thread_id;
        let rig = Rig::new(
            m,
            &[
                r#"{"score": 0.8, "reason": "same files"}"#,
                r#"{"score": 0.4}"#,
            ],
        );
        let job = |child: &str| CoherenceJob {
            child: child.into(),
            parent: g.clone(),
            local_score: 0.45,
            source: SourceType::Read,
            content: Arc::from("fn parse() {}"),
        };
        rig.refiner.coherence(&rig.llm, job(&c)).await;
        rig.refiner.coherence(&rig.llm, job(&d)).await;
        {
            let mem = rig.memory.lock();
            assert_eq!(
                mem.graph.thread(&c).unwrap().parent_id.as_deref(),
                Some(g.as_str())
            );
            let b = mem.graph.bridge_between(&c, &g).unwrap();
            assert_eq!(b.relation_type, BridgeType::ChildOf);
            assert!(
                mem.graph.thread(&d).unwrap().parent_id.is_none(),
                "0.4: orphan"
            );
        }
        let asked = rig.asked();
        assert!(asked[0].contains("Glob result") && asked[0].contains("store files: the content"));
        let n = rig.llm.counters();
        assert_eq!((n.coherence_checks, n.coherence_children), (2, 1));
        // An adopted thread is not asked about again.
        let adopted = job(&c);
        rig.refiner.coherence(&rig.llm, adopted).await;
        assert_eq!(rig.asked().len(), 2);
    }

    #[tokio::test]
    async fn a_borderline_suspended_thread_is_woken_and_linked_once() {
        let mut m = ai_smartness_core::memory::engine::Memory::default();
        let s = m
            .ingest(cap("Read", "auth tokens", &["auth"], &[2]))
            .thread_id;
        m.set_thread_status(&s, ThreadStatus::Suspended, Utc::now())
            .unwrap();
        let r = m
            .ingest(cap("Bash", "token expiry", &["expiry"], &[3]))
            .thread_id;
        let rig = Rig::new(m, &[r#"{"related": true, "reason": "jwt"}"#]);
        let job = Job::Reactivation(ReactivationJob {
            suspended: s.clone(),
            related: r.clone(),
            similarity: 0.2,
            content: Arc::from("the jwt expires too early"),
        });
        let mut bridges = Vec::new();
        rig.refiner
            .run_job(&rig.llm, job.clone(), &mut bridges)
            .await;
        {
            let mem = rig.memory.lock();
            assert_eq!(mem.graph.thread(&s).unwrap().status, ThreadStatus::Active);
            assert!(mem.graph.bridge_between(&s, &r).is_some());
        }
        assert!(rig.asked()[0].to_lowercase().contains("title: auth tokens"));
        // Asked once per pair, whatever happens next.
        rig.memory
            .lock()
            .set_thread_status(&s, ThreadStatus::Suspended, Utc::now())
            .unwrap();
        rig.refiner.run_job(&rig.llm, job, &mut bridges).await;
        assert_eq!(rig.asked().len(), 1);
        assert_eq!(rig.llm.counters().reactivations, 1);
    }

    #[tokio::test]
    async fn gossip_bridges_are_retyped_in_one_call_and_bad_items_change_nothing() {
        use ai_smartness_core::memory::types::ThinkBridge;
        let mut m = ai_smartness_core::memory::engine::Memory::default();
        let a = m
            .ingest(cap("Read", "old cache", &["cache"], &[1]))
            .thread_id;
        let b = m
            .ingest(cap("Read", "new cache", &["redis"], &[6]))
            .thread_id;
        let c = m
            .ingest(cap("Read", "config", &["config"], &[11]))
            .thread_id;
        let bridge = |id: &str, s: &str, t: &str| ThinkBridge {
            id: id.into(),
            source_id: s.into(),
            target_id: t.into(),
            relation_type: BridgeType::Extends,
            reason: "similarity 0.6".into(),
            shared_concepts: Vec::new(),
            confidence: 0.6,
            status: BridgeStatus::Active,
            propagated_from: None,
            propagation_depth: 0,
            use_count: 0,
            last_used: None,
            weight: 1.0,
            weight_at: Utc::now(),
            created_at: Utc::now(),
        };
        m.graph.insert_bridge(bridge("bridge_ab", &a, &b));
        m.graph.insert_bridge(bridge("bridge_ac", &a, &c));
        let rig = Rig::new(
            m,
            &[
                r#"{"bridges": [{"pair": 1, "relation": "REPLACES", "direction": "B_TO_A", "reason": "redis replaces the old cache"},
                              {"pair": 2, "relation": "SIBLING"}]}"#,
            ],
        );
        let mut pending = Vec::new();
        rig.refiner
            .run_job(
                &rig.llm,
                Job::Bridges(vec!["bridge_ab".into(), "bridge_ac".into()]),
                &mut pending,
            )
            .await;
        assert_eq!(pending.len(), 2, "bridges wait for a batch");
        rig.refiner.type_bridges(&rig.llm, pending).await;
        let mem = rig.memory.lock();
        let ab = mem.graph.bridge("bridge_ab").unwrap();
        assert_eq!(ab.relation_type, BridgeType::Replaces);
        assert_eq!(
            (ab.source_id.as_str(), ab.target_id.as_str()),
            (b.as_str(), a.as_str())
        );
        assert!(ab.reason.contains("redis replaces"));
        assert_eq!(
            mem.graph.bridge("bridge_ac").unwrap().relation_type,
            BridgeType::Extends
        );
        assert_eq!(rig.asked().len(), 1, "one call for the batch");
        assert!(rig.asked()[0].contains("PAIR 2:"));
        assert_eq!(rig.llm.counters().bridges_retyped, 1);
    }

    #[tokio::test]
    async fn an_extraction_is_applied_after_one_correction_and_saved() {
        let mut m = ai_smartness_core::memory::engine::Memory::default();
        let local = cap("Bash", "pool notes", &["pool"], &[0]);
        let o = m.ingest(local.clone());
        let title_before = m.graph.thread(&o.thread_id).unwrap().title.clone();
        let rig = Rig::new(
            m,
            &[
                "not json",
                r#"{"title": "Connection Pool Sizing", "summary": "s", "subjects": ["pool"]}"#,
            ],
        );
        rig.memory.flush().await;
        rig.refiner
            .refine(
                &rig.llm,
                RefineJob {
                    thread_id: o.thread_id.clone(),
                    message_id: o.message_id.clone(),
                    title_before: title_before.clone(),
                    source: SourceType::Command,
                    content: Arc::from(local.content.as_str()),
                    local: local.extraction.clone(),
                },
            )
            .await;
        assert_eq!(rig.asked().len(), 2);
        assert!(rig.asked()[1].contains("could not be used"));
        let on_disk = rig.memory.store().load().unwrap();
        let t = on_disk
            .threads
            .iter()
            .find(|t| t.id == o.thread_id)
            .unwrap();
        assert_eq!(t.title, "Connection Pool Sizing", "saved like any edit");
        let usage = rig.llm.client().costs().unwrap().snapshot();
        assert_eq!(usage.today.totals.calls, 2);
        // A job for a message that went away is dropped without a call... after the call.
        assert_eq!(rig.llm.counters().extractions, 1);
    }

    #[test]
    fn a_full_queue_skips_and_counts() {
        let client = LlmClient::new(Arc::new(Scripted::default()));
        let (llm, _jobs) = LlmRuntime::new(client, ai_smartness_core::clock::system());
        for _ in 0..QUEUE_CAPACITY + 10 {
            llm.submit(Job::Bridges(Vec::new()));
        }
        let c = llm.counters();
        assert_eq!(
            (c.queued, c.skipped_queue_full),
            (QUEUE_CAPACITY as u64, 10)
        );
        assert_eq!(llm.queue_len(), QUEUE_CAPACITY);
    }

    #[test]
    fn settings_carry_names_never_keys() {
        let mut c = Config::default();
        c.llm.provider = "anthropic".into();
        c.llm.api_key_env = Some("MY_KEY_VAR".into());
        c.llm.claude_cli_path = Some("/opt/claude".into());
        c.llm
            .models_by_mode
            .insert("normal".into(), json!("m-normal"));
        let s = provider_settings(&c.llm, &c);
        assert_eq!(s.api_key_env.as_deref(), Some("MY_KEY_VAR"));
        assert_eq!(s.model.as_deref(), Some("m-normal"));
        assert_eq!(s.claude_path, Some(PathBuf::from("/opt/claude")));
        assert_eq!(s.ping_timeout, Duration::from_secs(10));
    }
}
