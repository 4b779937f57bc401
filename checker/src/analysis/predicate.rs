//! Predicate dependencies (Adya's predicate-wr / predicate-rw, as
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
//! * A count read `["rc", [lo, hi], n]` reveals only how many keys of the
//!   range existed in its version set, not which. Only two counts pin the
//!   version of every key down: `n` = the reader's own earlier inserts in
//!   range — every key it wrote before the count, which exists for it
//!   whoever inserted it — (it saw no other row: `reader →rw(p) creator`
//!   for each) and `n` = own + every other key in range any non-aborted
//!   transaction wrote (it saw them all: `creator →wr(p) reader` for
//!   each). Any count between
//!   says "some of these", which orders no pair: no edge (sound, and
//!   incomplete on purpose). A count below the own inserts or above all
//!   possible rows is `predicate-read-miss` (`Evidence::CountMiss`).
//! * Result-set mismatch (`predicate-read-miss`): a row outside the range,
//!   or a row the transaction itself inserted earlier missing.
//! * Cycles: the combined graph (item edges of the version order + the
//!   predicate edges) → SCCs; per SCC and per predicate edge in it, the
//!   cycle through that edge with the fewest anti-dependencies (0-1 BFS
//!   capped at one rw, then unrestricted BFS), classified as Elle
//!   classifies; one case per type per SCC. Process or real-time edges are
//!   added as the `cycles` analysis adds them (`cycles::order_edges`, from
//!   the classes searched); a predicate edge's cycle is searched without
//!   them first, and only a cycle that needs one is a `-process` /
//!   `-realtime` variant (`G-single-process`, `G2-realtime`, …), which the
//!   strong-session and strict models proscribe. Bounded by the budget.

