//! Every LLM failure, classified: the kind decides whether a retry
//! can help and what `ai health` and the logs say.

use chrono::{DateTime, Utc};
use reqwest::header::HeaderMap;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::fmt;
use std::time::Duration;

/// What went wrong, as far as a caller must act on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// Too many requests (429): wait and retry.
    RateLimit,
    /// The provider failed or is overloaded (5xx, 529): retry.
    ServerError,
    /// Missing, invalid or unauthorised key, or no quota left: a person must act.
    AuthError,
    /// No complete answer in time: retry.
    Timeout,
    /// Could not reach the provider or the connection broke: retry.
    Network,
    /// The provider refused the content.
    ContentFilter,
    /// The prompt does not fit the model's context window.
    ContextLength,
    /// Anything else: a bug, a malformed answer, a bad request.
    Internal,
    /// Our own limits refused the call before it was made.
    BudgetExceeded,
}

impl ErrorKind {
    /// The snake_case name used in logs and JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::RateLimit => "rate_limit",
            ErrorKind::ServerError => "server_error",
            ErrorKind::AuthError => "auth_error",
            ErrorKind::Timeout => "timeout",
            ErrorKind::Network => "network",
            ErrorKind::ContentFilter => "content_filter",
            ErrorKind::ContextLength => "context_length",
            ErrorKind::Internal => "internal",
            ErrorKind::BudgetExceeded => "budget_exceeded",
        }
    }

    /// Whether the same request may succeed later.
    pub fn retryable(self) -> bool {
        matches!(
            self,
            ErrorKind::RateLimit | ErrorKind::ServerError | ErrorKind::Timeout | ErrorKind::Network
        )
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A classified failure of an LLM call.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{kind}: {message}")]
pub struct LlmError {
    /// The class, which decides retries.
    pub kind: ErrorKind,
    /// What happened, for people (never the key or the prompt).
    pub message: String,
    /// How long the provider asked us to wait (`retry-after`).
    pub retry_after: Option<Duration>,
    /// The HTTP status when there was one.
    pub status: Option<u16>,
}

/// Error messages from bodies are cut to this many bytes.
const MAX_MESSAGE: usize = 500;

impl LlmError {
    /// An error of that kind.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> LlmError {
        LlmError {
            kind,
            message: message.into(),
            retry_after: None,
            status: None,
        }
    }

    /// A bug or malformed answer.
    pub fn internal(message: impl Into<String>) -> LlmError {
        LlmError::new(ErrorKind::Internal, message)
    }

    /// Whether a retry may help.
    pub fn retryable(&self) -> bool {
        self.kind.retryable()
    }

    /// A non-2xx HTTP answer, classified from its status, headers and body.
    pub fn from_http(status: u16, headers: &HeaderMap, body: &str) -> LlmError {
        let (error_type, message) = parse_error_body(body);
        let mut e = LlmError::new(
            classify(Some(status), &error_type, &message),
            if message.is_empty() {
                format!("HTTP {status}")
            } else {
                format!("HTTP {status}: {message}")
            },
        );
        e.status = Some(status);
        // Wall clock: an HTTP-date Retry-After is the server's real time, so ours is compared.
        e.retry_after = retry_after(headers, Utc::now());
        e
    }

    /// An error reported inside a stream (`event: error`, or an OpenAI chunk with `error`).
    pub fn from_api_error(error: &Value) -> LlmError {
        let (error_type, message) = error_fields(error);
        LlmError::new(
            classify(None, &error_type, &message),
            format!("{error_type}: {message}"),
        )
    }

    /// A transport failure from reqwest.
    pub fn from_reqwest(e: &reqwest::Error) -> LlmError {
        let kind = if e.is_timeout() {
            ErrorKind::Timeout
        } else if e.is_connect() || e.is_request() || e.is_body() || e.is_decode() {
            // A refused connection, a reset mid-stream: the network, worth a retry.
            ErrorKind::Network
        } else {
            ErrorKind::Internal
        };
        // reqwest's Display hides the cause ("error sending request"); the chain says why.
        let mut message = e.to_string();
        let mut source = std::error::Error::source(e);
        while let Some(s) = source {
            message.push_str(": ");
            message.push_str(&s.to_string());
            source = s.source();
        }
        let mut err = LlmError::new(kind, message);
        err.status = e.status().map(|s| s.as_u16());
        err
    }
}

