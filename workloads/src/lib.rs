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

/// Which transactions to generate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum WorkloadKind {
    /// `list-append` (alias `append`): appends of unique elements to lists.
    ListAppend,
    /// `rw-register` (alias `wr`): blind writes of unique values to registers.
    RwRegister,
    /// `predicate`: list-append with range reads (`predicate.rs`).
    Predicate,
    /// `register`: single-key read / write / cas on independent keys,
    /// checked for linearizability (`cas_register.rs`).
    Register,
    /// One of Jepsen's non-Elle workloads (`jepsen.rs`: bank, set, …).
    Jepsen(JepsenWorkload),
}

impl WorkloadKind {
    /// The item workloads every database runs, the simulator included
    /// (`predicate` needs a SQL database: the simulator has no range reads).
    pub const ALL: &'static [WorkloadKind] = &[WorkloadKind::ListAppend, WorkloadKind::RwRegister];

    /// The canonical name (`list-append`, `rw-register`).
    pub fn name(self) -> &'static str {
        match self {
            WorkloadKind::ListAppend => "list-append",
            WorkloadKind::RwRegister => "rw-register",
            WorkloadKind::Predicate => "predicate",
            WorkloadKind::Register => "register",
            WorkloadKind::Jepsen(w) => w.name(),
        }
    }

    /// Parses a canonical name or alias (`append`, `wr`).
    ///
    /// # Errors
    /// [`WorkloadError::UnknownWorkload`] for anything else.
    pub fn parse(s: &str) -> Result<WorkloadKind, WorkloadError> {
        match s {
            "list-append" | "append" => Ok(WorkloadKind::ListAppend),
            "rw-register" | "wr" => Ok(WorkloadKind::RwRegister),
            "predicate" => Ok(WorkloadKind::Predicate),
            "register" => Ok(WorkloadKind::Register),
            other if JepsenWorkload::parse(other).is_some() => JepsenWorkload::parse(other)
                .map(WorkloadKind::Jepsen)
                .ok_or_else(|| WorkloadError::UnknownWorkload(other.to_string())),
            other => Err(WorkloadError::UnknownWorkload(other.to_string())),
        }
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
    #[error(
        "unknown workload {0:?}; known: list-append (append), rw-register (wr), predicate, register, bank, bank-multitable, bank-insert, set, set-full, long-fork, monotonic, sequential, counter"
    )]
    UnknownWorkload(String),
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
        _ => Ok(Box::new(TxnGen::new(kind, cfg, seed)?)),
    }
}
