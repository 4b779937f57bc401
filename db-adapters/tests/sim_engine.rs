//! The simulator's visibility rules, one isolation mode at a time, and the
//! determinism of its driver.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use db_adapters::sim::{
    Engine, EngineOptions, SimConfig, SimError, SimMode, TxnId, simulate, simulate_workload,
};
use store::{Key, MicroOp, OpType, ReadValue, Val};
use workloads::{WorkloadConfig, WorkloadKind};

fn engine(mode: SimMode) -> Engine {
    Engine::new(EngineOptions {
        mode,
        seed: 1,
        abort_probability: 0.0,
    })
    .unwrap()
}

fn k(i: i64) -> Key {
    Key::int(i)
}

fn append(e: &mut Engine, t: TxnId, key: i64, v: i64) -> Result<MicroOp, SimError> {
    e.execute(t, &MicroOp::Append(k(key), Val::int(v)))
}

fn write(e: &mut Engine, t: TxnId, key: i64, v: i64) -> Result<MicroOp, SimError> {
    e.execute(t, &MicroOp::Write(k(key), Val::int(v)))
}

fn read(e: &mut Engine, t: TxnId, key: i64) -> ReadValue {
    match e
        .execute(t, &MicroOp::Read(k(key), ReadValue::Nil))
        .unwrap()
    {
        MicroOp::Read(_, v) => v,
        other => panic!("not a read: {other:?}"),
    }
}

fn list(vs: &[i64]) -> ReadValue {
    ReadValue::List(vs.iter().map(|&v| Val::int(v)).collect())
}

/// Commits one transaction appending `v` to `key`.
fn committed_append(e: &mut Engine, key: i64, v: i64) {
    let t = e.begin();
    append(e, t, key, v).unwrap();
    e.commit(t).unwrap();
}

#[test]
fn mode_names_round_trip_and_unknown_is_an_error() {
    for m in SimMode::ALL {
        assert_eq!(SimMode::parse(m.name()), Ok(*m));
    }
    let err = SimMode::parse("serialisable").unwrap_err();
    assert!(matches!(err, SimError::UnknownMode(_)));
    assert!(err.to_string().contains("serialisable"));
}

#[test]
fn reads_see_own_writes_in_every_mode() {
    for &mode in SimMode::ALL {
        let mut e = engine(mode);
        committed_append(&mut e, 1, 1);
        let t = e.begin();
        assert_eq!(read(&mut e, t, 2), ReadValue::Nil, "{mode}");
        append(&mut e, t, 1, 2).unwrap();
        append(&mut e, t, 1, 3).unwrap();
        let r = read(&mut e, t, 1);
        if matches!(mode, SimMode::StaleRead | SimMode::NonMonotonicRead) {
            // The snapshot may predate the committed 1; own writes still show.
            assert!(r == list(&[1, 2, 3]) || r == list(&[2, 3]), "{r:?}");
        } else {
            assert_eq!(r, list(&[1, 2, 3]), "{mode}");
        }
        write(&mut e, t, 5, 7).unwrap();
        assert_eq!(read(&mut e, t, 5), ReadValue::Scalar(Val::int(7)), "{mode}");
        if matches!(mode, SimMode::StaleRead | SimMode::NonMonotonicRead) {
            continue;
        }
        e.commit(t).unwrap();
        let t = e.begin();
        assert_eq!(read(&mut e, t, 1), list(&[1, 2, 3]), "{mode}");
    }
}

#[test]
fn aborted_writes_are_never_installed() {
    for &mode in SimMode::ALL {
        let mut e = engine(mode);
        let t = e.begin();
        append(&mut e, t, 1, 1).unwrap();
        e.abort(t);
        let r = e.begin();
        assert_eq!(read(&mut e, r, 1), ReadValue::Nil, "{mode}");
    }
}

#[test]
fn type_mismatch_fails_and_aborts() {
    let mut e = engine(SimMode::Serializable);
    committed_append(&mut e, 1, 1);
    let t = e.begin();
    let err = write(&mut e, t, 1, 5).unwrap_err();
    assert!(matches!(err, SimError::TypeMismatch { .. }));
    assert!(matches!(e.commit(t), Err(SimError::UnknownTxn(_))));
}

