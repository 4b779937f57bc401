//! The `Db` trait: a database's lifecycle on its nodes — setup, teardown,
//! log files, primaries — and the capabilities the nemesis acts on:
//! [`Process`] (kill, start, pause, resume) and [`Membership`] (a node
//! leaves the cluster, joins it again).
//!
//! Every command runs through a [`Remote`] (SSH for cluster nodes, local for
//! `--local`), so the same lifecycle code serves both. Helpers here run the
//! generic parts: connecting to every node (an unreachable node is reported
//! by name before anything starts), setup with retries, and collecting
//! node logs into `<run>/nodes/<node>/`. In the crate root: every
//! lifecycle on nodes implements it; [`Servers`] and [`LossyConfig`] serve
//! PostgreSQL's and MariaDB's alike.

use crate::client::BoxFuture;
use nemesis::Node;
use nemesis::membership::Membership;
use nemesis::process::Process;
use nemesis::remote::{Remote, RemoteError, shell_quote};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// A lifecycle step that failed. Every variant names the node.
#[derive(Debug, thiserror::Error)]
pub enum DbError {
    /// A command on a node failed or the node is unreachable.
    #[error(transparent)]
    Remote(#[from] RemoteError),
    /// Software the database needs is missing on a node.
    #[error("node {node}: {what} not found; install it with: apt-get install -y {packages}")]
    Missing {
        /// Node name.
        node: String,
        /// What is missing.
        what: String,
        /// Packages to install.
        packages: String,
    },
    /// The database did not become ready in time.
    #[error("node {node}: {db} not ready after {waited_ms} ms: {detail}")]
    NotReady {
        /// Node name.
        node: String,
        /// Database name.
        db: String,
        /// How long we waited.
        waited_ms: u128,
        /// Last observed state.
        detail: String,
    },
    /// A setup step failed.
    #[error("node {node}: {step}: {detail}")]
    Step {
        /// Node name.
        node: String,
        /// The step.
        step: String,
        /// What went wrong.
        detail: String,
    },
    /// The topology does not suit the database (e.g. no nodes).
    #[error("{0}")]
    Topology(String),
    /// Several errors (one per node).
    #[error("{}", .0.iter().map(|e| e.to_string()).collect::<Vec<_>>().join("; "))]
    Many(Vec<DbError>),
}

/// A log file on a node and the name it gets in the run directory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogFile {
    /// Path on the node.
    pub remote_path: String,
    /// File name under `nodes/<node>/`.
    pub local_name: String,
}

/// A log file a database keeps on its nodes, as its catalog entry lists it
/// (`Database::log_files`): where it is under the database's directory on
/// the node, what it is called under `nodes/<node>/` of the run, and on
/// which nodes it exists.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NodeLog {
    /// Path under the database's directory on the node.
    pub path: &'static str,
    /// File name under `nodes/<node>/`.
    pub local: &'static str,
    /// Only on nodes that run this daemon (`None`: every node).
    pub daemon: Option<&'static str>,
}

impl NodeLog {
    /// A log on every node, named `local` in the run directory.
    pub const fn every_node(path: &'static str, local: &'static str) -> NodeLog {
        NodeLog {
            path,
            local,
            daemon: None,
        }
    }

    /// A log only on nodes running `daemon`.
    pub const fn of_daemon(
        daemon: &'static str,
        path: &'static str,
        local: &'static str,
    ) -> NodeLog {
        NodeLog {
            path,
            local,
            daemon: Some(daemon),
        }
    }
}

/// The log files of `logs` that exist on a node whose database directory
/// is `dir` and which runs the daemons `runs` says it runs.
pub fn node_logs(logs: &[NodeLog], dir: &str, runs: impl Fn(&str) -> bool) -> Vec<LogFile> {
    logs.iter()
        .filter(|l| l.daemon.is_none_or(&runs))
        .map(|l| LogFile {
            remote_path: format!("{dir}/{}", l.path),
            local_name: l.local.to_string(),
        })
        .collect()
}

/// The remote of the node named `node` among `remotes` (what every
/// lifecycle's [`Db::remote`] is).
pub fn remote_named(remotes: &[Arc<dyn Remote>], node: &str) -> Option<Arc<dyn Remote>> {
    remotes.iter().find(|r| r.node().name == node).cloned()
}

/// A database's lifecycle on its nodes.
pub trait Db: Send + Sync {
    /// Short name (`galera`, `mariadb`, `postgres`).
    fn name(&self) -> &'static str;

