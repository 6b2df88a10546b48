//! The socket protocol between the daemon and its clients (the `ai` CLI and the hook binaries):
//! one JSON object per line each way. This module uses only std, serde and serde_json so the hook
//! binaries can include it without pulling tokio or ONNX Runtime.
//!
//! A request is either a capture (`{"tool": "Bash", "content": "..."}`) or a
//! command object with exactly one key naming it: `{"ping": true}`, `{"threads": {"status":
//! "all"}}`. Every request is validated strictly: unknown fields and wrong types are refused.

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};
use std::fmt;

/// Bumped whenever a request or reply changes shape; written in the pid file and in `ping`.
pub const PROTOCOL_VERSION: u32 = 1;

/// A request line longer than this is refused (and only its connection pays).
pub const MAX_FRAME_BYTES: usize = 1 << 20;

/// `true` and nothing else: the value of argument-less commands like `{"ping": true}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Flag;

impl Serialize for Flag {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bool(true)
    }
}

impl<'de> Deserialize<'de> for Flag {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match bool::deserialize(d)? {
            true => Ok(Flag),
            false => Err(serde::de::Error::custom("expected `true`")),
        }
    }
}

/// One captured piece of work, as a hook or `ai capture` / `ai import` sends it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CaptureRequest {
    /// Claude Code's tool name (`Bash`, `Read`, ...), `UserPrompt` or `Response`.
    pub tool: String,
    pub content: String,
    /// When it happened (RFC 3339); the daemon's clock when absent. Imports carry their own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at: Option<String>,
    /// `user` or `assistant`; derived from the tool when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// Kept on the stored message (file path, dia_id of an import, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
    /// The hook binary that sent it (`ai-capture`), for `ai health`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hook: Option<String>,
}

/// `{"inject": {...}}`: what `ai-inject` asks at `UserPromptSubmit`. The reply's `context` is
/// the text to add (empty when nothing is relevant); the prompt itself is then captured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InjectRequest {
    pub prompt: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// Token budget of the context (default from config, 1,200).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget: Option<usize>,
    /// The subagent whose prompt this is (none for the person's own prompts): subagents get
    /// no memory unless `inject.subagents` is on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// Injection is turned off for this session (`AI_SMARTNESS_INJECT=off`): the prompt is
    /// remembered, nothing is injected.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub off: bool,
}

/// `{"context": {...}}`: what inject would add for this prompt (`ai context`), with no side
/// effect: nothing captured, no rule saved, no thread reactivated or boosted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ContextRequest {
    pub prompt: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget: Option<usize>,
}

/// `{"session_start": {...}}`: `ai-inject --session-start` at `SessionStart`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SessionStartRequest {
    /// `startup`, `resume`, `clear` or `compact` (then the synthesis is injected).
    pub source: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
}

/// `{"compact": {...}}`: `ai-compact` at `PreCompact`: write the synthesis.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CompactRequest {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// `manual` or `auto`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trigger: Option<String>,
}

/// `{"threads": {...}}`: list threads.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ThreadsQuery {
    /// Which threads: `active` when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<StatusFilter>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<usize>,
}

/// `{"thread": {"id": ...}}`, `{"bridge": {"id": ...}}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IdQuery {
    pub id: String,
}

/// What a person can do to a thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ThreadAction {
    Rename,
    Suspend,
    Reactivate,
    Archive,
    Delete,
    /// Always a candidate for recall, never suspended by decay or the quota.
    Pin,
    Unpin,
    /// Kept and searchable, never injected.
    NeverRecall,
    AllowRecall,
    /// Shared with the team store, whatever the project's setting.
    Share,
    /// Never leaves this machine, whatever the project's setting.
    Private,
    /// Back to the project's setting (`team.share`).
    ProjectSharing,
}

impl ThreadAction {
    /// The name on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            ThreadAction::Rename => "rename",
            ThreadAction::Suspend => "suspend",
            ThreadAction::Reactivate => "reactivate",
            ThreadAction::Archive => "archive",
            ThreadAction::Delete => "delete",
            ThreadAction::Pin => "pin",
            ThreadAction::Unpin => "unpin",
            ThreadAction::NeverRecall => "never_recall",
            ThreadAction::AllowRecall => "allow_recall",
            ThreadAction::Share => "share",
            ThreadAction::Private => "private",
            ThreadAction::ProjectSharing => "project_sharing",
        }
    }
}

