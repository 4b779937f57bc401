//! The simulated engine: a multi-version key-value store of lists and
//! registers with begin / execute one micro-op / commit / abort.
//!
//! Synchronous and pure: no clock, no IO, randomness only from the seed in
//! [`EngineOptions`]. Commit timestamps are a counter. What a read sees and
//! what a commit checks depend on [`SimMode`] (see its variants).

use super::value::{KeyState, NIL, Shape, Value, Write};
use super::{SimError, SimMode};
use rand::RngExt;
use std::collections::{HashMap, VecDeque};
use store::{Key, MicroOp};
use workloads::rng::{SeededRng, seeded};

mod recovery;

/// An open transaction's id.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TxnId(pub u64);

/// Engine settings.
#[derive(Clone, Debug, PartialEq)]
pub struct EngineOptions {
    /// Isolation behaviour.
    pub mode: SimMode,
    /// Seed of the engine's random choices (aborts, indeterminate outcomes).
    pub seed: u64,
    /// Probability that a commit is refused at random (a `fail`).
    pub abort_probability: f64,
}

impl EngineOptions {
    /// `mode` with `seed` and the default abort probability (0.05).
    pub fn new(mode: SimMode, seed: u64) -> EngineOptions {
        EngineOptions {
            mode,
            seed,
            abort_probability: 0.05,
        }
    }
}

/// stale-read: how many commits behind the latest a snapshot may be.
const STALE_READ_MAX_LAG: u64 = 8;

/// causal-gap: how many of the latest commits a snapshot may miss, and the
/// chance that it misses each one of another session's.
const CAUSAL_GAP_WINDOW: usize = 8;
const CAUSAL_GAP_PROBABILITY: f64 = 0.3;

/// The session of a transaction begun without one ([`Engine::begin`]).
const NO_SESSION: u64 = u64::MAX;

#[derive(Debug)]
struct Txn {
    start_ts: u64,
    /// The session that began it ([`NO_SESSION`] if none was named).
    session: u64,
    /// causal-gap: commits at or before `start_ts` this snapshot misses.
    holes: Vec<u64>,
    /// serializable: (key, commit ts of the version read) for validation.
    reads: Vec<(Key, u64)>,
    /// Buffered writes in order (all modes but read-uncommitted).
    writes: Vec<(Key, Write)>,
    /// lost-update: the first state seen of each key.
    base: HashMap<Key, Value>,
    /// Row locks held.
    locks: Vec<Key>,
}

/// Counters of what the engine did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EngineStats {
    /// Transactions committed.
    pub committed: u64,
    /// Transactions aborted (any reason).
    pub aborted: u64,
    /// retry-reapply: conflicting commits silently re-applied.
    pub reapplied: u64,
}

/// The simulated database.
#[derive(Debug)]
pub struct Engine {
    mode: SimMode,
    abort_probability: f64,
    rng: SeededRng,
    keys: HashMap<Key, KeyState>,
    txns: HashMap<TxnId, Txn>,
    clock: u64,
    next_txn: u64,
    stats: EngineStats,
    /// torn-commit: committed writes not yet visible (key, writes, ts).
    deferred: Vec<(Key, Vec<Write>, u64)>,
    /// causal-gap: the latest writing commits (ts, session), oldest first.
    recent: VecDeque<(u64, u64)>,
}

impl Engine {
    /// An empty database.
    ///
    /// # Errors
    /// [`SimError::InvalidConfig`] when `abort_probability` is not in `[0, 1]`.
    pub fn new(opts: EngineOptions) -> Result<Engine, SimError> {
        check_probability("abort-probability", opts.abort_probability)?;
        Ok(Engine::build(&opts))
    }

    /// An empty database in `mode` with the default abort probability.
    pub fn with_mode(mode: SimMode, seed: u64) -> Engine {
        Engine::build(&EngineOptions::new(mode, seed))
    }

    fn build(opts: &EngineOptions) -> Engine {
        Engine {
            mode: opts.mode.engine_mode(),
            abort_probability: opts.abort_probability,
            rng: seeded(opts.seed),
            keys: HashMap::new(),
            txns: HashMap::new(),
            clock: 0,
            next_txn: 0,
            stats: EngineStats::default(),
            deferred: Vec::new(),
            recent: VecDeque::new(),
        }
    }

