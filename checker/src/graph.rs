//! The transaction dependency graph: a compact CSR over dense `u32`
//! transaction ids whose edges carry a [`Rels`] set, and an iterative Tarjan
//! (no recursion: a history-sized component must not overflow the stack).
//!
//! Key decision: the graph is built from [`Edges`] sources that yield their
//! edges on every call, in two passes (count per node, then write in place),
//! so a history's edges exist once, in the graph — never also as lists.

mod fill;
pub mod kahn;
mod merge;

use crate::rels::Rels;

/// Marker for "no node".
pub const NO_NODE: u32 = u32::MAX;

/// A directed graph in compressed sparse row form; adjacency lists are sorted
/// by target and hold each target once (relations merged).
#[derive(Clone, Debug, Default)]
pub struct Graph {
    off: Vec<usize>,
    dst: Vec<u32>,
    rels: Vec<Rels>,
}

/// Edges being collected before they become a [`Graph`].
#[derive(Clone, Debug, Default)]
pub struct EdgeList {
    /// `(from, to, relations)`; duplicates allowed, self-edges dropped on build.
    pub edges: Vec<(u32, u32, Rels)>,
}

impl EdgeList {
    /// Adds an edge (self-edges are ignored: dependency graphs never hold them).
    #[inline]
    pub fn add(&mut self, from: u32, to: u32, rels: Rels) {
        if from != to {
            self.edges.push((from, to, rels));
        }
    }

    /// The edges `source` yields, collected.
    pub fn of(source: &dyn Edges) -> EdgeList {
        let mut el = EdgeList::default();
        source.each(&mut |a, b, r| el.add(a, b, r));
        el
    }
}

/// A source of edges that yields them as often as asked: a graph is built
/// in two passes over its sources (count each node's out-edges, then write
/// them in place), so no list of a history's edges is ever held beside the
/// graph. Every call must yield the same edges.
pub trait Edges: Sync {
    /// Calls `add(from, to, relations)` with every edge; duplicates and
    /// self-edges allowed (the graph merges the ones and drops the others).
    fn each(&self, add: &mut dyn FnMut(u32, u32, Rels));

    /// How many parts [`Edges::each_of`] yields the edges in (a graph
    /// is built from the parts side by side); default one, all of them.
    fn parts(&self) -> usize {
        1
    }

    /// The edges of part `part` of [`Edges::parts`]: the parts together
    /// yield [`Edges::each`]'s edges.
    fn each_of(&self, _part: usize, add: &mut dyn FnMut(u32, u32, Rels)) {
        self.each(add);
    }
}

impl Edges for EdgeList {
    fn each(&self, add: &mut dyn FnMut(u32, u32, Rels)) {
        for &(a, b, r) in &self.edges {
            add(a, b, r);
        }
    }
}

/// Histories (or graphs) smaller than this many ops (nodes) are analysed
/// on the calling thread alone: starting and joining a thread costs more
/// than such work (part of the fixed cost of a small `harness check`).
pub const PARALLEL_FROM: usize = 4096;

/// Runs `f` on each item and returns the results in the items' order:
/// when `parallel`, the first on this thread and the others on a thread
/// each (a panic in one is re-raised here), else one after the other here.
pub(crate) fn beside_if<I: Send, T: Send>(
    parallel: bool,
    items: Vec<I>,
    f: impl Fn(I) -> T + Sync,
) -> Vec<T> {
    if !parallel {
        return items.into_iter().map(f).collect();
    }
    let mut items = items.into_iter();
    let Some(first) = items.next() else {
        return Vec::new();
    };
    let f = &f;
    std::thread::scope(|scope| {
        let others: Vec<_> = items.map(|i| scope.spawn(move || f(i))).collect();
        let mut all = vec![f(first)];
        for handle in others {
            match handle.join() {
                Ok(t) => all.push(t),
                Err(panic) => std::panic::resume_unwind(panic),
            }
        }
        all
    })
}

/// Runs `f` on `0..n` — when `parallel`, in two halves side by side — and
/// returns the results in order (one or two). The first half runs on a
/// thread of its own, the second on this one: callers keep the first
/// half's result and append the second's to it, so what is dropped after
/// is allocated and freed by this thread, whose allocator reuses it (freed
/// into a finished thread's heap, it stayed resident: +3 MB of peak at 1M
/// transactions).
pub fn halves<T: Send>(
    parallel: bool,
    n: usize,
    f: impl Fn(std::ops::Range<usize>) -> T + Sync,
) -> Vec<T> {
    if !parallel {
        return vec![f(0..n)];
    }
    let f = &f;
    std::thread::scope(|scope| {
        let first = scope.spawn(move || f(0..n / 2));
        let second = f(n / 2..n);
        match first.join() {
            Ok(first) => vec![first, second],
            Err(panic) => std::panic::resume_unwind(panic),
        }
    })
}

