//! `harness run --db patroni` on the testbed: Patroni + PostgreSQL 15 + an
//! etcd DCS on 3 nodes, with the primary partitioned away and its Patroni
//! killed (PostgreSQL left running: with no watchdog on the nodes, the
//! two-primaries case). Asynchronous mode loses acknowledged appends; strict
//! synchronous mode must not. Every test holds the testbed lock.
//!
//! Each run is 50–60 s: the faults start together 11 s into the main phase
//! and last 11 s. Patroni's `ttl` is 8 s here, but an etcd leader change
//! in the majority renews every lease, so the new Patroni leader can come
//! later than the heal; such a run loses nothing (1 of the first 2 runs:
//! 0 and 512 acknowledged appends lost). So the short runs assert what
//! holds every time (faults on the first leader, recovery, a verdict; in
//! strict mode no acknowledged append lost), and `HARNESS_LONG=1` (3
//! minutes, 20 s faults every 20 s) also asserts the asynchronous loss.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

mod run_common;

use nemesis::testbed::TestbedLock;
use run_common::{Down, anomaly_types, assert_complete, history_text, results, run, run_dir};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn long() -> bool {
    std::env::var("HARNESS_LONG").is_ok_and(|v| v == "1")
}

/// A run with the primary partitioned and its Patroni killed; `conf` adds
/// `--db-conf` entries. Returns the exit code and the run directory.
fn faulted_run(store: &Path, name: &str, conf: &[&str]) -> (Option<i32>, PathBuf) {
    let (interval, limit) = if long() {
        ("20s", "180s")
    } else {
        ("11s", "24s")
    };
    let mut args = vec![
        "--db",
        "patroni",
        "--nodes",
        "testbed",
        "--workload",
        "append",
        "--isolation",
        "serializable",
        "--expected-consistency-model",
        "strict-serializable",
        "--db-conf",
        "kill=patroni",
        "--db-conf",
        "ttl=8",
        "--db-conf",
        "retry_timeout=3",
        "--nemesis",
        "partition,kill",
        "--partition",
        "primaries",
        "--kill-targets",
        "primaries",
        "--nemesis-schedule",
        "fixed",
        "--nemesis-interval",
        interval,
        "--time-limit",
        limit,
        "--concurrency",
        "10",
        "--key-count",
        "6",
        "--seed",
        "1",
        "--test-name",
        name,
    ];
    for c in conf {
        args.push("--db-conf");
        args.push(c);
    }
    let started = std::time::Instant::now();
    let out = run(store, &args);
    eprintln!(
        "{name}: exit {:?} after {:?}\n{}",
        out.status.code(),
        started.elapsed(),
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter(|l| !l.starts_with("  "))
            .take(20)
            .collect::<Vec<_>>()
            .join("\n")
    );
    (out.status.code(), run_dir(store, name))
}

/// Acknowledged appends missing from the reads made after every fault was
/// healed (the last nemesis op): what the recovered cluster no longer has.
/// A stale read during a split brain (a client still on the old primary)
/// is a different anomaly, which the checker reports on its own.
fn lost_after_recovery(history: &str) -> Vec<(i64, i64)> {
    let healed = history
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v["process"] == "nemesis")
        .filter_map(|v| v["index"].as_u64())
        .max()
        .unwrap_or(0);
    lost_appends_read_after(history, Some(healed))
}

/// Acknowledged appends missing from the last read of their key: `(key,
/// element)` of every `ok` append that no read completed after it
/// contains, when a later read of that key exists.
fn lost_appends(history: &str) -> Vec<(i64, i64)> {
    lost_appends_read_after(history, None)
}

/// [`lost_appends`], judged only by reads that completed after index
/// `after` (all reads when `None`).
fn lost_appends_read_after(history: &str, after: Option<u64>) -> Vec<(i64, i64)> {
    let mut appended: Vec<(usize, i64, i64)> = Vec::new();
    let mut last_read: BTreeMap<i64, (usize, BTreeSet<i64>)> = BTreeMap::new();
    for line in history.lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        if v["type"] != "ok" || v["process"] == "nemesis" {
            continue;
        }
        let at = usize::try_from(v["index"].as_u64().unwrap()).unwrap();
        for m in v["value"].as_array().into_iter().flatten() {
            let (f, k) = (m[0].as_str().unwrap_or(""), m[1].as_i64().unwrap());
            match f {
                "append" => appended.push((at, k, m[2].as_i64().unwrap())),
                "r" if after.is_none_or(|a| at as u64 > a) => {
                    let els = m[2]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .filter_map(serde_json::Value::as_i64)
                        .collect();
                    last_read.insert(k, (at, els));
                }
                _ => {}
            }
        }
    }
    appended
        .into_iter()
        .filter(|(at, k, e)| {
            last_read
                .get(k)
                .is_some_and(|(r, els)| r > at && !els.contains(e))
        })
        .map(|(_, k, e)| (k, e))
        .collect()
}

