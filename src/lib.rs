//! ai-smartness: long-term memory for coding agents.
//!
//! A per-project daemon holds the memory: *threads* (topics of work) linked by *bridges* (typed
//! semantic links), embedded locally, weighted and forgotten by decay, linked by gossip.
//!
//! - [`protocol`], [`client`], [`paths`]: what clients and hooks speak (std + serde only).
//! - [`daemon`]: listener, connections, the router and the services behind it (capture, inject:
//!   what the hooks get before a prompt and at session start, compact, recall, the assistant,
//!   runs), capture worker, periodic prune, lifecycle.
//! - [`memory`], [`retrieve`] (the `ai-smartness-core` crate): data model, decay, the in-RAM
//!   graph, the thread decision and gossip; which memory is relevant to a prompt, packed into a
//!   token budget.
//! - [`capture`] (the `ai-smartness-capture` crate): filtering, cleaning, secret redaction,
//!   local extraction.
//! - [`embed`] (the `ai-smartness-embed` crate): all-MiniLM-L6-v2 over ONNX Runtime on its own
//!   thread, hashed TF-IDF fallback.
//! - [`llm`] (the `ai-smartness-llm` crate): the optional LLM: providers, retries, prices;
//!   the daemon's background jobs use it, with the daemon's cost ledger and limits, to refine
//!   what the local pipeline did.
//! - [`store`] (the `ai-smartness-store` crate): the threads' files, indexes, the capture
//!   journal, JSON folders of records, quarantine, retention.
//! - [`assistant`] (the `ai-smartness-assistant` crate): the pure core of chat and automation sessions: answer
//!   protocol, command vocabulary, schedules, periods, loop decisions, the session queue.
//! - [`records`] (the `ai-smartness-records` crate): the plain records the daemon and its
//!   clients share: sessions and their vocabulary, runs and tool results, LLM usage, retention.
//! - [`workflow`] (the `ai-smartness-workflow` crate): verified workflow runs: the pipeline, its tools, events and
//!   verdicts.
//! - [`cli`]: the `ai` command; [`mcp`]: `ai mcp`, the memory as MCP tools.
//! - [`config`] (the `ai-smartness-config` crate), [`clock`] (in core), [`logging`]: settings,
//!   injectable time, rotating logs.

pub use ai_smartness_assistant as assistant;
pub use ai_smartness_capture as capture;
pub use ai_smartness_cli as cli;
pub use ai_smartness_cli::logging;
pub use ai_smartness_config as config;
pub use ai_smartness_core::clock;
pub use ai_smartness_core::memory;
pub use ai_smartness_daemon as daemon;
pub use ai_smartness_embed as embed;
pub use ai_smartness_llm as llm;
pub use ai_smartness_mcp as mcp;
pub use ai_smartness_records as records;
pub use ai_smartness_replies as replies;

pub use ai_smartness_core::retrieve;
pub use ai_smartness_proto::{client, paths, protocol};
pub use ai_smartness_store as store;
#[doc(hidden)]
pub use ai_smartness_workflow as workflow;
