//! Typed replies: what the daemon answers to the memory's requests. The daemon builds these and
//! the CLI (and the CLI run from a prompt) reads them back into the same types, so a field
//! renamed on one side no longer compiles and prints blanks on the other. On the wire each is
//! the `result` of a [`ai_smartness_proto::protocol::Response`], as JSON with exactly the keys listed here.
//! (Beside `protocol`, not in it: the hooks compile `protocol.rs` on its own, and these
//! replies name the memory's types.)

pub mod render;

use ai_smartness_capture::source::OriginType;
use ai_smartness_config::Mode;
use ai_smartness_core::memory::subject::ProfileTerm;
use ai_smartness_core::memory::types::{BridgeType, Message, TitleSource};
use ai_smartness_core::retrieve::{Candidate, Gate, MessageRef, QueryStats, ThreadHit};
use ai_smartness_vectors::EmbedderKind;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// A capture handed to the daemon: journaled (with its sequence number) or skipped, and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Captured {
    pub queued: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seq: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skipped: Option<String>,
}

/// `sync`: every capture up to `processed` is in memory and saved.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Synced {
    pub processed: u64,
    pub saved: bool,
}

/// A line the daemon adds to an event stream about the stream itself, not an event of it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum StreamNotice {
    /// No stream was opened: as many as the daemon allows are open. The connection closes.
    StreamRefused { reason: String },
    /// The reader fell behind and this many events were dropped for it.
    Lagged { missed: u64 },
}

/// What happened to a session, for `ai watch`, a followed chat and requests waiting on a round:
/// one JSON line each, `{"event": KIND, ...}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum SessionEvent {
    /// A message was stored.
    Message {
        session_id: String,
        message: Box<ai_smartness_records::assistant::types::SessionMessage>,
    },
    /// A fallback message was deleted (the person approved or answered).
    MessageDeleted {
        session_id: String,
        message_id: String,
    },
    /// The session's state changed (`active`, `queued`, `waiting_validation`, `waiting_answer`,
    /// `waiting_network`, `idle`, `ended`).
    State {
        session_id: String,
        state: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        end_reason: Option<ai_smartness_records::assistant::types::SessionEndReason>,
    },
    /// A round stopped: the session now waits for someone, or ended.
    RoundEnded { session_id: String },
}

impl SessionEvent {
    /// The session the event is about.
    pub fn session_id(&self) -> &str {
        match self {
            SessionEvent::Message { session_id, .. }
            | SessionEvent::MessageDeleted { session_id, .. }
            | SessionEvent::State { session_id, .. }
            | SessionEvent::RoundEnded { session_id } => session_id,
        }
    }
}

/// A line of a session's stream: one of its events, or a notice about the stream itself.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum SessionLine {
    Event(SessionEvent),
    Notice(StreamNotice),
}

/// A line of `ai watch RUN`: one of the run's events, or how many the reader missed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum RunLine {
    Event(ai_smartness_records::run::RunEvent),
    Lagged(RunLagged),
}

/// `{"type": "lagged", "missed": N}`: the reader fell behind and N events were dropped for it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunLagged {
    /// Always `lagged`.
    #[serde(rename = "type")]
    pub kind: String,
    pub missed: u64,
}

impl RunLine {
    pub fn lagged(missed: u64) -> RunLine {
        RunLine::Lagged(RunLagged {
            kind: "lagged".into(),
            missed,
        })
    }
}

/// `ai init --json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Initialised {
    pub project: std::path::PathBuf,
    pub created: bool,
    pub mode: Mode,
    pub language: String,
}

/// `ai daemon start --json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DaemonRunning {
    pub running: bool,
    pub pid: u32,
}

/// `shutdown`: the daemon is on its way out.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Stopping {
    pub stopping: bool,
}

/// `reindex`: how many threads were embedded again, and by what.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Reindexed {
    pub threads: usize,
    pub embedder: EmbedderKind,
}

/// What a thread's line in a listing and its page share.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ThreadHeader {
    pub id: String,
    pub title: String,
    /// `active`, `suspended` or `archived`.
    pub status: String,
    /// Its weight now, after decay, to three decimals.
    pub weight: f64,
    pub origin_type: OriginType,
    pub parent_id: Option<String>,
    /// RFC 3339.
    pub last_active: String,
    /// RFC 3339.
    pub created_at: String,
    pub activation_count: u32,
    pub summary: String,
    pub pinned: bool,
    pub never_recall: bool,
}

/// One thread in a listing (`ai threads`) or a search hit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ThreadSummary {
    #[serde(flatten)]
    pub header: ThreadHeader,
    /// How many messages it holds.
    pub messages: usize,
    /// Its first topics (six at most).
    pub topics: Vec<String>,
}

