//! What the socket asks of the assistant: chat, approve, reject, answer, sessions,
//! automations, watch. Each returns its reply and, when the client asked to follow a round (or
//! to watch), the event stream the server then forwards.

use super::{new_session_id, round, Assistant, AssistantState};
use crate::service_error::ServiceError;
use ai_smartness_assistant::queue::Control;
use ai_smartness_assistant::schedule::{due_execution, Due, Schedule};
use ai_smartness_core::memory::ids;
use ai_smartness_proto::protocol::{
    AutomationAction, AutomationRequest, ChatSend, Command, ErrorCode, Response, SessionReply,
    SessionsQuery,
};
use ai_smartness_records::assistant::message::{AIMessage, CommunicationModule};
use ai_smartness_records::assistant::types::{
    AISession, Automation, ExecutionMetadata, ExecutionTrigger, MessageBody, RoundReason,
    SessionEndReason, SessionKind, SessionMessage, WaitingState,
};
use ai_smartness_records::Record;
use ai_smartness_replies::SessionEvent;
use ai_smartness_replies::{
    AutomationEnded, AutomationList, AutomationView, NextRun, RoundHead, SessionDetail,
    SessionList, SessionRow, TranscriptMessage, Watching,
};
use chrono::{DateTime, Utc};
use tokio::sync::broadcast;

/// Longest message a person may send (characters).
const MAX_MESSAGE_CHARS: usize = 20_000;
/// Longest automation prompt.
const MAX_PROMPT_CHARS: usize = 20_000;
/// Longest name.
const MAX_NAME_CHARS: usize = 200;

/// Events to forward after the reply.
pub struct Follow {
    /// Only this session's events; all when none.
    pub session: Option<String>,
    pub events: Events,
    /// Stop after this session's round ends (else: until the client hangs up).
    pub until_round_end: bool,
}

/// Where forwarded events come from.
pub enum Events {
    /// The assistant's bus.
    Sessions(broadcast::Receiver<SessionEvent>),
    /// A workflow run's events, ready to send; the stream ends with the run.
    Run(tokio::sync::mpsc::Receiver<ai_smartness_replies::RunLine>),
}

/// Handles an assistant command (a run's commands are the runs' own: [`crate::runs`]).
pub async fn handle(d: &Assistant, cmd: Command) -> (Response, Option<Follow>) {
    match cmd {
        Command::Chat(c) => chat(d, c).await,
        Command::Approve(r) => approve(d, r).await,
        Command::Reject(r) => reject(d, r).await,
        Command::Answer(r) => answer(d, r).await,
        Command::Sessions(q) => (sessions(d, &q), None),
        Command::Session(q) => (session(d, &q.id), None),
        Command::Automation(a) => (automation(d, a).await, None),
        Command::Watch(w) => {
            let events = Events::Sessions(d.sessions.subscribe());
            if let Some(id) = &w.session {
                if !d.sessions.state().sessions.contains_key(id) {
                    return (not_found(id), None);
                }
            }
            (
                Response::reply(&Watching {
                    watching: w.session.clone().unwrap_or("all".into()),
                }),
                Some(Follow {
                    session: w.session,
                    events,
                    until_round_end: false,
                }),
            )
        }
        _ => (
            Response::error(ErrorCode::BadRequest, "not an assistant command"),
            None,
        ),
    }
}

fn not_found(id: &str) -> Response {
    Response::error(
        ErrorCode::NotFound,
        format!("no session {id} (see `ai sessions`)"),
    )
}

fn no_llm() -> Response {
    Response::error(ErrorCode::NoLlm,
        "no model is configured: set llm.provider in .ai/config.json (see the README, \"The optional LLM\")",
    )
}

/// A session's state in one word.
pub fn state_of(st: &AssistantState, s: &AISession) -> &'static str {
    if s.is_ended() {
        return "ended";
    }
    match &s.waiting {
        Some(WaitingState::Validation { .. }) => return "waiting_validation",
        Some(WaitingState::Response { .. }) => return "waiting_answer",
        None => {}
    }
    if s.is_waiting_for_network {
        return "waiting_network";
    }
    if st.running.contains_key(&s.id) {
        return "running";
    }
    if st.slot.active().is_some_and(|a| a.session_id == s.id) {
        return "active";
    }
    if st.slot.queued().any(|q| q.session_id == s.id) {
        return "queued";
    }
    "idle"
}

