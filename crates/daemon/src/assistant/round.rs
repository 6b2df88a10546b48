//! One round of the autonomous loop: call the model, ask the pure core
//! what the reply means, do it (queries, actions, waits), and go on until the session waits for
//! a person, ends, or is stopped. Every message is saved as soon as it is stored, so a kill -9
//! at any point leaves a history the next start can resume from.

use super::{Assistant, AssistantService};
use ai_smartness_assistant::exec::{self, ExecEnv};
use ai_smartness_assistant::limits::{self, Decision, Limit, LoopContext, Reply, Step};
use ai_smartness_assistant::prompt;
use ai_smartness_records::assistant::message::{self, AIMessage};
use ai_smartness_records::assistant::types::{
    CommandResult, CommandStatus, LoopCounters, MessageBody, RoundReason, SessionEndReason,
    SessionKind, SystemMessage, SystemMessageType, WaitingState,
};
use ai_smartness_records::assistant::vocabulary::{ActionCommand, DataCommand};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;

/// How a round begins.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Start {
    /// A new round (a user message, an automation's start): counters reset, then the model.
    Call(RoundReason),
    /// A resumed run: its counters kept; a last reply not acted on is acted on, else the model
    /// is called (seed: transparent, no message says it resumed).
    Resume(RoundReason),
    /// A person approved the pending actions.
    Approved,
    /// A person refused them.
    Refused,
    /// A person answered the communication module.
    Answered,
}

/// Starts a round for `id` in the background, unless one is already running.
pub fn spawn(assistant: &Assistant, id: &str, start: Start) -> bool {
    let orch = &assistant.sessions;
    let (tx, rx) = watch::channel(false);
    {
        let mut st = orch.state();
        if st.running.contains_key(id) {
            return false;
        }
        st.running.insert(id.to_string(), tx);
    }
    let d = assistant.clone();
    let id = id.to_string();
    assistant.life.spawn(async move {
        // Removes the round and tells waiters it ended, even if the round panicked.
        struct Done(Arc<AssistantService>, String);
        impl Drop for Done {
            fn drop(&mut self) {
                let orch = &self.0;
                orch.state().running.remove(&self.1);
                orch.emit_round_ended(&self.1);
            }
        }
        let _done = Done(Arc::clone(&d.sessions), id.clone());
        run(&d, &id, start, rx).await;
    });
    true
}

/// What the loop does next.
enum Next {
    Call(RoundReason),
    /// A reply to act on; `stored` when it is already in the history (a resumed run).
    Reply {
        raw: String,
        stored: bool,
    },
    Actions(AIMessage),
    Stop,
}

async fn run(d: &Assistant, id: &str, start: Start, mut cancel: watch::Receiver<bool>) {
    let orch = &d.sessions;
    let mut next = match begin(d, id, start).await {
        Some(n) => n,
        None => return,
    };
    loop {
        if *cancel.borrow() || orch.state().sessions.get(id).is_none_or(|s| s.is_ended()) {
            return;
        }
        next = match next {
            Next::Stop => return,
            Next::Call(reason) => call(d, id, reason, &mut cancel).await,
            Next::Reply { raw, stored } => on_reply(d, id, raw, stored).await,
            Next::Actions(msg) => run_actions(d, id, msg).await,
        };
    }
}

/// The round's first step.
async fn begin(d: &Assistant, id: &str, start: Start) -> Option<Next> {
    let orch = &d.sessions;
    match start {
        Start::Call(reason) => {
            set_counters(orch, id, LoopCounters::default());
            Some(Next::Call(reason))
        }
        Start::Resume(reason) => {
            let last = orch
                .state()
                .sessions
                .get(id)
                .and_then(|s| s.messages.iter().rev().find(|m| m.in_prompt()).cloned());
            Some(match last.map(|m| m.body) {
                Some(MessageBody::Ai {
                    ai_message_json, ..
                }) => Next::Reply {
                    raw: ai_message_json,
                    stored: true,
                },
                _ => Next::Call(reason),
            })
        }
        Start::Approved => Some(match last_ai(orch, id) {
            Some(msg) if !msg.actions().is_empty() => Next::Actions(msg),
            _ => Next::Stop,
        }),
        Start::Refused => {
            let (ctx, counters) = context(d, id, false)?;
            let decision = limits::after_refusal(&ctx, counters);
            Some(follow(d, id, &ctx, decision).await)
        }
        Start::Answered => {
            let (ctx, counters) = context(d, id, false)?;
            let decision = limits::after_answer(&ctx, counters);
            Some(follow(d, id, &ctx, decision).await)
        }
    }
}

