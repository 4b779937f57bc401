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

#[allow(dead_code)]
fn file() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("a".to_string()),
        Just("b".to_string()),
        Just("d/a".to_string()),
        Just("d/b".to_string())
    ]
}

/// One random operation for strict mode: files in the test directory and
/// in its subdirectory `d`, with mkdir/rmdir of `d` and directory fsyncs.
#[allow(dead_code)]
pub fn strict_op() -> impl Strategy<Value = Op> {
    prop_oneof![
        5 => (file(), 0u64..12_000, data()).prop_map(|(path, off, data)| Op::Write { path, off, data }),
        1 => (file(), 0u64..12_000, data()).prop_map(|(path, off, data)| Op::SyncWrite { path, off, data }),
        1 => (file(), 0u64..12_000).prop_map(|(path, len)| Op::Truncate { path, len }),
        2 => file().prop_map(Op::Fsync),
        1 => file().prop_map(Op::Fdatasync),
        3 => (file(), file()).prop_map(|(from, to)| Op::Rename { from, to }),
        2 => file().prop_map(Op::Unlink),
        2 => Just(Op::Mkdir("d".to_string())),
        1 => Just(Op::Rmdir("d".to_string())),
        3 => prop_oneof![Just(String::new()), Just("d".to_string())].prop_map(Op::FsyncDir),
        2 => Just(Op::Lose),
        1 => Just(Op::Checkpoint),
    ]
}

/// A strict-mode sequence that ends with a `lose`.
#[allow(dead_code)]
pub fn strict_ops(max: usize) -> impl Strategy<Value = Vec<Op>> {
    prop::collection::vec(strict_op(), 1..max).prop_map(|mut v| {
        v.push(Op::Lose);
        v
    })
}
