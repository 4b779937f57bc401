//! The runner's own throughput (BENCHMARKS.md, "Runner overhead"): the
//! list-append generator, the interpreter and its workers, and the durable
//! history log (`store::run::HistoryLog` behind the `SharedLog` that
//! `harness run` uses), against a client that answers at once.
//!
//! ```text
//! cargo build --release -p engine --example runner_bench
//! runner_bench [TXNS] [CONCURRENCY] [instant|sim] [REPEATS]
//! ```
//!
//! `instant` (the default, `db_adapters::sim::instant`) answers every
//! transaction immediately (reads return the empty list), so what is
//! measured is the harness; `sim` is the
//! in-process simulator (`--db sim`), which also locks its engine and
//! yields once per micro-op. Prints the main phase's txn/s per repeat and
//! the best; the history goes to a temporary directory.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use db_adapters::client::ClientFactory;
use db_adapters::sim::{SimFactory, SimMode, instant::InstantFactory};
use engine::cluster::SharedLog;
use engine::runner::{self, RunnerConfig};
use std::sync::Arc;
use workloads::{WorkloadConfig, WorkloadKind};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let txns: u64 = args.get(1).map_or(500_000, |s| s.parse().unwrap());
    let concurrency: usize = args.get(2).map_or(10, |s| s.parse().unwrap());
    let client = args.get(3).map_or("instant", String::as_str);
    let repeats: usize = args.get(4).map_or(3, |s| s.parse().unwrap());
    let rt = runner::runtime().unwrap();
    let mut best: f64 = 0.0;
    for r in 0..repeats {
        let factory: Arc<dyn ClientFactory> = match client {
            "instant" => Arc::new(InstantFactory),
            "sim" => Arc::new(SimFactory::new(SimMode::Serializable, 1)),
            other => panic!("client {other:?}: use instant or sim"),
        };
        let rate = rt.block_on(once(txns, concurrency, factory));
        println!("run {r}: {txns} txns, concurrency {concurrency}, {client}: {rate:.0} txn/s");
        best = best.max(rate);
    }
    println!("best of {repeats}: {best:.0} txn/s");
}

async fn once(txns: u64, concurrency: usize, factory: Arc<dyn ClientFactory>) -> f64 {
    let dir = tempfile::tempdir().unwrap();
    let log = store::run::HistoryLog::create(&dir.path().join("history.jsonl")).unwrap();
    let mut log = SharedLog::new(log);
    let cfg = RunnerConfig {
        final_reads: false,
        ..RunnerConfig::local(concurrency, txns)
    };
    let main =
        workloads::for_workload(WorkloadKind::ListAppend, &WorkloadConfig::default(), 1).unwrap();
    let summary = runner::run_unfaulted(&cfg, main, factory, &mut log)
        .await
        .unwrap();
    log.finish().unwrap();
    assert_eq!(summary.main_counts.invoked, txns);
    txns as f64 / summary.main_phase_s
}
