//! The whole memory in RAM: threads and bridges by id, bridges by thread, and what changed since
//! the last save. The engine mutates it under one lock; the changes are written to disk after the
//! lock is released.

use super::types::{Message, ThinkBridge, Thread, ThreadStatus};
use std::collections::{HashMap, HashSet};

/// What must be written or deleted to bring the disk up to date.
#[derive(Debug, Default)]
pub struct Changes {
    pub save_threads: Vec<ThreadChange>,
    pub delete_threads: Vec<String>,
    pub save_bridges: Vec<ThinkBridge>,
    pub delete_bridges: Vec<String>,
    /// A thread changed status, or a thread or bridge appeared or went away.
    pub indexes: bool,
}

/// What of a thread must be written: its header always (everything but the messages), and its
/// messages as little as possible: those appended since the last save (and new versions of any
/// changed in place), or all of them when their order changed.
#[derive(Debug, Clone)]
pub struct ThreadChange {
    /// The thread without its messages.
    pub header: Thread,
    pub messages: MessageChange,
    /// How many messages the thread had when this was taken.
    pub len: usize,
}

#[derive(Debug, Clone)]
pub enum MessageChange {
    /// To append to the thread's message log (may be empty: a header-only change).
    Append(Vec<Message>),
    /// The whole log, to write afresh.
    Rewrite(Vec<Message>),
}

impl ThreadChange {
    /// The thread as a whole: header and every message (tests, and whole-store writers).
    pub fn whole(t: &Thread) -> ThreadChange {
        let mut header = t.clone();
        let messages = std::mem::take(&mut header.messages);
        ThreadChange {
            len: messages.len(),
            header,
            messages: MessageChange::Rewrite(messages),
        }
    }

    pub fn id(&self) -> &str {
        &self.header.id
    }
}

impl Changes {
    pub fn is_empty(&self) -> bool {
        self.save_threads.is_empty()
            && self.delete_threads.is_empty()
            && self.save_bridges.is_empty()
            && self.delete_bridges.is_empty()
            && !self.indexes
    }
}

#[derive(Debug, Default)]
pub struct Graph {
    threads: HashMap<String, Thread>,
    bridges: HashMap<String, ThinkBridge>,
    /// Bridge ids touching each thread (either end), so neighbourhoods cost no scan.
    by_thread: HashMap<String, Vec<String>>,
    dirty_threads: HashSet<String>,
    deleted_threads: HashSet<String>,
    dirty_bridges: HashSet<String>,
    deleted_bridges: HashSet<String>,
    indexes_dirty: bool,
    /// Bumped by every change: a cached retrieval is valid only for the version it saw.
    version: u64,
    /// How many threads hold each topic: a topic most threads share (a project's name, the
    /// speakers of a chat) says nothing about what a capture is about.
    topic_df: HashMap<String, u32>,
    /// How many threads hold each term in their profile: what makes a term distinctive for
    /// the thread decision and for titles.
    term_df: HashMap<String, u32>,
    /// Per thread, how many of its messages are written in its message log: those after are
    /// appended at the next save.
    persisted: HashMap<String, usize>,
    /// Threads whose messages moved (a merge, a reindex): their log is written afresh.
    rewrite: HashSet<String>,
    /// Threads changed, added or removed since ranking's table last copied them
    /// ([`crate::retrieve::table::ThreadTable::sync`]).
    changed: HashSet<String>,
    /// Per thread, the positions of saved messages changed in place (a repeat counted): their
    /// new version is appended.
    updated: HashMap<String, HashSet<usize>>,
}

/// Below this many threads every topic counts (too few to tell common from specific).
const MIN_THREADS_FOR_DF: usize = 10;
/// A topic held by more than this share of the threads is common.
const COMMON_TOPIC_SHARE: f64 = 0.2;

impl Graph {
    pub fn version(&self) -> u64 {
        self.version
    }

    fn count_terms(&mut self, profile: &[super::subject::ProfileTerm], delta: i32) {
        for p in profile {
            let n = self.term_df.entry(p.term.clone()).or_default();
            *n = n.saturating_add_signed(delta);
            if *n == 0 {
                self.term_df.remove(&p.term);
            }
        }
    }

