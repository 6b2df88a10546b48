//! A BM25 inverted index over every stored unit (a message, or each part of a long one: see
//! [`Message::units`]), kept up to date as messages arrive (a rebuild per prompt would cost
//! tens of milliseconds at 10,000 threads). A *doc* is one unit.

use super::arena::DocVectors;
use super::timeline::Timeline;
use crate::memory::graph::Graph;
use crate::memory::types::{Author, Message};
use ai_smartness_vectors::tfidf::terms;
use rust_stemmers::{Algorithm, Stemmer};
use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

/// Okapi BM25 parameters: the usual values, not tuned to any dataset.
const K1: f32 = 1.2;
const B: f32 = 0.75;
/// A word found in more than this share of the stored messages tells none of them apart (the
/// project's name, the people who talk in it).
const COMMON_SHARE: f32 = 0.1;
/// Below this many messages a share says little: no word is called common.
const COMMON_MIN_DOCS: u32 = 50;
/// A related word's match counts this share of a question's word's (times its cosine): it
/// brings in what the question did not say, and must not outrank what it did.
const RELATED_SHARE: f32 = 0.3;

/// A message's label is the name before a colon that opens it (`Caroline: …`, `Error: …`): at
/// most this many words.
const LABEL_WORDS: usize = 3;
/// … and this many characters.
const LABEL_CHARS: usize = 40;

/// The label of what the person said (a prompt, a note): not a word, so no text carries it.
const PERSON_LABEL: &str = "\u{1}person";

/// The label of a standing instruction the person gave, a rule their words state
/// ([`crate::memory::rules::detect`]).
const STANDING_LABEL: &str = "\u{1}standing";
/// The label of a preference the person stated ([`super::preference`]).
const PREFERENCE_LABEL: &str = "\u{1}preference";
/// The label of what someone said that gives a cause ([`super::cause::states_a_cause`]).
const CAUSE_LABEL: &str = "\u{1}cause";

/// The label of a message: the words before a colon that opens its first line, when they look
/// like a name (one to [`LABEL_WORDS`] words, each starting with a capital letter), as in a
/// transcript (`Speaker: text`) or a tagged line (`Error: …`). None otherwise: a sentence with
/// a colon further on, a time (`12:30`), a URL (`https://`).
pub fn label(content: &str) -> Option<&str> {
    let head = content.trim_start();
    let stop = head
        .char_indices()
        .take(LABEL_CHARS + 1)
        .find(|&(_, c)| c == ':' || c == '\n');
    let (colon, ':') = stop? else {
        return None;
    };
    let name = head[..colon].trim_end();
    let mut words = 0;
    for word in name.split_whitespace() {
        words += 1;
        let starts_capital = word.chars().next().is_some_and(char::is_uppercase);
        let wordlike = word
            .chars()
            .all(|c| c.is_alphanumeric() || "-'.".contains(c));
        if words > LABEL_WORDS || !starts_capital || !wordlike {
            return None;
        }
    }
    (words > 0).then_some(name)
}

/// One indexed unit.
#[derive(Debug, Clone)]
pub struct Doc {
    /// Shared with every other message of the thread (one allocation per thread, not per
    /// message: at 10,000 threads that is megabytes).
    pub thread_id: Arc<str>,
    /// Position in the thread's `messages` (messages are only ever appended).
    pub position: usize,
    /// Which unit of the message (0 for a message of one unit).
    pub part: u32,
    len: u32,
    alive: bool,
}

#[derive(Debug, Default)]
pub struct SearchIndex {
    /// Fingerprint of each message's text ([`content_key`]) → its doc: a capture seen before
    /// (the same prompt again, a file read again unchanged) is found at once.
    by_content: HashMap<u64, u32>,
    docs: Vec<Doc>,
    /// term → (doc, term frequency)
    postings: HashMap<String, Vec<(u32, u16)>>,
    by_thread: HashMap<Arc<str>, Vec<u32>>,
    /// Label term → the docs whose [`label`] holds it: who said a message is not a word like
    /// the others (see [`SearchIndex::labelled`]).
    labels: HashMap<String, Vec<u32>>,
    total_len: u64,
    live: u32,
    /// The same docs in time order, cut into episodes.
    timeline: Timeline,
    /// Each doc's vector, in doc order (ranking reads them all per question).
    vectors: DocVectors,
    /// Terms first seen since the last [`SearchIndex::take_new_words`], with the word they
    /// were first seen as: the words that still need a vector ([`super::related`]).
    new_words: Vec<(String, String)>,
}

