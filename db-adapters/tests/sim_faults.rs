//! Simulated replicas under faults, without root: the deterministic faulted
//! driver ([`simulate_faulted`]) against the checker. The correct mode stays
//! strict serializable under partitions, kills, pauses and clock skew; each
//! replication bug mode breaks it under its fault, with the expected
//! anomalies; every fault is recorded as a nemesis op pair and healed.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use checker::{CheckOptions, ConsistencyModel, Valid, Workload, check};
use db_adapters::sim::cluster::{Cluster, SYNC_EVERY};
use db_adapters::sim::faulted::{FaultWindow, FaultedConfig, SimFault, simulate_faulted};
use db_adapters::sim::{EngineOptions, SimError, SimMode, replica_names};
use store::{F, History, Key, MicroOp, Op, OpType, Process, ReadValue, Val};
use workloads::{WorkloadConfig, WorkloadKind, for_workload};

fn nodes(names: &[&str]) -> Vec<String> {
    names.iter().map(|n| n.to_string()).collect()
}

/// s1 cut off from s2 and s3, both ways.
fn isolate_s1() -> SimFault {
    let mut g = nemesis::partition::Grudge::new();
    g.insert("s1".into(), ["s2", "s3"].map(String::from).into());
    g.insert("s2".into(), ["s1"].map(String::from).into());
    g.insert("s3".into(), ["s1"].map(String::from).into());
    SimFault::Partition(g)
}

fn window(from: u64, until: u64, fault: SimFault) -> FaultWindow {
    FaultWindow { from, until, fault }
}

fn run(mode: SimMode, seed: u64, faults: Vec<FaultWindow>) -> Vec<Op> {
    let cfg = FaultedConfig {
        mode,
        replicas: 3,
        concurrency: 6,
        txn_count: 1500,
        seed,
        abort_probability: 0.02,
        step_us: 100,
        faults,
    };
    let mut g = for_workload(WorkloadKind::ListAppend, &WorkloadConfig::default(), seed).unwrap();
    simulate_faulted(&cfg, &mut g).unwrap()
}

/// The verdict under strict serializability and the anomaly names.
fn verdict(ops: &[Op]) -> (Valid, Vec<String>) {
    let h = History::new(ops.to_vec()).unwrap();
    let mut opts = CheckOptions::new(Workload::ListAppend);
    opts.models = vec![ConsistencyModel::parse("strict-serializable").unwrap()];
    let r = check(&h, &opts);
    let names = r
        .anomaly_types
        .iter()
        .map(|a| a.name().to_string())
        .collect();
    (r.valid, names)
}

fn nemesis_fs(ops: &[Op]) -> Vec<F> {
    ops.iter()
        .filter(|o| o.process == Some(Process::Nemesis) && o.op_type == OpType::Info)
        .filter_map(|o| o.f.clone())
        .collect()
}

fn count(fs: &[F], f: &F) -> usize {
    fs.iter().filter(|x| *x == f).count()
}

fn errors(ops: &[Op], code: &str) -> usize {
    ops.iter()
        .filter(|o| {
            o.error
                .as_deref()
                .is_some_and(|e| *e == store::Data::Str(code.into()))
        })
        .count()
}

/// Every fault kind, overlapping: s1 cut off, s2 killed and restarted, s3
/// paused, s1's clock 50 ms behind, then every node killed at once.
fn every_fault() -> Vec<FaultWindow> {
    vec![
        window(500, 2500, isolate_s1()),
        window(1000, 6000, SimFault::Clock(nodes(&["s1"]), -50)),
        window(3000, 4000, SimFault::Kill(nodes(&["s2"]))),
        window(4500, 5500, SimFault::Pause(nodes(&["s3"]))),
        window(6500, 7000, SimFault::Kill(nodes(&["s1", "s2", "s3"]))),
    ]
}

