//! Databases on nodes for a run: reaching the nodes, the database
//! lifecycle around the run (setup on every node, log collection, teardown),
//! the nemesis task that injects faults during the main phase (also on a
//! local server or the simulator's replicas), and the heal hook.
//!
//! Key decisions: every node is connected to (and every login checked)
//! before anything else, so an unreachable node is reported by name with
//! exit 4 before any workload starts; stale partition rules of a crashed run
//! are removed at setup; nemesis ops go to the same history log as client
//! ops, through a mutex ([`SharedLog`]). Nodes a crashed run left out of
//! the cluster (`--nemesis membership`) need nothing special: setup tears
//! every node down and builds the whole cluster again. An exit that skips
//! `finish` (a second Ctrl-C) tears the database down too (`at_exit`).

use crate::runner::{self, HistorySink};
use crate::spec::{FaultSpec, NodeSpec, RunSpec};
use anyhow::Context as _;
use db_adapters::catalog::{DbSettings, OpenError};
use db_adapters::client::{BoxFuture, ClientFactory};
use db_adapters::db::{Db, DbError, collect_logs, connect_all, setup_with_retry};
use nemesis::Node;
use nemesis::fault::Nemesis as FaultNemesis;
use nemesis::node::{parse_node_list, parse_nodes_file};
use nemesis::package::{self, Plan};
use nemesis::remote::{Remote, SshConfig, SshRemote};
use nemesis::schedule::{FaultKind, Recorder};
use nemesis::testbed::Testbed;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use store::{Data, F, Op, OpIndex, OpType, OpValue, Process};
use tokio::sync::watch;
use tokio::task::JoinHandle;

mod at_exit;
mod shared_log;
pub use shared_log::SharedLog;

/// Where `--nodes` points.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NodeSource {
    /// The local testbed with this many nodes (`None`: 3, whatever testbed
    /// is up: a run never depends on what an earlier one left).
    Testbed(Option<usize>),
    /// Given nodes.
    Nodes(Vec<Node>),
}

/// `--nodes testbed` without a size: 3 nodes (`testbed:N` for another).
pub const DEFAULT_TESTBED_NODES: usize = 3;

impl NodeSpec {
    /// Whether nodes were given at all.
    pub fn is_set(&self) -> bool {
        self.nodes.is_some() || self.nodes_file.is_some()
    }

    /// Parses `--nodes` / `--nodes-file`.
    ///
    /// # Errors
    /// A malformed list, naming the entry.
    pub fn source(&self) -> anyhow::Result<Option<NodeSource>> {
        if let Some(f) = &self.nodes_file {
            let text = std::fs::read_to_string(f)
                .with_context(|| format!("--nodes-file {}", f.display()))?;
            return Ok(Some(NodeSource::Nodes(parse_nodes_file(
                &f.display().to_string(),
                &text,
            )?)));
        }
        let Some(list) = &self.nodes else {
            return Ok(None);
        };
        if let Some(size) = crate::spec::testbed_size(list) {
            return Ok(Some(NodeSource::Testbed(size?)));
        }
        Ok(Some(NodeSource::Nodes(parse_node_list(list)?)))
    }

    /// The nodes a run will use (the testbed's are fixed names).
    ///
    /// # Errors
    /// As [`NodeSpec::source`].
    pub fn planned_nodes(&self) -> anyhow::Result<Option<Vec<Node>>> {
        Ok(match self.source()? {
            None => None,
            Some(NodeSource::Nodes(n)) => Some(n),
            Some(NodeSource::Testbed(size)) => {
                let n = size.unwrap_or(DEFAULT_TESTBED_NODES);
                Some(nemesis::testbed::nodes(n))
            }
        })
    }

    /// Brings the testbed up when asked for, and opens an SSH remote per
    /// node, checking every login. Unreachable nodes are all reported.
    ///
    /// # Errors
    /// A setup error (exit 4) naming the nodes.
    pub async fn connect(&self) -> anyhow::Result<Vec<Arc<dyn Remote>>> {
        self.connect_first(usize::MAX).await
    }

