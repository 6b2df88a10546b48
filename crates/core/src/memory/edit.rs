//! Edits a person or the assistant's model asks for by name: merging two threads, linking two
//! threads by hand, storing a note. Like the engine's other edits they go through the graph's
//! accessors, so the change tracking sees every thread and bridge they touch and the next flush
//! writes (or deletes) exactly those.

use super::decay::thread_weight;
use super::engine::{
    fold_focus, keep_tail_chars, normalize_topics, push_bounded, truncate_chars, Capture,
    EditError, Memory, MAX_SUMMARY_CHARS, MAX_THREAD_TOPICS, MAX_TITLE_CHARS,
};
use super::similarity::shared_topics;
use super::types::{Author, BridgeType, Message};
use ai_smartness_capture::extract::Extraction;
use ai_smartness_capture::source::{OriginType, SourceType};
use ai_smartness_vectors::normalize;
use ai_smartness_vectors::quant::QVec;
use chrono::{DateTime, Utc};
use serde_json::{Map, Value};
use std::collections::HashSet;

/// `source_type` of a note's message: it was written on purpose, not captured from a tool.
pub const NOTE_SOURCE_TYPE: &str = "note";
/// `tool` of a note's message.
pub const NOTE_TOOL: &str = "WRITE_NOTE";
/// Longest reason kept on a bridge made by hand.
pub const MAX_REASON_CHARS: usize = 1_000;

