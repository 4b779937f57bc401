//! A deterministic driver: runs a generator against the engine with up to
//! `concurrency` open transactions, interleaved one micro-op at a time by a
//! seeded RNG, and returns the complete history (invoke + ok/fail/info, in
//! order, logical time).
//!
//! Key decision: no threads and no clock, so a (config, generator) pair always
//! yields the same history; checker tests and benchmarks rely on that.

use super::engine::{Engine, EngineOptions, TxnId, check_probability};
use super::{SimError, SimMode};
use rand::RngExt;
use store::{Data, MicroOp, Op, OpType};
use workloads::generator::{Ctx, Event, Generator, Next, Thread, final_reads};
use workloads::rng::{SeededRng, derive_seed, seeded};
use workloads::{WorkloadConfig, WorkloadKind, for_workload};

/// Settings of one simulated run.
#[derive(Clone, Debug, PartialEq)]
pub struct SimConfig {
    /// Isolation behaviour of the engine.
    pub mode: SimMode,
    /// Worker threads (the most transactions open at once).
    pub concurrency: usize,
    /// Transactions to invoke in the main phase (fewer if the generator ends).
    pub txn_count: u64,
    /// Seed of the interleaving and the engine (the generator has its own).
    pub seed: u64,
    /// Probability that a commit's outcome is unknown to the client (`info`;
    /// the engine commits or aborts it at random).
    pub crash_probability: f64,
    /// Probability that the engine refuses a commit at random (`fail`).
    pub abort_probability: f64,
    /// After the main phase, read every touched key once (no random aborts
    /// or crashes), so the checker sees final states.
    pub final_reads: bool,
    /// Logical nanoseconds per engine step.
    pub step_ns: u64,
}

impl Default for SimConfig {
    fn default() -> SimConfig {
        SimConfig {
            mode: SimMode::Serializable,
            concurrency: 10,
            txn_count: 1000,
            seed: 0,
            crash_probability: 0.0,
            abort_probability: 0.05,
            final_reads: true,
            step_ns: 1_000,
        }
    }
}

/// Keys read per final-read transaction.
const FINAL_READ_BATCH: usize = 8;
/// Consecutive `Pending` answers with every thread idle before the driver
/// gives up on a generator that will never produce (a limit on everything).
const MAX_IDLE_PENDING: u32 = 100_000;

struct Open {
    txn: TxnId,
    invoked: Vec<MicroOp>,
    done: Vec<MicroOp>,
}

struct Slot {
    process: u64,
    open: Option<Open>,
}

struct Run {
    cfg: SimConfig,
    engine: Engine,
    rng: SeededRng,
    slots: Vec<Slot>,
    ops: Vec<Op>,
    now: u64,
    crash_probability: f64,
}

/// Simulates `cfg.txn_count` transactions from `generator` (then final
/// reads, if configured) and returns the history.
///
/// # Errors
/// [`SimError::InvalidConfig`] for a concurrency of 0 or a probability
/// outside `[0, 1]`.
pub fn simulate(cfg: &SimConfig, generator: &mut dyn Generator) -> Result<Vec<Op>, SimError> {
    if cfg.concurrency == 0 {
        return Err(SimError::InvalidConfig {
            field: "concurrency",
            reason: "must be at least 1".into(),
        });
    }
    check_probability("crash-probability", cfg.crash_probability)?;
    let engine = Engine::new(EngineOptions {
        mode: cfg.mode,
        seed: derive_seed(cfg.seed, 1),
        abort_probability: cfg.abort_probability,
    })?;
    let mut run = Run {
        cfg: cfg.clone(),
        engine,
        rng: seeded(derive_seed(cfg.seed, 2)),
        slots: (0..cfg.concurrency)
            .map(|i| Slot {
                process: i as u64,
                open: None,
            })
            .collect(),
        ops: Vec::with_capacity((cfg.txn_count as usize).saturating_mul(2)),
        now: 0,
        crash_probability: cfg.crash_probability,
    };
    run.phase(generator, Some(cfg.txn_count));
    if cfg.final_reads {
        run.engine.set_abort_probability(0.0)?;
        run.crash_probability = 0.0;
        let keys = generator.touched_keys();
        let mut reads = final_reads(&keys, FINAL_READ_BATCH);
        run.phase(&mut reads, None);
    }
    Ok(run.ops)
}

/// Simulates a `kind` workload with `wcfg`, seeded from `cfg.seed`.
///
/// # Errors
/// A bad workload setting ([`SimError::InvalidConfig`] naming it) or a bad
/// simulator setting.
pub fn simulate_workload(
    cfg: &SimConfig,
    kind: WorkloadKind,
    wcfg: &WorkloadConfig,
) -> Result<Vec<Op>, SimError> {
    let mut g = for_workload(kind, wcfg, derive_seed(cfg.seed, 3)).map_err(|e| {
        SimError::InvalidConfig {
            field: "workload",
            reason: e.to_string(),
        }
    })?;
    simulate(cfg, &mut g)
}