    /// As [`NodeSpec::connect`], for the first `limit` nodes only.
    ///
    /// # Errors
    /// As [`NodeSpec::connect`].
    pub async fn connect_first(&self, limit: usize) -> anyhow::Result<Vec<Arc<dyn Remote>>> {
        let (nodes, ssh) = match self.source()? {
            None => anyhow::bail!("no nodes given (--nodes or --nodes-file)"),
            Some(NodeSource::Testbed(size)) => {
                let n = size.unwrap_or(DEFAULT_TESTBED_NODES);
                let tb = Testbed::up(n).await?;
                (tb.nodes.clone(), tb.ssh_config())
            }
            Some(NodeSource::Nodes(nodes)) => {
                let mut ssh = SshConfig::new();
                ssh.user = self.ssh.user.clone();
                ssh.key = self.ssh.key.clone();
                ssh.port = self.ssh.port;
                ssh.strict_host_key_checking = self.ssh.strict_host_key_checking;
                (nodes, ssh)
            }
        };
        let remotes: Vec<Arc<dyn Remote>> = nodes
            .into_iter()
            .take(limit)
            .map(|n| Arc::new(SshRemote::new(n, ssh.clone())) as Arc<dyn Remote>)
            .collect();
        if let Err(e) = connect_all(&remotes).await {
            remove_control_dir(&ssh);
            return Err(e.into());
        }
        Ok(remotes)
    }
}

/// `--nemesis clock` only where harness starts the database's server
/// under libfaketime, and only with libfaketime installed here, or on
/// simulated replicas (offsets set in the simulator).
fn check_clock(args: &RunSpec, on_nodes: bool) -> anyhow::Result<()> {
    if args
        .faults
        .faults
        .contains(&nemesis::schedule::FaultKind::Clock)
    {
        return check_clock_asked(args, on_nodes);
    }
    let o = &args.faults.options;
    if o.clock_rate.is_some() || o.clock_mix != nemesis::clock::fault::ClockMix::Jepsen {
        anyhow::bail!("--clock-rate and --clock-mix shape --nemesis clock: add --nemesis clock");
    }
    Ok(())
}

/// [`check_clock`] once `--nemesis clock` is asked for.
fn check_clock_asked(args: &RunSpec, on_nodes: bool) -> anyhow::Result<()> {
    use db_adapters::catalog::ClockFaults;
    match args.db.capabilities().clock_faults {
        ClockFaults::No(why) => anyhow::bail!("--nemesis clock: --db {}: {why}", args.db),
        ClockFaults::Simulated if args.faults.options.clock_rate.is_some() => anyhow::bail!(
            "--clock-rate: rate skew is not simulated (--db {} simulates offsets only)",
            args.db
        ),
        ClockFaults::Simulated if args.sim_replicas.is_some() => return Ok(()),
        ClockFaults::Simulated => anyhow::bail!(
            "--nemesis clock: --db {} has clocks only on simulated replicas: give --sim-replicas N",
            args.db
        ),
        ClockFaults::Libfaketime => {}
    }
    if args.url.is_some() && !on_nodes {
        anyhow::bail!(
            "--nemesis clock: behind --url the server runs already; clock faults need a server harness starts under libfaketime (--local or --nodes)"
        );
    }
    if !on_nodes && !nemesis::clock::libfaketime_installed() {
        anyhow::bail!(
            "--nemesis clock: libfaketime is not installed here ({}; Debian: apt-get install libfaketime)",
            nemesis::clock::LIBFAKETIME
        );
    }
    Ok(())
}

