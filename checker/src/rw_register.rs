//! rw-register inference (elle.md §2.4): `wr` edges from unique values;
//! per-key version graphs from the initial state (nil first) and, when asked,
//! writes-follow-reads, process order and real-time order; a source that
//! makes a key's version graph cyclic is reported as `cyclic-versions` and
//! left out for that key; `ww`/`rw` edges from the version graphs; and the
//! non-cycle anomalies `G1a`, `G1b`, `internal`, `lost-update`, `garbage-read`.
//!
//! Unlike Elle, writes of `info` transactions are indexed too: a read of an
//! info transaction's unique value proves it committed.

use crate::anomaly::AnomalyType;
use crate::explain::{Anomaly, Evidence, Expected, Step};
use crate::graph::{EdgeList, Graph, NO_NODE, tarjan};
use crate::order::events;
use crate::rels::{Rel, Rels};
use crate::txn::{Status, Txns};
use rustc_hash::{FxHashMap, FxHashSet};
use store::{Atom, History, Key, MicroOp, ReadValue, Val};

const NO: u32 = u32::MAX;

/// Which version-order sources to use beyond the initial state.
#[derive(Clone, Copy, Debug, Default)]
pub struct Sources {
    /// Writes follow reads within a transaction.
    pub wfr: bool,
    /// Per-key sequential consistency (process order).
    pub sequential: bool,
    /// Per-key linearizability (real-time order).
    pub linearizable: bool,
}

const SOURCE_NAMES: [&str; 4] = ["initial-state", "wfr", "sequential", "linearizable"];

#[derive(Clone, Copy)]
struct Write {
    txn: u32,
    is_final: bool,
}

#[derive(Clone, Copy)]
struct Ext {
    key: u32,
    vid: u32,
    mop: u32,
    write: bool,
}

/// The rw-register indices kept after inference to explain edges.
pub struct RwRegister<'h> {
    vals: Vec<Option<&'h Val>>,
    ext_off: Vec<usize>,
    ext: Vec<Ext>,
    version_edges: FxHashSet<(u32, u32)>,
}

/// Output of [`RwRegister::infer`].
pub struct Inferred<'h> {
    /// Indices for explanations.
    pub index: RwRegister<'h>,
    /// Non-cycle anomalies.
    pub anomalies: Vec<Anomaly>,
    /// Data edges.
    pub edges: EdgeList,
    /// Oddities.
    pub warnings: Vec<String>,
}

fn scalar(rv: &ReadValue) -> Option<Option<&Val>> {
    match rv {
        ReadValue::Nil => Some(None),
        ReadValue::Scalar(v) => Some(Some(v)),
        ReadValue::List(_) => None,
    }
}

impl<'h> RwRegister<'h> {
    /// Runs rw-register inference.
    pub fn infer(txns: &Txns<'h>, history: &'h History, sources: Sources) -> Inferred<'h> {
        let nkeys = txns.keys.len();
        let mut warnings = Vec::new();
        let mut anomalies = Vec::new();
        let opi = |t: u32| txns.op_index(history, t);
        let key = |k: u32| Key(txns.keys[k as usize].clone());