/// The index's form of a word: its Snowball (English) stem, so that a question finds the words
/// it asks about in any inflection ("researching", "researched" → "research"). Queries and
/// messages go through the same function, so a word in another language at worst keeps a
/// slightly shorter form on both sides.
pub fn stem(word: &str) -> String {
    static STEMMER: OnceLock<Stemmer> = OnceLock::new();
    STEMMER
        .get_or_init(|| Stemmer::create(Algorithm::English))
        .stem(word)
        .into_owned()
}

/// A fingerprint of a text with its whitespace runs collapsed (FNV-1a).
pub fn content_key(text: &str) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    let mut feed = |b: u8| {
        hash ^= u64::from(b);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    };
    for (i, word) in text.split_whitespace().enumerate() {
        if i > 0 {
            feed(b' ');
        }
        word.bytes().for_each(&mut feed);
    }
    hash
}

/// Whether two texts are the same once whitespace runs are collapsed.
pub fn same_text(a: &str, b: &str) -> bool {
    a.split_whitespace().eq(b.split_whitespace())
}

/// The distinct index terms of a query.
pub fn query_terms(text: &str) -> Vec<String> {
    let mut out: Vec<String> = terms(text).map(|w| stem(&w)).collect();
    out.sort_unstable();
    out.dedup();
    out
}

/// `text` cut into alternating runs of alphanumeric characters (`true`) and the rest, the way
/// [`terms`] splits words.
fn word_runs(text: &str) -> impl Iterator<Item = (&str, bool)> {
    let mut rest = text;
    std::iter::from_fn(move || {
        let first = rest.chars().next()?;
        let is_word = first.is_alphanumeric();
        let end = rest
            .char_indices()
            .find(|&(_, c)| c.is_alphanumeric() != is_word)
            .map_or(rest.len(), |(i, _)| i);
        let (run, tail) = rest.split_at(end);
        rest = tail;
        Some((run, is_word))
    })
}

impl SearchIndex {
    pub fn build(graph: &Graph) -> SearchIndex {
        let mut index = SearchIndex::default();
        // Words repeat: stemming each distinct one once keeps a 10,000-thread start fast.
        let mut stems = HashMap::new();
        // In id order, the order the store loads them in (see `Message::pack_vectors`).
        let mut threads: Vec<&crate::memory::types::Thread> = graph.threads().collect();
        threads.sort_by(|a, b| a.id.cmp(&b.id));
        for t in threads {
            for (i, m) in t.messages.iter().enumerate() {
                index.add_doc(&t.id, i, m, Some(&mut stems));
            }
        }
        index.timeline.rebuild();
        // Growth slack is worth keeping for a live index, not for the bulk loaded at start.
        index.postings.values_mut().for_each(Vec::shrink_to_fit);
        index.labels.values_mut().for_each(Vec::shrink_to_fit);
        index
    }

    pub fn add(&mut self, thread_id: &str, position: usize, message: &Message) {
        self.add_doc(thread_id, position, message, None);
    }

    /// Indexes one message, a doc per unit. `bulk` (a memo of stems) is given while loading:
    /// the docs are then placed in time order once, at the end, instead of one by one.
    fn add_doc(
        &mut self,
        thread_id: &str,
        position: usize,
        message: &Message,
        mut bulk: Option<&mut HashMap<String, String>>,
    ) {
        for part in 0..message.unit_count() {
            self.add_unit(thread_id, position, message, part, bulk.as_deref_mut());
        }
    }

    /// Files `doc` under `label` (a name's stem, or one of the labels no word can spell).
    fn put_label(&mut self, label: &str, doc: u32) {
        match self.labels.get_mut(label) {
            Some(docs) => docs.push(doc),
            None => {
                self.labels.insert(label.to_string(), vec![doc]);
            }
        }
    }

