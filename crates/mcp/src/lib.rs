//! `ai mcp`: the memory as tools a model calls when it decides to (the Model Context Protocol,
//! over stdio). Injection pushes what is surely relevant before each prompt; these tools let
//! the model pull the rest: search, read a thread, look around in time, keep a note, forget.
//!
//! The server holds no model and no memory of its own: every tool call is one request to the
//! project's daemon over its socket (started when down), and every answer is text bounded in
//! tokens, small by default (progressive disclosure: a search lists snippets and ids, a thread
//! is read a page at a time).

use ai_smartness_proto::client;

mod link;
mod render;
mod stdio;

pub use link::{DaemonLink, LinkError};

use ai_smartness_proto::paths::ProjectPaths;
use ai_smartness_proto::protocol::{
    Command, ContextRequest, ErrorCode, RecallQuery, RememberRequest, StatusFilter, ThreadAction,
    ThreadEdit, ThreadQuery, TimelineQuery,
};
use ai_smartness_replies::{
    ContextReply, Edited, RecallReply, Remembered, ThreadDetail, TimelineReply,
};
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResult, ContentBlock, Implementation, ServerCapabilities, ServerConfig};
use rmcp::{schemars, tool, tool_handler, tool_router, ServerHandler, ServiceExt};
use serde::Deserialize;
use std::time::Duration;

/// `remember` waits for its note to be placed in a thread (the daemon bounds that wait).
const REMEMBER_TIMEOUT: Duration = Duration::from_secs(15);
/// What an unattended Claude Code (print mode, the SDKs, a CI action) says it is.
const UNATTENDED_ENTRYPOINTS: [&str; 4] =
    ["sdk-cli", "sdk-ts", "sdk-py", "claude-code-github-action"];

/// Serves the MCP tools on stdin/stdout until the client closes them.
pub fn run(paths: ProjectPaths) -> anyhow::Result<()> {
    let ai = std::env::current_exe()?;
    // One thread is plenty: each call waits on the daemon, which does the work.
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    rt.block_on(async move {
        let tools = MemoryTools::new(DaemonLink::new(paths, ai));
        let transport = stdio::with_parse_errors(tokio::io::stdin(), tokio::io::stdout());
        let service = tools.serve(transport).await?;
        service.waiting().await?;
        Ok(())
    })
}

/// The tools, over one project's daemon.
#[derive(Debug, Clone)]
pub struct MemoryTools {
    /// The project's daemon: every tool is one request to it.
    link: DaemonLink,
    /// Routes `tools/call` to the methods below (built by `#[tool_router]`).
    tool_router: ToolRouter<MemoryTools>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchArgs {
    /// What to look for, in plain words (a question works: "why did the export drop rows?").
    pub query: String,
    /// How many results (1 to 50, default 8). Each is a short snippet; read more with
    /// get_thread or timeline.
    #[serde(default)]
    pub limit: Option<usize>,
    /// Only what was recorded from then on: a day (YYYY-MM-DD) or an RFC 3339 time.
    #[serde(default)]
    pub since: Option<String>,
    /// Only what was recorded before then: a day (YYYY-MM-DD, that day included) or an RFC
    /// 3339 time.
    #[serde(default)]
    pub until: Option<String>,
    /// Threads to look in (default: live, that is active and suspended).
    #[serde(default)]
    pub status: Option<ThreadScope>,
}

/// Which threads a search looks in.
#[derive(Debug, Clone, Copy, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ThreadScope {
    /// Active and suspended threads: everything but what a person archived.
    Live,
    Active,
    Suspended,
    Archived,
    All,
}

