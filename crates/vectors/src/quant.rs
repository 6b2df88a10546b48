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

/// The dot product of two 8-bit vectors (over the shorter length): for one pair. Many
/// vectors against one go through [`DotQuery`].
pub fn dot_i8(a: &[i8], b: &[i8]) -> i32 {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2, checked just above.
        return unsafe { dot_avx2(a, b) };
    }
    dot_portable(a, b)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn dot_avx2(a: &[i8], b: &[i8]) -> i32 {
    dot_portable(a, b)
}

/// The fastest way this CPU has to take 8-bit dot products, chosen once per scan.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kernel {
    /// AVX-512 VNNI: 64 products per instruction.
    #[cfg(target_arch = "x86_64")]
    Vnni,
    /// AVX2: 16 products per instruction.
    #[cfg(target_arch = "x86_64")]
    Avx2,
    /// What the compiler makes of a plain loop for the baseline CPU.
    Portable,
}

impl Kernel {
    fn detect() -> Kernel {
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx512f")
                && std::arch::is_x86_feature_detected!("avx512bw")
                && std::arch::is_x86_feature_detected!("avx512vnni")
            {
                return Kernel::Vnni;
            }
            if std::arch::is_x86_feature_detected!("avx2") {
                return Kernel::Avx2;
            }
        }
        Kernel::Portable
    }
}

/// One 8-bit vector compared with many: ranking takes a dot product per stored unit per
/// question, 100,000 of them in a year's memory, so the CPU's widest instructions are chosen
/// once for the whole pass and the loop over the vectors is compiled with them (chosen per
/// call, the choice and the call cost as much as the products).
#[derive(Debug, Clone)]
pub struct DotQuery {
    q: Vec<i8>,
    /// `q` plus 128, as unsigned bytes: VNNI multiplies unsigned by signed bytes, and
    /// `(q + 128) · v - 128 Σv` is `q · v` exactly.
    #[cfg(target_arch = "x86_64")]
    shifted: Vec<u8>,
    kernel: Kernel,
}

impl DotQuery {
    pub fn new(q: &[i8]) -> DotQuery {
        DotQuery {
            q: q.to_vec(),
            #[cfg(target_arch = "x86_64")]
            shifted: q.iter().map(|x| (i16::from(*x) + 128) as u8).collect(),
            kernel: Kernel::detect(),
        }
    }

