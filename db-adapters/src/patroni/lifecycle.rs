//! Patroni-managed PostgreSQL on nodes ([`PatroniCluster`]): per node an
//! etcd member of the DCS ([`super::dcs`], an [`EtcdNodes`] of its own),
//! then Patroni, which runs `initdb` on the node that wins the
//! `/initialize` race and `pg_basebackup` on the others, and keeps one
//! primary elected through the DCS.
//!
//! Each node keeps everything under `<base>/<node>/`: `patroni.yml`,
//! `patroni.log`, `patroni.pid`, `data/` (PostgreSQL's; its socket and
//! `postgresql.log` beside it, never inside); the DCS member's files are
//! under [`super::dcs::BASE_DIR`]. Patroni runs as `postgres` (it refuses
//! root) through `runuser`, under `setsid`, its pid written by the shell
//! that `exec`s it.
//!
//! Setup is ready when exactly one node's PostgreSQL is out of recovery
//! and every other one streams from it (in the synchronous modes, one of
//! them as the sync standby): that node is [`Db::primaries`] for the run's
//! fault targets (`--kill-targets primaries`, `--partition primaries`).
//! The answer is the leader at setup; after a failover it still names the
//! first one.
//!
//! Faults ([`Process`]): `kill` and `pause` act on what `--db-conf kill=`
//! and `pause=` say ([`ProcessScope`]: Patroni + PostgreSQL, Patroni alone,
//! or PostgreSQL alone). `start` restarts Patroni where it is not running
//! (it starts, demotes or rewinds PostgreSQL itself; a killed postmaster
//! under a live Patroni is Patroni's to restart). Every process is found
//! by its pid file on the node — never by name: other PostgreSQL servers
//! may run on the same machine. etcd is left alone by faults: the DCS is
//! infrastructure, and partitions reach it anyway.
//!
//! After a heal ([`Db::await_ready`]) the cluster has recovered when one
//! node is a primary and Patroni's REST API answers on every node (past
//! its DCS at start-up, where Patroni exits when no member answers: the
//! usual case right after a partition of the DCS heals). Until then an
//! exited Patroni is started again every 2 s, each time said in the run's
//! log; an old primary with no Patroni would stay a primary beside the
//! new one (`tests/patroni_recovery.rs`).
//!
//! Teardown kills, by pid, Patroni and every process it started (a
//! replica's pg_basebackup would go on writing), then the postmaster and
//! its children, waits until they are gone and removes the node's
//! directory (`signals.rs`); then the DCS's teardown ends its members the
//! same way.

use super::dcs;
pub use super::roles::{PgRole, serving};
use super::settings::{Member, PatroniConf, ProcessScope, node_yaml};
use super::signals;
use crate::client::BoxFuture;
use crate::db::{Db, DbError, LogFile, NodeLog, join_errors, node_logs, poll, remote_named};
use crate::etcd::EtcdNodes;
use nemesis::Node;
use nemesis::process::{Process, ProcessError};
use nemesis::remote::{Remote, shell_quote};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The log files kept from every node: Patroni's and PostgreSQL's under
/// the node's directory, and the DCS member's `etcd.log` (under the DCS's
/// own directory, [`super::dcs::BASE_DIR`]).
pub const LOGS: &[NodeLog] = &[
    NodeLog::every_node("patroni.log", "patroni.log"),
    NodeLog::every_node("postgresql.log", "postgresql.log"),
    NodeLog::every_node("etcd.log", "etcd.log"),
];

/// The logs of [`LOGS`] under Patroni's node directory.
const OWN_LOGS: &[NodeLog] = &[
    NodeLog::every_node("patroni.log", "patroni.log"),
    NodeLog::every_node("postgresql.log", "postgresql.log"),
];

/// What [`PatroniCluster::start_patroni`] prints when it started Patroni.
const STARTED: &str = "patroni-started";

/// Polls (250 ms each) between restarts of an exited Patroni while waiting
/// for recovery: 2 s, a quarter of the 8 s `ttl` the tests use (the
/// default is 10 s).
const SUPERVISE_EVERY: u32 = 8;

/// Finds the newest PostgreSQL server binaries on the node.
const BIN: &str = "$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)";

