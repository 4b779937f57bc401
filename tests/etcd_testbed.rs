//! `harness run --db etcd --nodes testbed`: a 3-member etcd cluster
//! (Debian's `/usr/bin/etcd`) started on testbed nodes n1..n3 over SSH,
//! under real faults — partitions (list-append), kills (the linearizable
//! register), pauses (list-append) — and members removed and added back
//! by `--nemesis membership`. Every run must stay valid at strict
//! serializability (linearizability for the register), its faults must be
//! applied and healed, the final reads must run, the member logs must be
//! collected and the nodes' etcd directories removed.
//!
//! Needs root, the testbed and etcd; each test holds the testbed lock and
//! takes about 40 s (testbed up and down included). `HARNESS_LONG=1`
//! makes every run 5 minutes instead of 25 s.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

mod run_common;

use nemesis::testbed::TestbedLock;
use run_common::{Down, assert_complete, history_text, results, run, run_dir, testbed_up};
use std::path::{Path, PathBuf};

/// The run's length: 25 s, or 5 minutes with `HARNESS_LONG=1`.
fn time_limit() -> &'static str {
    if std::env::var("HARNESS_LONG").is_ok_and(|v| v == "1") {
        "300s"
    } else {
        "25s"
    }
}

/// History lines of process `nemesis`.
fn nemesis_ops(dir: &Path) -> Vec<serde_json::Value> {
    history_text(dir)
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v["process"] == "nemesis")
        .collect()
}

/// `ok` transactions of client processes.
fn oks(dir: &Path) -> usize {
    run_common::counts(dir).1
}

/// A run on the testbed (already up) with `extra` flags; its directory.
fn etcd_testbed_run(store: &Path, name: &str, extra: &[&str]) -> std::path::PathBuf {
    let mut args = vec![
        "--db",
        "etcd",
        "--nodes",
        "testbed",
        "--time-limit",
        time_limit(),
        "--concurrency",
        "6",
        "--seed",
        "29",
        "--test-name",
        name,
    ];
    args.extend_from_slice(extra);
    let out = run(store, &args);
    let dir = run_dir(store, name);
    assert_complete(&dir);
    let r = results(&dir);
    eprintln!("{name}: exit {:?}, results {r}", out.status.code());
    if r["valid?"] != true {
        save_finding(&dir, name);
    }
    assert_eq!(out.status.code(), Some(0), "{r}");
    assert_eq!(r["valid?"], true, "{r}");
    let meta: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("test.json")).unwrap()).unwrap();
    assert_eq!(
        meta["summary"]["final_reads_done"], true,
        "final reads done"
    );
    for n in ["n1", "n2", "n3"] {
        let log = dir.join(format!("nodes/{n}/etcd.log"));
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        assert!(text.contains("\"level\""), "{} is a zap log", log.display());
        assert!(
            !text.contains("\"level\":\"panic\"") && !text.contains("\"level\":\"fatal\""),
            "{n} crashed"
        );
        assert!(
            !Path::new(&format!("/var/lib/harness/etcd/{n}")).exists(),
            "{n}'s etcd directory removed"
        );
    }
    dir
}

/// Keeps an invalid run's history and results under `findings/` (the
/// repository's), for a human to look at.
fn save_finding(dir: &Path, name: &str) {
    let to = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("findings")
        .join(format!("etcd-{name}"));
    let _ = std::fs::create_dir_all(&to);
    for f in ["history.jsonl.gz", "results.json", "test.json"] {
        let _ = std::fs::copy(dir.join(f), to.join(f));
    }
    eprintln!("invalid run saved under {}", to.display());
}

/// The nemesis functions that ran without an error.
fn applied(dir: &Path) -> Vec<String> {
    let ops = nemesis_ops(dir);
    for o in &ops {
        assert!(o["error"].is_null(), "a fault failed: {o}");
    }
    ops.iter()
        .filter(|o| o["type"] == "info")
        .filter_map(|o| o["f"].as_str().map(str::to_string))
        .collect()
}