impl Memory {
    /// Folds `source_id` into `target_id`: the messages move (kept in time order), the topics
    /// are united (the target's first), the bridges are re-pointed (one that would link the
    /// target to itself or double a bridge it already has is dropped), the children follow, and
    /// the source is deleted. The target's vector is refolded from all its messages.
    pub fn merge_threads(
        &mut self,
        source_id: &str,
        target_id: &str,
        now: DateTime<Utc>,
    ) -> Result<(), EditError> {
        if source_id == target_id {
            return Err(EditError::Invalid(
                "a thread cannot be merged into itself".into(),
            ));
        }
        let source = self
            .graph
            .thread(source_id)
            .ok_or_else(|| EditError::NoThread(source_id.into()))?
            .clone();
        let target = self
            .graph
            .thread(target_id)
            .ok_or_else(|| EditError::NoThread(target_id.into()))?;
        let mut topics = target.topics.clone();
        topics.extend(
            source
                .topics
                .iter()
                .filter(|t| !target.topics.contains(t))
                .cloned(),
        );
        topics.truncate(MAX_THREAD_TOPICS);
        let weight = thread_weight(target, now).max(thread_weight(&source, now));
        let old_embeddings = (
            target.embedding.clone(),
            target.messages.len(),
            source.embedding.clone(),
            source.messages.len(),
        );

        if let Some(t) = self.graph.thread_mut(target_id) {
            // The summary of the thread active last goes last: a summary keeps its tail.
            let summaries = if source.last_active > t.last_active {
                [t.summary.as_str(), source.summary.as_str()]
            } else {
                [source.summary.as_str(), t.summary.as_str()]
            };
            let joined = summaries
                .iter()
                .map(|s| s.trim())
                .filter(|s| !s.is_empty())
                .collect::<Vec<_>>()
                .join(" ");
            t.summary = if t.summary.contains(source.summary.trim()) {
                t.summary.clone()
            } else {
                keep_tail_chars(&joined, MAX_SUMMARY_CHARS)
            };
            t.messages.extend(source.messages.iter().cloned());
            // Stable: messages of the same instant keep the target's first.
            t.messages.sort_by_key(|m| m.timestamp);
            t.embedding = focus_of(&t.messages).or_else(|| {
                let (te, tn, se, sn) = old_embeddings;
                weighted_mean(te.as_ref(), tn, se.as_ref(), sn)
            });
            push_bounded(&mut t.decisions, &source.decisions);
            push_bounded(&mut t.questions, &source.questions);
            t.created_at = t.created_at.min(source.created_at);
            t.last_active = t.last_active.max(source.last_active);
            t.activation_count = t.activation_count.saturating_add(source.activation_count);
            t.weight = weight;
            t.weight_at = now.max(t.weight_at);
            t.drift_history.push(format!(
                "{}: merged in {} {:?} ({} messages)",
                now.format("%Y-%m-%d %H:%M"),
                source.id,
                source.title,
                source.messages.len()
            ));
        }
        self.graph.set_topics(target_id, topics);
        // The source's messages went in among the target's, in time order.
        self.graph.messages_rewritten(target_id);

        // Re-point the source's bridges; the ones left behind go with the source.
        let bridges: Vec<_> = self.graph.bridges_of(source_id).cloned().collect();
        for b in bridges {
            let Some(other) = b.other_end(source_id).map(str::to_string) else {
                continue;
            };
            if other == target_id
                || other == source_id
                || self.graph.bridge_between(target_id, &other).is_some()
            {
                continue;
            }
            let Some(mut moved) = self.graph.remove_bridge(&b.id) else {
                continue;
            };
            if moved.source_id == source_id {
                moved.source_id = target_id.to_string();
            } else {
                moved.target_id = target_id.to_string();
            }
            if let (Some(t), Some(o)) = (self.graph.thread(target_id), self.graph.thread(&other)) {
                moved.shared_concepts = shared_topics(&t.topics, &o.topics);
            }
            self.graph.insert_bridge(moved);
        }

        // Also unlinks the source from its parent and children.
        self.graph.remove_thread(source_id);
        for child in &source.child_ids {
            // A child above the target would make the hierarchy a loop.
            if child == target_id || self.is_ancestor(child, target_id) {
                continue;
            }
            if let Some(c) = self.graph.thread_mut(child) {
                c.parent_id = Some(target_id.to_string());
                if let Some(t) = self.graph.thread_mut(target_id) {
                    if !t.child_ids.contains(child) {
                        t.child_ids.push(child.clone());
                    }
                }
            }
        }
        // The target takes the source's place under its parent when it has none of its own.
        if let Some(parent) = source.parent_id.as_deref() {
            let orphan = self
                .graph
                .thread(target_id)
                .is_some_and(|t| t.parent_id.is_none());
            if orphan
                && parent != target_id
                && !self.is_ancestor(target_id, parent)
                && self.graph.thread(parent).is_some()
            {
                if let Some(t) = self.graph.thread_mut(target_id) {
                    t.parent_id = Some(parent.to_string());
                }
                if let Some(p) = self.graph.thread_mut(parent) {
                    p.child_ids.push(target_id.to_string());
                }
            }
        }

        if self
            .pending
            .as_ref()
            .is_some_and(|p| p.thread_id == source_id)
        {
            if let Some(p) = self.pending.as_mut() {
                p.thread_id = target_id.to_string();
            }
        }
        self.index.remove_thread(source_id);
        if let Some(t) = self.graph.thread(target_id) {
            self.index.reindex_thread(target_id, &t.messages);
        }
        Ok(())
    }

    /// Links two threads because a person or an LLM asked for it: confidence 1.0, active.
    /// Refuses unknown threads, a thread linked to itself, a blank reason, and two threads
    /// already linked (either way round). Returns the new bridge's id.
    pub fn create_bridge(
        &mut self,
        source_id: &str,
        target_id: &str,
        relation: BridgeType,
        reason: &str,
        now: DateTime<Utc>,
    ) -> Result<String, EditError> {
        if source_id == target_id {
            return Err(EditError::Invalid(
                "a bridge links two different threads".into(),
            ));
        }
        for id in [source_id, target_id] {
            if self.graph.thread(id).is_none() {
                return Err(EditError::NoThread(id.into()));
            }
        }
        if let Some(b) = self.graph.bridge_between(source_id, target_id) {
            return Err(EditError::Invalid(format!(
                "bridge {} already links {} and {}",
                b.id, source_id, target_id
            )));
        }
        let reason = truncate_chars(reason, MAX_REASON_CHARS);
        if reason.is_empty() {
            return Err(EditError::Invalid("a bridge needs a reason".into()));
        }
        self.link(source_id, target_id, relation, 1.0, &reason, now)
            .ok_or_else(|| EditError::Invalid("the bridge could not be made".into()))
    }