    /// The isolation behaviour.
    pub fn mode(&self) -> SimMode {
        self.mode
    }

    /// What the engine has done so far.
    pub fn stats(&self) -> &EngineStats {
        &self.stats
    }

    /// Changes the random-abort probability (e.g. 0 for final reads).
    ///
    /// # Errors
    /// [`SimError::InvalidConfig`] when `p` is not in `[0, 1]`.
    pub fn set_abort_probability(&mut self, p: f64) -> Result<(), SimError> {
        check_probability("abort-probability", p)?;
        self.abort_probability = p;
        Ok(())
    }

    /// Number of open transactions.
    pub fn open_count(&self) -> usize {
        self.txns.len()
    }

    /// Begins a transaction of no particular session.
    pub fn begin(&mut self) -> TxnId {
        self.begin_session(NO_SESSION)
    }

    /// Begins a transaction of `session` (a client connection; causal-gap
    /// never hides a session's own commits from it).
    pub fn begin_session(&mut self, session: u64) -> TxnId {
        if self.mode == SimMode::TornCommit && self.rng.random_bool(0.5) {
            self.flush_deferred();
        }
        let start_ts = if self.mode == SimMode::StaleRead {
            self.clock
                .saturating_sub(self.rng.random_range(0..=STALE_READ_MAX_LAG))
        } else {
            self.clock
        };
        let holes = self.causal_gap_holes(session);
        let id = TxnId(self.next_txn);
        self.next_txn += 1;
        self.txns.insert(
            id,
            Txn {
                start_ts,
                session,
                holes,
                reads: Vec::new(),
                writes: Vec::new(),
                base: HashMap::new(),
                locks: Vec::new(),
            },
        );
        id
    }

    /// causal-gap: which of the latest commits of other sessions a
    /// snapshot taken now misses (none in every other mode).
    fn causal_gap_holes(&mut self, session: u64) -> Vec<u64> {
        if self.mode != SimMode::CausalGap {
            return Vec::new();
        }
        let mut holes = Vec::new();
        for &(ts, by) in &self.recent {
            if by != session && self.rng.random_bool(CAUSAL_GAP_PROBABILITY) {
                holes.push(ts);
            }
        }
        holes
    }

    /// Runs one micro-op of `txn` and returns it completed (reads filled in).
    /// On error the transaction has been aborted.
    ///
    /// # Errors
    /// A lock conflict, a type mismatch, or an unknown transaction.
    pub fn execute(&mut self, txn: TxnId, mop: &MicroOp) -> Result<MicroOp, SimError> {
        let result = self.execute_inner(txn, mop);
        if result.is_err() {
            self.abort(txn);
        }
        result
    }

