//! What the model answered, checked strictly: one JSON object (a code fence around it is the
//! only tolerance), the fields of the shape asked with their types, values bounded. A refused
//! answer gets one corrective retry carrying the parse error ([`ask_json`]); after that the
//! caller keeps its local result.
//!
//! Malformed answers are logged as `malformed_json` events (the
//! raw answer cut to 500 characters, the context, whether the retry corrected it).

use crate::{ChatMessage, ChatRequest, LlmClient, LlmError};
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

/// Characters of a malformed answer kept in its log line.
pub const MAX_LOGGED_RAW: usize = 500;

/// Why an answer was refused; the message goes back to the model in the corrective retry.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum AnswerError {
    /// Not one JSON object.
    #[error("not a JSON object: {0}")]
    NotJson(String),
    /// JSON, but not the shape asked (a field missing, of the wrong type, or out of range).
    #[error("not the shape asked: {0}")]
    Shape(String),
}

/// Why [`ask_json`] gave no answer.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum AskError {
    /// The call failed (after its retries) or was refused by a limit.
    #[error("{0}")]
    Llm(#[from] LlmError),
    /// Both answers were refused.
    #[error("malformed answer twice: {0}")]
    Malformed(AnswerError),
}

/// A checked answer and the model that gave it.
#[derive(Debug, Clone, PartialEq)]
pub struct Answer<T> {
    /// The parsed value.
    pub value: T,
    /// The model that answered, as the provider named it.
    pub model: String,
    /// Whether the corrective retry was needed.
    pub corrected: bool,
}

/// The one JSON object `text` holds: the whole text (trimmed), or the inside of one Markdown
/// code fence that is the whole text.
pub fn json_object(text: &str) -> Result<Map<String, Value>, AnswerError> {
    let mut t = text.trim();
    if let Some(rest) = t.strip_prefix("```") {
        let rest = rest.strip_prefix("json").unwrap_or(rest);
        t = rest
            .trim_end()
            .strip_suffix("```")
            .ok_or_else(|| AnswerError::NotJson("an unclosed code fence".into()))?
            .trim();
    }
    match serde_json::from_str::<Value>(t) {
        Ok(Value::Object(m)) => Ok(m),
        Ok(other) => Err(AnswerError::NotJson(format!(
            "a JSON {} instead of an object",
            kind_of(&other)
        ))),
        Err(e) => Err(AnswerError::NotJson(e.to_string())),
    }
}

fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// The answer parsed as `T`: one JSON object ([`json_object`]) of that shape.
pub fn shaped<T: DeserializeOwned>(text: &str) -> Result<T, AnswerError> {
    serde_json::from_value(Value::Object(json_object(text)?))
        .map_err(|e| AnswerError::Shape(e.to_string()))
}

/// Sends `req`, parses the answer with `parse`; a refused answer gets one corrective retry
/// (the answer and the parse error appended to the conversation). `context` names the use in
/// the log (`extraction`, `coherence`, ...).
pub async fn ask_json<T>(
    client: &LlmClient,
    mut req: ChatRequest,
    context: &'static str,
    parse: impl Fn(&str) -> Result<T, AnswerError>,
) -> Result<Answer<T>, AskError> {
    let first = client.complete(&req, None).await?;
    let error = match parse(&first.text) {
        Ok(value) => {
            return Ok(Answer {
                value,
                model: first.model,
                corrected: false,
            })
        }
        Err(e) => e,
    };
    req.messages
        .push(ChatMessage::assistant(first.text.clone()));
    req.messages
        .push(ChatMessage::user(correction(&error.to_string())));
    let second = match client.complete(&req, None).await {
        Ok(r) => r,
        Err(e) => {
            log_malformed(context, 1, &first.text, &error, false);
            return Err(e.into());
        }
    };
    match parse(&second.text) {
        Ok(value) => {
            log_malformed(context, 1, &first.text, &error, true);
            Ok(Answer {
                value,
                model: second.model,
                corrected: true,
            })
        }
        Err(again) => {
            log_malformed(context, 1, &first.text, &error, false);
            log_malformed(context, 2, &second.text, &again, false);
            Err(AskError::Malformed(again))
        }
    }
}

/// The corrective turn after an answer that did not parse: the error, and the rule again.
pub fn correction(error: &str) -> String {
    format!(
        "Your answer could not be used: {}. Answer again with the JSON object only, exactly in \
         the shape asked: no prose, no code fence.",
        crate::cut(error, 300)
    )
}

fn log_malformed(context: &str, attempt: u32, raw: &str, error: &AnswerError, corrected: bool) {
    tracing::warn!(
        target: "llm",
        event = "malformed_json",
        context,
        attempt,
        corrected,
        error = %error,
        raw = %crate::truncate(raw, MAX_LOGGED_RAW),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_corrective_turn_cuts_a_long_error_with_a_marker() {
        let turn = correction(&format!("  {}  ", "x".repeat(400)));
        assert!(
            turn.contains(&format!("used: {} [...].", "x".repeat(300))),
            "{turn}"
        );
        assert!(correction("bad").contains("used: bad. Answer again"));
    }

    #[test]
    fn only_one_object_passes() {
        assert!(json_object(" {\"a\": 1} ").is_ok());
        assert!(json_object("```json\n{\"a\": 1}\n```").is_ok());
        assert!(json_object("```\n{\"a\": 1}\n```").is_ok());
        for bad in [
            "Sure! {\"a\": 1}",
            "{\"a\": 1} hope this helps",
            "[1]",
            "```json\n{\"a\": 1}",
            "",
        ] {
            assert!(json_object(bad).is_err(), "{bad}");
        }
    }
}
