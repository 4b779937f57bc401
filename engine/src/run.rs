//! `harness run`: one test, end to end — generate transactions, run them
//! against a database from concurrent clients, record the history, check
//! it, print the verdict.
//!
//! Results go to `<store>/runs/<test-name>/<timestamp>/` (`test.json`,
//! `history.jsonl` while running, compressed to `history.jsonl.gz` at the
//! end, `results.json`, `harness.log`, reports, database files) with
//! `<store>/runs/latest` pointing at the newest run.
//!
//! Exit codes: 0 valid, 1 invalid, 2 unknown, 3 harness error or bad flag,
//! 4 setup failed (the database could not be started or reached).
//!
//! `--db sim`: the simulator's behaviour is `--isolation` (serializable,
//! snapshot-isolation, repeatable-read, read-committed, read-uncommitted)
//! unless `--sim-bug` names a bug mode (e.g. `retry-reapply`, `non-monotonic-read`, `torn-commit`,
//! `causal-gap`, `lost-update`), which then replaces it; without `--ops`
//! its main phase ends after `sim::DEFAULT_OPS` transactions.
//!
//! Signals: a thread of its own watches SIGINT/SIGTERM for the whole run
//! (see `SignalWatch`): the first stops the main phase, the second exits
//! 130 in any phase, removing the run directory's `*.tmp` files.

use crate::cluster::Cluster;
use crate::exit;
use crate::plan::{Plan, db_settings, plan};
use crate::runner::{self, RunnerConfig, progress};
use crate::spec::RunSpec;
use anyhow::Context as _;
use checker::result::Valid;
use db_adapters::catalog::{LocalServer, Placement};
use db_adapters::client::ClientFactory;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, SystemTime};
use store::run::RunMeta;

/// The binary's version and commit, recorded in `test.json`.
#[derive(Clone, Copy, Debug)]
pub struct Build {
    /// Crate version.
    pub version: &'static str,
    /// Git commit it was built from.
    pub commit: &'static str,
}

/// The flags of `harness run` as given (`argv` after `run`) made
/// reproducible: without `--store` (a re-run chooses its own) and with the
/// seed the run used, so the same flags re-issue the same invocations.
pub fn reproducible_flags(argv: &[String], seed: u64) -> Vec<String> {
    let mut out = Vec::with_capacity(argv.len() + 2);
    let mut skip_value = false;
    for a in argv {
        if skip_value {
            skip_value = false;
            continue;
        }
        if a == "--store" || a == "--seed" {
            skip_value = true;
            continue;
        }
        if a.starts_with("--store=") || a.starts_with("--seed=") {
            continue;
        }
        out.push(a.clone());
    }
    out.push("--seed".to_string());
    out.push(seed.to_string());
    out
}

/// A database's default transaction limit, given for the default 30 s main
/// phase, grown in proportion for a longer `--time-limit` (never shrunk), so
/// a long run is not cut short and a fast machine cannot make it unbounded.
pub fn default_ops_for(base: u64, time_limit: std::time::Duration) -> u64 {
    const BASE_SECONDS: f64 = 30.0;
    let factor = (time_limit.as_secs_f64() / BASE_SECONDS).max(1.0);
    (base as f64 * factor).min(u64::MAX as f64) as u64
}

/// The rate (transactions/s) at which `ops` transactions last `time_limit`.
pub fn paced_rate(ops: u64, time_limit: std::time::Duration) -> f64 {
    ops as f64 / time_limit.as_secs_f64().max(1.0)
}

