//! From saturated edges to anomalies: one graph per level (weakest first,
//! without then with session order), its strongly connected components, one
//! cycle per component through an edge that level adds, classified by the
//! strongest axiom it uses and explained with the checker's cycle steps.
//!
//! Key decision: a component is reported once, at the weakest level where
//! it appears, so `not` names the weakest model the history breaks (as
//! Biswas & Enea's Table 2 does). An inferred edge t2 → t1 is explained as a
//! `ww` step (t1's write of the key comes after t2's in every commit order
//! the level allows); a read of the initial state that some visible writer
//! overwrote is explained as the visibility path plus an `rw` step.

use super::observe::{INIT, Observations, Sites};
use super::saturate::{Cat, Inferred};
use crate::anomaly::AnomalyType;
use crate::explain::{Anomaly, Evidence, ProcessStep, Site, Step};
use crate::graph::{EdgeList, Edges, Graph, tarjan};
use crate::rels::{Rel, Rels};
use crate::txn::Txns;
use std::collections::VecDeque;
use store::{History, Key, MicroOp, ReadValue, Val};

/// At most this many cases of one anomaly type are explained.
pub const MAX_CASES_PER_TYPE: usize = 256;

/// The kind of an edge of the commit-order graph.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    /// Write-read: `b` = the reader's micro-op, `c` = the writer's.
    Wr,
    /// Session order (`b` = process index in `Observations::session_process`).
    So,
    /// Inferred (`b` = reader, `c` = key).
    Inf(Cat),
}

impl Kind {
    fn bit(self) -> u8 {
        match self {
            Kind::Wr => 1,
            Kind::So => 2,
            Kind::Inf(Cat::Rc) => 4,
            Kind::Inf(Cat::RaWr) => 8,
            Kind::Inf(Cat::Nr) => 16,
            Kind::Inf(Cat::RaSo) => 32,
            Kind::Inf(Cat::Cc) => 64,
        }
    }
}

/// An edge of the commit-order graph.
#[derive(Clone, Copy, Debug)]
pub struct Edge {
    /// Source transaction.
    pub from: u32,
    /// Target transaction.
    pub to: u32,
    /// What forces it.
    pub kind: Kind,
    /// See [`Kind`].
    pub b: u32,
    /// See [`Kind`].
    pub c: u32,
}

/// One graph to search: the kinds it holds and the kinds it adds, in the
/// order a cycle through them is preferred.
struct LevelGraph {
    mask: u8,
    new: &'static [Kind],
}

const WR: u8 = 1;
const SO: u8 = 2;
const RC: u8 = 4;
const RAWR: u8 = 8 | 16;
const RASO: u8 = 32;
const CC: u8 = 64;

fn levels(max: Cat) -> Vec<LevelGraph> {
    let mut v = vec![
        LevelGraph {
            mask: WR | RC,
            new: &[Kind::Inf(Cat::Rc), Kind::Wr],
        },
        LevelGraph {
            mask: WR | SO | RC,
            new: &[Kind::Inf(Cat::Rc), Kind::So],
        },
    ];
    if max >= Cat::RaWr {
        v.push(LevelGraph {
            mask: WR | RC | RAWR,
            new: &[Kind::Inf(Cat::Nr), Kind::Inf(Cat::RaWr)],
        });
        v.push(LevelGraph {
            mask: WR | SO | RC | RAWR | RASO,
            new: &[
                Kind::Inf(Cat::Nr),
                Kind::Inf(Cat::RaWr),
                Kind::Inf(Cat::RaSo),
            ],
        });
    }
    if max >= Cat::Cc {
        v.push(LevelGraph {
            mask: WR | SO | RC | RAWR | RASO | CC,
            new: &[Kind::Inf(Cat::Cc)],
        });
    }
    v
}

/// Adjacency of the edges of one mask: per node, edge ids sorted by kind.
struct Csr {
    off: Vec<u32>,
    ids: Vec<u32>,
}

impl Csr {
    fn new(n: usize, edges: &[Edge], mask: u8) -> Csr {
        let mut keyed: Vec<(u32, Kind, u32)> = edges
            .iter()
            .enumerate()
            .filter(|(_, e)| e.kind.bit() & mask != 0)
            .map(|(i, e)| (e.from, e.kind, i as u32))
            .collect();
        keyed.sort_unstable_by_key(|&(f, k, i)| (f, k, i));
        let mut off = vec![0u32; n + 1];
        for &(f, _, _) in &keyed {
            off[f as usize + 1] += 1;
        }
        for i in 0..n {
            off[i + 1] += off[i];
        }
        Csr {
            off,
            ids: keyed.into_iter().map(|(_, _, i)| i).collect(),
        }
    }

