//! The global allocator: mimalloc, except for blocks bigger than
//! [`BIG_BYTES`], which are mapped from the kernel (`mmap`) and grown in place or
//! moved by `mremap`.
//!
//! Key decision: a big vector that grows (a column, a graph's adjacency, a
//! scratch list of every read) is moved by the kernel's page tables, not
//! copied into fresh memory: copying faulted in a new block of the old size
//! at every doubling (13 % of a 1M-transaction check's page faults were
//! reallocations' copies) and held both blocks for a moment. A freed big
//! block goes back to the kernel at once. Small blocks stay mimalloc's,
//! which serves them faster than any system call could. No transparent huge
//! pages: on this project's machine (a virtual one) a fresh huge page cost
//! from 34 ms to 1.7 s per 256 MiB touched (BENCHMARKS.md, "h16-load").

use std::alloc::{GlobalAlloc, Layout};

/// Blocks bigger than this are mapped by the kernel. The JSON Lines
/// reader's 1-MiB buffers (one per piece of a file read in parallel) stay
/// mimalloc's, which gives a freed one to the next piece without a fault.
pub const BIG_BYTES: usize = 1 << 20;

/// The page size the mappings are rounded to (also their alignment).
const PAGE: usize = 4096;

/// mimalloc for small blocks, the kernel's mappings for big ones.
pub struct Allocator;

/// Whether a block of layout `l` is mapped by the kernel. Decided by the
/// layout alone, so `dealloc` and `realloc` (given the layout `alloc` was)
/// agree with the `alloc` that made the block. Always inlined, as are the
/// methods below: every allocation passes here, and the test profile
/// builds this crate unoptimised (the performance guard counts it there).
#[inline(always)]
fn is_big(l: Layout) -> bool {
    l.size() > BIG_BYTES && l.align() <= PAGE
}

/// `bytes` rounded up to whole pages.
fn pages(bytes: usize) -> usize {
    bytes.div_ceil(PAGE) * PAGE
}

/// A fresh, zeroed mapping of `bytes`, or null.
#[allow(unsafe_code)]
fn map(bytes: usize) -> *mut u8 {
    // SAFETY: an anonymous private mapping at an address the kernel picks
    // touches no memory of ours.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            pages(bytes),
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        std::ptr::null_mut()
    } else {
        p.cast()
    }
}