/// Runs `harness run`, returning the exit code. `argv` is what followed
/// `run` on the command line (recorded in test.json for `reproduce`).
pub fn run(mut args: RunSpec, argv: Vec<String>, build: Build) -> anyhow::Result<u8> {
    if args.limits.ops.is_none() {
        // The simulator's is small and useful (see `sim::DEFAULT_OPS`);
        // SQLite's bounds the default run's directory (`sqlite::DEFAULT_OPS`).
        args.limits.ops = args
            .db
            .capabilities()
            .default_ops
            .map(|base| default_ops_for(base, args.limits.time_limit));
        // Faults asked of a database that answers in microseconds: the cap
        // would end the main phase long before the first fault is due
        // (100,000 simulator transactions took 0.7 s of a 30 s run), so the
        // run is paced for the cap to last the time limit.
        if !args.faults.faults.is_empty()
            && args.limits.rate.is_none()
            && let Some(ops) = args.limits.ops
        {
            args.limits.rate = Some(paced_rate(ops, args.limits.time_limit));
        }
    }
    // Before planning (which checks the preload is there) and before any
    // database starts: what a clock fault moves.
    nemesis::clock::set_mode(args.faults.options.clock_mode);
    let plan = plan(&args)?;
    // Its error names the directory it could not make (`cannot create …`).
    let run_dir = store::run::RunDir::create(&args.store, &plan.test_name)?;
    crate::run_log::init(&run_dir.log_path());
    let started_at = SystemTime::now();
    let mut meta = test_json(&args, &plan, &run_dir, started_at, build);
    meta.run_flags = reproducible_flags(&argv, plan.seed);
    meta.save(&run_dir.test_json_path())?;
    let header = header(&args, &plan);
    crate::say!("{header}\nrun directory: {}", run_dir.path().display());
    tracing::info!("{header}");
    tracing::info!("run directory {}", run_dir.path().display());
    let signals = Arc::new(SignalWatch::start(run_dir.path(), args.limits.op_timeout));
    let rt = runner::runtime().context("starting the async runtime")?;
    let (args, plan, run_dir) = (Arc::new(args), Arc::new(plan), Arc::new(run_dir));
    let outcome = rt.block_on(execute_task(
        args.clone(),
        plan.clone(),
        run_dir.clone(),
        signals.clone(),
    ));
    // Aborted by a second signal: its thread exits the process.
    signals.hold_if_exiting();
    signals.end_phases();
    let ended_at = SystemTime::now();
    meta.end_time = Some(humantime::format_rfc3339_millis(ended_at).to_string());
    let code = match outcome {
        Ok(Outcome::SetupFailed(msg)) => {
            meta.setup_error = Some(msg.clone());
            // The header named the run directory already.
            eprintln!("error: setup failed: {msg}");
            if let Err(e) = meta.save(&run_dir.test_json_path()) {
                eprintln!("warning: {e:#}");
            }
            return Ok(exit::SETUP_FAILED);
        }
        Ok(Outcome::Ran(summary, db_settings)) => {
            meta.db_settings = db_settings.into_iter().collect();
            summary
        }
        Err(e) => {
            meta.error = Some(format!("{e:#}"));
            // The run's own error is the one to report; not recording it
            // (a full disk) is a warning beside it.
            if let Err(w) = meta.save(&run_dir.test_json_path()) {
                eprintln!("warning: {w:#}");
                crate::run_log::log_only_error(&format!("{w:#}"));
            }
            // What was recorded before the error stays, unchecked: say
            // where, and how to check it.
            let history = run_dir.history_path();
            if std::fs::metadata(&history).is_ok_and(|m| m.len() > 0) {
                eprintln!(
                    "the history recorded so far is kept in {}; `harness analyze {}` checks it",
                    history.display(),
                    run_dir.path().display()
                );
            }
            return Err(e);
        }
    };
    meta.summary = serde_json::to_value(&code).ok();
    // Best effort: the verdict is written (or its absence said) below.
    let _ = meta.save(&run_dir.test_json_path());
    crate::say!("{}", phase_lines(&code));
    let keep = args.keep;
    let check = crate::check::CheckSpec {
        workload: plan.workload,
        expected: plan.expected,
        time_limit: args.limits.check_time_limit,
        keep,
    };
    let checked = crate::check::check_and_report(&check, &run_dir)?;
    let mut verdict = checked.valid;
    // A test of faults that did not happen is not `valid`; a loss a
    // setting harness imposed permits is said as such (no_fault.rs).
    let (settled, lines) = crate::no_fault::settle_record(&run_dir, &meta, verdict);
    for l in lines {
        crate::say!("{l}");
    }
    verdict = settled;
    if !keep.jsonl {
        match run_dir.compress_history() {
            Ok((raw, packed)) => crate::say!(
                "history: {} ({} MB, compressed from {} MB; --keep jsonl keeps it plain)",
                run_dir.history_gz_path().display(),
                mb(packed),
                mb(raw)
            ),
            Err(e) => {
                eprintln!("warning: history left uncompressed: {e}");
                crate::run_log::log_only_error(&format!("history left uncompressed: {e}"));
            }
        }
    }
    meta.verdict = Some(verdict.as_str().to_string());
    let in_test_json = meta.save(&run_dir.test_json_path());
    match (&checked.results_error, in_test_json) {
        (None, _) => {}
        (Some(results), Ok(())) => {
            eprintln!(
                "warning: results.json was not written; the verdict ({}) is recorded in test.json only",
                verdict.as_str()
            );
            crate::run_log::log_only_error(&format!(
                "results.json was not written: {results}; the verdict ({}) is in test.json only",
                verdict.as_str()
            ));
        }
        (Some(results), Err(test)) => {
            let what = format!("results.json: {results}; test.json: {test:#}");
            eprintln!(
                "error: no verdict was recorded in {}: {what}",
                run_dir.path().display()
            );
            crate::run_log::log_only_error(&format!(
                "no verdict was recorded ({what}); the verdict ({}) was only printed",
                verdict.as_str()
            ));
            eprintln!(
                "the verdict ({}) is only what was printed above",
                verdict.as_str()
            );
        }
    }
    // A second signal is exiting the process (130) from its own thread,
    // healing and stopping what harness started: no verdict exit races it.
    signals.hold_if_exiting();
    Ok(match verdict {
        Valid::True => exit::VALID,
        Valid::False => exit::INVALID,
        Valid::Unknown => exit::UNKNOWN,
    })
}

