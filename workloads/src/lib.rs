//! Workloads: the generators that decide what clients do.
//!
//! Owns the [`generator::Generator`] trait and its combinators, the list-append
//! and rw-register transaction generators, and Jepsen's bank, set, set-full,
//! long-fork, monotonic, sequential and counter workloads ([`jepsen`]). Key decision: generators are pure
//! values driven by the runner's interpreter, seeded, with no IO or clock, so
//! a run is reproducible from its seed and completions.
//!
//! Entry points: [`WorkloadKind::parse`] for `--workload`, [`WorkloadConfig`]
//! for the tunables (`--key-count`, `--max-writes-per-key`,
//! `--min-txn-length`, `--max-txn-length`, `--read-ratio`), [`for_workload`]
//! for the main-phase generator, and [`Generator::touched_keys`] +
//! [`generator::final_reads`] (or [`generator::then_final_reads`]) for the
//! final reads.

pub mod append;
pub mod bank;
pub mod cas_register;
pub mod counter;
pub mod generator;
pub mod jepsen;
pub mod keys;
pub mod long_fork;
pub mod monotonic;
pub mod predicate;
pub mod register;
pub mod rng;
pub mod sequential;
pub mod set;
pub mod txn;

use generator::Generator;
use std::fmt;
use std::str::FromStr;

pub use jepsen::JepsenWorkload;
pub use txn::TxnGen;

/// The one workload vocabulary: what a history holds and so which check
/// decides it. `run`, `check`, `analyze`, `serve` and the run record
/// (`test.json`'s `config.workload`) all name workloads by it; its names
/// and aliases are [`WORKLOADS`], which every `--help` and error lists.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum WorkloadKind {
    /// `list-append` (alias `append`): appends of unique elements to lists.
    ListAppend,
    /// `rw-register` (alias `wr`): blind writes of unique values to registers.
    RwRegister,
    /// `predicate`: list-append with range reads (`predicate.rs`).
    Predicate,
    /// `register` (alias `cas-register`): single-key read / write / cas on
    /// independent keys, checked for linearizability (`cas_register.rs`).
    Register,
    /// `kv`: Porcupine's get / put / append on string keys, checked for
    /// linearizability (histories only: no generator).
    Kv,
    /// One of Jepsen's non-Elle workloads (`jepsen.rs`: bank, set, …).
    Jepsen(JepsenWorkload),
    /// One of Knossos' other models, checked for linearizability
    /// (histories only: no generator).
    Knossos(KnossosModel),
}

/// Knossos' models beside the cas-register, as Jepsen tests use them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum KnossosModel {
    /// `multi-register`: transactions of reads and writes over registers.
    MultiRegister,
    /// `mutex` (alias `lock`): acquire and release of one lock.
    Mutex,
    /// `fifo-queue` (alias `queue`): enqueue and dequeue in order.
    FifoQueue,
    /// `unordered-queue`: enqueue and dequeue in any order.
    UnorderedQueue,
    /// `linearizable-set` (alias `knossos-set`): adds and whole-set reads.
    Set,
}

/// A workload's names: the canonical one first, then its aliases, and
/// whether `harness run` generates it (else it is checked from files only).
#[derive(Clone, Copy, Debug)]
pub struct WorkloadName {
    /// The workload.
    pub kind: WorkloadKind,
    /// Its canonical name.
    pub name: &'static str,
    /// Other spellings that parse to it (Elle's leading `:` is accepted too).
    pub aliases: &'static [&'static str],
    /// `harness run` can generate it.
    pub runs: bool,
}

const fn named(
    kind: WorkloadKind,
    name: &'static str,
    aliases: &'static [&'static str],
    runs: bool,
) -> WorkloadName {
    WorkloadName {
        kind,
        name,
        aliases,
        runs,
    }
}

