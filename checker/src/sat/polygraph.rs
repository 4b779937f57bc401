//! The (generalized) polygraph of a register history: which transactions
//! take part, the known edges, and one either-or constraint per pair of
//! writers of a key. Sides are not stored: they are recomputed from the
//! per-key index on demand, so a hot key's quadratic constraint count costs
//! 12 bytes per constraint.

use crate::order;
use crate::txn::{Status, Txns};
use rustc_hash::{FxHashMap, FxHashSet};
use store::{Atom, History, MicroOp, ReadValue};

/// A relation of a polygraph edge. `Internal` is SI's `start → commit` of
/// one transaction (not a dependency: dropped from reported cycles).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Ww,
    Wr,
    Rw,
    Realtime,
    Process,
    Internal,
}

/// One edge with what justifies it: `from`/`to` are local transaction ids;
/// `key` is a key id (`u32::MAX` for order edges); mops index the micro-ops.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Fact {
    pub kind: Kind,
    pub from: u32,
    pub to: u32,
    pub key: u32,
    pub a_mop: u32,
    pub b_mop: u32,
}

/// An access: local transaction id and micro-op position.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Acc {
    pub txn: u32,
    pub mop: u32,
}

/// Writers of one key and who read each of them.
#[derive(Debug, Default)]
pub(crate) struct KeyInfo {
    pub key: u32,
    pub writers: Vec<Acc>,
    /// `readers[i]`: external reads of `writers[i]`'s value.
    pub readers: Vec<Vec<Acc>>,
}

/// Either `a` before `b` (side 0) or `b` before `a` (side 1), writers of
/// `keys[key]`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Constraint {
    pub key: u32,
    pub a: u32,
    pub b: u32,
}

/// Pair `i` of the `m·(m − 1)/2` pairs `(a, b)`, `a < b < m`, in row order
/// ((0, 1), (0, 2), …, (1, 2), …).
pub(crate) fn pair(m: u64, i: u64) -> (u64, u64) {
    // Row `a` starts at a·(2m − a − 1)/2: the largest such start ≤ i, from
    // the quadratic's root, then corrected for rounding.
    let row = |a: u64| a * (2 * m - a - 1) / 2;
    let top = (2 * m).saturating_sub(1) as f64;
    let d = top * top - 8.0 * i as f64;
    let mut a = ((top - d.max(0.0).sqrt()) / 2.0) as u64;
    a = a.min(m.saturating_sub(2));
    while a > 0 && row(a) > i {
        a -= 1;
    }
    while a + 2 < m && row(a + 1) <= i {
        a += 1;
    }
    (a, i - row(a) + a + 1)
}

/// The polygraph.
pub(crate) struct Poly {
    /// Local id → index in `Txns`.
    pub global: Vec<u32>,
    /// Two nodes per transaction (SI: start, commit) or one (SER).
    pub split: bool,
    pub keys: Vec<KeyInfo>,
    pub known: Vec<Fact>,
    /// Constraints are implicit (a hot key has millions): those of
    /// `keys[i]` are ids `pair_base[i]..pair_base[i + 1]`, its writer pairs
    /// `(a, b)`, `a < b`, in row order; the last entry is their number.
    pub pair_base: Vec<u32>,
    /// Number of constraints, also when over `u32::MAX` (then the ids do
    /// not cover them and the check must not run: `check_register_stats`).
    pub pairs_total: u64,
    /// The row [`Self::constraint`] decoded last: ids `lo..hi` are key
    /// slot `key`'s pairs `(a, a + 1)…`.
    pub last_row: std::cell::Cell<(u32, u32, u32, u32)>,
    /// Initial order hint per node: SI starts at invocations.
    pub hint: Vec<u64>,
    /// The other hint for SI: starts just before commits (serial).
    pub hint_serial: Vec<u64>,
}

impl Poly {
    /// The start node of local transaction `t`.
    #[inline]
    pub fn s(&self, t: u32) -> u32 {
        if self.split { 2 * t } else { t }
    }

    /// The commit node of local transaction `t`.
    #[inline]
    pub fn c(&self, t: u32) -> u32 {
        if self.split { 2 * t + 1 } else { t }
    }

    /// Number of nodes.
    pub fn nodes(&self) -> usize {
        if self.split {
            2 * self.global.len()
        } else {
            self.global.len()
        }
    }

