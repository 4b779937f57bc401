//! The SQL of every Jepsen op, written once over a [`Session`]: the schema
//! ([`setup`]) and one program per op ([`run`]).
//!
//! Schema (every dialect; `BIGINT` columns): bank `accounts(id PRIMARY
//! KEY, balance NOT NULL)` or, multi-table, `accounts0 … accounts7` with one
//! row each; set `sets(val NOT NULL)` without a key, so a duplicate stays
//! visible; monotonic `cycle(pk PRIMARY KEY, sk NOT NULL, val)`; sequential
//! `seq_0 … seq_9 (k PRIMARY KEY)`; counter `counter(id PRIMARY KEY, count
//! NOT NULL)`. Transfers use the read-then-write form (read both balances,
//! refuse an overdraft, write both), which exposes lost updates at weak
//! isolation levels.

use super::{Dialect, Op, Outcome, Session, refused, seq_table};
use crate::client::{BoxFuture, Client, ClientError};
use store::{F, MicroOp};
use workloads::JepsenWorkload;
use workloads::bank::{ACCOUNTS, initial_balances};

/// The statements that create (and empty) workload `w`'s tables.
pub fn setup(w: JepsenWorkload, _dialect: Dialect) -> Vec<String> {
    let mut s = Vec::new();
    let table = |s: &mut Vec<String>, name: &str, cols: &str| {
        s.push(format!("DROP TABLE IF EXISTS {name}"));
        s.push(format!("CREATE TABLE {name} ({cols})"));
    };
    match w {
        JepsenWorkload::Bank | JepsenWorkload::BankInsert => {
            table(
                &mut s,
                "accounts",
                "id BIGINT PRIMARY KEY, balance BIGINT NOT NULL",
            );
            for (a, b) in initial_balances(w == JepsenWorkload::BankInsert) {
                s.push(format!(
                    "INSERT INTO accounts (id, balance) VALUES ({a}, {b})"
                ));
            }
        }
        JepsenWorkload::BankMultitable => {
            for (a, b) in initial_balances(false) {
                let t = format!("accounts{a}");
                table(&mut s, &t, "id BIGINT PRIMARY KEY, balance BIGINT NOT NULL");
                s.push(format!("INSERT INTO {t} (id, balance) VALUES ({a}, {b})"));
            }
        }
        JepsenWorkload::Set | JepsenWorkload::SetFull => {
            table(&mut s, "sets", "val BIGINT NOT NULL");
        }
        JepsenWorkload::Monotonic => {
            table(
                &mut s,
                "cycle",
                "pk BIGINT PRIMARY KEY, sk BIGINT NOT NULL, val BIGINT",
            );
        }
        JepsenWorkload::Sequential => {
            for t in 0..super::SEQ_TABLES {
                table(&mut s, &format!("seq_{t}"), "k BIGINT PRIMARY KEY");
            }
        }
        JepsenWorkload::Counter => {
            table(
                &mut s,
                "counter",
                "id BIGINT PRIMARY KEY, count BIGINT NOT NULL",
            );
            s.push("INSERT INTO counter (id, count) VALUES (0, 0)".into());
        }
        JepsenWorkload::LongFork => {}
    }
    s
}

fn one(rows: &[Vec<Option<i64>>]) -> Option<i64> {
    rows.first().and_then(|r| r.first().copied().flatten())
}

/// The balance table of account `a` (`accounts`, or `accountsA`).
fn acct_table(w: JepsenWorkload, a: i64) -> String {
    if w == JepsenWorkload::BankMultitable {
        format!("accounts{a}")
    } else {
        "accounts".to_string()
    }
}

fn check_acct(a: i64) -> Result<(), ClientError> {
    if (0..ACCOUNTS).contains(&a) {
        Ok(())
    } else {
        Err(refused(
            "invalid-op",
            format!("account {a} is outside the bank"),
        ))
    }
}

async fn balance(
    s: &mut dyn Session,
    w: JepsenWorkload,
    a: i64,
    for_update: bool,
) -> Result<Option<i64>, ClientError> {
    check_acct(a)?;
    let sql = format!(
        "SELECT balance FROM {} WHERE id = ?{}",
        acct_table(w, a),
        if for_update { " FOR UPDATE" } else { "" }
    );
    Ok(one(&s.query(&sql, &[a]).await?))
}

async fn set_balance(
    s: &mut dyn Session,
    w: JepsenWorkload,
    a: i64,
    b: i64,
) -> Result<(), ClientError> {
    let sql = format!("UPDATE {} SET balance = ? WHERE id = ?", acct_table(w, a));
    s.execute(&sql, &[b, a]).await.map(drop)
}

