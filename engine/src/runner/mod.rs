//! The run loop: the interpreter, its workers, the phases of a test.
//!
//! The interpreter is the only thing that touches time: it asks the
//! generator for ops (`Generator::next` with the logical time and the free
//! threads), logs each invocation to the durable history *before* handing it
//! to the worker of that thread, and logs each completion (then feeds it back
//! with `Generator::update`) before that thread can be given another op.
//!
//! Phases: main (until the generator is exhausted, `--time-limit` or
//! `--ops`) → heal ([`Nemesis::heal`]) → `--recovery-time` → one final read
//! of every key the main phase touched. A stop request (Ctrl-C, SIGTERM)
//! ends the main phase: in-flight ops finish or time out (→ `info`), faults
//! are healed, the recovery wait and final reads are skipped.
//!
//! Key decisions: no retries anywhere (a worker reports exactly one
//! completion per job); a thread whose op ended `info` continues as process
//! `old + concurrency` with a fresh connection; per-op timeouts live in the
//! worker, so draining in-flight ops is bounded by the op timeout.
//!
//! Throughput: the interpreter polls the running jobs itself (no worker
//! tasks, no channels; see `worker`), and the history lines it appends wait
//! in the log's buffer until it is about to poll them
//! ([`HistorySink::flush`]): an invocation reaches the OS before its request
//! can be sent, a completion before anything that follows it, and a burst of
//! completions and the invocations they free is handed over in one piece
//! (one copy into the log's mapping: `store`'s `mapped.rs`). A job's
//! statement responses wake the interpreter, which then polls only the jobs
//! that woke it, not its deadline or the stop signal (`side_wake`).
//!
//! One thread ([`runtime`]): a network client's connection is a task of
//! its own (tokio-postgres spawns one per connection), and each round trip
//! wakes it and is woken back. On a multi-thread runtime that task ran on a
//! worker while the interpreter polled the job from `block_on`'s thread, so
//! every statement woke a parked thread twice (a futex wake and a context
//! switch each): ~19 futex calls per transaction against PostgreSQL, 60 % of
//! a bare tokio-postgres loop's throughput at concurrency 1. On one thread
//! the interpreter, its jobs and their connections' tasks wake each other
//! in place, as the bare loop's tasks do. The interpreter gives the other
//! tasks (signals, progress, the nemesis) their turn every so many
//! completions (`consume_budget`), so an always-ready client cannot starve
//! them.

pub mod progress;
mod side_wake;
mod worker;

use anyhow::Context as _;
use db_adapters::client::{BoxFuture, ClientFactory};
use futures_util::FutureExt as _;
use futures_util::StreamExt as _;
use futures_util::stream::FuturesUnordered;
use nemesis::Node;
use progress::Counters;
use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::task::Poll;
use std::time::{Duration, Instant};
use store::{Data, F, MicroOp, Op, OpIndex, OpType, OpValue, Process, ProcessId};
use tokio::sync::watch;
use workloads::generator::{Ctx, Event, Generator, Next, Thread, final_reads};

/// Where the runner writes ops: the durable history log (one implementation
/// wraps `store::run::HistoryLog`). `append` assigns the index; the line
/// may wait in a buffer until `flush`, which the runner calls before it
/// polls any job (so before a request can be sent, and before it waits).
pub trait HistorySink: Send {
    /// Appends `op` (its `index` is assigned here).
    ///
    /// # Errors
    /// The history could not be written; the run is aborted.
    fn append(&mut self, op: Op) -> anyhow::Result<OpIndex>;

    /// Hands every line appended so far to the OS.
    ///
    /// # Errors
    /// The history could not be written; the run is aborted.
    fn flush(&mut self) -> anyhow::Result<()> {
        Ok(())
    }
}

