//! list-append inference (elle.md §2.3): version orders from the longest
//! read of each key (prefix rule), the non-cycle anomalies (`G1a`, `G1b`,
//! `internal`, `future-read`, `dirty-update`, `duplicate-elements`,
//! `incompatible-order`, `lost-update`, and our `garbage-read`), and `ww`,
//! `wr`, `rw` edges — including for appends no read observed, which come
//! after the last observed element.
//!
//! Key decision: elements are interned only where they are appended (one hash
//! insert per append); a read is compared element-wise against its key's
//! longest read and needs a single hash lookup (its last element) unless it
//! disagrees with that read or contains something suspicious.

use crate::anomaly::AnomalyType;
use crate::explain::{Anomaly, Evidence, Expected, Step};
use crate::graph::EdgeList;
use crate::rels::{Rel, Rels};
use crate::txn::{Status, Txns};
use rustc_hash::FxHashMap;
use store::{Atom, History, Key, MicroOp, ReadValue, Val};

const NO: u32 = u32::MAX;

#[derive(Clone, Copy, Debug)]
struct Elem<'h> {
    writer: u32,
    mop: u32,
    key: u32,
    val: &'h Val,
    intermediate: bool,
    /// Position in its key's deduplicated version order, or `NO`.
    pos: u32,
}

/// (key, element) → element id. Integer elements (what harness writes) are
/// keyed inline, so probes never dereference into the history.
#[derive(Default)]
struct ElemIds<'h> {
    ints: FxHashMap<(u32, i64), u32>,
    others: FxHashMap<(u32, &'h Atom), u32>,
}

impl<'h> ElemIds<'h> {
    fn with_capacity(n: usize) -> ElemIds<'h> {
        ElemIds {
            ints: FxHashMap::with_capacity_and_hasher(n, Default::default()),
            others: FxHashMap::default(),
        }
    }

    #[inline]
    fn get(&self, k: u32, v: &Atom) -> Option<u32> {
        match v {
            Atom::Int(i) => self.ints.get(&(k, *i)).copied(),
            other => self.others.get(&(k, other)).copied(),
        }
    }

    /// Inserts `id` unless present; returns the id already there.
    fn insert(&mut self, k: u32, v: &'h Atom, id: u32) -> Option<u32> {
        use std::collections::hash_map::Entry;
        let slot = match v {
            Atom::Int(i) => match self.ints.entry((k, *i)) {
                Entry::Occupied(o) => return Some(*o.get()),
                Entry::Vacant(e) => e.insert(id),
            },
            other => match self.others.entry((k, other)) {
                Entry::Occupied(o) => return Some(*o.get()),
                Entry::Vacant(e) => e.insert(id),
            },
        };
        let _ = slot;
        None
    }
}

/// The list-append indices kept after inference to explain edges.
pub struct ListAppend<'h> {
    elems: ElemIds<'h>,
    elem: Vec<Elem<'h>>,
    /// Per key: start of its version order in `order` (`order_off[k]..order_off[k+1]`).
    order_off: Vec<usize>,
    /// Element ids in version order (`NO` for an element nobody appended).
    order: Vec<u32>,
}

fn read_list(status: Status, rv: &ReadValue) -> Option<&[Val]> {
    match rv {
        ReadValue::List(l) => Some(l),
        ReadValue::Nil if status == Status::Ok => Some(&[]),
        _ => None,
    }
}

/// Output of [`ListAppend::infer`].
pub struct Inferred<'h> {
    /// Indices for explanations.
    pub index: ListAppend<'h>,
    /// Non-cycle anomalies.
    pub anomalies: Vec<Anomaly>,
    /// Data edges.
    pub edges: EdgeList,
    /// Oddities (duplicate appends, non-list reads).
    pub warnings: Vec<String>,
}

impl<'h> ListAppend<'h> {
    /// Runs list-append inference over `txns`.
    pub fn infer(txns: &Txns<'h>, history: &'h History) -> Inferred<'h> {
        let nkeys = txns.keys.len();
        let mut warnings = Vec::new();
        let mut anomalies = Vec::new();
        let opi = |t: u32| txns.op_index(history, t);
        let key = |k: u32| Key(txns.keys[k as usize].clone());