/// `{"thread_edit": {"id": ..., "action": "rename", "title": ...}}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ThreadEdit {
    pub id: String,
    pub action: ThreadAction,
    /// Required by `rename`, refused otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
}

/// What a person can do to a bridge.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BridgeAction {
    /// Mark it INVALID: kept for audit, never traversed.
    Invalidate,
    /// Back to ACTIVE/WEAK by weight.
    Validate,
    Delete,
}

impl BridgeAction {
    /// The name on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            BridgeAction::Invalidate => "invalidate",
            BridgeAction::Validate => "validate",
            BridgeAction::Delete => "delete",
        }
    }
}

/// `{"bridge_edit": {"id": ..., "action": "delete"}}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BridgeEdit {
    pub id: String,
    pub action: BridgeAction,
}

/// `{"bridges": {"thread": ...}}`: list bridges, all or those touching one thread.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BridgesQuery {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thread: Option<String>,
}

/// `{"prune": {"threads": true, "bridges": true}}`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PruneRequest {
    #[serde(default)]
    pub threads: bool,
    #[serde(default)]
    pub bridges: bool,
}

/// `{"consolidate": {"dry_run": true}}`: tidy the threads now (merge, split, retitle), or only
/// say what that would do.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConsolidateRequest {
    #[serde(default)]
    pub dry_run: bool,
}

/// `{"search": {"query": ..., "limit": 10}}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SearchQuery {
    pub query: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<usize>,
    /// Also the team store's messages (when the project is in a team).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub team: bool,
}

/// Which threads a query looks in, by status.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StatusFilter {
    Active,
    Suspended,
    Archived,
    /// Active and suspended: everything but what a person put away.
    #[default]
    Live,
    All,
}

impl StatusFilter {
    /// The name on the wire and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            StatusFilter::Active => "active",
            StatusFilter::Suspended => "suspended",
            StatusFilter::Archived => "archived",
            StatusFilter::Live => "live",
            StatusFilter::All => "all",
        }
    }
}

impl std::str::FromStr for StatusFilter {
    type Err = UnknownStatus;

    fn from_str(s: &str) -> Result<Self, UnknownStatus> {
        [
            StatusFilter::Active,
            StatusFilter::Suspended,
            StatusFilter::Archived,
            StatusFilter::Live,
            StatusFilter::All,
        ]
        .into_iter()
        .find(|f| f.name() == s)
        .ok_or_else(|| UnknownStatus(s.to_string()))
    }
}

/// A status filter named as no [`StatusFilter`] is; holds the name as given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownStatus(pub String);

impl fmt::Display for UnknownStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unknown status `{}` (active, suspended, archived, live, all)",
            self.0
        )
    }
}

impl std::error::Error for UnknownStatus {}

/// `{"recall": {"query": ..., "limit": 8, "since": "2026-11-01", "status": "live"}}`: the
/// stored messages most relevant to a query, best first, each with its thread (what the MCP
/// `search` tool asks). Nothing is changed: no boost, no reactivation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecallQuery {
    pub query: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<usize>,
    /// Only messages from then on: RFC 3339, or a day (`YYYY-MM-DD`, from its start, UTC).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub since: Option<String>,
    /// Only messages before then: RFC 3339, or a day (`YYYY-MM-DD`, up to its end, UTC).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub until: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<StatusFilter>,
}

/// `{"timeline": {...}}`: stored messages in time order, across threads. With `around`, the
/// messages just before and after that one; else those of the period, the newest `limit`
/// of them (all of time when no period is given: the latest activity).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TimelineQuery {
    /// A message id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub around: Option<String>,
    /// As in [`RecallQuery::since`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub since: Option<String>,
    /// As in [`RecallQuery::until`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub until: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<usize>,
}

