//! The model's answer protocol: one JSON object per reply,
//! `AIMessage`, with camelCase keys.
//!
//! Patterns: actions (`preText` + `validationRequest?` + `actionCommands` + `postText?` +
//! `keepControl?`), queries (`preText` + `dataCommands`), communication (`preText` +
//! `communicationModule` only), and in automations the end (`preText` + `completed: true`).
//!
//! Parsing is strict: unknown keys, wrong types, bad commands and mixed patterns are format
//! errors, each with a path (`dataCommands[1]`) and a short reason, rendered by
//! [`AiMessageError::feedback`] into the FORMAT_ERROR message sent back to the model. The reply
//! may wrap the object in prose or a ```json fence; [`extract_json`] finds it.

use crate::assistant::types::SessionKind;
use crate::assistant::vocabulary::{ActionCommand, DataCommand};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::fmt;

/// Prefix of the preText of the AIMessage stored in place of a reply that could not be parsed
/// (seed: "préfixe ai_response_invalid_format + texte brut").
pub const INVALID_FORMAT_PREFIX: &str = "ai_response_invalid_format";
/// Fewest options of a MultipleChoice module (seed: "options array min 2").
pub const MIN_CHOICES: usize = 2;
/// Most options of a MultipleChoice module, so a question stays answerable.
pub const MAX_CHOICES: usize = 10;

const KEYS: &[&str] = &[
    "preText",
    "validationRequest",
    "dataCommands",
    "actionCommands",
    "postText",
    "keepControl",
    "communicationModule",
    "completed",
];

/// A question put to the person in a chat. Ignored in automations.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "Value", tag = "type", content = "data")]
pub enum CommunicationModule {
    /// `{"type": "MultipleChoice", "data": {"question": str, "options": [str, ...]}}`.
    MultipleChoice {
        /// What is asked.
        question: String,
        /// The choices, at least two, distinct.
        options: Vec<String>,
    },
    /// `{"type": "Validation", "data": {"message": str}}`: a yes/no confirmation.
    Validation {
        /// What is to be confirmed.
        message: String,
    },
}

