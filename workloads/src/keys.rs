//! The active key pool: which keys transactions touch, how many writes each
//! key has had, and key retirement (Elle's `wr-txns` key rotation).
//!
//! A pool of `key_count` slots holds the active keys. A write to a key that
//! already had `max_writes_per_key` writes retires it: the slot gets a fresh
//! key (the largest key so far + 1). Values are a per-key counter starting at
//! 1, so every written value is unique per key.

use crate::rng::SeededRng;
use crate::{KeyDist, WorkloadConfig};
use rand::RngExt;
use std::collections::{BTreeSet, HashMap};
use store::Key;

/// The active keys and their write counters.
#[derive(Clone, Debug)]
pub struct KeyPool {
    active: Vec<i64>,
    /// Next value to write per key (1 + writes so far).
    next_value: HashMap<i64, i64>,
    max_key: i64,
    max_writes_per_key: u64,
    dist: KeyDist,
    touched: BTreeSet<i64>,
}

impl KeyPool {
    /// Keys `0..key_count` active, none written yet.
    pub fn new(cfg: &WorkloadConfig) -> KeyPool {
        let n = cfg.key_count.max(1) as i64;
        KeyPool {
            active: (0..n).collect(),
            next_value: HashMap::new(),
            max_key: n - 1,
            max_writes_per_key: cfg.max_writes_per_key.max(1),
            dist: cfg.key_dist,
            touched: BTreeSet::new(),
        }
    }

    /// A slot of the pool, drawn from the key distribution.
    pub fn pick_slot(&self, rng: &mut SeededRng) -> usize {
        let n = self.active.len();
        match self.dist {
            KeyDist::Uniform => rng.random_range(0..n),
            KeyDist::Exponential => exponential_index(rng.random::<f64>(), n),
        }
    }

    /// The key in `slot`, for a read.
    pub fn read(&mut self, slot: usize) -> Key {
        let k = self.active[slot];
        self.touched.insert(k);
        Key::int(k)
    }

    /// The key in `slot` and a fresh value for a write, retiring the key
    /// first if it has had its maximum number of writes.
    pub fn write(&mut self, slot: usize) -> (Key, i64) {
        let mut k = self.active[slot];
        let mut v = self.next_value.get(&k).copied().unwrap_or(1);
        if v as u64 > self.max_writes_per_key {
            self.max_key += 1;
            k = self.max_key;
            self.active[slot] = k;
            v = 1;
        }
        self.next_value.insert(k, v + 1);
        self.touched.insert(k);
        (Key::int(k), v)
    }

    /// Every key read or written so far, ascending.
    pub fn touched(&self) -> Vec<Key> {
        self.touched.iter().map(|&k| Key::int(k)).collect()
    }

    /// The currently active keys, by slot.
    pub fn active(&self) -> &[i64] {
        &self.active
    }
}

/// Elle's exponential key choice with base 2 over `n` slots:
/// `floor(log2(u·scale + 2) − 1)` with `scale = 2·(2^n − 1)`, so
/// `P(i) ∝ 2^i`; the last slot is the hottest (about half of all picks).
fn exponential_index(u: f64, n: usize) -> usize {
    let b = 2.0_f64;
    // Beyond ~60 slots 2^n overflows precision; those slots are never hot anyway.
    let nn = n.min(60) as i32;
    let scale = b * (b.powi(nn) - 1.0) / (b - 1.0);
    let i = ((u * scale + b).log2() - 1.0).floor();
    let i = if i.is_finite() && i > 0.0 {
        i as usize
    } else {
        0
    };
    let top = nn as usize;
    // Map onto the pool: the exponential part covers the last `top` slots.
    (n - top) + i.min(top - 1)
}

#[cfg(test)]
mod tests {
    use super::exponential_index;

    #[test]
    fn exponential_covers_range_and_favours_the_last_slot() {
        assert_eq!(exponential_index(0.0, 10), 0);
        assert_eq!(exponential_index(0.999_999, 10), 9);
        assert_eq!(exponential_index(0.6, 10), 9);
        assert_eq!(exponential_index(0.4, 10), 8);
        assert_eq!(exponential_index(0.5, 1), 0);
    }
}
