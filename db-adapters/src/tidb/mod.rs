//! TiDB: the client (MySQL wire on port 4000, mysql_async; Jepsen's TiDB
//! append schema — 7 tables `txnN(id, sk, val)`, `INSERT … ON DUPLICATE KEY
//! UPDATE val = CONCAT(val, ',', ?)`, optional `SELECT … FOR UPDATE` reads)
//! and the cluster lifecycle (roles `pd`, `tikv`, `tidb`, started in that
//! order) from a release tarball, as command plans.
//!
//! Session settings: `--txn-mode optimistic|pessimistic` sets
//! `tidb_txn_mode`; `--auto-retry on|off` sets `tidb_disable_txn_auto_retry`
//! (and `tidb_retry_limit`, 0 for `off` unless `--auto-retry-limit` says
//! otherwise) — the settings behind TiDB 2.1's anomalies. Accepted
//! `--isolation` levels: `repeatable-read` (TiDB's snapshot isolation, the
//! default; `snapshot-isolation` is a synonym) and `read-committed`
//! (pessimistic mode only). TiDB rejects SERIALIZABLE.
//!
//! Errors: write conflicts (9007, 8005), `SELECT FOR UPDATE` not retryable
//! (8002), commit failed and rolled back (8022), information schema changed
//! (8028), deadlock (1213) and lock wait timeout (1205) → `fail` at any
//! phase; everything else as [`crate::mysql::client::classify_mysql`]
//! (before `COMMIT` definite, a lost connection at `COMMIT` indefinite).
//!
//! Key decision: the factory checks the server really is TiDB
//! (`SELECT tidb_version()`), because the `tidb_*` session variables are
//! what makes the test meaningful; [`TidbFactory::allow_non_tidb_server`]
//! lifts that for tests of the shared MySQL-wire path against MariaDB, and
//! then skips the TiDB-only variables.

use crate::client::{BoxFuture, Client, ClientError, ClientFactory};
use crate::cluster::{Daemon, Layout, Plan, Spec, Step, Tarball, host_ports, install_steps, log};
use crate::mysql::client::{MysqlConnSource, MysqlTxnClient, MysqlTxnDialect, classify_mysql};
use crate::sql::{DataModel, Isolation, TxnPhase, TxnTables};
use mysql_async::prelude::Queryable;
use nemesis::Node;
use std::collections::BTreeMap;
use std::time::Duration;

/// tidb-server's MySQL port.
pub const DEFAULT_PORT: u16 = 4000;

/// Tables of the append schema on TiDB (Jepsen's TiDB suite uses 7).
pub const TABLES: TxnTables = TxnTables { table_count: 7 };

/// TiDB error codes that prove the transaction was rolled back
/// (<https://docs.pingcap.com/tidb/stable/error-codes>), plus MySQL's
/// deadlock (1213) and lock wait timeout (1205).
pub const DEFINITE_CODES: [u16; 8] = [9007, 8005, 8002, 8022, 8028, 1213, 1205, 9006];

/// Classifies a TiDB error (see the module docs).
pub fn classify(err: &mysql_async::Error, phase: TxnPhase) -> ClientError {
    let base = classify_mysql(err, phase);
    if let mysql_async::Error::Server(s) = err
        && DEFINITE_CODES.contains(&s.code)
    {
        let tag = match s.code {
            9007 | 8005 => "write-conflict".to_string(),
            8002 => "select-for-update-conflict".to_string(),
            8022 => "txn-rolled-back".to_string(),
            8028 => "info-schema-changed".to_string(),
            _ => base.code.clone(),
        };
        return ClientError::definite(tag, base.message);
    }
    base
}

/// TiDB's transaction mode (`tidb_txn_mode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TxnMode {
    /// Conflicts detected at commit.
    Optimistic,
    /// Row locks taken as statements run.
    Pessimistic,
}

impl TxnMode {
    /// Parses `optimistic` or `pessimistic`.
    ///
    /// # Errors
    /// Names the value.
    pub fn parse(s: &str) -> Result<TxnMode, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "optimistic" => Ok(TxnMode::Optimistic),
            "pessimistic" => Ok(TxnMode::Pessimistic),
            _ => Err(format!(
                "--txn-mode {s:?}: expected optimistic or pessimistic"
            )),
        }
    }

    fn sql(self) -> &'static str {
        match self {
            TxnMode::Optimistic => "optimistic",
            TxnMode::Pessimistic => "pessimistic",
        }
    }
}

