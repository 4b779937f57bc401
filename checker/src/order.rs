//! Process (session) and real-time edges (Elle).
//!
//! Real-time edges are a transitive reduction computed in one pass over the
//! history, keeping a buffer of committed transactions not yet implied by a
//! later one: O(history length × concurrency).

use crate::explain::{ProcessStep, RealtimeStep, Step};
use crate::graph::{EdgeList, Edges};
use crate::rels::{Rel, Rels};
use crate::txn::{Status, Txns};
use store::History;

const NO: u32 = u32::MAX;

/// Process edges: between consecutive committed transactions of each process.
pub fn process_edges(txns: &Txns<'_>) -> EdgeList {
    let mut last: rustc_hash::FxHashMap<u64, u32> = rustc_hash::FxHashMap::default();
    let mut el = EdgeList::default();
    let mut by_pos: Vec<u32> = (0..txns.len() as u32).collect();
    by_pos.sort_unstable_by_key(|&t| txns.txns[t as usize].pos);
    for t in by_pos {
        let tx = &txns.txns[t as usize];
        if tx.status != Status::Ok {
            continue;
        }
        let Some(p) = txns.process(t) else { continue };
        if let Some(prev) = last.insert(p, t) {
            el.add(prev, t, Rels::PROCESS);
        }
    }
    el
}

/// The history's transaction events by position, 4 B a position: the txn
/// whose invocation or completion it is, the invocation bit and the
/// stands-alone bit on top (so txn ids stay below 2³⁰ — 48 GB of `Txns`),
/// [`NO`] for other ops.
pub(crate) struct Events(Vec<u32>);

/// The invocation bit of an [`Events`] slot.
const INV: u32 = 1 << 31;
/// An invocation that stands for its transaction (it has no completion of
/// its own: `Txn::pos == Txn::inv`).
const ALONE: u32 = 1 << 30;

impl Events {
    /// Per position: `(txn, is_invocation)`, txn [`NO`] for other ops.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (u32, bool)> + '_ {
        self.with_alone().map(|(t, inv, _)| (t, inv))
    }

    /// The transaction invoked at position `pos`, if an invocation is there.
    fn invocation_at(&self, pos: usize) -> Option<u32> {
        let (t, inv, _) = decode(*self.0.get(pos)?);
        inv.then_some(t)
    }

    /// Per position: `(txn, is_invocation, stands_alone)`, txn [`NO`] for
    /// other ops — without reading the transactions themselves.
    fn with_alone(&self) -> impl Iterator<Item = (u32, bool, bool)> + '_ {
        self.0.iter().map(|&e| decode(e))
    }
}

/// An [`Events`] slot as `(txn, is_invocation, stands_alone)`: the one
/// reading of its bits.
#[inline]
fn decode(e: u32) -> (u32, bool, bool) {
    match e {
        NO => (NO, false, false),
        e => (e & !(INV | ALONE), e & INV != 0, e & ALONE != 0),
    }
}

/// The events of a history of `history_len` ops.
pub(crate) fn events(txns: &Txns<'_>, history_len: usize) -> Events {
    let mut slot = vec![NO; history_len];
    for (t, tx) in txns.txns.iter().enumerate() {
        if tx.pos != tx.inv {
            slot[tx.inv as usize] = t as u32 | INV;
            slot[tx.pos as usize] = t as u32;
        } else {
            slot[tx.inv as usize] = t as u32 | INV | ALONE;
        }
    }
    Events(slot)
}

/// Real-time edges (transitive reduction): `a → b` when `a` committed before
/// `b` was invoked. Only committed transactions are sources; any transaction
/// can be a target (aborted ones are skipped: they have no other edges).
pub fn realtime_edges(txns: &Txns<'_>, history: &History) -> EdgeList {
    EdgeList::of(&*realtime(txns, history))
}

