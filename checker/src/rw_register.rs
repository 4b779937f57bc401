//! rw-register's version order (Elle): per-key version graphs
//! merged from providers — the initial state (nil first) always and, when
//! asked, writes-follow-reads, process order and real-time order; a provider
//! that makes a key's version graph cyclic is reported as `cyclic-versions`
//! and left out for that key; `wr` edges from unique values and `ww`/`rw`
//! edges from the merged version graphs.
//!
//! What each read saw (`G1a`, `G1b`, `internal`, `garbage-read`) and lost
//! updates come from the observations (`analysis::reads`,
//! `analysis::lost_update`).
//!
//! A read of the history's initial value (peer formats, e.g. 0) on a key
//! nobody writes that value to is a read of the initial state, like nil
//! (`Observations::reads_initial`).
//!
//! Unlike Elle, writes of `info` transactions are used too: a read of an info
//! transaction's unique value proves it committed.

use crate::anomaly::AnomalyType;
use crate::explain::{Anomaly, Evidence, Site, Step};
use crate::graph::{EdgeList, Edges, Graph, NO_NODE, bits_for, radix_sort, tarjan};
use crate::observe::{Observations, Read, ReadFrom, Value, read_scalar};
use crate::order::events;
use crate::rels::{Rel, Rels};
use crate::txn::{Status, Txns};
use crate::versions::VersionOrder;
use rustc_hash::{FxHashMap, FxHashSet};
use store::{Atom, History, Key, MicroOp, ReadValue, Val};

const NO: u32 = u32::MAX;

/// Which version-order providers to use beyond the initial state.
#[derive(Clone, Copy, Debug, Default)]
pub struct Sources {
    /// Writes follow reads within a transaction.
    pub wfr: bool,
    /// Per-key sequential consistency (process order).
    pub sequential: bool,
    /// Per-key linearizability (real-time order).
    pub linearizable: bool,
}

/// A version-order provider: `(key, older version, newer version)` edges.
type Provider = fn(&Versions<'_>, &Txns<'_>, &History) -> Vec<(u32, u32, u32)>;

/// The providers, in the order they are merged (a later one is dropped for
/// a key it makes cyclic); the names appear in `cyclic-versions`.
const PROVIDERS: [(&str, Provider); 5] = [
    ("initial-state", initial_state),
    ("db", database),
    ("wfr", writes_follow_reads),
    ("sequential", sequential),
    ("linearizable", linearizable),
];

/// An external micro-op: a transaction's final write of a key, or its first
/// micro-op on a key when that is a read.
#[derive(Clone, Copy)]
struct Ext {
    key: u32,
    vid: u32,
    mop: u32,
    write: bool,
}

/// Versions (interned (key, value) pairs, nil included) and each
/// transaction's external micro-ops.
///
/// Key decision: a (key, value) pair is interned through the observations'
/// write ids, not hashed again: a written pair is its write id (the
/// observations' index already maps each written (key, value) to exactly
/// one id), nil (and the format's initial value where nobody writes it) is
/// the key's slot, and only values nobody wrote are hashed. Version ids are
/// handed out in the order pairs are first met, as a hash map keyed by the
/// pair would.
struct Versions<'h> {
    vals: Vec<Option<&'h Val>>,
    /// Version of each write id ([`NO`]: not interned).
    vid_of_write: Vec<u32>,
    /// Versions of values nobody wrote.
    vid_of_garbage: FxHashMap<(u32, &'h Atom), u32>,
    ext_off: Vec<usize>,
    ext: Vec<Ext>,
    /// Each key's nil version.
    nil_vid: Vec<u32>,
}

