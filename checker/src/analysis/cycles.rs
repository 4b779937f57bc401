//! The dependency-graph analysis (Elle): the version order's `ww`,
//! `wr`, `rw` edges plus process or real-time edges as Elle adds them, the
//! graph's strongly connected components, the per-class cycle search inside
//! them (bounded by the budget), explanations of the cycles found, and
//! Elle's `<model>-cycle-exists` pre-pass. An empty graph is
//! `empty-transaction-graph`; an exhausted search `cycle-search-timeout`.

use super::{Analysis, AnalyzeOptions, Context, Found};
use crate::anomaly::{AnomalyType, Variant};
use crate::cycle::{self, Cycle};
use crate::explain::{Anomaly, Evidence, Step};
use crate::graph::kahn::{Open, Successors, tarjan_among};
use crate::graph::{EdgeList, Edges, Graph, induced};
use crate::order;
use crate::rels::{Rel, Rels};
use crate::sccs::Components;

/// Graph → SCCs → cycle search → explanations.
pub struct Cycles;

/// From this many transactions the cycle analysis runs alone, after the
/// others, so its scratch never adds to theirs: at 1M transactions,
/// even with Kahn's pass on an unbuilt graph, running beside them took
/// 0.1–0.25 s off the check and added 23–48 MB to its peak (BENCHMARKS.md,
/// "h22"). Below it, memory is no concern and running beside the others
/// is the faster choice.
pub const ALONE_FROM_TXNS: usize = 250_000;

impl Analysis for Cycles {
    fn name(&self) -> &'static str {
        "cycles"
    }

    /// Always: an empty graph must make the verdict unknown.
    fn needed(&self, _: &AnalyzeOptions<'_>) -> bool {
        true
    }

    /// From [`ALONE_FROM_TXNS`] transactions: the data edges' index, the
    /// successors and Kahn's arrays (and, with a cycle, the graph and
    /// Tarjan's), which the other analyses' scratch would add to.
    fn heavy(&self, cx: &Context<'_, '_>) -> bool {
        cx.txns.len() >= ALONE_FROM_TXNS
    }

    fn run(&self, cx: &Context<'_, '_>, out: &mut Found) {
        let (txns, history, opts) = (cx.txns, cx.history, cx.opts);
        let variant = order_variant(cx);
        let KahnFirst {
            left,
            has_edges,
            graph,
        } = kahn_first(cx, variant);
        if !has_edges {
            out.anomalies.insert(
                AnomalyType::EmptyTransactionGraph,
                vec![Anomaly {
                    kind: AnomalyType::EmptyTransactionGraph,
                    evidence: Evidence::EmptyGraph,
                }],
            );
        }
        let variants: &[Variant] = match variant {
            Variant::Realtime => &[Variant::Plain, Variant::Realtime],
            Variant::Process => &[Variant::Plain, Variant::Process],
            Variant::Plain => &[Variant::Plain],
        };
        // Only a graph with a cycle is built, and Tarjan walks only the
        // nodes Kahn could not order (`graph/kahn.rs`).
        let mask = mask_of(variant);
        let (graph, sccs) = match left {
            None => (Graph::default(), Vec::new()),
            Some(left) => {
                let graph = graph.unwrap_or_else(|| {
                    let order = order_edges(cx).edges;
                    let data = cx.versions.edges(txns);
                    // Only edges between nodes Kahn left can be on a cycle.
                    let among = |inner| Among { inner, left: &left };
                    Graph::from_sources(txns.len(), &[&among(&*data), &among(&*order)])
                });
                let sccs = tarjan_among(&graph, mask, &left).nontrivial();
                (graph, sccs)
            }
        };
        // Per component: one induced graph and one memo of its components
        // per relation set for the cycle search and the cycle-exists pass.
        let mut search = cycle::Search::new(&opts.search, variants, opts.budget);
        let exists = opts.search.iter().any(|a| a.is_cycle_exists());
        if !search.is_empty() || exists {
            let mut scratch = vec![crate::graph::NO_NODE; graph.node_count()];
            for scc in &sccs {
                let sub = induced(&graph, scc, mask, &mut scratch);
                let mut comps = Components::of_component(&sub, mask);
                if !search.is_empty() {
                    search.component(&sub, scc, &mut comps);
                }
                if exists {
                    let mut redundant =
                        Redundant::new(&search.cycles, cx.opts.models, cx.opts.anomalies);
                    cycle_exists_in(&sub, scc, &mut comps, &mut redundant, cx, out);
                }
            }
        }
        let cycle::Search {
            cycles, timeouts, ..
        } = search;
        let explain = |a: u32, b: u32, rel: Rel| -> Step {
            let s = match rel {
                Rel::Process | Rel::Realtime => order::explain(txns, history, a, b, rel),
                _ => cx.versions.explain(txns, history, a, b, rel),
            };
            s.unwrap_or_else(|| {
                Step::bare(rel, txns.op_index(history, a), txns.op_index(history, b))
            })
        };
        for Cycle { kind, steps } in cycles {
            let n = steps.len();
            let mut cyc: Vec<_> = steps.iter().map(|s| txns.op_index(history, s.0)).collect();
            if let Some(&f) = cyc.first() {
                cyc.push(f);
            }
            let explained: Vec<Step> = (0..n)
                .map(|i| explain(steps[i].0, steps[(i + 1) % n].0, steps[i].1))
                .collect();
            out.push(Anomaly {
                kind,
                evidence: Evidence::Cycle {
                    cycle: cyc,
                    steps: explained,
                },
            });
        }
        for t in timeouts {
            out.push(Anomaly {
                kind: AnomalyType::CycleSearchTimeout,
                evidence: Evidence::Timeout {
                    scc_size: t.scc_size,
                    does_not_contain: t.remaining,
                },
            });
        }
    }
}

