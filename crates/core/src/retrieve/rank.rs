//! Steps 1 to 3 (see the module above): each unit scored, threads seeded and expanded through
//! bridges, final scores with the shares of neighbours and episodes; cached per query text.

use super::cause;
use super::gate::{QueryStats, StatsScan};
use super::index;
use super::order;
use super::past;
use super::person;
use super::preference;
use super::table::ThreadTable;
use super::{Query, Why};
use crate::memory::decay::bridge_weight;
use crate::memory::engine::Memory;
use crate::memory::similarity::from_parts;
use crate::memory::types::{BridgeStatus, ThreadStatus};
use ai_smartness_vectors::quant::QVec;
use chrono::{DateTime, Utc};
use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Seed threads expanded through bridges.
pub const MAX_SEEDS: usize = 5;
/// Threads reached by seeds and expansion at most.
pub const MAX_EXPANDED: usize = 20;
/// Bridge hops from a seed.
pub const MAX_DEPTH: usize = 2;
/// Weight of a message's own embedding vs its BM25 match in its relevance.
pub(super) const DENSE_SHARE: f32 = 0.5;
/// Relevance a message gains when the question names its label, i.e. who said it
/// ([`index::label`], [`index::SearchIndex::labelled`]): a question about someone is answered
/// by what they said. A gain, not a filter: what someone else said about them still counts.
/// Only for a name too common for BM25 to weigh (see [`index::SearchIndex::labelled`]).
pub(super) const LABEL_GAIN: f32 = 0.3;
/// Share of its best neighbour's relevance a message inherits (the message said just before or
/// after it in the same episode: an answer and its question, a command and its output), its
/// [`LABEL_GAIN`] left out.
pub(super) const NEIGHBOUR_SHARE: f32 = 0.4;
/// Share of the best relevance of its episode a message inherits.
pub(super) const EPISODE_SHARE: f32 = 0.3;
/// A cached ranking lives this long at most.
pub(super) const CACHE_TTL: Duration = Duration::from_secs(60);
pub(super) const CACHE_ENTRIES: usize = 64;

/// One scored unit: its thread (an index into [`Ranking::thread_ids`]), its message's position
/// and which unit of the message it is.
#[derive(Debug, Clone, Copy)]
pub(super) struct Scored {
    pub(super) thread: u32,
    pub(super) position: u32,
    pub(super) part: u32,
    /// The message's doc in the search index (`u32::MAX` when the index does not know it).
    pub(super) doc: u32,
    /// Its score (`why.score`) and what made it.
    pub(super) why: Why,
}

impl Scored {
    pub(super) fn score(&self) -> f32 {
        self.why.score
    }
}

/// From this many vectors on, step 1 compares them with the question in two halves on two
/// threads: below, a thread costs more to start than it saves.
pub(super) const PARALLEL_SCAN_MESSAGES: usize = 4_000;

/// Messages kept after ranking: far more than any budget can hold.
pub(super) const RANKED_MESSAGES: usize = 1024;

/// Steps 1-3: the best candidate messages with their final score, best first, and thread
/// scores.
#[derive(Debug, Default)]
pub struct Ranking {
    pub(super) thread_ids: Vec<String>,
    pub(super) messages: Vec<Scored>,
    pub(super) threads: HashMap<String, f32>,
    pub(super) bridges: Vec<String>,
    pub stats: QueryStats,
}

impl Ranking {
    /// Each ranked thread with the final score of its best message, best first: what a search
    /// over threads lists.
    pub fn thread_scores(&self) -> Vec<(&str, f32)> {
        let mut seen = HashSet::new();
        // Messages are sorted best first, so a thread's first message is its best.
        self.messages
            .iter()
            .filter(|m| seen.insert(m.thread))
            .filter_map(|m| Some((self.thread_ids.get(m.thread as usize)?.as_str(), m.score())))
            .collect()
    }
}

/// The indices of the `k` highest keys, highest first; equal keys in the order they come (the
/// order of their indices). Fed one key at a time, indices in increasing order: past the first
/// `k`, a key at or below the current `k`-th is dropped at a single comparison, so tens of
/// thousands of messages cost little more than reading them.
#[derive(Debug)]
pub(super) struct TopK {
    pub(super) k: usize,
    pub(super) kept: Vec<(f32, u32)>,
    /// The k-th best key so far, once k are kept: a later index never beats an equal key.
    pub(super) floor: Option<f32>,
}

