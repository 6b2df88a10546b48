//! Every indexed message's vector in one block, in doc order.
//!
//! Ranking compares the question with every stored message. Read through the threads, each
//! vector sits behind its own message and its own allocation, and at 30,000 messages the pass
//! spends its time waiting on memory, not multiplying. Here the same vectors are read in
//! order, a few bytes apart, which the processor prefetches.

use crate::embed::quant::{dot_i8, QVec};

/// The 8-bit vectors of the index's docs (a copy of each message's own).
#[derive(Debug, Default)]
pub struct DocVectors {
    /// Length of every stored vector: set by the first one. A vector of another length (the
    /// embedder changed and the memory is being re-embedded) is kept as absent.
    dims: usize,
    /// `dims` bytes per doc, doc `d` at `d * dims`.
    data: Vec<i8>,
    /// Whether doc `d` has a vector (a message stored without one has none).
    present: Vec<bool>,
}

impl DocVectors {
    /// Adds the next doc's vector.
    pub fn push(&mut self, vector: Option<&QVec>) {
        let doc = self.present.len();
        self.present.push(false);
        self.data.resize(self.data.len() + self.dims, 0);
        self.set(doc, vector);
    }

    /// Replaces doc `doc`'s vector (the message was embedded again).
    pub fn set(&mut self, doc: usize, vector: Option<&QVec>) {
        let Some(present) = self.present.get_mut(doc) else {
            return;
        };
        *present = false;
        let Some(v) = vector.filter(|v| !v.0.is_empty()) else {
            return;
        };
        if self.dims == 0 {
            self.dims = v.0.len();
            self.data = vec![0; self.present.len() * self.dims];
        }
        if v.0.len() != self.dims {
            return;
        }
        self.data[doc * self.dims..(doc + 1) * self.dims].copy_from_slice(&v.0);
        self.present[doc] = true;
    }

    /// Starts again from nothing, keeping the allocation (a rebuild follows).
    pub fn clear(&mut self) {
        self.dims = 0;
        self.data.clear();
        self.present.clear();
    }

    pub fn len(&self) -> usize {
        self.present.len()
    }

    pub fn is_empty(&self) -> bool {
        self.present.is_empty()
    }

    /// The cosine of `q` with each doc of `first..first + out.len()`, clamped at 0, into `out`;
    /// NaN for a doc without a vector of `q`'s length (the caller falls back on its thread's).
    pub fn cosines(&self, q: &QVec, first: usize, out: &mut [f32]) {
        const SCALE: f32 = 127.0 * 127.0;
        if q.0.len() != self.dims || self.dims == 0 {
            out.fill(f32::NAN);
            return;
        }
        for (k, slot) in out.iter_mut().enumerate() {
            let doc = first + k;
            *slot = if self.present.get(doc).copied().unwrap_or(false) {
                let v = &self.data[doc * self.dims..(doc + 1) * self.dims];
                (dot_i8(v, &q.0) as f32 / SCALE).max(0.0)
            } else {
                f32::NAN
            };
        }
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
        a.push(Some(&QVec(vec![1, 2]))); // another length: absent
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
            .all_cosines(&QVec(vec![1, 2]), usize::MAX)
            .iter()
            .all(|c| c.is_nan()));
    }
}