/// Kahn's order over the graph before it is built: the data edges and
/// the order edges of `variant` (real time as a gate, when the history
/// has a clock), as `graph/kahn.rs` says.
struct KahnFirst {
    /// The nodes Kahn could not order (`None`: the graph is acyclic).
    left: Option<Vec<bool>>,
    /// Whether the graph has an edge.
    has_edges: bool,
    /// The graph, when it has a cycle and Kahn ran on all its edges (not
    /// with real time as a gate): sorting them makes it.
    graph: Option<Graph>,
}

fn kahn_first(cx: &Context<'_, '_>, variant: Variant) -> KahnFirst {
    let (txns, n) = (cx.txns, cx.txns.len());
    let data = cx.versions.edges(txns);
    let gate = match variant {
        Variant::Realtime => order::realtime_gate(txns, cx.history),
        _ => None,
    };
    match gate {
        Some(mut gate) => {
            let succ = Successors::of(n, &[&*data], false);
            drop(data);
            let left = succ.left_by_kahn(&mut gate);
            KahnFirst {
                left,
                has_edges: !succ.is_empty() || gate.any_edge(),
                graph: None,
            }
        }
        None => {
            // With their relations (1 B an edge more): a cycle makes
            // them the graph without a second pass over the sources.
            let order = order_edges(cx).edges;
            let succ = Successors::of(n, &[&*data, &*order], true);
            drop((data, order));
            let left = succ.left_by_kahn(&mut Open(n));
            let has_edges = !succ.is_empty();
            let graph = left.as_ref().and_then(|_| succ.into_graph());
            KahnFirst {
                left,
                has_edges,
                graph,
            }
        }
    }
}

/// The edges of `inner` between nodes `left` flags.
struct Among<'a> {
    inner: &'a dyn Edges,
    left: &'a [bool],
}

impl Among<'_> {
    fn keeps(&self, a: u32, b: u32) -> bool {
        let left = |v: u32| self.left.get(v as usize).copied().unwrap_or(false);
        left(a) && left(b)
    }
}

impl Edges for Among<'_> {
    fn each(&self, add: &mut dyn FnMut(u32, u32, Rels)) {
        self.inner.each(&mut |a, b, r| {
            if self.keeps(a, b) {
                add(a, b, r);
            }
        });
    }

    fn parts(&self) -> usize {
        self.inner.parts()
    }

    fn each_of(&self, part: usize, add: &mut dyn FnMut(u32, u32, Rels)) {
        self.inner.each_of(part, &mut |a, b, r| {
            if self.keeps(a, b) {
                add(a, b, r);
            }
        });
    }
}

