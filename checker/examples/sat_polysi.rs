//! Histories of PolySI's fig. 7 shape, checked by the complete engine:
//! `sat_polysi TXNS_PER_SESSION DIST DB INJECT LEVEL [SEED] [OUT.txt|-] [READ_PCT]` with
//! DIST `uniform|zipf|hotspot`, DB `si|ser`, INJECT `none|lost-update|
//! stale-read`, LEVEL `si|ss-si|ser|ss-ser` (20 sessions, 15 ops/txn, 10k
//! keys, READ_PCT % reads (default 50); see `tests/common/polysi_gen.rs`). Prints generation
//! and check times, polygraph counters and the verdict (a `valid` one only
//! after its witness replays); with OUT, also writes the text history (for
//! `harness check OUT --history-format text`).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use checker::budget::Budget;
use checker::sat::{Level, SatOutcome, check_register_stats, replay};
use checker::txn::Txns;
use std::time::Instant;
use store::import::{PeerFormat, read_peer_str};

#[path = "../tests/common/polysi_gen.rs"]
mod polysi_gen;
#[path = "common/sat_verdict.rs"]
mod sat_verdict;
use polysi_gen::{Db, Dist, Inject, Shape, generate};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let arg = |i: usize, d: &str| args.get(i).cloned().unwrap_or_else(|| d.to_string());
    let per: usize = arg(1, "100").parse().expect("TXNS_PER_SESSION");
    let dist = match arg(2, "uniform").as_str() {
        "zipf" => Dist::Zipf,
        "hotspot" => Dist::Hotspot,
        _ => Dist::Uniform,
    };
    let db = if arg(3, "si") == "ser" {
        Db::Ser
    } else {
        Db::Si
    };
    let inject = match arg(4, "none").as_str() {
        "lost-update" => Inject::LostUpdate,
        "stale-read" => Inject::StaleRead,
        _ => Inject::None,
    };
    let level = match arg(5, "si").as_str() {
        "ser" => Level::Serializable,
        "ss-ser" => Level::StrongSessionSerializable,
        "ss-si" => Level::StrongSessionSnapshotIsolation,
        _ => Level::SnapshotIsolation,
    };
    let seed: u64 = arg(6, "1").parse().expect("SEED");
    let t0 = Instant::now();
    let mut shape = Shape::polysi(per, dist);
    shape.read_pct = arg(8, "50").parse().expect("READ_PCT");
    let text = generate(shape, db, inject, seed);
    if let Some(out) = args.get(7).filter(|o| *o != "-") {
        std::fs::write(out, &text).expect("write the history");
    }
    let h = read_peer_str(&text, PeerFormat::Text).expect("parse");
    let gen_s = t0.elapsed().as_secs_f64();
    let t1 = Instant::now();
    let txns = Txns::new(&h);
    let budget = Budget::unlimited();
    let (out, stats) = check_register_stats(&txns, &h, level, &budget);
    let check_s = t1.elapsed().as_secs_f64();
    let verdict = match &out {
        SatOutcome::Valid { witness, starts } => {
            let t2 = Instant::now();
            let r = replay(&txns, &h, level, witness, starts);
            match r {
                Ok(()) => format!(
                    "valid (witness of {} txns replays, {:.3}s)",
                    witness.len(),
                    t2.elapsed().as_secs_f64()
                ),
                Err(e) => format!("WITNESS DOES NOT REPLAY: {e}"),
            }
        }
        other => sat_verdict::not_valid(other).unwrap_or_default(),
    };
    println!(
        "per-session={per} dist={dist:?} reads={}% db={db:?} inject={inject:?} level={level:?} seed={seed} \
         txns={} gen={gen_s:.2}s check={check_s:.3}s steps={} {stats:?} → {verdict}",
        shape.read_pct,
        txns.len(),
        budget.used()
    );
}