/// One run on a fresh testbed under one fault package: the fault's start
/// and stop ops were both applied, more than 100 transactions ok, and the
/// run's checks of `etcd_testbed_run` held. Returns the store (kept alive)
/// and the run directory.
fn faulted_run(
    name: &str,
    args: &[&str],
    start_f: &str,
    stop_f: &str,
) -> (tempfile::TempDir, PathBuf) {
    let _lock = TestbedLock::acquire().unwrap();
    let _down = Down;
    testbed_up();
    let store = tempfile::tempdir().unwrap();
    let dir = etcd_testbed_run(store.path(), name, args);
    let fs = applied(&dir);
    assert!(fs.iter().any(|f| f == start_f), "{fs:?}");
    assert!(fs.iter().any(|f| f == stop_f), "{fs:?}");
    assert!(oks(&dir) > 100, "{} ok", oks(&dir));
    (store, dir)
}

#[test]
#[ignore = "needs root, the testbed and etcd: run by .ci/run"]
fn etcd_append_with_partitions_is_strict_serializable() {
    faulted_run(
        "etcd-tb-partition",
        &[
            "--workload",
            "append",
            "--nemesis",
            "partition",
            "--nemesis-interval",
            "5s",
            "--expected-consistency-model",
            "strict-serializable",
            "--version-order",
            "db",
        ],
        "start-partition",
        "stop-partition",
    );
}

#[test]
#[ignore = "needs root, the testbed and etcd: run by .ci/run"]
fn etcd_register_with_kills_is_linearizable() {
    let (_store, dir) = faulted_run(
        "etcd-tb-kill",
        &[
            "--workload",
            "register",
            "--nemesis",
            "kill",
            "--nemesis-interval",
            "4s",
        ],
        "kill",
        "start",
    );
    assert_eq!(results(&dir)["analyzer"], "wgl");
}

#[test]
#[ignore = "needs root, the testbed and etcd: run by .ci/run"]
fn etcd_append_with_pauses_is_strict_serializable() {
    faulted_run(
        "etcd-tb-pause",
        &[
            "--workload",
            "append",
            "--nemesis",
            "pause",
            "--nemesis-interval",
            "4s",
            "--expected-consistency-model",
            "strict-serializable",
        ],
        "pause",
        "resume",
    );
}

/// `--nemesis membership`: a member is removed (`member remove`, killed,
/// data wiped) and added back (`member add`, started empty with
/// `--initial-cluster-state existing`) every 4 s by the nemesis; the run
/// stays strict-serializable, every leave/join pair completes without an
/// error, at least one member really left, and the last change is a join
/// that restored all three members before the final reads.
#[test]
#[ignore = "needs root, the testbed and etcd: run by .ci/run"]
fn etcd_member_removed_and_added_back_mid_run() {
    let (_store, dir) = faulted_run(
        "etcd-tb-member",
        &[
            "--workload",
            "append",
            "--nemesis",
            "membership",
            "--nemesis-schedule",
            "fixed",
            "--nemesis-interval",
            "4s",
            "--expected-consistency-model",
            "strict-serializable",
        ],
        "leave",
        "join",
    );
    let infos: Vec<serde_json::Value> = nemesis_ops(&dir)
        .into_iter()
        .filter(|o| o["type"] == "info")
        .collect();
    eprintln!("membership ops: {infos:#?}");
    let left: Vec<&serde_json::Value> = infos
        .iter()
        .filter(|o| o["f"] == "leave" && o["value"][1]["wiped"] == true)
        .collect();
    assert!(!left.is_empty(), "a member left: {infos:?}");
    for l in &left {
        assert_eq!(
            l["value"][1]["members"].as_array().map(Vec::len),
            Some(2),
            "two members after a removal: {l}"
        );
    }
    let last = infos.last().unwrap();
    assert_eq!(last["f"], "join", "the last change is a join: {last}");
    let mut members: Vec<&str> = last["value"][1]["members"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(serde_json::Value::as_str)
        .collect();
    members.sort_unstable();
    assert_eq!(members, ["n1", "n2", "n3"], "{last}");
}
