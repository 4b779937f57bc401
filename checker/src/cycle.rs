//! Cycle search within strongly connected components (Elle):
//! a short cycle per anomaly class (`G0`, `G1c`, `G-single-item`,
//! `G-nonadjacent-item`, `G2-item`, and their `-process`/`-realtime`
//! variants), in severity order, skipping classes a found cycle implies.
//!
//! Key decisions: everything is iterative (explicit queues and stacks); each
//! class first gets a linear-time pre-check that prunes the candidate first
//! edges (sub-SCCs of the class's relations; for `G-single` the
//! condensation's topological order; for `G-nonadjacent` SCCs of a two-state
//! graph that forbids two `rw` steps in a row), then a BFS in a small state
//! space (node × wanted-relation seen × rw state) from each candidate edge.
//! Work is charged to the [`Budget`].

use crate::anomaly::{AnomalyType, Variant, all_implied};
use crate::budget::Budget;
use crate::graph::{Graph, NO_NODE, Sccs, induced};
use crate::rels::{Rel, Rels};
use crate::sccs::{Components, Levels, Reach};
use std::collections::{BTreeSet, VecDeque};

/// A cycle found: `steps[i] = (node, rel)` means an edge `node → next node`
/// labelled `rel`; the last step returns to the first node. Nodes are the
/// global (transaction) ids of the searched graph.
#[derive(Clone, Debug, PartialEq)]
pub struct Cycle {
    /// Its classification.
    pub kind: AnomalyType,
    /// The steps.
    pub steps: Vec<(u32, Rel)>,
}

/// A component whose search ran out of budget.
#[derive(Clone, Debug, PartialEq)]
pub struct Timeout {
    /// Its size.
    pub scc_size: usize,
    /// Classes not yet ruled out.
    pub remaining: Vec<AnomalyType>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum RwMode {
    Forbid,
    Exactly1,
    NonAdjacent,
    Any,
}

#[derive(Clone, Copy, Debug)]
struct Spec {
    kind: AnomalyType,
    legal: Rels,
    first: Rels,
    want: Rels,
    rw: RwMode,
}

fn specs(variants: &[Variant]) -> Vec<Spec> {
    let mut out = Vec::new();
    for &v in variants {
        let x = match v {
            Variant::Plain => Rels::NONE,
            Variant::Process => Rels::PROCESS,
            Variant::Realtime => Rels::REALTIME,
        };
        let base = [
            (
                AnomalyType::G0,
                Rels::WW,
                if x.is_empty() { Rels::WW } else { x },
                Rels::NONE,
                RwMode::Forbid,
            ),
            (
                AnomalyType::G1c,
                Rels::WW | Rels::WR,
                Rels::WR,
                x,
                RwMode::Forbid,
            ),
            (
                AnomalyType::GSingleItem,
                Rels::DATA,
                Rels::RW,
                x,
                RwMode::Exactly1,
            ),
            (
                AnomalyType::GNonadjacentItem,
                Rels::DATA,
                Rels::RW,
                x,
                RwMode::NonAdjacent,
            ),
            (AnomalyType::G2Item, Rels::DATA, Rels::RW, x, RwMode::Any),
        ];
        for (b, legal, first, want, rw) in base {
            if let Some(kind) = b.with_variant(v) {
                out.push(Spec {
                    kind,
                    legal: legal | x,
                    first,
                    want,
                    rw,
                });
            }
        }
    }
    out
}

/// Elle's classification of a cycle by the relations its steps use.
pub fn classify(rels: &[Rel]) -> AnomalyType {
    let rw = rels.iter().filter(|r| **r == Rel::Rw).count();
    let n = rels.len();
    let base = if rw == 1 {
        AnomalyType::GSingleItem
    } else if rw > 1 {
        let adjacent = (0..n).any(|i| rels[i] == Rel::Rw && rels[(i + 1) % n] == Rel::Rw);
        if adjacent {
            AnomalyType::G2Item
        } else {
            AnomalyType::GNonadjacentItem
        }
    } else if rels.contains(&Rel::Wr) {
        AnomalyType::G1c
    } else {
        AnomalyType::G0
    };
    let v = if rels.contains(&Rel::Realtime) {
        Variant::Realtime
    } else if rels.contains(&Rel::Process) {
        Variant::Process
    } else {
        Variant::Plain
    };
    base.with_variant(v).unwrap_or(base)
}

fn chain(t: AnomalyType) -> Option<(u8, u8, Variant)> {
    let (base, v) = t.cycle_parts()?;
    let (c, i) = match base {
        AnomalyType::G0 => (0, 0),
        AnomalyType::G1c => (0, 1),
        AnomalyType::GSingleItem => (1, 0),
        AnomalyType::GNonadjacentItem => (1, 1),
        AnomalyType::G2Item => (1, 2),
        _ => return None,
    };
    Some((c, i, v))
}

/// Whether finding `f` means `t` is present too (so need not be searched).
fn implies(f: AnomalyType, t: AnomalyType) -> bool {
    match (chain(f), chain(t)) {
        (Some((c1, i1, v1)), Some((c2, i2, v2))) => c1 == c2 && i1 <= i2 && v1 <= v2,
        _ => false,
    }
}

/// Whether a search for `t` can matter for `wanted` (t or something it implies is wanted).
fn relevant(t: AnomalyType, wanted: &BTreeSet<AnomalyType>) -> bool {
    wanted.contains(&t) || all_implied([t]).iter().any(|x| wanted.contains(x))
}

struct Exhausted;

/// Searches every nontrivial SCC of `g` (over `mask`) for the classes in
/// `wanted` (and classes implying them), using `variants` (which edge kinds
/// beyond data edges the graph holds).
pub fn search(
    g: &Graph,
    mask: Rels,
    sccs: &[Vec<u32>],
    wanted: &BTreeSet<AnomalyType>,
    variants: &[Variant],
    budget: &Budget,
) -> (Vec<Cycle>, Vec<Timeout>) {
    let mut search = Search::new(wanted, variants, budget);
    if !search.is_empty() {
        let mut scratch = vec![NO_NODE; g.node_count()];
        for scc in sccs {
            let sub = induced(g, scc, mask, &mut scratch);
            search.component(&sub, scc, &mut Components::of_component(&sub, mask));
        }
    }
    (search.cycles, search.timeouts)
}

/// The cycle search over the components of one graph, one at a time (so
/// a caller can share each component's induced graph and [`Components`]).
pub struct Search<'b> {
    specs: Vec<Spec>,
    budget: &'b Budget,
    searcher: Searcher,
    /// The cycles found, in the order of the components searched.
    pub cycles: Vec<Cycle>,
    /// The components whose search ran out of budget.
    pub timeouts: Vec<Timeout>,
}

