//! Every indexed message in time order, cut into *episodes*: runs of messages captured in one
//! sitting (no gap longer than [`EPISODE_GAP_SECS`], and one Claude Code session when both sides
//! name theirs). What was said together is usually about the same thing: retrieval lets a message
//! inherit from the messages said just before and after it, and from the best of its episode,
//! whatever thread each went to.

use chrono::{DateTime, Utc};

/// A pause longer than this starts a new episode.
pub const EPISODE_GAP_SECS: i64 = 30 * 60;

/// Times are kept in microseconds: captures a second apart or less (a tool call's result, the
/// reply after it) keep their order when the index is rebuilt at start, instead of falling back
/// on doc numbers, which then follow thread ids.
const MICROS_PER_SEC: i64 = 1_000_000;

/// Slot and episode of a doc that is not in the timeline (a dead one).
const NOWHERE: u32 = u32::MAX;

/// Live doc ids (of the [`super::index::SearchIndex`]) in time order, with their episodes.
#[derive(Debug, Default)]
pub struct Timeline {
    /// Capture time of each doc, by doc id (microseconds).
    at: Vec<i64>,
    /// A hash of each doc's session id, 0 when it has none.
    session: Vec<u64>,
    /// Whether each doc is still indexed. A thread indexed again (split, merged) leaves its old
    /// docs behind at the same times as the new ones: left in the order, they would stand
    /// between a message and its real neighbours and pass on nothing.
    alive: Vec<bool>,
    /// Live doc ids sorted by time (ties by doc id: arrival order).
    order: Vec<u32>,
    /// Where each doc sits in `order` ([`NOWHERE`] for a dead one).
    slot: Vec<u32>,
    /// Each doc's episode ([`NOWHERE`] for a dead one).
    episode: Vec<u32>,
    episodes: u32,
}

impl Timeline {
    /// Records doc `doc` (the next id: docs are numbered from 0 without gaps). In time order,
    /// as captures arrive, this is O(1); a doc older than the newest re-sorts everything.
    pub fn push(&mut self, doc: u32, at: DateTime<Utc>, session: u64) {
        debug_assert_eq!(doc as usize, self.at.len());
        let at = at.timestamp_micros();
        self.at.push(at);
        self.session.push(session);
        self.alive.push(true);
        match self.order.last().copied() {
            Some(last) if self.at[last as usize] > at => self.rebuild(),
            last => {
                let episode = match last {
                    Some(l) if self.continues(l, doc) => self.episode[l as usize],
                    _ => {
                        self.episodes += 1;
                        self.episodes - 1
                    }
                };
                self.slot.push(self.order.len() as u32);
                self.order.push(doc);
                self.episode.push(episode);
            }
        }
    }

    /// Records a doc without placing it: for bulk loads, which call [`Timeline::rebuild`] once
    /// at the end.
    pub fn push_unordered(&mut self, doc: u32, at: DateTime<Utc>, session: u64) {
        debug_assert_eq!(doc as usize, self.at.len());
        self.at.push(at.timestamp_micros());
        self.session.push(session);
        self.alive.push(true);
    }

    /// Takes a dead doc out of the timeline when it is next rebuilt: the caller calls
    /// [`Timeline::rebuild`] once after forgetting all it forgets.
    pub fn forget(&mut self, doc: u32) {
        if let Some(a) = self.alive.get_mut(doc as usize) {
            *a = false;
        }
    }

    /// Sorts every live doc by time and recomputes the episodes.
    pub fn rebuild(&mut self) {
        let mut order: Vec<u32> = (0..self.at.len() as u32)
            .filter(|&d| self.alive[d as usize])
            .collect();
        order.sort_by_key(|&d| (self.at[d as usize], d));
        self.slot = vec![NOWHERE; self.at.len()];
        self.episode = vec![NOWHERE; self.at.len()];
        self.episodes = 0;
        let mut prev: Option<u32> = None;
        for (i, &d) in order.iter().enumerate() {
            self.slot[d as usize] = i as u32;
            if prev.is_none_or(|p| !self.continues(p, d)) {
                self.episodes += 1;
            }
            self.episode[d as usize] = self.episodes - 1;
            prev = Some(d);
        }
        self.order = order;
    }