    fn out(&self, u: u32) -> &[u32] {
        &self.ids[self.off[u as usize] as usize..self.off[u as usize + 1] as usize]
    }
}

/// Everything needed to explain edges.
pub struct Ctx<'a, 'h> {
    /// The history.
    pub history: &'h History,
    /// Its transactions.
    pub txns: &'a Txns<'h>,
    /// The observations.
    pub obs: &'a Observations,
    /// Where each of their reads is.
    pub sites: &'a Sites,
    /// Whether data steps concern lists.
    pub list: bool,
}

fn written(m: &MicroOp) -> Option<Val> {
    match m {
        MicroOp::Write(_, v) | MicroOp::Append(_, v) => Some(v.clone()),
        MicroOp::Read(_, ReadValue::Scalar(v)) => Some(v.clone()),
        MicroOp::Read(_, ReadValue::List(l)) => l.last().cloned(),
        MicroOp::Read(_, ReadValue::Nil) | MicroOp::ReadRange(_) => None,
    }
}

impl Ctx<'_, '_> {
    fn key(&self, k: u32) -> Key {
        Key(self.txns.keys[k as usize].clone())
    }

    /// The micro-op of `t`'s last write of `key`, if it writes it.
    fn last_write(&self, t: u32, key: u32) -> Option<u32> {
        super::observe::last_write(self.txns, self.list, t, key)
    }

    fn mop(&self, t: u32, i: u32) -> Option<&MicroOp> {
        self.txns.mops(t).get(i as usize)
    }

    fn step(&self, e: &Edge) -> Step {
        let (a, b) = (
            self.txns.op_index(self.history, e.from),
            self.txns.op_index(self.history, e.to),
        );
        match e.kind {
            Kind::So => Step::Process(ProcessStep {
                from: a,
                to: b,
                process: self.obs.session_process.get(e.b as usize).copied(),
            }),
            Kind::Wr => {
                let key = self
                    .mop(e.to, e.b)
                    .map(|m| Key(m.key().0.clone()))
                    .or_else(|| self.mop(e.from, e.c).map(|m| Key(m.key().0.clone())));
                let value = self.mop(e.from, e.c).and_then(written);
                let site = key.map(|key| Site {
                    key,
                    a_mop: e.c as usize,
                    b_mop: e.b as usize,
                });
                Step::data(Rel::Wr, a, b, self.list, site, value, None)
            }
            Kind::Inf(_) => {
                let wa = self.last_write(e.from, e.c);
                let wb = self.last_write(e.to, e.c);
                let value = wa.and_then(|i| self.mop(e.from, i)).and_then(written);
                let value2 = wb.and_then(|i| self.mop(e.to, i)).and_then(written);
                let site = site(self.key(e.c), wa, wb);
                Step::data(Rel::Ww, a, b, self.list, site, value, value2)
            }
        }
    }

    fn anomaly(&self, kind: AnomalyType, path: &[Edge], closing: Option<Step>) -> Anomaly {
        let mut cycle: Vec<_> = path
            .iter()
            .map(|e| self.txns.op_index(self.history, e.from))
            .collect();
        let mut steps: Vec<Step> = path.iter().map(|e| self.step(e)).collect();
        if let Some(s) = closing {
            cycle.push(s.ends().0);
            steps.push(s);
        }
        if let Some(&f) = cycle.first() {
            cycle.push(f);
        }
        Anomaly {
            kind,
            evidence: Evidence::Cycle { cycle, steps },
        }
    }
}

/// A data step's site: the key and both micro-ops (none when a micro-op is
/// not known).
fn site(key: Key, a_mop: Option<u32>, b_mop: Option<u32>) -> Option<Site> {
    Some(Site {
        key,
        a_mop: a_mop? as usize,
        b_mop: b_mop? as usize,
    })
}

/// The anomaly type of a cycle with these edges.
fn classify(path: &[Edge]) -> AnomalyType {
    let has = |k: Kind| path.iter().any(|e| e.kind == k);
    let process = has(Kind::So) || has(Kind::Inf(Cat::RaSo));
    if has(Kind::Inf(Cat::Cc)) {
        AnomalyType::CausalityViolation
    } else if has(Kind::Inf(Cat::Nr)) {
        AnomalyType::NonRepeatableRead
    } else if has(Kind::Inf(Cat::RaWr)) || has(Kind::Inf(Cat::RaSo)) {
        if process {
            AnomalyType::FracturedReadProcess
        } else {
            AnomalyType::FracturedRead
        }
    } else if has(Kind::Inf(Cat::Rc)) {
        if process {
            AnomalyType::NonMonotonicReadProcess
        } else {
            AnomalyType::NonMonotonicRead
        }
    } else {
        AnomalyType::CyclicCausalOrder
    }
}

