//! Deterministic history generator for benchmarks (the generator itself is
//! `common/history_gen.rs`, shared with the root package's perf guard).
//!
//! Usage: `gen_history [--workload list-append|rw-register] [--txns N]
//! [--isolation serializable|snapshot-isolation] [--concurrency C] [--keys K]
//! [--max-writes-per-key W] [--crash-rate P] [--seed S] --out FILE`
//! Writes JSON Lines (harness's native format).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::Write;

#[path = "common/history_gen.rs"]
mod history_gen;
use history_gen::Shape;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let get = |name: &str, default: &str| -> String {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1).cloned())
            .unwrap_or_else(|| default.to_string())
    };
    let shape = Shape {
        list: get("--workload", "list-append") != "rw-register",
        txns: get("--txns", "10000").parse().unwrap(),
        si: get("--isolation", "serializable").starts_with("snap"),
        concurrency: get("--concurrency", "10").parse().unwrap(),
        keys: get("--keys", "10").parse().unwrap(),
        max_writes_per_key: get("--max-writes-per-key", "32").parse().unwrap(),
        crash_rate: get("--crash-rate", "0.005").parse().unwrap(),
        seed: get("--seed", "1").parse().unwrap(),
    };
    let out = get("--out", "");
    assert!(!out.is_empty(), "--out FILE is required");
    let mut w = std::io::BufWriter::with_capacity(1 << 20, std::fs::File::create(&out).unwrap());
    let ops = history_gen::generate(&shape, &mut w).unwrap();
    w.flush().unwrap();
    eprintln!("wrote {ops} ops ({} transactions) to {out}", shape.txns);
}
