//! The simulator against the checker: each isolation mode produces exactly
//! the anomalies it allows (fixed seeds), and each bug mode its anomaly.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use checker::{AnomalyType, CheckOptions, ConsistencyModel, Valid, Workload, check};
use db_adapters::sim::{SimConfig, SimMode, simulate_workload};
use store::History;
use workloads::{WorkloadConfig, WorkloadKind};

fn history(mode: SimMode, kind: WorkloadKind, seed: u64, txns: u64) -> History {
    let cfg = SimConfig {
        mode,
        seed,
        txn_count: txns,
        concurrency: 10,
        ..SimConfig::default()
    };
    History::new(simulate_workload(&cfg, kind, &WorkloadConfig::default()).unwrap()).unwrap()
}

fn result(h: &History, kind: WorkloadKind, model: &str) -> (Valid, Vec<String>) {
    let workload = match kind {
        WorkloadKind::ListAppend | WorkloadKind::Predicate => Workload::ListAppend,
        WorkloadKind::RwRegister
        | WorkloadKind::Register
        | WorkloadKind::Kv
        | WorkloadKind::Knossos(_)
        | WorkloadKind::Jepsen(_) => Workload::RwRegister,
    };
    let mut opts = CheckOptions::new(workload);
    opts.models = vec![ConsistencyModel::parse(model).unwrap()];
    let r = check(h, &opts);
    let names = r
        .anomaly_types
        .iter()
        .map(|a| a.name().to_string())
        .collect();
    (r.valid, names)
}

fn has(names: &[String], anomaly: &str) -> bool {
    AnomalyType::parse(anomaly).unwrap();
    names.iter().any(|n| n == anomaly)
}

#[test]
fn serializable_is_strict_serializable() {
    for kind in WorkloadKind::ALL {
        for seed in [1, 2] {
            let h = history(SimMode::Serializable, *kind, seed, 3000);
            let (valid, names) = result(&h, *kind, "strict-serializable");
            assert_eq!(valid, Valid::True, "{kind} seed {seed}: {names:?}");
        }
    }
}

#[test]
fn snapshot_isolation_shows_g2_item_under_serializable_only() {
    let h = history(
        SimMode::SnapshotIsolation,
        WorkloadKind::ListAppend,
        1,
        3000,
    );
    let (valid, names) = result(&h, WorkloadKind::ListAppend, "serializable");
    assert_eq!(valid, Valid::False);
    assert!(has(&names, "G2-item"), "{names:?}");
    let (valid, names) = result(&h, WorkloadKind::ListAppend, "snapshot-isolation");
    assert_eq!(valid, Valid::True, "{names:?}");
}

#[test]
fn read_committed_loses_updates() {
    let h = history(SimMode::ReadCommitted, WorkloadKind::ListAppend, 1, 3000);
    let (valid, names) = result(&h, WorkloadKind::ListAppend, "serializable");
    assert_eq!(valid, Valid::False);
    assert!(has(&names, "G-single-item"), "{names:?}");
    assert!(has(&names, "lost-update"), "{names:?}");
    let (valid, names) = result(&h, WorkloadKind::ListAppend, "read-committed");
    assert_eq!(valid, Valid::True, "{names:?}");
}

#[test]
fn read_uncommitted_reads_aborted_intermediate_and_circular() {
    let h = history(SimMode::ReadUncommitted, WorkloadKind::ListAppend, 1, 5000);
    let (valid, names) = result(&h, WorkloadKind::ListAppend, "read-committed");
    assert_eq!(valid, Valid::False);
    for a in ["G1a", "G1b", "G1c"] {
        assert!(has(&names, a), "{a} missing: {names:?}");
    }
}

#[test]
fn retry_reapply_loses_updates_under_snapshot_isolation() {
    let h = history(SimMode::RetryReapply, WorkloadKind::ListAppend, 1, 3000);
    let (valid, names) = result(&h, WorkloadKind::ListAppend, "snapshot-isolation");
    assert_eq!(valid, Valid::False);
    assert!(has(&names, "lost-update"), "{names:?}");
    assert!(has(&names, "G-single-item"), "{names:?}");
}

#[test]
fn lost_update_mode_is_caught() {
    let h = history(SimMode::LostUpdate, WorkloadKind::ListAppend, 1, 3000);
    let (valid, names) = result(&h, WorkloadKind::ListAppend, "repeatable-read");
    assert_eq!(valid, Valid::False, "{names:?}");
    assert!(has(&names, "lost-update"), "{names:?}");
}

#[test]
fn register_modes_match_list_append() {
    let h = history(
        SimMode::SnapshotIsolation,
        WorkloadKind::RwRegister,
        3,
        3000,
    );
    let (valid, names) = result(&h, WorkloadKind::RwRegister, "snapshot-isolation");
    assert_eq!(valid, Valid::True, "{names:?}");
    let h = history(SimMode::ReadUncommitted, WorkloadKind::RwRegister, 3, 3000);
    let (valid, names) = result(&h, WorkloadKind::RwRegister, "read-committed");
    assert_eq!(valid, Valid::False);
    assert!(has(&names, "G1a") || has(&names, "G1b"), "{names:?}");
}

