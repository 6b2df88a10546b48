//! The bytes of one request while it is being received.
//!
//! Most requests are a few hundred bytes and live in an ordinary `Vec`. A large one (a big tool
//! output, or a client sending a megabyte without a newline) moves to memory mapped for it
//! alone, which goes back to the system the moment the request is done. In the heap, many such
//! buffers at once (a burst of large captures, or a hostile client's partial frames) would leave
//! the allocator holding tens of megabytes after they are freed.

use std::io;
use std::ptr::NonNull;

/// Up to this, a request stays in the heap.
const HEAP_MAX: usize = 64 << 10;

pub struct FrameBuf {
    storage: Storage,
}

enum Storage {
    Heap(Vec<u8>),
    Mapped {
        ptr: NonNull<u8>,
        len: usize,
        cap: usize,
    },
}

// SAFETY: the mapping is owned by this value alone (like a Vec's buffer).
unsafe impl Send for FrameBuf {}
// SAFETY: shared access only reads.
unsafe impl Sync for FrameBuf {}

impl Default for FrameBuf {
    fn default() -> Self {
        FrameBuf {
            storage: Storage::Heap(Vec::new()),
        }
    }
}

fn page_round(n: usize) -> usize {
    const PAGE: usize = 4096;
    n.div_ceil(PAGE) * PAGE
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
            // SAFETY: `len` bytes from `ptr` are initialised (written by `extend`).
            Storage::Mapped { ptr, len, .. } => unsafe {
                std::slice::from_raw_parts(ptr.as_ptr(), *len)
            },
        }
    }

    /// Appends `bytes`; fails only when the system refuses memory.
    pub fn extend(&mut self, bytes: &[u8]) -> io::Result<()> {
        let needed = self.len() + bytes.len();
        match &mut self.storage {
            Storage::Heap(v) if needed <= HEAP_MAX => {
                v.extend_from_slice(bytes);
                Ok(())
            }
            Storage::Heap(v) => {
                let cap = page_round(needed.max(4 * HEAP_MAX));
                let ptr = map(cap)?;
                // SAFETY: the new mapping holds `cap` >= `needed` bytes; the sources do not
                // overlap it.
                unsafe {
                    std::ptr::copy_nonoverlapping(v.as_ptr(), ptr.as_ptr(), v.len());
                    std::ptr::copy_nonoverlapping(
                        bytes.as_ptr(),
                        ptr.as_ptr().add(v.len()),
                        bytes.len(),
                    );
                }
                self.storage = Storage::Mapped {
                    ptr,
                    len: needed,
                    cap,
                };
                Ok(())
            }
            Storage::Mapped { ptr, len, cap } => {
                if needed > *cap {
                    let new_cap = page_round(needed.max(*cap * 2));
                    *ptr = grow(*ptr, *len, *cap, new_cap)?;
                    *cap = new_cap;
                }
                // SAFETY: the mapping holds `cap` >= `needed` bytes.
                unsafe {
                    std::ptr::copy_nonoverlapping(
                        bytes.as_ptr(),
                        ptr.as_ptr().add(*len),
                        bytes.len(),
                    );
                }
                *len = needed;
                Ok(())
            }
        }
    }
}

fn map(cap: usize) -> io::Result<NonNull<u8>> {
    // SAFETY: an anonymous private mapping, not tied to any existing memory.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            cap,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return Err(io::Error::last_os_error());
    }
    NonNull::new(p.cast()).ok_or_else(io::Error::last_os_error)
}

/// The mapping at `ptr` (`cap` bytes, the first `len` in use) made `new_cap` bytes long, its
/// contents kept; the old address is not used again.
#[cfg(target_os = "linux")]
fn grow(ptr: NonNull<u8>, _len: usize, cap: usize, new_cap: usize) -> io::Result<NonNull<u8>> {
    // SAFETY: `ptr`/`cap` describe a mapping we own; MREMAP_MAYMOVE keeps its contents and may
    // move it (without copying: the kernel moves the pages).
    let moved = unsafe { libc::mremap(ptr.as_ptr().cast(), cap, new_cap, libc::MREMAP_MAYMOVE) };
    if moved == libc::MAP_FAILED {
        return Err(io::Error::last_os_error());
    }
    NonNull::new(moved.cast()).ok_or_else(io::Error::last_os_error)
}

/// [`grow`] where there is no `mremap` (macOS, the BSDs): a new mapping, the bytes in use copied,
/// the old one unmapped.
#[cfg(not(target_os = "linux"))]
fn grow(ptr: NonNull<u8>, len: usize, cap: usize, new_cap: usize) -> io::Result<NonNull<u8>> {
    let fresh = map(new_cap)?;
    // SAFETY: both mappings are ours, distinct, and hold at least `len` bytes; the old one is
    // unmapped once copied and never used again.
    unsafe {
        std::ptr::copy_nonoverlapping(ptr.as_ptr(), fresh.as_ptr(), len);
        libc::munmap(ptr.as_ptr().cast(), cap);
    }
    Ok(fresh)
}

impl Drop for FrameBuf {
    fn drop(&mut self) {
        if let Storage::Mapped { ptr, cap, .. } = &self.storage {
            // SAFETY: the mapping is ours and nothing refers to it past this point.
            unsafe {
                libc::munmap(ptr.as_ptr().cast(), *cap);
            }
        }
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