fn set_counters(orch: &AssistantService, id: &str, c: LoopCounters) {
    if let Some(s) = orch.state().sessions.get_mut(id) {
        s.counters = c;
    }
}

/// The latest reply of the model in the session.
fn last_ai(orch: &AssistantService, id: &str) -> Option<AIMessage> {
    let st = orch.state();
    st.sessions
        .get(id)?
        .messages
        .iter()
        .rev()
        .find_map(|m| match &m.body {
            MessageBody::Ai { ai_message, .. } => Some(ai_message.clone()),
            _ => None,
        })
}

/// The loop context and counters of a session; none for a session that cannot run.
fn context(
    d: &Assistant,
    id: &str,
    requires_validation: bool,
) -> Option<(LoopContext, LoopCounters)> {
    let limits = d.config.get().orchestrator.limits;
    let st = d.sessions.state();
    let s = st.sessions.get(id)?;
    let ctx = LoopContext::new(s.kind, &limits, requires_validation).ok()?;
    Some((ctx, s.counters))
}

/// Calls the model with the session's prompt. Automations wait for the network and retry
/// until the model answers or a person stops them; chats record the failure and stop.
async fn call(
    d: &Assistant,
    id: &str,
    reason: RoundReason,
    cancel: &mut watch::Receiver<bool>,
) -> Next {
    tracing::debug!("session {id}: model call ({reason:?})");
    let orch = &d.sessions;
    let config = d.config.get();
    let kind = match orch.state().sessions.get(id) {
        Some(s) => s.kind,
        None => return Next::Stop,
    };
    let Some(llm) = d.llm.runtime().cloned() else {
        orch.push_system(
            id,
            d.now(),
            SystemMessage::note(
                SystemMessageType::NetworkError,
                "No model is configured (llm.provider is \"none\" in .ai/config.json).",
            ),
        );
        orch.persist(id).await;
        if kind == SessionKind::Automation {
            orch.end(id, SessionEndReason::Error, d.now()).await;
        }
        return Next::Stop;
    };
    let mut reported = false;
    loop {
        // The prompt reads the synthesis file and the memory: a blocking thread builds it.
        let built = {
            let (d, id) = (d.clone(), id.to_string());
            tokio::task::spawn_blocking(move || request(&d, &id)).await
        };
        let req = match built {
            Ok(Some(r)) => r,
            Ok(None) | Err(_) => return Next::Stop,
        };
        let result = tokio::select! {
            r = llm.client().complete(&req, None) => r,
            _ = cancel.changed() => return Next::Stop,
        };
        let now = d.now();
        match result {
            Ok(resp) => {
                let was_waiting = {
                    let mut st = orch.state();
                    match st.sessions.get_mut(id) {
                        Some(s) => std::mem::replace(&mut s.is_waiting_for_network, false),
                        None => false,
                    }
                };
                if was_waiting {
                    orch.persist(id).await;
                    orch.emit_state(id, "active");
                }
                return Next::Reply {
                    raw: resp.text,
                    stored: false,
                };
            }
            Err(e) if kind == SessionKind::Automation && e.retryable() => {
                let wait = config.orchestrator.network_retry_secs;
                if !reported {
                    orch.push_system(
                        id,
                        now,
                        SystemMessage::note(
                            SystemMessageType::NetworkError,
                            format!(
                                "The model could not be reached ({e}); retrying every {wait} s."
                            ),
                        ),
                    );
                    reported = true;
                }
                if let Some(s) = orch.state().sessions.get_mut(id) {
                    s.is_waiting_for_network = true;
                    s.updated_at = now;
                }
                orch.persist(id).await;
                orch.emit_state(id, "waiting_network");
                tokio::select! {
                    _ = tokio::time::sleep(Duration::from_secs(wait)) => {}
                    _ = cancel.changed() => return Next::Stop,
                }
            }
            Err(e) => {
                orch.push_system(
                    id,
                    now,
                    SystemMessage::note(
                        SystemMessageType::NetworkError,
                        format!("The model call failed: {e}"),
                    ),
                );
                orch.persist(id).await;
                if kind == SessionKind::Automation {
                    orch.end(id, SessionEndReason::Error, now).await;
                }
                return Next::Stop;
            }
        }
    }
}

