//! Simulated replicas (`--db sim --sim-replicas N`): N nodes inside the
//! process, each holding a replica of one store, with faults that need no
//! root — partitions between nodes, kills with and without the loss of
//! un-synced state, pauses, and clock offsets.
//!
//! Model. The [`Engine`] is the state the majority agrees on (a replicated
//! log applied in order, as Raft's state machine is). Every writing commit
//! appends one entry to that log, remembering for each key it wrote the
//! value after the commit ([`Version`]: log index, commit wall time,
//! value). Each node holds a prefix of the log: `applied` entries in
//! memory, `synced` of them on disk. A node serves a transaction through
//! the engine only when it is up, not paused and reaches a majority of
//! all nodes (counting itself) over links no partition cuts; the commit
//! then reaches every node it can talk to. Otherwise the transaction is
//! refused (`fail`), or, when the node loses its majority while a commit
//! is in flight, aborted with an indefinite error (`info`). A paused node
//! answers nothing until resumed (its clients wait). A killed node loses
//! its memory (its open transactions abort) and recovers from its synced
//! prefix when started, catching up from the majority on its next
//! transaction. If a kill leaves no node holding some acknowledged entry
//! (in memory if up, on disk if down), those entries are lost: the engine
//! is put back to the newest surviving value of each key they wrote.
//!
//! In `serializable` (and every engine mode) a node syncs before it
//! acknowledges, so nothing acknowledged is ever lost and reads go through
//! the majority: the history stays strict serializable under every fault.
//! The bug modes ([`SimMode::is_replicated_bug`]) break exactly one rule:
//! * `local-ack`: a node without a majority serves transactions from its
//!   own (stale) replica and acknowledges commits only it holds (kept in
//!   an overlay, dropped when it catches up): stale reads, lost writes.
//! * `lose-unsynced`: nodes sync only every [`SYNC_EVERY`] entries, so
//!   killing a majority loses acknowledged writes.
//! * `skewed-read`: read-only transactions read the node's replica as of
//!   the node's clock (true time plus its offset), with no uncertainty
//!   interval: a node whose clock is behind returns stale state. Clocks are
//!   used nowhere else, so the correct modes ignore clock faults.
//!
//! Synchronous and pure like the engine: the caller passes the time
//! (`now_us`, microseconds of true time) and the only randomness is the
//! engine's seeded stream.

use super::engine::{Engine, EngineOptions, TxnId};
use super::value::{Value, Write};
use super::{SimError, SimMode};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use store::{Key, MicroOp};

mod faults;

/// `lose-unsynced`: a node syncs its log once this many entries are
/// unsynced (so up to `SYNC_EVERY - 1` acknowledged entries are volatile).
pub const SYNC_EVERY: u64 = 8;

/// `skewed-read`: how long (true time) versions stay readable by a clock
/// set back later (a read further back than that may see nothing).
pub const SKEW_RETENTION_US: i64 = 60_000_000;

/// A transaction of the cluster: run by the engine (through the majority)
/// or by one node alone (a bug mode's local transaction).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ClusterTxn {
    /// Through the majority.
    Engine(TxnId),
    /// On one node's replica only.
    Local(u64),
}

/// Counters of what the faults did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ClusterStats {
    /// Acknowledged log entries lost by kills (`lose-unsynced`).
    pub lost_entries: u64,
    /// Commits acknowledged by a node alone (`local-ack`).
    pub local_commits: u64,
    /// Keys of locally acknowledged writes dropped on catch-up (`local-ack`).
    pub dropped_local_writes: u64,
    /// Read-only transactions served from a node's own replica.
    pub local_reads: u64,
}

#[derive(Debug)]
struct NodeState {
    name: String,
    up: bool,
    paused: bool,
    offset_us: i64,
    /// Log entries held in memory.
    applied: u64,
    /// Log entries held on disk (≤ `applied`).
    synced: u64,
    /// local-ack: writes this node acknowledged alone.
    overlay: HashMap<Key, Value>,
}

/// A key's value after a commit: the log entry, its wall time, the value.
#[derive(Debug)]
struct Version {
    idx: u64,
    wall_us: i64,
    value: Value,
}

#[derive(Debug)]
struct LocalTxn {
    node: usize,
    /// Reads see log entries below this index ...
    applied: u64,
    /// ... committed at or before this wall time (skewed-read).
    wall_us: Option<i64>,
    writes: Vec<(Key, Write)>,
}

#[derive(Debug)]
struct EngineTxn {
    node: usize,
    written: Vec<Key>,
}

