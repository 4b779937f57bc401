//! `sim`: an in-memory transactional database with selectable isolation
//! behaviour, for demos, benchmarks and the checker's tests.
//!
//! Owns the simulated [`engine::Engine`] (synchronous and pure: no tokio, no
//! clock, randomness only from a seed), the deterministic history driver
//! [`driver::simulate`], and the [`client::SimFactory`] the runner uses as
//! `--db sim`; and [`instant`], a client that answers at once (the runner's
//! benchmark). With `--sim-replicas N`: [`cluster`] (N simulated nodes
//! replicating the engine, with partitions, kills, pauses and clock offsets
//! that need no root), its runner client [`replicated`] and the nemesis'
//! hooks [`SimFaults`], and [`faulted`], a deterministic driver with a fault
//! schedule.
//!
//! Key decision: the engine runs one micro-op at a time and the caller
//! decides the interleaving, so the same engine serves a fully deterministic
//! driver (seeded interleaving, logical time) and concurrent async clients
//! (tokio interleaving through a mutex). Isolation behaviour is a closed enum
//! [`SimMode`]; every mode also aborts some transactions at random (seeded),
//! so `fail` ops and aborted reads appear. A run is bounded by
//! [`DEFAULT_OPS`] transactions unless `--ops` says otherwise.

pub mod client;
pub mod cluster;
mod database;
pub mod driver;
pub mod engine;
pub mod faulted;
pub mod instant;
pub mod jepsen;
mod process;
pub mod replicated;
mod value;

pub use client::{SimClient, SimFactory};
pub use database::{Sim, sim_mode};
pub use process::SimFaults;
pub use replicated::{ReplicatedFactory, replica_names};

/// Transactions in a `harness run --db sim` main phase when `--ops` is not
/// given. The simulator answers in microseconds: unbounded, a 30 s run made
/// 10.2 M transactions, a 738 MB run directory and a 6 GB peak. 100,000
/// are seconds of checking, enough for every bug mode's anomalies (the
/// tests find them in 4,000), and a run directory of a few MB.
pub const DEFAULT_OPS: u64 = 100_000;
pub use driver::{SimConfig, simulate, simulate_workload};
pub use engine::{Engine, EngineOptions, TxnId};

use std::fmt;
use std::str::FromStr;
use store::Key;

/// How the simulated database isolates transactions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SimMode {
    /// `serializable`: reads see the latest committed state; commit validates
    /// that nothing read has changed since (optimistic, backward validation)
    /// and installs atomically. Strict serializable.
    Serializable,
    /// `snapshot-isolation`: reads from a snapshot taken at begin;
    /// first-committer-wins on write-write conflicts. Allows write skew (G2-item).
    SnapshotIsolation,
    /// `read-committed`: reads see the latest committed state; writes take
    /// no-wait row locks and install at commit; no read validation, so lost
    /// updates (G-single-item) happen.
    ReadCommitted,
    /// `read-uncommitted`: writes take no-wait row locks but are applied in
    /// place, so other transactions read them before commit (G1b, G1c) and
    /// after an abort rolls them back (G1a).
    ReadUncommitted,
    /// Bug mode `retry-reapply`: snapshot isolation whose write-write
    /// conflicts are "resolved" by silently re-applying the transaction's
    /// writes over the newer state and committing, as TiDB 2.1.7's automatic
    /// retry did (lost updates, G-single).
    RetryReapply,
    /// Bug mode `lost-update`: each transaction caches the first state it
    /// sees of a key and overwrites the key at commit with that state plus
    /// its own writes, erasing concurrent committed writes.
    LostUpdate,
    /// Bug mode `stale-read`: serializable, but each transaction reads a
    /// snapshot up to a few commits old (a lagging follower read); writers
    /// are validated against it, read-only transactions are not. Serializable
    /// but not strict: real-time anomalies (`…-realtime` cycles).
    StaleRead,
    /// Bug mode `non-monotonic-read`: read committed whose every read
    /// returns a random recent committed version (up to a few commits
    /// old), chosen per read rather than per transaction, as a load
    /// balancer spreading one transaction's statements over lagging
    /// replicas would: a later read can miss a commit an earlier read saw
    /// (breaks read committed, hence read atomic and causal).
    NonMonotonicRead,
    /// Bug mode `torn-commit`: read committed whose commit makes its first
    /// written key visible at once and the others only later (at the next
    /// commit, or a random later begin; until then they stay locked), so
    /// readers see half a transaction: fractured reads (breaks read atomic),
    /// and non-monotonic ones when a reader saw the visible half first
    /// (breaks read committed as Biswas & Enea define it, not PL-2).
    TornCommit,
    /// Bug mode `causal-gap`: each transaction reads a snapshot taken at
    /// begin from which some recent commits of *other* sessions are missing
    /// while later ones are there, as a follower that applies whole
    /// transactions but not in causal order would show. A session always
    /// sees its own commits, and a writer commits only if every key it
    /// writes is current in its view (first-committer-wins), so reads are
    /// atomic and installs stay in commit order: it breaks causal
    /// consistency (a transaction sees an effect without its cause) but not
    /// read atomic.
    CausalGap,
    /// Replicated bug mode `local-ack` (needs `--sim-replicas`): a node cut
    /// off from the majority keeps serving from its own replica and
    /// acknowledges commits that only it has; its reads are stale and its
    /// writes are dropped when it rejoins (stale reads and lost writes
    /// under partitions). Serializable as long as every node reaches a
    /// majority.
    LocalAck,
    /// Replicated bug mode `lose-unsynced` (needs `--sim-replicas`): a
    /// commit is acknowledged once a majority holds it in memory, and nodes
    /// sync to disk only every few commits; a kill loses what the node had
    /// not synced, so killing a majority loses acknowledged writes.
    LoseUnsynced,
    /// Replicated bug mode `skewed-read` (needs `--sim-replicas`):
    /// read-only transactions are served by the client's node from its own
    /// replica at its own clock's time, with no uncertainty interval (as
    /// CockroachDB's uncertainty bugs did): a node whose clock is behind
    /// reads stale state (real-time anomalies under clock faults).
    SkewedRead,
}

