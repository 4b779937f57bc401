//! list-append / rw-register generator tests: determinism, unique values per
//! key, key retirement, transaction length bounds, config validation, names.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::{HashMap, HashSet};
use store::{Key, MicroOp, ReadValue, Val};
use workloads::{KeyDist, TxnGen, WorkloadConfig, WorkloadError, WorkloadKind, for_workload};

fn txns(kind: WorkloadKind, cfg: &WorkloadConfig, seed: u64, n: usize) -> Vec<Vec<MicroOp>> {
    let mut g = TxnGen::new(kind, cfg, seed).unwrap();
    (0..n).map(|_| g.next_txn()).collect()
}

fn writes(t: &[Vec<MicroOp>]) -> Vec<(Key, Val)> {
    t.iter()
        .flatten()
        .filter_map(|m| match m {
            MicroOp::Append(k, v) | MicroOp::Write(k, v) => Some((k.clone(), v.clone())),
            MicroOp::Read(..) | MicroOp::ReadRange(_) => None,
        })
        .collect()
}

#[test]
fn deterministic_per_seed() {
    let cfg = WorkloadConfig::default();
    for kind in WorkloadKind::ALL {
        assert_eq!(txns(*kind, &cfg, 7, 500), txns(*kind, &cfg, 7, 500));
        assert_ne!(txns(*kind, &cfg, 7, 500), txns(*kind, &cfg, 8, 500));
    }
}

#[test]
fn values_are_unique_per_key_and_count_from_one() {
    for kind in WorkloadKind::ALL {
        let t = txns(*kind, &WorkloadConfig::default(), 3, 5000);
        let w = writes(&t);
        let set: HashSet<&(Key, Val)> = w.iter().collect();
        assert_eq!(set.len(), w.len(), "duplicate value for {kind}");
        let mut last: HashMap<Key, i64> = HashMap::new();
        for (k, v) in &w {
            let store::Atom::Int(v) = v.0 else {
                panic!("non-int value")
            };
            assert_eq!(v, last.get(k).copied().unwrap_or(0) + 1, "key {k}");
            last.insert(k.clone(), v);
        }
    }
}

#[test]
fn kinds_use_their_micro_ops() {
    let cfg = WorkloadConfig::default();
    let a = txns(WorkloadKind::ListAppend, &cfg, 1, 200);
    assert!(a.iter().flatten().all(|m| !matches!(m, MicroOp::Write(..))));
    let r = txns(WorkloadKind::RwRegister, &cfg, 1, 200);
    assert!(
        r.iter()
            .flatten()
            .all(|m| !matches!(m, MicroOp::Append(..)))
    );
    assert!(r.iter().flatten().all(|m| match m {
        MicroOp::Read(_, v) => *v == ReadValue::Nil,
        _ => true,
    }));
}

#[test]
fn keys_retire_after_max_writes() {
    let cfg = WorkloadConfig {
        max_writes_per_key: 5,
        key_count: 3,
        ..WorkloadConfig::default()
    };
    let t = txns(WorkloadKind::ListAppend, &cfg, 4, 2000);
    let mut per_key: HashMap<Key, u64> = HashMap::new();
    for (k, _) in writes(&t) {
        *per_key.entry(k).or_default() += 1;
    }
    assert!(per_key.values().all(|&n| n <= 5));
    assert!(per_key.len() > 50, "only {} keys", per_key.len());
    // Once a key retires it is never touched again; at most key_count are live.
    let mut g = TxnGen::new(WorkloadKind::ListAppend, &cfg, 4).unwrap();
    let mut retired: HashSet<Key> = HashSet::new();
    let mut full: HashMap<Key, u64> = HashMap::new();
    for _ in 0..2000 {
        for m in g.next_txn() {
            assert!(!retired.contains(m.key()), "retired key {} reused", m.key());
            if let MicroOp::Append(k, _) = &m {
                let n = full.entry(k.clone()).or_default();
                *n += 1;
            }
        }
        assert_eq!(g.active_keys().len(), 3);
        for (k, n) in &full {
            if *n == 5 && !g.active_keys().contains(k) {
                retired.insert(k.clone());
            }
        }
    }
}

#[test]
fn txn_length_within_bounds() {
    let cfg = WorkloadConfig {
        min_txn_length: 2,
        max_txn_length: 6,
        ..WorkloadConfig::default()
    };
    let t = txns(WorkloadKind::RwRegister, &cfg, 9, 3000);
    let lens: HashSet<usize> = t.iter().map(Vec::len).collect();
    assert_eq!(lens, (2..=6).collect());
    let d = txns(
        WorkloadKind::ListAppend,
        &WorkloadConfig::default(),
        9,
        3000,
    );
    assert_eq!(
        d.iter().map(Vec::len).collect::<HashSet<_>>(),
        (1..=4).collect()
    );
}