    fn execute_inner(&mut self, id: TxnId, mop: &MicroOp) -> Result<MicroOp, SimError> {
        let mode = self.mode;
        let txn = self.txns.get_mut(&id).ok_or(SimError::UnknownTxn(id.0))?;
        if let MicroOp::ReadRange(_) = mop {
            return Err(SimError::Unsupported { f: mop.f_name() });
        }
        let key = mop.key();
        let ks = self.keys.entry(key.clone()).or_default();
        match mop {
            MicroOp::Read(k, _) => {
                let value = match mode {
                    SimMode::ReadUncommitted => {
                        ks.dirty.clone().unwrap_or_else(|| ks.latest().1.clone())
                    }
                    SimMode::SnapshotIsolation
                    | SimMode::RetryReapply
                    | SimMode::StaleRead
                    | SimMode::CausalGap => {
                        if mode == SimMode::StaleRead {
                            txn.reads.push((k.clone(), txn.start_ts));
                        }
                        let seen = ks.at_without(txn.start_ts, &txn.holes);
                        with_own_writes(seen.clone(), k, &txn.writes)?
                    }
                    SimMode::LostUpdate => {
                        let base = txn
                            .base
                            .entry(k.clone())
                            .or_insert_with(|| ks.latest().1.clone())
                            .clone();
                        with_own_writes(base, k, &txn.writes)?
                    }
                    SimMode::NonMonotonicRead => {
                        let lag = self.rng.random_range(0..=STALE_READ_MAX_LAG);
                        let ts = self.clock.saturating_sub(lag);
                        with_own_writes(ks.at(ts).clone(), k, &txn.writes)?
                    }
                    SimMode::Serializable
                    | SimMode::ReadCommitted
                    | SimMode::TornCommit
                    | SimMode::LocalAck
                    | SimMode::LoseUnsynced
                    | SimMode::SkewedRead => {
                        let (ts, v) = ks.latest();
                        if mode == SimMode::Serializable {
                            txn.reads.push((k.clone(), ts));
                        }
                        with_own_writes(v.clone(), k, &txn.writes)?
                    }
                };
                Ok(MicroOp::Read(k.clone(), value.to_read()))
            }
            MicroOp::ReadRange(_) => Err(SimError::Unsupported { f: mop.f_name() }),
            MicroOp::Append(k, v) | MicroOp::Write(k, v) => {
                let w = match mop {
                    MicroOp::Append(..) => Write::Append(v.clone()),
                    _ => Write::Put(v.clone()),
                };
                if mode.locks_writes() {
                    match ks.lock {
                        Some(holder) if holder != id => {
                            return Err(SimError::LockConflict { key: k.clone() });
                        }
                        Some(_) => {}
                        None => {
                            ks.lock = Some(id);
                            txn.locks.push(k.clone());
                        }
                    }
                }
                match mode {
                    SimMode::ReadUncommitted => {
                        let mut value = ks.dirty.take().unwrap_or_else(|| ks.latest().1.clone());
                        let applied = value.apply(k, &w);
                        ks.dirty = Some(value);
                        applied?;
                    }
                    _ => {
                        if mode == SimMode::LostUpdate {
                            txn.base
                                .entry(k.clone())
                                .or_insert_with(|| ks.latest().1.clone());
                        }
                        // Type-check now, so a bad write fails where it is issued.
                        let base = match mode {
                            SimMode::SnapshotIsolation
                            | SimMode::RetryReapply
                            | SimMode::StaleRead
                            | SimMode::CausalGap => ks.at_without(txn.start_ts, &txn.holes),
                            SimMode::LostUpdate => txn.base.get(k).unwrap_or(&NIL),
                            _ => ks.latest().1,
                        };
                        let shape = txn
                            .writes
                            .iter()
                            .filter(|(k2, _)| k2 == k)
                            .try_fold(Shape::of(base), |s, (_, w2)| s.then(k, w2))?;
                        shape.then(k, &w)?;
                        txn.writes.push((k.clone(), w));
                    }
                }
                Ok(mop.clone())
            }
        }
    }

    /// Commits `txn`.
    ///
    /// # Errors
    /// A random abort, a failed validation (serializable), a write-write
    /// conflict (snapshot isolation) or an unknown transaction; in every case
    /// the transaction has been aborted.
    pub fn commit(&mut self, id: TxnId) -> Result<(), SimError> {
        if !self.txns.contains_key(&id) {
            return Err(SimError::UnknownTxn(id.0));
        }
        if self.abort_probability > 0.0 && self.rng.random_bool(self.abort_probability) {
            self.abort(id);
            return Err(SimError::RandomAbort);
        }
        if let Err(e) = self.validate(id) {
            self.abort(id);
            return Err(e);
        }
        let Some(txn) = self.txns.remove(&id) else {
            return Err(SimError::UnknownTxn(id.0));
        };
        // torn-commit: what earlier commits left invisible lands first, so
        // versions keep commit order.
        self.flush_deferred();
        // Only writing commits make a new version (and take a timestamp).
        if !txn.writes.is_empty() || !txn.locks.is_empty() {
            self.clock += 1;
            if self.mode == SimMode::CausalGap {
                if self.recent.len() == CAUSAL_GAP_WINDOW {
                    self.recent.pop_front();
                }
                self.recent.push_back((self.clock, txn.session));
            }
        }
        let ts = self.clock;
        let oldest = self.oldest_snapshot();
        if self.mode == SimMode::ReadUncommitted {
            for k in &txn.locks {
                if let Some(ks) = self.keys.get_mut(k)
                    && let Some(v) = ks.dirty.take()
                {
                    ks.versions.push((ts, v));
                    ks.prune(oldest);
                }
            }
        } else {
            self.install(&txn, ts, oldest);
        }
        self.release(&txn);
        // torn-commit: the keys not yet visible stay locked until they are,
        // so no later writer builds on the state that misses them.
        for (k, _, _) in &self.deferred {
            if let Some(ks) = self.keys.get_mut(k) {
                ks.lock = Some(id);
            }
        }
        self.stats.committed += 1;
        Ok(())
    }