use super::cycles::{OrderEdges, order_edges};
use super::{Analysis, AnalyzeOptions, Context, Found};
use crate::anomaly::{AnomalyType, Variant};
use crate::explain::{Anomaly, Evidence, PredicateSite, Site, Step};
use crate::graph::{EdgeList, Graph, tarjan};
use crate::rels::{Rel, Rels};
use crate::txn::{Status, Txns};
use std::collections::{BTreeMap, HashMap, VecDeque};
use store::{Atom, Key, MicroOp, OpIndex, RangeKind, RangeRead, Val};

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
        cx.txns.n_range_reads > 0
    }

    fn run(&self, cx: &Context<'_, '_>, out: &mut Found) {
        let keys = KeyIndex::new(cx.txns);
        let creators = creators(cx, &keys);
        let (edges, misses) = Edges::new(cx, &keys, &creators).collect();
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
        // A garbage first element (no writer, `observe::NO`) names no creator.
        if let Some(&w) = cx.obs.longest_ids(k).first()
            && w != crate::observe::NO
        {
            first[k as usize] = cx.obs.write(w).val(cx.txns);
        }
    }
    for t in &cx.txns.txns {
        for m in cx.txns.mops_of(t) {
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
        let e = &mut only[w.key(cx.txns) as usize];
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
            let val = w.val(cx.txns)?;
            (cx.txns.txns[w.txn as usize].status != Status::Fail).then_some(Creator {
                txn: w.txn,
                mop: w.mop,
                val,
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
    /// The count, for an edge of a count read.
    count: Option<u64>,
}

/// Builds the predicate edges of every committed range and count read,
/// and their result-set mismatches.
struct Edges<'c, 'h> {
    cx: &'c Context<'c, 'h>,
    keys: &'c KeyIndex<'h>,
    creators: &'c [Option<Creator<'h>>],
    /// Keys some non-aborted transaction wrote (rows that may exist).
    live: Vec<bool>,
    edges: Vec<PredEdge<'h>>,
    misses: Vec<Anomaly>,
}

impl<'c, 'h> Edges<'c, 'h> {
    fn new(
        cx: &'c Context<'c, 'h>,
        keys: &'c KeyIndex<'h>,
        creators: &'c [Option<Creator<'h>>],
    ) -> Edges<'c, 'h> {
        let mut live = vec![false; cx.txns.keys.len()];
        for w in &cx.obs.writes {
            if cx.txns.txns[w.txn as usize].status != Status::Fail {
                live[w.key(cx.txns) as usize] = true;
            }
        }
        Edges {
            cx,
            keys,
            creators,
            live,
            edges: Vec::new(),
            misses: Vec::new(),
        }
    }

    fn collect(mut self) -> (Vec<PredEdge<'h>>, Vec<Anomaly>) {
        let txns = self.cx.txns;
        for (t, txn) in txns.txns.iter().enumerate() {
            if txn.status != Status::Ok {
                continue;
            }
            for (j, m) in txns.mops_of(txn).iter().enumerate() {
                let MicroOp::ReadRange(r) = m else { continue };
                match (&r.kind, &r.rows) {
                    (RangeKind::Rows, Some(rows)) => self.rows(t as u32, j, r, rows),
                    (RangeKind::Count(Some(n)), _) => self.count(t as u32, j, r, *n),
                    _ => {}
                }
            }
        }
        (self.edges, self.misses)
    }

    /// `c →wr(p) t` if the read `(t, j)` saw `row`, else `t →rw(p) c`.
    fn edge(
        &mut self,
        (t, j): (u32, usize),
        r: &'h RangeRead,
        row: &'h Atom,
        c: Creator<'h>,
        seen: bool,
    ) {
        let (from, to) = if seen { (c.txn, t) } else { (t, c.txn) };
        self.edges.push(PredEdge {
            from,
            to,
            seen,
            reader: (t, j),
            range: r,
            row,
            creator: c,
            count: match r.kind {
                RangeKind::Count(n) => n,
                RangeKind::Rows => None,
            },
        });
    }

    /// A range read: per key in range, seen or missed.
    fn rows(&mut self, t: u32, j: usize, r: &'h RangeRead, rows: &'h [(Key, Vec<Val>)]) {
        let cx = self.cx;
        for (rk, l) in rows {
            if !r.matches(rk) {
                self.misses
                    .push(miss(cx, t, j, rk, l.last().cloned(), None));
            }
        }
        for (atom, k) in self.keys.in_range(r) {
            let Some(c) = self.creators[k as usize] else {
                continue;
            };
            let seen = rows.iter().any(|(rk, _)| &rk.0 == atom);
            if c.txn != t {
                self.edge((t, j), r, atom, c, seen);
            } else if (c.mop as usize) < j && !seen {
                let w = Some(cx.txns.op_index(cx.history, t));
                let key = Key(atom.clone());
                self.misses
                    .push(miss(cx, t, j, &key, Some(c.val.clone()), w));
            }
        }
    }

    /// A count read: edges only when it counted none or all of the other
    /// transactions' rows (module doc).
    fn count(&mut self, t: u32, j: usize, r: &'h RangeRead, n: u64) {
        let (mut own, mut possible) = (0u64, 0u64);
        let mut others: Vec<(&'h Atom, Creator<'h>)> = Vec::new();
        // Rows the reader wrote before the count exist for it, whoever
        // inserted them: counted, never "missed".
        let mops = self.cx.txns.mops(t);
        let wrote = |a: &Atom| {
            mops[..j]
                .iter()
                .any(|m| matches!(m, MicroOp::Append(k, _) | MicroOp::Write(k, _) if &k.0 == a))
        };
        for (atom, k) in self.keys.in_range(r) {
            match self.creators[k as usize] {
                _ if wrote(atom) => own += 1,
                Some(c) if c.txn == t => {}
                Some(c) => {
                    possible += 1;
                    others.push((atom, c));
                }
                None => possible += u64::from(self.live[k as usize]),
            }
        }
        if n < own || n > own + possible {
            let cx = self.cx;
            self.misses.push(Anomaly {
                kind: AnomalyType::PredicateReadMiss,
                evidence: Evidence::CountMiss {
                    op: cx.txns.op_index(cx.history, t),
                    mop: j,
                    range: [r.lo.clone(), r.hi.clone()],
                    count: n,
                    bounds: [own, own + possible],
                },
            });
        } else if possible > 0 && (n == own || n == own + possible) {
            // n == own: none of the others' rows seen; else all of them.
            let all = n > own;
            for (atom, c) in others {
                self.edge((t, j), r, atom, c, all);
            }
        }
    }
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
    /// A process or real-time step.
    Order(Rel),
}

/// Per directed pair: the best non-anti-dependency label, the best
/// anti-dependency label, and an order (process / real-time) step.
#[derive(Clone, Copy, Default)]
struct Pair {
    flow: Option<Label>,
    anti: Option<Label>,
    order: Option<Label>,
}

struct Combined {
    succ: Vec<Vec<(u32, Pair)>>,
}

fn combine(
    cx: &Context<'_, '_>,
    edges: &[PredEdge<'_>],
    order: OrderEdges<'_>,
) -> (Combined, Graph) {
    let n = cx.txns.len();
    let mut pairs: HashMap<(u32, u32), Pair> = HashMap::new();
    let mut all = EdgeList::default();
    cx.versions.edges(cx.txns).each(&mut |a, b, rels| {
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
    });
    for (i, e) in edges.iter().enumerate() {
        let p = pairs.entry((e.from, e.to)).or_default();
        let slot = if e.seen { &mut p.flow } else { &mut p.anti };
        slot.get_or_insert(Label::Pred(i as u32));
        all.add(e.from, e.to, Rels::DATA);
    }
    order.edges.each(&mut |a, b, rels| {
        let rel = if rels.contains(Rel::Realtime) {
            Rel::Realtime
        } else {
            Rel::Process
        };
        pairs
            .entry((a, b))
            .or_default()
            .order
            .get_or_insert(Label::Order(rel));
        all.add(a, b, rels);
    });
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

/// Cycles through predicate edges, one case per type (and variant) per SCC.
fn find_cycles(cx: &Context<'_, '_>, edges: &[PredEdge<'_>], out: &mut Found) {
    let order = order_edges(cx);
    let (variant, mask) = (order.variant, order.mask);
    let (g, graph) = combine(cx, edges, order);
    let sccs = tarjan(&graph, mask);
    // Cycles without order steps lie in the SCCs of the data edges alone.
    let data = (variant != Variant::Plain).then(|| tarjan(&graph, Rels::DATA).comp);
    let kinds: Vec<AnomalyType> = [Variant::Plain, variant]
        .into_iter()
        .flat_map(|v| CLASSES.iter().filter_map(move |c| c.with_variant(v)))
        .fold(Vec::new(), |mut v, k| {
            if !v.contains(&k) {
                v.push(k);
            }
            v
        });
    let mut by_comp: HashMap<u32, Vec<u32>> = HashMap::new();
    for (i, e) in edges.iter().enumerate() {
        let (ca, cb) = (sccs.comp[e.from as usize], sccs.comp[e.to as usize]);
        if ca == cb {
            by_comp.entry(ca).or_default().push(i as u32);
        }
    }
    let mut comps: Vec<_> = by_comp.into_iter().collect();
    comps.sort_by_key(|c| c.0);
    let mut search = Searcher {
        g: &g,
        edges,
        comp: &sccs.comp,
        data: data.as_deref().unwrap_or(&sccs.comp),
        variant,
        scratch: Scratch::new(cx.txns.len()),
    };
    for (comp, pred) in comps {
        let mut found: Vec<AnomalyType> = Vec::new();
        let size = sccs.size[comp as usize];
        for i in pred {
            if found.len() == kinds.len() {
                break;
            }
            if cx.opts.budget.charge(u64::from(size)) {
                out.push(Anomaly {
                    kind: AnomalyType::CycleSearchTimeout,
                    evidence: Evidence::Timeout {
                        scc_size: size as usize,
                        does_not_contain: kinds
                            .iter()
                            .copied()
                            .filter(|c| !found.contains(c))
                            .collect(),
                    },
                });
                break;
            }
            let Some(steps) = search.cheapest_cycle(i) else {
                continue;
            };
            let kind = classify(&steps, edges, variant);
            if found.contains(&kind) {
                continue;
            }
            found.push(kind);
            out.push(explain_cycle(cx, edges, kind, &steps));
        }
    }
}

/// What a path may use: at most `cap` anti-dependency steps (`u8::MAX`:
/// any), and order steps or not.
#[derive(Clone, Copy)]
struct Search {
    cap: u8,
    order: bool,
}

/// BFS state over (node, anti-dependencies used ≤ 1), allocated once and
/// reset by what a search touched, so a search costs what it visits, not
/// the history's size (thousands of small SCCs in a 100k history).
struct Scratch {
    prev: Vec<Option<(u32, usize, Label)>>,
    seen: Vec<bool>,
    touched: Vec<usize>,
    queue: VecDeque<(u32, usize)>,
}

impl Scratch {
    fn new(n: usize) -> Scratch {
        Scratch {
            prev: vec![None; 2 * n],
            seen: vec![false; 2 * n],
            touched: Vec::new(),
            queue: VecDeque::new(),
        }
    }

    fn reset(&mut self) {
        for i in self.touched.drain(..) {
            self.seen[i] = false;
            self.prev[i] = None;
        }
        self.queue.clear();
    }
}

/// The cycle search of one analysis: the combined graph, its SCCs (with
/// and without order edges) and the BFS scratch.
struct Searcher<'a, 'h> {
    g: &'a Combined,
    edges: &'a [PredEdge<'h>],
    /// SCC of each node in the graph with order edges (if any).
    comp: &'a [u32],
    /// SCC of each node over data edges alone.
    data: &'a [u32],
    variant: Variant,
    scratch: Scratch,
}

impl Searcher<'_, '_> {
    /// The cycle through predicate edge `i` with the fewest
    /// anti-dependencies: steps `(from, label)` starting at the edge's
    /// source. Order steps only if no cycle of data steps exists (then it
    /// is the `variant`'s).
    fn cheapest_cycle(&mut self, i: u32) -> Option<Vec<(u32, Label)>> {
        let e = &self.edges[i as usize];
        let (from, to) = (e.from as usize, e.to as usize);
        let mut tries: Vec<(Search, &[u32])> = Vec::with_capacity(6);
        if self.data[from] == self.data[to] {
            for cap in [0u8, 1, u8::MAX] {
                tries.push((Search { cap, order: false }, self.data));
            }
        }
        if self.variant != Variant::Plain {
            for cap in [0u8, 1, u8::MAX] {
                tries.push((Search { cap, order: true }, self.comp));
            }
        }
        for (search, within) in tries {
            let c = within[from];
            if let Some(mut path) = self.bfs(e.to, e.from, search, |v| within[v as usize] == c) {
                path.insert(0, (e.from, Label::Pred(i)));
                return Some(path);
            }
        }
        None
    }

    /// Shortest path `src ⇝ dst` within the nodes `inside` accepts, under
    /// `search`'s limits.
    fn bfs(
        &mut self,
        src: u32,
        dst: u32,
        search: Search,
        inside: impl Fn(u32) -> bool,
    ) -> Option<Vec<(u32, Label)>> {
        let found = self.walk(src, dst, search, inside);
        let path = found.map(|end| self.path(end));
        self.scratch.reset();
        path
    }

    fn walk(
        &mut self,
        src: u32,
        dst: u32,
        search: Search,
        inside: impl Fn(u32) -> bool,
    ) -> Option<usize> {
        let cap = search.cap;
        let levels = if cap == u8::MAX { 1 } else { cap as usize + 1 };
        let idx = |v: u32, r: usize| v as usize * 2 + r;
        let s = &mut self.scratch;
        s.seen[idx(src, 0)] = true;
        s.touched.push(idx(src, 0));
        s.queue.push_back((src, 0usize));
        while let Some((u, r)) = s.queue.pop_front() {
            if u == dst {
                return Some(idx(u, r));
            }
            for &(v, pair) in &self.g.succ[u as usize] {
                if !inside(v) {
                    continue;
                }
                let mut next: [Option<(usize, Label)>; 3] = [None; 3];
                next[0] = pair.flow.map(|l| (r, l));
                if search.order {
                    next[1] = pair.order.map(|l| (r, l));
                }
                if let Some(l) = pair.anti {
                    let r2 = if cap == u8::MAX { 0 } else { r + 1 };
                    if r2 < levels {
                        next[2] = Some((r2, l));
                    }
                }
                for (r2, l) in next.into_iter().flatten() {
                    let j = idx(v, r2);
                    if !s.seen[j] {
                        s.seen[j] = true;
                        s.prev[j] = Some((u, r, l));
                        s.touched.push(j);
                        s.queue.push_back((v, r2));
                    }
                }
            }
        }
        None
    }

    /// The steps leading to state `end`, in order.
    fn path(&self, end: usize) -> Vec<(u32, Label)> {
        let mut path = Vec::new();
        let mut j = end;
        while let Some((p, pr, l)) = self.scratch.prev[j] {
            path.push((p, l));
            j = p as usize * 2 + pr;
        }
        path.reverse();
        path
    }
}

fn is_anti(l: Label, edges: &[PredEdge<'_>]) -> bool {
    match l {
        Label::Item(r) => r == Rel::Rw,
        Label::Pred(i) => !edges[i as usize].seen,
        Label::Order(_) => false,
    }
}

/// Elle's classification of a cycle holding a predicate
/// edge: by its anti-dependencies (item or predicate), with no `-item`;
/// the `variant` if it holds an order step.
fn classify(steps: &[(u32, Label)], edges: &[PredEdge<'_>], variant: Variant) -> AnomalyType {
    let n = steps.len();
    let anti: Vec<bool> = steps.iter().map(|s| is_anti(s.1, edges)).collect();
    let count = anti.iter().filter(|a| **a).count();
    let adjacent = (0..n).any(|i| anti[i] && anti[(i + 1) % n]);
    let base = match count {
        0 => AnomalyType::G1c,
        1 => AnomalyType::GSingle,
        _ if adjacent => AnomalyType::G2,
        _ => AnomalyType::GNonadjacent,
    };
    let ordered = steps.iter().any(|s| matches!(s.1, Label::Order(_)));
    let v = if ordered { variant } else { Variant::Plain };
    base.with_variant(v).unwrap_or(base)
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
                Label::Order(rel) => crate::order::explain(cx.txns, cx.history, a, b, rel)
                    .unwrap_or_else(|| Step::bare(rel, op(a), op(b))),
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
            count: e.count,
        }));
    }
    s
}
