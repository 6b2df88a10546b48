//! The assistant's data model: sessions, the unified
//! session message, system messages, round and end reasons, automations and loop limits.
//!
//! Every type round-trips through JSON with stable snake_case field names; enum values are
//! SCREAMING_SNAKE_CASE. Times are UTC instants (RFC 3339 in JSON), not epoch milliseconds.

use crate::assistant::message::AIMessage;
use crate::assistant::vocabulary::DataCommand;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// What a session is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum SessionKind {
    /// A live conversation with a person: absolute periods, communication modules.
    Chat,
    /// An automation's template (user message and enrichments); never executed.
    Seed,
    /// One autonomous run of an automation: relative periods, no person to ask.
    Automation,
}

impl SessionKind {
    /// The protocol's spelling, for messages and logs.
    pub fn as_str(self) -> &'static str {
        match self {
            SessionKind::Chat => "CHAT",
            SessionKind::Seed => "SEED",
            SessionKind::Automation => "AUTOMATION",
        }
    }
}

/// Why a session stopped. `None` on a session means it never stopped
/// cleanly (still running, or crashed) and is resumed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum SessionEndReason {
    /// The model said `completed: true`.
    Completed,
    /// Watchdog inactivity, or a loop limit in an automation.
    Timeout,
    /// A fatal technical error.
    Error,
    /// The person pressed STOP: never resumed.
    Cancelled,
    /// The person pressed PAUSE: resumed when the slot is free.
    Suspended,
    /// The network failed: resumed, with retries.
    NetworkError,
}

impl SessionEndReason {
    /// Whether a session that ended this way is picked up again by the scheduler.
    pub fn is_resumable(self) -> bool {
        matches!(
            self,
            SessionEndReason::Suspended | SessionEndReason::NetworkError
        )
    }
}

/// Why a model round starts; logged only: the model never learns that a
/// session was resumed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum RoundReason {
    /// A person sent a message.
    UserMessage,
    /// The previous reply was malformed; the model is asked to correct it.
    FormatErrorCorrection,
    /// A limit was reached and the model is told so.
    LimitNotification,
    /// Command results (data, or actions) are sent back.
    DataResponse,
    /// A person asked for a round by hand.
    ManualTrigger,
    /// An automation run starts.
    AutomationStart,
    /// A run that crashed (end reason none) goes on.
    AutomationResumeOrphan,
    /// A run stopped by the network goes on.
    AutomationResumeNetwork,
    /// A paused run goes on.
    AutomationResumeSuspended,
}

/// What started an automation run (`ExecutionTrigger`; runs started by an event are not
/// supported).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ExecutionTrigger {
    /// A person asked for a run: queued when the slot is busy.
    Manual,
    /// The scheduler found a due time: started only when the slot is free and the queue empty.
    Scheduled,
}

/// Who wrote a message (`MessageSender`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum MessageSender {
    /// The person (or the automation's template standing for them).
    User,
    /// The model.
    Ai,
    /// The assistant: command results, errors, limits.
    System,
}

/// The kinds of system message. The protocol's enum has six (DATA_ADDED .. SESSION_TIMEOUT); its
/// the protocol also stores VALIDATION_CANCELLED and COMMUNICATION_CANCELLED fallbacks as
/// SYSTEM messages, so they are types here too.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum SystemMessageType {
    /// Query results, sent to the model.
    DataAdded,
    /// Action results, sent to the model.
    ActionsExecuted,
    /// A loop limit was reached; sent to the model, no automatic re-send.
    LimitReached,
    /// The model's reply was malformed; sent back for correction.
    FormatError,
    /// Network, HTTP or provider failure: audit only, never in the prompt.
    NetworkError,
    /// The watchdog stopped the session: audit only, never in the prompt.
    SessionTimeout,
    /// Stored before asking for validation; deleted if the person approves, kept if they refuse.
    ValidationCancelled,
    /// Stored before waiting on a communication module; deleted once the person answers.
    CommunicationCancelled,
}

