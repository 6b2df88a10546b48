//! The LLM's background work: each job applied to the memory, the bridge typing, the compaction
//! synthesis.

use super::*;
/// The optional LLM's work for the daemon: the background refinements of what the worker
/// placed, the compaction synthesis, the reachability `ai health` shows, the cost ledger.
#[derive(Clone)]
pub struct Refiner {
    /// Which LLM is in use, or why none is.
    pub(super) llm: Arc<LlmState>,
    /// What the refinements read and change.
    pub(super) memory: MemoryHandle,
    /// Timeouts, models and language, read at each call (an edit applies at the next).
    pub(super) config: ConfigHandle,
    /// The stop the background task listens for; syntheses and checks run as tracked tasks.
    pub(super) life: Lifecycle,
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
        let Some(costs) = self.runtime().and_then(|l| l.costs()).cloned() else {
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

    pub(super) async fn run_job(&self, llm: &LlmRuntime, job: Job, bridges: &mut Vec<String>) {
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
pub(super) fn with_model(config: &Config, req: ChatRequest) -> ChatRequest {
    ChatRequest {
        model: config.llm.model_for(config.mode),
        ..req
    }
}

pub(super) fn error_kind(e: &AskError) -> &'static str {
    match e {
        AskError::Llm(e) => e.kind.as_str(),
        AskError::Malformed(_) => "malformed_json",
    }
}

pub(super) fn brief(t: &Thread) -> ThreadBrief {
    ThreadBrief {
        title: t.title.clone(),
        summary: t.summary.clone(),
        topics: t.topics.iter().take(12).cloned().collect(),
        ..ThreadBrief::default()
    }
}

impl Refiner {
    pub(super) async fn refine(&self, llm: &LlmRuntime, j: RefineJob) {
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
        let r = ask_json(&llm.client, req, "extraction", answers::parse_extraction).await;
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

    pub(super) async fn coherence(&self, llm: &LlmRuntime, j: CoherenceJob) {
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
        let r = ask_json(&llm.client, req, "coherence", answers::parse_coherence).await;
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

    pub(super) async fn reactivation(&self, llm: &LlmRuntime, j: ReactivationJob) {
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
        let r = ask_json(
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

    pub(super) async fn type_bridges(&self, llm: &LlmRuntime, ids: Vec<String>) {
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
        let r = ask_json(&llm.client, req, "relations", |t| {
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
        let r = ask_json(&llm.client, req, "synthesis", answers::parse_synthesis).await;
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