impl Run {
    fn ctx(&self) -> Ctx {
        Ctx {
            time_ns: self.now,
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

    fn open_count(&self) -> usize {
        self.slots.iter().filter(|s| s.open.is_some()).count()
    }

    fn push(&mut self, op_type: OpType, thread: usize, value: Vec<MicroOp>, error: Option<&str>) {
        let mut op = Op::txn(
            self.ops.len() as u64,
            op_type,
            self.slots[thread].process,
            value,
        );
        op.time_ns = Some(self.now as i64);
        op.error = error.map(|e| Box::new(Data::Str(e.to_string())));
        self.ops.push(op);
    }

    /// Runs `g` until it is exhausted (or `limit` invocations), then lets
    /// every open transaction finish.
    fn phase(&mut self, g: &mut dyn Generator, limit: Option<u64>) {
        let mut invoked = 0u64;
        let mut exhausted = false;
        let mut idle_pending = 0u32;
        loop {
            let open = self.open_count();
            let can_start =
                !exhausted && limit.is_none_or(|l| invoked < l) && open < self.slots.len();
            if open == 0 && !can_start {
                return;
            }
            let choice = self.rng.random_range(0..open + usize::from(can_start));
            if choice == open {
                let ctx = self.ctx();
                match g.next(&ctx) {
                    Next::Op {
                        thread,
                        at_ns,
                        invocation,
                    } => {
                        idle_pending = 0;
                        invoked += 1;
                        self.now = self.now.max(at_ns);
                        self.invoke(thread.0, invocation.value);
                    }
                    Next::Pending => {
                        if open == 0 {
                            idle_pending += 1;
                            if idle_pending > MAX_IDLE_PENDING {
                                exhausted = true;
                            }
                            self.now += self.cfg.step_ns;
                        }
                    }
                    Next::Exhausted => exhausted = true,
                }
            } else {
                let Some(thread) = self
                    .slots
                    .iter()
                    .enumerate()
                    .filter(|(_, s)| s.open.is_some())
                    .nth(choice)
                    .map(|(i, _)| i)
                else {
                    continue;
                };
                if let Some(event) = self.step(thread) {
                    let ctx = self.ctx();
                    g.update(&ctx, &event);
                }
            }
            self.now += self.cfg.step_ns;
        }
    }

    fn invoke(&mut self, thread: usize, mops: Vec<MicroOp>) {
        if thread >= self.slots.len() || self.slots[thread].open.is_some() {
            // A generator broke the contract; skip rather than corrupt the history.
            return;
        }
        self.push(OpType::Invoke, thread, mops.clone(), None);
        let txn = self.engine.begin_session(self.slots[thread].process);
        self.slots[thread].open = Some(Open {
            txn,
            done: Vec::with_capacity(mops.len()),
            invoked: mops,
        });
    }

    /// Advances the transaction on `thread` by one micro-op or its commit;
    /// returns the completion event if it finished.
    fn step(&mut self, thread: usize) -> Option<Event> {
        let open = self.slots[thread].open.as_mut()?;
        if open.done.len() < open.invoked.len() {
            let mop = &open.invoked[open.done.len()];
            match self.engine.execute(open.txn, mop) {
                Ok(m) => {
                    open.done.push(m);
                    return None;
                }
                Err(e) => return Some(self.finish(thread, OpType::Fail, Some(e.code()))),
            }
        }
        let txn = open.txn;
        if self.crash_probability > 0.0 && self.rng.random_bool(self.crash_probability) {
            self.engine.commit_indeterminate(txn);
            return Some(self.finish(thread, OpType::Info, Some("crashed")));
        }
        match self.engine.commit(txn) {
            Ok(()) => Some(self.finish(thread, OpType::Ok, None)),
            Err(e) => Some(self.finish(thread, OpType::Fail, Some(e.code()))),
        }
    }

    fn finish(&mut self, thread: usize, op_type: OpType, error: Option<&str>) -> Event {
        let open = self.slots[thread].open.take();
        let (invoked, done) = open.map_or((Vec::new(), Vec::new()), |o| (o.invoked, o.done));
        let value = if op_type == OpType::Ok { done } else { invoked };
        self.push(op_type, thread, value.clone(), error);
        if op_type == OpType::Info {
            self.slots[thread].process += self.slots.len() as u64;
        }
        Event {
            thread: Thread(thread),
            op_type,
            value,
            time_ns: self.now,
        }
    }
}