/// N simulated nodes replicating one engine.
#[derive(Debug)]
pub struct Cluster {
    engine: Engine,
    mode: SimMode,
    nodes: Vec<NodeState>,
    /// (receiver, sender) → how many partitions drop that link.
    drops: BTreeMap<(usize, usize), u32>,
    log_len: u64,
    versions: HashMap<Key, Vec<Version>>,
    last_wall_us: i64,
    engine_txns: HashMap<TxnId, EngineTxn>,
    local_txns: HashMap<u64, LocalTxn>,
    next_local: u64,
    stats: ClusterStats,
}

impl Cluster {
    /// A cluster of nodes `names` (at least one, distinct) running
    /// `opts.mode` (a replication bug mode runs a serializable engine).
    ///
    /// # Errors
    /// [`SimError::InvalidConfig`] for no nodes, a repeated name or a bad
    /// engine setting.
    pub fn new(names: Vec<String>, opts: EngineOptions) -> Result<Cluster, SimError> {
        let distinct: BTreeSet<&String> = names.iter().collect();
        if names.is_empty() || distinct.len() != names.len() {
            return Err(SimError::InvalidConfig {
                field: "sim-replicas",
                reason: format!("need at least one node, each named once: {names:?}"),
            });
        }
        let mode = opts.mode;
        Ok(Cluster {
            engine: Engine::new(opts)?,
            mode,
            nodes: names
                .into_iter()
                .map(|name| NodeState {
                    name,
                    up: true,
                    paused: false,
                    offset_us: 0,
                    applied: 0,
                    synced: 0,
                    overlay: HashMap::new(),
                })
                .collect(),
            drops: BTreeMap::new(),
            log_len: 0,
            versions: HashMap::new(),
            last_wall_us: i64::MIN,
            engine_txns: HashMap::new(),
            local_txns: HashMap::new(),
            next_local: 0,
            stats: ClusterStats::default(),
        })
    }

    /// The mode (as asked, bug modes included).
    pub fn mode(&self) -> SimMode {
        self.mode
    }

    /// The engine (the majority's state).
    pub fn engine_mut(&mut self) -> &mut Engine {
        &mut self.engine
    }

    /// What the faults did so far.
    pub fn stats(&self) -> &ClusterStats {
        &self.stats
    }

    /// The index of the node called `name`.
    pub fn node_index(&self, name: &str) -> Option<usize> {
        self.nodes.iter().position(|n| n.name == name)
    }

    /// Node names, in order.
    pub fn node_names(&self) -> Vec<String> {
        self.nodes.iter().map(|n| n.name.clone()).collect()
    }

    /// Nodes that are down or paused, or whose clock is off (empty once
    /// everything is healed).
    pub fn faulty_nodes(&self) -> Vec<String> {
        self.nodes
            .iter()
            .filter(|n| !n.up || n.paused || n.offset_us != 0)
            .map(|n| n.name.clone())
            .collect()
    }

    /// Whether any partition is in place.
    pub fn partitioned(&self) -> bool {
        !self.drops.is_empty()
    }

    fn linked(&self, a: usize, b: usize) -> bool {
        a == b || !(self.drops.contains_key(&(a, b)) || self.drops.contains_key(&(b, a)))
    }

    fn live(&self, i: usize) -> bool {
        self.nodes.get(i).is_some_and(|n| n.up && !n.paused)
    }

    /// Whether node `i` can reach a majority of all nodes (itself included).
    pub fn has_quorum(&self, i: usize) -> bool {
        if !self.live(i) {
            return false;
        }
        let reach = (0..self.nodes.len())
            .filter(|&j| self.live(j) && self.linked(i, j))
            .count();
        reach * 2 > self.nodes.len()
    }

    fn node(&self, i: usize) -> Result<&NodeState, SimError> {
        self.nodes.get(i).ok_or_else(|| SimError::InvalidConfig {
            field: "node",
            reason: format!("no simulated node {i}"),
        })
    }

    /// Errors when node `i` cannot answer now.
    fn answering(&self, i: usize) -> Result<(), SimError> {
        let n = self.node(i)?;
        if !n.up {
            return Err(SimError::Unavailable {
                node: n.name.clone(),
                reason: "down",
            });
        }
        if n.paused {
            return Err(SimError::Paused {
                node: n.name.clone(),
            });
        }
        Ok(())
    }

    fn sync(&mut self, i: usize) {
        let lazy = self.mode == SimMode::LoseUnsynced;
        if let Some(n) = self.nodes.get_mut(i)
            && (!lazy || n.applied - n.synced >= SYNC_EVERY)
        {
            n.synced = n.applied;
        }
    }