    /// The nodes it runs on, in test order.
    fn nodes(&self) -> Vec<Node>;

    /// The remote for `node`.
    fn remote(&self, node: &str) -> Option<Arc<dyn Remote>>;

    /// Installs, configures and starts the database on every node (in
    /// parallel where the database allows); returns when it serves clients.
    /// Removes any data of an earlier run first.
    ///
    /// # Errors
    /// [`DbError`] naming the node.
    fn setup(&self) -> BoxFuture<'_, Result<(), DbError>>;

    /// Stops the database on every node and removes its data (idempotent).
    ///
    /// # Errors
    /// [`DbError`] naming the node.
    fn teardown(&self) -> BoxFuture<'_, Result<(), DbError>>;

    /// Log files worth keeping from `node`.
    fn log_files(&self, node: &Node) -> Vec<LogFile>;

    /// Nodes that are primaries (empty when every node is equal).
    fn primaries(&self) -> Vec<Node>;

    /// The settings harness imposes on the servers it starts (`key`,
    /// `value`, in the order they are applied; `--db-conf` lines
    /// included), for the run record: a loss that a setting permits (e.g.
    /// `innodb_flush_log_at_trx_commit=2`) is then not blamed on the
    /// database. Per-node paths and addresses are left out.
    fn settings(&self) -> Vec<(String, String)>;

    /// Nodes clients connect to (spread workers over them).
    fn client_nodes(&self) -> Vec<Node>;

    /// Kill/start/pause/resume of the database processes, if supported.
    fn process(&self) -> Option<Arc<dyn Process>>;

    /// Removing nodes from the cluster and adding them back, if supported
    /// (`--nemesis membership`).
    fn membership(&self) -> Option<Arc<dyn Membership>>;

    /// Waits until the database serves clients again after faults (used
    /// before the final reads).
    ///
    /// # Errors
    /// [`DbError::NotReady`] when it does not recover within `limit`.
    fn await_ready(&self, limit: Duration) -> BoxFuture<'_, Result<(), DbError>>;
}

/// The lossy filesystem (`--lazyfs`) under a replicated server's data
/// directories: here because PostgreSQL's and MariaDB's lifecycles both
/// mount it.
#[derive(Clone, Debug)]
pub struct LossyConfig {
    /// The harness binary on the nodes (it runs the filesystem daemon).
    pub binary: String,
    /// Cache limit per node, MiB.
    pub cache_mib: u64,
    /// Strict mode (`--lazyfs-strict`): un-synced creates, renames and
    /// unlinks are lost too.
    pub strict: bool,
}

/// The settings of a one-server-per-node database: where on each node
/// its servers keep their directories.
pub trait ServerConfig: Send + Sync + 'static {
    /// The directory under which each node's server has its own.
    fn base_dir(&self) -> &str;
}

/// The servers of a one-server-per-node database installed from the
/// system's packages (PostgreSQL, MariaDB/Galera): its settings and one
/// remote per node, in test order.
pub struct Servers<C> {
    pub(crate) cfg: C,
    pub(crate) remotes: Vec<Arc<dyn Remote>>,
}

impl<C: ServerConfig> Servers<C> {
    /// Servers with `cfg` on the nodes of `remotes`.
    pub fn new(cfg: C, remotes: Vec<Arc<dyn Remote>>) -> Servers<C> {
        Servers { cfg, remotes }
    }

    /// One remote per node, in test order.
    pub fn remotes(&self) -> &[Arc<dyn Remote>] {
        &self.remotes
    }

    /// The nodes, in test order.
    pub fn nodes(&self) -> Vec<Node> {
        self.remotes.iter().map(|r| r.node().clone()).collect()
    }

    /// The remote of `node`.
    ///
    /// # Errors
    /// [`DbError::Topology`] for a node that is not one of them.
    pub fn remote(&self, node: &Node) -> Result<&Arc<dyn Remote>, DbError> {
        self.remotes
            .iter()
            .find(|r| r.node().name == node.name)
            .ok_or_else(|| DbError::Topology(format!("unknown node {}", node.name)))
    }

    /// The server's directory on `node`.
    pub fn node_dir(&self, node: &Node) -> String {
        let base = self.cfg.base_dir().trim_end_matches('/');
        format!("{base}/{}", node.name)
    }

    /// `node`'s libfaketime control file for clock faults (in its
    /// directory, so a restart keeps the node's offset).
    pub fn clock_path(&self, node: &Node) -> String {
        format!("{}/faketime.rc", self.node_dir(node))
    }