#[test]
fn read_ratio_is_respected() {
    for (ratio, lo, hi) in [(0.0, 0.0, 0.0), (1.0, 1.0, 1.0), (0.8, 0.75, 0.85)] {
        let cfg = WorkloadConfig {
            read_ratio: ratio,
            ..WorkloadConfig::default()
        };
        let t = txns(WorkloadKind::ListAppend, &cfg, 2, 3000);
        let all: Vec<&MicroOp> = t.iter().flatten().collect();
        let reads = all
            .iter()
            .filter(|m| matches!(m, MicroOp::Read(..)))
            .count();
        let frac = reads as f64 / all.len() as f64;
        assert!(frac >= lo && frac <= hi, "ratio {ratio}: {frac}");
    }
}

#[test]
fn exponential_keys_favour_one_slot_uniform_does_not() {
    let count = |dist| {
        let cfg = WorkloadConfig {
            key_dist: dist,
            max_writes_per_key: 1_000_000,
            ..WorkloadConfig::default()
        };
        let t = txns(WorkloadKind::ListAppend, &cfg, 5, 4000);
        let mut c: HashMap<Key, usize> = HashMap::new();
        let mut n = 0;
        for m in t.iter().flatten() {
            *c.entry(m.key().clone()).or_default() += 1;
            n += 1;
        }
        *c.values().max().unwrap() as f64 / n as f64
    };
    let hot = count(KeyDist::Exponential);
    assert!((0.4..0.6).contains(&hot), "exponential hottest {hot}");
    assert!(count(KeyDist::Uniform) < 0.15);
}

#[test]
fn bad_config_names_the_field() {
    let cases = [
        (
            WorkloadConfig {
                key_count: 0,
                ..Default::default()
            },
            "key-count",
        ),
        (
            WorkloadConfig {
                min_txn_length: 0,
                ..Default::default()
            },
            "min-txn-length",
        ),
        (
            WorkloadConfig {
                min_txn_length: 5,
                max_txn_length: 4,
                ..Default::default()
            },
            "max-txn-length",
        ),
        (
            WorkloadConfig {
                read_ratio: 1.5,
                ..Default::default()
            },
            "read-ratio",
        ),
        (
            WorkloadConfig {
                max_writes_per_key: 0,
                ..Default::default()
            },
            "max-writes-per-key",
        ),
    ];
    for (cfg, field) in cases {
        match for_workload(WorkloadKind::ListAppend, &cfg, 1) {
            Err(WorkloadError::Invalid { field: f, .. }) => assert_eq!(f, field),
            Err(e) => panic!("{field}: wrong error {e}"),
            Ok(_) => panic!("{field}: accepted"),
        }
    }
}

#[test]
fn workload_names_and_aliases() {
    assert_eq!(
        WorkloadKind::parse("list-append"),
        Ok(WorkloadKind::ListAppend)
    );
    assert_eq!(WorkloadKind::parse("append"), Ok(WorkloadKind::ListAppend));
    assert_eq!(
        WorkloadKind::parse("rw-register"),
        Ok(WorkloadKind::RwRegister)
    );
    assert_eq!("wr".parse::<WorkloadKind>(), Ok(WorkloadKind::RwRegister));
    let err = WorkloadKind::parse("apend").unwrap_err();
    assert!(err.to_string().contains("apend"));
    for k in WorkloadKind::ALL {
        assert_eq!(WorkloadKind::parse(k.name()), Ok(*k));
    }
    // One vocabulary: every name and alias parses to its workload (with
    // Elle's leading `:` too), and the error lists every name.
    for n in workloads::WORKLOADS {
        assert_eq!(WorkloadKind::parse(n.name), Ok(n.kind));
        assert_eq!(WorkloadKind::parse(&format!(":{}", n.name)), Ok(n.kind));
        for a in n.aliases {
            assert_eq!(WorkloadKind::parse(a), Ok(n.kind), "{a}");
        }
        assert!(err.to_string().contains(n.name), "{err}");
        assert_eq!(n.kind.runs(), n.runs);
    }
    // `register` is the linearizable register, never rw-register.
    assert_eq!(WorkloadKind::parse("register"), Ok(WorkloadKind::Register));
    assert_eq!(
        WorkloadKind::parse("cas-register"),
        Ok(WorkloadKind::Register)
    );
    assert!(!WorkloadKind::Kv.runs());
    assert!(workloads::for_workload(WorkloadKind::Kv, &WorkloadConfig::default(), 1).is_err());
}

#[test]
fn final_reads_cover_touched_keys() {
    let mut g = TxnGen::new(WorkloadKind::RwRegister, &WorkloadConfig::default(), 1).unwrap();
    let mut touched: HashSet<Key> = HashSet::new();
    for _ in 0..300 {
        touched.extend(g.next_txn().iter().map(|m| m.key().clone()));
    }
    let reads = g.final_reads();
    let read: Vec<Key> = reads
        .iter()
        .flat_map(|i| i.value.iter().map(|m| m.key().clone()))
        .collect();
    assert_eq!(read.len(), touched.len());
    assert_eq!(read.iter().cloned().collect::<HashSet<_>>(), touched);
}
