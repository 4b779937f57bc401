//! Faults without root through `harness run`: `--db sim --sim-replicas 3`
//! with `--nemesis partition,kill,pause`, whose faults are calls into the
//! simulator (clock skew too: `--nemesis clock` sets the simulated nodes'
//! offsets). The correct mode is valid and every fault is recorded and
//! healed; the replication bug modes (`skewed-read` under clock bumps) are
//! invalid under their fault; specs the simulator cannot honour are
//! refused by name.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod run_common;

use run_common::*;
use std::collections::BTreeMap;

/// Runs 3 simulated replicas for 3 s at 300 txn/s with faults every
/// ~200 ms; returns (exit code, anomaly types, nemesis `f`s of the `info`s).
fn sim_faults(name: &str, args: &[&str]) -> (Option<i32>, Vec<String>, Vec<String>) {
    let store = tempfile::tempdir().unwrap();
    sim_faults_at(store.path(), name, args)
}

/// [`sim_faults`] with the run kept in `store`.
fn sim_faults_at(
    store: &std::path::Path,
    name: &str,
    args: &[&str],
) -> (Option<i32>, Vec<String>, Vec<String>) {
    let mut all = vec![
        "--db",
        "sim",
        "--sim-replicas",
        "3",
        "--test-name",
        name,
        "--concurrency",
        "6",
        "--rate",
        "300",
        "--time-limit",
        "3s",
        "--nemesis-interval",
        "200ms",
        "--op-timeout",
        "2s",
        "--seed",
        "11",
    ];
    all.extend_from_slice(args);
    let out = run(store, &all);
    let dir = run_dir(store, name);
    assert_complete(&dir);
    let ops: Vec<serde_json::Value> = history_text(&dir)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .filter(|v: &serde_json::Value| v["process"] == "nemesis")
        .collect();
    // Every fault applied, but where another package's fault was in the
    // way (a pause or kill of a node that is down: said as such).
    assert!(
        ops.iter().all(|o| o["error"]
            .as_str()
            .is_none_or(|e| e.contains("not running") || e.contains("no-op"))),
        "every fault applied: {ops:?}"
    );
    // Nothing is left down or cut off: after the last nemesis op (the
    // heal) no transaction fails.
    let all: Vec<serde_json::Value> = history_text(&dir)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let healed = all
        .iter()
        .rposition(|o| o["process"] == "nemesis")
        .unwrap_or(0);
    let late_fails: Vec<_> = all[healed..]
        .iter()
        .filter(|o| o["type"] == "fail" && o["error"] == "unavailable")
        .collect();
    assert!(late_fails.is_empty(), "after the heal: {late_fails:?}");
    let fs: Vec<String> = ops
        .iter()
        .filter(|o| o["type"] == "info")
        .filter_map(|o| o["f"].as_str().map(str::to_string))
        .collect();
    let meta: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("test.json")).unwrap()).unwrap();
    assert_eq!(meta["summary"]["final_reads_done"], true, "final reads ran");
    (out.status.code(), anomaly_types(&results(&dir)), fs)
}

/// Each start has its stop (the heal ran): counts per pair.
fn assert_paired(fs: &[String], pairs: &[(&str, &str)]) {
    let mut n: BTreeMap<&str, usize> = BTreeMap::new();
    for f in fs {
        *n.entry(f.as_str()).or_default() += 1;
    }
    for (start, stop) in pairs {
        let (a, b) = (n.get(start).copied(), n.get(stop).copied());
        assert!(a.unwrap_or(0) > 0, "no {start} in {fs:?}");
        assert_eq!(a, b, "{start}/{stop} pair up: {fs:?}");
    }
}

#[test]
fn replicated_sim_under_partition_kill_pause_is_valid_and_healed() {
    let (code, types, fs) = sim_faults(
        "sim-faults-ok",
        &[
            "--isolation",
            "serializable",
            "--nemesis",
            "partition,kill,pause",
        ],
    );
    assert_eq!(code, Some(0), "{types:?}");
    assert_paired(
        &fs,
        &[
            ("start-partition", "stop-partition"),
            ("kill", "start"),
            ("pause", "resume"),
        ],
    );
}

