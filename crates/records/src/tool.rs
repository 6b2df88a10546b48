//! What a workflow tool returns, as a run records it: the uniform result
//! `{"success", "data", "error": {"code", "message", "recoverable"}, "meta"}` and its error
//! codes. The tools themselves stay in `ai-smartness-workflow`.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::fmt;

/// The error codes of the tool protocol, plus five of ours. Serialised as `"E_FILE_NOT_FOUND"` etc.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ErrorCode {
    /// A file does not exist (its folder does). Recoverable: plan B runs `search_files`.
    #[serde(rename = "E_FILE_NOT_FOUND")]
    FileNotFound,
    /// A directory does not exist. Recoverable: plan B runs `search_directory`.
    #[serde(rename = "E_DIR_NOT_FOUND")]
    DirNotFound,
    /// A path of unknown kind does not exist (a search base, a `git_diff` path). Recoverable.
    #[serde(rename = "E_PATH_NOT_FOUND")]
    PathNotFound,
    /// The operating system refused access.
    #[serde(rename = "E_PERMISSION")]
    Permission,
    /// A program not on the allowlist, or a test/lint command that is not configured.
    #[serde(rename = "E_CMD_NOT_ALLOWED")]
    CmdNotAllowed,
    /// A path outside the workspace (or a search base outside the allowlisted ones).
    #[serde(rename = "E_PATH_FORBIDDEN")]
    PathForbidden,
    /// `write_file` while writing is disabled.
    #[serde(rename = "E_WRITE_DISABLED")]
    WriteDisabled,
    /// Missing, mistyped or unknown parameters.
    #[serde(rename = "E_INVALID_PARAMS")]
    InvalidParams,
    /// No tool by that name.
    #[serde(rename = "E_UNKNOWN_TOOL")]
    UnknownTool,
    /// A command ran past `command_timeout` and was killed.
    #[serde(rename = "E_TIMEOUT")]
    Timeout,
    /// A command could not start, or git exited non-zero.
    #[serde(rename = "E_COMMAND_FAILED")]
    CommandFailed,
    /// Any other I/O error (symlink loop, full disk, a file where a folder should be...).
    #[serde(rename = "E_IO")]
    Io,
}

impl ErrorCode {
    /// Every code, for exhaustive checks.
    pub const ALL: [ErrorCode; 12] = [
        ErrorCode::FileNotFound,
        ErrorCode::DirNotFound,
        ErrorCode::PathNotFound,
        ErrorCode::Permission,
        ErrorCode::CmdNotAllowed,
        ErrorCode::PathForbidden,
        ErrorCode::WriteDisabled,
        ErrorCode::InvalidParams,
        ErrorCode::UnknownTool,
        ErrorCode::Timeout,
        ErrorCode::CommandFailed,
        ErrorCode::Io,
    ];

    /// Whether the model can recover by looking elsewhere ("recoverable").
    pub fn recoverable(self) -> bool {
        matches!(
            self,
            ErrorCode::FileNotFound | ErrorCode::DirNotFound | ErrorCode::PathNotFound
        )
    }