/// `{"remember": {"text": ..., "title": ...}}`: a note someone wants kept, stored as a thread
/// of its own (journaled and redacted like every capture). The reply comes once it is placed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RememberRequest {
    pub text: String,
    /// The thread's title (a person's: never rewritten); built from the text when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
}

/// `{"thread": {"id": ..., "offset": 0, "limit": 20}}`: one thread; with `offset` or `limit`,
/// a page of its messages (oldest first) and their total.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ThreadQuery {
    pub id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offset: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<usize>,
}

/// `{"mode": {"set": "heavy"}}`; without `set`, just report.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModeRequest {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub set: Option<String>,
}

/// `{"rules": {}}` lists, `{"rules": {"add": "..."}}`, `{"rules": {"remove": 2}}` (1-based).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RulesRequest {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub add: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remove: Option<usize>,
}

/// `{"chat": {"message": ..., "session": ..., "follow": true}}`: a message to the memory
/// assistant, in a new chat or an existing one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChatSend {
    pub message: String,
    /// Continue this chat; none starts a new one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// Session level of the validation hierarchy (new chats only): every action waits for a
    /// person.
    #[serde(default)]
    pub require_validation: bool,
    /// After the reply line, stream the session's events as JSON lines until the round ends
    /// (`{"event": "round_ended", ...}`).
    #[serde(default)]
    pub follow: bool,
}

/// `{"sessions": {"kind": "CHAT", "limit": 20}}`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SessionsQuery {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<usize>,
}

/// `{"approve": {"session": ...}}`, `{"reject": {"session": ..., "feedback": ...}}`,
/// `{"answer": {"session": ..., "choice": ...}}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SessionReply {
    pub session: String,
    /// `reject`: why, for the model. `answer`: the option (its number or its text).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub feedback: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub choice: Option<String>,
    /// As in [`ChatSend::follow`].
    #[serde(default)]
    pub follow: bool,
}

/// What can be done to automations.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AutomationAction {
    Create,
    List,
    Show,
    Run,
    Pause,
    Stop,
    Enable,
    Disable,
    Delete,
}

/// What a hook reads of the `inject` and `session_start` replies: the context to add, and the
/// decision for its log. The daemon's reply has more (the threads and messages quoted, why
/// each was); a hook ignores the rest.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct InjectedContext {
    /// The block to add to the prompt; empty or absent: nothing.
    #[serde(default)]
    pub context: Option<String>,
    /// Why nothing was looked up (injection off, a subagent's prompt).
    #[serde(default)]
    pub skipped: Option<String>,
    /// Whether the memory spoke, and on what evidence.
    #[serde(default)]
    pub decision: Option<GateDecision>,
}

/// The relevance gate's verdict as a hook logs it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct GateDecision {
    #[serde(default)]
    pub abstained: bool,
    #[serde(default)]
    pub evidence: f64,
    #[serde(default)]
    pub bar: f64,
}

/// `{"automation": {"action": "create", "name": ..., "prompt": ..., "schedule": "0 9 * * 1"}}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AutomationRequest {
    pub action: AutomationAction,
    /// Every action but `create` and `list`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt: Option<String>,
    /// A 5-field cron expression or `@hourly`-style name; none for manual runs only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schedule: Option<String>,
    /// The IANA time zone the schedule follows (`Europe/Paris`); none means the machine's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timezone: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub require_validation: Option<bool>,
}

/// `{"watch": {"session": ...}}`: after an ok line, every assistant event (of one session,
/// or all) as a JSON line until the client hangs up. `{"watch": {"run": ...}}`: a workflow
/// run's events, the stored ones first, until the run is over (then the connection closes).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WatchRequest {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<String>,
}

/// `{"ui": {}}`: start the dashboard (or find the one running) and say where it is.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UiRequest {}

/// What can be done with workflow runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunAction {
    Start,
    List,
    Show,
    /// Verification again, without executing again.
    Reverify,
    /// A repair cycle even after a PASS.
    Repair,
    /// The complete report.
    Export,
}

/// `{"run": {"action": "start", "task": ..., "sandbox": true, "write": true}}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunRequest {
    pub action: RunAction,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<String>,
    /// `start`: run in a throwaway copy (else the configured mode).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<bool>,
    /// `start`: allow write_file (else the configured default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub write: Option<bool>,
}