#[test]
fn serializable_aborts_when_a_read_changed() {
    let mut e = engine(SimMode::Serializable);
    let t1 = e.begin();
    let t2 = e.begin();
    assert_eq!(read(&mut e, t1, 1), ReadValue::Nil);
    assert_eq!(read(&mut e, t2, 1), ReadValue::Nil);
    append(&mut e, t1, 1, 1).unwrap();
    append(&mut e, t2, 1, 2).unwrap();
    e.commit(t1).unwrap();
    assert!(matches!(e.commit(t2), Err(SimError::Conflict { .. })));
    // Write skew is prevented too.
    let a = e.begin();
    let b = e.begin();
    read(&mut e, a, 10);
    read(&mut e, a, 11);
    read(&mut e, b, 10);
    read(&mut e, b, 11);
    append(&mut e, a, 10, 1).unwrap();
    append(&mut e, b, 11, 1).unwrap();
    e.commit(a).unwrap();
    assert!(e.commit(b).is_err());
}

#[test]
fn serializable_blind_appends_both_commit_in_commit_order() {
    let mut e = engine(SimMode::Serializable);
    let t1 = e.begin();
    let t2 = e.begin();
    append(&mut e, t2, 1, 2).unwrap();
    append(&mut e, t1, 1, 1).unwrap();
    e.commit(t2).unwrap();
    e.commit(t1).unwrap();
    let r = e.begin();
    assert_eq!(read(&mut e, r, 1), list(&[2, 1]));
}

#[test]
fn snapshot_isolation_reads_a_snapshot_and_first_committer_wins() {
    let mut e = engine(SimMode::SnapshotIsolation);
    committed_append(&mut e, 1, 1);
    let t1 = e.begin();
    let t2 = e.begin();
    assert_eq!(read(&mut e, t1, 1), list(&[1]));
    assert_eq!(read(&mut e, t2, 1), list(&[1]));
    append(&mut e, t1, 1, 2).unwrap();
    append(&mut e, t2, 1, 3).unwrap();
    e.commit(t1).unwrap();
    // t3 began before t1 committed? No: after. A txn begun earlier keeps its snapshot.
    assert!(matches!(e.commit(t2), Err(SimError::Conflict { .. })));
    let t3 = e.begin();
    let early = t3;
    committed_append(&mut e, 1, 4);
    assert_eq!(
        read(&mut e, early, 1),
        list(&[1, 2]),
        "snapshot, not latest"
    );
}

#[test]
fn snapshot_isolation_allows_write_skew() {
    let mut e = engine(SimMode::SnapshotIsolation);
    let a = e.begin();
    let b = e.begin();
    for t in [a, b] {
        assert_eq!(read(&mut e, t, 10), ReadValue::Nil);
        assert_eq!(read(&mut e, t, 11), ReadValue::Nil);
    }
    append(&mut e, a, 10, 1).unwrap();
    append(&mut e, b, 11, 1).unwrap();
    e.commit(a).unwrap();
    e.commit(b).unwrap();
}

#[test]
fn read_committed_sees_latest_commit_and_loses_updates() {
    let mut e = engine(SimMode::ReadCommitted);
    let t1 = e.begin();
    let t2 = e.begin();
    assert_eq!(read(&mut e, t1, 1), ReadValue::Nil);
    assert_eq!(read(&mut e, t2, 1), ReadValue::Nil);
    append(&mut e, t1, 1, 1).unwrap();
    e.commit(t1).unwrap();
    // Non-repeatable read: t2 now sees t1's commit.
    assert_eq!(read(&mut e, t2, 1), list(&[1]));
    append(&mut e, t2, 1, 2).unwrap();
    // Both read nil and both appended: a lost update, and it commits.
    e.commit(t2).unwrap();
    // Uncommitted writes are invisible; a second writer hits the row lock.
    let w = e.begin();
    append(&mut e, w, 1, 3).unwrap();
    let r = e.begin();
    assert_eq!(read(&mut e, r, 1), list(&[1, 2]));
    assert!(matches!(
        append(&mut e, r, 1, 4),
        Err(SimError::LockConflict { .. })
    ));
}

