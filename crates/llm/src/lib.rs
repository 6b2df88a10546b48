//! The optional LLM: one [`Provider`] trait over the Anthropic Messages API,
//! OpenAI-compatible chat completions (OpenAI, DeepSeek, Ollama, llama.cpp), the `claude` CLI,
//! and "local" (no LLM: callers use their deterministic fallbacks).
//!
//! - [`registry`]: the known providers, `auto` detection and the factory ([`registry::build`]).
//! - [`client::LlmClient`]: a provider plus retries, the spending check and one log line per
//!   call.
//! - [`error`]: the classified [`LlmError`]; [`retry`]: backoff; [`cost`]: what a call may
//!   cost, and the [`cost::Spending`] check the caller supplies (the ledger and its limits live
//!   above this crate, in the daemon).
//! - [`answers`]: one JSON object asked for and checked strictly, with one corrective retry.
//!
//! What the memory asks (its prompts and the shapes of their answers) and the background jobs
//! that ask it live in the daemon's `llm_tasks`: this crate knows providers, not memory.
//!
//! API keys are never stored: providers keep the *name* of the variable and read it per call.

pub mod answers;
pub mod anthropic;
pub mod claude_cli;
pub mod client;
pub mod cost;
pub mod error;
mod http;
pub mod local;
pub mod openai;
pub mod registry;
pub mod retry;
mod sse;

pub use client::LlmClient;
pub use error::{ErrorKind, LlmError};
pub use registry::{build, detect, ProviderKind, ProviderSpec};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::fmt;
use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

/// The whole of an extraction call.
pub const EXTRACTION_TIMEOUT: Duration = Duration::from_secs(30);
/// A coherence check.
pub const COHERENCE_TIMEOUT: Duration = Duration::from_secs(15);
/// A compaction synthesis.
pub const SYNTHESIS_TIMEOUT: Duration = Duration::from_secs(60);

/// A boxed future, so [`Provider`] stays usable as `dyn Provider`.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Receives stream events as they arrive (chat UIs show text while it is written).
pub type EventSink<'a> = dyn Fn(StreamEvent) + Send + Sync + 'a;

/// Reads an environment variable; injectable so tests and `auto` detection need no real env.
/// Empty values count as unset.
pub type EnvLookup = Arc<dyn Fn(&str) -> Option<String> + Send + Sync>;

/// The process environment as an [`EnvLookup`].
pub fn process_env() -> EnvLookup {
    Arc::new(|name| std::env::var(name).ok().filter(|v| !v.is_empty()))
}

/// Who wrote a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The person (or the daemon speaking for them), and tool results.
    User,
    /// The model.
    Assistant,
}

/// One piece of the system prompt.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SystemBlock {
    /// The instructions.
    pub text: String,
    /// Put a prompt-cache breakpoint after this block (Anthropic; others cache on their own).
    #[serde(default)]
    pub cache: bool,
}

/// One piece of a message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ContentBlock {
    /// Plain text.
    Text(String),
    /// The assistant calling a tool (kept in the history so the model sees what it asked).
    ToolUse {
        /// Links the call to its result.
        id: String,
        /// The tool's name.
        name: String,
        /// The arguments, a JSON object.
        input: Value,
    },
    /// What a tool returned, sent back in a user message.
    ToolResult {
        /// The [`ContentBlock::ToolUse`] id this answers.
        tool_use_id: String,
        /// The result as text.
        content: String,
        /// The tool failed: the model may correct its call.
        #[serde(default)]
        is_error: bool,
    },
}

/// One turn of the conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatMessage {
    /// User or assistant.
    pub role: Role,
    /// Text, tool calls and tool results, in order.
    pub content: Vec<ContentBlock>,
    /// Put a prompt-cache breakpoint after this message (Anthropic).
    #[serde(default)]
    pub cache: bool,
}

impl ChatMessage {
    /// A user message of one text block.
    pub fn user(text: impl Into<String>) -> ChatMessage {
        ChatMessage {
            role: Role::User,
            content: vec![ContentBlock::Text(text.into())],
            cache: false,
        }
    }

    /// An assistant message of one text block.
    pub fn assistant(text: impl Into<String>) -> ChatMessage {
        ChatMessage {
            role: Role::Assistant,
            content: vec![ContentBlock::Text(text.into())],
            cache: false,
        }
    }

    /// The text blocks joined by blank lines.
    pub fn text(&self) -> String {
        let texts: Vec<&str> = self
            .content
            .iter()
            .filter_map(|b| match b {
                ContentBlock::Text(t) => Some(t.as_str()),
                _ => None,
            })
            .collect();
        texts.join("\n\n")
    }
}

/// A tool the model may call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    /// Name the model calls it by.
    pub name: String,
    /// When to use it: the model reads this.
    pub description: String,
    /// JSON Schema of the arguments.
    pub input_schema: Value,
}

/// A provider-neutral completion request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatRequest {
    /// Overrides the provider's model for this call.
    pub model: Option<String>,
    /// System prompt blocks, in order.
    pub system: Vec<SystemBlock>,
    /// The conversation, oldest first.
    pub messages: Vec<ChatMessage>,
    /// Tools offered; empty means none.
    pub tools: Vec<ToolSpec>,
    /// Output cap (required by Anthropic).
    pub max_tokens: u32,
    /// Sampling temperature; `None` keeps the provider's default.
    pub temperature: Option<f32>,
    /// The whole call, streaming included (30 s extraction, 15 s
    /// coherence, 60 s synthesis).
    pub timeout: Duration,
}

impl Default for ChatRequest {
    fn default() -> Self {
        ChatRequest {
            model: None,
            system: Vec::new(),
            messages: Vec::new(),
            tools: Vec::new(),
            max_tokens: 1024,
            temperature: None,
            timeout: EXTRACTION_TIMEOUT,
        }
    }
}

