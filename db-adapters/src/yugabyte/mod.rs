//! YugabyteDB YSQL: the client (PostgreSQL wire on port 5433, the shared
//! statements — YSQL is PostgreSQL 11+ and supports `INSERT … ON CONFLICT`)
//! and the cluster lifecycle (`yb-master` + `yb-tserver` per node) from a
//! release tarball, as command plans.
//!
//! Accepted `--isolation` levels: `serializable`, `repeatable-read` (YSQL's
//! snapshot isolation; `snapshot-isolation` is a synonym), `read-committed`
//! (needs the tserver flag `--yb_enable_read_committed_isolation=true`,
//! which the lifecycle sets; without it YSQL runs READ COMMITTED as
//! REPEATABLE READ).
//!
//! Errors (after Jepsen's yugabyte/ysql/client.clj): 40001, `Restart read
//! required`, `Conflicts with … transaction`, `Catalog Version Mismatch`,
//! `try again` → `fail`; `Operation expired` and `Timed out` → `info` at any
//! phase (YugabyteDB may have applied the operation); the rest as
//! [`crate::sql::classify_pg`].
//!
//! Lifecycle documented in
//! <https://docs.yugabyte.com/preview/deploy/manual-deployment/>.

use crate::client::ClientError;
use crate::cluster::{Daemon, Layout, Plan, Spec, Step, Tarball, host_ports, install_steps, log};
use crate::pgwire::{
    Dialect, PgWireError, PgWireFactory, Target, definite, indefinite, message_contains,
};
use crate::sql::{DataModel, Isolation, TxnPhase, TxnTables, classify_pg};
use nemesis::Node;
use std::time::Duration;

/// YSQL's port.
pub const DEFAULT_PORT: u16 = 5433;

/// Tables of the append schema on YSQL (as Jepsen's YugabyteDB suite).
pub const TABLES: TxnTables = TxnTables { table_count: 5 };
/// yb-master RPC port.
pub const MASTER_RPC_PORT: u16 = 7100;
/// yb-tserver RPC port.
pub const TSERVER_RPC_PORT: u16 = 9100;
/// YCQL port.
pub const CQL_PORT: u16 = 9042;

/// Checks `--isolation` for YSQL (`snapshot-isolation` becomes
/// `repeatable-read`).
///
/// # Errors
/// Names the level and the accepted ones.
pub fn check_isolation(i: Isolation) -> Result<Isolation, String> {
    match i {
        Isolation::Serializable | Isolation::RepeatableRead | Isolation::ReadCommitted => Ok(i),
        Isolation::SnapshotIsolation => Ok(Isolation::RepeatableRead),
        other => Err(format!(
            "--isolation {other}: YugabyteDB YSQL runs serializable, repeatable-read or read-committed transactions only"
        )),
    }
}

/// Messages meaning the transaction was aborted (definite).
const ABORTED: [&str; 5] = [
    "restart read required",
    "conflicts with",
    "catalog version mismatch",
    "try again",
    "could not serialize access",
];
/// Messages meaning the outcome is unknown (indefinite).
const UNKNOWN: [&str; 3] = ["operation expired", "timed out", "deadline exceeded"];

/// Classifies a YSQL error (see the module docs).
pub fn classify(err: &tokio_postgres::Error, phase: TxnPhase) -> ClientError {
    let base = classify_pg(err, phase);
    if UNKNOWN.iter().any(|m| message_contains(err, m)) {
        return indefinite(ClientError {
            code: "yb-unknown".to_string(),
            ..base
        });
    }
    if ABORTED.iter().any(|m| message_contains(err, m)) {
        let code = if message_contains(err, "restart read required") {
            "restart-read-required".to_string()
        } else {
            base.code.clone()
        };
        return definite(ClientError { code, ..base });
    }
    base
}

/// The YSQL dialect of the PG-wire client (no setup statements: isolation
/// is configured on the tservers).
pub fn dialect(select_for_update: bool) -> Dialect {
    Dialect {
        db: "YugabyteDB",
        classify,
        setup_statements: Vec::new(),
        version_marker: "-YB-",
        read_lock: select_for_update.then_some(" FOR UPDATE"),
    }
}

/// Clients connect as `yugabyte` to database `yugabyte` on every node.
pub fn node_target(port: u16) -> Target {
    Target::Nodes {
        port,
        user: "yugabyte".to_string(),
        dbname: "yugabyte".to_string(),
    }
}

/// A YSQL client factory (5 tables, as Jepsen's YSQL append workload).
///
/// # Errors
/// An unsupported isolation level or a bad URL, as a message.
pub fn factory(
    target: Target,
    isolation: Isolation,
    model: DataModel,
    select_for_update: bool,
) -> Result<PgWireFactory, String> {
    let isolation = check_isolation(isolation)?;
    PgWireFactory::new(target, isolation, model, TABLES, dialect(select_for_update))
        .map_err(|e: PgWireError| e.to_string())
}

