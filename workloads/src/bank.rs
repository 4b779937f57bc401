//! The `bank` workloads (Jepsen's `bank`, CockroachDB's `bank-multitable`,
//! YugabyteDB's bank with inserts and deletes): transfers between accounts
//! and reads of every balance in one transaction. Encoding: [`crate::jepsen`].
//!
//! Key decision: the accounts and the money are fixed (Jepsen's defaults,
//! [`ACCOUNTS`] accounts holding [`TOTAL`] in all; [`initial_balances`]),
//! so the clients' schema, the simulator and the checker agree without a
//! setting to pass around.

use crate::generator::{Ctx, Generator, Next, Sequence, synchronize};
use crate::jepsen::{inv, on_first_free};
use crate::rng::{SeededRng, seeded};
use rand::RngExt;
use store::{F, Key, MicroOp, ReadValue, Val};

/// Accounts `0..ACCOUNTS` (Jepsen: `(range 8)`).
pub const ACCOUNTS: i64 = 8;
/// The money in the bank (Jepsen: 100).
pub const TOTAL: i64 = 100;
/// Largest transfer (Jepsen: 5).
pub const MAX_TRANSFER: i64 = 5;
/// bank-insert: accounts `0..STABLE_ACCOUNTS` always exist; the others are
/// contention keys that are inserted and deleted.
pub const STABLE_ACCOUNTS: i64 = 5;

/// The accounts and balances a bank starts with: equal shares of [`TOTAL`]
/// (the remainder in account 0); with inserts/deletes only the stable
/// accounts exist.
pub fn initial_balances(inserts: bool) -> Vec<(i64, i64)> {
    let n = if inserts { STABLE_ACCOUNTS } else { ACCOUNTS };
    let share = TOTAL / n;
    (0..n)
        .map(|a| {
            (
                a,
                if a == 0 {
                    TOTAL - share * (n - 1)
                } else {
                    share
                },
            )
        })
        .collect()
}

/// A read of every account (`nil` for a row that does not exist).
pub fn read() -> Vec<MicroOp> {
    (0..ACCOUNTS)
        .map(|a| MicroOp::Read(Key::int(a), ReadValue::Nil))
        .collect()
}

/// A transfer (or insert) of `amount` from `from` to `to`.
pub fn transfer(from: i64, to: i64, amount: i64) -> Vec<MicroOp> {
    vec![
        MicroOp::Write(Key::int(from), Val::int(-amount)),
        MicroOp::Write(Key::int(to), Val::int(amount)),
    ]
}

/// A delete of `from`, its balance moved to `to`.
pub fn delete(from: i64, to: i64) -> Vec<MicroOp> {
    vec![
        MicroOp::Read(Key::int(from), ReadValue::Nil),
        MicroOp::Read(Key::int(to), ReadValue::Nil),
    ]
}

/// An endless mix of reads and transfers (and inserts/deletes).
#[derive(Clone, Debug)]
pub struct BankGen {
    inserts: bool,
    rng: SeededRng,
}

impl BankGen {
    /// A generator; `inserts` adds inserts and deletes of the contention
    /// accounts.
    pub fn new(inserts: bool, seed: u64) -> BankGen {
        BankGen {
            inserts,
            rng: seeded(seed),
        }
    }

    fn pair(&mut self, from: std::ops::Range<i64>, to: std::ops::Range<i64>) -> (i64, i64) {
        loop {
            let a = self.rng.random_range(from.clone());
            let b = self.rng.random_range(to.clone());
            if a != b {
                return (a, b);
            }
        }
    }

    fn next_op(&mut self) -> crate::generator::Invocation {
        if self.rng.random_bool(0.5) {
            return inv(F::Read, read());
        }
        let amount = self.rng.random_range(1..=MAX_TRANSFER);
        if !self.inserts {
            let (a, b) = self.pair(0..ACCOUNTS, 0..ACCOUNTS);
            return inv(F::Transfer, transfer(a, b, amount));
        }
        match self.rng.random_range(0..4) {
            0 => {
                let (a, b) = self.pair(0..ACCOUNTS, STABLE_ACCOUNTS..ACCOUNTS);
                inv(F::Insert, transfer(a, b, amount))
            }
            1 => {
                let (a, b) = self.pair(STABLE_ACCOUNTS..ACCOUNTS, 0..STABLE_ACCOUNTS);
                inv(F::Delete, delete(a, b))
            }
            _ => {
                let (a, b) = self.pair(0..ACCOUNTS, 0..ACCOUNTS);
                inv(F::Transfer, transfer(a, b, amount))
            }
        }
    }
}

impl Generator for BankGen {
    fn next(&mut self, ctx: &Ctx) -> Next {
        if ctx.first_free().is_none() {
            return Next::Pending;
        }
        let op = self.next_op();
        on_first_free(ctx, || op)
    }

    fn final_generator(&self) -> Option<Box<dyn Generator>> {
        Some(Box::new(synchronize(Sequence::new([inv(F::Read, read())]))))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::panic)]
mod tests {
    use super::*;

    #[test]
    fn initial_balances_hold_the_total() {
        for inserts in [false, true] {
            let b = initial_balances(inserts);
            assert_eq!(b.iter().map(|(_, v)| v).sum::<i64>(), TOTAL);
        }
        assert_eq!(initial_balances(false).len(), ACCOUNTS as usize);
        assert_eq!(initial_balances(true).len(), STABLE_ACCOUNTS as usize);
    }

    #[test]
    fn transfers_move_between_different_accounts() {
        let mut g = BankGen::new(true, 5);
        let (mut reads, mut fs) = (0, std::collections::HashSet::new());
        for _ in 0..400 {
            let op = g.next_op();
            fs.insert(op.f.clone());
            match op.f {
                F::Read => {
                    reads += 1;
                    assert_eq!(op.value.len(), ACCOUNTS as usize);
                }
                F::Transfer | F::Insert => {
                    let (MicroOp::Write(a, x), MicroOp::Write(b, y)) = (&op.value[0], &op.value[1])
                    else {
                        panic!("{op:?}")
                    };
                    assert_ne!(a, b);
                    assert_eq!(
                        x.0,
                        store::Atom::Int(-match y.0 {
                            store::Atom::Int(v) => v,
                            _ => panic!(),
                        })
                    );
                }
                F::Delete => assert_eq!(op.value.len(), 2),
                other => panic!("{other:?}"),
            }
        }
        assert!(reads > 100 && reads < 300);
        assert_eq!(fs.len(), 4, "{fs:?}");
    }
}