/// [`realtime_edges`] as a source that yields them on each call, for a
/// graph built without holding them.
pub fn realtime<'a>(txns: &'a Txns<'_>, history: &History) -> Box<dyn Edges + 'a> {
    if !history.has_realtime_order() {
        // No clock (histories of PolySI, dbcop, …): the one real-time order
        // known is each session's own, so op positions across sessions must
        // not become edges.
        let mut el = process_edges(txns);
        el.edges.iter_mut().for_each(|e| e.2 = Rels::REALTIME);
        return Box::new(el);
    }
    Box::new(Realtime {
        txns,
        slot: events(txns, history.len()),
    })
}

/// The real-time reduction over the history's events (from [`events`]).
struct Realtime<'a, 'h> {
    txns: &'a Txns<'h>,
    slot: Events,
}

impl Edges for Realtime<'_, '_> {
    fn each(&self, add: &mut dyn FnMut(u32, u32, Rels)) {
        let txns = self.txns;
        // Buffer of (insertion sequence, txn). An entry present when a txn was
        // invoked got an edge into it, so it is implied once that txn commits.
        let mut buffer: Vec<(u32, u32)> = Vec::new();
        let mut inv_seq: Vec<u32> = vec![0; txns.len()];
        // Statuses from `Txns::status` (1 B a txn), not the history-sized
        // `Txn`s, which events visit out of order (a cache miss each).
        for (pos, (t, is_inv, alone)) in self.slot.with_alone().enumerate() {
            if t == NO {
                continue;
            }
            let seq = pos as u32;
            let status = txns.status(t);
            if is_inv {
                if status != Status::Fail {
                    for &(_, b) in &buffer {
                        add(b, t, Rels::REALTIME);
                    }
                }
                inv_seq[t as usize] = seq;
                if !alone {
                    continue;
                }
            }
            if status == Status::Ok {
                let s = inv_seq[t as usize];
                buffer.retain(|&(ins, _)| ins >= s);
                buffer.push((seq, t));
            }
        }
    }
}

/// Real time as a rule of Kahn's order instead of edges
/// ([`crate::graph::kahn`]): a transaction other than a failed one may
/// leave only once every transaction that committed before its invocation
/// has left — the order [`realtime`]'s edges give, without them. `None`
/// when the history has no clock (its real time is each session's order:
/// [`realtime`]'s edges, few).
pub fn realtime_gate<'a>(txns: &'a Txns<'a>, history: &History) -> Option<RealtimeGate<'a>> {
    history.has_realtime_order().then(|| RealtimeGate {
        txns,
        slot: events(txns, history.len()),
        gone: vec![false; txns.len()],
        first: 0,
        scan: 0,
    })
}

/// See [`realtime_gate`]. Transactions are numbered in the order of the op
/// that stands for them (their completion, if they have one), so the
/// committed ones in id order are in commit order: the earliest commit
/// whose transaction has not left is the lowest such id, and every
/// invocation before it may pass.
pub struct RealtimeGate<'a> {
    txns: &'a Txns<'a>,
    slot: Events,
    /// Committed transactions that left.
    gone: Vec<bool>,
    /// The lowest committed transaction that has not left (or beyond).
    first: usize,
    /// The next position whose invocation has not passed.
    scan: usize,
}

impl RealtimeGate<'_> {
    /// Whether real time orders any two transactions (the graph would
    /// have a real-time edge).
    pub fn any_edge(&self) -> bool {
        let txns = self.txns;
        let Some(first) = (0..txns.len() as u32).find(|&t| txns.status(t) == Status::Ok) else {
            return false;
        };
        let commit = txns.txns[first as usize].pos as usize;
        (commit + 1..self.slot.0.len())
            .filter_map(|pos| self.slot.invocation_at(pos))
            .any(|t| txns.status(t) != Status::Fail)
    }

    /// Passes the invocations up to the earliest commit not left.
    fn advance(&mut self, pass: &mut dyn FnMut(u32)) {
        let txns = self.txns;
        let n = txns.len();
        while self.first < n
            && (txns.status(self.first as u32) != Status::Ok || self.gone[self.first])
        {
            self.first += 1;
        }
        let until = txns
            .txns
            .get(self.first)
            .map_or(usize::MAX, |t| t.pos as usize);
        while self.scan < self.slot.0.len() && self.scan <= until {
            if let Some(t) = self.slot.invocation_at(self.scan)
                && txns.status(t) != Status::Fail
            {
                pass(t);
            }
            self.scan += 1;
        }
    }
}