#[test]
fn read_uncommitted_reads_dirty_and_aborted_writes() {
    let mut e = engine(SimMode::ReadUncommitted);
    committed_append(&mut e, 1, 1);
    let w = e.begin();
    append(&mut e, w, 1, 2).unwrap();
    let r = e.begin();
    assert_eq!(read(&mut e, r, 1), list(&[1, 2]), "dirty read");
    e.abort(w);
    assert_eq!(read(&mut e, r, 1), list(&[1]), "rolled back");
    e.commit(r).unwrap();
    // Intermediate read: a reader sees the first of two appends.
    let w = e.begin();
    append(&mut e, w, 1, 3).unwrap();
    let r = e.begin();
    assert_eq!(read(&mut e, r, 1), list(&[1, 3]));
    append(&mut e, w, 1, 4).unwrap();
    e.commit(w).unwrap();
    e.commit(r).unwrap();
}

#[test]
fn retry_reapply_commits_conflicting_writes_over_newer_state() {
    let mut e = engine(SimMode::RetryReapply);
    let t1 = e.begin();
    let t2 = e.begin();
    assert_eq!(read(&mut e, t1, 1), ReadValue::Nil);
    assert_eq!(read(&mut e, t2, 1), ReadValue::Nil);
    append(&mut e, t1, 1, 1).unwrap();
    append(&mut e, t2, 1, 2).unwrap();
    e.commit(t1).unwrap();
    e.commit(t2).unwrap();
    assert_eq!(e.stats().reapplied, 1);
    let r = e.begin();
    assert_eq!(read(&mut e, r, 1), list(&[1, 2]));
}

#[test]
fn lost_update_mode_overwrites_concurrent_commits() {
    let mut e = engine(SimMode::LostUpdate);
    committed_append(&mut e, 1, 1);
    let t1 = e.begin();
    let t2 = e.begin();
    assert_eq!(read(&mut e, t1, 1), list(&[1]));
    assert_eq!(read(&mut e, t2, 1), list(&[1]));
    append(&mut e, t1, 1, 2).unwrap();
    append(&mut e, t2, 1, 3).unwrap();
    e.commit(t1).unwrap();
    e.commit(t2).unwrap();
    let r = e.begin();
    assert_eq!(read(&mut e, r, 1), list(&[1, 3]), "t1's 2 is lost");
}

#[test]
fn random_aborts_happen_at_the_configured_rate() {
    let mut e = Engine::new(EngineOptions {
        mode: SimMode::ReadCommitted,
        seed: 3,
        abort_probability: 0.2,
    })
    .unwrap();
    let mut aborted = 0;
    for i in 0..2000 {
        let t = e.begin();
        append(&mut e, t, i, 1).unwrap();
        if matches!(e.commit(t), Err(SimError::RandomAbort)) {
            aborted += 1;
        }
    }
    assert!((300..500).contains(&aborted), "{aborted}");
    assert!(
        Engine::new(EngineOptions {
            mode: SimMode::Serializable,
            seed: 0,
            abort_probability: 1.5
        })
        .is_err()
    );
}

fn cfg(mode: SimMode, seed: u64) -> SimConfig {
    SimConfig {
        mode,
        seed,
        txn_count: 500,
        ..SimConfig::default()
    }
}

#[test]
fn driver_is_deterministic_and_well_formed() {
    let wl = WorkloadConfig::default();
    let a = simulate_workload(
        &cfg(SimMode::ReadCommitted, 5),
        WorkloadKind::ListAppend,
        &wl,
    )
    .unwrap();
    let b = simulate_workload(
        &cfg(SimMode::ReadCommitted, 5),
        WorkloadKind::ListAppend,
        &wl,
    )
    .unwrap();
    let c = simulate_workload(
        &cfg(SimMode::ReadCommitted, 6),
        WorkloadKind::ListAppend,
        &wl,
    )
    .unwrap();
    assert_eq!(a, b);
    assert_ne!(a, c);
    let h = store::History::new(a.clone()).unwrap();
    assert!(h.warnings().is_empty(), "{:?}", h.warnings());
    for (i, op) in a.iter().enumerate() {
        assert_eq!(op.index.0, i as u64);
    }
    let invokes = a.iter().filter(|o| o.op_type == OpType::Invoke).count();
    assert_eq!(invokes * 2, a.len());
    // Main phase: 500 txns, then final reads; some fail at random.
    assert!(invokes > 500);
    assert!(a.iter().any(|o| o.op_type == OpType::Fail));
    // Several transactions were open at once.
    let mut open = 0usize;
    let mut max_open = 0usize;
    for o in &a {
        if o.op_type == OpType::Invoke {
            open += 1;
        } else {
            open -= 1;
        }
        max_open = max_open.max(open);
    }
    assert!(max_open >= 5, "max open {max_open}");
    assert!(a.windows(2).all(|w| w[0].time_ns <= w[1].time_ns));
}

