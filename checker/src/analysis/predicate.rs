//! Predicate dependencies (issue 16; Adya's predicate-wr / predicate-rw, as
//! Emme computes them) and the predicate forms of the cycle anomalies:
//! `G1c`, `G-single`, `G-nonadjacent`, `G2` for cycles with at least one
//! predicate edge, beside the `-item` forms the `cycles` analysis reports.
//! This is what tells repeatable read (PL-2.99: proscribes `G2-item`) from
//! serializable (PL-3: also `G2`) in the model lattice.
//!
//! Key decisions and invariants:
//! * A range read `["rr", [lo, hi], rows]` evaluates `lo <= k <= hi` over one
//!   version of every key: a returned row's list, or — absent row — the
//!   initial state. The predicate depends only on the key, so the one
//!   version of a key that changes the matches is its first: the row's
//!   insertion (the first element of its list, by the list-append prefix
//!   order). Hence per key in range: row returned ⇒ `creator →wr(p) reader`;
//!   row missing ⇒ `reader →rw(p) creator`. That is Emme's Algorithm 3 at
//!   O(keys in range) per read rather than O(versions).
//! * A key's creator: the writer of the first element of its longest item
//!   read, else of the first element of a row any range read returned, else
//!   its only writer. Keys with no known creator give no predicate edge
//!   (fewer edges: never a false cycle).
//! * The rows are the read's version set, not item reads: they add no item
//!   `wr`/`rw` edges (Adya), so a cycle reported here needs its predicate
//!   edge.
//! * Result-set mismatch (`predicate-read-miss`): a row outside the range,
//!   or a row the transaction itself inserted earlier missing.
//! * Cycles: the combined graph (item edges of the version order + the
//!   predicate edges) → SCCs; per SCC and per predicate edge in it, the
//!   cycle through that edge with the fewest anti-dependencies (0-1 BFS
//!   capped at one rw, then unrestricted BFS), classified as Elle
//!   classifies; one case per type per SCC. Plain variants only (no
//!   process / real-time edges). Bounded by the budget.

use super::{Analysis, AnalyzeOptions, Context, Found};
use crate::anomaly::AnomalyType;
use crate::explain::{Anomaly, Evidence, PredicateSite, Site, Step};
use crate::graph::{EdgeList, Graph, tarjan};
use crate::rels::{Rel, Rels};
use crate::txn::{Status, Txns};
use std::collections::{BTreeMap, HashMap, VecDeque};
use store::{Atom, Key, MicroOp, OpIndex, RangeRead, Val};

/// Predicate edges and predicate-form cycles.
pub struct Predicate;

impl Analysis for Predicate {
    fn name(&self) -> &'static str {
        "predicate"
    }

    /// Always: its findings count for `not` whatever was asked; it does
    /// nothing on histories without range reads (see `applies`).
    fn needed(&self, _: &AnalyzeOptions<'_>) -> bool {
        true
    }

    fn applies(&self, cx: &Context<'_, '_>) -> bool {
        cx.txns
            .txns
            .iter()
            .any(|t| t.mops.iter().any(|m| matches!(m, MicroOp::ReadRange(_))))
    }

    fn run(&self, cx: &Context<'_, '_>, out: &mut Found) {
        let keys = KeyIndex::new(cx.txns);
        let creators = creators(cx, &keys);
        let (edges, misses) = predicate_edges(cx, &keys, &creators);
        for a in misses {
            out.push(a);
        }
        if !edges.is_empty() {
            find_cycles(cx, &edges, out);
        }
    }
}

/// Keys by value, for range lookups.
struct KeyIndex<'h> {
    by_atom: BTreeMap<&'h Atom, u32>,
}

impl<'h> KeyIndex<'h> {
    fn new(txns: &Txns<'h>) -> KeyIndex<'h> {
        let by_atom = txns
            .keys
            .iter()
            .enumerate()
            .map(|(i, a)| (*a, i as u32))
            .collect();
        KeyIndex { by_atom }
    }

    fn id(&self, k: &Key) -> Option<u32> {
        self.by_atom.get(&k.0).copied()
    }

    /// Every known key the range read's predicate matches.
    fn in_range<'a>(&'a self, r: &'a RangeRead) -> impl Iterator<Item = (&'h Atom, u32)> + 'a {
        self.by_atom
            .range::<Atom, _>((&r.lo.0)..=(&r.hi.0))
            .map(|(a, i)| (*a, *i))
            .filter(|(a, _)| r.matches(&Key((*a).clone())))
    }
}

