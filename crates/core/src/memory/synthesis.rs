//! The compaction synthesis as a document: the five most active threads (summary, decisions
//! made, open questions, key insights), and the text injected from it after a compaction.

use super::decay::thread_weight;
use super::engine::Memory;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use std::fmt::Write;

/// The synthesis a compaction leaves (`synthesis/synthesis_*.json`): what the next session
/// starts from. Every field defaults, so a file of an older version still reads.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Synthesis {
    /// When it was written (RFC 3339).
    pub created_at: String,
    /// The Claude Code session that was compacted, when it said.
    pub session_id: Option<String>,
    /// `manual` or `auto`, as the client said.
    pub trigger: Option<String>,
    /// `local`, or `llm` once a model rewrote the prose.
    pub generator: String,
    /// The model that rewrote it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    pub summary: String,
    pub decisions_made: Vec<String>,
    pub open_questions: Vec<String>,
    pub key_insights: Vec<String>,
    /// The most active threads, heaviest first.
    pub threads: Vec<SynthesisThread>,
}

/// One thread of a [`Synthesis`].
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SynthesisThread {
    pub id: String,
    pub title: String,
    pub summary: String,
    pub topics: Vec<String>,
    /// Its weight then, to three decimals.
    pub weight: f64,
    /// RFC 3339.
    pub last_active: String,
}

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
) -> Synthesis {
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
    Synthesis {
        created_at: now.to_rfc3339(),
        session_id: session_id.map(str::to_string),
        trigger: trigger.map(str::to_string),
        generator: "local".into(),
        model: None,
        summary,
        decisions_made: decisions,
        open_questions: questions,
        key_insights: insights,
        threads: threads
            .iter()
            .map(|t| SynthesisThread {
                id: t.id.clone(),
                title: t.title.clone(),
                summary: t.summary.clone(),
                topics: t.topics.iter().take(8).cloned().collect(),
                weight: (thread_weight(t, now) * 1000.0).round() / 1000.0,
                last_active: t.last_active.to_rfc3339(),
            })
            .collect(),
    }
}

/// The synthesis as the text injected after a compaction.
pub fn continuation_text(s: &Synthesis) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "SESSION CONTINUATION (ai-smartness synthesis written before the compaction, {}):",
        s.created_at
    );
    let _ = writeln!(out, "{}", s.summary);
    for (label, items) in [
        ("Decisions made", &s.decisions_made),
        ("Open questions", &s.open_questions),
        ("Key insights", &s.key_insights),
    ] {
        if !items.is_empty() {
            let _ = writeln!(out, "{label}:");
            for i in items {
                let _ = writeln!(out, "- {i}");
            }
        }
    }
    if !s.threads.is_empty() {
        let _ = writeln!(out, "Threads:");
        for t in &s.threads {
            let _ = writeln!(
                out,
                "- {} ({}): {}",
                t.title,
                t.id,
                first_sentence(&t.summary, 200)
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_file_keeps_its_field_names_and_an_older_one_still_reads() {
        let now = chrono::TimeZone::with_ymd_and_hms(&Utc, 2026, 5, 4, 9, 0, 0).unwrap();
        let s = build(&Memory::default(), now, Some("s1"), Some("auto"));
        let v = serde_json::to_value(&s).unwrap();
        let mut keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
        keys.sort_unstable();
        assert_eq!(
            keys,
            [
                "created_at",
                "decisions_made",
                "generator",
                "key_insights",
                "open_questions",
                "session_id",
                "summary",
                "threads",
                "trigger"
            ]
        );
        assert_eq!(v["generator"], "local");
        let old: Synthesis = serde_json::from_str(
            r#"{"created_at": "2026-01-01T00:00:00+00:00", "summary": "Work on the parser.",
                "threads": [{"id": "thread_x", "title": "Parser"}]}"#,
        )
        .unwrap();
        let text = continuation_text(&old);
        assert!(text.contains("Work on the parser.") && text.contains("- Parser (thread_x): "));
    }
}