#[test]
fn local_ack_under_partitions_is_invalid_with_real_time_anomalies() {
    let (code, types, fs) = sim_faults(
        "sim-faults-local-ack",
        &[
            "--sim-bug",
            "local-ack",
            "--nemesis",
            "partition",
            "--partition",
            "one",
        ],
    );
    assert_eq!(code, Some(1), "{types:?}");
    assert!(
        types
            .iter()
            .any(|t| t.ends_with("-realtime") || t == "incompatible-order"),
        "{types:?}"
    );
    assert_paired(&fs, &[("start-partition", "stop-partition")]);
}

#[test]
fn lose_unsynced_when_every_node_is_killed_loses_acknowledged_writes() {
    let (code, types, fs) = sim_faults(
        "sim-faults-lose",
        &[
            "--sim-bug",
            "lose-unsynced",
            "--nemesis",
            "kill",
            "--kill-targets",
            "all",
        ],
    );
    assert_eq!(code, Some(1), "{types:?}");
    assert!(
        types
            .iter()
            .any(|t| t.ends_with("-realtime") || t == "incompatible-order"),
        "{types:?}"
    );
    assert_paired(&fs, &[("kill", "start")]);
}

#[test]
fn sim_faults_it_cannot_honour_are_refused_by_name() {
    let store = tempfile::tempdir().unwrap();
    let cases: &[(&[&str], &str)] = &[
        (&["--db", "sim", "--nemesis", "kill"], "--sim-replicas N"),
        (
            &["--db", "sim", "--nemesis", "clock"],
            "clocks only on simulated replicas: give --sim-replicas N",
        ),
        (
            &["--db", "sim", "--sim-replicas", "3", "--nemesis", "bitflip"],
            "--nemesis bitflip: not simulated",
        ),
        (
            &["--db", "sim", "--sim-bug", "local-ack"],
            "--sim-bug local-ack is a bug of replication",
        ),
        (
            &["--db", "sqlite", "--sim-replicas", "3"],
            "--sim-replicas applies to --db sim only",
        ),
        (
            &["--db", "sim", "--sim-replicas", "0"],
            "--sim-replicas 0: give 1 to 9",
        ),
        (
            &[
                "--db",
                "sim",
                "--sim-replicas",
                "1",
                "--nemesis",
                "partition",
            ],
            "nothing to partition",
        ),
    ];
    for (args, msg) in cases {
        let out = run(store.path(), args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(3), "{args:?}: {err}");
        assert!(err.contains(msg), "{args:?}: {err}");
    }
}

/// The clock ops' `info` completions of the run `name` in `store`.
fn clock_infos(store: &std::path::Path, name: &str) -> Vec<serde_json::Value> {
    history_text(&run_dir(store, name))
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .filter(|o: &serde_json::Value| {
            o["process"] == "nemesis"
                && o["type"] == "info"
                && (o["f"] == "start-clock" || o["f"] == "stop-clock")
        })
        .collect()
}

