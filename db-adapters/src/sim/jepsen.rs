//! The Jepsen workloads on the simulator (`--db sim`): each op runs as
//! engine transactions of register reads/writes and list appends, one
//! micro-op at a time with a yield between (so concurrent workers
//! interleave), under the engine's isolation or bug mode.
//!
//! Layout: bank account a = key a (a deleted account holds [`DELETED`]:
//! the engine has no deletes); the set = the list at key 0; monotonic key
//! k = key k; sequential subkeys = their keys; the counter = key 0 (read,
//! then written plus the amount). long-fork runs on the ordinary
//! [`SimClient`](crate::sim::SimClient). Which bug mode breaks what:
//! `lost-update` (bank totals, set and set-full losses, counter bounds,
//! monotonic duplicate increments), `stale-read` (set-full stale elements,
//! monotonic cycles, sequential trailing nils), `causal-gap` (long forks),
//! `torn-commit` (bank totals seen half-transferred).

use crate::client::{BoxFuture, Client, ClientError, ClientFactory};
use crate::jepsen::{Op, Outcome, refused};
use crate::sim::{SimError, SimFactory, TxnId};
use nemesis::Node;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use store::{F, Key, MicroOp, ReadValue, Val};
use workloads::JepsenWorkload;
use workloads::bank::initial_balances;

/// The balance of a deleted bank account.
pub const DELETED: i64 = i64::MIN;

/// Sessions of this factory are numbered from here (apart from the inner
/// factory's own).
const FIRST_SESSION: u64 = 1 << 40;

/// Opens simulator sessions of one Jepsen workload.
#[derive(Clone)]
pub struct JepsenSimFactory {
    inner: SimFactory,
    workload: JepsenWorkload,
    sessions: Arc<AtomicU64>,
}

impl JepsenSimFactory {
    /// Workload `w` on the simulated database `inner`.
    pub fn new(inner: SimFactory, workload: JepsenWorkload) -> JepsenSimFactory {
        JepsenSimFactory {
            inner,
            workload,
            sessions: Arc::new(AtomicU64::new(FIRST_SESSION)),
        }
    }
}

fn sim_error(e: &SimError) -> ClientError {
    if e.is_definite() {
        ClientError::definite(e.code(), e.to_string())
    } else {
        ClientError::indefinite(e.code(), e.to_string())
    }
}

impl ClientFactory for JepsenSimFactory {
    fn setup<'a>(&'a self, _node: &'a Node) -> BoxFuture<'a, Result<(), ClientError>> {
        Box::pin(async move {
            let initial: Vec<(i64, i64)> = match self.workload {
                JepsenWorkload::Bank | JepsenWorkload::BankMultitable => initial_balances(false),
                JepsenWorkload::BankInsert => initial_balances(true),
                JepsenWorkload::Counter => vec![(0, 0)],
                _ => return Ok(()),
            };
            // Setup is no workload op: it may retry the engine's random aborts.
            for _ in 0..1000 {
                let r = self.inner.with_engine(|e| {
                    let id = e.begin();
                    for (k, v) in &initial {
                        if let Err(err) = e.execute(id, &MicroOp::Write(Key::int(*k), Val::int(*v)))
                        {
                            e.abort(id);
                            return Err(err);
                        }
                    }
                    e.commit(id)
                })?;
                if r.is_ok() {
                    return Ok(());
                }
            }
            Err(ClientError::definite(
                "setup",
                "the simulator aborted every setup transaction",
            ))
        })
    }

    fn open<'a>(&'a self, node: &'a Node) -> BoxFuture<'a, Result<Box<dyn Client>, ClientError>> {
        Box::pin(async move {
            if self.workload == JepsenWorkload::LongFork {
                return self.inner.open(node).await;
            }
            Ok(Box::new(JepsenSimClient {
                db: self.inner.clone(),
                workload: self.workload,
                session: self.sessions.fetch_add(1, Ordering::Relaxed),
            }) as Box<dyn Client>)
        })
    }
}

/// One session of a Jepsen workload on the simulator.
struct JepsenSimClient {
    db: SimFactory,
    workload: JepsenWorkload,
    session: u64,
}

/// An open engine transaction; aborted if dropped unfinished.
struct Txn {
    db: SimFactory,
    id: TxnId,
    finished: bool,
}

impl Drop for Txn {
    fn drop(&mut self) {
        if !self.finished {
            let _ = self.db.with_engine(|e| e.abort(self.id));
        }
    }
}

impl Txn {
    fn begin(db: &SimFactory, session: u64) -> Result<Txn, ClientError> {
        let id = db.with_engine(|e| e.begin_session(session))?;
        Ok(Txn {
            db: db.clone(),
            id,
            finished: false,
        })
    }

    async fn exec(&mut self, m: MicroOp) -> Result<MicroOp, ClientError> {
        let r = self.db.with_engine(|e| e.execute(self.id, &m))?;
        tokio::task::yield_now().await;
        r.map_err(|e| {
            self.finished = true;
            sim_error(&e)
        })
    }

    async fn read(&mut self, k: i64) -> Result<Option<i64>, ClientError> {
        match self
            .exec(MicroOp::Read(Key::int(k), ReadValue::Nil))
            .await?
        {
            MicroOp::Read(_, ReadValue::Scalar(Val(store::Atom::Int(v)))) if v != DELETED => {
                Ok(Some(v))
            }
            _ => Ok(None),
        }
    }