impl SystemMessageType {
    /// Whether messages of this type go into the model's prompt.
    pub fn in_prompt(self) -> bool {
        !matches!(
            self,
            SystemMessageType::NetworkError | SystemMessageType::SessionTimeout
        )
    }
}

/// Outcome of one command (`CommandStatus`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum CommandStatus {
    /// The command ran and did what it said.
    Success,
    /// The command ran and failed; `detail` says why.
    Failed,
    /// The command was not run (refused validation, session stopped).
    Cancelled,
    /// The answer came from a cache.
    Cached,
}

/// The result of one command, kept in the system message for audit and the prompt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CommandResult {
    /// The command's type, e.g. `SEARCH_THREADS`.
    pub command_type: String,
    /// How it went.
    pub status: CommandStatus,
    /// A short human-readable detail (error text, what changed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

/// A message written by the assistant.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SystemMessage {
    /// What kind of system message this is; decides whether it reaches the prompt.
    pub kind: SystemMessageType,
    /// One result per command of the series (empty for errors and limits).
    #[serde(default)]
    pub command_results: Vec<CommandResult>,
    /// One line for people and the model.
    pub summary: String,
    /// Formatted query results for the prompt (DATA_ADDED only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub formatted_data: Option<String>,
}

impl SystemMessage {
    /// A system message with only a summary (errors, limits, fallbacks).
    pub fn note(kind: SystemMessageType, summary: impl Into<String>) -> Self {
        SystemMessage {
            kind,
            command_results: Vec::new(),
            summary: summary.into(),
            formatted_data: None,
        }
    }
}

/// A person's message with its enrichments (`RichMessage`). Over a CLI the segments
/// collapse to the text and the data commands its enrichments produced.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RichMessage {
    /// The text as the person wrote it.
    pub linear_text: String,
    /// Data commands attached by enrichments, run before the model's round.
    #[serde(default)]
    pub data_commands: Vec<DataCommand>,
}

/// The five shapes of a session message (seed: "5 variantes selon les champs remplis"). Each
/// implies its sender, so a message can never claim a sender its content contradicts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(
    tag = "variant",
    rename_all = "SCREAMING_SNAKE_CASE",
    deny_unknown_fields
)]
pub enum MessageBody {
    /// A person's message with enrichments (`richContent`).
    UserRich {
        /// The message and its enrichment commands.
        rich_content: RichMessage,
    },
    /// A person's plain answer: to a communication module or a validation (`textContent`).
    UserText {
        /// The answer.
        text_content: String,
    },
    /// The model's reply, parsed, with the original text kept for the prompt history.
    Ai {
        /// The parsed reply (or the `ai_response_invalid_format` fallback).
        ai_message: AIMessage,
        /// The reply exactly as the model wrote it.
        ai_message_json: String,
    },
    /// Text shown as the model's but built by the assistant (postText after success).
    AiText {
        /// The text shown.
        text_content: String,
    },
    /// An assistant message (`systemMessage`).
    System {
        /// Results, errors, limits.
        system_message: SystemMessage,
    },
}

/// Where a message of an automation run came from (`ExecutionMetadata`, "Automations
/// uniquement"): set on the template messages copied into the run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExecutionMetadata {
    /// The automation this run belongs to.
    pub automation_id: String,
    /// What started the run.
    pub trigger: ExecutionTrigger,
    /// The run's reference time (relative periods resolve against it).
    pub scheduled_for: DateTime<Utc>,
}

/// One message of a session (the unified `SessionMessage`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SessionMessage {
    /// Unique within the session; fallback messages are deleted by id.
    pub id: String,
    /// When it was stored.
    pub timestamp: DateTime<Utc>,
    /// What it holds, which also says who wrote it.
    pub body: MessageBody,
    /// Set on the template messages copied into an automation run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub execution_metadata: Option<ExecutionMetadata>,
    /// Shown to people but kept out of the prompt (postText after success, module text).
    #[serde(default)]
    pub exclude_from_prompt: bool,
}

