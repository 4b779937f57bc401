//! The Jepsen workloads on MariaDB and Galera (on `--nodes`): a
//! [`Session`] over one mysql_async connection, opened as the
//! transactional client opens it (`crate::mysql::MysqlFactory`: harness's
//! login, the run's isolation level set once per session, so every
//! `START TRANSACTION` runs at it). Errors are classified by
//! `classify_mysql`: deadlocks, lock-wait timeouts, Galera certification
//! conflicts and "not in the primary component" are definite at any phase;
//! anything else before `COMMIT` is definite, at `COMMIT` indefinite. The
//! statements of [`program`] run as they are (`?` placeholders are
//! MySQL's own).

use crate::client::{BoxFuture, Client, ClientError, ClientFactory};
use crate::jepsen::program;
use crate::jepsen::{Dialect, Session};
use crate::mysql::MysqlFactory;
use crate::mysql::client::classify_mysql;
use crate::sql::TxnPhase;
use mysql_async::prelude::Queryable;
use nemesis::Node;
use workloads::JepsenWorkload;

/// Opens MariaDB sessions of one Jepsen workload.
#[derive(Clone, Debug)]
pub struct JepsenMysqlFactory {
    inner: MysqlFactory,
    workload: JepsenWorkload,
    for_update: bool,
}

impl JepsenMysqlFactory {
    /// A factory connecting as `inner` does; `for_update` reads the
    /// balances a transfer changes with `SELECT … FOR UPDATE`.
    pub fn new(inner: MysqlFactory, workload: JepsenWorkload, for_update: bool) -> Self {
        JepsenMysqlFactory {
            inner,
            workload,
            for_update,
        }
    }
}

impl ClientFactory for JepsenMysqlFactory {
    fn setup<'a>(&'a self, node: &'a Node) -> BoxFuture<'a, Result<(), ClientError>> {
        Box::pin(async move {
            let mut conn = self.inner.connect(node).await?;
            for sql in program::setup(self.workload, Dialect::Mysql) {
                conn.query_drop(&sql)
                    .await
                    .map_err(|e| ClientError::definite("setup", format!("{sql}: {e}")))?;
            }
            let _ = conn.disconnect().await;
            Ok(())
        })
    }

    fn open<'a>(&'a self, node: &'a Node) -> BoxFuture<'a, Result<Box<dyn Client>, ClientError>> {
        Box::pin(async move {
            let conn = self.inner.connect(node).await?;
            Ok(Box::new(program::SessionClient {
                session: MysqlSession {
                    conn: Some(conn),
                    inner: self.inner.clone(),
                    node: node.clone(),
                },
                workload: self.workload,
                for_update: self.for_update,
            }) as Box<dyn Client>)
        })
    }
}

/// One connection, as a [`Session`]. A connection the driver calls broken
/// is dropped and reopened at the next `BEGIN` (the server rolled its
/// transaction back).
pub struct MysqlSession {
    conn: Option<mysql_async::Conn>,
    inner: MysqlFactory,
    node: Node,
}

impl MysqlSession {
    fn conn(&mut self) -> Result<&mut mysql_async::Conn, ClientError> {
        self.conn
            .as_mut()
            .ok_or_else(|| ClientError::definite("connection-lost-before-commit", "no connection"))
    }

    /// Classifies `e` in `phase`; a fatal driver error drops the connection.
    fn fail(&mut self, e: &mysql_async::Error, phase: TxnPhase) -> ClientError {
        if e.is_fatal() {
            self.conn = None;
        }
        classify_mysql(e, phase)
    }
}

fn params(p: &[i64]) -> mysql_async::Params {
    if p.is_empty() {
        mysql_async::Params::Empty
    } else {
        mysql_async::Params::Positional(p.iter().map(|&v| v.into()).collect())
    }
}

impl Session for MysqlSession {
    fn close(self: Box<Self>) -> BoxFuture<'static, ()> {
        Box::pin(async move {
            if let Some(c) = self.conn {
                let _ = c.disconnect().await;
            }
        })
    }

    fn begin(&mut self) -> BoxFuture<'_, Result<(), ClientError>> {
        Box::pin(async move {
            if self.conn.is_none() {
                self.conn = Some(self.inner.connect(&self.node).await?);
            }
            let r = self.conn()?.query_drop("START TRANSACTION").await;
            r.map_err(|e| self.fail(&e, TxnPhase::BeforeCommit))
        })
    }

    fn query<'a>(
        &'a mut self,
        sql: &'a str,
        p: &'a [i64],
    ) -> BoxFuture<'a, Result<Vec<Vec<Option<i64>>>, ClientError>> {
        Box::pin(async move {
            let r: Result<Vec<mysql_async::Row>, _> = self.conn()?.exec(sql, params(p)).await;
            let rows = r.map_err(|e| self.fail(&e, TxnPhase::BeforeCommit))?;
            rows.into_iter()
                .map(|mut row| {
                    (0..row.len())
                        .map(|i| match row.take_opt::<Option<i64>, _>(i) {
                            Some(Ok(v)) => Ok(v),
                            Some(Err(e)) => Err(ClientError::definite("decode", e.to_string())),
                            None => Err(ClientError::definite("decode", format!("no column {i}"))),
                        })
                        .collect::<Result<Vec<_>, _>>()
                })
                .collect()
        })
    }

    fn execute<'a>(
        &'a mut self,
        sql: &'a str,
        p: &'a [i64],
    ) -> BoxFuture<'a, Result<u64, ClientError>> {
        Box::pin(async move {
            let conn = self.conn()?;
            match conn.exec_drop(sql, params(p)).await {
                Ok(()) => Ok(conn.affected_rows()),
                Err(e) => Err(self.fail(&e, TxnPhase::BeforeCommit)),
            }
        })
    }

    fn commit(&mut self) -> BoxFuture<'_, Result<(), ClientError>> {
        Box::pin(async move {
            let r = self.conn()?.query_drop("COMMIT").await;
            r.map_err(|e| self.fail(&e, TxnPhase::Commit))
        })
    }

    fn rollback(&mut self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            if let Some(c) = self.conn.as_mut()
                && c.query_drop("ROLLBACK").await.is_err()
            {
                self.conn = None;
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_parameters_are_sent_as_empty() {
        assert!(matches!(params(&[]), mysql_async::Params::Empty));
        let p = params(&[3, -1]);
        assert!(
            matches!(&p, mysql_async::Params::Positional(v)
                if *v == vec![mysql_async::Value::Int(3), mysql_async::Value::Int(-1)]),
            "{p:?}"
        );
    }
}
