//! The assistant in the daemon: the effects around the pure core of [`ai_smartness_assistant`].
//!
//! - this file: the shared state (the slot, sessions, automations, running rounds), saving,
//!   the event bus `ai watch` listens to, ending sessions, the scheduler tick and the watchdog;
//! - [`round`]: the autonomous loop of one round (model call, decision, commands, waits);
//! - [`requests`]: what the socket asks (chat, approve, automations, listings).
//!
//! Locking: one std mutex over the state, never held across an await. Saves go through an async
//! lock and snapshot the session inside it, so the last save always holds the latest state.

pub mod requests;
pub mod round;

use super::llm_tasks::LlmState;
use super::runs::Runs;
use super::state::{ConfigHandle, Lifecycle, MemoryHandle};
use crate::service_error::ServiceError;
use ai_smartness_assistant::queue::{self, ActiveKind, QueuedKind, SessionSlot, TickAction};
use ai_smartness_core::memory::ids;
use ai_smartness_proto::paths::ProjectPaths;
use ai_smartness_records::assistant::types::{
    AISession, Automation, ExecutionTrigger, MessageBody, RoundReason, SessionEndReason,
    SessionKind, SessionMessage, SystemMessage, SystemMessageType,
};
use ai_smartness_records::retention::Keep;
use ai_smartness_records::Record;
use ai_smartness_store::JsonFolder;
use chrono::{DateTime, Utc};

use ai_smartness_replies::SessionEvent;
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use tokio::sync::{broadcast, watch, Notify};

/// Id prefix of session messages.
const MESSAGE_PREFIX: &str = "smsg";

/// Everything behind the state lock.
#[derive(Default)]
pub struct AssistantState {
    /// The single active session and the queue.
    pub slot: SessionSlot,
    /// Every session, ended ones included (the record; listings and resumes read it).
    pub sessions: BTreeMap<String, AISession>,
    pub automations: BTreeMap<String, Automation>,
    /// Rounds running now, each with its cancel signal: a stop or pause must reach a round
    /// waiting on the model or on the network.
    pub running: HashMap<String, watch::Sender<bool>>,
}

/// The sessions and automations: their state, their files, their events.
pub struct AssistantService {
    state: Mutex<AssistantState>,
    /// Where sessions are kept (one file each).
    sessions: JsonFolder<AISession>,
    /// Where automations are kept (one file each).
    automations: JsonFolder<Automation>,
    /// Serialises saves (see module doc).
    save_lock: tokio::sync::Mutex<()>,
    events: broadcast::Sender<SessionEvent>,
    /// Wakes the scheduler tick (automation changes, a session closing).
    tick: Notify,
}

impl AssistantService {
    /// Loads the sessions and automations (damaged files quarantined).
    pub fn open(
        db_dir: &std::path::Path,
    ) -> Result<AssistantService, ai_smartness_store::StoreError> {
        let sessions = JsonFolder::<AISession>::open(db_dir)?;
        let automations = JsonFolder::<Automation>::open(db_dir)?;
        let loaded_sessions = sessions.load()?;
        let loaded_automations = automations.load()?;
        for (path, why) in loaded_sessions
            .quarantined
            .iter()
            .chain(&loaded_automations.quarantined)
        {
            tracing::warn!("quarantined {}: {why}", path.display());
        }
        let state = AssistantState {
            sessions: loaded_sessions
                .records
                .into_iter()
                .map(|(_, s)| (s.id.clone(), s))
                .collect(),
            automations: loaded_automations
                .records
                .into_iter()
                .map(|(_, a)| a)
                .map(|a| (a.id.clone(), a))
                .collect(),
            ..Default::default()
        };
        Ok(AssistantService {
            state: Mutex::new(state),
            sessions,
            automations,
            save_lock: tokio::sync::Mutex::new(()),
            events: broadcast::channel(1024).0,
            tick: Notify::new(),
        })
    }

    /// The state, poison-tolerant (a panicked round must not take the assistant down).
    pub fn state(&self) -> MutexGuard<'_, AssistantState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Subscribe to events.
    pub fn subscribe(&self) -> broadcast::Receiver<SessionEvent> {
        self.events.subscribe()
    }

    fn emit(&self, e: SessionEvent) {
        // No subscriber is fine.
        let _ = self.events.send(e);
    }

    /// Asks the scheduler to tick now.
    pub fn wake_tick(&self) {
        self.tick.notify_one();
    }

    /// Saves a session as it is now.
    pub async fn persist(&self, id: &str) {
        let _g = self.save_lock.lock().await;
        let Some(s) = self.state().sessions.get(id).cloned() else {
            return;
        };
        let store = self.sessions.clone();
        let r = tokio::task::spawn_blocking(move || store.save(&s)).await;
        match r {
            Ok(Ok(())) => {}
            Ok(Err(e)) => tracing::error!("saving session {id} failed: {e}"),
            Err(e) => tracing::error!("saving session {id} panicked: {e}"),
        }
    }