/// The order edges Elle adds for the classes searched: realtime if a
/// `*-realtime` class is searched, else process if a `*-process` one is.
pub(super) struct OrderEdges<'a> {
    /// Which variant the edges give.
    pub variant: Variant,
    /// The relations of a graph with them (data + the order relation).
    pub mask: Rels,
    /// The edges (none for [`Variant::Plain`]).
    pub edges: Box<dyn Edges + 'a>,
}

/// The order edges of `cx`'s history for `cx.opts.search` (shared with the
/// predicate analysis, so both add the same ones).
pub(super) fn order_edges<'a>(cx: &Context<'a, '_>) -> OrderEdges<'a> {
    let variant = order_variant(cx);
    let edges: Box<dyn Edges> = match variant {
        Variant::Realtime => order::realtime(cx.txns, cx.history),
        Variant::Process => Box::new(order::process_edges(cx.txns)),
        Variant::Plain => Box::new(EdgeList::default()),
    };
    OrderEdges {
        variant,
        mask: mask_of(variant),
        edges,
    }
}

/// The relations of a graph with `variant`'s order edges: data and that
/// order.
fn mask_of(variant: Variant) -> Rels {
    match variant {
        Variant::Realtime => Rels::DATA | Rels::REALTIME,
        Variant::Process => Rels::DATA | Rels::PROCESS,
        Variant::Plain => Rels::DATA,
    }
}

/// Which order edges Elle adds for `cx.opts.search`: realtime if a
/// `*-realtime` class is searched, else process if a `*-process` one is.
fn order_variant(cx: &Context<'_, '_>) -> Variant {
    let has = |v: Variant| {
        cx.opts
            .search
            .iter()
            .any(|a| a.cycle_parts().is_some_and(|p| p.1 == v))
    };
    if has(Variant::Realtime) {
        Variant::Realtime
    } else if has(Variant::Process) {
        Variant::Process
    } else {
        Variant::Plain
    }
}

