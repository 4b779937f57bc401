//! Embedded SQLite (compiled in, `rusqlite` bundled): the default database of
//! `harness run`, needing nothing installed.
//!
//! One database file (in the run directory), WAL journal, one connection per
//! worker, a busy timeout. Schema: one table `txn(id INTEGER PRIMARY KEY, val
//! TEXT)`, lists stored comma-separated like Jepsen's SQL suites.
//!
//! Accepted `--isolation` levels:
//! * `serializable` — `BEGIN IMMEDIATE`: a transaction takes the database's
//!   single write lock when it begins, so transactions are serialized in
//!   real-time order (strict serializable); a transaction that cannot get the
//!   lock within the busy timeout fails (`fail`, it never began).
//! * `snapshot-isolation` — `BEGIN DEFERRED` in WAL mode: a transaction reads
//!   a snapshot taken at its first read and upgrades to the write lock at its
//!   first write; an upgrade from a stale snapshot is refused
//!   (`SQLITE_BUSY_SNAPSHOT` → `fail`). SQLite is in fact serializable here
//!   too; the level exists to exercise optimistic aborts.
//!
//! Other levels are rejected: SQLite has no weaker modes for separate
//! connections (`read_uncommitted` only applies to shared-cache connections).
//!
//! Key decision: the blocking rusqlite calls run on `spawn_blocking` with the
//! connection moved into the task and back, so a timed-out op (the runner
//! drops the future) merely loses that connection; the runner opens a new one
//! for the worker's next process.

/// The default run's transaction limit when `--ops` is not given: it bounds
/// the run directory by design, whatever the machine's speed (a compressed
/// history costs about 33 bytes a transaction and the reports are capped;
/// see BENCHMARKS.md). A machine that does more than this in the default
/// 30 s ends the run early, with a full-size history.
pub const DEFAULT_OPS: u64 = 800_000;

mod database;
pub mod jepsen;

pub use database::Sqlite;

use crate::client::{BoxFuture, Client, ClientError, ClientFactory};
use crate::sql::{DataModel, Isolation, int_key, int_val, parse_list, parse_register};
use nemesis::Node;
use rusqlite::{Connection, ErrorCode, OptionalExtension};
use std::path::{Path, PathBuf};
use std::time::Duration;
use store::{MicroOp, ReadValue};

/// Errors building a SQLite factory.
#[derive(Debug, thiserror::Error)]
pub enum SqliteError {
    /// An isolation level SQLite cannot provide.
    #[error(
        "sqlite does not support --isolation {0}; accepted: serializable (BEGIN IMMEDIATE), snapshot-isolation (BEGIN DEFERRED in WAL mode)"
    )]
    UnsupportedIsolation(Isolation),
    /// `--version-order db` at a level whose commit order is no serial order.
    #[error(
        "--version-order db with --db sqlite needs --isolation serializable (its commit order is a serial order only under BEGIN IMMEDIATE), got {0}"
    )]
    VersionOrderNeedsSerializable(Isolation),
}

/// Opens connections to one SQLite database file.
#[derive(Clone, Debug)]
pub struct SqliteFactory {
    path: PathBuf,
    isolation: Isolation,
    model: DataModel,
    busy_timeout: Duration,
    commit_clock: bool,
}

impl SqliteFactory {
    /// A factory for the database file `path` (created by [`ClientFactory::setup`]).
    ///
    /// # Errors
    /// [`SqliteError::UnsupportedIsolation`] for levels other than
    /// `serializable` and `snapshot-isolation`.
    pub fn new(
        path: impl Into<PathBuf>,
        isolation: Isolation,
        model: DataModel,
        busy_timeout: Duration,
    ) -> Result<SqliteFactory, SqliteError> {
        match isolation {
            Isolation::Serializable | Isolation::SnapshotIsolation => Ok(SqliteFactory {
                path: path.into(),
                isolation,
                model,
                busy_timeout,
                commit_clock: false,
            }),
            other => Err(SqliteError::UnsupportedIsolation(other)),
        }
    }

