//! Benchmark of the history readers and writers (numbers in BENCHMARKS.md).
//!
//! ```text
//! cargo run --release -p store --example bench_formats -- gen  OUT.jsonl [N_OPS]
//! cargo run --release -p store --example bench_formats -- read FILE      # into Vec<Op>
//! cargo run --release -p store --example bench_formats -- stream FILE    # one op at a time
//! cargo run --release -p store --example bench_formats -- load FILE      # into a History
//! cargo run --release -p store --example bench_formats -- convert IN OUT # read all, write
//! ```
//! Run each under `/usr/bin/time -v` for peak RSS. `gen` makes a
//! deterministic list-append history: 10 processes, 1–4 micro-ops per
//! transaction, 10 active keys each retired after 32 appends (Jepsen's
//! defaults), every invocation completed `ok` right after it.

// A benchmark tool: failing loudly is what we want.
#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic, missing_docs)]

use std::collections::HashMap;
use std::path::Path;
use std::time::Instant;
use store::format::{self, Format, OpReader};
use store::{Key, MicroOp, Op, OpIndex, OpType, ReadValue, Val};

struct Lcg(u64);
impl Lcg {
    fn next(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) % n
    }
}

fn generate(n_ops: u64) -> Vec<Op> {
    let mut rng = Lcg(42);
    let mut lists: HashMap<i64, Vec<i64>> = HashMap::new();
    let mut active: Vec<i64> = (0..10).collect();
    let mut next_key = 10;
    let mut ops = Vec::with_capacity(n_ops as usize);
    let mut t: i64 = 0;
    while (ops.len() as u64) < n_ops {
        let p = (ops.len() as u64 / 2) % 10;
        let n = 1 + rng.next(4);
        let mut inv = Vec::new();
        let mut done = Vec::new();
        for _ in 0..n {
            let slot = rng.next(10) as usize;
            let k = active[slot];
            if rng.next(2) == 0 {
                let l = lists.entry(k).or_default();
                let v = l.len() as i64 + 1;
                l.push(v);
                inv.push(MicroOp::Append(Key::int(k), Val::int(v)));
                done.push(MicroOp::Append(Key::int(k), Val::int(v)));
                if l.len() >= 32 {
                    active[slot] = next_key;
                    next_key += 1;
                }
            } else {
                let l = lists.get(&k).cloned().unwrap_or_default();
                inv.push(MicroOp::Read(Key::int(k), ReadValue::Nil));
                done.push(MicroOp::Read(
                    Key::int(k),
                    ReadValue::List(l.into_iter().map(Val::int).collect()),
                ));
            }
        }
        t += 1_000 + rng.next(50_000) as i64;
        let mut a = Op::txn(ops.len() as u64, OpType::Invoke, p, inv);
        a.time_ns = Some(t);
        ops.push(a);
        t += 1_000 + rng.next(2_000_000) as i64;
        let mut b = Op::txn(ops.len() as u64, OpType::Ok, p, done);
        b.time_ns = Some(t);
        b.index = OpIndex(ops.len() as u64);
        ops.push(b);
    }
    ops
}

fn mb(path: &Path) -> f64 {
    std::fs::metadata(path).unwrap().len() as f64 / 1e6
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("gen") => {
            let out = Path::new(&args[1]);
            let n: u64 = args.get(2).map_or(1_000_000, |s| s.parse().unwrap());
            let ops = generate(n);
            let fmt = Format::from_extension(out).unwrap_or(Format::JsonLines);
            let t = Instant::now();
            format::write_path(out, &ops, fmt).unwrap();
            let s = t.elapsed().as_secs_f64();
            println!(
                "gen: {} ops, write {fmt}: {:.1} MB in {s:.3} s = {:.0} MB/s",
                ops.len(),
                mb(out),
                mb(out) / s
            );
        }
        Some("read") => {
            let p = Path::new(&args[1]);
            let t = Instant::now();
            let out = format::read_path(p).unwrap();
            let s = t.elapsed().as_secs_f64();
            println!(
                "read {}: {} ops, {:.1} MB in {s:.3} s = {:.0} MB/s",
                out.format,
                out.ops.len(),
                mb(p),
                mb(p) / s
            );
        }
        Some("load") => {
            // The whole load `harness check` does (parse on every core +
            // pairing), alone: `/usr/bin/time` of this is the load's CPU.
            let p = Path::new(&args[1]);
            let t = Instant::now();
            let (h, _) = format::load_history(p).unwrap();
            let s = t.elapsed().as_secs_f64();
            println!(
                "load: {} ops, {} micro-ops in {s:.3} s",
                h.len(),
                h.mop_count()
            );
        }
        Some("stream") => {
            let p = Path::new(&args[1]);
            let t = Instant::now();
            let r = OpReader::open(p).unwrap();
            let fmt = r.format();
            let mut n = 0u64;
            let mut mops = 0usize;
            for op in r {
                let op = op.unwrap();
                n += 1;
                mops += op.value.txn().map_or(0, <[MicroOp]>::len);
            }
            let s = t.elapsed().as_secs_f64();
            println!(
                "stream {fmt}: {n} ops ({mops} micro-ops), {:.1} MB in {s:.3} s = {:.0} MB/s",
                mb(p),
                mb(p) / s
            );
        }
        Some("convert") => {
            let (i, o) = (Path::new(&args[1]), Path::new(&args[2]));
            let t = Instant::now();
            let out = format::read_path(i).unwrap();
            let r = t.elapsed().as_secs_f64();
            let fmt = Format::from_extension(o).unwrap();
            let t = Instant::now();
            format::write_path(o, &out.ops, fmt).unwrap();
            let w = t.elapsed().as_secs_f64();
            println!(
                "convert: read {} {:.1} MB in {r:.3} s ({:.0} MB/s); write {fmt} {:.1} MB in {w:.3} s ({:.0} MB/s)",
                out.format,
                mb(i),
                mb(i) / r,
                mb(o),
                mb(o) / w
            );
        }
        Some("sizes") => {
            use std::mem::size_of;
            println!(
                "Op {} B, MicroOp {} B, Val {} B, Data {} B",
                size_of::<Op>(),
                size_of::<MicroOp>(),
                size_of::<Val>(),
                size_of::<store::Data>()
            );
        }
        _ => {
            eprintln!(
                "usage: bench_formats gen OUT [N] | read FILE | stream FILE | convert IN OUT"
            );
            std::process::exit(3);
        }
    }
}
