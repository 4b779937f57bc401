//! The `counter` workload (Jepsen's `counter`, YugabyteDB's SQL form): adds
//! of 1 to one counter, mixed with reads of it. Encoding: [`crate::jepsen`].

use crate::generator::{Ctx, Generator, Next, Sequence, synchronize};
use crate::jepsen::{inv, on_first_free};
use crate::rng::{SeededRng, seeded};
use rand::RngExt;
use store::{F, Key, MicroOp, ReadValue, Val};

/// The counter's key.
pub const COUNTER_KEY: i64 = 0;

/// An add of `n` (non-negative: the checker's bounds assume it).
pub fn add(n: i64) -> Vec<MicroOp> {
    vec![MicroOp::Append(Key::int(COUNTER_KEY), Val::int(n))]
}

/// A read of the counter.
pub fn read() -> Vec<MicroOp> {
    vec![MicroOp::Read(Key::int(COUNTER_KEY), ReadValue::Nil)]
}

/// Adds of 1, one read in four ops.
#[derive(Clone, Debug)]
pub struct CounterGen {
    rng: SeededRng,
}

impl CounterGen {
    /// A generator.
    pub fn new(seed: u64) -> CounterGen {
        CounterGen { rng: seeded(seed) }
    }
}

impl Generator for CounterGen {
    fn next(&mut self, ctx: &Ctx) -> Next {
        if ctx.first_free().is_none() {
            return Next::Pending;
        }
        if self.rng.random_ratio(1, 4) {
            on_first_free(ctx, || inv(F::Read, read()))
        } else {
            on_first_free(ctx, || inv(F::Add, add(1)))
        }
    }

    fn final_generator(&self) -> Option<Box<dyn Generator>> {
        Some(Box::new(synchronize(Sequence::new([inv(F::Read, read())]))))
    }
}