    /// Calls `f(i, dot)` for the `i`-th of `vectors`, in order: its dot product with the query
    /// (over the shorter length), `None` for a vector absent.
    pub fn each<'a, V, F>(&self, vectors: V, f: F)
    where
        V: IntoIterator<Item = Option<&'a [i8]>>,
        F: FnMut(usize, Option<i32>),
    {
        match self.kernel {
            // SAFETY: `Kernel::detect` chose VNNI only on a CPU with AVX-512 F, BW and VNNI.
            #[cfg(target_arch = "x86_64")]
            Kernel::Vnni => unsafe { self.each_vnni(vectors, f) },
            // SAFETY: `Kernel::detect` chose AVX2 only on a CPU with it.
            #[cfg(target_arch = "x86_64")]
            Kernel::Avx2 => unsafe { self.each_avx2(vectors, f) },
            Kernel::Portable => {
                let mut f = f;
                for (i, v) in vectors.into_iter().enumerate() {
                    f(i, v.map(|v| dot_portable(&self.q, v)));
                }
            }
        }
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
    unsafe fn each_vnni<'a, V, F>(&self, vectors: V, mut f: F)
    where
        V: IntoIterator<Item = Option<&'a [i8]>>,
        F: FnMut(usize, Option<i32>),
    {
        for (i, v) in vectors.into_iter().enumerate() {
            f(i, v.map(|v| dot_vnni(&self.shifted, v)));
        }
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    unsafe fn each_avx2<'a, V, F>(&self, vectors: V, mut f: F)
    where
        V: IntoIterator<Item = Option<&'a [i8]>>,
        F: FnMut(usize, Option<i32>),
    {
        for (i, v) in vectors.into_iter().enumerate() {
            f(i, v.map(|v| dot_portable(&self.q, v)));
        }
    }
}

/// Asks the CPU to start loading `v` into its cache: a scan over vectors stored apart calls it
/// a few vectors ahead, so their loads overlap with the products instead of stalling them.
#[inline(always)]
pub fn prefetch(v: &[i8]) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        for line in v.chunks(64) {
            // SAFETY: a prefetch is a hint that never faults; the address is within `v`.
            unsafe { _mm_prefetch::<_MM_HINT_T0>(line.as_ptr().cast()) };
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = v;
}

/// `(shifted - 128) · v` over the shorter length, 64 bytes per step, the tail by a masked
/// load (bytes past the end are never read).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
#[inline]
fn dot_vnni(shifted: &[u8], v: &[i8]) -> i32 {
    use std::arch::x86_64::*;
    let n = shifted.len().min(v.len());
    let ones = _mm512_set1_epi8(1);
    let mut products = _mm512_setzero_si512();
    let mut sums = _mm512_setzero_si512();
    let mut at = 0;
    while at < n {
        let left = n - at;
        let mask: __mmask64 = if left >= 64 { !0 } else { (1u64 << left) - 1 };
        // SAFETY: the mask covers bytes `at..at + min(64, left)`, all within both slices;
        // masked-off bytes are not read.
        let (a, b) = unsafe {
            (
                _mm512_maskz_loadu_epi8(mask, shifted.as_ptr().add(at).cast()),
                _mm512_maskz_loadu_epi8(mask, v.as_ptr().add(at).cast()),
            )
        };
        products = _mm512_dpbusd_epi32(products, a, b);
        sums = _mm512_dpbusd_epi32(sums, ones, b);
        at += 64;
    }
    _mm512_reduce_add_epi32(products) - 128 * _mm512_reduce_add_epi32(sums)
}

#[inline(always)]
fn dot_portable(a: &[i8], b: &[i8]) -> i32 {
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

    /// Every kernel this CPU can run gives the exact products, lengths that are not a multiple
    /// of the vector width, the extremes and absent vectors included.
    #[test]
    fn every_kernel_gives_the_exact_dot_products() {
        let mut seed = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % 256) as u8 as i8
        };
        #[cfg(target_arch = "x86_64")]
        let kernels = {
            let mut kernels = vec![Kernel::Portable];
            if std::arch::is_x86_feature_detected!("avx2") {
                kernels.push(Kernel::Avx2);
            }
            if Kernel::detect() == Kernel::Vnni {
                kernels.push(Kernel::Vnni);
            }
            kernels
        };
        #[cfg(not(target_arch = "x86_64"))]
        let kernels = vec![Kernel::Portable];
        for len in [0, 1, 15, 63, 64, 65, 127, 383, 384, 385] {
            let q: Vec<i8> = (0..len).map(|_| next()).collect();
            let mut vectors: Vec<Option<Vec<i8>>> = (0..9)
                .map(|k| (k != 4).then(|| (0..len).map(|_| next()).collect()))
                .collect();
            vectors.push(Some(vec![-128; len]));
            vectors.push(Some(vec![127; len]));
            vectors.push(Some(q.iter().take(len / 2).copied().collect()));
            let exact: Vec<Option<i32>> = vectors
                .iter()
                .map(|v| {
                    v.as_ref().map(|v| {
                        v.iter()
                            .zip(&q)
                            .map(|(x, y)| i64::from(*x) * i64::from(*y))
                            .sum::<i64>() as i32
                    })
                })
                .collect();
            for &kernel in &kernels {
                let query = DotQuery {
                    kernel,
                    ..DotQuery::new(&q)
                };
                let mut got = vec![None; vectors.len()];
                query.each(vectors.iter().map(|v| v.as_deref()), |i, d| got[i] = d);
                assert_eq!(got, exact, "{kernel:?}, length {len}");
            }
        }
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