impl std::str::FromStr for TxnMode {
    type Err = String;
    fn from_str(s: &str) -> Result<TxnMode, String> {
        TxnMode::parse(s)
    }
}

/// TiDB's automatic retry of optimistic transactions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AutoRetry {
    /// Leave the server's setting.
    Default,
    /// `tidb_disable_txn_auto_retry = OFF`.
    On,
    /// `tidb_disable_txn_auto_retry = ON`.
    Off,
}

impl AutoRetry {
    /// Parses `on`/`off`/`default` (also `true`/`false`).
    ///
    /// # Errors
    /// Names the value.
    pub fn parse(s: &str) -> Result<AutoRetry, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "on" | "true" => Ok(AutoRetry::On),
            "off" | "false" => Ok(AutoRetry::Off),
            "default" => Ok(AutoRetry::Default),
            _ => Err(format!("--auto-retry {s:?}: expected on, off or default")),
        }
    }
}

impl std::str::FromStr for AutoRetry {
    type Err = String;
    fn from_str(s: &str) -> Result<AutoRetry, String> {
        AutoRetry::parse(s)
    }
}

/// TiDB client options.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TidbOptions {
    /// `tidb_txn_mode`; `None` leaves the server default (pessimistic since 3.0.8).
    pub txn_mode: Option<TxnMode>,
    /// Auto retry.
    pub auto_retry: AutoRetry,
    /// `tidb_retry_limit`.
    pub retry_limit: Option<u32>,
    /// Reads take row locks (`SELECT … FOR UPDATE`, Jepsen's `--read-lock`).
    pub select_for_update: bool,
}

impl Default for TidbOptions {
    fn default() -> TidbOptions {
        TidbOptions {
            txn_mode: None,
            auto_retry: AutoRetry::Default,
            retry_limit: None,
            select_for_update: false,
        }
    }
}

impl TidbOptions {
    /// The TiDB-only session statements these options need, in order.
    pub fn session_sql(&self) -> Vec<String> {
        let mut v = Vec::new();
        if let Some(m) = self.txn_mode {
            v.push(format!("SET SESSION tidb_txn_mode = '{}'", m.sql()));
        }
        match self.auto_retry {
            AutoRetry::Default => {}
            AutoRetry::On => v.push("SET SESSION tidb_disable_txn_auto_retry = OFF".to_string()),
            AutoRetry::Off => v.push("SET SESSION tidb_disable_txn_auto_retry = ON".to_string()),
        }
        let limit = match (self.retry_limit, self.auto_retry) {
            (Some(l), _) => Some(l),
            (None, AutoRetry::Off) => Some(0),
            _ => None,
        };
        if let Some(l) = limit {
            v.push(format!("SET SESSION tidb_retry_limit = {l}"));
        }
        v
    }
}

/// Checks `--isolation` for TiDB.
///
/// # Errors
/// Names the level and why it is not accepted.
pub fn check_isolation(i: Isolation, mode: Option<TxnMode>) -> Result<Isolation, String> {
    match i {
        Isolation::RepeatableRead | Isolation::SnapshotIsolation => Ok(Isolation::RepeatableRead),
        Isolation::ReadCommitted if mode == Some(TxnMode::Optimistic) => Err(
            "--isolation read-committed: TiDB runs READ COMMITTED in pessimistic mode only; use --txn-mode pessimistic"
                .to_string(),
        ),
        Isolation::ReadCommitted => Ok(i),
        other => Err(format!(
            "--isolation {other}: TiDB runs repeatable-read (snapshot isolation) or read-committed transactions only; pass --isolation repeatable-read"
        )),
    }
}

/// Opens mysql_async connections to TiDB servers and creates the schema.
#[derive(Clone, Debug)]
pub struct TidbFactory {
    /// Port on every node.
    pub port: u16,
    /// Login user.
    pub user: String,
    /// Password (empty for none).
    pub password: String,
    /// Database.
    pub database: String,
    /// `--url mysql://…`: connect there instead of to the nodes.
    pub url: Option<String>,
    /// Isolation level.
    pub isolation: Isolation,
    /// List-append or rw-register.
    pub model: DataModel,
    /// Tables (7, as Jepsen's TiDB suite).
    pub tables: TxnTables,
    /// TiDB session settings.
    pub options: TidbOptions,
    /// Limit for opening a connection.
    pub connect_timeout: Duration,
    require_tidb: bool,
}