    /// `--version-order db`: every transaction also increments one clock
    /// row just before `COMMIT` and records the value as its `commit-ts`.
    /// Under `BEGIN IMMEDIATE` transactions hold the one write lock from
    /// begin to commit, so the clock is their commit order, which is a
    /// serialization order (commitment ordering): Enne's expected order
    /// for SQLite, checked by the checker's `expected-order` analysis.
    ///
    /// # Errors
    /// [`SqliteError::VersionOrderNeedsSerializable`] at any other level.
    pub fn with_version_order_db(mut self) -> Result<SqliteFactory, SqliteError> {
        if self.isolation != Isolation::Serializable {
            return Err(SqliteError::VersionOrderNeedsSerializable(self.isolation));
        }
        self.commit_clock = true;
        Ok(self)
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Folds the write-ahead log back into the database file and empties
    /// it (`PRAGMA wal_checkpoint(TRUNCATE)`), so a finished run leaves one
    /// database file, not a WAL as large as everything it wrote (19 MB after
    /// a 30 s run). Call it when no client is open.
    ///
    /// # Errors
    /// The database cannot be opened or checkpointed.
    pub fn checkpoint(&self) -> Result<(), ClientError> {
        let conn = self.connect()?;
        conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
            .map_err(|e| ClientError::definite("checkpoint", e.to_string()))?;
        conn.close()
            .map_err(|(_, e)| ClientError::definite("checkpoint", e.to_string()))
    }

    fn connect(&self) -> Result<Connection, ClientError> {
        open(&self.path, self.busy_timeout)
    }
}

/// Opens the database file `path` as every SQLite client here does: the
/// busy timeout, and `synchronous = NORMAL` (WAL lets readers proceed beside
/// the writer; durability across power loss is not what these adapters test).
pub(crate) fn open(path: &Path, busy_timeout: Duration) -> Result<Connection, ClientError> {
    let conn = Connection::open(path).map_err(|e| {
        ClientError::definite(
            "open",
            format!("cannot open sqlite database {}: {e}", path.display()),
        )
    })?;
    conn.busy_timeout(busy_timeout)
        .map_err(|e| ClientError::definite("open", e.to_string()))?;
    conn.pragma_update(None, "synchronous", "NORMAL")
        .map_err(|e| ClientError::definite("open", e.to_string()))?;
    Ok(conn)
}

/// Switches the file to WAL journal mode (readers beside the writer; what
/// `snapshot-isolation` = `BEGIN DEFERRED` rests on); an error if refused.
pub(crate) fn enable_wal(conn: &Connection) -> Result<(), ClientError> {
    let mode: String = conn
        .query_row("PRAGMA journal_mode=WAL", [], |r| r.get(0))
        .map_err(|e| ClientError::definite("setup", e.to_string()))?;
    if mode.eq_ignore_ascii_case("wal") {
        Ok(())
    } else {
        Err(ClientError::definite(
            "setup",
            format!("sqlite refused WAL journal mode (got {mode})"),
        ))
    }
}

/// Runs `f` on tokio's blocking pool (rusqlite is synchronous).
pub(crate) async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, ClientError> + Send + 'static,
) -> Result<T, ClientError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| ClientError::indefinite("worker-panicked", e.to_string()))?
}

impl ClientFactory for SqliteFactory {
    fn setup<'a>(&'a self, _node: &'a Node) -> BoxFuture<'a, Result<(), ClientError>> {
        let this = self.clone();
        Box::pin(blocking(move || {
            let conn = this.connect()?;
            let err = |e: rusqlite::Error| ClientError::definite("setup", e.to_string());
            enable_wal(&conn)?;
            conn.execute_batch(
                "DROP TABLE IF EXISTS txn; CREATE TABLE txn (id INTEGER PRIMARY KEY, val TEXT);",
            )
            .map_err(err)?;
            if this.commit_clock {
                conn.execute_batch(
                    "DROP TABLE IF EXISTS harness_clock; \
                     CREATE TABLE harness_clock (t INTEGER NOT NULL); \
                     INSERT INTO harness_clock VALUES (0);",
                )
                .map_err(err)?;
            }
            Ok(())
        }))
    }

    fn open<'a>(&'a self, _node: &'a Node) -> BoxFuture<'a, Result<Box<dyn Client>, ClientError>> {
        let this = self.clone();
        Box::pin(async move {
            let factory = this.clone();
            let conn = blocking(move || factory.connect()).await?;
            Ok(Box::new(SqliteClient {
                conn: Some(conn),
                isolation: this.isolation,
                model: this.model,
                commit_clock: this.commit_clock,
                extra: Vec::new(),
            }) as Box<dyn Client>)
        })
    }

