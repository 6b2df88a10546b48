//! Recall on demand: what a search asked for by the model or a person lists (the best messages
//! for a query, whatever the relevance gate says), and the memory in time order around a
//! message or over a period. Pure reads of the memory: nothing is boosted or reactivated.

use super::{excerpt, gate, one_line, Cache, Gate, Query, Ranking, Why};
use crate::memory::engine::Memory;
use crate::memory::types::{Message, Thread, ThreadStatus};
use ai_smartness_vectors::tfidf::terms;
use chrono::{DateTime, Utc};
use std::collections::HashSet;
use std::sync::Arc;

/// Which messages a recall or a timeline keeps.
#[derive(Debug, Clone)]
pub struct Scope {
    /// From then on (inclusive).
    pub since: Option<DateTime<Utc>>,
    /// Before then (exclusive).
    pub until: Option<DateTime<Utc>>,
    /// Threads of these statuses only.
    pub statuses: Vec<ThreadStatus>,
}

impl Scope {
    /// Active and suspended threads, all of time.
    pub fn live() -> Scope {
        Scope {
            since: None,
            until: None,
            statuses: vec![ThreadStatus::Active, ThreadStatus::Suspended],
        }
    }

    fn admits_time(&self, at: DateTime<Utc>) -> bool {
        self.since.is_none_or(|s| at >= s) && self.until.is_none_or(|u| at < u)
    }

    fn admits(&self, t: &Thread, m: &Message) -> bool {
        self.statuses.contains(&t.status) && self.admits_time(m.timestamp)
    }
}

/// A message found, with its thread and what to show of it.
#[derive(Debug, Clone)]
pub struct Found<'m> {
    pub thread: &'m Thread,
    pub message: &'m Message,
    /// Its score and what made it (zero for a timeline).
    pub why: Why,
    /// The part of it that matched (a search), or its start (a timeline), on one line.
    pub snippet: String,
}

/// A snippet of a timeline entry: enough to tell what happened.
const TIMELINE_SNIPPET_CHARS: usize = 200;

/// The `limit` best messages for `q` within `scope`, best first, and the gate's verdict on the
/// query (what injection would have decided). The same text stored twice is listed once.
pub fn recall<'m>(
    mem: &'m Memory,
    cache: &Cache,
    q: &Query,
    scope: &Scope,
    limit: usize,
    now: DateTime<Utc>,
) -> (Vec<Found<'m>>, Gate) {
    let ranking: Arc<Ranking> = if scope.statuses.contains(&ThreadStatus::Archived) {
        // Archived threads are never injected, so the cached ranking leaves them out.
        Arc::new(super::rank_scoped(mem, q, now, true))
    } else {
        cache.rank(mem, q, now)
    };
    let query_terms: HashSet<String> = terms(&q.text).collect();
    let mut seen: HashSet<u64> = HashSet::new();
    let mut found = Vec::new();
    for m in &ranking.messages {
        if found.len() >= limit {
            break;
        }
        let Some(thread) = ranking
            .thread_ids
            .get(m.thread as usize)
            .and_then(|id| mem.graph.thread(id))
        else {
            continue;
        };
        let Some(message) = thread.messages.get(m.position as usize) else {
            continue;
        };
        if !scope.admits(thread, message)
            || !seen.insert(super::index::content_key(&message.content))
        {
            continue;
        }
        found.push(Found {
            thread,
            message,
            why: m.why.rounded(),
            // The unit that matched, not the message's opening.
            snippet: excerpt(message.unit_text(m.part as usize), &query_terms),
        });
    }
    (found, gate(&ranking.stats))
}

/// Why a timeline could not be drawn.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TimelineError {
    #[error("no message {0}")]
    NoMessage(String),
}

/// A timeline: messages oldest first, and how many more the period holds beyond the limit.
#[derive(Debug, Clone)]
pub struct Timeline<'m> {
    pub messages: Vec<Found<'m>>,
    pub more: usize,
}

/// With `around`, the `limit` messages closest in time to that one (it included, about half
/// before and half after); else the newest `limit` messages within `scope`.
pub fn timeline<'m>(
    mem: &'m Memory,
    around: Option<&str>,
    scope: &Scope,
    limit: usize,
) -> Result<Timeline<'m>, TimelineError> {
    let order = mem.index.timeline().in_order();
    // The message of a live doc within the scope.
    let admitted = |doc: u32| -> Option<(&'m Thread, &'m Message)> {
        // A message once, at its first unit.
        let d = mem.index.doc(doc).filter(|d| d.part == 0)?;
        let thread = mem.graph.thread(&d.thread_id)?;
        let message = thread.messages.get(d.position)?;
        scope.admits(thread, message).then_some((thread, message))
    };
    let found = |(thread, message): (&'m Thread, &'m Message)| Found {
        thread,
        message,
        why: Why::default(),
        snippet: one_line(&message.content, TIMELINE_SNIPPET_CHARS),
    };
    let entry = |doc: u32| admitted(doc).map(found);
    let limit = limit.max(1);
    if let Some(id) = around {
        let slot = message_slot(mem, id).ok_or_else(|| TimelineError::NoMessage(id.into()))?;
        let before_wanted = (limit - 1) / 2;
        let mut before: Vec<Found<'m>> = order[..slot]
            .iter()
            .rev()
            .filter_map(|&d| entry(d))
            .take(before_wanted)
            .collect();
        before.reverse();
        let after_wanted = limit - before.len();
        let mut messages = before;
        messages.extend(
            order[slot..]
                .iter()
                .filter_map(|&d| entry(d))
                .take(after_wanted),
        );
        return Ok(Timeline { messages, more: 0 });
    }
    let tl = mem.index.timeline();
    let from = scope.since.map_or(0, |s| tl.first_slot_from(s));
    let to = scope
        .until
        .map_or(order.len(), |u| tl.first_slot_from(u))
        .max(from);
    let mut messages = Vec::new();
    let mut more = 0;
    for &d in order[from..to].iter().rev() {
        if let Some(hit) = admitted(d) {
            if messages.len() < limit {
                messages.push(found(hit));
            } else {
                more += 1;
            }
        }
    }
    messages.reverse();
    Ok(Timeline { messages, more })
}

