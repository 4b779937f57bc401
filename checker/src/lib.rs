//! checker: an Elle-grade isolation checker for list-append and rw-register
//! histories (see ARCHITECTURE.md; Elle: Kingsbury & Alvaro, VLDB 2020).
//!
//! Pure: no IO, no clock, no async. `check` = analysis (observations, the
//! workload's version order, then the list of analyses — non-cycle
//! anomalies, lost updates, graph and cycle search, and the complete checks
//! for the models asked for: `weak` (read committed, read atomic, causal)
//! and `sat` (rw-register serializability, snapshot isolation);
//! `analysis::ANALYSES`) + verdict (the model lattice; `model`). The
//! lattice and the analyses agree: a check at a model runs what every model
//! it implies needs, so no history is invalid at a weaker model and valid
//! at a stronger one, and `not`/`also-not` never name a model another
//! check calls valid (checker/tests/model_laws.rs).

pub mod analysis;
pub mod anomaly;
pub mod budget;
pub mod cycle;
pub mod engines;
pub mod explain;
pub mod graph;
pub mod linear;
pub mod list_append;
pub mod model;
pub mod observe;
pub mod order;
pub mod rels;
pub mod result;
pub mod rw_register;
pub mod sat;
pub mod sccs;
pub mod txn;
pub mod versions;
pub mod weak;
pub mod whitebox;
pub mod workload;
pub mod workloads;
mod write_ids;

pub use analysis::{AnalyzeOptions, Workload};
pub use anomaly::AnomalyType;
pub use budget::Budget;
pub use model::ConsistencyModel;
pub use result::{CheckResult, Valid};

use std::collections::BTreeMap;
use store::History;

/// What to check a history against.
#[derive(Debug)]
pub struct CheckOptions {
    /// The history's workload.
    pub workload: Workload,
    /// Models that should hold. Empty means "no models" (only `anomalies`
    /// count); [`CheckOptions::new`] uses Elle's default, strong-serializable (alias strict-serializable).
    pub models: Vec<ConsistencyModel>,
    /// Extra anomalies that must not occur (with everything implying them).
    pub anomalies: Vec<AnomalyType>,
    /// rw-register: writes follow reads within a transaction.
    pub wfr_keys: bool,
    /// rw-register: per-key sequential consistency (process order).
    pub sequential_keys: bool,
    /// rw-register: per-key linearizability (real-time order).
    pub linearizable_keys: bool,
    /// Limit of the cycle search; exhausting it gives `cycle-search-timeout`.
    pub budget: Budget,
    /// rw-register: decide serializable / snapshot-isolation models
    /// completely with [`sat`] (on by default; off reproduces Elle, whose
    /// inference only sees version orders that reads give away).
    pub complete: bool,
}

impl CheckOptions {
    /// Elle's defaults for `workload`: strong-serializable, no extra
    /// anomalies, no key assumptions, no budget limit.
    pub fn new(workload: Workload) -> CheckOptions {
        CheckOptions {
            workload,
            models: vec![model::DEFAULT_MODEL],
            anomalies: Vec::new(),
            wfr_keys: false,
            sequential_keys: false,
            linearizable_keys: false,
            budget: Budget::unlimited(),
            complete: true,
        }
    }
}

/// Checks `history`: infers dependencies and searches the anomalies that
/// `opts.models` and `opts.anomalies` need (`model::anomalies_to_search`),
/// then decides the verdict from the anomaly types found as Elle does
/// (`result::verdict`), with two exceptions: an empty dependency graph does
/// not make the verdict unknown when complete checks decided every model
/// asked for, and a cycle whose order the sat check chose rules out only
/// the level it refuted (`CheckResult::from_found_refuted`).
pub fn check(history: &History, opts: &CheckOptions) -> CheckResult {
    check_with_engines(history, opts).result
}