impl TopK {
    pub(super) fn new(k: usize) -> TopK {
        TopK {
            k,
            kept: Vec::with_capacity(2 * k),
            floor: None,
        }
    }

    pub(super) fn order(a: &(f32, u32), b: &(f32, u32)) -> std::cmp::Ordering {
        b.0.total_cmp(&a.0).then(a.1.cmp(&b.1))
    }

    /// Offers `key` for index `i` (indices must come in increasing order).
    pub(super) fn push(&mut self, key: f32, i: u32) {
        if self.k == 0 || self.floor.is_some_and(|f| key.total_cmp(&f).is_le()) {
            return;
        }
        self.kept.push((key, i));
        if self.kept.len() == 2 * self.k {
            self.keep_best();
            self.floor = Some(self.kept[self.k - 1].0);
        }
    }

    pub(super) fn keep_best(&mut self) {
        if self.kept.len() > self.k {
            self.kept.select_nth_unstable_by(self.k - 1, Self::order);
            self.kept.truncate(self.k);
        }
    }

    /// The indices kept, best first.
    pub(super) fn into_indices(mut self) -> Vec<u32> {
        self.keep_best();
        self.kept.sort_unstable_by(Self::order);
        self.kept.into_iter().map(|(_, i)| i).collect()
    }
}

/// A cached ranking: the graph version it saw and when it was made.
pub(super) type CacheEntry = (u64, Instant, Arc<Ranking>);

/// Rankings by query text, valid for one graph version; the least used go first when full.
#[derive(Debug)]
pub struct Cache {
    entries: quick_cache::sync::Cache<String, CacheEntry>,
}

impl Default for Cache {
    fn default() -> Self {
        Cache {
            entries: quick_cache::sync::Cache::new(CACHE_ENTRIES),
        }
    }
}

impl Cache {
    /// The ranking of `q`, from the cache when the memory has not changed since.
    pub fn rank(&self, mem: &Memory, q: &Query, now: DateTime<Utc>) -> Arc<Ranking> {
        let version = mem.graph.version();
        let key = format!("{}\u{0}{}", q.text, q.embedding.len());
        if let Some((v, at, r)) = self.entries.get(&key) {
            if v == version && at.elapsed() < CACHE_TTL {
                return r;
            }
        }
        let ranking = Arc::new(rank(mem, q, now));
        self.entries
            .insert(key, (version, Instant::now(), Arc::clone(&ranking)));
        ranking
    }
}

/// Steps 1 to 3 (see the module doc).
pub fn rank(mem: &Memory, q: &Query, now: DateTime<Utc>) -> Ranking {
    rank_split(mem, q, now, PARALLEL_SCAN_MESSAGES, false)
}

/// [`rank`], archived threads included when `archived` (a search of everything; injection
/// never looks there).
pub(super) fn rank_scoped(mem: &Memory, q: &Query, now: DateTime<Utc>, archived: bool) -> Ranking {
    rank_split(mem, q, now, PARALLEL_SCAN_MESSAGES, archived)
}

