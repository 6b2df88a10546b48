//! Persistence of a project's memory under `.ai/db/`.
//!
//! ```text
//! db/threads/_active.json  _suspended.json  _archived.json   JSON arrays of thread ids
//! db/threads/thread_*.json                                   one Thread each, pretty JSON
//! db/bridges/_index.json   {"by_source": {..}, "by_target": {..}}
//! db/bridges/bridge_*.json
//! db/synthesis/synthesis_YYYYMMdd_HHMMSS.json
//! db/quarantine/                                             corrupt files, with a reason
//! db/journal/                                                the capture journal
//! db/word_vectors.bin                                        each word's embedding (derived)
//! ```
//!
//! Every file is replaced atomically ([`ai_smartness_proto::atomic`]), so a crash never leaves a
//! half-written thread. Loading never crashes on bad data and never drops it silently: whatever
//! cannot be used is moved to `quarantine/` with a `.reason.txt` beside it and a warning in the
//! log. The index files are derived data: they are checked at load and rebuilt when they disagree.
//!
//! Captures are made durable by the [`journal`] before the daemon acknowledges them, and replayed
//! after a crash.

pub mod atomic;
mod files;
pub mod folder;
pub mod journal;
pub mod retention;
pub mod rules;
pub mod words;

pub use files::{read_latest_synthesis, IndexSnapshot, Loaded, Store};
pub use folder::{FolderContents, JsonFolder};
pub use journal::{Journal, JournalEntry, JournalOptions};

use std::io;
use std::path::{Path, PathBuf};

/// Why a store or journal operation failed.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("I/O error on {}: {source}", path.display())]
    Io { path: PathBuf, source: io::Error },
    #[error("invalid JSON in {}: {source}", path.display())]
    Json {
        path: PathBuf,
        source: serde_json::Error,
    },
    /// An id that is not `PREFIX_YYYYMMdd_HHMMSS_hex`: refused so no id can name a path outside
    /// the store's folders.
    #[error("invalid id {0:?}")]
    InvalidId(String),
    /// `checkpoint` was given a seq the journal has not made durable yet (a caller bug).
    #[error("checkpoint {seq} is ahead of the last durable journal entry {last}")]
    CheckpointAhead { seq: u64, last: u64 },
    /// Another journal (this process or another daemon) already has this folder open; two
    /// writers would interleave seqs.
    #[error("the capture journal in {} is already open elsewhere", .0.display())]
    JournalLocked(PathBuf),
    /// The journal's writer thread is gone (the journal is shutting down).
    #[error("the capture journal is closed")]
    JournalClosed,
    /// A write to the journal failed and could not be undone; nothing more is accepted so that
    /// no later entry can be acknowledged on top of a damaged log.
    #[error("the capture journal is unusable after a failed write: {0}")]
    JournalFailed(String),
}

/// `map_err` helper attaching the path to an I/O error.
pub(crate) fn io_at(path: &Path) -> impl FnOnce(io::Error) -> StoreError + '_ {
    move |source| StoreError::Io {
        path: path.to_path_buf(),
        source,
    }
}