/// Validates the node and fault settings of `spec` and returns the
/// nodes of a database on nodes (`None`: not on nodes).
///
/// # Errors
/// Settings that do not fit together.
pub fn plan_nodes(args: &RunSpec) -> anyhow::Result<Option<Vec<Node>>> {
    use db_adapters::catalog::{Placement, names_where};
    let kinds = &args.faults.faults;
    // Databases behind a URL (postgres, cockroach, tidb, yugabyte) are on
    // nodes when --nodes are given.
    let on_nodes = match args.db.placement() {
        Placement::Nodes => true,
        Placement::UrlOrNodes => args.nodes.is_set(),
        Placement::Embedded => false,
    };
    let newsql = args.db.is_tarball();
    check_clock(args, on_nodes)?;
    if !on_nodes {
        if args.nodes.is_set() {
            anyhow::bail!(
                "--nodes applies to --db {} only",
                names_where(|k| k.placement() != Placement::Embedded)
            );
        }
        // A throwaway local server (no --url): kill and pause its
        // processes by pid, without root; network faults need nodes.
        let local_server = args.db.placement() == Placement::UrlOrNodes && args.url.is_none();
        // Simulated replicas (--sim-replicas): the faults the simulator models.
        let simulated = args.sim_replicas.is_some() && args.db.has_bug_modes();
        if simulated {
            if let Some(k) = kinds.iter().find(|k| !simulated_fault(**k)) {
                anyhow::bail!(
                    "--nemesis {k}: not simulated; --db sim --sim-replicas simulates partition, kill, pause, part-kill, pause-kill and clock"
                );
            }
        } else if let Some(k) = kinds.iter().find(|k| k.needs_membership())
            && local_server
        {
            anyhow::bail!(
                "--nemesis {k}: --db {} --local has no membership changes (a member set fixed at start); run it on --nodes with --db {}",
                args.db,
                names_where(|k| k.capabilities().membership)
            );
        } else if let Some(k) = kinds
            .iter()
            .find(|k| !local_server || k.needs_network() || k.needs_membership())
        {
            anyhow::bail!(
                "--nemesis {k} needs a database on --nodes ({}){}",
                names_where(|k| k.placement() != Placement::Embedded),
                if local_server {
                    "; on the local server only kill, pause, pause-kill and clock"
                } else if args.db.has_bug_modes() {
                    "; --db sim simulates nodes with --sim-replicas N"
                } else {
                    ""
                }
            );
        }
        if args.faults.replica_reads {
            anyhow::bail!(
                "--replica-reads applies to --db {} with --nodes only",
                names_where(|k| k.capabilities().replicas)
            );
        }
        return Ok(None);
    }
    if !args.nodes.is_set() {
        anyhow::bail!("--db {} needs --nodes (n1,n2,… or testbed)", args.db);
    }
    if let Some(k) = kinds.iter().find(|k| k.needs_membership())
        && !args.db.capabilities().membership
    {
        anyhow::bail!(
            "--nemesis {k}: --db {} has no membership changes (supported: {} on --nodes)",
            args.db,
            names_where(|k| k.capabilities().membership)
        );
    }
    if (args.url.is_some() && !newsql) || args.local {
        anyhow::bail!("--url and --local do not combine with --nodes");
    }
    let nodes = args.nodes.planned_nodes()?.unwrap_or_default();
    let nodes = args
        .db
        .client_nodes(&args.newsql, nodes)
        .map_err(anyhow::Error::msg)?;
    let min = args.db.min_nodes();
    if nodes.len() < min {
        anyhow::bail!(
            "--db {} needs at least {min} nodes, got {}",
            args.db,
            nodes.len()
        );
    }
    Ok(Some(nodes))
}

/// Connects to the nodes of `args`, asks the catalog for the database's
/// lifecycle and client factory there, and sets it up. The inner error is
/// a setup failure (exit 4); the outer one a setting that does not fit.
///
/// # Errors
/// As [`Cluster::start`].
pub async fn open_cluster(
    args: &RunSpec,
    settings: &DbSettings,
    run_dir: &Path,
) -> anyhow::Result<Result<Cluster, String>> {
    let remotes = match args.nodes.connect_first(args.db.max_nodes()).await {
        Ok(r) => r,
        Err(e) => return Ok(Err(format!("{e:#}"))),
    };
    let opened = match args.db.lifecycle(settings, remotes.clone()) {
        Ok(o) => o,
        Err(e) => {
            for r in &remotes {
                r.close().await;
            }
            return match e {
                OpenError::Spec(m) => Err(anyhow::Error::msg(m)),
                OpenError::Setup(m) => Ok(Err(m)),
            };
        }
    };
    let started = Cluster::start(opened.db, remotes, opened.factory, &args.faults, run_dir).await;
    Ok(started.map_err(|e| format!("{e:#}")))
}

/// Removes this process's own control-socket directory (never the
/// testbed's, which other runs share).
fn remove_control_dir(ssh: &SshConfig) {
    if ssh.control_dir == SshConfig::new().control_dir {
        let _ = std::fs::remove_dir_all(&ssh.control_dir);
    }
}

/// A database running on nodes for one test.
pub struct Cluster {
    /// The lifecycle.
    pub db: Arc<dyn Db>,
    /// One remote per node.
    pub remotes: Vec<Arc<dyn Remote>>,
    /// Fault injector over the nodes.
    pub nemesis: Arc<FaultNemesis>,
    /// Client factory.
    pub factory: Arc<dyn ClientFactory>,
    leave_running: bool,
    /// The teardown at an exit that skips [`Cluster::finish`] (`at_exit`).
    _at_exit: db_adapters::exit_cleanup::Registration,
}