    /// Forgets the ended sessions `keep` no longer keeps (the oldest past its count or age),
    /// and deletes their files. Returns how many.
    pub async fn prune_ended(&self, keep: Keep, now: DateTime<Utc>) -> usize {
        let _g = self.save_lock.lock().await;
        let gone = {
            let mut st = self.state();
            let ended = st
                .sessions
                .values()
                // A paused session is resumed when the slot is free: not over.
                .filter(|s| s.is_ended() && s.end_reason != Some(SessionEndReason::Suspended))
                .map(|s| (s.ended_at.unwrap_or(s.updated_at), s.id.clone()))
                .collect();
            let gone = ai_smartness_store::retention::expired(ended, keep, now);
            for id in &gone {
                st.sessions.remove(id);
            }
            gone
        };
        let count = gone.len();
        if count > 0 {
            let store = self.sessions.clone();
            let deleted = tokio::task::spawn_blocking(move || {
                for id in gone {
                    if let Err(e) = store.delete(&id) {
                        tracing::warn!("ended session {id} not deleted: {e}");
                    }
                }
            })
            .await;
            if let Err(e) = deleted {
                tracing::error!("deleting ended sessions panicked: {e}");
            }
        }
        count
    }

    /// Saves every session still open that changed since `since` (at shutdown).
    pub async fn persist_open(&self, since: DateTime<Utc>) {
        let open: Vec<String> = self
            .state()
            .sessions
            .values()
            .filter(|s| !s.is_ended() && s.updated_at >= since)
            .map(|s| s.id.clone())
            .collect();
        for id in open {
            self.persist(&id).await;
        }
    }

    /// Saves an automation as it is now.
    pub async fn persist_automation(&self, id: &str) -> Result<(), ServiceError> {
        let _g = self.save_lock.lock().await;
        let Some(a) = self.state().automations.get(id).cloned() else {
            return Ok(());
        };
        let store = self.automations.clone();
        tokio::task::spawn_blocking(move || store.save(&a))
            .await
            .map_err(|e| ServiceError::internal(e.to_string()))?
            .map_err(|e| ServiceError::storage(e.to_string()))
    }

    /// Removes an automation's file.
    pub async fn delete_automation_file(&self, id: &str) -> Result<(), ServiceError> {
        let _g = self.save_lock.lock().await;
        let store = self.automations.clone();
        let id = id.to_string();
        tokio::task::spawn_blocking(move || store.delete(&id))
            .await
            .map_err(|e| ServiceError::internal(e.to_string()))?
            .map_err(|e| ServiceError::storage(e.to_string()))
    }

    /// Appends a message (and bumps the session's activity); returns its id.
    pub fn push(&self, session_id: &str, now: DateTime<Utc>, body: MessageBody) -> String {
        self.push_message(
            session_id,
            now,
            SessionMessage::new(new_message_id(now), now, body),
        )
    }

    /// Appends a prepared message.
    pub fn push_message(&self, session_id: &str, now: DateTime<Utc>, m: SessionMessage) -> String {
        let id = m.id.clone();
        {
            let mut st = self.state();
            let Some(s) = st.sessions.get_mut(session_id) else {
                return id;
            };
            s.messages.push(m.clone());
            s.updated_at = now;
        }
        self.emit(SessionEvent::Message {
            session_id: session_id.to_string(),
            message: Box::new(m),
        });
        id
    }

    /// Appends a system message.
    pub fn push_system(&self, session_id: &str, now: DateTime<Utc>, sm: SystemMessage) -> String {
        self.push(session_id, now, MessageBody::System { system_message: sm })
    }

    /// Deletes a fallback message (approved, answered).
    pub fn delete_message(&self, session_id: &str, message_id: &str) {
        {
            let mut st = self.state();
            if let Some(s) = st.sessions.get_mut(session_id) {
                s.messages.retain(|m| m.id != message_id);
            }
        }
        self.emit(SessionEvent::MessageDeleted {
            session_id: session_id.to_string(),
            message_id: message_id.to_string(),
        });
    }

    /// Tells watchers a session's state.
    pub fn emit_state(&self, session_id: &str, state: &'static str) {
        let end_reason = self
            .state()
            .sessions
            .get(session_id)
            .and_then(|s| s.end_reason);
        self.emit(SessionEvent::State {
            session_id: session_id.to_string(),
            state: state.to_string(),
            end_reason,
        });
    }