#[test]
fn honest_modes_hold_their_claim_and_bug_modes_break_it() {
    for &mode in SimMode::ALL {
        let h = history(mode, WorkloadKind::ListAppend, 4, 2000);
        let (valid, names) = result(&h, WorkloadKind::ListAppend, mode.claimed_model());
        let honest = !matches!(
            mode,
            SimMode::RetryReapply
                | SimMode::LostUpdate
                | SimMode::StaleRead
                | SimMode::NonMonotonicRead
                | SimMode::TornCommit
                | SimMode::CausalGap
        );
        let expected = if honest { Valid::True } else { Valid::False };
        assert_eq!(
            valid,
            expected,
            "{mode} vs {}: {names:?}",
            mode.claimed_model()
        );
    }
}

#[test]
fn honest_modes_never_show_what_they_forbid_across_seeds() {
    // Differential property: many seeds, both workloads, crashes included.
    for kind in WorkloadKind::ALL {
        for &mode in &[
            SimMode::Serializable,
            SimMode::SnapshotIsolation,
            SimMode::ReadCommitted,
            SimMode::ReadUncommitted,
        ] {
            for seed in 10..15 {
                let cfg = SimConfig {
                    mode,
                    seed,
                    txn_count: 1500,
                    concurrency: 5 + seed as usize % 10,
                    crash_probability: 0.02,
                    ..SimConfig::default()
                };
                let h = History::new(
                    simulate_workload(&cfg, *kind, &WorkloadConfig::default()).unwrap(),
                )
                .unwrap();
                let (valid, names) = result(&h, *kind, mode.claimed_model());
                assert_eq!(valid, Valid::True, "{kind} {mode} seed {seed}: {names:?}");
            }
        }
    }
}

#[test]
fn stale_read_is_serializable_but_not_strict() {
    let h = history(SimMode::StaleRead, WorkloadKind::ListAppend, 1, 3000);
    let (valid, names) = result(&h, WorkloadKind::ListAppend, "serializable");
    assert_eq!(valid, Valid::True, "{names:?}");
    let (valid, names) = result(&h, WorkloadKind::ListAppend, "strict-serializable");
    assert_eq!(valid, Valid::False);
    assert!(names.iter().all(|n| n.ends_with("-realtime")), "{names:?}");
}

fn any(names: &[String], anomalies: &[&str]) -> bool {
    anomalies.iter().any(|a| has(names, a))
}

#[test]
fn non_monotonic_read_mode_breaks_read_committed() {
    for kind in WorkloadKind::ALL {
        let h = history(SimMode::NonMonotonicRead, *kind, 1, 3000);
        let (valid, names) = result(&h, *kind, "read-committed");
        assert_eq!(valid, Valid::False, "{kind}: {names:?}");
        assert!(has(&names, "non-monotonic-read"), "{kind}: {names:?}");
    }
}

#[test]
fn torn_commit_breaks_read_atomic() {
    for kind in WorkloadKind::ALL {
        let h = history(SimMode::TornCommit, *kind, 1, 3000);
        let (valid, names) = result(&h, *kind, "read-atomic");
        assert_eq!(valid, Valid::False, "{kind}: {names:?}");
        assert!(
            any(
                &names,
                &[
                    "fractured-read",
                    "fractured-read-process",
                    "non-monotonic-read",
                    "non-monotonic-read-process"
                ]
            ),
            "{kind}: {names:?}"
        );
        // Nothing Elle's PL-2 forbids: no aborted, intermediate or circular reads.
        let (_, names) = result(&h, *kind, "read-committed");
        assert!(
            !any(&names, &["G1a", "G1b", "G1c", "G0"]),
            "{kind}: {names:?}"
        );
    }
}

#[test]
fn read_committed_mode_is_not_read_atomic_and_snapshot_isolation_is_causal() {
    let h = history(SimMode::ReadCommitted, WorkloadKind::RwRegister, 2, 3000);
    let (valid, names) = result(&h, WorkloadKind::RwRegister, "read-atomic");
    assert_eq!(valid, Valid::False, "{names:?}");
    assert!(
        any(&names, &["fractured-read", "non-repeatable-read"]),
        "{names:?}"
    );
    for kind in WorkloadKind::ALL {
        let h = history(SimMode::SnapshotIsolation, *kind, 2, 3000);
        let (valid, names) = result(&h, *kind, "causal-cerone");
        assert_eq!(valid, Valid::True, "{kind}: {names:?}");
    }
}

#[test]
fn causal_gap_breaks_causal_but_not_read_atomic() {
    for kind in WorkloadKind::ALL {
        let h = history(SimMode::CausalGap, *kind, 1, 3000);
        let (valid, names) = result(&h, *kind, "causal-cerone");
        assert_eq!(valid, Valid::False, "{kind}: {names:?}");
        assert!(has(&names, "causality-violation"), "{kind}: {names:?}");
        let (valid, names) = result(&h, *kind, "read-atomic");
        assert_eq!(valid, Valid::True, "{kind}: {names:?}");
    }
}