/// Where the message `id` sits in the timeline.
fn message_slot(mem: &Memory, id: &str) -> Option<usize> {
    let (thread, position) = mem.graph.threads().find_map(|t| {
        t.messages
            .iter()
            .position(|m| m.id == id)
            .map(|p| (t.id.as_str(), p))
    })?;
    let doc = mem.index.first_doc(thread, position)?;
    mem.index.timeline().slot(doc)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::engine::Capture;
    use crate::memory::test_support::{emb, t0};
    use crate::memory::types::Author;
    use crate::retrieve::Query;
    use ai_smartness_capture::extract::Extraction;

    fn say(mem: &mut Memory, text: &str, axis: usize, minutes: i64) -> (String, String) {
        let out = mem.ingest(Capture {
            tool: "UserPrompt".into(),
            source_type: ai_smartness_capture::source::source_for_tool("UserPrompt"),
            author: Author::User,
            content: text.into(),
            extraction: Extraction {
                subjects: text
                    .split_whitespace()
                    .take(3)
                    .map(str::to_string)
                    .collect(),
                ..Extraction::default()
            },
            embedding: emb(&[axis]),
            at: t0() + chrono::Duration::minutes(minutes),
            metadata: Default::default(),
            units: Vec::new(),
        });
        (out.thread_id, out.message_id)
    }

    fn memory() -> (Memory, Vec<String>) {
        let mut mem = Memory::default();
        let mut ids = Vec::new();
        for (i, text) in [
            "the billing export drops rows with null currency codes",
            "the websocket reconnect loop never gives up on mobile",
            "the billing export joins the currencies table with an inner join",
            "release notes for version two of the mobile client",
            "the billing export runs nightly at two in the morning",
        ]
        .iter()
        .enumerate()
        {
            let axis = if text.contains("billing") { 1 } else { 2 };
            ids.push(say(&mut mem, text, axis, i as i64 * 10).1);
        }
        (mem, ids)
    }

    fn query(text: &str, axis: usize) -> Query {
        Query {
            text: text.into(),
            embedding: emb(&[axis]),
            words: Vec::new(),
            topics: Vec::new(),
        }
    }

    #[test]
    fn recall_lists_the_best_messages_within_the_scope() {
        let (mem, _) = memory();
        let cache = Cache::default();
        let q = query("billing export currency", 1);
        let (found, gate) = recall(&mem, &cache, &q, &Scope::live(), 2, t0());
        assert_eq!(found.len(), 2);
        assert!(found.iter().all(|f| f.message.content.contains("billing")));
        assert!(found[0].why.score >= found[1].why.score);
        assert!(!gate.abstained);

        // A period that ends before the last two billing messages keeps only the first.
        let scope = Scope {
            until: Some(t0() + chrono::Duration::minutes(10)),
            ..Scope::live()
        };
        let (found, _) = recall(&mem, &cache, &q, &scope, 5, t0());
        assert!(found
            .iter()
            .all(|f| f.message.content.contains("null currency")
                || !f.message.content.contains("billing")));
        assert!(found
            .iter()
            .any(|f| f.message.content.contains("null currency")));
    }

    #[test]
    fn timeline_is_in_time_order_around_a_message_or_newest_first_cut() {
        let (mem, ids) = memory();
        let t = timeline(&mem, Some(&ids[2]), &Scope::live(), 3).unwrap();
        let got: Vec<&str> = t.messages.iter().map(|f| f.message.id.as_str()).collect();
        assert_eq!(got, [ids[1].as_str(), ids[2].as_str(), ids[3].as_str()]);

        let t = timeline(&mem, None, &Scope::live(), 2).unwrap();
        let got: Vec<&str> = t.messages.iter().map(|f| f.message.id.as_str()).collect();
        assert_eq!(got, [ids[3].as_str(), ids[4].as_str()]);
        assert_eq!(t.more, 3);

        let scope = Scope {
            since: Some(t0() + chrono::Duration::minutes(5)),
            until: Some(t0() + chrono::Duration::minutes(25)),
            ..Scope::live()
        };
        let t = timeline(&mem, None, &scope, 10).unwrap();
        let got: Vec<&str> = t.messages.iter().map(|f| f.message.id.as_str()).collect();
        assert_eq!(got, [ids[1].as_str(), ids[2].as_str()]);

        assert_eq!(
            timeline(&mem, Some("msg_nope"), &Scope::live(), 3).unwrap_err(),
            TimelineError::NoMessage("msg_nope".into())
        );
    }
}
