//! A deterministic driver for simulated replicas under faults: runs a
//! generator against a [`Cluster`] with up to `concurrency` open
//! transactions (thread `t` bound to node `t mod replicas`), interleaved one
//! micro-op at a time by a seeded RNG, and applies a fault schedule given in
//! engine steps ([`FaultWindow`]). Every fault's start and stop is recorded
//! as an `invoke` + `info` op pair of process `nemesis`, as the runner's
//! nemesis records them; whatever is still in effect when the main phase
//! ends is healed before the final reads.
//!
//! Key decision: the time axis is steps, not wall time or transactions: a
//! paused node blocks the transactions open on it, yet faults still end and
//! the run finishes. True time is `steps × step_us` (what `skewed-read`
//! compares node clocks against). Same config and generator ⇒ same history.

use super::cluster::{Cluster, ClusterTxn};
use super::engine::EngineOptions;
use super::replicated::replica_names;
use super::{SimError, SimMode};
use nemesis::fault::nodes_data;
use nemesis::partition::{Grudge, grudge_data};
use rand::RngExt;
use store::{Data, Extra, F, MicroOp, Op, OpIndex, OpType, OpValue, Process};
use workloads::generator::{Ctx, Event, Generator, Next, Thread, final_reads};
use workloads::rng::{SeededRng, derive_seed, seeded};

/// A fault of simulated nodes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SimFault {
    /// Messages dropped as the grudge says (node → nodes it drops from).
    Partition(Grudge),
    /// These nodes crash (stop: they start again).
    Kill(Vec<String>),
    /// These nodes stop answering (stop: resumed).
    Pause(Vec<String>),
    /// These nodes' clocks run `offset_ms` from true time (stop: reset).
    Clock(Vec<String>, i64),
}

/// A fault in effect from step `from` until step `until`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FaultWindow {
    /// The step it starts at.
    pub from: u64,
    /// The step it stops at.
    pub until: u64,
    /// The fault.
    pub fault: SimFault,
}

/// Settings of one faulted simulated run.
#[derive(Clone, Debug, PartialEq)]
pub struct FaultedConfig {
    /// Isolation behaviour, or a replication bug mode.
    pub mode: SimMode,
    /// Simulated nodes (`s1`…).
    pub replicas: usize,
    /// Worker threads (the most transactions open at once).
    pub concurrency: usize,
    /// Transactions to invoke in the main phase.
    pub txn_count: u64,
    /// Seed of the interleaving and the engine.
    pub seed: u64,
    /// Probability that the engine refuses a commit at random.
    pub abort_probability: f64,
    /// True microseconds per step.
    pub step_us: i64,
    /// The fault schedule.
    pub faults: Vec<FaultWindow>,
}

/// Steps a phase may take before the driver gives up on it (a limit on
/// everything: a generator that never ends, a node never resumed).
const MAX_STEPS: u64 = 10_000_000;

struct Open {
    txn: Option<ClusterTxn>,
    invoked: Vec<MicroOp>,
    done: Vec<MicroOp>,
}

struct Slot {
    process: u64,
    node: usize,
    open: Option<Open>,
}

struct Run {
    cluster: Cluster,
    rng: SeededRng,
    slots: Vec<Slot>,
    ops: Vec<Op>,
    steps: u64,
    step_us: i64,
    faults: Vec<FaultWindow>,
    /// Which windows are in effect.
    active: Vec<bool>,
}

/// Simulates `cfg.txn_count` transactions from `generator` under
/// `cfg.faults`, heals, runs final reads, and returns the history.
///
/// # Errors
/// [`SimError::InvalidConfig`] for no replicas, no workers, a bad
/// probability or a fault naming a node that does not exist.
pub fn simulate_faulted(
    cfg: &FaultedConfig,
    generator: &mut dyn Generator,
) -> Result<Vec<Op>, SimError> {
    if cfg.concurrency == 0 || cfg.replicas == 0 {
        return Err(SimError::InvalidConfig {
            field: "concurrency",
            reason: "workers and replicas must be at least 1".into(),
        });
    }
    let cluster = Cluster::new(
        replica_names(cfg.replicas),
        EngineOptions {
            mode: cfg.mode,
            seed: derive_seed(cfg.seed, 1),
            abort_probability: cfg.abort_probability,
        },
    )?;
    for w in &cfg.faults {
        for n in fault_nodes(&w.fault) {
            if cluster.node_index(&n).is_none() {
                return Err(SimError::InvalidConfig {
                    field: "faults",
                    reason: format!("no simulated node {n:?}"),
                });
            }
        }
    }
    let mut run = Run {
        cluster,
        rng: seeded(derive_seed(cfg.seed, 2)),
        slots: (0..cfg.concurrency)
            .map(|i| Slot {
                process: i as u64,
                node: i % cfg.replicas,
                open: None,
            })
            .collect(),
        ops: Vec::new(),
        steps: 0,
        step_us: cfg.step_us.max(1),
        active: vec![false; cfg.faults.len()],
        faults: cfg.faults.clone(),
    };
    run.phase(generator, Some(cfg.txn_count), true);
    run.heal();
    run.cluster.engine_mut().set_abort_probability(0.0)?;
    let keys = generator.touched_keys();
    let mut reads = final_reads(&keys, 8);
    run.phase(&mut reads, None, false);
    Ok(run.ops)
}

