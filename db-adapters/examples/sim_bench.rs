//! Simulator throughput: transactions per second of `sim::simulate`
//! (engine + driver + list-append generator), per mode.
//!
//! Usage: `cargo run --release -p db-adapters --example sim_bench -- [TXNS] [REPEATS]`

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use db_adapters::sim::{SimConfig, SimMode, simulate_workload};
use std::time::Instant;
use workloads::{WorkloadConfig, WorkloadKind};

fn main() {
    let mut args = std::env::args().skip(1);
    let txns: u64 = args
        .next()
        .and_then(|a| a.parse().ok())
        .unwrap_or(1_000_000);
    let repeats: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(3);
    println!("txns={txns} concurrency=10 workload defaults (10 keys, 1-4 mops, 32 writes/key)");
    println!(
        "{:<20} {:>10} {:>12} {:>14}",
        "mode/workload", "ops", "best s", "txn/s"
    );
    for kind in WorkloadKind::ALL {
        for &mode in SimMode::ALL {
            let cfg = SimConfig {
                mode,
                txn_count: txns,
                concurrency: 10,
                seed: 1,
                ..SimConfig::default()
            };
            let mut best = f64::INFINITY;
            let mut n_ops = 0;
            for _ in 0..repeats {
                let t = Instant::now();
                let ops = simulate_workload(&cfg, *kind, &WorkloadConfig::default()).unwrap();
                best = best.min(t.elapsed().as_secs_f64());
                n_ops = ops.len();
                std::hint::black_box(ops);
            }
            let label = format!(
                "{}/{}",
                mode.name(),
                if *kind == WorkloadKind::ListAppend {
                    "append"
                } else {
                    "wr"
                }
            );
            println!(
                "{label:<20} {n_ops:>10} {best:>12.3} {:>14.0}",
                txns as f64 / best
            );
        }
    }
}