enum Outcome {
    SetupFailed(String),
    /// The runner's summary and the settings harness imposed on a server
    /// it started.
    Ran(runner::RunSummary, Vec<(String, String)>),
}

/// [`execute`] as a task of the runtime, not `block_on`'s own future: a
/// job's connection task waking a task needs no trip through the driver
/// (see `runner::runtime`). A panic in the run is re-raised here.
async fn execute_task(
    args: Arc<RunSpec>,
    plan: Arc<Plan>,
    run_dir: Arc<store::run::RunDir>,
    signals: Arc<SignalWatch>,
) -> anyhow::Result<Outcome> {
    let watch = signals.clone();
    let task = tokio::spawn(async move { execute(&args, &plan, &run_dir, &signals).await });
    watch.with(|s| s.run_task = Some(task.abort_handle()));
    match task.await {
        Ok(outcome) => outcome,
        Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
        Err(e) => Err(anyhow::anyhow!("the run task was cancelled: {e}")),
    }
}

async fn execute(
    args: &RunSpec,
    plan: &Plan,
    run_dir: &store::run::RunDir,
    signals: &SignalWatch,
) -> anyhow::Result<Outcome> {
    let settings = db_settings(args, plan.isolation, plan.seed, run_dir.path());
    let mut local: Option<Box<dyn LocalServer>> = None;
    let mut on_nodes: Option<Cluster> = None;
    let mut local_nemesis = None;
    let mut db_settings = Vec::new();
    let factory: Arc<dyn ClientFactory> = if plan.on_nodes {
        match crate::cluster::open_cluster(args, &settings, run_dir.path()).await? {
            Ok(c) => {
                let c = on_nodes.insert(c);
                db_settings = c.db.settings();
                announce_settings(plan, "", &db_settings);
                c.factory.clone()
            }
            Err(msg) => return Ok(Outcome::SetupFailed(msg)),
        }
    } else {
        // Behind --url, embedded, or on a throwaway local server.
        let url = match (&args.url, plan.db.placement()) {
            (Some(u), _) => Some(u.clone()),
            (None, Placement::UrlOrNodes) => match plan.db.start_local(&settings).await {
                Ok(server) => {
                    let server = local.insert(server);
                    db_settings = server.settings();
                    announce_settings(plan, "local ", &db_settings);
                    if !args.faults.faults.is_empty() {
                        local_nemesis = server.process().map(crate::cluster::local_nemesis);
                    }
                    Some(server.url())
                }
                Err(msg) => return Ok(Outcome::SetupFailed(msg)),
            },
            (None, _) => None,
        };
        let factory = plan
            .db
            .client_factory(&settings, url.as_deref())
            .map_err(anyhow::Error::msg)?;
        // Simulated nodes: their faults are calls into the simulator.
        if !args.faults.faults.is_empty()
            && local_nemesis.is_none()
            && let Some(f) = factory.in_process_faults()
        {
            local_nemesis = Some(crate::cluster::simulated_nemesis(&plan.nodes, f));
        }
        factory
    };
    let outcome = run_with(
        args,
        plan,
        run_dir,
        factory.clone(),
        on_nodes.as_ref(),
        local_nemesis,
        signals,
    )
    .await;
    if let Err(e) = factory.finish().await {
        tracing::warn!("{} after the run: {}", plan.db, e.message);
    }
    if let Some(c) = on_nodes {
        c.finish(run_dir.path()).await;
    }
    if let Some(server) = local
        && let Err(e) = server.stop().await
    {
        tracing::warn!("stopping the local {} server: {e}", plan.db);
    }
    outcome.map(|o| match o {
        Outcome::Ran(summary, _) => Outcome::Ran(summary, db_settings),
        other => other,
    })
}