    /// Indexes unit `part` of a message: its text, and the words of its label (the file it
    /// comes from, the command).
    fn add_unit(
        &mut self,
        thread_id: &str,
        position: usize,
        message: &Message,
        part: usize,
        mut bulk: Option<&mut HashMap<String, String>>,
    ) {
        let place = bulk.is_none();
        let mut tf: HashMap<String, u16> = HashMap::new();
        let mut len = 0u32;
        let text = message.unit_text(part);
        let unit_label = message.unit_label(part).unwrap_or("");
        for word in terms(unit_label).chain(terms(text)) {
            let term = match bulk.as_deref_mut() {
                Some(memo) => match memo.get(&word) {
                    Some(term) => term.clone(),
                    None => {
                        let term = stem(&word);
                        memo.insert(word.clone(), term.clone());
                        term
                    }
                },
                None => stem(&word),
            };
            match tf.get_mut(&term) {
                Some(n) => *n = n.saturating_add(1),
                None => {
                    if !self.postings.contains_key(&term) && super::related::qualifies(&word) {
                        self.new_words.push((term.clone(), word));
                    }
                    tf.insert(term, 1);
                }
            }
            len += 1;
        }
        let doc = self.docs.len() as u32;
        if part == 0 {
            self.by_content.insert(content_key(&message.content), doc);
        }
        let shared: Arc<str> = match self.by_thread.get_key_value(thread_id) {
            Some((k, _)) => Arc::clone(k),
            None => Arc::from(thread_id),
        };
        self.docs.push(Doc {
            thread_id: Arc::clone(&shared),
            position,
            part: part as u32,
            len,
            alive: true,
        });
        // A unit not embedded yet (a store being migrated) reads as its message.
        self.vectors
            .push(message.unit_vector(part).or(message.embedding.as_ref()));
        for (term, n) in tf {
            self.postings.entry(term).or_default().push((doc, n));
        }
        self.by_thread.entry(shared).or_default().push(doc);
        // What the person asked or noted, under a label no word can spell: "what did I ask"
        // is a question about whose words, like one that names a speaker.
        if part == 0 && message.source == Author::User && message.is_said() {
            self.put_label(PERSON_LABEL, doc);
            // A rule the person gave for the work to come: every later request names it; a
            // preference, every later request for advice.
            if crate::memory::rules::states_a_rule(text) {
                self.put_label(STANDING_LABEL, doc);
            } else if super::preference::states_a_preference(text) {
                self.put_label(PREFERENCE_LABEL, doc);
            }
        }
        // A diagnosis, under a label no word can spell: "why did it fail" asks for one.
        if message.is_said() && super::cause::states_a_cause(text) {
            self.put_label(CAUSE_LABEL, doc);
        }
        if let Some(name) = (part == 0).then(|| label(&message.content)).flatten() {
            let mut seen: Vec<String> = Vec::new();
            for term in terms(name).map(|w| stem(&w)) {
                if !seen.contains(&term) {
                    self.put_label(&term, doc);
                    seen.push(term);
                }
            }
        }
        let at = message.timestamp;
        let session = message
            .metadata
            .get("session_id")
            .and_then(|v| v.as_str())
            .map_or(0, |s| {
                ai_smartness_proto::paths::fnv1a64(s.as_bytes()).max(1)
            });
        if place {
            self.timeline.push(doc, at, session);
        } else {
            self.timeline.push_unordered(doc, at, session);
        }
        self.total_len += u64::from(len);
        self.live += 1;
    }

    /// Indexes a thread's messages afresh, at their current positions (a merge re-sorts them):
    /// its old docs die, and the timeline is re-sorted once rather than once per message.
    pub fn reindex_thread(&mut self, thread_id: &str, messages: &[Message]) {
        self.forget_thread(thread_id);
        let mut stems = HashMap::new();
        for (i, m) in messages.iter().enumerate() {
            self.add_doc(thread_id, i, m, Some(&mut stems));
        }
        self.timeline.rebuild();
    }

    /// Takes a thread's messages' vectors again, at their current positions (they were
    /// embedded again in place).
    pub fn refresh_vectors(&mut self, thread_id: &str, messages: &[Message]) {
        let docs = self.by_thread.get(thread_id).map_or(&[][..], Vec::as_slice);
        for &doc in docs {
            let Some(d) = self.docs.get(doc as usize) else {
                continue;
            };
            let vector = messages
                .get(d.position)
                .and_then(|m| m.unit_vector(d.part as usize).or(m.embedding.as_ref()));
            self.vectors.set(doc as usize, vector);
        }
    }

