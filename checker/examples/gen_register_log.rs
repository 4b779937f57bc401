//! Single-key register histories for the linearizability benchmarks against
//! Porcupine, in the Jepsen log format of Porcupine's etcd test files
//! (`INFO  jepsen.util - P<TAB>:type<TAB>:f<TAB>value`), which both
//! `harness check` and Porcupine's `parseJepsenLog` read.
//!
//! A simulated atomic register: each of PROCS processes runs OPS / PROCS
//! ops one after another; an op (half reads, 30 % writes, 20 % cas, values
//! 0–4) takes effect at a random point up to 0.3 time units after its
//! invocation and completes up to 0.3 after that; the next starts up to 1
//! unit later. Effects are applied in time order, so every history is
//! linearizable (a failed cas is `:fail`, as etcd's). Deterministic in SEED.
//!
//! Usage: `gen_register_log OPS PROCS SEED > reg.log`

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::Write as _;

#[path = "../tests/common/register_gen.rs"]
mod register_gen;

use register_gen::Rng;

#[derive(Clone, Copy)]
enum Kind {
    Read,
    Write(i64),
    Cas(i64, i64),
}

struct Op {
    invoke: f64,
    effect: f64,
    complete: f64,
    process: usize,
    kind: Kind,
    /// A read's value (`None`: nil), a cas' success.
    read: Option<i64>,
    ok: bool,
}

fn main() {
    let args: Vec<u64> = std::env::args()
        .skip(1)
        .map(|a| a.parse().expect("usage: gen_register_log OPS PROCS SEED"))
        .collect();
    let [n, procs, seed] = args[..] else {
        panic!("usage: gen_register_log OPS PROCS SEED");
    };
    let mut rng = Rng(seed);
    let mut ops = Vec::with_capacity(n as usize);
    for process in 0..procs as usize {
        let mut t = rng.unit();
        for _ in 0..n / procs {
            let effect = t + rng.unit() * 0.3;
            let complete = effect + rng.unit() * 0.3;
            let r = rng.unit();
            let kind = if r < 0.5 {
                Kind::Read
            } else if r < 0.8 {
                Kind::Write(rng.below(5) as i64)
            } else {
                Kind::Cas(rng.below(5) as i64, rng.below(5) as i64)
            };
            ops.push(Op {
                invoke: t,
                effect,
                complete,
                process,
                kind,
                read: None,
                ok: true,
            });
            t = complete + rng.unit();
        }
    }
    let mut by_effect: Vec<usize> = (0..ops.len()).collect();
    by_effect.sort_by(|&a, &b| ops[a].effect.total_cmp(&ops[b].effect));
    let mut state = None;
    for i in by_effect {
        let op = &mut ops[i];
        match op.kind {
            Kind::Read => op.read = state,
            Kind::Write(v) => state = Some(v),
            Kind::Cas(from, to) => {
                op.ok = state == Some(from);
                if op.ok {
                    state = Some(to);
                }
            }
        }
    }
    // (time, 0 = invoke / 1 = complete, op)
    let mut events: Vec<(f64, u8, usize)> = Vec::with_capacity(2 * ops.len());
    for (i, op) in ops.iter().enumerate() {
        events.push((op.invoke, 0, i));
        events.push((op.complete, 1, i));
    }
    events.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    for (_, what, i) in events {
        let op = &ops[i];
        let p = op.process;
        let line = match (what, op.kind) {
            (0, Kind::Read) => format!("{p}\t:invoke\t:read\tnil"),
            (0, Kind::Write(v)) => format!("{p}\t:invoke\t:write\t{v}"),
            (0, Kind::Cas(a, b)) => format!("{p}\t:invoke\t:cas\t[{a} {b}]"),
            (_, Kind::Read) => match op.read {
                Some(v) => format!("{p}\t:ok\t:read\t{v}"),
                None => format!("{p}\t:ok\t:read\tnil"),
            },
            (_, Kind::Write(v)) => format!("{p}\t:ok\t:write\t{v}"),
            (_, Kind::Cas(a, b)) => {
                let t = if op.ok { "ok" } else { "fail" };
                format!("{p}\t:{t}\t:cas\t[{a} {b}]")
            }
        };
        writeln!(out, "INFO  jepsen.util - {line}").unwrap();
    }
    out.flush().unwrap();
}