#[test]
fn driver_crashes_give_info_and_fresh_processes() {
    let c = SimConfig {
        crash_probability: 0.1,
        ..cfg(SimMode::Serializable, 2)
    };
    let ops = simulate_workload(&c, WorkloadKind::RwRegister, &WorkloadConfig::default()).unwrap();
    let infos: Vec<_> = ops.iter().filter(|o| o.op_type == OpType::Info).collect();
    assert!(!infos.is_empty());
    // History::new rejects a process reused while open, and warns on reuse after info.
    let h = store::History::new(ops.clone()).unwrap();
    assert!(h.warnings().is_empty(), "{:?}", h.warnings());
    assert!(
        simulate(
            &SimConfig {
                concurrency: 0,
                ..SimConfig::default()
            },
            &mut workloads::for_workload(WorkloadKind::ListAppend, &WorkloadConfig::default(), 1)
                .unwrap()
        )
        .is_err()
    );
}

#[test]
fn serializable_sim_reads_are_prefixes_of_final_reads() {
    // A cheap self-check without the checker: in list-append every ok read of
    // a key is a prefix of the final read of that key.
    let ops = simulate_workload(
        &cfg(SimMode::Serializable, 9),
        WorkloadKind::ListAppend,
        &WorkloadConfig::default(),
    )
    .unwrap();
    let mut last: std::collections::HashMap<Key, Vec<Val>> = Default::default();
    let mut all: Vec<(Key, Vec<Val>)> = Vec::new();
    for o in ops.iter().filter(|o| o.op_type == OpType::Ok) {
        for m in o.value.txn().unwrap() {
            if let MicroOp::Read(k, ReadValue::List(l)) = m {
                all.push((k.clone(), l.to_vec()));
                let e = last.entry(k.clone()).or_default();
                if l.len() >= e.len() {
                    *e = l.to_vec();
                }
            }
        }
    }
    assert!(!all.is_empty());
    for (k, l) in all {
        assert!(last[&k].starts_with(&l), "key {k}: {l:?} vs {:?}", last[&k]);
    }
}

#[test]
fn stale_read_reads_old_snapshots_and_validates_writers() {
    let mut e = engine(SimMode::StaleRead);
    for v in 1..=20 {
        // A blind append from a stale snapshot conflicts; retry until fresh.
        loop {
            let t = e.begin();
            append(&mut e, t, 1, v).unwrap();
            if e.commit(t).is_ok() {
                break;
            }
        }
    }
    // Some snapshot lags: over many begins, a read misses recent appends.
    let mut stale = 0;
    for _ in 0..50 {
        let t = e.begin();
        match read(&mut e, t, 1) {
            ReadValue::List(l) => {
                assert!(l.len() >= 12 && l.len() <= 20, "{}", l.len());
                if l.len() < 20 {
                    stale += 1;
                }
            }
            other => panic!("{other:?}"),
        }
        // Read-only: always commits.
        e.commit(t).unwrap();
    }
    assert!(stale > 10, "{stale}");
    // A writer whose snapshot is behind a key it read must abort.
    let mut aborted = 0;
    for v in 100..150 {
        let t = e.begin();
        let l = read(&mut e, t, 1);
        append(&mut e, t, 2, v).unwrap();
        let fresh = matches!(&l, ReadValue::List(l) if l.len() == 20);
        match e.commit(t) {
            Ok(()) => assert!(fresh, "a stale writer committed"),
            Err(SimError::Conflict { .. }) => aborted += 1,
            Err(other) => panic!("{other}"),
        }
    }
    assert!(aborted > 0);
}