/// Why a communication module is refused; the text is the reason the model reads back (after
/// the path `communicationModule`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ModuleShapeError {
    /// Not a JSON object.
    #[error("must be an object {{\"type\": ..., \"data\": {{...}}}}")]
    NotAnObject,
    /// A top-level key other than `type` and `data`.
    #[error("unknown key {0:?} (allowed: type, data)")]
    UnknownKey(String),
    /// No `type`, or not a string.
    #[error("needs \"type\": \"MultipleChoice\" or \"Validation\"")]
    MissingType,
    /// A type other than MultipleChoice and Validation.
    #[error("unknown type {0:?} (expected MultipleChoice or Validation)")]
    UnknownType(String),
    /// No `data`, or not an object.
    #[error("needs \"data\": an object")]
    MissingData,
    /// A key in `data` the type does not take.
    #[error("unknown key data.{key} (allowed: {})", allowed.join(", "))]
    UnknownDataKey {
        key: String,
        allowed: &'static [&'static str],
    },
    /// A text field of `data` is absent.
    #[error("data.{0} is missing")]
    MissingText(&'static str),
    /// A text field of `data` is something other than a string.
    #[error("data.{0} must be a string")]
    NotText(&'static str),
    /// A text field of `data` is blank.
    #[error("data.{0} must not be empty")]
    EmptyText(&'static str),
    /// `data.options` is not an array.
    #[error("data.options must be an array of strings")]
    OptionsNotArray,
    /// An option that is not a string, or is blank.
    #[error("data.options must hold non-empty strings")]
    BlankOption,
    /// Fewer than [`MIN_CHOICES`] or more than [`MAX_CHOICES`] options; how many there are.
    #[error("data.options needs {MIN_CHOICES} to {MAX_CHOICES} options, found {0}")]
    OptionCount(usize),
    /// The same option twice.
    #[error("data.options must be distinct")]
    RepeatedOption,
}

impl CommunicationModule {
    /// Parses the module strictly.
    pub fn from_value(v: &Value) -> Result<Self, ModuleShapeError> {
        let obj = v.as_object().ok_or(ModuleShapeError::NotAnObject)?;
        if let Some(k) = obj.keys().find(|k| *k != "type" && *k != "data") {
            return Err(ModuleShapeError::UnknownKey(k.clone()));
        }
        let kind = obj
            .get("type")
            .and_then(Value::as_str)
            .ok_or(ModuleShapeError::MissingType)?;
        let data = obj
            .get("data")
            .and_then(Value::as_object)
            .ok_or(ModuleShapeError::MissingData)?;
        let text = |k: &'static str| match data.get(k) {
            Some(Value::String(s)) if !s.trim().is_empty() => Ok(s.clone()),
            Some(Value::String(_)) => Err(ModuleShapeError::EmptyText(k)),
            Some(_) => Err(ModuleShapeError::NotText(k)),
            None => Err(ModuleShapeError::MissingText(k)),
        };
        let only = |allowed: &'static [&'static str]| match data
            .keys()
            .find(|k| !allowed.contains(&k.as_str()))
        {
            Some(k) => Err(ModuleShapeError::UnknownDataKey {
                key: k.clone(),
                allowed,
            }),
            None => Ok(()),
        };
        match kind {
            "MultipleChoice" => {
                only(&["question", "options"])?;
                let question = text("question")?;
                let list = data
                    .get("options")
                    .and_then(Value::as_array)
                    .ok_or(ModuleShapeError::OptionsNotArray)?;
                let mut options = Vec::with_capacity(list.len());
                for o in list {
                    match o.as_str() {
                        Some(s) if !s.trim().is_empty() => options.push(s.to_string()),
                        _ => return Err(ModuleShapeError::BlankOption),
                    }
                }
                if options.len() < MIN_CHOICES || options.len() > MAX_CHOICES {
                    return Err(ModuleShapeError::OptionCount(options.len()));
                }
                if (1..options.len()).any(|i| options[..i].contains(&options[i])) {
                    return Err(ModuleShapeError::RepeatedOption);
                }
                Ok(CommunicationModule::MultipleChoice { question, options })
            }
            "Validation" => {
                only(&["message"])?;
                Ok(CommunicationModule::Validation {
                    message: text("message")?,
                })
            }
            other => Err(ModuleShapeError::UnknownType(other.to_string())),
        }
    }

    /// The module back as JSON.
    pub fn to_value(&self) -> Value {
        // Strings only: encoding cannot fail.
        serde_json::to_value(self).unwrap_or_default()
    }
}

impl TryFrom<Value> for CommunicationModule {
    type Error = ModuleShapeError;
    fn try_from(v: Value) -> Result<Self, ModuleShapeError> {
        CommunicationModule::from_value(&v)
    }
}

/// One reply of the model (`AIMessage` on the wire).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", try_from = "Value")]
pub struct AIMessage {
    /// Text for the person, always present.
    pub pre_text: String,
    /// The model asks the person to approve its actions (CHAT; ignored in automations).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub validation_request: Option<bool>,
    /// Queries to run; exclusive with actions.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data_commands: Option<Vec<DataCommand>>,
    /// Mutations to run; exclusive with queries.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub action_commands: Option<Vec<ActionCommand>>,
    /// Text shown after the actions succeeded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub post_text: Option<String>,
    /// CHAT: after successful actions, get the results and go on instead of handing over.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub keep_control: Option<bool>,
    /// CHAT: a question for the person; comes alone.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub communication_module: Option<CommunicationModule>,
    /// AUTOMATION: the work is done; the run ends.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub completed: Option<bool>,
}

impl AIMessage {
    /// The message stored in place of a reply that could not be parsed: the prefix and the raw
    /// text, so people still see what the model said.
    pub fn invalid_format(raw: &str) -> Self {
        AIMessage {
            pre_text: format!("{INVALID_FORMAT_PREFIX}: {raw}"),
            ..Default::default()
        }
    }