fn init_kind(cat: Cat) -> AnomalyType {
    match cat {
        Cat::Rc => AnomalyType::NonMonotonicRead,
        Cat::RaWr => AnomalyType::FracturedRead,
        Cat::Nr => AnomalyType::NonRepeatableRead,
        Cat::RaSo => AnomalyType::FracturedReadProcess,
        Cat::Cc => AnomalyType::CausalityViolation,
    }
}

/// The base edges: session order and write-read.
pub fn base_edges(obs: &Observations, sites: &Sites) -> Vec<Edge> {
    let mut edges = Vec::new();
    for (si, s) in obs.sessions.iter().enumerate() {
        for w in s.windows(2) {
            edges.push(Edge {
                from: w[0],
                to: w[1],
                kind: Kind::So,
                b: si as u32,
                c: 0,
            });
        }
    }
    for t in 0..obs.n as u32 {
        for (r, &(mop, wmop)) in obs.reads(t).iter().zip(sites.of(obs, t)) {
            if r.writer != INIT {
                edges.push(Edge {
                    from: r.writer,
                    to: t,
                    kind: Kind::Wr,
                    b: mop,
                    c: wmop,
                });
            }
        }
    }
    edges
}

/// Searches the level graphs up to `max` and explains one cycle per
/// component, plus every read of an initial state a visible writer had
/// overwritten (at most one per reader).
pub fn report(
    ctx: &Ctx<'_, '_>,
    mut edges: Vec<Edge>,
    inferred: &[Inferred],
    max: Cat,
) -> Vec<Anomaly> {
    let n = ctx.obs.n;
    let mut out: Vec<Anomaly> = Vec::new();
    let mut count = std::collections::BTreeMap::<AnomalyType, usize>::new();

    // Reads of the initial state: the cycle goes through the initial
    // transaction, which precedes everything.
    let mut init: Vec<&Inferred> = inferred
        .iter()
        .filter(|e| e.to == INIT && e.cat <= max)
        .collect();
    init.sort_by_key(|e| (e.reader, e.cat, e.from, e.key));
    init.dedup_by_key(|e| e.reader);
    if !init.is_empty() {
        let base = Csr::new(n, &edges, WR | SO);
        for e in init {
            // The cap first: a causal visibility path is a search.
            if count.get(&init_kind(e.cat)).copied().unwrap_or(0) >= MAX_CASES_PER_TYPE {
                continue;
            }
            let Some(path) = visibility(ctx, &edges, &base, e) else {
                continue;
            };
            let (a, b) = (
                ctx.txns.op_index(ctx.history, e.reader),
                ctx.txns.op_index(ctx.history, e.from),
            );
            let a_mop = ctx
                .obs
                .reads(e.reader)
                .iter()
                .zip(ctx.sites.of(ctx.obs, e.reader))
                .find(|(r, _)| r.key == e.key && r.writer == INIT)
                .map(|(_, &(mop, _))| mop);
            let wb = ctx.last_write(e.from, e.key);
            let value2 = wb.and_then(|i| ctx.mop(e.from, i)).and_then(written);
            let site = site(ctx.key(e.key), a_mop, wb);
            let rw = Step::data(Rel::Rw, a, b, ctx.list, site, None, value2);
            let a = ctx.anomaly(init_kind(e.cat), &path, Some(rw));
            push(&mut out, &mut count, a);
        }
    }

    // Every level's graph is a subgraph of the union of their masks: when
    // that one is acyclic no level has a component to report, and the
    // per-level graphs (an adjacency sort each) are never built. The union
    // is built from the edges in place, without the combined list.
    let union = levels(max).iter().fold(0, |m, l| m | l.mask);
    if acyclic(n, &edges, inferred, max, union) {
        return out;
    }
    edges.extend(
        inferred
            .iter()
            .filter(|e| e.to != INIT && e.cat <= max)
            .map(|e| Edge {
                from: e.from,
                to: e.to,
                kind: Kind::Inf(e.cat),
                b: e.reader,
                c: e.key,
            }),
    );
    let mut reported = vec![false; n];
    for level in levels(max) {
        let csr = Csr::new(n, &edges, level.mask);
        let mut el = EdgeList::default();
        for e in &edges {
            if e.kind.bit() & level.mask != 0 {
                el.add(e.from, e.to, Rels::WW);
            }
        }
        let sccs = tarjan(&Graph::from_edges(n, el), Rels::WW);
        let comp = &sccs.comp;
        for scc in sccs.nontrivial() {
            if scc.iter().any(|&t| reported[t as usize]) {
                continue;
            }
            let Some(start) = level.new.iter().find_map(|&k| {
                scc.iter().find_map(|&u| {
                    csr.out(u).iter().copied().find(|&i| {
                        let e = &edges[i as usize];
                        e.kind == k && comp[e.to as usize] == comp[u as usize]
                    })
                })
            }) else {
                continue;
            };
            let Some(path) = cycle_through(&edges, &csr, comp, start) else {
                continue;
            };
            for &t in &scc {
                reported[t as usize] = true;
            }
            let a = ctx.anomaly(classify(&path), &path, None);
            push(&mut out, &mut count, a);
        }
    }
    out
}

