//! PostgreSQL on nodes: a primary (the first node) and streaming replicas
//! (every other node), made with `initdb`, `pg_basebackup -R` and `pg_ctl`,
//! run as the `postgres` user through `runuser` (PostgreSQL refuses root).
//! Clients use the primary; [`ReplicaReadsFactory`] sends read-only
//! transactions to a replica instead (`--replica-reads`, to expose stale
//! reads).
//!
//! Each node keeps everything under `<base>/<node>/` (data, socket dir —
//! never inside the data dir, `pg_basebackup` would copy its lock —, log).
//! `recovery_init_sync_method = syncfs` makes a restart after SIGKILL take
//! ~0.2 s instead of seconds of fsync.
//!
//! With [`PgClusterConfig::lossy`] (`--lazyfs`) each node's data directory
//! is the lossy filesystem (`nemesis::lossy`), mounted before `initdb` /
//! `pg_basebackup` and checkpointed once every node serves; a kill is
//! followed by losing the un-synced writes. Under it PostgreSQL uses
//! `recovery_init_sync_method = fsync` (`syncfs` never reaches a FUSE
//! filesystem: after a crash PostgreSQL would believe un-synced files
//! durable) and POSIX shared memory (shared `mmap` is refused there). The
//! mounts are undone before the node directory is removed, and a stale
//! one from a crashed run is cleared at the next setup.
//!
//! Replica removal and re-addition (`--nemesis membership`) are in
//! [`membership`]; the primary is never removed. Clock faults (servers
//! under libfaketime) are in [`clock`].

use crate::client::{BoxFuture, Client, ClientError, ClientFactory};
use crate::db::{
    DbError, LossyConfig, NodeLog, NodeServers, ServerConfig, ServerSteps, Servers, join_errors,
    poll,
};
use nemesis::Node;
use nemesis::lossy;
use nemesis::lossyfs::ctl::{Command, Reply};
use nemesis::process::{Process, ProcessError};
use nemesis::remote::{Remote, shell_quote};
use std::sync::Arc;
use std::time::Duration;
use store::MicroOp;

mod clock;
mod conf;
mod membership;

/// The server log of every node (the catalog's `log_files`).
pub const LOGS: &[NodeLog] = &[NodeLog::every_node("postgres.log", "postgresql.log")];

/// Settings of a PostgreSQL deployment on nodes.
#[derive(Clone, Debug)]
pub struct PgClusterConfig {
    /// Directory on each node under which `<node>/` is created.
    pub base_dir: String,
    /// Server port.
    pub port: u16,
    /// Limit for one server to start.
    pub start_timeout: Duration,
    /// Mount each data directory on the lossy filesystem.
    pub lossy: Option<LossyConfig>,
    /// Extra `postgresql.conf` lines (`synchronous_commit = off`).
    pub extra_conf: Vec<String>,
    /// Clock faults are asked for: every server runs under libfaketime
    /// (`cluster/clock.rs`).
    pub clock: bool,
}

impl Default for PgClusterConfig {
    fn default() -> Self {
        PgClusterConfig {
            base_dir: "/var/lib/harness/postgres".to_string(),
            port: 5432,
            start_timeout: Duration::from_secs(60),
            lossy: None,
            extra_conf: Vec::new(),
            clock: false,
        }
    }
}

/// The servers of a [`PgCluster`]: its settings and one remote per node.
pub type PgServers = Servers<PgClusterConfig>;

impl ServerConfig for PgClusterConfig {
    fn base_dir(&self) -> &str {
        &self.base_dir
    }
}

/// PostgreSQL primary + streaming replicas.
#[derive(Clone)]
pub struct PgCluster {
    inner: Arc<PgServers>,
}

/// Finds the newest server binaries on the node.
const BIN: &str = "$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)";

impl Servers<PgClusterConfig> {
    fn primary(&self) -> Option<Node> {
        self.remotes.first().map(|r| r.node().clone())
    }
    fn listen(node: &Node) -> String {
        if node.host.parse::<std::net::IpAddr>().is_ok() {
            node.host.clone()
        } else {
            "*".to_string()
        }
    }