impl<'b> Search<'b> {
    /// A search for the classes in `wanted` (and classes implying them).
    pub fn new(wanted: &BTreeSet<AnomalyType>, variants: &[Variant], budget: &'b Budget) -> Self {
        Search {
            specs: specs(variants)
                .into_iter()
                .filter(|s| relevant(s.kind, wanted))
                .collect(),
            budget,
            searcher: Searcher::default(),
            cycles: Vec::new(),
            timeouts: Vec::new(),
        }
    }

    /// Whether no class is searched.
    pub fn is_empty(&self) -> bool {
        self.specs.is_empty()
    }

    /// Searches one nontrivial component: `sub` is its induced graph,
    /// `scc` maps `sub`'s nodes to the graph's, `comps` its components per
    /// relation set.
    pub fn component(&mut self, sub: &Graph, scc: &[u32], comps: &mut Components<'_>) {
        let budget = self.budget;
        // One pass over every relation a cycle-free class may use rules
        // them all out at once when it finds no cycle (the usual case).
        let forbid = self
            .specs
            .iter()
            .filter(|s| s.rw == RwMode::Forbid)
            .fold(Rels::NONE, |a, s| a | s.legal);
        if !forbid.is_empty() {
            comps.cyclic(forbid);
        }
        let mut found: Vec<AnomalyType> = Vec::new();
        for (si, spec) in self.specs.iter().enumerate() {
            if found.iter().any(|f| implies(*f, spec.kind)) {
                continue;
            }
            if budget.exhausted() {
                self.timeouts.push(Timeout {
                    scc_size: scc.len(),
                    remaining: remaining(&self.specs[si..], &found),
                });
                break;
            }
            match self.searcher.find(sub, spec, comps, budget) {
                Ok(Some(steps)) => {
                    let rels: Vec<Rel> = steps.iter().map(|s| s.1).collect();
                    let kind = classify(&rels);
                    found.push(kind);
                    self.cycles.push(Cycle {
                        kind,
                        steps: steps
                            .into_iter()
                            .map(|(n, r)| (scc[n as usize], r))
                            .collect(),
                    });
                }
                Ok(None) => {}
                Err(Exhausted) => {
                    self.timeouts.push(Timeout {
                        scc_size: scc.len(),
                        remaining: remaining(&self.specs[si..], &found),
                    });
                    break;
                }
            }
        }
    }
}

