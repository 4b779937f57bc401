//! The last step of [`Graph::from_sources`]: each adjacency list sorted by
//! target with duplicate targets merged, in place. A big graph does it on
//! two threads — each half of the edges (split at a node) compacts on its
//! own, then the second half moves down behind the first — which gives
//! exactly the arrays one pass over all the nodes gives.

use super::{Graph, beside_if, bits_for, radix_sort};
use crate::rels::Rels;

impl Graph {
    /// Sorts each adjacency list by target and merges duplicate targets'
    /// relations, compacting the arrays in place (a list only shrinks, so
    /// the write position never passes the read position). A list already
    /// sorted without duplicates is only moved down; the others are sorted
    /// by target as one `u64` per edge (target, then relations), which puts
    /// a target's duplicates side by side. `parallel`: in two halves, each
    /// on a thread of its own.
    pub(super) fn sort_and_merge(&mut self, parallel: bool) {
        let n = self.node_count();
        let total = self.off[n];
        let kept = if parallel {
            // The node where the second half of the edges starts.
            let m = self.off[..n].partition_point(|&o| o < total / 2);
            let mid = self.off[m];
            let (off_a, off_b) = self.off[..n].split_at_mut(m);
            let (dst_a, dst_b) = self.dst.split_at_mut(mid);
            let (rels_a, rels_b) = self.rels.split_at_mut(mid);
            let halves = vec![
                Part {
                    off: off_a,
                    dst: dst_a,
                    rels: rels_a,
                    base: 0,
                },
                Part {
                    off: off_b,
                    dst: dst_b,
                    rels: rels_b,
                    base: mid,
                },
            ];
            let kept = beside_if(true, halves, |p| p.compact(n));
            let (a, b) = (kept[0], kept[1]);
            // The second half's lists follow the first's.
            self.dst.copy_within(mid..mid + b, a);
            self.rels.copy_within(mid..mid + b, a);
            for o in &mut self.off[m..n] {
                *o -= mid - a;
            }
            a + b
        } else {
            Part {
                off: &mut self.off[..n],
                dst: &mut self.dst,
                rels: &mut self.rels,
                base: 0,
            }
            .compact(n)
        };
        self.off[n] = kept;
        self.dst.truncate(kept);
        self.rels.truncate(kept);
    }
}

/// The adjacency lists of a run of nodes: their starts (`off`, positions
/// in the whole graph) and their edges (`dst`, `rels`, from `base` to the
/// end of the last node's list).
struct Part<'a> {
    off: &'a mut [usize],
    dst: &'a mut [u32],
    rels: &'a mut [Rels],
    base: usize,
}

impl Part<'_> {
    /// Sorts and merges each list, compacting the part to its start;
    /// `off` becomes each list's new start (as if the part still began at
    /// `base`). Returns the edges kept. `n`: the graph's node count.
    fn compact(self, n: usize) -> usize {
        let Part {
            off,
            dst,
            rels,
            base,
        } = self;
        let (mut list, mut scratch) = (Vec::new(), Vec::new());
        let mut w = 0usize;
        let mut start = 0usize;
        for i in 0..off.len() {
            let end = off.get(i + 1).map_or(dst.len(), |&o| o - base);
            off[i] = base + w;
            let first = w;
            if dst[start..end].windows(2).all(|p| p[0] < p[1]) {
                dst.copy_within(start..end, w);
                rels.copy_within(start..end, w);
                w += end - start;
                start = end;
                continue;
            }
            list.clear();
            list.extend((start..end).map(|e| u64::from(dst[e]) << 8 | u64::from(rels[e].bits())));
            sort_by_target(&mut list, &mut scratch, n);
            for &x in &list {
                let (b, r) = ((x >> 8) as u32, Rels::from_bits(x as u8));
                if w > first && dst[w - 1] == b {
                    rels[w - 1] |= r;
                } else {
                    dst[w] = b;
                    rels[w] = r;
                    w += 1;
                }
            }
            start = end;
        }
        w
    }
}

/// Sorts `list` (one `target << 8 | relations` per edge, targets below `n`)
/// by target. The relations' order among equal targets is left as it falls:
/// the caller merges them with `|`. A long list is radix-sorted, which is
/// linear where a comparison sort is not; a short one is sorted.
pub(super) fn sort_by_target(list: &mut Vec<u64>, scratch: &mut Vec<u64>, n: usize) {
    if list.len() < 64 {
        list.sort_unstable();
    } else {
        radix_sort(list, scratch, 8..8 + bits_for(n));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::{EdgeList, Edges};

    /// Unsorted lists with duplicate targets: the two halves give the
    /// arrays one pass gives, wherever the split falls.
    #[test]
    fn halves_compact_as_one_pass_does() {
        for (n, per) in [(2usize, 3usize), (9, 0), (5000, 3), (3000, 70)] {
            let mut seed = (n * per + 1) as u64;
            let mut next = |m: usize| {
                seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
                (seed >> 33) as usize % m
            };
            let mut off = vec![0usize];
            let (mut dst, mut rels) = (Vec::new(), Vec::new());
            for _ in 0..n {
                for _ in 0..next(2 * per + 1) {
                    dst.push(next(n.min(40)) as u32);
                    rels.push(Rels::from_bits(1 << next(4)));
                }
                off.push(dst.len());
            }
            let g = Graph { off, dst, rels };
            let (mut one, mut two) = (g.clone(), g);
            one.sort_and_merge(false);
            two.sort_and_merge(true);
            assert_eq!((&one.off, &one.dst), (&two.off, &two.dst));
            assert!(
                one.rels
                    .iter()
                    .zip(&two.rels)
                    .all(|(a, b)| a.bits() == b.bits())
            );
            assert_eq!(one.rels.len(), two.rels.len());
            for u in 0..n {
                let r = one.range(u as u32);
                assert!(one.dst[r].windows(2).all(|p| p[0] < p[1]));
            }
        }
    }

    /// A source yielding its edges in parts builds the graph one list
    /// of all its edges builds (parts side by side on a big graph).
    #[test]
    fn parts_build_what_one_list_builds() {
        struct Halves(EdgeList);
        impl Edges for Halves {
            fn each(&self, add: &mut dyn FnMut(u32, u32, Rels)) {
                self.0.each(add);
            }
            fn parts(&self) -> usize {
                2
            }
            fn each_of(&self, part: usize, add: &mut dyn FnMut(u32, u32, Rels)) {
                for (i, &(a, b, r)) in self.0.edges.iter().enumerate() {
                    if i % 2 == part {
                        add(a, b, r);
                    }
                }
            }
        }
        let n = 5000u32;
        let (mut data, mut order) = (EdgeList::default(), EdgeList::default());
        for i in 0..4 * n {
            data.add(
                i % n,
                (i * 7 + 3) % n,
                [Rels::WW, Rels::WR, Rels::RW][(i % 3) as usize],
            );
            order.add(i % n, (i * 13 + 1) % n, Rels::REALTIME);
        }
        let mut all = data.clone();
        all.edges.extend(order.edges.iter().copied());
        let want = Graph::build(n as usize, &all);
        let got = Graph::from_sources(n as usize, &[&Halves(data), &order]);
        assert_eq!(got.edge_count(), want.edge_count());
        for u in 0..n {
            let (g, w): (Vec<_>, Vec<_>) = (got.succ(u).collect(), want.succ(u).collect());
            assert_eq!(g.len(), w.len());
            assert!(
                g.iter()
                    .zip(&w)
                    .all(|(x, y)| x.0 == y.0 && x.1.bits() == y.1.bits())
            );
        }
    }
}
