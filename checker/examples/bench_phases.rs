//! Peak resident memory after each phase of a list-append check:
//! `bench_phases FILE` (load, `Txns`, `Observations`, version order;
//! system allocator), and the main thread's CPU time.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use checker::analysis::Workload;
use checker::list_append::ListAppend;
use checker::observe::Observations;
use checker::txn::Txns;

#[path = "common/measure.rs"]
mod measure;
use measure::{cpu_s, peak_mb};

fn main() {
    let path = std::path::PathBuf::from(std::env::args().nth(1).expect("FILE"));
    let (history, _warnings) = store::load_history(&path).unwrap();
    let load = peak_mb();
    let txns = Txns::new(&history);
    let t = peak_mb();
    let obs = Observations::new(&txns, &history, Workload::ListAppend);
    let o = peak_mb();
    let list = ListAppend::new(&txns, &obs);
    let v = peak_mb();
    println!(
        "peak MB: load {load:.0}, +Txns {:.0} ({} txns), +Observations {:.0} ({} writes, {} reads), +version order {:.0}; {:.2} CPU-s",
        t - load,
        txns.len(),
        o - t,
        obs.writes.len(),
        obs.reads.len(),
        v - o,
        cpu_s()
    );
    drop(list);
}