#[test]
fn correct_replicas_stay_strict_serializable_under_every_fault() {
    for seed in [1, 2] {
        let ops = run(SimMode::Serializable, seed, every_fault());
        let (valid, names) = verdict(&ops);
        assert_eq!(valid, Valid::True, "seed {seed}: {names:?}");
        // The faults had effects: refusals while cut off or down.
        assert!(errors(&ops, "unavailable") > 0, "seed {seed}");
        let fs = nemesis_fs(&ops);
        for (start, stop) in [
            (F::StartPartition, F::StopPartition),
            (F::Kill, F::Start),
            (F::Pause, F::Resume),
            (F::StartClock, F::StopClock),
        ] {
            assert!(count(&fs, &start) > 0, "{start:?} in {fs:?}");
            assert_eq!(count(&fs, &start), count(&fs, &stop), "{fs:?}");
        }
    }
}

#[test]
fn local_ack_gives_stale_reads_and_lost_writes_under_a_partition() {
    let faults = vec![window(1000, 6000, isolate_s1())];
    let (valid, _) = verdict(&run(SimMode::Serializable, 4, faults.clone()));
    assert_eq!(valid, Valid::True);
    let ops = run(SimMode::LocalAck, 4, faults);
    let (valid, names) = verdict(&ops);
    assert_eq!(valid, Valid::False, "{names:?}");
    assert!(
        names
            .iter()
            .any(|n| n.ends_with("-realtime") || n == "incompatible-order"),
        "{names:?}"
    );
}

#[test]
fn lose_unsynced_loses_acknowledged_writes_when_every_node_is_killed() {
    let faults = vec![
        window(2000, 2300, SimFault::Kill(nodes(&["s1", "s2", "s3"]))),
        window(5000, 5300, SimFault::Kill(nodes(&["s1", "s2", "s3"]))),
    ];
    let (valid, _) = verdict(&run(SimMode::Serializable, 5, faults.clone()));
    assert_eq!(valid, Valid::True);
    let ops = run(SimMode::LoseUnsynced, 5, faults);
    let (valid, names) = verdict(&ops);
    assert_eq!(valid, Valid::False, "{names:?}");
    // A lost acknowledged append: a later read misses it (the read's
    // anti-dependency and real-time order form a cycle), or reads taken
    // before and after the loss disagree.
    assert!(
        names
            .iter()
            .any(|n| n.ends_with("-realtime") || n == "incompatible-order"),
        "{names:?}"
    );
}

#[test]
fn skewed_read_is_stale_behind_a_slow_clock_and_the_correct_mode_is_not() {
    let faults = vec![window(1000, 8000, SimFault::Clock(nodes(&["s2"]), -100))];
    let (valid, names) = verdict(&run(SimMode::Serializable, 6, faults.clone()));
    assert_eq!(valid, Valid::True, "{names:?}");
    let (valid, names) = verdict(&run(SimMode::SkewedRead, 6, vec![]));
    assert_eq!(valid, Valid::True, "no skew, no stale read: {names:?}");
    let (valid, names) = verdict(&run(SimMode::SkewedRead, 6, faults));
    assert_eq!(valid, Valid::False, "{names:?}");
    assert!(
        names
            .iter()
            .all(|n| n.ends_with("-realtime") || n.starts_with("G-single")),
        "only real-time anomalies: {names:?}"
    );
    assert!(names.iter().any(|n| n.ends_with("-realtime")), "{names:?}");
}

