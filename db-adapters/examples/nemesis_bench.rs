//! Nemesis benchmarks on the local testbed (root; see BENCHMARKS.md):
//! testbed up/down, fault latency (requested → applied on all nodes), and
//! time from SIGKILL to the database serving again (PostgreSQL primary,
//! Galera node).
//!
//! `cargo run --release -p db-adapters --example nemesis_bench`
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use db_adapters::db::Db;
use db_adapters::mysql::{MariaDb, MariaDbConfig};
use db_adapters::postgres::cluster::{PgCluster, PgClusterConfig};
use nemesis::fault::{Fault, Nemesis};
use nemesis::partition::{PartitionKind, grudge};
use nemesis::remote::Remote;
use nemesis::rng::Rng;
use nemesis::testbed::{Testbed, TestbedLock};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn stats(name: &str, xs: &[Duration]) {
    let mut ms: Vec<f64> = xs.iter().map(|d| d.as_secs_f64() * 1000.0).collect();
    ms.sort_by(|a, b| a.total_cmp(b));
    println!(
        "{name}: n={} min {:.0} ms, median {:.0} ms, max {:.0} ms",
        ms.len(),
        ms[0],
        ms[ms.len() / 2],
        ms[ms.len() - 1]
    );
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let _lock = TestbedLock::acquire().unwrap();
    Testbed::down().await.unwrap();
    let (mut up, mut down) = (Vec::new(), Vec::new());
    for _ in 0..3 {
        let t = Instant::now();
        Testbed::up(3).await.unwrap();
        up.push(t.elapsed());
        let t = Instant::now();
        Testbed::down().await.unwrap();
        down.push(t.elapsed());
    }
    stats("testbed up (3 nodes, keys, first ssh)", &up);
    stats("testbed down (3 nodes)", &down);

    let tb = Testbed::up(3).await.unwrap();
    let remotes: Vec<Arc<dyn Remote>> = tb.dyn_remotes();
    let names: Vec<String> = tb.nodes.iter().map(|n| n.name.clone()).collect();

    // PostgreSQL primary + 2 replicas.
    let pg = PgCluster::new(PgClusterConfig::default(), remotes.clone());
    let t = Instant::now();
    pg.setup().await.unwrap();
    println!(
        "postgres primary + 2 replicas setup: {:.1} s",
        t.elapsed().as_secs_f64()
    );
    let nem = Nemesis::new(remotes.clone(), pg.process());
    let (mut part, mut heal) = (Vec::new(), Vec::new());
    let mut rng = Rng::new(1);
    for _ in 0..5 {
        let g = grudge(PartitionKind::Majority, &names, &[], &mut rng);
        let t = Instant::now();
        nem.start(&Fault::Partition(g)).await.unwrap();
        part.push(t.elapsed());
        let t = Instant::now();
        nem.heal_partitions().await.unwrap();
        heal.push(t.elapsed());
    }
    stats("start-partition applied on all nodes", &part);
    stats("stop-partition (heal) applied on all nodes", &heal);
    let p = pg.process().unwrap();
    let primary = tb.nodes[0].clone();
    let (mut kill, mut serve, mut pause) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..5 {
        let t = Instant::now();
        p.kill(&primary).await.unwrap();
        kill.push(t.elapsed());
        p.start(&primary).await.unwrap();
        pg.await_ready(Duration::from_secs(60)).await.unwrap();
        serve.push(t.elapsed());
        let t = Instant::now();
        nem.start(&Fault::Pause(names.clone())).await.unwrap();
        pause.push(t.elapsed());
        nem.stop(&Fault::Pause(names.clone())).await.unwrap();
    }
    stats("postgres kill (SIGKILL, processes gone)", &kill);
    stats(
        "postgres primary kill -> serving again (start + ready on all 3)",
        &serve,
    );
    stats("pause (SIGSTOP) applied on 3 nodes", &pause);
    pg.teardown().await.unwrap();

    // Galera.
    let g = MariaDb::new(MariaDbConfig::new(true), remotes.clone());
    let t = Instant::now();
    g.setup().await.unwrap();
    println!(
        "galera 3-node setup (bootstrap + 2 rsync SST joins): {:.1} s",
        t.elapsed().as_secs_f64()
    );
    let p = g.process().unwrap();
    let mut serve = Vec::new();
    for _ in 0..3 {
        let t = Instant::now();
        p.kill(&tb.nodes[1]).await.unwrap();
        p.start(&tb.nodes[1]).await.unwrap();
        g.await_ready(Duration::from_secs(120)).await.unwrap();
        serve.push(t.elapsed());
    }
    stats("galera node kill -> Synced again (rejoin by SST)", &serve);
    let t = Instant::now();
    for n in &tb.nodes {
        p.kill(n).await.unwrap();
    }
    for n in &tb.nodes {
        p.start(n).await.unwrap();
    }
    g.await_ready(Duration::from_secs(180)).await.unwrap();
    println!(
        "galera all 3 killed -> primary component re-formed, all Synced: {:.1} s",
        t.elapsed().as_secs_f64()
    );
    g.teardown().await.unwrap();
    Testbed::down().await.unwrap();
}