        // Writes index (all statuses) and versions.
        let mut writes: FxHashMap<(u32, &'h Atom), Write> = FxHashMap::default();
        let mut vid_of: FxHashMap<(u32, Option<&'h Atom>), u32> = FxHashMap::default();
        let mut vals: Vec<Option<&'h Val>> = Vec::new();
        let mut vkey: Vec<u32> = Vec::new();
        let mut intern = |k: u32, v: Option<&'h Val>| -> u32 {
            let next = vals.len() as u32;
            let id = *vid_of.entry((k, v.map(|v| &v.0))).or_insert(next);
            if id == next {
                vals.push(v);
                vkey.push(k);
            }
            id
        };
        // Keys some transaction writes the format's initial value to: there a
        // read of that value has a writer, elsewhere it reads the initial state.
        let initial = history.initial_value();
        let mut initial_written: FxHashSet<u32> = FxHashSet::default();
        if let Some(iv) = initial {
            for (t, tx) in txns.txns.iter().enumerate() {
                for (i, m) in tx.mops.iter().enumerate() {
                    if matches!(m, MicroOp::Write(_, v) if v == iv) {
                        initial_written.insert(txns.key_of(t as u32, i));
                    }
                }
            }
        }
        let mut ext_off = Vec::with_capacity(txns.len() + 1);
        let mut ext: Vec<Ext> = Vec::new();
        let mut seen: Vec<u32> = Vec::new();
        let mut bad_type = 0usize;
        for (t, tx) in txns.txns.iter().enumerate() {
            let t = t as u32;
            ext_off.push(ext.len());
            // Final writes: the last write to each key.
            seen.clear();
            for (i, m) in tx.mops.iter().enumerate().rev() {
                let MicroOp::Write(_, v) = m else { continue };
                let k = txns.key_of(t, i);
                let is_final = !seen.contains(&k);
                if is_final {
                    seen.push(k);
                }
                match writes.entry((k, &v.0)) {
                    std::collections::hash_map::Entry::Occupied(o) => warnings.push(format!(
                        "value {v} written to key {} more than once (ops {} and {}); values must be unique per key",
                        key(k),
                        opi(o.get().txn),
                        opi(t)
                    )),
                    std::collections::hash_map::Entry::Vacant(e) => {
                        e.insert(Write { txn: t, is_final });
                    }
                }
                if is_final && tx.status != Status::Fail {
                    let vid = intern(k, Some(v));
                    ext.push(Ext {
                        key: k,
                        vid,
                        mop: i as u32,
                        write: true,
                    });
                }
            }
            // External reads: the first micro-op on a key, if it is a read.
            if tx.status == Status::Ok {
                seen.clear();
                for (i, m) in tx.mops.iter().enumerate() {
                    let k = txns.key_of(t, i);
                    if seen.contains(&k) {
                        continue;
                    }
                    seen.push(k);
                    if let MicroOp::Read(_, rv) = m {
                        match scalar(rv) {
                            Some(v) => {
                                let v = v.filter(|v| {
                                    initial != Some(*v) || initial_written.contains(&k)
                                });
                                let vid = intern(k, v);
                                ext.push(Ext {
                                    key: k,
                                    vid,
                                    mop: i as u32,
                                    write: false,
                                });
                            }
                            None => bad_type += 1,
                        }
                    }
                }
            }
            // Keep each txn's entries in micro-op order.
            let s = ext_off[t as usize];
            ext[s..].sort_unstable_by_key(|e| e.mop);
        }
        ext_off.push(ext.len());
        if bad_type > 0 {
            warnings.push(format!(
                "{bad_type} reads returned a list rather than a single value; ignored by rw-register"
            ));
        }
        let nil_vid: Vec<u32> = (0..nkeys as u32).map(|k| intern(k, None)).collect();
        let exts = |t: u32| &ext[ext_off[t as usize]..ext_off[t as usize + 1]];

        // Non-cycle anomalies over committed transactions.
        let mut lost: Vec<(u32, u32, u32)> = Vec::new();
        for (t, tx) in txns.txns.iter().enumerate() {
            let t = t as u32;
            if tx.status != Status::Ok {
                continue;
            }
            for e in exts(t) {
                if e.write {
                    continue;
                }
                let k = e.key;
                if exts(t).iter().any(|w| w.write && w.key == k) {
                    lost.push((k, e.vid, t));
                }
                let Some(v) = vals[e.vid as usize] else {
                    continue;
                };
                let element = v.clone();
                match writes.get(&(k, &v.0)) {
                    None => anomalies.push(Anomaly {
                        kind: AnomalyType::GarbageRead,
                        evidence: Evidence::Read {
                            op: opi(t),
                            mop: e.mop as usize,
                            key: key(k),
                            element,
                            writer: None,
                        },
                    }),
                    Some(w) if w.txn != t => {
                        let kind = if txns.txns[w.txn as usize].status == Status::Fail {
                            Some(AnomalyType::G1a)
                        } else if !w.is_final {
                            Some(AnomalyType::G1b)
                        } else {
                            None
                        };
                        if let Some(kind) = kind {
                            anomalies.push(Anomaly {
                                kind,
                                evidence: Evidence::Read {
                                    op: opi(t),
                                    mop: e.mop as usize,
                                    key: key(k),
                                    element,
                                    writer: Some(opi(w.txn)),
                                },
                            });
                        }
                    }
                    Some(_) => {}
                }
            }
            // Internal: a read must return the txn's own last write or read of the key.
            for (i, m) in tx.mops.iter().enumerate() {
                let MicroOp::Read(_, rv) = m else { continue };
                let Some(got) = scalar(rv) else { continue };
                let k = txns.key_of(t, i);
                let prior = (0..i).rev().find(|&j| txns.key_of(t, j) == k);
                let Some(j) = prior else { continue };
                let expected: Option<&Val> = match &tx.mops[j] {
                    MicroOp::Write(_, v) | MicroOp::Append(_, v) => Some(v),
                    MicroOp::Read(_, rv2) => match scalar(rv2) {
                        Some(x) => x,
                        None => continue,
                    },
                };
                if expected != got {
                    anomalies.push(Anomaly {
                        kind: AnomalyType::Internal,
                        evidence: Evidence::Internal {
                            op: opi(t),
                            mop: i,
                            key: key(k),
                            expected: Expected::Register(expected.cloned()),
                        },
                    });
                }
            }
        }
        lost.sort_unstable();
        let mut s = 0;
        while s < lost.len() {
            let mut e = s + 1;
            while e < lost.len() && lost[e].0 == lost[s].0 && lost[e].1 == lost[s].1 {
                e += 1;
            }
            if e - s > 1 {
                let (k, vid, _) = lost[s];
                anomalies.push(Anomaly {
                    kind: AnomalyType::LostUpdate,
                    evidence: Evidence::LostUpdate {
                        key: key(k),
                        value: vals[vid as usize]
                            .map_or(ReadValue::Nil, |v| ReadValue::Scalar(v.clone())),
                        txns: lost[s..e].iter().map(|x| opi(x.2)).collect(),
                    },
                });
            }
            s = e;
        }

        // Version graph candidates: (key, source, v1, v2).
        let mut vedges: Vec<(u32, u8, u32, u32)> = Vec::new();
        for (t, tx) in txns.txns.iter().enumerate() {
            for e in exts(t as u32) {
                if vals[e.vid as usize].is_some() && (e.write || tx.status == Status::Ok) {
                    vedges.push((e.key, 0, nil_vid[e.key as usize], e.vid));
                }
            }
            if sources.wfr && tx.status == Status::Ok {
                for r in exts(t as u32).iter().filter(|e| !e.write) {
                    if vals[r.vid as usize].is_none() {
                        continue;
                    }
                    for w in exts(t as u32).iter().filter(|e| e.write && e.key == r.key) {
                        if w.vid != r.vid {
                            vedges.push((r.key, 1, r.vid, w.vid));
                        }
                    }
                }
            }
        }
        // First and last external version of a key in a txn (transaction-order rule).
        let first_last = |t: u32, k: u32| -> (u32, u32) {
            let tx = &txns.txns[t as usize];
            let mut r = NO;
            let mut w = NO;
            for e in exts(t).iter().filter(|e| e.key == k) {
                if e.write {
                    w = e.vid;
                } else {
                    r = e.vid;
                }
            }
            if tx.status == Status::Ok {
                (if r != NO { r } else { w }, if w != NO { w } else { r })
            } else {
                (w, NO)
            }
        };
        let touched_keys = |t: u32| -> Vec<u32> {
            let mut ks: Vec<u32> = exts(t).iter().map(|e| e.key).collect();
            ks.sort_unstable();
            ks.dedup();
            ks
        };
        let slot = if sources.sequential || sources.linearizable {
            events(txns, history.len())
        } else {
            Vec::new()
        };
        if sources.sequential {
            let mut last: FxHashMap<(u64, u32), u32> = FxHashMap::default();
            for &(t, is_inv) in &slot {
                if t == NO || is_inv && txns.txns[t as usize].pos != txns.txns[t as usize].inv {
                    continue;
                }
                let tx = &txns.txns[t as usize];
                let Some(p) = tx.process else { continue };
                if tx.status == Status::Fail {
                    continue;
                }
                for k in touched_keys(t) {
                    let (first, lastv) = first_last(t, k);
                    if let Some(&prev) = last.get(&(p, k))
                        && first != NO
                        && prev != first
                    {
                        vedges.push((k, 2, prev, first));
                    }
                    if lastv != NO {
                        last.insert((p, k), lastv);
                    }
                }
            }
        }
        if sources.linearizable {
            let mut buf: Vec<Vec<(u32, u32)>> = vec![Vec::new(); nkeys];
            let mut inv_seq: Vec<u32> = vec![0; txns.len()];
            for (pos, &(t, is_inv)) in slot.iter().enumerate() {
                if t == NO {
                    continue;
                }
                let tx = &txns.txns[t as usize];
                if tx.status == Status::Fail {
                    continue;
                }
                if is_inv {
                    inv_seq[t as usize] = pos as u32;
                    for k in touched_keys(t) {
                        let (first, _) = first_last(t, k);
                        if first == NO {
                            continue;
                        }
                        for &(_, v) in &buf[k as usize] {
                            if v != first {
                                vedges.push((k, 3, v, first));
                            }
                        }
                    }
                    if tx.pos as usize != pos {
                        continue;
                    }
                }
                if tx.status == Status::Ok {
                    let s = inv_seq[t as usize];
                    for k in touched_keys(t) {
                        let (_, lastv) = first_last(t, k);
                        let b = &mut buf[k as usize];
                        b.retain(|&(ins, _)| ins >= s);
                        if lastv != NO {
                            b.push((pos as u32, lastv));
                        }
                    }
                }
            }
        }
        vedges.sort_unstable();
        vedges.dedup();

        // Merge sources key by key; a source that makes a key cyclic is dropped for that key.
        let mut accepted: Vec<(u32, u32)> = Vec::new();
        let mut local: Vec<u32> = vec![NO_NODE; vals.len()];
        let mut s = 0;
        while s < vedges.len() {
            let k = vedges[s].0;
            let mut e = s;
            while e < vedges.len() && vedges[e].0 == k {
                e += 1;
            }
            let group = &vedges[s..e];
            let mut keep: Vec<(u32, u32)> = Vec::new();
            let mut merged: Vec<&'static str> = Vec::new();
            for src in 0u8..4 {
                let new: Vec<(u32, u32)> = group
                    .iter()
                    .filter(|x| x.1 == src)
                    .map(|x| (x.2, x.3))
                    .collect();
                if new.is_empty() {
                    continue;
                }
                let mut tentative = keep.clone();
                tentative.extend(new);
                let cyclic = cyclic_sccs(&tentative, &mut local);
                merged.push(SOURCE_NAMES[src as usize]);
                if cyclic.is_empty() {
                    keep = tentative;
                } else {
                    for scc in cyclic {
                        anomalies.push(Anomaly {
                            kind: AnomalyType::CyclicVersions,
                            evidence: Evidence::CyclicVersions {
                                key: key(k),
                                scc: scc.iter().map(|&v| vals[v as usize].cloned()).collect(),
                                sources: merged.clone(),
                            },
                        });
                    }
                    merged.pop();
                }
            }
            accepted.extend(keep);
            s = e;
        }
        accepted.sort_unstable();
        accepted.dedup();

        // Transaction edges.
        let nv = vals.len();
        let mut woff = vec![0usize; nv + 1];
        let mut roff = vec![0usize; nv + 1];
        for e in &ext {
            if e.write {
                woff[e.vid as usize + 1] += 1;
            } else {
                roff[e.vid as usize + 1] += 1;
            }
        }
        for i in 0..nv {
            woff[i + 1] += woff[i];
            roff[i + 1] += roff[i];
        }
        let mut wlist = vec![0u32; woff[nv]];
        let mut rlist = vec![0u32; roff[nv]];
        {
            let mut wf = woff.clone();
            let mut rf = roff.clone();
            for t in 0..txns.len() as u32 {
                for e in exts(t) {
                    if e.write {
                        wlist[wf[e.vid as usize]] = t;
                        wf[e.vid as usize] += 1;
                    } else {
                        rlist[rf[e.vid as usize]] = t;
                        rf[e.vid as usize] += 1;
                    }
                }
            }
        }
        let writers = |v: u32| &wlist[woff[v as usize]..woff[v as usize + 1]];
        let readers = |v: u32| &rlist[roff[v as usize]..roff[v as usize + 1]];
        let mut el = EdgeList::default();
        for v in 0..nv as u32 {
            for &w in writers(v) {
                for &r in readers(v) {
                    el.add(w, r, Rels::WR);
                }
            }
        }
        for &(v1, v2) in &accepted {
            for &b in writers(v2) {
                for &a in writers(v1) {
                    el.add(a, b, Rels::WW);
                }
                for &a in readers(v1) {
                    el.add(a, b, Rels::RW);
                }
            }
        }
        let _ = vkey;
        Inferred {
            index: RwRegister {
                vals,
                ext_off,
                ext,
                version_edges: accepted.into_iter().collect(),
            },
            anomalies,
            edges: el,
            warnings,
        }
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
        let ea = &self.ext[self.ext_off[a as usize]..self.ext_off[a as usize + 1]];
        let eb = &self.ext[self.ext_off[b as usize]..self.ext_off[b as usize + 1]];
        for x in ea {
            for y in eb {
                if x.key != y.key {
                    continue;
                }
                let hit = match rel {
                    Rel::Wr => x.write && !y.write && x.vid == y.vid,
                    Rel::Ww => x.write && y.write && self.version_edges.contains(&(x.vid, y.vid)),
                    Rel::Rw => !x.write && y.write && self.version_edges.contains(&(x.vid, y.vid)),
                    _ => false,
                };
                if hit {
                    return Some(Step {
                        list: false,
                        key: Some(Key(txns.keys[x.key as usize].clone())),
                        value: self.vals[x.vid as usize].cloned(),
                        value2: (rel != Rel::Wr)
                            .then(|| self.vals[y.vid as usize].cloned())
                            .flatten(),
                        a_mop: Some(x.mop as usize),
                        b_mop: Some(y.mop as usize),
                        ..Step::bare(rel, txns.op_index(history, a), txns.op_index(history, b))
                    });
                }
            }
        }
        None
    }
}

/// Nontrivial SCCs (as version ids) of a small version graph.
fn cyclic_sccs(edges: &[(u32, u32)], local: &mut [u32]) -> Vec<Vec<u32>> {
    let mut nodes: Vec<u32> = Vec::new();
    for &(a, b) in edges {
        for v in [a, b] {
            if local[v as usize] == NO_NODE {
                local[v as usize] = nodes.len() as u32;
                nodes.push(v);
            }
        }
    }
    let mut el = EdgeList::default();
    for &(a, b) in edges {
        el.add(local[a as usize], local[b as usize], Rels::WW);
    }
    for &v in &nodes {
        local[v as usize] = NO_NODE;
    }
    let g = Graph::build(nodes.len(), &el);
    tarjan(&g, Rels::WW)
        .nontrivial()
        .into_iter()
        .map(|c| c.into_iter().map(|i| nodes[i as usize]).collect())
        .collect()
}