impl Graph {
    /// As [`Graph::build`], taking the list.
    pub fn from_edges(n: usize, edges: EdgeList) -> Graph {
        Graph::build(n, &edges)
    }

    /// Builds a graph over nodes `0..n` (edges naming nodes ≥ n are dropped).
    pub fn build(n: usize, edges: &EdgeList) -> Graph {
        Graph::from_sources(n, &[edges])
    }

    /// The graph over nodes `0..n` of every source's edges (edges naming
    /// nodes ≥ n are dropped): written in two passes over the sources
    /// (`graph/fill.rs`), then each list sorted and merged
    /// (`graph/merge.rs`).
    pub fn from_sources(n: usize, sources: &[&dyn Edges]) -> Graph {
        let parallel = n >= PARALLEL_FROM;
        let mut g = Graph::filled::<true>(n, sources);
        g.sort_and_merge(parallel);
        g
    }

    /// Number of nodes.
    pub fn node_count(&self) -> usize {
        self.off.len().saturating_sub(1)
    }

    /// Number of (merged) edges.
    pub fn edge_count(&self) -> usize {
        self.dst.len()
    }

    /// Edge positions of `u`'s out-edges.
    #[inline]
    pub fn range(&self, u: u32) -> std::ops::Range<usize> {
        self.off[u as usize]..self.off[u as usize + 1]
    }

    /// Target of the edge at `e`.
    #[inline]
    pub fn target(&self, e: usize) -> u32 {
        self.dst[e]
    }

    /// Relations of the edge at `e`.
    #[inline]
    pub fn rels_at(&self, e: usize) -> Rels {
        self.rels[e]
    }

    /// Successors of `u` with their relations.
    pub fn succ(&self, u: u32) -> impl Iterator<Item = (u32, Rels)> + '_ {
        self.range(u).map(move |e| (self.dst[e], self.rels[e]))
    }

    /// The relations on edge `u → v` (empty if there is none).
    pub fn rels(&self, u: u32, v: u32) -> Rels {
        let r = self.range(u);
        match self.dst[r.clone()].binary_search(&v) {
            Ok(i) => self.rels[r.start + i],
            Err(_) => Rels::NONE,
        }
    }

    /// Whether `u` has at least one edge (in or out) — computed for all nodes.
    pub fn touched(&self) -> Vec<bool> {
        let n = self.node_count();
        let mut t = vec![false; n];
        for (u, slot) in t.iter_mut().enumerate() {
            if self.off[u + 1] > self.off[u] {
                *slot = true;
            }
        }
        for &d in &self.dst {
            t[d as usize] = true;
        }
        t
    }
}

/// Strongly connected components: `comp[v]` is v's component id; ids are in
/// Tarjan's emission order, which is a reverse topological order of the
/// condensation (an edge between components goes from a higher id to a lower).
#[derive(Clone, Debug)]
pub struct Sccs {
    /// Component id of each node.
    pub comp: Vec<u32>,
    /// Size of each component.
    pub size: Vec<u32>,
}

impl Sccs {
    /// The nodes of each component with more than one node, each list sorted.
    pub fn nontrivial(&self) -> Vec<Vec<u32>> {
        let mut idx = vec![NO_NODE; self.size.len()];
        let mut out: Vec<Vec<u32>> = Vec::new();
        for (c, &s) in self.size.iter().enumerate() {
            if s > 1 {
                idx[c] = out.len() as u32;
                out.push(Vec::with_capacity(s as usize));
            }
        }
        for (v, &c) in self.comp.iter().enumerate() {
            let i = idx[c as usize];
            if i != NO_NODE {
                out[i as usize].push(v as u32);
            }
        }
        out
    }
}

/// Tarjan's algorithm over edges whose relations intersect `mask`, with an
/// explicit stack.
pub fn tarjan(g: &Graph, mask: Rels) -> Sccs {
    tarjan_by(
        g.node_count(),
        |v| g.range(v),
        |_, edges| {
            edges
                .find(|&e| g.rels[e].intersects(mask))
                .map(|e| g.dst[e])
        },
    )
}