/// `threads`: the heaviest first, `total` before any limit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ThreadList {
    pub total: usize,
    pub threads: Vec<ThreadSummary>,
    /// Suspended threads in the memory, listed or not: an empty list of active threads after
    /// importing an old history says where its threads went (decay suspended them).
    #[serde(default)]
    pub suspended: usize,
}

/// A search hit: a thread and how well it matched.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SearchHit {
    #[serde(flatten)]
    pub thread: ThreadSummary,
    /// To three decimals.
    pub score: f64,
}

/// `search`: the query as searched (trimmed) and the best threads first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SearchResults {
    pub query: String,
    pub results: Vec<SearchHit>,
    /// With `team`: the team store's best messages, each with its author.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub team: Option<TeamResults>,
}

/// What the team store answered, or why it did not.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TeamResults {
    pub hits: Vec<TeamHitView>,
    /// The store could not answer (down, too slow): local results only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl TeamResults {
    /// No hits, and why.
    pub fn failed(why: impl Into<String>) -> TeamResults {
        TeamResults {
            hits: Vec::new(),
            error: Some(why.into()),
        }
    }
}

/// A message from the team store.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TeamHitView {
    pub message_id: String,
    pub thread_id: String,
    pub thread_title: String,
    /// Who shared it, and from which machine.
    pub author: String,
    pub machine: String,
    /// RFC 3339.
    pub at: String,
    pub snippet: String,
    /// The fused rank score, to four decimals.
    pub score: f64,
    /// Its closeness to the query (cosine), to three decimals.
    pub dense: f64,
}

/// `thread ID`: everything but the raw embedding, with its bridges.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ThreadDetail {
    #[serde(flatten)]
    pub header: ThreadHeader,
    pub messages: Vec<Message>,
    /// Every topic.
    pub topics: Vec<String>,
    pub drift_history: Vec<String>,
    pub child_ids: Vec<String>,
    pub decisions: Vec<String>,
    pub questions: Vec<String>,
    /// Whether it has an embedding.
    pub embedded: bool,
    /// Who wrote its title.
    pub title_by: TitleSource,
    /// What it is about now: its most distinctive terms, heaviest first.
    pub profile: Vec<ProfileTerm>,
    /// What is left of a merge names the thread that took its messages.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub merged_into: Option<String>,
    pub bridges: Vec<BridgeView>,
    /// The id asked for, when it named a thread merged into this one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolved_from: Option<String>,
    /// When a page of the messages was asked for: where it starts and how many there are.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub page: Option<MessagePage>,
}

/// Which of a thread's messages a page holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct MessagePage {
    /// The first message's position (0 is the oldest).
    pub offset: usize,
    /// The thread's messages in all.
    pub total: usize,
}

/// A stored message as a search or a timeline lists it: where it is, when, what it says (the
/// start of it, or the part that matched), and what produced it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MessageHit {
    pub thread_id: String,
    pub thread_title: String,
    /// `active`, `suspended` or `archived`.
    pub thread_status: String,
    pub message_id: String,
    /// RFC 3339.
    pub at: String,
    /// `user` or `assistant`.
    pub author: String,
    /// The tool whose output it is (`Bash`, `Read`, `UserPrompt`, `Response`, `Note`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// The file it came from, when it came from one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    pub snippet: String,
    /// Its full length in characters (the snippet may be shorter).
    pub chars: usize,
}

/// `recall`: the messages most relevant to a query, best first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecallReply {
    pub query: String,
    pub hits: Vec<RecallHit>,
    /// Whether anything cleared the relevance bar that injection uses (weaker hits are still
    /// listed: a search was asked for).
    pub relevant: bool,
    /// The gate's evidence and bar.
    pub decision: Gate,
    /// When the project is in a team: the team store's best messages, with their authors.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub team: Option<TeamResults>,
}

/// One `recall` result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecallHit {
    #[serde(flatten)]
    pub message: MessageHit,
    /// Its score, to three decimals, and what made it.
    pub why: ai_smartness_core::retrieve::Why,
}

/// `timeline`: messages in time order (oldest first).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TimelineReply {
    pub messages: Vec<MessageHit>,
    /// Messages of the period left out by the limit.
    pub more: usize,
    /// With `around`: the message the timeline is centred on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub around: Option<String>,
}

/// `remember`: where the note was stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Remembered {
    pub thread_id: String,
    pub message_id: String,
    pub title: String,
}

/// One bridge, with the titles of both ends.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BridgeView {
    pub id: String,
    pub source_id: String,
    pub source_title: String,
    pub target_id: String,
    pub target_title: String,
    pub relation_type: BridgeType,
    /// `active`, `weak` or `invalid`.
    pub status: String,
    pub weight: f64,
    pub confidence: f64,
    pub shared_concepts: Vec<String>,
    pub reason: String,
    pub propagated_from: Option<String>,
    pub propagation_depth: u32,
    pub use_count: u32,
    pub last_used: Option<String>,
    pub created_at: String,
}

