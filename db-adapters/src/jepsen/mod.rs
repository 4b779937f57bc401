//! Clients of Jepsen's non-Elle workloads: bank (and multi-table, and with
//! inserts/deletes), set, set-full, monotonic, sequential and counter.
//! What they share is here (the typed op, the SQL [`program`] over a
//! [`Session`]); each database's session is in its own folder:
//! `sqlite::jepsen`, `postgres::jepsen`, `mysql::jepsen` (MariaDB and
//! Galera on `--nodes`), `sim::jepsen`. long-fork runs on the databases'
//! ordinary rw-register clients (its ops are plain `txn`s).
//!
//! Key decisions:
//! * An op arrives as `(f, micro-ops)` in the encoding of `workloads`'
//!   `jepsen` module; [`Op::parse`] turns it into a typed op once, and
//!   [`Op::complete`] builds the completion the checker reads.
//! * The SQL program of every op is written once ([`program`]) over a small
//!   async [`Session`] (begin at the run's isolation level, query and
//!   execute with integer parameters, commit, rollback) that each wire
//!   protocol implements; the statements are written with `?` placeholders
//!   and the PG-wire session numbers them.
//! * Never retried; any error before `COMMIT` rolls back and is a definite
//!   `fail`; a failed `COMMIT` is what the session says (indefinite when the
//!   outcome is unknown). A transfer that would overdraw, a missing or
//!   already existing account are definite failures (`negative`,
//!   `no-account`, `exists`). sequential's write is several transactions: a
//!   failure after the first committed is `info` (partly applied).

pub mod program;

use crate::client::{BoxFuture, ClientError};
use crate::sql::{int_key, int_val};
use store::{F, MicroOp, ReadValue, Val};
use workloads::JepsenWorkload;

/// One operation of a Jepsen workload, typed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Op {
    /// bank: read every account in the list.
    BankRead(Vec<i64>),
    /// bank: move `amount` from `from` to `to` (both must exist).
    Transfer {
        /// Debited account.
        from: i64,
        /// Credited account.
        to: i64,
        /// Amount.
        amount: i64,
    },
    /// bank-insert: create `to` with `amount` taken from `from`.
    Insert {
        /// Debited account.
        from: i64,
        /// New account.
        to: i64,
        /// Amount.
        amount: i64,
    },
    /// bank-insert: delete `from`, its balance moved to `to`.
    Delete {
        /// Deleted account.
        from: i64,
        /// Credited account.
        to: i64,
    },
    /// set: add an element.
    SetAdd(i64),
    /// set: read every element.
    SetRead,
    /// monotonic: increment a key.
    Inc(i64),
    /// monotonic: read the keys in the list.
    MonoRead(Vec<i64>),
    /// sequential: insert the subkeys in order, one transaction each.
    SeqWrite(Vec<i64>),
    /// sequential: read the subkeys in order, one transaction each.
    SeqRead(Vec<i64>),
    /// counter: add.
    CounterAdd(i64),
    /// counter: read.
    CounterRead,
}

/// What an op returned, to fill its completion.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Nothing to fill in (writes echo their invocation).
    Echo,
    /// One integer or nil per micro-op, in order.
    Ints(Vec<Option<i64>>),
    /// The elements of a set read.
    List(Vec<i64>),
}

fn bad(msg: String) -> ClientError {
    ClientError::definite("invalid-op", msg)
}

fn key(m: &MicroOp) -> Result<i64, ClientError> {
    int_key(m.key())
}

fn val(m: &MicroOp) -> Result<i64, ClientError> {
    match m {
        MicroOp::Write(_, v) | MicroOp::Append(_, v) => int_val(v),
        other => Err(bad(format!("expected a write, got {other:?}"))),
    }
}