        // 1. Appends.
        let (n_appends, n_reads) = (txns.n_appends, txns.n_reads);
        let mut elems = ElemIds::with_capacity(n_appends);
        let mut elem: Vec<Elem<'h>> = Vec::with_capacity(n_appends);
        let mut seen_keys: Vec<u32> = Vec::new();
        // 2. (same pass) Longest read per key (ok and info reads; info nil
        // reads mean "unknown"). Ties go to the earliest transaction.
        let mut longest: Vec<(u32, u32)> = vec![(NO, 0); nkeys];
        let mut longest_len: Vec<usize> = vec![0; nkeys];
        let mut bad_type = 0usize;
        for (t, tx) in txns.txns.iter().enumerate() {
            seen_keys.clear();
            for (i, m) in tx.mops.iter().enumerate().rev() {
                let v = match m {
                    MicroOp::Append(_, v) => v,
                    MicroOp::Read(_, rv) => {
                        if tx.status == Status::Fail {
                            continue;
                        }
                        if matches!(rv, ReadValue::Scalar(_)) {
                            bad_type += 1;
                            continue;
                        }
                        let Some(l) = read_list(tx.status, rv) else {
                            continue;
                        };
                        let k = txns.key_of(t as u32, i) as usize;
                        if longest[k].0 == NO
                            || l.len() > longest_len[k]
                            || (l.len() == longest_len[k] && longest[k].0 == t as u32)
                        {
                            longest[k] = (t as u32, i as u32);
                            longest_len[k] = l.len();
                        }
                        continue;
                    }
                    MicroOp::Write(..) => continue,
                };
                let k = txns.key_of(t as u32, i);
                let intermediate = seen_keys.contains(&k);
                if !intermediate {
                    seen_keys.push(k);
                }
                let id = elem.len() as u32;
                match elems.insert(k, &v.0, id) {
                    Some(existing) => {
                        let first = elem[existing as usize].writer;
                        warnings.push(format!(
                            "value {v} appended to key {} more than once (ops {} and {}); values must be unique per key",
                            key(k),
                            opi(first),
                            opi(t as u32)
                        ));
                    }
                    None => {
                        elem.push(Elem {
                            writer: t as u32,
                            mop: i as u32,
                            key: k,
                            val: v,
                            intermediate,
                            pos: NO,
                        });
                    }
                }
            }
        }
        let lookup = |k: u32, v: &Val| elems.get(k, &v.0);