impl Cluster {
    /// Heals stale faults and sets `db` up (retried) on `remotes`, which
    /// are connected already.
    ///
    /// # Errors
    /// Anything that keeps the database from serving; the caller exits 4.
    pub async fn start(
        db: Arc<dyn Db>,
        remotes: Vec<Arc<dyn Remote>>,
        factory: Arc<dyn ClientFactory>,
        faults: &FaultSpec,
        run_dir: &Path,
    ) -> anyhow::Result<Cluster> {
        let nemesis = Arc::new(
            FaultNemesis::new(remotes.clone(), db.process()).with_membership(db.membership()),
        );
        nemesis
            .heal_partitions()
            .await
            .context("removing partition rules left by an earlier run")?;
        let _at_exit = at_exit::register(db.clone(), remotes.clone(), faults.leave_db_running);
        let t = Instant::now();
        if let Err(e) = setup_with_retry(db.as_ref(), 3).await {
            for p in collect_logs(db.as_ref(), run_dir).await {
                tracing::warn!("collecting logs after the failed setup: {p}");
            }
            let _ = db.teardown().await;
            return Err(e.into());
        }
        tracing::info!(
            "{} set up on {} nodes in {:?}",
            db.name(),
            remotes.len(),
            t.elapsed()
        );
        Ok(Cluster {
            db,
            remotes,
            nemesis,
            factory,
            leave_running: faults.leave_db_running,
            _at_exit,
        })
    }

    /// Heals everything (idempotent), collects logs into
    /// `<run_dir>/nodes/<node>/`, tears the database down unless
    /// `--leave-db-running`, closes SSH connections.
    pub async fn finish(self, run_dir: &Path) {
        if let Err(e) = self.nemesis.heal_all().await {
            tracing::error!("healing faults: {e}");
            eprintln!("warning: healing faults failed: {e}");
        }
        for p in collect_logs(self.db.as_ref(), run_dir).await {
            tracing::warn!("collecting logs: {p}");
        }
        if !self.leave_running
            && let Err(e) = self.db.teardown().await
        {
            tracing::warn!("teardown: {e}");
        }
        for r in &self.remotes {
            r.close().await;
        }
        remove_control_dir(&SshConfig::new());
    }
}

/// The runner's fault hook: the cluster's nemesis, or none.
///
/// # Errors
/// `--partition primaries` for a database without primaries.
pub fn nemesis_for(
    cluster: Option<&Cluster>,
    local: Option<Arc<FaultNemesis>>,
    faults: &FaultSpec,
    seed: u64,
    log: &SharedLog,
) -> anyhow::Result<Box<dyn runner::Nemesis>> {
    Ok(match (cluster, local) {
        (Some(c), _) => Box::new(ClusterNemesis::start(c, faults, seed, log)?),
        (None, Some(n)) if !faults.faults.is_empty() => {
            Box::new(ClusterNemesis::start_local(n, faults, seed, log)?)
        }
        _ => Box::new(runner::NoNemesis),
    })
}

/// Whether the simulator's replicas model fault package `k`.
fn simulated_fault(k: FaultKind) -> bool {
    matches!(
        k,
        FaultKind::Partition
            | FaultKind::Kill
            | FaultKind::Pause
            | FaultKind::PartKill
            | FaultKind::PauseKill
            | FaultKind::Clock
    )
}

/// The nemesis of simulated nodes (`--sim-replicas`): kills and pauses go to
/// `faults.process`, partitions and clocks to `faults.network`, in process.
pub fn simulated_nemesis(
    nodes: &[Node],
    faults: db_adapters::client::InProcessFaults,
) -> Arc<FaultNemesis> {
    let remotes = nodes
        .iter()
        .map(|n| Arc::new(nemesis::remote::LocalRemote::new(n.clone())) as Arc<dyn Remote>)
        .collect();
    Arc::new(
        FaultNemesis::new(remotes, Some(faults.process)).with_simulated_network(faults.network),
    )
}

/// The nemesis of a throwaway local server: one node (`local`) whose
/// processes `process` kills, starts, pauses and resumes.
pub fn local_nemesis(process: Arc<dyn nemesis::process::Process>) -> Arc<FaultNemesis> {
    let remote: Arc<dyn Remote> = Arc::new(nemesis::remote::LocalRemote::new(Node::local()));
    Arc::new(FaultNemesis::new(vec![remote], Some(process)))
}