impl TidbFactory {
    /// A factory with TiDB's defaults: `root` without password, database
    /// `test`, port 4000.
    ///
    /// # Errors
    /// An isolation level TiDB does not run, as a message.
    pub fn new(
        isolation: Isolation,
        model: DataModel,
        options: TidbOptions,
    ) -> Result<TidbFactory, String> {
        let isolation = check_isolation(isolation, options.txn_mode)?;
        Ok(TidbFactory {
            port: DEFAULT_PORT,
            user: "root".to_string(),
            password: String::new(),
            database: "test".to_string(),
            url: None,
            isolation,
            model,
            tables: TABLES,
            options,
            connect_timeout: Duration::from_secs(5),
            require_tidb: true,
        })
    }

    /// Accepts a server that is not TiDB (tests of the shared MySQL-wire
    /// path against MariaDB): TiDB-only session variables are skipped.
    pub fn allow_non_tidb_server(mut self) -> TidbFactory {
        self.require_tidb = false;
        self
    }

    fn opts(&self, node: &Node) -> Result<mysql_async::OptsBuilder, ClientError> {
        let b = match &self.url {
            Some(url) => {
                let o = mysql_async::Opts::from_url(url).map_err(|e| {
                    ClientError::definite("bad-url", format!("invalid TiDB URL: {e}"))
                })?;
                mysql_async::OptsBuilder::from_opts(o)
            }
            None => mysql_async::OptsBuilder::default()
                .ip_or_hostname(node.host.clone())
                .tcp_port(self.port)
                .user(Some(self.user.clone()))
                .pass((!self.password.is_empty()).then(|| self.password.clone()))
                .db_name(Some(self.database.clone())),
        };
        Ok(b.prefer_socket(false))
    }

    /// Connects, detects TiDB and applies the session settings. Returns the
    /// connection and `tidb_version()` (None on other servers).
    async fn connect(
        &self,
        node: &Node,
    ) -> Result<(mysql_async::Conn, Option<String>), ClientError> {
        let opts = self.opts(node)?;
        let mut conn =
            match tokio::time::timeout(self.connect_timeout, mysql_async::Conn::new(opts)).await {
                Err(_) => {
                    return Err(ClientError::definite(
                        "connect-timeout",
                        format!(
                            "node {}: no connection within {} ms",
                            node.name,
                            self.connect_timeout.as_millis()
                        ),
                    ));
                }
                Ok(Err(e)) => {
                    return Err(ClientError::definite(
                        "connect",
                        format!("node {}: cannot connect: {e}", node.name),
                    ));
                }
                Ok(Ok(c)) => c,
            };
        let setup_err = |e: mysql_async::Error| {
            ClientError::definite("session", format!("node {}: {e}", node.name))
        };
        let version: Option<String> =
            match conn.query_first::<String, _>("SELECT tidb_version()").await {
                Ok(v) => v,
                // 1305: FUNCTION tidb_version does not exist (MySQL, MariaDB).
                Err(mysql_async::Error::Server(s)) if s.code == 1305 => None,
                Err(e) => return Err(setup_err(e)),
            };
        if version.is_none() && self.require_tidb {
            return Err(ClientError::definite(
                "not-tidb",
                format!(
                    "node {}: the server is not TiDB (SELECT tidb_version() does not exist); --db tidb needs a TiDB server",
                    node.name
                ),
            ));
        }
        let mut stmts = vec![TxnTables::mysql_isolation_sql(self.isolation)];
        if version.is_some() {
            stmts.extend(self.options.session_sql());
        }
        for s in stmts {
            conn.query_drop(&s).await.map_err(setup_err)?;
        }
        Ok((conn, version))
    }

    /// `tidb_version()` of the server behind `node` (None when not TiDB).
    ///
    /// # Errors
    /// A definite error when it cannot be reached.
    pub async fn server_version(&self, node: &Node) -> Result<Option<String>, ClientError> {
        let (c, v) = self.connect(node).await?;
        let _ = c.disconnect().await;
        Ok(v)
    }