    /// Node `i` takes the majority's log (and drops what it acknowledged alone).
    fn catch_up(&mut self, i: usize) {
        let log_len = self.log_len;
        if let Some(n) = self.nodes.get_mut(i) {
            self.stats.dropped_local_writes += n.overlay.len() as u64;
            n.overlay.clear();
            n.applied = log_len;
        }
        self.sync(i);
    }

    /// Begins a transaction of `session` on node `i` at true time `now_us`;
    /// `read_only`: the client will not write.
    ///
    /// # Errors
    /// [`SimError::Unavailable`] (down, or no majority in a correct mode),
    /// [`SimError::Paused`] (ask again once resumed).
    pub fn begin(
        &mut self,
        i: usize,
        session: u64,
        read_only: bool,
        now_us: i64,
    ) -> Result<ClusterTxn, SimError> {
        self.answering(i)?;
        let quorum = self.has_quorum(i);
        if quorum {
            self.catch_up(i);
        }
        let local = |wall_us| LocalTxn {
            node: i,
            applied: self.nodes[i].applied,
            wall_us,
            writes: Vec::new(),
        };
        if self.mode == SimMode::SkewedRead && read_only {
            let t = local(Some(now_us.saturating_add(self.nodes[i].offset_us)));
            return Ok(self.open_local(t));
        }
        if quorum {
            let id = self.engine.begin_session(session);
            self.engine_txns.insert(
                id,
                EngineTxn {
                    node: i,
                    written: Vec::new(),
                },
            );
            return Ok(ClusterTxn::Engine(id));
        }
        if self.mode == SimMode::LocalAck {
            let t = local(None);
            return Ok(self.open_local(t));
        }
        Err(SimError::Unavailable {
            node: self.nodes[i].name.clone(),
            reason: "no quorum",
        })
    }

    fn open_local(&mut self, t: LocalTxn) -> ClusterTxn {
        let id = self.next_local;
        self.next_local += 1;
        self.local_txns.insert(id, t);
        ClusterTxn::Local(id)
    }

    /// Runs one micro-op of `txn` on node `i`.
    ///
    /// # Errors
    /// [`SimError::Paused`] (the transaction stays open: ask again);
    /// anything else has aborted the transaction.
    pub fn execute(
        &mut self,
        i: usize,
        txn: ClusterTxn,
        mop: &MicroOp,
    ) -> Result<MicroOp, SimError> {
        if let Err(e) = self.answering(i) {
            if !matches!(e, SimError::Paused { .. }) {
                self.abort(txn);
            }
            return Err(e);
        }
        match txn {
            ClusterTxn::Engine(id) => {
                let r = self.engine.execute(id, mop);
                match (&r, self.engine_txns.get_mut(&id)) {
                    (Ok(MicroOp::Append(k, _) | MicroOp::Write(k, _)), Some(t)) => {
                        t.written.push(k.clone());
                    }
                    (Err(_), _) => {
                        self.engine_txns.remove(&id);
                    }
                    _ => {}
                }
                r
            }
            ClusterTxn::Local(id) => {
                let r = self.execute_local(id, mop);
                if r.is_err() {
                    self.local_txns.remove(&id);
                }
                r
            }
        }
    }

    fn execute_local(&mut self, id: u64, mop: &MicroOp) -> Result<MicroOp, SimError> {
        let t = self.local_txns.get(&id).ok_or(SimError::UnknownTxn(id))?;
        let w = match mop {
            MicroOp::ReadRange(_) => return Err(SimError::Unsupported { f: mop.f_name() }),
            MicroOp::Read(..) => None,
            MicroOp::Append(_, v) => Some(Write::Append(v.clone())),
            MicroOp::Write(_, v) => Some(Write::Put(v.clone())),
        };
        let key = mop.key();
        let mut value = self.replica_value(t.node, t.applied, t.wall_us, key);
        for (k, w2) in &t.writes {
            if k == key {
                value.apply(key, w2)?;
            }
        }
        match w {
            None => Ok(MicroOp::Read(key.clone(), value.to_read())),
            Some(w) => {
                value.apply(key, &w)?;
                if let Some(t) = self.local_txns.get_mut(&id) {
                    t.writes.push((key.clone(), w));
                }
                Ok(mop.clone())
            }
        }
    }