/// Who inserted a key: transaction, micro-op, the element appended.
#[derive(Clone, Copy)]
struct Creator<'h> {
    txn: u32,
    mop: u32,
    val: &'h Val,
}

/// Each key's creator, where it can be known (see the module doc).
fn creators<'h>(cx: &Context<'_, 'h>, keys: &KeyIndex<'h>) -> Vec<Option<Creator<'h>>> {
    let n = cx.txns.keys.len();
    let mut first: Vec<Option<&'h Val>> = vec![None; n];
    for k in 0..n as u32 {
        if let Some(&w) = cx.obs.longest_ids(k).first() {
            first[k as usize] = Some(cx.obs.write(w).val);
        }
    }
    for t in &cx.txns.txns {
        for m in t.mops {
            let MicroOp::ReadRange(r) = m else { continue };
            for (rk, l) in r.rows.iter().flatten() {
                if let (Some(k), Some(v)) = (keys.id(rk), l.first()) {
                    first[k as usize].get_or_insert(v);
                }
            }
        }
    }
    let mut only: Vec<(u32, Option<u32>)> = vec![(0, None); n];
    for (i, w) in cx.obs.writes.iter().enumerate() {
        let e = &mut only[w.key as usize];
        e.0 += 1;
        e.1 = Some(i as u32);
    }
    (0..n)
        .map(|k| {
            let w = match first[k] {
                Some(v) => cx.obs.write_of(k as u32, v)?,
                None if only[k].0 == 1 => only[k].1?,
                None => return None,
            };
            let w = cx.obs.write(w);
            (cx.txns.txns[w.txn as usize].status != Status::Fail).then_some(Creator {
                txn: w.txn,
                mop: w.mop,
                val: w.val,
            })
        })
        .collect()
}

/// One predicate dependency: `from → to`, seen (wr) or missed (rw).
struct PredEdge<'h> {
    from: u32,
    to: u32,
    seen: bool,
    /// The range read's transaction and micro-op.
    reader: (u32, usize),
    range: &'h RangeRead,
    row: &'h Atom,
    creator: Creator<'h>,
}

/// The predicate edges of every committed range read, and its result-set
/// mismatches.
fn predicate_edges<'h>(
    cx: &Context<'_, 'h>,
    keys: &KeyIndex<'h>,
    creators: &[Option<Creator<'h>>],
) -> (Vec<PredEdge<'h>>, Vec<Anomaly>) {
    let (mut edges, mut misses) = (Vec::new(), Vec::new());
    for (t, txn) in cx.txns.txns.iter().enumerate() {
        if txn.status != Status::Ok {
            continue;
        }
        let t = t as u32;
        for (j, m) in txn.mops.iter().enumerate() {
            let MicroOp::ReadRange(r) = m else { continue };
            let Some(rows) = &r.rows else { continue };
            for (rk, l) in rows {
                if !r.matches(rk) {
                    misses.push(miss(cx, t, j, rk, l.last().cloned(), None));
                }
            }
            for (atom, k) in keys.in_range(r) {
                let Some(c) = creators[k as usize] else {
                    continue;
                };
                let seen = rows.iter().any(|(rk, _)| &rk.0 == atom);
                if c.txn == t {
                    if !seen && (c.mop as usize) < j {
                        let w = Some(cx.txns.op_index(cx.history, t));
                        misses.push(miss(cx, t, j, &Key(atom.clone()), Some(c.val.clone()), w));
                    }
                    continue;
                }
                let (from, to) = if seen { (c.txn, t) } else { (t, c.txn) };
                edges.push(PredEdge {
                    from,
                    to,
                    seen,
                    reader: (t, j),
                    range: r,
                    row: atom,
                    creator: c,
                });
            }
        }
    }
    (edges, misses)
}

fn miss(
    cx: &Context<'_, '_>,
    t: u32,
    mop: usize,
    key: &Key,
    element: Option<Val>,
    writer: Option<OpIndex>,
) -> Anomaly {
    Anomaly {
        kind: AnomalyType::PredicateReadMiss,
        evidence: Evidence::Read {
            op: cx.txns.op_index(cx.history, t),
            mop,
            key: key.clone(),
            element: element.unwrap_or(Val::int(0)),
            writer,
        },
    }
}

/// How one step of the combined graph is explained.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Label {
    Item(Rel),
    Pred(u32),
}

/// Per directed pair: the best non-anti-dependency label and the best
/// anti-dependency label.
#[derive(Clone, Copy, Default)]
struct Pair {
    flow: Option<Label>,
    anti: Option<Label>,
}

