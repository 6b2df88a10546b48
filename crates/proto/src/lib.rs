//! What the clients of ai-smartness (the `ai` CLI, the hook binaries) and its daemon speak:
//! the socket protocol ([`protocol`]), where a project's files and socket are ([`paths`]), and
//! the blocking client ([`client`]), and the log files that rotate themselves ([`logfile`]). std, serde and libc only, so a hook that depends on this
//! crate alone starts in about a millisecond.

pub mod atomic;
pub mod client;
pub mod logfile;
pub mod paths;
pub mod protocol;
#[cfg(windows)]
pub mod windows_user;

/// Set in the environment of every process the product starts that may run Claude Code (the
/// CLI provider, workflow commands): hooks started under it do nothing, so a session of ours
/// never captures itself.
pub const HOOK_GUARD_ENV: &str = "AI_SMARTNESS_HOOK_RUNNING";

/// What a hook binary records of its own failures in `.ai/hooks/<binary>.json` (a hook that
/// cannot reach the daemon can only tell a file); the daemon's status reads it back.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct HookErrors {
    /// Failures counted so far.
    pub errors: u64,
    /// The last one, redacted, on one line.
    pub last_error: Option<String>,
    /// When, RFC 3339 in UTC.
    pub last_error_at: Option<String>,
}