/// Every workload, its names and aliases: the one list the parser, the
/// `--help` texts and the errors read.
pub const WORKLOADS: &[WorkloadName] = &[
    named(WorkloadKind::ListAppend, "list-append", &["append"], true),
    named(WorkloadKind::RwRegister, "rw-register", &["wr"], true),
    named(WorkloadKind::Predicate, "predicate", &[], true),
    named(WorkloadKind::Register, "register", &["cas-register"], true),
    named(WorkloadKind::Kv, "kv", &[], false),
    named(
        WorkloadKind::Jepsen(JepsenWorkload::Bank),
        "bank",
        &[],
        true,
    ),
    named(
        WorkloadKind::Jepsen(JepsenWorkload::BankMultitable),
        "bank-multitable",
        &[],
        true,
    ),
    named(
        WorkloadKind::Jepsen(JepsenWorkload::BankInsert),
        "bank-insert",
        &[],
        true,
    ),
    named(WorkloadKind::Jepsen(JepsenWorkload::Set), "set", &[], true),
    named(
        WorkloadKind::Jepsen(JepsenWorkload::SetFull),
        "set-full",
        &[],
        true,
    ),
    named(
        WorkloadKind::Jepsen(JepsenWorkload::LongFork),
        "long-fork",
        &[],
        true,
    ),
    named(
        WorkloadKind::Jepsen(JepsenWorkload::Monotonic),
        "monotonic",
        &[],
        true,
    ),
    named(
        WorkloadKind::Jepsen(JepsenWorkload::Sequential),
        "sequential",
        &[],
        true,
    ),
    named(
        WorkloadKind::Jepsen(JepsenWorkload::Counter),
        "counter",
        &[],
        true,
    ),
    named(
        WorkloadKind::Knossos(KnossosModel::MultiRegister),
        "multi-register",
        &[],
        false,
    ),
    named(
        WorkloadKind::Knossos(KnossosModel::Mutex),
        "mutex",
        &["lock"],
        false,
    ),
    named(
        WorkloadKind::Knossos(KnossosModel::FifoQueue),
        "fifo-queue",
        &["queue"],
        false,
    ),
    named(
        WorkloadKind::Knossos(KnossosModel::UnorderedQueue),
        "unordered-queue",
        &[],
        false,
    ),
    named(
        WorkloadKind::Knossos(KnossosModel::Set),
        "linearizable-set",
        &["knossos-set"],
        false,
    ),
];

impl WorkloadKind {
    /// The item workloads every database runs, the simulator included
    /// (`predicate` needs a SQL database: the simulator has no range reads).
    pub const ALL: &'static [WorkloadKind] = &[WorkloadKind::ListAppend, WorkloadKind::RwRegister];

    /// Every workload (in [`WORKLOADS`]' order).
    pub fn every() -> impl Iterator<Item = WorkloadKind> {
        WORKLOADS.iter().map(|n| n.kind)
    }

    fn entry(self) -> Option<&'static WorkloadName> {
        WORKLOADS.iter().find(|n| n.kind == self)
    }

    /// The canonical name (`list-append`, `rw-register`, …).
    pub fn name(self) -> &'static str {
        self.entry().map_or("?", |n| n.name)
    }

    /// Whether `harness run` generates it (`kv` is checked from files only).
    pub fn runs(self) -> bool {
        self.entry().is_some_and(|n| n.runs)
    }

    /// Parses a canonical name or alias (`append`, `wr`, `cas-register`),
    /// with or without Elle's leading `:`.
    ///
    /// # Errors
    /// [`WorkloadError::UnknownWorkload`] for anything else.
    pub fn parse(s: &str) -> Result<WorkloadKind, WorkloadError> {
        let t = s.trim().trim_start_matches(':');
        WORKLOADS
            .iter()
            .find(|n| n.name == t || n.aliases.contains(&t))
            .map(|n| n.kind)
            .ok_or_else(|| WorkloadError::UnknownWorkload(s.to_string()))
    }

    /// The names, aliases in parentheses, of the workloads `runnable_only`
    /// selects (`harness run`'s) or of every workload: the list every
    /// `--help` and error shows.
    pub fn names_help(runnable_only: bool) -> String {
        WORKLOADS
            .iter()
            .filter(|n| n.runs || !runnable_only)
            .map(|n| {
                let mut s = n.name.to_string();
                if !n.aliases.is_empty() {
                    s += &format!(" ({})", n.aliases.join(", "));
                }
                if !n.runs {
                    s += " [check only]";
                }
                s
            })
            .collect::<Vec<_>>()
            .join(", ")
    }
}

impl fmt::Display for WorkloadKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for WorkloadKind {
    type Err = WorkloadError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        WorkloadKind::parse(s)
    }
}

/// How keys are drawn from the active pool.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum KeyDist {
    /// Elle's default: exponential with base 2, the last slot hottest.
    #[default]
    Exponential,
    /// Every active key equally likely.
    Uniform,
}