/// `bridges`: the heaviest first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BridgeList {
    pub total: usize,
    pub bridges: Vec<BridgeView>,
}

/// An edit applied (and saved): what was edited and how.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Edited<A> {
    pub id: String,
    pub action: A,
}

/// `mode`: the mode in force, its quota and the active threads; after a change, how many
/// threads were suspended to fit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModeReply {
    pub mode: Mode,
    pub quota: usize,
    pub active_threads: usize,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suspended: Option<usize>,
}

/// `rules`: the user rules, in order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RulesReply {
    pub rules: Vec<String>,
}

/// `status`: the project, the daemon, the memory's counts, the embedder, the LLM, the
/// assistant and the workflow runs, the counters.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct StatusReply {
    pub project: String,
    pub project_name: String,
    pub pid: u32,
    pub protocol: u32,
    pub version: String,
    pub uptime_secs: i64,
    pub mode: Mode,
    pub quota: usize,
    pub threads: ThreadCounts,
    pub bridges: BridgeCounts,
    pub embedder: EmbedderStatus,
    pub extractor: String,
    pub llm: Option<LlmView>,
    /// Captures acknowledged, not yet processed.
    pub journal_pending: u64,
    pub assistant: AssistantOverview,
    pub runs: RunsOverview,
    pub stats: Stats,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct ThreadCounts {
    pub total: usize,
    pub active: usize,
    pub suspended: usize,
    pub archived: usize,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct BridgeCounts {
    pub total: usize,
    pub weak: usize,
    pub invalid: usize,
}

/// The embedder in use, and the memory's words that have (or wait for) a vector.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EmbedderStatus {
    pub kind: EmbedderKind,
    pub name: String,
    pub degraded: bool,
    pub reason: Option<String>,
    pub words: usize,
    pub words_pending: usize,
    /// Units of long captures still without a vector (read as their messages until then).
    #[serde(default)]
    pub units_pending: usize,
}

impl Default for EmbedderStatus {
    fn default() -> Self {
        EmbedderStatus {
            kind: EmbedderKind::HashedTfidf,
            name: String::new(),
            degraded: false,
            reason: None,
            words: 0,
            words_pending: 0,
            units_pending: 0,
        }
    }
}

/// The assistant at a glance: the running session, the queue, what waits for a person.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct AssistantOverview {
    pub active: Option<String>,
    pub queued: usize,
    pub waiting_for_you: Vec<String>,
    pub sessions: usize,
    pub automations: usize,
    pub automations_enabled: usize,
}

/// The workflow runs at a glance.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct RunsOverview {
    pub total: usize,
    pub running: Vec<String>,
    pub passed: usize,
    pub failed: usize,
}

/// The LLM as `status` and `health` show it: which provider, whether it is in use, and (as
/// they apply) its model, usage, background work, reachability and limits.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct LlmView {
    pub provider: String,
    /// The provider's id, or `local fallback`.
    pub in_use: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usage: Option<ai_smartness_records::cost::UsageSnapshot>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub jobs: Option<Counters>,
    /// Jobs waiting now.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub queue: Option<usize>,
    /// Whether it answered the last check; none before the first.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub answers: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub checked_at: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latency_ms: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// `ping` (the health check) or `call` (a real call).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub via: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usage_today: Option<UsageToday>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limits: Option<ai_smartness_records::cost::Limits>,
}

impl LlmView {
    /// A view of `provider` with nothing else known yet.
    pub fn named(provider: &str, in_use: &str) -> LlmView {
        LlmView {
            provider: provider.to_string(),
            in_use: in_use.to_string(),
            ..LlmView::default()
        }
    }
}

/// Today's LLM calls, for `health`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct UsageToday {
    pub day: String,
    pub calls: u64,
    pub failed_calls: u64,
    pub tokens: u64,
    pub cost_usd: f64,
}

