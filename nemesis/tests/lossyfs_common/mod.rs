//! Operation sequences for the lossy filesystem's property tests (shared by
//! the cache-level test and the mounted one).

use nemesis::lossyfs::model::Op;
use proptest::prelude::*;

fn name() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("a".to_string()),
        Just("b".to_string()),
        Just("c".to_string())
    ]
}

fn data() -> impl Strategy<Value = Vec<u8>> {
    (1u8..=255, 1usize..9000)
        .prop_map(|(b, n)| (0..n).map(|i| b.wrapping_add((i / 1000) as u8)).collect())
}

/// One random operation; offsets and sizes cross 4 KiB block boundaries.
pub fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (name(), 0u64..20_000, data()).prop_map(|(path, off, data)| Op::Write { path, off, data }),
        1 => (name(), 0u64..20_000, data()).prop_map(|(path, off, data)| Op::SyncWrite { path, off, data }),
        2 => (name(), 0u64..20_000).prop_map(|(path, len)| Op::Truncate { path, len }),
        1 => (name(), 0u64..16_000, 1u64..8_000).prop_map(|(path, off, len)| Op::Fallocate { path, off, len }),
        2 => name().prop_map(Op::Fsync),
        1 => name().prop_map(Op::Fdatasync),
        1 => (name(), name()).prop_map(|(from, to)| Op::Rename { from, to }),
        1 => name().prop_map(Op::Unlink),
        2 => Just(Op::Lose),
        1 => Just(Op::Checkpoint),
    ]
}

/// A sequence that ends with a `lose`, so every run compares at least once
/// after losing.
pub fn ops(max: usize) -> impl Strategy<Value = Vec<Op>> {
    prop::collection::vec(op(), 1..max).prop_map(|mut v| {
        v.push(Op::Lose);
        v
    })
}