/// Prints and logs the settings harness imposed on the database it started
/// (they go into test.json too).
fn announce_settings(plan: &Plan, prefix: &str, settings: &[(String, String)]) {
    if settings.is_empty() {
        return;
    }
    let list: Vec<String> = settings.iter().map(|(k, v)| format!("{k}={v}")).collect();
    crate::say!("{prefix}{} settings: {}", plan.db, list.join(", "));
    tracing::info!("{prefix}{} settings: {}", plan.db, list.join(", "));
}

async fn run_with(
    args: &RunSpec,
    plan: &Plan,
    run_dir: &store::run::RunDir,
    factory: Arc<dyn ClientFactory>,
    on_nodes: Option<&Cluster>,
    local_nemesis: Option<Arc<nemesis::fault::Nemesis>>,
    signals: &SignalWatch,
) -> anyhow::Result<Outcome> {
    for node in &plan.nodes {
        let setup = tokio::time::timeout(Duration::from_secs(30), factory.setup(node)).await;
        match setup {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                return Ok(Outcome::SetupFailed(format!(
                    "{} on node {} ({}): {}",
                    plan.db.name(),
                    node.name,
                    node.host,
                    e.message
                )));
            }
            Err(_) => {
                return Ok(Outcome::SetupFailed(format!(
                    "{} on node {}: schema setup timed out after 30 s",
                    plan.db.name(),
                    node.name
                )));
            }
        }
    }
    let mut main = workloads::for_workload(plan.workload, &plan.wcfg, plan.seed)?;
    if let Some(r) = args.limits.rate {
        main = Box::new(workloads::generator::rate(r, plan.seed ^ 0x5eed, main)?);
    }
    // Its error names the file (`cannot create …`).
    let log = store::run::HistoryLog::create(&run_dir.history_log_path())?;
    // Shared with the nemesis task, which records its ops in the same log.
    let mut log = crate::cluster::SharedLog::new(log);
    let heal_on_signal = on_nodes
        .map(|c| c.nemesis.clone())
        .or_else(|| local_nemesis.clone());
    let mut nemesis =
        crate::cluster::nemesis_for(on_nodes, local_nemesis, &args.faults, plan.seed, &log)?;
    let (trigger, stop) = runner::stop_signal();
    signals.main_phase(trigger, heal_on_signal);
    let counters = Arc::new(progress::Counters::default());
    let limit = Some(args.limits.time_limit);
    let progress = progress::Progress::start(counters.clone(), limit);
    let cfg = RunnerConfig {
        concurrency: plan.concurrency,
        nodes: plan.nodes.clone(),
        time_limit: limit,
        ops_limit: args.limits.ops,
        op_timeout: args.limits.op_timeout,
        recovery_time: args.limits.recovery_time,
        final_read_batch: plan.wcfg.final_read_batch,
        final_reads: true,
        register_values: plan.workload == workloads::WorkloadKind::Register,
    };
    tracing::info!(
        "running {} against {} at {} with {} workers, seed {}",
        plan.workload,
        plan.db.name(),
        plan.isolation,
        plan.concurrency,
        plan.seed
    );
    let result = runner::run(&cfg, main, factory, &mut log, &mut *nemesis, stop, counters).await;
    progress.finish().await;
    signals.end_phases();
    let finished = log.finish();
    let summary = result?;
    finished.context("closing the history log")?;
    tracing::info!("{}", phase_lines(&summary).replace('\n', "; "));
    Ok(Outcome::Ran(summary, Vec::new()))
}