    fn finish(&self) -> BoxFuture<'_, Result<(), ClientError>> {
        let this = self.clone();
        Box::pin(blocking(move || this.checkpoint()))
    }
}

/// One SQLite connection.
struct SqliteClient {
    /// `None` only while a transaction runs on the blocking pool, or after a
    /// dropped (timed-out) invocation lost it.
    conn: Option<Connection>,
    isolation: Isolation,
    model: DataModel,
    /// Record `commit-ts` from the clock row (`with_version_order_db`).
    commit_clock: bool,
    /// The last `ok` transaction's extra fields.
    extra: Vec<(String, store::Data)>,
}

impl Client for SqliteClient {
    fn invoke<'a>(
        &'a mut self,
        txn: &'a [MicroOp],
    ) -> BoxFuture<'a, Result<Vec<MicroOp>, ClientError>> {
        Box::pin(async move {
            let Some(conn) = self.conn.take() else {
                return Err(ClientError::definite(
                    "no-connection",
                    "the connection was lost by an earlier timed-out operation",
                ));
            };
            let txn = txn.to_vec();
            let (isolation, model, clock) = (self.isolation, self.model, self.commit_clock);
            let (conn, result) = tokio::task::spawn_blocking(move || {
                let r = run_txn(&conn, isolation, model, &txn, clock);
                (conn, r)
            })
            .await
            .map_err(|e| ClientError::indefinite("worker-panicked", e.to_string()))?;
            self.conn = Some(conn);
            let (out, ts) = result?;
            self.extra = ts
                .map(|t| vec![("commit-ts".to_string(), store::Data::Int(t))])
                .unwrap_or_default();
            Ok(out)
        })
    }

    fn take_extra(&mut self) -> Vec<(String, store::Data)> {
        std::mem::take(&mut self.extra)
    }

    fn close(self: Box<Self>) -> BoxFuture<'static, ()> {
        Box::pin(async move {
            if let Some(conn) = self.conn {
                let _ = tokio::task::spawn_blocking(move || drop(conn.close())).await;
            }
        })
    }
}

/// Runs one transaction, never retrying. Any failure while the transaction is
/// still open is rolled back and definite; a failed `COMMIT` after which
/// SQLite no longer reports an open transaction is indefinite.
fn run_txn(
    conn: &Connection,
    isolation: Isolation,
    model: DataModel,
    txn: &[MicroOp],
    clock: bool,
) -> Result<(Vec<MicroOp>, Option<i64>), ClientError> {
    let begin = match isolation {
        Isolation::Serializable => "BEGIN IMMEDIATE",
        _ => "BEGIN DEFERRED",
    };
    conn.execute_batch(begin)
        .map_err(|e| classify(&e, "begin"))?;
    let body = run_body(conn, model, txn).and_then(|out| Ok((out, tick(conn, clock)?)));
    let out = match body {
        Ok(out) => out,
        Err(e) => {
            // Nothing committed yet: roll back and report definitely failed.
            let _ = conn.execute_batch("ROLLBACK");
            return Err(ClientError::definite(e.code, e.message));
        }
    };
    match conn.execute_batch("COMMIT") {
        Ok(()) => Ok(out),
        Err(e) => {
            if conn.is_autocommit() {
                // SQLite closed the transaction itself: we cannot tell whether
                // the commit reached the file.
                Err(ClientError::indefinite("commit", e.to_string()))
            } else {
                // COMMIT was refused (e.g. SQLITE_BUSY) and the transaction is
                // still open: roll it back; it never committed.
                let _ = conn.execute_batch("ROLLBACK");
                Err(ClientError::definite(code_name(&e), e.to_string()))
            }
        }
    }
}

/// The clock row's next value, under the transaction's write lock.
fn tick(conn: &Connection, clock: bool) -> Result<Option<i64>, ClientError> {
    if !clock {
        return Ok(None);
    }
    conn.query_row("UPDATE harness_clock SET t = t + 1 RETURNING t", [], |r| {
        r.get(0)
    })
    .map(Some)
    .map_err(|e| classify(&e, "commit clock"))
}