/// `health`: every check `ai health` prints, with what to do about a failing one.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct HealthReply {
    /// `running`.
    pub daemon: String,
    pub pid: u32,
    pub captures: CapturesHealth,
    pub saving: SavingHealth,
    /// Hand-edited files that do not load now, by name.
    pub config_problems: std::collections::BTreeMap<String, ConfigProblem>,
    pub embedder: EmbedderHealth,
    pub extractor: String,
    pub llm: Option<LlmView>,
    pub embedding_coverage: f64,
    pub continuation_rate: f64,
    pub bridge_ratio: f64,
    pub threads: usize,
    pub journal_pending: u64,
    pub quarantined_files: usize,
    pub persist_errors: u64,
    pub bad_requests: u64,
    pub last_prune: Option<String>,
    pub reindexing: bool,
    /// The daemon's log file.
    pub log: String,
    /// Per hook binary.
    pub hooks: std::collections::BTreeMap<String, HookHealth>,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct CapturesHealth {
    /// Set while the journal refuses captures (a full disk).
    pub refusing: Option<Refusing>,
    pub refused_total: u64,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct SavingHealth {
    /// Set while saving the memory fails.
    pub failing: Option<Refusing>,
    /// Room a capture needs to be saved, while saving fails.
    pub needs_bytes: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct EmbedderHealth {
    pub name: String,
    pub degraded: bool,
    pub reason: Option<String>,
}

/// A hook binary: when it last reached the daemon, and the errors it recorded itself.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct HookHealth {
    pub last_run: Option<String>,
    pub errors: u64,
    pub last_error: Option<String>,
    pub last_error_at: Option<String>,
}

/// One workflow run in `ai runs`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunSummary {
    pub id: String,
    pub task: String,
    pub phase: ai_smartness_records::run::Phase,
    pub mode: ai_smartness_records::run::ExecuteMode,
    pub verdict: Option<ai_smartness_records::run::VerdictStatus>,
    pub repair_cycles: u32,
    pub iterations: u32,
    pub created_at: chrono::DateTime<chrono::Utc>,
    pub finished_at: Option<chrono::DateTime<chrono::Utc>>,
    /// `person` or an automation's session id.
    pub started_by: String,
}

/// `run list`: the newest first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunList {
    pub runs: Vec<RunSummary>,
}

/// `run start`, `reverify`, `repair`: the run that (re)starts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunStarted {
    pub id: String,
    /// Set for an action on an existing run.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub started: bool,
}

/// `run show`: the run without its events, and how many there are (`export` has them all).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunShown {
    #[serde(flatten)]
    pub run: ai_smartness_records::run::Run,
    pub events_count: usize,
}

/// `watch`: what the connection now follows (a session, a run, or `all`); events follow.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Watching {
    pub watching: String,
}

/// `team_sync`: what the daemon's sender to the team store has done.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TeamSyncState {
    /// Messages the store took since the daemon started.
    pub sent: u64,
    /// Messages of shared threads not in the store yet (at the sender's last look).
    pub pending: usize,
    /// The last failure, while it lasts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// `ui`: where the dashboard listens, the address carrying this start's token.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UiStarted {
    /// Carries this start's token: for the person's terminal, never a process's command line.
    pub url: String,
    /// Carries a code good for one visit within a minute: what a browser is started with.
    pub open_url: String,
    pub port: u16,
    /// Started by this request (false: it was running already).
    pub started: bool,
}

/// One assistant session in `ai sessions`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionRow {
    pub id: String,
    pub name: String,
    pub kind: ai_smartness_records::assistant::types::SessionKind,
    /// In one word: `running`, `queued`, `waiting_validation`, `ended`...
    pub state: String,
    pub automation_id: Option<String>,
    pub trigger: Option<ai_smartness_records::assistant::types::ExecutionTrigger>,
    pub scheduled_execution_time: Option<chrono::DateTime<chrono::Utc>>,
    pub created_at: chrono::DateTime<chrono::Utc>,
    pub updated_at: chrono::DateTime<chrono::Utc>,
    pub end_reason: Option<ai_smartness_records::assistant::types::SessionEndReason>,
    /// How many messages it holds.
    pub messages: usize,
}

/// `sessions`: the most recently active first, the running one and the queue.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionList {
    pub sessions: Vec<SessionRow>,
    pub active: Option<String>,
    pub queue: Vec<String>,
}

/// A round asked for (`chat`, `approve`, `reject`, `answer`, `automation run`): the session,
/// its state, its place in the queue when it waits there; without `follow`, the messages the
/// round added.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RoundHead {
    pub session_id: String,
    pub state: String,
    pub queue_position: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub messages: Option<Vec<ai_smartness_records::assistant::types::SessionMessage>>,
}

/// An automation with its schedule in force: its zone, its next run, its last one (and, for
/// `show`, every run).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AutomationView {
    #[serde(flatten)]
    pub automation: ai_smartness_records::assistant::types::Automation,
    /// The zone its schedule follows: the one given, or the machine's now.
    pub timezone: String,
    /// None when it has no schedule, or one that never fires again.
    pub next_run: Option<NextRun>,
    pub last_run: Option<SessionRow>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runs: Option<Vec<SessionRow>>,
}

/// When an automation runs next; `due` when that time has passed and the run waits to start.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NextRun {
    pub due: bool,
    pub at: chrono::DateTime<chrono::Utc>,
}

/// `automation list`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AutomationList {
    pub automations: Vec<AutomationView>,
}

