//! The compaction synthesis as a document: the five most active threads (summary, decisions
//! made, open questions, key insights), and the text injected from it after a compaction.

use super::decay::thread_weight;
use super::engine::Memory;
use chrono::{DateTime, Utc};
use serde_json::{json, Value};
use std::fmt::Write;

/// Threads in a synthesis.
pub const SYNTHESIS_THREADS: usize = 5;

fn first_sentence(s: &str, max: usize) -> String {
    let flat = s.split_whitespace().collect::<Vec<_>>().join(" ");
    let end = flat
        .find(['.', '!', '?'])
        .map(|i| i + 1)
        .unwrap_or(flat.len());
    flat[..end].chars().take(max).collect()
}

/// The synthesis document, built from the most active threads.
pub fn build(
    mem: &Memory,
    now: DateTime<Utc>,
    session_id: Option<&str>,
    trigger: Option<&str>,
) -> Value {
    let threads = mem.most_active(now, SYNTHESIS_THREADS);
    let titles: Vec<&str> = threads.iter().map(|t| t.title.as_str()).collect();
    let summary = if titles.is_empty() {
        "No active work recorded yet.".to_string()
    } else {
        format!("Work in progress on: {}.", titles.join("; "))
    };
    let mut decisions = Vec::new();
    let mut questions = Vec::new();
    let mut insights = Vec::new();
    for t in &threads {
        decisions.extend(
            t.decisions
                .iter()
                .rev()
                .take(3)
                .map(|d| format!("{} — {}", t.title, d)),
        );
        questions.extend(
            t.questions
                .iter()
                .rev()
                .take(3)
                .map(|q| format!("{} — {}", t.title, q)),
        );
        // The latest message says where the thread stands now.
        if let Some(m) = t.messages.last() {
            let s = first_sentence(&m.content, 200);
            if !s.is_empty() {
                insights.push(format!("{}: {}", t.title, s));
            }
        }
    }
    json!({
        "created_at": now.to_rfc3339(),
        "session_id": session_id,
        "trigger": trigger,
        "generator": "local",
        "summary": summary,
        "decisions_made": decisions,
        "open_questions": questions,
        "key_insights": insights,
        "threads": threads.iter().map(|t| json!({
            "id": t.id,
            "title": t.title,
            "summary": t.summary,
            "topics": t.topics.iter().take(8).collect::<Vec<_>>(),
            "weight": (thread_weight(t, now) * 1000.0).round() / 1000.0,
            "last_active": t.last_active.to_rfc3339(),
        })).collect::<Vec<_>>(),
    })
}

/// The synthesis as the text injected after a compaction.
pub fn continuation_text(s: &Value) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "SESSION CONTINUATION (ai-smartness synthesis written before the compaction, {}):",
        s["created_at"].as_str().unwrap_or("")
    );
    let _ = writeln!(out, "{}", s["summary"].as_str().unwrap_or(""));
    for (label, key) in [
        ("Decisions made", "decisions_made"),
        ("Open questions", "open_questions"),
        ("Key insights", "key_insights"),
    ] {
        let items: Vec<&str> = s[key]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        if !items.is_empty() {
            let _ = writeln!(out, "{label}:");
            for i in items {
                let _ = writeln!(out, "- {i}");
            }
        }
    }
    let threads: Vec<String> = s["threads"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|t| {
            format!(
                "- {} ({}): {}",
                t["title"].as_str().unwrap_or(""),
                t["id"].as_str().unwrap_or(""),
                first_sentence(t["summary"].as_str().unwrap_or(""), 200)
            )
        })
        .collect();
    if !threads.is_empty() {
        let _ = writeln!(out, "Threads:");
        for t in threads {
            let _ = writeln!(out, "{t}");
        }
    }
    out
}
