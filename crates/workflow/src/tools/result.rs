//! The success or failure a tool hands to [`Toolbox::call`] before it is timed and wrapped into
//! the uniform result (`ai_smartness_records::tool`).

use super::*;

/// A tool's success: its data and the command line it ran, if any.
pub(super) struct Done {
    pub(super) data: Value,
    pub(super) command: Option<String>,
}

/// A tool's failure, possibly with partial data (command output) and the command line.
pub(super) struct Fail {
    pub(super) error: ToolError,
    pub(super) data: Option<Value>,
    pub(super) command: Option<String>,
}

impl From<ToolError> for Fail {
    fn from(error: ToolError) -> Fail {
        Fail {
            error,
            data: None,
            command: None,
        }
    }
}

pub(super) type Outcome = Result<Done, Fail>;

pub(super) fn err(code: ErrorCode, message: impl Into<String>) -> ToolError {
    ToolError::new(code, message)
}

/// A tool's typed result, as the JSON the model reads.
pub(super) fn done(data: impl serde::Serialize) -> Outcome {
    let data = serde_json::to_value(data).map_err(|e| {
        err(
            ErrorCode::Io,
            format!("the result could not be encoded: {e}"),
        )
    })?;
    Ok(Done {
        data,
        command: None,
    })
}

/// An I/O error as a tool error; `not_found` is the code a missing path gets in this context.
pub(super) fn io_error(e: &io::Error, what: &str, not_found: ErrorCode) -> ToolError {
    match e.kind() {
        io::ErrorKind::NotFound | io::ErrorKind::NotADirectory => {
            err(not_found, format!("{what}: not found"))
        }
        io::ErrorKind::PermissionDenied => {
            err(ErrorCode::Permission, format!("{what}: permission denied"))
        }
        _ => err(ErrorCode::Io, format!("{what}: {e}")),
    }
}
