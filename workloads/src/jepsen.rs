//! Jepsen's non-Elle workloads: bank, set, set-full,
//! long-fork, monotonic, sequential and counter — their names and how
//! their operations are written as micro-ops.
//!
//! Key decision: every operation is an op of a Jepsen function (`read`,
//! `transfer`, `add`, `inc`, `write`, …; long-fork's are `txn`) whose value
//! is a list of micro-ops, so the runner, the history log, the readers and
//! the timeline carry them unchanged; the encoding of each is below, and
//! the clients (`db-adapters` `jepsen`) and checkers (`checker`
//! `workloads`) agree on it:
//!
//! | workload | invocation | ok completion |
//! |---|---|---|
//! | bank | `read [[r a nil] …]` every account; `transfer [[w from -n] [w to n]]` | balances filled in (`nil`: no such row) |
//! | bank-insert | also `insert [[w from -n] [w to n]]`, `delete [[r from nil] [r to nil]]` | delete: both reads = the deleted balance moved |
//! | set, set-full | `add [[append 0 x]]`, `read [[r 0 nil]]` | read: the elements as a list (duplicates kept) |
//! | long-fork | `txn [[w k 1]]`, `txn [[r k nil] …]` (a group) | reads filled in |
//! | monotonic | `inc [[r k nil]]`, `read [[r k nil] …]` every key | inc: the value it wrote; read: the values (`nil`: absent) |
//! | sequential | `write [[w k·5+0 1] … [w k·5+4 1]]`, `read [[r k·5+4 nil] … [r k·5+0 nil]]` | one transaction per micro-op, in order |
//! | counter | `add [[append 0 n]]`, `read [[r 0 nil]]` | read: the count |

use crate::generator::{Ctx, Generator, Invocation, Next};
use crate::{WorkloadConfig, WorkloadError};
use std::fmt;
use store::{F, MicroOp};

/// One of Jepsen's workloads (a `--workload` name).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum JepsenWorkload {
    /// `bank`: transfers between accounts of one table.
    Bank,
    /// `bank-multitable`: one table per account.
    BankMultitable,
    /// `bank-insert`: transfers plus inserts and deletes of accounts.
    BankInsert,
    /// `set`: adds, then a final read.
    Set,
    /// `set-full`: adds with reads throughout.
    SetFull,
    /// `long-fork`: single-key inserts, group reads.
    LongFork,
    /// `monotonic`: increments and reads of every key (TiDB's form).
    Monotonic,
    /// `sequential`: ordered subkey inserts, reverse-order reads.
    Sequential,
    /// `counter`: adds and reads of one counter.
    Counter,
}

impl JepsenWorkload {
    /// Every Jepsen workload.
    pub const ALL: &'static [JepsenWorkload] = &[
        JepsenWorkload::Bank,
        JepsenWorkload::BankMultitable,
        JepsenWorkload::BankInsert,
        JepsenWorkload::Set,
        JepsenWorkload::SetFull,
        JepsenWorkload::LongFork,
        JepsenWorkload::Monotonic,
        JepsenWorkload::Sequential,
        JepsenWorkload::Counter,
    ];

    /// The `--workload` name.
    pub fn name(self) -> &'static str {
        match self {
            JepsenWorkload::Bank => "bank",
            JepsenWorkload::BankMultitable => "bank-multitable",
            JepsenWorkload::BankInsert => "bank-insert",
            JepsenWorkload::Set => "set",
            JepsenWorkload::SetFull => "set-full",
            JepsenWorkload::LongFork => "long-fork",
            JepsenWorkload::Monotonic => "monotonic",
            JepsenWorkload::Sequential => "sequential",
            JepsenWorkload::Counter => "counter",
        }
    }

    /// The workload named `s`, if it is one of these.
    pub fn parse(s: &str) -> Option<JepsenWorkload> {
        JepsenWorkload::ALL.iter().copied().find(|w| w.name() == s)
    }

    /// Whether it is one of the bank variants.
    pub fn is_bank(self) -> bool {
        matches!(
            self,
            JepsenWorkload::Bank | JepsenWorkload::BankMultitable | JepsenWorkload::BankInsert
        )
    }
}

impl fmt::Display for JepsenWorkload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The endless main-phase generator of `w`; its
/// [`Generator::final_generator`] is the workload's final reads.
///
/// # Errors
/// [`WorkloadError::Invalid`] naming the first bad field of `cfg`.
pub fn generator(
    w: JepsenWorkload,
    cfg: &WorkloadConfig,
    seed: u64,
) -> Result<Box<dyn Generator>, WorkloadError> {
    cfg.validate()?;
    Ok(match w {
        JepsenWorkload::Bank | JepsenWorkload::BankMultitable => {
            Box::new(crate::bank::BankGen::new(false, seed))
        }
        JepsenWorkload::BankInsert => Box::new(crate::bank::BankGen::new(true, seed)),
        JepsenWorkload::Set => Box::new(crate::set::SetGen::new(false, seed)),
        JepsenWorkload::SetFull => Box::new(crate::set::SetGen::new(true, seed)),
        JepsenWorkload::LongFork => Box::new(crate::long_fork::LongForkGen::new(
            crate::long_fork::GROUP_SIZE,
            seed,
        )),
        JepsenWorkload::Monotonic => Box::new(crate::monotonic::MonotonicGen::new(seed)),
        JepsenWorkload::Sequential => Box::new(crate::sequential::SequentialGen::new(seed)),
        JepsenWorkload::Counter => Box::new(crate::counter::CounterGen::new(seed)),
    })
}

/// `invocation` on the first free thread, now.
pub(crate) fn on_first_free(ctx: &Ctx, invocation: impl FnOnce() -> Invocation) -> Next {
    let Some(thread) = ctx.first_free() else {
        return Next::Pending;
    };
    Next::Op {
        thread,
        at_ns: ctx.time_ns,
        invocation: invocation(),
    }
}

/// An invocation of `f` on `value`.
pub(crate) fn inv(f: F, value: Vec<MicroOp>) -> Invocation {
    Invocation { f, value }
}
