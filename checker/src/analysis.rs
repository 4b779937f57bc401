//! The analysis pipeline (elle.md §11): preprocessing, the workload's
//! inference (non-cycle anomalies + data edges), process/realtime edges, the
//! dependency graph, cycle search, and explanations. Entry point: [`analyze`].

use crate::anomaly::{AnomalyType, Variant};
use crate::budget::Budget;
use crate::cycle::{self, Cycle};
use crate::explain::{Anomaly, Evidence, Step};
use crate::graph::{EdgeList, Graph, induced, tarjan};
use crate::list_append::ListAppend;
use crate::order;
use crate::rels::{Rel, Rels};
use crate::rw_register::{RwRegister, Sources};
use crate::txn::Txns;
use std::collections::{BTreeMap, BTreeSet};
use store::{History, MicroOp, OpValue, ReadValue};

/// Which kind of transactions a history holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Workload {
    /// `append` + list reads.
    ListAppend,
    /// `w` + scalar reads.
    RwRegister,
}

impl Workload {
    /// Guesses the workload from the micro-ops: appends or list reads mean
    /// list-append, writes or scalar reads rw-register; `None` if the history
    /// has neither or both.
    pub fn detect(history: &History) -> Option<Workload> {
        let (mut la, mut rw) = (false, false);
        for op in history.ops() {
            let OpValue::Txn(m) = &op.value else { continue };
            for x in m {
                match x {
                    MicroOp::Append(..) | MicroOp::Read(_, ReadValue::List(_)) => la = true,
                    MicroOp::Write(..) | MicroOp::Read(_, ReadValue::Scalar(_)) => rw = true,
                    MicroOp::Read(_, ReadValue::Nil) => {}
                }
            }
            if la && rw {
                return None;
            }
        }
        match (la, rw) {
            (true, false) => Some(Workload::ListAppend),
            (false, true) => Some(Workload::RwRegister),
            _ => None,
        }
    }

    /// The CLI spelling.
    pub fn name(self) -> &'static str {
        match self {
            Workload::ListAppend => "list-append",
            Workload::RwRegister => "rw-register",
        }
    }
}

/// What to analyze and how.
#[derive(Debug)]
pub struct AnalyzeOptions<'a> {
    /// The workload's inference rules.
    pub workload: Workload,
    /// Cycle classes to look for (and `*-cycle-exists` types); non-cycle
    /// anomalies are always reported. Order edges are added as Elle does:
    /// realtime if a `*-realtime` class is here, else process if a
    /// `*-process` class is.
    pub search: BTreeSet<AnomalyType>,
    /// rw-register: infer version order from writes following reads.
    pub wfr_keys: bool,
    /// rw-register: infer version order from process order.
    pub sequential_keys: bool,
    /// rw-register: infer version order from real-time order.
    pub linearizable_keys: bool,
    /// Limit on the cycle search.
    pub budget: &'a Budget,
}

/// What the analysis found.
#[derive(Debug, Default)]
pub struct Analysis {
    /// Anomalies by type (only non-empty entries).
    pub anomalies: BTreeMap<AnomalyType, Vec<Anomaly>>,
    /// Oddities in the input that did not stop the analysis.
    pub warnings: Vec<String>,
}

