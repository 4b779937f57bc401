//! Benchmark of the complete register check (`checker::sat`):
//! `sat_bench TXNS SESSIONS DB LEVEL [SEED] [text]` with DB `si` (a snapshot
//! isolation database: reads at start, first committer wins) or `ser`
//! (each transaction runs atomically at its commit), LEVEL `ser`, `si`,
//! `strict-ser` or `strict-si`. The history is generated in memory (Elle's
//! register workload shape: 10 active keys, a key retired after 32 writes,
//! 1–4 micro-ops, half reads; 1% of transactions end `info`), then checked.
//! With `text` the history goes through PolySI's text format first (session
//! order only, no real time: what PolySI and Plume read), generated without
//! `info` transactions (the format would write them as committed).
//! Prints generation and check times, polygraph counters and the verdict.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use checker::budget::Budget;
use checker::sat::{Level, SatOutcome, check_register_stats};
use checker::txn::Txns;
use std::time::Instant;
use store::import::{PeerFormat, read_peer_str, write_peer_string};

#[path = "common/measure.rs"]
#[allow(dead_code)]
mod measure;
use measure::peak_mb;

#[path = "../tests/common/register_gen.rs"]
mod register_gen;
#[path = "common/sat_verdict.rs"]
mod sat_verdict;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let ntx: usize = args.get(1).and_then(|x| x.parse().ok()).unwrap_or(10_000);
    let nsess: usize = args.get(2).and_then(|x| x.parse().ok()).unwrap_or(20);
    let si_db = args.get(3).is_none_or(|x| x == "si");
    let level = match args.get(4).map(String::as_str).unwrap_or("si") {
        "ser" => Level::Serializable,
        "strict-ser" => Level::StrictSerializable,
        "strict-si" => Level::StrongSnapshotIsolation,
        "ss-si" => Level::StrongSessionSnapshotIsolation,
        "ss-ser" => Level::StrongSessionSerializable,
        _ => Level::SnapshotIsolation,
    };
    let seed: u64 = args.get(5).and_then(|x| x.parse().ok()).unwrap_or(1);
    let t0 = Instant::now();
    let text = args.get(6).is_some_and(|x| x == "text");
    // The text format holds committed transactions only: no `info` ones.
    let mut h = register_gen::generate_info(ntx, nsess, si_db, seed, usize::from(!text));
    if text {
        let s = write_peer_string(&h, PeerFormat::Text).expect("text");
        if let Ok(out) = std::env::var("SAT_BENCH_OUT") {
            std::fs::write(out, &s).expect("write the history");
        }
        h = read_peer_str(&s, PeerFormat::Text).expect("parse");
    }
    let gen_s = t0.elapsed().as_secs_f64();
    let t1 = Instant::now();
    let txns = Txns::new(&h);
    let (out, stats) = check_register_stats(&txns, &h, level, &Budget::unlimited());
    let check_s = t1.elapsed().as_secs_f64();
    let verdict = match &out {
        SatOutcome::Valid { witness, .. } => format!("valid (witness of {} txns)", witness.len()),
        other => sat_verdict::not_valid(other).unwrap_or_default(),
    };
    println!(
        "txns={ntx} sessions={nsess} db={}{} level={level:?} ops={} gen={gen_s:.2}s check={check_s:.3}s peak={:.0}MB {stats:?} → {verdict}",
        if si_db { "si" } else { "ser" },
        if text { " text" } else { "" },
        h.len(),
        peak_mb()
    );
}