/// The prompt for the session as it is now (levels rebuilt every call).
fn request(d: &Assistant, id: &str) -> Option<ai_smartness_llm::ChatRequest> {
    let config = d.config.get();
    let rules = d.rules.rules().rules;
    let (kind, messages) = {
        let st = d.sessions.state();
        let s = st.sessions.get(id)?;
        (s.kind, s.messages.clone())
    };
    // The file is read before the memory's lock is taken.
    let overview = with_env(d, id, |env| {
        let synthesis = exec::load_synthesis(env);
        exec::overview(&d.memory.lock(), env, &synthesis)
    })?;
    Some(prompt::build(prompt::RequestParts {
        kind,
        limits: &config.orchestrator.limits,
        level2: prompt::level2(&rules, &overview),
        messages: &messages,
        model: config.llm.model_for(config.mode),
        max_tokens: config.orchestrator.max_output_tokens,
        timeout: Duration::from_secs(config.orchestrator.call_timeout_secs.max(1)),
    }))
}

/// Whether the validation hierarchy asks a person for these actions: application, action
/// type, thread, session (the model's own request is weighed by the pure core).
fn config_requires_validation(d: &Assistant, id: &str, msg: &AIMessage) -> bool {
    let o = d.config.get().orchestrator;
    let session = d
        .sessions
        .state()
        .sessions
        .get(id)
        .is_some_and(|s| s.require_validation);
    if o.require_validation || session {
        return true;
    }
    let mem = d.memory.lock();
    msg.actions().iter().any(|a| {
        o.validate_actions.iter().any(|t| t == a.type_name())
            || exec::touched_threads(&mem, a)
                .iter()
                .any(|t| o.validate_threads.contains(t))
    })
}

async fn on_reply(d: &Assistant, id: &str, raw: String, stored: bool) -> Next {
    let orch = &d.sessions;
    let now = d.now();
    let Some(kind) = orch.state().sessions.get(id).map(|s| s.kind) else {
        return Next::Stop;
    };
    let parsed = message::parse_reply(&raw, kind);
    let requires = parsed
        .as_ref()
        .is_ok_and(|m| config_requires_validation(d, id, m));
    let Some((ctx, counters)) = context(d, id, requires) else {
        orch.end(id, SessionEndReason::Error, now).await;
        return Next::Stop;
    };
    let decision = match &parsed {
        Ok(m) => limits::decide(&ctx, Reply::Parsed(m), counters),
        Err(error) => limits::decide(&ctx, Reply::Invalid { raw: &raw, error }, counters),
    };
    set_counters(orch, id, decision.counters);
    if !stored {
        let ai_message = match &parsed {
            Ok(m) => m.clone(),
            Err(_) => AIMessage::invalid_format(&raw),
        };
        orch.push(
            id,
            now,
            MessageBody::Ai {
                ai_message,
                ai_message_json: raw.clone(),
            },
        );
    }
    let msg = parsed.unwrap_or_default();
    match decision.step.clone() {
        Step::RunData => {
            run_data(d, id, msg.data()).await;
            orch.persist(id).await;
            Next::Call(RoundReason::DataResponse)
        }
        Step::RunActions { needs_validation } => {
            if let Err(report) = precheck(d, id, msg.actions()) {
                orch.push_system(id, now, report);
                let decision = limits::after_actions(&ctx, &msg, false, decision.counters);
                return follow(d, id, &ctx, decision).await;
            }
            if needs_validation {
                let described = {
                    let mem = d.memory.lock();
                    msg.actions()
                        .iter()
                        .map(|a| format!("- {}", exec::describe_action(&mem, a)))
                        .collect::<Vec<_>>()
                        .join("\n")
                };
                let summary = format!(
                    "The user did not approve these actions; nothing was changed:\n{described}"
                );
                return wait_for_person(d, id, SystemMessageType::ValidationCancelled, summary)
                    .await;
            }
            orch.persist(id).await;
            Next::Actions(msg)
        }
        Step::AwaitAnswer => {
            let question = match &msg.communication_module {
                Some(message::CommunicationModule::MultipleChoice { question, .. }) => {
                    question.clone()
                }
                Some(message::CommunicationModule::Validation { message }) => message.clone(),
                None => String::new(),
            };
            let summary = format!("The user did not answer: {question}");
            wait_for_person(d, id, SystemMessageType::CommunicationCancelled, summary).await
        }
        _ => follow(d, id, &ctx, decision).await,
    }
}