impl<'h> Versions<'h> {
    fn new(txns: &Txns<'h>, obs: &Observations<'h>) -> Versions<'h> {
        let mut v = Versions {
            vals: Vec::new(),
            vid_of_write: vec![NO; obs.writes.len()],
            vid_of_garbage: FxHashMap::default(),
            ext_off: Vec::with_capacity(txns.len() + 1),
            ext: Vec::new(),
            nil_vid: vec![NO; txns.keys.len()],
        };
        let mut seen: Vec<u32> = Vec::new();
        for (t, tx) in txns.txns.iter().enumerate() {
            let t = t as u32;
            v.ext_off.push(v.ext.len());
            // Final writes: the last write to each key.
            seen.clear();
            for (i, m) in txns.mops_of(tx).iter().enumerate().rev() {
                let MicroOp::Write(_, val) = m else { continue };
                let k = txns.key_of(t, i);
                if seen.contains(&k) {
                    continue;
                }
                seen.push(k);
                if tx.status != Status::Fail {
                    let vid = v.intern(obs, k, Some(val));
                    v.ext.push(Ext {
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
                for (i, m) in txns.mops_of(tx).iter().enumerate() {
                    let k = txns.key_of(t, i);
                    if seen.contains(&k) {
                        continue;
                    }
                    seen.push(k);
                    if let MicroOp::Read(_, rv) = m
                        && let Some(val) = read_scalar(rv)
                    {
                        // The format's initial value, on a key nobody writes
                        // it to, is the initial state (nil).
                        let val = val.filter(|x| !obs.reads_initial(k, x));
                        let vid = v.intern(obs, k, val);
                        v.ext.push(Ext {
                            key: k,
                            vid,
                            mop: i as u32,
                            write: false,
                        });
                    }
                }
            }
            // Keep each txn's entries in micro-op order.
            let s = v.ext_off[t as usize];
            v.ext[s..].sort_unstable_by_key(|e| e.mop);
        }
        v.ext_off.push(v.ext.len());
        for k in 0..txns.keys.len() as u32 {
            v.intern(obs, k, None);
        }
        v
    }

    /// The version of `val` on key `k`, a new one if it has none yet.
    fn intern(&mut self, obs: &Observations<'h>, k: u32, val: Option<&'h Val>) -> u32 {
        let next = self.vals.len() as u32;
        let slot = match val {
            None => &mut self.nil_vid[k as usize],
            Some(x) => match obs.write_of(k, x) {
                Some(w) => &mut self.vid_of_write[w as usize],
                None => self.vid_of_garbage.entry((k, &x.0)).or_insert(NO),
            },
        };
        if *slot == NO {
            *slot = next;
            self.vals.push(val);
        }
        *slot
    }

    fn exts(&self, t: u32) -> &[Ext] {
        &self.ext[self.ext_off[t as usize]..self.ext_off[t as usize + 1]]
    }

    /// First and last external version of a key in a txn (the
    /// transaction-order rule).
    fn first_last(&self, txns: &Txns<'_>, t: u32, k: u32) -> (u32, u32) {
        let tx = &txns.txns[t as usize];
        let mut r = NO;
        let mut w = NO;
        for e in self.exts(t).iter().filter(|e| e.key == k) {
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
    }

    fn touched_keys(&self, t: u32) -> Vec<u32> {
        let mut ks: Vec<u32> = self.exts(t).iter().map(|e| e.key).collect();
        ks.sort_unstable();
        ks.dedup();
        ks
    }
}

/// Every version a committed read saw or a write installed follows nil.
fn initial_state(v: &Versions<'_>, txns: &Txns<'_>, _: &History) -> Vec<(u32, u32, u32)> {
    let mut out = Vec::new();
    for (t, tx) in txns.txns.iter().enumerate() {
        for e in v.exts(t as u32) {
            if v.vals[e.vid as usize].is_some() && (e.write || tx.status == Status::Ok) {
                out.push((e.key, v.nil_vid[e.key as usize], e.vid));
            }
        }
    }
    out
}

/// The database's own version order, where the history carries it
/// (`whitebox`: `--version-order db`): of two committed writers of a key
/// with certificates, the one visible in the other's snapshot came first.
/// Nothing for black-box histories. Quadratic in a key's writers, which
/// key rotation bounds (`--max-writes-per-key`).
fn database(v: &Versions<'_>, txns: &Txns<'_>, history: &History) -> Vec<(u32, u32, u32)> {
    let certs: Vec<Option<crate::whitebox::Cert>> = (0..txns.len() as u32)
        .map(|t| match txns.status(t) {
            Status::Ok => crate::whitebox::cert(history.extra(txns.txns[t as usize].pos as usize)),
            _ => None,
        })
        .collect();
    let mut writers: FxHashMap<u32, Vec<(usize, u32)>> = FxHashMap::default();
    for (t, c) in certs.iter().enumerate() {
        if c.is_some() {
            for e in v.exts(t as u32).iter().filter(|e| e.write) {
                writers.entry(e.key).or_default().push((t, e.vid));
            }
        }
    }
    let mut out = Vec::new();
    for (k, ws) in writers {
        for &(a, va) in &ws {
            for &(b, vb) in &ws {
                if let (Some(ca), Some(cb)) = (&certs[a], &certs[b])
                    && va != vb
                    && ca.precedes(cb)
                {
                    out.push((k, va, vb));
                }
            }
        }
    }
    out
}

/// A committed transaction's write of a key follows the version it read.
fn writes_follow_reads(v: &Versions<'_>, txns: &Txns<'_>, _: &History) -> Vec<(u32, u32, u32)> {
    let mut out = Vec::new();
    for (t, tx) in txns.txns.iter().enumerate() {
        if tx.status != Status::Ok {
            continue;
        }
        let exts = v.exts(t as u32);
        for r in exts.iter().filter(|e| !e.write) {
            if v.vals[r.vid as usize].is_none() {
                continue;
            }
            for w in exts.iter().filter(|e| e.write && e.key == r.key) {
                if w.vid != r.vid {
                    out.push((r.key, r.vid, w.vid));
                }
            }
        }
    }
    out
}

/// Per process, each key's versions follow the process's order.
fn sequential(v: &Versions<'_>, txns: &Txns<'_>, history: &History) -> Vec<(u32, u32, u32)> {
    let mut out = Vec::new();
    let mut last: FxHashMap<(u64, u32), u32> = FxHashMap::default();
    for (t, is_inv) in events(txns, history.len()).iter() {
        if t == NO || is_inv && txns.txns[t as usize].pos != txns.txns[t as usize].inv {
            continue;
        }
        let tx = &txns.txns[t as usize];
        let Some(p) = txns.process(t) else { continue };
        if tx.status == Status::Fail {
            continue;
        }
        for k in v.touched_keys(t) {
            let (first, lastv) = v.first_last(txns, t, k);
            if let Some(&prev) = last.get(&(p, k))
                && first != NO
                && prev != first
            {
                out.push((k, prev, first));
            }
            if lastv != NO {
                last.insert((p, k), lastv);
            }
        }
    }
    out
}

/// Each key's versions follow real-time order (a completed transaction's
/// versions precede those of every transaction invoked later).
fn linearizable(v: &Versions<'_>, txns: &Txns<'_>, history: &History) -> Vec<(u32, u32, u32)> {
    let mut out = Vec::new();
    let mut buf: Vec<Vec<(u32, u32)>> = vec![Vec::new(); txns.keys.len()];
    let mut inv_seq: Vec<u32> = vec![0; txns.len()];
    for (pos, (t, is_inv)) in events(txns, history.len()).iter().enumerate() {
        if t == NO {
            continue;
        }
        let tx = &txns.txns[t as usize];
        if tx.status == Status::Fail {
            continue;
        }
        if is_inv {
            inv_seq[t as usize] = pos as u32;
            for k in v.touched_keys(t) {
                let (first, _) = v.first_last(txns, t, k);
                if first == NO {
                    continue;
                }
                for &(_, x) in &buf[k as usize] {
                    if x != first {
                        out.push((k, x, first));
                    }
                }
            }
            if tx.pos as usize != pos {
                continue;
            }
        }
        if tx.status == Status::Ok {
            let s = inv_seq[t as usize];
            for k in v.touched_keys(t) {
                let (_, lastv) = v.first_last(txns, t, k);
                let b = &mut buf[k as usize];
                b.retain(|&(ins, _)| ins >= s);
                if lastv != NO {
                    b.push((pos as u32, lastv));
                }
            }
        }
    }
    out
}

/// The merged register version order.
pub struct RwRegister<'h> {
    versions: Versions<'h>,
    version_edges: FxHashSet<(u32, u32)>,
}

impl<'h> RwRegister<'h> {
    /// Merges the providers `sources` asks for, key by key; returns the
    /// order and the `cyclic-versions` anomalies.
    pub fn new(
        txns: &Txns<'h>,
        obs: &Observations<'h>,
        history: &'h History,
        sources: Sources,
    ) -> (RwRegister<'h>, Vec<Anomaly>) {
        let versions = Versions::new(txns, obs);
        let used = [
            true,
            true,
            sources.wfr,
            sources.sequential,
            sources.linearizable,
        ];
        // Candidates: (key, provider, v1, v2).
        let mut vedges: Vec<(u32, u8, u32, u32)> = Vec::new();
        // Packed as one `u64` (key, provider, v1, v2 from the top) where
        // that fits, the candidates are radix-sorted: same order, linear.
        let (kb, vb) = (bits_for(txns.keys.len()), bits_for(versions.vals.len()));
        let mut packed: Vec<u64> = Vec::new();
        const _: () = assert!(PROVIDERS.len() <= 8, "a provider takes 3 bits");
        let pack = kb + 3 + 2 * vb <= 64;
        for (src, (_, provider)) in PROVIDERS.iter().enumerate() {
            if used[src] {
                let found = provider(&versions, txns, history).into_iter();
                if pack {
                    packed.extend(found.map(|(k, a, b)| {
                        (u64::from(k) << 3 | src as u64) << (2 * vb)
                            | u64::from(a) << vb
                            | u64::from(b)
                    }));
                } else {
                    vedges.extend(found.map(|(k, a, b)| (k, src as u8, a, b)));
                }
            }
        }
        if pack {
            radix_sort(&mut packed, &mut Vec::new(), 0..kb + 3 + 2 * vb);
            packed.dedup();
            let low = |x: u64, w: u32| (x & ((1u64 << w) - 1)) as u32;
            vedges.extend(packed.into_iter().map(|x| {
                let ks = x >> (2 * vb);
                (
                    (ks >> 3) as u32,
                    (ks & 7) as u8,
                    low(x >> vb, vb),
                    low(x, vb),
                )
            }));
        } else {
            vedges.sort_unstable();
            vedges.dedup();
        }

        // A provider that makes a key cyclic is dropped for that key.
        let mut anomalies = Vec::new();
        let mut accepted: Vec<(u32, u32)> = Vec::new();
        let mut local: Vec<u32> = vec![NO_NODE; versions.vals.len()];
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
            for (src, (name, _)) in PROVIDERS.iter().enumerate() {
                let new: Vec<(u32, u32)> = group
                    .iter()
                    .filter(|x| x.1 as usize == src)
                    .map(|x| (x.2, x.3))
                    .collect();
                if new.is_empty() {
                    continue;
                }
                let mut tentative = keep.clone();
                tentative.extend(new);
                let cyclic = cyclic_sccs(&tentative, &mut local);
                merged.push(name);
                if cyclic.is_empty() {
                    keep = tentative;
                } else {
                    for scc in cyclic {
                        anomalies.push(Anomaly {
                            kind: AnomalyType::CyclicVersions,
                            evidence: Evidence::CyclicVersions {
                                key: Key(txns.keys[k as usize].clone()),
                                scc: scc
                                    .iter()
                                    .map(|&v| versions.vals[v as usize].cloned())
                                    .collect(),
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
        (
            RwRegister {
                versions,
                version_edges: accepted.into_iter().collect(),
            },
            anomalies,
        )
    }

    fn accepted_sorted(&self) -> Vec<(u32, u32)> {
        let mut v: Vec<(u32, u32)> = self.version_edges.iter().copied().collect();
        v.sort_unstable();
        v
    }
}

/// rw-register's data edges: the writers and the external readers of each
/// version, grouped once (a counting sort by version), and the accepted
/// version edges in order; the edges are yielded from them on every call.
struct DataEdges {
    woff: Vec<usize>,
    roff: Vec<usize>,
    wlist: Vec<u32>,
    rlist: Vec<u32>,
    accepted: Vec<(u32, u32)>,
}

impl DataEdges {
    fn new(reg: &RwRegister<'_>, txns: &Txns<'_>) -> DataEdges {
        let v = &reg.versions;
        let nv = v.vals.len();
        let mut woff = vec![0usize; nv + 1];
        let mut roff = vec![0usize; nv + 1];
        for e in &v.ext {
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
        let mut wf = woff.clone();
        let mut rf = roff.clone();
        for t in 0..txns.len() as u32 {
            for e in v.exts(t) {
                if e.write {
                    wlist[wf[e.vid as usize]] = t;
                    wf[e.vid as usize] += 1;
                } else {
                    rlist[rf[e.vid as usize]] = t;
                    rf[e.vid as usize] += 1;
                }
            }
        }
        DataEdges {
            woff,
            roff,
            wlist,
            rlist,
            accepted: reg.accepted_sorted(),
        }
    }

    fn writers(&self, v: u32) -> &[u32] {
        &self.wlist[self.woff[v as usize]..self.woff[v as usize + 1]]
    }

    fn readers(&self, v: u32) -> &[u32] {
        &self.rlist[self.roff[v as usize]..self.roff[v as usize + 1]]
    }
}

impl Edges for DataEdges {
    fn each(&self, add: &mut dyn FnMut(u32, u32, Rels)) {
        for x in 0..self.woff.len() as u32 - 1 {
            for &w in self.writers(x) {
                for &r in self.readers(x) {
                    add(w, r, Rels::WR);
                }
            }
        }
        for &(v1, v2) in &self.accepted {
            for &b in self.writers(v2) {
                for &a in self.writers(v1) {
                    add(a, b, Rels::WW);
                }
                for &a in self.readers(v1) {
                    add(a, b, Rels::RW);
                }
            }
        }
    }
}

impl<'h> VersionOrder<'h> for RwRegister<'h> {
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
        let v = &self.versions;
        for x in v.exts(a) {
            for y in v.exts(b) {
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
                    let site = Site {
                        key: Key(txns.keys[x.key as usize].clone()),
                        a_mop: x.mop as usize,
                        b_mop: y.mop as usize,
                    };
                    let value2 = (rel != Rel::Wr)
                        .then(|| v.vals[y.vid as usize].cloned())
                        .flatten();
                    let (from, to) = (txns.op_index(history, a), txns.op_index(history, b));
                    return Some(Step::data(
                        rel,
                        from,
                        to,
                        false,
                        Some(site),
                        v.vals[x.vid as usize].cloned(),
                        value2,
                    ));
                }
            }
        }
        None
    }

    fn read_version(&self, txns: &Txns<'h>, read: &Read) -> Option<u32> {
        let Value::Register(val) = read.value(txns) else {
            return None;
        };
        // A read of the initial state (nil, or the format's initial
        // value), of a write (the observations named it), or of a value
        // nobody wrote: the slot `Versions::intern` filled, if it did.
        let k = read.key(txns);
        let v = &self.versions;
        let vid = match (read.from(), val) {
            (ReadFrom::Initial, _) | (_, None) => v.nil_vid.get(k as usize).copied(),
            (ReadFrom::Write(w), Some(_)) => v.vid_of_write.get(w as usize).copied(),
            (ReadFrom::Garbage, Some(x)) => v.vid_of_garbage.get(&(k, &x.0)).copied(),
        };
        vid.filter(|&id| id != NO)
    }

    fn version_value(&self, _: u32, version: u32) -> ReadValue {
        self.versions
            .vals
            .get(version as usize)
            .copied()
            .flatten()
            .map_or(ReadValue::Nil, |v| ReadValue::Scalar(v.clone()))
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
