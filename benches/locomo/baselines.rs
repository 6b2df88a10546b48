//! The two baselines: BM25 over single turns and the product's own MiniLM model
//! over single turns. Both rank every turn of the conversation by score and pack them with the
//! same rule ([`pack`]), so the only difference between them (and with the product) is how
//! relevance is judged.

use super::data::{tokens, Turn};
use ai_smartness_vectors::Embedder;
use std::collections::HashMap;

/// Okapi BM25 parameters (the usual defaults).
const K1: f64 = 1.2;
const B: f64 = 0.75;

/// NLTK's English stopword list (179 words), the most common "standard" list. Contractions
/// split on the apostrophe (`don't` → `don`, `t`), which is why it holds those fragments.
///
/// Removing stopwords makes this baseline stronger: on the full set at 1,000 tokens it scores
/// about 0.65 overall / 0.38 multi-hop with them removed, 0.61 / 0.33 (the reference figures of
/// the issue) with them kept. The protocol asks for their removal, so the harder bar is used.
const STOPWORDS: &[&str] = &[
    "i",
    "me",
    "my",
    "myself",
    "we",
    "our",
    "ours",
    "ourselves",
    "you",
    "you're",
    "you've",
    "you'll",
    "you'd",
    "your",
    "yours",
    "yourself",
    "yourselves",
    "he",
    "him",
    "his",
    "himself",
    "she",
    "she's",
    "her",
    "hers",
    "herself",
    "it",
    "it's",
    "its",
    "itself",
    "they",
    "them",
    "their",
    "theirs",
    "themselves",
    "what",
    "which",
    "who",
    "whom",
    "this",
    "that",
    "that'll",
    "these",
    "those",
    "am",
    "is",
    "are",
    "was",
    "were",
    "be",
    "been",
    "being",
    "have",
    "has",
    "had",
    "having",
    "do",
    "does",
    "did",
    "doing",
    "a",
    "an",
    "the",
    "and",
    "but",
    "if",
    "or",
    "because",
    "as",
    "until",
    "while",
    "of",
    "at",
    "by",
    "for",
    "with",
    "about",
    "against",
    "between",
    "into",
    "through",
    "during",
    "before",
    "after",
    "above",
    "below",
    "to",
    "from",
    "up",
    "down",
    "in",
    "out",
    "on",
    "off",
    "over",
    "under",
    "again",
    "further",
    "then",
    "once",
    "here",
    "there",
    "when",
    "where",
    "why",
    "how",
    "all",
    "any",
    "both",
    "each",
    "few",
    "more",
    "most",
    "other",
    "some",
    "such",
    "no",
    "nor",
    "not",
    "only",
    "own",
    "same",
    "so",
    "than",
    "too",
    "very",
    "s",
    "t",
    "can",
    "will",
    "just",
    "don",
    "don't",
    "should",
    "should've",
    "now",
    "d",
    "ll",
    "m",
    "o",
    "re",
    "ve",
    "y",
    "ain",
    "aren",
    "aren't",
    "couldn",
    "couldn't",
    "didn",
    "didn't",
    "doesn",
    "doesn't",
    "hadn",
    "hadn't",
    "hasn",
    "hasn't",
    "haven",
    "haven't",
    "isn",
    "isn't",
    "ma",
    "mightn",
    "mightn't",
    "mustn",
    "mustn't",
    "needn",
    "needn't",
    "shan",
    "shan't",
    "shouldn",
    "shouldn't",
    "wasn",
    "wasn't",
    "weren",
    "weren't",
    "won",
    "won't",
    "wouldn",
    "wouldn't",
];

/// Lowercase alphanumeric runs, stopwords removed.
pub fn bm25_terms(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .filter(|w| !STOPWORDS.contains(&w.as_str()))
        .collect()
}

