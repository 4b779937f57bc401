//! A generator of register histories from a simulated snapshot-isolation
//! or serial database (Elle's register workload shape: 10 active keys, a key
//! retired after 32 writes, 1–4 micro-ops, half reads, 1% `info`). Shared by
//! `tests/sat.rs`, `examples/sat_bench.rs` and (its `Rng`)
//! `examples/gen_register_log.rs`.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use store::{History, Key, MicroOp, Op, OpType, ReadValue, Val};

/// SplitMix64: the seeded generator of the checker's test histories.
pub struct Rng(pub u64);

impl Rng {
    /// The next 64 random bits.
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in `0..n`.
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    /// True with probability `pct`%.
    pub fn chance(&mut self, pct: usize) -> bool {
        self.below(100) < pct
    }
    /// Uniform in `0..n` (`0` for `n = 0`).
    pub fn below_u64(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
    /// True with probability `p`.
    pub fn chance_f64(&mut self, p: f64) -> bool {
        self.unit() < p
    }
    /// Uniform in `[0, 1)`.
    pub fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

struct Open {
    mops: Vec<(u64, bool)>,
    snapshot: u64,
}

/// A register history of `ntx` transactions over `nsess` sessions from a
/// snapshot-isolation (`si`) or atomic-at-commit database.
pub fn generate(ntx: usize, nsess: usize, si: bool, seed: u64) -> History {
    generate_info(ntx, nsess, si, seed, 1)
}

/// As [`generate`] with `info_pct` % of transactions ending `info` (half
/// of them committed). Formats that hold committed transactions only
/// (PolySI's text) want 0: they write an `info` one as committed.
pub fn generate_info(ntx: usize, nsess: usize, si: bool, seed: u64, info_pct: usize) -> History {
    let mut rng = Rng(seed);
    let mut active: Vec<u64> = (0..10).collect();
    let mut next_key = 10u64;
    // Per key: committed versions (commit ts, value), and writes so far.
    let mut versions: Vec<Vec<(u64, i64)>> = Vec::new();
    let mut writes: Vec<usize> = Vec::new();
    let mut next_val = 1i64;
    let mut ts = 0u64;
    let mut ops: Vec<Op> = Vec::new();
    let mut open: Vec<Option<Open>> = (0..nsess).map(|_| None).collect();
    let (mut started, mut done) = (0, 0);
    let ensure = |v: &mut Vec<Vec<(u64, i64)>>, w: &mut Vec<usize>, k: u64| {
        while v.len() <= k as usize {
            v.push(Vec::new());
            w.push(0);
        }
    };
    while done < ntx {
        let s = rng.below(nsess);
        match open[s].take() {
            None if started < ntx => {
                started += 1;
                let n = 1 + rng.below(4);
                let mut mops = Vec::new();
                for _ in 0..n {
                    let k = active[rng.below(active.len())];
                    mops.push((k, rng.below(2) == 0));
                }
                let inv: Vec<MicroOp> = mops
                    .iter()
                    .map(|&(k, w)| {
                        if w {
                            MicroOp::Write(Key::int(k as i64), Val::int(0))
                        } else {
                            MicroOp::Read(Key::int(k as i64), ReadValue::Nil)
                        }
                    })
                    .collect();
                ops.push(Op::txn(ops.len() as u64, OpType::Invoke, s as u64, inv));
                open[s] = Some(Open { mops, snapshot: ts });
            }
            None => {}
            Some(o) => {
                done += 1;
                // SI reads at the snapshot, SER at commit (atomic).
                let snap = if si { o.snapshot } else { ts };
                let mut local: Vec<(u64, i64)> = Vec::new();
                let mut mops = Vec::new();
                let mut conflict = false;
                for &(k, w) in &o.mops {
                    ensure(&mut versions, &mut writes, k);
                    if w {
                        let v = next_val;
                        next_val += 1;
                        local.retain(|x| x.0 != k);
                        local.push((k, v));
                        mops.push(MicroOp::Write(Key::int(k as i64), Val::int(v)));
                        if versions[k as usize].last().is_some_and(|x| x.0 > snap) {
                            conflict = true;
                        }
                    } else {
                        let own = local.iter().rev().find(|x| x.0 == k).map(|x| x.1);
                        let seen = own.or_else(|| {
                            versions[k as usize]
                                .iter()
                                .rev()
                                .find(|x| x.0 <= snap)
                                .map(|x| x.1)
                        });
                        mops.push(MicroOp::Read(
                            Key::int(k as i64),
                            seen.map_or(ReadValue::Nil, |v| ReadValue::Scalar(Val::int(v))),
                        ));
                    }
                }
                let roll = rng.below(100);
                let status = if conflict {
                    OpType::Fail
                } else if roll < info_pct {
                    OpType::Info
                } else {
                    OpType::Ok
                };
                if status == OpType::Ok || (status == OpType::Info && rng.below(2) == 0) {
                    ts += 1;
                    for &(k, v) in &local {
                        versions[k as usize].push((ts, v));
                        writes[k as usize] += 1;
                        if writes[k as usize] >= 32
                            && let Some(p) = active.iter().position(|&a| a == k)
                        {
                            active[p] = next_key;
                            next_key += 1;
                        }
                    }
                }
                let comp = if status == OpType::Ok {
                    mops
                } else {
                    mops.into_iter()
                        .map(|m| match m {
                            MicroOp::Read(k, _) => MicroOp::Read(k, ReadValue::Nil),
                            m => m,
                        })
                        .collect()
                };
                // The invocation carries the same writes (values now known).
                if let Some(inv) = ops.iter_mut().rev().find(|x| {
                    x.op_type == OpType::Invoke
                        && x.process == Some(store::Process::Client(store::ProcessId(s as u64)))
                }) {
                    inv.value = store::OpValue::Txn(
                        comp.iter()
                            .map(|m| match m {
                                MicroOp::Read(k, _) => MicroOp::Read(k.clone(), ReadValue::Nil),
                                m => m.clone(),
                            })
                            .collect(),
                    );
                }
                ops.push(Op::txn(ops.len() as u64, status, s as u64, comp));
            }
        }
    }
    History::new(ops).expect("well-formed")
}
