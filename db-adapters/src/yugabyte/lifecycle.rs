//! YugabyteDB YSQL's cluster lifecycle from a release tarball, as command plans
//! (see the module doc of `super`).

use super::*;
use crate::cluster::{Daemon, Install, Plan, Spec, Step, Tarball, UNPACK_LOG, host_ports};
use crate::db::NodeLog;
use crate::tarball::lifecycle::{Cluster, Member, Stage};
use nemesis::Node;
use std::time::Duration;

/// Logs kept from each node: the master's on the masters, the tserver's
/// everywhere, and the unpack log (the catalog's `log_files`).
pub const LOGS: &[NodeLog] = &[
    NodeLog::of_daemon(
        "yb-master",
        "data/yb-data/master/logs/yb-master.INFO",
        "yb-master.INFO",
    ),
    NodeLog::of_daemon("yb-master", "yb-master.stdout.log", "yb-master.stdout.log"),
    NodeLog::every_node(
        "data/yb-data/tserver/logs/yb-tserver.INFO",
        "yb-tserver.INFO",
    ),
    NodeLog::every_node("yb-tserver.stdout.log", "yb-tserver.stdout.log"),
    UNPACK_LOG,
];

/// Settings of a YugabyteDB cluster.
#[derive(Clone, Debug)]
pub struct YugabyteConfig {
    /// Where and what to install, the SQL port, `--no-setup`.
    pub install: Install,
    /// Enable READ COMMITTED on the tservers.
    pub read_committed: bool,
}

impl YugabyteConfig {
    /// Defaults: `/var/lib/harness/yugabyte`, YSQL on 5433.
    pub fn new(tarball: Tarball) -> YugabyteConfig {
        YugabyteConfig {
            install: Install::new("/var/lib/harness/yugabyte", tarball, DEFAULT_PORT),
            read_committed: false,
        }
    }

    fn bin(&self, node: &str, b: &str) -> String {
        format!("{}/bin/{b}", self.install.layout.dist(node))
    }

    fn data(&self, node: &str) -> String {
        format!("{}/data", self.install.layout.dir(node))
    }

    /// Masters: the first three nodes (one with fewer than three nodes).
    pub fn masters(nodes: &[Node]) -> Vec<Node> {
        let n = if nodes.len() >= 3 { 3 } else { 1 };
        nodes.iter().take(n).cloned().collect()
    }

    /// The `yb-master` daemon of `node`, as in
    /// <https://docs.yugabyte.com/preview/deploy/manual-deployment/start-masters/>:
    /// `--master_addresses` (every master's host:7100), `--rpc_bind_addresses`
    /// (this node's host:7100), `--fs_data_dirs`, and `--replication_factor`
    /// (3, or 1 for a single master).
    pub fn master(&self, node: &Node, masters: &[Node]) -> Daemon {
        let rf = if masters.len() >= 3 { 3 } else { 1 };
        Daemon {
            name: "yb-master".to_string(),
            bin: self.bin(&node.name, "yb-master"),
            args: vec![
                "--master_addresses".to_string(),
                host_ports(masters.iter().map(|n| n.host.as_str()), MASTER_RPC_PORT),
                "--rpc_bind_addresses".to_string(),
                format!("{}:{MASTER_RPC_PORT}", node.host),
                "--fs_data_dirs".to_string(),
                self.data(&node.name),
                "--replication_factor".to_string(),
                rf.to_string(),
            ],
            cwd: self.install.layout.dir(&node.name),
            pid_file: self.install.layout.pid_file(&node.name, "yb-master"),
            stdout: self.install.layout.stdout_file(&node.name, "yb-master"),
        }
    }