/// [`rank`], step 1 split in two from `split_from` messages on.
pub(super) fn rank_split(
    mem: &Memory,
    q: &Query,
    now: DateTime<Utc>,
    split_from: usize,
    archived: bool,
) -> Ranking {
    let related = mem.words.related(&q.words, &mem.index);
    let query_terms = index::query_terms(&q.text);
    let lexical = mem.index.search(&query_terms, &related);
    let labelled = mem.index.labelled(
        &query_terms,
        person::asks_for_the_persons_words(&q.text),
        cause::asks_for_a_cause(&q.text),
    );
    let standing = mem
        .index
        .standing_instructions(preference::asks_for_advice(&q.text));
    let emb = (!q.embedding.is_empty()).then_some(q.embedding.as_slice());
    // The query as 8-bit integers too: an integer dot product over every message vectorises.
    let q8 = emb.map(QVec::from_unit);
    let query_topics = mem.graph.specific_topics(&q.topics);
    let dense_by_doc: Vec<f32> = q8
        .as_ref()
        .map(|q| mem.index.vectors().all_cosines(q, split_from))
        .unwrap_or_default();

    // 1. Message relevance, and each thread's best, from the table's arrays: one pass over
    // the threads (their own vectors, topics and weights), one over the messages in doc order.
    // A pinned thread is a candidate whatever its status. A table not synced with the graph
    // is never trusted: a fresh one is built (the daemon syncs before ranking).
    let fresh;
    let table = if mem.table().current(&mem.graph) {
        mem.table()
    } else {
        fresh = ThreadTable::build(&mem.graph, &mem.index);
        &fresh
    };
    let slots = table.slots();
    let centroid: Vec<f32> = match &q8 {
        Some(q) => table
            .centroids()
            .all_cosines(q, split_from)
            .into_iter()
            .map(|c| if c.is_nan() { 0.0 } else { c })
            .collect(),
        None => vec![0.0; slots],
    };
    let topics = table.query_topics(&query_topics);
    let mut best = vec![0f32; slots];
    let mut messages: Vec<Scored> = Vec::with_capacity(table.doc_count());
    let mut scan = StatsScan::new();
    // For step 3, each message's own relevance by doc and the best of each episode.
    let timeline = mem.index.timeline();
    let mut own_by_doc = vec![0f32; mem.index.doc_count()];
    let mut episode_best = vec![0f32; timeline.episodes()];
    for d in 0..table.doc_count() {
        let Some((slot, position, part)) = table.doc(d) else {
            continue;
        };
        let s = slot as usize;
        if !table.candidate(s, archived) {
            continue;
        }
        let dense = match dense_by_doc.get(d) {
            Some(c) if !c.is_nan() => *c,
            _ => centroid[s],
        };
        let lex = lexical.get(d).copied().unwrap_or(0.0);
        let named = labelled.get(d).copied().unwrap_or(false);
        let gain = if named || standing.get(d).copied().unwrap_or(false) {
            LABEL_GAIN
        } else {
            0.0
        };
        let r = DENSE_SHARE * dense + (1.0 - DENSE_SHARE) * lex + gain;
        best[s] = best[s].max(r);
        let why = Why {
            score: r,
            dense,
            lexical: lex,
            label: gain,
            ..Why::default()
        };
        scan.note(messages.len() as u32, &why, named);
        if let Some(own) = own_by_doc.get_mut(d) {
            // A neighbour passes on what it says, not who said it: the reply to what the named
            // person said is someone else's words.
            *own = if gain > 0.0 { r - LABEL_GAIN } else { r };
            if let Some(e) = timeline.episode(d as u32) {
                episode_best[e as usize] = episode_best[e as usize].max(r);
            }
        }
        messages.push(Scored {
            thread: slot,
            position,
            part,
            doc: d as u32,
            why,
        });
    }
    // 2. Each thread's own score: its best message, the 4.2 similarity, a little weight.
    let mut own_seed = vec![0f32; slots];
    let mut seeds: Vec<(u32, f32)> = Vec::with_capacity(slots);
    for s in (0..slots).filter(|&s| table.candidate(s, archived)) {
        let (overlap, shared) = table.topic_overlap(s, &topics);
        let sim42 = from_parts(f64::from(centroid[s]), overlap, shared).min(1.0) as f32;
        let w = table.weight(s, now) as f32;
        let score = (0.7 * best[s] + 0.3 * sim42) * (0.9 + 0.1 * w);
        own_seed[s] = score;
        seeds.push((s as u32, score));
    }
    // Equal scores by thread id: the same order every run, whatever slots the threads hold.
    let by_score = |a: &(u32, f32), b: &(u32, f32)| {
        b.1.total_cmp(&a.1)
            .then_with(|| table.id(a.0 as usize).cmp(table.id(b.0 as usize)))
    };
    if seeds.len() > MAX_SEEDS {
        seeds.select_nth_unstable_by(MAX_SEEDS, by_score);
        seeds.truncate(MAX_SEEDS);
    }
    seeds.sort_by(by_score);

    // 2. Expansion through bridges from the best seeds.
    // Ids are borrowed from the graph: a hub thread's bridges are many, and each visit used
    // to allocate two strings.
    let mut expanded: HashMap<&str, f32> = HashMap::new();
    let mut bridges_used: Vec<&str> = Vec::new();
    let mut queue: VecDeque<(&str, f32, usize)> = VecDeque::new();
    for (ti, s) in seeds.iter().take(MAX_SEEDS) {
        let id = table.id(*ti as usize);
        expanded.insert(id, *s);
        queue.push_back((id, *s, 0));
    }
    let mut next: Vec<(&str, f32, &str)> = Vec::new();
    while let Some((id, score, depth)) = queue.pop_front() {
        if depth >= MAX_DEPTH {
            continue;
        }
        next.clear();
        next.extend(
            mem.graph
                .bridges_of(id)
                .filter(|b| b.status != BridgeStatus::Invalid)
                .filter_map(|b| {
                    let other = mem.graph.thread(b.other_end(id)?)?;
                    (other.status != ThreadStatus::Archived).then(|| {
                        let s = score * b.confidence as f32 * bridge_weight(b, now) as f32 * 0.5;
                        (other.id.as_str(), s, b.id.as_str())
                    })
                }),
        );
        next.sort_by(|a, b| b.1.total_cmp(&a.1));
        for &(other, s, bridge) in &next {
            let known = expanded.get(other).copied();
            if known.is_none() && expanded.len() >= MAX_EXPANDED {
                break;
            }
            if known.is_none_or(|k| s > k) {
                expanded.insert(other, s);
                bridges_used.push(bridge);
                queue.push_back((other, s, depth + 1));
            }
        }
    }

    // 3. Final message scores: own relevance, a share of the best neighbour's, of the best in
    // the episode and of the thread's (see the constants).
    // Equal scores go in the order the messages were stored (their docs): the same order
    // every run, whatever slots the threads hold. `messages` is in doc order, so index order is
    // doc order.
    let mut ranked = TopK::new(RANKED_MESSAGES);
    let mut score_max = 0f32;
    for (i, m) in messages.iter_mut().enumerate() {
        // The units of one message do not lift each other: they are one piece of evidence,
        // and a long answer's sections would crowd out every other message.
        let neighbour = timeline
            .neighbours(m.doc)
            .into_iter()
            .flatten()
            .filter(|&d| {
                table
                    .doc(d as usize)
                    .is_none_or(|(s, p, _)| (s, p) != (m.thread, m.position))
            })
            .map(|d| own_by_doc[d as usize])
            .fold(0f32, f32::max);
        let episode = timeline
            .episode(m.doc)
            .map_or(0.0, |e| episode_best[e as usize]);
        m.why.neighbour = NEIGHBOUR_SHARE * neighbour;
        m.why.episode = EPISODE_SHARE * episode;
        m.why.score += m.why.neighbour + m.why.episode;
        score_max = score_max.max(m.score());
        ranked.push(m.score(), i as u32);
    }
    let known = mem.index.known_share(&query_terms);
    let stats = scan.finish(
        &messages,
        score_max,
        known,
        past::asks_about_this_work(&q.text),
        past::recalls_this_work(&q.text, known),
    );
    let mut messages: Vec<Scored> = ranked
        .into_indices()
        .into_iter()
        .map(|i| messages[i as usize])
        .collect();
    if let Some(cue) = order::cue(&q.text) {
        order::prefer(&mut messages, cue, timeline);
    }
    // Only now, for the messages kept, each one's thread: its score (from the expansion when
    // reached, else half its own) and its id, numbered in order of first appearance, both
    // looked up once, at the thread's first message. Reading every thread's id again costs
    // more than the rest of this step in a large memory.
    let mut thread_ids: Vec<String> = Vec::new();
    let mut thread_scores: Vec<f32> = Vec::new();
    let mut numbered: Vec<u32> = vec![u32::MAX; slots];
    for m in &mut messages {
        let ti = m.thread as usize;
        if numbered[ti] == u32::MAX {
            let id = table.id(ti);
            numbered[ti] = thread_ids.len() as u32;
            thread_scores.push(expanded.get(id).copied().unwrap_or(own_seed[ti] * 0.5));
            thread_ids.push(id.to_string());
        }
        m.thread = numbered[ti];
        m.why.thread = thread_scores[m.thread as usize];
    }
    let threads = expanded
        .into_iter()
        .map(|(id, s)| (id.to_string(), s))
        .collect();
    Ranking {
        thread_ids,
        messages,
        threads,
        bridges: bridges_used.into_iter().map(str::to_string).collect(),
        stats,
    }
}
