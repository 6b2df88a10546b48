//! Related words: each word of a question brings its nearest words *in the memory's own
//! vocabulary* into the lexical match, weighted by how close they are. "What instruments does
//! she play?" then matches the message that says "clarinet" and the one that says "violin",
//! which share no word with the question; an aggregation question needs every one of them.
//!
//! Every word the memory uses gets the embedding of the word alone, once (the capture worker
//! embeds new words as they arrive; the store's word file keeps them across restarts). A
//! question's words are compared with all of them in one pass of integer dot products: at
//! 20,000 words that is a millisecond, and no list of synonyms is involved, so it works on
//! any project's vocabulary (code, prose, another language the model knows).

use super::index::{stem, SearchIndex};
use ai_smartness_vectors::quant::{DotQuery, QVec};
use ai_smartness_vectors::tfidf::terms;
use std::collections::{HashMap, HashSet};

/// A word at least this close to a question's word is related to it (cosine of the two words'
/// embeddings: "instrument"–"violin" is about 0.55, "instrument"–"kitchen" about 0.2).
const MIN_COSINE: f32 = 0.5;
/// Related words taken per word of the question, closest first.
const PER_WORD: usize = 10;
/// Words of a question that are expanded at most (the first ones): a long prompt already says
/// enough, and each word costs a pass over the vocabulary.
pub const MAX_QUERY_WORDS: usize = 8;
/// Words of a question the memory has no vector for (it never used them) are embedded with the
/// question, this many at most: each costs about a millisecond of the prompt's wait.
pub const MAX_EMBEDDED_WITH_QUERY: usize = 3;
/// A word must be at least this long, and at most [`MAX_CHARS`], and only letters, to get a
/// vector: numbers, hashes and fragments have no useful neighbours.
const MIN_CHARS: usize = 3;
const MAX_CHARS: usize = 24;
/// Quantized vectors hold components × 127, so a dot product is a cosine × 127².
const QUANT_SQ: f32 = 127.0 * 127.0;

/// Whether a (lowercased) word gets a vector.
pub fn qualifies(word: &str) -> bool {
    let n = word.chars().count();
    (MIN_CHARS..=MAX_CHARS).contains(&n) && word.chars().all(char::is_alphabetic)
}

/// The words of a question to expand: (stem, word as written), the first
/// [`MAX_QUERY_WORDS`] distinct ones that qualify and that are not common in the memory (a
/// name half the messages say relates to nothing useful).
pub fn query_words(text: &str, index: &SearchIndex) -> Vec<(String, String)> {
    let mut seen = HashSet::new();
    terms(text)
        .filter(|w| qualifies(w))
        .map(|w| (stem(&w), w))
        .filter(|(s, _)| !index.is_common(s) && seen.insert(s.clone()))
        .take(MAX_QUERY_WORDS)
        .collect()
}

/// One vector per word the memory uses, keyed by its index term (its stem).
#[derive(Debug, Default)]
pub struct WordVectors {
    /// Stem → row.
    rows: HashMap<String, u32>,
    /// Each row's stem.
    stems: Vec<String>,
    /// The rows' quantized unit vectors back to back: one allocation for the whole vocabulary
    /// and a scan that reads memory in order.
    vectors: Vec<i8>,
    /// Every row's length (set by the first row).
    dim: usize,
}

impl WordVectors {
    pub fn len(&self) -> usize {
        self.stems.len()
    }

    pub fn is_empty(&self) -> bool {
        self.stems.is_empty()
    }

    pub fn contains(&self, stem: &str) -> bool {
        self.rows.contains_key(stem)
    }

    pub fn get(&self, stem: &str) -> Option<QVec> {
        let row = *self.rows.get(stem)? as usize;
        Some(
            self.vectors[row * self.dim..(row + 1) * self.dim]
                .to_vec()
                .into(),
        )
    }

    /// Adds a word's vector (a word already known, or a vector of another size, is ignored).
    pub fn insert(&mut self, stem: &str, v: &QVec) {
        if v.is_empty() || self.rows.contains_key(stem) {
            return;
        }
        if self.dim == 0 {
            self.dim = v.len();
        }
        if v.len() != self.dim {
            return;
        }
        self.rows.insert(stem.to_string(), self.stems.len() as u32);
        self.stems.push(stem.to_string());
        self.vectors.extend_from_slice(v);
    }

    /// The words related to the question's `words` ((stem, vector) pairs), with their cosine:
    /// for each, up to [`PER_WORD`] words at least [`MIN_COSINE`] close, closest first, among
    /// the words still in the memory and not common there, the question's own left out. A word
    /// related to several keeps its best cosine. Sorted by stem.
    pub fn related(&self, words: &[(String, QVec)], index: &SearchIndex) -> Vec<(String, f32)> {
        let words: Vec<&(String, QVec)> =
            words.iter().filter(|(_, v)| v.len() == self.dim).collect();
        if words.is_empty() || self.dim == 0 {
            return Vec::new();
        }
        let own: HashSet<&str> = words.iter().map(|(s, _)| s.as_str()).collect();
        let threshold = (MIN_COSINE * QUANT_SQ) as i32;
        let mut near: Vec<Vec<(i32, u32)>> = vec![Vec::new(); words.len()];
        for ((_, q), near) in words.iter().zip(&mut near) {
            let rows = self.vectors.chunks_exact(self.dim).map(Some);
            DotQuery::new(q).each(rows, |row, dot| {
                if let Some(dot) = dot.filter(|&d| d >= threshold) {
                    near.push((dot, row as u32));
                }
            });
        }
        let mut out: HashMap<&str, f32> = HashMap::new();
        for mut list in near {
            list.sort_unstable_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
            let mut taken = 0;
            for (dot, row) in list {
                if taken == PER_WORD {
                    break;
                }
                let stem = self.stems[row as usize].as_str();
                if own.contains(stem) || index.df(stem) == 0 || index.is_common(stem) {
                    continue;
                }
                taken += 1;
                let cos = dot as f32 / QUANT_SQ;
                let best = out.entry(stem).or_insert(cos);
                *best = best.max(cos);
            }
        }
        let mut out: Vec<(String, f32)> =
            out.into_iter().map(|(s, c)| (s.to_string(), c)).collect();
        out.sort_by(|a, b| a.0.cmp(&b.0));
        out
    }
}
