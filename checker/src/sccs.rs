//! The strongly connected components of one component's induced graph,
//! per relation set, computed once for the cycle search's pre-checks and
//! Elle's `<model>-cycle-exists` pass of that component.
//!
//! Key decision: a relation set whose graph has no cycle answers for every
//! subset of it without a pass (a subgraph of an acyclic graph is acyclic),
//! and the component's own relation set is known to be one component. In a
//! valid history the big component is cyclic only through `rw` (or order)
//! edges, so one Tarjan pass over `ww ∪ wr ∪ order` rules out G0, G1c,
//! their order variants and the PL-1 / PL-2 cycle-exists summaries that
//! each took a pass of their own (AWDIT's 2M-event read-committed history
//! at `-c RC` is one 491k-transaction component of 7.9M edges).

use crate::graph::{Graph, Sccs, tarjan, tarjan_by};
use crate::rels::{Rel, Rels};

/// Components of `graph` per relation set, computed on demand and kept.
pub struct Components<'g> {
    graph: &'g Graph,
    /// (relations, their components, whether any component is nontrivial).
    done: Vec<(Rels, Sccs, bool)>,
}

impl<'g> Components<'g> {
    /// The memo of `graph`, which is strongly connected over `whole` (the
    /// induced graph of one component of a graph over `whole`).
    pub fn of_component(graph: &'g Graph, whole: Rels) -> Components<'g> {
        let n = graph.node_count();
        let one = Sccs {
            comp: vec![0; n],
            size: vec![n as u32],
        };
        Components {
            graph,
            done: vec![(whole, one, n > 1)],
        }
    }

    /// Whether the graph over `rels` is known to have no cycle (a superset
    /// of it was computed acyclic), without computing anything.
    pub fn known_acyclic(&self, rels: Rels) -> bool {
        self.done
            .iter()
            .any(|(r, _, cyclic)| !cyclic && rels.minus(*r).is_empty())
    }

    /// Whether the components over `rels` are computed (or known).
    pub fn has(&self, rels: Rels) -> bool {
        self.done.iter().any(|(r, _, _)| *r == rels)
    }

    /// Whether the graph over `rels` has a cycle (computing its components
    /// unless a computed superset was acyclic).
    pub fn cyclic(&mut self, rels: Rels) -> bool {
        !self.known_acyclic(rels) && self.get(rels).size.iter().any(|&s| s > 1)
    }

    /// The components over `rels`, computed once.
    pub fn get(&mut self, rels: Rels) -> &Sccs {
        let i = match self.done.iter().position(|(r, _, _)| *r == rels) {
            Some(i) => i,
            None => {
                let s = tarjan(self.graph, rels);
                let cyclic = s.size.iter().any(|&c| c > 1);
                self.done.push((rels, s, cyclic));
                self.done.len() - 1
            }
        };
        &self.done[i].1
    }
}

/// The components of `g`'s two-state graph, computed without building it:
/// state `2x` is "at x, the last step not `rw`", `2x + 1` "at x, the last
/// step `rw`"; an edge x → y whose relations meet `step` leads from both
/// states of x to `2y`, an `rw` edge only from `2x` to `2y + 1` (so no two
/// `rw` steps follow each other). The successors come in the order of the
/// built graph's sorted lists, so the result is Tarjan's over it, ids and
/// all — without its edge list and CSR (two and three times the edges of
/// `g`; at 491k transactions and 7.9M edges they were most of the peak).
pub fn two_state(g: &Graph, step: Rels) -> Sccs {
    // The cursor runs over 2 × edge of `g` + which of its two possible
    // targets comes next.
    tarjan_by(
        2 * g.node_count(),
        |s| {
            let r = g.range(s / 2);
            2 * r.start..2 * r.end
        },
        |s, cursor| {
            for c in cursor.by_ref() {
                let (e, second) = (c / 2, c & 1 == 1);
                let r = g.rels_at(e);
                if !second && r.intersects(step) {
                    return Some(2 * g.target(e));
                }
                if second && s & 1 == 0 && r.contains(Rel::Rw) {
                    return Some(2 * g.target(e) + 1);
                }
            }
            None
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::EdgeList;

    /// 0 -ww-> 1 -wr-> 2 -rw-> 0: one component over data, none over
    /// ww ∪ wr.
    fn triangle() -> Graph {
        let mut el = EdgeList::default();
        el.add(0, 1, Rels::WW);
        el.add(1, 2, Rels::WR);
        el.add(2, 0, Rels::RW);
        Graph::build(3, &el)
    }

    #[test]
    fn answers_as_tarjan_does_and_subsets_of_an_acyclic_set_without_a_pass() {
        let g = triangle();
        let mut c = Components::of_component(&g, Rels::DATA);
        assert!(c.cyclic(Rels::DATA));
        assert!(!c.known_acyclic(Rels::WW));
        assert!(!c.cyclic(Rels::WW | Rels::WR));
        assert!(c.known_acyclic(Rels::WW));
        assert!(c.known_acyclic(Rels::WR));
        assert!(!c.cyclic(Rels::WW));
        // No pass for a subset: still two entries (the whole and ww ∪ wr).
        assert_eq!(c.done.len(), 2);
        for rels in [Rels::DATA, Rels::WW | Rels::WR, Rels::RW | Rels::WW] {
            let t = tarjan(&g, rels);
            let m = c.get(rels);
            assert_eq!((&m.comp, &m.size), (&t.comp, &t.size), "{rels:?}");
        }
    }

    /// The implicit two-state components are Tarjan's over the built
    /// two-state graph, ids included, on a graph with every relation and
    /// both step sets the callers use.
    #[test]
    fn two_state_matches_tarjan_over_the_built_state_graph() {
        let mut el = EdgeList::default();
        let rels = [
            Rels::WW,
            Rels::WR,
            Rels::RW,
            Rels::PROCESS,
            Rels::RW | Rels::WR,
        ];
        // A pseudo-random graph of 40 nodes, 160 edges.
        let mut x = 7u32;
        for _ in 0..160 {
            x = x.wrapping_mul(1_103_515_245).wrapping_add(12_345);
            let (a, b) = ((x >> 8) % 40, (x >> 16) % 40);
            el.add(a, b, rels[(x >> 24) as usize % rels.len()]);
        }
        let g = Graph::build(40, &el);
        for step in [Rels::WW | Rels::WR, Rels::WW | Rels::WR | Rels::PROCESS] {
            let mut built = EdgeList::default();
            for v in 0..40u32 {
                for (y, r) in g.succ(v) {
                    if r.intersects(step) {
                        built.add(2 * v, 2 * y, Rels::WW);
                        built.add(2 * v + 1, 2 * y, Rels::WW);
                    }
                    if r.contains(Rel::Rw) {
                        built.add(2 * v, 2 * y + 1, Rels::WW);
                    }
                }
            }
            let want = tarjan(&Graph::build(80, &built), Rels::WW);
            let got = two_state(&g, step);
            assert_eq!((&got.comp, &got.size), (&want.comp, &want.size), "{step:?}");
            assert!(want.size.iter().any(|&s| s > 1), "the case has a cycle");
        }
    }
}
