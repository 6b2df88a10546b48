//! Hashed TF-IDF: the deterministic fallback embedder.
//!
//! Used when the MiniLM assets or ONNX Runtime are unavailable, so the daemon
//! keeps working (degraded) instead of refusing to start. It only captures
//! shared vocabulary, not meaning: "car" and "automobile" are unrelated here.
//!
//! A stateless embedder has no corpus to learn document frequencies from, so
//! the "IDF" part is approximated by dropping the most frequent words of
//! English, French and Spanish (stopwords); the remaining terms are weighted by
//! sublinear term frequency.

/// 64-bit FNV-1a: stable forever, which a persisted embedding needs (std's `DefaultHasher`
/// may change between Rust releases and `RandomState` changes between runs).
use ai_smartness_proto::paths::fnv1a64 as fnv1a;

use super::{clip_chars, EmbedError, Embedder, EmbedderKind, DIM};

/// Longest input read, in chars. Higher than MiniLM's cap because this
/// embedder is linear and cheap, and long texts still add useful terms; the
/// cap only keeps a pathological multi-megabyte input from costing much.
const MAX_INPUT_CHARS: usize = 16_000;

/// Stateless, deterministic bag-of-words embedder using the hashing trick.
///
/// The same text gives bit-identical vectors on every run, process and
/// machine: hashing uses FNV-1a (not std's randomly seeded hasher) and terms
/// are summed in a fixed order.
#[derive(Debug, Default, Clone, Copy)]
pub struct HashedTfIdf;

impl HashedTfIdf {
    pub fn new() -> Self {
        Self
    }

    /// Embeds one text. Returns the zero vector when it has no usable term
    /// (empty, only punctuation or only stopwords): such a text is similar to
    /// nothing, and [`super::cosine`] gives 0.0 for it.
    pub fn embed_one(&self, text: &str) -> Vec<f32> {
        let mut hashes: Vec<u64> = terms(clip_chars(text, MAX_INPUT_CHARS))
            .map(|term| fnv1a(term.as_bytes()))
            .collect();
        // Sorting groups equal terms so tf is counted without a HashMap, and
        // fixes the summation order so float results are reproducible.
        hashes.sort_unstable();

        let mut vector = vec![0.0f32; DIM];
        for run in hashes.chunk_by(|a, b| a == b) {
            let hash = run[0];
            let tf = run.len() as f32;
            // Signed hashing: colliding terms cancel out on average instead of
            // always adding up, which keeps unrelated texts near cosine 0.
            // The sign comes from the top bit, the index from the other 63:
            // independent of each other.
            let sign = if hash >> 63 == 0 { 1.0 } else { -1.0 };
            let index = ((hash & !(1 << 63)) % DIM as u64) as usize;
            vector[index] += sign * (1.0 + tf.ln());
        }

        let norm = vector.iter().map(|x| x * x).sum::<f32>().sqrt();
        if norm > 0.0 {
            vector.iter_mut().for_each(|x| *x /= norm);
        }
        vector
    }
}

impl Embedder for HashedTfIdf {
    fn kind(&self) -> EmbedderKind {
        EmbedderKind::HashedTfidf
    }

    fn embed(&mut self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        Ok(texts.iter().map(|text| self.embed_one(text)).collect())
    }
}

/// Lowercased alphanumeric runs of at least two chars that are not stopwords.
/// Single chars are dropped: they are mostly noise (loop variables, list
/// markers, elided French "l'", "d'") and the function-word lists leave them out.
pub fn terms(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|word| word.chars().nth(1).is_some())
        .map(str::to_lowercase)
        .filter(|word| !ai_smartness_text::is_stopword(word))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cosine;

    fn embed(text: &str) -> Vec<f32> {
        HashedTfIdf::new().embed_one(text)
    }

    fn norm(v: &[f32]) -> f32 {
        v.iter().map(|x| x * x).sum::<f32>().sqrt()
    }

    #[test]
    fn deterministic_and_pinned() {
        let a = embed("Database connection pool times out under load");
        let b = embed("Database connection pool times out under load");
        assert_eq!(a, b);
        // Pinned hashes: a change here silently invalidates every stored
        // fallback vector, so it must be a deliberate decision.
        assert_eq!(fnv1a(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a(b"foobar"), 0x8594_4171_f739_67e8);
    }

    #[test]
    fn output_is_unit_norm_and_384_dims() {
        for text in [
            "short",
            "The quick brown fox jumps over the lazy dog",
            "¿Dónde está la conexión a la base de datos? Falla el pool.",
        ] {
            let v = embed(text);
            assert_eq!(v.len(), DIM);
            assert!((norm(&v) - 1.0).abs() < 1e-5, "{text}: norm {}", norm(&v));
        }
    }

    #[test]
    fn nothing_usable_gives_zero_vector() {
        for text in [
            "",
            "   ",
            "!!! ??? ...",
            "the and of is it",
            "le la les de des",
            "x y z",
        ] {
            let v = embed(text);
            assert_eq!(v.len(), DIM);
            assert!(v.iter().all(|&x| x == 0.0), "{text:?}");
        }
    }

    #[test]
    fn case_punctuation_and_stopwords_are_ignored() {
        assert_eq!(
            embed("Postgres connection timeout!"),
            embed("the postgres, CONNECTION... and a timeout")
        );
        assert_eq!(embed("la base de données"), embed("base données"));
        assert_eq!(embed("el servidor de la base"), embed("servidor base"));
    }

    #[test]
    fn similar_texts_are_closer_than_unrelated_ones() {
        let query = embed("how do I fix the database connection timeout");
        let related = embed("database connection pool times out: raise the connection timeout");
        let unrelated = embed("chocolate cake recipe with strawberries");
        let (r, u) = (cosine(&query, &related), cosine(&query, &unrelated));
        assert!(r > u + 0.3, "related {r} unrelated {u}");
        assert!(u.abs() < 0.2, "unrelated {u}");
    }

    #[test]
    fn repeated_terms_weigh_sublinearly() {
        let once = embed("cache cache cache cache invalidation");
        let v_cache = embed("cache");
        let v_inval = embed("invalidation");
        // tf 4 weighs 1 + ln 4 ≈ 2.39, not 4, against tf 1.
        let ratio = cosine(&once, &v_cache) / cosine(&once, &v_inval);
        assert!((ratio - (1.0 + 4f32.ln())).abs() < 1e-3, "ratio {ratio}");
    }

    #[test]
    fn huge_input_is_clipped_before_the_work() {
        // Only the first MAX_INPUT_CHARS count: what follows changes nothing.
        let head = "word ".repeat(MAX_INPUT_CHARS / 5);
        let huge = format!("{head}{}", "other ".repeat(2_000_000));
        let v = embed(&huge);
        assert!((norm(&v) - 1.0).abs() < 1e-5);
        assert_eq!(v, embed(&head));
    }

    #[test]
    fn embedder_trait_handles_batches() {
        let mut e = HashedTfIdf::new();
        assert_eq!(e.kind(), EmbedderKind::HashedTfidf);
        assert!(e.embed(&[]).unwrap().is_empty());
        let out = e.embed(&["alpha beta".into(), "gamma".into()]).unwrap();
        assert_eq!(out.len(), 2);
        assert_eq!(out[0], embed("alpha beta"));
    }
}