/// What a signal does now: the run's stop trigger while the main phase
/// runs, the faults to heal while any may be in place.
#[derive(Default)]
struct SignalState {
    /// Signals received so far.
    count: u32,
    /// Set while the main phase runs: the first signal stops it.
    stop: Option<runner::StopTrigger>,
    /// Set while faults may be in place: healed before exiting, on the
    /// runtime their SSH sessions belong to.
    faults: Option<(Arc<nemesis::fault::Nemesis>, tokio::runtime::Handle)>,
    /// The run's task: a second signal aborts it before stopping what
    /// harness started, so the run (its recovery restarting servers, an
    /// SSH command in flight: killed on drop) does not race the teardown.
    run_task: Option<tokio::task::AbortHandle>,
}

/// SIGINT/SIGTERM for the whole of a run, on a thread of its own, so that
/// a signal is seen in every phase, also while the main thread checks,
/// writes reports or compresses the history. First signal: in the main
/// phase, stop issuing and finish normally (in-flight ops wait up to the op
/// timeout); later, say that the run is finishing. Second: heal faults
/// still in place (bounded by 30 s), remove the run directory's temporary
/// files, abort the run's task, stop what harness started (`exit_cleanup`:
/// a database on nodes is torn down, bounded by 30 s more), exit 130 (the history on disk is
/// whole up to that point).
struct SignalWatch {
    state: Arc<std::sync::Mutex<SignalState>>,
}

impl SignalWatch {
    /// Starts watching (a warning, and no watching, when the thread or its
    /// signal handlers cannot be set up).
    fn start(run_dir: &Path, op_timeout: Duration) -> SignalWatch {
        let state = Arc::new(std::sync::Mutex::new(SignalState::default()));
        let (st, dir) = (state.clone(), run_dir.to_path_buf());
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let spawned = std::thread::Builder::new()
            .name("signals".into())
            .spawn(move || watch_signals(&st, &dir, op_timeout, &ready_tx));
        // Registered before the run starts, so no early signal is lost.
        match spawned.map(|_| ready_rx.recv_timeout(Duration::from_secs(5))) {
            Ok(Ok(Ok(()))) => {}
            Ok(Ok(Err(e))) => eprintln!("warning: cannot watch for signals: {e}"),
            Ok(Err(_)) => eprintln!("warning: the signal watcher did not start"),
            Err(e) => eprintln!("warning: cannot watch for signals: {e}"),
        }
        SignalWatch { state }
    }