    /// For a server started under libfaketime: checks the library on
    /// `node` and writes its control file at `+0.000` (after the node
    /// directory was made anew).
    ///
    /// # Errors
    /// [`DbError::Missing`] without libfaketime there; the remote's errors.
    pub async fn prepare_clock_file(&self, node: &Node) -> Result<(), DbError> {
        use nemesis::clock::node as clock_node;
        let r = self.remote(node)?;
        let out = r
            .exec(
                &clock_node::installed_check_sh(),
                None,
                std::time::Duration::from_secs(10),
            )
            .await?;
        if !out.success() {
            return Err(DbError::Missing {
                node: node.name.clone(),
                what: format!("libfaketime ({})", nemesis::clock::LIBFAKETIME),
                packages: "libfaketime".to_string(),
            });
        }
        let reset =
            clock_node::reset_command(&self.clock_path(node)).map_err(|e| DbError::Step {
                node: node.name.clone(),
                step: "clock control file".to_string(),
                detail: e.to_string(),
            })?;
        r.run(&reset).await?;
        Ok(())
    }

    /// On every node, kill the servers and remove the node's directory;
    /// every node's error is reported ([`Db::teardown`]).
    pub async fn teardown_all(&self) -> Result<(), DbError>
    where
        Servers<C>: ServerSteps,
    {
        let mut errs = Vec::new();
        for r in &self.remotes {
            let n = r.node();
            if let Err(e) = self.kill_servers(n).await {
                errs.push(e);
                continue;
            }
            if let Err(e) = self.release_node(n).await {
                errs.push(e);
                continue;
            }
            let rm = format!("rm -rf {}", shell_quote(&self.node_dir(n)));
            if let Err(e) = r.run(&rm).await {
                errs.push(e.into());
            }
        }
        join_errors(errs)
    }
}

/// The steps of one kind of [`Servers`] over all its nodes.
pub trait ServerSteps: Process + Send + Sync + 'static {
    /// As [`Db::setup`].
    fn setup(&self) -> BoxFuture<'_, Result<(), DbError>>;
    /// Kills the servers on `node` (teardown's first step there).
    fn kill_servers<'a>(&'a self, node: &'a Node) -> BoxFuture<'a, Result<(), DbError>>;
    /// As [`Db::await_ready`].
    fn await_ready(&self, limit: Duration) -> BoxFuture<'_, Result<(), DbError>>;
    /// Teardown's step between killing the servers on `node` and removing
    /// its directory (unmounting what the lifecycle mounted there).
    fn release_node<'a>(&'a self, _node: &'a Node) -> BoxFuture<'a, Result<(), DbError>> {
        Box::pin(async { Ok(()) })
    }
}

/// A database of [`ServerSteps`]: what differs beyond the steps. Every
/// such type is a [`Db`] through them.
pub trait NodeServers: Send + Sync {
    /// The settings of its servers.
    type Config: ServerConfig;
    /// Its servers.
    fn steps(&self) -> &Arc<Servers<Self::Config>>;
    /// Short name (`postgres`, `galera`, `mariadb`).
    fn server_name(&self) -> &'static str;
    /// The log files kept from each node (its catalog entry's).
    fn logs(&self) -> &'static [NodeLog];
    /// Nodes that are primaries (empty when every node is equal).
    fn primary_nodes(&self) -> Vec<Node>;
    /// Nodes clients connect to.
    fn serving_nodes(&self) -> Vec<Node>;
    /// Its membership control, if it has one ([`Db::membership`]).
    fn membership(&self) -> Option<Arc<dyn Membership>>;
    /// What [`Db::settings`] records.
    fn imposed_settings(&self) -> Vec<(String, String)>;
}

/// `key=value` (or `key = value`) lines of a configuration file as
/// settings, section headers, comments and bare flags left out; quotes
/// around a value are kept as written.
pub fn conf_lines(text: &str) -> Vec<(String, String)> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#') && !l.starts_with('['))
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect()
}