/// `automation pause|stop|delete`: which it was, and the sessions it ended.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct AutomationEnded {
    pub id: String,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub paused: bool,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub stopped: bool,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub deleted: bool,
    pub sessions_ended: Vec<String>,
}

/// `compact`: where the synthesis was written and how many threads it covers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Compacted {
    pub path: String,
    pub threads: usize,
}

/// `session ID`: a session's transcript, with its state in one word, each message marked
/// with whether the model sees it (audit-only messages and post-texts it never does).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionDetail {
    /// The session; its messages are below, marked.
    #[serde(flatten)]
    pub session: ai_smartness_records::assistant::types::AISession,
    pub state: String,
    pub messages: Vec<TranscriptMessage>,
}

/// A message of a transcript.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TranscriptMessage {
    #[serde(flatten)]
    pub message: ai_smartness_records::assistant::types::SessionMessage,
    /// Whether it is part of what the model is sent.
    pub in_prompt: bool,
}

/// `consolidate`: the merges, splits and retitles made (or, with `dry_run`, planned).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConsolidationReport {
    pub dry_run: bool,
    #[serde(flatten)]
    pub consolidation: ai_smartness_core::memory::consolidate::Consolidation,
    pub elapsed_ms: u64,
}

/// `inject` and `context`: what would be (or was) added to a prompt. `context` is the whole
/// block, ready to inject (empty: nothing); the rest says where it came from and why.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ContextReply {
    pub context: String,
    /// Its size in tokens (characters / 4).
    pub tokens: usize,
    /// Why nothing was looked up (injection off, a subagent's prompt).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skipped: Option<String>,
    /// The `ai ...` command the prompt was, whose output is the context.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cli_command: Option<String>,
    /// What retrieval found and decided, when it ran.
    #[serde(default, flatten, skip_serializing_if = "Option::is_none")]
    pub retrieval: Option<Retrieval>,
    /// User rules the prompt stated and that were saved.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rules_added: Option<usize>,
}

/// `session_start`: the brief (or, after a compaction, the synthesis) a session opens with.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct SessionContext {
    pub context: String,
    pub tokens: usize,
    /// It is the synthesis kept across a compaction.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub synthesis: bool,
}

/// What retrieval found for a prompt and why the memory spoke or not.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Retrieval {
    pub threads: Vec<ThreadHit>,
    /// The stored messages quoted, each with why.
    pub messages: Vec<MessageRef>,
    /// How the prompt's matches stood against the memory.
    pub gate: QueryStats,
    /// Nothing in memory is about the prompt.
    pub abstained: bool,
    /// The gate's evidence and bar.
    pub decision: Gate,
    /// The best message, included or not.
    pub candidate: Option<Candidate>,
}

// The daemon's counters, kept by the daemon and sent as they are in `status` and `health`.

/// Counters shown by `ai status` and `ai health`.
#[derive(Debug, Default, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Stats {
    pub captures_received: u64,
    pub captures_processed: u64,
    pub captures_skipped: u64,
    pub secrets_redacted: u64,
    pub requests: u64,
    pub bad_requests: u64,
    pub last_prune: Option<DateTime<Utc>>,
    pub last_capture: Option<DateTime<Utc>>,
    pub persist_errors: u64,
    pub quarantined_at_start: usize,
    pub indexes_rebuilt_at_start: bool,
    pub reindexing: bool,
    /// When each hook binary last reached the daemon.
    pub hooks: std::collections::BTreeMap<String, DateTime<Utc>>,
    /// Captures the journal could not take (a full disk): `ai health` says so while it lasts.
    pub capture_refusals: CaptureRefusals,
    /// Set while saving the memory fails (a full disk): why, and since when. What could not be
    /// saved stays in memory and in the journal, and is saved at the next flush that works.
    pub save_failing: Option<Refusing>,
    /// Hand-edited files (`config.json`, `user_rules.json`) that are not valid now, by name.
    pub config_problems: std::collections::BTreeMap<String, ConfigProblem>,
}

/// A hand-edited file that does not load: the last valid version stays in force.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConfigProblem {
    pub error: String,
    pub since: DateTime<Utc>,
}

/// Whether the journal currently refuses captures, for `ai health`: set by a failed append,
/// cleared by the next one that succeeds.
#[derive(Debug, Default, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct CaptureRefusals {
    /// Appends that failed since the daemon started.
    pub total: u64,
    /// Set while captures are refused: why, and since when.
    pub refusing: Option<Refusing>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Refusing {
    pub reason: String,
    pub since: DateTime<Utc>,
}

impl CaptureRefusals {
    /// An append failed, for `reason`.
    pub fn failed(&mut self, reason: impl std::fmt::Display, now: DateTime<Utc>) {
        self.total += 1;
        if self.refusing.is_none() {
            self.refusing = Some(Refusing {
                reason: reason.to_string(),
                since: now,
            });
        }
    }