fn fault_nodes(f: &SimFault) -> Vec<String> {
    match f {
        SimFault::Partition(g) => g
            .iter()
            .flat_map(|(k, v)| std::iter::once(k.clone()).chain(v.iter().cloned()))
            .collect(),
        SimFault::Kill(n) | SimFault::Pause(n) | SimFault::Clock(n, _) => n.clone(),
    }
}

impl Run {
    fn now_us(&self) -> i64 {
        i64::try_from(self.steps)
            .unwrap_or(i64::MAX)
            .saturating_mul(self.step_us)
    }

    fn record(&mut self, op: Op) {
        let mut op = op;
        op.index = OpIndex(self.ops.len() as u64);
        op.time_ns = Some(self.now_us().saturating_mul(1000));
        self.ops.push(op);
    }

    fn nemesis_pair(&mut self, f: F, value: Data) {
        for op_type in [OpType::Invoke, OpType::Info] {
            self.record(Op {
                index: OpIndex(0),
                time_ns: None,
                op_type,
                process: Some(Process::Nemesis),
                f: Some(f.clone()),
                value: OpValue::Data(Box::new(value.clone())),
                error: None,
                extra: Extra::new(),
            });
        }
    }

    fn apply(&mut self, w: usize, start: bool) {
        let Some(fault) = self.faults.get(w).map(|w| w.fault.clone()) else {
            return;
        };
        self.active[w] = start;
        let index = |c: &Cluster, n: &String| c.node_index(n);
        match &fault {
            SimFault::Partition(g) => {
                if start {
                    // Nodes were checked before the run.
                    let _ = self.cluster.partition(g);
                    self.nemesis_pair(F::StartPartition, grudge_data(g));
                } else {
                    self.cluster.unpartition(g);
                    self.nemesis_pair(F::StopPartition, Data::Nil);
                }
            }
            SimFault::Kill(nodes) | SimFault::Pause(nodes) => {
                let kill = matches!(fault, SimFault::Kill(_));
                for n in nodes {
                    if let Some(i) = index(&self.cluster, n) {
                        match (kill, start) {
                            (true, true) => self.cluster.kill(i),
                            (true, false) => self.cluster.start(i),
                            (false, true) => self.cluster.pause(i),
                            (false, false) => self.cluster.resume(i),
                        }
                    }
                }
                let f = match (kill, start) {
                    (true, true) => F::Kill,
                    (true, false) => F::Start,
                    (false, true) => F::Pause,
                    (false, false) => F::Resume,
                };
                self.nemesis_pair(f, nodes_data(nodes));
            }
            SimFault::Clock(nodes, offset_ms) => {
                let offset = if start { *offset_ms } else { 0 };
                for n in nodes {
                    if let Some(i) = index(&self.cluster, n) {
                        self.cluster
                            .set_clock_offset(i, offset.saturating_mul(1000));
                    }
                }
                let value = Data::Map(
                    nodes
                        .iter()
                        .map(|n| (Data::Str(n.clone()), Data::Int(offset)))
                        .collect(),
                );
                let f = if start { F::StartClock } else { F::StopClock };
                self.nemesis_pair(f, value);
            }
        }
    }

    /// Starts and stops the windows due at the current step.
    fn tick_faults(&mut self) {
        for w in 0..self.faults.len() {
            let (from, until) = (self.faults[w].from, self.faults[w].until);
            if self.active[w] && self.steps >= until {
                self.apply(w, false);
            } else if !self.active[w] && self.steps == from && from < until {
                self.apply(w, true);
            }
        }
    }