#[test]
fn sim_clock_skew_is_measured_plotted_and_healed_and_the_correct_mode_is_valid() {
    let store = tempfile::tempdir().unwrap();
    let name = "sim-faults-clock";
    let (code, types, fs) = sim_faults_at(
        store.path(),
        name,
        &["--isolation", "serializable", "--nemesis", "clock"],
    );
    assert_eq!(code, Some(0), "clocks are used nowhere else: {types:?}");
    assert!(fs.iter().any(|f| f == "start-clock"), "{fs:?}");
    let infos = clock_infos(store.path(), name);
    let (mut measured, mut largest) = (0, 0.0f64);
    for o in &infos {
        let offsets = o["value"]["clock-offsets"].as_object().expect("offsets");
        for (node, got) in offsets {
            let want = o["value"]["expected-offsets"][node].as_f64().unwrap();
            // The simulator's clock is exact up to its whole milliseconds.
            assert!(
                (got.as_f64().unwrap() - want).abs() < 0.002,
                "{node}: {got} vs {want} in {o}"
            );
            largest = largest.max(want.abs());
            measured += 1;
        }
    }
    assert!(
        measured >= infos.len(),
        "every op measured a node: {infos:?}"
    );
    assert!(largest > 0.01, "some offset was not zero: {infos:?}");
    let last = infos.last().unwrap();
    assert_eq!(last["f"], "stop-clock", "the package ends with a reset");
    let offsets = last["value"]["clock-offsets"].as_object().unwrap();
    assert_eq!(offsets.len(), 3, "every node read after the reset: {last}");
    assert!(
        offsets.values().all(|v| v.as_f64().unwrap().abs() < 0.002),
        "{last}"
    );
    let dir = run_dir(store.path(), name);
    let svg = std::fs::read_to_string(dir.join("clock-skew.svg")).unwrap();
    assert!(
        svg.contains("s1") && svg.contains("s3"),
        "plot names the nodes"
    );
    let csv = std::fs::read_to_string(dir.join("clock-offsets.csv")).unwrap();
    assert_eq!(csv.lines().count(), measured + 1, "{csv}");
}

#[test]
fn skewed_read_under_clock_bumps_is_invalid_with_stale_reads() {
    let (code, types, fs) = sim_faults(
        "sim-faults-skewed",
        &["--sim-bug", "skewed-read", "--nemesis", "clock"],
    );
    assert_eq!(code, Some(1), "{types:?}");
    assert!(
        types
            .iter()
            .any(|t| t.ends_with("-realtime") || t == "incompatible-order"),
        "{types:?}"
    );
    assert!(fs.iter().any(|f| f == "start-clock"), "{fs:?}");
}

/// `--clock-mix subcritical-skews` (CockroachDB roachtest's): every clock
/// op but the final reset sets each node to +200 ms or 0, and the nodes'
/// clocks read back exactly that; `strobe-skews` strobes every node by
/// 200 ms; both valid in the correct mode.
#[test]
fn roachtest_clock_mixes_set_subcritical_offsets_or_strobe_every_node() {
    let store = tempfile::tempdir().unwrap();
    let name = "sim-clock-subcritical";
    let (code, types, _) = sim_faults_at(
        store.path(),
        name,
        &[
            "--isolation",
            "serializable",
            "--nemesis",
            "clock",
            "--clock-mix",
            "subcritical-skews",
        ],
    );
    assert_eq!(code, Some(0), "{types:?}");
    let infos = clock_infos(store.path(), name);
    let (last, ops) = infos.split_last().unwrap();
    assert_eq!(last["f"], "stop-clock", "{last}");
    assert!(!ops.is_empty(), "{infos:?}");
    let mut at200 = 0;
    for o in ops {
        let set = o["value"]["set"]
            .as_object()
            .unwrap_or_else(|| panic!("{o}"));
        assert_eq!(set.len(), 3, "every node: {o}");
        for (node, want) in set {
            let want = want.as_f64().unwrap();
            assert!(want == 0.0 || want == 0.2, "{o}");
            at200 += usize::from(want > 0.0);
            let got = o["value"]["clock-offsets"][node].as_f64().unwrap();
            assert!((got - want).abs() < 0.002, "{node}: {got} vs {want}: {o}");
        }
    }
    assert!(at200 > 0, "some node at +200 ms: {infos:?}");
    let name = "sim-clock-strobe";
    let (code, types, _) = sim_faults_at(
        store.path(),
        name,
        &[
            "--isolation",
            "serializable",
            "--nemesis",
            "clock",
            "--clock-mix",
            "strobe-skews",
        ],
    );
    assert_eq!(code, Some(0), "{types:?}");
    let infos = clock_infos(store.path(), name);
    let (_, ops) = infos.split_last().unwrap();
    assert!(!ops.is_empty());
    for o in ops {
        let s = o["value"]["strobe"]
            .as_object()
            .unwrap_or_else(|| panic!("{o}"));
        assert_eq!(s.len(), 3, "{o}");
        assert!(
            s.values().all(|v| v["delta"] == 0.2 && v["period"] == 0.01),
            "{o}"
        );
    }
}
