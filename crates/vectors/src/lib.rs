//! Vectors of ai-smartness, pure: what an embedder is (its kind, its errors, the trait), the
//! 8-bit vectors the memory stores ([`quant`]), the hashed TF-IDF fallback and its terms
//! ([`tfidf`]), cosine and normalisation. No model and no runtime: the memory engine builds on
//! this, and `ai-smartness-embed` adds MiniLM over ONNX Runtime and the service that runs it.

pub mod quant;
pub mod tfidf;

use serde::{Deserialize, Serialize};
use std::fmt;
use std::ops::Range;
use std::path::PathBuf;

pub use tfidf::HashedTfIdf;

/// Dimension of every embedding, whichever embedder made it. The fallback
/// uses MiniLM's size so stored vectors always have one shape (vectors of
/// the fallback and of MiniLM are still not comparable: see [`EmbedderKind`]).
pub const DIM: usize = 384;

/// Which embedder produced a vector. Store it next to each vector: cosine
/// between vectors of kinds that are not [`EmbedderKind::comparable_with`]
/// each other is meaningless.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EmbedderKind {
    /// all-MiniLM-L6-v2 via ONNX Runtime, multiplying in f32 (the model as shipped).
    MiniLm,
    /// all-MiniLM-L6-v2 via ONNX Runtime, multiplying in 8 bits (`ai-smartness-embed`'s `int8`): a sentence's vector
    /// is within ~0.001 cosine of [`EmbedderKind::MiniLm`]'s, a word's within ~0.005.
    MiniLmInt8,
    /// The deterministic bag-of-words fallback.
    HashedTfidf,
}

impl EmbedderKind {
    /// Whether vectors of `self` and `other` can be compared: the same model, however its
    /// products are computed. Vectors stored by one stay usable by the other, so switching
    /// between them costs no re-embedding of the memory (minutes of CPU at 10,000 threads, for
    /// a difference retrieval cannot see).
    pub fn comparable_with(self, other: EmbedderKind) -> bool {
        use EmbedderKind::*;
        self == other || matches!((self, other), (MiniLm, MiniLmInt8) | (MiniLmInt8, MiniLm))
    }
}

impl fmt::Display for EmbedderKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            EmbedderKind::MiniLm => "all-MiniLM-L6-v2 (onnx)",
            EmbedderKind::MiniLmInt8 => "all-MiniLM-L6-v2 (onnx, 8-bit products)",
            EmbedderKind::HashedTfidf => "hashed TF-IDF (degraded)",
        })
    }
}

#[derive(Debug, thiserror::Error)]
pub enum EmbedError {
    /// A required file is absent. `asset` is its file name.
    #[error("missing embedding asset {asset} at {} (run scripts/fetch-assets.sh)", path.display())]
    MissingAsset { asset: &'static str, path: PathBuf },
    /// The files exist but the model or ONNX Runtime could not be loaded.
    #[error("cannot load the embedding model: {0}")]
    Load(String),
    /// The model was loaded but failed on this input.
    #[error("embedding failed: {0}")]
    Inference(String),
    /// The embedding service's thread is gone (it could not start, or it died).
    #[error("the embedding service has stopped")]
    ServiceStopped,
}

/// Turns texts into [`DIM`]-dimensional, L2-normalized vectors (the zero
/// vector for a text with nothing to embed, in the fallback only).
///
/// `Send` but not `Sync`: inference takes `&mut self`, and the embedding service gives the
/// embedder to a single thread.
pub trait Embedder: Send {
    fn kind(&self) -> EmbedderKind;
    /// One vector per text, in order. An empty slice gives an empty vec.
    fn embed(&mut self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError>;

    /// `text`'s vector, and (when `leave_out`, byte ranges of `text`, is not empty) the vector
    /// of `text` with those ranges left out: a query's words that every message shares say
    /// little about which message it asks for. By default the shortened text is embedded too;
    /// MiniLM pools one pass over `text` twice instead (`ai-smartness-embed`'s `MiniLmEmbedder`), which halves the
    /// prompt's wait.
    fn embed_focused(
        &mut self,
        text: &str,
        leave_out: &[Range<usize>],
    ) -> Result<(Vec<f32>, Option<Vec<f32>>), EmbedError> {
        let mut texts = vec![text.to_string()];
        if !leave_out.is_empty() {
            texts.push(without_ranges(text, leave_out));
        }
        let mut vectors = self.embed(&texts)?.into_iter();
        Ok((vectors.next().unwrap_or_default(), vectors.next()))
    }
}

/// `text` without the byte ranges in `leave_out` (ranges not on char boundaries are kept), its
/// whitespace runs collapsed to one space.
pub fn without_ranges(text: &str, leave_out: &[Range<usize>]) -> String {
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for r in leave_out {
        let ok = r.start >= at
            && r.end <= text.len()
            && text.is_char_boundary(r.start)
            && text.is_char_boundary(r.end);
        if ok {
            out.push_str(&text[at..r.start]);
            at = r.end;
        }
    }
    out.push_str(&text[at..]);
    out.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Cosine similarity in [-1, 1]. 0.0 when the dims differ, or when either
/// vector is empty or all zeros (such a vector is similar to nothing).
pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    if a.len() != b.len() || a.is_empty() {
        return 0.0;
    }
    let (mut dot, mut norm_a, mut norm_b) = (0.0f32, 0.0f32, 0.0f32);
    for (x, y) in a.iter().zip(b) {
        dot += x * y;
        norm_a += x * x;
        norm_b += y * y;
    }
    let denominator = (norm_a * norm_b).sqrt();
    if denominator == 0.0 || !denominator.is_finite() {
        return 0.0;
    }
    // Rounding can push identical vectors a hair past 1.
    (dot / denominator).clamp(-1.0, 1.0)
}

/// `text` cut to at most `max_chars` chars, on a char boundary. Embedders
/// clip their input so a huge string costs no more than a long one.
pub fn clip_chars(text: &str, max_chars: usize) -> &str {
    match text.char_indices().nth(max_chars) {
        Some((end, _)) => &text[..end],
        None => text,
    }
}

/// L2-normalises in place (a zero vector stays zero).
pub fn normalize(v: &mut [f32]) {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 {
        v.iter_mut().for_each(|x| *x /= norm);
    }
}
