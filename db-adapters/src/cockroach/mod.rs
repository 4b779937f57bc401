//! CockroachDB: the client (PostgreSQL wire on port 26257, shared
//! statements: list-append is `INSERT … ON CONFLICT (id) DO UPDATE SET val =
//! CONCAT(t.val, ',', $2)`) and the cluster lifecycle from a release
//! tarball, as command plans.
//!
//! Accepted `--isolation` levels: `serializable` (the default) and
//! `read-committed` (CockroachDB ≥ 23.2; setup enables the cluster setting
//! `sql.txn.read_committed_isolation.enabled` and then verifies the level is
//! really in effect — CockroachDB silently upgrades READ COMMITTED to
//! SERIALIZABLE otherwise).
//!
//! Errors: SQLSTATE 40001 (`restart transaction`) → `fail`; 40003
//! (`result is ambiguous`) → `info` at any phase; a connection lost while
//! `COMMIT` was in flight → `info`; the rest as
//! [`crate::sql::classify_pg`].
//!
//! Lifecycle (documented in <https://www.cockroachlabs.com/docs/stable/deploy-cockroachdb-on-premises-insecure>):
//! `cockroach start --insecure --join=…` on every node, then `cockroach init
//! --insecure --host=…` once.

use crate::client::ClientError;
use crate::cluster::{Daemon, Layout, Plan, Spec, Step, Tarball, host_ports, install_steps, log};
use crate::pgwire::{Dialect, PgWireError, PgWireFactory, Target, message_contains};
use crate::sql::{DataModel, Isolation, TxnPhase, TxnTables, classify_pg};
use nemesis::Node;
use std::time::Duration;

/// CockroachDB's SQL port.
pub const DEFAULT_PORT: u16 = 26257;
/// CockroachDB's DB Console (HTTP) port.
pub const DEFAULT_HTTP_PORT: u16 = 8080;

/// Checks `--isolation` for CockroachDB.
///
/// # Errors
/// Names the level and the accepted ones.
pub fn check_isolation(i: Isolation) -> Result<Isolation, String> {
    match i {
        Isolation::Serializable | Isolation::ReadCommitted => Ok(i),
        other => Err(format!(
            "--isolation {other}: CockroachDB runs serializable or read-committed transactions only"
        )),
    }
}

/// Classifies a CockroachDB error.
///
/// * 40003 `statement_completion_unknown` ("result is ambiguous") →
///   indefinite, whatever the phase: CockroachDB may have committed;
/// * 40001 (`restart transaction: TransactionRetryWithProtoRefreshError …`)
///   → definite;
/// * otherwise [`classify_pg`] (before `COMMIT` definite; a lost connection
///   during `COMMIT` indefinite).
pub fn classify(err: &tokio_postgres::Error, phase: TxnPhase) -> ClientError {
    let code = err.code().map(|c| c.code().to_string());
    if code.as_deref() == Some("40003") || message_contains(err, "result is ambiguous") {
        let mut e = classify_pg(err, phase);
        e.code = "40003".to_string();
        return crate::pgwire::indefinite(e);
    }
    if code.is_none() && message_contains(err, "restart transaction") {
        return ClientError::definite("40001", err.to_string());
    }
    classify_pg(err, phase)
}

/// The CockroachDB dialect of the PG-wire client.
pub fn dialect(isolation: Isolation, select_for_update: bool) -> Dialect {
    let mut setup_statements = Vec::new();
    if isolation == Isolation::ReadCommitted {
        // https://www.cockroachlabs.com/docs/stable/read-committed#enable-read-committed-isolation
        setup_statements.push(
            "SET CLUSTER SETTING sql.txn.read_committed_isolation.enabled = true".to_string(),
        );
    }
    Dialect {
        db: "CockroachDB",
        classify,
        setup_statements,
        version_marker: "CockroachDB",
        read_lock: select_for_update.then_some(" FOR UPDATE"),
    }
}

