//! The MariaDB/Galera client: one mysql_async connection per worker,
//! Jepsen's append schema (`txnN(id, sk, val)`), list-append as
//! `INSERT … ON DUPLICATE KEY UPDATE val = CONCAT(val, ',', ?)`, every
//! transaction an explicit `START TRANSACTION … COMMIT`, never retried.

use crate::client::{BoxFuture, Client, ClientError, ClientFactory};
use crate::sql::{
    DataModel, Isolation, TxnPhase, TxnTables, decode_read, int_key, int_val, reconnect_backoff,
};
use mysql_async::prelude::Queryable;
use nemesis::Node;
use std::time::{Duration, Instant};
use store::MicroOp;

/// MariaDB error codes with a known meaning for the outcome.
mod code {
    /// ER_LOCK_DEADLOCK; Galera reports certification conflicts with it too.
    pub const DEADLOCK: u16 = 1213;
    /// ER_LOCK_WAIT_TIMEOUT.
    pub const LOCK_WAIT_TIMEOUT: u16 = 1205;
    /// ER_UNKNOWN_COM_ERROR: "WSREP has not yet prepared node for application use".
    pub const WSREP_NOT_READY: u16 = 1047;
}

/// Classifies a mysql_async error by the phase it happened in.
///
/// * 1213 (deadlock, Galera certification conflict), 1205 (lock wait
///   timeout), 1047 (node not in the primary component) → definite at any
///   phase: the server rolled the transaction back or never ran it;
/// * any error before `COMMIT` was sent → definite (the server rolls back an
///   uncommitted transaction on error or disconnect);
/// * at `COMMIT`: any other server error or a lost connection → indefinite.
pub fn classify_mysql(err: &mysql_async::Error, phase: TxnPhase) -> ClientError {
    match err {
        mysql_async::Error::Server(s) => {
            let tag = match s.code {
                code::DEADLOCK if s.message.contains("WSREP") => "wsrep-conflict".to_string(),
                code::DEADLOCK => "deadlock".to_string(),
                code::LOCK_WAIT_TIMEOUT => "lock-wait-timeout".to_string(),
                code::WSREP_NOT_READY => "wsrep-not-ready".to_string(),
                c => c.to_string(),
            };
            let detail = format!("{} ({}): {}", s.code, s.state, s.message);
            let definite = matches!(
                s.code,
                code::DEADLOCK | code::LOCK_WAIT_TIMEOUT | code::WSREP_NOT_READY
            ) || phase == TxnPhase::BeforeCommit;
            if definite {
                ClientError::definite(tag, detail)
            } else {
                ClientError::indefinite(tag, detail)
            }
        }
        other => match phase {
            TxnPhase::BeforeCommit => {
                ClientError::definite("connection-lost-before-commit", other.to_string())
            }
            TxnPhase::Commit => {
                ClientError::indefinite("connection-lost-during-commit", other.to_string())
            }
        },
    }
}

/// Opens mysql_async connections to MariaDB nodes (the node's host, a fixed
/// port) and creates the schema.
#[derive(Clone, Debug)]
pub struct MysqlFactory {
    /// Server port on every node.
    pub port: u16,
    /// Login user.
    pub user: String,
    /// Password.
    pub password: String,
    /// Database (schema) name.
    pub database: String,
    /// Isolation level of every transaction.
    pub isolation: Isolation,
    /// List-append or rw-register.
    pub model: DataModel,
    /// Table layout.
    pub tables: TxnTables,
    /// Limit for opening a connection.
    pub connect_timeout: Duration,
}

impl MysqlFactory {
    /// A factory for `isolation` and `model` with harness's default login
    /// (`harness`/`harness`, database `harness`, port 3306).
    ///
    /// # Errors
    /// A message naming the level when MariaDB has no such level.
    pub fn new(isolation: Isolation, model: DataModel) -> Result<MysqlFactory, String> {
        if isolation == Isolation::SnapshotIsolation {
            return Err(
                "--isolation snapshot-isolation: MariaDB has no snapshot isolation level; use serializable, repeatable-read, read-committed or read-uncommitted"
                    .to_string(),
            );
        }
        Ok(MysqlFactory {
            port: 3306,
            user: "harness".to_string(),
            password: "harness".to_string(),
            database: "harness".to_string(),
            isolation,
            model,
            tables: TxnTables::default(),
            connect_timeout: Duration::from_secs(5),
        })
    }

