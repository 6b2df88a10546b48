//! What ranking reads of every thread, in arrays indexed by a slot per thread, and of every
//! message, in arrays indexed by its doc.
//!
//! Ranking scores every thread and every message for each prompt. Read from the threads
//! themselves, that pass follows pointers to each thread's id, vector, topics and messages,
//! and in a memory of 10,000 threads it spends its time waiting on memory rather than
//! computing. Here the same facts sit side by side in a few arrays read in order. The graph
//! stays the truth: it notes which threads changed, and [`ThreadTable::sync`] copies only
//! those (a prompt's ranking syncs first, under the same lock). A table that is not current
//! is never used for ranking: [`ThreadTable::current`] says so, and ranking builds a fresh
//! one instead.

use super::arena::DocVectors;
use super::index::SearchIndex;
use crate::memory::decay::{decayed_after, THREAD_HALF_LIFE_DAYS};
use crate::memory::graph::Graph;
use crate::memory::types::{Thread, ThreadStatus};
use chrono::{DateTime, Utc};
use std::collections::HashMap;
use std::sync::Arc;

/// A doc that belongs to no live thread (its thread was deleted, or it was replaced).
const NO_SLOT: u32 = u32::MAX;

/// Row flags.
const LIVE: u8 = 1;
const ARCHIVED: u8 = 2;
const PINNED: u8 = 4;

#[derive(Debug, Default)]
pub struct ThreadTable {
    /// The graph version the table reflects (None: never synced).
    version: Option<u64>,
    slot_of: HashMap<Arc<str>, u32>,
    /// Slot → thread id (empty for a free slot).
    ids: Vec<Arc<str>>,
    /// Free slots, reused before the table grows.
    free: Vec<u32>,
    flags: Vec<u8>,
    weight: Vec<f64>,
    /// When each weight was set, in milliseconds since the epoch.
    weight_at: Vec<i64>,
    /// Each thread's own vector, by slot.
    centroids: DocVectors,
    /// Each thread's topics as interned numbers, and a 64-bit signature of them (a query
    /// topic whose bit is not set is not among them, without reading the list).
    topics: Vec<Box<[u32]>>,
    topic_bits: Vec<u64>,
    topic_ids: HashMap<String, u32>,
    /// Each thread's docs, by slot (read when the thread changes, never when ranking).
    slot_docs: Vec<Vec<u32>>,
    /// Doc → its thread's slot ([`NO_SLOT`] when none), its message's position in the thread
    /// and which unit of that message it is.
    doc_slot: Vec<u32>,
    doc_position: Vec<u32>,
    doc_part: Vec<u32>,
}

/// A query's topics in the table's numbers: the count asked, and those some thread holds.
pub struct QueryTopics {
    asked: usize,
    known: Vec<u32>,
    bits: u64,
}

fn topic_bit(id: u32) -> u64 {
    1u64 << (id.wrapping_mul(0x9E37_79B9) >> 26)
}

impl ThreadTable {
    /// A table of every thread of `graph` with its docs in `index`.
    pub fn build(graph: &Graph, index: &SearchIndex) -> ThreadTable {
        let mut table = ThreadTable::default();
        for t in graph.threads() {
            table.upsert(t, index);
        }
        table.extend_docs(index);
        table.version = Some(graph.version());
        table
    }

    /// Whether the table reflects `graph` as it is now.
    pub fn current(&self, graph: &Graph) -> bool {
        self.version == Some(graph.version())
    }

    /// Copies what changed in `graph` since the last sync (the threads it noted).
    pub fn sync(&mut self, graph: &mut Graph, index: &SearchIndex) {
        if self.version.is_none() {
            graph.take_changed_threads();
            *self = ThreadTable::build(graph, index);
            return;
        }
        for id in graph.take_changed_threads() {
            match graph.thread(&id) {
                Some(t) => self.upsert(t, index),
                None => self.remove(&id),
            }
        }
        self.extend_docs(index);
        self.version = Some(graph.version());
    }

    /// Docs the index holds that the table has not seen yet belong to no thread until one
    /// claims them.
    fn extend_docs(&mut self, index: &SearchIndex) {
        let n = index.doc_count();
        if self.doc_slot.len() < n {
            self.doc_slot.resize(n, NO_SLOT);
            self.doc_position.resize(n, 0);
            self.doc_part.resize(n, 0);
        }
    }

