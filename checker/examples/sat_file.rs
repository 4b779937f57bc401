//! The complete register check on history files (PolySI's fig. 7 files,
//! dbcop bincode, text, ours): `sat_file LEVEL FILE...` with LEVEL `si`,
//! `ss-si`, `ser` or `ss-ser`. Per file, one line: transactions, check CPU
//! seconds (this thread), polygraph counters and the verdict (a `valid`
//! one only after its witness replays).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use checker::budget::Budget;
use checker::sat::{Level, SatOutcome, check_register_stats, replay};
use checker::txn::Txns;
use std::path::Path;

#[path = "common/measure.rs"]
#[allow(dead_code)]
mod measure;
use measure::cpu_s;
#[path = "common/sat_verdict.rs"]
mod sat_verdict;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let level = match args.get(1).map(String::as_str).unwrap_or("si") {
        "ser" => Level::Serializable,
        "ss-ser" => Level::StrongSessionSerializable,
        "ss-si" => Level::StrongSessionSnapshotIsolation,
        _ => Level::SnapshotIsolation,
    };
    for file in args.iter().skip(2) {
        let loaded = store::import::load(Path::new(file), None).expect("load");
        let h = loaded.history;
        let t0 = cpu_s();
        let txns = Txns::new(&h);
        let budget = Budget::unlimited();
        let (out, stats) = check_register_stats(&txns, &h, level, &budget);
        let check_s = cpu_s() - t0;
        let verdict = match &out {
            SatOutcome::Valid { witness, starts } => {
                match replay(&txns, &h, level, witness, starts) {
                    Ok(()) => "valid".to_string(),
                    Err(e) => format!("WITNESS DOES NOT REPLAY: {e}"),
                }
            }
            other => sat_verdict::not_valid(other).unwrap_or_default(),
        };
        println!(
            "{file} level={level:?} txns={} cpu={check_s:.3}s {stats:?} -> {verdict}",
            txns.len()
        );
    }
}