    /// Whether this is the invalid-format fallback.
    pub fn is_invalid_format(&self) -> bool {
        self.pre_text.starts_with(INVALID_FORMAT_PREFIX) && self.is_text_only()
    }

    /// The data commands, none if absent.
    pub fn data(&self) -> &[DataCommand] {
        self.data_commands.as_deref().unwrap_or_default()
    }

    /// The action commands, none if absent.
    pub fn actions(&self) -> &[ActionCommand] {
        self.action_commands.as_deref().unwrap_or_default()
    }

    /// Whether `completed: true` was sent.
    pub fn is_completed(&self) -> bool {
        self.completed == Some(true)
    }

    fn is_text_only(&self) -> bool {
        self.data().is_empty()
            && self.actions().is_empty()
            && self.communication_module.is_none()
            && !self.is_completed()
    }

    /// Parses an object strictly, whatever the session kind.
    pub fn from_value(v: &Value) -> Result<Self, AiMessageError> {
        let obj = v.as_object().ok_or(AiMessageError::NotAnObject)?;
        let mut issues = Vec::new();
        let mut issue = |path: &str, message: String| {
            issues.push(FormatIssue {
                path: path.to_string(),
                message,
            })
        };
        for k in obj.keys().filter(|k| !KEYS.contains(&k.as_str())) {
            issue(k, format!("unknown key (allowed: {})", KEYS.join(", ")));
        }
        let mut msg = AIMessage::default();
        match obj.get("preText") {
            Some(Value::String(s)) => msg.pre_text = s.clone(),
            Some(_) => issue("preText", "must be a string".into()),
            None => issue("preText", "is required (a string)".into()),
        }
        msg.validation_request = opt_bool(obj, "validationRequest", &mut issue);
        msg.keep_control = opt_bool(obj, "keepControl", &mut issue);
        msg.completed = opt_bool(obj, "completed", &mut issue);
        match obj.get("postText") {
            None | Some(Value::Null) => {}
            Some(Value::String(s)) => msg.post_text = Some(s.clone()),
            Some(_) => issue("postText", "must be a string".into()),
        }
        msg.data_commands = commands(obj, "dataCommands", DataCommand::from_value, &mut issue);
        msg.action_commands =
            commands(obj, "actionCommands", ActionCommand::from_value, &mut issue);
        match obj.get("communicationModule") {
            None | Some(Value::Null) => {}
            Some(v) => match CommunicationModule::from_value(v) {
                Ok(m) => msg.communication_module = Some(m),
                Err(e) => issue("communicationModule", e.to_string()),
            },
        }
        // The protocol's patterns: queries and actions are exclusive; a module comes alone.
        let has_data = obj.get("dataCommands").is_some_and(non_empty_array);
        let has_actions = obj.get("actionCommands").is_some_and(non_empty_array);
        if has_data && has_actions {
            issue(
                "actionCommands",
                "dataCommands and actionCommands are exclusive: query first, act in a later reply"
                    .into(),
            );
        }
        let has_module = obj.get("communicationModule").is_some_and(|v| !v.is_null());
        if has_module && (has_data || has_actions) {
            issue(
                "communicationModule",
                "comes alone: no dataCommands or actionCommands in the same reply".into(),
            );
        }
        if obj.get("completed") == Some(&Value::Bool(true)) && (has_data || has_actions) {
            issue(
                "completed",
                "ends the run at once, so commands beside it would never run: send completed in a reply of its own".into(),
            );
        }
        if issues.is_empty() {
            Ok(msg)
        } else {
            Err(AiMessageError::Invalid(issues))
        }
    }

    /// Checks what depends on the session kind: period modes in THREADS_IN_PERIOD.
    pub fn check_for_kind(&self, kind: SessionKind) -> Result<(), AiMessageError> {
        let issues: Vec<FormatIssue> = self
            .data()
            .iter()
            .enumerate()
            .filter_map(|(i, c)| {
                c.check_kind(kind).err().map(|e| FormatIssue {
                    path: format!("dataCommands[{i}]"),
                    message: e.to_string(),
                })
            })
            .collect();
        if issues.is_empty() {
            Ok(())
        } else {
            Err(AiMessageError::Invalid(issues))
        }
    }
}