/// The kind of an error from its HTTP status (when any), the provider's error type or code, and
/// its message (the statuses Anthropic and OpenAI really use).
pub fn classify(status: Option<u16>, error_type: &str, message: &str) -> ErrorKind {
    let t = error_type.to_ascii_lowercase();
    let m = message.to_lowercase();
    let has = |needles: &[&str]| needles.iter().any(|n| t.contains(n) || m.contains(n));
    match status {
        // OpenAI's "insufficient_quota" is a 429 that no wait fixes: billing, like a bad key.
        Some(429) if has(&["insufficient_quota", "credit balance"]) => ErrorKind::AuthError,
        Some(429) => ErrorKind::RateLimit,
        Some(401) | Some(403) => ErrorKind::AuthError,
        Some(408) => ErrorKind::Timeout,
        Some(413) => ErrorKind::ContextLength,
        Some(s) if s >= 500 => ErrorKind::ServerError,
        _ => {
            if has(&[
                "prompt is too long",
                "context_length_exceeded",
                "maximum context length",
                "context limit",
                "context window",
                "context size",
                "request_too_large",
            ]) {
                ErrorKind::ContextLength
            } else if has(&[
                "content_filter",
                "content filter",
                "content_policy",
                "content management policy",
                "flagged",
                "refusal",
            ]) {
                ErrorKind::ContentFilter
            } else if has(&["insufficient_quota", "credit balance"]) {
                ErrorKind::AuthError
            } else if has(&["rate_limit", "rate limit", "too many requests"]) {
                ErrorKind::RateLimit
            } else if has(&[
                "overloaded",
                "api_error",
                "server_error",
                "internal server error",
            ]) {
                ErrorKind::ServerError
            } else if has(&[
                "authentication",
                "failed to authenticate",
                "/login",
                "not logged in",
                "permission_error",
                "invalid api key",
                "invalid x-api-key",
                "invalid_api_key",
                "unauthorized",
            ]) {
                ErrorKind::AuthError
            } else if has(&["timed out", "timeout", "etimedout"]) {
                ErrorKind::Timeout
            } else if has(&[
                "econnrefused",
                "connection refused",
                "enotfound",
                "econnreset",
                "connection error",
                "network",
            ]) {
                ErrorKind::Network
            } else {
                ErrorKind::Internal
            }
        }
    }
}

/// (error type or code, message) of an error body: Anthropic `{"type":"error","error":{"type",
/// "message"}}`, OpenAI `{"error":{"message","type","code"}}`, or plain text.
fn parse_error_body(body: &str) -> (String, String) {
    let plain = || crate::truncate(body.trim(), MAX_MESSAGE).to_string();
    match serde_json::from_str::<Value>(body) {
        Ok(Value::Object(mut o)) => match o.remove("error") {
            Some(error) => error_fields(&error),
            None => (
                String::new(),
                o.get("message")
                    .and_then(Value::as_str)
                    .map(|s| crate::truncate(s, MAX_MESSAGE).to_string())
                    .unwrap_or_else(plain),
            ),
        },
        _ => (String::new(), plain()),
    }
}

/// (type and code joined, message) of an `error` object, or of a bare string.
fn error_fields(error: &Value) -> (String, String) {
    if let Some(s) = error.as_str() {
        return (String::new(), crate::truncate(s, MAX_MESSAGE).to_string());
    }
    let field = |k: &str| match error.get(k) {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Null) | None => String::new(),
        Some(v) => v.to_string(),
    };
    let kinds: Vec<String> = [field("type"), field("code")]
        .into_iter()
        .filter(|s| !s.is_empty())
        .collect();
    (
        kinds.join("/"),
        crate::truncate(&field("message"), MAX_MESSAGE).to_string(),
    )
}