/// Every request that is not a capture: an object with exactly one key.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Command {
    Ping(Flag),
    Status(Flag),
    Health(Flag),
    Shutdown(Flag),
    /// Recompute every embedding.
    Reindex(Flag),
    /// Answer once every capture journaled before this request is processed and saved, and the
    /// units of those captures have their vectors: nothing is left in flight.
    Sync(Flag),
    /// Answer once every capture journaled before this request is placed and saved; the vectors
    /// of their units may still be on their way (`ai import` goes on from there).
    Placed(Flag),
    Threads(ThreadsQuery),
    Thread(ThreadQuery),
    ThreadEdit(ThreadEdit),
    Bridges(BridgesQuery),
    Bridge(IdQuery),
    BridgeEdit(BridgeEdit),
    Prune(PruneRequest),
    Consolidate(ConsolidateRequest),
    Search(SearchQuery),
    Recall(RecallQuery),
    Timeline(TimelineQuery),
    Remember(RememberRequest),
    Mode(ModeRequest),
    Rules(RulesRequest),
    Inject(InjectRequest),
    Context(ContextRequest),
    SessionStart(SessionStartRequest),
    Compact(CompactRequest),
    Chat(ChatSend),
    Sessions(SessionsQuery),
    Session(IdQuery),
    Approve(SessionReply),
    Reject(SessionReply),
    Answer(SessionReply),
    Automation(AutomationRequest),
    Watch(WatchRequest),
    Run(RunRequest),
    Ui(UiRequest),
    /// What the sender to the team store has sent, what waits, its last failure.
    TeamSync(Flag),
}

#[derive(Debug, Clone, PartialEq)]
pub enum Request {
    Capture(CaptureRequest),
    Command(Command),
}

impl Serialize for Request {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Request::Capture(c) => c.serialize(s),
            Request::Command(c) => c.serialize(s),
        }
    }
}

/// Why a request line was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProtocolError {
    TooLarge { bytes: usize },
    NotUtf8,
    Invalid(String),
}

impl fmt::Display for ProtocolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProtocolError::TooLarge { bytes } => {
                write!(
                    f,
                    "request of {bytes} bytes exceeds the {MAX_FRAME_BYTES}-byte limit"
                )
            }
            ProtocolError::NotUtf8 => f.write_str("request is not UTF-8"),
            ProtocolError::Invalid(m) => write!(f, "invalid request: {m}"),
        }
    }
}

impl std::error::Error for ProtocolError {}

impl ProtocolError {
    /// The machine-readable code carried in the error reply.
    pub fn code(&self) -> ErrorCode {
        match self {
            ProtocolError::TooLarge { .. } => ErrorCode::FrameTooLarge,
            ProtocolError::NotUtf8 | ProtocolError::Invalid(_) => ErrorCode::BadRequest,
        }
    }
}

/// Parse one request line (without its newline).
pub fn parse_request(line: &[u8]) -> Result<Request, ProtocolError> {
    if line.len() > MAX_FRAME_BYTES {
        return Err(ProtocolError::TooLarge { bytes: line.len() });
    }
    let text = std::str::from_utf8(line).map_err(|_| ProtocolError::NotUtf8)?;
    let value: Value =
        serde_json::from_str(text).map_err(|e| ProtocolError::Invalid(e.to_string()))?;
    let Value::Object(map) = &value else {
        return Err(ProtocolError::Invalid("expected a JSON object".into()));
    };
    if map.contains_key("tool") {
        return serde_json::from_value(value)
            .map(Request::Capture)
            .map_err(|e| ProtocolError::Invalid(format!("capture: {e}")));
    }
    if map.len() != 1 {
        return Err(ProtocolError::Invalid(format!(
            "expected exactly one command key, found {}",
            map.len()
        )));
    }
    serde_json::from_value(value)
        .map(Request::Command)
        .map_err(|e| ProtocolError::Invalid(e.to_string()))
}

