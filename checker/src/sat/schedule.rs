//! The attempt schedule of the complete check: the search takes the
//! current topological order as its phase, so each attempt starts from a
//! chosen order and gives up after a number of conflicts (see [`solve`]).

use super::dag::{Dag, Exhausted};
use super::polygraph::Poly;
use super::solve::{Solved, Solver, Stats, run};
use crate::budget::Budget;

/// Runs the whole pipeline; on `Sat` the returned `Dag` holds the witness.
///
/// The search takes the current topological order as its phase, so the
/// initial order matters. SI has two candidates: starts at invocations (a
/// snapshot database's real starts) and starts just before commits (a
/// serial database's). The one fewer known edges contradict goes first,
/// with a bounded number of conflicts, then the other. Each later attempt
/// starts from scratch but from the order the previous one ended in
/// (phase saving: that order already satisfies most constraints), with a
/// conflict bound that grows by half each time, so some attempt is
/// unbounded in effect and the search stays complete; the [`Budget`]
/// bounds the whole. `seed`, an order of `poly`'s nodes (the strong-session
/// attempt's), goes before both.
pub(crate) fn solve(poly: &Poly, budget: &Budget, seed: Option<Vec<u64>>) -> (Solved, Dag, Stats) {
    let base = Stats {
        txns: poly.global.len(),
        known_edges: poly.known.len(),
        constraints: poly.constraint_count(),
        ..Stats::default()
    };
    let mut limit = 1000 + poly.global.len() as u64 / 10;
    // Start with the order that more known edges agree with (a serial
    // database's reads often see writes committed after their invocation).
    let backward = |hint: &[u64]| {
        poly.known
            .iter()
            .filter(|f| {
                let (a, b) = poly.ends(f);
                hint[a as usize] > hint[b as usize]
            })
            .count()
    };
    let (first, second): (&[u64], &[u64]) =
        if poly.split && backward(&poly.hint_serial) < backward(&poly.hint) {
            (&poly.hint_serial, &poly.hint)
        } else {
            (&poly.hint, &poly.hint_serial)
        };
    let seeded = seed.is_some();
    let mut hint: Vec<u64> = seed.unwrap_or_else(|| first.to_vec());
    let mut restarts = 0u32;
    let mut total = 0u64;
    loop {
        let mut s = Solver::new(poly, Dag::new(&hint), budget, limit);
        s.stats = Stats { restarts, ..base };
        s.stats.conflicts = total;
        s.max_conflicts = total.saturating_add(limit);
        let r = run(&mut s);
        let out = match r {
            Ok(Ok(())) => Solved::Sat,
            Ok(Err(c)) => Solved::Unsat(c),
            Err(Exhausted) if s.gave_up => {
                restarts += 1;
                total = s.stats.conflicts;
                // After a seed the first candidate; the other SI candidate
                // once; then the order reached.
                let k = restarts - u32::from(seeded);
                hint = if seeded && restarts == 1 {
                    first.to_vec()
                } else if k == 1 && poly.split && second != first {
                    second.to_vec()
                } else {
                    order(&s.dag, poly)
                };
                if k > 1 {
                    limit = limit.saturating_add(limit / 2);
                }
                continue;
            }
            Err(Exhausted) => Solved::Unknown,
        };
        return (out, s.dag, s.stats);
    }
}

/// The current topological order of `dag` as a hint.
fn order(dag: &Dag, poly: &Poly) -> Vec<u64> {
    (0..poly.nodes() as u32)
        .map(|v| u64::from(dag.pos(v)))
        .collect()
}

/// One attempt from `poly`'s own hint, giving up after `max_conflicts`
/// conflicts: `Err` with the order it reached when it gave up or the
/// budget ran out.
pub(crate) fn attempt(
    poly: &Poly,
    budget: &Budget,
    max_conflicts: u64,
) -> Result<(Solved, Dag, Stats), Vec<u64>> {
    let mut s = Solver::new(poly, Dag::new(&poly.hint), budget, max_conflicts);
    s.stats = Stats {
        txns: poly.global.len(),
        known_edges: poly.known.len(),
        constraints: poly.constraint_count(),
        ..Stats::default()
    };
    match run(&mut s) {
        Ok(Ok(())) => Ok((Solved::Sat, s.dag, s.stats)),
        Ok(Err(c)) => Ok((Solved::Unsat(c), s.dag, s.stats)),
        Err(Exhausted) => Err(order(&s.dag, poly)),
    }
}