    fn level_sql(&self) -> &'static str {
        match self.isolation {
            Isolation::Serializable => "SERIALIZABLE",
            Isolation::SnapshotIsolation | Isolation::RepeatableRead => "REPEATABLE READ",
            Isolation::ReadCommitted => "READ COMMITTED",
            Isolation::ReadUncommitted => "READ UNCOMMITTED",
        }
    }

    /// A session connection to `node` at the factory's isolation level.
    pub(crate) async fn connect(&self, node: &Node) -> Result<mysql_async::Conn, ClientError> {
        let opts = mysql_async::OptsBuilder::default()
            .ip_or_hostname(node.host.clone())
            .tcp_port(self.port)
            .user(Some(self.user.clone()))
            .pass(Some(self.password.clone()))
            .db_name(Some(self.database.clone()))
            .prefer_socket(false)
            .init(vec![format!(
                "SET SESSION TRANSACTION ISOLATION LEVEL {}",
                self.level_sql()
            )]);
        match tokio::time::timeout(self.connect_timeout, mysql_async::Conn::new(opts)).await {
            Err(_) => Err(ClientError::definite(
                "connect-timeout",
                format!(
                    "node {}: no connection within {} ms",
                    node.name,
                    self.connect_timeout.as_millis()
                ),
            )),
            Ok(Err(e)) => Err(ClientError::definite(
                "connect",
                format!("node {}: cannot connect: {e}", node.name),
            )),
            Ok(Ok(c)) => Ok(c),
        }
    }

    /// `txnI` create statement.
    fn create_sql(&self, t: usize) -> String {
        format!(
            "CREATE TABLE IF NOT EXISTS txn{t} (id BIGINT NOT NULL PRIMARY KEY, sk BIGINT NOT NULL, val TEXT) ENGINE=InnoDB"
        )
    }
}

impl ClientFactory for MysqlFactory {
    fn setup<'a>(&'a self, node: &'a Node) -> BoxFuture<'a, Result<(), ClientError>> {
        Box::pin(async move {
            let mut conn = self.connect(node).await?;
            for t in 0..self.tables.table_count {
                for sql in [format!("DROP TABLE IF EXISTS txn{t}"), self.create_sql(t)] {
                    conn.query_drop(sql).await.map_err(|e| {
                        ClientError::definite(
                            "setup",
                            format!("node {}: creating tables: {e}", node.name),
                        )
                    })?;
                }
            }
            let _ = conn.disconnect().await;
            Ok(())
        })
    }

    fn open<'a>(&'a self, node: &'a Node) -> BoxFuture<'a, Result<Box<dyn Client>, ClientError>> {
        Box::pin(async move {
            let conn = self.connect(node).await?;
            Ok(Box::new(MysqlTxnClient::new(self.clone(), node.clone(), conn)) as Box<dyn Client>)
        })
    }
}

/// What differs between MySQL-wire databases (MariaDB/Galera, TiDB) in the
/// shared transaction loop.
#[derive(Clone, Copy, Debug)]
pub(crate) struct MysqlTxnDialect {
    /// Error classification.
    pub classify: fn(&mysql_async::Error, TxnPhase) -> ClientError,
    /// Reads take `SELECT … FOR UPDATE`.
    pub read_for_update: bool,
    /// Reject a micro-op of the other workload before the transaction
    /// (TiDB); MariaDB writes with the model's statement whatever the op.
    pub reject_wrong_workload: bool,
    /// A failed reconnect becomes `no-client` (TiDB) instead of keeping the
    /// connect error's code (MariaDB).
    pub reconnect_error_is_no_client: bool,
    /// After a fatal driver error before `COMMIT`, still try `ROLLBACK`
    /// before deciding to drop the connection (TiDB) instead of dropping it
    /// at once (MariaDB).
    pub rollback_after_fatal: bool,
    /// White-box certificates (`--version-order db`, TiDB): a statement
    /// run after a successful `COMMIT` whose one text column becomes the
    /// completion's extra fields. Its failure records nothing (the
    /// transaction did commit; the checker warns that some `ok`
    /// transactions carry no timestamp).
    pub after_commit: Option<AfterCommit>,
}