enum Index<'h> {
    List(ListAppend<'h>),
    Register(RwRegister<'h>),
}

/// Runs the analysis. Never panics on odd input: what it cannot interpret
/// becomes a warning.
pub fn analyze(history: &History, opts: &AnalyzeOptions<'_>) -> Analysis {
    let txns = Txns::new(history);
    let mut out = Analysis {
        warnings: txns.warnings.clone(),
        ..Analysis::default()
    };
    let (index, anomalies, mut edges, warnings) = match opts.workload {
        Workload::ListAppend => {
            let r = ListAppend::infer(&txns, history);
            (Index::List(r.index), r.anomalies, r.edges, r.warnings)
        }
        Workload::RwRegister => {
            let sources = Sources {
                wfr: opts.wfr_keys,
                sequential: opts.sequential_keys,
                linearizable: opts.linearizable_keys,
            };
            let r = RwRegister::infer(&txns, history, sources);
            (Index::Register(r.index), r.anomalies, r.edges, r.warnings)
        }
    };
    out.warnings.extend(warnings);
    for a in anomalies {
        out.anomalies.entry(a.kind).or_default().push(a);
    }

    // Order edges, as Elle adds them.
    let has = |v: Variant| {
        opts.search
            .iter()
            .any(|a| a.cycle_parts().is_some_and(|p| p.1 == v))
    };
    let variant = if has(Variant::Realtime) {
        Variant::Realtime
    } else if has(Variant::Process) {
        Variant::Process
    } else {
        Variant::Plain
    };
    let data_graph_empty = edges.edges.is_empty();
    match variant {
        Variant::Realtime => edges
            .edges
            .extend(order::realtime_edges(&txns, history).edges),
        Variant::Process => edges.edges.extend(order::process_edges(&txns).edges),
        Variant::Plain => {}
    }
    let graph = Graph::from_edges(txns.len(), edges);
    if data_graph_empty && graph.edge_count() == 0 {
        out.anomalies.insert(
            AnomalyType::EmptyTransactionGraph,
            vec![Anomaly {
                kind: AnomalyType::EmptyTransactionGraph,
                evidence: Evidence::EmptyGraph,
            }],
        );
    }
    let mask = match variant {
        Variant::Realtime => Rels::DATA | Rels::REALTIME,
        Variant::Process => Rels::DATA | Rels::PROCESS,
        Variant::Plain => Rels::DATA,
    };
    let variants: &[Variant] = match variant {
        Variant::Realtime => &[Variant::Plain, Variant::Realtime],
        Variant::Process => &[Variant::Plain, Variant::Process],
        Variant::Plain => &[Variant::Plain],
    };
    let sccs = tarjan(&graph, mask).nontrivial();
    let (cycles, timeouts) =
        cycle::search(&graph, mask, &sccs, &opts.search, variants, opts.budget);
    let explain = |a: u32, b: u32, rel: Rel| -> Step {
        let s = match (rel, &index) {
            (Rel::Process | Rel::Realtime, _) => order::explain(&txns, history, a, b, rel),
            (_, Index::List(i)) => i.explain(&txns, history, a, b, rel),
            (_, Index::Register(i)) => i.explain(&txns, history, a, b, rel),
        };
        s.unwrap_or_else(|| Step::bare(rel, txns.op_index(history, a), txns.op_index(history, b)))
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
        out.anomalies.entry(kind).or_default().push(Anomaly {
            kind,
            evidence: Evidence::Cycle {
                cycle: cyc,
                steps: explained,
            },
        });
    }
    for t in timeouts {
        out.anomalies
            .entry(AnomalyType::CycleSearchTimeout)
            .or_default()
            .push(Anomaly {
                kind: AnomalyType::CycleSearchTimeout,
                evidence: Evidence::Timeout {
                    scc_size: t.scc_size,
                    does_not_contain: t.remaining,
                },
            });
    }
    cycle_exists(&graph, mask, &sccs, &txns, history, opts, &mut out);
    out.anomalies.retain(|_, v| !v.is_empty());
    out
}

/// Elle's `<model>-cycle-exists` pre-pass (elle.md §5.3 step 3): for each
/// such type in `search`, whether the subgraph of the relations that model
/// forbids cycles in has a nontrivial SCC (one case per SCC).
fn cycle_exists(
    full: &Graph,
    mask: Rels,
    sccs: &[Vec<u32>],
    txns: &Txns<'_>,
    history: &History,
    opts: &AnalyzeOptions<'_>,
    out: &mut Analysis,
) {
    if !opts.search.iter().any(|a| a.is_cycle_exists()) {
        return;
    }
    // Every cycle lies within one SCC of the full graph: work per SCC.
    let mut scratch = vec![crate::graph::NO_NODE; full.node_count()];
    for scc in sccs {
        let sub = induced(full, scc, mask, &mut scratch);
        cycle_exists_in(&sub, scc, txns, history, opts, out);
    }
}

fn cycle_exists_in(
    graph: &Graph,
    scc: &[u32],
    txns: &Txns<'_>,
    history: &History,
    opts: &AnalyzeOptions<'_>,
    out: &mut Analysis,
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
        if !opts.search.contains(&kind) {
            continue;
        }
        let comps = if ext {
            // Two states per node: rw steps may not follow each other.
            let n = graph.node_count() as u32;
            let mut el = EdgeList::default();
            for x in 0..n {
                for (y, r) in graph.succ(x) {
                    if r.intersects(rels) {
                        el.add(2 * x, 2 * y, Rels::WW);
                        el.add(2 * x + 1, 2 * y, Rels::WW);
                    }
                    if r.contains(Rel::Rw) {
                        el.add(2 * x, 2 * y + 1, Rels::WW);
                    }
                }
            }
            let s = tarjan(&Graph::build(2 * n as usize, &el), Rels::WW);
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
        } else {
            tarjan(graph, rels).nontrivial()
        };
        let cases: Vec<Anomaly> = comps
            .into_iter()
            .map(|c| Anomaly {
                kind,
                evidence: Evidence::CycleExists {
                    subgraph: desc,
                    scc_size: c.len(),
                    scc: c
                        .iter()
                        .take(64)
                        .map(|&t| txns.op_index(history, scc[t as usize]))
                        .collect(),
                },
            })
            .collect();
        if !cases.is_empty() {
            out.anomalies.entry(kind).or_default().extend(cases);
        }
    }
}
