//! PostgreSQL (primary + replica on 2 testbed nodes) with every data
//! directory on the lossy filesystem (`--lazyfs`) and `kill` meaning
//! SIGKILL → lose un-fsynced writes → start: valid with
//! `synchronous_commit = on`; with `synchronous_commit = off` acknowledged
//! commits vanish with the WAL that was never flushed and the checker finds
//! it, and `results.json` names the lost writes with their crash window
//! (`lost-writes`). Both keep `wal_writer_delay = 5s` (the WAL writer's flush period),
//! so the only difference is whether a commit waits for its flush. 20 s
//! runs by default; `HARNESS_LONG=1` runs 5 minutes with a kill every 10 s.
//! Strict mode (`--lazyfs-strict`: un-synced creates, renames and unlinks
//! are lost too) with `synchronous_commit = on`: valid as well (WAL replay
//! re-creates what a lost namespace operation undid). After each run no
//! mount, no filesystem daemon and no state directory is left.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

mod run_common;

use nemesis::testbed::TestbedLock;
use run_common::{Down, history_text, lossyfs_mounts_under, run, run_dir, testbed_up};
use std::path::Path;

fn long() -> bool {
    std::env::var("HARNESS_LONG").is_ok_and(|v| v == "1")
}

fn lazyfs_run(store: &Path, name: &str, synchronous_commit: &str, extra: &[&str]) -> Option<i32> {
    let (time, interval) = if long() {
        ("300s", "10s")
    } else {
        ("20s", "4s")
    };
    let conf = format!("synchronous_commit={synchronous_commit}");
    let mut args = vec![
        "--db",
        "postgres",
        "--nodes",
        "testbed:2",
        "--nemesis",
        "kill",
        "--lazyfs",
        "--db-conf",
        &conf,
        "--db-conf",
        "wal_writer_delay=5s",
        "--nemesis-interval",
        interval,
        "--time-limit",
        time,
        "--expected-consistency-model",
        "strict-serializable",
        "--seed",
        "7",
        "--test-name",
        name,
    ];
    args.extend_from_slice(extra);
    run(store, &args).status.code()
}

/// Completions of `lose-unfsynced-writes`: (node, file, bytes) lost.
fn losses(dir: &Path) -> Vec<(String, String, i64)> {
    let mut out = Vec::new();
    for l in history_text(dir).lines() {
        let Ok(v) = serde_json::from_str::<serde_json::Value>(l) else {
            continue;
        };
        if v["f"] != "lose-unfsynced-writes" || v["type"] != "info" {
            continue;
        }
        assert!(v["error"].is_null(), "loss failed: {v}");
        for (node, r) in v["value"].as_object().unwrap() {
            for (file, bytes) in r["lost"].as_object().unwrap() {
                out.push((node.clone(), file.clone(), bytes.as_i64().unwrap()));
            }
        }
    }
    out
}

/// Nothing of the filesystem is left: no mount, no daemon, no state dir.
fn assert_nothing_left() {
    let left = lossyfs_mounts_under("/var/lib/harness/");
    assert!(left.is_empty(), "mounts left: {left:?}");
    let ps = std::process::Command::new("pgrep")
        .args(["-f", "harness lossyfs mount"])
        .output()
        .unwrap();
    assert!(
        ps.stdout.is_empty(),
        "daemons left: {}",
        String::from_utf8_lossy(&ps.stdout)
    );
    for n in ["n1", "n2", "n3"] {
        let d = format!("/var/lib/harness/postgres/{n}/data.lossy");
        assert!(!Path::new(&d).exists(), "{d} left");
    }
}

#[test]
#[ignore = "needs root, /dev/fuse and the testbed with PostgreSQL: run by .ci/run"]
fn postgres_with_synchronous_commit_survives_kill_and_lose() {
    let _lock = TestbedLock::acquire().unwrap();
    let _down = Down;
    testbed_up();
    let store = tempfile::tempdir().unwrap();
    let code = lazyfs_run(store.path(), "lazyfs-sync-on", "on", &[]);
    let dir = run_dir(store.path(), "lazyfs-sync-on");
    assert_eq!(
        code,
        Some(0),
        "valid: every acknowledged commit was fsynced"
    );
    let lost = losses(&dir);
    assert!(
        lost.iter().any(|(_, _, b)| *b > 0),
        "kills lost un-synced bytes (the fault was on): {lost:?}"
    );
    assert_nothing_left();
}

#[test]
#[ignore = "needs root, /dev/fuse and the testbed with PostgreSQL: run by .ci/run"]
fn postgres_without_synchronous_commit_loses_acknowledged_writes() {
    let _lock = TestbedLock::acquire().unwrap();
    let _down = Down;
    testbed_up();
    let store = tempfile::tempdir().unwrap();
    let code = lazyfs_run(store.path(), "lazyfs-sync-off", "off", &[]);
    let dir = run_dir(store.path(), "lazyfs-sync-off");
    let lost = losses(&dir);
    assert!(
        lost.iter()
            .any(|(_, f, b)| f.starts_with("pg_wal/") && *b > 0),
        "un-flushed WAL was lost: {lost:?}"
    );
    assert_eq!(code, Some(1), "invalid: acknowledged commits vanished");
    // The report names them in plain words, each in its crash window.
    let r = run_common::results(&dir);
    let lost = &r["lost-writes"];
    assert!(
        lost["count"].as_u64().is_some_and(|n| n > 0),
        "results.json names the lost writes: {lost}"
    );
    assert!(
        lost["listed"][0]["explanation"]
            .as_str()
            .is_some_and(|e| e.contains("before kill")),
        "{lost}"
    );
    assert_nothing_left();
}

#[test]
#[ignore = "needs root, /dev/fuse and the testbed with PostgreSQL: run by .ci/run"]
fn postgres_with_synchronous_commit_survives_strict_kill_and_lose() {
    let _lock = TestbedLock::acquire().unwrap();
    let _down = Down;
    testbed_up();
    let store = tempfile::tempdir().unwrap();
    let code = lazyfs_run(store.path(), "lazyfs-strict", "on", &["--lazyfs-strict"]);
    let dir = run_dir(store.path(), "lazyfs-strict");
    assert_eq!(
        code,
        Some(0),
        "valid: commits fsynced, WAL replay redoes files"
    );
    // Every loss went through the strict filesystem (its summary counts
    // the namespace operations it undid, zero or more).
    let summaries: Vec<String> = history_text(&dir)
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v["f"] == "lose-unfsynced-writes" && v["type"] == "info")
        .flat_map(|v| {
            v["value"]
                .as_object()
                .unwrap()
                .values()
                .map(|r| r["message"].as_str().unwrap_or("").to_string())
                .collect::<Vec<_>>()
        })
        .collect();
    assert!(!summaries.is_empty(), "no loss recorded");
    assert!(
        summaries.iter().all(|m| m.contains("namespace operations")),
        "{summaries:?}"
    );
    assert_nothing_left();
}