/// Settings of a YugabyteDB cluster.
#[derive(Clone, Debug)]
pub struct YugabyteConfig {
    /// Node-side directories.
    pub layout: Layout,
    /// The release tarball.
    pub tarball: Tarball,
    /// YSQL port.
    pub port: u16,
    /// Enable READ COMMITTED on the tservers.
    pub read_committed: bool,
    /// The cluster runs already (`--no-setup`).
    pub no_setup: bool,
}

impl YugabyteConfig {
    /// Defaults: `/var/lib/harness/yugabyte`, YSQL on 5433.
    pub fn new(tarball: Tarball) -> YugabyteConfig {
        YugabyteConfig {
            layout: Layout {
                base: "/var/lib/harness/yugabyte".to_string(),
            },
            tarball,
            port: DEFAULT_PORT,
            read_committed: false,
            no_setup: false,
        }
    }

    fn bin(&self, node: &str, b: &str) -> String {
        format!("{}/bin/{b}", self.layout.dist(node))
    }

    fn data(&self, node: &str) -> String {
        format!("{}/data", self.layout.dir(node))
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
            cwd: self.layout.dir(&node.name),
            pid_file: self.layout.pid_file(&node.name, "yb-master"),
            stdout: self.layout.stdout_file(&node.name, "yb-master"),
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
            format!("{}:{}", node.host, self.port),
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
            cwd: self.layout.dir(&node.name),
            pid_file: self.layout.pid_file(&node.name, "yb-tserver"),
            stdout: self.layout.stdout_file(&node.name, "yb-tserver"),
        }
    }

    /// The whole lifecycle: install (with `bin/post_install.sh` once, as
    /// <https://docs.yugabyte.com/preview/deploy/manual-deployment/install-software/>
    /// prescribes), masters, then tservers, then wait until YSQL answers on
    /// every node (`ysqlsh -h … -p 5433 -c 'SELECT 1'`).
    pub fn spec(&self, nodes: &[Node]) -> Spec {
        let masters = Self::masters(nodes);
        let mut setup = Plan::default();
        for n in nodes {
            setup.extend(install_steps(
                &self.layout,
                &n.name,
                &self.tarball,
                "YugabyteDB",
                &[
                    "bin/yb-master",
                    "bin/yb-tserver",
                    "bin/ysqlsh",
                    "bin/post_install.sh",
                ],
            ));
            let dist = self.layout.dist(&n.name);
            setup.push(
                Step::run(
                    &n.name,
                    "post_install.sh",
                    format!(
                        "test -f {dist}/.harness-post-installed || {{ {dist}/bin/post_install.sh && touch {dist}/.harness-post-installed; }}"
                    ),
                )
                .timeout(Duration::from_secs(300)),
            );
            setup.push(Step::run(
                &n.name,
                "make data dir",
                format!("mkdir -p {}", self.data(&n.name)),
            ));
        }
        let mut daemons = Vec::new();
        for m in &masters {
            daemons.push((m.name.clone(), self.master(m, &masters)));
        }
        for n in nodes {
            daemons.push((n.name.clone(), self.tserver(n, &masters)));
        }
        for (node, d) in &daemons {
            setup.push(Step::run(node, format!("start {}", d.name), d.start_cmd()));
        }
        let mut ready = Plan::default();
        for n in nodes {
            ready.push(
                Step::run(
                    &n.name,
                    "ysql ready",
                    format!(
                        "{} -h {} -p {} -U yugabyte -c 'SELECT 1'",
                        self.bin(&n.name, "ysqlsh"),
                        n.host,
                        self.port
                    ),
                )
                .retry(180, Duration::from_secs(1)),
            );
        }
        let mut logs = Vec::new();
        let mut wipe = Vec::new();
        for n in nodes {
            let data = self.data(&n.name);
            if masters.iter().any(|m| m.name == n.name) {
                logs.push(log(
                    &n.name,
                    format!("{data}/yb-data/master/logs/yb-master.INFO"),
                    "yb-master.INFO",
                ));
                logs.push(log(
                    &n.name,
                    self.layout.stdout_file(&n.name, "yb-master"),
                    "yb-master.stdout.log",
                ));
            }
            logs.push(log(
                &n.name,
                format!("{data}/yb-data/tserver/logs/yb-tserver.INFO"),
                "yb-tserver.INFO",
            ));
            logs.push(log(
                &n.name,
                self.layout.stdout_file(&n.name, "yb-tserver"),
                "yb-tserver.stdout.log",
            ));
            wipe.push((n.name.clone(), data));
        }
        for n in nodes {
            logs.push(crate::cluster::unpack_log(&self.layout, &n.name));
        }
        Spec {
            name: "yugabyte",
            setup,
            ready,
            daemons,
            wipe,
            logs,
            client_nodes: nodes.to_vec(),
            primaries: masters,
            no_setup: self.no_setup,
        }
    }
}