    fn upsert(&mut self, t: &Thread, index: &SearchIndex) {
        let slot = match self.slot_of.get(t.id.as_str()) {
            Some(&s) => s,
            None => {
                let id: Arc<str> = Arc::from(t.id.as_str());
                let slot = match self.free.pop() {
                    Some(s) => {
                        self.ids[s as usize] = Arc::clone(&id);
                        s
                    }
                    None => {
                        self.ids.push(Arc::clone(&id));
                        self.flags.push(0);
                        self.weight.push(0.0);
                        self.weight_at.push(t.weight_at.timestamp_millis());
                        self.centroids.push(None);
                        self.topics.push(Box::new([]));
                        self.topic_bits.push(0);
                        self.slot_docs.push(Vec::new());
                        (self.ids.len() - 1) as u32
                    }
                };
                self.slot_of.insert(id, slot);
                slot
            }
        };
        let s = slot as usize;
        let mut flags = LIVE;
        if t.status == ThreadStatus::Archived {
            flags |= ARCHIVED;
        }
        if t.pinned {
            flags |= PINNED;
        }
        self.flags[s] = flags;
        self.weight[s] = t.weight;
        self.weight_at[s] = t.weight_at.timestamp_millis();
        self.centroids.set(s, t.embedding.as_ref());
        let mut bits = 0;
        let topics: Box<[u32]> = t
            .topics
            .iter()
            .map(|topic| {
                let next = self.topic_ids.len() as u32;
                let id = *self.topic_ids.entry(topic.clone()).or_insert(next);
                bits |= topic_bit(id);
                id
            })
            .collect();
        self.topics[s] = topics;
        self.topic_bits[s] = bits;
        // Its docs: those it no longer has belong to nothing; its own point back to it.
        let docs = index.thread_docs(&t.id).to_vec();
        self.extend_docs(index);
        for &d in &self.slot_docs[s] {
            if let Some(owner) = self.doc_slot.get_mut(d as usize) {
                if *owner == slot {
                    *owner = NO_SLOT;
                }
            }
        }
        for &d in &docs {
            let Some(doc) = index.doc(d) else { continue };
            self.doc_slot[d as usize] = slot;
            self.doc_position[d as usize] = doc.position as u32;
            self.doc_part[d as usize] = doc.part;
        }
        self.slot_docs[s] = docs;
    }

    fn remove(&mut self, id: &str) {
        let Some(slot) = self.slot_of.remove(id) else {
            return;
        };
        let s = slot as usize;
        for d in std::mem::take(&mut self.slot_docs[s]) {
            if let Some(owner) = self.doc_slot.get_mut(d as usize) {
                *owner = NO_SLOT;
            }
        }
        self.ids[s] = Arc::from("");
        self.flags[s] = 0;
        self.centroids.set(s, None);
        self.topics[s] = Box::new([]);
        self.topic_bits[s] = 0;
        self.free.push(slot);
    }

    /// Slots in use or free: the size of a per-slot array.
    pub fn slots(&self) -> usize {
        self.ids.len()
    }

    /// Whether slot `s` holds a thread ranking considers (`archived`: archived ones too; a
    /// pinned thread always).
    pub fn candidate(&self, s: usize, archived: bool) -> bool {
        let f = self.flags[s];
        f & LIVE != 0 && (archived || f & ARCHIVED == 0 || f & PINNED != 0)
    }

    pub fn id(&self, s: usize) -> &str {
        &self.ids[s]
    }

    /// The thread's weight now.
    pub fn weight(&self, s: usize, now: DateTime<Utc>) -> f64 {
        decayed_after(
            self.weight[s],
            now.timestamp_millis() - self.weight_at[s],
            THREAD_HALF_LIFE_DAYS,
        )
    }

    pub fn centroids(&self) -> &DocVectors {
        &self.centroids
    }

    /// `topics` in the table's numbers.
    pub fn query_topics(&self, topics: &[String]) -> QueryTopics {
        let known: Vec<u32> = topics
            .iter()
            .filter_map(|t| self.topic_ids.get(t).copied())
            .collect();
        QueryTopics {
            asked: topics.len(),
            bits: known.iter().fold(0, |b, &id| b | topic_bit(id)),
            known,
        }
    }

    /// The share of the query's topics the thread holds (over the smaller list) and how many:
    /// what `topic_overlap` gives for the same lists.
    pub fn topic_overlap(&self, s: usize, q: &QueryTopics) -> (f64, usize) {
        let mine = &self.topics[s];
        if q.asked == 0 || mine.is_empty() || self.topic_bits[s] & q.bits == 0 {
            return (0.0, 0);
        }
        let shared = q.known.iter().filter(|id| mine.contains(id)).count();
        (shared as f64 / q.asked.min(mine.len()) as f64, shared)
    }

    /// Doc → (slot, message position, unit), or None for a doc of no live thread.
    pub fn doc(&self, d: usize) -> Option<(u32, u32, u32)> {
        let slot = *self.doc_slot.get(d)?;
        (slot != NO_SLOT).then(|| (slot, self.doc_position[d], self.doc_part[d]))
    }

    pub fn doc_count(&self) -> usize {
        self.doc_slot.len()
    }
}
