//! checker: an Elle-grade isolation checker for list-append and rw-register
//! histories (see ARCHITECTURE.md and ../shared/specs/elle.md).
//!
//! Pure: no IO, no clock, no async. `check` = analysis (inference, graph,
//! cycle search; `analysis`) + verdict (the model lattice; `model`).

pub mod analysis;
pub mod anomaly;
pub mod budget;
pub mod cycle;
pub mod engines;
pub mod explain;
pub mod graph;
pub mod list_append;
pub mod model;
pub mod order;
pub mod rels;
pub mod result;
pub mod rw_register;
pub mod sat;
pub mod txn;
pub mod weak;

pub use analysis::{AnalyzeOptions, Workload};
pub use anomaly::AnomalyType;
pub use budget::Budget;
pub use model::ConsistencyModel;
pub use result::{CheckResult, Valid};

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
/// then decides the verdict from the anomaly types found exactly as Elle
/// does (`result::verdict`).
pub fn check(history: &History, opts: &CheckOptions) -> CheckResult {
    check_with_engines(history, opts).result
}

/// A [`CheckResult`] with how each serializable / snapshot-isolation level
/// was decided (empty unless the complete register check was asked for).
#[derive(Debug)]
pub struct Checked {
    /// The verdict, exactly as [`check`] returns it.
    pub result: CheckResult,
    /// Per level: Elle's inference, the complete check, who decided.
    pub engines: Vec<engines::LevelReport>,
}

/// As [`check`], also saying which engine decided each level.
pub fn check_with_engines(history: &History, opts: &CheckOptions) -> Checked {
    let search = model::anomalies_to_search(&opts.models, &opts.anomalies);
    let analysis = analysis::analyze(
        history,
        &AnalyzeOptions {
            workload: opts.workload,
            search,
            wfr_keys: opts.wfr_keys,
            sequential_keys: opts.sequential_keys,
            linearizable_keys: opts.linearizable_keys,
            budget: &opts.budget,
        },
    );
    let mut analysis = analysis;
    // Complete read committed / read atomic / causal checks, when asked for
    // by name (`weak::Level::needed`).
    if let Some(level) = weak::Level::needed(&opts.models, &opts.anomalies) {
        let w = weak::check(history, opts.workload, level);
        for a in w.anomalies {
            analysis.anomalies.entry(a.kind).or_default().push(a);
        }
        analysis.warnings.extend(w.warnings);
    }
    let engines = if opts.workload == Workload::RwRegister && opts.complete {
        complete_register_check(history, opts, &mut analysis)
    } else {
        Vec::new()
    };
    let mut result = CheckResult::from_found(
        analysis.anomalies,
        &opts.models,
        &opts.anomalies,
        analysis.warnings,
    );
    // Like Elle (`unexpected-txn-micro-op-types`), a history the workload
    // cannot fully read is never valid: `-m rw-register` on a list-append
    // history must not pass by ignoring every list read.
    let foreign = foreign_micro_ops(history, opts.workload);
    if foreign > 0 {
        result.valid = result.valid.combine(Valid::Unknown);
        result.warnings.push(format!(
            "{foreign} micro-op(s) of completed transactions are not {} micro-ops \
             (unexpected-txn-micro-op-types); the verdict cannot be valid",
            opts.workload.name()
        ));
    }
    Checked { result, engines }
}

/// rw-register: Elle's inference sees only the version orders that reads
/// give away; for the serializable and snapshot-isolation models asked for
/// (`sat::Level::for_models`), decide them exactly with `sat` and add its
/// cycle. Skipped for a level when inference already found a cycle the
/// level proscribes (the verdict is decided; the SAT cycle would repeat it).
/// Out of budget: a warning, and the verdict stays Elle's.
fn complete_register_check(
    history: &History,
    opts: &CheckOptions,
    analysis: &mut analysis::Analysis,
) -> Vec<engines::LevelReport> {
    use engines::Outcome;
    let levels = sat::Level::for_models(&opts.models);
    if levels.is_empty() {
        return Vec::new();
    }
    let timed_out = analysis
        .anomalies
        .contains_key(&AnomalyType::CycleSearchTimeout);
    let txns = txn::Txns::new(history);
    let mut reports = Vec::new();
    for level in levels {
        let proscribed = model::anomalies_prohibited_by([level.model()]);
        let decided = analysis
            .anomalies
            .keys()
            .any(|a| a.is_cycle() && proscribed.contains(a));
        let inference = if decided {
            Outcome::Invalid
        } else if timed_out {
            Outcome::Unknown("cycle search ran out of budget".to_string())
        } else {
            Outcome::Valid
        };
        let mut report = engines::LevelReport {
            model: level.model(),
            inference,
            complete: Outcome::NotRun("inference already found a forbidden cycle".to_string()),
            witness: None,
        };
        if decided {
            reports.push(report);
            continue;
        }
        match sat::check_register(&txns, history, level, &opts.budget) {
            sat::SatOutcome::Valid { witness } => {
                report.complete = Outcome::Valid;
                report.witness = Some(witness);
            }
            sat::SatOutcome::Invalid { anomalies } => {
                report.complete = Outcome::Invalid;
                for a in anomalies {
                    analysis.anomalies.entry(a.kind).or_default().push(a);
                }
            }
            sat::SatOutcome::Unknown { reason } => {
                analysis.warnings.push(format!(
                    "{reason}; the {} verdict rests on Elle's inference alone",
                    level.model().name()
                ));
                report.complete = Outcome::Unknown(reason);
            }
        }
        reports.push(report);
    }
    reports
}

/// How many micro-ops of completed client transactions `workload` cannot
/// interpret (a write or scalar read in list-append, an append or list read
/// in rw-register).
fn foreign_micro_ops(history: &History, workload: Workload) -> usize {
    use store::{MicroOp, OpType, ReadValue};
    history
        .ops()
        .iter()
        .filter(|op| op.op_type != OpType::Invoke && txn::is_client_txn(op))
        .filter_map(|op| op.value.txn())
        .flatten()
        .filter(|m| {
            !matches!(
                (workload, m),
                (Workload::ListAppend, MicroOp::Append(..))
                    | (
                        Workload::ListAppend,
                        MicroOp::Read(_, ReadValue::Nil | ReadValue::List(_))
                    )
                    | (Workload::RwRegister, MicroOp::Write(..))
                    | (
                        Workload::RwRegister,
                        MicroOp::Read(_, ReadValue::Nil | ReadValue::Scalar(_))
                    )
            )
        })
        .count()
}
