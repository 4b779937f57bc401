//! The `predicate` workload: list-append transactions whose reads
//! are range reads `["rr", [lo, hi], nil]` (`WHERE k BETWEEN lo AND hi`),
//! mixed with appends; an append to a key nobody wrote yet is an insert.
//!
//! Key decisions:
//! * Appends come from the same rotating [`KeyPool`] as list-append, so
//!   every value stays unique per key and a retired key's successor is a
//!   fresh, larger key: inserts happen at the top of the key space.
//! * A range is [`RANGE_WIDTH`] keys wide and centred on an active key or
//!   on the insert frontier (the next fresh key), so ranges regularly
//!   cover rows that concurrent transactions are inserting: the phantoms
//!   the predicate analysis looks for. With `--max-writes-per-key 1` every
//!   append is an insert.
//! * One predicate read in [`COUNT_EVERY`] is a count read
//!   `["rc", [lo, hi], nil]` (`SELECT count(*) … BETWEEN`): the same
//!   predicate, a result that reveals less (how many rows, not which).
//! * Reads are range reads only: the rows a range read returns are its
//!   whole version set, and item reads would add item anti-dependencies
//!   that blur which analysis found a cycle.
//! * Final reads are item reads of every touched key (as list-append),
//!   which settle each key's version order.

use crate::generator::{Ctx, Generator, Invocation, Next};
use crate::keys::KeyPool;
use crate::rng::{SeededRng, seeded};
use crate::{WorkloadConfig, WorkloadError};
use rand::RngExt;
use store::{F, Key, MicroOp, RangeRead, ReadValue, Val};

/// Keys per range read.
pub const RANGE_WIDTH: i64 = 4;

/// One predicate read in this many counts its rows instead of returning them.
pub const COUNT_EVERY: u32 = 4;

/// An endless generator of predicate transactions.
#[derive(Clone, Debug)]
pub struct PredicateGen {
    cfg: WorkloadConfig,
    rng: SeededRng,
    pool: KeyPool,
}

impl PredicateGen {
    /// A generator with `cfg`, seeded by `seed`.
    ///
    /// # Errors
    /// [`WorkloadError::Invalid`] naming the first bad field of `cfg`.
    pub fn new(cfg: &WorkloadConfig, seed: u64) -> Result<PredicateGen, WorkloadError> {
        cfg.validate()?;
        Ok(PredicateGen {
            cfg: cfg.clone(),
            rng: seeded(seed),
            pool: KeyPool::new(cfg),
        })
    }

    /// The next transaction's micro-ops.
    pub fn next_txn(&mut self) -> Vec<MicroOp> {
        let len = self
            .rng
            .random_range(self.cfg.min_txn_length..=self.cfg.max_txn_length);
        let mut mops = Vec::with_capacity(len);
        for _ in 0..len {
            if self.rng.random_bool(self.cfg.read_ratio) {
                mops.push(MicroOp::ReadRange(Box::new(self.range())));
            } else {
                let slot = self.pool.pick_slot(&mut self.rng);
                let (k, v) = self.pool.write(slot);
                mops.push(MicroOp::Append(k, Val::int(v)));
            }
        }
        mops
    }

    /// A range centred on an active key or on the insert frontier.
    fn range(&mut self) -> RangeRead {
        let active = self.pool.active();
        let top = active.iter().copied().max().unwrap_or(0);
        let centre = if self.rng.random_bool(0.5) {
            top + 1
        } else {
            active[self.rng.random_range(0..active.len())]
        };
        let lo = (centre - self.rng.random_range(0..RANGE_WIDTH)).max(0);
        if self.rng.random_ratio(1, COUNT_EVERY) {
            RangeRead::count(lo, lo + RANGE_WIDTH - 1)
        } else {
            RangeRead::new(lo, lo + RANGE_WIDTH - 1)
        }
    }

    /// Item reads of every key touched so far, `final_read_batch` a
    /// transaction.
    pub fn final_reads(&self) -> Vec<Invocation> {
        self.pool
            .touched()
            .chunks(self.cfg.final_read_batch.max(1))
            .map(|chunk| Invocation {
                f: F::Txn,
                value: chunk
                    .iter()
                    .map(|k| MicroOp::Read(k.clone(), ReadValue::Nil))
                    .collect(),
            })
            .collect()
    }
}

impl Generator for PredicateGen {
    fn next(&mut self, ctx: &Ctx) -> Next {
        crate::txn::txn_for_free_thread(ctx, || self.next_txn())
    }

    fn touched_keys(&self) -> Vec<Key> {
        self.pool.touched()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::panic)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn mixes_range_reads_and_unique_appends() {
        let cfg = WorkloadConfig {
            max_writes_per_key: 1,
            ..WorkloadConfig::default()
        };
        let mut g = PredicateGen::new(&cfg, 7).unwrap();
        let (mut ranges, mut counts, mut seen) = (0, 0, HashSet::new());
        for _ in 0..500 {
            for m in g.next_txn() {
                match m {
                    MicroOp::ReadRange(r) => {
                        ranges += 1;
                        counts += usize::from(r.is_count());
                        assert!(!r.is_known());
                        assert!(r.lo <= r.hi);
                    }
                    MicroOp::Append(k, v) => assert!(seen.insert((k, v)), "duplicate append"),
                    other => panic!("unexpected {other:?}"),
                }
            }
        }
        assert!(ranges > 100 && seen.len() > 100);
        assert!(
            counts > ranges / 8 && counts < ranges / 2,
            "{counts} of {ranges}"
        );
        // One write per key: every append is an insert of a fresh key.
        let keys: HashSet<_> = seen.iter().map(|(k, _)| k.clone()).collect();
        assert_eq!(keys.len(), seen.len());
        assert!(!g.final_reads().is_empty());
    }

    #[test]
    fn same_seed_same_transactions() {
        let cfg = WorkloadConfig::default();
        let mut a = PredicateGen::new(&cfg, 3).unwrap();
        let mut b = PredicateGen::new(&cfg, 3).unwrap();
        for _ in 0..50 {
            assert_eq!(a.next_txn(), b.next_txn());
        }
    }
}