/// The fault injector as the runner sees it: the hook between the main phase
/// and the recovery wait (faults themselves run in their own task, which
/// records its ops in the history; see `crate::cluster`).
pub trait Nemesis: Send {
    /// Heals every fault this nemesis may have started (network, paused or
    /// killed processes, clocks) and waits for the database to serve again.
    /// Called after the main phase, on a stop request, and after an error.
    fn heal(&mut self) -> BoxFuture<'_, anyhow::Result<()>> {
        Box::pin(async { Ok(()) })
    }
}

/// No faults.
pub struct NoNemesis;

impl Nemesis for NoNemesis {}

/// The runtime [`run`] is meant for: one thread, I/O and time enabled (see
/// the module docs for why not a multi-thread runtime).
///
/// # Errors
/// The OS refused the runtime's resources (an epoll instance, an eventfd).
pub fn runtime() -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
}

/// What the runner needs to know besides the generator and database.
#[derive(Clone, Debug)]
pub struct RunnerConfig {
    /// Worker threads (each pinned to `nodes[i % nodes.len()]`).
    pub concurrency: usize,
    /// The database nodes.
    pub nodes: Vec<Node>,
    /// End of the main phase, from the start of the test.
    pub time_limit: Option<Duration>,
    /// Maximum number of main-phase invocations.
    pub ops_limit: Option<u64>,
    /// Per-op timeout (→ `info`).
    pub op_timeout: Duration,
    /// Wait between healing and the final reads.
    pub recovery_time: Duration,
    /// Keys per final-read transaction.
    pub final_read_batch: usize,
    /// Whether to run the final reads at all.
    pub final_reads: bool,
    /// Log read/write/cas ops with Jepsen's register values (`[k v]`,
    /// `[k [old new]]`): the `register` workload.
    pub register_values: bool,
}

impl RunnerConfig {
    /// One node on this machine, `ops` main-phase transactions (within 5
    /// minutes), a 5 s op timeout, no recovery wait, final reads in batches
    /// of 16 (benchmarks and tests).
    pub fn local(concurrency: usize, ops: u64) -> RunnerConfig {
        RunnerConfig {
            concurrency,
            nodes: vec![Node::local()],
            time_limit: Some(Duration::from_secs(300)),
            ops_limit: Some(ops),
            op_timeout: Duration::from_secs(5),
            recovery_time: Duration::ZERO,
            final_read_batch: 16,
            final_reads: true,
            register_values: false,
        }
    }
}

/// A request to stop issuing ops (Ctrl-C, SIGTERM).
#[derive(Clone)]
pub struct StopSignal {
    rx: watch::Receiver<bool>,
}

/// Raises a [`StopSignal`].
pub struct StopTrigger {
    tx: watch::Sender<bool>,
}

/// A connected trigger and signal.
pub fn stop_signal() -> (StopTrigger, StopSignal) {
    let (tx, rx) = watch::channel(false);
    (StopTrigger { tx }, StopSignal { rx })
}

impl StopTrigger {
    /// Asks the runner to stop.
    pub fn stop(&self) {
        let _ = self.tx.send(true);
    }
}

impl StopSignal {
    /// Whether stopping was requested.
    pub fn is_set(&self) -> bool {
        *self.rx.borrow()
    }

    /// Resolves once stopping is requested.
    pub async fn wait(&mut self) {
        let _ = self.rx.wait_for(|s| *s).await;
    }
}

/// Why the main phase ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum PhaseEnd {
    /// The generator had nothing more.
    Exhausted,
    /// `--time-limit` reached.
    TimeLimit,
    /// `--ops` reached.
    OpsLimit,
    /// A stop was requested.
    Stopped,
}

/// What happened in a run.
#[derive(Clone, Debug, serde::Serialize)]
pub struct RunSummary {
    /// Why the main phase ended.
    pub main_phase_end: PhaseEnd,
    /// Op counts (main and final phases).
    pub counts: progress::Snapshot,
    /// Whether the final reads ran to the end.
    pub final_reads_done: bool,
    /// Op counts at the end of the main phase.
    pub main_counts: progress::Snapshot,
    /// Wall time of the main phase (including waiting for in-flight ops).
    pub main_phase_s: f64,
    /// Wall time of the whole run loop.
    pub elapsed_s: f64,
}