    /// The isolation level a session reports (`@@tx_isolation`, e.g.
    /// `REPEATABLE-READ`) after the session settings.
    ///
    /// # Errors
    /// A definite error when it cannot be queried.
    pub async fn effective_isolation(&self, node: &Node) -> Result<String, ClientError> {
        let (mut c, _) = self.connect(node).await?;
        let v: Option<String> = c
            .query_first("SELECT @@SESSION.tx_isolation")
            .await
            .map_err(|e| ClientError::definite("isolation", e.to_string()))?;
        let _ = c.disconnect().await;
        Ok(v.unwrap_or_default())
    }

    /// The value of a session variable as a client session sees it (for
    /// checking the TiDB settings).
    ///
    /// # Errors
    /// A definite error when it cannot be queried.
    pub async fn session_variable(
        &self,
        node: &Node,
        name: &str,
    ) -> Result<Option<String>, ClientError> {
        if !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(ClientError::definite(
                "bad-variable",
                format!("not a variable name: {name:?}"),
            ));
        }
        let (mut c, _) = self.connect(node).await?;
        let v: Option<Option<String>> = c
            .query_first(format!("SELECT @@SESSION.{name}"))
            .await
            .map_err(|e| ClientError::definite("variable", e.to_string()))?;
        let _ = c.disconnect().await;
        Ok(v.flatten())
    }
}

impl ClientFactory for TidbFactory {
    fn setup<'a>(&'a self, node: &'a Node) -> BoxFuture<'a, Result<(), ClientError>> {
        Box::pin(async move {
            let (mut conn, _) = self.connect(node).await?;
            for t in 0..self.tables.table_count {
                for sql in [self.tables.drop_sql(t), self.tables.mysql_create_sql(t)] {
                    conn.query_drop(&sql).await.map_err(|e| {
                        ClientError::definite("setup", format!("node {}: `{sql}`: {e}", node.name))
                    })?;
                }
            }
            let _ = conn.disconnect().await;
            Ok(())
        })
    }

    fn open<'a>(&'a self, node: &'a Node) -> BoxFuture<'a, Result<Box<dyn Client>, ClientError>> {
        Box::pin(async move {
            let (conn, _) = self.connect(node).await?;
            Ok(Box::new(MysqlTxnClient::new(self.clone(), node.clone(), conn)) as Box<dyn Client>)
        })
    }
}

/// TiDB on the shared MySQL-wire transaction loop.
impl MysqlConnSource for TidbFactory {
    fn conn<'a>(&'a self, node: &'a Node) -> BoxFuture<'a, Result<mysql_async::Conn, ClientError>> {
        Box::pin(async move { self.connect(node).await.map(|(c, _)| c) })
    }
    fn model(&self) -> DataModel {
        self.model
    }
    fn tables(&self) -> TxnTables {
        self.tables
    }
    fn dialect(&self) -> MysqlTxnDialect {
        MysqlTxnDialect {
            classify,
            read_for_update: self.options.select_for_update,
            reject_wrong_workload: true,
            reconnect_error_is_no_client: true,
            rollback_after_fatal: true,
        }
    }
}

/// A TiDB component.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Role {
    /// Placement Driver (`pd-server`).
    Pd,
    /// Storage (`tikv-server`).
    Tikv,
    /// SQL layer (`tidb-server`).
    Tidb,
}

impl Role {
    /// Every role, in start order.
    pub const ALL: [Role; 3] = [Role::Pd, Role::Tikv, Role::Tidb];

    /// `pd`, `tikv`, `tidb`.
    pub fn name(self) -> &'static str {
        match self {
            Role::Pd => "pd",
            Role::Tikv => "tikv",
            Role::Tidb => "tidb",
        }
    }

    /// The binary, relative to the unpacked release.
    pub fn binary(self) -> &'static str {
        match self {
            Role::Pd => "bin/pd-server",
            Role::Tikv => "bin/tikv-server",
            Role::Tidb => "bin/tidb-server",
        }
    }
}

/// Which nodes run which role.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Roles(pub BTreeMap<Role, Vec<Node>>);