impl crate::graph::kahn::Gate for RealtimeGate<'_> {
    /// Failed transactions (no real-time edge into them) at once, then
    /// the invocations before the first commit.
    fn open(&mut self, pass: &mut dyn FnMut(u32)) {
        for t in 0..self.txns.len() as u32 {
            if self.txns.status(t) == Status::Fail {
                pass(t);
            }
        }
        self.advance(pass);
    }

    fn left(&mut self, u: u32, pass: &mut dyn FnMut(u32)) {
        if self.txns.status(u) == Status::Ok {
            self.gone[u as usize] = true;
            if u as usize == self.first {
                self.advance(pass);
            }
        }
    }
}

/// Explains a process or realtime step.
pub fn explain(txns: &Txns<'_>, history: &History, a: u32, b: u32, rel: Rel) -> Option<Step> {
    let ta = &txns.txns[a as usize];
    let tb = &txns.txns[b as usize];
    let (from, to) = (
        history.index(ta.pos as usize),
        history.index(tb.pos as usize),
    );
    match rel {
        Rel::Process => Some(Step::Process(ProcessStep {
            from,
            to,
            process: txns.process(a),
        })),
        Rel::Realtime => {
            let (ac, bi) = (ta.pos as usize, tb.inv as usize);
            Some(Step::Realtime(RealtimeStep {
                from,
                to,
                ops: Some((history.index(ac), history.index(bi))),
                dt_ns: match (history.time_ns(ac), history.time_ns(bi)) {
                    (Some(x), Some(y)) => Some(y - x),
                    _ => None,
                },
            }))
        }
        _ => None,
    }
}

#[cfg(test)]
#[allow(clippy::expect_used)]
mod tests {
    use super::*;
    use store::OpType::{Fail, Info, Invoke, Ok};
    use store::{Key, MicroOp, Op, OpType, Val};

    fn op(i: u64, t: OpType, p: u64) -> Op {
        // The same micro-ops for an invocation and its completion.
        Op::txn(
            i,
            t,
            p,
            vec![MicroOp::Append(Key::int(1), Val::int(p as i64))],
        )
    }

    /// A history of `(type, process)` steps, indexed in order.
    fn history(steps: &[(OpType, u64)]) -> History {
        let ops = steps
            .iter()
            .enumerate()
            .map(|(i, &(t, p))| op(i as u64, t, p))
            .collect();
        let h = History::new(ops).unwrap_or_default();
        assert!(!h.is_empty());
        h
    }

    fn edges(el: &EdgeList) -> Vec<(u32, u32)> {
        let mut v: Vec<(u32, u32)> = el.edges.iter().map(|e| (e.0, e.1)).collect();
        v.sort_unstable();
        v
    }

    #[test]
    fn realtime_is_a_transitive_reduction() {
        // T0 then T1 then T2, one at a time: only T0→T1 and T1→T2.
        let h = history(&[
            (Invoke, 0),
            (Ok, 0),
            (Invoke, 1),
            (Ok, 1),
            (Invoke, 2),
            (Ok, 2),
        ]);
        let t = Txns::new(&h);
        assert_eq!(edges(&realtime_edges(&t, &h)), vec![(0, 1), (1, 2)]);
        assert_eq!(edges(&process_edges(&t)), Vec::<(u32, u32)>::new());
    }

