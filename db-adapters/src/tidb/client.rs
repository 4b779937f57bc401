//! TiDB's client: its isolation levels, error classification, dialect
//! and client factory (see the module doc of `super`).

use crate::client::{BoxFuture, Client, ClientError, ClientFactory};
use crate::mysql::client::{MysqlConnSource, MysqlTxnClient, MysqlTxnDialect, classify_mysql};
use crate::sql::{DataModel, Isolation, TxnPhase, TxnTables};
use mysql_async::prelude::Queryable;
use nemesis::Node;
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
    /// `--version-order db`: record `commit-ts`/`start-ts` from
    /// `@@tidb_last_txn_info` after each `COMMIT`.
    pub version_order_db: bool,
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
            version_order_db: false,
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
            after_commit: self.version_order_db.then_some((
                super::whitebox::LAST_TXN_SQL,
                super::whitebox::extra as fn(&str) -> _,
            )),
        }
    }
}