impl SessionMessage {
    /// A message in the prompt by default.
    pub fn new(id: impl Into<String>, timestamp: DateTime<Utc>, body: MessageBody) -> Self {
        SessionMessage {
            id: id.into(),
            timestamp,
            body,
            execution_metadata: None,
            exclude_from_prompt: false,
        }
    }

    /// The postText shown after successful actions: an AI text kept out of the prompt, since
    /// the original AI message already holds it.
    pub fn post_text(id: impl Into<String>, timestamp: DateTime<Utc>, text: String) -> Self {
        let mut m = Self::new(id, timestamp, MessageBody::AiText { text_content: text });
        m.exclude_from_prompt = true;
        m
    }

    /// Who wrote it, derived from the body.
    pub fn sender(&self) -> MessageSender {
        match self.body {
            MessageBody::UserRich { .. } | MessageBody::UserText { .. } => MessageSender::User,
            MessageBody::Ai { .. } | MessageBody::AiText { .. } => MessageSender::Ai,
            MessageBody::System { .. } => MessageSender::System,
        }
    }

    /// The system message, if this is one.
    pub fn system_message(&self) -> Option<&SystemMessage> {
        match &self.body {
            MessageBody::System { system_message } => Some(system_message),
            _ => None,
        }
    }

    /// Whether the message goes into the model's prompt: not excluded, and not an audit-only
    /// system message (NETWORK_ERROR, SESSION_TIMEOUT).
    pub fn in_prompt(&self) -> bool {
        !self.exclude_from_prompt && self.system_message().is_none_or(|s| s.kind.in_prompt())
    }
}

/// The messages of a history that go into the prompt, in order.
pub fn prompt_messages(messages: &[SessionMessage]) -> Vec<&SessionMessage> {
    messages.iter().filter(|m| m.in_prompt()).collect()
}

/// What a session waits for from a person. The seed keeps this in memory only; over a CLI the
/// answer comes in a later request, so it is stored with the session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "SCREAMING_SNAKE_CASE", deny_unknown_fields)]
pub enum WaitingState {
    /// Actions wait for approval; the fallback is deleted if approved, kept if refused.
    Validation {
        /// Id of the VALIDATION_CANCELLED fallback message.
        cancel_message_id: String,
    },
    /// A communication module waits for an answer.
    Response {
        /// Id of the COMMUNICATION_CANCELLED fallback message.
        cancel_message_id: String,
    },
}

/// The four counters of the autonomous loop. Stored with the session so
/// a round that waits for a person across CLI requests goes on with the same counts; reset when
/// a new user message starts a round.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LoopCounters {
    /// Automatic re-sends to the model in this round; never reset within the round.
    pub total_roundtrips: u32,
    /// Consecutive replies that ran data commands.
    pub consecutive_data_queries: u32,
    /// Consecutive action series that failed.
    pub consecutive_action_retries: u32,
    /// Consecutive malformed replies.
    pub consecutive_format_errors: u32,
}