    /// A round stopped.
    pub fn emit_round_ended(&self, session_id: &str) {
        self.emit(SessionEvent::RoundEnded {
            session_id: session_id.to_string(),
        });
    }

    /// Ends a session: reason, time, no waiting, out of the slot and the queue, its round told
    /// to stop; saved; the tick woken (the slot may be free). An ended session stays ended.
    pub async fn end(&self, id: &str, reason: SessionEndReason, now: DateTime<Utc>) -> bool {
        {
            let mut st = self.state();
            let Some(s) = st.sessions.get_mut(id) else {
                return false;
            };
            if s.end_reason.is_some() {
                return false;
            }
            s.end_reason = Some(reason);
            s.ended_at = Some(now);
            s.updated_at = now;
            s.is_waiting_for_network = false;
            s.waiting = None;
            let _ = st.slot.close_active(id);
            st.slot.remove_queued(id);
            if let Some(cancel) = st.running.get(id) {
                let _ = cancel.send(true);
            }
        }
        tracing::info!("session {id} ended: {reason:?}");
        self.persist(id).await;
        self.emit_state(id, "ended");
        self.wake_tick();
        true
    }

    /// Gives the slot up without ending the session (a quiet chat): it can take it back later.
    pub fn release(&self, id: &str) -> bool {
        let freed = self.state().slot.close_active(id).is_ok();
        if freed {
            self.emit_state(id, "idle");
            self.wake_tick();
        }
        freed
    }
}

/// What the assistant reads and changes of the project's files.
pub struct ProjectFiles {
    /// The folders commands may name, and the synthesis.
    pub paths: ProjectPaths,
    /// The user rules' owner.
    pub rules: Arc<ai_smartness_store::rules::RulesFile>,
}

/// The assistant with what it works with: the sessions, the memory it reads and changes, the
/// model, the runs an action may start.
#[derive(Clone)]
pub struct Assistant {
    /// Sessions, automations, the slot and the events.
    sessions: Arc<AssistantService>,
    /// What commands read and change; its clock dates the sessions.
    memory: MemoryHandle,
    /// The orchestrator's limits and models, read at each use.
    config: ConfigHandle,
    /// The model the rounds call, when one is configured.
    llm: Arc<LlmState>,
    /// Rounds run as tracked tasks; waits end at the stop.
    life: Lifecycle,
    /// A `START_RUN` action starts a workflow run.
    runs: Runs,
    /// The folders commands may name, and the synthesis.
    paths: ProjectPaths,
    /// The user rules (in every prompt; commands add and remove them).
    rules: Arc<ai_smartness_store::rules::RulesFile>,
}

impl Assistant {
    pub fn new(
        sessions: Arc<AssistantService>,
        memory: MemoryHandle,
        config: ConfigHandle,
        llm: Arc<LlmState>,
        life: Lifecycle,
        runs: Runs,
        files: ProjectFiles,
    ) -> Assistant {
        let ProjectFiles { paths, rules } = files;
        Assistant {
            sessions,
            memory,
            config,
            llm,
            life,
            runs,
            paths,
            rules,
        }
    }

    fn now(&self) -> DateTime<Utc> {
        self.memory.now()
    }

    /// The assistant's events (what `ai watch` forwards), for the dashboard.
    pub fn subscribe(&self) -> broadcast::Receiver<SessionEvent> {
        self.sessions.subscribe()
    }

    /// Forgets the ended sessions `keep` no longer keeps (see [`AssistantService::prune_ended`]).
    pub async fn prune_ended(&self, keep: Keep, now: DateTime<Utc>) -> usize {
        self.sessions.prune_ended(keep, now).await
    }

    /// Saves every session still open that changed since `since` (at shutdown).
    pub async fn persist_open(&self, since: DateTime<Utc>) {
        self.sessions.persist_open(since).await
    }
}

/// A new session message id.
pub fn new_message_id(now: DateTime<Utc>) -> String {
    ids::new_id(MESSAGE_PREFIX, now)
}

/// A new session id.
pub fn new_session_id(now: DateTime<Utc>) -> String {
    ids::new_id(AISession::PREFIX, now)
}

impl Assistant {
    /// Runs the scheduler until shutdown: at start, every `tick_secs`, and whenever woken.
    pub async fn run_scheduler(self) {
        let mut shutdown = self.life.subscribe_shutdown();
        let secs = self.config.get().orchestrator.tick_secs.max(1);
        let mut every = tokio::time::interval(Duration::from_secs(secs));
        every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        let orch = &self.sessions;
        loop {
            tokio::select! {
                _ = every.tick() => {}
                _ = orch.tick.notified() => {}
                _ = shutdown.recv() => break,
            }
            self.tick().await;
        }
    }