    /// Stops every fault still in effect, and keeps later ones from starting.
    fn heal(&mut self) {
        for w in 0..self.faults.len() {
            if self.active[w] {
                self.apply(w, false);
            }
        }
        self.faults.clear();
        self.active.clear();
    }

    fn ctx(&self) -> Ctx {
        Ctx {
            time_ns: self.now_us().saturating_mul(1000) as u64,
            free_threads: self
                .slots
                .iter()
                .enumerate()
                .filter(|(_, s)| s.open.is_none())
                .map(|(i, _)| Thread(i))
                .collect(),
            thread_count: self.slots.len(),
        }
    }

    fn phase(&mut self, g: &mut dyn Generator, limit: Option<u64>, faults: bool) {
        let (mut invoked, mut exhausted) = (0u64, false);
        let end = self.steps.saturating_add(MAX_STEPS);
        while self.steps < end {
            if faults {
                self.tick_faults();
            }
            self.steps += 1;
            let open: Vec<usize> = (0..self.slots.len())
                .filter(|&i| self.slots[i].open.is_some())
                .collect();
            let can_start =
                !exhausted && limit.is_none_or(|l| invoked < l) && open.len() < self.slots.len();
            if open.is_empty() && !can_start {
                return;
            }
            let choice = self
                .rng
                .random_range(0..open.len() + usize::from(can_start));
            if let Some(&thread) = open.get(choice) {
                if let Some(event) = self.step(thread) {
                    let ctx = self.ctx();
                    g.update(&ctx, &event);
                }
                continue;
            }
            let ctx = self.ctx();
            match g.next(&ctx) {
                Next::Op {
                    thread, invocation, ..
                } => {
                    let t = thread.0;
                    if t < self.slots.len() && self.slots[t].open.is_none() {
                        invoked += 1;
                        let op = Op::txn(
                            0,
                            OpType::Invoke,
                            self.slots[t].process,
                            invocation.value.clone(),
                        );
                        self.record(op);
                        self.slots[t].open = Some(Open {
                            txn: None,
                            invoked: invocation.value,
                            done: Vec::new(),
                        });
                    }
                }
                Next::Pending => {}
                Next::Exhausted => exhausted = true,
            }
        }
    }

    /// Advances `thread`'s transaction by one call into the cluster;
    /// returns its completion if it finished.
    fn step(&mut self, thread: usize) -> Option<Event> {
        let node = self.slots[thread].node;
        let session = self.slots[thread].process;
        let now = self.now_us();
        let open = self.slots[thread].open.as_mut()?;
        let r = match open.txn {
            None => {
                let read_only = open.invoked.iter().all(|m| matches!(m, MicroOp::Read(..)));
                self.cluster
                    .begin(node, session, read_only, now)
                    .map(|t| open.txn = Some(t))
            }
            Some(t) if open.done.len() < open.invoked.len() => {
                let mop = &open.invoked[open.done.len()];
                self.cluster
                    .execute(node, t, mop)
                    .map(|m| open.done.push(m))
            }
            Some(t) => {
                return Some(match self.cluster.commit(node, t, now) {
                    Ok(()) => self.finish(thread, OpType::Ok, None),
                    Err(SimError::Paused { .. }) => return None,
                    Err(e) => self.fail(thread, &e),
                });
            }
        };
        match r {
            Ok(()) | Err(SimError::Paused { .. }) => None,
            Err(e) => Some(self.fail(thread, &e)),
        }
    }

    fn fail(&mut self, thread: usize, e: &SimError) -> Event {
        let t = if e.is_definite() {
            OpType::Fail
        } else {
            OpType::Info
        };
        self.finish(thread, t, Some(e.code()))
    }

    fn finish(&mut self, thread: usize, op_type: OpType, error: Option<&str>) -> Event {
        let open = self.slots[thread].open.take();
        let (invoked, done) = open.map_or((Vec::new(), Vec::new()), |o| (o.invoked, o.done));
        let value = if op_type == OpType::Ok { done } else { invoked };
        let mut op = Op::txn(0, op_type, self.slots[thread].process, value.clone());
        op.error = error.map(|e| Box::new(Data::Str(e.to_string())));
        self.record(op);
        if op_type == OpType::Info {
            self.slots[thread].process += self.slots.len() as u64;
        }
        Event {
            thread: Thread(thread),
            op_type,
            value,
            time_ns: self.now_us().saturating_mul(1000) as u64,
        }
    }
}