    fn with(&self, f: impl FnOnce(&mut SignalState)) {
        if let Ok(mut s) = self.state.lock() {
            f(&mut s);
        }
    }

    /// The main phase begins: the first signal stops it; `faults` are
    /// healed before a second signal exits.
    fn main_phase(&self, stop: runner::StopTrigger, faults: Option<Arc<nemesis::fault::Nemesis>>) {
        let handle = tokio::runtime::Handle::try_current().ok();
        self.with(|s| {
            if s.count > 0 {
                // Signalled during setup: stop at once.
                stop.stop();
            }
            s.stop = Some(stop);
            s.faults = faults.zip(handle);
        });
    }

    /// Blocks for good once a second signal came: its thread exits the
    /// process (130) when it has healed and stopped what harness started.
    fn hold_if_exiting(&self) {
        let exiting = || self.state.lock().is_ok_and(|s| s.count >= 2);
        if exiting() {
            loop {
                std::thread::sleep(Duration::from_secs(1));
            }
        }
    }

    /// The main phase, healing and final reads are over (the runner healed
    /// every fault).
    fn end_phases(&self) {
        self.with(|s| {
            s.stop = None;
            s.faults = None;
        });
    }
}

fn watch_signals(
    state: &std::sync::Mutex<SignalState>,
    run_dir: &Path,
    op_timeout: Duration,
    ready: &std::sync::mpsc::Sender<std::io::Result<()>>,
) {
    use tokio::signal::unix::{SignalKind, signal};
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            let _ = ready.send(Err(e));
            return;
        }
    };
    rt.block_on(async {
        let (mut term, mut int) = match (
            signal(SignalKind::terminate()),
            signal(SignalKind::interrupt()),
        ) {
            (Ok(t), Ok(i)) => (t, i),
            (Err(e), _) | (_, Err(e)) => {
                let _ = ready.send(Err(e));
                return;
            }
        };
        let _ = ready.send(Ok(()));
        loop {
            tokio::select! {
                _ = int.recv() => {}
                _ = term.recv() => {}
            }
            let (count, stopped, faults, run_task) = match state.lock() {
                Ok(mut s) => {
                    s.count += 1;
                    let stopped = s.count == 1 && s.stop.as_ref().is_some_and(|t| {
                        t.stop();
                        true
                    });
                    (s.count, stopped, s.faults.clone(), s.run_task.clone())
                }
                Err(_) => (2, false, None, None),
            };
            if count == 1 {
                if stopped {
                    eprintln!(
                        "\nstopping: no new transactions; waiting up to {op_timeout:?} for those in flight, then checking (signal again to exit now)"
                    );
                    tracing::warn!("stop requested by signal");
                } else {
                    eprintln!(
                        "\nthe run is finishing (checking, reports, compression); signal again to exit now with the history kept"
                    );
                    tracing::warn!("signal during the end phases");
                }
                continue;
            }
            if let Some((n, handle)) = faults {
                eprintln!("healing faults before exiting (at most 30 s)");
                let (tx, rx) = std::sync::mpsc::channel();
                handle.spawn(async move {
                    let _ = tx.send(n.heal_all().await);
                });
                match rx.recv_timeout(Duration::from_secs(30)) {
                    Ok(Ok(())) => {}
                    Ok(Err(e)) => eprintln!("warning: healing faults: {e}"),
                    Err(_) => eprintln!(
                        "warning: healing did not finish in 30 s; run `harness nemesis heal`"
                    ),
                }
            }
            // A half-written `history.jsonl.gz.tmp` or report goes; the
            // history itself is whole (`history.jsonl`, or the finished
            // `history.jsonl.gz`).
            store::run::remove_tmp_files(run_dir);
            // `exit` skips destructors: servers harness started itself
            // (`--local` PostgreSQL, …, a database on nodes) are stopped
            // and removed here, each saying what it did — once the run's
            // task is gone (taken first: its drop unregisters them).
            let stop_the_run = || {
                if let Some(t) = run_task {
                    t.abort();
                    for _ in 0..500 {
                        if t.is_finished() {
                            break;
                        }
                        std::thread::sleep(Duration::from_millis(10));
                    }
                }
            };
            for line in db_adapters::exit_cleanup::run_all_after(stop_the_run) {
                eprintln!("{line}");
            }
            tracing::warn!("exiting on a second signal");
            eprintln!(
                "exiting now (130); the history in {} holds everything recorded so far",
                run_dir.display()
            );
            std::process::exit(exit::INTERRUPTED.into());
        }
    });
}

