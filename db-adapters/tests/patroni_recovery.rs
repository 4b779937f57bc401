//! Patroni's wait for recovery on testbed nodes (`Db::await_ready`, what a
//! run does after healing its faults) starts again a Patroni that exited
//! after the wait had started it.
//!
//! Patroni exits at start-up when no DCS member answers its lease request,
//! which is the usual case right after a partition of the DCS heals (a CI
//! run saw it: the old primary's Patroni, restarted by the heal, exited,
//! and that node stayed a primary beside the new one until the wait gave
//! up). The DCS's timing cannot be forced here, so the exit is: the test
//! kills the old primary's Patroni once more right after the wait has
//! started it. Without a restart the old primary keeps serving as a
//! primary, its leader key expires (`ttl=8`), another node is promoted,
//! and the wait sees two primaries until its limit.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use db_adapters::db::Db;
use db_adapters::patroni::{PatroniCluster, PatroniConf, PatroniConfig, PatroniDb};
use nemesis::process::Process;
use nemesis::remote::Remote;
use nemesis::testbed::{Testbed, TestbedLock};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Whether Patroni runs on the node behind `r` (its pid file names a live
/// process).
async fn patroni_runs(r: &Arc<dyn Remote>, base: &str) -> bool {
    let d = format!("{base}/{}", r.node().name);
    let cmd = format!(
        "P=$(cat {d}/patroni.pid 2>/dev/null); [ -n \"$P\" ] && [ -e /proc/$P ] && ! grep -q '^State:.*Z' /proc/$P/status && echo yes || true"
    );
    r.run(&cmd).await.unwrap().stdout_str().trim() == "yes"
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs root, the testbed, patroni and etcd: run by .ci/run"]
async fn the_wait_for_recovery_starts_again_a_patroni_that_exited() {
    let _lock = TestbedLock::acquire().unwrap();
    let tb = Testbed::up(3).await.unwrap();
    let remotes: Vec<Arc<dyn Remote>> = tb.dyn_remotes();
    let conf = PatroniConf::parse(&[
        "kill=patroni".to_string(),
        "ttl=8".to_string(),
        "retry_timeout=3".to_string(),
    ])
    .unwrap();
    let cfg = PatroniConfig {
        conf,
        ..PatroniConfig::default()
    };
    let base = cfg.base_dir.clone();
    let cluster = Arc::new(PatroniCluster::new(cfg, remotes.clone()));
    let db = PatroniDb(cluster.clone());
    db.setup().await.unwrap();
    let primary = db.primaries().pop().expect("a primary after setup");
    let r = remotes
        .iter()
        .find(|r| r.node().name == primary.name)
        .unwrap()
        .clone();

    // The fault: the primary's Patroni killed, its PostgreSQL left running.
    cluster.kill(&primary).await.unwrap();
    assert!(!patroni_runs(&r, &base).await, "the kill took effect");

    // The wait starts it first thing; once it runs, it "exits" again.
    let waiting = {
        let db = db.clone();
        tokio::spawn(async move { db.await_ready(Duration::from_secs(90)).await })
    };
    let t = Instant::now();
    while !patroni_runs(&r, &base).await {
        assert!(
            t.elapsed() < Duration::from_secs(30),
            "the wait did not start Patroni"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    cluster.kill(&primary).await.unwrap();
    assert!(
        !patroni_runs(&r, &base).await,
        "the second kill took effect"
    );

    let ready = waiting.await.unwrap();
    let runs = patroni_runs(&r, &base).await;
    let torn = db.teardown().await;
    for r in &remotes {
        r.close().await;
    }
    Testbed::down().await.unwrap();
    ready.expect("one primary again: the exited Patroni was started again");
    assert!(runs, "Patroni runs again on the old primary");
    torn.unwrap();
}