/// Clients connect as `root` (insecure mode) to `defaultdb` on every node.
pub fn node_target(port: u16) -> Target {
    Target::Nodes {
        port,
        user: "root".to_string(),
        dbname: "defaultdb".to_string(),
    }
}

/// A CockroachDB client factory.
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
    PgWireFactory::new(
        target,
        isolation,
        model,
        TxnTables::default(),
        dialect(isolation, select_for_update),
    )
    .map_err(|e: PgWireError| e.to_string())
}

/// Settings of a CockroachDB cluster.
#[derive(Clone, Debug)]
pub struct CockroachConfig {
    /// Node-side directories.
    pub layout: Layout,
    /// The release tarball.
    pub tarball: Tarball,
    /// SQL/RPC port.
    pub port: u16,
    /// DB Console port.
    pub http_port: u16,
    /// The cluster runs already (`--no-setup`).
    pub no_setup: bool,
}

impl CockroachConfig {
    /// Defaults: `/var/lib/harness/cockroach`, ports 26257 and 8080.
    pub fn new(tarball: Tarball) -> CockroachConfig {
        CockroachConfig {
            layout: Layout {
                base: "/var/lib/harness/cockroach".to_string(),
            },
            tarball,
            port: DEFAULT_PORT,
            http_port: DEFAULT_HTTP_PORT,
            no_setup: false,
        }
    }

    fn bin(&self, node: &str) -> String {
        format!("{}/cockroach", self.layout.dist(node))
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
        let dir = self.layout.dir(&node.name);
        let addr = format!("{}:{}", node.host, self.port);
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
                    host_ports(nodes.iter().map(|n| n.host.as_str()), self.port)
                ),
                format!("--store=path={dir}/data"),
                "--cache=.25".to_string(),
                "--max-sql-memory=.25".to_string(),
                format!("--log-dir={dir}/logs"),
            ],
            cwd: dir.clone(),
            pid_file: self.layout.pid_file(&node.name, "cockroach"),
            stdout: self.layout.stdout_file(&node.name, "cockroach"),
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
                self.port
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
                self.port
            ),
        )
        .retry(120, Duration::from_secs(1))
    }

    /// The whole lifecycle of a cluster on `nodes`.
    pub fn spec(&self, nodes: &[Node]) -> Spec {
        let mut setup = Plan::default();
        for n in nodes {
            setup.extend(install_steps(
                &self.layout,
                &n.name,
                &self.tarball,
                "CockroachDB",
                &["cockroach"],
            ));
        }
        let daemons: Vec<(String, Daemon)> = nodes
            .iter()
            .map(|n| (n.name.clone(), self.daemon(n, nodes)))
            .collect();
        for (node, d) in &daemons {
            setup.push(Step::run(node, "start cockroach", d.start_cmd()));
        }
        if let Some(first) = nodes.first() {
            setup.push(self.init_step(first));
        }
        let mut ready = Plan::default();
        for n in nodes {
            ready.push(self.ready_step(n));
        }
        let mut logs = Vec::new();
        let mut wipe = Vec::new();
        for n in nodes {
            let dir = self.layout.dir(&n.name);
            logs.push(log(
                &n.name,
                format!("{dir}/logs/cockroach.log"),
                "cockroach.log",
            ));
            logs.push(log(
                &n.name,
                self.layout.stdout_file(&n.name, "cockroach"),
                "cockroach.stdout.log",
            ));
            wipe.push((n.name.clone(), format!("{dir}/data")));
            wipe.push((n.name.clone(), format!("{dir}/logs")));
        }
        for n in nodes {
            logs.push(crate::cluster::unpack_log(&self.layout, &n.name));
        }
        Spec {
            name: "cockroach",
            setup,
            ready,
            daemons,
            wipe,
            logs,
            client_nodes: nodes.to_vec(),
            primaries: Vec::new(),
            no_setup: self.no_setup,
        }
    }
}