    /// The serialised form, e.g. `"E_FILE_NOT_FOUND"`.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::FileNotFound => "E_FILE_NOT_FOUND",
            ErrorCode::DirNotFound => "E_DIR_NOT_FOUND",
            ErrorCode::PathNotFound => "E_PATH_NOT_FOUND",
            ErrorCode::Permission => "E_PERMISSION",
            ErrorCode::CmdNotAllowed => "E_CMD_NOT_ALLOWED",
            ErrorCode::PathForbidden => "E_PATH_FORBIDDEN",
            ErrorCode::WriteDisabled => "E_WRITE_DISABLED",
            ErrorCode::InvalidParams => "E_INVALID_PARAMS",
            ErrorCode::UnknownTool => "E_UNKNOWN_TOOL",
            ErrorCode::Timeout => "E_TIMEOUT",
            ErrorCode::CommandFailed => "E_COMMAND_FAILED",
            ErrorCode::Io => "E_IO",
        }
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a tool failed: `{"code", "message", "recoverable"}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[error("{code}: {message}")]
pub struct ToolError {
    /// The machine-readable code.
    pub code: ErrorCode,
    /// What happened, for the model (names the path or command).
    pub message: String,
    /// Always `code.recoverable()`; serialised because the format carries it.
    pub recoverable: bool,
}

impl ToolError {
    /// An error whose `recoverable` follows its code.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> ToolError {
        ToolError {
            code,
            message: message.into(),
            recoverable: code.recoverable(),
        }
    }
}

/// How a tool ran: `{"duration_ms", "command", "sandbox"}`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolMeta {
    /// Wall time of the call.
    pub duration_ms: u64,
    /// The command line, for the tools that run one (`null` otherwise).
    pub command: Option<String>,
    /// Whether the workspace is a sandbox copy (from the workflow's `ToolConfig::sandbox`).
    pub sandbox: bool,
}

/// The uniform result of every tool (seed "Structure ToolResult").
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolResult {
    /// Whether the tool did its job (see the module doc for commands that exit non-zero).
    pub success: bool,
    /// The tool's output; `null` on failure except for partial command output.
    pub data: Option<Value>,
    /// Why it failed; `null` on success.
    pub error: Option<ToolError>,
    /// Timing, command line, sandbox flag.
    pub meta: ToolMeta,
}

impl ToolResult {
    /// A success carrying `data`.
    pub fn ok(data: Value, meta: ToolMeta) -> ToolResult {
        ToolResult {
            success: true,
            data: Some(data),
            error: None,
            meta,
        }
    }

    /// A failure, with optional partial `data`.
    pub fn failure(error: ToolError, data: Option<Value>, meta: ToolMeta) -> ToolResult {
        ToolResult {
            success: false,
            data,
            error: Some(error),
            meta,
        }
    }

    /// The error's code, if the call failed.
    pub fn error_code(&self) -> Option<ErrorCode> {
        self.error.as_ref().map(|e| e.code)
    }

    /// The data of a tool that ran a command (`run_tests`, `run_lint`, `git_status`, ...), as
    /// a type; the default (no output) for a result that carries none.
    pub fn command_output(&self) -> CommandOutput {
        self.data
            .as_ref()
            .and_then(|d| CommandOutput::deserialize(d).ok())
            .unwrap_or_default()
    }
}

/// A command's result read back from a tool's data by code that acts on it (the run's
/// verification): the fields of the workflow's `CommandResult`, owned.
#[derive(Debug, Default, Deserialize)]
pub struct CommandOutput {
    /// `None` when it was killed at the timeout.
    pub returncode: Option<i32>,
    #[serde(default)]
    pub stdout: String,
    #[serde(default)]
    pub stderr: String,
    /// Set by the tools whose verdict is the exit code.
    #[serde(default)]
    pub passed: Option<bool>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn error_codes_serialise_exactly_and_know_if_recoverable() {
        let expected = [
            ("E_FILE_NOT_FOUND", true),
            ("E_DIR_NOT_FOUND", true),
            ("E_PATH_NOT_FOUND", true),
            ("E_PERMISSION", false),
            ("E_CMD_NOT_ALLOWED", false),
            ("E_PATH_FORBIDDEN", false),
            ("E_WRITE_DISABLED", false),
            ("E_INVALID_PARAMS", false),
            ("E_UNKNOWN_TOOL", false),
            ("E_TIMEOUT", false),
            ("E_COMMAND_FAILED", false),
            ("E_IO", false),
        ];
        for (code, (s, recoverable)) in ErrorCode::ALL.iter().zip(expected) {
            assert_eq!(serde_json::to_value(code).unwrap(), json!(s));
            assert_eq!(code.as_str(), s);
            assert_eq!(code.to_string(), s);
            assert_eq!(code.recoverable(), recoverable, "{s}");
            assert_eq!(
                serde_json::from_value::<ErrorCode>(json!(s)).unwrap(),
                *code
            );
            assert_eq!(ToolError::new(*code, "m").recoverable, recoverable);
        }
    }
}