/// Tarjan's algorithm over nodes `0..n`, with an explicit stack: a node's
/// successors come one at a time from `next(v, cursor)`, its cursor
/// starting as `first(v)` (so a graph need not be built to be walked).
pub(crate) fn tarjan_by(
    n: usize,
    first: impl Fn(u32) -> std::ops::Range<usize>,
    next: impl Fn(u32, &mut std::ops::Range<usize>) -> Option<u32>,
) -> Sccs {
    const UNSEEN: u32 = u32::MAX;
    let mut index = vec![UNSEEN; n];
    let mut low = vec![0u32; n];
    let mut comp = vec![UNSEEN; n];
    let mut size: Vec<u32> = Vec::new();
    let mut stack: Vec<u32> = Vec::new();
    let mut call: Vec<(u32, std::ops::Range<usize>)> = Vec::new();
    let mut counter = 0u32;
    for s in 0..n as u32 {
        if index[s as usize] != UNSEEN {
            continue;
        }
        index[s as usize] = counter;
        low[s as usize] = counter;
        counter += 1;
        stack.push(s);
        call.push((s, first(s)));
        while let Some(frame) = call.last_mut() {
            let v = frame.0;
            let mut descended = false;
            while let Some(w) = next(v, &mut frame.1) {
                if index[w as usize] == UNSEEN {
                    index[w as usize] = counter;
                    low[w as usize] = counter;
                    counter += 1;
                    stack.push(w);
                    call.push((w, first(w)));
                    descended = true;
                    break;
                } else if comp[w as usize] == UNSEEN {
                    // On the stack: visited, component not yet assigned.
                    let iw = index[w as usize];
                    if iw < low[v as usize] {
                        low[v as usize] = iw;
                    }
                }
            }
            if descended {
                continue;
            }
            call.pop();
            if let Some(parent) = call.last() {
                let p = parent.0 as usize;
                if low[v as usize] < low[p] {
                    low[p] = low[v as usize];
                }
            }
            if low[v as usize] == index[v as usize] {
                let id = size.len() as u32;
                let mut count = 0u32;
                while let Some(w) = stack.pop() {
                    comp[w as usize] = id;
                    count += 1;
                    if w == v {
                        break;
                    }
                }
                size.push(count);
            }
        }
    }
    Sccs { comp, size }
}

/// The subgraph induced by `nodes` (global ids), renumbered `0..nodes.len()`
/// in the order given, keeping only edges whose relations intersect `mask`
/// (restricted to `mask`). `scratch` must be all [`NO_NODE`] and `>=` the
/// global node count; it is left all [`NO_NODE`] again.
pub fn induced(g: &Graph, nodes: &[u32], mask: Rels, scratch: &mut [u32]) -> Graph {
    for (i, &v) in nodes.iter().enumerate() {
        scratch[v as usize] = i as u32;
    }
    let mut off = Vec::with_capacity(nodes.len() + 1);
    let mut dst = Vec::new();
    let mut rels = Vec::new();
    off.push(0);
    for &v in nodes {
        for e in g.range(v) {
            let r = g.rels[e].intersect(mask);
            if r.is_empty() {
                continue;
            }
            let w = scratch[g.dst[e] as usize];
            if w != NO_NODE {
                dst.push(w);
                rels.push(r);
            }
        }
        off.push(dst.len());
    }
    for &v in nodes {
        scratch[v as usize] = NO_NODE;
    }
    // Global adjacency is sorted by global id; local ids follow `nodes`' order,
    // so re-sort each list to keep `rels()` lookups valid.
    let mut out = Graph { off, dst, rels };
    for i in 0..nodes.len() {
        let r = out.off[i]..out.off[i + 1];
        // Usually sorted already (`nodes` ascending): checked in place.
        if out.dst[r.clone()].windows(2).any(|w| w[0] > w[1]) {
            let mut pairs: Vec<(u32, Rels)> =
                r.clone().map(|e| (out.dst[e], out.rels[e])).collect();
            pairs.sort_unstable_by_key(|p| p.0);
            for (k, (d, rl)) in pairs.into_iter().enumerate() {
                out.dst[r.start + k] = d;
                out.rels[r.start + k] = rl;
            }
        }
    }
    out
}

/// Bits that hold every number below `n`.
pub(crate) fn bits_for(n: usize) -> u32 {
    usize::BITS - n.saturating_sub(1).leading_zeros()
}

