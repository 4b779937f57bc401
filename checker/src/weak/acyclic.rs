//! The weak check's fast path: whether the commit-order graph of a level —
//! session order, write-read and the inferred edges up to the level — has
//! no cycle, decided by Kahn's algorithm straight from the observations.
//!
//! Key decision: every history that satisfies the level takes this path,
//! so it builds nothing the report needs: no edge list with explanations
//! (20 B an edge), no graph with relation sets, no Tarjan arrays — one
//! adjacency of `u32` targets and an in-degree per transaction. At 1M
//! list-append transactions that keeps ~60 MB off the check's peak. Only
//! when it finds a cycle (or a read of the initial state that a visible
//! writer overwrote) does `report` build the explained edges.

use super::observe::{INIT, Observations};
use super::saturate::{Cat, Inferred, kahn_order};

/// Calls `add(from, to)` for each edge of session order and write-read
/// (self-loops left out: neither makes one).
fn each_base_edge(obs: &Observations, add: &mut impl FnMut(u32, u32)) {
    for s in &obs.sessions {
        for w in s.windows(2) {
            add(w[0], w[1]);
        }
    }
    for t in 0..obs.n as u32 {
        for r in obs.reads(t) {
            if r.writer != INIT && r.writer != t {
                add(r.writer, t);
            }
        }
    }
}

/// The inferred edges a level's graph holds beside session order and
/// write-read.
trait Extra {
    /// Calls `add(from, to)` for each (none into the initial state, no
    /// self-loop).
    fn each(&self, add: &mut impl FnMut(u32, u32));
}

/// Those up to a category: the edges into the initial state go through no
/// transaction and are left out.
impl Extra for (&[Inferred], Cat) {
    fn each(&self, add: &mut impl FnMut(u32, u32)) {
        for e in self.0 {
            if e.to != INIT && e.cat <= self.1 && e.from != e.to {
                add(e.from, e.to);
            }
        }
    }
}

/// Edges' ends ([`super::saturate::Ends`]), all of them.
impl Extra for &[(u32, u32)] {
    fn each(&self, add: &mut impl FnMut(u32, u32)) {
        for &(a, b) in *self {
            add(a, b);
        }
    }
}

/// Whether the graph of session order, write-read and `inferred` edges up
/// to `max` over `obs.n` transactions has no cycle.
pub fn acyclic(obs: &Observations, inferred: &[Inferred], max: Cat) -> bool {
    acyclic_with(obs, &(inferred, max))
}

/// Whether the graph of session order, write-read and the edges `pairs`
/// (`(from, to)` between transactions) has no cycle.
pub fn acyclic_pairs(obs: &Observations, pairs: &[(u32, u32)]) -> bool {
    acyclic_with(obs, &pairs)
}

fn acyclic_with(obs: &Observations, extra: &impl Extra) -> bool {
    let n = obs.n;
    // Out-degrees, then the end of each node's successors; the fill moves
    // each back to its start, so `off[u]..off[u + 1]` after it (no cursor
    // array; a node's successors end up in reverse, which Kahn's count of
    // the nodes it orders does not see).
    let mut off = vec![0u32; n + 1];
    let mut indeg = vec![0u32; n];
    let mut count = |a: u32, b: u32| {
        off[a as usize] += 1;
        indeg[b as usize] += 1;
    };
    each_base_edge(obs, &mut count);
    extra.each(&mut count);
    for i in 1..=n {
        off[i] += off[i - 1];
    }
    let mut succ = vec![0u32; off[n] as usize];
    let mut fill = |a: u32, b: u32| {
        let slot = &mut off[a as usize];
        *slot -= 1;
        succ[*slot as usize] = b;
    };
    each_base_edge(obs, &mut fill);
    extra.each(&mut fill);
    // Every node leaves Kahn's order iff there is no cycle.
    kahn_order(&off, &succ, indeg).len() == n
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inf(from: u32, to: u32, cat: Cat) -> Inferred {
        Inferred {
            from,
            to,
            cat,
            reader: 0,
            key: 0,
        }
    }

    /// Three transactions, no reads, no sessions: only inferred edges.
    fn three() -> Observations {
        Observations::empty_for_test(3)
    }

    #[test]
    fn a_chain_is_acyclic_and_closing_it_is_not() {
        let obs = three();
        let chain = [inf(0, 1, Cat::Rc), inf(1, 2, Cat::RaWr)];
        assert!(acyclic(&obs, &chain, Cat::Cc));
        let ring = [chain[0], chain[1], inf(2, 0, Cat::RaSo)];
        assert!(!acyclic(&obs, &ring, Cat::RaSo));
        // The same edges by their ends alone.
        assert!(acyclic_pairs(&obs, &[(0, 1), (1, 2)]));
        assert!(!acyclic_pairs(&obs, &[(0, 1), (1, 2), (2, 0)]));
    }

    /// An edge above the level, or into the initial state, is not in the
    /// level's graph.
    #[test]
    fn edges_above_the_level_or_into_init_do_not_count() {
        let obs = three();
        let ring = [
            inf(0, 1, Cat::Rc),
            inf(1, 2, Cat::Rc),
            inf(2, 0, Cat::Cc),
            inf(2, INIT, Cat::Rc),
        ];
        assert!(acyclic(&obs, &ring, Cat::RaSo));
        assert!(!acyclic(&obs, &ring, Cat::Cc));
    }
}
