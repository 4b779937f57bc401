//! Complete serializability and snapshot-isolation checking of rw-register
//! histories (unique values per key), after Cobra and PolySI: a polygraph
//! of known edges plus one either-or constraint per pair of writers of a
//! key, pruned by known-edge reachability and then searched. Entry point:
//! [`check_register`]; `analysis::analyze` runs it after Elle's inference.
//!
//! Key decisions:
//! - **SI by the SI→SER split** (Biswas & Enea; equivalent to PolySI's
//!   generalized polygraph, Theorem 6 of Cerone & Gotsman): a transaction is
//!   two nodes, start and commit, joined by an internal edge; ww, wr,
//!   realtime and process edges run commit → start, rw edges start →
//!   commit. A cycle can then never hold two adjacent rw edges. SER is the
//!   same engine with one node per transaction, so one solver serves both.
//! - **Generalized constraints** (PolySI Def. 9): "writer A before writer B"
//!   carries `A ww B` and `R rw B` for every reader R of A's value.
//!   Constraint sides are recomputed from a per-key index, never stored.
//! - **Which transactions count**: `ok` ones; `info` ones exactly when some
//!   committed read observed one of their writes (an unread `info` writer
//!   can always be left out: dropping it removes constraints only); `fail`
//!   ones never. Reads of aborted, intermediate, own-later or unknown
//!   writes are G1a/G1b/future/garbage reads, reported by `rw_register`, and
//!   left out here. `info` transactions' reads are not observations.
//! - **No SAT crate**: the theory (acyclicity) does nearly all the work.
//!   An incrementally topologically ordered DAG (Pearce–Kelly) answers
//!   "would this edge close a cycle", pruning (PolySI §4.1) resolves
//!   almost every constraint, and what is left is split into independent
//!   components (SCCs of the graph with every candidate edge) searched by
//!   DPLL that decides only constraints with no side agreeing with the
//!   current order, and backjumps to the newest decision on a conflict's
//!   cycle (`solve`). This keeps the build pure Rust with zero new
//!   dependencies; measured in BENCHMARKS.md. (Clause learning would help
//!   adversarial inputs; the [`Budget`] turns those into `Unknown`.)
//! - **Plain levels try strong-session first**: SER and SI (no session
//!   order asked) first run one bounded attempt with each session's order
//!   as known edges. A database keeps its sessions' order, so that graph
//!   prunes far better and its search starts near a real order; and its
//!   witness is one of the plain level (a superset of the constraints over
//!   the same transactions). Only `valid` is taken from it; otherwise the
//!   plain level is decided by its own search, which starts from the order
//!   that attempt reached. On PolySI-shaped SI histories with
//!   25 % reads this took plain SI from over a minute to 0.05 s.
//! - **Evidence**: a violation is the cycle that closed, with every ww/rw
//!   edge the check chose explained by the cycle its opposite would close
//!   ([`crate::explain::Derived`]), classified like Elle's cycles
//!   (`G-single-item`, `G2-item`, … with `-realtime`/`-process`).
//! - **Initial state**: a read of `nil`, or of the format's initial value
//!   ([`History::initial_value`], e.g. PolySI's 0) on a key nobody writes
//!   it to, reads the initial state: known rw edges to every writer of the
//!   key (the initial state is a transaction before everything).
//! - **Witness**: a `valid` carries the commit order and each transaction's
//!   snapshot point; `analysis::sat` gives the verdict only after
//!   [`replay`] (written from the definitions, sharing nothing with the
//!   solver) accepts it.
//! - Everything is iterative; the budget is charged per edge examined.

mod dag;
mod polygraph;
mod replay;
mod schedule;
#[cfg(test)]
mod search_tests;
mod solve;

pub use replay::replay;
pub use solve::Stats;

use crate::anomaly::{AnomalyType, Variant};
use crate::budget::Budget;
use crate::cycle::classify;
use crate::explain::{Anomaly, Derived, Evidence, Site, Step};
use crate::model::{ConsistencyModel, all_implied_models};
use crate::order;
use crate::rels::Rel;
use crate::txn::Txns;
use dag::{Conflict, Dag, EdgeRec, Why};
use polygraph::{Fact, Kind, Poly};
use solve::Solved;
use store::{History, Key, MicroOp, OpIndex, ReadValue, Val};

