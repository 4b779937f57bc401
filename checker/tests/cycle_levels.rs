//! The cycle search with the levels of its components (`sccs::Levels`)
//! or their exact reachability (`sccs::Reach`):
//! the candidates they skip close no cycle, so the cycle reported is the
//! one found without them.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use checker::anomaly::{AnomalyType, Variant};
use checker::budget::Budget;
use checker::cycle::search;
use checker::graph::{EdgeList, Graph, tarjan};
use checker::rels::{Rel, Rels};

/// Two `ww` chains A (0..m) and B (m..2m), 100 `rw` edges A i → B m + i
/// that the topological order admits but no path closes, `rw` edges
/// joining the chains into one component, and one `G-single` cycle, A 140
/// -rw-> A 10 -ww-> … A 140, whose candidate comes after them all: it is
/// the one found (a filter that ruled out a reachable pair would lose it).
/// At m = 150 (300 components over `ww`) the exact reachability rows
/// (`sccs::Reach`) skip the candidates once the fruitless searches cost
/// as much as they do; at m = 1,100 (2,200, more than their limit) the
/// levels, computed after 64 of them, rule out the last 36.
#[test]
fn the_search_finds_the_same_cycle_after_the_levels_prune_candidates() {
    for m in [150, 1_100] {
        the_same_cycle_with_chains_of(m);
    }
}

fn the_same_cycle_with_chains_of(m: u32) {
    let mut el = EdgeList::default();
    for i in 0..m - 1 {
        el.add(i, i + 1, Rels::WW);
        el.add(m + i, m + 1 + i, Rels::WW);
    }
    for i in 0..100 {
        el.add(i, m + i, Rels::RW);
    }
    el.add(m - 1, m, Rels::RW);
    el.add(2 * m - 1, 0, Rels::RW);
    el.add(140, 10, Rels::RW);
    let g = Graph::build(2 * m as usize, &el);
    let sccs = tarjan(&g, Rels::DATA).nontrivial();
    assert_eq!(sccs.len(), 1);
    let wanted = [AnomalyType::GSingleItem].into_iter().collect();
    let budget = Budget::unlimited();
    let (cycles, timeouts) = search(&g, Rels::DATA, &sccs, &wanted, &[Variant::Plain], &budget);
    assert!(timeouts.is_empty());
    let mut want = vec![(140, Rel::Rw)];
    want.extend((10..140).map(|i| (i, Rel::Ww)));
    assert_eq!(cycles.len(), 1, "m = {m}");
    assert_eq!(cycles[0].kind, AnomalyType::GSingleItem);
    assert_eq!(cycles[0].steps, want, "m = {m}");
}