/// The wait a response asks for: `retry-after-ms` (OpenAI, Anthropic SDKs) first, then
/// `retry-after` as seconds or an HTTP date (RFC 9110), relative to `now`.
pub fn retry_after(headers: &HeaderMap, now: DateTime<Utc>) -> Option<Duration> {
    let get = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
    };
    if let Some(ms) = get("retry-after-ms").and_then(|v| v.parse::<f64>().ok()) {
        if ms.is_finite() && ms >= 0.0 {
            return Some(Duration::from_secs_f64(ms / 1000.0));
        }
    }
    let v = get("retry-after")?;
    if let Ok(secs) = v.parse::<f64>() {
        return (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs));
    }
    let at = DateTime::parse_from_rfc2822(v).ok()?.with_timezone(&Utc);
    Some((at - now).to_std().unwrap_or(Duration::ZERO))
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;
    use reqwest::header::HeaderValue;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, HeaderValue::from_str(v).unwrap());
        }
        h
    }

    #[test]
    fn the_classifier_table() {
        let none = HeaderMap::new();
        let cases: &[(u16, &str, ErrorKind)] = &[
            (
                429,
                r#"{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}"#,
                ErrorKind::RateLimit,
            ),
            (
                429,
                r#"{"error":{"message":"You exceeded your current quota","type":"insufficient_quota","code":"insufficient_quota"}}"#,
                ErrorKind::AuthError,
            ),
            (
                401,
                r#"{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}"#,
                ErrorKind::AuthError,
            ),
            (403, "forbidden", ErrorKind::AuthError),
            (
                500,
                r#"{"type":"error","error":{"type":"api_error","message":"boom"}}"#,
                ErrorKind::ServerError,
            ),
            (503, "", ErrorKind::ServerError),
            (
                529,
                r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
                ErrorKind::ServerError,
            ),
            (408, "", ErrorKind::Timeout),
            (
                400,
                r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}}"#,
                ErrorKind::ContextLength,
            ),
            (
                400,
                r#"{"error":{"message":"This model's maximum context length is 128000 tokens","type":"invalid_request_error","code":"context_length_exceeded"}}"#,
                ErrorKind::ContextLength,
            ),
            (
                400,
                r#"{"error":{"message":"the request exceeds the available context size","type":"exceed_context_size_error"}}"#,
                ErrorKind::ContextLength,
            ),
            (
                413,
                r#"{"type":"error","error":{"type":"request_too_large","message":"too big"}}"#,
                ErrorKind::ContextLength,
            ),
            (
                400,
                r#"{"error":{"message":"Your request was flagged by our content filter","code":"content_filter"}}"#,
                ErrorKind::ContentFilter,
            ),
            (
                400,
                r#"{"error":{"message":"model 'nope' not found"}}"#,
                ErrorKind::Internal,
            ),
            (404, "not found", ErrorKind::Internal),
        ];
        for (status, body, kind) in cases {
            let e = LlmError::from_http(*status, &none, body);
            assert_eq!(e.kind, *kind, "{status} {body}");
            assert_eq!(e.status, Some(*status));
            assert_eq!(e.retryable(), kind.retryable());
        }
        let e = LlmError::from_http(
            401,
            &none,
            r#"{"error":{"message":"Incorrect API key provided"}}"#,
        );
        assert_eq!(e.message, "HTTP 401: Incorrect API key provided");
    }

    #[test]
    fn stream_errors_and_texts() {
        let e = LlmError::from_api_error(
            &serde_json::json!({"type":"overloaded_error","message":"Overloaded"}),
        );
        assert_eq!(e.kind, ErrorKind::ServerError);
        assert_eq!(e.status, None);
        assert_eq!(
            classify(None, "", "connect ECONNREFUSED 127.0.0.1:1"),
            ErrorKind::Network
        );
        assert_eq!(classify(None, "", "Request timed out"), ErrorKind::Timeout);
        assert_eq!(
            classify(None, "", "Credit balance is too low"),
            ErrorKind::AuthError
        );
        assert_eq!(
            classify(None, "", "Invalid API key · Please run /login"),
            ErrorKind::AuthError
        );
        assert_eq!(classify(None, "", "something odd"), ErrorKind::Internal);
    }

    #[test]
    fn kinds_serialise_snake_case_and_retryability() {
        let all = [
            (ErrorKind::RateLimit, "rate_limit", true),
            (ErrorKind::ServerError, "server_error", true),
            (ErrorKind::AuthError, "auth_error", false),
            (ErrorKind::Timeout, "timeout", true),
            (ErrorKind::Network, "network", true),
            (ErrorKind::ContentFilter, "content_filter", false),
            (ErrorKind::ContextLength, "context_length", false),
            (ErrorKind::Internal, "internal", false),
            (ErrorKind::BudgetExceeded, "budget_exceeded", false),
        ];
        for (k, name, retry) in all {
            assert_eq!(serde_json::to_value(k).unwrap(), name);
            assert_eq!(k.to_string(), name);
            assert_eq!(k.retryable(), retry);
        }
    }

    #[test]
    fn retry_after_forms() {
        let now = Utc.with_ymd_and_hms(2015, 10, 21, 7, 28, 0).unwrap();
        assert_eq!(
            retry_after(&headers(&[("retry-after", "1")]), now),
            Some(Duration::from_secs(1))
        );
        assert_eq!(
            retry_after(&headers(&[("retry-after", "2.5")]), now),
            Some(Duration::from_millis(2500))
        );
        assert_eq!(
            retry_after(
                &headers(&[("retry-after", "Wed, 21 Oct 2015 07:28:30 GMT")]),
                now
            ),
            Some(Duration::from_secs(30))
        );
        // A date in the past means now.
        assert_eq!(
            retry_after(
                &headers(&[("retry-after", "Wed, 21 Oct 2015 07:00:00 GMT")]),
                now
            ),
            Some(Duration::ZERO)
        );
        assert_eq!(
            retry_after(
                &headers(&[("retry-after-ms", "1500"), ("retry-after", "9")]),
                now
            ),
            Some(Duration::from_millis(1500))
        );
        assert_eq!(retry_after(&headers(&[("retry-after", "soon")]), now), None);
        assert_eq!(retry_after(&headers(&[("retry-after", "-3")]), now), None);
        assert_eq!(retry_after(&HeaderMap::new(), now), None);
        let e = LlmError::from_http(429, &headers(&[("retry-after", "7")]), "");
        assert_eq!(e.retry_after, Some(Duration::from_secs(7)));
        assert_eq!(e.message, "HTTP 429");
    }
}