fn run_body(
    conn: &Connection,
    model: DataModel,
    txn: &[MicroOp],
) -> Result<Vec<MicroOp>, ClientError> {
    if let Some((id, old, new)) = crate::register::cas_parts(txn)? {
        let n = conn
            .prepare_cached("UPDATE txn SET val = ?1 WHERE id = ?2 AND val = ?3")
            .and_then(|mut s| s.execute(rusqlite::params![new.to_string(), id, old.to_string()]))
            .map_err(|e| classify(&e, "cas"))?;
        if n == 0 {
            return Err(crate::register::cas_mismatch(id, old));
        }
        return Ok(txn.to_vec());
    }
    let mut out = Vec::with_capacity(txn.len());
    for mop in txn {
        match mop {
            MicroOp::Read(k, _) => {
                let id = int_key(k)?;
                let mut stmt = conn
                    .prepare_cached("SELECT val FROM txn WHERE id = ?1")
                    .map_err(|e| classify(&e, "read"))?;
                let val: Option<Option<String>> = stmt
                    .query_row([id], |r| r.get(0))
                    .optional()
                    .map_err(|e| classify(&e, "read"))?;
                let text = val.flatten();
                let read = match model {
                    DataModel::ListAppend => ReadValue::List(parse_list(text.as_deref())?.into()),
                    DataModel::RwRegister => match parse_register(text.as_deref())? {
                        Some(v) => ReadValue::Scalar(v),
                        None => ReadValue::Nil,
                    },
                };
                out.push(MicroOp::Read(k.clone(), read));
            }
            MicroOp::Append(k, v) => {
                let (id, val) = (int_key(k)?, int_val(v)?);
                conn.prepare_cached(
                    "INSERT INTO txn (id, val) VALUES (?1, ?2) \
                     ON CONFLICT (id) DO UPDATE SET val = val || ',' || excluded.val",
                )
                .and_then(|mut s| s.execute(rusqlite::params![id, val.to_string()]))
                .map_err(|e| classify(&e, "append"))?;
                out.push(mop.clone());
            }
            MicroOp::Write(k, v) => {
                let (id, val) = (int_key(k)?, int_val(v)?);
                conn.prepare_cached(
                    "INSERT INTO txn (id, val) VALUES (?1, ?2) \
                     ON CONFLICT (id) DO UPDATE SET val = excluded.val",
                )
                .and_then(|mut s| s.execute(rusqlite::params![id, val.to_string()]))
                .map_err(|e| classify(&e, "write"))?;
                out.push(mop.clone());
            }
            MicroOp::ReadRange(r) if r.is_count() => {
                let (lo, hi) = crate::predicate::bounds(r)?;
                let n: i64 = conn
                    .prepare_cached(crate::predicate::SQLITE_COUNT_SQL)
                    .and_then(|mut s| s.query_row([lo, hi], |row| row.get(0)))
                    .map_err(|e| classify(&e, "count read"))?;
                out.push(MicroOp::ReadRange(Box::new(
                    crate::predicate::complete_count(r, n)?,
                )));
            }
            MicroOp::ReadRange(r) => {
                let (lo, hi) = crate::predicate::bounds(r)?;
                let rows = conn
                    .prepare_cached(
                        "SELECT id, val FROM txn WHERE id BETWEEN ?1 AND ?2 ORDER BY id",
                    )
                    .and_then(|mut s| {
                        s.query_map([lo, hi], |row| Ok((row.get(0)?, row.get(1)?)))?
                            .collect::<Result<Vec<(i64, Option<String>)>, _>>()
                    })
                    .map_err(|e| classify(&e, "range read"))?;
                out.push(MicroOp::ReadRange(Box::new(crate::predicate::complete(
                    r, rows,
                )?)));
            }
        }
    }
    Ok(out)
}

fn code_name(e: &rusqlite::Error) -> String {
    match e.sqlite_error_code() {
        Some(ErrorCode::DatabaseBusy) => "busy".to_string(),
        Some(ErrorCode::DatabaseLocked) => "locked".to_string(),
        Some(code) => format!("{code:?}"),
        None => "sqlite".to_string(),
    }
}