/// Stops the round until a person approves or answers. The fallback message goes into the
/// history *before* the wait: if nobody ever replies, the record says so, restarts included.
async fn wait_for_person(
    d: &Assistant,
    id: &str,
    kind: SystemMessageType,
    summary: String,
) -> Next {
    let orch = &d.sessions;
    let cancel_message_id = orch.push_system(id, d.now(), SystemMessage::note(kind, summary));
    let (waiting, state) = if kind == SystemMessageType::ValidationCancelled {
        (
            WaitingState::Validation { cancel_message_id },
            "waiting_validation",
        )
    } else {
        (
            WaitingState::Response { cancel_message_id },
            "waiting_answer",
        )
    };
    if let Some(s) = orch.state().sessions.get_mut(id) {
        s.waiting = Some(waiting);
    }
    orch.persist(id).await;
    orch.emit_state(id, state);
    Next::Stop
}

/// Does what a decision says when it is neither a query nor an action nor a question: resend,
/// correct the format, stop at a limit, complete, or hand over to the person.
async fn follow(d: &Assistant, id: &str, ctx: &LoopContext, decision: Decision) -> Next {
    let orch = &d.sessions;
    let now = d.now();
    set_counters(orch, id, decision.counters);
    let next = match decision.step {
        Step::Complete => Next::Stop,
        Step::RetryFormat { feedback, .. } => {
            orch.push_system(
                id,
                now,
                SystemMessage::note(SystemMessageType::FormatError, feedback),
            );
            Next::Call(RoundReason::FormatErrorCorrection)
        }
        Step::GiveUp { .. } => {
            orch.push_system(
                id,
                now,
                SystemMessage::note(
                    SystemMessageType::LimitReached,
                    Limit::FormatErrors.summary(&ctx.limits()),
                ),
            );
            Next::Stop
        }
        Step::LimitReached(limit) => {
            orch.push_system(
                id,
                now,
                SystemMessage::note(
                    SystemMessageType::LimitReached,
                    limit.summary(&ctx.limits()),
                ),
            );
            Next::Stop
        }
        Step::Resend(reason) => Next::Call(reason),
        // Reached through on_reply only; here they mean the person speaks next.
        Step::AwaitAnswer | Step::AwaitUser | Step::RunData | Step::RunActions { .. } => Next::Stop,
    };
    orch.persist(id).await;
    if let Some(reason) = decision.end_reason {
        orch.end(id, reason, now).await;
        return Next::Stop;
    }
    next
}