    /// Takes every live doc's vector again from `graph` (after the whole memory was embedded
    /// again, perhaps at another length).
    pub fn refresh_all_vectors(&mut self, graph: &Graph) {
        self.vectors.clear();
        for d in &self.docs {
            let vector = d
                .alive
                .then(|| graph.thread(&d.thread_id))
                .flatten()
                .and_then(|t| t.messages.get(d.position))
                .and_then(|m| m.unit_vector(d.part as usize).or(m.embedding.as_ref()));
            self.vectors.push(vector);
        }
    }

    /// Each doc's vector, for ranking.
    pub fn vectors(&self) -> &DocVectors {
        &self.vectors
    }

    /// Forgets a deleted thread's messages (their postings are skipped from now on).
    pub fn remove_thread(&mut self, thread_id: &str) {
        self.forget_thread(thread_id);
        self.timeline.rebuild();
    }

    /// [`SearchIndex::remove_thread`] without re-sorting the timeline: the caller does.
    fn forget_thread(&mut self, thread_id: &str) {
        for doc in self.by_thread.remove(thread_id).unwrap_or_default() {
            if let Some(d) = self.docs.get_mut(doc as usize) {
                if d.alive {
                    d.alive = false;
                    self.total_len -= u64::from(d.len);
                    self.live -= 1;
                }
            }
            self.timeline.forget(doc);
        }
    }

    /// The live doc whose message has this text (whitespace aside), if any. The caller checks
    /// the text itself: a fingerprint could collide.
    pub fn doc_with_content(&self, content: &str) -> Option<&Doc> {
        let doc = *self.by_content.get(&content_key(content))?;
        self.doc(doc)
    }

    /// Docs ever added (dead ones included): the size of a per-doc array.
    /// Docs that died (their thread indexed again or removed) and still take their place in the
    /// postings: each is counted by the document frequencies until the index is built again.
    pub fn dead_docs(&self) -> usize {
        self.docs.len() - self.live as usize
    }

    /// Live docs: the messages' units the index answers for.
    pub fn live_docs(&self) -> usize {
        self.live as usize
    }

    pub fn doc_count(&self) -> usize {
        self.docs.len()
    }

    /// A thread's docs, by message position then unit.
    pub fn thread_docs(&self, thread_id: &str) -> &[u32] {
        self.by_thread.get(thread_id).map_or(&[], Vec::as_slice)
    }

    /// The doc of the first unit of a thread's message at `position`.
    pub fn first_doc(&self, thread_id: &str, position: usize) -> Option<u32> {
        self.thread_docs(thread_id).iter().copied().find(|&d| {
            self.docs
                .get(d as usize)
                .is_some_and(|doc| doc.position == position)
        })
    }

    pub fn timeline(&self) -> &Timeline {
        &self.timeline
    }

    pub fn doc(&self, doc: u32) -> Option<&Doc> {
        self.docs.get(doc as usize).filter(|d| d.alive)
    }

    /// How many messages use a term (dead ones included until the next start).
    pub fn df(&self, term: &str) -> usize {
        self.postings.get(term).map_or(0, Vec::len)
    }

    /// Whether a term is in more than [`COMMON_SHARE`] of the messages (never below
    /// [`COMMON_MIN_DOCS`] messages).
    pub fn is_common(&self, term: &str) -> bool {
        self.live >= COMMON_MIN_DOCS && self.df(term) > (self.live as f32 * COMMON_SHARE) as usize
    }

    /// Up to `max` of the terms first seen since the last call, with the word each was first
    /// seen as.
    pub fn take_new_words(&mut self, max: usize) -> Vec<(String, String)> {
        let keep = self.new_words.len().saturating_sub(max);
        let taken = self.new_words.split_off(keep);
        if self.new_words.is_empty() {
            self.new_words.shrink_to_fit();
        }
        taken
    }

    /// Keeps waiting only the new terms `waits` says still need a vector.
    pub fn retain_new_words(&mut self, waits: impl Fn(&str) -> bool) {
        self.new_words.retain(|(term, _)| waits(term));
    }

    /// Terms waiting in [`SearchIndex::take_new_words`].
    pub fn new_word_count(&self) -> usize {
        self.new_words.len()
    }