    /// Stores a note as a new active thread titled `title` holding one message (`content`,
    /// `source_type: "note"`), with the note's embedding (empty: none) and topics, then links it
    /// by gossip like any new thread. Returns the thread's id.
    pub fn add_note(
        &mut self,
        title: &str,
        content: &str,
        embedding: Vec<f32>,
        topics: Vec<String>,
        now: DateTime<Utc>,
    ) -> String {
        let mut embedding = if embedding.iter().all(|x| x.is_finite()) {
            embedding
        } else {
            Vec::new()
        };
        normalize(&mut embedding);
        let mut metadata = Map::new();
        metadata.insert("source_type".into(), Value::String(NOTE_SOURCE_TYPE.into()));
        let flat = content.split_whitespace().collect::<Vec<_>>().join(" ");
        let cap = Capture {
            tool: NOTE_TOOL.into(),
            source_type: SourceType::Response,
            author: Author::Assistant,
            content: content.trim().to_string(),
            extraction: Extraction {
                title: truncate_chars(title, MAX_TITLE_CHARS),
                summary: truncate_chars(&flat, ai_smartness_capture::extract::MAX_SUMMARY_CHARS),
                ..Extraction::default()
            },
            embedding,
            at: now,
            metadata,
            units: Vec::new(),
        };
        let topics = normalize_topics(&topics);
        let id = self.new_thread(&cap, &topics, &cap.terms(), None, OriginType::Prompt);
        // A note is titled on purpose: consolidation keeps its title.
        if let Some(t) = self
            .graph
            .thread_mut(&id)
            .filter(|_| !title.trim().is_empty())
        {
            t.title = truncate_chars(title, MAX_TITLE_CHARS);
            t.title_by = super::types::TitleSource::Llm;
        }
        self.gossip(&id, now);
        id
    }

    /// Whether `a` is `of`'s parent, grandparent, and so on.
    fn is_ancestor(&self, a: &str, of: &str) -> bool {
        let mut seen = HashSet::new();
        let mut cur = self.graph.thread(of).and_then(|t| t.parent_id.clone());
        while let Some(p) = cur {
            if p == a {
                return true;
            }
            if !seen.insert(p.clone()) {
                return false;
            }
            cur = self.graph.thread(&p).and_then(|t| t.parent_id.clone());
        }
        false
    }
}

/// A thread's vector refolded from its messages' own vectors in order, through 8 bits at each
/// step as the capture path stores it (see `ai reindex`); `None` when no message has one.
pub(crate) fn focus_of<'a>(messages: impl IntoIterator<Item = &'a Message>) -> Option<QVec> {
    let mut focus: Option<Vec<f32>> = None;
    for (i, e) in messages
        .into_iter()
        .filter_map(|m| m.embedding.as_ref())
        .enumerate()
    {
        let next = fold_focus(focus.as_deref(), i, &e.to_f32());
        focus = Some(QVec::from_unit(&next).to_f32());
    }
    focus.map(|f| QVec::from_unit(&f))
}