/// Runs a test: main phase, heal, recovery, final reads.
///
/// # Errors
/// A history write failed or a generator broke its contract. Faults are
/// healed before the error is returned.
#[allow(clippy::too_many_arguments)]
pub async fn run(
    cfg: &RunnerConfig,
    main: Box<dyn Generator>,
    factory: Arc<dyn ClientFactory>,
    log: &mut dyn HistorySink,
    nemesis: &mut dyn Nemesis,
    stop: StopSignal,
    counters: Arc<Counters>,
) -> anyhow::Result<RunSummary> {
    anyhow::ensure!(cfg.concurrency > 0, "concurrency must be at least 1");
    anyhow::ensure!(!cfg.nodes.is_empty(), "no nodes to run against");
    let started = Instant::now();
    let mut interp = Interpreter::start(cfg, factory, log, stop, counters, started);
    let mut main = main;
    let outcome = interp.phase(&mut main, true).await;
    let drained = interp.drain(&mut *main).await;
    let main_phase_s = started.elapsed().as_secs_f64();
    let main_counts = interp.counters.snapshot();
    let healed = nemesis.heal().await;
    let main_end = outcome?;
    drained?;
    healed.context("healing faults")?;
    let mut final_done = false;
    if cfg.final_reads && main_end != PhaseEnd::Stopped {
        if !cfg.recovery_time.is_zero() {
            tracing::info!("waiting {:?} for recovery", cfg.recovery_time);
            let mut stop = interp.stop.clone();
            tokio::select! {
                _ = tokio::time::sleep(cfg.recovery_time) => {}
                _ = stop.wait() => {}
            }
        }
        if !interp.stop.is_set() {
            let keys = main.touched_keys();
            tracing::info!("final reads of {} keys", keys.len());
            let mut reads: Box<dyn Generator> = match main.final_generator() {
                Some(own) => own,
                None => Box::new(final_reads(&keys, cfg.final_read_batch.max(1))),
            };
            let end = interp.phase(&mut reads, false).await;
            interp.drain(&mut *reads).await?;
            final_done = end? == PhaseEnd::Exhausted;
        }
    }
    let counts = interp.counters.snapshot();
    interp.shutdown().await;
    Ok(RunSummary {
        main_phase_end: main_end,
        counts,
        final_reads_done: final_done,
        main_counts,
        main_phase_s,
        elapsed_s: started.elapsed().as_secs_f64(),
    })
}

/// [`run`] without faults or stop requests (benchmarks and tests).
///
/// # Errors
/// As [`run`].
pub async fn run_unfaulted(
    cfg: &RunnerConfig,
    main: Box<dyn Generator>,
    factory: Arc<dyn ClientFactory>,
    log: &mut dyn HistorySink,
) -> anyhow::Result<RunSummary> {
    // Held to the end: a dropped trigger reads as a stop request.
    let (trigger, stop) = stop_signal();
    let summary = run(
        cfg,
        main,
        factory,
        log,
        &mut NoNemesis,
        stop,
        Arc::new(Counters::default()),
    )
    .await;
    drop(trigger);
    summary
}

fn nanos_since(t: Instant) -> i64 {
    i64::try_from(t.elapsed().as_nanos()).unwrap_or(i64::MAX)
}

/// How long the interpreter waits for a completion before asking a
/// `Pending` generator again (it may be waiting for time to pass).
const PENDING_TICK: Duration = Duration::from_millis(5);

/// What ended one wait of [`Interpreter::wait_until`].
#[allow(clippy::large_enum_variant)] // on the stack for a moment; a box would allocate per completion
enum Woke {
    /// A job finished.
    Done((worker::Slot, worker::Done)),
    /// The wait's instant passed.
    Time,
    /// A stop was requested.
    Stop,
}

