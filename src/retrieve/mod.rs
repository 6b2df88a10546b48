//! Retrieval: which stored memory is relevant to a prompt, packed into a token budget with the
//! provenance of every message it quotes. Threads are ranked by the section 4.2 similarity;
//! within a thread, the messages that share the most terms with the prompt are quoted.

use crate::embed::tfidf::terms;
use crate::memory::decay::thread_weight;
use crate::memory::engine::Memory;
use crate::memory::model::{Message, Thread, ThreadStatus};
use crate::memory::similarity::similarity;
use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::{Map, Value};
use std::collections::HashSet;
use std::fmt::Write;

/// Characters per token, for budgets (SPEC-NOTES: tokens counted as characters / 4).
pub const CHARS_PER_TOKEN: usize = 4;
/// Messages quoted per thread at most.
const MESSAGES_PER_THREAD: usize = 3;
/// A quoted message is cut around its best match to this many characters.
const EXCERPT_CHARS: usize = 320;

/// What is being looked for.
#[derive(Debug, Clone)]
pub struct Query {
    pub text: String,
    pub embedding: Vec<f32>,
    pub topics: Vec<String>,
}

#[derive(Debug, Clone)]
pub struct Options {
    pub budget_tokens: usize,
    pub max_threads: usize,
    pub min_relevance: f64,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ThreadHit {
    pub id: String,
    pub title: String,
    pub score: f64,
}

/// A stored message whose text (whole or in part) is in the context.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct MessageRef {
    pub thread_id: String,
    pub message_id: String,
    pub metadata: Map<String, Value>,
}

/// The packed context and where each part came from.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Context {
    pub text: String,
    pub tokens: usize,
    pub threads: Vec<ThreadHit>,
    pub messages: Vec<MessageRef>,
}

/// Threads relevant to the query, best first (active and suspended; archived never).
pub fn rank_threads(mem: &Memory, q: &Query, opts: &Options) -> Vec<(String, f64)> {
    let emb = (!q.embedding.is_empty()).then_some(q.embedding.as_slice());
    let mut scored: Vec<(String, f64)> = mem
        .graph
        .threads()
        .filter(|t| t.status == ThreadStatus::Active)
        .map(|t| {
            (
                t.id.clone(),
                similarity(emb, t.embedding.as_deref(), &q.topics, &t.topics),
            )
        })
        .filter(|(_, s)| *s >= opts.min_relevance)
        .collect();
    scored.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    scored.truncate(opts.max_threads);
    scored
}

/// Builds the context for a query within the budget.
pub fn build_context(mem: &Memory, q: &Query, opts: &Options, now: DateTime<Utc>) -> Context {
    let query_terms: HashSet<String> = terms(&q.text).collect();
    let budget_chars = opts.budget_tokens.saturating_mul(CHARS_PER_TOKEN);
    let mut ctx = Context::default();
    for (id, score) in rank_threads(mem, q, opts) {
        let Some(t) = mem.graph.thread(&id) else {
            continue;
        };
        let picked = pick_messages(t, &query_terms);
        // Try with every picked message, then fewer, until the block fits.
        for keep in (0..=picked.len()).rev() {
            let block = thread_block(t, score, &picked[..keep], &query_terms, now);
            if ctx.text.len() + block.len() <= budget_chars {
                ctx.text.push_str(&block);
                ctx.threads.push(ThreadHit {
                    id: t.id.clone(),
                    title: t.title.clone(),
                    score,
                });
                ctx.messages
                    .extend(picked[..keep].iter().map(|m| MessageRef {
                        thread_id: t.id.clone(),
                        message_id: m.id.clone(),
                        metadata: m.metadata.clone(),
                    }));
                break;
            }
        }
    }
    ctx.tokens = ctx.text.len().div_ceil(CHARS_PER_TOKEN);
    ctx
}

/// The messages sharing the most terms with the query (recent first among equals), in time order.
fn pick_messages<'a>(t: &'a Thread, query_terms: &HashSet<String>) -> Vec<&'a Message> {
    let mut scored: Vec<(usize, usize, &Message)> = t
        .messages
        .iter()
        .enumerate()
        .map(|(i, m)| {
            let words: HashSet<String> = terms(&m.content).collect();
            (words.intersection(query_terms).count(), i, m)
        })
        .collect();
    scored.sort_by(|a, b| b.0.cmp(&a.0).then(b.1.cmp(&a.1)));
    let any_match = scored.first().is_some_and(|s| s.0 > 0);
    let mut chosen: Vec<(usize, &Message)> = scored
        .into_iter()
        .filter(|s| s.0 > 0 || !any_match)
        .take(MESSAGES_PER_THREAD)
        .map(|(_, i, m)| (i, m))
        .collect();
    chosen.sort_by_key(|(i, _)| *i);
    chosen.into_iter().map(|(_, m)| m).collect()
}

fn thread_block(
    t: &Thread,
    score: f64,
    messages: &[&Message],
    query_terms: &HashSet<String>,
    now: DateTime<Utc>,
) -> String {
    let mut b = String::new();
    let _ = writeln!(
        b,
        "## {} (relevance {:.2}, weight {:.2}, last active {})",
        t.title,
        score,
        thread_weight(t, now),
        t.last_active.format("%Y-%m-%d")
    );
    if !t.summary.is_empty() {
        let _ = writeln!(b, "Summary: {}", one_line(&t.summary, 400));
    }
    for m in messages {
        let tool = m.metadata.get("tool").and_then(Value::as_str).unwrap_or("");
        let _ = writeln!(
            b,
            "- [{} {}] {}",
            m.timestamp.format("%Y-%m-%d %H:%M"),
            tool,
            excerpt(&m.content, query_terms)
        );
    }
    b.push('\n');
    b
}

fn one_line(s: &str, max: usize) -> String {
    let joined = s.split_whitespace().collect::<Vec<_>>().join(" ");
    if joined.chars().count() <= max {
        joined
    } else {
        format!("{}…", joined.chars().take(max).collect::<String>())
    }
}

/// The message on one line, cut to a window around its first query term when long.
fn excerpt(content: &str, query_terms: &HashSet<String>) -> String {
    let flat = content.split_whitespace().collect::<Vec<_>>().join(" ");
    let chars: Vec<char> = flat.chars().collect();
    if chars.len() <= EXCERPT_CHARS {
        return flat;
    }
    let lower = flat.to_lowercase();
    let hit_byte = query_terms
        .iter()
        .filter_map(|t| lower.find(t.as_str()))
        .min()
        .unwrap_or(0);
    // Lowercasing can change byte lengths; map back through a char count on the lowered text.
    let hit_char = lower
        .get(..hit_byte)
        .map(|p| p.chars().count())
        .unwrap_or(0)
        .min(chars.len());
    let start = hit_char.saturating_sub(EXCERPT_CHARS / 4);
    let end = (start + EXCERPT_CHARS).min(chars.len());
    let start = end.saturating_sub(EXCERPT_CHARS);
    let mut out = String::new();
    if start > 0 {
        out.push('…');
    }
    out.extend(&chars[start..end]);
    if end < chars.len() {
        out.push('…');
    }
    out
}
