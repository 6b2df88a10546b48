//! Which LLM is in use: its client and job queue, its reachability (cached for `ai health`), its
//! counters, and how it is set up from the config.

use super::*;
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

use ai_smartness_replies::Counters;

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
    pub(super) client: LlmClient,
    /// The ledger the client checks and counts in, kept here too for what reads or flushes it
    /// (`ai status`, `ai health`, the periodic save): the client only sees its `Spending` side.
    pub(super) costs: Option<Arc<CostTracker>>,
    pub(super) jobs: mpsc::Sender<Job>,
    pub(super) counters: Mutex<Counters>,
    pub(super) reach: Mutex<Reach>,
    /// A reachability check is running (only one at a time).
    pub(super) refreshing: AtomicBool,
    /// One synthesis at a time (a second compaction waits for the first).
    pub(super) synthesis: tokio::sync::Mutex<()>,
    /// Pairs already asked about (bounded: the least used are forgotten first).
    pub(super) asked: quick_cache::sync::Cache<(String, String), ()>,
    /// When a reachability check was made, by the daemon's clock.
    pub(super) clock: SharedClock,
}

pub(super) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// What the provider factory needs, from the `llm` section (the key stays in the environment:
/// only its variable's name is passed). A claude CLI subprocess gets the guard our hooks read,
/// so they stand aside inside it and the call cannot capture itself.
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
        child_env: vec![(ai_smartness_proto::HOOK_GUARD_ENV.into(), "1".into())],
        ping_timeout: secs(c.timeouts.ping_secs),
        ..ProviderSettings::default()
    }
}

pub(super) fn secs(n: u64) -> Duration {
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
    let limits = limits_of(c);
    let costs = Arc::new(CostTracker::open_with_clock(
        &paths.ai_dir,
        limits,
        clock.clone(),
    ));
    tracing::info!(
        target: "llm",
        event = "llm_ready",
        provider = provider.id(),
        model = %c.model_for(config.mode).unwrap_or_else(|| provider.default_model().to_string()),
        max_tokens_per_call = c.max_tokens_per_call,
        max_cost_per_day_usd = c.max_cost_per_day_usd,
    );
    let (runtime, rx) = LlmRuntime::new(LlmClient::new(provider), Some(costs), clock);
    (LlmState::On(Arc::new(runtime)), Some(rx))
}

/// The spending limits an `llm` section sets.
pub fn limits_of(c: &ai_smartness_config::LlmConfig) -> Limits {
    Limits {
        max_tokens_per_call: c.max_tokens_per_call,
        max_cost_per_day_usd: c.max_cost_per_day_usd,
    }
}

impl LlmRuntime {
    /// A runtime around `client`, its calls checked against and counted in `costs` when given,
    /// and the receiving end of its job queue (for [`Refiner::run`]).
    pub fn new(
        client: LlmClient,
        costs: Option<Arc<CostTracker>>,
        clock: SharedClock,
    ) -> (LlmRuntime, mpsc::Receiver<Job>) {
        let (tx, rx) = mpsc::channel(QUEUE_CAPACITY);
        // One ledger for both sides: what the client counts is what `ai status` shows.
        let client = match &costs {
            Some(c) => client.with_costs(c.clone()),
            None => client,
        };
        let runtime = LlmRuntime {
            client,
            costs,
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

    /// The ledger, when there is one (for `ai status` and the periodic save).
    pub fn costs(&self) -> Option<&Arc<CostTracker>> {
        self.costs.as_ref()
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

    pub(super) fn count(&self, f: impl FnOnce(&mut Counters)) {
        f(&mut lock(&self.counters));
    }

    /// Records what a call says about reachability: an answer (even malformed) proves it
    /// answers; a network, timeout, auth or server failure proves it does not.
    pub(super) fn note<T>(&self, r: &Result<T, AskError>, started: Instant) {
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
            usage: self.costs.as_ref().map(|c| c.snapshot()),
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
        let usage = self.costs.as_ref().map(|c| c.snapshot());
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
pub(super) fn refresh_reach(llm: &Arc<LlmRuntime>, ping_secs: u64, life: &Lifecycle) {
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