impl Roles {
    /// Every role on every node (Jepsen's TiDB suite does this).
    pub fn spread(nodes: &[Node]) -> Roles {
        Roles(Role::ALL.iter().map(|r| (*r, nodes.to_vec())).collect())
    }

    /// Parses `--roles pd=n1,n2,n3;tikv=n1,n2,n3;tidb=n4,n5` against the
    /// test's nodes. Every role needs at least one node.
    ///
    /// # Errors
    /// Names the bad entry: unknown role or node, a duplicate or missing role.
    pub fn parse(s: &str, nodes: &[Node]) -> Result<Roles, String> {
        let mut map: BTreeMap<Role, Vec<Node>> = BTreeMap::new();
        for (i, part) in s
            .split(';')
            .map(str::trim)
            .filter(|p| !p.is_empty())
            .enumerate()
        {
            let Some((role, list)) = part.split_once('=') else {
                return Err(format!(
                    "--roles entry {} {part:?}: expected role=node,node,…",
                    i + 1
                ));
            };
            let role = match role.trim() {
                "pd" => Role::Pd,
                "tikv" | "kv" => Role::Tikv,
                "tidb" | "db" => Role::Tidb,
                other => {
                    return Err(format!(
                        "--roles entry {} {part:?}: unknown role {other:?} (expected pd, tikv or tidb)",
                        i + 1
                    ));
                }
            };
            if map.contains_key(&role) {
                return Err(format!(
                    "--roles entry {} {part:?}: role {} given twice",
                    i + 1,
                    role.name()
                ));
            }
            let mut members = Vec::new();
            for name in list.split(',').map(str::trim).filter(|n| !n.is_empty()) {
                let Some(n) = nodes.iter().find(|n| n.name == name) else {
                    return Err(format!(
                        "--roles entry {} {part:?}: unknown node {name:?}",
                        i + 1
                    ));
                };
                members.push(n.clone());
            }
            if members.is_empty() {
                return Err(format!(
                    "--roles entry {} {part:?}: role {} has no nodes",
                    i + 1,
                    role.name()
                ));
            }
            map.insert(role, members);
        }
        for r in Role::ALL {
            if !map.contains_key(&r) {
                return Err(format!("--roles {s:?}: role {} has no nodes", r.name()));
            }
        }
        Ok(Roles(map))
    }

    /// The nodes of `role`.
    pub fn nodes(&self, role: Role) -> &[Node] {
        self.0.get(&role).map(Vec::as_slice).unwrap_or(&[])
    }
}

/// Settings of a TiDB cluster.
#[derive(Clone, Debug)]
pub struct TidbConfig {
    /// Node-side directories.
    pub layout: Layout,
    /// The release tarball (with `bin/pd-server`, `bin/tikv-server`,
    /// `bin/tidb-server`, as `tidb-<version>-linux-amd64.tar.gz`).
    pub tarball: Tarball,
    /// Role assignment.
    pub roles: Roles,
    /// tidb-server's MySQL port.
    pub port: u16,
    /// The cluster runs already (`--no-setup`).
    pub no_setup: bool,
}

/// PD client port.
pub const PD_CLIENT_PORT: u16 = 2379;
/// PD peer port.
pub const PD_PEER_PORT: u16 = 2380;
/// TiKV port.
pub const TIKV_PORT: u16 = 20160;
/// TiKV status port.
pub const TIKV_STATUS_PORT: u16 = 20180;
/// tidb-server status port.
pub const TIDB_STATUS_PORT: u16 = 10080;

impl TidbConfig {
    /// Defaults: `/var/lib/harness/tidb`, port 4000.
    pub fn new(tarball: Tarball, roles: Roles) -> TidbConfig {
        TidbConfig {
            layout: Layout {
                base: "/var/lib/harness/tidb".to_string(),
            },
            tarball,
            roles,
            port: DEFAULT_PORT,
            no_setup: false,
        }
    }

    fn pd_endpoints(&self) -> String {
        host_ports(
            self.roles.nodes(Role::Pd).iter().map(|n| n.host.as_str()),
            PD_CLIENT_PORT,
        )
    }

