//! list-append's version order (Elle): the prefix rule — each key's
//! longest read, deduplicated, is its order of appends — plus the anomalies
//! that contradict or abuse that order (`incompatible-order`,
//! `dirty-update`), and the `ww`, `wr`, `rw` edges it implies, including for
//! appends no read observed, which come after the last observed element.
//!
//! What each read saw (garbage, aborted, intermediate, duplicate, future
//! elements) is not here: it comes from the observations
//! (`analysis::reads`).

use crate::anomaly::AnomalyType;
use crate::explain::{Anomaly, Evidence, Site, Step};
use crate::graph::{Edges, PARALLEL_FROM};
use crate::observe::{NO, Observations, Read, ReadFrom, Value, read_list};
use crate::rels::{Rel, Rels};
use crate::txn::{Status, Txns};
use crate::versions::VersionOrder;
use store::{History, Key, MicroOp, ReadValue, Val};

/// The prefix version order of every key.
pub struct ListAppend<'a, 'h> {
    obs: &'a Observations<'h>,
    /// Per write: its position in its key's deduplicated order, or `NO`.
    pos: Vec<u32>,
    /// Per key: start of its version order in `order` (`order_off[k]..order_off[k+1]`).
    order_off: Vec<usize>,
    /// Write ids in version order (`NO` for an element nobody appended).
    order: Vec<u32>,
}

impl<'a, 'h> ListAppend<'a, 'h> {
    /// The version orders: each key's longest read, deduplicated. A key
    /// with a single append and no non-empty read still has the order [v].
    pub fn new(txns: &Txns<'h>, obs: &'a Observations<'h>) -> ListAppend<'a, 'h> {
        let nkeys = txns.keys.len();
        let mut pos = vec![NO; obs.writes.len()];
        let mut appends_per_key: Vec<u32> = vec![0; nkeys];
        let mut single: Vec<u32> = vec![NO; nkeys];
        for (id, w) in obs.writes.iter().enumerate() {
            let k = w.key(txns) as usize;
            appends_per_key[k] += 1;
            single[k] = id as u32;
        }
        let mut order_off = Vec::with_capacity(nkeys + 1);
        let mut order: Vec<u32> = Vec::new();
        for k in 0..nkeys {
            order_off.push(order.len());
            let ids = obs.longest_ids(k as u32);
            if ids.is_empty() {
                if appends_per_key[k] == 1
                    && txns.txns[obs.write(single[k]).txn as usize].status != Status::Fail
                {
                    pos[single[k] as usize] = 0;
                    order.push(single[k]);
                }
                continue;
            }
            let base = order.len();
            for &id in ids {
                if id == NO {
                    order.push(NO);
                } else if pos[id as usize] == NO {
                    pos[id as usize] = (order.len() - base) as u32;
                    order.push(id);
                }
            }
        }
        order_off.push(order.len());
        ListAppend {
            obs,
            pos,
            order_off,
            order,
        }
    }

    /// `incompatible-order` (two committed reads of a key, neither a prefix
    /// of the other; one case per key) and `dirty-update` (an aborted
    /// append followed, through indeterminate ones, by a committed one).
    pub fn anomalies(&self, txns: &Txns<'h>, history: &History) -> Vec<Anomaly> {
        let opi = |t: u32| txns.op_index(history, t);
        let key = |k: u32| Key(txns.keys[k as usize].clone());
        let mut out = Vec::new();
        let mut reported = vec![false; txns.keys.len()];
        // Flags first: only a read that is no prefix needs its value.
        for r in &self.obs.reads {
            if r.prefix() || txns.txns[r.txn as usize].status != Status::Ok {
                continue;
            }
            let Value::List(l) = r.value(txns) else {
                continue;
            };
            let k = r.key(txns);
            if std::mem::replace(&mut reported[k as usize], true) {
                continue;
            }
            out.push(Anomaly {
                kind: AnomalyType::IncompatibleOrder,
                evidence: Evidence::IncompatibleOrder {
                    key: key(k),
                    values: [l.to_vec(), self.obs.longest[k as usize].to_vec()],
                },
            });
        }
        for k in 0..txns.keys.len() as u32 {
            let mut aborted: Option<u32> = None;
            for &id in self.order_of(k) {
                if id == NO {
                    continue;
                }
                let e = self.obs.write(id);
                match txns.status(e.txn) {
                    Status::Fail => aborted = aborted.or(Some(id)),
                    Status::Info => {}
                    Status::Ok => {
                        if let Some(a) = aborted.take() {
                            let ea = self.obs.write(a);
                            out.push(Anomaly {
                                kind: AnomalyType::DirtyUpdate,
                                evidence: Evidence::DirtyUpdate {
                                    key: key(k),
                                    values: [ea, e]
                                        .iter()
                                        .filter_map(|w| w.val(txns))
                                        .cloned()
                                        .collect(),
                                    txns: vec![opi(ea.txn), opi(e.txn)],
                                },
                            });
                        }
                    }
                }
            }
        }
        out
    }