fn remaining(specs: &[Spec], found: &[AnomalyType]) -> Vec<AnomalyType> {
    specs
        .iter()
        .map(|s| s.kind)
        .filter(|k| !found.iter().any(|f| implies(*f, *k)))
        .collect()
}

#[derive(Default)]
struct Searcher {
    stamp: Vec<u32>,
    epoch: u32,
    parent: Vec<u32>,
    prel: Vec<u8>,
    queue: VecDeque<u32>,
    /// Candidate edges (by edge index) whose capped search ended without
    /// reaching its cap: searched completely, no cycle through them.
    done: Vec<u64>,
    /// For a `G-single` class, what skips candidates (see [`Reach`]).
    levels: Option<Levels>,
    reach: Option<Reach>,
    /// Candidates searched without a cycle in this class's search, and
    /// the edges those searches visited.
    searched: u32,
    spent: u64,
}

const S: u32 = 4; // states per node: bit0 = wanted relation seen, bit1 = rw flag
const START: u32 = u32::MAX;

/// States one candidate edge's search may visit in the first pass. The
/// pre-checks admit candidates by a necessary condition only (for
/// `G-single`, the first edge's target not after its source in a
/// topological order of the other edges), and a search from a candidate
/// that closes no cycle visits everything the condition allows: in a
/// 491k-transaction component (AWDIT's 2M-event read-committed history,
/// session order included) thousands of such searches took 4.8 s before
/// the first cycle. Cycles are usually short, so every candidate first
/// gets this many states; only when none closes a cycle within them does
/// the second pass search the candidates left without a cap (those the
/// first pass searched to the end are skipped). The same cycles are
/// found, complete as before; which one is reported first may differ.
const FIRST_PASS_STATES: u32 = 256;

/// Candidates of a `G-single` class in a large component searched without
/// a cycle before its levels ([`Levels`]) are computed: at `-c RC` on
/// AWDIT's 2M-event history their searches were 13.6 % of the check's
/// time, 5.8 % (+ 2.9 % for the levels) with them (BENCHMARKS.md, "h15-rc2").
const LEVELS_AFTER: u32 = 64;

/// How one candidate's search ended.
enum Bfs {
    /// A cycle, as `(node, relation)` steps.
    Found(Vec<(u32, Rel)>),
    /// No cycle through this candidate edge.
    None,
    /// The first pass's cap was reached before either.
    Capped,
}

impl Searcher {
    fn find(
        &mut self,
        sub: &Graph,
        spec: &Spec,
        comps: &mut Components<'_>,
        budget: &Budget,
    ) -> Result<Option<Vec<(u32, Rel)>>, Exhausted> {
        let k = sub.node_count();
        if budget.charge(sub.edge_count() as u64 + k as u64) {
            return Err(Exhausted);
        }
        // Every class's cycle lies in the graph over its relations.
        if comps.known_acyclic(spec.legal) {
            return Ok(None);
        }
        // Pre-check: component ids limiting candidates and the BFS.
        let (comp, state_comp): (Option<&Sccs>, Option<&Sccs>) = match spec.rw {
            RwMode::Forbid | RwMode::Any => (Some(comps.get(spec.legal)), None),
            RwMode::Exactly1 => (Some(comps.get(spec.legal.minus(Rels::RW))), None),
            RwMode::NonAdjacent => (None, Some(comps.two_state(spec.legal.minus(Rels::RW)))),
        };
        self.done.clear();
        self.done.resize(sub.edge_count().div_ceil(64), 0);
        (self.levels, self.reach) = (None, None);
        self.searched = 0;
        self.spent = 0;
        for cap in [FIRST_PASS_STATES, u32::MAX] {
            let mut capped = false;
            if let Some(path) =
                self.candidates(sub, spec, comp, state_comp, cap, &mut capped, budget)?
            {
                return Ok(Some(path));
            }
            if !capped {
                break;
            }
        }
        Ok(None)
    }