fn summary(st: &AssistantState, s: &AISession) -> SessionRow {
    SessionRow {
        id: s.id.clone(),
        name: s.name.clone(),
        kind: s.kind,
        state: state_of(st, s).to_string(),
        automation_id: s.automation_id.clone(),
        trigger: s.trigger,
        scheduled_execution_time: s.scheduled_execution_time,
        created_at: s.created_at,
        updated_at: s.updated_at,
        end_reason: s.end_reason,
        messages: s.messages.len(),
    }
}

/// After a round was started: either wait for it and return what it said, or hand the events
/// to the server to stream.
async fn after_start(
    d: &Assistant,
    id: &str,
    mut events: broadcast::Receiver<SessionEvent>,
    follow: bool,
    since: usize,
    queued: Option<usize>,
) -> (Response, Option<Follow>) {
    let head = |d: &Assistant| {
        let st = d.sessions.state();
        let state = st
            .sessions
            .get(id)
            .map(|s| state_of(&st, s))
            .unwrap_or("ended");
        RoundHead {
            session_id: id.to_string(),
            state: state.to_string(),
            queue_position: queued,
            messages: None,
        }
    };
    if follow {
        return (
            Response::reply(&head(d)),
            Some(Follow {
                session: Some(id.to_string()),
                events: Events::Sessions(events),
                until_round_end: true,
            }),
        );
    }
    if queued.is_none() {
        let mut shutdown = d.life.subscribe_shutdown();
        loop {
            tokio::select! {
                e = events.recv() => match e {
                    Ok(SessionEvent::RoundEnded { session_id }) if session_id == id => break,
                    Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => {}
                    Err(broadcast::error::RecvError::Closed) => break,
                },
                _ = shutdown.recv() => break,
            }
        }
    }
    let mut out = head(d);
    out.messages = Some(
        d.sessions
            .state()
            .sessions
            .get(id)
            .map(|s| s.messages.iter().skip(since).cloned().collect())
            .unwrap_or_default(),
    );
    (Response::reply(&out), None)
}

async fn chat(d: &Assistant, c: ChatSend) -> (Response, Option<Follow>) {
    if d.llm.runtime().is_none() {
        return (no_llm(), None);
    }
    let text = c.message.trim().to_string();
    if text.is_empty() {
        return (
            Response::error(ErrorCode::BadRequest, "empty message"),
            None,
        );
    }
    if text.chars().count() > MAX_MESSAGE_CHARS {
        return (
            Response::error(
                ErrorCode::BadRequest,
                format!("a message has at most {MAX_MESSAGE_CHARS} characters"),
            ),
            None,
        );
    }
    let now = d.now();
    let orch = &d.sessions;
    let id = match &c.session {
        Some(id) => {
            let st = orch.state();
            let Some(s) = st.sessions.get(id) else {
                return (not_found(id), None);
            };
            let problem = if s.kind != SessionKind::Chat {
                Some(format!("{id} is not a chat"))
            } else if s.is_ended() {
                Some(format!("chat {id} has ended; start a new one"))
            } else if s.waiting.is_some() {
                Some(format!(
                    "chat {id} waits for you: `ai approve`, `ai reject` or `ai answer` first"
                ))
            } else if st.running.contains_key(id) {
                Some(format!("chat {id} is still answering; wait for it"))
            } else {
                None
            };
            if let Some(p) = problem {
                return (Response::error(ErrorCode::Conflict, p), None);
            }
            id.clone()
        }
        None => {
            let id = new_session_id(now);
            let name: String = text.chars().take(60).collect();
            let mut s = AISession::new(&id, name, SessionKind::Chat, now);
            s.require_validation = c.require_validation;
            orch.state().sessions.insert(id.clone(), s);
            id
        }
    };
    orch.push(&id, now, MessageBody::UserText { text_content: text });
    // After the person's own message: followers see what answers it.
    let events = orch.subscribe();
    let since = orch
        .state()
        .sessions
        .get(&id)
        .map_or(0, |s| s.messages.len());
    let control = orch.state().slot.request_chat(&id);
    orch.persist(&id).await;
    let queued = match control {
        Control::Activated { .. } | Control::AlreadyActive => {
            round::spawn(d, &id, round::Start::Call(RoundReason::UserMessage));
            None
        }
        Control::Queued { position, .. } => {
            orch.emit_state(&id, "queued");
            Some(position)
        }
    };
    after_start(d, &id, events, c.follow, since, queued).await
}