/// Elle's `<model>-cycle-exists` pre-pass in one component: for each such
/// type in `search`, whether the subgraph of the relations that model
/// forbids cycles in has a nontrivial SCC (one case per SCC).
fn cycle_exists_in(
    graph: &Graph,
    scc: &[u32],
    comps: &mut Components<'_>,
    redundant: &mut Redundant<'_>,
    cx: &Context<'_, '_>,
    out: &mut Found,
) {
    use AnomalyType as A;
    let ww = Rels::WW;
    let wwr = Rels::WW | Rels::WR;
    let p = Rels::PROCESS;
    let rt = Rels::REALTIME;
    // (type, subgraph relations, extension-by-rw?, description)
    let specs: [(AnomalyType, Rels, bool, &'static str); 13] = [
        (A::Pl1CycleExists, ww, false, "ww"),
        (A::Pl2CycleExists, wwr, false, "ww, wr"),
        (A::PlSiCycleExists, wwr, true, "extension(ww wr, rw)"),
        (A::Pl299CycleExists, Rels::DATA, false, "ww, wr, rw"),
        (A::Pl3CycleExists, Rels::DATA, false, "ww, wr, rw"),
        (A::StrongSessionPl1CycleExists, ww | p, false, "ww, process"),
        (
            A::StrongSessionPl2CycleExists,
            wwr | p,
            false,
            "ww, wr, process",
        ),
        (
            A::StrongSessionSnapshotIsolationCycleExists,
            wwr | p,
            true,
            "extension(ww wr process, rw)",
        ),
        (
            A::StrongSessionSerializableCycleExists,
            Rels::DATA | p,
            false,
            "ww, wr, rw, process",
        ),
        (A::StrongPl1CycleExists, ww | rt, false, "ww, realtime"),
        (A::StrongPl2CycleExists, wwr | rt, false, "ww, wr, realtime"),
        (
            A::StrongSnapshotIsolationCycleExists,
            wwr | rt,
            true,
            "extension(ww wr realtime, rw)",
        ),
        (
            A::PlSsCycleExists,
            Rels::DATA | rt,
            false,
            "ww, wr, rw, realtime",
        ),
    ];
    for (kind, rels, ext, desc) in specs {
        if !cx.opts.search.contains(&kind) {
            continue;
        }
        // A pass is needed unless a computed set answers it; skip it when
        // its answer cannot change the result.
        let ext_acyclic = ext && comps.known_acyclic(rels | Rels::RW);
        let free = if ext {
            ext_acyclic
        } else {
            comps.known_acyclic(rels) || comps.has(rels)
        };
        if !free && graph.edge_count() >= ASK_FROM_EDGES && redundant.covers(kind) {
            continue;
        }
        let within = if ext_acyclic {
            Vec::new()
        } else if ext {
            // Two states per node: rw steps may not follow each other
            // (the `G-nonadjacent` search may have asked for them).
            let s = comps.two_state(rels);
            let mut v: Vec<Vec<u32>> = s
                .nontrivial()
                .into_iter()
                .map(|c| {
                    let mut c: Vec<u32> = c.into_iter().map(|x| x / 2).collect();
                    c.dedup();
                    c
                })
                .filter(|c| c.len() > 1)
                .collect();
            v.sort();
            v.dedup();
            v
        } else if comps.cyclic(rels) {
            comps.get(rels).nontrivial()
        } else {
            Vec::new()
        };
        let cases: Vec<Anomaly> = within
            .into_iter()
            .map(|c| Anomaly {
                kind,
                evidence: Evidence::CycleExists {
                    subgraph: desc,
                    scc_size: c.len(),
                    scc: c
                        .iter()
                        .take(64)
                        .map(|&t| cx.txns.op_index(cx.history, scc[t as usize]))
                        .collect(),
                },
            })
            .collect();
        if !cases.is_empty() {
            out.anomalies.entry(kind).or_default().extend(cases);
        }
    }
}

/// From this many edges in a component a cycle-exists pass costs more than
/// asking [`Redundant`] (two closures over the model lattice at the first
/// question): below it the pass just runs. Always asked, AWDIT's 200-event
/// files at `-c RC` took 5.6–16.1 k more instructions (+0.4 to +1.3 %),
/// the 2,000-event one 1.5 k fewer.
const ASK_FROM_EDGES: usize = 2048;

/// Which `<model>-cycle-exists` types cannot change the result, given the
/// cycles the search found: one no requested model (or extra anomaly)
/// prohibits, so its cases are never reported and never make the verdict
/// invalid, and whose model every found cycle's type already rules out
/// with all the models it would (`not` / `also-not` are the models the
/// found types rule out: a union, so the type adds nothing to it; the
/// complete check's skip of a level asks for a prohibited cycle type,
/// which a found one already is). Such a type's pass is skipped: at `-c
/// RC` on AWDIT's 2M-event history, `G-single-item` makes the `PL-SI` and
/// strong-session-SI two-state passes and the data pass of `PL-2.99` /
/// `PL-3` needless (a fifth of the check). Elle finds them as well, but
/// reports them only where a requested model prohibits them, and then
/// drops them as redundant with the specific cycle (`anomaly-types`).
pub(super) struct Redundant<'c> {
    found: &'c [Cycle],
    models: &'c [crate::model::ConsistencyModel],
    extra: &'c [AnomalyType],
    /// (models the found cycles rule out, types the check prohibits),
    /// computed on the first question.
    known: Option<(
        std::collections::BTreeSet<crate::model::ConsistencyModel>,
        std::collections::BTreeSet<AnomalyType>,
    )>,
}

impl<'c> Redundant<'c> {
    fn new(
        found: &'c [Cycle],
        models: &'c [crate::model::ConsistencyModel],
        extra: &'c [AnomalyType],
    ) -> Redundant<'c> {
        Redundant {
            found,
            models,
            extra,
            known: None,
        }
    }

    /// Whether `kind`'s pass cannot change the result.
    fn covers(&mut self, kind: AnomalyType) -> bool {
        use crate::model::{impossible_models, prohibited_anomaly_types};
        if self.found.is_empty() {
            return false;
        }
        let (found, models, extra) = (self.found, self.models, self.extra);
        let (ruled_out, prohibited) = self.known.get_or_insert_with(|| {
            (
                impossible_models(found.iter().map(|c| c.kind)),
                prohibited_anomaly_types(models, extra),
            )
        });
        !prohibited.contains(&kind) && proscribers_within(kind, ruled_out)
    }
}