/// The runner's fault hook for a cluster: runs the nemesis loop during the
/// main phase; `heal` stops it, heals everything and waits for the database
/// to serve again.
pub struct ClusterNemesis {
    stop: Option<watch::Sender<bool>>,
    task: Option<JoinHandle<Result<(), nemesis::fault::FaultError>>>,
    nemesis: Arc<FaultNemesis>,
    /// Waited for after the heal (`None`: a local server, ready once started).
    db: Option<Arc<dyn Db>>,
    heal_timeout: Duration,
}

impl ClusterNemesis {
    /// Starts the composed packages over `cluster` (no task for `--nemesis none`).
    ///
    /// # Errors
    /// A package the database or nodes cannot honour (`--partition
    /// primaries` without primaries, a target node not in the test, …).
    pub fn start(
        cluster: &Cluster,
        faults: &FaultSpec,
        seed: u64,
        log: &SharedLog,
    ) -> anyhow::Result<ClusterNemesis> {
        let names: Vec<String> = cluster
            .remotes
            .iter()
            .map(|r| r.node().name.clone())
            .collect();
        let primaries: Vec<String> = cluster.db.primaries().into_iter().map(|n| n.name).collect();
        Self::spawn(
            cluster.nemesis.clone(),
            Some(cluster.db.clone()),
            cluster.db.name(),
            names,
            primaries,
            faults,
            seed,
            log,
        )
    }

    /// Starts the composed packages over a local server's nemesis.
    ///
    /// # Errors
    /// A package the local server cannot honour.
    pub fn start_local(
        nemesis: Arc<FaultNemesis>,
        faults: &FaultSpec,
        seed: u64,
        log: &SharedLog,
    ) -> anyhow::Result<ClusterNemesis> {
        let names = nemesis.nodes().into_iter().map(|n| n.name).collect();
        Self::spawn(
            nemesis,
            None,
            "the local server",
            names,
            vec![],
            faults,
            seed,
            log,
        )
    }

    #[allow(clippy::too_many_arguments)]
    fn spawn(
        nemesis: Arc<FaultNemesis>,
        db: Option<Arc<dyn Db>>,
        db_name: &str,
        names: Vec<String>,
        primaries: Vec<String>,
        faults: &FaultSpec,
        seed: u64,
        log: &SharedLog,
    ) -> anyhow::Result<ClusterNemesis> {
        let plan = Plan {
            kinds: faults.faults.clone(),
            options: faults.options.clone(),
            nodes: names,
            primaries,
            seed: seed ^ 0x006e_656d_6573_6973,
        };
        package::validate(
            &plan,
            nemesis.has_process(),
            nemesis.has_membership(),
            db_name,
        )?;
        package::validate_clock(&plan, nemesis.has_clock(), db_name)?;
        let mut me = ClusterNemesis {
            stop: None,
            task: None,
            nemesis: nemesis.clone(),
            db,
            heal_timeout: faults.heal_timeout,
        };
        if !plan.kinds.is_empty() {
            let (tx, rx) = watch::channel(false);
            let recorder: Arc<dyn Recorder> = Arc::new(log.clone());
            me.task = Some(tokio::spawn(package::run(nemesis, plan, recorder, rx)));
            me.stop = Some(tx);
        }
        Ok(me)
    }

    async fn heal_inner(&mut self) -> anyhow::Result<()> {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(true);
        }
        if let Some(task) = self.task.take() {
            match task.await {
                Ok(Ok(())) => {}
                Ok(Err(e)) => tracing::warn!("nemesis loop's final heal: {e}"),
                Err(e) => tracing::warn!("nemesis task: {e}"),
            }
        }
        // Idempotent safety net (also when the loop's own heal failed).
        self.nemesis.heal_all().await.context("healing faults")?;
        let Some(db) = &self.db else {
            return Ok(());
        };
        let t = Instant::now();
        db.await_ready(self.heal_timeout)
            .await
            .map_err(|e: DbError| anyhow::anyhow!("database did not recover after healing: {e}"))?;
        tracing::info!(
            "{} serving again {:?} after the heal",
            db.name(),
            t.elapsed()
        );
        Ok(())
    }
}

impl runner::Nemesis for ClusterNemesis {
    fn heal(&mut self) -> BoxFuture<'_, anyhow::Result<()>> {
        Box::pin(self.heal_inner())
    }
}