/// Where and how Patroni runs.
#[derive(Clone, Debug)]
pub struct PatroniConfig {
    /// Directory on each node under which `<node>/` is created.
    pub base_dir: String,
    /// PostgreSQL's port.
    pub port: u16,
    /// Patroni's REST port.
    pub rest_port: u16,
    /// Limit for the cluster to elect a leader and stream at setup.
    pub start_timeout: Duration,
    /// Patroni's settings (`--db-conf`).
    pub conf: PatroniConf,
}

impl Default for PatroniConfig {
    fn default() -> PatroniConfig {
        PatroniConfig {
            base_dir: "/var/lib/harness/patroni".to_string(),
            port: 5432,
            rest_port: 8008,
            start_timeout: Duration::from_secs(90),
            conf: PatroniConf::default(),
        }
    }
}

/// Patroni + PostgreSQL + etcd on every node.
pub struct PatroniCluster {
    cfg: PatroniConfig,
    remotes: Vec<Arc<dyn Remote>>,
    /// The DCS: an etcd member per node.
    dcs: EtcdNodes,
    /// The leader seen when setup finished.
    leader: Mutex<Option<Node>>,
}

impl PatroniCluster {
    /// A cluster with `cfg` on the nodes of `remotes`.
    pub fn new(cfg: PatroniConfig, remotes: Vec<Arc<dyn Remote>>) -> PatroniCluster {
        PatroniCluster {
            cfg,
            dcs: dcs::cluster(remotes.clone()),
            remotes,
            leader: Mutex::new(None),
        }
    }

    fn node_list(&self) -> Vec<Node> {
        self.remotes.iter().map(|r| r.node().clone()).collect()
    }

    fn node_dir(&self, node: &Node) -> String {
        format!("{}/{}", self.cfg.base_dir.trim_end_matches('/'), node.name)
    }

    fn remote_of(&self, node: &Node) -> Result<&Arc<dyn Remote>, DbError> {
        self.remotes
            .iter()
            .find(|r| r.node().name == node.name)
            .ok_or_else(|| DbError::Topology(format!("unknown node {}", node.name)))
    }

    async fn check_installed(&self, r: &Arc<dyn Remote>) -> Result<(), DbError> {
        let cmd = format!(
            "B={BIN}; test -x \"$B/initdb\" && test -x /usr/bin/patroni && test -x {} && id postgres >/dev/null",
            shell_quote(&self.dcs.config().binary)
        );
        let out = r.exec(&cmd, None, Duration::from_secs(10)).await?;
        if out.success() {
            Ok(())
        } else {
            Err(DbError::Missing {
                node: r.node().name.clone(),
                what: format!(
                    "PostgreSQL (/usr/lib/postgresql/*/bin), /usr/bin/patroni, {} or the postgres user",
                    self.dcs.config().binary
                ),
                packages: "postgresql patroni etcd-server".to_string(),
            })
        }
    }

    /// Sends `signal` to what `scope` covers on `node`. After a KILL,
    /// waits until those are gone.
    async fn signal(&self, node: &Node, scope: ProcessScope, signal: &str) -> Result<(), DbError> {
        let cmd = signals::signal_sh(&self.node_dir(node), scope, signal);
        let out = self
            .remote_of(node)?
            .exec(&cmd, None, Duration::from_secs(30))
            .await?;
        if out.success() {
            Ok(())
        } else {
            Err(DbError::Step {
                node: node.name.clone(),
                step: format!("SIG{signal} ({})", scope.as_str()),
                detail: format!("processes still alive: {}", out.stderr_str()),
            })
        }
    }

    /// Starts Patroni on `node` unless it runs; `true` when it started one.
    async fn start_patroni(&self, node: &Node) -> Result<bool, DbError> {
        let d = self.node_dir(node);
        let cmd = format!(
            "{pids}[ -n \"$PP\" ] && exit 0; cd /tmp; setsid runuser -u postgres -- sh -c 'echo $$ > {d}/patroni.pid; exec /usr/bin/patroni {d}/patroni.yml' </dev/null >>{d}/patroni.log 2>&1 & echo {STARTED}",
            pids = signals::pids(&d)
        );
        let out = self.remote_of(node)?.run(&cmd).await?;
        Ok(out.stdout_str().trim() == STARTED)
    }