        if bad_type > 0 {
            warnings.push(format!(
                "{bad_type} reads returned a single value rather than a list; ignored by list-append"
            ));
        }
        let longest_list = |k: usize| -> &'h [Val] {
            let (t, i) = longest[k];
            if t == NO {
                return &[];
            }
            let tx = &txns.txns[t as usize];
            match &tx.mops[i as usize] {
                MicroOp::Read(_, rv) => read_list(tx.status, rv).unwrap_or(&[]),
                _ => &[],
            }
        };

        // 3. Version orders: the longest read, deduplicated. A key with a
        // single append and no non-empty read still has the order [v].
        let mut order_off = Vec::with_capacity(nkeys + 1);
        let mut order: Vec<u32> = Vec::new();
        // Raw position in the longest read from which reads need a careful look.
        let mut suspicious_from: Vec<usize> = vec![usize::MAX; nkeys];
        // Element id at each raw position of each key's longest read.
        let mut raw_off: Vec<usize> = Vec::with_capacity(nkeys + 1);
        let mut raw_ids: Vec<u32> = Vec::new();
        let mut appends_per_key: Vec<u32> = vec![0; nkeys];
        let mut single: Vec<u32> = vec![NO; nkeys];
        for (id, e) in elem.iter().enumerate() {
            appends_per_key[e.key as usize] += 1;
            single[e.key as usize] = id as u32;
        }
        for k in 0..nkeys {
            order_off.push(order.len());
            raw_off.push(raw_ids.len());
            let l = longest_list(k);
            if l.is_empty() {
                if appends_per_key[k] == 1
                    && txns.txns[elem[single[k] as usize].writer as usize].status != Status::Fail
                {
                    let id = single[k];
                    elem[id as usize].pos = 0;
                    order.push(id);
                }
                continue;
            }
            let base = order.len();
            for (raw, v) in l.iter().enumerate() {
                let found = lookup(k as u32, v);
                raw_ids.push(found.unwrap_or(NO));
                match found {
                    Some(id) => {
                        let e = &mut elem[id as usize];
                        if e.pos != NO {
                            suspicious_from[k] = suspicious_from[k].min(raw);
                            continue;
                        }
                        e.pos = (order.len() - base) as u32;
                        order.push(id);
                        if txns.txns[e.writer as usize].status == Status::Fail {
                            suspicious_from[k] = suspicious_from[k].min(raw);
                        }
                    }
                    None => {
                        suspicious_from[k] = suspicious_from[k].min(raw);
                        order.push(NO);
                    }
                }
            }
        }
        order_off.push(order.len());
        raw_off.push(raw_ids.len());
        let index = ListAppend {
            elems,
            elem,
            order_off,
            order,
        };

        // 4. Reads: non-cycle anomalies, and the (key, version, reader) index.
        let mut readers: Vec<(u32, u32, u32)> = Vec::with_capacity(n_reads);
        let mut incompatible_reported = vec![false; nkeys];
        let mut stamp: Vec<u32> = vec![0; index.elem.len()];
        let mut stamp_gen = 0u32;
        let mut lost: Vec<(u32, u32, u32)> = Vec::new();
        let mut dup_counts: Vec<(u32, usize)> = Vec::new();
        for (t, tx) in txns.txns.iter().enumerate() {
            let t = t as u32;
            if tx.status == Status::Fail {
                continue;
            }
            let ok = tx.status == Status::Ok;
            for (i, m) in tx.mops.iter().enumerate() {
                let MicroOp::Read(_, rv) = m else { continue };
                let Some(r) = read_list(tx.status, rv) else {
                    continue;
                };
                let k = txns.key_of(t, i);
                let ku = k as usize;
                let l = longest_list(ku);
                let prefix = r.len() <= l.len() && r.iter().zip(l).all(|(a, b)| a == b);
                // The last element's id: from the longest read when this read is
                // a prefix of it (no hashing), else looked up.
                let last_id = match r.last() {
                    None => NO,
                    Some(_) if prefix => raw_ids[raw_off[ku] + r.len() - 1],
                    Some(v) => index.elems.get(k, &v.0).unwrap_or(NO),
                };
                let version = if r.is_empty() {
                    0
                } else if last_id != NO && index.elem[last_id as usize].pos != NO {
                    index.elem[last_id as usize].pos + 1
                } else {
                    NO
                };
                if version != NO {
                    readers.push((k, version, t));
                }
                if !ok {
                    continue;
                }
                if !prefix && !incompatible_reported[ku] {
                    incompatible_reported[ku] = true;
                    anomalies.push(Anomaly {
                        kind: AnomalyType::IncompatibleOrder,
                        evidence: Evidence::IncompatibleOrder {
                            key: key(k),
                            values: [r.to_vec(), l.to_vec()],
                        },
                    });
                }
                if !prefix || r.len() > suspicious_from[ku] {
                    // Careful look: aborted, garbage and duplicate elements.
                    stamp_gen = stamp_gen.wrapping_add(1);
                    dup_counts.clear();
                    for v in r {
                        match index.elems.get(k, &v.0) {
                            None => anomalies.push(Anomaly {
                                kind: AnomalyType::GarbageRead,
                                evidence: Evidence::Read {
                                    op: opi(t),
                                    mop: i,
                                    key: key(k),
                                    element: v.clone(),
                                    writer: None,
                                },
                            }),
                            Some(id) => {
                                let e = index.elem[id as usize];
                                if stamp[id as usize] == stamp_gen {
                                    match dup_counts.iter_mut().find(|d| d.0 == id) {
                                        Some(d) => d.1 += 1,
                                        None => dup_counts.push((id, 2)),
                                    }
                                } else {
                                    stamp[id as usize] = stamp_gen;
                                    if txns.txns[e.writer as usize].status == Status::Fail {
                                        anomalies.push(Anomaly {
                                            kind: AnomalyType::G1a,
                                            evidence: Evidence::Read {
                                                op: opi(t),
                                                mop: i,
                                                key: key(k),
                                                element: v.clone(),
                                                writer: Some(opi(e.writer)),
                                            },
                                        });
                                    }
                                }
                            }
                        }
                    }
                    if !dup_counts.is_empty() {
                        anomalies.push(Anomaly {
                            kind: AnomalyType::DuplicateElements,
                            evidence: Evidence::DuplicateElements {
                                op: opi(t),
                                mop: i,
                                key: key(k),
                                duplicates: dup_counts
                                    .iter()
                                    .map(|&(id, n)| (index.elem[id as usize].val.clone(), n))
                                    .collect(),
                            },
                        });
                    }
                }
                // G1b: the last element is another transaction's intermediate append.
                if let Some(last) = r.last()
                    && last_id != NO
                {
                    let e = index.elem[last_id as usize];
                    if e.intermediate && e.writer != t {
                        anomalies.push(Anomaly {
                            kind: AnomalyType::G1b,
                            evidence: Evidence::Read {
                                op: opi(t),
                                mop: i,
                                key: key(k),
                                element: last.clone(),
                                writer: Some(opi(e.writer)),
                            },
                        });
                    }
                }
                // Future read, internal, lost update: against the txn's own micro-ops.
                let mut first_on_key = true;
                for j in 0..tx.mops.len() {
                    if j == i {
                        break;
                    }
                    if txns.key_of(t, j) == k {
                        first_on_key = false;
                        break;
                    }
                }
                let mut writes_later = false;
                for (j, m2) in tx.mops.iter().enumerate().skip(i + 1) {
                    if let MicroOp::Append(_, v) = m2
                        && txns.key_of(t, j) == k
                    {
                        writes_later = true;
                        if r.contains(v) {
                            anomalies.push(Anomaly {
                                kind: AnomalyType::FutureRead,
                                evidence: Evidence::Read {
                                    op: opi(t),
                                    mop: i,
                                    key: key(k),
                                    element: v.clone(),
                                    writer: None,
                                },
                            });
                        }
                    }
                }
                if first_on_key && writes_later && prefix {
                    lost.push((k, version, t));
                }
                if !first_on_key && let Some(expected) = internal_expectation(txns, t, i, k) {
                    let bad = match &expected {
                        Expected::List {
                            unknown_prefix: false,
                            tail,
                        } => tail.as_slice() != r,
                        Expected::List {
                            unknown_prefix: true,
                            tail,
                        } => !r.ends_with(tail),
                        Expected::Register(_) => false,
                    };
                    if bad {
                        anomalies.push(Anomaly {
                            kind: AnomalyType::Internal,
                            evidence: Evidence::Internal {
                                op: opi(t),
                                mop: i,
                                key: key(k),
                                expected,
                            },
                        });
                    }
                }
            }
        }

        // Lost updates: several committed txns read the same version, then appended.
        lost.sort_unstable();
        let mut s = 0;
        while s < lost.len() {
            let mut e = s + 1;
            while e < lost.len() && lost[e].0 == lost[s].0 && lost[e].1 == lost[s].1 {
                e += 1;
            }
            if e - s > 1 {
                let (k, ver, _) = lost[s];
                let l = longest_list(k as usize);
                let value = index.version_prefix(k, ver, l);
                anomalies.push(Anomaly {
                    kind: AnomalyType::LostUpdate,
                    evidence: Evidence::LostUpdate {
                        key: key(k),
                        value: ReadValue::List(value),
                        txns: lost[s..e].iter().map(|x| opi(x.2)).collect(),
                    },
                });
            }
            s = e;
        }

        // Dirty updates: an aborted element followed (through info elements) by a committed one.
        for k in 0..nkeys {
            let mut aborted: Option<u32> = None;
            for &id in index.order_of(k as u32) {
                if id == NO {
                    continue;
                }
                let e = index.elem[id as usize];
                match txns.txns[e.writer as usize].status {
                    Status::Fail => aborted = aborted.or(Some(id)),
                    Status::Info => {}
                    Status::Ok => {
                        if let Some(a) = aborted.take() {
                            let ea = index.elem[a as usize];
                            anomalies.push(Anomaly {
                                kind: AnomalyType::DirtyUpdate,
                                evidence: Evidence::DirtyUpdate {
                                    key: key(k as u32),
                                    values: vec![ea.val.clone(), e.val.clone()],
                                    txns: vec![opi(ea.writer), opi(e.writer)],
                                },
                            });
                        }
                    }
                }
            }
        }

        // 5. Edges.
        let edges = index.edges(txns, &mut readers);
        Inferred {
            index,
            anomalies,
            edges,
            warnings,
        }
    }

    fn order_of(&self, k: u32) -> &[u32] {
        &self.order[self.order_off[k as usize]..self.order_off[k as usize + 1]]
    }

    /// The version a read of `r` observed: number of order positions up to
    /// and including its last element (0 = initial state), or `NO` when the
    /// last element is not in the order.
    fn version_of(&self, k: u32, r: &[Val]) -> u32 {
        match r.last() {
            None => 0,
            Some(v) => match self.elems.get(k, &v.0) {
                Some(id) if self.elem[id as usize].pos != NO => self.elem[id as usize].pos + 1,
                _ => NO,
            },
        }
    }

    fn version_prefix(&self, k: u32, ver: u32, longest: &[Val]) -> Vec<Val> {
        let _ = k;
        longest.iter().take(ver as usize).cloned().collect()
    }

    /// The element appended just before `id` in its key's order: `Some(NO)`
    /// for the initial state, `None` when unknown. Unobserved appends follow
    /// the last observed element.
    fn prev(&self, id: u32) -> Option<u32> {
        let e = self.elem[id as usize];
        let ord = self.order_of(e.key);
        if e.pos == NO {
            return Some(ord.last().copied().unwrap_or(NO)).filter(|&p| p != NO || ord.is_empty());
        }
        if e.pos == 0 {
            return Some(NO);
        }
        let p = ord[e.pos as usize - 1];
        (p != NO).then_some(p)
    }

    fn edges(&self, txns: &Txns<'h>, readers: &mut [(u32, u32, u32)]) -> EdgeList {
        let nkeys = self.order_off.len() - 1;
        let live = |t: u32| txns.txns[t as usize].status != Status::Fail;
        // Readers grouped by (key, version).
        readers.sort_unstable();
        let mut ver_base = Vec::with_capacity(nkeys + 1);
        let mut total = 0usize;
        for k in 0..nkeys {
            ver_base.push(total);
            total += self.order_of(k as u32).len() + 1;
        }
        ver_base.push(total);
        let mut roff = vec![0usize; total + 1];
        for &(k, v, _) in readers.iter() {
            roff[ver_base[k as usize] + v as usize + 1] += 1;
        }
        for i in 0..total {
            roff[i + 1] += roff[i];
        }
        let readers_of = |k: u32, v: u32| {
            let slot = ver_base[k as usize] + v as usize;
            readers[roff[slot]..roff[slot + 1]].iter().map(|x| x.2)
        };
        let mut el = EdgeList::default();
        el.edges.reserve(readers.len() * 2 + self.elem.len() * 2);
        for k in 0..nkeys as u32 {
            let ord = self.order_of(k);
            for (p, &id) in ord.iter().enumerate() {
                if id == NO {
                    continue;
                }
                let w = self.elem[id as usize].writer;
                if !live(w) {
                    continue;
                }
                if p > 0 && ord[p - 1] != NO {
                    let pw = self.elem[ord[p - 1] as usize].writer;
                    if live(pw) {
                        el.add(pw, w, Rels::WW);
                    }
                }
                for r in readers_of(k, p as u32) {
                    el.add(r, w, Rels::RW);
                }
                for r in readers_of(k, p as u32 + 1) {
                    el.add(w, r, Rels::WR);
                }
            }
        }
        // Appends no read observed come after the last observed element.
        for e in &self.elem {
            if e.pos != NO || !live(e.writer) {
                continue;
            }
            let ord = self.order_of(e.key);
            if let Some(&last) = ord.last()
                && last != NO
                && live(self.elem[last as usize].writer)
            {
                el.add(self.elem[last as usize].writer, e.writer, Rels::WW);
            }
            if ord.last() != Some(&NO) {
                for r in readers_of(e.key, ord.len() as u32) {
                    el.add(r, e.writer, Rels::RW);
                }
            }
        }
        el
    }

    /// Explains why `a →rel b`, if this analyzer inferred that edge.
    pub fn explain(
        &self,
        txns: &Txns<'h>,
        history: &History,
        a: u32,
        b: u32,
        rel: Rel,
    ) -> Option<Step> {
        let ta = &txns.txns[a as usize];
        let tb = &txns.txns[b as usize];
        let mk = |k: u32, value: Option<Val>, value2: Option<Val>, am: usize, bm: usize| Step {
            key: Some(Key(txns.keys[k as usize].clone())),
            value,
            value2,
            a_mop: Some(am),
            b_mop: Some(bm),
            ..Step::bare(rel, txns.op_index(history, a), txns.op_index(history, b))
        };
        match rel {
            Rel::Wr => {
                for (j, m) in tb.mops.iter().enumerate() {
                    let MicroOp::Read(_, rv) = m else { continue };
                    let Some(last) = read_list(tb.status, rv).and_then(|r| r.last()) else {
                        continue;
                    };
                    let k = txns.key_of(b, j);
                    if let Some(id) = self.elems.get(k, &last.0) {
                        let e = self.elem[id as usize];
                        if e.writer == a {
                            return Some(mk(k, Some(last.clone()), None, e.mop as usize, j));
                        }
                    }
                }
                None
            }
            Rel::Ww | Rel::Rw => {
                for (j, m) in tb.mops.iter().enumerate() {
                    let MicroOp::Append(_, v) = m else { continue };
                    let k = txns.key_of(b, j);
                    let Some(id) = self.elems.get(k, &v.0) else {
                        continue;
                    };
                    let Some(prev) = self.prev(id) else { continue };
                    if rel == Rel::Ww {
                        if prev != NO && self.elem[prev as usize].writer == a {
                            let pe = self.elem[prev as usize];
                            return Some(mk(
                                k,
                                Some(pe.val.clone()),
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
                        self.elem[prev as usize].pos + 1
                    };
                    for (i, m2) in ta.mops.iter().enumerate() {
                        let MicroOp::Read(_, rv) = m2 else { continue };
                        if txns.key_of(a, i) != k {
                            continue;
                        }
                        let Some(r) = read_list(ta.status, rv) else {
                            continue;
                        };
                        if self.version_of(k, r) == want {
                            let value = (prev != NO).then(|| self.elem[prev as usize].val.clone());
                            return Some(mk(k, value, Some(v.clone()), i, j));
                        }
                    }
                }
                None
            }
            _ => None,
        }
    }
}

/// What a read of `k` at micro-op `i` of `t` must return given the txn's own
/// earlier micro-ops on `k` (`None`: no constraint).
fn internal_expectation(txns: &Txns<'_>, t: u32, i: usize, k: u32) -> Option<Expected> {
    let tx = &txns.txns[t as usize];
    let mut appended: Vec<Val> = Vec::new();
    let mut base: Option<&[Val]> = None;
    for j in (0..i).rev() {
        if txns.key_of(t, j) != k {
            continue;
        }
        match &tx.mops[j] {
            MicroOp::Append(_, v) => appended.push(v.clone()),
            MicroOp::Read(_, rv) => {
                if let Some(l) = read_list(tx.status, rv) {
                    base = Some(l);
                    break;
                }
            }
            MicroOp::Write(..) => {}
        }
    }
    appended.reverse();
    match base {
        Some(b) => {
            let mut tail = b.to_vec();
            tail.extend(appended);
            Some(Expected::List {
                unknown_prefix: false,
                tail,
            })
        }
        None if !appended.is_empty() => Some(Expected::List {
            unknown_prefix: true,
            tail: appended,
        }),
        None => None,
    }
}
