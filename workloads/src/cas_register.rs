//! The `register` workload (Jepsen's `independent` + `register`):
//! single-key reads, writes and compare-and-sets of small integers on
//! independent keys, checked for linearizability per key.
//!
//! Shape: thread `t` of `n` works on the active slots `s ≡ t (mod n)`
//! (one at random per op; `t mod key-count` when threads outnumber keys),
//! so a key sees at most `ceil(threads / key-count)` concurrent clients (Jepsen's
//! `process-limit` idea: bounded concurrency keeps the check tractable);
//! a key takes [`OPS_PER_KEY_FACTOR`] × `--max-writes-per-key` ops, then its
//! slot moves to a fresh key. Values are `0..VALUES`; a write is 1/6, a
//! cas 1/3 and a read 1/2 of the ops (Jepsen: readers + `mix [w cas cas]`).
//!
//! In the runner an op is `f` `read` / `write` / `cas` with micro-ops
//! `[r k nil]`, `[w k v]`, `[r k old] [w k new]` (a read with a value in
//! the invocation occurs in no other workload: clients know a cas by it);
//! the history holds Jepsen's values ([`to_data`]): read `[k nil]` → `[k v]`,
//! write `[k v]`, cas `[k [old new]]`. No final reads.

use crate::generator::{Ctx, Generator, Invocation, Next};
use crate::rng::{SeededRng, seeded};
use crate::{WorkloadConfig, WorkloadError};
use rand::RngExt;
use store::{Data, F, Key, MicroOp, ReadValue, Val};

/// Distinct values written (Jepsen: `[0, 5)`).
pub const VALUES: i64 = 5;
/// Ops per key = this × `max_writes_per_key` (default 32 → 96 ops a key,
/// CockroachDB's register test takes 100).
pub const OPS_PER_KEY_FACTOR: u64 = 3;

/// Whether `f` is one of this workload's functions.
pub fn is_register_f(f: &F) -> bool {
    matches!(f.as_str(), "read" | "write" | "cas")
}

/// The cas micro-ops `[r k old] [w k new]` as (key, old, new).
pub fn as_cas(mops: &[MicroOp]) -> Option<(&Key, &Val, &Val)> {
    match mops {
        [
            MicroOp::Read(k, ReadValue::Scalar(old)),
            MicroOp::Write(k2, new),
        ] if k == k2 => Some((k, old, new)),
        _ => None,
    }
}

fn atom(v: &store::Atom) -> Data {
    match v {
        store::Atom::Int(i) => Data::Int(*i),
        store::Atom::Str(s) => Data::Str(s.to_string()),
        store::Atom::Keyword(s) => Data::Keyword(s.to_string()),
    }
}

/// The history value of a register op (Jepsen's independent tuples).
pub fn to_data(mops: &[MicroOp]) -> Data {
    if let Some((k, old, new)) = as_cas(mops) {
        return Data::Vec(vec![
            atom(&k.0),
            Data::Vec(vec![atom(&old.0), atom(&new.0)]),
        ]);
    }
    match mops {
        [MicroOp::Read(k, ReadValue::Scalar(v))] => Data::Vec(vec![atom(&k.0), atom(&v.0)]),
        [MicroOp::Read(k, _)] => Data::Vec(vec![atom(&k.0), Data::Nil]),
        [MicroOp::Write(k, v)] => Data::Vec(vec![atom(&k.0), atom(&v.0)]),
        _ => Data::Nil,
    }
}

/// An endless register op generator.
#[derive(Clone, Debug)]
pub struct RegisterGen {
    rng: SeededRng,
    /// Per slot: its key and ops issued on it.
    slots: Vec<(i64, u64)>,
    next_key: i64,
    per_key: u64,
}

impl RegisterGen {
    /// A generator with `cfg`'s key count and per-key limit, seeded.
    ///
    /// # Errors
    /// [`WorkloadError::Invalid`] naming the first bad field of `cfg`.
    pub fn new(cfg: &WorkloadConfig, seed: u64) -> Result<RegisterGen, WorkloadError> {
        cfg.validate()?;
        let n = cfg.key_count;
        Ok(RegisterGen {
            rng: seeded(seed),
            slots: (0..n as i64).map(|k| (k, 0)).collect(),
            next_key: n as i64,
            per_key: cfg.max_writes_per_key.saturating_mul(OPS_PER_KEY_FACTOR),
        })
    }