    /// Whether `next` (just after `prev` in time) is in `prev`'s episode.
    fn continues(&self, prev: u32, next: u32) -> bool {
        let (p, n) = (prev as usize, next as usize);
        let same_session =
            self.session[p] == 0 || self.session[n] == 0 || self.session[p] == self.session[n];
        same_session && self.at[n] - self.at[p] <= EPISODE_GAP_SECS * MICROS_PER_SEC
    }

    /// The doc's episode (episodes are numbered from 0, below [`Timeline::episodes`]); None
    /// for a dead doc.
    pub fn episode(&self, doc: u32) -> Option<u32> {
        self.episode
            .get(doc as usize)
            .copied()
            .filter(|&e| e != NOWHERE)
    }

    pub fn episodes(&self) -> usize {
        self.episodes as usize
    }

    /// Every live doc in time order, oldest first.
    pub fn in_order(&self) -> &[u32] {
        &self.order
    }

    /// Where `doc` sits in [`Timeline::in_order`]; None for a dead doc.
    pub fn slot(&self, doc: u32) -> Option<usize> {
        self.slot
            .get(doc as usize)
            .filter(|&&s| s != NOWHERE)
            .map(|&s| s as usize)
    }

    /// The first slot of [`Timeline::in_order`] at or after `at`.
    pub fn first_slot_from(&self, at: DateTime<Utc>) -> usize {
        let at = at.timestamp_micros();
        self.order.partition_point(|&d| self.at[d as usize] < at)
    }

    /// The live docs just before and just after `doc` in its episode.
    pub fn neighbours(&self, doc: u32) -> [Option<u32>; 2] {
        let (Some(slot), Some(episode)) = (self.slot(doc), self.episode(doc)) else {
            return [None, None];
        };
        let at = |i: usize| {
            self.order
                .get(i)
                .copied()
                .filter(|&d| self.episode[d as usize] == episode)
        };
        [slot.checked_sub(1).and_then(at), at(slot + 1)]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `s` seconds after the epoch.
    fn at(s: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(s, 0).unwrap()
    }

    #[test]
    fn episodes_break_at_long_pauses_and_session_changes() {
        let mut t = Timeline::default();
        t.push(0, at(0), 0);
        t.push(1, at(60), 0);
        t.push(2, at(60 + EPISODE_GAP_SECS + 1), 0); // a long pause
        t.push(3, at(60 + EPISODE_GAP_SECS + 2), 7);
        t.push(4, at(60 + EPISODE_GAP_SECS + 3), 9); // another session
        let e: Vec<u32> = (0..5).map(|d| t.episode(d).unwrap()).collect();
        assert_eq!(e, [0, 0, 1, 1, 2]);
        assert_eq!(t.episodes(), 3);
        assert_eq!(t.neighbours(1), [Some(0), None]);
        assert_eq!(t.neighbours(2), [None, Some(3)]);
        assert_eq!(t.neighbours(4), [None, None]);
    }

    #[test]
    fn a_doc_older_than_the_newest_is_placed_in_time_order() {
        let mut t = Timeline::default();
        t.push(0, at(100), 0);
        t.push(1, at(300), 0);
        t.push(2, at(200), 0); // arrived late
        assert_eq!(t.neighbours(2), [Some(0), Some(1)]);
        assert_eq!(t.neighbours(0), [None, Some(2)]);
        t.push(3, at(400), 0);
        assert_eq!(t.neighbours(1), [Some(2), Some(3)]);
        assert_eq!(t.episodes(), 1);
    }

    #[test]
    fn a_message_indexed_again_keeps_its_neighbours() {
        // Docs 0-2, then the thread of doc 1 indexed again as doc 3 (same time): the dead doc
        // leaves the timeline, and the new one sits between the old neighbours.
        let mut t = Timeline::default();
        t.push(0, at(100), 0);
        t.push(1, at(200), 0);
        t.push(2, at(300), 0);
        t.forget(1);
        t.push_unordered(3, at(200), 0);
        t.rebuild();
        assert_eq!(t.neighbours(3), [Some(0), Some(2)]);
        assert_eq!(t.neighbours(0), [None, Some(3)]);
        assert_eq!(t.neighbours(1), [None, None]);
        assert_eq!(t.episode(1), None);
        assert_eq!(t.slot(1), None);
        assert_eq!(t.in_order(), &[0, 3, 2]);
    }
}
