//! Why a command failed. Every variant names its command, and its text is what the model reads
//! back: what went wrong and, where it helps, what to do instead.

use super::{one_line, NO_BRIDGE_HINT, NO_THREAD_HINT};
use ai_smartness_core::memory::engine::EditError;
use ai_smartness_core::memory::rules::RuleError;
use ai_smartness_records::assistant::period::PeriodError;
use ai_smartness_records::assistant::vocabulary::{CommandError, MAX_TITLE_CHARS};

/// A data or action command that failed or was refused; `command` is its type (`READ_THREAD`).
#[derive(Debug, PartialEq, thiserror::Error)]
pub enum ExecError {
    /// An id that names no thread (shown flattened and cut: the model may send anything).
    #[error("{command}: no thread {}; {NO_THREAD_HINT}", one_line(id, 140))]
    NoThread { command: &'static str, id: String },
    /// An id that names no bridge.
    #[error("{command}: no bridge {}; {NO_BRIDGE_HINT}", one_line(id, 140))]
    NoBridge { command: &'static str, id: String },
    /// An edit the memory refused although the checks let it through; the memory's reason.
    #[error("{command}: {reason}")]
    InvalidEdit {
        command: &'static str,
        reason: String,
    },
    /// The user rules file cannot be read or saved (an unreadable one is never replaced).
    #[error("{command}: the user rules cannot be read or saved: {reason}")]
    RulesFile {
        command: &'static str,
        reason: String,
    },
    /// A rule refused as it stands: too short or long, already there, mostly a secret.
    #[error("{command}: {error}")]
    RuleRefused {
        command: &'static str,
        error: RuleError,
    },
    /// REMOVE_RULE with a number LIST_RULES does not show.
    #[error("{command}: no rule number {number} (there are {count}); see LIST_RULES")]
    NoRuleNumber {
        command: &'static str,
        number: u32,
        count: usize,
    },
    /// A new title empty or longer than [`MAX_TITLE_CHARS`].
    #[error("{command}: a title has 1 to {MAX_TITLE_CHARS} characters")]
    TitleLength { command: &'static str },
    /// MERGE_THREADS with the same thread on both sides.
    #[error("{command}: a thread cannot be merged into itself")]
    MergeIntoItself { command: &'static str },
    /// CREATE_BRIDGE from a thread to itself.
    #[error("{command}: a bridge links two different threads")]
    BridgeToItself { command: &'static str },
    /// CREATE_BRIDGE with a blank reason.
    #[error("{command}: a bridge needs a reason")]
    BridgeWithoutReason { command: &'static str },
    /// CREATE_BRIDGE between threads a bridge already links (either way). The threads are
    /// named as every answer names them (`thread_… "Title"`).
    #[error("{command}: {source_thread} and {target_thread} are already linked by {bridge_id} ({relation}); DELETE_BRIDGE it first to replace it")]
    AlreadyLinked {
        command: &'static str,
        source_thread: String,
        target_thread: String,
        bridge_id: String,
        relation: &'static str,
    },
    /// WRITE_NOTE whose title or content is empty once private parts and secrets are removed.
    #[error("{command}: the title and the content must not be empty once private parts and secrets are removed")]
    EmptyNote { command: &'static str },
    /// START_RUN with a blank task.
    #[error("{command}: the task is empty")]
    EmptyTask { command: &'static str },
    /// A command its caller runs itself (START_RUN: workflow runs live in the daemon).
    #[error("{command}: not available here")]
    NotAvailableHere { command: &'static str },
    /// START_RUN refused by the workflow service; its reason.
    #[error("{command}: {reason}")]
    RunNotStarted {
        command: &'static str,
        reason: String,
    },
    /// A period that resolves to no range of time.
    #[error("{command}: {error}")]
    BadPeriod {
        command: &'static str,
        error: PeriodError,
    },
    /// A command refused for this session as written (a period of the wrong mode); the
    /// vocabulary's text already names the command.
    #[error("{0}")]
    Refused(CommandError),
    /// The latest synthesis exists but cannot be read.
    #[error("{command}: the synthesis cannot be read: {reason}")]
    SynthesisUnreadable {
        command: &'static str,
        reason: String,
    },
}

impl ExecError {
    /// An edit the memory refused, told as a failure of `command`.
    pub(super) fn edit(command: &'static str, e: EditError) -> Self {
        match e {
            EditError::NoThread(id) => ExecError::NoThread { command, id },
            EditError::NoBridge(id) => ExecError::NoBridge { command, id },
            EditError::Invalid(reason) => ExecError::InvalidEdit { command, reason },
        }
    }

    /// A rule change refused: the rule's fault, or the file's.
    pub(super) fn rule(command: &'static str, e: RuleError) -> Self {
        match e {
            RuleError::Io(reason) => ExecError::RulesFile { command, reason },
            error => ExecError::RuleRefused { command, error },
        }
    }
}