/// The faults ran on the first leader, the cluster came back and the run
/// reached a verdict.
fn assert_faulted_and_recovered(dir: &Path) {
    assert_complete(dir);
    let text = history_text(dir);
    let nemesis: Vec<serde_json::Value> = text
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v["process"] == "nemesis" && v["type"] == "info")
        .collect();
    let fs: Vec<&str> = nemesis.iter().filter_map(|o| o["f"].as_str()).collect();
    for f in ["start-partition", "kill", "stop-partition", "start"] {
        assert!(fs.contains(&f), "{f} in {fs:?}");
    }
    let meta: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("test.json")).unwrap()).unwrap();
    assert_eq!(
        meta["summary"]["final_reads_done"], true,
        "final reads done"
    );
    for n in ["n1", "n2", "n3"] {
        assert!(
            dir.join("nodes").join(n).join("patroni.log").is_file(),
            "{n}"
        );
    }
}

#[test]
#[ignore = "needs root, the testbed, patroni and etcd: run by .ci/run"]
fn async_split_brain_recovers_and_loses_acknowledged_writes_when_long() {
    let _lock = TestbedLock::acquire().unwrap();
    let _down = Down;
    let store = tempfile::tempdir().unwrap();
    let (code, dir) = faulted_run(store.path(), "patroni-async", &[]);
    assert_faulted_and_recovered(&dir);
    let lost = lost_appends(&history_text(&dir));
    let types = anomaly_types(&results(&dir));
    eprintln!(
        "async: {} acknowledged appends lost; anomalies {types:?}",
        lost.len()
    );
    assert!(matches!(code, Some(0..=2)), "a verdict");
    if !long() {
        return;
    }
    // A 20 s fault outlasts the failover: the old primary accepted writes
    // for the whole fault (its Patroni was dead and could not demote it),
    // none reached the majority, and its rewind erased them; the checker
    // explains it.
    assert!(!lost.is_empty(), "acknowledged appends lost");
    assert_eq!(code, Some(1), "{types:?}");
    assert!(
        types.iter().any(|t| t == "incompatible-order"
            || t.starts_with("G-single")
            || t.starts_with("G0")
            || t.starts_with("G1c")),
        "{types:?}"
    );
}

#[test]
#[ignore = "needs root, the testbed, patroni and etcd: run by .ci/run"]
fn strict_synchronous_mode_keeps_every_acknowledged_write() {
    let _lock = TestbedLock::acquire().unwrap();
    let _down = Down;
    let store = tempfile::tempdir().unwrap();
    let (code, dir) = faulted_run(
        store.path(),
        "patroni-strict",
        &["synchronous_mode_strict=true"],
    );
    assert_faulted_and_recovered(&dir);
    // What strict mode promises: no acknowledged commit is lost (the old
    // primary's commits wait for a sync standby that no longer follows it;
    // the new primary is the sync standby, which has every one).
    let lost = lost_after_recovery(&history_text(&dir));
    assert_eq!(lost, [], "acknowledged appends lost in strict mode");
    assert!(matches!(code, Some(0..=2)), "a verdict");
}

#[test]
fn lost_appends_are_found_only_when_a_later_read_misses_them() {
    let lines = [
        r#"{"index":0,"time":0,"type":"invoke","process":0,"f":"txn","value":[["append",1,1]]}"#,
        r#"{"index":1,"time":1,"type":"ok","process":0,"f":"txn","value":[["append",1,1]]}"#,
        r#"{"index":2,"time":2,"type":"invoke","process":1,"f":"txn","value":[["append",1,2]]}"#,
        r#"{"index":3,"time":3,"type":"ok","process":1,"f":"txn","value":[["append",1,2]]}"#,
        r#"{"index":4,"time":4,"type":"invoke","process":0,"f":"txn","value":[["append",2,3]]}"#,
        r#"{"index":5,"time":5,"type":"ok","process":0,"f":"txn","value":[["append",2,3]]}"#,
        r#"{"index":6,"time":6,"type":"invoke","process":2,"f":"txn","value":[["r",1,null]]}"#,
        r#"{"index":7,"time":7,"type":"ok","process":2,"f":"txn","value":[["r",1,[1]]]}"#,
    ];
    // Element 2 of key 1 was acknowledged, then a later read missed it;
    // key 2 was never read again, so nothing is claimed about it.
    assert_eq!(lost_appends(&lines.join("\n")), [(1, 2)]);
    // The same read before the heal is a stale read, not a loss; a read
    // after the heal that misses the element is.
    let heal = r#"{"index":8,"time":8,"type":"info","process":"nemesis","f":"stop-partition","value":null}"#;
    let mut healed: Vec<&str> = lines.to_vec();
    healed.push(heal);
    assert_eq!(lost_after_recovery(&healed.join("\n")), []);
    healed.push(
        r#"{"index":9,"time":9,"type":"invoke","process":2,"f":"txn","value":[["r",1,null]]}"#,
    );
    healed
        .push(r#"{"index":10,"time":10,"type":"ok","process":2,"f":"txn","value":[["r",1,[1]]]}"#);
    assert_eq!(lost_after_recovery(&healed.join("\n")), [(1, 2)]);
}
