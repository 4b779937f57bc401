//! Writes a simulated history as JSON Lines, for checker tests and benchmarks.
//!
//! Usage: `cargo run --release -p db-adapters --example sim_history --
//! [--txns N] [--mode serializable|snapshot-isolation|read-committed|
//! read-uncommitted|retry-reapply|lost-update] [--workload list-append|rw-register]
//! [--concurrency C] [--seed S] [--crash-probability P] [--abort-probability P]
//! [--key-count K] [--max-writes-per-key W] [--no-final-reads] --out PATH`

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use db_adapters::sim::{SimConfig, SimMode, simulate_workload};
use std::io::{BufWriter, Write};
use std::process::ExitCode;
use workloads::{WorkloadConfig, WorkloadKind};

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(3)
        }
    }
}

fn run() -> Result<(), String> {
    let mut cfg = SimConfig {
        txn_count: 10_000,
        ..SimConfig::default()
    };
    let mut kind = WorkloadKind::ListAppend;
    let mut wcfg = WorkloadConfig::default();
    let mut out: Option<String> = None;
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        if flag == "--no-final-reads" {
            cfg.final_reads = false;
            continue;
        }
        let value = args.next().ok_or_else(|| format!("{flag} needs a value"))?;
        let num = |v: &str| -> Result<u64, String> {
            v.parse()
                .map_err(|_| format!("{flag}: not a number: {v:?}"))
        };
        let prob = |v: &str| -> Result<f64, String> {
            v.parse()
                .map_err(|_| format!("{flag}: not a number: {v:?}"))
        };
        match flag.as_str() {
            "--txns" => cfg.txn_count = num(&value)?,
            "--mode" | "--isolation" => {
                cfg.mode = SimMode::parse(&value).map_err(|e| e.to_string())?
            }
            "--workload" => kind = WorkloadKind::parse(&value).map_err(|e| e.to_string())?,
            "--concurrency" => cfg.concurrency = num(&value)? as usize,
            "--seed" => cfg.seed = num(&value)?,
            "--crash-probability" => cfg.crash_probability = prob(&value)?,
            "--abort-probability" => cfg.abort_probability = prob(&value)?,
            "--key-count" => wcfg.key_count = num(&value)? as usize,
            "--max-writes-per-key" => wcfg.max_writes_per_key = num(&value)?,
            "--out" => out = Some(value),
            other => return Err(format!("unknown flag {other}")),
        }
    }
    let out = out.ok_or("--out PATH is required")?;
    let ops = simulate_workload(&cfg, kind, &wcfg).map_err(|e| e.to_string())?;
    let file = std::fs::File::create(&out).map_err(|e| format!("{out}: {e}"))?;
    let mut w = BufWriter::new(file);
    for op in &ops {
        writeln!(w, "{}", store::format::to_json_line(op)).map_err(|e| format!("{out}: {e}"))?;
    }
    w.flush().map_err(|e| format!("{out}: {e}"))?;
    eprintln!(
        "wrote {} ops ({} txns, {}, {}, seed {}) to {out}",
        ops.len(),
        cfg.txn_count,
        kind,
        cfg.mode,
        cfg.seed
    );
    Ok(())
}