/// A session (`AISession`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AISession {
    /// Unique id.
    pub id: String,
    /// Shown in listings.
    pub name: String,
    /// CHAT, SEED or AUTOMATION.
    pub kind: SessionKind,
    /// AUTOMATION (and SEED): the automation it belongs to; none for CHAT.
    #[serde(default)]
    pub automation_id: Option<String>,
    /// AUTOMATION: the time the run stands for; relative periods resolve against it, so a late
    /// run still covers the right days.
    #[serde(default)]
    pub scheduled_execution_time: Option<DateTime<Utc>>,
    /// AUTOMATION: the cron expression in force when the run was created (a later edit of the
    /// automation does not rewrite history).
    #[serde(default)]
    pub schedule: Option<String>,
    /// AUTOMATION: MANUAL or SCHEDULED.
    #[serde(default)]
    pub trigger: Option<ExecutionTrigger>,
    /// When the session was created.
    pub created_at: DateTime<Utc>,
    /// Last activity (message stored, round run); the watchdog measures inactivity from it.
    pub updated_at: DateTime<Utc>,
    /// When it ended; none while it may still run.
    #[serde(default)]
    pub ended_at: Option<DateTime<Utc>>,
    /// Why it ended; none means running or crashed (resumable).
    #[serde(default)]
    pub end_reason: Option<SessionEndReason>,
    /// AUTOMATION: offline and retrying; the watchdog must not time it out meanwhile.
    #[serde(default)]
    pub is_waiting_for_network: bool,
    /// What the session waits for from a person, if anything.
    #[serde(default)]
    pub waiting: Option<WaitingState>,
    /// The autonomous loop's counters for the current round.
    #[serde(default)]
    pub counters: LoopCounters,
    /// Session level of the validation hierarchy: every action waits for a person.
    #[serde(default)]
    pub require_validation: bool,
    /// The history, oldest first.
    #[serde(default)]
    pub messages: Vec<SessionMessage>,
}

impl AISession {
    /// A new session with no messages, counters at zero, not ended.
    pub fn new(
        id: impl Into<String>,
        name: impl Into<String>,
        kind: SessionKind,
        now: DateTime<Utc>,
    ) -> Self {
        AISession {
            id: id.into(),
            name: name.into(),
            kind,
            automation_id: None,
            scheduled_execution_time: None,
            schedule: None,
            trigger: None,
            created_at: now,
            updated_at: now,
            ended_at: None,
            end_reason: None,
            is_waiting_for_network: false,
            waiting: None,
            counters: LoopCounters::default(),
            require_validation: false,
            messages: Vec::new(),
        }
    }

    /// Whether the session has stopped for good or for now (it has an end reason).
    pub fn is_ended(&self) -> bool {
        self.end_reason.is_some()
    }

    /// The reference time for relative periods: the scheduled time of an automation run, or
    /// its creation if it has none.
    pub fn period_reference(&self) -> DateTime<Utc> {
        self.scheduled_execution_time.unwrap_or(self.created_at)
    }
}

/// An automation: a prompt run by the model on a schedule or on demand.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Automation {
    /// Unique id.
    pub id: String,
    /// Shown in listings.
    pub name: String,
    /// The template user message each run starts with.
    pub prompt: String,
    /// The SEED session holding the template with its enrichments, if one was made.
    #[serde(default)]
    pub seed_session_id: Option<String>,
    /// A cron expression (see `schedule`); none means manual runs only.
    #[serde(default)]
    pub schedule: Option<String>,
    /// The IANA time zone its schedule follows (`Europe/Paris`); none means the machine's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timezone: Option<String>,
    /// Off: no scheduled runs, no manual runs, no resumed runs.
    pub enabled: bool,
    /// Paused by a person: no scheduled or resumed runs until unpaused; manual runs still go.
    #[serde(default)]
    pub paused: bool,
    /// When the schedule took effect; the first scheduled time counted is after it.
    pub created_at: DateTime<Utc>,
    /// What started the latest run.
    #[serde(default)]
    pub last_trigger: Option<ExecutionTrigger>,
    /// When the latest run (of any trigger) started.
    #[serde(default)]
    pub last_execution_at: Option<DateTime<Utc>>,
    /// The scheduled time the latest SCHEDULED run stood for: missed times up to it are done.
    #[serde(default)]
    pub last_scheduled_time: Option<DateTime<Utc>>,
    /// Session level of the validation hierarchy for its runs: every action waits for a person.
    #[serde(default)]
    pub require_validation: bool,
}

/// The loop limits of one session kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KindLimits {
    /// Consecutive replies with data commands.
    pub max_data_query_iterations: u32,
    /// Consecutive failed action series.
    pub max_action_retries: u32,
    /// Consecutive malformed replies.
    pub max_format_error_retries: u32,
    /// Automatic re-sends in one round, all kinds together (safety net).
    pub max_autonomous_roundtrips: u32,
}