/// What went wrong, as a program matches on it: the `code` of an error reply, a snake_case
/// string on the wire (`bad_request`, `not_found`, ...), stable across versions.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ErrorCode {
    /// The request is malformed or asks for something impossible; sending it again will not help.
    BadRequest,
    /// The request line is longer than [`MAX_FRAME_BYTES`].
    FrameTooLarge,
    /// The thread, bridge, run or session named does not exist.
    NotFound,
    /// The change collides with the current state (a run already going, a stale edit).
    Conflict,
    /// Not allowed from where it came (a path outside the project, a refused action).
    Forbidden,
    /// A bounded queue or slot is full: try again later.
    Busy,
    /// The daemon is stopping and takes no new work.
    ShuttingDown,
    /// The store could not read or write.
    Storage,
    /// The capture journal could not write: nothing was acknowledged.
    Journal,
    /// The embedder failed.
    Embedding,
    /// The configuration is invalid.
    Config,
    /// The request needs an LLM and none is configured.
    NoLlm,
    /// The dashboard could not start.
    Ui,
    /// A fault of the daemon's own.
    Internal,
    /// A code this build does not know (a newer daemon's), kept as it was sent.
    Other(String),
}

impl ErrorCode {
    /// Every known code, for tests and documentation.
    pub const KNOWN: [ErrorCode; 14] = [
        ErrorCode::BadRequest,
        ErrorCode::FrameTooLarge,
        ErrorCode::NotFound,
        ErrorCode::Conflict,
        ErrorCode::Forbidden,
        ErrorCode::Busy,
        ErrorCode::ShuttingDown,
        ErrorCode::Storage,
        ErrorCode::Journal,
        ErrorCode::Embedding,
        ErrorCode::Config,
        ErrorCode::NoLlm,
        ErrorCode::Ui,
        ErrorCode::Internal,
    ];

    /// The code as it is written on the wire.
    pub fn as_str(&self) -> &str {
        match self {
            ErrorCode::BadRequest => "bad_request",
            ErrorCode::FrameTooLarge => "frame_too_large",
            ErrorCode::NotFound => "not_found",
            ErrorCode::Conflict => "conflict",
            ErrorCode::Forbidden => "forbidden",
            ErrorCode::Busy => "busy",
            ErrorCode::ShuttingDown => "shutting_down",
            ErrorCode::Storage => "storage",
            ErrorCode::Journal => "journal",
            ErrorCode::Embedding => "embedding",
            ErrorCode::Config => "config",
            ErrorCode::NoLlm => "no_llm",
            ErrorCode::Ui => "ui",
            ErrorCode::Internal => "internal",
            ErrorCode::Other(code) => code,
        }
    }
}

impl From<&str> for ErrorCode {
    fn from(code: &str) -> Self {
        ErrorCode::KNOWN
            .into_iter()
            .find(|known| known.as_str() == code)
            .unwrap_or_else(|| ErrorCode::Other(code.to_string()))
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for ErrorCode {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for ErrorCode {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let code = std::borrow::Cow::<str>::deserialize(deserializer)?;
        Ok(ErrorCode::from(code.as_ref()))
    }
}

/// The error part of a reply.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorBody {
    pub code: ErrorCode,
    pub message: String,
}

/// One reply line. `ping` answers `{"ok": true, "pong": true, "pid": N, ...}` as the seed says.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Response {
    pub ok: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pong: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorBody>,
}

impl Response {
    /// A typed reply as the result (the daemon's `replies` module); one that cannot be serialized (it never
    /// should) is an internal error, not a panic.
    pub fn reply<T: Serialize>(reply: &T) -> Self {
        match serde_json::to_value(reply) {
            Ok(v) => Response::ok(v),
            Err(e) => Response::error(ErrorCode::Internal, format!("reply not serializable: {e}")),
        }
    }

    pub fn ok(result: Value) -> Self {
        Response {
            ok: true,
            pong: None,
            pid: None,
            protocol: None,
            result: Some(result),
            error: None,
        }
    }

    pub fn pong(pid: u32) -> Self {
        Response {
            ok: true,
            pong: Some(true),
            pid: Some(pid),
            protocol: Some(PROTOCOL_VERSION),
            result: None,
            error: None,
        }
    }