impl TryFrom<Value> for AIMessage {
    type Error = AiMessageError;
    fn try_from(v: Value) -> Result<Self, AiMessageError> {
        AIMessage::from_value(&v)
    }
}

fn non_empty_array(v: &Value) -> bool {
    v.as_array().is_some_and(|a| !a.is_empty())
}

fn opt_bool(
    obj: &Map<String, Value>,
    key: &str,
    issue: &mut impl FnMut(&str, String),
) -> Option<bool> {
    match obj.get(key) {
        None | Some(Value::Null) => None,
        Some(Value::Bool(b)) => Some(*b),
        Some(_) => {
            issue(key, "must be true or false".into());
            None
        }
    }
}

fn commands<T, E: fmt::Display>(
    obj: &Map<String, Value>,
    key: &str,
    parse: fn(&Value) -> Result<T, E>,
    issue: &mut impl FnMut(&str, String),
) -> Option<Vec<T>> {
    match obj.get(key) {
        None | Some(Value::Null) => None,
        Some(Value::Array(items)) => {
            let mut out = Vec::with_capacity(items.len());
            for (i, item) in items.iter().enumerate() {
                match parse(item) {
                    Ok(c) => out.push(c),
                    Err(e) => issue(&format!("{key}[{i}]"), e.to_string()),
                }
            }
            Some(out)
        }
        Some(_) => {
            issue(key, "must be an array of commands".into());
            None
        }
    }
}

/// One problem in a reply, located by its JSON path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FormatIssue {
    /// Where: `preText`, `dataCommands[1]`, ...
    pub path: String,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for FormatIssue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path, self.message)
    }
}

/// Why a reply could not be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AiMessageError {
    /// Nothing but whitespace.
    #[error("the reply is empty")]
    Empty,
    /// No `{` anywhere.
    #[error("no JSON object found in the reply")]
    NoJson,
    /// Something that looked like JSON did not parse.
    #[error("invalid JSON: {0}")]
    InvalidJson(String),
    /// JSON, but not an object.
    #[error("the reply must be one JSON object, not an array or a value")]
    NotAnObject,
    /// An object with problems.
    #[error("{}", .0.iter().map(ToString::to_string).collect::<Vec<_>>().join("; "))]
    Invalid(Vec<FormatIssue>),
}

impl AiMessageError {
    /// The text of the FORMAT_ERROR system message sent back to the model: what was wrong,
    /// one line per problem, and what to send instead.
    pub fn feedback(&self) -> String {
        let problems = match self {
            AiMessageError::Invalid(issues) => issues
                .iter()
                .map(|i| format!("- {i}"))
                .collect::<Vec<_>>()
                .join("\n"),
            other => format!("- {other}"),
        };
        format!(
            "Your last reply could not be used:\n{problems}\nReply again with exactly one JSON object as documented (required: \"preText\")."
        )
    }
}

