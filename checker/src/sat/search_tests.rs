//! The search alone (no pruning, one component) against the whole
//! pipeline, whose verdicts `tests/sat.rs` checks against brute force: on
//! small random register histories (reads of random writes, so many are
//! cyclic) both must say the same, so decisions, conflicts and backjumps
//! are exercised on their own, not only on what pruning left over.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use super::Level;
use super::dag::{Dag, EdgeRec, Why};
use super::polygraph::Poly;
use super::schedule::solve;
use super::solve::{Solved, Solver};
use crate::budget::Budget;
use crate::txn::Txns;
use std::fmt::Write as _;
use store::import::{PeerFormat, read_peer_str};

struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) % n.max(1)
    }
}

/// Sessions × txns × ops over `keys` keys; each write a fresh value, each
/// read one of the key's values (any writer, or the initial 0).
fn history(rng: &mut Rng, sessions: u64, txns: u64, ops: u64, keys: u64) -> String {
    let mut written: Vec<Vec<u64>> = vec![vec![0]; keys as usize];
    let mut plan = Vec::new();
    let mut next = 1;
    for s in 0..sessions {
        for t in 0..txns {
            for _ in 0..ops {
                let k = rng.below(keys);
                if rng.below(2) == 0 {
                    plan.push((true, k, next, s, s * txns + t));
                    written[k as usize].push(next);
                    next += 1;
                } else {
                    plan.push((false, k, 0, s, s * txns + t));
                }
            }
        }
    }
    let mut out = String::new();
    for (w, k, v, s, t) in plan {
        if w {
            let _ = writeln!(out, "w({k},{v},{s},{t})");
        } else {
            let vs = &written[k as usize];
            let v = vs[rng.below(vs.len() as u64) as usize];
            let _ = writeln!(out, "r({k},{v},{s},{t})");
        }
    }
    out
}

/// Known edges in, then [`Solver::search`] over every constraint: the
/// verdict and the conflicts met.
fn search_only(poly: &Poly) -> (bool, u64) {
    let budget = Budget::unlimited();
    let mut s = Solver::new(poly, Dag::new(&poly.hint), &budget, u64::MAX);
    for f in &poly.known {
        let (from, to) = poly.ends(f);
        let e = EdgeRec {
            from,
            to,
            fact: *f,
            why: Why::Known,
        };
        if s.dag.add(e, &budget).unwrap().is_err() {
            return (false, 0);
        }
    }
    let all: Vec<u32> = (0..poly.constraint_count() as u32).collect();
    let ok = s.search(all).unwrap().is_ok();
    (ok, s.stats.conflicts)
}

#[test]
fn search_alone_agrees_with_the_pipeline_on_random_histories() {
    let mut rng = Rng(7);
    let (mut sat, mut unsat, mut conflicts) = (0, 0, 0);
    for round in 0..600 {
        let (sessions, txns, ops, keys) = (2 + round % 3, 2 + round % 4, 3, 2 + round % 3);
        let text = history(&mut rng, sessions, txns, ops, keys);
        let h = read_peer_str(&text, PeerFormat::Text).unwrap();
        let tx = Txns::new(&h);
        for level in [
            Level::Serializable,
            Level::SnapshotIsolation,
            Level::StrongSessionSnapshotIsolation,
        ] {
            let poly = Poly::build(&tx, &h, level.split(), false, level.process());
            let whole = match solve(&poly, &Budget::unlimited(), None).0 {
                Solved::Sat => true,
                Solved::Unsat(_) => false,
                Solved::Unknown => panic!("unlimited budget"),
            };
            let (alone, met) = search_only(&poly);
            conflicts += met;
            assert_eq!(alone, whole, "{level:?}\n{text}");
            if whole {
                sat += 1;
            } else {
                unsat += 1;
            }
        }
    }
    // Both verdicts must be well represented for the agreement to mean
    // anything, and the search must have backtracked often.
    assert!(
        sat > 100 && unsat > 100 && conflicts > 100,
        "sat {sat} unsat {unsat} conflicts {conflicts}"
    );
}
