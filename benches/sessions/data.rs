//! The Claude Code sessions of `../shared/bench/claude-sessions/` (or `$AI_BENCH_SESSIONS`):
//! each transcript cut into the units its README defines (a prompt, an assistant text block,
//! a tool call with its result), with the questions asked of it.

use serde_json::Value;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// Where the sessions are.
pub fn dataset_dir() -> PathBuf {
    match std::env::var_os("AI_BENCH_SESSIONS").filter(|v| !v.is_empty()) {
        Some(p) => PathBuf::from(p),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/bench/claude-sessions"),
    }
}

/// What kind of unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnitKind {
    Prompt,
    Answer,
    /// A tool call and its result.
    Tool,
}

/// One unit of a transcript.
#[derive(Debug, Clone)]
pub struct Unit {
    pub kind: UnitKind,
    /// The tool's name for a tool unit (`Bash`, `Read`), else `UserPrompt` or `Response`.
    pub tool: String,
    /// A tool call's input, its string values one per line (the command, the path...).
    pub input: String,
    /// The text: the prompt, the answer, or the tool's result.
    pub text: String,
    /// The records the unit comes from: the record of its text, and for a tool call the record
    /// that made the call too.
    pub uuids: Vec<String>,
    /// RFC 3339, when the record has one.
    pub timestamp: Option<String>,
}

/// A question asked of a session.
#[derive(Debug, Clone)]
pub struct Question {
    pub q: String,
    pub answers: Vec<String>,
    pub evidence: Vec<String>,
    pub kind: String,
}

/// One session.
#[derive(Debug, Clone)]
pub struct Session {
    pub name: String,
    pub units: Vec<Unit>,
    pub questions: Vec<Question>,
    pub unrelated: Vec<String>,
    /// Bytes of the transcript file.
    pub bytes: usize,
}

/// Every session of `dir`, by name.
pub fn load(dir: &Path) -> Result<Vec<Session>, String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map_err(|e| format!("cannot read {}: {e} (set AI_BENCH_SESSIONS)", dir.display()))?
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            name.strip_suffix(".jsonl").map(str::to_string)
        })
        .collect();
    names.sort();
    if names.is_empty() {
        return Err(format!("no .jsonl transcript in {}", dir.display()));
    }
    names
        .into_iter()
        .map(|name| {
            let transcript = dir.join(format!("{name}.jsonl"));
            let text = std::fs::read_to_string(&transcript)
                .map_err(|e| format!("{}: {e}", transcript.display()))?;
            let (questions, unrelated) =
                load_questions(&dir.join(format!("{name}.questions.json")))?;
            Ok(Session {
                units: units(&text),
                bytes: text.len(),
                name,
                questions,
                unrelated,
            })
        })
        .collect()
}

fn load_questions(path: &Path) -> Result<(Vec<Question>, Vec<String>), String> {
    let Ok(text) = std::fs::read_to_string(path) else {
        return Ok((Vec::new(), Vec::new()));
    };
    let v: Value = serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    let strings = |v: &Value| -> Vec<String> {
        v.as_array()
            .into_iter()
            .flatten()
            .filter_map(|s| s.as_str().map(str::to_string))
            .collect()
    };
    let questions = v["questions"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|q| Question {
            q: q["q"].as_str().unwrap_or_default().to_string(),
            answers: strings(&q["answer"]),
            evidence: strings(&q["evidence"]),
            kind: q["kind"].as_str().unwrap_or_default().to_string(),
        })
        .collect();
    Ok((questions, strings(&v["unrelated"])))
}

/// The string values of a tool's input, one per line.
fn input_text(input: &Value) -> String {
    match input {
        Value::String(s) => s.clone(),
        Value::Object(map) => map
            .values()
            .map(input_text)
            .filter(|s| !s.is_empty())
            .collect::<Vec<_>>()
            .join("\n"),
        Value::Array(items) => items
            .iter()
            .map(input_text)
            .filter(|s| !s.is_empty())
            .collect::<Vec<_>>()
            .join("\n"),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// A tool result's text: a string, or its text blocks.
fn result_text(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter_map(|b| b["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// The units of a transcript, in the file's order.
pub fn units(text: &str) -> Vec<Unit> {
    let mut out = Vec::new();
    // Tool use id → (tool name, its input as text, the uuid of the record that made the call).
    let mut calls: HashMap<String, (String, String, String)> = HashMap::new();
    for line in text.lines() {
        let Ok(v) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        let kind = v["type"].as_str().unwrap_or("");
        if kind != "user" && kind != "assistant" {
            continue;
        }
        let uuid = v["uuid"].as_str().unwrap_or_default().to_string();
        let timestamp = v["timestamp"].as_str().map(str::to_string);
        let mut push =
            |kind: UnitKind, tool: &str, input: String, text: String, call: Option<String>| {
                if text.trim().is_empty() && input.trim().is_empty() {
                    return;
                }
                let mut uuids = vec![uuid.clone()];
                uuids.extend(call.filter(|c| !c.is_empty() && *c != uuid));
                out.push(Unit {
                    kind,
                    tool: tool.to_string(),
                    input,
                    text,
                    uuids,
                    timestamp: timestamp.clone(),
                });
            };
        let content = &v["message"]["content"];
        let (plain_kind, plain_tool) = if kind == "user" {
            (UnitKind::Prompt, "UserPrompt")
        } else {
            (UnitKind::Answer, "Response")
        };
        if let Some(s) = content.as_str() {
            push(plain_kind, plain_tool, String::new(), s.to_string(), None);
            continue;
        }
        for block in content.as_array().into_iter().flatten() {
            match block["type"].as_str() {
                Some("text") => push(
                    plain_kind,
                    plain_tool,
                    String::new(),
                    block["text"].as_str().unwrap_or_default().to_string(),
                    None,
                ),
                Some("tool_use") => {
                    if let (Some(id), Some(name)) = (block["id"].as_str(), block["name"].as_str()) {
                        calls.insert(
                            id.to_string(),
                            (name.to_string(), input_text(&block["input"]), uuid.clone()),
                        );
                    }
                }
                Some("tool_result") => {
                    let (tool, input, call) = block["tool_use_id"]
                        .as_str()
                        .and_then(|id| calls.get(id))
                        .cloned()
                        .unwrap_or_else(|| ("Tool".into(), String::new(), String::new()));
                    push(
                        UnitKind::Tool,
                        &tool,
                        input,
                        result_text(&block["content"]),
                        Some(call),
                    );
                }
                _ => {}
            }
        }
    }
    out
}
