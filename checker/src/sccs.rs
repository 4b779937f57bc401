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
    /// (step relations, the components of the two-state graph over them):
    /// the `G-nonadjacent` search and the `PL-SI` cycle-exists pass both
    /// ask for `ww ∪ wr`'s (one pass each before).
    two: Vec<(Rels, Sccs)>,
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
            two: Vec::new(),
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

impl Components<'_> {
    /// The components of the two-state graph over `step` ([`two_state`]),
    /// computed once.
    pub fn two_state(&mut self, step: Rels) -> &Sccs {
        let i = match self.two.iter().position(|(r, _)| *r == step) {
            Some(i) => i,
            None => {
                self.two.push((step, two_state(self.graph, step)));
                self.two.len() - 1
            }
        };
        &self.two[i].1
    }
}

/// Longest-path levels of the condensation of a graph over some relations
/// (its components as [`tarjan`] numbers them): `depth` is the longest path
/// from a source component, `height` the longest path to a sink one. A
/// path from component `a` to a different component `b` makes
/// `depth[b] > depth[a]` and `height[a] > height[b]` (each step between
/// components adds one to both), so two components failing either cannot
/// reach one another: a necessary condition for reachability, linear to
/// compute, and much sharper than the topological order alone (which
/// orders components that share no path).
pub struct Levels {
    /// (depth, height) per component, side by side: a candidate's test
    /// reads both of two components.
    of: Vec<(u32, u32)>,
}

impl Levels {
    /// The levels of `comps`, Tarjan's components of `g` over `rels`;
    /// `scratch` (grown to a node and a component each, its contents
    /// left undefined) holds the nodes' order, so that only the levels
    /// themselves are allocated.
    pub fn new(g: &Graph, rels: Rels, comps: &Sccs, scratch: &mut Vec<u32>) -> Levels {
        let nc = comps.size.len();
        let order = by_component(comps, scratch);
        // Each edge between components, from its source's component.
        let steps = |x: u32| {
            let cx = comps.comp[x as usize];
            g.range(x)
                .filter(move |&e| g.rels_at(e).intersects(rels))
                .map(move |e| comps.comp[g.target(e) as usize])
                .filter(move |&cy| cy != cx)
        };
        let mut of = vec![(0u32, 0u32); nc];
        // Ascending ids: a successor's height is final before it is read.
        for &x in order.iter() {
            let cx = comps.comp[x as usize] as usize;
            for cy in steps(x) {
                of[cx].1 = of[cx].1.max(of[cy as usize].1 + 1);
            }
        }
        // Descending ids: a component's depth is final before it is pushed.
        for &x in order.iter().rev() {
            let d = of[comps.comp[x as usize] as usize].0 + 1;
            for cy in steps(x) {
                of[cy as usize].0 = of[cy as usize].0.max(d);
            }
        }
        Levels { of }
    }

    /// Whether component `a` may reach component `b` (false: it cannot).
    pub fn may_reach(&self, a: u32, b: u32) -> bool {
        let ((da, ha), (db, hb)) = (self.of[a as usize], self.of[b as usize]);
        a == b || (da < db && ha > hb)
    }
}

/// `comps`' nodes by component id (a counting sort), in `scratch`
/// (grown to a node and a component each, its contents left undefined):
/// Tarjan's ids put a component after every component it reaches.
fn by_component<'s>(comps: &Sccs, scratch: &'s mut Vec<u32>) -> &'s [u32] {
    let (n, nc) = (comps.comp.len(), comps.size.len());
    if scratch.len() < n + nc {
        scratch.resize(n + nc, 0);
    }
    let (order, at) = scratch.split_at_mut(n);
    let mut sum = 0u32;
    for (a, &s) in at.iter_mut().zip(&comps.size) {
        *a = sum;
        sum += s;
    }
    for (x, &c) in comps.comp.iter().enumerate() {
        order[at[c as usize] as usize] = x as u32;
        at[c as usize] += 1;
    }
    order
}

/// Exact reachability between the components of a graph over some
/// relations (Tarjan's, as for [`Levels`]): one bit row per component,
/// the components it reaches (itself included). A row is the union of its
/// successors' rows, each final before it is read (ascending ids), and
/// holds no bit above its own id, so a union reads only that prefix.
///
/// What tells a `G-single` class's search that a candidate's target
/// cannot reach its source over the other relations: for a component of
/// at most [`Reach::MAX_COMPONENTS`] components, this (exact), computed
/// once the fruitless searches visited about as many edges as it reads
/// (the component's edges, once more per eight words of a row); for a
/// larger one, [`Levels`] (a necessary condition, two passes over the
/// edges) after 64 fruitless searches (the cycle search's
/// `LEVELS_AFTER`). Either way a search that finds its cycle among the
/// first candidates never pays for it.
pub struct Reach {
    /// Words a row.
    words: usize,
    rows: Vec<u64>,
}

