//! PostgreSQL through tokio-postgres: one connection per worker, Jepsen's
//! append schema ([`crate::sql::TxnTables`]), every transaction an explicit
//! `BEGIN ISOLATION LEVEL … / COMMIT`, never retried.
//!
//! Accepted `--isolation` levels: `serializable`, `repeatable-read` (which
//! PostgreSQL implements as snapshot isolation), `read-committed`,
//! `read-uncommitted` (PostgreSQL runs it as read committed). `snapshot-isolation`
//! is accepted as a synonym for `repeatable-read`.
//!
//! Errors: SQLSTATE 40001/40P01 and anything before `COMMIT` was sent are
//! `fail`; a connection lost while `COMMIT` was in flight is `info`
//! ([`crate::sql::classify_pg`]).
//!
//! Key decision: a client whose connection broke after a definite failure
//! reconnects lazily at its next invocation (with a short backoff) instead
//! of failing forever; a reconnect failure is a definite `fail` because no
//! request was sent.

pub mod cluster;
mod database;
pub mod jepsen;
pub mod local;
pub mod whitebox;

pub use database::Postgres;

use crate::client::{BoxFuture, Client, ClientError, ClientFactory};
use crate::pgwire::{Classifier, PgSession, PgSessionSource, PreCommitErrors};
use crate::sql::{DataModel, Isolation, TxnTables, classify_pg};
use nemesis::Node;
use std::str::FromStr;
use tokio_postgres::NoTls;

/// Errors configuring a PostgreSQL factory.
#[derive(Debug, thiserror::Error)]
pub enum PgError {
    /// The connection URL does not parse.
    #[error("invalid PostgreSQL URL {url:?}: {reason}")]
    BadUrl {
        /// The URL as given.
        url: String,
        /// What tokio-postgres said.
        reason: String,
    },
}

/// Opens connections to one PostgreSQL server.
#[derive(Clone)]
pub struct PgFactory {
    config: tokio_postgres::Config,
    isolation: Isolation,
    model: DataModel,
    tables: TxnTables,
    white_box: bool,
}

impl std::fmt::Debug for PgFactory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgFactory")
            .field("hosts", &self.config.get_hosts())
            .field("ports", &self.config.get_ports())
            .field("isolation", &self.isolation)
            .field("model", &self.model)
            .finish()
    }
}

impl PgFactory {
    /// A factory for `url` (`postgres://user@host:port/db` or key=value form).
    /// A connect timeout of 5 s is added unless the URL sets one.
    ///
    /// # Errors
    /// [`PgError::BadUrl`].
    pub fn new(url: &str, isolation: Isolation, model: DataModel) -> Result<PgFactory, PgError> {
        let mut config = tokio_postgres::Config::from_str(url).map_err(|e| PgError::BadUrl {
            url: url.to_string(),
            reason: e.to_string(),
        })?;
        crate::pgwire::with_defaults(&mut config);
        Ok(PgFactory {
            config,
            isolation,
            model,
            tables: TxnTables::default(),
            white_box: false,
        })
    }

    /// Records each transaction's id, snapshot and the `xmin` of every row
    /// read (`--version-order db`, [`whitebox`]).
    pub fn with_version_order_db(mut self) -> PgFactory {
        self.white_box = true;
        self
    }

    /// The isolation level transactions run at.
    pub fn isolation(&self) -> Isolation {
        self.isolation
    }

    async fn session(&self) -> Result<PgSession, ClientError> {
        open_session(&self.config, "cannot connect", self.tables, self.model).await
    }
}

/// Connects with `config`, its connection driven by a task of its own; a
/// failed connect is a definite error saying `what` (PostgreSQL, and
/// Patroni's primary-following pool).
pub(crate) async fn connect(
    config: &tokio_postgres::Config,
    what: &str,
) -> Result<tokio_postgres::Client, ClientError> {
    let (client, conn) = config
        .connect(NoTls)
        .await
        .map_err(|e| ClientError::definite("connect", format!("{what}: {e}")))?;
    tokio::spawn(async move {
        if let Err(e) = conn.await {
            tracing::debug!("postgres connection ended: {e}");
        }
    });
    Ok(client)
}