    /// The byte ranges of `text`'s common words (see [`SearchIndex::is_common`]), in order: what
    /// a query's focused embedding leaves out ([`ai_smartness_vectors::Embedder::embed_focused`]).
    ///
    /// BM25 weighs such a word down by its idf, but an embedding is pulled by every word it
    /// sees: a name that half the memory says makes every short message naming it look close to
    /// the question. None when leaving them out would leave nothing but function words, or
    /// before the memory holds enough messages to tell.
    pub fn common_word_ranges(&self, text: &str) -> Vec<std::ops::Range<usize>> {
        if self.live < COMMON_MIN_DOCS {
            return Vec::new();
        }
        let mut ranges = Vec::new();
        let (mut at, mut content_left) = (0, false);
        for (word, is_word) in word_runs(text) {
            // `terms` of one word: the word lowercased when it is a term, nothing when it is a
            // function word or a single character (kept as they are).
            match is_word.then(|| terms(word).next()).flatten() {
                Some(term) if self.is_common(&stem(&term)) => ranges.push(at..at + word.len()),
                Some(_) => content_left = true,
                None => {}
            }
            at += word.len();
        }
        if !content_left {
            ranges.clear();
        }
        ranges
    }

    /// Per doc, whether its [`label`] holds one of the query's common terms
    /// ([`SearchIndex::is_common`]): a message said by the one the question names. In a
    /// conversation between a few people each name is in most messages, so BM25 weighs it at
    /// nothing and the focused embedding leaves it out; this is what still tells whose words a
    /// question asks about. A name that is not common needs no help (BM25 already finds it),
    /// and a rare tag (`Error:` on a few tool outputs) must not lift every message carrying it.
    /// With `person` (the question asks what "I" said), the person's own words count as named
    /// too; with `cause` (the question asks why), what was said that gives a cause. Indexed
    /// like [`SearchIndex::search`].
    pub fn labelled(&self, query_terms: &[String], person: bool, cause: bool) -> Vec<bool> {
        let mut out = vec![false; self.docs.len()];
        for term in query_terms
            .iter()
            .filter(|t| self.is_common(t))
            .map(String::as_str)
            .chain(person.then_some(PERSON_LABEL))
            .chain(cause.then_some(CAUSE_LABEL))
        {
            self.mark_labelled(term, &mut out);
        }
        out
    }

    /// Per doc, whether it is a standing instruction of the person's ("always include the
    /// seed"): every request names it, as it names a registered user rule; with `advice` (the
    /// request asks what to do), a preference they stated ("I prefer the lightweight tracker")
    /// too. Indexed like
    /// [`SearchIndex::search`].
    pub fn standing_instructions(&self, advice: bool) -> Vec<bool> {
        let mut out = vec![false; self.docs.len()];
        self.mark_labelled(STANDING_LABEL, &mut out);
        if advice {
            self.mark_labelled(PREFERENCE_LABEL, &mut out);
        }
        out
    }

    /// Sets `out[doc]` for every live doc carrying `label`.
    fn mark_labelled(&self, label: &str, out: &mut [bool]) {
        for &doc in self.labels.get(label).map_or(&[][..], Vec::as_slice) {
            if self.doc(doc).is_some() {
                out[doc as usize] = true;
            }
        }
    }

    fn idf(&self, df: usize) -> f32 {
        let n = self.live as f32;
        (1.0 + (n - df as f32 + 0.5) / (df as f32 + 0.5)).ln()
    }

    /// BM25 of every message matching at least one query term, as a fraction of what a message
    /// holding every query term once (at average length) would score: 1.0 means the whole
    /// question is there, 0.1 one common word of it. Comparable across queries, unlike raw BM25.
    /// Indexed by doc id (0 for docs that match nothing, or dead ones): one array, no hashing,
    /// at 30,000 messages that is what keeps a prompt within its milliseconds.
    ///
    /// `related` terms ([`super::related`]) add [`RELATED_SHARE`] × their cosine of what the
    /// same term of the question would, without raising the ideal.
    pub fn search(&self, query_terms: &[String], related: &[(String, f32)]) -> Vec<f32> {
        let mut scores = vec![0f32; self.docs.len()];
        if self.live == 0 {
            return scores;
        }
        let mut ideal = 0f32;
        for term in query_terms {
            // A term nobody used still counts in the ideal: the question asks for it.
            ideal += self.idf(self.df(term));
            self.add_matches(&mut scores, term, 1.0);
        }
        for (term, cosine) in related {
            self.add_matches(&mut scores, term, RELATED_SHARE * cosine);
        }
        if ideal > 0.0 {
            for s in &mut scores {
                *s = (*s / ideal).min(1.0);
            }
        }
        scores
    }