/// Sorts `list` by its bits `bits` (least significant radix sort, a byte
/// per pass; a pass whose byte is the same in every key is skipped). With
/// `bits` covering every bit set, this is `sort_unstable`'s order.
pub(crate) fn radix_sort(list: &mut Vec<u64>, scratch: &mut Vec<u64>, bits: std::ops::Range<u32>) {
    scratch.resize(list.len(), 0);
    for shift in bits.step_by(8) {
        let mut count = [0usize; 256];
        for &x in list.iter() {
            count[(x >> shift) as usize & 0xff] += 1;
        }
        if count.contains(&list.len()) {
            continue;
        }
        let mut at = 0;
        for c in &mut count {
            at += std::mem::replace(c, at);
        }
        for &x in list.iter() {
            let d = (x >> shift) as usize & 0xff;
            scratch[count[d]] = x;
            count[d] += 1;
        }
        std::mem::swap(list, scratch);
    }
}

#[cfg(test)]
mod tests {
    use super::merge::sort_by_target;
    use super::*;

    fn g(n: usize, e: &[(u32, u32, Rels)]) -> Graph {
        Graph::build(n, &EdgeList { edges: e.to_vec() })
    }

    #[test]
    fn merges_relations_and_drops_self_edges() {
        let mut el = EdgeList::default();
        el.add(0, 1, Rels::WW);
        el.add(0, 1, Rels::RW);
        el.add(1, 1, Rels::WW);
        el.add(1, 0, Rels::WR);
        let gr = Graph::build(2, &el);
        assert_eq!(gr.edge_count(), 2);
        assert_eq!(gr.rels(0, 1), Rels::WW | Rels::RW);
        assert_eq!(gr.rels(1, 1), Rels::NONE);
    }

    /// The same edges as one list or as sources side by side (self-edges,
    /// duplicates across sources, nodes out of range) give the same graph.
    #[test]
    fn sources_side_by_side_build_the_graph_of_their_union() {
        let data: Vec<(u32, u32, Rels)> = (0..200u32)
            .flat_map(|i| [(i % 50, (i * 7) % 50, Rels::WW), (i % 50, 60, Rels::WR)])
            .collect();
        let order: Vec<(u32, u32, Rels)> = (0..120u32)
            .map(|i| ((i * 3) % 50, (i * 11) % 50, Rels::REALTIME))
            .collect();
        let union = EdgeList {
            edges: data.iter().chain(&order).copied().collect(),
        };
        let (data, order) = (EdgeList { edges: data }, EdgeList { edges: order });
        let two = Graph::from_sources(50, &[&data, &order]);
        // The sources' edges met in one adjacency list and merged.
        let merged =
            |g: &Graph| (0..g.edge_count()).any(|e| g.rels_at(e) == Rels::WW | Rels::REALTIME);
        assert!(merged(&two));
        let one = Graph::build(50, &union);
        assert_eq!((two.off, two.dst, two.rels), (one.off, one.dst, one.rels));
    }

    #[test]
    fn sccs_respect_mask() {
        let gr = g(
            4,
            &[
                (0, 1, Rels::WW),
                (1, 0, Rels::RW),
                (2, 3, Rels::WW),
                (3, 2, Rels::WW),
            ],
        );
        let all = tarjan(&gr, Rels::DATA).nontrivial();
        assert_eq!(all, vec![vec![0, 1], vec![2, 3]]);
        let ww = tarjan(&gr, Rels::WW).nontrivial();
        assert_eq!(ww, vec![vec![2, 3]]);
    }

    #[test]
    fn reverse_topological_ids() {
        let gr = g(3, &[(0, 1, Rels::WW), (1, 2, Rels::WW)]);
        let s = tarjan(&gr, Rels::WW);
        assert!(s.comp[0] > s.comp[1] && s.comp[1] > s.comp[2]);
    }

    #[test]
    fn radix_sort_orders_by_target() {
        // Long lists over several target bytes, with duplicate targets.
        for (len, n) in [(10usize, 5usize), (300, 70_000), (5000, 1 << 20), (200, 3)] {
            let mut seed = len as u64 * 2_654_435_761;
            let mut list: Vec<u64> = (0..len)
                .map(|_| {
                    seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
                    ((seed >> 33) % n as u64) << 8 | (seed >> 20) & 0xff
                })
                .collect();
            let mut want = list.clone();
            sort_by_target(&mut list, &mut Vec::new(), n);
            assert!(list.windows(2).all(|p| p[0] >> 8 <= p[1] >> 8));
            want.sort_unstable();
            list.sort_unstable();
            assert_eq!(list, want);
        }
    }

    #[test]
    fn million_node_cycle_does_not_overflow() {
        let n = 1_000_000u32;
        let mut el = EdgeList::default();
        for i in 0..n {
            el.add(i, (i + 1) % n, Rels::WW);
        }
        let gr = Graph::build(n as usize, &el);
        let s = tarjan(&gr, Rels::WW);
        assert_eq!(s.size.len(), 1);
        assert_eq!(s.size[0], n);
    }
}
