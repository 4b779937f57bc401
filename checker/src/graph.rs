//! The transaction dependency graph: a compact CSR over dense `u32`
//! transaction ids whose edges carry a [`Rels`] set, and an iterative Tarjan
//! (no recursion: a history-sized component must not overflow the stack).

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
}

impl Graph {
    /// As [`Graph::build`], freeing the edge list as soon as it is consumed
    /// (lower peak memory on history-sized graphs).
    pub fn from_edges(n: usize, edges: EdgeList) -> Graph {
        Graph::from_lists(n, vec![edges])
    }

    /// The graph of several edge lists' edges, each list freed as soon as
    /// it is consumed: no list is ever copied into another (at 10M
    /// transactions the data and real-time lists hold 31M edges each).
    pub fn from_lists(n: usize, lists: Vec<EdgeList>) -> Graph {
        let off = Graph::count(n, lists.iter());
        let mut g = Graph::unsorted(off, |fill| {
            for list in lists {
                fill(&list);
            }
        });
        g.sort_and_merge();
        g
    }

    /// Builds a graph over nodes `0..n` (edges naming nodes ≥ n are dropped).
    pub fn build(n: usize, edges: &EdgeList) -> Graph {
        let off = Graph::count(n, std::iter::once(edges));
        let mut g = Graph::unsorted(off, |fill| fill(edges));
        g.sort_and_merge();
        g
    }

    /// Start of each node's edges (a counting sort by source): `n + 1`
    /// offsets, the last one the number of edges inside `0..n`.
    fn count<'e>(n: usize, lists: impl Iterator<Item = &'e EdgeList>) -> Vec<usize> {
        let mut off = vec![0usize; n + 1];
        for &(a, b, _) in lists.flat_map(|l| &l.edges) {
            if (a as usize) < n && (b as usize) < n {
                off[a as usize + 1] += 1;
            }
        }
        for i in 0..n {
            off[i + 1] += off[i];
        }
        off
    }

    /// The edges bucketed by source under `off` (from [`Graph::count`]),
    /// unsorted, duplicates kept: `feed` hands every list to the filler.
    fn unsorted(off: Vec<usize>, feed: impl FnOnce(&mut dyn FnMut(&EdgeList))) -> Graph {
        let n = off.len() - 1;
        let total = off[n];
        let mut dst = vec![0u32; total];
        let mut rels = vec![Rels::NONE; total];
        let mut next = off.clone();
        feed(&mut |list: &EdgeList| {
            for &(a, b, r) in &list.edges {
                if (a as usize) < n && (b as usize) < n {
                    let slot = &mut next[a as usize];
                    dst[*slot] = b;
                    rels[*slot] = r;
                    *slot += 1;
                }
            }
        });
        Graph { off, dst, rels }
    }

    /// Sorts each adjacency list by target and merges duplicate targets'
    /// relations, compacting the arrays in place (a list only shrinks, so
    /// the write position never passes the read position).
    fn sort_and_merge(&mut self) {
        let n = self.node_count();
        let mut list: Vec<(u32, Rels)> = Vec::new();
        let mut w = 0usize;
        let mut start = 0usize;
        for i in 0..n {
            let end = self.off[i + 1];
            list.clear();
            list.extend((start..end).map(|e| (self.dst[e], self.rels[e])));
            list.sort_unstable_by_key(|e| e.0);
            self.off[i] = w;
            for &(b, r) in &list {
                if w > self.off[i] && self.dst[w - 1] == b {
                    self.rels[w - 1] |= r;
                } else {
                    self.dst[w] = b;
                    self.rels[w] = r;
                    w += 1;
                }
            }
            start = end;
        }
        self.off[n] = w;
        self.dst.truncate(w);
        self.rels.truncate(w);
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
    let n = g.node_count();
    const UNSEEN: u32 = u32::MAX;
    let mut index = vec![UNSEEN; n];
    let mut low = vec![0u32; n];
    let mut comp = vec![UNSEEN; n];
    let mut size: Vec<u32> = Vec::new();
    let mut stack: Vec<u32> = Vec::new();
    let mut call: Vec<(u32, usize)> = Vec::new();
    let mut counter = 0u32;
    for s in 0..n as u32 {
        if index[s as usize] != UNSEEN {
            continue;
        }
        index[s as usize] = counter;
        low[s as usize] = counter;
        counter += 1;
        stack.push(s);
        call.push((s, g.off[s as usize]));
        while let Some(frame) = call.last_mut() {
            let v = frame.0;
            let end = g.off[v as usize + 1];
            let mut descended = false;
            while frame.1 < end {
                let e = frame.1;
                frame.1 += 1;
                if !g.rels[e].intersects(mask) {
                    continue;
                }
                let w = g.dst[e];
                if index[w as usize] == UNSEEN {
                    index[w as usize] = counter;
                    low[w as usize] = counter;
                    counter += 1;
                    stack.push(w);
                    call.push((w, g.off[w as usize]));
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
        let mut pairs: Vec<(u32, Rels)> = r.clone().map(|e| (out.dst[e], out.rels[e])).collect();
        if pairs.windows(2).any(|w| w[0].0 > w[1].0) {
            pairs.sort_unstable_by_key(|p| p.0);
            for (k, (d, rl)) in pairs.into_iter().enumerate() {
                out.dst[r.start + k] = d;
                out.rels[r.start + k] = rl;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
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