    /// The daemon of `role` on `node`. Flags from PingCAP's command-line
    /// references:
    /// * pd-server (<https://docs.pingcap.com/tidb/stable/command-line-flags-for-pd-configuration>):
    ///   `--name`, `--data-dir`, `--client-urls`, `--peer-urls`,
    ///   `--advertise-client-urls`, `--advertise-peer-urls`,
    ///   `--initial-cluster` (`name=peer-url,…` of every PD), `--log-file`;
    /// * tikv-server (<https://docs.pingcap.com/tidb/stable/command-line-flags-for-tikv-configuration>):
    ///   `--pd` (PD endpoints), `--addr`, `--advertise-addr`, `--status-addr`,
    ///   `--data-dir`, `--log-file`;
    /// * tidb-server (<https://docs.pingcap.com/tidb/stable/command-line-flags-for-tidb-configuration>):
    ///   `--store=tikv`, `--path` (PD endpoints), `--host`, `-P` (port),
    ///   `--status`, `--advertise-address`, `--log-file`.
    pub fn daemon(&self, role: Role, node: &Node) -> Daemon {
        let dir = self.layout.dir(&node.name);
        let h = &node.host;
        let args = match role {
            Role::Pd => {
                let initial: Vec<String> = self
                    .roles
                    .nodes(Role::Pd)
                    .iter()
                    .map(|n| format!("pd-{}=http://{}:{PD_PEER_PORT}", n.name, n.host))
                    .collect();
                vec![
                    format!("--name=pd-{}", node.name),
                    format!("--data-dir={dir}/pd"),
                    format!("--client-urls=http://{h}:{PD_CLIENT_PORT}"),
                    format!("--peer-urls=http://{h}:{PD_PEER_PORT}"),
                    format!("--advertise-client-urls=http://{h}:{PD_CLIENT_PORT}"),
                    format!("--advertise-peer-urls=http://{h}:{PD_PEER_PORT}"),
                    format!("--initial-cluster={}", initial.join(",")),
                    format!("--log-file={dir}/pd.log"),
                ]
            }
            Role::Tikv => vec![
                format!("--pd={}", self.pd_endpoints()),
                format!("--addr={h}:{TIKV_PORT}"),
                format!("--advertise-addr={h}:{TIKV_PORT}"),
                format!("--status-addr={h}:{TIKV_STATUS_PORT}"),
                format!("--data-dir={dir}/tikv"),
                format!("--log-file={dir}/tikv.log"),
            ],
            Role::Tidb => vec![
                "--store=tikv".to_string(),
                format!("--path={}", self.pd_endpoints()),
                format!("--host={h}"),
                "-P".to_string(),
                self.port.to_string(),
                format!("--status={TIDB_STATUS_PORT}"),
                format!("--advertise-address={h}"),
                format!("--log-file={dir}/tidb.log"),
            ],
        };
        Daemon {
            name: role.name().to_string(),
            bin: format!("{}/{}", self.layout.dist(&node.name), role.binary()),
            args,
            cwd: dir.clone(),
            pid_file: self.layout.pid_file(&node.name, role.name()),
            stdout: self.layout.stdout_file(&node.name, role.name()),
        }
    }

    /// Every node that runs some role, in test order.
    fn members(&self, nodes: &[Node]) -> Vec<Node> {
        nodes
            .iter()
            .filter(|n| Role::ALL.iter().any(|r| self.roles.nodes(*r).contains(n)))
            .cloned()
            .collect()
    }