/// Finds the JSON object in a reply: the whole text, else a fenced block (```json ... ```),
/// else the first balanced `{...}` that parses.
pub fn extract_json(reply: &str) -> Result<Value, AiMessageError> {
    let text = reply.trim();
    if text.is_empty() {
        return Err(AiMessageError::Empty);
    }
    let whole = serde_json::from_str::<Value>(text);
    if let Ok(v) = &whole {
        return if v.is_object() {
            Ok(v.clone())
        } else {
            Err(AiMessageError::NotAnObject)
        };
    }
    // Candidates in order: fenced blocks, then each balanced `{...}` in the prose (bounded,
    // replies are short). An object with "preText" wins; else the first object.
    let mut first_error: Option<String> = None;
    let mut first_object: Option<Value> = None;
    let mut candidates: Vec<&str> = fenced_blocks(text);
    for start in text.match_indices('{').map(|(i, _)| i).take(64) {
        match balanced_end(&text[start..]) {
            Some(len) => candidates.push(&text[start..start + len]),
            None => {
                first_error.get_or_insert("unbalanced braces: the object is not closed".into());
            }
        }
    }
    for c in candidates {
        match serde_json::from_str::<Value>(c) {
            Ok(v) if v.get("preText").is_some() => return Ok(v),
            Ok(v) if v.is_object() => {
                first_object.get_or_insert(v);
            }
            Ok(_) => {}
            Err(e) => {
                first_error.get_or_insert(e.to_string());
            }
        }
    }
    if let Some(v) = first_object {
        return Ok(v);
    }
    match first_error {
        Some(e) => Err(AiMessageError::InvalidJson(e)),
        None if text.starts_with('{') || text.starts_with('[') => Err(AiMessageError::InvalidJson(
            whole.err().map(|e| e.to_string()).unwrap_or_default(),
        )),
        None => Err(AiMessageError::NoJson),
    }
}

/// Contents of ``` fences, the language tag line dropped.
fn fenced_blocks(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(open) = rest.find("```") {
        let after = &rest[open + 3..];
        // Skip the tag (`json`) up to the end of the line.
        let body_start = after.find('\n').map_or(after.len(), |i| i + 1);
        let tag = after[..body_start].trim();
        let body = if tag.starts_with('{') {
            after
        } else {
            &after[body_start..]
        };
        match body.find("```") {
            Some(close) => {
                out.push(body[..close].trim());
                rest = &body[close + 3..];
            }
            None => break,
        }
    }
    out
}

/// Length of the balanced `{...}` at the start of `s`, aware of strings and escapes.
fn balanced_end(s: &str) -> Option<usize> {
    let (mut depth, mut in_str, mut escaped) = (0usize, false, false);
    for (i, c) in s.char_indices() {
        if in_str {
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '"' => in_str = false,
                _ => {}
            }
            continue;
        }
        match c {
            '"' => in_str = true,
            '{' => depth += 1,
            '}' => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return Some(i + 1);
                }
            }
            _ => {}
        }
    }
    None
}

/// Parses a model reply for a session of `kind`: extraction, strict object parsing, then the
/// kind's own rules.
pub fn parse_reply(reply: &str, kind: SessionKind) -> Result<AIMessage, AiMessageError> {
    let v = extract_json(reply)?;
    let msg = AIMessage::from_value(&v)?;
    msg.check_for_kind(kind)?;
    Ok(msg)
}

