//! Plain serializable records that both the daemon and its socket clients (the CLI, the MCP
//! server) read: assistant sessions and their vocabulary, workflow runs and their tool results,
//! LLM usage and limits, retention limits.
//!
//! It sits low in the crate graph on purpose: it holds data and its rules (parsing, checks,
//! rendering to text) but no runtime, no network and no files, so a client that only reads
//! replies does not link tokio, an HTTP client or the store.
//!
//! - [`assistant`]: sessions, messages, the answer protocol, the command vocabulary, periods.
//! - [`run`]: a workflow run, its events and verdicts; [`tool`]: what its tools returned.
//! - [`cost`]: tokens and dollars spent on LLM calls, and the limits.
//! - [`retention`]: how many and how old of a kind of record the prune keeps.
//! - [`Record`]: what a record kept one file each in a folder says about itself.

pub mod assistant;
pub mod cost;
pub mod retention;
pub mod run;
pub mod tool;

use serde::de::DeserializeOwned;
use serde::Serialize;

/// A kind of record kept in the store's `JsonFolder`.
pub trait Record: Serialize + DeserializeOwned {
    /// Its folder under the database folder (`sessions`).
    const FOLDER: &'static str;
    /// Its ids' prefix (`session`): an id is `PREFIX_YYYYMMdd_HHMMSS_hex`, the file `ID.json`.
    const PREFIX: &'static str;
    fn id(&self) -> &str;
}