/// The workload tunables; `Default` is Elle's reference generator.
#[derive(Clone, Debug, PartialEq)]
pub struct WorkloadConfig {
    /// Active keys at any time (`--key-count`; Elle: 10).
    pub key_count: usize,
    /// Fewest micro-ops per transaction (`--min-txn-length`; Elle: 1).
    pub min_txn_length: usize,
    /// Most micro-ops per transaction (`--max-txn-length`; Elle: 4).
    pub max_txn_length: usize,
    /// Writes to a key before it retires (`--max-writes-per-key`; 32).
    pub max_writes_per_key: u64,
    /// Probability that a micro-op is a read (`--read-ratio`; Elle: 0.5).
    pub read_ratio: f64,
    /// Key distribution over the active pool.
    pub key_dist: KeyDist,
    /// Keys read per final-read transaction (Jepsen: 8).
    pub final_read_batch: usize,
}

impl Default for WorkloadConfig {
    fn default() -> WorkloadConfig {
        WorkloadConfig {
            key_count: 10,
            min_txn_length: 1,
            max_txn_length: 4,
            max_writes_per_key: 32,
            read_ratio: 0.5,
            key_dist: KeyDist::Exponential,
            final_read_batch: 8,
        }
    }
}

/// Upper bound on transaction length (a limit on everything).
pub const MAX_TXN_LENGTH: usize = 1024;

impl WorkloadConfig {
    /// Checks every field.
    ///
    /// # Errors
    /// [`WorkloadError::Invalid`] naming the first bad field.
    pub fn validate(&self) -> Result<(), WorkloadError> {
        let bad =
            |field: &'static str, reason: String| Err(WorkloadError::Invalid { field, reason });
        if self.key_count == 0 {
            return bad("key-count", "must be at least 1".into());
        }
        if self.min_txn_length == 0 {
            return bad("min-txn-length", "must be at least 1".into());
        }
        if self.max_txn_length < self.min_txn_length {
            return bad(
                "max-txn-length",
                format!(
                    "{} is less than min-txn-length {}",
                    self.max_txn_length, self.min_txn_length
                ),
            );
        }
        if self.max_txn_length > MAX_TXN_LENGTH {
            return bad(
                "max-txn-length",
                format!("{} exceeds the limit {MAX_TXN_LENGTH}", self.max_txn_length),
            );
        }
        if self.max_writes_per_key == 0 {
            return bad("max-writes-per-key", "must be at least 1".into());
        }
        if !(0.0..=1.0).contains(&self.read_ratio) {
            return bad(
                "read-ratio",
                format!("{} is not between 0 and 1", self.read_ratio),
            );
        }
        if self.final_read_batch == 0 {
            return bad("final-read-batch", "must be at least 1".into());
        }
        Ok(())
    }
}

/// A bad workload name or setting.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum WorkloadError {
    /// Not a known workload name.
    #[error("unknown workload {0:?}; known: {names}", names = WorkloadKind::names_help(false))]
    UnknownWorkload(String),
    /// A workload `harness run` does not generate (checked from files only).
    #[error("workload {0}: harness run does not generate it (it is checked from history files only); run generates: {names}", names = WorkloadKind::names_help(true))]
    NotRunnable(&'static str),
    /// A tunable out of range.
    #[error("invalid --{field}: {reason}")]
    Invalid {
        /// The flag's name without dashes.
        field: &'static str,
        /// What is wrong.
        reason: String,
    },
}

/// The endless main-phase generator of `kind` (wrap it in
/// [`generator::time_limit`] / [`generator::limit`] / [`generator::rate`]).
/// Its [`Generator::touched_keys`] lists the keys for the final reads.
///
/// # Errors
/// [`WorkloadError::Invalid`] naming the first bad field of `cfg`.
pub fn for_workload(
    kind: WorkloadKind,
    cfg: &WorkloadConfig,
    seed: u64,
) -> Result<Box<dyn Generator>, WorkloadError> {
    match kind {
        WorkloadKind::Predicate => Ok(Box::new(predicate::PredicateGen::new(cfg, seed)?)),
        WorkloadKind::Register => Ok(Box::new(cas_register::RegisterGen::new(cfg, seed)?)),
        WorkloadKind::Jepsen(w) => jepsen::generator(w, cfg, seed),
        WorkloadKind::Kv | WorkloadKind::Knossos(_) => Err(WorkloadError::NotRunnable(kind.name())),
        _ => Ok(Box::new(TxnGen::new(kind, cfg, seed)?)),
    }
}