/// The body of one transaction (between `BEGIN` and `COMMIT`).
async fn body(
    s: &mut dyn Session,
    w: JepsenWorkload,
    op: &Op,
    for_update: bool,
) -> Result<Outcome, ClientError> {
    Ok(match op {
        Op::BankRead(accts) => {
            let mut got: Vec<Option<i64>> = vec![None; accts.len()];
            if w == JepsenWorkload::BankMultitable {
                for (i, &a) in accts.iter().enumerate() {
                    got[i] = balance(s, w, a, false).await?;
                }
            } else {
                // One statement: one snapshot even at read committed.
                for row in s.query("SELECT id, balance FROM accounts", &[]).await? {
                    if let [Some(id), b] = row[..]
                        && let Some(i) = accts.iter().position(|&a| a == id)
                    {
                        got[i] = b;
                    }
                }
            }
            Outcome::Ints(got)
        }
        Op::Transfer { from, to, amount } => {
            let b1 = balance(s, w, *from, for_update).await?;
            let b2 = balance(s, w, *to, for_update).await?;
            let (Some(b1), Some(b2)) = (b1, b2) else {
                return Err(refused(
                    "no-account",
                    format!("account {from} or {to} does not exist"),
                ));
            };
            if b1 - amount < 0 {
                return Err(refused(
                    "negative",
                    format!("account {from} holds {b1}: cannot transfer {amount}"),
                ));
            }
            set_balance(s, w, *from, b1 - amount).await?;
            set_balance(s, w, *to, b2 + amount).await?;
            Outcome::Echo
        }
        Op::Insert { from, to, amount } => {
            let b1 = balance(s, w, *from, for_update).await?;
            let Some(b1) = b1 else {
                return Err(refused(
                    "no-account",
                    format!("account {from} does not exist"),
                ));
            };
            if balance(s, w, *to, for_update).await?.is_some() {
                return Err(refused("exists", format!("account {to} exists already")));
            }
            if b1 - amount < 0 {
                return Err(refused(
                    "negative",
                    format!("account {from} holds {b1}: cannot move {amount}"),
                ));
            }
            set_balance(s, w, *from, b1 - amount).await?;
            s.execute(
                "INSERT INTO accounts (id, balance) VALUES (?, ?)",
                &[*to, *amount],
            )
            .await?;
            Outcome::Echo
        }
        Op::Delete { from, to } => {
            let b1 = balance(s, w, *from, for_update).await?;
            let b2 = balance(s, w, *to, for_update).await?;
            let (Some(b1), Some(b2)) = (b1, b2) else {
                return Err(refused(
                    "no-account",
                    format!("account {from} or {to} does not exist"),
                ));
            };
            set_balance(s, w, *to, b2 + b1).await?;
            s.execute("DELETE FROM accounts WHERE id = ?", &[*from])
                .await?;
            Outcome::Ints(vec![Some(b1), Some(b1)])
        }
        Op::SetAdd(x) => {
            s.execute("INSERT INTO sets (val) VALUES (?)", &[*x])
                .await?;
            Outcome::Echo
        }
        Op::SetRead => {
            let rows = s.query("SELECT val FROM sets", &[]).await?;
            Outcome::List(
                rows.iter()
                    .filter_map(|r| r.first().copied().flatten())
                    .collect(),
            )
        }
        Op::Inc(k) => {
            let sql = if for_update {
                "SELECT val FROM cycle WHERE pk = ? FOR UPDATE"
            } else {
                "SELECT val FROM cycle WHERE pk = ?"
            };
            let rows = s.query(sql, &[*k]).await?;
            let v = if rows.is_empty() {
                s.execute(
                    "INSERT INTO cycle (pk, sk, val) VALUES (?, ?, 0)",
                    &[*k, *k],
                )
                .await?;
                0
            } else {
                let v = one(&rows).unwrap_or(-1) + 1;
                s.execute("UPDATE cycle SET val = ? WHERE pk = ?", &[v, *k])
                    .await?;
                v
            };
            Outcome::Ints(vec![Some(v)])
        }
        Op::MonoRead(keys) => {
            let mut got = vec![None; keys.len()];
            for row in s.query("SELECT pk, val FROM cycle", &[]).await? {
                if let [Some(pk), v] = row[..]
                    && let Some(i) = keys.iter().position(|&k| k == pk)
                {
                    got[i] = v;
                }
            }
            Outcome::Ints(got)
        }
        Op::CounterAdd(n) => {
            s.execute("UPDATE counter SET count = count + ? WHERE id = 0", &[*n])
                .await?;
            Outcome::Echo
        }
        Op::CounterRead => {
            let rows = s
                .query("SELECT count FROM counter WHERE id = 0", &[])
                .await?;
            Outcome::Ints(vec![one(&rows)])
        }
        Op::SeqWrite(_) | Op::SeqRead(_) => {
            return Err(refused(
                "invalid-op",
                "sequential ops are not one transaction".into(),
            ));
        }
    })
}