impl ChatRequest {
    /// One system prompt (may be empty) and one user message.
    pub fn simple(system: impl Into<String>, user: impl Into<String>) -> ChatRequest {
        let system: String = system.into();
        ChatRequest {
            system: if system.is_empty() {
                Vec::new()
            } else {
                vec![SystemBlock {
                    text: system,
                    cache: false,
                }]
            },
            messages: vec![ChatMessage::user(user)],
            ..ChatRequest::default()
        }
    }

    /// The system blocks joined by blank lines (for providers with a single system string).
    pub fn system_text(&self) -> String {
        let texts: Vec<&str> = self
            .system
            .iter()
            .map(|b| b.text.as_str())
            .filter(|t| !t.is_empty())
            .collect();
        texts.join("\n\n")
    }
}

/// A tool call the model made.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// Echo it in the [`ContentBlock::ToolResult`].
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// The parsed arguments (the caller validates them against the schema).
    pub input: Value,
}

/// Tokens of one call. `input_tokens` excludes the cached ones (Anthropic's convention), so the
/// four fields add up to what was processed and each has its own price.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Input tokens read at full price.
    pub input_tokens: u64,
    /// Generated tokens.
    pub output_tokens: u64,
    /// Input tokens served from the prompt cache (cheap).
    pub cache_read_tokens: u64,
    /// Input tokens written to the prompt cache (a bit dearer than input).
    pub cache_write_tokens: u64,
}

impl Usage {
    /// Every token, for token limits.
    pub fn total(&self) -> u64 {
        self.input_tokens + self.output_tokens + self.cache_read_tokens + self.cache_write_tokens
    }
}

/// The model's answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatResponse {
    /// The text blocks, concatenated.
    pub text: String,
    /// Tool calls in the order the model made them.
    pub tool_calls: Vec<ToolCall>,
    /// Normalised to Anthropic's words: `end_turn`, `tool_use`, `max_tokens`, `stop_sequence`
    /// (OpenAI's `stop`, `tool_calls`, `length` are mapped); other values pass through.
    pub stop_reason: Option<String>,
    /// The model that answered (as the provider reports it).
    pub model: String,
    /// Tokens used.
    pub usage: Usage,
    /// What the call cost, when known (the CLI reports it; the client fills it from pricing).
    pub cost_usd: Option<f64>,
}

/// Progress of a streamed answer.
#[derive(Debug, Clone, PartialEq)]
pub enum StreamEvent {
    /// More answer text.
    TextDelta(String),
    /// The model started a tool call.
    ToolCallStarted {
        /// The call's id.
        id: String,
        /// The tool's name.
        name: String,
    },
    /// A piece of a tool call's JSON arguments (not valid JSON on its own).
    ToolInputDelta {
        /// The call's id.
        id: String,
        /// The piece.
        partial_json: String,
    },
    /// The answer is complete (sent only on success).
    Done,
}

/// An LLM backend.
pub trait Provider: Send + Sync + fmt::Debug {
    /// The registry id (`anthropic`, `ollama`, ...).
    fn id(&self) -> &str;
    /// Which wire protocol it speaks.
    fn kind(&self) -> ProviderKind;
    /// The model used when a request names none.
    fn default_model(&self) -> &str;
    /// Runs one completion, streaming events to `on_event` when given.
    fn complete<'a>(
        &'a self,
        req: &'a ChatRequest,
        on_event: Option<&'a EventSink<'a>>,
    ) -> BoxFuture<'a, Result<ChatResponse, LlmError>>;
    /// The cheapest call that proves the provider answers (`ai health`).
    fn ping(&self) -> BoxFuture<'_, Result<(), LlmError>>;
}

/// What the factory needs, mapped by the daemon from `config.json`'s `llm` section.
#[derive(Debug, Clone, PartialEq)]
pub struct ProviderSettings {
    /// A registry id, `auto` (detect from the environment) or `none` (no LLM).
    pub provider: String,
    /// Overrides the provider's default model (the daemon resolves `models_by_mode` first).
    pub model: Option<String>,
    /// Overrides the provider's endpoint (a proxy, a remote Ollama).
    pub base_url: Option<String>,
    /// The NAME of the variable holding the key, never the key.
    pub api_key_env: Option<String>,
    /// The `claude` binary; else found on PATH.
    pub claude_path: Option<PathBuf>,
    /// Variables for a provider that runs a subprocess (the claude CLI), on top of its own:
    /// the caller's set-up is its own business (the daemon passes the guard its hooks read, so
    /// a call cannot capture itself).
    pub child_env: Vec<(String, String)>,
    /// TCP/TLS connect limit, separate from each request's own timeout.
    pub connect_timeout: Duration,
    /// Limit for [`Provider::ping`].
    pub ping_timeout: Duration,
}

impl Default for ProviderSettings {
    fn default() -> Self {
        ProviderSettings {
            provider: "none".into(),
            model: None,
            base_url: None,
            api_key_env: None,
            claude_path: None,
            child_env: Vec::new(),
            connect_timeout: Duration::from_secs(10),
            ping_timeout: Duration::from_secs(20),
        }
    }
}

/// At most `max` characters of `s`, trimmed, with a marker when cut: text put in a prompt.
pub fn cut(s: &str, max: usize) -> String {
    let s = s.trim();
    match s.char_indices().nth(max) {
        Some((i, _)) => format!("{} [...]", &s[..i]),
        None => s.to_string(),
    }
}

/// The text of `s` cut to at most `max` bytes on a character boundary (for logs and errors).
pub(crate) fn truncate(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}