    /// The share of a query's weight (each term by its idf here, a term nobody used at its
    /// highest) carried by terms this memory holds: a question about this project mostly names
    /// what it holds, even in other words, and one about something else names what it never
    /// saw (`Kafka`, `bisect`, `lasagna`).
    pub fn known_share(&self, query_terms: &[String]) -> f32 {
        let (mut known, mut all) = (0f32, 0f32);
        for term in query_terms {
            let df = self.df(term);
            let w = self.idf(df);
            all += w;
            if df > 0 {
                known += w;
            }
        }
        if all > 0.0 {
            known / all
        } else {
            0.0
        }
    }

    /// Adds `gain` × the BM25 of `term` to the score of each live doc using it.
    fn add_matches(&self, scores: &mut [f32], term: &str, gain: f32) {
        let Some(list) = self.postings.get(term) else {
            return;
        };
        let avg = (self.total_len as f32 / self.live.max(1) as f32).max(1.0);
        let idf = self.idf(list.len()) * gain;
        for &(doc, tf) in list {
            let Some(d) = self.doc(doc) else { continue };
            let tf = f32::from(tf);
            let norm = K1 * (1.0 - B + B * d.len as f32 / avg);
            scores[doc as usize] += idf * tf * (K1 + 1.0) / (tf + norm);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::types::Author;

    #[test]
    fn a_label_is_a_name_before_an_opening_colon() {
        for (content, expected) in [
            ("Caroline: I went to the support group.", Some("Caroline")),
            ("  Dr Smith: take two", Some("Dr Smith")),
            ("Error: file not found", Some("Error")),
            ("O'Brien-Jones: ok", Some("O'Brien-Jones")),
            ("Émile: salut", Some("Émile")),
            ("error: lowercase is a sentence", None),
            ("https://example.com", None),
            ("12:30 standup", None),
            ("The plan is: ship it", None),
            ("Four Capitalised Words Here: no", None),
            ("Name, Other: no", None),
            ("Abcdefghijklmnopqrstu Vwxyzabcdefghijklmnopq: no", None),
            ("First line\nSecond: not the opening", None),
            (": nothing before", None),
            ("No colon at all", None),
            ("", None),
        ] {
            assert_eq!(label(content), expected, "{content:?}");
        }
    }

    /// The docs whose label holds one of the query's common terms, by the same stems as the
    /// words; a name said in the text but not as the label does not count, nor does a removed
    /// thread's message, nor a label too rare to need help.
    #[test]
    fn labelled_finds_the_messages_said_by_the_one_named() {
        let message = |content: &str| Message {
            id: "m".into(),
            content: content.into(),
            source: Author::User,
            timestamp: chrono::DateTime::from_timestamp(0, 0).unwrap_or_default(),
            metadata: serde_json::Map::new(),
            embedding: None,
            terms: Vec::new(),
            units: Vec::new(),
        };
        let mut index = SearchIndex::default();
        index.add("t1", 0, &message("Caroline: I painted a lake."));
        index.add("t1", 1, &message("Melanie: Caroline, that lake is lovely."));
        index.add("t2", 0, &message("Caroline's dog ran off."));
        index.add("t3", 0, &message("Caroline: removed later."));
        index.remove_thread("t3");
        index.add("t4", 0, &message("Error: disk full"));
        // Too few messages to call any word common: no label counts yet.
        let caroline = query_terms("What did Caroline paint?");
        assert_eq!(index.labelled(&caroline, false, false), [false; 5]);
        for i in 0..60 {
            let who = if i % 2 == 0 { "Caroline" } else { "Melanie" };
            index.add("t5", i, &message(&format!("{who}: note {i}")));
        }
        let labelled = index.labelled(&caroline, false, false);
        assert_eq!(labelled[..5], [true, false, false, false, false]);
        assert!((5..65).all(|d| labelled[d] == (d % 2 == 1)));
        let error = query_terms("which error?");
        assert!(!index.is_common(&error[0]));
        assert!(index.labelled(&error, false, false).iter().all(|l| !l));
        assert!(index
            .labelled(&query_terms("lake"), false, false)
            .iter()
            .all(|l| !l));
    }
}