#[test]
fn faults_still_in_effect_at_the_end_are_healed_before_final_reads() {
    // Every window outlasts the main phase.
    let faults = vec![
        window(100, u64::MAX, isolate_s1()),
        window(200, u64::MAX, SimFault::Kill(nodes(&["s2"]))),
        window(300, u64::MAX, SimFault::Pause(nodes(&["s3"]))),
    ];
    let ops = run(SimMode::Serializable, 7, faults);
    let fs = nemesis_fs(&ops);
    assert_eq!(
        fs,
        vec![
            F::StartPartition,
            F::Kill,
            F::Pause,
            F::StopPartition,
            F::Start,
            F::Resume
        ]
    );
    // Every final read (after the last nemesis op) succeeds on every node.
    let last_nemesis = ops
        .iter()
        .rposition(|o| o.process == Some(Process::Nemesis))
        .unwrap();
    let after = &ops[last_nemesis + 1..];
    assert!(after.iter().any(|o| o.op_type == OpType::Ok));
    let (valid, names) = verdict(&ops);
    assert_eq!(valid, Valid::True, "{names:?}");
}

#[test]
fn faulted_runs_are_deterministic_per_seed() {
    let a = run(SimMode::LocalAck, 8, every_fault());
    let b = run(SimMode::LocalAck, 8, every_fault());
    let c = run(SimMode::LocalAck, 9, every_fault());
    assert_eq!(a, b);
    assert_ne!(a, c);
}

fn key(k: i64) -> Key {
    Key::int(k)
}

fn append(c: &mut Cluster, node: usize, k: i64, v: i64) -> Result<(), SimError> {
    let t = c.begin(node, node as u64, false, 0)?;
    c.execute(node, t, &MicroOp::Append(key(k), Val::int(v)))?;
    c.commit(node, t, 0)
}

fn read(c: &mut Cluster, node: usize, k: i64, now_us: i64) -> Result<ReadValue, SimError> {
    let t = c.begin(node, 100 + node as u64, true, now_us)?;
    let MicroOp::Read(_, v) = c.execute(node, t, &MicroOp::Read(key(k), ReadValue::Nil))? else {
        panic!("not a read");
    };
    c.commit(node, t, now_us)?;
    Ok(v)
}

fn cluster(mode: SimMode) -> Cluster {
    let mut opts = EngineOptions::new(mode, 1);
    opts.abort_probability = 0.0;
    Cluster::new(replica_names(3), opts).unwrap()
}

fn list(vals: &[i64]) -> ReadValue {
    ReadValue::List(vals.iter().map(|v| Val::int(*v)).collect::<Vec<_>>().into())
}

#[test]
fn a_minority_node_refuses_and_the_majority_commits() {
    let mut c = cluster(SimMode::Serializable);
    let SimFault::Partition(g) = isolate_s1() else {
        unreachable!()
    };
    c.partition(&g).unwrap();
    assert!(matches!(
        append(&mut c, 0, 1, 1),
        Err(SimError::Unavailable { .. })
    ));
    append(&mut c, 1, 1, 2).unwrap();
    c.unpartition(&g);
    assert!(!c.partitioned());
    assert_eq!(read(&mut c, 0, 1, 0).unwrap(), list(&[2]));
    assert!(
        c.partition(&[("s9".to_string(), Default::default())].into())
            .is_err()
    );
}

#[test]
fn pause_holds_a_node_and_kill_in_lose_unsynced_loses_the_unsynced_tail() {
    let mut c = cluster(SimMode::LoseUnsynced);
    c.pause(2);
    assert!(matches!(
        append(&mut c, 2, 1, 1),
        Err(SimError::Paused { .. })
    ));
    c.resume(2);
    for v in 1..=SYNC_EVERY as i64 + 3 {
        append(&mut c, 0, 1, v).unwrap();
    }
    for i in 0..3 {
        c.kill(i);
    }
    assert_eq!(c.stats().lost_entries, 3);
    assert_eq!(c.faulty_nodes(), nodes(&["s1", "s2", "s3"]));
    for i in 0..3 {
        c.start(i);
    }
    let synced: Vec<i64> = (1..=SYNC_EVERY as i64).collect();
    assert_eq!(read(&mut c, 1, 1, 0).unwrap(), list(&synced));
    assert!(c.faulty_nodes().is_empty());
    // The correct mode syncs before acknowledging: nothing is lost.
    let mut c = cluster(SimMode::Serializable);
    append(&mut c, 0, 1, 1).unwrap();
    for i in 0..3 {
        c.kill(i);
        c.start(i);
    }
    assert_eq!(read(&mut c, 1, 1, 0).unwrap(), list(&[1]));
}