    async fn read_list(&mut self, k: i64) -> Result<Vec<i64>, ClientError> {
        match self
            .exec(MicroOp::Read(Key::int(k), ReadValue::Nil))
            .await?
        {
            MicroOp::Read(_, ReadValue::List(l)) => Ok(l
                .iter()
                .filter_map(|v| match v.0 {
                    store::Atom::Int(i) => Some(i),
                    _ => None,
                })
                .collect()),
            _ => Ok(Vec::new()),
        }
    }

    async fn write(&mut self, k: i64, v: i64) -> Result<(), ClientError> {
        self.exec(MicroOp::Write(Key::int(k), Val::int(v)))
            .await
            .map(drop)
    }

    async fn append(&mut self, k: i64, v: i64) -> Result<(), ClientError> {
        self.exec(MicroOp::Append(Key::int(k), Val::int(v)))
            .await
            .map(drop)
    }

    fn commit(mut self) -> Result<(), ClientError> {
        self.finished = true;
        self.db
            .with_engine(|e| e.commit(self.id))?
            .map_err(|e| sim_error(&e))
    }
}

impl JepsenSimClient {
    async fn one(&self, op: &Op) -> Result<Outcome, ClientError> {
        let mut t = Txn::begin(&self.db, self.session)?;
        let out = match op {
            Op::BankRead(accts) => {
                let mut got = Vec::with_capacity(accts.len());
                for &a in accts {
                    got.push(t.read(a).await?);
                }
                Outcome::Ints(got)
            }
            Op::Transfer { from, to, amount } | Op::Insert { from, to, amount } => {
                let insert = matches!(op, Op::Insert { .. });
                let (b1, b2) = (t.read(*from).await?, t.read(*to).await?);
                let Some(b1) = b1 else {
                    return Err(refused(
                        "no-account",
                        format!("account {from} does not exist"),
                    ));
                };
                match (insert, b2) {
                    (false, None) => {
                        return Err(refused(
                            "no-account",
                            format!("account {to} does not exist"),
                        ));
                    }
                    (true, Some(_)) => {
                        return Err(refused("exists", format!("account {to} exists already")));
                    }
                    _ => {}
                }
                if b1 - amount < 0 {
                    return Err(refused("negative", format!("account {from} holds {b1}")));
                }
                t.write(*from, b1 - amount).await?;
                t.write(*to, b2.unwrap_or(0) + amount).await?;
                Outcome::Echo
            }
            Op::Delete { from, to } => {
                let (b1, b2) = (t.read(*from).await?, t.read(*to).await?);
                let (Some(b1), Some(b2)) = (b1, b2) else {
                    return Err(refused(
                        "no-account",
                        format!("account {from} or {to} does not exist"),
                    ));
                };
                t.write(*to, b2 + b1).await?;
                t.write(*from, DELETED).await?;
                Outcome::Ints(vec![Some(b1), Some(b1)])
            }
            Op::SetAdd(x) => {
                t.append(0, *x).await?;
                Outcome::Echo
            }
            Op::SetRead => Outcome::List(t.read_list(0).await?),
            Op::Inc(k) => {
                let v = t.read(*k).await?.map_or(0, |v| v + 1);
                t.write(*k, v).await?;
                Outcome::Ints(vec![Some(v)])
            }
            Op::MonoRead(keys) => {
                let mut got = Vec::with_capacity(keys.len());
                for &k in keys {
                    got.push(t.read(k).await?);
                }
                Outcome::Ints(got)
            }
            Op::CounterAdd(n) => {
                let v = t.read(0).await?.unwrap_or(0);
                t.write(0, v + n).await?;
                Outcome::Echo
            }
            Op::CounterRead => Outcome::Ints(vec![Some(t.read(0).await?.unwrap_or(0))]),
            Op::SeqWrite(_) | Op::SeqRead(_) => {
                return Err(refused("invalid-op", "not one transaction".into()));
            }
        };
        t.commit()?;
        Ok(out)
    }

    async fn run(&self, op: &Op) -> Result<Outcome, ClientError> {
        match op {
            Op::SeqWrite(keys) => {
                for (i, &k) in keys.iter().enumerate() {
                    let step = async {
                        let mut t = Txn::begin(&self.db, self.session)?;
                        t.write(k, 1).await?;
                        t.commit()
                    };
                    if let Err(e) = step.await {
                        return Err(if i == 0 {
                            e
                        } else {
                            ClientError::indefinite(
                                e.code,
                                format!("after {i} subkeys: {}", e.message),
                            )
                        });
                    }
                }
                Ok(Outcome::Echo)
            }
            Op::SeqRead(keys) => {
                let mut got = Vec::with_capacity(keys.len());
                for &k in keys {
                    let mut t = Txn::begin(&self.db, self.session)?;
                    let v = t.read(k).await?;
                    t.commit()?;
                    got.push(v);
                }
                Ok(Outcome::Ints(got))
            }
            _ => self.one(op).await,
        }
    }
}

impl Client for JepsenSimClient {
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
            let out = self.run(&op).await?;
            Op::complete(txn, out)
        })
    }

    fn close(self: Box<Self>) -> BoxFuture<'static, ()> {
        Box::pin(async {})
    }
}