impl Op {
    /// The typed op of `f` on `mops` in workload `w`.
    ///
    /// # Errors
    /// A definite `invalid-op` error for a shape the workload never makes.
    pub fn parse(w: JepsenWorkload, f: &F, mops: &[MicroOp]) -> Result<Op, ClientError> {
        use JepsenWorkload as W;
        let keys = || mops.iter().map(key).collect::<Result<Vec<i64>, _>>();
        Ok(match (w, f, mops) {
            (W::Bank | W::BankMultitable | W::BankInsert, F::Read, _) => Op::BankRead(keys()?),
            (W::Bank | W::BankMultitable | W::BankInsert, F::Transfer | F::Insert, [a, b]) => {
                let (from, to, amount) = (key(a)?, key(b)?, val(b)?);
                if *f == F::Insert {
                    Op::Insert { from, to, amount }
                } else {
                    Op::Transfer { from, to, amount }
                }
            }
            (W::BankInsert, F::Delete, [a, b]) => Op::Delete {
                from: key(a)?,
                to: key(b)?,
            },
            (W::Set | W::SetFull, F::Add, [m]) => Op::SetAdd(val(m)?),
            (W::Set | W::SetFull, F::Read, [_]) => Op::SetRead,
            (W::Monotonic, F::Inc, [m]) => Op::Inc(key(m)?),
            (W::Monotonic, F::Read, _) => Op::MonoRead(keys()?),
            (W::Sequential, F::Write, _) => Op::SeqWrite(keys()?),
            (W::Sequential, F::Read, _) => Op::SeqRead(keys()?),
            (W::Counter, F::Add, [m]) => Op::CounterAdd(val(m)?),
            (W::Counter, F::Read, [_]) => Op::CounterRead,
            _ => {
                return Err(bad(format!(
                    "{w} has no {} op of {} micro-ops",
                    f.as_str(),
                    mops.len()
                )));
            }
        })
    }

    /// The completion of `mops` given what the op returned.
    ///
    /// # Errors
    /// A definite error if the outcome does not fit the micro-ops (a bug).
    pub fn complete(mops: &[MicroOp], out: Outcome) -> Result<Vec<MicroOp>, ClientError> {
        match out {
            Outcome::Echo => Ok(mops.to_vec()),
            Outcome::List(xs) => match mops {
                [MicroOp::Read(k, _)] => Ok(vec![MicroOp::Read(
                    k.clone(),
                    ReadValue::List(xs.into_iter().map(Val::int).collect::<Vec<_>>().into()),
                )]),
                _ => Err(bad("a list result for an op that is not one read".into())),
            },
            Outcome::Ints(vs) if vs.len() == mops.len() => Ok(mops
                .iter()
                .zip(vs)
                .map(|(m, v)| match m {
                    MicroOp::Read(k, _) => MicroOp::Read(
                        k.clone(),
                        v.map_or(ReadValue::Nil, |v| ReadValue::Scalar(Val::int(v))),
                    ),
                    other => other.clone(),
                })
                .collect()),
            Outcome::Ints(_) => Err(bad("result count differs from the micro-ops".into())),
        }
    }
}

/// A session of one database connection, as the [`program`]s use it.
/// Statements use `?` placeholders and integer parameters; results are
/// rows of integer (or NULL) columns.
pub trait Session: Send {
    /// `BEGIN` at the run's isolation level.
    ///
    /// # Errors
    /// A classified error.
    fn begin(&mut self) -> BoxFuture<'_, Result<(), ClientError>>;
    /// Runs a query.
    ///
    /// # Errors
    /// A classified error.
    fn query<'a>(
        &'a mut self,
        sql: &'a str,
        params: &'a [i64],
    ) -> BoxFuture<'a, Result<Vec<Vec<Option<i64>>>, ClientError>>;
    /// Runs a statement; the rows it affected.
    ///
    /// # Errors
    /// A classified error.
    fn execute<'a>(
        &'a mut self,
        sql: &'a str,
        params: &'a [i64],
    ) -> BoxFuture<'a, Result<u64, ClientError>>;
    /// `COMMIT`.
    ///
    /// # Errors
    /// Definite if the transaction certainly did not commit, else indefinite.
    fn commit(&mut self) -> BoxFuture<'_, Result<(), ClientError>>;
    /// `ROLLBACK`, best effort.
    fn rollback(&mut self) -> BoxFuture<'_, ()>;
    /// Closes the connection, best effort (default: dropping it).
    fn close(self: Box<Self>) -> BoxFuture<'static, ()> {
        Box::pin(async {})
    }
}

/// The SQL dialect of a session (schema and the few statements that differ).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dialect {
    /// SQLite.
    Sqlite,
    /// PostgreSQL and PG-wire databases.
    Postgres,
    /// MariaDB / MySQL.
    Mysql,
}

/// Sequential's tables `seq_0 … seq_9`.
pub const SEQ_TABLES: i64 = 10;

/// The table of sequential subkey `k` (a stable hash, so a key's subkeys
/// spread over the tables).
pub fn seq_table(k: i64) -> i64 {
    (k.wrapping_mul(0x9E37_79B9) >> 7).rem_euclid(SEQ_TABLES)
}

/// A helper for a failed precondition: definite.
pub(crate) fn refused(code: &str, msg: String) -> ClientError {
    ClientError::definite(code, msg)
}