/// Limits of the autonomous loop, per session kind,
/// plus the automation watchdog's inactivity limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AILimitsConfig {
    /// CHAT: consecutive data query replies (default 3).
    pub chat_max_data_query_iterations: u32,
    /// CHAT: consecutive failed action series (default 3).
    pub chat_max_action_retries: u32,
    /// CHAT: consecutive malformed replies (default 3).
    pub chat_max_format_error_retries: u32,
    /// CHAT: automatic re-sends per round (default 10).
    pub chat_max_autonomous_roundtrips: u32,
    /// AUTOMATION: consecutive data query replies (default 5).
    pub automation_max_data_query_iterations: u32,
    /// AUTOMATION: consecutive failed action series (default 5).
    pub automation_max_action_retries: u32,
    /// AUTOMATION: consecutive malformed replies (default 5).
    pub automation_max_format_error_retries: u32,
    /// AUTOMATION: automatic re-sends per round (default 20).
    pub automation_max_autonomous_roundtrips: u32,
    /// AUTOMATION: seconds without activity (and not waiting for the network) before the
    /// watchdog ends the run with TIMEOUT: ten minutes.
    pub automation_max_inactivity_secs: u64,
}

impl Default for AILimitsConfig {
    fn default() -> Self {
        AILimitsConfig {
            chat_max_data_query_iterations: 3,
            chat_max_action_retries: 3,
            chat_max_format_error_retries: 3,
            chat_max_autonomous_roundtrips: 10,
            automation_max_data_query_iterations: 5,
            automation_max_action_retries: 5,
            automation_max_format_error_retries: 5,
            automation_max_autonomous_roundtrips: 20,
            automation_max_inactivity_secs: 600,
        }
    }
}

impl AILimitsConfig {
    /// The limits for a kind; SEED sessions never run, so they have none.
    pub fn for_kind(&self, kind: SessionKind) -> Option<KindLimits> {
        match kind {
            SessionKind::Chat => Some(KindLimits {
                max_data_query_iterations: self.chat_max_data_query_iterations,
                max_action_retries: self.chat_max_action_retries,
                max_format_error_retries: self.chat_max_format_error_retries,
                max_autonomous_roundtrips: self.chat_max_autonomous_roundtrips,
            }),
            SessionKind::Automation => Some(KindLimits {
                max_data_query_iterations: self.automation_max_data_query_iterations,
                max_action_retries: self.automation_max_action_retries,
                max_format_error_retries: self.automation_max_format_error_retries,
                max_autonomous_roundtrips: self.automation_max_autonomous_roundtrips,
            }),
            SessionKind::Seed => None,
        }
    }
}

/// Sessions are kept one file each in `db/sessions/`.
impl crate::Record for AISession {
    const FOLDER: &'static str = "sessions";
    const PREFIX: &'static str = "session";
    fn id(&self) -> &str {
        &self.id
    }
}

/// Automations are kept one file each in `db/automations/`.
impl crate::Record for Automation {
    const FOLDER: &'static str = "automations";
    const PREFIX: &'static str = "automation";
    fn id(&self) -> &str {
        &self.id
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;
    use serde_json::json;

    fn t(h: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2025, 3, 10, h, 0, 0).unwrap()
    }

    #[test]
    fn limits_defaults_follow_the_seed() {
        let l = AILimitsConfig::default();
        let chat = l.for_kind(SessionKind::Chat).unwrap();
        assert_eq!(
            (
                chat.max_data_query_iterations,
                chat.max_action_retries,
                chat.max_format_error_retries,
                chat.max_autonomous_roundtrips
            ),
            (3, 3, 3, 10)
        );
        let auto = l.for_kind(SessionKind::Automation).unwrap();
        assert_eq!(
            (
                auto.max_data_query_iterations,
                auto.max_action_retries,
                auto.max_format_error_retries,
                auto.max_autonomous_roundtrips
            ),
            (5, 5, 5, 20)
        );
        assert!(l.for_kind(SessionKind::Seed).is_none());
    }

