//! What a service says when it cannot do what was asked: a code from the protocol's one list and
//! a message for a person. Services return `Result<Reply, ServiceError>`; only the router turns
//! that into a response on the wire.

use ai_smartness_core::memory::engine::EditError;
use ai_smartness_core::memory::rules::RuleError;
use ai_smartness_proto::protocol::{ErrorCode, Response};
use serde::Serialize;

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message}")]
pub struct ServiceError {
    /// Which kind of failure, as clients match on it.
    pub code: ErrorCode,
    /// What went wrong, in words.
    pub message: String,
}

impl ServiceError {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> ServiceError {
        ServiceError {
            code,
            message: message.into(),
        }
    }

    pub fn bad_request(message: impl Into<String>) -> ServiceError {
        ServiceError::new(ErrorCode::BadRequest, message)
    }

    pub fn not_found(message: impl Into<String>) -> ServiceError {
        ServiceError::new(ErrorCode::NotFound, message)
    }

    pub fn internal(message: impl Into<String>) -> ServiceError {
        ServiceError::new(ErrorCode::Internal, message)
    }

    pub fn storage(message: impl Into<String>) -> ServiceError {
        ServiceError::new(ErrorCode::Storage, message)
    }

    pub fn shutting_down() -> ServiceError {
        ServiceError::new(ErrorCode::ShuttingDown, "the daemon is stopping")
    }

    /// The response on the wire.
    pub fn into_response(self) -> Response {
        Response::error(self.code, self.message)
    }
}

impl From<EditError> for ServiceError {
    fn from(e: EditError) -> ServiceError {
        let code = match e {
            EditError::NoThread(_) | EditError::NoBridge(_) => ErrorCode::NotFound,
            EditError::Invalid(_) => ErrorCode::BadRequest,
        };
        ServiceError::new(code, e.to_string())
    }
}

impl From<RuleError> for ServiceError {
    fn from(e: RuleError) -> ServiceError {
        let code = match e {
            RuleError::Io(_) => ErrorCode::Storage,
            _ => ErrorCode::BadRequest,
        };
        ServiceError::new(code, e.to_string())
    }
}

/// A service's result as the response on the wire.
pub fn respond<T: Serialize>(result: Result<T, ServiceError>) -> Response {
    match result {
        Ok(reply) => Response::reply(&reply),
        Err(e) => e.into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edit_errors_keep_their_codes_on_the_wire() {
        let missing = ServiceError::from(EditError::NoThread("thread_x".into()));
        assert_eq!(missing.code, ErrorCode::NotFound);
        let invalid = ServiceError::from(EditError::Invalid("rename needs a title".into()));
        assert_eq!(invalid.code, ErrorCode::BadRequest);
        let wire = serde_json::to_value(invalid.into_response()).unwrap();
        assert_eq!(wire["ok"], false);
        assert_eq!(wire["error"]["code"], "bad_request");
        assert_eq!(wire["error"]["message"], "rename needs a title");
    }
}