/// The reply format, for the level-1 documentation.
pub fn format_documentation(kind: SessionKind) -> String {
    let mut s = String::from(
        "## Reply format\nAnswer with exactly one JSON object, no other text:\n\
{\"preText\": string (required, shown to the user),\n \"dataCommands\"?: [command, ...],\n \"actionCommands\"?: [command, ...],\n \"postText\"?: string (shown after the actions succeeded)",
    );
    if kind == SessionKind::Chat {
        s.push_str(
            ",\n \"validationRequest\"?: true (ask the user to approve your actions first),\n \"keepControl\"?: true (after successful actions, get the results and go on),\n \"communicationModule\"?: {\"type\": \"MultipleChoice\", \"data\": {\"question\": string, \"options\": [2 to 10 distinct strings]}} or {\"type\": \"Validation\", \"data\": {\"message\": string}}}\n",
        );
        s.push_str(
            "Each command is {\"type\": \"NAME\", \"params\": {...}}. dataCommands and actionCommands never come together; a communicationModule comes alone with preText. After data commands the results come back to you. After actions without keepControl, the user speaks next.\n",
        );
    } else {
        s.push_str(",\n \"completed\"?: true (the work is done; the run ends)}\n");
        s.push_str(
            "Each command is {\"type\": \"NAME\", \"params\": {...}}. dataCommands and actionCommands never come together. Nobody answers during a run: results of data commands and of actions come back to you, and you go on until you send {\"preText\": ..., \"completed\": true} in a reply of its own. Every reply must either carry commands or be that final one.\n",
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::assistant::vocabulary::DataCommand;
    use serde_json::json;

    fn issues(v: Value) -> Vec<String> {
        match AIMessage::from_value(&v) {
            Err(AiMessageError::Invalid(list)) => list.iter().map(ToString::to_string).collect(),
            other => panic!("expected issues, got {other:?}"),
        }
    }

    #[test]
    fn parses_the_three_patterns() {
        let q = AIMessage::from_value(
            &json!({"preText": "looking", "dataCommands": [{"type": "LIST_RULES", "params": {}}]}),
        )
        .unwrap();
        assert_eq!(q.data(), [DataCommand::ListRules]);
        assert!(q.actions().is_empty());
        let a = AIMessage::from_value(&json!({"preText": "renaming", "validationRequest": true,
            "actionCommands": [{"type": "ARCHIVE_THREAD", "params": {"thread_id": "t"}}],
            "postText": "done", "keepControl": false}))
        .unwrap();
        assert_eq!(a.actions().len(), 1);
        assert_eq!(a.validation_request, Some(true));
        assert_eq!(a.post_text.as_deref(), Some("done"));
        let c = AIMessage::from_value(&json!({"preText": "which?", "communicationModule":
            {"type": "MultipleChoice", "data": {"question": "Which one?", "options": ["a", "b"]}}}))
        .unwrap();
        assert!(matches!(
            c.communication_module,
            Some(CommunicationModule::MultipleChoice { .. })
        ));
        let done =
            AIMessage::from_value(&json!({"preText": "all done", "completed": true})).unwrap();
        assert!(done.is_completed());
    }

    #[test]
    fn serialises_with_the_seed_names() {
        let m = AIMessage {
            pre_text: "p".into(),
            validation_request: Some(true),
            data_commands: None,
            action_commands: Some(vec![]),
            post_text: Some("after".into()),
            keep_control: Some(true),
            communication_module: None,
            completed: Some(false),
        };
        let v = serde_json::to_value(&m).unwrap();
        assert_eq!(
            v,
            json!({"preText": "p", "validationRequest": true, "actionCommands": [],
            "postText": "after", "keepControl": true, "completed": false})
        );
        assert_eq!(serde_json::from_value::<AIMessage>(v).unwrap(), m);
    }

    #[test]
    fn strict_keys_and_types() {
        assert_eq!(issues(json!({"preText": "x", "pretext": "y"})),
            ["pretext: unknown key (allowed: preText, validationRequest, dataCommands, actionCommands, postText, keepControl, communicationModule, completed)"]);
        assert_eq!(issues(json!({})), ["preText: is required (a string)"]);
        assert_eq!(issues(json!({"preText": 3})), ["preText: must be a string"]);
        assert_eq!(
            issues(json!({"preText": "x", "keepControl": "yes"})),
            ["keepControl: must be true or false"]
        );
        assert_eq!(
            issues(json!({"preText": "x", "completed": 1})),
            ["completed: must be true or false"]
        );
        assert_eq!(
            issues(json!({"preText": "x", "postText": ["a"]})),
            ["postText: must be a string"]
        );
        assert_eq!(
            issues(json!({"preText": "x", "dataCommands": {"type": "LIST_RULES"}})),
            ["dataCommands: must be an array of commands"]
        );
        // Several problems are all reported.
        assert_eq!(issues(json!({"preText": 1, "completed": "y"})).len(), 2);
    }

    #[test]
    fn nulls_mean_absent() {
        let m = AIMessage::from_value(
            &json!({"preText": "x", "postText": null, "dataCommands": null,
            "communicationModule": null, "completed": null}),
        )
        .unwrap();
        assert_eq!(
            m,
            AIMessage {
                pre_text: "x".into(),
                ..Default::default()
            }
        );
    }

    #[test]
    fn bad_commands_are_located() {
        assert_eq!(
            issues(json!({"preText": "x", "dataCommands": [
            {"type": "LIST_RULES"}, {"type": "READ_THREAD", "params": {"id": "t"}}]})),
            ["dataCommands[1]: READ_THREAD: unknown param \"id\" (allowed: thread_id)"]
        );
        assert_eq!(
            issues(json!({"preText": "x", "actionCommands": [{"type": "LIST_RULES"}]})),
            ["actionCommands[0]: LIST_RULES is a data command: put it in dataCommands"]
        );
    }

    #[test]
    fn exclusive_patterns() {
        let d = json!([{"type": "LIST_RULES"}]);
        let a = json!([{"type": "ARCHIVE_THREAD", "params": {"thread_id": "t"}}]);
        let m = json!({"type": "Validation", "data": {"message": "ok?"}});
        assert_eq!(issues(json!({"preText": "x", "dataCommands": d, "actionCommands": a})),
            ["actionCommands: dataCommands and actionCommands are exclusive: query first, act in a later reply"]);
        assert_eq!(issues(json!({"preText": "x", "dataCommands": d, "communicationModule": m})),
            ["communicationModule: comes alone: no dataCommands or actionCommands in the same reply"]);
        assert!(
            issues(json!({"preText": "x", "actionCommands": a, "completed": true}))[0]
                .starts_with("completed: ends the run at once")
        );
        // Empty lists do not count.
        assert!(AIMessage::from_value(
            &json!({"preText": "x", "dataCommands": [], "actionCommands": a, "completed": false})
        )
        .is_ok());
    }

    #[test]
    fn communication_modules_are_strict() {
        let err = |m: Value| issues(json!({"preText": "x", "communicationModule": m}))[0].clone();
        assert_eq!(
            err(json!({"type": "MultipleChoice", "data": {"question": "q", "options": ["only"]}})),
            "communicationModule: data.options needs 2 to 10 options, found 1"
        );
        assert_eq!(
            err(
                json!({"type": "MultipleChoice", "data": {"question": "q", "options": ["a", "a"]}})
            ),
            "communicationModule: data.options must be distinct"
        );
        assert_eq!(
            err(json!({"type": "MultipleChoice", "data": {"question": "q", "options": ["a", 2]}})),
            "communicationModule: data.options must hold non-empty strings"
        );
        assert_eq!(
            err(json!({"type": "MultipleChoice", "data": {"options": ["a", "b"]}})),
            "communicationModule: data.question is missing"
        );
        assert_eq!(
            err(json!({"type": "Validation", "data": {"message": " "}})),
            "communicationModule: data.message must not be empty"
        );
        assert_eq!(
            err(json!({"type": "Validation", "data": {"message": "m", "level": 1}})),
            "communicationModule: unknown key data.level (allowed: message)"
        );
        assert_eq!(
            err(json!({"type": "Slider", "data": {}})),
            "communicationModule: unknown type \"Slider\" (expected MultipleChoice or Validation)"
        );
        assert_eq!(
            err(json!({"type": "Validation"})),
            "communicationModule: needs \"data\": an object"
        );
        assert_eq!(
            err(json!({"type": "Validation", "data": {"message": "m"}, "x": 1})),
            "communicationModule: unknown key \"x\" (allowed: type, data)"
        );
        assert_eq!(
            CommunicationModule::from_value(
                &json!({"type": "MultipleChoice", "data": {"question": "q", "options": ["a"]}})
            ),
            Err(ModuleShapeError::OptionCount(1))
        );
        let ok = CommunicationModule::from_value(
            &json!({"type": "Validation", "data": {"message": "m"}}),
        )
        .unwrap();
        assert_eq!(CommunicationModule::from_value(&ok.to_value()).unwrap(), ok);
    }

    #[test]
    fn extracts_from_prose_and_fences() {
        let obj = json!({"preText": "hi"});
        assert_eq!(extract_json("{\"preText\": \"hi\"}").unwrap(), obj);
        assert_eq!(
            extract_json("Sure!\n```json\n{\"preText\": \"hi\"}\n```\nDone.").unwrap(),
            obj
        );
        assert_eq!(
            extract_json("```\n{\"preText\": \"hi\"}\n```").unwrap(),
            obj
        );
        assert_eq!(extract_json("```{\"preText\": \"hi\"}```").unwrap(), obj);
        assert_eq!(
            extract_json("Here it is: {\"preText\": \"hi\"} hope it helps").unwrap(),
            obj
        );
        // Braces inside strings and prose braces before the object.
        assert_eq!(
            extract_json("use {braces} then {\"preText\": \"a } b { c\"}").unwrap(),
            json!({"preText": "a } b { c"})
        );
        assert_eq!(
            extract_json("{\"preText\": \"q \\\" }\"}").unwrap(),
            json!({"preText": "q \" }"})
        );
        // An object with preText is preferred to an earlier one without.
        assert_eq!(
            extract_json("e.g. {\"a\": 1} then {\"preText\": \"hi\"}").unwrap(),
            obj
        );
        assert_eq!(
            extract_json("```JSON\n{\"a\": 1}\n```").unwrap(),
            json!({"a": 1})
        );
    }

    #[test]
    fn extraction_errors() {
        assert_eq!(extract_json("  \n"), Err(AiMessageError::Empty));
        assert_eq!(
            extract_json("I cannot help with that."),
            Err(AiMessageError::NoJson)
        );
        assert_eq!(extract_json("[1, 2]"), Err(AiMessageError::NotAnObject));
        assert!(matches!(
            extract_json("{\"preText\": \"x\""),
            Err(AiMessageError::InvalidJson(_))
        ));
        assert!(matches!(
            extract_json("text {\"preText\": 'x'} text"),
            Err(AiMessageError::InvalidJson(_))
        ));
        assert!(matches!(
            extract_json("```json\n{preText: 1}\n```"),
            Err(AiMessageError::InvalidJson(_))
        ));
    }

    #[test]
    fn parse_reply_applies_kind_rules() {
        let chat_period = "{\"preText\": \"x\", \"dataCommands\": [{\"type\": \"THREADS_IN_PERIOD\", \"params\": {\"period\": \"-1_DAY\"}}]}";
        assert!(parse_reply(chat_period, SessionKind::Automation).is_ok());
        let e = parse_reply(chat_period, SessionKind::Chat).unwrap_err();
        assert!(
            e.to_string().starts_with(
                "dataCommands[0]: THREADS_IN_PERIOD: in a chat, use an absolute period"
            ),
            "{e}"
        );
    }

    #[test]
    fn feedback_lists_each_problem() {
        let e = parse_reply("{\"preText\": 1, \"foo\": 2}", SessionKind::Chat).unwrap_err();
        let f = e.feedback();
        assert!(
            f.starts_with("Your last reply could not be used:\n- "),
            "{f}"
        );
        assert!(f.contains("\n- foo: unknown key"), "{f}");
        assert!(f.contains("\n- preText: must be a string"), "{f}");
        assert!(f.ends_with("(required: \"preText\")."));
        let f = AiMessageError::NoJson.feedback();
        assert!(f.contains("- no JSON object found in the reply"));
    }

    #[test]
    fn invalid_format_fallback_keeps_the_raw_text() {
        let m = AIMessage::invalid_format("I think we should...");
        assert_eq!(
            m.pre_text,
            "ai_response_invalid_format: I think we should..."
        );
        assert!(m.is_invalid_format());
        let v = serde_json::to_value(&m).unwrap();
        assert_eq!(
            v,
            json!({"preText": "ai_response_invalid_format: I think we should..."})
        );
        assert!(!AIMessage {
            pre_text: "normal".into(),
            ..Default::default()
        }
        .is_invalid_format());
    }

    #[test]
    fn format_documentation_differs_by_kind() {
        let chat = format_documentation(SessionKind::Chat);
        let auto = format_documentation(SessionKind::Automation);
        assert!(chat.contains("keepControl") && chat.contains("MultipleChoice"));
        assert!(!chat.contains("\"completed\""));
        assert!(auto.contains("\"completed\"") && !auto.contains("communicationModule"));
    }
}