/// What the shared MySQL-wire client needs from a factory.
/// A statement and the parser of its one text column into extra fields.
pub(crate) type AfterCommit = (
    &'static str,
    fn(&str) -> Result<Vec<(String, store::Data)>, String>,
);

pub(crate) trait MysqlConnSource: Send + Sync + 'static {
    /// A fresh session connection to `node`.
    fn conn<'a>(&'a self, node: &'a Node) -> BoxFuture<'a, Result<mysql_async::Conn, ClientError>>;
    /// The data model.
    fn model(&self) -> DataModel;
    /// The table layout.
    fn tables(&self) -> TxnTables;
    /// The per-database differences.
    fn dialect(&self) -> MysqlTxnDialect;
}

impl MysqlConnSource for MysqlFactory {
    fn conn<'a>(&'a self, node: &'a Node) -> BoxFuture<'a, Result<mysql_async::Conn, ClientError>> {
        Box::pin(self.connect(node))
    }
    fn model(&self) -> DataModel {
        self.model
    }
    fn tables(&self) -> TxnTables {
        self.tables
    }
    fn dialect(&self) -> MysqlTxnDialect {
        MysqlTxnDialect {
            classify: classify_mysql,
            read_for_update: false,
            reject_wrong_workload: false,
            reconnect_error_is_no_client: false,
            rollback_after_fatal: false,
            after_commit: None,
        }
    }
}

/// The one MySQL-wire transaction client (MariaDB/Galera, TiDB): a
/// connection per worker, reconnected lazily with a backoff after it was
/// dropped, `START TRANSACTION / statements / COMMIT`, never retried.
pub(crate) struct MysqlTxnClient<S> {
    source: S,
    node: Node,
    conn: Option<mysql_async::Conn>,
    /// When a connect failed or the connection was dropped after an error:
    /// the next connect waits out the backoff from then. Without it, a node
    /// that accepts connections but fails every query (Galera's 1047 "WSREP
    /// has not yet prepared node") made each worker reconnect hundreds of
    /// times a second: ~15k sockets in TIME_WAIT after one 60 s run, and the
    /// next test could not get a local port (EADDRNOTAVAIL).
    last_failure: Option<Instant>,
    /// The last `ok` transaction's white-box fields.
    extra: Vec<(String, store::Data)>,
}

impl<S: MysqlConnSource> MysqlTxnClient<S> {
    /// A client over an open connection.
    pub(crate) fn new(source: S, node: Node, conn: mysql_async::Conn) -> Self {
        MysqlTxnClient {
            source,
            node,
            conn: Some(conn),
            last_failure: None,
            extra: Vec::new(),
        }
    }

    async fn ensure_conn(&mut self, d: &MysqlTxnDialect) -> Result<(), ClientError> {
        if self.conn.is_some() {
            return Ok(());
        }
        reconnect_backoff(self.last_failure).await;
        match self.source.conn(&self.node).await {
            Ok(c) => {
                self.conn = Some(c);
                self.last_failure = None;
                Ok(())
            }
            Err(e) => {
                self.last_failure = Some(Instant::now());
                if d.reconnect_error_is_no_client {
                    Err(ClientError::definite("no-client", e.message))
                } else {
                    Err(e)
                }
            }
        }
    }