/// The isolation level to decide.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Level {
    /// Serializability.
    Serializable,
    /// Serializability respecting each session's order.
    StrongSessionSerializable,
    /// Strict (strong) serializability: real-time order too.
    StrictSerializable,
    /// Snapshot isolation.
    SnapshotIsolation,
    /// Strong-session snapshot isolation (a session sees its own commits).
    StrongSessionSnapshotIsolation,
    /// Strong snapshot isolation: a transaction sees every transaction that
    /// committed before it was invoked.
    StrongSnapshotIsolation,
}

impl Level {
    /// Whether this is a snapshot-isolation level (a transaction is two
    /// events, start and commit).
    pub fn split(self) -> bool {
        matches!(
            self,
            Level::SnapshotIsolation
                | Level::StrongSessionSnapshotIsolation
                | Level::StrongSnapshotIsolation
        )
    }

    fn realtime(self) -> bool {
        matches!(
            self,
            Level::StrictSerializable | Level::StrongSnapshotIsolation
        )
    }

    fn process(self) -> bool {
        matches!(
            self,
            Level::StrongSessionSerializable | Level::StrongSessionSnapshotIsolation
        )
    }

    /// The model this level decides.
    pub fn model(self) -> ConsistencyModel {
        match self {
            Level::Serializable => ConsistencyModel::Serializable,
            Level::StrongSessionSerializable => ConsistencyModel::StrongSessionSerializable,
            Level::StrictSerializable => ConsistencyModel::StrictSerializable,
            Level::SnapshotIsolation => ConsistencyModel::SnapshotIsolation,
            Level::StrongSessionSnapshotIsolation => {
                ConsistencyModel::StrongSessionSnapshotIsolation
            }
            Level::StrongSnapshotIsolation => ConsistencyModel::StrongSnapshotIsolation,
        }
    }

    /// The levels to decide so that every serializable or SI model implied
    /// by `models` is decided, without one implying another.
    pub fn for_models(models: &[ConsistencyModel]) -> Vec<Level> {
        let implied = all_implied_models(models.iter().copied());
        let all = [
            Level::StrictSerializable,
            Level::StrongSessionSerializable,
            Level::Serializable,
            Level::StrongSnapshotIsolation,
            Level::StrongSessionSnapshotIsolation,
            Level::SnapshotIsolation,
        ];
        let mut out: Vec<Level> = Vec::new();
        for l in all {
            if !implied.contains(&l.model()) {
                continue;
            }
            let covered = out
                .iter()
                .any(|o| all_implied_models([o.model()]).contains(&l.model()));
            if !covered {
                out.push(l);
            }
        }
        out
    }
}

/// The verdict of the complete check.
#[derive(Clone, Debug, PartialEq)]
pub enum SatOutcome {
    /// The level holds; `witness` is a commit order of the transactions
    /// that count (op indices), consistent with every read.
    Valid {
        /// Commit order.
        witness: Vec<OpIndex>,
        /// Per `witness` entry, its snapshot point: how many transactions
        /// before it in `witness` had committed when it started (for
        /// serializable levels its own position). [`replay`] checks both.
        starts: Vec<u32>,
    },
    /// The level is violated: a cycle no compatible graph avoids.
    Invalid {
        /// One cycle anomaly.
        anomalies: Vec<Anomaly>,
    },
    /// The budget ran out first.
    Unknown {
        /// Why.
        reason: String,
    },
}

/// Decides `level` for a rw-register history exactly (see the module doc).
pub fn check_register(
    txns: &Txns<'_>,
    history: &History,
    level: Level,
    budget: &Budget,
) -> SatOutcome {
    check_register_stats(txns, history, level, budget).0
}