    /// What node `node` holds for `key`: its overlay, else the newest
    /// version among its first `applied` log entries (committed by `wall_us`).
    fn replica_value(&self, node: usize, applied: u64, wall_us: Option<i64>, key: &Key) -> Value {
        if let Some(v) = self.nodes.get(node).and_then(|n| n.overlay.get(key)) {
            return v.clone();
        }
        self.versions
            .get(key)
            .and_then(|vs| {
                vs.iter()
                    .rev()
                    .find(|v| v.idx < applied && wall_us.is_none_or(|w| v.wall_us <= w))
            })
            .map_or(Value::Nil, |v| v.value.clone())
    }

    /// Commits `txn` on node `i` at true time `now_us`.
    ///
    /// # Errors
    /// [`SimError::Paused`] (still open: ask again);
    /// [`SimError::CommitUncertain`] when the node lost its majority (the
    /// transaction was aborted, the client cannot know); the engine's
    /// refusals. Every error but `Paused` has aborted the transaction.
    pub fn commit(&mut self, i: usize, txn: ClusterTxn, now_us: i64) -> Result<(), SimError> {
        if let Err(e) = self.answering(i) {
            if !matches!(e, SimError::Paused { .. }) {
                self.abort(txn);
            }
            return Err(e);
        }
        match txn {
            ClusterTxn::Local(id) => {
                let t = self
                    .local_txns
                    .remove(&id)
                    .ok_or(SimError::UnknownTxn(id))?;
                if t.writes.is_empty() {
                    self.stats.local_reads += 1;
                    return Ok(());
                }
                self.stats.local_commits += 1;
                let (applied, wall) = (t.applied, t.wall_us);
                for (k, w) in &t.writes {
                    let mut v = self.replica_value(t.node, applied, wall, k);
                    // Types were checked when each write ran.
                    let _ = v.apply(k, w);
                    if let Some(n) = self.nodes.get_mut(t.node) {
                        n.overlay.insert(k.clone(), v);
                    }
                }
                Ok(())
            }
            ClusterTxn::Engine(id) => {
                let Some(t) = self.engine_txns.remove(&id) else {
                    return Err(SimError::UnknownTxn(id.0));
                };
                if !self.has_quorum(i) {
                    self.engine.abort(id);
                    return Err(SimError::CommitUncertain {
                        node: self.nodes[i].name.clone(),
                    });
                }
                self.engine.commit(id)?;
                if !t.written.is_empty() {
                    self.append_entry(i, t.written, now_us);
                }
                Ok(())
            }
        }
    }

    /// Logs a commit of node `i` and replicates it to every node `i` reaches.
    fn append_entry(&mut self, i: usize, mut written: Vec<Key>, now_us: i64) {
        written.sort();
        written.dedup();
        let idx = self.log_len;
        self.last_wall_us = self.last_wall_us.max(now_us);
        let wall_us = self.last_wall_us;
        self.log_len += 1;
        for j in 0..self.nodes.len() {
            if self.live(j) && self.linked(i, j) {
                self.nodes[j].applied = self.log_len;
                self.sync(j);
            }
        }
        let (idx_bound, wall_bound) = self.prune_bounds(now_us);
        for k in written {
            let value = self.engine.latest_value(&k);
            let vs = self.versions.entry(k).or_default();
            vs.push(Version {
                idx,
                wall_us,
                value,
            });
            let keep = vs
                .iter()
                .rposition(|v| v.idx < idx_bound && v.wall_us <= wall_bound);
            if let Some(p) = keep
                && p > 0
            {
                vs.drain(..p);
            }
        }
    }

    /// The oldest (log index, wall time) any node or open local
    /// transaction may still read or fall back to.
    fn prune_bounds(&self, now_us: i64) -> (u64, i64) {
        let synced = self.nodes.iter().map(|n| n.synced).min().unwrap_or(0);
        let mut idx = synced;
        // Only skewed-read reads by wall time; a clock may be set back
        // later, so keep a window of the past.
        let mut wall = if self.mode == SimMode::SkewedRead {
            let skew = self
                .nodes
                .iter()
                .map(|n| n.offset_us.min(0))
                .min()
                .unwrap_or(0);
            now_us
                .saturating_add(skew)
                .saturating_sub(SKEW_RETENTION_US)
        } else {
            i64::MAX
        };
        for t in self.local_txns.values() {
            idx = idx.min(t.applied);
            if let Some(w) = t.wall_us {
                wall = wall.min(w);
            }
        }
        (idx, wall)
    }

    /// Aborts `txn` (no-op when it is not open).
    pub fn abort(&mut self, txn: ClusterTxn) {
        match txn {
            ClusterTxn::Engine(id) => {
                self.engine_txns.remove(&id);
                self.engine.abort(id);
            }
            ClusterTxn::Local(id) => {
                self.local_txns.remove(&id);
            }
        }
    }
}
