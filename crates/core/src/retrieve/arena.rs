//! Every indexed doc's vector, in doc order.
//!
//! Ranking compares the question with every stored unit. The vectors are the memory's own
//! (shared, not copied: a copy would double their size); they were allocated one after another
//! as the memory loaded or grew, so the pass still reads them mostly in order.

use ai_smartness_vectors::quant::{prefetch, DotQuery, QVec};

/// How many vectors ahead of the one compared a scan starts loading.
const PREFETCH_AHEAD: usize = 8;

/// The 8-bit vectors of the index's docs (each message's or unit's own, shared).
#[derive(Debug, Default)]
pub struct DocVectors {
    /// Length of every stored vector: set by the first one. A vector of another length (the
    /// embedder changed and the memory is being re-embedded) is kept as absent.
    dims: usize,
    /// Doc `d`'s vector, `None` when it has none (stored without one, or of another length).
    vectors: Vec<Option<QVec>>,
}

impl DocVectors {
    /// Adds the next doc's vector.
    pub fn push(&mut self, vector: Option<&QVec>) {
        self.vectors.push(None);
        self.set(self.vectors.len() - 1, vector);
    }

    /// Replaces doc `doc`'s vector (the message was embedded again).
    pub fn set(&mut self, doc: usize, vector: Option<&QVec>) {
        let Some(slot) = self.vectors.get_mut(doc) else {
            return;
        };
        *slot = None;
        let Some(v) = vector.filter(|v| !v.is_empty()) else {
            return;
        };
        if self.dims == 0 {
            self.dims = v.len();
        }
        if v.len() == self.dims {
            *slot = Some(v.clone());
        }
    }

    /// Starts again from nothing, keeping the allocation (a rebuild follows).
    pub fn clear(&mut self) {
        self.dims = 0;
        self.vectors.clear();
    }

    pub fn len(&self) -> usize {
        self.vectors.len()
    }

    pub fn is_empty(&self) -> bool {
        self.vectors.is_empty()
    }

    /// The cosine of `q` with each doc of `first..first + out.len()`, clamped at 0, into `out`;
    /// NaN for a doc without a vector of `q`'s length (the caller falls back on its thread's).
    pub fn cosines(&self, q: &QVec, first: usize, out: &mut [f32]) {
        const SCALE: f32 = 127.0 * 127.0;
        out.fill(f32::NAN);
        if q.len() != self.dims || self.dims == 0 {
            return;
        }
        let docs = self.vectors.get(first..).unwrap_or_default();
        let docs = &docs[..out.len().min(docs.len())];
        // Vectors added since the memory loaded live apart from the blocks it loaded: each
        // one's loads are started a few vectors ahead.
        let ahead = docs
            .iter()
            .skip(PREFETCH_AHEAD)
            .map(Some)
            .chain(std::iter::repeat(None));
        let docs = docs.iter().zip(ahead).map(|(v, next)| {
            if let Some(Some(next)) = next {
                prefetch(next);
            }
            v.as_deref()
        });
        DotQuery::new(q).each(docs, |k, dot| {
            if let Some(dot) = dot {
                out[k] = (dot as f32 / SCALE).max(0.0);
            }
        });
    }

    /// [`DocVectors::cosines`] of every doc, in two halves on two threads when there are at
    /// least `split_from` docs.
    pub fn all_cosines(&self, q: &QVec, split_from: usize) -> Vec<f32> {
        let mut out = vec![0f32; self.len()];
        if self.len() >= split_from {
            let half = self.len() / 2;
            let (head, tail) = out.split_at_mut(half);
            std::thread::scope(|s| {
                let second = s.spawn(|| self.cosines(q, half, tail));
                self.cosines(q, 0, head);
                second
                    .join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
            });
        } else {
            self.cosines(q, 0, &mut out);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unit(axis: usize) -> QVec {
        let mut v = vec![0f32; 4];
        v[axis] = 1.0;
        QVec::from_unit(&v)
    }

    #[test]
    fn cosines_match_the_vectors_and_mark_the_missing() {
        let mut a = DocVectors::default();
        a.push(None);
        a.push(Some(&unit(0)));
        a.push(Some(&unit(1)));
        a.push(Some(&QVec::from(vec![1, 2]))); // another length: absent
        let got = a.all_cosines(&unit(0), usize::MAX);
        assert!(got[0].is_nan() && got[3].is_nan());
        assert!((got[1] - 1.0).abs() < 1e-6);
        assert_eq!(got[2], 0.0);
        // Split over two threads: the same figures.
        let split = a.all_cosines(&unit(0), 0);
        assert_eq!(format!("{got:?}"), format!("{split:?}"));
        // Re-embedded: the new vector counts, the first doc's length fixed by the first vector.
        a.set(2, Some(&unit(0)));
        a.set(0, Some(&unit(0)));
        let got = a.all_cosines(&unit(0), usize::MAX);
        assert!((got[0] - 1.0).abs() < 1e-6 && (got[2] - 1.0).abs() < 1e-6);
        // A question of another length finds no vector at all.
        assert!(a
            .all_cosines(&QVec::from(vec![1, 2]), usize::MAX)
            .iter()
            .all(|c| c.is_nan()));
    }
}