/// The two threads' vectors weighted by their message counts, for messages stored without
/// vectors of their own.
fn weighted_mean(a: Option<&QVec>, na: usize, b: Option<&QVec>, nb: usize) -> Option<QVec> {
    match (a, b) {
        (Some(a), Some(b)) if a.len() == b.len() => {
            let (wa, wb) = (na.max(1) as f32, nb.max(1) as f32);
            let mut v: Vec<f32> = a
                .to_f32()
                .iter()
                .zip(b.to_f32())
                .map(|(x, y)| x * wa + y * wb)
                .collect();
            normalize(&mut v);
            Some(QVec::from_unit(&v))
        }
        (Some(a), _) => Some(a.clone()),
        (None, b) => b.cloned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::test_support::{emb, t0};
    use crate::memory::types::{BridgeStatus, ThreadStatus};
    use chrono::Duration;

    fn note(m: &mut Memory, title: &str, topics: &[&str], axes: &[usize], hours: i64) -> String {
        m.add_note(
            title,
            &format!("{title}: notes about {}", topics.join(" and ")),
            emb(axes),
            topics.iter().map(|t| t.to_string()).collect(),
            t0() + Duration::hours(hours),
        )
    }

    #[test]
    fn a_note_is_an_active_thread_of_one_message() {
        let mut m = Memory::default();
        let id = note(
            &mut m,
            "Pool sizing decision",
            &["Postgres", "pool", "db"],
            &[0],
            0,
        );
        let t = m.graph.thread(&id).unwrap();
        assert_eq!(t.title, "Pool sizing decision");
        assert_eq!(t.status, ThreadStatus::Active);
        assert_eq!(t.messages.len(), 1);
        assert_eq!(t.messages[0].metadata["source_type"], "note");
        assert_eq!(t.messages[0].source, Author::Assistant);
        assert!(t.messages[0].embedding.is_some() && t.embedding.is_some());
        // Lowercased, and too-short topics dropped, as for captures.
        assert_eq!(t.topics, vec!["postgres".to_string(), "pool".to_string()]);
        assert!(t.summary.starts_with("Pool sizing decision: notes"));
        assert_eq!(m.index.thread_docs(&id).len(), 1);
        // No embedding at all is fine too.
        let bare = m.add_note("Bare", "no vector", vec![f32::NAN], vec![], t0());
        assert!(m.graph.thread(&bare).unwrap().embedding.is_none());
    }

    #[test]
    fn bridges_by_hand_refuse_self_links_unknown_threads_and_doubles() {
        let mut m = Memory::default();
        let a = note(&mut m, "Alpha", &["alpha"], &[0], 0);
        let b = note(&mut m, "Beta", &["beta"], &[5], 1);
        let id = m
            .create_bridge(&a, &b, BridgeType::Depends, " needs it ", t0())
            .unwrap();
        let br = m.graph.bridge(&id).unwrap();
        assert_eq!(
            (
                br.confidence,
                br.status,
                br.relation_type,
                br.reason.as_str()
            ),
            (1.0, BridgeStatus::Active, BridgeType::Depends, "needs it")
        );
        assert!(matches!(
            m.create_bridge(&b, &a, BridgeType::Extends, "again", t0()),
            Err(EditError::Invalid(e)) if e.contains(&id)
        ));
        assert!(matches!(
            m.create_bridge(&a, &a, BridgeType::Extends, "self", t0()),
            Err(EditError::Invalid(_))
        ));
        assert_eq!(
            m.create_bridge(&a, "thread_x", BridgeType::Extends, "r", t0()),
            Err(EditError::NoThread("thread_x".into()))
        );
        let c = note(&mut m, "Gamma", &["gamma"], &[9], 2);
        assert!(m
            .create_bridge(&a, &c, BridgeType::Extends, "  ", t0())
            .is_err());
        assert_eq!(m.graph.bridge_count(), 1);
    }

    #[test]
    fn merge_moves_messages_and_bridges_without_self_loops() {
        let mut m = Memory::default();
        let a = note(&mut m, "Pool timeouts", &["pool", "timeout"], &[0], 2);
        let b = note(&mut m, "DB pool", &["database", "pool"], &[1], 0);
        let c = note(&mut m, "CSS grid", &["css"], &[9], 0);
        let d = note(&mut m, "Deploy", &["deploy"], &[12], 0);
        // A second message in the target, after the source's.
        let mut later = m.graph.thread(&a).unwrap().messages[0].clone();
        later.id = "msg_later".into();
        later.timestamp = t0() + Duration::hours(3);
        later.embedding = Some(QVec::from_unit(&emb(&[1])));
        m.graph.thread_mut(&b).unwrap().messages.push(later);
        let ab = m
            .create_bridge(&a, &b, BridgeType::Sibling, "same pool", t0())
            .unwrap();
        let ac = m
            .create_bridge(&a, &c, BridgeType::Extends, "dup", t0())
            .unwrap();
        let bc = m
            .create_bridge(&c, &b, BridgeType::Extends, "kept", t0())
            .unwrap();
        let ad = m
            .create_bridge(&d, &a, BridgeType::Depends, "moves", t0())
            .unwrap();
        m.graph.take_changes();

        m.merge_threads(&a, &b, t0() + Duration::hours(4)).unwrap();
        assert!(m.graph.thread(&a).is_none());
        let t = m.graph.thread(&b).unwrap();
        let times: Vec<_> = t.messages.iter().map(|x| x.timestamp).collect();
        assert_eq!(t.messages.len(), 3);
        assert!(times.windows(2).all(|w| w[0] <= w[1]), "{times:?}");
        assert_eq!(
            t.messages[1].content,
            "Pool timeouts: notes about pool and timeout"
        );
        assert_eq!(t.topics, vec!["database", "pool", "timeout"]);
        assert!(t.drift_history.last().unwrap().contains(&a));
        // The vector follows both subjects.
        let e = t.embedding.as_ref().unwrap().to_f32();
        assert!(e[0] > 0.2 && e[1] > 0.2, "{e:?}");

        // A-B would loop and A-C doubles C-B: both gone; D-A now points at B, same id.
        assert!(m.graph.bridge(&ab).is_none() && m.graph.bridge(&ac).is_none());
        assert!(m.graph.bridge(&bc).is_some());
        let moved = m.graph.bridge(&ad).unwrap();
        assert_eq!(
            (moved.source_id.as_str(), moved.target_id.as_str()),
            (d.as_str(), b.as_str())
        );
        assert!(m.graph.bridges_of(&b).all(|x| x.source_id != x.target_id));
        assert_eq!(m.graph.bridges_of(&b).count(), 2);
        assert_eq!(m.graph.bridges_of(&a).count(), 0);

        // Every change is seen by the next save.
        let ch = m.graph.take_changes();
        assert!(ch.save_threads.iter().any(|x| x.id() == b));
        assert_eq!(ch.delete_threads, vec![a.clone()]);
        let mut deleted = ch.delete_bridges.clone();
        deleted.sort();
        let mut expected = vec![ab, ac];
        expected.sort();
        assert_eq!(deleted, expected);
        assert!(ch
            .save_bridges
            .iter()
            .any(|x| x.id == ad && x.target_id == b));
        assert!(ch.indexes);

        // The search index follows the new positions.
        assert_eq!(m.index.thread_docs(&b).len(), 3);
        assert!(m.index.thread_docs(&a).is_empty());
    }

    #[test]
    fn merge_hands_children_to_the_target_and_refuses_bad_ids() {
        let mut m = Memory::default();
        let a = note(&mut m, "Parent A", &["alpha"], &[0], 0);
        let b = note(&mut m, "Target B", &["beta"], &[5], 0);
        let kid = note(&mut m, "Kid", &["kid"], &[9], 0);
        m.adopt_child(&kid, &a, 0.9, t0()).unwrap();
        assert_eq!(
            m.merge_threads(&a, &a, t0()),
            Err(EditError::Invalid(
                "a thread cannot be merged into itself".into()
            ))
        );
        assert_eq!(
            m.merge_threads("thread_x", &b, t0()),
            Err(EditError::NoThread("thread_x".into()))
        );
        assert_eq!(
            m.merge_threads(&a, "thread_y", t0()),
            Err(EditError::NoThread("thread_y".into()))
        );
        m.merge_threads(&a, &b, t0()).unwrap();
        assert_eq!(
            m.graph.thread(&kid).unwrap().parent_id.as_deref(),
            Some(b.as_str())
        );
        assert_eq!(m.graph.thread(&b).unwrap().child_ids, vec![kid.clone()]);
        // The CHILD_OF bridge moved with it.
        let br = m.graph.bridge_between(&kid, &b).unwrap();
        assert_eq!(br.relation_type, BridgeType::ChildOf);

        // Merging a parent into its own child: the child does not become its own child.
        m.merge_threads(&b, &kid, t0()).unwrap();
        let k = m.graph.thread(&kid).unwrap();
        assert!(k.parent_id.is_none() && k.child_ids.is_empty());
    }
}