/// The environment commands run in, for this session.
fn with_env<R>(d: &Assistant, id: &str, f: impl FnOnce(&ExecEnv<'_>) -> R) -> Option<R> {
    let config = d.config.get();
    let paths = d.paths.clone();
    let (kind, reference) = {
        let st = d.sessions.state();
        let s = st.sessions.get(id)?;
        (s.kind, s.period_reference())
    };
    let env = ExecEnv {
        kind,
        reference,
        now: d.now(),
        periods: &config.orchestrator.periods,
        paths: &paths,
        rules: &d.rules,
    };
    Some(f(&env))
}

/// Runs the queries and stores their results as one DATA_ADDED message.
async fn run_data(d: &Assistant, id: &str, commands: &[DataCommand]) {
    // Embeddings first, off the memory lock (CPU work on the embedding thread).
    let mut embeddings = Vec::new();
    for c in commands {
        embeddings.push(match c {
            DataCommand::SearchThreads { query, .. } => {
                d.memory.embed_query(query.clone()).await.ok()
            }
            _ => None,
        });
    }
    // Off the async workers; the synthesis file is read before the memory's lock is taken,
    // and the lock is held for one command at a time (a prompt's ranking can come between).
    let executed = {
        let (d, id, commands) = (d.clone(), id.to_string(), commands.to_vec());
        tokio::task::spawn_blocking(move || {
            with_env(&d, &id, |env| {
                let reads_file = commands
                    .iter()
                    .any(|c| matches!(c, DataCommand::MemoryOverview | DataCommand::ReadSynthesis));
                let synthesis = if reads_file {
                    exec::load_synthesis(env)
                } else {
                    Ok(None)
                };
                commands
                    .iter()
                    .zip(&embeddings)
                    .map(|(c, e)| exec::run_data(&d.memory.lock(), env, c, e.as_ref(), &synthesis))
                    .collect::<Vec<_>>()
            })
        })
        .await
        .ok()
        .flatten()
        .unwrap_or_default()
    };
    let sm = report(
        SystemMessageType::DataAdded,
        "queries answered",
        "\n\n",
        executed,
    );
    d.sessions.push_system(id, d.now(), sm);
}

/// The system message of a series of commands: how many succeeded, each result, the texts.
fn report(
    kind: SystemMessageType,
    what: &str,
    separator: &str,
    executed: Vec<exec::Executed>,
) -> SystemMessage {
    let ok = executed
        .iter()
        .filter(|e| e.result.status == CommandStatus::Success)
        .count();
    SystemMessage {
        kind,
        summary: format!("{ok} of {} {what}.", executed.len()),
        formatted_data: Some(
            executed
                .iter()
                .map(|e| e.text.as_str())
                .collect::<Vec<_>>()
                .join(separator),
        ),
        command_results: executed.into_iter().map(|e| e.result).collect(),
    }
}

/// Checks every action before any runs or is shown for approval; on a bad one, nothing runs
/// and the report says which and why.
fn precheck(d: &Assistant, id: &str, actions: &[ActionCommand]) -> Result<(), SystemMessage> {
    let checks = with_env(d, id, |env| {
        let mem = d.memory.lock();
        actions
            .iter()
            .map(|a| exec::check_action(&mem, env, a))
            .collect::<Vec<_>>()
    })
    .unwrap_or_default();
    if checks.iter().all(Result::is_ok) {
        return Ok(());
    }
    let mut results = Vec::new();
    let mut lines = Vec::new();
    for (a, c) in actions.iter().zip(&checks) {
        let (status, detail) = match c {
            Ok(()) => (
                CommandStatus::Cancelled,
                "not run: another action in the same reply is invalid".to_string(),
            ),
            Err(e) => (CommandStatus::Failed, e.to_string()),
        };
        lines.push(format!("{}: {detail}", a.type_name()));
        results.push(CommandResult {
            command_type: a.type_name().to_string(),
            status,
            detail: Some(detail),
        });
    }
    Err(SystemMessage {
        kind: SystemMessageType::ActionsExecuted,
        summary: "No action was run: fix the invalid ones and send them again.".into(),
        command_results: results,
        formatted_data: Some(lines.join("\n")),
    })
}

/// Runs approved (or unguarded) actions, saves the memory, stores ACTIONS_EXECUTED (and the
/// postText as a separate message the prompt skips), then decides what follows.
async fn run_actions(d: &Assistant, id: &str, msg: AIMessage) -> Next {
    let orch = &d.sessions;
    if let Err(report) = precheck(d, id, msg.actions()) {
        // The memory changed while a person was deciding.
        orch.push_system(id, d.now(), report);
        let Some((ctx, counters)) = context(d, id, false) else {
            return Next::Stop;
        };
        let decision = limits::after_actions(&ctx, &msg, false, counters);
        return follow(d, id, &ctx, decision).await;
    }
    let notes: Vec<Option<Vec<f32>>> = {
        let mut out = Vec::new();
        for a in msg.actions() {
            out.push(match a {
                ActionCommand::WriteNote { title, content } => d
                    .memory
                    .embed()
                    .embed(vec![format!("{title}\n{content}")])
                    .await
                    .ok()
                    .and_then(|mut v| v.pop()),
                _ => None,
            });
        }
        out
    };
    let mut executed = Vec::new();
    for (a, e) in msg.actions().iter().zip(notes) {
        let done = match a {
            // A run goes on by itself; the session only learns its id.
            ActionCommand::StartRun { task } => exec::outcome(
                a,
                d.runs.start(task, None, None, id)
                    .map(|run| {
                        format!("START_RUN: run {run} started; it goes on by itself and is remembered when it ends")
                    })
                    .map_err(|r| exec::ExecError::RunNotStarted {
                        command: a.type_name(),
                        reason: r.error.map(|e| e.message).unwrap_or_default(),
                    }),
            ),
            _ => match with_env(d, id, |env| {
                exec::run_action(&mut d.memory.lock(), env, a, e)
            }) {
                Some(x) => x,
                None => continue,
            },
        };
        executed.push(done);
    }
    if !d.memory.flush().await {
        tracing::warn!("memory changes of session {id} kept in memory until the next save");
    }
    let all_success = executed
        .iter()
        .all(|e| e.result.status == CommandStatus::Success);
    let now = d.now();
    orch.push_system(
        id,
        now,
        report(
            SystemMessageType::ActionsExecuted,
            "actions done",
            "\n",
            executed,
        ),
    );
    let Some((ctx, counters)) = context(d, id, false) else {
        return Next::Stop;
    };
    let decision = limits::after_actions(&ctx, &msg, all_success, counters);
    if let Some(text) = decision.post_text.clone().filter(|t| !t.trim().is_empty()) {
        let m = ai_smartness_records::assistant::types::SessionMessage::post_text(
            super::new_message_id(now),
            now,
            text,
        );
        orch.push_message(id, now, m);
    }
    follow(d, id, &ctx, decision).await
}