    fn order_of(&self, k: u32) -> &[u32] {
        &self.order[self.order_off[k as usize]..self.order_off[k as usize + 1]]
    }

    /// The version a read whose last element was written by `from`
    /// observed: number of order positions up to and including it (0 = the
    /// initial state), or `NO` when that element is not in the order.
    fn version_from(&self, from: ReadFrom) -> u32 {
        match from {
            ReadFrom::Initial => 0,
            ReadFrom::Write(id) if self.pos[id as usize] != NO => self.pos[id as usize] + 1,
            _ => NO,
        }
    }

    /// [`ListAppend::version_from`] for a read of `r` from key `k`.
    fn version_of(&self, k: u32, r: &[Val]) -> u32 {
        self.version_from(match r.last() {
            None => ReadFrom::Initial,
            Some(v) => self
                .obs
                .write_of(k, v)
                .map_or(ReadFrom::Garbage, ReadFrom::Write),
        })
    }

    /// The element appended just before `id` in its key's order: `Some(NO)`
    /// for the initial state, `None` when unknown. Unobserved appends follow
    /// the last observed element.
    fn prev(&self, key: u32, id: u32) -> Option<u32> {
        let p = self.pos[id as usize];
        let ord = self.order_of(key);
        if p == NO {
            return Some(ord.last().copied().unwrap_or(NO)).filter(|&p| p != NO || ord.is_empty());
        }
        if p == 0 {
            return Some(NO);
        }
        let q = ord[p as usize - 1];
        (q != NO).then_some(q)
    }
}

/// list-append's data edges: the readers of each (key, version), grouped
/// once (a counting sort on the version's slot, readers in transaction
/// order within one); the edges are yielded from them on every call.
struct DataEdges<'s, 'a, 'h> {
    order: &'s ListAppend<'a, 'h>,
    txns: &'s Txns<'h>,
    /// Per key: the slot of its initial state (its versions follow).
    ver_base: Vec<usize>,
    /// Per slot: start of its readers in `readers`.
    roff: Vec<u32>,
    readers: Vec<u32>,
}

impl<'s, 'a, 'h> DataEdges<'s, 'a, 'h> {
    fn new(order: &'s ListAppend<'a, 'h>, txns: &'s Txns<'h>) -> Self {
        let nkeys = order.order_off.len() - 1;
        let mut ver_base = Vec::with_capacity(nkeys + 1);
        let mut total = 0usize;
        for k in 0..nkeys {
            ver_base.push(total);
            total += order.order_of(k as u32).len() + 1;
        }
        ver_base.push(total);
        let slot_of = |r: &Read| {
            let v = order.version_from(r.from());
            (v != NO).then(|| ver_base[r.key(txns) as usize] + v as usize)
        };
        let mut roff = vec![0u32; total + 1];
        for slot in order.obs.reads.iter().filter_map(slot_of) {
            roff[slot + 1] += 1;
        }
        for i in 0..total {
            roff[i + 1] += roff[i];
        }
        let mut readers = vec![0u32; roff[total] as usize];
        let mut next = roff.clone();
        for r in &order.obs.reads {
            if let Some(slot) = slot_of(r) {
                readers[next[slot] as usize] = r.txn;
                next[slot] += 1;
            }
        }
        DataEdges {
            order,
            txns,
            ver_base,
            roff,
            readers,
        }
    }

    /// The readers of version `v` of key `k`.
    fn readers_of(&self, k: u32, v: u32) -> &[u32] {
        let slot = self.ver_base[k as usize] + v as usize;
        &self.readers[self.roff[slot] as usize..self.roff[slot + 1] as usize]
    }
}

impl Edges for DataEdges<'_, '_, '_> {
    fn each(&self, add: &mut dyn FnMut(u32, u32, Rels)) {
        for part in 0..self.parts() {
            self.each_of(part, add);
        }
    }

    /// A big history's in two: the keys whose versions come first, then
    /// the others with the appends no read observed.
    fn parts(&self) -> usize {
        if self.txns.len() >= PARALLEL_FROM {
            2
        } else {
            1
        }
    }

    fn each_of(&self, part: usize, add: &mut dyn FnMut(u32, u32, Rels)) {
        let nkeys = self.ver_base.len() - 1;
        // The key where the second half of the versions starts.
        let half = self.ver_base[nkeys] / 2;
        let mid = match self.parts() {
            1 => nkeys,
            _ => self.ver_base[..nkeys].partition_point(|&b| b < half),
        };
        if part == 0 {
            self.keys_each(0..mid, add);
        }
        if part + 1 == self.parts() {
            self.keys_each(mid..nkeys, add);
            self.unobserved_each(add);
        }
    }
}