    /// How distinctive each profile term is across the threads.
    pub fn idf(&self) -> super::subject::Idf<'_> {
        super::subject::Idf {
            df: &self.term_df,
            threads: self.threads.len(),
        }
    }

    /// Replaces a thread's profile (keeping the term counts right).
    pub fn set_profile(&mut self, id: &str, profile: Vec<super::subject::ProfileTerm>) {
        if !self.threads.contains_key(id) {
            return;
        }
        // The new terms are counted before the old ones are taken off: a term in both never
        // drops to zero on the way.
        self.count_terms(&profile, 1);
        if let Some(t) = self.thread_mut(id) {
            let old = std::mem::replace(&mut t.profile, profile);
            self.count_terms(&old, -1);
        }
    }

    fn count_topics(&mut self, topics: &[String], delta: i32) {
        for t in topics {
            let n = self.topic_df.entry(t.clone()).or_default();
            *n = n.saturating_add_signed(delta);
            if *n == 0 {
                self.topic_df.remove(t);
            }
        }
    }

    /// Replaces a thread's topics (keeping the topic counts right).
    pub fn set_topics(&mut self, id: &str, topics: Vec<String>) {
        let Some(old) = self.threads.get(id).map(|t| t.topics.clone()) else {
            return;
        };
        self.count_topics(&old, -1);
        self.count_topics(&topics, 1);
        if let Some(t) = self.thread_mut(id) {
            t.topics = topics;
        }
    }

    /// The topics that say something: those not shared by most threads.
    pub fn specific_topics(&self, topics: &[String]) -> Vec<String> {
        let n = self.threads.len();
        if n < MIN_THREADS_FOR_DF {
            return topics.to_vec();
        }
        let limit = (n as f64 * COMMON_TOPIC_SHARE).ceil() as u32;
        topics
            .iter()
            .filter(|t| self.topic_df.get(*t).copied().unwrap_or(0) <= limit)
            .cloned()
            .collect()
    }

    /// A graph holding what was loaded from disk (nothing dirty).
    pub fn from_loaded(threads: Vec<Thread>, bridges: Vec<ThinkBridge>) -> Graph {
        let mut g = Graph::default();
        for mut t in threads {
            // Stores from before profiles: the thread's topics stand in until it moves.
            if t.profile.is_empty() {
                t.profile = super::subject::profile_from_topics(&t.topics);
            }
            g.count_topics(&t.topics, 1);
            g.count_terms(&t.profile, 1);
            g.persisted.insert(t.id.clone(), t.messages.len());
            g.threads.insert(t.id.clone(), t);
        }
        for b in bridges {
            g.index_bridge(&b);
            g.bridges.insert(b.id.clone(), b);
        }
        g
    }

    fn index_bridge(&mut self, b: &ThinkBridge) {
        for end in [&b.source_id, &b.target_id] {
            self.by_thread
                .entry(end.clone())
                .or_default()
                .push(b.id.clone());
        }
    }

    pub fn thread(&self, id: &str) -> Option<&Thread> {
        self.threads.get(id)
    }

    /// Mutable access; the thread is saved at the next flush.
    pub fn thread_mut(&mut self, id: &str) -> Option<&mut Thread> {
        self.version += 1;
        let t = self.threads.get_mut(id)?;
        self.dirty_threads.insert(id.to_string());
        self.changed.insert(id.to_string());
        Some(t)
    }

    /// The threads changed, added or removed since the last call.
    pub fn take_changed_threads(&mut self) -> Vec<String> {
        self.changed.drain().collect()
    }

    /// Changes a thread's status (and marks the indexes for rewriting).
    pub fn set_status(&mut self, id: &str, status: ThreadStatus) -> bool {
        match self.thread_mut(id) {
            Some(t) if t.status != status => {
                t.status = status;
                self.indexes_dirty = true;
                true
            }
            _ => false,
        }
    }

    /// The thread an id names, following merges: the id of a thread merged into another
    /// resolves to the one that took its messages.
    pub fn resolve(&self, id: &str) -> Option<&Thread> {
        let mut t = self.threads.get(id)?;
        for _ in 0..16 {
            match t.merged_into.as_deref().and_then(|m| self.threads.get(m)) {
                Some(next) => t = next,
                None => break,
            }
        }
        Some(t)
    }

    pub fn threads(&self) -> impl Iterator<Item = &Thread> {
        self.threads.values()
    }

    pub fn thread_count(&self) -> usize {
        self.threads.len()
    }

    pub fn insert_thread(&mut self, t: Thread) {
        self.version += 1;
        // A thread put in whole (a new one, or one replaced) is written whole.
        self.rewrite.insert(t.id.clone());
        self.count_topics(&t.topics, 1);
        self.count_terms(&t.profile, 1);
        self.dirty_threads.insert(t.id.clone());
        self.changed.insert(t.id.clone());
        self.deleted_threads.remove(&t.id);
        self.indexes_dirty = true;
        if let Some(old) = self.threads.insert(t.id.clone(), t) {
            self.count_topics(&old.topics, -1);
            self.count_terms(&old.profile, -1);
        }
    }

    /// Deletes a thread, its bridges, and the links its parent and children had to it.
    pub fn remove_thread(&mut self, id: &str) -> Option<Thread> {
        self.version += 1;
        let t = self.threads.remove(id)?;
        self.count_topics(&t.topics, -1);
        self.count_terms(&t.profile, -1);
        self.dirty_threads.remove(id);
        self.persisted.remove(id);
        self.rewrite.remove(id);
        self.updated.remove(id);
        self.deleted_threads.insert(id.to_string());
        self.changed.insert(id.to_string());
        self.indexes_dirty = true;
        for bid in self.by_thread.get(id).cloned().unwrap_or_default() {
            self.remove_bridge(&bid);
        }
        self.by_thread.remove(id);
        if let Some(parent) = t.parent_id.as_deref().and_then(|p| self.thread_mut(p)) {
            parent.child_ids.retain(|c| c != id);
        }
        for child in &t.child_ids {
            if let Some(c) = self.thread_mut(child) {
                c.parent_id = None;
            }
        }
        Some(t)
    }

    pub fn bridge(&self, id: &str) -> Option<&ThinkBridge> {
        self.bridges.get(id)
    }

    pub fn bridge_mut(&mut self, id: &str) -> Option<&mut ThinkBridge> {
        self.version += 1;
        let b = self.bridges.get_mut(id)?;
        self.dirty_bridges.insert(id.to_string());
        Some(b)
    }

    /// Swaps a bridge's ends (a DEPENDS or REPLACES that reads the other way round); the
    /// by-source and by-target indexes are rewritten at the next save.
    pub fn reverse_bridge(&mut self, id: &str) -> bool {
        self.version += 1;
        let Some(b) = self.bridges.get_mut(id) else {
            return false;
        };
        std::mem::swap(&mut b.source_id, &mut b.target_id);
        self.dirty_bridges.insert(id.to_string());
        self.indexes_dirty = true;
        true
    }

    pub fn bridges(&self) -> impl Iterator<Item = &ThinkBridge> {
        self.bridges.values()
    }

    pub fn bridge_count(&self) -> usize {
        self.bridges.len()
    }

    /// Bridges touching a thread.
    pub fn bridges_of(&self, thread_id: &str) -> impl Iterator<Item = &ThinkBridge> {
        self.by_thread
            .get(thread_id)
            .into_iter()
            .flatten()
            .filter_map(|id| self.bridges.get(id))
    }

    /// The bridge linking `a` and `b` in either direction, if any.
    pub fn bridge_between(&self, a: &str, b: &str) -> Option<&ThinkBridge> {
        self.bridges_of(a).find(|br| br.links(a, b))
    }

    pub fn insert_bridge(&mut self, b: ThinkBridge) {
        self.version += 1;
        self.index_bridge(&b);
        self.dirty_bridges.insert(b.id.clone());
        self.deleted_bridges.remove(&b.id);
        self.indexes_dirty = true;
        self.bridges.insert(b.id.clone(), b);
    }

    pub fn remove_bridge(&mut self, id: &str) -> Option<ThinkBridge> {
        self.version += 1;
        let b = self.bridges.remove(id)?;
        for end in [&b.source_id, &b.target_id] {
            if let Some(list) = self.by_thread.get_mut(end) {
                list.retain(|x| x != id);
            }
        }
        self.dirty_bridges.remove(id);
        self.deleted_bridges.insert(id.to_string());
        self.indexes_dirty = true;
        Some(b)
    }

    /// Takes what changed since the last call (clones of the dirty entities).
    /// The messages of a saved thread changed order or content (a merge, a reindex): its log
    /// is written afresh at the next save.
    pub fn messages_rewritten(&mut self, id: &str) {
        if self.thread_mut(id).is_some() {
            self.rewrite.insert(id.to_string());
        }
    }

    /// A saved message changed in place (a repeat counted on it): its new version is appended
    /// at the next save.
    pub fn message_updated(&mut self, id: &str, position: usize) {
        if self.thread_mut(id).is_some() {
            self.updated
                .entry(id.to_string())
                .or_default()
                .insert(position);
        }
    }

    /// What changed since the last call, to write. Only the header and the new messages of a
    /// thread are copied, whatever its size.
    pub fn take_changes(&mut self) -> Changes {
        let dirty: Vec<String> = self.dirty_threads.drain().collect();
        let mut save_threads = Vec::with_capacity(dirty.len());
        for id in dirty {
            let Some(t) = self.threads.get(&id) else {
                continue;
            };
            let len = t.messages.len();
            let persisted = self.persisted.get(&id).copied().unwrap_or(0);
            let updated = self.updated.remove(&id).unwrap_or_default();
            let messages = if self.rewrite.remove(&id) || persisted > len {
                MessageChange::Rewrite(t.messages.clone())
            } else {
                let mut changed: Vec<usize> =
                    updated.into_iter().filter(|&p| p < persisted).collect();
                changed.sort_unstable();
                MessageChange::Append(
                    changed
                        .into_iter()
                        .chain(persisted..len)
                        .map(|p| t.messages[p].clone())
                        .collect(),
                )
            };
            save_threads.push(ThreadChange {
                header: t.header_clone(),
                messages,
                len,
            });
        }
        let save_bridges = self
            .dirty_bridges
            .drain()
            .filter_map(|id| self.bridges.get(&id).cloned())
            .collect();
        Changes {
            save_threads,
            delete_threads: self.deleted_threads.drain().collect(),
            save_bridges,
            delete_bridges: self.deleted_bridges.drain().collect(),
            indexes: std::mem::take(&mut self.indexes_dirty),
        }
    }

    /// Records that changes were written: their messages are in the logs now.
    pub fn saved(&mut self, c: &Changes) {
        for t in &c.save_threads {
            if self.threads.contains_key(t.id()) {
                self.persisted.insert(t.id().to_string(), t.len);
            }
        }
    }

    /// Puts back changes that could not be written, so the next flush tries again (a log
    /// that may have been half rewritten is rewritten whole).
    pub fn restore_changes(&mut self, c: &Changes) {
        for t in &c.save_threads {
            if let MessageChange::Rewrite(_) = t.messages {
                self.rewrite.insert(t.id().to_string());
            }
        }
        self.dirty_threads
            .extend(c.save_threads.iter().map(|t| t.id().to_string()));
        self.deleted_threads
            .extend(c.delete_threads.iter().cloned());
        self.dirty_bridges
            .extend(c.save_bridges.iter().map(|b| b.id.clone()));
        self.deleted_bridges
            .extend(c.delete_bridges.iter().cloned());
        self.indexes_dirty |= c.indexes;
    }

    pub fn count_by_status(&self, status: ThreadStatus) -> usize {
        self.threads.values().filter(|t| t.status == status).count()
    }
}
