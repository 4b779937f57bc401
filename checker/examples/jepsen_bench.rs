//! Seeded 1M-operation histories of the bank and set-full workloads, checked
//! by `checker::workloads` (BENCHMARKS.md). Usage:
//! `cargo run --release -p checker --example jepsen_bench -- bank|set-full [ops]`.
//! Prints the time to build the history and to check it.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use checker::workloads::{Checker, bank, check, set_full};
use store::{
    F, HistoryBuilder, Key, MicroOp, Op, OpIndex, OpType, OpValue, Process, ProcessId, ReadValue,
    Val,
};

struct Rng(u64);
impl Rng {
    fn next(&mut self, m: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % m
    }
}

fn op(i: u64, t: OpType, p: u64, f: F, mops: Vec<MicroOp>) -> Op {
    Op {
        index: OpIndex(i),
        time_ns: Some(i as i64 * 10_000),
        op_type: t,
        process: Some(Process::Client(ProcessId(p))),
        f: Some(f),
        value: OpValue::Txn(mops),
        error: None,
        extra: store::Extra::new(),
    }
}

/// 10 processes; each op is invoked and completed around others' (the
/// completion of process p's op follows the invocation of p+1's).
fn bank_history(ops: u64) -> store::History {
    let mut rng = Rng(0x9e37_79b9);
    let mut bal = [12i64; 8];
    bal[0] = 16;
    let mut b = HistoryBuilder::new();
    let mut i = 0;
    while i < ops {
        let p = (i / 2) % 10;
        if rng.next(2) == 0 {
            let reads: Vec<MicroOp> = (0..8)
                .map(|a| MicroOp::Read(Key::int(a), ReadValue::Nil))
                .collect();
            b.push(op(i, OpType::Invoke, p, F::Read, reads));
            let done = (0..8)
                .map(|a| MicroOp::Read(Key::int(a), ReadValue::Scalar(Val::int(bal[a as usize]))))
                .collect();
            b.push(op(i + 1, OpType::Ok, p, F::Read, done));
        } else {
            let (from, to, amt) = (
                rng.next(8) as usize,
                rng.next(8) as usize,
                1 + rng.next(5) as i64,
            );
            let t = vec![
                MicroOp::Write(Key::int(from as i64), Val::int(-amt)),
                MicroOp::Write(Key::int(to as i64), Val::int(amt)),
            ];
            b.push(op(i, OpType::Invoke, p, F::Transfer, t.clone()));
            let ok = from != to && bal[from] >= amt;
            if ok {
                bal[from] -= amt;
                bal[to] += amt;
            }
            b.push(op(
                i + 1,
                if ok { OpType::Ok } else { OpType::Fail },
                p,
                F::Transfer,
                t,
            ));
        }
        i += 2;
    }
    b.finish().unwrap()
}

/// Adds of 0, 1, 2, … and, one op in 4, a read of the last 64 elements
/// added (a window keeps the history's size linear), then one final read
/// of every element: valid, every element stable (and stale: later
/// windows missed it).
fn set_full_history(ops: u64) -> store::History {
    let mut rng = Rng(0x5eed);
    let mut b = HistoryBuilder::new();
    let (mut i, mut next) = (0, 0i64);
    while i < ops {
        let p = (i / 2) % 10;
        if rng.next(4) == 0 {
            b.push(op(
                i,
                OpType::Invoke,
                p,
                F::Read,
                vec![MicroOp::Read(Key::int(0), ReadValue::Nil)],
            ));
            let els: Vec<Val> = ((next - 64).max(0)..next).map(Val::int).collect();
            b.push(op(
                i + 1,
                OpType::Ok,
                p,
                F::Read,
                vec![MicroOp::Read(Key::int(0), ReadValue::List(els.into()))],
            ));
        } else {
            let a = vec![MicroOp::Append(Key::int(0), Val::int(next))];
            b.push(op(i, OpType::Invoke, p, F::Add, a.clone()));
            b.push(op(i + 1, OpType::Ok, p, F::Add, a));
            next += 1;
        }
        i += 2;
    }
    // One final read of everything: every element ends stable.
    let all = vec![MicroOp::Read(
        Key::int(0),
        ReadValue::List((0..next).map(Val::int).collect::<Vec<_>>().into()),
    )];
    b.push(op(
        i,
        OpType::Invoke,
        0,
        F::Read,
        vec![MicroOp::Read(Key::int(0), ReadValue::Nil)],
    ));
    b.push(op(i + 1, OpType::Ok, 0, F::Read, all));
    b.finish().unwrap()
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let which = args.get(1).map_or("bank", String::as_str);
    let ops: u64 = args
        .get(2)
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000_000);
    let t = std::time::Instant::now();
    let (h, c) = match which {
        "set-full" => (
            set_full_history(ops),
            Checker::SetFull(set_full::Options::default()),
        ),
        _ => (bank_history(ops), Checker::Bank(bank::Options::default())),
    };
    let built = t.elapsed();
    let t = std::time::Instant::now();
    let r = check(&h, &c);
    let checked = t.elapsed();
    println!(
        "{which}: {} ops, {} micro-ops; built in {:.2} s, checked in {:.3} s: valid? {} {:?}",
        h.len(),
        h.mop_count(),
        built.as_secs_f64(),
        checked.as_secs_f64(),
        r.valid,
        r.kinds()
    );
    if std::env::var_os("SHOW").is_some() {
        println!("{}", r.render_text(2));
    }
}