impl<T: NodeServers> Db for T
where
    Servers<T::Config>: ServerSteps,
{
    fn name(&self) -> &'static str {
        self.server_name()
    }
    fn nodes(&self) -> Vec<Node> {
        let remotes = self.steps().remotes();
        remotes.iter().map(|r| r.node().clone()).collect()
    }
    fn remote(&self, node: &str) -> Option<Arc<dyn Remote>> {
        remote_named(self.steps().remotes(), node)
    }
    fn settings(&self) -> Vec<(String, String)> {
        self.imposed_settings()
    }
    fn setup(&self) -> BoxFuture<'_, Result<(), DbError>> {
        self.steps().setup()
    }
    fn teardown(&self) -> BoxFuture<'_, Result<(), DbError>> {
        Box::pin(self.steps().teardown_all())
    }
    fn log_files(&self, node: &Node) -> Vec<LogFile> {
        node_logs(self.logs(), &self.steps().node_dir(node), |_| true)
    }
    fn primaries(&self) -> Vec<Node> {
        self.primary_nodes()
    }
    fn client_nodes(&self) -> Vec<Node> {
        self.serving_nodes()
    }
    fn process(&self) -> Option<Arc<dyn Process>> {
        Some(self.steps().clone())
    }
    fn membership(&self) -> Option<Arc<dyn Membership>> {
        NodeServers::membership(self)
    }
    fn await_ready(&self, limit: Duration) -> BoxFuture<'_, Result<(), DbError>> {
        self.steps().await_ready(limit)
    }
}

/// Joins per-node results: `Ok` when all are, else every error.
pub fn join_errors(mut errs: Vec<DbError>) -> Result<(), DbError> {
    match errs.len() {
        0 => Ok(()),
        1 => Err(errs.remove(0)),
        _ => Err(DbError::Many(errs)),
    }
}

/// Opens a connection to every remote in parallel; every node that cannot be
/// reached (or where the login fails) is reported, by name.
///
/// # Errors
/// All the nodes' errors.
pub async fn connect_all(remotes: &[Arc<dyn Remote>]) -> Result<(), DbError> {
    let mut set = tokio::task::JoinSet::new();
    for (i, r) in remotes.iter().enumerate() {
        let r = r.clone();
        set.spawn(async move { (i, r.connect().await) });
    }
    let mut errs: Vec<(usize, DbError)> = Vec::new();
    while let Some(j) = set.join_next().await {
        match j {
            Ok((_, Ok(()))) => {}
            Ok((i, Err(e))) => errs.push((i, e.into())),
            Err(e) => errs.push((usize::MAX, DbError::Topology(format!("connect task: {e}")))),
        }
    }
    errs.sort_by_key(|(i, _)| *i);
    join_errors(errs.into_iter().map(|(_, e)| e).collect())
}

/// Runs `db.setup()` up to `attempts` times, tearing down between attempts
/// (Jepsen retries setup too: a first SST or initdb can fail transiently).
///
/// # Errors
/// The last attempt's error.
pub async fn setup_with_retry(db: &dyn Db, attempts: u32) -> Result<(), DbError> {
    let mut last = None;
    for attempt in 1..=attempts.max(1) {
        match db.setup().await {
            Ok(()) => return Ok(()),
            Err(e) => {
                tracing::warn!("{} setup attempt {attempt} failed: {e}", db.name());
                last = Some(e);
                if attempt < attempts {
                    if let Err(t) = db.teardown().await {
                        tracing::warn!("{} teardown after failed setup: {t}", db.name());
                    }
                    tokio::time::sleep(Duration::from_millis(500)).await;
                }
            }
        }
    }
    Err(last.unwrap_or_else(|| DbError::Topology("setup never ran".to_string())))
}

/// Copies every node's log files into `<run_dir>/nodes/<node>/`. Best
/// effort: returns the problems (a missing log is not fatal).
pub async fn collect_logs(db: &dyn Db, run_dir: &Path) -> Vec<String> {
    let mut problems = Vec::new();
    for node in db.nodes() {
        let Some(remote) = db.remote(&node.name) else {
            continue;
        };
        let dir = run_dir.join("nodes").join(&node.name);
        if let Err(e) = std::fs::create_dir_all(&dir) {
            problems.push(format!("creating {}: {e}", dir.display()));
            continue;
        }
        for f in db.log_files(&node) {
            let local = dir.join(&f.local_name);
            if let Err(e) = remote.download(&f.remote_path, &local).await {
                problems.push(e.to_string());
            }
        }
    }
    problems
}

/// Polls `check` every `every` until it returns `Ok(true)` or `limit`
/// passes; returns the last detail on timeout.
pub(crate) async fn poll<F, Fut>(
    limit: Duration,
    every: Duration,
    mut check: F,
) -> Result<(), String>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<bool, String>>,
{
    let start = std::time::Instant::now();
    loop {
        let last = match check().await {
            Ok(true) => return Ok(()),
            Ok(false) => "not ready yet".to_string(),
            Err(e) => e,
        };
        if start.elapsed() >= limit {
            return Err(last);
        }
        tokio::time::sleep(every).await;
    }
}