struct Combined {
    succ: Vec<Vec<(u32, Pair)>>,
}

fn combine(cx: &Context<'_, '_>, edges: &[PredEdge<'_>]) -> (Combined, Graph) {
    let n = cx.txns.len();
    let mut pairs: HashMap<(u32, u32), Pair> = HashMap::new();
    let item = cx.versions.edges(cx.txns);
    let mut all = EdgeList::default();
    for &(a, b, rels) in &item.edges {
        let p = pairs.entry((a, b)).or_default();
        if rels.contains(Rel::Ww) || rels.contains(Rel::Wr) {
            let r = if rels.contains(Rel::Wr) {
                Rel::Wr
            } else {
                Rel::Ww
            };
            p.flow.get_or_insert(Label::Item(r));
        }
        if rels.contains(Rel::Rw) {
            p.anti.get_or_insert(Label::Item(Rel::Rw));
        }
        all.add(a, b, Rels::DATA);
    }
    for (i, e) in edges.iter().enumerate() {
        let p = pairs.entry((e.from, e.to)).or_default();
        let slot = if e.seen { &mut p.flow } else { &mut p.anti };
        slot.get_or_insert(Label::Pred(i as u32));
        all.add(e.from, e.to, Rels::DATA);
    }
    let mut succ = vec![Vec::new(); n];
    for ((a, b), p) in pairs {
        if a != b {
            succ[a as usize].push((b, p));
        }
    }
    for s in &mut succ {
        s.sort_by_key(|x| x.0);
    }
    (Combined { succ }, Graph::from_edges(n, all))
}

/// The cycle classes this analysis reports.
const CLASSES: [AnomalyType; 4] = [
    AnomalyType::G1c,
    AnomalyType::GSingle,
    AnomalyType::GNonadjacent,
    AnomalyType::G2,
];

/// Cycles through predicate edges, one case per type per SCC.
fn find_cycles(cx: &Context<'_, '_>, edges: &[PredEdge<'_>], out: &mut Found) {
    let (g, graph) = combine(cx, edges);
    let sccs = tarjan(&graph, Rels::DATA);
    let mut by_comp: HashMap<u32, Vec<u32>> = HashMap::new();
    for (i, e) in edges.iter().enumerate() {
        let (ca, cb) = (sccs.comp[e.from as usize], sccs.comp[e.to as usize]);
        if ca == cb {
            by_comp.entry(ca).or_default().push(i as u32);
        }
    }
    let mut comps: Vec<_> = by_comp.into_iter().collect();
    comps.sort_by_key(|c| c.0);
    let mut in_comp = vec![false; cx.txns.len()];
    for (comp, pred) in comps {
        for (v, c) in sccs.comp.iter().enumerate() {
            in_comp[v] = *c == comp;
        }
        let mut found: Vec<AnomalyType> = Vec::new();
        let size = sccs.size[comp as usize];
        for i in pred {
            if found.len() == CLASSES.len() {
                break;
            }
            if cx.opts.budget.charge(u64::from(size)) {
                out.push(Anomaly {
                    kind: AnomalyType::CycleSearchTimeout,
                    evidence: Evidence::Timeout {
                        scc_size: size as usize,
                        does_not_contain: CLASSES
                            .iter()
                            .copied()
                            .filter(|c| !found.contains(c))
                            .collect(),
                    },
                });
                break;
            }
            let Some(steps) = cheapest_cycle(&g, edges, i, &in_comp) else {
                continue;
            };
            let kind = classify(&steps, edges);
            if found.contains(&kind) {
                continue;
            }
            found.push(kind);
            out.push(explain_cycle(cx, edges, kind, &steps));
        }
    }
}

/// The cycle through predicate edge `i` with the fewest anti-dependencies:
/// steps `(from, label)` starting at the edge's source.
fn cheapest_cycle(
    g: &Combined,
    edges: &[PredEdge<'_>],
    i: u32,
    in_comp: &[bool],
) -> Option<Vec<(u32, Label)>> {
    let e = &edges[i as usize];
    let first = (e.from, Label::Pred(i));
    for cap in [0u8, 1, u8::MAX] {
        if let Some(mut path) = bfs(g, e.to, e.from, cap, in_comp) {
            path.insert(0, first);
            return Some(path);
        }
    }
    None
}

/// Shortest path `src ⇝ dst` using at most `cap` anti-dependency steps
/// (`u8::MAX`: any), over states (node, anti-dependencies used).
fn bfs(g: &Combined, src: u32, dst: u32, cap: u8, in_comp: &[bool]) -> Option<Vec<(u32, Label)>> {
    let levels = if cap == u8::MAX { 1 } else { cap as usize + 1 };
    let n = g.succ.len();
    let idx = |v: u32, r: usize| v as usize * levels + r;
    let mut prev: Vec<Option<(u32, usize, Label)>> = vec![None; n * levels];
    let mut seen = vec![false; n * levels];
    let mut q = VecDeque::new();
    seen[idx(src, 0)] = true;
    q.push_back((src, 0usize));
    while let Some((u, r)) = q.pop_front() {
        if u == dst {
            let mut path = Vec::new();
            let (mut v, mut rv) = (u, r);
            while let Some((p, pr, l)) = prev[idx(v, rv)] {
                path.push((p, l));
                (v, rv) = (p, pr);
            }
            path.reverse();
            return Some(path);
        }
        for &(v, pair) in &g.succ[u as usize] {
            if !in_comp[v as usize] {
                continue;
            }
            let mut next: Vec<(usize, Label)> = Vec::with_capacity(2);
            if let Some(l) = pair.flow {
                next.push((r, l));
            }
            if let Some(l) = pair.anti {
                let r2 = if cap == u8::MAX { 0 } else { r + 1 };
                if r2 < levels {
                    next.push((r2, l));
                }
            }
            for (r2, l) in next {
                if !seen[idx(v, r2)] {
                    seen[idx(v, r2)] = true;
                    prev[idx(v, r2)] = Some((u, r, l));
                    q.push_back((v, r2));
                }
            }
        }
    }
    None
}

fn is_anti(l: Label, edges: &[PredEdge<'_>]) -> bool {
    match l {
        Label::Item(r) => r == Rel::Rw,
        Label::Pred(i) => !edges[i as usize].seen,
    }
}

/// Elle's classification (elle.md §3.1) of a cycle holding a predicate
/// edge: by its anti-dependencies (item or predicate), with no `-item`.
fn classify(steps: &[(u32, Label)], edges: &[PredEdge<'_>]) -> AnomalyType {
    let n = steps.len();
    let anti: Vec<bool> = steps.iter().map(|s| is_anti(s.1, edges)).collect();
    let count = anti.iter().filter(|a| **a).count();
    let adjacent = (0..n).any(|i| anti[i] && anti[(i + 1) % n]);
    match count {
        0 => AnomalyType::G1c,
        1 => AnomalyType::GSingle,
        _ if adjacent => AnomalyType::G2,
        _ => AnomalyType::GNonadjacent,
    }
}

fn explain_cycle(
    cx: &Context<'_, '_>,
    edges: &[PredEdge<'_>],
    kind: AnomalyType,
    steps: &[(u32, Label)],
) -> Anomaly {
    let n = steps.len();
    let op = |t: u32| cx.txns.op_index(cx.history, t);
    let mut cycle: Vec<OpIndex> = steps.iter().map(|s| op(s.0)).collect();
    cycle.push(op(steps[0].0));
    let explained = (0..n)
        .map(|i| {
            let (a, l) = steps[i];
            let b = steps[(i + 1) % n].0;
            match l {
                Label::Item(rel) => cx
                    .versions
                    .explain(cx.txns, cx.history, a, b, rel)
                    .unwrap_or_else(|| Step::bare(rel, op(a), op(b))),
                Label::Pred(j) => predicate_step(cx, &edges[j as usize]),
            }
        })
        .collect();
    Anomaly {
        kind,
        evidence: Evidence::Cycle {
            cycle,
            steps: explained,
        },
    }
}

fn predicate_step(cx: &Context<'_, '_>, e: &PredEdge<'_>) -> Step {
    let op = |t: u32| cx.txns.op_index(cx.history, t);
    let row = Key(e.row.clone());
    let (rel, a_mop, b_mop, value, value2) = if e.seen {
        let v = Some(e.creator.val.clone());
        (Rel::Wr, e.creator.mop as usize, e.reader.1, v, None)
    } else {
        let v = Some(e.creator.val.clone());
        (Rel::Rw, e.reader.1, e.creator.mop as usize, None, v)
    };
    let site = Site {
        key: row.clone(),
        a_mop,
        b_mop,
    };
    let mut s = Step::data(rel, op(e.from), op(e.to), true, Some(site), value, value2);
    if let Step::Wr(d) | Step::Rw(d) = &mut s {
        d.predicate = Some(Box::new(PredicateSite {
            lo: e.range.lo.clone(),
            hi: e.range.hi.clone(),
            row,
            seen: e.seen,
        }));
    }
    s
}