struct Interpreter<'l> {
    n: usize,
    cfg: RunnerConfig,
    log: &'l mut dyn HistorySink,
    stop: StopSignal,
    counters: Arc<Counters>,
    started: Instant,
    free: BTreeSet<usize>,
    process: Vec<u64>,
    /// The invocation in flight per thread.
    in_flight: Vec<Option<(F, Vec<MicroOp>)>>,
    /// Whether read/write/cas ops are logged with Jepsen's register values
    /// (`[k v]`, the `register` workload) rather than as micro-ops.
    register_values: bool,
    /// Each thread's worker while it is idle (`None` while a job has it).
    slots: Vec<Option<worker::Slot>>,
    /// The jobs in flight, polled by the interpreter.
    running: FuturesUnordered<BoxFuture<'static, (worker::Slot, worker::Done)>>,
    main_invoked: u64,
}

impl<'l> Interpreter<'l> {
    fn start(
        cfg: &RunnerConfig,
        factory: Arc<dyn ClientFactory>,
        log: &'l mut dyn HistorySink,
        stop: StopSignal,
        counters: Arc<Counters>,
        started: Instant,
    ) -> Interpreter<'l> {
        let n = cfg.concurrency;
        let slots = (0..n)
            .map(|t| {
                Some(worker::Slot::new(worker::WorkerSpec {
                    thread: t,
                    node: cfg.nodes[t % cfg.nodes.len()].clone(),
                    factory: factory.clone(),
                    op_timeout: cfg.op_timeout,
                }))
            })
            .collect();
        Interpreter {
            n,
            cfg: cfg.clone(),
            log,
            stop,
            counters,
            started,
            free: (0..n).collect(),
            process: (0..n as u64).collect(),
            in_flight: vec![None; n],
            register_values: cfg.register_values,
            slots,
            running: FuturesUnordered::new(),
            main_invoked: 0,
        }
    }

    fn now_ns(&self) -> u64 {
        u64::try_from(self.started.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }

    fn ctx(&self) -> Ctx {
        Ctx {
            time_ns: self.now_ns(),
            free_threads: self.free.iter().map(|&t| Thread(t)).collect(),
            thread_count: self.n,
        }
    }

    fn deadline(&self, limited: bool) -> Option<Instant> {
        if limited {
            self.cfg.time_limit.map(|l| self.started + l)
        } else {
            None
        }
    }

    /// Runs `gen` until it is exhausted, stopped or (for the main phase) a
    /// limit is reached. Ops still in flight are left for [`Self::drain`].
    async fn phase(
        &mut self,
        generator: &mut Box<dyn Generator>,
        main: bool,
    ) -> anyhow::Result<PhaseEnd> {
        let deadline = self.deadline(main);
        loop {
            if self.stop.is_set() {
                return Ok(PhaseEnd::Stopped);
            }
            if deadline.is_some_and(|d| Instant::now() >= d) {
                return Ok(PhaseEnd::TimeLimit);
            }
            if main && self.cfg.ops_limit.is_some_and(|l| self.main_invoked >= l) {
                return Ok(PhaseEnd::OpsLimit);
            }
            let ctx = self.ctx();
            match generator.next(&ctx) {
                Next::Op {
                    thread,
                    at_ns,
                    invocation,
                } => {
                    anyhow::ensure!(
                        self.free.contains(&thread.0),
                        "generator bug: op for thread {} which is not free",
                        thread.0
                    );
                    if at_ns > ctx.time_ns {
                        let at = self.started + Duration::from_nanos(at_ns);
                        let wake = deadline.map_or(at, |d| d.min(at));
                        if !self.wait_until(wake, false, &mut **generator).await?
                            || Instant::now() < at
                        {
                            // Stopped or past the deadline before the op's time:
                            // the op is dropped unsent (and unlogged).
                            continue;
                        }
                    }
                    self.invoke(thread.0, invocation.f, invocation.value)?;
                    if main {
                        self.main_invoked += 1;
                    }
                }
                Next::Pending => {
                    let tick = Instant::now() + PENDING_TICK;
                    let wake = deadline.map_or(tick, |d| d.min(tick));
                    self.wait_until(wake, true, &mut **generator).await?;
                }
                Next::Exhausted => return Ok(PhaseEnd::Exhausted),
            }
        }
    }

    /// Waits until `t` (or, with `on_completion`, until the first completion),
    /// logging completions as they arrive. Returns false if a stop was
    /// requested meanwhile.
    async fn wait_until(
        &mut self,
        t: Instant,
        on_completion: bool,
        generator: &mut dyn Generator,
    ) -> anyhow::Result<bool> {
        let mut stop = self.stop.clone();
        let mut time_up = std::pin::pin!(tokio::time::sleep_until(t.into()));
        let mut stopped = std::pin::pin!(stop.wait());
        let side = side_wake::SideWake::new();
        loop {
            if self.stop.is_set() {
                return Ok(false);
            }
            self.log.flush()?;
            let woke = std::future::poll_fn(|cx| {
                if let Poll::Ready(Some(d)) = self.running.poll_next_unpin(cx) {
                    return Poll::Ready(Woke::Done(d));
                }
                // The deadline and the stop signal only when they woke us.
                side.poll_side(cx, |scx| {
                    if time_up.as_mut().poll(scx).is_ready() {
                        Poll::Ready(Woke::Time)
                    } else if stopped.as_mut().poll(scx).is_ready() {
                        Poll::Ready(Woke::Stop)
                    } else {
                        Poll::Pending
                    }
                })
            })
            .await;
            match woke {
                Woke::Time => return Ok(true),
                Woke::Stop => return Ok(false),
                Woke::Done(d) => {
                    self.complete(d, generator)?;
                    // Every other completion already there, for one batch.
                    while let Some(Some(d)) = self.running.next().now_or_never() {
                        self.complete(d, generator)?;
                    }
                    // Yields once the task's budget is spent: instant jobs
                    // would otherwise keep every other task waiting.
                    tokio::task::consume_budget().await;
                    // A completion may free a thread a pending generator
                    // was waiting for: let it be asked again.
                    if on_completion {
                        return Ok(true);
                    }
                }
            }
        }
    }

    fn invoke(&mut self, thread: usize, f: F, mops: Vec<MicroOp>) -> anyhow::Result<()> {
        let process = self.process[thread];
        let value = logged_value(&f, &mops, self.register_values);
        // Logged (handed to the OS) before the request can be sent.
        self.log.append(Op {
            index: OpIndex(0),
            time_ns: Some(nanos_since(self.started)),
            op_type: OpType::Invoke,
            process: Some(Process::Client(ProcessId(process))),
            f: Some(f.clone()),
            value,
            error: None,
            extra: store::Extra::new(),
        })?;
        let slot = self.slots[thread]
            .take()
            .ok_or_else(|| anyhow::anyhow!("worker {thread} is busy"))?;
        self.free.remove(&thread);
        self.in_flight[thread] = Some((f.clone(), mops.clone()));
        self.counters.invoked.fetch_add(1, Ordering::Relaxed);
        // Not polled (so nothing is sent) before the next flush.
        self.running.push(Box::pin(worker::run_job(
            slot,
            worker::Job { process, f, mops },
        )));
        Ok(())
    }

    fn complete(
        &mut self,
        (slot, d): (worker::Slot, worker::Done),
        generator: &mut dyn Generator,
    ) -> anyhow::Result<()> {
        let thread = d.thread;
        self.slots[thread] = Some(slot);
        let Some((f, _)) = self.in_flight[thread].take() else {
            // A late report from a worker already given up on.
            return Ok(());
        };
        let process = self.process[thread];
        let time = i64::try_from(d.at.saturating_duration_since(self.started).as_nanos())
            .unwrap_or(i64::MAX);
        let error = d
            .error
            .map(|(code, msg)| Box::new(Data::Vec(vec![Data::Str(code), Data::Str(msg)])));
        self.log.append(Op {
            index: OpIndex(0),
            time_ns: Some(time),
            op_type: d.op_type,
            process: Some(Process::Client(ProcessId(process))),
            value: logged_value(&f, &d.value, self.register_values),
            f: Some(f),
            error,
            extra: d.extra.into(),
        })?;
        let counter = match d.op_type {
            OpType::Ok => &self.counters.ok,
            OpType::Fail => &self.counters.fail,
            _ => &self.counters.info,
        };
        counter.fetch_add(1, Ordering::Relaxed);
        let ctx = self.ctx();
        generator.update(
            &ctx,
            &Event {
                thread: Thread(thread),
                op_type: d.op_type,
                value: d.value,
                time_ns: u64::try_from(time).unwrap_or(0),
            },
        );
        if d.op_type == OpType::Info {
            self.process[thread] += self.n as u64;
        }
        self.free.insert(thread);
        Ok(())
    }

    /// Waits for every in-flight op. Workers time ops out themselves; a
    /// worker silent well past that is recorded `info` and retired.
    async fn drain(&mut self, generator: &mut dyn Generator) -> anyhow::Result<()> {
        let limit = Instant::now() + self.cfg.op_timeout * 2 + Duration::from_secs(1);
        while self.in_flight.iter().any(Option::is_some) {
            self.log.flush()?;
            tokio::select! {
                d = self.running.next() => match d {
                    Some(d) => self.complete(d, generator)?,
                    None => break,
                },
                _ = tokio::time::sleep_until(limit.into()) => break,
            }
        }
        for t in 0..self.n {
            if let Some((f, mops)) = self.in_flight[t].take() {
                tracing::warn!(
                    "worker {t} did not complete its op; recording info and retiring it"
                );
                let process = self.process[t];
                self.log.append(Op {
                    index: OpIndex(0),
                    time_ns: Some(nanos_since(self.started)),
                    op_type: OpType::Info,
                    process: Some(Process::Client(ProcessId(process))),
                    value: logged_value(&f, &mops, self.register_values),
                    f: Some(f),
                    error: Some(Box::new(Data::Vec(vec![
                        Data::Str("worker-unresponsive".into()),
                        Data::Str("no completion from the worker".into()),
                    ]))),
                    extra: store::Extra::new(),
                })?;
                self.counters.info.fetch_add(1, Ordering::Relaxed);
                self.process[t] += self.n as u64;
                self.free.remove(&t);
            }
        }
        self.log.flush()
    }

    /// Closes every idle worker's client (bounded by 5 s); jobs of lost
    /// workers are dropped unfinished.
    async fn shutdown(self) {
        drop(self.running);
        let closing = futures_util::future::join_all(
            self.slots.into_iter().flatten().map(worker::Slot::close),
        );
        if tokio::time::timeout(Duration::from_secs(5), closing)
            .await
            .is_err()
        {
            tracing::warn!("workers' clients did not close within 5 s");
        }
    }
}

