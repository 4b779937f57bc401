//! The `monotonic` workload (TiDB's portable form of CockroachDB's
//! monotonic test): increments of [`KEYS`] counters (read the value, write
//! it plus one; a missing row is inserted with 0) and reads of every key in
//! one transaction. Encoding: [`crate::jepsen`].

use crate::generator::{Ctx, Generator, Next, Sequence, synchronize};
use crate::jepsen::{inv, on_first_free};
use crate::rng::{SeededRng, seeded};
use rand::RngExt;
use rand::seq::SliceRandom;
use store::{F, Key, MicroOp, ReadValue};

/// Keys `0..KEYS` (TiDB: 8).
pub const KEYS: i64 = 8;

/// An increment of `k`.
pub fn inc(k: i64) -> Vec<MicroOp> {
    vec![MicroOp::Read(Key::int(k), ReadValue::Nil)]
}

/// A read of every key, in the order given.
pub fn read(order: &[i64]) -> Vec<MicroOp> {
    order
        .iter()
        .map(|&k| MicroOp::Read(Key::int(k), ReadValue::Nil))
        .collect()
}

/// Increments and reads (half each), read order shuffled.
#[derive(Clone, Debug)]
pub struct MonotonicGen {
    rng: SeededRng,
}

impl MonotonicGen {
    /// A generator.
    pub fn new(seed: u64) -> MonotonicGen {
        MonotonicGen { rng: seeded(seed) }
    }
}

impl Generator for MonotonicGen {
    fn next(&mut self, ctx: &Ctx) -> Next {
        if ctx.first_free().is_none() {
            return Next::Pending;
        }
        if self.rng.random_bool(0.5) {
            let mut order: Vec<i64> = (0..KEYS).collect();
            order.shuffle(&mut self.rng);
            on_first_free(ctx, || inv(F::Read, read(&order)))
        } else {
            let k = self.rng.random_range(0..KEYS);
            on_first_free(ctx, || inv(F::Inc, inc(k)))
        }
    }

    fn final_generator(&self) -> Option<Box<dyn Generator>> {
        let order: Vec<i64> = (0..KEYS).collect();
        Some(Box::new(synchronize(Sequence::new([inv(
            F::Read,
            read(&order),
        )]))))
    }
}