    #[test]
    fn limits_partial_json_keeps_defaults_and_rejects_unknown_keys() {
        let l: AILimitsConfig =
            serde_json::from_value(json!({"chat_max_autonomous_roundtrips": 4})).unwrap();
        assert_eq!(l.chat_max_autonomous_roundtrips, 4);
        assert_eq!(l.automation_max_autonomous_roundtrips, 20);
        assert!(serde_json::from_value::<AILimitsConfig>(json!({"chatMax": 1})).is_err());
    }

    #[test]
    fn enums_serialize_in_screaming_snake_case() {
        assert_eq!(json!(SessionKind::Automation), json!("AUTOMATION"));
        assert_eq!(
            json!(SessionEndReason::NetworkError),
            json!("NETWORK_ERROR")
        );
        assert_eq!(
            json!(RoundReason::AutomationResumeSuspended),
            json!("AUTOMATION_RESUME_SUSPENDED")
        );
        assert_eq!(
            json!(SystemMessageType::ValidationCancelled),
            json!("VALIDATION_CANCELLED")
        );
        assert_eq!(json!(ExecutionTrigger::Scheduled), json!("SCHEDULED"));
        assert_eq!(json!(CommandStatus::Cached), json!("CACHED"));
        assert_eq!(json!(MessageSender::Ai), json!("AI"));
    }

    #[test]
    fn resumable_end_reasons() {
        assert!(SessionEndReason::Suspended.is_resumable());
        assert!(SessionEndReason::NetworkError.is_resumable());
        for r in [
            SessionEndReason::Completed,
            SessionEndReason::Timeout,
            SessionEndReason::Error,
            SessionEndReason::Cancelled,
        ] {
            assert!(!r.is_resumable(), "{r:?}");
        }
    }

    #[test]
    fn session_round_trips_through_json() {
        let mut s = AISession::new("s1", "nightly", SessionKind::Automation, t(1));
        s.automation_id = Some("a1".into());
        s.scheduled_execution_time = Some(t(0));
        s.schedule = Some("0 0 * * *".into());
        s.trigger = Some(ExecutionTrigger::Scheduled);
        s.waiting = Some(WaitingState::Validation {
            cancel_message_id: "m9".into(),
        });
        s.counters.total_roundtrips = 2;
        s.messages.push(SessionMessage::new(
            "m1",
            t(1),
            MessageBody::UserText {
                text_content: "hi".into(),
            },
        ));
        let v = serde_json::to_value(&s).unwrap();
        assert_eq!(v["kind"], "AUTOMATION");
        assert_eq!(v["waiting"]["kind"], "VALIDATION");
        assert_eq!(v["messages"][0]["body"]["variant"], "USER_TEXT");
        let back: AISession = serde_json::from_value(v).unwrap();
        assert_eq!(back, s);
    }

    #[test]
    fn messages_with_commands_round_trip() {
        let rich: RichMessage = serde_json::from_value(json!({
            "linear_text": "what did I do yesterday?",
            "data_commands": [{"type": "THREADS_IN_PERIOD", "params": {"period": {"from": "2025-03-09", "to": "2025-03-09"}}}]
        }))
        .unwrap();
        let reply = json!({"preText": "Looking.", "dataCommands": [{"type": "SEARCH_THREADS", "params": {"query": "pool", "limit": 3}}]});
        let ai: AIMessage = serde_json::from_value(reply.clone()).unwrap();
        let mut s = AISession::new("s", "n", SessionKind::Chat, t(1));
        s.messages = vec![
            SessionMessage::new("1", t(1), MessageBody::UserRich { rich_content: rich }),
            SessionMessage::new(
                "2",
                t(2),
                MessageBody::Ai {
                    ai_message: ai,
                    ai_message_json: reply.to_string(),
                },
            ),
        ];
        let v = serde_json::to_value(&s).unwrap();
        assert_eq!(v["messages"][1]["body"]["ai_message"], reply);
        assert_eq!(serde_json::from_value::<AISession>(v).unwrap(), s);
    }