    pub fn succeeded(&mut self) {
        self.refusing = None;
    }
}

/// Counters of the background work, shown by `ai status`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Counters {
    /// Jobs accepted into the queue.
    pub queued: u64,
    /// Jobs skipped because the queue was full (their local results stay).
    pub skipped_queue_full: u64,
    /// Extractions applied to a thread.
    pub extractions: u64,
    /// Extractions that failed or were malformed twice: the local extraction stayed.
    pub extractions_kept_local: u64,
    /// Captures made children of a Glob/Grep result by the LLM.
    pub coherence_children: u64,
    /// Coherence checks asked.
    pub coherence_checks: u64,
    /// Suspended threads reactivated by the LLM.
    pub reactivations: u64,
    /// Reactivation questions asked.
    pub reactivation_checks: u64,
    /// Bridges retyped.
    pub bridges_retyped: u64,
    /// Bridges sent for typing.
    pub bridges_checked: u64,
    /// Syntheses that replaced the local one.
    pub syntheses: u64,
    /// Jobs whose call failed (the local result stayed).
    pub failed: u64,
}

#[cfg(test)]
mod tests {
    //! The wire format is pinned here: scripts read `ai ... --json`, and older clients read
    //! these replies. A key renamed, added or dropped fails a test before it reaches anyone.
    use super::*;

    /// The lines of an event stream that are not events keep their wire form.
    #[test]
    fn stream_lines_keep_their_wire_form() {
        let lagged = serde_json::to_value(RunLine::lagged(3)).unwrap();
        assert_eq!(lagged, serde_json::json!({"type": "lagged", "missed": 3}));
        let refused = StreamNotice::StreamRefused {
            reason: "full".into(),
        };
        assert_eq!(
            serde_json::to_value(&refused).unwrap(),
            serde_json::json!({"event": "stream_refused", "reason": "full"})
        );
        let event = ai_smartness_records::run::RunEvent {
            data: ai_smartness_records::run::RunEventData::Phase {
                phase: ai_smartness_records::run::Phase::Plan,
                status: None,
                message: None,
            },
            timestamp: chrono::Utc::now(),
            run_id: "run_1".into(),
            seq: 1,
        };
        let line = serde_json::to_value(RunLine::Event(event.clone())).unwrap();
        assert_eq!(line, serde_json::to_value(&event).unwrap());
        assert_eq!(
            serde_json::from_value::<RunLine>(line).unwrap(),
            RunLine::Event(event)
        );
    }
    use serde_json::{json, Value};

    fn summary() -> ThreadSummary {
        ThreadSummary {
            header: ThreadHeader {
                id: "thread_20260101_000000_abcd".into(),
                title: "Connection pool timeouts".into(),
                status: "active".into(),
                weight: 0.5,
                origin_type: OriginType::Prompt,
                parent_id: None,
                last_active: "2026-01-01T00:00:00+00:00".into(),
                created_at: "2026-01-01T00:00:00+00:00".into(),
                activation_count: 2,
                summary: "The pool times out.".into(),
                pinned: false,
                never_recall: false,
            },
            messages: 3,
            topics: vec!["pool".into()],
        }
    }

    /// Serializes, compares with the pinned JSON, and reads it back unchanged.
    fn pinned<T>(reply: &T, wire: Value)
    where
        T: Serialize + for<'de> Deserialize<'de> + PartialEq + std::fmt::Debug,
    {
        assert_eq!(serde_json::to_value(reply).unwrap(), wire);
        assert_eq!(&serde_json::from_value::<T>(wire).unwrap(), reply);
    }

    #[test]
    fn thread_listings_and_search_keep_their_keys() {
        let t = json!({
            "id": "thread_20260101_000000_abcd", "title": "Connection pool timeouts",
            "status": "active", "weight": 0.5, "messages": 3, "topics": ["pool"],
            "origin_type": "PROMPT", "parent_id": null,
            "last_active": "2026-01-01T00:00:00+00:00", "created_at": "2026-01-01T00:00:00+00:00",
            "activation_count": 2, "summary": "The pool times out.", "pinned": false,
            "never_recall": false,
        });
        pinned(
            &ThreadList {
                total: 7,
                threads: vec![summary()],
                suspended: 2,
            },
            json!({"total": 7, "threads": [t.clone()], "suspended": 2}),
        );
        let mut hit = t;
        hit["score"] = json!(0.812);
        pinned(
            &SearchResults {
                query: "pool".into(),
                results: vec![SearchHit {
                    thread: summary(),
                    score: 0.812,
                }],
                team: None,
            },
            json!({"query": "pool", "results": [hit]}),
        );
    }