    /// Ends `txn` with an outcome unknown to the client (a crash during
    /// commit): commits or aborts it at random. Returns whether it committed.
    pub fn commit_indeterminate(&mut self, id: TxnId) -> bool {
        if self.rng.random_bool(0.5) {
            self.commit(id).is_ok()
        } else {
            self.abort(id);
            false
        }
    }

    /// Aborts `txn`, discarding its writes (no-op if it is not open).
    pub fn abort(&mut self, id: TxnId) {
        let Some(txn) = self.txns.remove(&id) else {
            return;
        };
        if self.mode == SimMode::ReadUncommitted {
            for k in &txn.locks {
                if let Some(ks) = self.keys.get_mut(k) {
                    ks.dirty = None;
                }
            }
        }
        self.release(&txn);
        self.stats.aborted += 1;
    }

    fn validate(&mut self, id: TxnId) -> Result<(), SimError> {
        let Some(txn) = self.txns.get(&id) else {
            return Err(SimError::UnknownTxn(id.0));
        };
        // Replication bug modes run as serializable (`SimMode::engine_mode`).
        match self.mode {
            SimMode::Serializable
            | SimMode::LocalAck
            | SimMode::LoseUnsynced
            | SimMode::SkewedRead => {
                for (k, seen) in &txn.reads {
                    let now = self.keys.get(k).map_or(0, |ks| ks.latest().0);
                    if now != *seen {
                        return Err(SimError::Conflict { key: k.clone() });
                    }
                }
            }
            SimMode::SnapshotIsolation | SimMode::RetryReapply => {
                let conflict = txn.writes.iter().find(|(k, _)| {
                    self.keys
                        .get(k)
                        .is_some_and(|ks| ks.latest().0 > txn.start_ts)
                });
                if let Some((k, _)) = conflict {
                    if self.mode == SimMode::SnapshotIsolation {
                        return Err(SimError::Conflict { key: k.clone() });
                    }
                    // The bug: retry by re-applying the writes over the newer state.
                    self.stats.reapplied += 1;
                }
            }
            SimMode::StaleRead => {
                // Read-only: serialized at its (stale) snapshot. Writers must
                // have read and written only keys unchanged since then, so
                // they serialize at commit.
                if !txn.writes.is_empty() {
                    let read_keys = txn.reads.iter().map(|(k, _)| k);
                    let keys = read_keys.chain(txn.writes.iter().map(|(k, _)| k));
                    for k in keys {
                        if self
                            .keys
                            .get(k)
                            .is_some_and(|ks| ks.latest().0 > txn.start_ts)
                        {
                            return Err(SimError::Conflict { key: k.clone() });
                        }
                    }
                }
            }
            SimMode::CausalGap => {
                // Every written key must be current in this snapshot, so the
                // install (on the latest version) is what the txn saw.
                let stale = txn.writes.iter().find(|(k, _)| {
                    self.keys.get(k).is_some_and(|ks| {
                        ks.versions
                            .iter()
                            .any(|(t, _)| *t > txn.start_ts || txn.holes.contains(t))
                    })
                });
                if let Some((k, _)) = stale {
                    return Err(SimError::Conflict { key: k.clone() });
                }
            }
            SimMode::ReadCommitted
            | SimMode::ReadUncommitted
            | SimMode::LostUpdate
            | SimMode::NonMonotonicRead
            | SimMode::TornCommit => {}
        }
        Ok(())
    }