/// Errors before `COMMIT` are definite (the caller rolls back); the kind set
/// here is what callers outside a transaction see.
fn classify(e: &rusqlite::Error, step: &str) -> ClientError {
    ClientError::definite(code_name(e), format!("{step}: {e}"))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::client::ErrorKind;
    use store::{Key, Val};

    fn factory(dir: &Path, iso: Isolation, model: DataModel) -> SqliteFactory {
        SqliteFactory::new(dir.join("db.sqlite"), iso, model, Duration::from_secs(1)).unwrap()
    }

    #[tokio::test]
    async fn appends_are_read_back_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let f = factory(dir.path(), Isolation::Serializable, DataModel::ListAppend);
        let node = Node::local();
        f.setup(&node).await.unwrap();
        let mut c = f.open(&node).await.unwrap();
        let k = Key::int(1);
        c.invoke(&[MicroOp::Append(k.clone(), Val::int(10))])
            .await
            .unwrap();
        let out = c
            .invoke(&[
                MicroOp::Append(k.clone(), Val::int(11)),
                MicroOp::Read(k.clone(), ReadValue::Nil),
                MicroOp::Read(Key::int(2), ReadValue::Nil),
            ])
            .await
            .unwrap();
        assert_eq!(
            out[1],
            MicroOp::Read(
                k.clone(),
                ReadValue::List(vec![Val::int(10), Val::int(11)].into())
            )
        );
        assert_eq!(
            out[2],
            MicroOp::Read(Key::int(2), ReadValue::List(vec![].into()))
        );
        // A count read counts the rows in range: key 1's (2 was only read).
        let count = store::RangeRead::count(0, 5);
        let out = c
            .invoke(&[MicroOp::ReadRange(Box::new(count.clone()))])
            .await
            .unwrap();
        let counted = store::RangeRead {
            kind: store::RangeKind::Count(Some(1)),
            ..count
        };
        assert_eq!(out, vec![MicroOp::ReadRange(Box::new(counted))]);
        c.close().await;
    }

    #[tokio::test]
    async fn registers_read_nil_then_last_write() {
        let dir = tempfile::tempdir().unwrap();
        let f = factory(
            dir.path(),
            Isolation::SnapshotIsolation,
            DataModel::RwRegister,
        );
        let node = Node::local();
        f.setup(&node).await.unwrap();
        let mut c = f.open(&node).await.unwrap();
        let k = Key::int(3);
        let out = c
            .invoke(&[
                MicroOp::Read(k.clone(), ReadValue::Nil),
                MicroOp::Write(k.clone(), Val::int(1)),
                MicroOp::Write(k.clone(), Val::int(2)),
                MicroOp::Read(k.clone(), ReadValue::Nil),
            ])
            .await
            .unwrap();
        assert_eq!(out[0], MicroOp::Read(k.clone(), ReadValue::Nil));
        assert_eq!(out[3], MicroOp::Read(k, ReadValue::Scalar(Val::int(2))));
    }

    #[tokio::test]
    async fn a_held_write_lock_makes_begin_immediate_fail_definitely() {
        let dir = tempfile::tempdir().unwrap();
        let f = SqliteFactory::new(
            dir.path().join("db.sqlite"),
            Isolation::Serializable,
            DataModel::ListAppend,
            Duration::from_millis(50),
        )
        .unwrap();
        let node = Node::local();
        f.setup(&node).await.unwrap();
        let holder = Connection::open(f.path()).unwrap();
        holder.execute_batch("BEGIN IMMEDIATE").unwrap();
        let mut c = f.open(&node).await.unwrap();
        let e = c
            .invoke(&[MicroOp::Append(Key::int(1), Val::int(1))])
            .await
            .unwrap_err();
        assert_eq!(e.kind, ErrorKind::Definite);
        assert_eq!(e.code, "busy");
        holder.execute_batch("ROLLBACK").unwrap();
        // The connection is still usable and nothing was applied.
        let out = c
            .invoke(&[MicroOp::Read(Key::int(1), ReadValue::Nil)])
            .await
            .unwrap();
        assert_eq!(
            out[0],
            MicroOp::Read(Key::int(1), ReadValue::List(vec![].into()))
        );
    }

    #[test]
    fn weak_levels_are_rejected() {
        let e = SqliteFactory::new(
            "x.db",
            Isolation::ReadCommitted,
            DataModel::ListAppend,
            Duration::from_secs(1),
        )
        .unwrap_err();
        assert!(e.to_string().contains("read-committed"));
    }
}
