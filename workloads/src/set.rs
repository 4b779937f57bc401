//! The `set` and `set-full` workloads: adds of distinct integers 0, 1, 2, …
//! to one set; `set` reads it once at the end, `set-full` also reads it
//! throughout (one op in [`READ_EVERY`]), which its checker turns into
//! per-element stability, loss and visibility latency. Encoding:
//! [`crate::jepsen`].

use crate::generator::{Ctx, Generator, Next, Sequence, each_thread, synchronize};
use crate::jepsen::{inv, on_first_free};
use crate::rng::{SeededRng, seeded};
use rand::RngExt;
use store::{F, Key, MicroOp, ReadValue, Val};

/// set-full: one op in this many is a read.
pub const READ_EVERY: u32 = 4;

/// The one key the set lives under.
pub const SET_KEY: i64 = 0;

/// An add of `x`.
pub fn add(x: i64) -> Vec<MicroOp> {
    vec![MicroOp::Append(Key::int(SET_KEY), Val::int(x))]
}

/// A read of the whole set.
pub fn read() -> Vec<MicroOp> {
    vec![MicroOp::Read(Key::int(SET_KEY), ReadValue::Nil)]
}

/// Adds of 0, 1, 2, … (and reads, for set-full).
#[derive(Clone, Debug)]
pub struct SetGen {
    full: bool,
    next: i64,
    rng: SeededRng,
}

impl SetGen {
    /// A generator; `full` mixes reads in.
    pub fn new(full: bool, seed: u64) -> SetGen {
        SetGen {
            full,
            next: 0,
            rng: seeded(seed),
        }
    }
}

impl Generator for SetGen {
    fn next(&mut self, ctx: &Ctx) -> Next {
        if ctx.first_free().is_none() {
            return Next::Pending;
        }
        if self.full && self.rng.random_ratio(1, READ_EVERY) {
            return on_first_free(ctx, || inv(F::Read, read()));
        }
        let x = self.next;
        self.next += 1;
        on_first_free(ctx, || inv(F::Add, add(x)))
    }

    fn final_generator(&self) -> Option<Box<dyn Generator>> {
        // One read per thread, after every add has completed: the checker
        // takes the last ok one, so a single failed read (an abort, a
        // timeout) does not leave the run without a final read.
        Some(Box::new(synchronize(each_thread(|_| {
            Sequence::new([inv(F::Read, read())])
        }))))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::panic)]
mod tests {
    use super::*;

    fn ops(full: bool) -> Vec<crate::generator::Invocation> {
        let mut g = SetGen::new(full, 1);
        (0..200)
            .map(|_| match g.next(&Ctx::all_free(0, 1)) {
                Next::Op { invocation, .. } => invocation,
                other => panic!("{other:?}"),
            })
            .collect()
    }

    #[test]
    fn set_adds_distinct_elements_and_reads_only_at_the_end() {
        let adds = ops(false);
        assert!(adds.iter().all(|i| i.f == F::Add));
        assert_eq!(adds[7].value, add(7));
        let full = ops(true);
        let reads = full.iter().filter(|i| i.f == F::Read).count();
        assert!(reads > 20 && reads < 90, "{reads}");
        let added: Vec<_> = full.iter().filter(|i| i.f == F::Add).collect();
        assert_eq!(added.last().unwrap().value, add(added.len() as i64 - 1));
        assert!(SetGen::new(false, 1).final_generator().is_some());
    }
}
