//! Complete polynomial checkers for read committed, read atomic and causal
//! consistency (Biswas & Enea's axioms, "On the complexity of checking
//! transactional consistency", OOPSLA 2019, §3–4), with the anomaly names of Plume's
//! transactional anomalous patterns (OOPSLA 2024) and AWDIT's (PLDI 2025)
//! ways of keeping the saturation near-linear.
//!
//! A history satisfies level L iff some total commit order contains session
//! order, write-read and every edge L's axiom forces; the forced edges never
//! depend on the commit order, so one saturation pass and a cycle test
//! decide it (valid ⇒ any topological order is a witness). Session =
//! process. Works on rw-register and list-append histories alike through
//! [`observe::Observations`]: each read names its writer (list-append: the
//! writer of the last element read).
//!
//! Entry point: [`check`] (or [`check_txns`]), for the level [`Level::needed`]
//! by the requested models. Anomalies and the models they rule out:
//!
//! | anomaly | Plume TAP | ruled out (directly) |
//! |---|---|---|
//! | `cyclic-causal-order` | g CyclicCO | read-atomic (implies G1c-process) |
//! | `non-monotonic-read` | h/i NonMonoRead | read-committed (B&E/Plume RC: monotonic reads in a txn) |
//! | `non-monotonic-read-process` | h/i through session order | strong-session-read-committed, read-atomic |
//! | `non-repeatable-read` | j NonRepeatableRead | read-atomic (implies G-single-item) |
//! | `fractured-read` | k/l FracturedRead | monotonic-atomic-view |
//! | `fractured-read-process` | k/l through session order | read-atomic |
//! | `causality-violation` | m/n (CO)ConflictCM | causal-cerone |
//!
//! TAPs a–f (thin-air, aborted, future, not-my-own/last write, intermediate
//! reads) are `garbage-read`, `G1a`, `future-read`, `not-my-own-write` /
//! `not-my-last-write` (cases of `internal`) and `G1b`, which
//! `analysis/reads.rs` finds on every read; this module leaves those reads
//! out. Biswas & Enea's / Plume's read committed is the model
//! `strong-session-read-committed` (aliases `RC`, `rc`); Elle's
//! `read-committed` is session-free PL-2 plus `non-monotonic-read`.

mod acyclic;
pub mod observe;
pub mod report;
pub mod saturate;

use crate::anomaly::AnomalyType;
use crate::explain::{Anomaly, Evidence};
use crate::txn::Txns;
use crate::workload::Workload;
use observe::{INIT, Observations};
use saturate::Cat;
use store::History;

pub use crate::model::Level;

// The level's category of the saturation (`saturate::Cat`).
impl Level {
    fn max_cat(self) -> Cat {
        match self {
            Level::ReadCommitted => Cat::Rc,
            Level::ReadAtomic => Cat::RaSo,
            Level::Causal => Cat::Cc,
        }
    }
}

/// What the weak-isolation check found.
#[derive(Debug, Default)]
pub struct WeakAnalysis {
    /// Anomalies (cycles), at most
    /// [`report::MAX_CASES_PER_TYPE`] per type.
    pub anomalies: Vec<Anomaly>,
    /// Oddities that did not stop the check.
    pub warnings: Vec<String>,
}

/// Checks `history` at `level`.
pub fn check(history: &History, workload: Workload, level: Level) -> WeakAnalysis {
    let txns = Txns::new(history);
    check_txns(history, &txns, workload, level)
}

/// As [`check`], on already extracted transactions.
pub fn check_txns(
    history: &History,
    txns: &Txns<'_>,
    workload: Workload,
    level: Level,
) -> WeakAnalysis {
    let seen = crate::observe::Observations::new(txns, history, workload);
    check_observed(history, txns, &seen, workload, level)
}

/// Whether the level's graph — session order, write-read and `inferred`
/// up to `max` — has neither a cycle nor an edge into the initial state.
fn valid_at(obs: &Observations, inferred: &[saturate::Inferred], max: Cat) -> bool {
    !inferred.iter().any(|e| e.to == INIT && e.cat <= max) && acyclic::acyclic(obs, inferred, max)
}

/// [`check_txns`] on observations already made (the analysis pipeline's).
pub fn check_observed(
    history: &History,
    txns: &Txns<'_>,
    seen: &crate::observe::Observations<'_>,
    workload: Workload,
    level: Level,
) -> WeakAnalysis {
    let obs = Observations::new(txns, seen, workload);
    let mut out = WeakAnalysis::default();
    let max = level.max_cat();
    // Read atomic first alone: every read committed edge t2 → t1 is also
    // a read atomic one (t2 is a writer the reader read from, it writes the
    // key, t1 is the writer of the reader's read of it: `read_atomic` emits
    // that pair too, `Nr` or `RaWr`, into the initial state as well), so the
    // level's graph has a cycle, or an edge into the initial state, iff the
    // graph without them has. When it has neither — every history that
    // satisfies read atomic — the read committed pass is never run; else
    // both run, in the usual order, for the report below. By the edges'
    // ends alone (8 B an edge, not 20: every read atomic edge is in the
    // level's graph); a report infers them again, whole.
    if level == Level::ReadAtomic {
        let mut ends = saturate::Ends::default();
        saturate::read_atomic(&obs, &mut ends);
        if !ends.into_init && acyclic::acyclic_pairs(&obs, &ends.pairs) {
            return out;
        }
    }
    // Read committed: first by the edges' ends alone (8 B an edge, not
    // 20); only a history it finds invalid has them inferred again, whole,
    // for the report below.
    if level == Level::ReadCommitted {
        let mut ends = saturate::Ends {
            pairs: Vec::with_capacity(obs.read_count()),
            into_init: false,
        };
        saturate::read_committed(&obs, &mut ends);
        if !ends.into_init && acyclic::acyclic_pairs(&obs, &ends.pairs) {
            return out;
        }
    }
    // Room for an edge a read: a guess (the edges are as many as the
    // reads in AWDIT's histories); room never used is never touched.
    let mut inferred = Vec::with_capacity(obs.read_count());
    saturate::read_committed(&obs, &mut inferred);
    if level >= Level::ReadAtomic {
        saturate::read_atomic(&obs, &mut inferred);
    }
    if level >= Level::Causal {
        let r = saturate::causal::causal(&obs, &mut inferred);
        if r.cyclic > 0 {
            out.warnings.push(format!(
                "causal: {} transaction(s) lie on session/write-read cycles and were not checked for causality",
                r.cyclic
            ));
        }
        if let Some(entries) = r.too_large {
            out.warnings.push(format!(
                "causal: {entries} vector-clock entries exceed the limit of {}; causality was not checked",
                saturate::causal::MAX_CLOCK_ENTRIES
            ));
            out.anomalies.push(Anomaly {
                kind: AnomalyType::CycleSearchTimeout,
                evidence: Evidence::Timeout {
                    scc_size: obs.n,
                    does_not_contain: vec![AnomalyType::CausalityViolation],
                },
            });
        }
    }
    // Every history that satisfies the level: nothing to report, and the
    // explained edges are never built (`acyclic`).
    if valid_at(&obs, &inferred, max) {
        return out;
    }
    let sites = observe::Sites::new(txns, seen);
    let ctx = report::Ctx {
        history,
        txns,
        obs: &obs,
        sites: &sites,
        list: workload == Workload::ListAppend,
    };
    let edges = report::base_edges(&obs, &sites);
    out.anomalies
        .extend(report::report(&ctx, edges, &inferred, max));
    out
}
