//! A small seeded random number generator (SplitMix64) for choosing fault
//! targets: same seed, same choices, on every platform and crate version.

/// SplitMix64.
#[derive(Clone, Debug)]
pub struct Rng {
    state: u64,
}

impl Rng {
    /// A generator seeded with `seed`.
    pub fn new(seed: u64) -> Rng {
        Rng {
            state: seed ^ 0x6a09_e667_f3bc_c909,
        }
    }

    /// An independent stream for `name` (a package, a choreography) derived
    /// from the run's `seed`: streams of different names do not depend on
    /// each other, so adding a package never changes another's schedule.
    pub fn stream(seed: u64, name: &str) -> Rng {
        // FNV-1a of the name, then one SplitMix step mixes it with the seed.
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for b in name.bytes() {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
        let mut r = Rng::new(seed ^ h);
        Rng::new(r.next_u64())
    }

    /// A duration uniform in `[0, 2·dt)` (Jepsen's `stagger`).
    pub fn stagger(&mut self, dt: std::time::Duration) -> std::time::Duration {
        let span = dt.as_nanos().saturating_mul(2);
        if span == 0 {
            return std::time::Duration::ZERO;
        }
        let span = u64::try_from(span).unwrap_or(u64::MAX);
        std::time::Duration::from_nanos(self.next_u64() % span)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`0` when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            return 0;
        }
        (self.next_u64() % n as u64) as usize
    }

    /// Shuffles `items` in place (Fisher–Yates).
    pub fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            let j = self.below(i + 1);
            items.swap(i, j);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_sequence() {
        let (mut a, mut b) = (Rng::new(7), Rng::new(7));
        let xs: Vec<u64> = (0..5).map(|_| a.next_u64()).collect();
        let ys: Vec<u64> = (0..5).map(|_| b.next_u64()).collect();
        assert_eq!(xs, ys);
        assert_ne!(Rng::new(8).next_u64(), xs[0]);
        let mut v: Vec<u32> = (0..10).collect();
        a.shuffle(&mut v);
        v.sort_unstable();
        assert_eq!(v, (0..10).collect::<Vec<_>>());
    }

    #[test]
    fn streams_are_named_and_stagger_stays_in_range() {
        let a: Vec<u64> = (0..3).map(|_| Rng::stream(1, "kill").next_u64()).collect();
        assert_eq!(a[0], a[1]);
        assert_ne!(
            Rng::stream(1, "kill").next_u64(),
            Rng::stream(1, "pause").next_u64()
        );
        assert_ne!(
            Rng::stream(1, "kill").next_u64(),
            Rng::stream(2, "kill").next_u64()
        );
        let mut r = Rng::stream(9, "partition");
        let dt = std::time::Duration::from_millis(10);
        let xs: Vec<_> = (0..200).map(|_| r.stagger(dt)).collect();
        assert!(xs.iter().all(|x| *x < 2 * dt));
        assert!(xs.iter().any(|x| *x > dt), "the upper half is reached");
        assert_eq!(
            r.stagger(std::time::Duration::ZERO),
            std::time::Duration::ZERO
        );
    }
}
