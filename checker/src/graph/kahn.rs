//! Whether a [`Graph`] restricted to some relations has no cycle, by Kahn's
//! algorithm: the cycle analysis asks this first, and runs Tarjan only on a
//! graph that has one.
//!
//! Key decision: every history that satisfies its model has an acyclic
//! graph, so that case pays for an in-degree and a queue per node (8 B),
//! not Tarjan's index, low-link, component, stack and call frames (up to
//! 40 B, most of it while the graph is alive at its biggest): at 1M
//! transactions that is the difference between the check's second memory
//! peak and a smaller one. A graph with a cycle pays both, and gets the
//! same components as before.

use super::{Graph, Sccs, tarjan_by};
use crate::rels::Rels;

/// Whether the edges of `g` whose relations intersect `mask` form no
/// cycle (every node leaves Kahn's order).
pub fn acyclic(g: &Graph, mask: Rels) -> bool {
    left_by_kahn(g, mask).is_none()
}

/// The nodes Kahn's order could not take, as a flag per node (`None`: it
/// took them all, the graph is acyclic). A node it took lies on no cycle:
/// [`tarjan_among`] needs to walk only the others.
pub fn left_by_kahn(g: &Graph, mask: Rels) -> Option<Vec<bool>> {
    let n = g.node_count();
    let mut indeg = vec![0u32; n];
    for (e, &d) in g.dst.iter().enumerate() {
        if g.rels[e].intersects(mask) {
            indeg[d as usize] += 1;
        }
    }
    // The queue holds each node once, in the order it leaves.
    let mut queue: Vec<u32> = Vec::with_capacity(n);
    queue.extend((0..n as u32).filter(|&u| indeg[u as usize] == 0));
    let mut head = 0;
    while let Some(&u) = queue.get(head) {
        head += 1;
        for e in g.range(u) {
            if g.rels[e].intersects(mask) {
                let d = &mut indeg[g.dst[e] as usize];
                *d -= 1;
                if *d == 0 {
                    queue.push(g.dst[e]);
                }
            }
        }
    }
    // A node leaves the moment its in-degree reaches 0: those left are
    // the ones still above it.
    (queue.len() < n).then(|| indeg.iter().map(|&d| d > 0).collect())
}

/// Tarjan's components over the nodes `left` flags and the edges between
/// them whose relations intersect `mask`; every other node is a component
/// of its own, never walked. With `left` from [`left_by_kahn`], the same
/// components with more than one node as [`super::tarjan`]'s.
pub fn tarjan_among(g: &Graph, mask: Rels, left: &[bool]) -> Sccs {
    tarjan_by(
        g.node_count(),
        |v| {
            if left[v as usize] { g.range(v) } else { 0..0 }
        },
        |_, edges| {
            edges
                .find(|&e| g.rels[e].intersects(mask) && left[g.dst[e] as usize])
                .map(|e| g.dst[e])
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::{EdgeList, tarjan};
    use crate::rels::Rel;

    fn graph(n: usize, edges: &[(u32, u32, Rel)]) -> Graph {
        let mut el = EdgeList::default();
        for &(a, b, r) in edges {
            el.add(a, b, Rels::of(r));
        }
        Graph::from_sources(n, &[&el])
    }

    /// A cycle counts only through the relations asked for, Kahn's answer
    /// is Tarjan's (no component of more than one node), and Tarjan among
    /// the nodes Kahn left finds Tarjan's components, on every small graph
    /// of three relations.
    #[test]
    fn kahn_agrees_with_tarjan_under_every_mask() {
        let ring = graph(
            3,
            &[(0, 1, Rel::Ww), (1, 2, Rel::Wr), (2, 0, Rel::Realtime)],
        );
        let all = Rels::DATA | Rels::PROCESS | Rels::REALTIME;
        assert!(!acyclic(&ring, all));
        assert!(acyclic(&ring, Rels::WW | Rels::WR));
        let rels = [Rel::Ww, Rel::Rw, Rel::Realtime];
        let masks = [all, Rels::WW, Rels::WW | Rels::RW, Rels::REALTIME];
        // Every graph on 4 nodes whose edges are drawn by a small counter.
        for seed in 0u64..4000 {
            let mut x = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let mut edges = Vec::new();
            for _ in 0..(seed % 9) {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
                let (a, b) = ((x >> 33) as u32 % 4, (x >> 40) as u32 % 4);
                edges.push((a, b, rels[(x >> 50) as usize % 3]));
            }
            let g = graph(4, &edges);
            for &m in &masks {
                let sccs = tarjan(&g, m).nontrivial();
                assert_eq!(acyclic(&g, m), sccs.is_empty(), "{edges:?} {m:?}");
                if let Some(left) = left_by_kahn(&g, m) {
                    let among = tarjan_among(&g, m, &left).nontrivial();
                    assert_eq!(among, sccs, "{edges:?} {m:?}");
                }
            }
        }
    }
}