// SAFETY: every block is either mimalloc's (small layouts, by `is_big`) or a
// mapping of its own made by `map` or `mremap` with at least the layout's
// size, page-aligned (at least the layout's alignment, by `is_big`); each
// is freed or resized by the same party that made it, as the layout given
// back says.
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for Allocator {
    #[inline(always)]
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        if is_big(l) {
            map(l.size())
        } else {
            // SAFETY: the caller's contract, passed on.
            unsafe { mimalloc::MiMalloc.alloc(l) }
        }
    }

    #[inline(always)]
    unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
        if is_big(l) {
            // A fresh mapping reads as zeros: no pass that writes them (and
            // faults every page in before it is used).
            map(l.size())
        } else {
            // SAFETY: the caller's contract, passed on.
            unsafe { mimalloc::MiMalloc.alloc_zeroed(l) }
        }
    }

    #[inline(always)]
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        if is_big(l) {
            // SAFETY: `p` is a mapping of `pages(l.size())` bytes (the
            // caller gives back the layout it was made with). A failure
            // leaves the mapping in place, only unused.
            unsafe { libc::munmap(p.cast(), pages(l.size())) };
        } else {
            // SAFETY: the caller's contract, passed on.
            unsafe { mimalloc::MiMalloc.dealloc(p, l) }
        }
    }

    #[inline(always)]
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller guarantees `new_size`, rounded up to the
        // alignment, does not overflow `isize`.
        let new = unsafe { Layout::from_size_align_unchecked(new_size, l.align()) };
        match (is_big(l), is_big(new)) {
            // SAFETY: the caller's contract, passed on.
            (false, false) => unsafe { mimalloc::MiMalloc.realloc(p, l, new_size) },
            (true, true) => {
                // SAFETY: `p` is a mapping of `pages(l.size())` bytes; the
                // kernel moves (or resizes) it whole, keeping its contents.
                let q = unsafe {
                    libc::mremap(
                        p.cast(),
                        pages(l.size()),
                        pages(new_size),
                        libc::MREMAP_MAYMOVE,
                    )
                };
                if q == libc::MAP_FAILED {
                    std::ptr::null_mut()
                } else {
                    q.cast()
                }
            }
            // Between the two kinds: a copy, as any allocator's realloc.
            _ => {
                // SAFETY: `new` has a non-zero size (one side is big, the
                // other at least 1 byte as `realloc`'s contract says).
                let q = unsafe { self.alloc(new) };
                if !q.is_null() {
                    // SAFETY: both blocks hold at least the smaller size and
                    // are distinct; `p` is freed with its own layout.
                    unsafe {
                        std::ptr::copy_nonoverlapping(p, q, l.size().min(new_size));
                        self.dealloc(p, l);
                    }
                }
                q
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    /// A vector grown from small to big, grown while big, shrunk back to
    /// small keeps every element, whichever party holds it.
    #[test]
    fn contents_survive_every_kind_of_resize() {
        let a = Allocator;
        let small = Layout::from_size_align(1000, 8).unwrap();
        let sizes = [
            BIG_BYTES + 1,
            3 * BIG_BYTES + 17,
            40 * BIG_BYTES,
            BIG_BYTES + 1,
            5000,
        ];
        #[allow(unsafe_code)]
        // SAFETY: each block is used within its layout's size and freed
        // or resized with the layout it has.
        unsafe {
            let mut p = a.alloc(small);
            assert!(!p.is_null());
            for i in 0..1000 {
                *p.add(i) = (i % 251) as u8;
            }
            let mut l = small;
            for &n in &sizes {
                p = a.realloc(p, l, n);
                assert!(!p.is_null(), "{n}");
                for i in 0..1000 {
                    assert_eq!(*p.add(i), (i % 251) as u8, "{n} {i}");
                }
                // The block is writable to its last byte.
                *p.add(n - 1) = 7;
                l = Layout::from_size_align(n, 8).unwrap();
            }
            a.dealloc(p, l);
        }
    }

    /// A big zeroed block reads as zeros; alignment up to a page is kept;
    /// bigger alignments stay mimalloc's.
    #[test]
    fn big_blocks_are_zeroed_and_aligned() {
        let a = Allocator;
        for align in [1, 8, 64, PAGE] {
            let l = Layout::from_size_align(2 * BIG_BYTES + 3, align).unwrap();
            assert!(is_big(l));
            #[allow(unsafe_code)]
            // SAFETY: read within the layout, freed with it.
            unsafe {
                let p = a.alloc_zeroed(l);
                assert!(!p.is_null());
                assert_eq!(p as usize % align, 0);
                assert!((0..l.size()).step_by(4093).all(|i| *p.add(i) == 0));
                a.dealloc(p, l);
            }
        }
        assert!(!is_big(
            Layout::from_size_align(2 * BIG_BYTES, 2 * PAGE).unwrap()
        ));
        assert!(!is_big(Layout::from_size_align(BIG_BYTES, 8).unwrap()));
    }

    /// A vector (through the global allocator, this one) grown by
    /// doubling across the threshold, then shrunk to fit, keeps its values.
    #[test]
    fn a_vector_grows_through_the_threshold_and_shrinks() {
        let mut v: Vec<u64> = Vec::new();
        for i in 0..(3 * BIG_BYTES as u64) {
            v.push(i * 7);
        }
        v.truncate(1000);
        v.shrink_to_fit();
        assert!(v.iter().enumerate().all(|(i, &x)| x == i as u64 * 7));
        let z = vec![0u32; BIG_BYTES];
        assert!(z.iter().all(|&x| x == 0));
    }
}