/// How an op is logged: a transaction's micro-ops, or a register op's
/// Jepsen value (`workloads::cas_register::to_data`).
fn logged_value(f: &F, mops: &[MicroOp], register_values: bool) -> OpValue {
    if register_values && workloads::cas_register::is_register_f(f) {
        OpValue::Data(Box::new(workloads::cas_register::to_data(mops)))
    } else {
        OpValue::Txn(mops.to_vec())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use db_adapters::client::{Client, ClientError};
    use db_adapters::sim::instant;
    use std::collections::HashMap;
    use std::sync::atomic::AtomicU64;
    use workloads::{WorkloadConfig, WorkloadKind};

    /// Opens the clients a closure makes.
    struct Opens(Box<dyn Fn() -> Box<dyn Client> + Send + Sync>);

    impl ClientFactory for Opens {
        fn setup<'a>(&'a self, _: &'a Node) -> BoxFuture<'a, Result<(), ClientError>> {
            Box::pin(async { Ok(()) })
        }
        fn open<'a>(&'a self, _: &'a Node) -> BoxFuture<'a, Result<Box<dyn Client>, ClientError>> {
            let c = (self.0)();
            Box::pin(async move { Ok(c) })
        }
    }

    type Answer = BoxFuture<'static, Result<Vec<MicroOp>, ClientError>>;
    type Answers = dyn Fn(&[MicroOp]) -> Answer + Send + Sync;

    /// A client whose transactions a shared closure answers.
    #[derive(Clone)]
    struct FnClient(Arc<Answers>);

    impl Client for FnClient {
        fn invoke<'a>(
            &'a mut self,
            txn: &'a [MicroOp],
        ) -> BoxFuture<'a, Result<Vec<MicroOp>, ClientError>> {
            (self.0)(txn)
        }
        fn close(self: Box<Self>) -> BoxFuture<'static, ()> {
            Box::pin(async {})
        }
    }

    /// Opens a clone of `client` per connection, counting them in `opens`.
    fn opens(client: FnClient, opens: Arc<AtomicU64>) -> Arc<Opens> {
        Arc::new(Opens(Box::new(move || {
            opens.fetch_add(1, Ordering::SeqCst);
            Box::new(client.clone())
        })))
    }

    #[derive(Default)]
    struct VecSink(Vec<Op>);

    impl HistorySink for VecSink {
        fn append(&mut self, mut op: Op) -> anyhow::Result<OpIndex> {
            op.index = OpIndex(self.0.len() as u64);
            self.0.push(op);
            Ok(OpIndex(self.0.len() as u64 - 1))
        }
    }

    #[tokio::test]
    async fn info_renumbers_the_process_and_every_invocation_completes_first() {
        let n = 4;
        let cfg = RunnerConfig {
            op_timeout: Duration::from_millis(100),
            ..RunnerConfig::local(n, 120)
        };
        // Ok, except: every 7th call an indefinite error, every 11th call
        // hangs past the op timeout.
        let calls = AtomicU64::new(0);
        let scripted = FnClient(Arc::new(move |txn: &[MicroOp]| -> Answer {
            let n = calls.fetch_add(1, Ordering::SeqCst);
            let done = instant::answer(txn);
            Box::pin(async move {
                if n % 7 == 3 {
                    return Err(ClientError::indefinite("boom", "connection reset"));
                }
                if n % 11 == 5 {
                    tokio::time::sleep(Duration::from_secs(5)).await;
                }
                Ok(done)
            })
        }));
        let opened = Arc::new(AtomicU64::new(0));
        let factory = opens(scripted, opened.clone());
        let main = workloads::for_workload(WorkloadKind::ListAppend, &WorkloadConfig::default(), 9)
            .unwrap();
        let mut sink = VecSink::default();
        let summary = run_unfaulted(&cfg, main, factory, &mut sink).await.unwrap();
        assert_eq!(summary.main_phase_end, PhaseEnd::OpsLimit);
        assert_eq!(summary.main_counts.invoked, 120);
        assert!(summary.final_reads_done);

        let mut open: HashMap<Process, usize> = HashMap::new();
        let mut retired: BTreeSet<u64> = BTreeSet::new();
        let mut infos = 0;
        for (i, op) in sink.0.iter().enumerate() {
            let p = op.process.unwrap();
            let Process::Client(ProcessId(pid)) = p else {
                panic!()
            };
            match op.op_type {
                OpType::Invoke => {
                    assert!(!retired.contains(&pid), "process {pid} reused after info");
                    assert!(open.insert(p, i).is_none(), "double invoke by {pid}");
                }
                t => {
                    assert!(open.remove(&p).is_some(), "completion without invocation");
                    if t == OpType::Info {
                        infos += 1;
                        retired.insert(pid);
                    }
                }
            }
        }
        assert!(open.is_empty(), "every invocation completed");
        assert!(
            infos >= 10,
            "indefinite errors and timeouts are info: {infos}"
        );
        // Renumbered processes: each new process is a retired one + concurrency.
        let pids: BTreeSet<u64> = sink
            .0
            .iter()
            .filter_map(|o| match o.process {
                Some(Process::Client(ProcessId(p))) => Some(p),
                _ => None,
            })
            .collect();
        for &pid in pids.iter().filter(|&&p| p >= n as u64) {
            assert!(
                retired.contains(&(pid - n as u64)),
                "process {pid} has no retired predecessor"
            );
        }
        assert!(
            pids.iter().any(|&p| p >= n as u64),
            "a new process after info"
        );
        // A fresh connection per new process (lazily, at its first op).
        assert!(opened.load(Ordering::SeqCst) as usize > n);
        // Final reads: the last ops are reads only.
        let last = sink.0.last().unwrap();
        assert!(
            last.value
                .txn()
                .unwrap()
                .iter()
                .all(|m| matches!(m, MicroOp::Read(..)))
        );
    }

    #[tokio::test]
    async fn an_always_ready_client_leaves_other_tasks_their_turn() {
        // `#[tokio::test]` is one thread, as `runtime()`. The stop request
        // comes from another task, which runs only if the interpreter yields
        // although every job it polls is done at once.
        let (trigger, stop) = stop_signal();
        tokio::spawn(async move { trigger.stop() });
        let limit = 200_000;
        let cfg = RunnerConfig {
            final_reads: false,
            register_values: false,
            ..RunnerConfig::local(4, limit)
        };
        let main = workloads::for_workload(WorkloadKind::ListAppend, &WorkloadConfig::default(), 1)
            .unwrap();
        let summary = run(
            &cfg,
            main,
            Arc::new(instant::InstantFactory),
            &mut VecSink::default(),
            &mut NoNemesis,
            stop,
            Arc::new(Counters::default()),
        )
        .await
        .unwrap();
        assert_eq!(summary.main_phase_end, PhaseEnd::Stopped);
        assert!(
            summary.main_counts.invoked < limit / 10,
            "stopped only after {} transactions",
            summary.main_counts.invoked
        );
    }

    #[tokio::test]
    async fn every_invocation_is_in_the_file_before_its_request() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("history.jsonl");
        let mut log = store::run::HistoryLog::create(&path).unwrap();
        let (seen, missing) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
        // At each request: was its invocation already in the history file
        // (read back through the file system, not the runner)?
        let (p, s, m) = (path.clone(), seen.clone(), missing.clone());
        let peeking = FnClient(Arc::new(move |txn: &[MicroOp]| -> Answer {
            let text = std::fs::read_to_string(&p).unwrap_or_default();
            let logged = store::read_str(&text, store::Format::JsonLines)
                .unwrap()
                .ops
                .iter()
                .any(|o| o.op_type == OpType::Invoke && o.value.txn() == Some(txn));
            let counter = if logged { &s } else { &m };
            counter.fetch_add(1, Ordering::SeqCst);
            let done = instant::answer(txn);
            Box::pin(async move { Ok(done) })
        }));
        let factory = opens(peeking, Arc::new(AtomicU64::new(0)));
        let main = workloads::for_workload(WorkloadKind::ListAppend, &WorkloadConfig::default(), 3)
            .unwrap();
        let summary = run_unfaulted(&RunnerConfig::local(5, 200), main, factory, &mut log)
            .await
            .unwrap();
        // Every completion is written by the end of the run, before finish.
        let ops = store::read_path(&path).unwrap().ops;
        assert_eq!(ops.len() as u64, 2 * summary.counts.invoked);
        assert!(seen.load(Ordering::SeqCst) >= 200);
        assert_eq!(
            missing.load(Ordering::SeqCst),
            0,
            "a request went out unlogged"
        );
    }
}
