//! BEAM's long coding conversations (`../shared/bench/beam-500k-coding/`, or
//! `$AI_BENCH_BEAM`): each message with its id, and the probing questions with the ids of the
//! messages that hold their evidence.

use serde_json::Value;
use std::path::{Path, PathBuf};

/// Where the conversations are.
pub fn dataset_dir() -> PathBuf {
    match std::env::var_os("AI_BENCH_BEAM").filter(|v| !v.is_empty()) {
        Some(p) => PathBuf::from(p),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/bench/beam-500k-coding"),
    }
}

/// One message of a conversation.
#[derive(Debug, Clone)]
pub struct Message {
    pub id: u64,
    /// `user` or `assistant`.
    pub role: String,
    pub content: String,
    /// The conversation's own date for it (`January-05-2024`), when it gives one.
    pub date: Option<String>,
}

/// A probing question.
#[derive(Debug, Clone)]
pub struct Question {
    pub q: String,
    pub kind: String,
    /// The message ids holding its evidence (empty for abstention questions).
    pub evidence: Vec<u64>,
}

#[derive(Debug, Clone)]
pub struct Conversation {
    /// The folder's name (`1` to `5`).
    pub name: String,
    pub messages: Vec<Message>,
    pub questions: Vec<Question>,
}

/// Every conversation of `dir`, by folder name.
pub fn load(dir: &Path) -> Result<Vec<Conversation>, String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map_err(|e| format!("cannot read {}: {e} (set AI_BENCH_BEAM)", dir.display()))?
        .filter_map(|e| e.ok())
        .filter(|e| e.path().join("chat.json").is_file())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names.into_iter().map(|n| load_one(dir, n)).collect()
}

fn read(path: &Path) -> Result<Value, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))
}

fn load_one(dir: &Path, name: String) -> Result<Conversation, String> {
    let chat = read(&dir.join(&name).join("chat.json"))?;
    let mut messages = Vec::new();
    for batch in chat.as_array().into_iter().flatten() {
        let batch_date = batch["time_anchor"].as_str().map(str::to_string);
        for session in batch["turns"].as_array().into_iter().flatten() {
            for m in session.as_array().into_iter().flatten() {
                let (Some(id), Some(content)) = (m["id"].as_u64(), m["content"].as_str()) else {
                    continue;
                };
                messages.push(Message {
                    id,
                    role: m["role"].as_str().unwrap_or("user").to_string(),
                    content: content.to_string(),
                    date: m["time_anchor"]
                        .as_str()
                        .map(str::to_string)
                        .or_else(|| batch_date.clone()),
                });
            }
        }
    }
    let probing = read(&dir.join(&name).join("probing_questions.json"))?;
    let mut questions = Vec::new();
    for (kind, list) in probing.as_object().into_iter().flatten() {
        for q in list.as_array().into_iter().flatten() {
            let Some(text) = q["question"].as_str() else {
                continue;
            };
            let mut evidence = Vec::new();
            collect_ids(&q["source_chat_ids"], &mut evidence);
            evidence.sort_unstable();
            evidence.dedup();
            questions.push(Question {
                q: text.to_string(),
                kind: kind.clone(),
                evidence,
            });
        }
    }
    Ok(Conversation {
        name,
        messages,
        questions,
    })
}

/// The ids in a list, or in an object of lists (the kinds that compare two statements).
fn collect_ids(v: &Value, out: &mut Vec<u64>) {
    match v {
        Value::Number(n) => out.extend(n.as_u64()),
        Value::Array(items) => items.iter().for_each(|i| collect_ids(i, out)),
        Value::Object(map) => map.values().for_each(|i| collect_ids(i, out)),
        _ => {}
    }
}

/// `January-05-2024` as a day.
pub fn parse_date(text: &str) -> Option<chrono::NaiveDate> {
    chrono::NaiveDate::parse_from_str(text, "%B-%d-%Y").ok()
}