    #[test]
    fn small_replies_keep_their_keys() {
        pinned(
            &Captured {
                queued: true,
                seq: Some(4),
                skipped: None,
            },
            json!({"queued": true, "seq": 4}),
        );
        pinned(
            &Captured {
                queued: false,
                seq: None,
                skipped: Some("too short".into()),
            },
            json!({"queued": false, "skipped": "too short"}),
        );
        pinned(
            &Synced {
                processed: 9,
                saved: true,
            },
            json!({"processed": 9, "saved": true}),
        );
        pinned(&Stopping { stopping: true }, json!({"stopping": true}));
        pinned(
            &Edited {
                id: "t".into(),
                action: ai_smartness_proto::protocol::ThreadAction::NeverRecall,
            },
            json!({"id": "t", "action": "never_recall"}),
        );
        pinned(
            &ModeReply {
                mode: Mode::Heavy,
                quota: 100,
                active_threads: 12,
                suspended: None,
            },
            json!({"mode": "heavy", "quota": 100, "active_threads": 12}),
        );
        pinned(
            &ModeReply {
                mode: Mode::Light,
                quota: 15,
                active_threads: 15,
                suspended: Some(3),
            },
            json!({"mode": "light", "quota": 15, "active_threads": 15, "suspended": 3}),
        );
        pinned(
            &RulesReply {
                rules: vec!["always answer in English".into()],
            },
            json!({"rules": ["always answer in English"]}),
        );
    }

    #[test]
    fn bridges_keep_their_keys() {
        let b = BridgeView {
            id: "bridge_x".into(),
            source_id: "a".into(),
            source_title: "A".into(),
            target_id: "b".into(),
            target_title: "B".into(),
            relation_type: BridgeType::ChildOf,
            status: "weak".into(),
            weight: 0.25,
            confidence: 0.9,
            shared_concepts: vec!["pool".into()],
            reason: "shared topics".into(),
            propagated_from: None,
            propagation_depth: 0,
            use_count: 1,
            last_used: None,
            created_at: "2026-01-01T00:00:00+00:00".into(),
        };
        pinned(
            &BridgeList {
                total: 1,
                bridges: vec![b],
            },
            json!({"total": 1, "bridges": [{
                "id": "bridge_x", "source_id": "a", "source_title": "A", "target_id": "b",
                "target_title": "B", "relation_type": "CHILD_OF", "status": "weak",
                "weight": 0.25, "confidence": 0.9, "shared_concepts": ["pool"],
                "reason": "shared topics", "propagated_from": null, "propagation_depth": 0,
                "use_count": 1, "last_used": null, "created_at": "2026-01-01T00:00:00+00:00",
            }]}),
        );
    }

    #[test]
    fn context_replies_keep_their_keys() {
        pinned(
            &ContextReply::default(),
            json!({"context": "", "tokens": 0}),
        );
        pinned(
            &ContextReply {
                skipped: Some("injection is off".into()),
                ..ContextReply::default()
            },
            json!({"context": "", "tokens": 0, "skipped": "injection is off"}),
        );
        let spoke = ContextReply {
            context: "<ai-smartness-memory>x</ai-smartness-memory>".into(),
            tokens: 11,
            retrieval: Some(Retrieval {
                threads: Vec::new(),
                messages: Vec::new(),
                gate: QueryStats::default(),
                abstained: false,
                decision: Gate::default(),
                candidate: None,
            }),
            rules_added: Some(0),
            ..ContextReply::default()
        };
        let wire = serde_json::to_value(&spoke).unwrap();
        let mut keys: Vec<&str> = wire
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        keys.sort_unstable();
        assert_eq!(
            keys,
            [
                "abstained",
                "candidate",
                "context",
                "decision",
                "gate",
                "messages",
                "rules_added",
                "threads",
                "tokens"
            ]
        );
        assert_eq!(wire["candidate"], Value::Null);
        // What a hook reads of it (proto's view, which the hooks compile against).
        let seen: ai_smartness_proto::protocol::InjectedContext =
            serde_json::from_value(wire.clone()).unwrap();
        assert_eq!(seen.context.as_deref(), Some(spoke.context.as_str()));
        assert_eq!(
            seen.decision,
            Some(ai_smartness_proto::protocol::GateDecision::default())
        );
        assert_eq!(serde_json::from_value::<ContextReply>(wire).unwrap(), spoke);
        pinned(
            &SessionContext {
                context: "brief".into(),
                tokens: 2,
                synthesis: true,
            },
            json!({"context": "brief", "tokens": 2, "synthesis": true}),
        );
        pinned(
            &SessionContext::default(),
            json!({"context": "", "tokens": 0}),
        );
    }

