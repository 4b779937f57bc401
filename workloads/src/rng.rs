//! The one source of randomness: a small, portable PRNG seeded explicitly.
//!
//! Key decision: `Xoshiro256PlusPlus` rather than `StdRng`, because its output
//! for a seed is fixed by its algorithm (StdRng may change between rand
//! releases), so a seed recorded in `test.json` replays the same run.

/// The seeded generator used by every generator and by the simulator.
pub type SeededRng = rand::rngs::Xoshiro256PlusPlus;

/// A generator for `seed`.
pub fn seeded(seed: u64) -> SeededRng {
    rand::SeedableRng::seed_from_u64(seed)
}

/// A derived seed for the `n`th sub-generator of one seeded by `seed`
/// (SplitMix64 of both, so siblings do not share streams).
pub fn derive_seed(seed: u64, n: u64) -> u64 {
    let mut z = seed ^ n.wrapping_add(1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}