/// The base edges and the inferred ones (up to `max`) as one graph's source.
struct Union<'a> {
    base: &'a [Edge],
    inferred: &'a [Inferred],
    max: Cat,
    mask: u8,
}

impl Edges for Union<'_> {
    fn each(&self, add: &mut dyn FnMut(u32, u32, Rels)) {
        for e in self.base {
            if e.kind.bit() & self.mask != 0 {
                add(e.from, e.to, Rels::WW);
            }
        }
        for e in self.inferred {
            if e.to != INIT && e.cat <= self.max && Kind::Inf(e.cat).bit() & self.mask != 0 {
                add(e.from, e.to, Rels::WW);
            }
        }
    }
}

/// Whether the graph of `base` and `inferred` edges (up to `max`) of the
/// kinds in `mask` has no cycle.
fn acyclic(n: usize, base: &[Edge], inferred: &[Inferred], max: Cat, mask: u8) -> bool {
    let union = Union {
        base,
        inferred,
        max,
        mask,
    };
    let graph = Graph::from_sources(n, &[&union]);
    tarjan(&graph, Rels::WW).size.iter().all(|&s| s <= 1)
}

/// Keeps `a` unless its type already has [`MAX_CASES_PER_TYPE`] cases.
fn push(
    out: &mut Vec<Anomaly>,
    count: &mut std::collections::BTreeMap<AnomalyType, usize>,
    a: Anomaly,
) {
    let c = count.entry(a.kind).or_default();
    if *c < MAX_CASES_PER_TYPE {
        *c += 1;
        out.push(a);
    }
}

/// The shortest cycle through edge `start` inside its component.
fn cycle_through(edges: &[Edge], csr: &Csr, comp: &[u32], start: u32) -> Option<Vec<Edge>> {
    let e0 = edges[start as usize];
    let c = comp[e0.from as usize];
    let path = bfs(
        edges,
        csr,
        e0.to,
        e0.from,
        |v| comp[v as usize] == c,
        u8::MAX,
    )?;
    let mut out = vec![e0];
    out.extend(path);
    Some(out)
}

/// Edges of a shortest path `src → dst` over edges of `mask` through nodes
/// that `inside` accepts.
fn bfs(
    edges: &[Edge],
    csr: &Csr,
    src: u32,
    dst: u32,
    inside: impl Fn(u32) -> bool,
    mask: u8,
) -> Option<Vec<Edge>> {
    if src == dst {
        return Some(Vec::new());
    }
    let mut parent: rustc_hash::FxHashMap<u32, u32> = rustc_hash::FxHashMap::default();
    let mut q = VecDeque::from([src]);
    while let Some(u) = q.pop_front() {
        for &i in csr.out(u) {
            let e = &edges[i as usize];
            if e.kind.bit() & mask == 0 || e.to == src || !inside(e.to) {
                continue;
            }
            if parent.contains_key(&e.to) {
                continue;
            }
            parent.insert(e.to, i);
            if e.to == dst {
                let mut path = Vec::new();
                let mut v = dst;
                while v != src {
                    let pe = *parent.get(&v)?;
                    path.push(edges[pe as usize]);
                    v = edges[pe as usize].from;
                }
                path.reverse();
                return Some(path);
            }
            q.push_back(e.to);
        }
    }
    None
}

/// How the reader of `e` saw `e.from`: a read from it, an earlier
/// transaction of its session, or (causal) a happens-before path.
fn visibility(ctx: &Ctx<'_, '_>, edges: &[Edge], base: &Csr, e: &Inferred) -> Option<Vec<Edge>> {
    match e.cat {
        Cat::Rc | Cat::RaWr | Cat::Nr => {
            let (_, &(mop, wmop)) = ctx
                .obs
                .reads(e.reader)
                .iter()
                .zip(ctx.sites.of(ctx.obs, e.reader))
                .find(|(r, _)| r.writer == e.from)?;
            Some(vec![Edge {
                from: e.from,
                to: e.reader,
                kind: Kind::Wr,
                b: mop,
                c: wmop,
            }])
        }
        Cat::RaSo => Some(vec![Edge {
            from: e.from,
            to: e.reader,
            kind: Kind::So,
            b: ctx.obs.session[e.reader as usize],
            c: 0,
        }]),
        Cat::Cc => bfs(edges, base, e.from, e.reader, |_| true, WR | SO),
    }
}
