//! etcd on nodes (`--db etcd --nodes n1,n2,n3|testbed`): one member per
//! node, bootstrapped together, supervised by pid over the node's
//! [`Remote`] (SSH), and the [`Process`] faults act on (`--nemesis
//! kill,pause`; partitions need nothing from the lifecycle). Public so that
//! other lifecycles needing an etcd (Patroni's DCS) can run one too.
//!
//! Each node keeps everything under `<base>/<node>/` (default base
//! `/var/lib/harness/etcd`): the data directory `data/`, the member's log
//! `etcd.log` (stdout and stderr; zap logger, collected into the run
//! directory as `nodes/<node>/etcd.log`) and its pid file `etcd.pid`.
//! Testbed nodes share one file system, so the per-node directory is what
//! keeps them apart.
//!
//! Flags (as measured on the testbed, Jepsen's etcd suite's choices):
//! `--name <node>`, listen and advertise on the node's address (client
//! port 2379, peer port 2380 — listening on the node's IP only, so a
//! partition cuts clients too), `--initial-cluster` naming every member,
//! `--initial-cluster-token` unique per run (a stray member of an earlier
//! run cannot join), `--snapshot-count 100` (snapshots and their restore
//! run under kills, as in Jepsen), `--logger zap --log-outputs stderr`.
//! The first start says `--initial-cluster-state new`; every later start
//! (a restart after a kill, a member added back) says `existing` with the
//! current member list ([`ClusterState`]).
//!
//! Kill is SIGKILL by pid (SIGTERM can hang on a member without peers);
//! pause/resume are SIGSTOP/SIGCONT by pid; start restarts a killed member
//! on its data. A member removed from the cluster (`--nemesis membership`,
//! `super::membership`) stays down: `start` leaves it alone until it is
//! added back; membership changes are serialized (etcd takes one at a
//! time).
//!
//! Clients connect to every member (`client_nodes` is every node).

use super::grpc::EtcdConn;
use crate::client::BoxFuture;
use crate::cluster::Daemon;
use crate::db::{Db, DbError, LogFile, connect_all, join_errors, node_logs, remote_named};
use nemesis::Node;
use nemesis::process::{Process, ProcessError};
use nemesis::remote::{Remote, shell_quote};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The member log kept from each node.
pub const LOGS: &[crate::db::NodeLog] = &[crate::db::NodeLog::every_node("etcd.log", "etcd.log")];

/// Settings of an etcd cluster on nodes.
#[derive(Clone, Debug)]
pub struct EtcdNodesConfig {
    /// Directory on each node under which `<node>/` is created.
    pub base_dir: String,
    /// The etcd binary on the nodes (Debian `etcd-server`).
    pub binary: String,
    /// Client port.
    pub client_port: u16,
    /// Peer port.
    pub peer_port: u16,
    /// `--snapshot-count`.
    pub snapshot_count: u64,
    /// `--initial-cluster-token` (unique per run).
    pub token: String,
    /// Limit for the members to become healthy (setup, add).
    pub start_timeout: Duration,
    /// `--pre-vote`: a member asks the others whether it could win before
    /// it raises its term, so one cut off by a partition does not force a
    /// new election when it comes back. etcd 3.4's default is off (3.5
    /// turned it on); off here, so an etcd under test runs as shipped.
    pub pre_vote: bool,
}

impl Default for EtcdNodesConfig {
    fn default() -> Self {
        EtcdNodesConfig::new()
    }
}

impl EtcdNodesConfig {
    /// Defaults: `/var/lib/harness/etcd`, `/usr/bin/etcd`, ports 2379/2380,
    /// snapshot count 100, a fresh token, 60 s to become healthy.
    pub fn new() -> EtcdNodesConfig {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default();
        EtcdNodesConfig {
            base_dir: "/var/lib/harness/etcd".to_string(),
            binary: super::database::ETCD_BINARY.to_string(),
            client_port: super::client::DEFAULT_CLIENT_PORT,
            peer_port: 2380,
            snapshot_count: 100,
            token: format!("harness-{}-{nanos}", std::process::id()),
            start_timeout: Duration::from_secs(60),
            pre_vote: false,
        }
    }