    /// The `yb-tserver` daemon of `node`, as in
    /// <https://docs.yugabyte.com/preview/deploy/manual-deployment/start-tservers/>:
    /// `--tserver_master_addrs`, `--rpc_bind_addresses` (host:9100),
    /// `--enable_ysql`, `--pgsql_proxy_bind_address` (host:5433),
    /// `--cql_proxy_bind_address` (host:9042), `--fs_data_dirs`; plus
    /// `--yb_enable_read_committed_isolation=true` for READ COMMITTED
    /// (<https://docs.yugabyte.com/preview/architecture/transactions/read-committed/>).
    pub fn tserver(&self, node: &Node, masters: &[Node]) -> Daemon {
        let mut args = vec![
            "--tserver_master_addrs".to_string(),
            host_ports(masters.iter().map(|n| n.host.as_str()), MASTER_RPC_PORT),
            "--rpc_bind_addresses".to_string(),
            format!("{}:{TSERVER_RPC_PORT}", node.host),
            "--enable_ysql".to_string(),
            "--pgsql_proxy_bind_address".to_string(),
            format!("{}:{}", node.host, self.install.port),
            "--cql_proxy_bind_address".to_string(),
            format!("{}:{CQL_PORT}", node.host),
            "--fs_data_dirs".to_string(),
            self.data(&node.name),
        ];
        if self.read_committed {
            args.push("--yb_enable_read_committed_isolation=true".to_string());
        }
        Daemon {
            name: "yb-tserver".to_string(),
            bin: self.bin(&node.name, "yb-tserver"),
            args,
            cwd: self.install.layout.dir(&node.name),
            pid_file: self.install.layout.pid_file(&node.name, "yb-tserver"),
            stdout: self.install.layout.stdout_file(&node.name, "yb-tserver"),
        }
    }

    /// The whole lifecycle: install (with `bin/post_install.sh` once, as
    /// <https://docs.yugabyte.com/preview/deploy/manual-deployment/install-software/>
    /// prescribes), masters, then tservers, then wait until YSQL answers on
    /// every node (`ysqlsh -h … -p 5433 -c 'SELECT 1'`).
    pub fn spec(&self, nodes: &[Node]) -> Spec {
        let masters = Self::masters(nodes);
        let members = nodes
            .iter()
            .map(|n| {
                let dist = self.install.layout.dist(&n.name);
                let mut then = Plan::default();
                then.push(
                    Step::run(
                        &n.name,
                        "post_install.sh",
                        format!(
                            "test -f {dist}/.harness-post-installed || {{ {dist}/bin/post_install.sh && touch {dist}/.harness-post-installed; }}"
                        ),
                    )
                    .timeout(Duration::from_secs(300)),
                );
                then.push(Step::run(
                    &n.name,
                    "make data dir",
                    format!("mkdir -p {}", self.data(&n.name)),
                ));
                Member {
                    node: n.clone(),
                    binaries: vec![
                        "bin/yb-master",
                        "bin/yb-tserver",
                        "bin/ysqlsh",
                        "bin/post_install.sh",
                    ],
                    then,
                    wipe: vec![self.data(&n.name)],
                }
            })
            .collect();
        let mut daemons = Vec::new();
        for m in &masters {
            daemons.push((m.name.clone(), self.master(m, &masters)));
        }
        for n in nodes {
            daemons.push((n.name.clone(), self.tserver(n, &masters)));
        }
        let ready = nodes
            .iter()
            .map(|n| {
                Step::run(
                    &n.name,
                    "ysql ready",
                    format!(
                        "{} -h {} -p {} -U yugabyte -c 'SELECT 1'",
                        self.bin(&n.name, "ysqlsh"),
                        n.host,
                        self.install.port
                    ),
                )
                .retry(180, Duration::from_secs(1))
            })
            .collect();
        Cluster {
            name: "yugabyte",
            product: "YugabyteDB",
            install: &self.install,
            logs: LOGS,
            members,
            stages: vec![Stage {
                daemons,
                then: Plan::default(),
            }],
            ready: Plan { steps: ready },
            client_nodes: nodes.to_vec(),
            primaries: masters,
        }
        .spec()
    }
}
