//! Whether a graph restricted to some relations has no cycle, by Kahn's
//! algorithm: the cycle analysis asks this first, and runs Tarjan only on a
//! graph that has one.
//!
//! Key decision: every history that satisfies its model has an acyclic
//! graph, so that case should pay for no more than Kahn needs. It never
//! builds the [`Graph`]: Kahn runs on [`Successors`], the data and order
//! edges as their sources yield them (unsorted, duplicates kept, no
//! relations: 4 B an edge), and real time is not edges at all but a
//! [`Gate`] — a rule of when a node may leave (`order::RealtimeGate`). At
//! 1M transactions real time is half the edges. Only a graph with a cycle
//! is built, and Tarjan walks only the nodes Kahn could not order: a node
//! Kahn took lies on no cycle, and which nodes Kahn takes depends only on
//! which nodes reach which, so the nodes left over are the same with real
//! time as a gate or as edges.

use super::{Edges, Graph, Sccs, tarjan_by};
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
    let targets = (0..g.dst.len())
        .filter(|&e| g.rels[e].intersects(mask))
        .map(|e| g.dst[e]);
    let kahn = Kahn::new(n, targets, true);
    kahn.run(|u, kahn| {
        for e in g.range(u) {
            if g.rels[e].intersects(mask) {
                kahn.arrive(g.dst[e]);
            }
        }
    })
}

/// What holds a node back in Kahn's order besides its in-edges: an order
/// kept as a rule instead of as edges. A node leaves once the gate has
/// passed it and every node with an edge into it has left.
pub trait Gate {
    /// Calls `pass` with each node the gate lets through before any left.
    fn open(&mut self, pass: &mut dyn FnMut(u32));
    /// Node `u` left the order: calls `pass` with each node that lets through.
    fn left(&mut self, u: u32, pass: &mut dyn FnMut(u32));

    /// Whether [`Gate::open`] passes every node and [`Gate::left`] none
    /// (no gate at all: Kahn skips the calls).
    fn all_pass(&self) -> bool {
        false
    }
}

/// No gate: nodes `0..n` all pass at once.
pub struct Open(pub usize);

impl Gate for Open {
    fn open(&mut self, pass: &mut dyn FnMut(u32)) {
        (0..self.0 as u32).for_each(pass);
    }

    fn left(&mut self, _: u32, _: &mut dyn FnMut(u32)) {}

    fn all_pass(&self) -> bool {
        true
    }
}

/// The out-edges of every node as the sources yielded them: unsorted, a
/// duplicate once per time it came, and without relations unless asked
/// for. What Kahn's order needs, in less than a [`Graph`] and without its
/// sort; with relations, it becomes the graph ([`Successors::into_graph`]).
pub struct Successors {
    graph: Graph,
    with_rels: bool,
}

impl Successors {
    /// The edges of `sources` over nodes `0..n` (self-edges and edges
    /// naming nodes ≥ n dropped, as [`Graph::from_sources`] drops them),
    /// with their relations when `with_rels`.
    pub fn of(n: usize, sources: &[&dyn Edges], with_rels: bool) -> Successors {
        Successors {
            graph: if with_rels {
                Graph::filled::<true>(n, sources)
            } else {
                Graph::filled::<false>(n, sources)
            },
            with_rels,
        }
    }

    /// The graph of these edges: what [`Graph::from_sources`] builds of
    /// the same sources. `None` when made without relations.
    pub fn into_graph(self) -> Option<Graph> {
        if !self.with_rels {
            return None;
        }
        let mut g = self.graph;
        let parallel = g.node_count() >= super::PARALLEL_FROM;
        g.sort_and_merge(parallel);
        Some(g)
    }

    /// Whether there is no edge.
    pub fn is_empty(&self) -> bool {
        self.graph.dst.is_empty()
    }

    /// The nodes Kahn's order could not take, by these edges and `gate`
    /// (`None`: it took them all, there is no cycle).
    pub fn left_by_kahn(&self, gate: &mut dyn Gate) -> Option<Vec<bool>> {
        let g = &self.graph;
        let all = gate.all_pass();
        let mut kahn = Kahn::new(g.node_count(), g.dst.iter().copied(), all);
        if !all {
            gate.open(&mut |u| kahn.pass(u));
        }
        kahn.run(|u, kahn| {
            for &v in &g.dst[g.range(u)] {
                kahn.arrive(v);
            }
            if !all {
                gate.left(u, &mut |v| kahn.pass(v));
            }
        })
    }
}

/// Kahn's order in progress: a node joins the queue when its last
/// in-edge has arrived and it has passed (the [`Gate`]'s say), whichever
/// comes second.
struct Kahn {
    indeg: Vec<u32>,
    passed: Vec<bool>,
    /// Each node once, in the order it leaves.
    queue: Vec<u32>,
}

impl Kahn {
    /// Nodes `0..n`, counting the in-edges whose targets `targets` yields;
    /// `all_passed`: as if the gate had passed every node.
    fn new(n: usize, targets: impl Iterator<Item = u32>, all_passed: bool) -> Kahn {
        let mut indeg = vec![0u32; n];
        for d in targets {
            indeg[d as usize] += 1;
        }
        let mut queue = Vec::with_capacity(n);
        if all_passed {
            queue.extend((0..n as u32).filter(|&u| indeg[u as usize] == 0));
        }
        Kahn {
            indeg,
            passed: vec![all_passed; n],
            queue,
        }
    }

    /// The gate let `u` through.
    fn pass(&mut self, u: u32) {
        self.passed[u as usize] = true;
        if self.indeg[u as usize] == 0 {
            self.queue.push(u);
        }
    }

    /// One in-edge of `v` arrived (its source left).
    fn arrive(&mut self, v: u32) {
        let d = &mut self.indeg[v as usize];
        *d -= 1;
        if *d == 0 && self.passed[v as usize] {
            self.queue.push(v);
        }
    }

    /// Takes the queue in order, `leave(u)` sending `u`'s edges on; the
    /// nodes never queued, as a flag per node (`None`: there are none).
    fn run(mut self, mut leave: impl FnMut(u32, &mut Kahn)) -> Option<Vec<bool>> {
        let mut head = 0;
        while let Some(&u) = self.queue.get(head) {
            head += 1;
            leave(u, &mut self);
        }
        let n = self.indeg.len();
        (self.queue.len() < n).then(|| {
            let mut left = vec![true; n];
            for &u in &self.queue {
                left[u as usize] = false;
            }
            left
        })
    }
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
#[allow(clippy::expect_used)]
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
    /// of three relations; Kahn on the unbuilt graph agrees, and the
    /// unbuilt edges with their relations become the same graph.
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
            // Kahn on the unbuilt graph (every relation counts there) leaves
            // what Kahn on the graph leaves, and its edges with their
            // relations sort into that graph.
            let mut el = EdgeList::default();
            for &(a, b, r) in &edges {
                el.add(a, b, Rels::of(r));
            }
            let plain = Successors::of(4, &[&el], false);
            assert_eq!(plain.left_by_kahn(&mut Open(4)), left_by_kahn(&g, all));
            assert!(plain.into_graph().is_none());
            let built = Successors::of(4, &[&el], true).into_graph();
            let built = built.expect("made with relations");
            for u in 0..4 {
                let (a, b): (Vec<_>, Vec<_>) = (built.succ(u).collect(), g.succ(u).collect());
                assert_eq!(a.len(), b.len(), "{edges:?}");
                assert!(
                    a.iter()
                        .zip(&b)
                        .all(|(x, y)| x.0 == y.0 && x.1.bits() == y.1.bits())
                );
            }
        }
    }
}