    async fn pg(&self, node: &Node, tool_cmd: &str, timeout: Duration) -> Result<String, DbError> {
        let r = self.remote(node)?;
        let cmd = format!("cd /tmp && B={BIN} && runuser -u postgres -- {tool_cmd}");
        Ok(r.run_timeout(&cmd, timeout).await?.stdout_str())
    }

    fn data_dir(&self, node: &Node) -> String {
        format!("{}/data", self.node_dir(node))
    }

    /// Runs a lossy-filesystem command on every node (no-op without it).
    async fn lossy_each(&self, cmd: impl Fn(&LossyConfig, &str) -> String) -> Result<(), DbError> {
        let Some(l) = &self.cfg.lossy else {
            return Ok(());
        };
        let mut errs = Vec::new();
        for r in &self.remotes {
            let c = cmd(l, &self.data_dir(r.node()));
            if let Err(e) = r.run_timeout(&c, Duration::from_secs(60)).await {
                errs.push(DbError::from(e));
            }
        }
        join_errors(errs)
    }

    async fn check_installed(&self, r: &Arc<dyn Remote>) -> Result<(), DbError> {
        let out = r
            .exec(
                &format!("B={BIN}; test -x \"$B/initdb\" && test -x \"$B/pg_ctl\" && id postgres >/dev/null"),
                None,
                Duration::from_secs(10),
            )
            .await?;
        if out.success() {
            Ok(())
        } else {
            Err(DbError::Missing {
                node: r.node().name.clone(),
                what: "PostgreSQL server binaries (/usr/lib/postgresql/*/bin) or the postgres user"
                    .to_string(),
                packages: "postgresql".to_string(),
            })
        }
    }

    async fn start_node(&self, node: &Node) -> Result<(), DbError> {
        let d = self.node_dir(node);
        let r = self.remote(node)?;
        let (before, preload) = self.clock_words(node);
        let cmd = format!(
            "cd /tmp && B={BIN} && if runuser -u postgres -- $B/pg_ctl -D {d}/data status >/dev/null 2>&1; then exit 0; fi; \
             {before}runuser -u postgres -- {preload}$B/pg_ctl -D {d}/data -l {d}/postgres.log -W start >/dev/null"
        );
        r.run(&cmd).await?;
        Ok(())
    }

    async fn signal_all(&self, node: &Node, signal: &str, wait_gone: bool) -> Result<(), DbError> {
        let d = self.node_dir(node);
        let r = self.remote(node)?;
        // Stop the postmaster first so it cannot fork while its children are
        // signalled; then the children, then the postmaster itself.
        let wait = if wait_gone {
            format!(
                "{} && exit 0; exit 1",
                nemesis::process::wait_gone_sh("$P $CH", 10)
            )
        } else {
            "exit 0".to_string()
        };
        let first = if signal == "CONT" { "CONT" } else { "STOP" };
        let cmd = format!(
            "P=$(head -1 {d}/data/postmaster.pid 2>/dev/null); [ -n \"$P\" ] && [ -e /proc/$P ] || exit 0; \
             kill -{first} $P; CH=$(pgrep -P $P); [ -n \"$CH\" ] && kill -{signal} $CH; kill -{signal} $P; {wait}"
        );
        let out = r.exec(&cmd, None, Duration::from_secs(30)).await?;
        if out.success() {
            Ok(())
        } else {
            Err(DbError::Step {
                node: node.name.clone(),
                step: format!("SIG{signal}"),
                detail: format!("postgres processes still alive: {}", out.stderr_str()),
            })
        }
    }

    async fn serving(&self, node: &Node) -> Result<bool, String> {
        let d = self.node_dir(node);
        self.pg(
            node,
            &format!(
                "$B/psql -h {d}/sock -p {} -U postgres -Atc 'select 1'",
                self.cfg.port
            ),
            Duration::from_secs(10),
        )
        .await
        .map(|o| o == "1")
        .map_err(|e| e.to_string())
    }

