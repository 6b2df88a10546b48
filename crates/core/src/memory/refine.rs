//! Edits an LLM makes after the fact. The local pipeline placed each capture
//! at once; when an LLM answers later, off the hook path, these methods refine what it did:
//! a better extraction, a child link the local coherence was unsure of, a borderline
//! reactivation, a more precise bridge type.
//!
//! Each goes through the graph's mutable accessors, so it bumps the graph version (cached
//! retrievals are dropped) and is saved at the next flush like any other edit. Each first checks
//! that what it refines is still there: a person may have deleted, renamed or archived it while
//! the LLM was thinking, and the person wins.

use super::engine::{
    keep_tail_chars, normalize_topics, push_bounded, truncate_chars, EditError, Memory,
    MAX_SUMMARY_CHARS, MAX_THREAD_TOPICS, MAX_TITLE_CHARS, REACTIVATION_BRIDGE_CONFIDENCE,
};
use super::types::{BridgeStatus, BridgeType, ThreadStatus};
use ai_smartness_capture::extract::Extraction;
use chrono::{DateTime, Utc};
use serde_json::Value;

/// An LLM extraction of one stored message, to apply to the thread the message went to.
#[derive(Debug, Clone, Copy)]
pub struct Refinement<'a> {
    /// The thread the local pipeline put the message in.
    pub thread_id: &'a str,
    /// The message the LLM read.
    pub message_id: &'a str,
    /// The thread's title right after the local pipeline placed the message: the LLM's title
    /// replaces it only if it is still the same (a rename by a person wins).
    pub title_before: &'a str,
    /// What the local extractor found (its share of the thread is replaced).
    pub local: &'a Extraction,
    /// What the LLM found.
    pub llm: &'a Extraction,
}

/// What [`Memory::apply_llm_extraction`] changed, for the log.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Refined {
    /// The title was replaced by the LLM's.
    pub title: bool,
    /// The summary changed.
    pub summary: bool,
    /// The topics changed.
    pub topics: bool,
}

impl Memory {
    /// Applies an LLM extraction to the thread the message went to.
    ///
    /// - Title: replaced when the message started the thread and nobody renamed it since.
    /// - Topics: a thread of this one message takes the LLM's topics; an older thread gets
    ///   them added in front (its other messages keep their say).
    /// - Summary: the local summary of this message is replaced by the LLM's where it appears.
    /// - Decisions and questions: the local ones of this message give way to the LLM's.
    pub fn apply_llm_extraction(&mut self, r: &Refinement<'_>) -> Result<Refined, EditError> {
        let t = self
            .graph
            .thread(r.thread_id)
            .ok_or_else(|| EditError::NoThread(r.thread_id.into()))?;
        let pos = t
            .messages
            .iter()
            .position(|m| m.id == r.message_id)
            .ok_or_else(|| {
                EditError::Invalid(format!(
                    "message {} is no longer in thread {}",
                    r.message_id, r.thread_id
                ))
            })?;
        let only = t.messages.len() == 1;
        let llm_topics = normalize_topics(r.llm.subjects.iter().chain(&r.llm.key_concepts));
        let mut topics = llm_topics.clone();
        if !only || llm_topics.is_empty() {
            topics.extend(t.topics.iter().filter(|x| !llm_topics.contains(x)).cloned());
        }
        topics.truncate(MAX_THREAD_TOPICS);
        let mut done = Refined {
            topics: topics != t.topics,
            ..Refined::default()
        };
        if done.topics {
            self.graph.set_topics(r.thread_id, topics);
        }

        let t = self
            .graph
            .thread_mut(r.thread_id)
            .ok_or_else(|| EditError::NoThread(r.thread_id.into()))?;
        let title: String = r.llm.title.trim().chars().take(MAX_TITLE_CHARS).collect();
        if pos == 0 && t.title == r.title_before && !title.is_empty() && t.title != title {
            t.title = title;
            t.title_by = crate::memory::types::TitleSource::Llm;
            done.title = true;
        }

        let (local, llm) = (r.local.summary.trim(), r.llm.summary.trim());
        if !llm.is_empty() && !t.summary.contains(llm) {
            let before = t.summary.clone();
            t.summary = if only {
                truncate_chars(llm, MAX_SUMMARY_CHARS)
            } else if !local.is_empty() && t.summary.contains(local) {
                keep_tail_chars(&t.summary.replacen(local, llm, 1), MAX_SUMMARY_CHARS)
            } else if t.summary.is_empty() {
                truncate_chars(llm, MAX_SUMMARY_CHARS)
            } else {
                keep_tail_chars(&format!("{} {llm}", t.summary), MAX_SUMMARY_CHARS)
            };
            done.summary = t.summary != before;
        }

        t.decisions.retain(|d| !r.local.decisions.contains(d));
        push_bounded(&mut t.decisions, &r.llm.decisions);
        t.questions.retain(|q| !r.local.questions.contains(q));
        push_bounded(&mut t.questions, &r.llm.questions);
        // Provenance: which extractor's view of this message the thread now holds.
        t.messages[pos]
            .metadata
            .insert("extractor".into(), Value::String("llm".into()));
        Ok(done)
    }

