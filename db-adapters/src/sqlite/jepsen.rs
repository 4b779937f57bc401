//! The Jepsen workloads on embedded SQLite: a [`Session`] over one
//! rusqlite connection (each statement on the blocking pool, the
//! connection moved in and back, as `crate::sqlite` does) and its factory.
//! Levels as `crate::sqlite`: `serializable` = `BEGIN IMMEDIATE`,
//! `snapshot-isolation` = `BEGIN DEFERRED` in WAL mode.

use crate::client::{BoxFuture, Client, ClientError, ClientFactory};
use crate::jepsen::program;
use crate::jepsen::{Dialect, Session};
use crate::sql::Isolation;
use crate::sqlite::blocking;
use nemesis::Node;
use rusqlite::{Connection, ErrorCode};
use std::path::PathBuf;
use std::time::Duration;
use workloads::JepsenWorkload;

/// Opens SQLite sessions of one Jepsen workload.
#[derive(Clone, Debug)]
pub struct JepsenSqliteFactory {
    path: PathBuf,
    isolation: Isolation,
    workload: JepsenWorkload,
    busy_timeout: Duration,
}

impl JepsenSqliteFactory {
    /// A factory for the database file `path`.
    ///
    /// # Errors
    /// A level SQLite cannot provide (as `crate::sqlite`).
    pub fn new(
        path: impl Into<PathBuf>,
        isolation: Isolation,
        workload: JepsenWorkload,
        busy_timeout: Duration,
    ) -> Result<JepsenSqliteFactory, String> {
        match isolation {
            Isolation::Serializable | Isolation::SnapshotIsolation => Ok(JepsenSqliteFactory {
                path: path.into(),
                isolation,
                workload,
                busy_timeout,
            }),
            other => Err(crate::sqlite::SqliteError::UnsupportedIsolation(other).to_string()),
        }
    }

    fn connect(&self) -> Result<Connection, ClientError> {
        crate::sqlite::open(&self.path, self.busy_timeout)
    }
}

fn code_name(e: &rusqlite::Error) -> String {
    match e.sqlite_error_code() {
        Some(ErrorCode::DatabaseBusy) => "busy".to_string(),
        Some(ErrorCode::DatabaseLocked) => "locked".to_string(),
        Some(ErrorCode::ConstraintViolation) => "constraint".to_string(),
        Some(code) => format!("{code:?}"),
        None => "sqlite".to_string(),
    }
}

fn definite(e: &rusqlite::Error, step: &str) -> ClientError {
    ClientError::definite(code_name(e), format!("{step}: {e}"))
}

impl ClientFactory for JepsenSqliteFactory {
    fn setup<'a>(&'a self, _node: &'a Node) -> BoxFuture<'a, Result<(), ClientError>> {
        let this = self.clone();
        Box::pin(blocking(move || {
            let conn = this.connect()?;
            crate::sqlite::enable_wal(&conn)?;
            for sql in program::setup(this.workload, Dialect::Sqlite) {
                conn.execute_batch(&sql)
                    .map_err(|e| definite(&e, "setup"))?;
            }
            Ok(())
        }))
    }

    fn open<'a>(&'a self, _node: &'a Node) -> BoxFuture<'a, Result<Box<dyn Client>, ClientError>> {
        let this = self.clone();
        Box::pin(async move {
            let f = this.clone();
            let conn = blocking(move || f.connect()).await?;
            Ok(Box::new(program::SessionClient {
                session: SqliteSession {
                    conn: Some(conn),
                    isolation: this.isolation,
                },
                workload: this.workload,
                for_update: false,
            }) as Box<dyn Client>)
        })
    }

    fn finish(&self) -> BoxFuture<'_, Result<(), ClientError>> {
        let this = self.clone();
        Box::pin(blocking(move || {
            let conn = this.connect()?;
            conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
                .map_err(|e| definite(&e, "checkpoint"))
        }))
    }
}

/// One connection, as a [`Session`].
pub struct SqliteSession {
    conn: Option<Connection>,
    isolation: Isolation,
}

impl SqliteSession {
    /// Runs `f` on the connection on the blocking pool.
    async fn with<T: Send + 'static>(
        &mut self,
        f: impl FnOnce(&Connection) -> Result<T, ClientError> + Send + 'static,
    ) -> Result<T, ClientError> {
        let Some(conn) = self.conn.take() else {
            return Err(ClientError::definite(
                "no-connection",
                "the connection was lost by an earlier timed-out operation",
            ));
        };
        let (conn, r) = tokio::task::spawn_blocking(move || {
            let r = f(&conn);
            (conn, r)
        })
        .await
        .map_err(|e| ClientError::indefinite("worker-panicked", e.to_string()))?;
        self.conn = Some(conn);
        r
    }
}

impl Session for SqliteSession {
    fn close(self: Box<Self>) -> BoxFuture<'static, ()> {
        Box::pin(async move {
            if let Some(conn) = self.conn {
                let _ = tokio::task::spawn_blocking(move || drop(conn.close())).await;
            }
        })
    }

    fn begin(&mut self) -> BoxFuture<'_, Result<(), ClientError>> {
        let begin = match self.isolation {
            Isolation::Serializable => "BEGIN IMMEDIATE",
            _ => "BEGIN DEFERRED",
        };
        Box::pin(self.with(move |c| c.execute_batch(begin).map_err(|e| definite(&e, "begin"))))
    }

    fn query<'a>(
        &'a mut self,
        sql: &'a str,
        params: &'a [i64],
    ) -> BoxFuture<'a, Result<Vec<Vec<Option<i64>>>, ClientError>> {
        let (sql, params) = (sql.to_string(), params.to_vec());
        Box::pin(self.with(move |c| {
            let mut stmt = c.prepare_cached(&sql).map_err(|e| definite(&e, "query"))?;
            let n = stmt.column_count();
            let rows = stmt
                .query_map(rusqlite::params_from_iter(params), |row| {
                    (0..n).map(|i| row.get::<_, Option<i64>>(i)).collect()
                })
                .and_then(|rows| rows.collect::<Result<Vec<Vec<Option<i64>>>, _>>())
                .map_err(|e| definite(&e, "query"))?;
            Ok(rows)
        }))
    }

    fn execute<'a>(
        &'a mut self,
        sql: &'a str,
        params: &'a [i64],
    ) -> BoxFuture<'a, Result<u64, ClientError>> {
        let (sql, params) = (sql.to_string(), params.to_vec());
        Box::pin(self.with(move |c| {
            c.prepare_cached(&sql)
                .and_then(|mut s| s.execute(rusqlite::params_from_iter(params)))
                .map(|n| n as u64)
                .map_err(|e| definite(&e, "execute"))
        }))
    }

    fn commit(&mut self) -> BoxFuture<'_, Result<(), ClientError>> {
        Box::pin(self.with(|c| match c.execute_batch("COMMIT") {
            Ok(()) => Ok(()),
            Err(e) if c.is_autocommit() => {
                // SQLite closed the transaction itself: outcome unknown.
                Err(ClientError::indefinite("commit", e.to_string()))
            }
            Err(e) => {
                let _ = c.execute_batch("ROLLBACK");
                Err(definite(&e, "commit"))
            }
        }))
    }

    fn rollback(&mut self) -> BoxFuture<'_, ()> {
        Box::pin(async {
            let _ = self
                .with(|c| {
                    if !c.is_autocommit() {
                        let _ = c.execute_batch("ROLLBACK");
                    }
                    Ok(())
                })
                .await;
        })
    }
}