    /// A replica on `n`: a base backup of `primary` into its (empty) data
    /// directory, its own listen address and socket, started and serving.
    async fn add_replica(&self, primary: &Node, n: &Node) -> Result<(), DbError> {
        let rd = self.node_dir(n);
        let port = self.cfg.port;
        self.pg(
            n,
            &format!(
                "$B/pg_basebackup -h {} -p {port} -U postgres -D {rd}/data -R -X stream -c fast",
                primary.host
            ),
            Duration::from_secs(300),
        )
        .await?;
        self.remote(n)?
            .run(&format!(
                "printf \"listen_addresses = '{}'\\nunix_socket_directories = '{rd}/sock'\\n\" >> {rd}/data/postgresql.conf",
                Self::listen(n)
            ))
            .await?;
        self.start_node(n).await?;
        self.wait_serving(n, self.cfg.start_timeout).await
    }

    async fn wait_serving(&self, node: &Node, limit: Duration) -> Result<(), DbError> {
        poll(limit, Duration::from_millis(100), || self.serving(node))
            .await
            .map_err(|detail| DbError::NotReady {
                node: node.name.clone(),
                db: "postgres".to_string(),
                waited_ms: limit.as_millis(),
                detail,
            })
    }
}

impl ServerSteps for Servers<PgClusterConfig> {
    fn setup(&self) -> BoxFuture<'_, Result<(), DbError>> {
        Box::pin(async move {
            let Some(primary) = self.primary() else {
                return Err(DbError::Topology(
                    "postgres needs at least one node".to_string(),
                ));
            };
            let mut errs = Vec::new();
            for r in &self.remotes {
                if let Err(e) = self.check_installed(r).await {
                    errs.push(e);
                }
            }
            join_errors(errs)?;
            self.teardown_all().await?;
            let port = self.cfg.port;
            for n in self.nodes() {
                let d = self.node_dir(&n);
                self.remote(&n)?
                .run(&format!(
                    "install -d -m 755 {base} && install -d -o postgres -g postgres -m 755 {d} {d}/sock",
                    base = shell_quote(&self.cfg.base_dir)
                ))
                .await?;
                self.prepare_clock(&n).await?;
            }
            if let Some(l) = &self.cfg.lossy {
                for r in &self.remotes {
                    nemesis::node_binary::ensure_binary(r.as_ref(), &l.binary).await?;
                }
            }
            self.lossy_each(|l, d| {
                lossy::mount_command(&l.binary, d, Some("postgres"), l.cache_mib, l.strict)
            })
            .await?;
            let d = self.node_dir(&primary);
            self.pg(
            &primary,
            &format!("$B/initdb -D {d}/data -U postgres --auth=trust -E UTF8 --locale=C.UTF-8 >{d}/initdb.log 2>&1"),
            Duration::from_secs(120),
        )
        .await?;
            let mut conf = format!(
                "listen_addresses = '{}'\nport = {port}\nunix_socket_directories = '{d}/sock'\n",
                Self::listen(&primary)
            );
            for line in self.imposed_conf() {
                conf.push_str(&line);
                conf.push('\n');
            }
            let r = self.remote(&primary)?;
            r.run(&format!(
            "cat >> {d}/data/postgresql.conf <<'EOF'\n{conf}EOF\n\
             printf 'host all all 0.0.0.0/0 trust\\nhost replication all 0.0.0.0/0 trust\\n' >> {d}/data/pg_hba.conf"
        ))
        .await?;
            self.start_node(&primary).await?;
            self.wait_serving(&primary, self.cfg.start_timeout).await?;
            for n in self.nodes().into_iter().skip(1) {
                self.add_replica(&primary, &n).await?;
            }
            // What initdb and the base backups wrote is durable: a first
            // kill must not lose the cluster itself.
            self.lossy_each(|l, d| lossy::ctl_command(&l.binary, d, &Command::Checkpoint))
                .await
        })
    }

    fn release_node<'a>(&'a self, node: &'a Node) -> BoxFuture<'a, Result<(), DbError>> {
        Box::pin(async move {
            // Always: a stale mount left by a crashed `--lazyfs` run would
            // keep the directory from being removed.
            let r = self.remote(node)?;
            r.run_timeout(
                &lossy::unmount_command(&self.data_dir(node)),
                Duration::from_secs(60),
            )
            .await?;
            Ok(())
        })
    }

    fn kill_servers<'a>(&'a self, node: &'a Node) -> BoxFuture<'a, Result<(), DbError>> {
        Box::pin(self.signal_all(node, "KILL", true))
    }

    fn await_ready(&self, limit: Duration) -> BoxFuture<'_, Result<(), DbError>> {
        Box::pin(async move {
            let nodes = self.nodes();
            for n in &nodes {
                self.start_node(n).await?;
            }
            let mut errs = Vec::new();
            for n in &nodes {
                if let Err(e) = self.wait_serving(n, limit).await {
                    errs.push(e);
                }
            }
            join_errors(errs)
        })
    }
}