/// [`connect`], then a PostgreSQL session on the connection.
pub(crate) async fn open_session(
    config: &tokio_postgres::Config,
    what: &str,
    tables: TxnTables,
    model: DataModel,
) -> Result<PgSession, ClientError> {
    let client = connect(config, what).await?;
    PgSession::prepare(client, tables, model, None, classify_pg).await
}

/// Drops and creates the workload's tables. Values must be unique per key
/// across the whole table: data left by an earlier run would look like
/// garbage reads.
pub(crate) async fn recreate_tables(
    client: &tokio_postgres::Client,
    tables: TxnTables,
) -> Result<(), ClientError> {
    let mut sql = String::new();
    for t in 0..tables.table_count {
        sql.push_str(&tables.drop_sql(t));
        sql.push_str(";\n");
        sql.push_str(&tables.create_sql(t));
        sql.push_str(";\n");
    }
    client
        .batch_execute(&sql)
        .await
        .map_err(|e| ClientError::definite("setup", format!("creating tables: {e}")))
}

/// PostgreSQL on the shared PG-wire transaction loop: any error before
/// `COMMIT` is a definite `fail`.
impl PgSessionSource for PgFactory {
    fn session<'a>(&'a self, _node: &'a Node) -> BoxFuture<'a, Result<PgSession, ClientError>> {
        Box::pin(PgFactory::session(self))
    }
    fn model(&self) -> DataModel {
        self.model
    }
    fn tables(&self) -> TxnTables {
        self.tables
    }
    fn classify(&self) -> Classifier {
        classify_pg
    }
    fn pre_commit(&self) -> PreCommitErrors {
        PreCommitErrors::ForceDefinite
    }
    fn white_box(&self) -> crate::whitebox::WhiteBox {
        if self.white_box {
            crate::whitebox::WhiteBox::Postgres
        } else {
            crate::whitebox::WhiteBox::Off
        }
    }
}

impl ClientFactory for PgFactory {
    fn setup<'a>(&'a self, _node: &'a Node) -> BoxFuture<'a, Result<(), ClientError>> {
        Box::pin(async move {
            let client = connect(&self.config, "cannot connect").await?;
            recreate_tables(&client, self.tables).await
        })
    }

    fn open<'a>(&'a self, node: &'a Node) -> BoxFuture<'a, Result<Box<dyn Client>, ClientError>> {
        crate::pgwire::open_txn_client(self, node, self.isolation)
    }
}

/// `clock_timestamp()` of the server at `url`, bracketed by the harness
/// clock (connection and statement prepared before the bracket): what
/// clock faults measure (`nemesis::process::Process::db_clock`).
///
/// # Errors
/// The connection or the query failed, in words.
pub(crate) async fn read_clock(url: &str) -> Result<nemesis::clock::ClockReading, String> {
    use nemesis::clock::now_s;
    let (client, conn) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .map_err(|e| format!("connecting: {e}"))?;
    let task = tokio::spawn(conn);
    let q = "SELECT extract(epoch FROM clock_timestamp())::float8";
    let stmt = client.prepare(q).await.map_err(|e| format!("{q}: {e}"));
    let reading = match stmt {
        Err(e) => Err(e),
        Ok(stmt) => {
            let sent_s = now_s();
            let row = client.query_one(&stmt, &[]).await;
            let received_s = now_s();
            row.and_then(|r| r.try_get::<_, f64>(0))
                .map(|db_s| nemesis::clock::ClockReading {
                    sent_s,
                    db_s,
                    received_s,
                })
                .map_err(|e| format!("{q}: {e}"))
        }
    };
    drop(client);
    task.abort();
    reading
}