    async fn body(
        conn: &mut mysql_async::Conn,
        d: &MysqlTxnDialect,
        model: DataModel,
        tables: TxnTables,
        txn: &[MicroOp],
    ) -> Result<Vec<MicroOp>, (ClientError, bool)> {
        // The flag: whether the error leaves the connection unusable (the
        // driver's verdict; a read no client wrote counts as fatal).
        let before =
            |e: mysql_async::Error| ((d.classify)(&e, TxnPhase::BeforeCommit), e.is_fatal());
        conn.query_drop("START TRANSACTION").await.map_err(before)?;
        if let Some((id, old, new)) = crate::register::cas_parts(txn).map_err(|e| (e, false))? {
            let t = tables.table_of(id);
            conn.exec_drop(
                crate::register::mysql_cas_sql(t),
                (new.to_string(), id, old.to_string()),
            )
            .await
            .map_err(before)?;
            let mut matched = conn.affected_rows() > 0;
            if !matched && old == new {
                // MariaDB counts changed rows: a matching cas old → old
                // changes none. Look, inside the same transaction.
                let row: Option<Option<String>> = conn
                    .exec_first(tables.mysql_read_sql(t, true), (id,))
                    .await
                    .map_err(before)?;
                matched = row.flatten() == Some(old.to_string());
            }
            if !matched {
                return Err((crate::register::cas_mismatch(id, old), false));
            }
            return Ok(txn.to_vec());
        }
        let mut out = Vec::with_capacity(txn.len());
        for mop in txn {
            if let MicroOp::ReadRange(r) = mop {
                let (lo, hi) = crate::predicate::bounds(r).map_err(|e| (e, true))?;
                let params: Vec<mysql_async::Value> = (0..tables.table_count.max(1))
                    .flat_map(|_| [lo.into(), hi.into()])
                    .collect();
                let done = if r.is_count() {
                    let n: Option<i64> = conn
                        .exec_first(crate::predicate::mysql_count_sql(&tables), params)
                        .await
                        .map_err(before)?;
                    // count(*) always answers one row: none is no count.
                    let n = n.ok_or_else(|| {
                        ClientError::indefinite("unparseable-read", "count(*) returned no row")
                    });
                    n.and_then(|n| crate::predicate::complete_count(r, n))
                } else {
                    let rows: Vec<(i64, Option<String>)> = conn
                        .exec(crate::predicate::mysql_range_sql(&tables), params)
                        .await
                        .map_err(before)?;
                    crate::predicate::complete(r, rows)
                }
                .map_err(|e| (e, true))?;
                out.push(MicroOp::ReadRange(Box::new(done)));
                continue;
            }
            let id = int_key(mop.key()).map_err(|e| (e, true))?;
            let t = tables.table_of(id);
            match mop {
                MicroOp::Read(k, _) => {
                    let row: Option<Option<String>> = conn
                        .exec_first(tables.mysql_read_sql(t, d.read_for_update), (id,))
                        .await
                        .map_err(before)?;
                    let text = row.flatten();
                    let value = decode_read(model, text.as_deref()).map_err(|e| (e, true))?;
                    out.push(MicroOp::Read(k.clone(), value));
                }
                MicroOp::Append(_, v) | MicroOp::Write(_, v) => {
                    let val = int_val(v).map_err(|e| (e, true))?.to_string();
                    let sql = match model {
                        DataModel::ListAppend => tables.mysql_append_sql(t),
                        DataModel::RwRegister => tables.mysql_write_sql(t),
                    };
                    conn.exec_drop(sql, (id, id, val.clone(), val))
                        .await
                        .map_err(before)?;
                    out.push(mop.clone());
                }
                MicroOp::ReadRange(_) => {}
            }
        }
        Ok(out)
    }

    async fn run(&mut self, txn: &[MicroOp]) -> Result<Vec<MicroOp>, ClientError> {
        let d = self.source.dialect();
        let model = self.source.model();
        for mop in txn {
            int_key(mop.key())?;
            if let MicroOp::Append(_, v) | MicroOp::Write(_, v) = mop {
                int_val(v)?;
                if d.reject_wrong_workload
                    && matches!(mop, MicroOp::Append(..)) != (model == DataModel::ListAppend)
                {
                    return Err(ClientError::definite(
                        "wrong-workload",
                        format!("micro-op {} does not belong to this workload", mop.f_name()),
                    ));
                }
            }
        }
        self.ensure_conn(&d).await?;
        self.extra.clear();
        let tables = self.source.tables();
        let Some(conn) = self.conn.as_mut() else {
            let code = if d.reconnect_error_is_no_client {
                "no-client"
            } else {
                "connect"
            };
            return Err(ClientError::definite(code, "no connection"));
        };
        let out = match Self::body(conn, &d, model, tables, txn).await {
            Ok(out) => out,
            Err((err, fatal)) => {
                // COMMIT was never sent: roll back so the connection is
                // usable again, or drop it.
                let fatal = fatal && !d.rollback_after_fatal;
                if fatal || conn.query_drop("ROLLBACK").await.is_err() {
                    self.conn = None;
                    self.last_failure = Some(Instant::now());
                }
                return Err(err);
            }
        };
        match conn.query_drop("COMMIT").await {
            Ok(()) => {
                if let Some(after) = d.after_commit {
                    self.extra = after_commit(conn, after).await;
                }
                Ok(out)
            }
            Err(e) => {
                let err = (d.classify)(&e, TxnPhase::Commit);
                if e.is_fatal() || conn.query_drop("ROLLBACK").await.is_err() {
                    self.conn = None;
                    self.last_failure = Some(Instant::now());
                }
                Err(err)
            }
        }
    }
}