fn perr(node: &Node, action: &'static str, e: DbError) -> ProcessError {
    ProcessError {
        node: node.name.clone(),
        action,
        message: e.to_string(),
    }
}

impl Process for Servers<PgClusterConfig> {
    fn clock_file(&self, node: &Node) -> Option<String> {
        self.cfg.clock.then(|| self.clock_path(node))
    }
    fn db_clock<'a>(
        &'a self,
        node: &'a Node,
    ) -> BoxFuture<'a, Result<nemesis::clock::ClockReading, ProcessError>> {
        Box::pin(async move {
            let url = format!(
                "postgres://postgres@{}:{}/postgres",
                node.host, self.cfg.port
            );
            crate::postgres::read_clock(&url)
                .await
                .map_err(|message| ProcessError {
                    node: node.name.clone(),
                    action: "clock",
                    message,
                })
        })
    }
    fn shut_down<'a>(&'a self, node: &'a Node) -> BoxFuture<'a, Result<(), ProcessError>> {
        Box::pin(async move {
            self.fast_shutdown(node)
                .await
                .map_err(|e| perr(node, "shut down", e))
        })
    }
    fn kill<'a>(&'a self, node: &'a Node) -> BoxFuture<'a, Result<(), ProcessError>> {
        Box::pin(async move {
            self.signal_all(node, "KILL", true)
                .await
                .map_err(|e| perr(node, "kill", e))
        })
    }
    fn start<'a>(&'a self, node: &'a Node) -> BoxFuture<'a, Result<(), ProcessError>> {
        Box::pin(async move {
            self.start_node(node)
                .await
                .map_err(|e| perr(node, "start", e))
        })
    }
    fn pause<'a>(&'a self, node: &'a Node) -> BoxFuture<'a, Result<(), ProcessError>> {
        Box::pin(async move {
            self.signal_all(node, "STOP", false)
                .await
                .map_err(|e| perr(node, "pause", e))
        })
    }
    fn resume<'a>(&'a self, node: &'a Node) -> BoxFuture<'a, Result<(), ProcessError>> {
        Box::pin(async move {
            self.signal_all(node, "CONT", false)
                .await
                .map_err(|e| perr(node, "resume", e))
        })
    }
    fn lossy(&self) -> bool {
        self.cfg.lossy.is_some()
    }
    fn data_files(&self) -> &'static str {
        "base"
    }
    fn lossy_ctl<'a>(
        &'a self,
        node: &'a Node,
        cmd: &'a Command,
    ) -> BoxFuture<'a, Result<Reply, ProcessError>> {
        Box::pin(async move {
            let err = |m: String| ProcessError {
                node: node.name.clone(),
                action: "lossyfs",
                message: m,
            };
            let Some(l) = &self.cfg.lossy else {
                return Err(err("not on the lossy filesystem (run with --lazyfs)".into()));
            };
            let r = self.remote(node).map_err(|e| err(e.to_string()))?;
            let c = lossy::ctl_command(&l.binary, &self.data_dir(node), cmd);
            let out = r
                .exec(&c, None, Duration::from_secs(60))
                .await
                .map_err(|e| err(e.to_string()))?;
            let reply = Reply::parse(&out.stdout_str())
                .map_err(|e| err(format!("{e}: {}", out.stderr_str())))?;
            if reply.ok {
                Ok(reply)
            } else {
                Err(err(reply.message))
            }
        })
    }
    fn lose_unsynced<'a>(
        &'a self,
        node: &'a Node,
    ) -> BoxFuture<'a, Result<Option<Reply>, ProcessError>> {
        Box::pin(async move {
            let Some(l) = &self.cfg.lossy else {
                return Ok(None);
            };
            let err = |m: String| ProcessError {
                node: node.name.clone(),
                action: "lose-unfsynced-writes",
                message: m,
            };
            let r = self.remote(node).map_err(|e| err(e.to_string()))?;
            let cmd = lossy::ctl_command(&l.binary, &self.data_dir(node), &Command::Lose);
            let out = r
                .run_timeout(&cmd, Duration::from_secs(60))
                .await
                .map_err(|e| err(e.to_string()))?;
            Reply::parse(&out.stdout_str()).map(Some).map_err(err)
        })
    }
}