    /// The node's directory.
    pub fn node_dir(&self, node: &Node) -> String {
        format!("{}/{}", self.base_dir.trim_end_matches('/'), node.name)
    }

    /// The member's data directory.
    pub fn data_dir(&self, node: &Node) -> String {
        format!("{}/data", self.node_dir(node))
    }

    /// `http://<host>:<peer port>`.
    pub fn peer_url(&self, node: &Node) -> String {
        format!("http://{}:{}", node.host, self.peer_port)
    }

    /// `http://<host>:<client port>`.
    pub fn client_url(&self, node: &Node) -> String {
        format!("http://{}:{}", node.host, self.client_port)
    }

    /// `<host>:<client port>`, what the harness connects to.
    pub fn client_addr(&self, node: &Node) -> String {
        format!("{}:{}", node.host, self.client_port)
    }

    /// `name=peer-url,…` of `members`.
    pub fn initial_cluster(&self, members: &[Node]) -> String {
        members
            .iter()
            .map(|m| format!("{}={}", m.name, self.peer_url(m)))
            .collect::<Vec<_>>()
            .join(",")
    }

    /// The member's daemon, started with `initial_cluster` and `state`.
    pub fn daemon(&self, node: &Node, initial_cluster: &str, state: ClusterState) -> Daemon {
        // Listen on the node's address (a partition then cuts clients
        // too); a host name is advertised, and listened for everywhere.
        let listen = if node.host.parse::<std::net::IpAddr>().is_ok() {
            node.host.as_str()
        } else {
            "0.0.0.0"
        };
        let dir = self.node_dir(node);
        let listen_client = format!("http://{listen}:{}", self.client_port);
        let listen_peer = format!("http://{listen}:{}", self.peer_port);
        let args: Vec<String> = [
            "--name",
            &node.name,
            "--data-dir",
            &self.data_dir(node),
            "--listen-client-urls",
            &listen_client,
            "--advertise-client-urls",
            &self.client_url(node),
            "--listen-peer-urls",
            &listen_peer,
            "--initial-advertise-peer-urls",
            &self.peer_url(node),
            "--initial-cluster",
            initial_cluster,
            "--initial-cluster-state",
            state.flag(),
            "--initial-cluster-token",
            &self.token,
            "--snapshot-count",
            &self.snapshot_count.to_string(),
            "--logger",
            "zap",
            "--log-outputs",
            "stderr",
        ]
        .iter()
        .map(|s| s.to_string())
        .chain(self.pre_vote.then(|| "--pre-vote".to_string()))
        .collect();
        Daemon {
            name: "etcd".to_string(),
            bin: self.binary.clone(),
            args,
            cwd: dir.clone(),
            pid_file: format!("{dir}/etcd.pid"),
            stdout: format!("{dir}/etcd.log"),
        }
    }
}

/// SIGKILL of the member by its pid file, waiting up to 60 s until it is
/// gone (or a zombie). Longer than the tarball daemons' 10 s: on the
/// shared testbed machine under load a killed member blocked in a WAL
/// fsync was seen to outlive 10 s.
fn kill_cmd(d: &Daemon) -> String {
    d.kill_cmd(60)
}

/// `--initial-cluster-state`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClusterState {
    /// Bootstrapping: every member of `--initial-cluster` starts now.
    New,
    /// Joining (or rejoining) a running cluster.
    Existing,
}

impl ClusterState {
    /// The flag's value.
    pub fn flag(self) -> &'static str {
        match self {
            ClusterState::New => "new",
            ClusterState::Existing => "existing",
        }
    }
}

/// Which nodes are members now.
#[derive(Debug, Default)]
pub(crate) struct Members {
    /// Names of the nodes in the cluster, in node order.
    pub(crate) names: Vec<String>,
}

/// etcd on nodes: a [`Db`] and the [`Process`] its faults act on. Cheap to
/// clone (shared state).
#[derive(Clone)]
pub struct EtcdNodes {
    pub(crate) cfg: Arc<EtcdNodesConfig>,
    pub(crate) remotes: Vec<Arc<dyn Remote>>,
    pub(crate) members: Arc<Mutex<Members>>,
    /// Held through a membership change: etcd takes one at a time.
    pub(crate) change: Arc<tokio::sync::Mutex<()>>,
}