    /// Graph endpoints of a fact: dependencies end at the target's start,
    /// anti-dependencies at its commit (the SI→SER split).
    #[inline]
    pub fn ends(&self, f: &Fact) -> (u32, u32) {
        match f.kind {
            Kind::Ww | Kind::Wr | Kind::Realtime | Kind::Process => (self.c(f.from), self.s(f.to)),
            Kind::Rw => (self.s(f.from), self.c(f.to)),
            Kind::Internal => (self.s(f.from), self.c(f.to)),
        }
    }

    /// Number of constraints.
    #[inline]
    pub fn constraint_count(&self) -> usize {
        self.pair_base.last().map_or(0, |&n| n as usize)
    }

    /// Constraint `cid`: its key slot and writer pair, decoded from the id.
    #[inline]
    pub fn constraint(&self, cid: u32) -> Constraint {
        // Ids mostly come in runs: a run within one row costs no search.
        let (lo, hi, key, a) = self.last_row.get();
        if lo <= cid && cid < hi {
            return Constraint {
                key,
                a,
                b: cid - lo + a + 1,
            };
        }
        // The key: the last with a base at or below `cid` (keys with fewer
        // than two writers have no ids and share the next key's base).
        let key = self
            .pair_base
            .partition_point(|&b| b <= cid)
            .saturating_sub(1);
        let m = self.keys[key].writers.len() as u64;
        let base = self.pair_base[key];
        let (a, b) = pair(m, u64::from(cid - base));
        // The row of `a`: ids from its pair (a, a + 1) to (a, m − 1).
        let lo = cid - (b - a - 1) as u32;
        self.last_row
            .set((lo, lo + (m - a - 1) as u32, key as u32, a as u32));
        Constraint {
            key: key as u32,
            a: a as u32,
            b: b as u32,
        }
    }

    /// Edges of one side of constraint `cid` into `out` (cleared first).
    pub fn side(&self, cid: u32, side: u8, out: &mut Vec<Fact>) {
        let c = self.constraint(cid);
        let (x, y) = if side == 0 { (c.a, c.b) } else { (c.b, c.a) };
        self.pair_side(c.key, x, y, out);
    }

    /// The first edge of `side` of constraint `cid` for which `hit(edge,
    /// (from, to))` holds, without collecting the side (the pruning pass
    /// asks this of millions of constraints; see [`Self::side`]).
    #[inline]
    pub fn side_find(
        &self,
        cid: u32,
        side: u8,
        hit: impl FnMut(&Fact, (u32, u32)) -> bool,
    ) -> Option<Fact> {
        self.side_find_of(self.constraint(cid), side, hit)
    }

    /// As [`Self::side_find`], of a constraint already decoded.
    #[inline]
    pub fn side_find_of(
        &self,
        c: Constraint,
        side: u8,
        mut hit: impl FnMut(&Fact, (u32, u32)) -> bool,
    ) -> Option<Fact> {
        let (x, y) = if side == 0 { (c.a, c.b) } else { (c.b, c.a) };
        let k = &self.keys[c.key as usize];
        let (wx, wy) = (k.writers[x as usize], k.writers[y as usize]);
        let ww = Fact {
            kind: Kind::Ww,
            from: wx.txn,
            to: wy.txn,
            key: k.key,
            a_mop: wx.mop,
            b_mop: wy.mop,
        };
        if hit(&ww, (self.c(wx.txn), self.s(wy.txn))) {
            return Some(ww);
        }
        let cy = self.c(wy.txn);
        for r in &k.readers[x as usize] {
            if r.txn == wy.txn {
                continue;
            }
            let rw = Fact {
                kind: Kind::Rw,
                from: r.txn,
                to: wy.txn,
                key: k.key,
                a_mop: r.mop,
                b_mop: wy.mop,
            };
            if hit(&rw, (self.s(r.txn), cy)) {
                return Some(rw);
            }
        }
        None
    }

    /// Edges of "writer `x` before writer `y`" of `keys[key]` into `out`
    /// (cleared first): `x ww y`, and `r rw y` for every reader `r` of `x`.
    pub fn pair_side(&self, key: u32, x: u32, y: u32, out: &mut Vec<Fact>) {
        out.clear();
        let k = &self.keys[key as usize];
        let (wx, wy) = (k.writers[x as usize], k.writers[y as usize]);
        out.push(Fact {
            kind: Kind::Ww,
            from: wx.txn,
            to: wy.txn,
            key: k.key,
            a_mop: wx.mop,
            b_mop: wy.mop,
        });
        for r in &k.readers[x as usize] {
            if r.txn != wy.txn {
                out.push(Fact {
                    kind: Kind::Rw,
                    from: r.txn,
                    to: wy.txn,
                    key: k.key,
                    a_mop: r.mop,
                    b_mop: wy.mop,
                });
            }
        }
    }