/// One transaction: `BEGIN`, the body, `COMMIT`; rolled back (and a
/// definite failure) on any error before `COMMIT`.
async fn txn(
    s: &mut dyn Session,
    w: JepsenWorkload,
    op: &Op,
    for_update: bool,
) -> Result<Outcome, ClientError> {
    s.begin().await?;
    let read_only = matches!(
        op,
        Op::BankRead(_) | Op::SetRead | Op::MonoRead(_) | Op::CounterRead
    );
    match body(s, w, op, for_update).await {
        Ok(out) => {
            s.commit().await.map_err(|e| {
                // A read changes nothing, whatever became of its COMMIT.
                if read_only {
                    ClientError::definite(e.code, e.message)
                } else {
                    e
                }
            })?;
            Ok(out)
        }
        Err(e) => {
            s.rollback().await;
            Err(ClientError::definite(e.code, e.message))
        }
    }
}

/// Runs `op`; never retries.
///
/// # Errors
/// A classified error: definite when nothing took effect.
pub async fn run(
    s: &mut dyn Session,
    w: JepsenWorkload,
    op: &Op,
    for_update: bool,
) -> Result<Outcome, ClientError> {
    match op {
        Op::SeqWrite(keys) => {
            for (i, &k) in keys.iter().enumerate() {
                let sql = format!("INSERT INTO seq_{} (k) VALUES (?)", seq_table(k));
                let step = async {
                    s.begin().await?;
                    if let Err(e) = s.execute(&sql, &[k]).await {
                        s.rollback().await;
                        return Err(ClientError::definite(e.code, e.message));
                    }
                    s.commit().await
                };
                if let Err(e) = step.await {
                    // Earlier subkeys committed: the op took effect in part.
                    return Err(if i == 0 {
                        e
                    } else {
                        ClientError::indefinite(e.code, format!("after {i} subkeys: {}", e.message))
                    });
                }
            }
            Ok(Outcome::Echo)
        }
        Op::SeqRead(keys) => {
            let mut got = Vec::with_capacity(keys.len());
            for &k in keys {
                let sql = format!("SELECT k FROM seq_{} WHERE k = ?", seq_table(k));
                s.begin().await?;
                match s.query(&sql, &[k]).await {
                    Ok(rows) => {
                        // A read changes nothing: any failure is definite.
                        s.commit()
                            .await
                            .map_err(|e| ClientError::definite(e.code, e.message))?;
                        got.push(one(&rows).map(|_| 1));
                    }
                    Err(e) => {
                        s.rollback().await;
                        return Err(ClientError::definite(e.code, e.message));
                    }
                }
            }
            Ok(Outcome::Ints(got))
        }
        _ => txn(s, w, op, for_update).await,
    }
}

/// The client of one Jepsen workload over any [`Session`]: parses the op,
/// runs its program, completes the micro-ops — the one loop every SQL
/// database's Jepsen client is.
pub struct SessionClient<S> {
    /// The connection.
    pub session: S,
    /// The workload whose ops it runs.
    pub workload: JepsenWorkload,
    /// Reads that are followed by a write take `FOR UPDATE`.
    pub for_update: bool,
}

impl<S: Session + 'static> Client for SessionClient<S> {
    fn invoke<'a>(
        &'a mut self,
        txn: &'a [MicroOp],
    ) -> BoxFuture<'a, Result<Vec<MicroOp>, ClientError>> {
        self.invoke_op(&F::Txn, txn)
    }

    fn invoke_op<'a>(
        &'a mut self,
        f: &'a F,
        txn: &'a [MicroOp],
    ) -> BoxFuture<'a, Result<Vec<MicroOp>, ClientError>> {
        Box::pin(async move {
            let op = Op::parse(self.workload, f, txn)?;
            let out = run(&mut self.session, self.workload, &op, self.for_update).await?;
            Op::complete(txn, out)
        })
    }

    fn close(self: Box<Self>) -> BoxFuture<'static, ()> {
        Box::new(self.session).close()
    }
}
