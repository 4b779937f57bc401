//! The `long-fork` workload (Jepsen's `long-fork`): every key is written
//! once, with 1, by a single-write transaction; reads read a whole group of
//! [`GROUP_SIZE`] consecutive keys in one transaction (shuffled order).
//! Per worker thread: after writing key k it reads k's group; otherwise
//! half the time it reads the group of another thread's last write, else
//! it writes a fresh key. Encoding: [`crate::jepsen`] (plain `txn`s on the
//! rw-register table).

use crate::generator::{Ctx, Generator, Next};
use crate::jepsen::inv;
use crate::rng::{SeededRng, seeded};
use rand::RngExt;
use rand::seq::SliceRandom;
use store::{F, Key, MicroOp, ReadValue, Val};

/// Keys per group (Jepsen's default: 2; YugabyteDB uses 3).
pub const GROUP_SIZE: i64 = 2;

/// The group of key `k`.
pub fn group(k: i64, n: i64) -> std::ops::Range<i64> {
    let lo = k - k.rem_euclid(n);
    lo..lo + n
}

/// Fresh-key writes and group reads.
#[derive(Clone, Debug)]
pub struct LongForkGen {
    n: i64,
    next_key: i64,
    last_write: Vec<Option<i64>>,
    rng: SeededRng,
}

impl LongForkGen {
    /// A generator with groups of `n` keys (at least 1).
    pub fn new(n: i64, seed: u64) -> LongForkGen {
        LongForkGen {
            n: n.max(1),
            next_key: 0,
            last_write: Vec::new(),
            rng: seeded(seed),
        }
    }

    fn read_group(&mut self, k: i64) -> Vec<MicroOp> {
        let mut keys: Vec<i64> = group(k, self.n).collect();
        keys.shuffle(&mut self.rng);
        keys.into_iter()
            .map(|k| MicroOp::Read(Key::int(k), ReadValue::Nil))
            .collect()
    }
}

impl Generator for LongForkGen {
    fn next(&mut self, ctx: &Ctx) -> Next {
        let Some(thread) = ctx.first_free() else {
            return Next::Pending;
        };
        if self.last_write.len() < ctx.thread_count {
            self.last_write.resize(ctx.thread_count, None);
        }
        let t = thread.0.min(self.last_write.len().saturating_sub(1));
        let value = if let Some(k) = self.last_write.get_mut(t).and_then(Option::take) {
            self.read_group(k)
        } else {
            let others: Vec<i64> = self.last_write.iter().flatten().copied().collect();
            if !others.is_empty() && self.rng.random_bool(0.5) {
                let k = others[self.rng.random_range(0..others.len())];
                self.read_group(k)
            } else {
                let k = self.next_key;
                self.next_key += 1;
                if let Some(slot) = self.last_write.get_mut(t) {
                    *slot = Some(k);
                }
                vec![MicroOp::Write(Key::int(k), Val::int(1))]
            }
        };
        Next::Op {
            thread,
            at_ns: ctx.time_ns,
            invocation: inv(F::Txn, value),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::panic)]
mod tests {
    use super::*;

    #[test]
    fn writes_each_key_once_and_reads_its_group_next() {
        let mut g = LongForkGen::new(2, 3);
        let ctx = Ctx::all_free(0, 1);
        let mut written = std::collections::HashSet::new();
        let mut last = None;
        for _ in 0..100 {
            let Next::Op { invocation, .. } = g.next(&ctx) else {
                panic!()
            };
            match invocation.value.as_slice() {
                [MicroOp::Write(Key(store::Atom::Int(k)), _)] => {
                    assert!(written.insert(*k));
                    last = Some(*k);
                }
                reads => {
                    assert_eq!(reads.len(), 2);
                    if let Some(k) = last.take() {
                        assert!(reads.iter().any(|m| m.key() == &Key::int(k)));
                    }
                }
            }
        }
        assert!(written.len() > 20);
        assert_eq!(group(5, 2), 4..6);
    }
}