    /// One scheduler tick: the queue first, then orphaned runs, then the next
    /// scheduled run; at most one start, as the slot then holds it.
    pub async fn tick(&self) {
        let now = self.now();
        let orch = &self.sessions;
        let action = {
            let mut st = orch.state();
            // Only runs that may be resumed matter to the tick: no need to copy whole histories.
            let candidates: Vec<AISession> = st
                .sessions
                .values()
                .filter(|s| {
                    s.kind == SessionKind::Automation
                        && s.end_reason.is_none_or(SessionEndReason::is_resumable)
                        && !st.slot.queued().any(|q| q.session_id == s.id)
                })
                .map(|s| AISession {
                    messages: Vec::new(),
                    ..s.clone()
                })
                .collect();
            let automations: Vec<Automation> = st.automations.values().cloned().collect();
            st.slot.tick(&candidates, &automations, now)
        };
        match action {
            TickAction::Busy | TickAction::Idle => {}
            TickAction::ActivatedQueued(entry) => {
                orch.emit_state(&entry.session_id, "active");
                let start = match entry.kind {
                    QueuedKind::Chat => round::Start::Call(RoundReason::UserMessage),
                    QueuedKind::ManualAutomation => {
                        round::Start::Call(RoundReason::AutomationStart)
                    }
                };
                round::spawn(self, &entry.session_id, start);
            }
            TickAction::Resumed { session_id, reason } => {
                let waiting = {
                    let mut st = orch.state();
                    match st.sessions.get_mut(&session_id) {
                        Some(s) => {
                            s.end_reason = None;
                            s.ended_at = None;
                            s.is_waiting_for_network = false;
                            s.updated_at = now;
                            s.waiting.is_some()
                        }
                        None => true,
                    }
                };
                tracing::info!("resuming session {session_id} ({reason:?})");
                orch.persist(&session_id).await;
                orch.emit_state(&session_id, "active");
                if !waiting {
                    round::spawn(self, &session_id, round::Start::Resume(reason));
                }
            }
            TickAction::StartScheduled {
                automation_id,
                scheduled_for,
            } => {
                match requests::create_run(
                    self,
                    &automation_id,
                    ExecutionTrigger::Scheduled,
                    scheduled_for,
                )
                .await
                {
                    Ok(id) => {
                        let activated = orch.state().slot.activate_automation(&id).is_ok();
                        if activated {
                            orch.emit_state(&id, "active");
                            round::spawn(
                                self,
                                &id,
                                round::Start::Call(RoundReason::AutomationStart),
                            );
                        }
                    }
                    Err(e) => tracing::warn!("scheduled run of {automation_id} not started: {e}"),
                }
            }
        }
    }

    /// Runs the watchdog until shutdown: an automation inactive too long (and not waiting for the
    /// network) ends with TIMEOUT; a chat quiet too long gives the slot up.
    pub async fn run_watchdog(self) {
        let mut shutdown = self.life.subscribe_shutdown();
        let mut every = tokio::time::interval(Duration::from_secs(5));
        every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        loop {
            tokio::select! {
                _ = every.tick() => self.watchdog().await,
                _ = shutdown.recv() => break,
            }
        }
    }

    /// One watchdog pass.
    pub async fn watchdog(&self) {
        let now = self.now();
        let config = self.config.get().orchestrator;
        let orch = &self.sessions;
        let (timed_out, quiet_chat) = {
            let st = orch.state();
            let Some(active) = st.slot.active().cloned() else {
                return;
            };
            let Some(s) = st.sessions.get(&active.session_id) else {
                return;
            };
            let running = st.running.contains_key(&s.id);
            match active.kind {
                ActiveKind::Automation => (
                    queue::should_stop_inactive(s, now, &config.limits).then(|| s.id.clone()),
                    None,
                ),
                ActiveKind::Chat => {
                    let idle = now.signed_duration_since(s.updated_at).num_seconds();
                    let quiet = !running
                        && idle > i64::try_from(config.chat_inactivity_secs).unwrap_or(i64::MAX);
                    (None, quiet.then(|| s.id.clone()))
                }
            }
        };
        if let Some(id) = timed_out {
            orch.push_system(
                &id,
                now,
                SystemMessage::note(
                    SystemMessageType::SessionTimeout,
                    format!(
                        "No activity for {} s: the run was stopped.",
                        config.limits.automation_max_inactivity_secs
                    ),
                ),
            );
            orch.end(&id, SessionEndReason::Timeout, now).await;
            orch.emit_round_ended(&id);
        }
        if let Some(id) = quiet_chat {
            tracing::info!(
                "chat {id} quiet for {} s: slot released",
                config.chat_inactivity_secs
            );
            orch.release(&id);
        }
    }
}