/// As [`check_register`], with counters.
pub fn check_register_stats(
    txns: &Txns<'_>,
    history: &History,
    level: Level,
    budget: &Budget,
) -> (SatOutcome, Stats) {
    // A plain level first tries its strong-session variant, briefly: each
    // session's order is one more set of known edges, so pruning resolves
    // far more and the search starts from an order databases keep; and a
    // commit order (with snapshot points) that satisfies the stronger
    // level satisfies the plain one (its constraints are a subset, over
    // the same transactions). Only `valid` is taken from it: a violation
    // or a give-up there says nothing here.
    // Otherwise the order it reached seeds the plain search (same nodes).
    let mut seed = None;
    if !level.process() && !level.realtime() {
        let strong = Poly::build(txns, history, level.split(), false, true);
        if let Some(out) = too_many(&strong) {
            return out;
        }
        if strong.known.iter().any(|f| f.kind == Kind::Process) {
            let limit = 1000 + strong.global.len() as u64 / 10;
            match schedule::attempt(&strong, budget, limit) {
                Ok((Solved::Sat, dag, mut stats)) => {
                    stats.via_session = true;
                    return (witness(txns, history, &strong, &dag), stats);
                }
                Ok((_, dag, _)) => {
                    seed = Some(
                        (0..strong.nodes() as u32)
                            .map(|v| u64::from(dag.pos(v)))
                            .collect(),
                    );
                }
                Err(order) => seed = Some(order),
            }
        }
    }
    let poly = Poly::build(
        txns,
        history,
        level.split(),
        level.realtime(),
        level.process(),
    );
    if let Some(out) = too_many(&poly) {
        return out;
    }
    let (solved, dag, stats) = schedule::solve(&poly, budget, seed);
    let out = match solved {
        Solved::Sat => witness(txns, history, &poly, &dag),
        Solved::Unsat(c) => SatOutcome::Invalid {
            anomalies: vec![
                Explainer {
                    txns,
                    history,
                    poly: &poly,
                    dag: &dag,
                    level,
                }
                .anomaly(&c),
            ],
        },
        Solved::Unknown => SatOutcome::Unknown {
            reason: format!(
                "the complete {} check ran out of budget ({} transactions, {} constraints)",
                level.model().name(),
                stats.txns,
                stats.constraints
            ),
        },
    };
    (out, stats)
}

/// `Unknown` when the constraints outnumber their 32-bit ids.
fn too_many(poly: &Poly) -> Option<(SatOutcome, Stats)> {
    (poly.pairs_total > u64::from(u32::MAX)).then(|| {
        let reason = format!(
            "the complete check has {} writer-pair constraints, more than it can number",
            poly.pairs_total
        );
        (SatOutcome::Unknown { reason }, Stats::default())
    })
}

/// The `valid` outcome read off an acyclic `dag` of `poly`: commit nodes
/// give the commit order; an SI start node gives its transaction's
/// snapshot point (commits before it).
fn witness(txns: &Txns<'_>, history: &History, poly: &Poly, dag: &Dag) -> SatOutcome {
    let mut witness = Vec::with_capacity(poly.global.len());
    let mut snap = vec![0u32; poly.global.len()];
    for v in dag.topo() {
        let t = if poly.split { v / 2 } else { v };
        if poly.split && v % 2 == 0 {
            snap[t as usize] = witness.len() as u32;
            continue;
        }
        if !poly.split {
            snap[t as usize] = witness.len() as u32;
        }
        witness.push(t);
    }
    let starts = witness.iter().map(|&t| snap[t as usize]).collect();
    let witness = witness
        .into_iter()
        .map(|t| txns.op_index(history, poly.global[t as usize]))
        .collect();
    SatOutcome::Valid { witness, starts }
}

struct Explainer<'a, 'h> {
    level: Level,
    txns: &'a Txns<'h>,
    history: &'a History,
    poly: &'a Poly,
    dag: &'a Dag,
}

impl Explainer<'_, '_> {
    fn op(&self, local: u32) -> OpIndex {
        self.txns
            .op_index(self.history, self.poly.global[local as usize])
    }

    fn mop(&self, local: u32, i: u32) -> Option<&MicroOp> {
        let g = self.poly.global[local as usize];
        self.txns.mops(g).get(i as usize)
    }

    fn written(&self, local: u32, i: u32) -> Option<Val> {
        match self.mop(local, i) {
            Some(MicroOp::Write(_, v)) => Some(v.clone()),
            _ => None,
        }
    }

    fn step(&self, f: &Fact) -> Step {
        let (a, b) = (self.op(f.from), self.op(f.to));
        let rel = match f.kind {
            Kind::Ww => Rel::Ww,
            Kind::Wr => Rel::Wr,
            Kind::Rw => Rel::Rw,
            Kind::Realtime | Kind::Internal => Rel::Realtime,
            Kind::Process => Rel::Process,
        };
        if matches!(f.kind, Kind::Realtime | Kind::Process) {
            let (ga, gb) = (
                self.poly.global[f.from as usize],
                self.poly.global[f.to as usize],
            );
            return order::explain(self.txns, self.history, ga, gb, rel)
                .unwrap_or_else(|| Step::bare(rel, a, b));
        }
        let key = self
            .txns
            .keys
            .get(f.key as usize)
            .map(|k| Key((*k).clone()));
        let (value, value2) = match f.kind {
            Kind::Ww => (self.written(f.from, f.a_mop), self.written(f.to, f.b_mop)),
            Kind::Wr => (self.written(f.from, f.a_mop), None),
            _ => {
                let read = match self.mop(f.from, f.a_mop) {
                    Some(MicroOp::Read(_, ReadValue::Scalar(v))) => Some(v.clone()),
                    _ => None,
                };
                (read, self.written(f.to, f.b_mop))
            }
        };
        let site = key.map(|key| Site {
            key,
            a_mop: f.a_mop as usize,
            b_mop: f.b_mop as usize,
        });
        Step::data(rel, a, b, false, site, value, value2)
    }