    /// The whole lifecycle: install the binaries each node's roles need,
    /// then start every PD, wait until PD answers
    /// (`curl http://<pd>:2379/pd/api/v1/health`), start every TiKV, then
    /// every TiDB, and wait until each tidb-server answers on its status
    /// port (`curl http://<host>:10080/status`).
    pub fn spec(&self, nodes: &[Node]) -> Spec {
        let members = self.members(nodes);
        let mut setup = Plan::default();
        for n in &members {
            let bins: Vec<&str> = Role::ALL
                .iter()
                .filter(|r| self.roles.nodes(**r).contains(n))
                .map(|r| r.binary())
                .collect();
            setup.extend(install_steps(
                &self.layout,
                &n.name,
                &self.tarball,
                "TiDB",
                &bins,
            ));
        }
        let mut daemons = Vec::new();
        for role in Role::ALL {
            for n in self.roles.nodes(role) {
                let d = self.daemon(role, n);
                setup.push(Step::run(
                    &n.name,
                    format!("start {}-server", role.name()),
                    d.start_cmd(),
                ));
                daemons.push((n.name.clone(), d));
            }
            if role == Role::Pd {
                for n in self.roles.nodes(Role::Pd) {
                    setup.push(
                        Step::run(
                            &n.name,
                            "pd ready",
                            format!(
                                "curl -fsS http://{}:{PD_CLIENT_PORT}/pd/api/v1/health",
                                n.host
                            ),
                        )
                        .retry(120, Duration::from_secs(1)),
                    );
                }
            }
        }
        let mut ready = Plan::default();
        for n in self.roles.nodes(Role::Tidb) {
            ready.push(
                Step::run(
                    &n.name,
                    "tidb ready",
                    format!("curl -fsS http://{}:{TIDB_STATUS_PORT}/status", n.host),
                )
                .retry(180, Duration::from_secs(1)),
            );
        }
        let mut logs = Vec::new();
        let mut wipe = Vec::new();
        for n in &members {
            let dir = self.layout.dir(&n.name);
            for role in Role::ALL {
                if self.roles.nodes(role).contains(n) {
                    logs.push(log(
                        &n.name,
                        format!("{dir}/{}.log", role.name()),
                        &format!("{}.log", role.name()),
                    ));
                    logs.push(log(
                        &n.name,
                        self.layout.stdout_file(&n.name, role.name()),
                        &format!("{}.stdout.log", role.name()),
                    ));
                    wipe.push((n.name.clone(), format!("{dir}/{}", role.name())));
                    wipe.push((n.name.clone(), format!("{dir}/{}.log", role.name())));
                }
            }
        }
        for n in &members {
            logs.push(crate::cluster::unpack_log(&self.layout, &n.name));
        }
        Spec {
            name: "tidb",
            setup,
            ready,
            daemons,
            wipe,
            logs,
            client_nodes: self.roles.nodes(Role::Tidb).to_vec(),
            primaries: self.roles.nodes(Role::Pd).to_vec(),
            no_setup: self.no_setup,
        }
    }
}

/// Sends `signal` to the `role` daemon on `node` only (TiDB's per-role
/// faults: kill-pd, pause-kv, …): the plan to run with
/// [`crate::cluster::execute`].
pub fn role_signal_plan(cfg: &TidbConfig, role: Role, node: &Node, signal: &str) -> Plan {
    let d = cfg.daemon(role, node);
    let mut p = Plan::default();
    let cmd = if signal == "START" {
        d.start_cmd()
    } else {
        d.signal_cmd(signal)
    };
    p.push(Step::run(
        &node.name,
        format!("{signal} {}", role.name()),
        cmd,
    ));
    p
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::ErrorKind;

    fn server(code: u16, msg: &str) -> mysql_async::Error {
        mysql_async::Error::Server(mysql_async::ServerError {
            code,
            message: msg.to_string(),
            state: "HY000".to_string(),
        })
    }

    #[test]
    fn tidb_conflicts_are_definite_at_commit_and_timeouts_are_not() {
        let wc = classify(
            &server(
                9007,
                "Write conflict, txnStartTS=1, conflictStartTS=2, conflictCommitTS=3, key=k [try again later]",
            ),
            TxnPhase::Commit,
        );
        assert_eq!(
            (wc.kind, wc.code.as_str()),
            (ErrorKind::Definite, "write-conflict")
        );
        for (code, tag) in [
            (8005, "write-conflict"),
            (8002, "select-for-update-conflict"),
            (8022, "txn-rolled-back"),
            (8028, "info-schema-changed"),
            (1213, "deadlock"),
        ] {
            let e = classify(&server(code, "x"), TxnPhase::Commit);
            assert_eq!(
                (e.kind, e.code.as_str()),
                (ErrorKind::Definite, tag),
                "{code}"
            );
        }
        // TiKV server timeout while COMMIT is in flight: unknown outcome.
        assert_eq!(
            classify(&server(9002, "TiKV server timeout"), TxnPhase::Commit).kind,
            ErrorKind::Indefinite
        );
        assert_eq!(
            classify(&server(9002, "TiKV server timeout"), TxnPhase::BeforeCommit).kind,
            ErrorKind::Definite
        );
    }
}