impl Reach {
    /// The most components whose rows are computed: 512 KB of rows.
    pub const MAX_COMPONENTS: usize = 2048;

    /// The reachability of `comps`, Tarjan's components of `g` over
    /// `rels` (at most [`Reach::MAX_COMPONENTS`] of them); `scratch` as
    /// for [`Levels::new`].
    pub fn new(g: &Graph, rels: Rels, comps: &Sccs, scratch: &mut Vec<u32>) -> Reach {
        let nc = comps.size.len();
        let words = nc.div_ceil(64);
        let mut rows = vec![0u64; nc * words];
        for &x in by_component(comps, scratch).iter() {
            let cx = comps.comp[x as usize] as usize;
            let (done, row) = rows.split_at_mut(cx * words);
            row[cx / 64] |= 1 << (cx % 64);
            for e in g.range(x) {
                if !g.rels_at(e).intersects(rels) {
                    continue;
                }
                let cy = comps.comp[g.target(e) as usize] as usize;
                if cy == cx {
                    continue;
                }
                // Tarjan's ids: a successor component's id is lower.
                let from = &done[cy * words..cy * words + cy / 64 + 1];
                for (d, s) in row.iter_mut().zip(from) {
                    *d |= *s;
                }
            }
        }
        Reach { words, rows }
    }

    /// Whether component `a` reaches component `b`.
    pub fn reaches(&self, a: u32, b: u32) -> bool {
        let (a, b) = (a as usize, b as usize);
        self.rows[a * self.words + b / 64] >> (b % 64) & 1 != 0
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

    /// A pseudo-random graph of `n` nodes and `edges` edges from `seed`,
    /// each edge of one of `kinds`.
    fn random_graph(n: u32, edges: usize, seed: u32, kinds: &[Rels]) -> Graph {
        let mut el = EdgeList::default();
        let mut x = seed;
        for _ in 0..edges {
            x = x.wrapping_mul(1_103_515_245).wrapping_add(12_345);
            let (a, b) = ((x >> 8) % n, (x >> 16) % n);
            el.add(a, b, kinds[(x >> 24) as usize % kinds.len()]);
        }
        Graph::build(n as usize, &el)
    }

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

    /// The levels never rule out a path that exists (checked against a
    /// search from every node, on a random graph with cycles, for two
    /// relation sets), and they do rule out pairs the topological order
    /// alone admits; the reachability rows say exactly which components
    /// reach which (60 and 130 nodes: rows of one and of three words).
    #[test]
    fn levels_never_rule_out_a_reachable_pair_and_reach_is_exact() {
        for (n, edges) in [(60u32, 90), (130, 190)] {
            levels_and_reach_against_a_search(n, edges);
        }
    }

    fn levels_and_reach_against_a_search(n: u32, edges: usize) {
        let kinds = [Rels::WW, Rels::WR, Rels::RW, Rels::WW | Rels::RW];
        let g = random_graph(n, edges, 11, &kinds);
        for rels in [Rels::WW | Rels::WR, Rels::DATA] {
            let c = tarjan(&g, rels);
            let l = Levels::new(&g, rels, &c, &mut Vec::new());
            let r = Reach::new(&g, rels, &c, &mut Vec::new());
            let (mut sharper, mut cyclic) = (0, false);
            for a in 0..n {
                let mut seen = vec![false; n as usize];
                let mut todo = vec![a];
                while let Some(v) = todo.pop() {
                    for (y, r) in g.succ(v) {
                        if r.intersects(rels) && !seen[y as usize] {
                            seen[y as usize] = true;
                            todo.push(y);
                        }
                    }
                }
                cyclic |= seen[a as usize];
                for b in 0..n {
                    let (ca, cb) = (c.comp[a as usize], c.comp[b as usize]);
                    let exact = ca == cb || seen[b as usize];
                    assert_eq!(r.reaches(ca, cb), exact, "{rels:?}: {a} → {b}");
                    if seen[b as usize] {
                        assert!(l.may_reach(ca, cb), "{rels:?}: {a} reaches {b}");
                    } else if ca > cb && !l.may_reach(ca, cb) {
                        sharper += 1;
                    }
                }
            }
            assert!(sharper > 0, "{rels:?}: no pair ruled out beyond the order");
            assert!(
                cyclic,
                "{rels:?}: the case has a component of several nodes"
            );
        }
    }

    /// The implicit two-state components are Tarjan's over the built
    /// two-state graph, ids included, on a graph with every relation and
    /// both step sets the callers use.
    #[test]
    fn two_state_matches_tarjan_over_the_built_state_graph() {
        let rels = [
            Rels::WW,
            Rels::WR,
            Rels::RW,
            Rels::PROCESS,
            Rels::RW | Rels::WR,
        ];
        let g = random_graph(40, 160, 7, &rels);
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
