//! Message embeddings kept as 8-bit integers: a unit vector's components scaled by 127. A
//! 384-dim vector costs 384 bytes instead of 1,536, so every message of 10,000 threads can keep
//! its own vector in RAM; cosine similarity moves by well under 0.01. Stored as base64.

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::sync::Arc;

/// A quantized unit vector. Shared, not copied: the search index reads the very vectors the
/// memory holds (at 100,000 units a second copy would be 40 MB).
#[derive(Clone)]
pub struct QVec {
    /// The block the vector lives in: its own, or one shared with many others ([`QVec::pack`]).
    block: Arc<[i8]>,
    /// Where the vector starts in `block`.
    at: u32,
    /// Its length.
    len: u32,
}

impl std::fmt::Debug for QVec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("QVec").field(&self.as_slice()).finish()
    }
}

impl PartialEq for QVec {
    fn eq(&self, other: &Self) -> bool {
        self.as_slice() == other.as_slice()
    }
}

impl Eq for QVec {}

impl From<Vec<i8>> for QVec {
    fn from(v: Vec<i8>) -> Self {
        let len = v.len() as u32;
        QVec {
            block: v.into(),
            at: 0,
            len,
        }
    }
}

impl std::ops::Deref for QVec {
    type Target = [i8];
    fn deref(&self) -> &[i8] {
        self.as_slice()
    }
}

const SCALE: f32 = 127.0;

impl QVec {
    /// The vector's components.
    pub fn as_slice(&self) -> &[i8] {
        &self.block[self.at as usize..(self.at + self.len) as usize]
    }

    /// Moves every vector given into one shared block, in order, each now a view of it: the
    /// same values, one allocation instead of one each, and read in order by whoever reads them
    /// in that order (ranking reads every unit's per question).
    pub fn pack<'a>(vectors: impl IntoIterator<Item = &'a mut QVec>) {
        let vectors: Vec<&mut QVec> = vectors.into_iter().collect();
        let total: usize = vectors.iter().map(|v| v.len as usize).sum();
        if total > u32::MAX as usize {
            return;
        }
        let mut data = Vec::with_capacity(total);
        for v in &vectors {
            data.extend_from_slice(v.as_slice());
        }
        let block: Arc<[i8]> = data.into();
        let mut at = 0u32;
        for v in vectors {
            v.block = block.clone();
            v.at = at;
            at += v.len;
        }
    }

    /// Quantizes a unit vector (components in [-1, 1]).
    pub fn from_unit(v: &[f32]) -> QVec {
        v.iter()
            .map(|x| (x * SCALE).round().clamp(-127.0, 127.0) as i8)
            .collect::<Vec<_>>()
            .into()
    }

    /// Dot product with a unit f32 vector: the cosine, as both are (nearly) unit length.
    pub fn dot(&self, q: &[f32]) -> f32 {
        if q.len() != self.as_slice().len() {
            return 0.0;
        }
        let mut acc = 0f32;
        for (a, b) in self.as_slice().iter().zip(q) {
            acc += f32::from(*a) * b;
        }
        acc / SCALE
    }

    /// Cosine with another quantized unit vector, in integers (vectorises well).
    pub fn cosine_q(&self, other: &QVec) -> f32 {
        if other.as_slice().len() != self.as_slice().len() {
            return 0.0;
        }
        dot_i8(self, other) as f32 / (SCALE * SCALE)
    }

    pub fn to_f32(&self) -> Vec<f32> {
        self.as_slice()
            .iter()
            .map(|x| f32::from(*x) / SCALE)
            .collect()
    }
}

/// The dot product of two 8-bit vectors (over the shorter length). Retrieval computes one per
/// stored message per query, so it takes AVX2 when the CPU has it (16 products per instruction
/// instead of the baseline's 4: a third of a 10,000-thread query's time): the same loop,
/// compiled for it.
pub fn dot_i8(a: &[i8], b: &[i8]) -> i32 {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2, checked just above.
        return unsafe { dot_i8_avx2(a, b) };
    }
    dot_i8_portable(a, b)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn dot_i8_avx2(a: &[i8], b: &[i8]) -> i32 {
    dot_i8_portable(a, b)
}

#[inline(always)]
fn dot_i8_portable(a: &[i8], b: &[i8]) -> i32 {
    a.iter()
        .zip(b)
        .map(|(x, y)| i32::from(*x) * i32::from(*y))
        .sum()
}

impl Serialize for QVec {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let bytes: Vec<u8> = self.as_slice().iter().map(|x| *x as u8).collect();
        s.serialize_str(&STANDARD.encode(bytes))
    }
}

/// Base64 of the bytes, or (files written before vectors were quantized) a list of floats.
#[derive(Deserialize)]
#[serde(untagged)]
enum Stored {
    Base64(String),
    Floats(Vec<f32>),
}

impl<'de> Deserialize<'de> for QVec {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match Stored::deserialize(d)? {
            Stored::Base64(s) => {
                // Decoded on the stack when it fits: one allocation per vector, not two.
                let mut buf = [0u8; 1024];
                let heap;
                let bytes = match STANDARD.decode_slice(s.as_bytes(), &mut buf) {
                    Ok(n) => &buf[..n],
                    Err(_) => {
                        heap = STANDARD
                            .decode(s.as_bytes())
                            .map_err(serde::de::Error::custom)?;
                        &heap[..]
                    }
                };
                let block: Arc<[i8]> = bytes.iter().map(|b| *b as i8).collect();
                Ok(QVec {
                    len: block.len() as u32,
                    block,
                    at: 0,
                })
            }
            Stored::Floats(v) => Ok(QVec::from_unit(&v)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_dot_product_is_exact_whatever_the_cpu() {
        let mut seed = 0x2545_F491_4F6C_DD1Du64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % 256) as u8 as i8
        };
        for len in [0, 1, 15, 16, 17, 383, 384] {
            let a: Vec<i8> = (0..len).map(|_| next()).collect();
            let b: Vec<i8> = (0..len).map(|_| next()).collect();
            let exact: i64 = a
                .iter()
                .zip(&b)
                .map(|(x, y)| i64::from(*x) * i64::from(*y))
                .sum();
            assert_eq!(i64::from(dot_i8(&a, &b)), exact, "length {len}");
        }
        let extreme = vec![-128i8; 384];
        assert_eq!(dot_i8(&extreme, &extreme), 384 * 128 * 128);
        assert_eq!(dot_i8(&[1, 2, 3], &[4, 5]), 14, "the shorter length");
    }

    #[test]
    fn quantized_cosine_is_close_and_round_trips() {
        let mut a: Vec<f32> = (0..384)
            .map(|i| ((i * 37 % 101) as f32 - 50.0) / 50.0)
            .collect();
        let mut b: Vec<f32> = (0..384)
            .map(|i| ((i * 53 % 97) as f32 - 48.0) / 48.0)
            .collect();
        crate::normalize(&mut a);
        crate::normalize(&mut b);
        let exact: f32 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
        let q = QVec::from_unit(&a);
        assert!((q.dot(&b) - exact).abs() < 0.01, "{} vs {exact}", q.dot(&b));
        let json = serde_json::to_string(&q).unwrap();
        assert_eq!(serde_json::from_str::<QVec>(&json).unwrap(), q);
        assert!(json.len() < 530);
        let old_format = serde_json::to_string(&a).unwrap();
        assert_eq!(serde_json::from_str::<QVec>(&old_format).unwrap(), q);
    }
}
