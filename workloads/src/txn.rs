//! The transaction generator shared by list-append and rw-register (Elle's
//! `wr-txns`): 1–4 micro-ops, reads and writes mixed by `read_ratio`, keys
//! from the rotating [`KeyPool`], values unique per key.

use crate::generator::{Ctx, Generator, Invocation, Next};
use crate::keys::KeyPool;
use crate::rng::{SeededRng, seeded};
use crate::{WorkloadConfig, WorkloadError, WorkloadKind};
use rand::RngExt;
use store::{F, Key, MicroOp, ReadValue, Val};

/// An endless generator of transactions of one workload kind.
#[derive(Clone, Debug)]
pub struct TxnGen {
    kind: WorkloadKind,
    cfg: WorkloadConfig,
    rng: SeededRng,
    pool: KeyPool,
}

impl TxnGen {
    /// A generator for `kind` with `cfg`, seeded by `seed`.
    ///
    /// # Errors
    /// [`WorkloadError::Invalid`] naming the first bad field of `cfg`.
    pub fn new(
        kind: WorkloadKind,
        cfg: &WorkloadConfig,
        seed: u64,
    ) -> Result<TxnGen, WorkloadError> {
        cfg.validate()?;
        Ok(TxnGen {
            kind,
            cfg: cfg.clone(),
            rng: seeded(seed),
            pool: KeyPool::new(cfg),
        })
    }

    /// The workload kind.
    pub fn kind(&self) -> WorkloadKind {
        self.kind
    }

    /// The next transaction's micro-ops.
    pub fn next_txn(&mut self) -> Vec<MicroOp> {
        let len = self
            .rng
            .random_range(self.cfg.min_txn_length..=self.cfg.max_txn_length);
        let mut mops = Vec::with_capacity(len);
        for _ in 0..len {
            let slot = self.pool.pick_slot(&mut self.rng);
            let read = self.rng.random_bool(self.cfg.read_ratio);
            if read {
                mops.push(MicroOp::Read(self.pool.read(slot), ReadValue::Nil));
            } else {
                let (k, v) = self.pool.write(slot);
                mops.push(match self.kind {
                    WorkloadKind::ListAppend | WorkloadKind::Predicate => {
                        MicroOp::Append(k, Val::int(v))
                    }
                    WorkloadKind::RwRegister
                    | WorkloadKind::Register
                    | WorkloadKind::Kv
                    | WorkloadKind::Knossos(_)
                    | WorkloadKind::Jepsen(_) => MicroOp::Write(k, Val::int(v)),
                });
            }
        }
        mops
    }

    /// One read of every key touched so far, in batches of the configured
    /// `final_read_batch` keys per transaction.
    pub fn final_reads(&self) -> Vec<Invocation> {
        let keys = self.pool.touched();
        keys.chunks(self.cfg.final_read_batch.max(1))
            .map(|chunk| Invocation {
                f: F::Txn,
                value: chunk
                    .iter()
                    .map(|k| MicroOp::Read(k.clone(), ReadValue::Nil))
                    .collect(),
            })
            .collect()
    }

    /// The keys currently in the active pool.
    pub fn active_keys(&self) -> Vec<Key> {
        self.pool.active().iter().map(|&k| Key::int(k)).collect()
    }
}

/// A transaction for the first free thread, now (what every transaction
/// generator emits); `txn` is only called when a thread is free.
pub(crate) fn txn_for_free_thread(ctx: &Ctx, txn: impl FnOnce() -> Vec<MicroOp>) -> Next {
    let Some(thread) = ctx.first_free() else {
        return Next::Pending;
    };
    Next::Op {
        thread,
        at_ns: ctx.time_ns,
        invocation: Invocation {
            f: F::Txn,
            value: txn(),
        },
    }
}

impl Generator for TxnGen {
    fn next(&mut self, ctx: &Ctx) -> Next {
        txn_for_free_thread(ctx, || self.next_txn())
    }

    fn touched_keys(&self) -> Vec<Key> {
        self.pool.touched()
    }
}