    #[test]
    fn session_rejects_unknown_fields() {
        let mut v =
            serde_json::to_value(AISession::new("s", "n", SessionKind::Chat, t(1))).unwrap();
        v["isActive"] = json!(true);
        assert!(serde_json::from_value::<AISession>(v).is_err());
    }

    #[test]
    fn period_reference_prefers_the_scheduled_time() {
        let mut s = AISession::new("s", "n", SessionKind::Automation, t(10));
        assert_eq!(s.period_reference(), t(10));
        s.scheduled_execution_time = Some(t(0));
        assert_eq!(s.period_reference(), t(0));
    }

    #[test]
    fn sender_follows_the_body() {
        let ai = SessionMessage::post_text("p", t(1), "done".into());
        assert_eq!(ai.sender(), MessageSender::Ai);
        assert!(ai.exclude_from_prompt);
        let sys = SessionMessage::new(
            "s",
            t(1),
            MessageBody::System {
                system_message: SystemMessage::note(SystemMessageType::DataAdded, "x"),
            },
        );
        assert_eq!(sys.sender(), MessageSender::System);
        let user = SessionMessage::new(
            "u",
            t(1),
            MessageBody::UserRich {
                rich_content: RichMessage {
                    linear_text: "q".into(),
                    data_commands: vec![],
                },
            },
        );
        assert_eq!(user.sender(), MessageSender::User);
    }

    #[test]
    fn prompt_filter_drops_audit_messages_and_excluded_ones() {
        let sys = |id: &str, kind| {
            SessionMessage::new(
                id,
                t(1),
                MessageBody::System {
                    system_message: SystemMessage::note(kind, "x"),
                },
            )
        };
        let msgs = vec![
            sys("1", SystemMessageType::DataAdded),
            sys("2", SystemMessageType::NetworkError),
            sys("3", SystemMessageType::SessionTimeout),
            sys("4", SystemMessageType::LimitReached),
            sys("5", SystemMessageType::FormatError),
            sys("6", SystemMessageType::ValidationCancelled),
            SessionMessage::post_text("7", t(1), "shown only".into()),
            sys("8", SystemMessageType::ActionsExecuted),
        ];
        let ids: Vec<&str> = prompt_messages(&msgs)
            .iter()
            .map(|m| m.id.as_str())
            .collect();
        assert_eq!(ids, ["1", "4", "5", "6", "8"]);
    }

    #[test]
    fn message_body_rejects_a_wrong_variant_shape() {
        let bad = json!({"id": "m", "timestamp": "2025-01-01T00:00:00Z",
            "body": {"variant": "USER_TEXT", "system_message": {}}});
        assert!(serde_json::from_value::<SessionMessage>(bad).is_err());
    }

    #[test]
    fn automation_json_uses_snake_case() {
        let a = Automation {
            id: "a1".into(),
            name: "digest".into(),
            prompt: "summarise yesterday".into(),
            seed_session_id: None,
            schedule: Some("@daily".into()),
            timezone: None,
            enabled: true,
            paused: false,
            created_at: t(0),
            last_trigger: Some(ExecutionTrigger::Manual),
            last_execution_at: Some(t(1)),
            last_scheduled_time: None,
            require_validation: false,
        };
        let v = serde_json::to_value(&a).unwrap();
        assert_eq!(v["last_trigger"], "MANUAL");
        assert_eq!(v["last_execution_at"], "2025-03-10T01:00:00Z");
        assert_eq!(serde_json::from_value::<Automation>(v).unwrap(), a);
    }
}
