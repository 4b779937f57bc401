//! `harness run --db etcd` end to end against real etcd members
//! (`/usr/bin/etcd`, Debian `etcd-server`): a `--local` 3-member cluster
//! checked at strict-serializable for list-append and rw-register and for
//! linearizability with the register workload; and a run behind `--url`
//! to a cluster this test starts, one member of which it kills (by pid)
//! and restarts mid-run. Each run is 8 s of workload.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod run_common;

use run_common::*;
use std::time::Duration;

const ETCD: &str = "/usr/bin/etcd";

fn etcd_run(store: &std::path::Path, extra: &[&str], name: &str) -> serde_json::Value {
    let mut args = vec![
        "--db",
        "etcd",
        "--time-limit",
        "8s",
        "--concurrency",
        "6",
        "--seed",
        "25",
        "--test-name",
        name,
    ];
    args.extend_from_slice(extra);
    let out = run(store, &args);
    let r = results(&run_dir(store, name));
    assert_eq!(out.status.code(), Some(0), "{r}");
    r
}

/// Transactions that committed (`ok`) in a run.
fn oks(store: &std::path::Path, name: &str) -> usize {
    counts(&run_dir(store, name)).1
}

#[test]
#[ignore = "needs the etcd binary (Debian etcd-server): run by .ci/run"]
fn etcd_local_list_append_is_strict_serializable() {
    let store = tempfile::tempdir().unwrap();
    let r = etcd_run(
        store.path(),
        &["--local", "--workload", "append"],
        "etcd-append",
    );
    assert_eq!(r["valid?"], true, "{r}");
    assert!(oks(store.path(), "etcd-append") > 100);
    // The members' data is removed at the end; their logs are kept.
    let dir = run_dir(store.path(), "etcd-append").join("etcd");
    assert!(dir.join("e0.log").exists());
    assert!(!dir.join("e0.etcd").exists());
}

#[test]
#[ignore = "needs the etcd binary (Debian etcd-server): run by .ci/run"]
fn etcd_local_rw_register_is_strict_serializable() {
    let store = tempfile::tempdir().unwrap();
    let r = etcd_run(
        store.path(),
        &["--local", "--workload", "rw-register"],
        "etcd-wr",
    );
    assert_eq!(r["valid?"], true, "{r}");
    assert!(oks(store.path(), "etcd-wr") > 100);
}

#[test]
#[ignore = "needs the etcd binary (Debian etcd-server): run by .ci/run"]
fn etcd_local_register_is_linearizable() {
    let store = tempfile::tempdir().unwrap();
    let r = etcd_run(
        store.path(),
        &["--local", "--workload", "register"],
        "etcd-reg",
    );
    assert_eq!(r["valid?"], true, "{r}");
    assert_eq!(r["analyzer"], "wgl", "{r}");
    let h = history_text(&run_dir(store.path(), "etcd-reg"));
    assert!(h.contains(r#""f":"cas","value":["#));
}

/// Behind `--url` to three members, one of which is killed with SIGKILL
/// 3 s into the run and restarted 3 s later: still valid, and some
/// transactions still commit.
#[test]
#[ignore = "needs the etcd binary (Debian etcd-server): run by .ci/run"]
fn etcd_with_a_member_killed_stays_strict_serializable() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let data = tempfile::tempdir().unwrap();
    let mut cluster = rt
        .block_on(db_adapters::etcd::LocalCluster::start(ETCD, data.path(), 3))
        .unwrap();
    let hosts: Vec<String> = cluster.nodes().into_iter().map(|n| n.host).collect();
    let url = format!("etcd://{}", hosts.join(","));
    let store = tempfile::tempdir().unwrap();
    let store_path = store.path().to_path_buf();
    let runner = std::thread::spawn(move || {
        etcd_run(
            &store_path,
            &["--url", &url, "--workload", "append"],
            "etcd-kill",
        )
    });
    std::thread::sleep(Duration::from_secs(3));
    let pid = cluster.pid(1).unwrap();
    cluster.kill(1);
    assert!(!std::path::Path::new(&format!("/proc/{pid}")).exists());
    std::thread::sleep(Duration::from_secs(3));
    cluster.restart(1).unwrap();
    let r = runner.join().unwrap();
    assert_eq!(r["valid?"], true, "{r}");
    assert!(oks(store.path(), "etcd-kill") > 50);
    drop(cluster);
}