/// Runs `after`'s statement on a committed transaction's connection; what
/// it cannot read is logged and left out (never a failed transaction).
async fn after_commit(
    conn: &mut mysql_async::Conn,
    after: AfterCommit,
) -> Vec<(String, store::Data)> {
    let (sql, parse) = after;
    let text: Result<Option<Option<String>>, _> = conn.query_first(sql).await;
    match text.map(Option::flatten) {
        Ok(Some(t)) => parse(&t).unwrap_or_else(|e| {
            tracing::warn!("`{sql}`: {e}");
            Vec::new()
        }),
        Ok(None) => Vec::new(),
        Err(e) => {
            tracing::warn!("`{sql}`: {e}");
            Vec::new()
        }
    }
}

impl<S: MysqlConnSource> Client for MysqlTxnClient<S> {
    fn invoke<'a>(
        &'a mut self,
        txn: &'a [MicroOp],
    ) -> BoxFuture<'a, Result<Vec<MicroOp>, ClientError>> {
        Box::pin(self.run(txn))
    }

    fn take_extra(&mut self) -> Vec<(String, store::Data)> {
        std::mem::take(&mut self.extra)
    }

    fn close(self: Box<Self>) -> BoxFuture<'static, ()> {
        Box::pin(async move {
            if let Some(c) = self.conn {
                let _ = c.disconnect().await;
            }
        })
    }
}

/// A server error as MySQL-wire servers send it (for the classifiers' tests).
#[cfg(test)]
pub(crate) fn server_error(code: u16, state: &str, message: &str) -> mysql_async::Error {
    mysql_async::Error::Server(mysql_async::ServerError {
        code,
        message: message.to_string(),
        state: state.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::ErrorKind;

    fn server(code: u16, msg: &str) -> mysql_async::Error {
        server_error(code, "40001", msg)
    }

    #[test]
    fn classification_follows_the_phase() {
        let w = classify_mysql(
            &server(
                1213,
                "WSREP detected deadlock/conflict and aborted the transaction. Try restarting the transaction",
            ),
            TxnPhase::Commit,
        );
        assert_eq!(
            (w.kind, w.code.as_str()),
            (ErrorKind::Definite, "wsrep-conflict")
        );
        let d = classify_mysql(
            &server(1213, "Deadlock found when trying to get lock"),
            TxnPhase::BeforeCommit,
        );
        assert_eq!((d.kind, d.code.as_str()), (ErrorKind::Definite, "deadlock"));
        let l = classify_mysql(
            &server(1205, "Lock wait timeout exceeded"),
            TxnPhase::BeforeCommit,
        );
        assert_eq!(l.kind, ErrorKind::Definite);
        let other_at_commit =
            classify_mysql(&server(1180, "Got error during COMMIT"), TxnPhase::Commit);
        assert_eq!(other_at_commit.kind, ErrorKind::Indefinite);
        let io = mysql_async::Error::Io(mysql_async::IoError::Io(std::io::Error::new(
            std::io::ErrorKind::ConnectionReset,
            "reset",
        )));
        assert_eq!(
            classify_mysql(&io, TxnPhase::Commit).kind,
            ErrorKind::Indefinite
        );
        assert_eq!(
            classify_mysql(&io, TxnPhase::BeforeCommit).kind,
            ErrorKind::Definite
        );
    }

    #[test]
    fn snapshot_isolation_is_rejected() {
        assert!(MysqlFactory::new(Isolation::SnapshotIsolation, DataModel::ListAppend).is_err());
        assert!(MysqlFactory::new(Isolation::RepeatableRead, DataModel::ListAppend).is_ok());
    }
}