/// Whether the run asks for clock faults on a database harness starts
/// under a preload (not the simulator's clocks).
fn preloaded_clock(args: &RunSpec) -> bool {
    args.faults
        .faults
        .contains(&nemesis::schedule::FaultKind::Clock)
        && matches!(
            args.db.capabilities().clock_faults,
            db_adapters::catalog::ClockFaults::Libfaketime
        )
}

/// `config.clock_mode` of test.json when clock faults reach a real
/// server: what they move (`nemesis::clock::ClockMode`).
fn clock_mode_record(args: &RunSpec) -> serde_json::Map<String, serde_json::Value> {
    let mut m = serde_json::Map::new();
    if preloaded_clock(args) {
        let mode = args.faults.options.clock_mode;
        m.insert("clock_mode".into(), mode.flag().into());
        m.insert("clock_mode_detail".into(), mode.label().into());
    }
    m
}

/// The first line a run prints: what is tested, how, and its seed.
fn header(args: &RunSpec, plan: &Plan) -> String {
    let level = args.sim_bug.map_or_else(
        || format!("isolation {}", plan.isolation.name()),
        |b| format!("bug mode {b}"),
    );
    let mut limit = match args.limits.ops {
        Some(n) => format!(
            "{} or {n} transactions",
            humantime::format_duration(args.limits.time_limit)
        ),
        None => humantime::format_duration(args.limits.time_limit).to_string(),
    };
    if let Some(r) = args.limits.rate {
        limit.push_str(&format!(" at {r:.0} txn/s"));
    }
    let clock = if preloaded_clock(args) {
        format!(
            " · clock faults: {}",
            args.faults.options.clock_mode.label()
        )
    } else {
        String::new()
    };
    format!(
        "harness run: {} · {} · {level} · {} · nemesis {}{clock} · {} workers · {limit} · seed {}",
        plan.db.name(),
        plan.workload.name(),
        crate::checks::describe(
            plan.workload,
            &crate::checks::CheckHow {
                models: vec![plan.expected],
                ..crate::checks::CheckHow::new(Some(plan.workload))
            }
        ),
        args.faults.name(),
        plan.concurrency,
        plan.seed
    )
}

/// What the main phase and the final reads did, one line each.
fn phase_lines(s: &runner::RunSummary) -> String {
    let main_done = s.main_counts.ok + s.main_counts.fail + s.main_counts.info;
    let ended = match s.main_phase_end {
        runner::PhaseEnd::Exhausted => "the workload had no more transactions",
        runner::PhaseEnd::TimeLimit => "the time limit",
        runner::PhaseEnd::OpsLimit => "the transaction limit (--ops)",
        runner::PhaseEnd::Stopped => "a stop request (signal)",
    };
    let final_reads = s.counts.invoked.saturating_sub(s.main_counts.invoked);
    format!(
        "main phase: {} transactions completed in {:.1} s ({:.0} txn/s), ended by {ended}\n\
         final reads: {} read-only transactions after the main phase{}",
        crate::console::thousands(main_done),
        s.main_phase_s,
        main_done as f64 / s.main_phase_s.max(1e-9),
        crate::console::thousands(final_reads),
        if s.final_reads_done {
            ""
        } else {
            " (did not finish)"
        }
    )
}