    /// torn-commit: makes the deferred writes of earlier commits visible.
    fn flush_deferred(&mut self) {
        let oldest = self.oldest_snapshot();
        for (k, writes, ts) in std::mem::take(&mut self.deferred) {
            let ks = self.keys.entry(k.clone()).or_default();
            let mut value = ks.latest().1.clone();
            for w in &writes {
                // Types were checked when each write was issued.
                let _ = value.apply(&k, w);
            }
            ks.versions.push((ts, value));
            ks.prune(oldest);
            ks.lock = None;
        }
    }

    /// Installs buffered writes, key by key in first-write order.
    fn install(&mut self, txn: &Txn, ts: u64, oldest: u64) {
        let mut done: Vec<&Key> = Vec::new();
        for (k, _) in &txn.writes {
            if done.contains(&k) {
                continue;
            }
            done.push(k);
            if self.mode == SimMode::TornCommit && done.len() > 1 {
                let writes = txn
                    .writes
                    .iter()
                    .filter(|(k2, _)| k2 == k)
                    .map(|(_, w)| w.clone())
                    .collect();
                self.deferred.push((k.clone(), writes, ts));
                continue;
            }
            let ks = self.keys.entry(k.clone()).or_default();
            let apply_all = |value: &mut Value| {
                for (k2, w) in &txn.writes {
                    if k2 == k {
                        // Types were checked when each write was issued; a
                        // mismatch now (a concurrent txn changed the type)
                        // drops the write.
                        let _ = value.apply(k, w);
                    }
                }
            };
            match (self.mode, ks.versions.last_mut()) {
                // Only the latest version is ever read: update it in place.
                (SimMode::Serializable | SimMode::ReadCommitted, Some(last)) => {
                    apply_all(&mut last.1);
                    last.0 = ts;
                }
                _ => {
                    let mut value = match self.mode {
                        SimMode::LostUpdate => txn.base.get(k).cloned().unwrap_or(Value::Nil),
                        _ => ks.latest().1.clone(),
                    };
                    apply_all(&mut value);
                    ks.versions.push((ts, value));
                    ks.prune(oldest);
                }
            }
        }
    }

    fn release(&mut self, txn: &Txn) {
        for k in &txn.locks {
            if let Some(ks) = self.keys.get_mut(k) {
                ks.lock = None;
            }
        }
    }

    /// The oldest snapshot an open transaction can read (only snapshot modes
    /// keep old versions).
    fn oldest_snapshot(&self) -> u64 {
        if self.mode == SimMode::NonMonotonicRead {
            // Any read may go this far back.
            self.clock.saturating_sub(STALE_READ_MAX_LAG)
        } else if self.mode.snapshot_reads() {
            let open = self.txns.values().map(|t| t.start_ts).min();
            // stale-read: a transaction begun later may read this far back.
            let future = match self.mode {
                SimMode::StaleRead => self.clock.saturating_sub(STALE_READ_MAX_LAG),
                _ => u64::MAX,
            };
            let oldest = open.unwrap_or(u64::MAX).min(future);
            if self.mode == SimMode::CausalGap {
                // A snapshot may miss up to the window's commits before it.
                oldest
                    .min(self.clock)
                    .saturating_sub(CAUSAL_GAP_WINDOW as u64)
            } else {
                oldest
            }
        } else {
            u64::MAX
        }
    }
}

fn with_own_writes(mut v: Value, k: &Key, writes: &[(Key, Write)]) -> Result<Value, SimError> {
    for (k2, w) in writes {
        if k2 == k {
            v.apply(k, w)?;
        }
    }
    Ok(v)
}

pub(crate) fn check_probability(field: &'static str, p: f64) -> Result<(), SimError> {
    if (0.0..=1.0).contains(&p) {
        Ok(())
    } else {
        Err(SimError::InvalidConfig {
            field,
            reason: format!("{p} is not a probability between 0 and 1"),
        })
    }
}
