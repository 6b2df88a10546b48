//! The bytes of one request while it is being received.
//!
//! Most requests are a few hundred bytes and live in an ordinary `Vec`. A large one (a big tool
//! output, or a client sending a megabyte without a newline) moves to memory mapped for it
//! alone, which goes back to the system the moment the request is done. In the heap, many such
//! buffers at once (a burst of large captures, or a hostile client's partial frames) would leave
//! the allocator holding tens of megabytes after they are freed.

use memmap2::MmapMut;
use std::io;

/// Up to this, a request stays in the heap.
const HEAP_MAX: usize = 64 << 10;

#[derive(Default)]
pub struct FrameBuf {
    storage: Storage,
}

enum Storage {
    Heap(Vec<u8>),
    /// An anonymous mapping, `len` bytes of it in use; unmapped when dropped.
    Mapped {
        map: MmapMut,
        len: usize,
    },
}

impl Default for Storage {
    fn default() -> Self {
        Storage::Heap(Vec::new())
    }
}

fn page_round(n: usize) -> usize {
    const PAGE: usize = 4096;
    n.div_ceil(PAGE) * PAGE
}

/// A fresh anonymous mapping of `cap` bytes holding `parts` one after the other.
fn mapped(cap: usize, parts: &[&[u8]]) -> io::Result<MmapMut> {
    let mut map = MmapMut::map_anon(cap)?;
    let mut at = 0;
    for p in parts {
        map[at..at + p.len()].copy_from_slice(p);
        at += p.len();
    }
    Ok(map)
}

impl FrameBuf {
    pub fn len(&self) -> usize {
        match &self.storage {
            Storage::Heap(v) => v.len(),
            Storage::Mapped { len, .. } => *len,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn as_slice(&self) -> &[u8] {
        match &self.storage {
            Storage::Heap(v) => v,
            Storage::Mapped { map, len } => &map[..*len],
        }
    }

    /// Appends `bytes`; fails only when the system refuses memory.
    pub fn extend(&mut self, bytes: &[u8]) -> io::Result<()> {
        let needed = self.len() + bytes.len();
        match &mut self.storage {
            Storage::Heap(v) if needed <= HEAP_MAX => {
                v.extend_from_slice(bytes);
            }
            Storage::Heap(v) => {
                let cap = page_round(needed.max(4 * HEAP_MAX));
                let map = mapped(cap, &[v, bytes])?;
                self.storage = Storage::Mapped { map, len: needed };
            }
            Storage::Mapped { map, len } if needed <= map.len() => {
                map[*len..needed].copy_from_slice(bytes);
                *len = needed;
            }
            Storage::Mapped { map, len } => {
                // Doubled, so a request copies each of its bytes a bounded number of times; the
                // old mapping goes back to the system as it is replaced.
                let cap = page_round(needed.max(map.len() * 2));
                *map = mapped(cap, &[&map[..*len], bytes])?;
                *len = needed;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_and_large_requests_keep_every_byte() {
        let mut b = FrameBuf::default();
        let mut expected = Vec::new();
        for i in 0..200u32 {
            let chunk: Vec<u8> = (0..7_919).map(|k| ((k + i) % 251) as u8).collect();
            b.extend(&chunk).unwrap();
            expected.extend_from_slice(&chunk);
            assert_eq!(b.len(), expected.len());
        }
        assert!(matches!(b.storage, Storage::Mapped { .. }));
        assert_eq!(b.as_slice(), &expected[..]);
        let mut small = FrameBuf::default();
        small.extend(b"{\"ping\":true}").unwrap();
        assert!(matches!(small.storage, Storage::Heap(_)));
        assert_eq!(small.as_slice(), b"{\"ping\":true}");
        assert!(FrameBuf::default().is_empty());
    }
}
