//! MariaDB Galera on the 3-node testbed under coordinated crashes
//! (`--nemesis kill --kill-targets all`) with `innodb_flush_log_at_trx_commit
//! = 0` (`--db-conf`), MariaDB's recommendation for Galera: the setting
//! under which Jepsen (2026) found Galera losing committed transactions.
//! Once on a plain data directory, once on the lossy filesystem
//! (`--lazyfs`, a kill also loses every un-fsynced write).
//!
//! Whether acknowledged writes vanish is probabilistic, so it is never
//! asserted; what holds every time is: every kill hit all three nodes, the
//! cluster came back after each one (the restart found or bootstrapped a
//! primary component) and served the final reads, a verdict was recorded,
//! nothing of the faults is left (no harness rule, no lossy mount), and
//! when the checker or the report names lost writes, `results.json`
//! carries them with their crash window. 20 s runs by default;
//! `HARNESS_LONG=1` runs 5 minutes with a coordinated kill about every
//! 20 s.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

mod run_common;

use nemesis::fault::Nemesis;
use nemesis::remote::Remote;
use nemesis::testbed::{Testbed, TestbedLock};
use run_common::{
    Down, assert_complete, history_text, lossyfs_mounts_under, results, run, run_dir, testbed_up,
};
use std::path::Path;
use std::sync::Arc;

fn long() -> bool {
    std::env::var("HARNESS_LONG").is_ok_and(|v| v == "1")
}

fn galera_run(store: &Path, name: &str, lazyfs: bool) -> Option<i32> {
    let (time, interval) = if long() {
        ("300s", "10s")
    } else {
        ("20s", "5s")
    };
    let mut args = vec![
        "--db",
        "galera",
        "--nodes",
        "testbed",
        "--workload",
        "append",
        "--isolation",
        "serializable",
        "--nemesis",
        "kill",
        "--kill-targets",
        "all",
        "--nemesis-schedule",
        "fixed",
        "--nemesis-interval",
        interval,
        "--db-conf",
        "innodb_flush_log_at_trx_commit=0",
        "--time-limit",
        time,
        "--concurrency",
        "6",
        "--seed",
        "1",
        "--test-name",
        name,
    ];
    if lazyfs {
        args.push("--lazyfs");
    }
    run(store, &args).status.code()
}

/// The nemesis ops of a run, as JSON.
fn nemesis_ops(dir: &Path) -> Vec<serde_json::Value> {
    history_text(dir)
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v["process"] == "nemesis")
        .collect()
}

/// Asserts what holds on every run, whatever was lost.
fn assert_recovered_and_healed(dir: &Path, code: Option<i32>) {
    assert!(matches!(code, Some(0..=2)), "a verdict, got {code:?}");
    assert_complete(dir);
    let ops = nemesis_ops(dir);
    let kills: Vec<&serde_json::Value> = ops
        .iter()
        .filter(|o| o["f"] == "kill" && o["type"] == "info")
        .collect();
    assert!(!kills.is_empty(), "at least one coordinated kill: {ops:?}");
    for k in &kills {
        assert_eq!(
            k["value"],
            serde_json::json!(["n1", "n2", "n3"]),
            "every kill hits all nodes"
        );
        assert!(k["error"].is_null(), "kill failed: {k}");
    }
    for s in ops
        .iter()
        .filter(|o| o["f"] == "start" && o["type"] == "info")
    {
        assert!(s["error"].is_null(), "restart failed: {s}");
    }
    let meta: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("test.json")).unwrap()).unwrap();
    assert_eq!(
        meta["summary"]["final_reads_done"], true,
        "the cluster served the final reads"
    );
    let r = results(dir);
    if let Some(lost) = r.get("lost-writes") {
        let n = lost["count"].as_u64().unwrap();
        assert!(n > 0);
        let first = &lost["listed"][0];
        assert!(
            first["explanation"]
                .as_str()
                .unwrap()
                .contains("acknowledged at"),
            "{first}"
        );
        eprintln!(
            "lost acknowledged writes: {n} (e.g. {})",
            first["explanation"]
        );
    }
    let tb = Testbed::current().unwrap();
    let remotes: Vec<Arc<dyn Remote>> = tb.dyn_remotes();
    let rules = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(Nemesis::new(remotes, None).harness_rules())
        .unwrap();
    assert_eq!(rules.values().map(Vec::len).sum::<usize>(), 0, "{rules:?}");
    let left = lossyfs_mounts_under("/var/lib/harness/");
    assert!(left.is_empty(), "mounts left: {left:?}");
}

#[test]
#[ignore = "needs root and the testbed: run by .ci/run"]
fn galera_with_flush_0_recovers_from_coordinated_kills() {
    let _lock = TestbedLock::acquire().unwrap();
    let _down = Down;
    testbed_up();
    let store = tempfile::tempdir().unwrap();
    let code = galera_run(store.path(), "galera-flush0-kill-all", false);
    let dir = run_dir(store.path(), "galera-flush0-kill-all");
    assert_recovered_and_healed(&dir, code);
    let cnf = std::fs::read_to_string(dir.join("nodes/n1/my.cnf")).unwrap();
    assert!(
        cnf.contains("innodb_flush_log_at_trx_commit=0"),
        "--db-conf reached my.cnf: {cnf}"
    );
}

#[test]
#[ignore = "needs root, /dev/fuse and the testbed: run by .ci/run"]
fn galera_on_the_lossy_filesystem_recovers_from_coordinated_kills() {
    let _lock = TestbedLock::acquire().unwrap();
    let _down = Down;
    testbed_up();
    let store = tempfile::tempdir().unwrap();
    let code = galera_run(store.path(), "galera-lazyfs-kill-all", true);
    let dir = run_dir(store.path(), "galera-lazyfs-kill-all");
    assert_recovered_and_healed(&dir, code);
    // Every kill was followed by a loss on all three nodes, recorded.
    let ops = nemesis_ops(&dir);
    let losses: Vec<&serde_json::Value> = ops
        .iter()
        .filter(|o| o["f"] == "lose-unfsynced-writes" && o["type"] == "info")
        .collect();
    assert!(!losses.is_empty(), "losses recorded: {ops:?}");
    for l in losses {
        assert!(l["error"].is_null(), "loss failed: {l}");
        let nodes: Vec<&String> = l["value"].as_object().unwrap().keys().collect();
        assert_eq!(nodes, vec!["n1", "n2", "n3"], "{l}");
    }
    for n in ["n1", "n2", "n3"] {
        let d = format!("/var/lib/harness/mariadb/{n}/data.lossy");
        assert!(!Path::new(&d).exists(), "{d} left");
    }
}
