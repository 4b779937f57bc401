//! The first steps of [`Graph::from_sources`], shared with Kahn's check of
//! an unbuilt graph ([`super::kahn::Successors`]): every source's edges
//! written into one adjacency array in two passes over the sources, as
//! they come — unsorted, a duplicate edge once per time it is yielded.

use super::{Edges, Graph, PARALLEL_FROM, beside_if};
use crate::rels::Rels;
use std::sync::atomic::{AtomicU8, AtomicU32, Ordering};

impl Graph {
    /// The edges over nodes `0..n` of every source (self-edges and edges
    /// naming nodes ≥ n dropped) as the sources yielded them: node `a`'s
    /// edges at `off[a]..off[a + 1]` of `dst`, and of `rels` when
    /// `WITH_RELS` (else `rels` is empty) — not yet a graph's sorted,
    /// merged lists (`merge.rs` makes them that). Two
    /// passes, the sources' parts ([`Edges::parts`]) side by side in each (a
    /// thread per part on a big graph): count each part's out-edges per node,
    /// then write every edge at its slot — node by node, inside a node part by
    /// part, so the parts never write the same slot. Beside the lists only a
    /// `u32` cursor per node and part is held (at 1M transactions and three
    /// parts 12 MB, where the two edge lists were 75 MB).
    pub(super) fn filled<const WITH_RELS: bool>(n: usize, sources: &[&dyn Edges]) -> Graph {
        let inside = |a: u32, b: u32| a != b && (a as usize) < n && (b as usize) < n;
        let parallel = n >= PARALLEL_FROM;
        // Each part of each source on its own (a thread each).
        let parts: Vec<(&dyn Edges, usize)> = sources
            .iter()
            .flat_map(|&s| (0..s.parts()).map(move |p| (s, p)))
            .collect();
        // Allocated and (below) freed on this thread, whose allocator
        // reuses them for what comes next.
        let counts: Vec<Vec<u32>> = parts.iter().map(|_| vec![0u32; n]).collect();
        let work: Vec<_> = parts.iter().copied().zip(counts).collect();
        let mut cursors = beside_if(parallel, work, |((s, p), mut count)| {
            s.each_of(p, &mut |a, b, _| {
                if inside(a, b) {
                    count[a as usize] += 1;
                }
            });
            count
        });
        // A node's slots start at `off`; each source's cursor starts
        // after the slots of the sources before it.
        let mut off = Vec::with_capacity(n + 1);
        off.push(0usize);
        for a in 0..n {
            let mut within = 0u32;
            for c in &mut cursors {
                within += std::mem::replace(&mut c[a], within);
            }
            off.push(off[a] + within as usize);
        }
        let total = off[n];
        let dst: Vec<AtomicU32> = (0..total).map(|_| AtomicU32::new(0)).collect();
        let rels: Vec<AtomicU8> = (0..if WITH_RELS { total } else { 0 })
            .map(|_| AtomicU8::new(0))
            .collect();
        let cursors = beside_if(
            parallel,
            parts.into_iter().zip(cursors).collect(),
            |((s, p), mut cur)| {
                s.each_of(p, &mut |a, b, r| {
                    if inside(a, b) {
                        let e = off[a as usize] + cur[a as usize] as usize;
                        cur[a as usize] += 1;
                        dst[e].store(b, Ordering::Relaxed);
                        if WITH_RELS {
                            rels[e].store(r.bits(), Ordering::Relaxed);
                        }
                    }
                });
                cur
            },
        );
        drop(cursors);
        Graph {
            off,
            dst: dst.into_iter().map(AtomicU32::into_inner).collect(),
            rels: rels
                .into_iter()
                .map(|r| Rels::from_bits(r.into_inner()))
                .collect(),
        }
    }
}