impl DataEdges<'_, '_, '_> {
    /// The `ww`, `wr`, `rw` edges of the observed versions of `keys`.
    fn keys_each(&self, keys: std::ops::Range<usize>, add: &mut dyn FnMut(u32, u32, Rels)) {
        let (la, txns) = (self.order, self.txns);
        let live = |t: u32| txns.status(t) != Status::Fail;
        let w = |id: u32| la.obs.write(id).txn;
        for k in keys.start as u32..keys.end as u32 {
            let ord = la.order_of(k);
            for (p, &id) in ord.iter().enumerate() {
                if id == NO {
                    continue;
                }
                let wt = w(id);
                if !live(wt) {
                    continue;
                }
                if p > 0 && ord[p - 1] != NO {
                    let pw = w(ord[p - 1]);
                    if live(pw) {
                        add(pw, wt, Rels::WW);
                    }
                }
                for &r in self.readers_of(k, p as u32) {
                    add(r, wt, Rels::RW);
                }
                for &r in self.readers_of(k, p as u32 + 1) {
                    add(wt, r, Rels::WR);
                }
            }
        }
    }

    /// Appends no read observed come after the last observed element.
    fn unobserved_each(&self, add: &mut dyn FnMut(u32, u32, Rels)) {
        let (la, txns) = (self.order, self.txns);
        let live = |t: u32| txns.status(t) != Status::Fail;
        let w = |id: u32| la.obs.write(id).txn;
        for (id, e) in la.obs.writes.iter().enumerate() {
            if la.pos[id] != NO || !live(e.txn) {
                continue;
            }
            let k = e.key(txns);
            let ord = la.order_of(k);
            if let Some(&last) = ord.last()
                && last != NO
                && live(w(last))
            {
                add(w(last), e.txn, Rels::WW);
            }
            if ord.last() != Some(&NO) {
                for &r in self.readers_of(k, ord.len() as u32) {
                    add(r, e.txn, Rels::RW);
                }
            }
        }
    }
}

impl<'h> VersionOrder<'h> for ListAppend<'_, 'h> {
    fn edges<'s>(&'s self, txns: &'s Txns<'h>) -> Box<dyn Edges + 's> {
        Box::new(DataEdges::new(self, txns))
    }

    fn explain(
        &self,
        txns: &Txns<'h>,
        history: &History,
        a: u32,
        b: u32,
        rel: Rel,
    ) -> Option<Step> {
        let ta = &txns.txns[a as usize];
        let tb = &txns.txns[b as usize];
        let mk = |k: u32, value: Option<Val>, value2: Option<Val>, am: usize, bm: usize| {
            let site = Site {
                key: Key(txns.keys[k as usize].clone()),
                a_mop: am,
                b_mop: bm,
            };
            let (from, to) = (txns.op_index(history, a), txns.op_index(history, b));
            Step::data(rel, from, to, true, Some(site), value, value2)
        };
        match rel {
            Rel::Wr => {
                for (j, m) in txns.mops_of(tb).iter().enumerate() {
                    let MicroOp::Read(_, rv) = m else { continue };
                    let Some(last) = read_list(tb.status, rv).and_then(|r| r.last()) else {
                        continue;
                    };
                    let k = txns.key_of(b, j);
                    if let Some(id) = self.obs.write_of(k, last) {
                        let e = self.obs.write(id);
                        if e.txn == a {
                            return Some(mk(k, Some(last.clone()), None, e.mop as usize, j));
                        }
                    }
                }
                None
            }
            Rel::Ww | Rel::Rw => {
                for (j, m) in txns.mops_of(tb).iter().enumerate() {
                    let MicroOp::Append(_, v) = m else { continue };
                    let k = txns.key_of(b, j);
                    let Some(id) = self.obs.write_of(k, v) else {
                        continue;
                    };
                    let Some(prev) = self.prev(k, id) else {
                        continue;
                    };
                    if rel == Rel::Ww {
                        if prev != NO && self.obs.write(prev).txn == a {
                            let pe = self.obs.write(prev);
                            return Some(mk(
                                k,
                                pe.val(txns).cloned(),
                                Some(v.clone()),
                                pe.mop as usize,
                                j,
                            ));
                        }
                        continue;
                    }
                    // rw: a read of k in `a` whose last element is `prev`.
                    let want = if prev == NO {
                        0
                    } else {
                        self.pos[prev as usize] + 1
                    };
                    for (i, m2) in txns.mops_of(ta).iter().enumerate() {
                        let MicroOp::Read(_, rv) = m2 else { continue };
                        if txns.key_of(a, i) != k {
                            continue;
                        }
                        let Some(r) = read_list(ta.status, rv) else {
                            continue;
                        };
                        if self.version_of(k, r) == want {
                            let value = (prev != NO)
                                .then(|| self.obs.write(prev).val(txns).cloned())
                                .flatten();
                            return Some(mk(k, value, Some(v.clone()), i, j));
                        }
                    }
                }
                None
            }
            _ => None,
        }
    }

    fn read_version(&self, _: &Txns<'h>, read: &Read) -> Option<u32> {
        read.prefix().then(|| self.version_from(read.from()))
    }

    fn version_value(&self, k: u32, version: u32) -> ReadValue {
        ReadValue::List(
            self.obs.longest[k as usize]
                .iter()
                .take(version as usize)
                .cloned()
                .collect(),
        )
    }
}