    /// Starts Patroni again on `n` unless it runs (it may still be
    /// starting), saying so in the run's log. Patroni exits at start-up when no DCS member
    /// answers its lease request (`EtcdConnectionFailed: No more machines
    /// in the cluster`), which is the usual case right after a partition
    /// of the DCS heals; an operator's supervisor starts it again, and so
    /// does the wait for recovery, or the old primary, its agent gone,
    /// would stay a primary beside the new one.
    async fn restart_exited(&self, n: &Node) {
        match self.start_patroni(n).await {
            Ok(true) => tracing::warn!(
                "patroni on {} had exited (its patroni.log says why): started again",
                n.name
            ),
            Ok(false) => {}
            Err(e) => tracing::warn!("patroni on {}: cannot start it again: {e}", n.name),
        }
    }

    /// Whether Patroni is up on `node` (its REST API answers: it got past
    /// its DCS at start-up, where it can still exit), and what its
    /// PostgreSQL says of itself (`None`: not answering), in one command.
    async fn state(&self, node: &Node) -> (bool, Option<PgRole>) {
        let d = self.node_dir(node);
        let sql = "select pg_is_in_recovery()::text || ',' || (select count(*) from pg_stat_replication where state = 'streaming') || ',' || (select count(*) from pg_stat_replication where sync_state = 'sync')";
        // Any HTTP answer is an API that is up (python3: Patroni's own).
        let api = format!(
            "python3 -c \"import urllib.request as u,urllib.error as e\ntry: u.urlopen('http://{}:{}/patroni', timeout=2)\nexcept e.HTTPError: pass\" 2>/dev/null",
            node.host, self.cfg.rest_port
        );
        let cmd = format!(
            "{api} && echo agent || echo no-agent; cd /tmp && PGCONNECT_TIMEOUT=2 runuser -u postgres -- {BIN}/psql -h {d} -p {} -U postgres -Atc \"{sql}\"",
            self.cfg.port
        );
        let Ok(r) = self.remote_of(node) else {
            return (false, None);
        };
        let Ok(out) = r.exec(&cmd, None, Duration::from_secs(5)).await else {
            return (false, None);
        };
        let text = out.stdout_str();
        let mut lines = text.lines();
        let agent = lines.next().is_some_and(|l| l.trim() == "agent");
        let role = if out.success() {
            lines.next().and_then(PgRole::parse)
        } else {
            None
        };
        (agent, role)
    }

    /// Waits until the cluster serves (see [`serving`]) with `streaming`
    /// replicas; remembers the primary. With `supervise`, every
    /// [`SUPERVISE_EVERY`] polls Patroni is started again on the nodes where
    /// it is not up ([`PatroniCluster::restart_exited`]).
    async fn wait_serving(
        &self,
        limit: Duration,
        streaming: u32,
        supervise: bool,
    ) -> Result<(), DbError> {
        let nodes = self.node_list();
        let sync = self.cfg.conf.synchronous_mode;
        let last = Mutex::new(String::new());
        let polls = std::sync::atomic::AtomicU32::new(0);
        let res = poll(limit, Duration::from_millis(250), || {
            let nodes = &nodes;
            let last = &last;
            let polls = &polls;
            async move {
                let i = polls.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let restart = supervise && i > 0 && i.is_multiple_of(SUPERVISE_EVERY);
                let mut roles = Vec::with_capacity(nodes.len());
                let mut agents = Vec::with_capacity(nodes.len());
                for n in nodes {
                    let (agent, role) = self.state(n).await;
                    if restart && !agent {
                        self.restart_exited(n).await;
                    }
                    agents.push(agent);
                    roles.push(role);
                }
                if let Ok(mut l) = last.lock() {
                    *l = format!("{roles:?}, Patroni up: {agents:?}");
                }
                // A primary whose Patroni is gone (or still starting, and
                // may exit for want of its DCS) is no recovery: nothing
                // would demote it when another node takes the leader key.
                if !agents.iter().all(|a| *a) {
                    return Ok(false);
                }
                match serving(&roles, streaming, sync).and_then(|i| nodes.get(i)) {
                    Some(p) => {
                        if let Ok(mut l) = self.leader.lock() {
                            *l = Some(p.clone());
                        }
                        Ok(true)
                    }
                    None => Ok(false),
                }
            }
        })
        .await;
        let last = last.into_inner().unwrap_or_default();
        res.map_err(|_| DbError::NotReady {
            node: nodes
                .iter()
                .map(|n| n.name.as_str())
                .collect::<Vec<_>>()
                .join(","),
            db: "patroni".to_string(),
            waited_ms: limit.as_millis(),
            detail: format!(
                "no single primary{} and Patroni up on every node (roles per node: {last})",
                if sync {
                    " with a sync standby"
                } else {
                    " with streaming replicas"
                }
            ),
        })
    }