    /// The slot thread `t` of `threads` works on next: one of the slots
    /// `s` with `s mod threads = t` (every key used, never more than
    /// `ceil(threads / keys)` threads on one key).
    pub fn slot_for(&mut self, t: usize, threads: usize) -> usize {
        let keys = self.slots.len();
        let threads = threads.max(1);
        if t >= keys {
            return t % keys;
        }
        let mine = (keys - t).div_ceil(threads);
        t + threads * self.rng.random_range(0..mine.max(1))
    }

    /// The next op for a thread on `slot`: (f, micro-ops).
    pub fn next_op(&mut self, slot: usize) -> (F, Vec<MicroOp>) {
        let i = slot % self.slots.len();
        if self.slots[i].1 >= self.per_key {
            self.slots[i] = (self.next_key, 0);
            self.next_key += 1;
        }
        self.slots[i].1 += 1;
        let k = Key::int(self.slots[i].0);
        let pick = self.rng.random_range(0..6u8);
        let mut v = || Val::int(self.rng.random_range(0..VALUES));
        match pick {
            0..=2 => (F::parse("read"), vec![MicroOp::Read(k, ReadValue::Nil)]),
            3 => (F::parse("write"), vec![MicroOp::Write(k, v())]),
            _ => {
                let (old, new) = (v(), v());
                (
                    F::parse("cas"),
                    vec![
                        MicroOp::Read(k.clone(), ReadValue::Scalar(old)),
                        MicroOp::Write(k, new),
                    ],
                )
            }
        }
    }
}

impl Generator for RegisterGen {
    fn next(&mut self, ctx: &Ctx) -> Next {
        let Some(thread) = ctx.first_free() else {
            return Next::Pending;
        };
        let slot = self.slot_for(thread.0, ctx.thread_count);
        let (f, value) = self.next_op(slot);
        Next::Op {
            thread,
            at_ns: ctx.time_ns,
            invocation: Invocation { f, value },
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::panic)]
mod tests {
    use super::*;

    #[test]
    fn keys_rotate_and_ops_have_register_shapes() {
        let cfg = WorkloadConfig {
            key_count: 2,
            max_writes_per_key: 2,
            ..WorkloadConfig::default()
        };
        let mut g = RegisterGen::new(&cfg, 7).unwrap();
        let mut keys = std::collections::BTreeMap::<i64, u64>::new();
        for n in 0..60 {
            let (f, mops) = g.next_op(n % 4);
            assert!(is_register_f(&f));
            let d = to_data(&mops);
            let Data::Vec(kv) = &d else { panic!("{d:?}") };
            let Data::Int(k) = kv[0] else { panic!() };
            *keys.entry(k).or_default() += 1;
            match f.as_str() {
                "cas" => assert!(as_cas(&mops).is_some() && matches!(kv[1], Data::Vec(_))),
                "read" => assert_eq!(kv[1], Data::Nil),
                _ => assert!(matches!(kv[1], Data::Int(0..VALUES))),
            }
        }
        // 6 ops per key, then a fresh key.
        assert!(keys.values().all(|&n| n <= 6));
        assert_eq!(keys.len(), 10);
    }

    #[test]
    fn every_key_used_and_threads_stay_apart() {
        let cfg = WorkloadConfig {
            key_count: 10,
            ..WorkloadConfig::default()
        };
        let mut g = RegisterGen::new(&cfg, 3).unwrap();
        let mut used = [false; 10];
        for n in 0..400 {
            let t = n % 3;
            let s = g.slot_for(t, 3);
            assert_eq!(s % 3, t);
            used[s] = true;
        }
        assert!(used.iter().all(|&u| u));
        // More threads than keys: t mod keys.
        assert_eq!(g.slot_for(13, 20), 3);
    }
}