/// An Okapi BM25 index over the turns of one conversation.
pub struct Bm25 {
    /// Term frequencies of each document.
    docs: Vec<HashMap<String, u32>>,
    lengths: Vec<f64>,
    avg_length: f64,
    /// Documents holding each term.
    df: HashMap<String, u32>,
}

impl Bm25 {
    pub fn new(texts: &[&str]) -> Bm25 {
        let mut docs = Vec::with_capacity(texts.len());
        let mut lengths = Vec::with_capacity(texts.len());
        let mut df: HashMap<String, u32> = HashMap::new();
        for text in texts {
            let terms = bm25_terms(text);
            lengths.push(terms.len() as f64);
            let mut tf: HashMap<String, u32> = HashMap::new();
            for term in terms {
                *tf.entry(term).or_default() += 1;
            }
            for term in tf.keys() {
                *df.entry(term.clone()).or_default() += 1;
            }
            docs.push(tf);
        }
        let avg_length = lengths.iter().sum::<f64>() / lengths.len().max(1) as f64;
        Bm25 {
            docs,
            lengths,
            avg_length: avg_length.max(1e-9),
            df,
        }
    }

    /// One score per document. Each query term counts as often as it occurs in the query; the
    /// idf is Lucene's `ln(1 + (N - df + 0.5) / (df + 0.5))`, never negative.
    pub fn scores(&self, query: &str) -> Vec<f64> {
        let n = self.docs.len() as f64;
        let terms = bm25_terms(query);
        let idfs: Vec<f64> = terms
            .iter()
            .map(|t| {
                let df = f64::from(self.df.get(t).copied().unwrap_or(0));
                (1.0 + (n - df + 0.5) / (df + 0.5)).ln()
            })
            .collect();
        self.docs
            .iter()
            .zip(&self.lengths)
            .map(|(tf, &len)| {
                terms
                    .iter()
                    .zip(&idfs)
                    .map(|(t, idf)| {
                        let f = f64::from(tf.get(t).copied().unwrap_or(0));
                        idf * f * (K1 + 1.0) / (f + K1 * (1.0 - B + B * len / self.avg_length))
                    })
                    .sum()
            })
            .collect()
    }
}

/// Embeds every text with the product's embedder (MiniLM), in chunks so progress stays visible
/// and memory bounded.
pub fn embed_all(embedder: &mut dyn Embedder, texts: &[String]) -> Vec<Vec<f32>> {
    let mut out = Vec::with_capacity(texts.len());
    for chunk in texts.chunks(256) {
        out.extend(
            embedder
                .embed(chunk)
                .unwrap_or_else(|e| panic!("embedding failed: {e}")),
        );
    }
    out
}

/// Cosine scores of every turn against the question.
pub fn cosine_scores(question: &[f32], turns: &[Vec<f32>]) -> Vec<f64> {
    turns
        .iter()
        .map(|t| f64::from(ai_smartness_vectors::cosine(question, t)))
        .collect()
}

/// The turns a baseline returns within `budget` tokens: best score first (ties: earlier turn
/// first), a turn that does not fit in what is left is skipped and smaller ones after it are still
/// tried, so the budget is used as fully as the ranking allows. Turns scoring zero or less (BM25:
/// no query term) are never taken: they were not retrieved. Returns the dia_ids and the tokens
/// used.
pub fn pack<'a>(turns: &'a [Turn], ranked: &[usize], budget: usize) -> (Vec<&'a str>, usize) {
    let mut left = budget;
    let mut taken = Vec::new();
    for &i in ranked {
        let cost = tokens(&turns[i].content);
        if cost <= left {
            left -= cost;
            taken.push(turns[i].dia_id.as_str());
        }
        if left == 0 {
            break;
        }
    }
    (taken, budget - left)
}

/// Indexes of the turns with a positive score, best first, ties by turn order.
pub fn rank(scores: &[f64]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..scores.len()).filter(|&i| scores[i] > 0.0).collect();
    order.sort_by(|&a, &b| scores[b].total_cmp(&scores[a]).then(a.cmp(&b)));
    order
}