impl From<ThreadScope> for StatusFilter {
    fn from(s: ThreadScope) -> StatusFilter {
        match s {
            ThreadScope::Live => StatusFilter::Live,
            ThreadScope::Active => StatusFilter::Active,
            ThreadScope::Suspended => StatusFilter::Suspended,
            ThreadScope::Archived => StatusFilter::Archived,
            ThreadScope::All => StatusFilter::All,
        }
    }
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GetThreadArgs {
    /// A thread id (thread_...), as search, recent or timeline list them.
    pub id: String,
    /// The first message to show, 0 being the oldest (default 0).
    #[serde(default)]
    pub offset: Option<usize>,
    /// How many messages (1 to 50, default 10).
    #[serde(default)]
    pub limit: Option<usize>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TimelineArgs {
    /// A message id (msg_...): show what was recorded just before and after it. Give either
    /// this or a period, not both.
    #[serde(default)]
    pub around: Option<String>,
    /// Start of the period: a day (YYYY-MM-DD) or an RFC 3339 time.
    #[serde(default)]
    pub since: Option<String>,
    /// End of the period: a day (YYYY-MM-DD, that day included) or an RFC 3339 time.
    #[serde(default)]
    pub until: Option<String>,
    /// How many messages (1 to 50, default 15). A period holding more shows its newest.
    #[serde(default)]
    pub limit: Option<usize>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RecentArgs {
    /// How many of the latest messages (1 to 50, default 10).
    #[serde(default)]
    pub limit: Option<usize>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WhyArgs {
    /// A prompt, as the person would type it.
    pub prompt: String,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RememberArgs {
    /// The note, self-contained: what was decided or learned and why, with the names a later
    /// search would use. Secrets are redacted before anything is stored.
    pub text: String,
    /// A short title for it (2 to 8 words); built from the text when absent.
    #[serde(default)]
    pub title: Option<String>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ForgetArgs {
    /// The thread id (thread_...).
    pub id: String,
    /// Delete the thread and its messages for good instead of suspending it. Claude Code asks
    /// the person first; refused in unattended runs unless the project allows it.
    #[serde(default)]
    pub delete: bool,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PinArgs {
    /// The thread id (thread_...).
    pub id: String,
    /// false to unpin (default true).
    #[serde(default)]
    pub pinned: Option<bool>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NeverRecallArgs {
    /// The thread id (thread_...).
    pub id: String,
    /// false to let it be recalled again (default true).
    #[serde(default)]
    pub never: Option<bool>,
}

/// A tool's answer: its text, or the error the model should read.
fn answer(result: Result<String, LinkError>) -> CallToolResult {
    match result {
        Ok(text) => CallToolResult::success(vec![ContentBlock::text(text)]),
        Err(e) => CallToolResult::error(vec![ContentBlock::text(e.to_string())]),
    }
}

/// A value in `1..=max`, or `default`.
fn bounded(v: Option<usize>, default: usize, max: usize) -> usize {
    v.unwrap_or(default).clamp(1, max)
}

/// Whether no person is there to answer a permission prompt.
fn unattended() -> bool {
    let entry = std::env::var("CLAUDE_CODE_ENTRYPOINT").unwrap_or_default();
    UNATTENDED_ENTRYPOINTS.contains(&entry.as_str())
        || std::env::var_os(ai_smartness_proto::HOOK_GUARD_ENV).is_some()
}

#[tool_router]
impl MemoryTools {
    pub fn new(link: DaemonLink) -> MemoryTools {
        MemoryTools {
            link,
            tool_router: Self::tool_router(),
        }
    }

    async fn edit(&self, id: String, action: ThreadAction) -> Result<String, LinkError> {
        let cmd = Command::ThreadEdit(ThreadEdit {
            id,
            action,
            title: None,
        });
        let e: Edited<ThreadAction> = self.link.call(cmd, link::REQUEST_TIMEOUT).await?;
        Ok(render::edited(&e.id, e.action))
    }

    /// Search the project's long-term memory (earlier sessions' prompts, answers, commands,
    /// files read, notes) for what is relevant to a question. Returns the best matching
    /// messages, each with its thread, date, source and a short snippet; open one with
    /// get_thread (thread id) or timeline (message id). Use it before redoing work that may
    /// have been done, or when the person refers to something from before.
    #[tool(annotations(title = "Search memory", read_only_hint = true))]
    async fn search(&self, Parameters(a): Parameters<SearchArgs>) -> CallToolResult {
        let cmd = Command::Recall(RecallQuery {
            query: a.query,
            limit: Some(bounded(a.limit, 8, 50)),
            since: a.since,
            until: a.until,
            status: a.status.map(StatusFilter::from),
        });
        let r = self.link.call::<RecallReply>(cmd, link::REQUEST_TIMEOUT);
        answer(r.await.map(|r| render::recall(&r)))
    }

    /// Read one thread of the memory (a topic of earlier work): its title, summary, topics,
    /// links to other threads, and its messages a page at a time, oldest first.
    #[tool(annotations(title = "Read a memory thread", read_only_hint = true))]
    async fn get_thread(&self, Parameters(a): Parameters<GetThreadArgs>) -> CallToolResult {
        let cmd = Command::Thread(ThreadQuery {
            id: a.id,
            offset: Some(a.offset.unwrap_or(0)),
            limit: Some(bounded(a.limit, 10, 50)),
        });
        let r = self.link.call::<ThreadDetail>(cmd, link::REQUEST_TIMEOUT);
        answer(r.await.map(|t| render::thread(&t)))
    }

    /// What happened around a moment: the messages recorded just before and after a message
    /// (around), or during a period (since, until), in time order across all threads.
    #[tool(annotations(title = "Memory timeline", read_only_hint = true))]
    async fn timeline(&self, Parameters(a): Parameters<TimelineArgs>) -> CallToolResult {
        let cmd = Command::Timeline(TimelineQuery {
            around: a.around,
            since: a.since,
            until: a.until,
            limit: Some(bounded(a.limit, 15, 50)),
        });
        let r = self.link.call::<TimelineReply>(cmd, link::REQUEST_TIMEOUT);
        answer(r.await.map(|t| render::timeline(&t, "Timeline")))
    }

    /// The latest activity in memory: the most recent messages, newest last, with their
    /// threads. Good for "where were we?".
    #[tool(annotations(title = "Recent memory", read_only_hint = true))]
    async fn recent(&self, Parameters(a): Parameters<RecentArgs>) -> CallToolResult {
        let cmd = Command::Timeline(TimelineQuery {
            limit: Some(bounded(a.limit, 10, 50)),
            ..TimelineQuery::default()
        });
        let r = self.link.call::<TimelineReply>(cmd, link::REQUEST_TIMEOUT);
        answer(r.await.map(|t| render::timeline(&t, "Latest activity")))
    }

    /// Explain what the memory would inject before a prompt and why: whether it speaks (the
    /// evidence against the bar), and what each included message's score is made of.
    #[tool(annotations(title = "Why this memory", read_only_hint = true))]
    async fn why(&self, Parameters(a): Parameters<WhyArgs>) -> CallToolResult {
        let cmd = Command::Context(ContextRequest {
            prompt: a.prompt,
            budget: None,
        });
        let r = self.link.call::<ContextReply>(cmd, link::REQUEST_TIMEOUT);
        answer(r.await.map(|c| render::why(&c)))
    }

    /// Keep a note in long-term memory, as a thread of its own: a decision and its reason, a
    /// fact about the project, something the person asked to remember. Write it so that it
    /// stands alone. It is recalled in later sessions when relevant.
    #[tool(annotations(
        title = "Remember a note",
        read_only_hint = false,
        destructive_hint = false
    ))]
    async fn remember(&self, Parameters(a): Parameters<RememberArgs>) -> CallToolResult {
        let cmd = Command::Remember(RememberRequest {
            text: a.text,
            title: a.title,
            session_id: None,
        });
        let r = self.link.call::<Remembered>(cmd, REMEMBER_TIMEOUT);
        answer(r.await.map(|r| render::remembered(&r)))
    }

    /// Forget a thread: by default suspend it (kept, no longer recalled by itself; reversible
    /// with `ai thread ID --reactivate`); with delete=true, delete it and its messages for good.
    #[tool(annotations(title = "Forget a thread", destructive_hint = true))]
    async fn forget(&self, Parameters(a): Parameters<ForgetArgs>) -> CallToolResult {
        if a.delete && unattended() && !self.delete_allowed_unattended() {
            return answer(Err(LinkError::Refused {
                code: ErrorCode::Forbidden,
                message: "deleting a thread needs a person: this run is unattended (set \
                          `mcp.delete_when_unattended` in .ai/config.json to allow it); \
                          suspend it instead (delete=false)"
                    .into(),
            }));
        }
        let action = if a.delete {
            ThreadAction::Delete
        } else {
            ThreadAction::Suspend
        };
        answer(self.edit(a.id, action).await)
    }

    /// Pin a thread: always a candidate for recall and never suspended by decay or the quota.
    #[tool(annotations(
        title = "Pin a thread",
        idempotent_hint = true,
        destructive_hint = false
    ))]
    async fn pin(&self, Parameters(a): Parameters<PinArgs>) -> CallToolResult {
        let action = if a.pinned.unwrap_or(true) {
            ThreadAction::Pin
        } else {
            ThreadAction::Unpin
        };
        answer(self.edit(a.id, action).await)
    }

    /// Keep a thread out of injection: it stays stored and searchable, but is never added to a
    /// prompt by itself (never=false undoes it).
    #[tool(annotations(
        title = "Never recall a thread",
        idempotent_hint = true,
        destructive_hint = false
    ))]
    async fn never_recall(&self, Parameters(a): Parameters<NeverRecallArgs>) -> CallToolResult {
        let action = if a.never.unwrap_or(true) {
            ThreadAction::NeverRecall
        } else {
            ThreadAction::AllowRecall
        };
        answer(self.edit(a.id, action).await)
    }
}

impl MemoryTools {
    /// `mcp.delete_when_unattended` in the project's config (read at each call: an edit
    /// applies at once).
    fn delete_allowed_unattended(&self) -> bool {
        ai_smartness_config::Config::load(&self.link.paths().config())
            .map(|c| c.mcp.delete_when_unattended)
            .unwrap_or(false)
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for MemoryTools {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new(
                "ai-smartness",
                env!("CARGO_PKG_VERSION"),
            ))
            .with_instructions(
                "Long-term memory of this project's earlier work (ai-smartness). Relevant notes \
                 are already added before each prompt when the memory is sure; call `search` \
                 when you need something from earlier sessions that is not there, then \
                 `get_thread` or `timeline` to read more. `remember` keeps a note for later \
                 sessions.",
            )
    }
}