    /// Makes `child` a CHILD_OF `parent` after an LLM judged it coherent with the Glob/Grep
    /// result `parent` holds. A bridge already
    /// between them (gossip's EXTENDS) becomes the CHILD_OF one. Returns false when nothing
    /// changed (the child already has a parent).
    pub fn adopt_child(
        &mut self,
        child: &str,
        parent: &str,
        score: f64,
        at: DateTime<Utc>,
    ) -> Result<bool, EditError> {
        if child == parent {
            return Err(EditError::Invalid(
                "a thread cannot be its own child".into(),
            ));
        }
        let c = self
            .graph
            .thread(child)
            .ok_or_else(|| EditError::NoThread(child.into()))?;
        if self.graph.thread(parent).is_none() {
            return Err(EditError::NoThread(parent.into()));
        }
        if c.parent_id.is_some() {
            return Ok(false);
        }
        if let Some(t) = self.graph.thread_mut(child) {
            t.parent_id = Some(parent.to_string());
        }
        if let Some(p) = self.graph.thread_mut(parent) {
            p.child_ids.push(child.to_string());
        }
        const REASON: &str = "follows the Glob/Grep result it came from (LLM coherence)";
        match self
            .graph
            .bridge_between(child, parent)
            .map(|b| b.id.clone())
        {
            Some(id) => {
                if self.graph.bridge(&id).is_some_and(|b| b.source_id != child) {
                    self.graph.reverse_bridge(&id);
                }
                if let Some(b) = self.graph.bridge_mut(&id) {
                    b.relation_type = BridgeType::ChildOf;
                    b.confidence = b.confidence.max(score).clamp(0.0, 1.0);
                    b.reason = REASON.into();
                }
            }
            None => {
                self.link(child, parent, BridgeType::ChildOf, score, REASON, at);
            }
        }
        self.link_siblings(child, parent, at);
        Ok(true)
    }

    /// Reactivates the suspended thread `suspended` after an LLM judged a capture (stored in
    /// `related`) to concern it. The capture stays
    /// where the local decision put it; a bridge links its thread to the reactivated one, so
    /// retrieving either reaches the other. Returns whether the thread was woken (false: it was
    /// already active, only the link was made). An archived thread stays archived.
    pub fn reactivate_related(
        &mut self,
        suspended: &str,
        related: &str,
        now: DateTime<Utc>,
    ) -> Result<bool, EditError> {
        let status = self
            .graph
            .thread(suspended)
            .ok_or_else(|| EditError::NoThread(suspended.into()))?
            .status;
        if self.graph.thread(related).is_none() {
            return Err(EditError::NoThread(related.into()));
        }
        if status == ThreadStatus::Archived {
            return Err(EditError::Invalid(format!(
                "thread {suspended} is archived"
            )));
        }
        let woken = status == ThreadStatus::Suspended;
        if woken {
            self.graph.set_status(suspended, ThreadStatus::Active);
            self.woken(
                suspended,
                now,
                "reactivated (an LLM matched a capture to it)",
            );
        }
        self.link(
            related,
            suspended,
            BridgeType::Extends,
            REACTIVATION_BRIDGE_CONFIDENCE,
            "an LLM matched a capture of this thread to it (borderline reactivation)",
            now,
        );
        Ok(woken)
    }