    /// Transaction-level steps of a node cycle (SI's internal edges dropped).
    fn collapse<'e>(&self, edges: impl Iterator<Item = &'e EdgeRec>) -> Vec<&'e EdgeRec> {
        edges.filter(|e| e.fact.kind != Kind::Internal).collect()
    }

    fn derived(&self, e: &EdgeRec, limit: u32) -> Option<Box<Derived>> {
        let opposite = |f: &Fact| Fact {
            kind: Kind::Ww,
            from: f.to,
            to: f.from,
            key: f.key,
            a_mop: f.b_mop,
            b_mop: f.a_mop,
        };
        match e.why {
            Why::Known => None,
            Why::Decided | Why::Flipped => Some(Box::new(Derived {
                refuted: self.step(&opposite(&e.fact)),
                cycle: Vec::new(),
                rels: Vec::new(),
                assumed: true,
            })),
            Why::Forced { blocked } => {
                let (a, b) = self.poly.ends(&blocked);
                let unlimited = Budget::unlimited();
                let path = self
                    .dag
                    .path_before(b, a, limit, &unlimited)
                    .unwrap_or_default();
                let rec = EdgeRec {
                    from: a,
                    to: b,
                    fact: blocked,
                    why: Why::Known,
                };
                let all: Vec<&EdgeRec> = std::iter::once(&rec)
                    .chain(path.iter().map(|&i| &self.dag.edges[i as usize]))
                    .collect();
                let steps = self.collapse(all.into_iter());
                let mut cycle: Vec<OpIndex> = steps.iter().map(|s| self.op(s.fact.from)).collect();
                if let Some(&f) = cycle.first() {
                    cycle.push(f);
                }
                let rels = steps.iter().map(|s| self.step(&s.fact).rel()).collect();
                Some(Box::new(Derived {
                    refuted: self.step(&blocked),
                    cycle,
                    rels,
                    assumed: false,
                }))
            }
        }
    }

    /// A cycle of edges read off the history is classified as Elle does.
    /// One with a chosen order only shows that no version order avoids a
    /// cycle the level forbids, which is all it may claim: `G2-item` (no
    /// serial order; for item histories also not PL-2.99) or, for SI,
    /// `G-nonadjacent-item` (every order has a cycle without adjacent rw),
    /// with `-realtime`/`-process` when such edges took part.
    fn kind(&self, rels: &[Rel], steps: &[Step]) -> AnomalyType {
        if steps.iter().all(|s| s.derived().is_none()) {
            return classify(rels);
        }
        let used = |r: Rel| {
            steps
                .iter()
                .any(|s| s.rel() == r || s.derived().is_some_and(|d| d.rels.contains(&r)))
        };
        let variant = if used(Rel::Realtime) {
            Variant::Realtime
        } else if used(Rel::Process) {
            Variant::Process
        } else {
            Variant::Plain
        };
        let base = if self.level.split() {
            AnomalyType::GNonadjacentItem
        } else {
            AnomalyType::G2Item
        };
        base.with_variant(variant).unwrap_or(base)
    }

    fn anomaly(&self, c: &Conflict) -> Anomaly {
        let limit = self.dag.edges.len() as u32;
        let mut all: Vec<(&EdgeRec, u32)> = vec![(&c.edge, limit)];
        all.extend(c.path.iter().map(|&i| (&self.dag.edges[i as usize], i)));
        let mut steps = Vec::new();
        for (e, id) in all {
            if e.fact.kind == Kind::Internal {
                continue;
            }
            let mut s = self.step(&e.fact);
            // Only data steps (ww, rw) have version orders to derive.
            if let Step::Ww(d) | Step::Wr(d) | Step::Rw(d) = &mut s {
                d.derived = self.derived(e, id);
            }
            steps.push(s);
        }
        let rels: Vec<Rel> = steps.iter().map(Step::rel).collect();
        let kind = self.kind(&rels, &steps);
        let mut cycle: Vec<OpIndex> = steps.iter().map(|s| s.ends().0).collect();
        if let Some(&f) = cycle.first() {
            cycle.push(f);
        }
        Anomaly {
            kind,
            evidence: Evidence::Cycle { cycle, steps },
        }
    }
}
