//! CockroachDB's cluster lifecycle from a release tarball, as command plans
//! (see the module doc of `super`).

use super::*;
use crate::cluster::{Daemon, Install, Plan, Spec, Step, Tarball, UNPACK_LOG, host_ports};
use crate::db::NodeLog;
use crate::tarball::lifecycle::{Cluster, Member, Stage};
use nemesis::Node;
use std::time::Duration;

/// Logs kept from every node (the catalog's `log_files`).
pub const LOGS: &[NodeLog] = &[
    NodeLog::every_node("logs/cockroach.log", "cockroach.log"),
    NodeLog::every_node("cockroach.stdout.log", "cockroach.stdout.log"),
    UNPACK_LOG,
];

/// Settings of a CockroachDB cluster.
#[derive(Clone, Debug)]
pub struct CockroachConfig {
    /// Where and what to install, the SQL port, `--no-setup`.
    pub install: Install,
    /// DB Console port.
    pub http_port: u16,
}

impl CockroachConfig {
    /// Defaults: `/var/lib/harness/cockroach`, ports 26257 and 8080.
    pub fn new(tarball: Tarball) -> CockroachConfig {
        CockroachConfig {
            install: Install::new("/var/lib/harness/cockroach", tarball, DEFAULT_PORT),
            http_port: DEFAULT_HTTP_PORT,
        }
    }

    fn bin(&self, node: &str) -> String {
        format!("{}/cockroach", self.install.layout.dist(node))
    }

    /// The `cockroach start` daemon of `node`. Flags from
    /// <https://www.cockroachlabs.com/docs/stable/cockroach-start>:
    /// `--insecure`; `--listen-addr`/`--advertise-addr` (host:port this node
    /// serves and is reached at); `--http-addr` (DB Console); `--join` (the
    /// nodes to join, the same list on every node); `--store=path=` (data
    /// directory); `--cache=.25 --max-sql-memory=.25` (the production
    /// recommendation); `--log-dir` (log files). No `--background`: harness
    /// supervises the process through its pid file.
    pub fn daemon(&self, node: &Node, nodes: &[Node]) -> Daemon {
        let dir = self.install.layout.dir(&node.name);
        let addr = format!("{}:{}", node.host, self.install.port);
        Daemon {
            name: "cockroach".to_string(),
            bin: self.bin(&node.name),
            args: vec![
                "start".to_string(),
                "--insecure".to_string(),
                format!("--listen-addr={addr}"),
                format!("--advertise-addr={addr}"),
                format!("--http-addr={}:{}", node.host, self.http_port),
                format!(
                    "--join={}",
                    host_ports(nodes.iter().map(|n| n.host.as_str()), self.install.port)
                ),
                format!("--store=path={dir}/data"),
                "--cache=.25".to_string(),
                "--max-sql-memory=.25".to_string(),
                format!("--log-dir={dir}/logs"),
            ],
            cwd: dir.clone(),
            pid_file: self.install.layout.pid_file(&node.name, "cockroach"),
            stdout: self.install.layout.stdout_file(&node.name, "cockroach"),
        }
    }

    /// `cockroach init --insecure --host=<first node>` (once per cluster,
    /// <https://www.cockroachlabs.com/docs/stable/cockroach-init>), retried
    /// until the node listens.
    pub fn init_step(&self, first: &Node) -> Step {
        Step::run(
            &first.name,
            "cockroach init",
            format!(
                "{} init --insecure --host={}:{}",
                self.bin(&first.name),
                first.host,
                self.install.port
            ),
        )
        .retry(60, Duration::from_secs(1))
    }

    /// A readiness check on `node`: `cockroach sql --insecure --host=… -e 'SELECT 1'`
    /// (<https://www.cockroachlabs.com/docs/stable/cockroach-sql>).
    pub fn ready_step(&self, node: &Node) -> Step {
        Step::run(
            &node.name,
            "cockroach ready",
            format!(
                "{} sql --insecure --host={}:{} -e 'SELECT 1'",
                self.bin(&node.name),
                node.host,
                self.install.port
            ),
        )
        .retry(120, Duration::from_secs(1))
    }

    /// The whole lifecycle of a cluster on `nodes`: install, start every
    /// node, `cockroach init` once, wait until every node answers SQL.
    pub fn spec(&self, nodes: &[Node]) -> Spec {
        let members = nodes
            .iter()
            .map(|n| {
                let dir = self.install.layout.dir(&n.name);
                Member {
                    node: n.clone(),
                    binaries: vec!["cockroach"],
                    then: Plan::default(),
                    wipe: vec![format!("{dir}/data"), format!("{dir}/logs")],
                }
            })
            .collect();
        let mut start = Stage {
            daemons: nodes
                .iter()
                .map(|n| (n.name.clone(), self.daemon(n, nodes)))
                .collect(),
            then: Plan::default(),
        };
        if let Some(first) = nodes.first() {
            start.then.push(self.init_step(first));
        }
        Cluster {
            name: "cockroach",
            product: "CockroachDB",
            install: &self.install,
            logs: LOGS,
            members,
            stages: vec![start],
            ready: Plan {
                steps: nodes.iter().map(|n| self.ready_step(n)).collect(),
            },
            client_nodes: nodes.to_vec(),
            primaries: Vec::new(),
        }
        .spec()
    }
}