impl EtcdNodes {
    /// A cluster with `cfg` on the nodes behind `remotes` (one member each).
    pub fn new(cfg: EtcdNodesConfig, remotes: Vec<Arc<dyn Remote>>) -> EtcdNodes {
        EtcdNodes {
            cfg: Arc::new(cfg),
            remotes,
            members: Arc::new(Mutex::new(Members::default())),
            change: Arc::new(tokio::sync::Mutex::new(())),
        }
    }

    /// The settings.
    pub fn config(&self) -> &EtcdNodesConfig {
        &self.cfg
    }

    /// Every node, in test order.
    pub fn all_nodes(&self) -> Vec<Node> {
        self.remotes.iter().map(|r| r.node().clone()).collect()
    }

    /// The nodes that are members now (all after setup; fewer while one
    /// is removed).
    pub fn member_nodes(&self) -> Vec<Node> {
        let names = self.member_names();
        self.all_nodes()
            .into_iter()
            .filter(|n| names.contains(&n.name))
            .collect()
    }

    /// Treats every node as a member: for a cluster this value did not set
    /// up (another `EtcdNodes` did, e.g. a run whose cluster a test
    /// changes from outside).
    pub fn adopt_all(&self) {
        self.set_members(self.all_nodes().into_iter().map(|n| n.name).collect());
    }

    pub(crate) fn member_names(&self) -> Vec<String> {
        self.members
            .lock()
            .map(|m| m.names.clone())
            .unwrap_or_default()
    }

    pub(crate) fn set_members(&self, names: Vec<String>) {
        if let Ok(mut m) = self.members.lock() {
            m.names = names;
        }
    }

    pub(crate) fn remote_of(&self, node: &Node) -> Result<&Arc<dyn Remote>, DbError> {
        self.remotes
            .iter()
            .find(|r| r.node().name == node.name)
            .ok_or_else(|| DbError::Topology(format!("unknown node {}", node.name)))
    }

    /// Runs `cmd` on `node`; a non-zero exit is a [`DbError::Step`].
    pub(crate) async fn step(&self, node: &Node, what: &str, cmd: &str) -> Result<(), DbError> {
        let r = self.remote_of(node)?;
        let out = r.exec(cmd, None, Duration::from_secs(90)).await?;
        if out.success() {
            return Ok(());
        }
        let mut detail = out.stderr_str();
        if detail.is_empty() {
            detail = out.stdout_str();
        }
        Err(DbError::Step {
            node: node.name.clone(),
            step: what.to_string(),
            detail: format!("exit status {}: {detail}", out.status),
        })
    }

    /// The daemon as it is (re)started now: `existing` with the current
    /// members.
    fn restart_daemon(&self, node: &Node) -> Daemon {
        let members = self.member_nodes();
        self.cfg.daemon(
            node,
            &self.cfg.initial_cluster(&members),
            ClusterState::Existing,
        )
    }

    /// SIGKILLs `node`'s member (by its pid file) and waits until it is gone.
    pub(crate) async fn kill_member(&self, node: &Node) -> Result<(), DbError> {
        let d = self.cfg.daemon(node, "", ClusterState::Existing);
        self.step(node, "kill etcd", &kill_cmd(&d)).await
    }

    /// Starts `node`'s member with `initial_cluster` and `state` (a no-op
    /// when it runs).
    pub(crate) async fn start_member(
        &self,
        node: &Node,
        initial_cluster: &str,
        state: ClusterState,
    ) -> Result<(), DbError> {
        let d = self.cfg.daemon(node, initial_cluster, state);
        self.step(node, "start etcd", &d.start_cmd()).await
    }

