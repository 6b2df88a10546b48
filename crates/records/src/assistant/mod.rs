//! The assistant's records: sessions and their messages, the model's answer protocol, the
//! command vocabulary, periods. The logic that runs sessions stays in `ai-smartness-assistant`.
//!
//! - [`types`]: sessions, messages, system messages, end reasons, automations, limits.
//! - [`message`]: the model's JSON reply (`AIMessage`), strict parsing, FORMAT_ERROR feedback.
//! - [`vocabulary`]: data and action commands, strict parsing, level-1 documentation.
//! - [`period`]: absolute (CHAT) and relative (AUTOMATION) periods resolved to `[start, end)`.

pub mod message;
pub mod period;
pub mod types;
pub mod vocabulary;