impl SimMode {
    /// Every mode.
    pub const ALL: &'static [SimMode] = &[
        SimMode::Serializable,
        SimMode::SnapshotIsolation,
        SimMode::ReadCommitted,
        SimMode::ReadUncommitted,
        SimMode::RetryReapply,
        SimMode::LostUpdate,
        SimMode::StaleRead,
        SimMode::NonMonotonicRead,
        SimMode::TornCommit,
        SimMode::CausalGap,
        SimMode::LocalAck,
        SimMode::LoseUnsynced,
        SimMode::SkewedRead,
    ];

    /// The name used by `--isolation` with `--db sim`.
    pub fn name(self) -> &'static str {
        match self {
            SimMode::Serializable => "serializable",
            SimMode::SnapshotIsolation => "snapshot-isolation",
            SimMode::ReadCommitted => "read-committed",
            SimMode::ReadUncommitted => "read-uncommitted",
            SimMode::RetryReapply => "retry-reapply",
            SimMode::LostUpdate => "lost-update",
            SimMode::StaleRead => "stale-read",
            SimMode::NonMonotonicRead => "non-monotonic-read",
            SimMode::TornCommit => "torn-commit",
            SimMode::CausalGap => "causal-gap",
            SimMode::LocalAck => "local-ack",
            SimMode::LoseUnsynced => "lose-unsynced",
            SimMode::SkewedRead => "skewed-read",
        }
    }

    /// Parses a mode name.
    ///
    /// # Errors
    /// [`SimError::UnknownMode`] for anything else.
    pub fn parse(s: &str) -> Result<SimMode, SimError> {
        SimMode::ALL
            .iter()
            .copied()
            .find(|m| m.name() == s)
            .ok_or_else(|| SimError::UnknownMode(s.to_string()))
    }

    /// The consistency model (Elle's name) this mode claims to provide: the
    /// default `--expected-consistency-model` for `--db sim`. Bug modes claim
    /// what the buggy database advertised (TiDB: snapshot isolation).
    pub fn claimed_model(self) -> &'static str {
        match self {
            SimMode::Serializable
            | SimMode::StaleRead
            | SimMode::LocalAck
            | SimMode::LoseUnsynced
            | SimMode::SkewedRead => "strong-serializable",
            SimMode::SnapshotIsolation | SimMode::RetryReapply => "snapshot-isolation",
            SimMode::ReadCommitted | SimMode::NonMonotonicRead => "read-committed",
            SimMode::ReadUncommitted => "read-uncommitted",
            SimMode::LostUpdate => "repeatable-read",
            SimMode::TornCommit => "read-atomic",
            SimMode::CausalGap => "causal-cerone",
        }
    }

    /// Whether the mode is a bug of replication (`local-ack`,
    /// `lose-unsynced`, `skewed-read`): it needs simulated replicas, and
    /// its engine behaves as `serializable`.
    pub fn is_replicated_bug(self) -> bool {
        matches!(
            self,
            SimMode::LocalAck | SimMode::LoseUnsynced | SimMode::SkewedRead
        )
    }

    /// The isolation behaviour of the engine under the mode (a replication
    /// bug's engine is serializable; the bug is in [`cluster`]).
    pub(crate) fn engine_mode(self) -> SimMode {
        if self.is_replicated_bug() {
            SimMode::Serializable
        } else {
            self
        }
    }

    /// Whether reads come from a snapshot taken at begin.
    pub(crate) fn snapshot_reads(self) -> bool {
        matches!(
            self,
            SimMode::SnapshotIsolation
                | SimMode::RetryReapply
                | SimMode::StaleRead
                | SimMode::CausalGap
        )
    }

    /// Whether writes take (no-wait) row locks.
    pub(crate) fn locks_writes(self) -> bool {
        matches!(
            self,
            SimMode::ReadCommitted
                | SimMode::ReadUncommitted
                | SimMode::NonMonotonicRead
                | SimMode::TornCommit
        )
    }
}

