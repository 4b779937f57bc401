//! The `sequential` workload (CockroachDB's): a write of key k inserts its
//! [`SUBKEYS`] subkeys in order, each in its own transaction; a read of k
//! reads them in reverse order, each in its own transaction. A reader that
//! saw a later subkey must see every earlier one. Half the threads (at
//! least one) write fresh keys 0, 1, 2, …; the others read one of the last
//! [`REMEMBERED`] keys written. Encoding: [`crate::jepsen`] (subkey `j` of
//! key k is the integer `k·SUBKEYS + j`).

use crate::generator::{Ctx, Generator, Next};
use crate::jepsen::inv;
use crate::rng::{SeededRng, seeded};
use rand::RngExt;
use std::collections::VecDeque;
use store::{F, Key, MicroOp, ReadValue, Val};

/// Subkeys per key (CockroachDB's `key-count`: 5).
pub const SUBKEYS: i64 = 5;
/// Keys the readers choose from (CockroachDB: 20).
pub const REMEMBERED: usize = 20;

/// The write of key `k`: its subkeys in order.
pub fn write(k: i64) -> Vec<MicroOp> {
    (0..SUBKEYS)
        .map(|j| MicroOp::Write(Key::int(k * SUBKEYS + j), Val::int(1)))
        .collect()
}

/// The read of key `k`: its subkeys in reverse order.
pub fn read(k: i64) -> Vec<MicroOp> {
    (0..SUBKEYS)
        .rev()
        .map(|j| MicroOp::Read(Key::int(k * SUBKEYS + j), ReadValue::Nil))
        .collect()
}

/// Writers and readers.
#[derive(Clone, Debug)]
pub struct SequentialGen {
    next_key: i64,
    recent: VecDeque<i64>,
    rng: SeededRng,
}

impl SequentialGen {
    /// A generator.
    pub fn new(seed: u64) -> SequentialGen {
        SequentialGen {
            next_key: 0,
            recent: VecDeque::new(),
            rng: seeded(seed),
        }
    }
}

impl Generator for SequentialGen {
    fn next(&mut self, ctx: &Ctx) -> Next {
        let writers = (ctx.thread_count / 2).max(1);
        for &thread in &ctx.free_threads {
            let writes = if ctx.thread_count == 1 {
                self.recent.is_empty() || self.rng.random_bool(0.5)
            } else {
                thread.0 < writers
            };
            let value = if writes {
                let k = self.next_key;
                self.next_key += 1;
                self.recent.push_back(k);
                if self.recent.len() > REMEMBERED {
                    self.recent.pop_front();
                }
                inv(F::Write, write(k))
            } else if self.recent.is_empty() {
                continue;
            } else {
                let k = self.recent[self.rng.random_range(0..self.recent.len())];
                inv(F::Read, read(k))
            };
            return Next::Op {
                thread,
                at_ns: ctx.time_ns,
                invocation: value,
            };
        }
        Next::Pending
    }
}