#[test]
fn non_monotonic_read_mode_reads_each_key_at_its_own_lag() {
    let mut e = engine(SimMode::NonMonotonicRead);
    for v in 1..=20 {
        committed_append(&mut e, 1, v);
    }
    // Within one transaction, reads of the same key go back and forth.
    let t = e.begin();
    let lens: Vec<usize> = (0..40)
        .map(|_| match read(&mut e, t, 1) {
            ReadValue::List(l) => l.len(),
            other => panic!("{other:?}"),
        })
        .collect();
    assert!(lens.iter().all(|&n| (12..=20).contains(&n)), "{lens:?}");
    assert!(lens.windows(2).any(|w| w[1] < w[0]), "{lens:?}");
}

#[test]
fn torn_commit_shows_the_first_key_before_the_others() {
    let mut e = engine(SimMode::TornCommit);
    e.set_abort_probability(0.0).unwrap();
    let reader = e.begin();
    let t = e.begin();
    write(&mut e, t, 1, 1).unwrap();
    write(&mut e, t, 2, 1).unwrap();
    e.commit(t).unwrap();
    // The reader (reading the latest commit, as read committed does) sees
    // key 1 of the commit but not yet key 2: a fractured read.
    assert_eq!(read(&mut e, reader, 1), ReadValue::Scalar(Val::int(1)));
    assert_eq!(read(&mut e, reader, 2), ReadValue::Nil);
    e.abort(reader);
    // The next commit lands the rest first.
    let w = e.begin();
    write(&mut e, w, 3, 1).unwrap();
    e.commit(w).unwrap();
    let r = e.begin();
    assert_eq!(read(&mut e, r, 2), ReadValue::Scalar(Val::int(1)));
}

#[test]
fn causal_gap_hides_other_sessions_commits_but_never_a_sessions_own() {
    let mut e = engine(SimMode::CausalGap);
    // Session 1 commits 1..=8 to key 1, one commit each (the window).
    for v in 1..=8 {
        let t = e.begin_session(1);
        append(&mut e, t, 1, v).unwrap();
        e.commit(t).unwrap();
    }
    // Session 1 itself always sees all of them.
    for _ in 0..50 {
        let t = e.begin_session(1);
        assert_eq!(read(&mut e, t, 1), list(&[1, 2, 3, 4, 5, 6, 7, 8]));
        e.abort(t);
    }
    // Session 2 sometimes misses some of the latest: it reads an older
    // version, the same one on every read of one transaction.
    let mut missed = 0;
    for _ in 0..50 {
        let t = e.begin_session(2);
        let first = read(&mut e, t, 1);
        assert_eq!(read(&mut e, t, 1), first, "reads of one snapshot agree");
        let ReadValue::List(l) = &first else {
            panic!("{first:?}")
        };
        assert!(l.len() <= 8, "{l:?}");
        if l.len() < 8 {
            missed += 1;
        }
        e.abort(t);
    }
    assert!(missed > 0, "no snapshot missed a commit in 50 tries");
}

#[test]
fn causal_gap_refuses_a_writer_whose_view_of_its_key_is_not_current() {
    let mut e = engine(SimMode::CausalGap);
    let (mut committed, mut refused) = (0, 0);
    for v in 1..=200 {
        let session = v % 3;
        let t = e.begin_session(session as u64);
        let seen = read(&mut e, t, 1);
        append(&mut e, t, 1, v).unwrap();
        let ReadValue::List(before) = seen else {
            // The first transaction sees nothing yet.
            e.commit(t).unwrap();
            continue;
        };
        match e.commit(t) {
            Ok(()) => {
                committed += 1;
                // What it saw was the whole list: the next reader of its own
                // session sees exactly that plus its append.
                let r = e.begin_session(session as u64);
                let ReadValue::List(after) = read(&mut e, r, 1) else {
                    panic!("a list")
                };
                assert_eq!(
                    after[..after.len() - 1],
                    before[..],
                    "installed over its view"
                );
                e.abort(r);
            }
            Err(SimError::Conflict { .. }) => refused += 1,
            Err(other) => panic!("{other}"),
        }
    }
    assert!(
        committed > 0 && refused > 0,
        "{committed} committed, {refused} refused"
    );
}