    async fn teardown_all(&self) -> Result<(), DbError> {
        let mut errs = Vec::new();
        for r in &self.remotes {
            let n = r.node();
            if let Err(e) = self.signal(n, ProcessScope::Node, "KILL").await {
                errs.push(e);
                continue;
            }
            let rm = format!("rm -rf {}", shell_quote(&self.node_dir(n)));
            if let Err(e) = r.run(&rm).await {
                errs.push(e.into());
            }
        }
        if let Err(e) = self.dcs.teardown().await {
            errs.push(e);
        }
        join_errors(errs)
    }

    async fn setup_all(&self) -> Result<(), DbError> {
        if self.remotes.len() < 3 {
            return Err(DbError::Topology(
                "patroni needs 3 nodes (an etcd member and a Patroni member on each)".to_string(),
            ));
        }
        let mut errs = Vec::new();
        for r in &self.remotes {
            if let Err(e) = self.check_installed(r).await {
                errs.push(e);
            }
        }
        join_errors(errs)?;
        self.teardown_all().await?;
        let nodes = self.node_list();
        let bin = self
            .remotes
            .first()
            .ok_or_else(|| DbError::Topology("no nodes".to_string()))?
            .run(&format!("echo {BIN}"))
            .await?
            .stdout_str()
            .trim()
            .to_string();
        let etcd_hosts = dcs::client_hosts(&self.dcs);
        for r in &self.remotes {
            let n = r.node();
            let d = self.node_dir(n);
            r.run(&format!(
                "install -d -m 755 {base} && install -d -o postgres -g postgres -m 700 {d}",
                base = shell_quote(&self.cfg.base_dir)
            ))
            .await?;
            let yaml = node_yaml(
                &self.cfg.conf,
                &Member {
                    name: &n.name,
                    host: &n.host,
                    dir: &d,
                    port: self.cfg.port,
                    rest_port: self.cfg.rest_port,
                    bin_dir: &bin,
                },
                &etcd_hosts,
            );
            let path = format!("{d}/patroni.yml");
            r.upload_bytes(yaml.into_bytes(), &path).await?;
            r.run(&format!("chown postgres: {path} && chmod 600 {path}"))
                .await?;
        }
        // The DCS's own setup: members started together, each serving a
        // linearizable read within its limit.
        self.dcs.setup().await?;
        for n in &nodes {
            self.start_patroni(n).await?;
        }
        let replicas = u32::try_from(nodes.len().saturating_sub(1)).unwrap_or(u32::MAX);
        // At setup a Patroni that exits is a setup failure, not restarted.
        self.wait_serving(self.cfg.start_timeout, replicas, false)
            .await
    }
}

fn perr(node: &Node, action: &'static str, e: DbError) -> ProcessError {
    ProcessError {
        node: node.name.clone(),
        action,
        message: e.to_string(),
    }
}