    pub fn error(code: ErrorCode, message: impl Into<String>) -> Self {
        Response {
            ok: false,
            pong: None,
            pid: None,
            protocol: None,
            result: None,
            error: Some(ErrorBody {
                code,
                message: message.into(),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The codes on the wire are a contract with every client (hooks of another version, the
    /// dashboard, scripts): their spelling is pinned here.
    #[test]
    fn error_codes_keep_their_wire_spelling() {
        let wire: Vec<String> = ErrorCode::KNOWN
            .iter()
            .map(|c| serde_json::to_string(c).unwrap())
            .collect();
        assert_eq!(
            wire,
            [
                "\"bad_request\"",
                "\"frame_too_large\"",
                "\"not_found\"",
                "\"conflict\"",
                "\"forbidden\"",
                "\"busy\"",
                "\"shutting_down\"",
                "\"storage\"",
                "\"journal\"",
                "\"embedding\"",
                "\"config\"",
                "\"no_llm\"",
                "\"ui\"",
                "\"internal\"",
            ]
        );
        for code in ErrorCode::KNOWN {
            let back: ErrorCode =
                serde_json::from_str(&serde_json::to_string(&code).unwrap()).unwrap();
            assert_eq!(back, code);
        }
        let reply = Response::error(ErrorCode::NotFound, "no thread t1");
        assert_eq!(
            serde_json::to_string(&reply).unwrap(),
            r#"{"ok":false,"error":{"code":"not_found","message":"no thread t1"}}"#
        );
        // A newer daemon's code is kept, not refused.
        let newer: Response =
            serde_json::from_str(r#"{"ok":false,"error":{"code":"quota","message":"m"}}"#).unwrap();
        assert_eq!(newer.error.unwrap().code, ErrorCode::Other("quota".into()));
    }

    #[test]
    fn seed_requests_parse() {
        assert_eq!(
            parse_request(br#"{"ping": true}"#).unwrap(),
            Request::Command(Command::Ping(Flag))
        );
        let Request::Capture(c) = parse_request(br#"{"tool": "Bash", "content": "ls"}"#).unwrap()
        else {
            panic!("not a capture")
        };
        assert_eq!(c.tool, "Bash");
        assert!(matches!(
            parse_request(br#"{"threads": {"status": "all"}}"#).unwrap(),
            Request::Command(Command::Threads(ThreadsQuery {
                status: Some(StatusFilter::All),
                ..
            }))
        ));
        // The wire keeps its words; a status it does not know is refused, not read as another.
        let q = ThreadsQuery {
            status: Some(StatusFilter::Suspended),
            limit: None,
        };
        assert_eq!(
            serde_json::to_string(&q).unwrap(),
            r#"{"status":"suspended"}"#
        );
        assert!(parse_request(br#"{"threads": {"status": "sleeping"}}"#).is_err());
        assert_eq!("live".parse::<StatusFilter>(), Ok(StatusFilter::Live));
        assert!("sleeping"
            .parse::<StatusFilter>()
            .unwrap_err()
            .to_string()
            .contains("sleeping"));
    }

    #[test]
    fn strictness() {
        for bad in [
            &br#"{"ping": false}"#[..],
            br#"{"ping": true, "status": true}"#,
            br#"{"tool": "Bash", "content": "x", "extra": 1}"#,
            br#"{"tool": 3, "content": "x"}"#,
            br#"{"threads": {"statuz": "all"}}"#,
            br#"{"nope": true}"#,
            br#"[1,2]"#,
            b"not json",
            b"\xff\xfe",
        ] {
            assert!(
                parse_request(bad).is_err(),
                "{}",
                String::from_utf8_lossy(bad)
            );
        }
        let huge = vec![b' '; MAX_FRAME_BYTES + 1];
        assert!(matches!(
            parse_request(&huge),
            Err(ProtocolError::TooLarge { .. })
        ));
    }

    #[test]
    fn requests_round_trip() {
        let r = Request::Command(Command::ThreadEdit(ThreadEdit {
            id: "thread_x".into(),
            action: ThreadAction::Rename,
            title: Some("New".into()),
        }));
        let line = serde_json::to_vec(&r).unwrap();
        assert_eq!(parse_request(&line).unwrap(), r);
    }
}