    /// One pass over the candidate first edges, each searched with at most
    /// `cap` states; `capped` says whether any search hit the cap.
    #[allow(clippy::too_many_arguments)]
    fn candidates(
        &mut self,
        sub: &Graph,
        spec: &Spec,
        comp: Option<&Sccs>,
        state_comp: Option<&Sccs>,
        cap: u32,
        capped: &mut bool,
        budget: &Budget,
    ) -> Result<Option<Vec<(u32, Rel)>>, Exhausted> {
        let k = sub.node_count();
        for u in 0..k as u32 {
            for e in sub.range(u) {
                if self.done[e / 64] >> (e % 64) & 1 != 0 {
                    continue;
                }
                let r = sub.rels_at(e);
                let Some(first) = r.intersect(spec.first).iter().next() else {
                    continue;
                };
                let v = sub.target(e);
                let ok = match spec.rw {
                    RwMode::Forbid | RwMode::Any => {
                        comp.is_some_and(|c| c.comp[u as usize] == c.comp[v as usize])
                    }
                    // A cycle through `u → v` with no other `rw` step is a
                    // path from v to u over the other relations (the BFS
                    // seeks one), so one whose components' levels or
                    // reachability rule that path out has none: skipping
                    // it (the BFS would end with no cycle) changes no
                    // result (the first candidate in this order whose
                    // search closes a cycle is still the one reported;
                    // each other candidate's search ends as before; only
                    // less work is charged to the budget).
                    RwMode::Exactly1 => comp.is_some_and(|c| {
                        let (cu, cv) = (c.comp[u as usize], c.comp[v as usize]);
                        let reach = || self.reach.as_ref().is_none_or(|r| r.reaches(cv, cu));
                        cv >= cu
                            && self
                                .levels
                                .as_ref()
                                .map_or_else(reach, |l| l.may_reach(cv, cu))
                    }),
                    RwMode::NonAdjacent => state_comp
                        .is_some_and(|c| c.comp[2 * u as usize] == c.comp[2 * v as usize + 1]),
                };
                if !ok {
                    self.done[e / 64] |= 1 << (e % 64);
                    continue;
                }
                match self.bfs(sub, spec, (u, v, first), comp, state_comp, cap, budget)? {
                    Bfs::Found(path) => return Ok(Some(path)),
                    Bfs::None => self.done[e / 64] |= 1 << (e % 64),
                    Bfs::Capped => *capped = true,
                }
                self.searched += 1;
                let unfiltered = self.levels.is_none() && self.reach.is_none();
                if let (RwMode::Exactly1, true, Some(c)) = (spec.rw, unfiltered, comp) {
                    // The BFS's parents are scratch between searches.
                    let rels = spec.legal.minus(Rels::RW);
                    let nc = c.size.len();
                    let reads = sub.edge_count() as u64 * (1 + nc.div_ceil(64) as u64 / 8);
                    if nc <= Reach::MAX_COMPONENTS && self.spent >= reads {
                        let r = Reach::new(sub, rels, c, &mut self.parent);
                        self.reach = Some(r);
                    } else if nc > Reach::MAX_COMPONENTS && self.searched >= LEVELS_AFTER {
                        let l = Levels::new(sub, rels, c, &mut self.parent);
                        self.levels = Some(l);
                    }
                }
            }
        }
        Ok(None)
    }