    /// Retypes a gossip bridge after an LLM read both threads: EXTENDS may become DEPENDS,
    /// CONTRADICTS or REPLACES (`reverse` swaps its ends, for "B depends on A"). Only EXTENDS
    /// bridges that are not INVALID are retyped: a person's or the engine's other types stay.
    /// Returns whether anything changed.
    pub fn retype_bridge(
        &mut self,
        id: &str,
        relation: BridgeType,
        reverse: bool,
        reason: &str,
    ) -> Result<bool, EditError> {
        let b = self
            .graph
            .bridge(id)
            .ok_or_else(|| EditError::NoBridge(id.into()))?;
        if !matches!(
            relation,
            BridgeType::Extends
                | BridgeType::Depends
                | BridgeType::Contradicts
                | BridgeType::Replaces
        ) {
            return Err(EditError::Invalid(format!(
                "{} is not a type an LLM may give",
                relation.as_str()
            )));
        }
        if b.relation_type != BridgeType::Extends || b.status == BridgeStatus::Invalid {
            return Ok(false);
        }
        if relation == BridgeType::Extends && !reverse {
            return Ok(false);
        }
        if reverse {
            self.graph.reverse_bridge(id);
        }
        if let Some(b) = self.graph.bridge_mut(id) {
            b.relation_type = relation;
            let reason = reason.trim();
            if !reason.is_empty() {
                b.reason = format!("{} (LLM)", truncate_chars(reason, 200));
            }
        }
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::engine::{Capture, Decision};
    use crate::memory::types::Author;
    use ai_smartness_capture::source::source_for_tool;
    use ai_smartness_vectors::normalize;
    use chrono::TimeZone;
    use serde_json::Map;

    fn t0() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 5, 4, 9, 0, 0).unwrap()
    }

    fn cap(tool: &str, ex: Extraction, axes: &[usize]) -> Capture {
        let mut v = vec![0f32; 16];
        for &a in axes {
            v[a] = 1.0;
        }
        normalize(&mut v);
        Capture {
            tool: tool.into(),
            source_type: source_for_tool(tool),
            author: Author::Assistant,
            content: ex.summary.clone(),
            extraction: ex,
            embedding: v,
            at: t0(),
            metadata: Map::new(),
            units: Vec::new(),
        }
    }

    fn ex(title: &str, summary: &str, subjects: &[&str]) -> Extraction {
        Extraction {
            title: title.into(),
            summary: summary.into(),
            subjects: subjects.iter().map(|s| s.to_string()).collect(),
            decisions: vec![format!("local decision of {title}")],
            ..Extraction::default()
        }
    }

    #[test]
    fn an_llm_extraction_refines_the_thread_its_message_started() {
        let mut m = Memory::default();
        let local = ex("pool notes", "local summary", &["pool", "timeouts"]);
        let o = m.ingest(cap("Read", local.clone(), &[0, 1]));
        let title_before = m.graph.thread(&o.thread_id).unwrap().title.clone();
        let v0 = m.graph.version();
        let llm = Extraction {
            decisions: vec!["raise the pool to 50".into()],
            ..ex(
                "Connection pool timeouts",
                "The pool times out under load.",
                &["connection pool", "postgres"],
            )
        };
        let r = Refinement {
            thread_id: &o.thread_id,
            message_id: &o.message_id,
            title_before: &title_before,
            local: &local,
            llm: &llm,
        };
        let done = m.apply_llm_extraction(&r).unwrap();
        assert!(done.title && done.summary && done.topics);
        assert!(m.graph.version() > v0, "the edit bumps the graph version");
        let t = m.graph.thread(&o.thread_id).unwrap();
        assert_eq!(t.title, "Connection pool timeouts");
        assert_eq!(t.summary, "The pool times out under load.");
        assert_eq!(t.topics, ["connection pool", "postgres"]);
        assert_eq!(t.decisions, ["raise the pool to 50"]);
        assert_eq!(t.messages[0].metadata["extractor"], "llm");
        assert!(!m.graph.take_changes().save_threads.is_empty(), "saved");

        // A person renamed it meanwhile: their title stays.
        m.rename_thread(&o.thread_id, "Mine").unwrap();
        let other = ex("Another title", "x", &["pool"]);
        let r = Refinement { llm: &other, ..r };
        assert!(!m.apply_llm_extraction(&r).unwrap().title);
        assert_eq!(m.graph.thread(&o.thread_id).unwrap().title, "Mine");
        // Gone: refused.
        m.delete_thread(&o.thread_id).unwrap();
        assert!(m.apply_llm_extraction(&r).is_err());
    }

    #[test]
    fn a_later_message_replaces_only_its_own_share() {
        let mut m = Memory::default();
        let first = ex("pool notes", "first summary.", &["pool", "timeouts"]);
        let a = m.ingest(cap("Read", first, &[0, 1]));
        let local = ex("pool again", "second summary.", &["pool", "timeouts"]);
        let b = m.ingest(cap("Bash", local.clone(), &[0, 1]));
        assert_eq!(b.decision, Decision::Continue);
        let title_before = m.graph.thread(&a.thread_id).unwrap().title.clone();
        let llm = ex("Better title", "Refined second.", &["pgbouncer"]);
        let r = Refinement {
            thread_id: &b.thread_id,
            message_id: &b.message_id,
            title_before: &title_before,
            local: &local,
            llm: &llm,
        };
        let done = m.apply_llm_extraction(&r).unwrap();
        assert!(!done.title, "a later message does not retitle the thread");
        let t = m.graph.thread(&a.thread_id).unwrap();
        assert_eq!(t.title, title_before);
        assert_eq!(t.summary, "first summary. Refined second.");
        assert_eq!(t.topics[0], "pgbouncer");
        assert!(t.topics.contains(&"pool".to_string()));
        assert!(t
            .decisions
            .contains(&"local decision of pool notes".to_string()));
        assert!(!t
            .decisions
            .contains(&"local decision of pool again".to_string()));
    }

    #[test]
    fn adoption_reactivation_and_retyping() {
        let mut m = Memory::default();
        let g = m
            .ingest(cap("Glob", ex("src files", "src/*.rs", &["src"]), &[0]))
            .thread_id;
        // An hour later: another request, decided on its own.
        let mut read = cap("Read", ex("parser", "the parser", &["parser"]), &[5]);
        read.at = t0() + chrono::Duration::hours(1);
        let c = m.ingest(read).thread_id;
        assert!(m.adopt_child(&c, &g, 0.7, t0()).unwrap());
        assert_eq!(
            m.graph.thread(&c).unwrap().parent_id.as_deref(),
            Some(g.as_str())
        );
        assert!(m.graph.thread(&g).unwrap().child_ids.contains(&c));
        let b = m.graph.bridge_between(&c, &g).unwrap();
        assert_eq!(
            (b.relation_type, b.source_id.as_str()),
            (BridgeType::ChildOf, c.as_str())
        );
        assert!(!m.adopt_child(&c, &g, 0.7, t0()).unwrap(), "once");

        let s = m
            .ingest(cap("Read", ex("auth", "jwt", &["auth"]), &[9]))
            .thread_id;
        m.set_thread_status(&s, ThreadStatus::Suspended, t0())
            .unwrap();
        assert!(m.reactivate_related(&s, &c, t0()).unwrap());
        assert_eq!(m.graph.thread(&s).unwrap().status, ThreadStatus::Active);
        let link = m.graph.bridge_between(&s, &c).unwrap().id.clone();
        assert!(
            !m.reactivate_related(&s, &c, t0()).unwrap(),
            "already awake"
        );
        m.set_thread_status(&s, ThreadStatus::Archived, t0())
            .unwrap();
        assert!(m.reactivate_related(&s, &c, t0()).is_err());

        // The EXTENDS bridge c → s becomes "s DEPENDS on c" read the other way round.
        assert!(m
            .retype_bridge(&link, BridgeType::Depends, true, "auth needs the parser")
            .unwrap());
        let b = m.graph.bridge(&link).unwrap();
        assert_eq!(b.relation_type, BridgeType::Depends);
        assert_eq!(
            (b.source_id.as_str(), b.target_id.as_str()),
            (s.as_str(), c.as_str())
        );
        assert!(
            m.graph.take_changes().indexes,
            "the by-source index changes"
        );
        // Not EXTENDS any more: left alone; CHILD_OF is never an LLM's answer.
        assert!(!m
            .retype_bridge(&link, BridgeType::Replaces, false, "")
            .unwrap());
        assert!(m
            .retype_bridge(&link, BridgeType::ChildOf, false, "")
            .is_err());
    }
}