impl Process for PatroniCluster {
    fn kill<'a>(&'a self, node: &'a Node) -> BoxFuture<'a, Result<(), ProcessError>> {
        Box::pin(async move {
            self.signal(node, self.cfg.conf.kill, "KILL")
                .await
                .map_err(|e| perr(node, "kill", e))
        })
    }
    fn start<'a>(&'a self, node: &'a Node) -> BoxFuture<'a, Result<(), ProcessError>> {
        Box::pin(async move {
            self.start_patroni(node)
                .await
                .map(|_| ())
                .map_err(|e| perr(node, "start", e))
        })
    }
    fn pause<'a>(&'a self, node: &'a Node) -> BoxFuture<'a, Result<(), ProcessError>> {
        Box::pin(async move {
            self.signal(node, self.cfg.conf.pause, "STOP")
                .await
                .map_err(|e| perr(node, "pause", e))
        })
    }
    fn resume<'a>(&'a self, node: &'a Node) -> BoxFuture<'a, Result<(), ProcessError>> {
        Box::pin(async move {
            self.signal(node, self.cfg.conf.pause, "CONT")
                .await
                .map_err(|e| perr(node, "resume", e))
        })
    }
    fn data_files(&self) -> &'static str {
        "base"
    }
}

/// The lifecycle behind `Arc`, so [`Db::process`] can hand out itself.
#[derive(Clone)]
pub struct PatroniDb(pub Arc<PatroniCluster>);

impl Db for PatroniDb {
    fn settings(&self) -> Vec<(String, String)> {
        super::settings::settings(&self.0.cfg.conf)
    }
    fn membership(&self) -> Option<Arc<dyn nemesis::membership::Membership>> {
        // Not as a nemesis package yet: Patroni's members are fixed at setup.
        None
    }
    fn name(&self) -> &'static str {
        "patroni"
    }
    fn nodes(&self) -> Vec<Node> {
        self.0.node_list()
    }
    fn remote(&self, node: &str) -> Option<Arc<dyn Remote>> {
        remote_named(&self.0.remotes, node)
    }
    fn setup(&self) -> BoxFuture<'_, Result<(), DbError>> {
        Box::pin(self.0.setup_all())
    }
    fn teardown(&self) -> BoxFuture<'_, Result<(), DbError>> {
        Box::pin(self.0.teardown_all())
    }
    fn log_files(&self, node: &Node) -> Vec<LogFile> {
        let mut logs = node_logs(OWN_LOGS, &self.0.node_dir(node), |_| true);
        logs.extend(self.0.dcs.log_files(node));
        logs
    }
    fn primaries(&self) -> Vec<Node> {
        self.0
            .leader
            .lock()
            .ok()
            .and_then(|l| l.clone())
            .into_iter()
            .collect()
    }
    fn client_nodes(&self) -> Vec<Node> {
        self.0.node_list()
    }
    fn process(&self) -> Option<Arc<dyn Process>> {
        Some(self.0.clone())
    }
    fn await_ready(&self, limit: Duration) -> BoxFuture<'_, Result<(), DbError>> {
        Box::pin(async move {
            let nodes = self.0.node_list();
            let mut errs = Vec::new();
            for n in &nodes {
                if let Err(e) = self.0.start_patroni(n).await {
                    errs.push(e);
                }
            }
            join_errors(errs)?;
            // One primary, not necessarily every replica back: a rewound
            // old primary may take longer to stream again than the final
            // reads need.
            self.0.wait_serving(limit, 0, true).await
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn logs_come_from_the_node_and_the_dcs_directories() {
        let db = PatroniDb(Arc::new(PatroniCluster::new(
            PatroniConfig::default(),
            Vec::new(),
        )));
        let logs: Vec<(String, String)> = db
            .log_files(&Node::new("n2", "10.99.0.2"))
            .into_iter()
            .map(|l| (l.remote_path, l.local_name))
            .collect();
        let want = [
            ("/var/lib/harness/patroni/n2/patroni.log", "patroni.log"),
            (
                "/var/lib/harness/patroni/n2/postgresql.log",
                "postgresql.log",
            ),
            ("/var/lib/harness/patroni-etcd/n2/etcd.log", "etcd.log"),
        ];
        assert_eq!(
            logs,
            want.map(|(r, l)| (r.to_string(), l.to_string())).to_vec()
        );
        // The catalog's list names the same files.
        let names: Vec<&str> = LOGS.iter().map(|l| l.local).collect();
        assert_eq!(names, want.map(|(_, l)| l).to_vec());
    }
}
