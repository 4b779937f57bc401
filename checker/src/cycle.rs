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
use crate::graph::{EdgeList, Graph, NO_NODE, Sccs, induced, tarjan};
use crate::rels::{Rel, Rels};
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
    let all_specs: Vec<Spec> = specs(variants)
        .into_iter()
        .filter(|s| relevant(s.kind, wanted))
        .collect();
    let mut cycles = Vec::new();
    let mut timeouts = Vec::new();
    if all_specs.is_empty() {
        return (cycles, timeouts);
    }
    let mut scratch = vec![NO_NODE; g.node_count()];
    let mut searcher = Searcher::default();
    for scc in sccs {
        let sub = induced(g, scc, mask, &mut scratch);
        let mut found: Vec<AnomalyType> = Vec::new();
        for (si, spec) in all_specs.iter().enumerate() {
            if found.iter().any(|f| implies(*f, spec.kind)) {
                continue;
            }
            if budget.exhausted() {
                timeouts.push(Timeout {
                    scc_size: scc.len(),
                    remaining: remaining(&all_specs[si..], &found),
                });
                break;
            }
            match searcher.find(&sub, spec, budget) {
                Ok(Some(steps)) => {
                    let rels: Vec<Rel> = steps.iter().map(|s| s.1).collect();
                    let kind = classify(&rels);
                    found.push(kind);
                    cycles.push(Cycle {
                        kind,
                        steps: steps
                            .into_iter()
                            .map(|(n, r)| (scc[n as usize], r))
                            .collect(),
                    });
                }
                Ok(None) => {}
                Err(Exhausted) => {
                    timeouts.push(Timeout {
                        scc_size: scc.len(),
                        remaining: remaining(&all_specs[si..], &found),
                    });
                    break;
                }
            }
        }
    }
    (cycles, timeouts)
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
}

const S: u32 = 4; // states per node: bit0 = wanted relation seen, bit1 = rw flag
const START: u32 = u32::MAX;

impl Searcher {
    fn find(
        &mut self,
        sub: &Graph,
        spec: &Spec,
        budget: &Budget,
    ) -> Result<Option<Vec<(u32, Rel)>>, Exhausted> {
        let k = sub.node_count();
        if budget.charge(sub.edge_count() as u64 + k as u64) {
            return Err(Exhausted);
        }
        // Pre-check: component ids limiting candidates and the BFS.
        let (comp, state_comp): (Option<Sccs>, Option<Sccs>) = match spec.rw {
            RwMode::Forbid | RwMode::Any => (Some(tarjan(sub, spec.legal)), None),
            RwMode::Exactly1 => (Some(tarjan(sub, spec.legal.minus(Rels::RW))), None),
            RwMode::NonAdjacent => (None, Some(tarjan(&state_graph(sub, spec.legal), Rels::WW))),
        };
        for u in 0..k as u32 {
            for e in sub.range(u) {
                let r = sub.rels_at(e);
                let Some(first) = r.intersect(spec.first).iter().next() else {
                    continue;
                };
                let v = sub.target(e);
                let ok = match spec.rw {
                    RwMode::Forbid | RwMode::Any => {
                        let c = comp.as_ref().map(|c| &c.comp);
                        c.is_some_and(|c| c[u as usize] == c[v as usize])
                    }
                    RwMode::Exactly1 => comp
                        .as_ref()
                        .is_some_and(|c| c.comp[v as usize] >= c.comp[u as usize]),
                    RwMode::NonAdjacent => state_comp
                        .as_ref()
                        .is_some_and(|c| c.comp[2 * u as usize] == c.comp[2 * v as usize + 1]),
                };
                if !ok {
                    continue;
                }
                if let Some(path) = self.bfs(
                    sub,
                    spec,
                    u,
                    v,
                    first,
                    comp.as_ref(),
                    state_comp.as_ref(),
                    budget,
                )? {
                    return Ok(Some(path));
                }
            }
        }
        Ok(None)
    }

    #[allow(clippy::too_many_arguments)]
    fn bfs(
        &mut self,
        sub: &Graph,
        spec: &Spec,
        u: u32,
        v: u32,
        first: Rel,
        comp: Option<&Sccs>,
        state_comp: Option<&Sccs>,
        budget: &Budget,
    ) -> Result<Option<Vec<(u32, Rel)>>, Exhausted> {
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
            return Ok(None);
        };
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
                    let _ = budget.charge(work);
                    return Ok(Some(self.path(u, first, s)));
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
                    self.stamp[ns as usize] = epoch;
                    self.parent[ns as usize] = s;
                    self.prel[ns as usize] = r as u8;
                    self.queue.push_back(ns);
                }
            }
            if work >= 4096 {
                if budget.charge(work) {
                    return Err(Exhausted);
                }
                work = 0;
            }
        }
        if budget.charge(work) {
            return Err(Exhausted);
        }
        Ok(None)
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

/// The state graph for the non-adjacent search: node `2x` = at x, last step
/// not rw; `2x+1` = at x, last step rw. Non-rw edges lead to even states, rw
/// edges only leave even states. Edges are labelled `ww` (only reachability matters).
fn state_graph(sub: &Graph, legal: Rels) -> Graph {
    let k = sub.node_count() as u32;
    let non_rw = legal.minus(Rels::RW);
    let mut el = EdgeList::default();
    for x in 0..k {
        for (y, r) in sub.succ(x) {
            if r.intersects(non_rw) {
                el.add(2 * x, 2 * y, Rels::WW);
                el.add(2 * x + 1, 2 * y, Rels::WW);
            }
            if r.contains(Rel::Rw) && legal.contains(Rel::Rw) {
                el.add(2 * x, 2 * y + 1, Rels::WW);
            }
        }
    }
    Graph::build(2 * k as usize, &el)
}