#[test]
fn a_node_with_a_slow_clock_reads_the_past_only_in_skewed_read() {
    for (mode, stale) in [(SimMode::SkewedRead, true), (SimMode::Serializable, false)] {
        let mut c = cluster(mode);
        let t = c.begin(0, 0, false, 1_000).unwrap();
        c.execute(0, t, &MicroOp::Append(key(1), Val::int(1)))
            .unwrap();
        c.commit(0, t, 1_000).unwrap();
        let t = c.begin(0, 0, false, 2_000).unwrap();
        c.execute(0, t, &MicroOp::Append(key(1), Val::int(2)))
            .unwrap();
        c.commit(0, t, 2_000).unwrap();
        c.set_clock_offset(1, -1_500);
        let seen = read(&mut c, 1, 1, 3_000).unwrap();
        let expect = if stale { list(&[1]) } else { list(&[1, 2]) };
        assert_eq!(seen, expect, "{mode}");
        c.reset_clocks();
        assert_eq!(read(&mut c, 1, 1, 3_000).unwrap(), list(&[1, 2]), "{mode}");
    }
}

#[test]
fn local_ack_writes_of_a_cut_off_node_are_dropped_when_it_rejoins() {
    let SimFault::Partition(g) = isolate_s1() else {
        unreachable!()
    };
    let mut c = cluster(SimMode::LocalAck);
    append(&mut c, 1, 1, 1).unwrap();
    c.partition(&g).unwrap();
    append(&mut c, 1, 1, 2).unwrap();
    // s1 acknowledges alone, and reads its own stale replica plus that write.
    append(&mut c, 0, 1, 3).unwrap();
    assert_eq!(read(&mut c, 0, 1, 0).unwrap(), list(&[1, 3]));
    assert_eq!(read(&mut c, 2, 1, 0).unwrap(), list(&[1, 2]));
    c.heal_network();
    assert_eq!(read(&mut c, 0, 1, 0).unwrap(), list(&[1, 2]));
    assert_eq!(c.stats().local_commits, 1);
    assert_eq!(c.stats().dropped_local_writes, 1);
    // The correct mode refuses instead.
    let mut c = cluster(SimMode::Serializable);
    c.partition(&g).unwrap();
    assert!(matches!(
        append(&mut c, 0, 1, 3),
        Err(SimError::Unavailable { .. })
    ));
}

#[test]
fn a_kill_aborts_the_nodes_transactions_and_a_lost_quorum_makes_commit_uncertain() {
    let mut c = cluster(SimMode::Serializable);
    let t = c.begin(0, 0, false, 0).unwrap();
    c.execute(0, t, &MicroOp::Append(key(1), Val::int(1)))
        .unwrap();
    c.kill(0);
    let e = c.commit(0, t, 0).unwrap_err();
    assert!(
        matches!(e, SimError::Unavailable { .. }) && e.is_definite(),
        "{e:?}"
    );
    c.start(0);
    assert_eq!(read(&mut c, 0, 1, 0).unwrap(), ReadValue::Nil);
    // s2 and s3 go down while s1's commit is in flight: outcome unknown.
    let t = c.begin(0, 0, false, 0).unwrap();
    c.execute(0, t, &MicroOp::Append(key(1), Val::int(2)))
        .unwrap();
    c.kill(1);
    c.kill(2);
    let e = c.commit(0, t, 0).unwrap_err();
    assert!(
        matches!(e, SimError::CommitUncertain { .. }) && !e.is_definite(),
        "{e:?}"
    );
    c.start(1);
    c.start(2);
    assert_eq!(read(&mut c, 0, 1, 0).unwrap(), ReadValue::Nil);
}