    /// The keys `ai status --json` and `ai health --json` have always had.
    #[test]
    fn status_and_health_keep_their_keys() {
        let keys = |v: Value| {
            let mut k: Vec<String> = v.as_object().unwrap().keys().cloned().collect();
            k.sort_unstable();
            k
        };
        assert_eq!(
            keys(serde_json::to_value(StatusReply::default()).unwrap()),
            [
                "assistant",
                "bridges",
                "embedder",
                "extractor",
                "journal_pending",
                "llm",
                "mode",
                "pid",
                "project",
                "project_name",
                "protocol",
                "quota",
                "runs",
                "stats",
                "threads",
                "uptime_secs",
                "version"
            ]
        );
        assert_eq!(
            keys(serde_json::to_value(HealthReply::default()).unwrap()),
            [
                "bad_requests",
                "bridge_ratio",
                "captures",
                "config_problems",
                "continuation_rate",
                "daemon",
                "embedder",
                "embedding_coverage",
                "extractor",
                "hooks",
                "journal_pending",
                "last_prune",
                "llm",
                "log",
                "persist_errors",
                "pid",
                "quarantined_files",
                "reindexing",
                "saving",
                "threads"
            ]
        );
        // The LLM as seen without one: the provider and what is in use, nothing else.
        pinned(
            &LlmView::named("none", "local fallback"),
            json!({"provider": "none", "in_use": "local fallback"}),
        );
    }

    #[test]
    fn run_replies_keep_their_keys() {
        pinned(
            &RunStarted {
                id: "run_x".into(),
                started: false,
            },
            json!({"id": "run_x"}),
        );
        pinned(
            &RunStarted {
                id: "run_x".into(),
                started: true,
            },
            json!({"id": "run_x", "started": true}),
        );
        let at = chrono::DateTime::parse_from_rfc3339("2026-03-01T10:00:00Z")
            .unwrap()
            .with_timezone(&chrono::Utc);
        pinned(
            &RunList {
                runs: vec![RunSummary {
                    id: "run_x".into(),
                    task: "check".into(),
                    phase: ai_smartness_records::run::Phase::Complete,
                    mode: ai_smartness_records::run::ExecuteMode::Sandbox,
                    verdict: Some(ai_smartness_records::run::VerdictStatus::Pass),
                    repair_cycles: 1,
                    iterations: 4,
                    created_at: at,
                    finished_at: None,
                    started_by: "person".into(),
                }],
            },
            json!({"runs": [{
                "id": "run_x", "task": "check", "phase": "complete", "mode": "sandbox",
                "verdict": "PASS", "repair_cycles": 1, "iterations": 4,
                "created_at": "2026-03-01T10:00:00Z", "finished_at": null, "started_by": "person",
            }]}),
        );
    }

    /// An automation's view names its zone once (the one in force), beside its own fields.
    #[test]
    fn assistant_replies_keep_their_keys() {
        let at = chrono::DateTime::parse_from_rfc3339("2026-03-01T09:00:00Z")
            .unwrap()
            .with_timezone(&chrono::Utc);
        let view = AutomationView {
            automation: ai_smartness_records::assistant::types::Automation {
                id: "automation_x".into(),
                name: "Daily".into(),
                prompt: "Sum up.".into(),
                seed_session_id: None,
                schedule: Some("0 9 * * *".into()),
                timezone: None,
                enabled: true,
                paused: false,
                created_at: at,
                last_trigger: None,
                last_execution_at: None,
                last_scheduled_time: None,
                require_validation: false,
            },
            timezone: "Europe/Paris".into(),
            next_run: Some(NextRun { due: false, at }),
            last_run: None,
            runs: None,
        };
        let wire = serde_json::to_value(&view).unwrap();
        assert_eq!(wire["timezone"], "Europe/Paris");
        assert_eq!(
            wire["next_run"],
            json!({"due": false, "at": "2026-03-01T09:00:00Z"})
        );
        assert_eq!(wire["last_run"], Value::Null);
        assert_eq!(wire["schedule"], "0 9 * * *");
        assert!(wire.get("runs").is_none());
        assert_eq!(
            serde_json::from_value::<AutomationView>(wire).unwrap(),
            view
        );
        pinned(
            &AutomationEnded {
                id: "automation_x".into(),
                paused: true,
                sessions_ended: vec!["session_y".into()],
                ..AutomationEnded::default()
            },
            json!({"id": "automation_x", "paused": true, "sessions_ended": ["session_y"]}),
        );
        pinned(
            &RoundHead {
                session_id: "session_y".into(),
                state: "queued".into(),
                queue_position: Some(2),
                messages: None,
            },
            json!({"session_id": "session_y", "state": "queued", "queue_position": 2}),
        );
        pinned(
            &Watching {
                watching: "all".into(),
            },
            json!({"watching": "all"}),
        );
    }
}
