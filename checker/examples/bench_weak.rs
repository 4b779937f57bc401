//! Times `checker::weak` (read committed / read atomic / causal) on a
//! history file: `bench_weak FILE rc|ra|cc [list-append|rw-register]`.
//! Prints load and check times, peak RSS and the anomaly types found.
//!
//! `bench_weak FILE plume OUT` instead writes the history's transactions in
//! the Plume/PolySI/AWDIT text format (`r(key,value,session,txn)` /
//! `w(...)`, one micro-op a line, sessions = processes, aborted writes with
//! txn -1, nil read as 0 — those tools' initial value), so AWDIT can check
//! the same history. Committed transactions are written, and indeterminate
//! ones as committed writers (without their unknown reads); integer keys
//! and values only.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use checker::analysis::Workload;
use checker::txn::{Status, Txns};
use checker::weak::{Level, check_txns};
use std::collections::BTreeMap;
use std::io::Write;
use std::time::Instant;
use store::{Atom, MicroOp, ReadValue};

#[path = "common/measure.rs"]
mod measure;
use measure::{cpu_s, peak_mb};

fn int(a: &Atom) -> i64 {
    match a {
        Atom::Int(i) => *i,
        other => panic!("plume export needs integer keys and values, got {other:?}"),
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let path = std::path::PathBuf::from(&args[1]);
    let mode = args.get(2).map_or("cc", String::as_str);
    let t0 = Instant::now();
    let (history, _warnings) = store::load_history(&path).unwrap();
    let t_load = t0.elapsed();
    let m_load = peak_mb();
    let txns = Txns::new(&history);
    if mode == "plume" {
        let out = args.get(3).expect("plume OUT");
        let mut w = std::io::BufWriter::new(std::fs::File::create(out).unwrap());
        let mut events = 0u64;
        for (t, txn) in txns.txns.iter().enumerate() {
            let s = txns.process(t as u32).unwrap_or(u64::MAX >> 1);
            let id: i64 = match txn.status {
                Status::Fail => -1,
                _ => t as i64,
            };
            for m in txns.mops_of(txn) {
                let line = match m {
                    MicroOp::Write(k, v) | MicroOp::Append(k, v) => {
                        format!("w({},{},{s},{id})", int(&k.0), int(&v.0))
                    }
                    MicroOp::Read(k, r) => {
                        if txn.status != Status::Ok {
                            continue;
                        }
                        let v = match r {
                            ReadValue::Nil => 0,
                            ReadValue::Scalar(v) => int(&v.0),
                            ReadValue::List(l) => l.last().map_or(0, |v| int(&v.0)),
                        };
                        format!("r({},{v},{s},{id})", int(&k.0))
                    }
                    MicroOp::ReadRange(_) => continue,
                };
                writeln!(w, "{line}").unwrap();
                events += 1;
            }
        }
        eprintln!("wrote {events} events of {} transactions", txns.len());
        return;
    }
    let level = match mode {
        "rc" => Level::ReadCommitted,
        "ra" => Level::ReadAtomic,
        _ => Level::Causal,
    };
    let workload = match args.get(3).map(String::as_str) {
        Some("rw-register") => Workload::RwRegister,
        Some("list-append") => Workload::ListAppend,
        _ => Workload::detect(&history).unwrap(),
    };
    let t1 = Instant::now();
    let c1 = cpu_s();
    let r = check_txns(&history, &txns, workload, level);
    let t_check = t1.elapsed();
    let c_check = cpu_s() - c1;
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for a in &r.anomalies {
        *counts.entry(a.kind.name()).or_default() += 1;
    }
    let mops: usize = txns.txns.iter().map(|t| txns.mops_of(t).len()).sum();
    println!(
        "{} ops, {} txns, {mops} micro-ops; load {:.2} s ({:.0} MB); {} check {:.2} s wall, {:.2} s CPU; peak {:.0} MB; found {:?}; warnings {:?}",
        history.len(),
        txns.len(),
        t_load.as_secs_f64(),
        m_load,
        level.name(),
        t_check.as_secs_f64(),
        c_check,
        peak_mb(),
        counts,
        r.warnings
    );
}