impl PgCluster {
    /// PostgreSQL with `cfg`: the first remote's node is the primary.
    pub fn new(cfg: PgClusterConfig, remotes: Vec<Arc<dyn Remote>>) -> PgCluster {
        PgCluster {
            inner: Arc::new(Servers::new(cfg, remotes)),
        }
    }

    fn url(&self, node: &Node) -> String {
        format!(
            "postgres://postgres@{}:{}/postgres",
            node.host, self.inner.cfg.port
        )
    }

    /// Connection URL of the primary (empty host when there are no nodes).
    pub fn primary_url(&self) -> String {
        self.inner
            .primary()
            .map(|n| self.url(&n))
            .unwrap_or_default()
    }

    /// Connection URL of the first replica, if any.
    pub fn replica_url(&self) -> Option<String> {
        self.inner.nodes().get(1).map(|n| self.url(n))
    }
}

impl NodeServers for PgCluster {
    type Config = PgClusterConfig;
    fn steps(&self) -> &Arc<PgServers> {
        &self.inner
    }
    fn server_name(&self) -> &'static str {
        "postgres"
    }
    fn logs(&self) -> &'static [NodeLog] {
        LOGS
    }
    fn primary_nodes(&self) -> Vec<Node> {
        self.inner.primary().into_iter().collect()
    }
    fn membership(&self) -> Option<Arc<dyn nemesis::membership::Membership>> {
        Some(self.inner.clone())
    }
    fn serving_nodes(&self) -> Vec<Node> {
        self.primary_nodes()
    }
    fn imposed_settings(&self) -> Vec<(String, String)> {
        crate::db::conf_lines(&self.inner.imposed_conf().join("\n"))
    }
}

/// Sends read-only transactions to a replica and everything else to the
/// primary (`--replica-reads`). The node a worker is pinned to is ignored:
/// the two factories carry their own servers.
pub struct ReplicaReadsFactory<P, R> {
    primary: P,
    replica: R,
}

impl<P: ClientFactory, R: ClientFactory> ReplicaReadsFactory<P, R> {
    /// Writes through `primary`, read-only transactions through `replica`.
    pub fn new(primary: P, replica: R) -> Self {
        ReplicaReadsFactory { primary, replica }
    }
}

struct SplitClient {
    primary: Box<dyn Client>,
    replica: Box<dyn Client>,
}

impl Client for SplitClient {
    fn invoke<'a>(
        &'a mut self,
        txn: &'a [MicroOp],
    ) -> BoxFuture<'a, Result<Vec<MicroOp>, ClientError>> {
        if txn.iter().all(|m| matches!(m, MicroOp::Read(..))) {
            self.replica.invoke(txn)
        } else {
            self.primary.invoke(txn)
        }
    }
    fn close(self: Box<Self>) -> BoxFuture<'static, ()> {
        Box::pin(async move {
            self.primary.close().await;
            self.replica.close().await;
        })
    }
}

impl<P: ClientFactory, R: ClientFactory> ClientFactory for ReplicaReadsFactory<P, R> {
    fn setup<'a>(&'a self, node: &'a Node) -> BoxFuture<'a, Result<(), ClientError>> {
        self.primary.setup(node)
    }
    fn open<'a>(&'a self, node: &'a Node) -> BoxFuture<'a, Result<Box<dyn Client>, ClientError>> {
        Box::pin(async move {
            let primary = self.primary.open(node).await?;
            let replica = self.replica.open(node).await?;
            Ok(Box::new(SplitClient { primary, replica }) as Box<dyn Client>)
        })
    }
}