/// Bytes as megabytes with one decimal.
fn mb(bytes: u64) -> String {
    format!("{:.1}", bytes as f64 / 1e6)
}

fn test_json(
    args: &RunSpec,
    plan: &Plan,
    run_dir: &store::run::RunDir,
    started: SystemTime,
    build: Build,
) -> RunMeta {
    let secs = |d: std::time::Duration| Some(d.as_secs_f64());
    fn n<T: TryInto<u64>>(v: T) -> Option<u64> {
        v.try_into().ok()
    }
    RunMeta {
        format: store::run::META_FORMAT,
        name: plan.test_name.clone(),
        seed: Some(plan.seed),
        nodes: plan
            .nodes
            .iter()
            .map(|n| store::run::NodeMeta {
                name: n.name.to_string(),
                host: n.host.to_string(),
            })
            .collect(),
        harness: Some(store::run::HarnessBuild {
            version: build.version.to_string(),
            commit: build.commit.to_string(),
        }),
        command_line: std::env::args().collect(),
        cwd: std::env::current_dir()
            .ok()
            .map(|d| d.display().to_string()),
        start_time: Some(humantime::format_rfc3339_millis(started).to_string()),
        end_time: None,
        run_dir: Some(run_dir.path().display().to_string()),
        config: store::run::RunConfig {
            db: Some(plan.db.name().to_string()),
            workload: Some(plan.workload.name().to_string()),
            isolation: Some(plan.isolation.name().to_string()),
            sim_bug: args.sim_bug.map(|b| b.name().to_string()),
            expected_consistency_model: Some(plan.expected.name().to_string()),
            concurrency: n(plan.concurrency),
            rate: args.limits.rate,
            time_limit_s: secs(args.limits.time_limit),
            ops: args.limits.ops.and_then(n),
            op_timeout_s: secs(args.limits.op_timeout),
            recovery_time_s: secs(args.limits.recovery_time),
            url: args.url.as_deref().map(redact_url),
            local: Some(args.local),
            key_count: n(plan.wcfg.key_count),
            max_writes_per_key: n(plan.wcfg.max_writes_per_key),
            min_txn_length: n(plan.wcfg.min_txn_length),
            max_txn_length: n(plan.wcfg.max_txn_length),
            read_ratio: Some(plan.wcfg.read_ratio),
            final_read_batch: n(plan.wcfg.final_read_batch),
            check_time_limit_s: secs(args.limits.check_time_limit),
            nemesis: Some(args.faults.name().to_string()),
            nemesis_interval_s: secs(args.faults.options.interval),
            partition: Some(
                args.faults
                    .options
                    .partitions
                    .iter()
                    .map(|p| p.to_string())
                    .collect::<Vec<_>>()
                    .join(","),
            ),
            extra: clock_mode_record(args),
        },
        ..RunMeta::default()
    }
}

/// Drops a password from `scheme://user:password@host`.
fn redact_url(url: &str) -> String {
    if let Some((scheme, rest)) = url.split_once("://")
        && let Some((cred, host)) = rest.split_once('@')
        && let Some((user, _)) = cred.split_once(':')
    {
        return format!("{scheme}://{user}:***@{host}");
    }
    url.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_ops_limit_grows_with_a_longer_time_limit_only() {
        use std::time::Duration;
        assert_eq!(default_ops_for(800_000, Duration::from_secs(30)), 800_000);
        assert_eq!(default_ops_for(800_000, Duration::from_secs(5)), 800_000);
        assert_eq!(
            default_ops_for(800_000, Duration::from_secs(300)),
            8_000_000
        );
        assert_eq!(default_ops_for(100_000, Duration::from_secs(45)), 150_000);
    }

    #[test]
    fn passwords_are_redacted() {
        assert_eq!(
            redact_url("postgres://u:pw@h:5/db"),
            "postgres://u:***@h:5/db"
        );
        assert_eq!(redact_url("postgres://u@h/db"), "postgres://u@h/db");
    }
}