    /// Builds the polygraph. `realtime`: add real-time edges; `process`:
    /// add session-order edges.
    pub fn build(
        txns: &Txns<'_>,
        history: &History,
        split: bool,
        realtime: bool,
        process: bool,
    ) -> Poly {
        const NO: u32 = u32::MAX;
        let n = txns.len();
        // Final writes (last write of a key in a txn) of ok and info txns.
        let mut finals: FxHashMap<(u32, &Atom), Acc> = FxHashMap::default();
        let mut seen: Vec<u32> = Vec::new();
        for (t, tx) in txns.txns.iter().enumerate() {
            if tx.status == Status::Fail {
                continue;
            }
            seen.clear();
            for (i, m) in txns.mops_of(tx).iter().enumerate().rev() {
                let MicroOp::Write(_, v) = m else { continue };
                let k = txns.key_of(t as u32, i);
                if seen.contains(&k) {
                    continue;
                }
                seen.push(k);
                finals.entry((k, &v.0)).or_insert(Acc {
                    txn: t as u32,
                    mop: i as u32,
                });
            }
        }
        // The format's initial value (peer formats: 0) read on a key nobody
        // writes it to is a read of the initial state, exactly like nil:
        // keys with some write (any status, any position) of that value.
        let initial = history.initial_value();
        let mut writes_initial: FxHashSet<u32> = FxHashSet::default();
        if let Some(iv) = initial {
            for (t, tx) in txns.txns.iter().enumerate() {
                for (i, m) in txns.mops_of(tx).iter().enumerate() {
                    if let MicroOp::Write(_, v) = m
                        && v == iv
                    {
                        writes_initial.insert(txns.key_of(t as u32, i));
                    }
                }
            }
        }
        let reads_initial = |k: u32, v: &store::Val| {
            initial.is_some_and(|iv| iv == v) && !writes_initial.contains(&k)
        };
        // External reads of ok txns: (key, writer global or NO for the
        // initial state, reader access).
        let mut reads: Vec<(u32, u32, u32, u32)> = Vec::new();
        let mut included: Vec<bool> = txns.txns.iter().map(|t| t.status == Status::Ok).collect();
        for (t, tx) in txns.txns.iter().enumerate() {
            if tx.status != Status::Ok {
                continue;
            }
            seen.clear();
            for (i, m) in txns.mops_of(tx).iter().enumerate() {
                let k = txns.key_of(t as u32, i);
                if seen.contains(&k) {
                    continue;
                }
                seen.push(k);
                let MicroOp::Read(_, rv) = m else { continue };
                match rv {
                    ReadValue::Nil => reads.push((k, NO, t as u32, i as u32)),
                    ReadValue::Scalar(v) if reads_initial(k, v) => {
                        reads.push((k, NO, t as u32, i as u32));
                    }
                    ReadValue::Scalar(v) => {
                        // Reads of aborted, intermediate, own or unknown writes
                        // are other anomalies (G1a, G1b, garbage-read): left out.
                        if let Some(w) = finals.get(&(k, &v.0))
                            && w.txn != t as u32
                        {
                            included[w.txn as usize] = true;
                            reads.push((k, w.txn, t as u32, i as u32));
                        }
                    }
                    ReadValue::List(_) => {}
                }
            }
        }
        let mut local = vec![NO; n];
        let mut global = Vec::new();
        for t in 0..n {
            if included[t] {
                local[t] = global.len() as u32;
                global.push(t as u32);
            }
        }
        // Per-key writers.
        let mut key_slot: Vec<u32> = vec![NO; txns.keys.len()];
        let mut keys: Vec<KeyInfo> = Vec::new();
        let mut writer_idx: FxHashMap<(u32, u32), u32> = FxHashMap::default();
        for &g in &global {
            let tx = &txns.txns[g as usize];
            seen.clear();
            for (i, m) in txns.mops_of(tx).iter().enumerate().rev() {
                let MicroOp::Write(..) = m else { continue };
                let k = txns.key_of(g, i);
                if seen.contains(&k) {
                    continue;
                }
                seen.push(k);
                if key_slot[k as usize] == NO {
                    key_slot[k as usize] = keys.len() as u32;
                    keys.push(KeyInfo {
                        key: k,
                        ..KeyInfo::default()
                    });
                }
                let ki = &mut keys[key_slot[k as usize] as usize];
                writer_idx.insert((k, g), ki.writers.len() as u32);
                ki.writers.push(Acc {
                    txn: local[g as usize],
                    mop: i as u32,
                });
                ki.readers.push(Vec::new());
            }
        }
        let mut known = Vec::new();
        for &(k, w, r, mop) in &reads {
            let rl = local[r as usize];
            if w == NO {
                // The initial state precedes every write of the key.
                if key_slot[k as usize] == NO {
                    continue;
                }
                let ki = &keys[key_slot[k as usize] as usize];
                for wr in &ki.writers {
                    if wr.txn != rl {
                        known.push(Fact {
                            kind: Kind::Rw,
                            from: rl,
                            to: wr.txn,
                            key: k,
                            a_mop: mop,
                            b_mop: wr.mop,
                        });
                    }
                }
                continue;
            }
            let (Some(&slot), Some(&wi)) = (key_slot.get(k as usize), writer_idx.get(&(k, w)))
            else {
                continue;
            };
            let ki = &mut keys[slot as usize];
            let wa = ki.writers[wi as usize];
            ki.readers[wi as usize].push(Acc { txn: rl, mop });
            known.push(Fact {
                kind: Kind::Wr,
                from: wa.txn,
                to: rl,
                key: k,
                a_mop: wa.mop,
                b_mop: mop,
            });
        }
        let order_fact = |kind, a: u32, b: u32| Fact {
            kind,
            from: a,
            to: b,
            key: NO,
            a_mop: 0,
            b_mop: 0,
        };
        if realtime {
            for &(a, b, _) in &order::realtime_edges(txns, history).edges {
                let (la, lb) = (local[a as usize], local[b as usize]);
                if la != NO && lb != NO {
                    known.push(order_fact(Kind::Realtime, la, lb));
                }
            }
        }
        if process {
            for &(a, b, _) in &order::process_edges(txns).edges {
                let (la, lb) = (local[a as usize], local[b as usize]);
                if la != NO && lb != NO {
                    known.push(order_fact(Kind::Process, la, lb));
                }
            }
        }
        if split {
            for t in 0..global.len() as u32 {
                known.push(order_fact(Kind::Internal, t, t));
            }
        }
        let mut pair_base = Vec::with_capacity(keys.len() + 1);
        let mut pairs_total = 0u64;
        for k in &keys {
            pair_base.push(pairs_total as u32);
            let m = k.writers.len() as u64;
            pairs_total += m * m.saturating_sub(1) / 2;
        }
        pair_base.push(pairs_total as u32);
        // Without a clock (peer formats) op order is session by session,
        // a poor guess of the commit order: the i-th transaction of every
        // session is taken to run at about the same time instead.
        let mut at: Vec<(u64, u64)> = global
            .iter()
            .map(|&g| {
                let tx = &txns.txns[g as usize];
                (u64::from(tx.inv), u64::from(tx.pos))
            })
            .collect();
        if !history.has_realtime_order() {
            let mut in_session: FxHashMap<Option<u64>, u64> = FxHashMap::default();
            let mut by_pos: Vec<usize> = (0..global.len()).collect();
            by_pos.sort_unstable_by_key(|&l| at[l].1);
            let mut seq = vec![0u64; global.len()];
            for &l in &by_pos {
                let c = in_session.entry(txns.process(global[l])).or_insert(0);
                seq[l] = *c;
                *c += 1;
            }
            by_pos.sort_unstable_by_key(|&l| (seq[l], at[l].1));
            for (r, &l) in by_pos.iter().enumerate() {
                at[l] = (r as u64, r as u64);
            }
        }
        let mut hint = Vec::new();
        let mut hint_serial = Vec::new();
        for &(inv, pos) in &at {
            if split {
                hint.push(2 * inv);
                hint.push(2 * pos + 1);
                hint_serial.push(2 * pos);
                hint_serial.push(2 * pos + 1);
            } else {
                hint.push(pos);
            }
        }
        Poly {
            global,
            split,
            keys,
            known,
            pair_base,
            pairs_total,
            last_row: std::cell::Cell::new((0, 0, 0, 0)),
            hint,
            hint_serial,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::pair;

    #[test]
    fn pair_ids_decode_to_every_writer_pair_in_row_order() {
        for m in [2u64, 3, 4, 7, 64, 1000, 4097] {
            let mut i = 0;
            for a in 0..m {
                for b in a + 1..m {
                    assert_eq!(pair(m, i), (a, b), "m = {m}, i = {i}");
                    i += 1;
                }
            }
        }
    }
}