    #[test]
    fn concurrent_ops_get_no_edge_and_info_is_only_a_sink() {
        // T0 ‖ T1 (overlapping); both precede T2; T3 crashed (info) after T2.
        let h = history(&[
            (Invoke, 0),
            (Invoke, 1),
            (Ok, 0),
            (Ok, 1),
            (Invoke, 0),
            (Info, 0),
            (Invoke, 2),
            (Ok, 2),
        ]);
        let t = Txns::new(&h);
        // txns by completion: 0 = T0, 1 = T1, 2 = info, 3 = T2.
        assert_eq!(
            edges(&realtime_edges(&t, &h)),
            vec![(0, 2), (0, 3), (1, 2), (1, 3)]
        );
        assert_eq!(edges(&process_edges(&t)), Vec::<(u32, u32)>::new());
    }

    #[test]
    fn without_a_clock_only_session_order_is_realtime() {
        // Sessions 0 and 1 laid out one txn after another: op positions
        // would order every txn, but the history has no clock.
        let h = history(&[
            (Invoke, 0),
            (Ok, 0),
            (Invoke, 1),
            (Ok, 1),
            (Invoke, 0),
            (Ok, 0),
        ])
        .with_session_order_only(true);
        let t = Txns::new(&h);
        let el = realtime_edges(&t, &h);
        assert_eq!(edges(&el), vec![(0, 2)]);
        assert!(el.edges.iter().all(|e| e.2 == Rels::REALTIME));
    }

    /// Real time as Kahn's gate leaves the nodes real time as edges
    /// leaves, and says whether there is a real-time edge, on random
    /// histories of four processes (crashed, failed and never-completed
    /// transactions among them, and histories of completions alone) with
    /// random data edges, acyclic and not.
    #[test]
    fn the_gate_orders_as_the_edges_do() {
        use crate::graph::Graph;
        use crate::graph::kahn::{Successors, left_by_kahn};
        let mut x = 7u64;
        let mut next = |m: u64| {
            x = x
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (x >> 33) % m
        };
        let (mut cyclic, mut acyclic) = (0, 0);
        for round in 0..3000 {
            let mut open = [false; 4];
            let mut steps = Vec::new();
            for _ in 0..2 + next(14) {
                let p = next(4) as usize;
                let t = if round % 5 == 0 {
                    Ok
                } else if open[p] {
                    [Ok, Ok, Info, Fail][next(4) as usize]
                } else {
                    Invoke
                };
                open[p] = t == Invoke;
                steps.push((t, p as u64));
            }
            let ops = steps
                .iter()
                .enumerate()
                .map(|(i, &(t, p))| op(i as u64, t, p))
                .collect();
            let Result::Ok(h) = History::new(ops) else {
                continue;
            };
            let txns = Txns::new(&h);
            let n = txns.len();
            if n == 0 {
                continue;
            }
            let mut data = EdgeList::default();
            for _ in 0..next(2 * n as u64) {
                data.add(next(n as u64) as u32, next(n as u64) as u32, Rels::WW);
            }
            let rt = realtime_edges(&txns, &h);
            let graph = Graph::from_sources(n, &[&data, &rt]);
            let want = left_by_kahn(&graph, Rels::DATA | Rels::REALTIME);
            let mut gate = realtime_gate(&txns, &h).expect("a history with a clock has a gate");
            assert_eq!(gate.any_edge(), !rt.edges.is_empty(), "{steps:?}");
            let got = Successors::of(n, &[&data], false).left_by_kahn(&mut gate);
            assert_eq!(got, want, "{steps:?} {:?}", data.edges);
            match want {
                Some(_) => cyclic += 1,
                None => acyclic += 1,
            }
        }
        assert!(cyclic > 300 && acyclic > 300, "{cyclic} {acyclic}");
    }

    #[test]
    fn process_edges_link_consecutive_committed_txns() {
        let h = history(&[
            (Invoke, 0),
            (Ok, 0),
            (Invoke, 0),
            (Fail, 0),
            (Invoke, 0),
            (Ok, 0),
        ]);
        let t = Txns::new(&h);
        assert_eq!(edges(&process_edges(&t)), vec![(0, 2)]);
    }
}
