//! Message embeddings kept as 8-bit integers: a unit vector's components scaled by 127. A
//! 384-dim vector costs 384 bytes instead of 1,536, so every message of 10,000 threads can keep
//! its own vector in RAM; cosine similarity moves by well under 0.01. Stored as base64.

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A quantized unit vector.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QVec(pub Vec<i8>);

const SCALE: f32 = 127.0;

impl QVec {
    /// Quantizes a unit vector (components in [-1, 1]).
    pub fn from_unit(v: &[f32]) -> QVec {
        QVec(
            v.iter()
                .map(|x| (x * SCALE).round().clamp(-127.0, 127.0) as i8)
                .collect(),
        )
    }

    /// Dot product with a unit f32 vector: the cosine, as both are (nearly) unit length.
    pub fn dot(&self, q: &[f32]) -> f32 {
        if q.len() != self.0.len() {
            return 0.0;
        }
        let mut acc = 0f32;
        for (a, b) in self.0.iter().zip(q) {
            acc += f32::from(*a) * b;
        }
        acc / SCALE
    }

    /// Cosine with another quantized unit vector, in integers (vectorises well).
    pub fn cosine_q(&self, other: &QVec) -> f32 {
        if other.0.len() != self.0.len() {
            return 0.0;
        }
        let dot: i32 = self
            .0
            .iter()
            .zip(&other.0)
            .map(|(a, b)| i32::from(*a) * i32::from(*b))
            .sum();
        dot as f32 / (SCALE * SCALE)
    }

    pub fn to_f32(&self) -> Vec<f32> {
        self.0.iter().map(|x| f32::from(*x) / SCALE).collect()
    }
}

impl Serialize for QVec {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let bytes: Vec<u8> = self.0.iter().map(|x| *x as u8).collect();
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
                let bytes = STANDARD
                    .decode(s.as_bytes())
                    .map_err(serde::de::Error::custom)?;
                Ok(QVec(bytes.into_iter().map(|b| b as i8).collect()))
            }
            Stored::Floats(v) => Ok(QVec::from_unit(&v)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantized_cosine_is_close_and_round_trips() {
        let mut a: Vec<f32> = (0..384)
            .map(|i| ((i * 37 % 101) as f32 - 50.0) / 50.0)
            .collect();
        let mut b: Vec<f32> = (0..384)
            .map(|i| ((i * 53 % 97) as f32 - 48.0) / 48.0)
            .collect();
        crate::memory::engine::normalize(&mut a);
        crate::memory::engine::normalize(&mut b);
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