    /// Waits until `node`'s member answers a linearizable read (which
    /// needs a leader and a quorum), up to `limit`.
    ///
    /// # Errors
    /// [`DbError::NotReady`] with the last answer.
    pub async fn await_member(&self, node: &Node, limit: Duration) -> Result<(), DbError> {
        let start = Instant::now();
        let addr = self.cfg.client_addr(node);
        let mut conn = EtcdConn::new(&addr, Duration::from_secs(2));
        loop {
            let detail = match conn.linearizable_read(b"harness-health").await {
                Ok(()) => return Ok(()),
                Err(e) => e.to_string(),
            };
            if start.elapsed() >= limit {
                return Err(DbError::NotReady {
                    node: node.name.clone(),
                    db: "etcd".to_string(),
                    waited_ms: start.elapsed().as_millis(),
                    detail,
                });
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// Waits until every member answers.
    async fn await_members(&self, limit: Duration) -> Result<(), DbError> {
        for n in self.member_nodes() {
            self.await_member(&n, limit).await?;
        }
        Ok(())
    }

    async fn setup_inner(&self) -> Result<(), DbError> {
        connect_all(&self.remotes).await?;
        for r in &self.remotes {
            let cmd = format!("test -x {}", shell_quote(&self.cfg.binary));
            if !r.exec(&cmd, None, Duration::from_secs(10)).await?.success() {
                return Err(DbError::Missing {
                    node: r.node().name.clone(),
                    what: format!("etcd ({})", self.cfg.binary),
                    packages: "etcd-server".to_string(),
                });
            }
        }
        self.teardown_inner().await?;
        let nodes = self.all_nodes();
        for n in &nodes {
            let dir = shell_quote(&self.cfg.node_dir(n));
            self.step(n, "make directory", &format!("mkdir -p {dir}"))
                .await?;
        }
        self.set_members(nodes.iter().map(|n| n.name.clone()).collect());
        let initial = self.cfg.initial_cluster(&nodes);
        for n in &nodes {
            self.start_member(n, &initial, ClusterState::New).await?;
        }
        self.await_members(self.cfg.start_timeout).await
    }

    async fn teardown_inner(&self) -> Result<(), DbError> {
        let mut errs = Vec::new();
        for n in self.all_nodes() {
            if let Err(e) = self.kill_member(&n).await {
                errs.push(e);
            }
            let rm = format!("rm -rf {}", shell_quote(&self.cfg.node_dir(&n)));
            if let Err(e) = self.step(&n, "remove data", &rm).await {
                errs.push(e);
            }
        }
        join_errors(errs)
    }

    async fn on_node(&self, node: &Node, action: &'static str) -> Result<(), ProcessError> {
        let perr = |message: String| ProcessError {
            node: node.name.clone(),
            action,
            message,
        };
        let d = self.cfg.daemon(node, "", ClusterState::Existing);
        let cmd = match action {
            "kill" => kill_cmd(&d),
            "pause" => d.signal_cmd("STOP"),
            "resume" => d.signal_cmd("CONT"),
            _ => {
                // A removed member stays down until it is added back.
                if !self.member_names().contains(&node.name) {
                    return Ok(());
                }
                self.restart_daemon(node).start_cmd()
            }
        };
        self.step(node, action, &cmd)
            .await
            .map_err(|e| perr(e.to_string()))
    }
}

impl Process for EtcdNodes {
    fn kill<'a>(&'a self, node: &'a Node) -> nemesis::BoxFuture<'a, Result<(), ProcessError>> {
        Box::pin(self.on_node(node, "kill"))
    }
    fn start<'a>(&'a self, node: &'a Node) -> nemesis::BoxFuture<'a, Result<(), ProcessError>> {
        Box::pin(self.on_node(node, "start"))
    }
    fn pause<'a>(&'a self, node: &'a Node) -> nemesis::BoxFuture<'a, Result<(), ProcessError>> {
        Box::pin(self.on_node(node, "pause"))
    }
    fn resume<'a>(&'a self, node: &'a Node) -> nemesis::BoxFuture<'a, Result<(), ProcessError>> {
        Box::pin(self.on_node(node, "resume"))
    }
    fn data_files(&self) -> &'static str {
        "data"
    }
}

impl Db for EtcdNodes {
    fn settings(&self) -> Vec<(String, String)> {
        // The one flag beyond names and addresses; etcd fsyncs its WAL
        // before it acknowledges (its default, not changed here).
        vec![(
            "snapshot-count".to_string(),
            self.cfg.snapshot_count.to_string(),
        )]
    }
    fn membership(&self) -> Option<Arc<dyn nemesis::membership::Membership>> {
        Some(Arc::new(self.clone()))
    }
    fn name(&self) -> &'static str {
        "etcd"
    }
    fn nodes(&self) -> Vec<Node> {
        self.all_nodes()
    }
    fn remote(&self, node: &str) -> Option<Arc<dyn Remote>> {
        remote_named(&self.remotes, node)
    }
    fn setup(&self) -> BoxFuture<'_, Result<(), DbError>> {
        Box::pin(self.setup_inner())
    }
    fn teardown(&self) -> BoxFuture<'_, Result<(), DbError>> {
        Box::pin(self.teardown_inner())
    }
    fn log_files(&self, node: &Node) -> Vec<LogFile> {
        node_logs(LOGS, &self.cfg.node_dir(node), |_| true)
    }
    fn primaries(&self) -> Vec<Node> {
        Vec::new()
    }
    fn client_nodes(&self) -> Vec<Node> {
        self.all_nodes()
    }
    fn process(&self) -> Option<Arc<dyn Process>> {
        Some(Arc::new(self.clone()))
    }
    fn await_ready(&self, limit: Duration) -> BoxFuture<'_, Result<(), DbError>> {
        Box::pin(self.await_members(limit))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn testbed() -> Vec<Node> {
        (1..=3)
            .map(|i| Node::new(format!("n{i}"), format!("10.99.0.{i}")))
            .collect()
    }

    #[test]
    fn a_member_gets_the_measured_flags() {
        let mut cfg = EtcdNodesConfig::new();
        cfg.token = "tok".into();
        let nodes = testbed();
        let initial = cfg.initial_cluster(&nodes);
        assert_eq!(
            initial,
            "n1=http://10.99.0.1:2380,n2=http://10.99.0.2:2380,n3=http://10.99.0.3:2380"
        );
        let d = cfg.daemon(&nodes[1], &initial, ClusterState::New);
        let line = d.command_line();
        for want in [
            "/usr/bin/etcd --name n2 --data-dir /var/lib/harness/etcd/n2/data",
            "--listen-client-urls http://10.99.0.2:2379 --advertise-client-urls http://10.99.0.2:2379",
            "--listen-peer-urls http://10.99.0.2:2380 --initial-advertise-peer-urls http://10.99.0.2:2380",
            "--initial-cluster-state new --initial-cluster-token tok --snapshot-count 100",
            "--logger zap --log-outputs stderr",
        ] {
            assert!(line.contains(want), "{want} not in {line}");
        }
        assert_eq!(d.pid_file, "/var/lib/harness/etcd/n2/etcd.pid");
        assert_eq!(d.stdout, "/var/lib/harness/etcd/n2/etcd.log");
        let k = kill_cmd(&d);
        assert!(
            k.contains("p=$(cat /var/lib/harness/etcd/n2/etcd.pid"),
            "{k}"
        );
        assert!(k.contains("kill -KILL $p; hl_alive()"), "{k}");
        assert!(k.contains("(limit 60 s)"), "{k}");
        let again = cfg.daemon(
            &nodes[1],
            "n2=http://10.99.0.2:2380",
            ClusterState::Existing,
        );
        assert!(again.command_line().contains(
            "--initial-cluster n2=http://10.99.0.2:2380 --initial-cluster-state existing"
        ));
    }

    #[test]
    fn host_names_are_advertised_and_listened_for_everywhere() {
        let cfg = EtcdNodesConfig::new();
        let d = cfg.daemon(&Node::new("db1", "db1.example"), "", ClusterState::New);
        let line = d.command_line();
        assert!(line.contains("--listen-client-urls http://0.0.0.0:2379 --advertise-client-urls http://db1.example:2379"), "{line}");
    }

    #[test]
    fn tokens_differ_between_runs() {
        let a = EtcdNodesConfig::new();
        std::thread::sleep(Duration::from_millis(2));
        assert_ne!(a.token, EtcdNodesConfig::new().token);
    }

    #[test]
    fn logs_are_under_the_node_directory() {
        let db = EtcdNodes::new(EtcdNodesConfig::new(), Vec::new());
        let l = db.log_files(&Node::new("n3", "10.99.0.3"));
        assert_eq!(l[0].remote_path, "/var/lib/harness/etcd/n3/etcd.log");
        assert_eq!(l[0].local_name, "etcd.log");
        assert!(db.member_nodes().is_empty());
    }
}