/// A [`CheckResult`] with how each serializable / snapshot-isolation level
/// was decided (empty unless the complete register check was asked for).
#[derive(Debug)]
pub struct Checked {
    /// The verdict, exactly as [`check`] returns it (its lists cut to the
    /// cap of [`check_capped`]).
    pub result: CheckResult,
    /// Per reported type, the cases the cap left out of `result`'s lists.
    pub omitted: BTreeMap<AnomalyType, usize>,
    /// Per level: Elle's inference, the complete check, who decided.
    pub engines: Vec<engines::LevelReport>,
    /// The analyses that ran (`analysis::ANALYSES` names), in order.
    pub analyses: Vec<&'static str>,
    /// Wall time of each analysis, seconds, in the order they ran.
    pub timings: Vec<(&'static str, f64)>,
    /// The transactions checked by outcome, and their keys.
    pub census: txn::Census,
}

/// As [`check`], also saying which engine decided each level.
pub fn check_with_engines(history: &History, opts: &CheckOptions) -> Checked {
    check_capped(history, opts, None)
}

/// As [`check_with_engines`], keeping at most `max_per_type` cases of each
/// anomaly type (the first ones found; `None` keeps all): the rest are
/// counted in [`Checked::omitted`] and never held, and the verdict is the
/// same as with every case kept.
pub fn check_capped(
    history: &History,
    opts: &CheckOptions,
    max_per_type: Option<usize>,
) -> Checked {
    let search = model::anomalies_to_search(&opts.models, &opts.anomalies);
    let analyze_opts = AnalyzeOptions {
        workload: opts.workload,
        search,
        wfr_keys: opts.wfr_keys,
        sequential_keys: opts.sequential_keys,
        linearizable_keys: opts.linearizable_keys,
        budget: &opts.budget,
        models: &opts.models,
        anomalies: &opts.anomalies,
        complete: opts.complete,
        max_per_type,
    };
    let analysis = analysis::analyze(history, &analyze_opts);
    let foreign = analysis.census.foreign(opts.workload);
    let engines = analysis.engines;
    let census = analysis.census;
    let analyses = analysis.ran;
    let timings = analysis.timings;
    let mut found = analysis.anomalies;
    let mut left = analysis.left;
    let mut warnings = analysis.warnings;
    // An empty dependency graph leaves Elle's inference undecided, not a
    // complete check: when one decided every model asked for, the graph
    // has nothing to add.
    if found.contains_key(&AnomalyType::EmptyTransactionGraph)
        && let Some(how) = decided_by_complete_checks(opts, analysis.weak_decided, &engines)
    {
        found.remove(&AnomalyType::EmptyTransactionGraph);
        left.remove(&AnomalyType::EmptyTransactionGraph);
        warnings.push(format!(
            "no dependency between transactions could be inferred (empty-transaction-graph), \
             but complete checks decided every model asked for ({how}); the verdict is theirs"
        ));
    }
    // A level the complete check refuted where inference saw nothing.
    let refuted: Vec<ConsistencyModel> = engines
        .iter()
        .filter(|r| r.complete == engines::Outcome::Invalid)
        .map(|r| r.model)
        .collect();
    let mut result = CheckResult::from_found_refuted(
        found,
        &left,
        &refuted,
        &opts.models,
        &opts.anomalies,
        warnings,
    );
    let omitted = left
        .into_iter()
        .filter(|(t, l)| l.count > 0 && result.anomaly_types.contains(t))
        .map(|(t, l)| (t, l.count))
        .collect();
    // Like Elle (`unexpected-txn-micro-op-types`), a history the workload
    // cannot fully read is never valid: `-m rw-register` on a list-append
    // history must not pass by ignoring every list read.
    if foreign > 0 {
        result.valid = result.valid.combine(Valid::Unknown);
        result.warnings.push(format!(
            "{foreign} micro-op(s) of completed transactions are not {} micro-ops \
             (unexpected-txn-micro-op-types); the verdict cannot be valid",
            opts.workload.name()
        ));
    }
    // A level the complete check could not decide (budget, or a witness
    // that failed its replay) leaves the verdict unknown, never valid.
    if engines.iter().any(engines::LevelReport::undecided) {
        result.valid = result.valid.combine(Valid::Unknown);
    }
    Checked {
        result,
        omitted,
        engines,
        analyses,
        timings,
        census,
    }
}

/// Whether complete checks decided every model of `opts` (and every extra
/// anomaly is one such a model prohibits): each model is one the weak check
/// that ran to the end decides (`model::decided_by_weak`), or one the sat
/// check decided — its own level either way, or a level implying it that
/// holds. `Some` names who decided what; `None` when something is left to
/// Elle's inference alone (or no model was asked for).
fn decided_by_complete_checks(
    opts: &CheckOptions,
    weak: Option<weak::Level>,
    engines: &[engines::LevelReport],
) -> Option<String> {
    use engines::Outcome;
    if opts.models.is_empty() {
        return None;
    }
    let by_weak = weak.map(model::decided_by_weak).unwrap_or_default();
    let mut how = Vec::new();
    for &m in &opts.models {
        if by_weak.contains(&m) {
            let level = weak.map_or("", weak::Level::name);
            how.push(format!("{m}: the weak {level} check"));
            continue;
        }
        let by_sat = engines.iter().find(|r| match r.complete {
            Outcome::Valid => model::all_implied_models([r.model]).contains(&m),
            Outcome::Invalid => r.model == m,
            Outcome::Unknown(_) | Outcome::NotRun(_) => false,
        });
        match by_sat {
            Some(r) => how.push(format!("{m}: the {} {} check", engines::SAT, r.model)),
            None => return None,
        }
    }
    let covered = model::anomalies_prohibited_by(opts.models.iter().copied());
    if !opts.anomalies.iter().all(|a| covered.contains(a)) {
        return None;
    }
    Some(how.join("; "))
}