/// Checks a person's reply targets a session waiting for it and takes the slot back if a
/// restart or a quiet spell lost it. Returns the cancel message id.
fn take_waiting(
    d: &Assistant,
    r: &SessionReply,
    validation: bool,
) -> Result<(String, SessionKind), Response> {
    let orch = &d.sessions;
    let mut st = orch.state();
    let Some(s) = st.sessions.get(&r.session) else {
        return Err(not_found(&r.session));
    };
    let kind = s.kind;
    let cancel = match (&s.waiting, validation) {
        (Some(WaitingState::Validation { cancel_message_id }), true)
        | (Some(WaitingState::Response { cancel_message_id }), false) => cancel_message_id.clone(),
        _ => {
            let what = if validation {
                "an approval"
            } else {
                "an answer"
            };
            return Err(Response::error(
                ErrorCode::Conflict,
                format!("session {} is not waiting for {what}", r.session),
            ));
        }
    };
    if !validation && kind != SessionKind::Chat {
        return Err(Response::error(
            ErrorCode::BadRequest,
            "only chats ask questions",
        ));
    }
    if st.running.contains_key(&r.session) {
        return Err(Response::error(ErrorCode::Conflict, "a round is running"));
    }
    let holds = st.slot.active().is_some_and(|a| a.session_id == r.session);
    if !holds {
        let ok = match kind {
            SessionKind::Chat => {
                !matches!(st.slot.request_chat(&r.session), Control::Queued { .. })
            }
            _ => st.slot.activate_automation(&r.session).is_ok(),
        };
        if !ok {
            st.slot.remove_queued(&r.session);
            return Err(Response::error(
                ErrorCode::Busy,
                "another session is running; try again when it is done",
            ));
        }
    }
    Ok((cancel, kind))
}

/// A person replied: events from now on for the follower, the fallback message deleted (when
/// the reply cancels it), the wait over. Returns the events and where the new messages start.
fn resume_waiting(
    d: &Assistant,
    id: &str,
    delete: Option<&str>,
) -> (broadcast::Receiver<SessionEvent>, usize) {
    let orch = &d.sessions;
    let events = orch.subscribe();
    if let Some(m) = delete {
        orch.delete_message(id, m);
    }
    let mut st = orch.state();
    let s = st.sessions.get_mut(id);
    let since = s.map_or(0, |s| {
        s.waiting = None;
        s.messages.len()
    });
    (events, since)
}

async fn approve(d: &Assistant, r: SessionReply) -> (Response, Option<Follow>) {
    if d.llm.runtime().is_none() {
        return (no_llm(), None);
    }
    let (cancel, _) = match take_waiting(d, &r, true) {
        Ok(x) => x,
        Err(e) => return (e, None),
    };
    let orch = &d.sessions;
    // Approved: the "did not approve" fallback goes.
    let (events, since) = resume_waiting(d, &r.session, Some(&cancel));
    orch.persist(&r.session).await;
    round::spawn(d, &r.session, round::Start::Approved);
    after_start(d, &r.session, events, r.follow, since, None).await
}

async fn reject(d: &Assistant, r: SessionReply) -> (Response, Option<Follow>) {
    let (_, kind) = match take_waiting(d, &r, true) {
        Ok(x) => x,
        Err(e) => return (e, None),
    };
    let orch = &d.sessions;
    // The fallback message stays: it is the record of the refusal.
    let (events, since) = resume_waiting(d, &r.session, None);
    let feedback = r
        .feedback
        .as_deref()
        .map(str::trim)
        .filter(|f| !f.is_empty());
    let start = match feedback {
        Some(f) => {
            orch.push(
                &r.session,
                d.now(),
                MessageBody::UserText {
                    text_content: format!("I did not approve those actions: {f}"),
                },
            );
            round::Start::Call(RoundReason::UserMessage)
        }
        None => round::Start::Refused,
    };
    orch.persist(&r.session).await;
    let needs_model = kind == SessionKind::Automation || feedback.is_some();
    if needs_model && d.llm.runtime().is_some() {
        round::spawn(d, &r.session, start);
        return after_start(d, &r.session, events, r.follow, since, None).await;
    }
    orch.emit_round_ended(&r.session);
    after_start(d, &r.session, events, false, since, Some(0)).await
}