impl fmt::Display for SimMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for SimMode {
    type Err = SimError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        SimMode::parse(s)
    }
}

/// Why a simulated transaction aborted, or a bad simulator setting.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum SimError {
    /// Commit-time validation failed (a read changed, or a write-write conflict).
    #[error("serialization conflict on key {key}")]
    Conflict {
        /// The key that changed.
        key: Key,
    },
    /// Another open transaction holds the row lock (no-wait locking).
    #[error("key {key} is locked by another transaction")]
    LockConflict {
        /// The locked key.
        key: Key,
    },
    /// A micro-op the simulator does not model (range reads: it keeps no
    /// key order), refused before anything ran.
    #[error("{f} micro-ops are not simulated")]
    Unsupported {
        /// The micro-op's function.
        f: &'static str,
    },
    /// The engine chose to abort (seeded, `abort_probability`).
    #[error("transaction aborted by the simulator")]
    RandomAbort,
    /// An append to a register or a write to a list.
    #[error("{f} on key {key}, which holds a {held}")]
    TypeMismatch {
        /// The micro-op's function.
        f: &'static str,
        /// The key.
        key: Key,
        /// What the key holds (`list` or `register`).
        held: &'static str,
    },
    /// The transaction is not open (finished, or never begun).
    #[error("transaction {0} is not open")]
    UnknownTxn(u64),
    /// Not a mode name.
    #[error(
        "unknown sim mode {0:?}; known: serializable, snapshot-isolation, read-committed, read-uncommitted, retry-reapply, lost-update, stale-read, non-monotonic-read, torn-commit, causal-gap, local-ack, lose-unsynced, skewed-read"
    )]
    UnknownMode(String),
    /// A simulated node cannot serve: it is down, or cut off from the
    /// majority. Nothing was done (definite).
    #[error("simulated node {node} is unavailable: {reason}")]
    Unavailable {
        /// The node.
        node: String,
        /// Why (`down`, `no quorum`).
        reason: &'static str,
    },
    /// The node lost the majority while the commit was in flight: to the
    /// client the outcome is unknown (the simulator aborted it).
    #[error("simulated node {node} lost its quorum during commit")]
    CommitUncertain {
        /// The node.
        node: String,
    },
    /// The node is paused: it answers once resumed (the client waits).
    #[error("simulated node {node} is paused")]
    Paused {
        /// The node.
        node: String,
    },
    /// A setting out of range.
    #[error("invalid sim setting {field}: {reason}")]
    InvalidConfig {
        /// The setting.
        field: &'static str,
        /// What is wrong.
        reason: String,
    },
}

impl SimError {
    /// The short tag recorded in a history's `error` field.
    pub fn code(&self) -> &'static str {
        match self {
            SimError::Conflict { .. } => "serialization-conflict",
            SimError::LockConflict { .. } => "lock-conflict",
            SimError::RandomAbort => "aborted",
            SimError::TypeMismatch { .. } => "type-mismatch",
            SimError::Unsupported { .. } => "unsupported",
            SimError::UnknownTxn(_) => "unknown-transaction",
            SimError::UnknownMode(_) => "unknown-mode",
            SimError::Unavailable { .. } => "unavailable",
            SimError::CommitUncertain { .. } => "commit-uncertain",
            SimError::Paused { .. } => "paused",
            SimError::InvalidConfig { .. } => "invalid-config",
        }
    }

    /// Whether the error proves the transaction did not commit.
    pub fn is_definite(&self) -> bool {
        !matches!(
            self,
            SimError::UnknownTxn(_) | SimError::CommitUncertain { .. } | SimError::Paused { .. }
        )
    }
}