/// Whether `impossible_models([kind])` is a subset of `ruled_out`, itself
/// a result of `impossible_models`, without computing the former: that is
/// the closure of the models proscribing an anomaly `kind` implies under
/// "a model implying one in the set" (`all_impossible_models`), and
/// `ruled_out` is closed the same way, so the closure lies inside it iff
/// the models it starts from do. The closure, one scan of every model per
/// model reached, was ~12 k instructions a question at `-c RC` on AWDIT's
/// 2,000-event file, four questions a check ("h16-rc").
fn proscribers_within(
    kind: AnomalyType,
    ruled_out: &std::collections::BTreeSet<crate::model::ConsistencyModel>,
) -> bool {
    let implied = crate::anomaly::all_implied([kind]);
    crate::model::ConsistencyModel::ALL
        .iter()
        .filter(|m| m.direct_proscribed().iter().any(|a| implied.contains(a)))
        .all(|m| ruled_out.contains(m))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ConsistencyModel as M;
    use AnomalyType as A;

    fn cycle(kind: AnomalyType) -> Cycle {
        Cycle {
            kind,
            steps: vec![(0, Rel::Rw), (1, Rel::Wr)],
        }
    }

    /// The shortcut answers as the subset test of the two closures does,
    /// for every anomaly type against the models ruled out by each single
    /// type, by pairs and by nothing.
    #[test]
    fn the_proscribers_test_is_the_subset_test_of_the_closures() {
        use crate::model::impossible_models;
        let all = AnomalyType::ALL;
        let mut sets: Vec<Vec<AnomalyType>> = vec![Vec::new()];
        sets.extend(all.iter().map(|&a| vec![a]));
        sets.extend(all.windows(2).step_by(3).map(|w| w.to_vec()));
        let (mut yes, mut no) = (0, 0);
        for found in &sets {
            let ruled_out = impossible_models(found.iter().copied());
            for &kind in all {
                let want = impossible_models([kind]).is_subset(&ruled_out);
                assert_eq!(
                    proscribers_within(kind, &ruled_out),
                    want,
                    "{kind:?} {found:?}"
                );
                if want { yes += 1 } else { no += 1 }
            }
        }
        assert!(
            yes > 100 && no > 100,
            "both answers are tested: {yes} / {no}"
        );
    }

    /// A `G-single-item` cycle at read committed makes the PL-SI, the
    /// strong-session-SI and the PL-2.99 / PL-3 passes needless; not where a
    /// requested model prohibits the type (its cases are then reported),
    /// nor when no cycle or only a weaker one was found.
    #[test]
    fn a_found_cycle_covers_only_unprohibited_types_whose_models_it_rules_out() {
        let single = [cycle(A::GSingleItem)];
        let rc = [M::StrongSessionReadCommitted];
        let mut r = Redundant::new(&single, &rc, &[]);
        for a in [
            A::PlSiCycleExists,
            A::StrongSessionSnapshotIsolationCycleExists,
            A::Pl299CycleExists,
            A::Pl3CycleExists,
        ] {
            assert!(r.covers(a), "{a:?}");
        }
        // strong-session read committed prohibits its own cycle-exists.
        assert!(!r.covers(A::StrongSessionPl2CycleExists));
        let si = [M::SnapshotIsolation];
        assert!(!Redundant::new(&single, &si, &[]).covers(A::PlSiCycleExists));
        // An extra anomaly prohibits it as a model would.
        let extra = [A::PlSiCycleExists];
        assert!(!Redundant::new(&single, &rc, &extra).covers(A::PlSiCycleExists));
        assert!(!Redundant::new(&[], &rc, &[]).covers(A::Pl3CycleExists));
        // G2-item does not rule out snapshot isolation.
        let g2 = [cycle(A::G2Item)];
        let mut r = Redundant::new(&g2, &rc, &[]);
        assert!(!r.covers(A::PlSiCycleExists));
        assert!(r.covers(A::Pl3CycleExists));
    }
}