/// Why a person's answer does not fit the module it answers; the text goes back to them.
#[derive(Debug, PartialEq, thiserror::Error)]
enum ChoiceError {
    /// Neither the number nor the text of one of the options.
    #[error("choose one of: {}", numbered(options))]
    NotAnOption { options: Vec<String> },
    /// A validation answered with something other than yes or no.
    #[error("answer yes or no")]
    NotYesOrNo,
}

/// `1 Merge, 2 Keep both`: the options as a person may answer them.
fn numbered(options: &[String]) -> String {
    options
        .iter()
        .enumerate()
        .map(|(i, o)| format!("{} {o}", i + 1))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The person's answer to a module, checked against it.
fn check_choice(module: &CommunicationModule, choice: &str) -> Result<String, ChoiceError> {
    let c = choice.trim();
    match module {
        CommunicationModule::MultipleChoice { options, .. } => {
            if let Ok(n) = c.parse::<usize>() {
                if (1..=options.len()).contains(&n) {
                    return Ok(options[n - 1].clone());
                }
            }
            options
                .iter()
                .find(|o| o.eq_ignore_ascii_case(c))
                .cloned()
                .ok_or_else(|| ChoiceError::NotAnOption {
                    options: options.clone(),
                })
        }
        CommunicationModule::Validation { .. } => match c.to_lowercase().as_str() {
            "y" | "yes" | "ok" | "approve" | "oui" | "si" | "sí" => Ok("yes".into()),
            "n" | "no" | "non" | "reject" => Ok("no".into()),
            _ => Err(ChoiceError::NotYesOrNo),
        },
    }
}

async fn answer(d: &Assistant, r: SessionReply) -> (Response, Option<Follow>) {
    if d.llm.runtime().is_none() {
        return (no_llm(), None);
    }
    let Some(choice) = r.choice.clone() else {
        return (
            Response::error(ErrorCode::BadRequest, "answer needs a choice"),
            None,
        );
    };
    let orch = &d.sessions;
    let module = {
        let st = orch.state();
        st.sessions.get(&r.session).and_then(|s| {
            s.messages.iter().rev().find_map(|m| match &m.body {
                MessageBody::Ai {
                    ai_message:
                        AIMessage {
                            communication_module: Some(cm),
                            ..
                        },
                    ..
                } => Some(cm.clone()),
                _ => None,
            })
        })
    };
    // Check the choice before taking the slot.
    let text = match module.as_ref().map(|m| check_choice(m, &choice)) {
        Some(Ok(t)) => t,
        Some(Err(e)) => return (Response::error(ErrorCode::BadRequest, e.to_string()), None),
        None => choice.trim().to_string(),
    };
    let (cancel, _) = match take_waiting(d, &r, false) {
        Ok(x) => x,
        Err(e) => return (e, None),
    };
    let (events, since) = resume_waiting(d, &r.session, Some(&cancel));
    orch.push(
        &r.session,
        d.now(),
        MessageBody::UserText { text_content: text },
    );
    orch.persist(&r.session).await;
    round::spawn(d, &r.session, round::Start::Answered);
    after_start(d, &r.session, events, r.follow, since, None).await
}

/// For `ai status`: the slot, the queue, what waits for a person, the automations.
pub fn overview(d: &Assistant) -> ai_smartness_replies::AssistantOverview {
    let st = d.sessions.state();
    ai_smartness_replies::AssistantOverview {
        active: st.slot.active().map(|a| a.session_id.clone()),
        queued: st.slot.queued().count(),
        waiting_for_you: st
            .sessions
            .values()
            .filter(|s| !s.is_ended() && s.waiting.is_some())
            .map(|s| s.id.clone())
            .collect(),
        sessions: st.sessions.len(),
        automations: st.automations.len(),
        automations_enabled: st
            .automations
            .values()
            .filter(|a| a.enabled && !a.paused)
            .count(),
    }
}

fn sessions(d: &Assistant, q: &SessionsQuery) -> Response {
    let kind = match q.kind.as_deref().map(str::to_uppercase).as_deref() {
        None => None,
        Some("CHAT") => Some(SessionKind::Chat),
        Some("AUTOMATION") => Some(SessionKind::Automation),
        Some(other) => {
            return Response::error(
                ErrorCode::BadRequest,
                format!("unknown kind {other:?} (CHAT or AUTOMATION)"),
            )
        }
    };
    let st = d.sessions.state();
    let mut list: Vec<&AISession> = st
        .sessions
        .values()
        .filter(|s| kind.is_none_or(|k| s.kind == k))
        .collect();
    list.sort_by(|a, b| b.updated_at.cmp(&a.updated_at).then(b.id.cmp(&a.id)));
    Response::reply(&SessionList {
        sessions: list
            .into_iter()
            .take(q.limit.unwrap_or(50))
            .map(|s| summary(&st, s))
            .collect(),
        active: st.slot.active().map(|a| a.session_id.clone()),
        queue: st.slot.queued().map(|q| q.session_id.clone()).collect(),
    })
}

fn session(d: &Assistant, id: &str) -> Response {
    let st = d.sessions.state();
    let Some(s) = st.sessions.get(id) else {
        return not_found(id);
    };
    // Marks what the model never sees (audit-only messages, postText).
    let messages = s
        .messages
        .iter()
        .map(|m| TranscriptMessage {
            message: m.clone(),
            in_prompt: m.in_prompt(),
        })
        .collect();
    Response::reply(&SessionDetail {
        session: AISession {
            messages: Vec::new(),
            ..s.clone()
        },
        state: state_of(&st, s).to_string(),
        messages,
    })
}

/// Creates an automation's run (not yet active): its first message is the automation's prompt.
pub async fn create_run(
    d: &Assistant,
    automation_id: &str,
    trigger: ExecutionTrigger,
    scheduled_for: DateTime<Utc>,
) -> Result<String, ServiceError> {
    let now = d.now();
    let orch = &d.sessions;
    let id = new_session_id(now);
    {
        let mut st = orch.state();
        let a = st
            .automations
            .get_mut(automation_id)
            .ok_or_else(|| ServiceError::not_found(format!("no automation {automation_id}")))?;
        a.last_trigger = Some(trigger);
        a.last_execution_at = Some(now);
        if trigger == ExecutionTrigger::Scheduled {
            a.last_scheduled_time = Some(scheduled_for);
        }
        let mut s = AISession::new(&id, a.name.clone(), SessionKind::Automation, now);
        s.automation_id = Some(a.id.clone());
        s.scheduled_execution_time = Some(scheduled_for);
        s.schedule = a.schedule.clone();
        s.trigger = Some(trigger);
        s.require_validation = a.require_validation;
        let mut first = SessionMessage::new(
            super::new_message_id(now),
            now,
            MessageBody::UserText {
                text_content: a.prompt.clone(),
            },
        );
        first.execution_metadata = Some(ExecutionMetadata {
            automation_id: a.id.clone(),
            trigger,
            scheduled_for,
        });
        s.messages.push(first);
        st.sessions.insert(id.clone(), s);
    }
    orch.persist_automation(automation_id).await?;
    orch.persist(&id).await;
    Ok(id)
}

fn automation_view(st: &AssistantState, a: &Automation, now: DateTime<Utc>) -> AutomationView {
    let next_run = a
        .schedule
        .as_deref()
        .and_then(|s| Schedule::parse(s).ok())
        .zip(ai_smartness_assistant::schedule::zone(a.timezone.as_deref()).ok())
        .and_then(|(s, zone)| {
            match due_execution(&s, zone, a.last_scheduled_time, a.created_at, now) {
                Due::Now(at) => Some(NextRun { due: true, at }),
                Due::Later(at) => Some(NextRun { due: false, at }),
                Due::Never => None,
            }
        });
    let last_run = st
        .sessions
        .values()
        .filter(|s| s.automation_id.as_deref() == Some(&a.id))
        .max_by(|x, y| x.created_at.cmp(&y.created_at).then(x.id.cmp(&y.id)))
        .map(|s| summary(st, s));
    // The zone in force: the one given, or the machine's now.
    let timezone = a.timezone.clone().unwrap_or_else(|| {
        ai_smartness_assistant::schedule::machine_zone()
            .name()
            .to_string()
    });
    AutomationView {
        automation: Automation {
            timezone: None,
            ..a.clone()
        },
        timezone,
        next_run,
        last_run,
        runs: None,
    }
}

async fn automation(d: &Assistant, r: AutomationRequest) -> Response {
    let now = d.now();
    let orch = &d.sessions;
    if r.action == AutomationAction::Create {
        return create_automation(d, r).await;
    }
    if r.action == AutomationAction::List {
        let st = orch.state();
        return Response::reply(&AutomationList {
            automations: st
                .automations
                .values()
                .map(|a| automation_view(&st, a, now))
                .collect(),
        });
    }
    let Some(id) = r.id.clone() else {
        return Response::error(
            ErrorCode::BadRequest,
            "this action needs the automation's id",
        );
    };
    if !orch.state().automations.contains_key(&id) {
        return Response::error(
            ErrorCode::NotFound,
            format!("no automation {id} (see `ai automation list`)"),
        );
    }
    // Sessions of this automation that may still run.
    let live = |d: &Assistant| -> Vec<String> {
        d.sessions
            .state()
            .sessions
            .values()
            .filter(|s| s.automation_id.as_deref() == Some(&id) && !s.is_ended())
            .map(|s| s.id.clone())
            .collect()
    };
    match r.action {
        AutomationAction::Show => {
            let st = orch.state();
            let Some(a) = st.automations.get(&id) else {
                return Response::error(ErrorCode::NotFound, format!("no automation {id}"));
            };
            let mut v = automation_view(&st, a, now);
            let mut runs: Vec<&AISession> = st
                .sessions
                .values()
                .filter(|s| s.automation_id.as_deref() == Some(&id))
                .collect();
            runs.sort_by_key(|s| std::cmp::Reverse(s.created_at));
            v.runs = Some(runs.into_iter().map(|s| summary(&st, s)).collect());
            Response::reply(&v)
        }
        AutomationAction::Run => {
            if d.llm.runtime().is_none() {
                return no_llm();
            }
            if !orch.state().automations.get(&id).is_some_and(|a| a.enabled) {
                return Response::error(
                    ErrorCode::Conflict,
                    format!("automation {id} is disabled (`ai automation enable {id}`)"),
                );
            }
            let session = match create_run(d, &id, ExecutionTrigger::Manual, now).await {
                Ok(s) => s,
                Err(e) => return e.into_response(),
            };
            let control = orch.state().slot.request_manual(&session);
            let position = match control {
                Control::Queued { position, .. } => {
                    orch.emit_state(&session, "queued");
                    Some(position)
                }
                _ => {
                    orch.emit_state(&session, "active");
                    round::spawn(
                        d,
                        &session,
                        round::Start::Call(RoundReason::AutomationStart),
                    );
                    None
                }
            };
            let state = if position.is_some() {
                "queued"
            } else {
                "active"
            };
            Response::reply(&RoundHead {
                session_id: session,
                state: state.to_string(),
                queue_position: position,
                messages: None,
            })
        }
        AutomationAction::Pause | AutomationAction::Stop | AutomationAction::Delete => {
            let reason = match r.action {
                AutomationAction::Pause => SessionEndReason::Suspended,
                _ => SessionEndReason::Cancelled,
            };
            if r.action == AutomationAction::Pause {
                if let Some(a) = orch.state().automations.get_mut(&id) {
                    a.paused = true;
                }
                if let Err(e) = orch.persist_automation(&id).await {
                    return e.into_response();
                }
            }
            let mut ended = Vec::new();
            for s in live(d) {
                if orch.end(&s, reason, now).await {
                    ended.push(s);
                }
            }
            if r.action == AutomationAction::Delete {
                orch.state().automations.remove(&id);
                if let Err(e) = orch.delete_automation_file(&id).await {
                    return e.into_response();
                }
            }
            orch.wake_tick();
            Response::reply(&AutomationEnded {
                paused: r.action == AutomationAction::Pause,
                stopped: r.action == AutomationAction::Stop,
                deleted: r.action == AutomationAction::Delete,
                id,
                sessions_ended: ended,
            })
        }
        AutomationAction::Enable | AutomationAction::Disable => {
            let on = r.action == AutomationAction::Enable;
            if let Some(a) = orch.state().automations.get_mut(&id) {
                a.enabled = on;
                if on {
                    a.paused = false;
                }
            }
            if let Err(e) = orch.persist_automation(&id).await {
                return e.into_response();
            }
            changed_automation(orch, &id, now)
        }
        AutomationAction::Create | AutomationAction::List => unreachable!("handled above"),
    }
}

async fn create_automation(d: &Assistant, r: AutomationRequest) -> Response {
    let name = r.name.as_deref().map(str::trim).unwrap_or_default();
    let prompt = r.prompt.as_deref().map(str::trim).unwrap_or_default();
    if name.is_empty() || name.chars().count() > MAX_NAME_CHARS {
        return Response::error(
            ErrorCode::BadRequest,
            format!("an automation needs a name of 1 to {MAX_NAME_CHARS} characters"),
        );
    }
    if prompt.is_empty() || prompt.chars().count() > MAX_PROMPT_CHARS {
        return Response::error(
            ErrorCode::BadRequest,
            format!("an automation needs a prompt of 1 to {MAX_PROMPT_CHARS} characters"),
        );
    }
    let schedule = match r
        .schedule
        .as_deref()
        .map(str::trim)
        .filter(|s| !s.is_empty())
    {
        Some(s) => match Schedule::parse(s) {
            Ok(p) => Some(p.as_str().to_string()),
            Err(e) => {
                return Response::error(ErrorCode::BadRequest, format!("schedule {s:?}: {e}"))
            }
        },
        None => None,
    };
    let timezone = r
        .timezone
        .as_deref()
        .map(str::trim)
        .filter(|z| !z.is_empty());
    if let Err(e) = ai_smartness_assistant::schedule::zone(timezone) {
        return Response::error(ErrorCode::BadRequest, e.to_string());
    }
    let now = d.now();
    let a = Automation {
        id: ids::new_id(Automation::PREFIX, now),
        name: name.to_string(),
        prompt: prompt.to_string(),
        seed_session_id: None,
        schedule,
        timezone: timezone.map(str::to_string),
        enabled: true,
        paused: false,
        created_at: now,
        last_trigger: None,
        last_execution_at: None,
        last_scheduled_time: None,
        require_validation: r.require_validation.unwrap_or(false),
    };
    let id = a.id.clone();
    let orch = &d.sessions;
    orch.state().automations.insert(id.clone(), a);
    if let Err(e) = orch.persist_automation(&id).await {
        orch.state().automations.remove(&id);
        return e.into_response();
    }
    changed_automation(orch, &id, now)
}

/// The reply to a saved change of an automation: the scheduler re-reads its deadlines, the
/// client gets the automation as it now stands.
fn changed_automation(orch: &super::AssistantService, id: &str, now: DateTime<Utc>) -> Response {
    orch.wake_tick();
    let st = orch.state();
    match st.automations.get(id) {
        Some(a) => Response::reply(&automation_view(&st, a, now)),
        None => Response::error(ErrorCode::NotFound, format!("no automation {id}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn choices_are_checked_against_the_module() {
        let m = CommunicationModule::MultipleChoice {
            question: "Which?".into(),
            options: vec!["Merge".into(), "Keep both".into()],
        };
        assert_eq!(check_choice(&m, "2").unwrap(), "Keep both");
        assert_eq!(check_choice(&m, "merge").unwrap(), "Merge");
        assert!(check_choice(&m, "3")
            .unwrap_err()
            .to_string()
            .contains("1 Merge"));
        let v = CommunicationModule::Validation {
            message: "Sure?".into(),
        };
        assert_eq!(check_choice(&v, "Y").unwrap(), "yes");
        assert_eq!(check_choice(&v, "maybe"), Err(ChoiceError::NotYesOrNo));
    }
}
