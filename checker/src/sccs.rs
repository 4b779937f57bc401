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

use crate::graph::{Graph, Sccs, tarjan};
use crate::rels::Rels;

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
}
