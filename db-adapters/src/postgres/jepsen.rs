//! The Jepsen workloads on PostgreSQL (and PG-wire databases) behind a URL
//! (`--url`, `--local`): a [`Session`] over one tokio-postgres connection.
//! `?` placeholders are numbered `$1, $2, …`; errors are classified as
//! the transactional client does (`crate::sql::classify_pg`: before
//! `COMMIT` definite, at `COMMIT` indefinite unless the server answered).

use crate::client::{BoxFuture, Client, ClientError, ClientFactory};
use crate::jepsen::program;
use crate::jepsen::{Dialect, Session};
use crate::sql::{Isolation, TxnPhase, classify_pg};
use nemesis::Node;
use std::str::FromStr;
use tokio_postgres::NoTls;
use workloads::JepsenWorkload;

/// Opens PostgreSQL sessions of one Jepsen workload.
#[derive(Clone)]
pub struct JepsenPgFactory {
    config: tokio_postgres::Config,
    isolation: Isolation,
    workload: JepsenWorkload,
    for_update: bool,
}

impl JepsenPgFactory {
    /// A factory for `url`; `for_update` reads the balances a transfer
    /// changes with `SELECT … FOR UPDATE`.
    ///
    /// # Errors
    /// A URL that does not parse.
    pub fn new(
        url: &str,
        isolation: Isolation,
        workload: JepsenWorkload,
        for_update: bool,
    ) -> Result<JepsenPgFactory, String> {
        let mut config =
            tokio_postgres::Config::from_str(url).map_err(|e| format!("bad --url {url:?}: {e}"))?;
        crate::pgwire::with_defaults(&mut config);
        Ok(JepsenPgFactory {
            config,
            isolation,
            workload,
            for_update,
        })
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
}

impl ClientFactory for JepsenPgFactory {
    fn setup<'a>(&'a self, _node: &'a Node) -> BoxFuture<'a, Result<(), ClientError>> {
        Box::pin(async move {
            let c = self.connect().await?;
            for sql in program::setup(self.workload, Dialect::Postgres) {
                c.batch_execute(&sql)
                    .await
                    .map_err(|e| ClientError::definite("setup", format!("{sql}: {e}")))?;
            }
            Ok(())
        })
    }

    fn open<'a>(&'a self, _node: &'a Node) -> BoxFuture<'a, Result<Box<dyn Client>, ClientError>> {
        Box::pin(async move {
            let client = self.connect().await?;
            Ok(Box::new(program::SessionClient {
                session: PgSession {
                    client,
                    isolation: self.isolation,
                },
                workload: self.workload,
                for_update: self.for_update,
            }) as Box<dyn Client>)
        })
    }
}

/// `?` placeholders numbered for PostgreSQL.
pub fn numbered(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len() + 8);
    let mut n = 0;
    for c in sql.chars() {
        if c == '?' {
            n += 1;
            out.push_str(&format!("${n}"));
        } else {
            out.push(c);
        }
    }
    out
}

/// One connection, as a [`Session`].
pub struct PgSession {
    client: tokio_postgres::Client,
    isolation: Isolation,
}

impl Session for PgSession {
    fn begin(&mut self) -> BoxFuture<'_, Result<(), ClientError>> {
        Box::pin(async move {
            let sql = format!("BEGIN ISOLATION LEVEL {}", self.isolation.sql());
            self.client
                .batch_execute(&sql)
                .await
                .map_err(|e| classify_pg(&e, TxnPhase::BeforeCommit))
        })
    }

    fn query<'a>(
        &'a mut self,
        sql: &'a str,
        params: &'a [i64],
    ) -> BoxFuture<'a, Result<Vec<Vec<Option<i64>>>, ClientError>> {
        Box::pin(async move {
            let p: Vec<&(dyn tokio_postgres::types::ToSql + Sync)> =
                params.iter().map(|v| v as _).collect();
            let rows = self
                .client
                .query(&numbered(sql), &p)
                .await
                .map_err(|e| classify_pg(&e, TxnPhase::BeforeCommit))?;
            rows.iter()
                .map(|r| {
                    (0..r.len())
                        .map(|i| r.try_get::<_, Option<i64>>(i))
                        .collect::<Result<Vec<_>, _>>()
                        .map_err(|e| ClientError::definite("decode", e.to_string()))
                })
                .collect()
        })
    }

    fn execute<'a>(
        &'a mut self,
        sql: &'a str,
        params: &'a [i64],
    ) -> BoxFuture<'a, Result<u64, ClientError>> {
        Box::pin(async move {
            let p: Vec<&(dyn tokio_postgres::types::ToSql + Sync)> =
                params.iter().map(|v| v as _).collect();
            self.client
                .execute(&numbered(sql), &p)
                .await
                .map_err(|e| classify_pg(&e, TxnPhase::BeforeCommit))
        })
    }

    fn commit(&mut self) -> BoxFuture<'_, Result<(), ClientError>> {
        Box::pin(async move {
            self.client
                .batch_execute("COMMIT")
                .await
                .map_err(|e| classify_pg(&e, TxnPhase::Commit))
        })
    }

    fn rollback(&mut self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            let _ = self.client.batch_execute("ROLLBACK").await;
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_are_numbered() {
        assert_eq!(
            numbered("UPDATE t SET a = ? WHERE id = ?"),
            "UPDATE t SET a = $1 WHERE id = $2"
        );
    }
}