    /// Breadth-first from the candidate edge `u → v` (labelled `first`)
    /// back to `u`, visiting at most `cap` states.
    #[allow(clippy::too_many_arguments)]
    fn bfs(
        &mut self,
        sub: &Graph,
        spec: &Spec,
        (u, v, first): (u32, u32, Rel),
        comp: Option<&Sccs>,
        state_comp: Option<&Sccs>,
        cap: u32,
        budget: &Budget,
    ) -> Result<Bfs, Exhausted> {
        let k = sub.node_count();
        let n = k * S as usize;
        if self.stamp.len() < n {
            self.stamp.resize(n, 0);
            self.parent.resize(n, 0);
            self.prel.resize(n, 0);
        }
        self.epoch = self.epoch.wrapping_add(1);
        if self.epoch == 0 {
            self.stamp.iter_mut().for_each(|s| *s = 0);
            self.epoch = 1;
        }
        let epoch = self.epoch;
        let want_all = !spec.want.is_empty();
        let bits_after = |bits: u32, r: Rel| -> Option<u32> {
            let mut b = bits;
            if spec.want.contains(r) {
                b |= 1;
            }
            match (spec.rw, r == Rel::Rw) {
                (RwMode::Forbid, true) => return None,
                (RwMode::Exactly1, true) => {
                    if b & 2 != 0 {
                        return None;
                    }
                    b |= 2;
                }
                (RwMode::NonAdjacent, true) => {
                    if b & 2 != 0 {
                        return None;
                    }
                    b |= 2;
                }
                (RwMode::NonAdjacent, false) => b &= !2,
                _ => {}
            }
            Some(b)
        };
        let allowed = |x: u32, bits: u32| -> bool {
            match spec.rw {
                RwMode::Forbid | RwMode::Any => {
                    comp.is_some_and(|c| c.comp[x as usize] == c.comp[u as usize])
                }
                RwMode::Exactly1 => comp.is_some_and(|c| c.comp[x as usize] >= c.comp[u as usize]),
                RwMode::NonAdjacent => state_comp.is_some_and(|c| {
                    c.comp[2 * x as usize + ((bits >> 1) & 1) as usize] == c.comp[2 * u as usize]
                }),
            }
        };
        let goal = |bits: u32| -> bool {
            (!want_all || bits & 1 != 0)
                && match spec.rw {
                    RwMode::NonAdjacent => first != Rel::Rw || bits & 2 == 0,
                    RwMode::Exactly1 => bits & 2 != 0,
                    _ => true,
                }
        };
        let Some(b0) = bits_after(0, first) else {
            return Ok(Bfs::None);
        };
        let mut visited = 1u32;
        self.queue.clear();
        let s0 = v * S + b0;
        self.stamp[s0 as usize] = epoch;
        self.parent[s0 as usize] = START;
        self.queue.push_back(s0);
        let mut work = 0u64;
        while let Some(s) = self.queue.pop_front() {
            let x = s / S;
            let bits = s % S;
            if x == u {
                if goal(bits) {
                    self.spent += work;
                    let _ = budget.charge(work);
                    return Ok(Bfs::Found(self.path(u, first, s)));
                }
                continue;
            }
            for e in sub.range(x) {
                work += 1;
                let y = sub.target(e);
                let rels = sub.rels_at(e).intersect(spec.legal);
                for r in rels.iter() {
                    let Some(nb) = bits_after(bits, r) else {
                        continue;
                    };
                    if !allowed(y, nb) {
                        continue;
                    }
                    let ns = y * S + nb;
                    if self.stamp[ns as usize] == epoch {
                        continue;
                    }
                    if visited >= cap {
                        self.spent += work;
                        let _ = budget.charge(work);
                        return Ok(Bfs::Capped);
                    }
                    visited += 1;
                    self.stamp[ns as usize] = epoch;
                    self.parent[ns as usize] = s;
                    self.prel[ns as usize] = r as u8;
                    self.queue.push_back(ns);
                }
            }
            if work >= 4096 {
                self.spent += work;
                if budget.charge(work) {
                    return Err(Exhausted);
                }
                work = 0;
            }
        }
        self.spent += work;
        if budget.charge(work) {
            return Err(Exhausted);
        }
        Ok(Bfs::None)
    }

    fn path(&self, u: u32, first: Rel, goal: u32) -> Vec<(u32, Rel)> {
        // Walk back from the goal state to the start state.
        let mut rev: Vec<(u32, Rel)> = Vec::new();
        let mut s = goal;
        while self.parent[s as usize] != START {
            let p = self.parent[s as usize];
            rev.push((p / S, Rel::ALL[self.prel[s as usize] as usize]));
            s = p;
        }
        let mut out = vec![(u, first)];
        out.extend(rev.into_iter().rev());
        out
    }
}
