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

pub mod local;

use crate::client::{BoxFuture, Client, ClientError, ClientFactory};
use crate::sql::{
    DataModel, Isolation, TxnPhase, TxnTables, classify_pg, int_key, int_val, parse_list,
    parse_register,
};
use nemesis::Node;
use std::str::FromStr;
use std::time::{Duration, Instant};
use store::{MicroOp, ReadValue};
use tokio_postgres::{NoTls, Statement};

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
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(Duration::from_secs(5));
        }
        if config.get_application_name().is_none() {
            config.application_name("harness");
        }
        Ok(PgFactory {
            config,
            isolation,
            model,
            tables: TxnTables::default(),
        })
    }

    /// The isolation level transactions run at.
    pub fn isolation(&self) -> Isolation {
        self.isolation
    }

    async fn connect(&self) -> Result<tokio_postgres::Client, ClientError> {
        let (client, conn) = self
            .config
            .connect(NoTls)
            .await
            .map_err(|e| ClientError::definite("connect", format!("cannot connect: {e}")))?;
        tokio::spawn(async move {
            if let Err(e) = conn.await {
                tracing::debug!("postgres connection ended: {e}");
            }
        });
        Ok(client)
    }

    async fn session(&self) -> Result<Session, ClientError> {
        let client = self.connect().await?;
        let mut reads = Vec::new();
        let mut writes = Vec::new();
        for t in 0..self.tables.table_count {
            let prep = |sql: String| {
                let client = &client;
                async move {
                    client
                        .prepare(&sql)
                        .await
                        .map_err(|e| classify_pg(&e, TxnPhase::BeforeCommit))
                }
            };
            reads.push(prep(self.tables.read_sql(t)).await?);
            let w = match self.model {
                DataModel::ListAppend => self.tables.append_sql(t),
                DataModel::RwRegister => self.tables.write_sql(t),
            };
            writes.push(prep(w).await?);
        }
        Ok(Session {
            client,
            reads,
            writes,
        })
    }
}

impl ClientFactory for PgFactory {
    fn setup<'a>(&'a self, _node: &'a Node) -> BoxFuture<'a, Result<(), ClientError>> {
        Box::pin(async move {
            let client = self.connect().await?;
            // Values must be unique per key across the whole table: data left
            // by an earlier run would look like garbage reads.
            let mut sql = String::new();
            for t in 0..self.tables.table_count {
                sql.push_str(&self.tables.drop_sql(t));
                sql.push_str(";\n");
                sql.push_str(&self.tables.create_sql(t));
                sql.push_str(";\n");
            }
            client
                .batch_execute(&sql)
                .await
                .map_err(|e| ClientError::definite("setup", format!("creating tables: {e}")))
        })
    }

    fn open<'a>(&'a self, _node: &'a Node) -> BoxFuture<'a, Result<Box<dyn Client>, ClientError>> {
        Box::pin(async move {
            let session = self.session().await?;
            Ok(Box::new(PgClient {
                factory: self.clone(),
                session: Some(session),
                last_connect_failure: None,
                begin: format!("BEGIN ISOLATION LEVEL {}", self.isolation.sql()),
            }) as Box<dyn Client>)
        })
    }
}

struct Session {
    client: tokio_postgres::Client,
    /// Prepared `SELECT` per table.
    reads: Vec<Statement>,
    /// Prepared append or write upsert per table.
    writes: Vec<Statement>,
}

/// How long a client waits after a failed reconnect before trying again, so a
/// dead server does not turn into a flood of `fail` ops.
const RECONNECT_BACKOFF: Duration = Duration::from_millis(200);

struct PgClient {
    factory: PgFactory,
    session: Option<Session>,
    last_connect_failure: Option<Instant>,
    begin: String,
}

impl PgClient {
    async fn ensure_session(&mut self) -> Result<(), ClientError> {
        if self.session.as_ref().is_some_and(|s| !s.client.is_closed()) {
            return Ok(());
        }
        self.session = None;
        if let Some(t) = self.last_connect_failure {
            let since = t.elapsed();
            if since < RECONNECT_BACKOFF {
                tokio::time::sleep(RECONNECT_BACKOFF - since).await;
            }
        }
        match self.factory.session().await {
            Ok(s) => {
                self.session = Some(s);
                self.last_connect_failure = None;
                Ok(())
            }
            Err(e) => {
                self.last_connect_failure = Some(Instant::now());
                Err(ClientError::definite("no-client", e.message))
            }
        }
    }

    async fn run(&mut self, txn: &[MicroOp]) -> Result<Vec<MicroOp>, ClientError> {
        self.ensure_session().await?;
        let model = self.factory.model;
        let tables = self.factory.tables;
        let Some(s) = self.session.as_ref() else {
            return Err(ClientError::definite("no-client", "no session"));
        };
        s.client
            .batch_execute(&self.begin)
            .await
            .map_err(|e| classify_pg(&e, TxnPhase::BeforeCommit))?;
        let body = async {
            let mut out = Vec::with_capacity(txn.len());
            for mop in txn {
                match mop {
                    MicroOp::Read(k, _) => {
                        let id = int_key(k)?;
                        let row = s
                            .client
                            .query_opt(&s.reads[tables.table_of(id)], &[&id])
                            .await
                            .map_err(|e| classify_pg(&e, TxnPhase::BeforeCommit))?;
                        let text: Option<String> = match row {
                            Some(r) => r.try_get(0).map_err(|e| {
                                ClientError::definite("decode", format!("reading val: {e}"))
                            })?,
                            None => None,
                        };
                        let read = match model {
                            DataModel::ListAppend => ReadValue::List(parse_list(text.as_deref())?),
                            DataModel::RwRegister => match parse_register(text.as_deref())? {
                                Some(v) => ReadValue::Scalar(v),
                                None => ReadValue::Nil,
                            },
                        };
                        out.push(MicroOp::Read(k.clone(), read));
                    }
                    MicroOp::Append(k, v) | MicroOp::Write(k, v) => {
                        let is_append = matches!(mop, MicroOp::Append(..));
                        if is_append != (model == DataModel::ListAppend) {
                            return Err(ClientError::definite(
                                "wrong-workload",
                                format!(
                                    "micro-op {} does not belong to this workload",
                                    mop.f_name()
                                ),
                            ));
                        }
                        let (id, val) = (int_key(k)?, int_val(v)?.to_string());
                        s.client
                            .execute(&s.writes[tables.table_of(id)], &[&id, &val])
                            .await
                            .map_err(|e| classify_pg(&e, TxnPhase::BeforeCommit))?;
                        out.push(mop.clone());
                    }
                }
            }
            Ok::<_, ClientError>(out)
        };
        match body.await {
            Ok(out) => {
                s.client
                    .batch_execute("COMMIT")
                    .await
                    .map_err(|e| classify_pg(&e, TxnPhase::Commit))?;
                Ok(out)
            }
            Err(e) => {
                // Not committed: the server aborts the transaction on any
                // error; roll back so the session is usable again.
                let _ = s.client.batch_execute("ROLLBACK").await;
                Err(ClientError {
                    kind: crate::client::ErrorKind::Definite,
                    ..e
                })
            }
        }
    }
}

impl Client for PgClient {
    fn invoke<'a>(
        &'a mut self,
        txn: &'a [MicroOp],
    ) -> BoxFuture<'a, Result<Vec<MicroOp>, ClientError>> {
        Box::pin(self.run(txn))
    }

    fn close(self: Box<Self>) -> BoxFuture<'static, ()> {
        // Dropping the client ends the connection task.
        Box::pin(async move { drop(self) })
    }
}
