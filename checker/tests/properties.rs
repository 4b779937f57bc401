//! Property tests: histories of transactions executed one at a time (with
//! random concurrency and crashes → info) are free of anomalies under
//! strict-serializable; injecting an anomaly into such a history makes the
//! checker find it.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;
use checker::analysis::Workload;
use common::{all_cycles, run, types};
use proptest::prelude::*;
use store::{History, Key, MicroOp, Op, OpType, ReadValue, Val};

#[path = "common/register_gen.rs"]
mod register_gen;
use register_gen::Rng;

#[path = "common/arbitrary.rs"]
mod arbitrary;
use arbitrary::arbitrary_history;

#[derive(Clone, Copy, PartialEq)]
enum Phase {
    Idle,
    Invoked,
    Executed,
}

/// A strict-serializable execution: each transaction takes effect
/// atomically at a point between its invocation and completion. A crash
/// (info) happens before or after that point.
fn serial_history(
    seed: u64,
    n: usize,
    conc: u64,
    keys: i64,
    crash_pct: u64,
    list: bool,
) -> (Vec<Op>, Vec<Vec<i64>>) {
    let mut rng = Rng(seed);
    let mut db: Vec<Vec<i64>> = vec![Vec::new(); keys as usize];
    let mut next_val: Vec<i64> = vec![1; keys as usize];
    let mut ops: Vec<Op> = Vec::new();
    let mut phase = vec![Phase::Idle; conc as usize];
    let mut process: Vec<u64> = (0..conc).collect();
    let mut invoked_mops: Vec<Vec<MicroOp>> = vec![Vec::new(); conc as usize];
    let mut done_mops: Vec<Vec<MicroOp>> = vec![Vec::new(); conc as usize];
    let (mut started, mut finished) = (0usize, 0usize);
    while finished < n {
        let c = rng.below_u64(conc) as usize;
        match phase[c] {
            Phase::Idle => {
                if started == n {
                    continue;
                }
                let mut mops = Vec::new();
                for _ in 0..1 + rng.below_u64(3) {
                    let k = rng.below_u64(keys as u64) as i64;
                    if rng.below_u64(2) == 0 {
                        mops.push(MicroOp::Read(Key::int(k), ReadValue::Nil));
                    } else {
                        let v = next_val[k as usize];
                        next_val[k as usize] += 1;
                        mops.push(if list {
                            MicroOp::Append(Key::int(k), Val::int(v))
                        } else {
                            MicroOp::Write(Key::int(k), Val::int(v))
                        });
                    }
                }
                ops.push(Op::txn(
                    ops.len() as u64,
                    OpType::Invoke,
                    process[c],
                    mops.clone(),
                ));
                invoked_mops[c] = mops;
                phase[c] = Phase::Invoked;
                started += 1;
            }
            Phase::Invoked if rng.below_u64(100) < crash_pct / 2 => {
                // Crash before taking effect.
                ops.push(Op::txn(
                    ops.len() as u64,
                    OpType::Info,
                    process[c],
                    invoked_mops[c].clone(),
                ));
                process[c] += conc;
                phase[c] = Phase::Idle;
                finished += 1;
            }
            Phase::Invoked => {
                let mut out = Vec::new();
                for m in &invoked_mops[c] {
                    match m {
                        MicroOp::Read(Key(store::Atom::Int(k)), _) => {
                            let cur = &db[*k as usize];
                            let rv = if list {
                                ReadValue::List(cur.iter().map(|v| Val::int(*v)).collect())
                            } else {
                                cur.last()
                                    .map_or(ReadValue::Nil, |v| ReadValue::Scalar(Val::int(*v)))
                            };
                            out.push(MicroOp::Read(Key::int(*k), rv));
                        }
                        MicroOp::Append(Key(store::Atom::Int(k)), Val(store::Atom::Int(v)))
                        | MicroOp::Write(Key(store::Atom::Int(k)), Val(store::Atom::Int(v))) => {
                            db[*k as usize].push(*v);
                            out.push(m.clone());
                        }
                        other => out.push(other.clone()),
                    }
                }
                done_mops[c] = out;
                phase[c] = Phase::Executed;
            }
            Phase::Executed => {
                if rng.below_u64(100) < crash_pct / 2 {
                    ops.push(Op::txn(
                        ops.len() as u64,
                        OpType::Info,
                        process[c],
                        invoked_mops[c].clone(),
                    ));
                    process[c] += conc;
                } else {
                    ops.push(Op::txn(
                        ops.len() as u64,
                        OpType::Ok,
                        process[c],
                        done_mops[c].clone(),
                    ));
                }
                phase[c] = Phase::Idle;
                finished += 1;
            }
        }
    }
    (ops, db)
}

fn analyze_ops(ops: Vec<Op>, list: bool) -> Vec<&'static str> {
    let h = History::new(ops).unwrap();
    let w = if list {
        Workload::ListAppend
    } else {
        Workload::RwRegister
    };
    types(&run(w, &h, all_cycles()))
}

fn push(ops: &mut Vec<Op>, t: OpType, p: u64, mops: Vec<MicroOp>) {
    let inv: Vec<MicroOp> = mops
        .iter()
        .map(|m| match m {
            MicroOp::Read(k, _) => MicroOp::Read(k.clone(), ReadValue::Nil),
            o => o.clone(),
        })
        .collect();
    ops.push(Op::txn(ops.len() as u64, OpType::Invoke, p, inv));
    ops.push(Op::txn(ops.len() as u64, t, p, mops));
}

fn list(v: &[i64]) -> ReadValue {
    ReadValue::List(v.iter().map(|x| Val::int(*x)).collect())
}

const P: u64 = 1000; // processes for injected txns (never used by the base history)

/// Appends transactions that exhibit `kind` to a list-append history whose
/// final state is `db`. Fresh keys and values are ≥ 1000.
fn inject(ops: &mut Vec<Op>, db: &[Vec<i64>], kind: &str) {
    let k = Key::int(0);
    let cur = db[0].clone();
    let x = 1000;
    let fresh = |i: i64| Key::int(100 + i);
    let (a, r) = (
        |k: &Key, v: i64| MicroOp::Append(k.clone(), Val::int(v)),
        |k: &Key, v: &[i64]| MicroOp::Read(k.clone(), list(v)),
    );
    let with = |extra: &[i64]| {
        let mut c = cur.clone();
        c.extend(extra);
        c
    };
    match kind {
        "G1a" => {
            push(ops, OpType::Fail, P, vec![a(&k, x)]);
            push(ops, OpType::Ok, P + 1, vec![r(&k, &with(&[x]))]);
        }
        "G1b" => {
            push(ops, OpType::Ok, P, vec![a(&k, x), a(&k, x + 1)]);
            push(ops, OpType::Ok, P + 1, vec![r(&k, &with(&[x]))]);
        }
        "internal" => push(ops, OpType::Ok, P, vec![a(&k, x), r(&k, &cur)]),
        "future-read" => push(ops, OpType::Ok, P, vec![r(&k, &with(&[x])), a(&k, x)]),
        "garbage-read" => push(ops, OpType::Ok, P, vec![r(&k, &with(&[x]))]),
        "duplicate-elements" => {
            push(ops, OpType::Ok, P, vec![a(&k, x)]);
            push(ops, OpType::Ok, P + 1, vec![r(&k, &with(&[x, x]))]);
        }
        "incompatible-order" => {
            push(ops, OpType::Ok, P, vec![a(&k, x)]);
            push(ops, OpType::Ok, P + 1, vec![a(&k, x + 1)]);
            push(ops, OpType::Ok, P + 2, vec![r(&k, &with(&[x, x + 1]))]);
            push(ops, OpType::Ok, P + 3, vec![r(&k, &with(&[x + 1, x]))]);
        }
        "lost-update" | "G2-item" => {
            let (kx, ky) = (fresh(0), fresh(1));
            let (t1, t2) = if kind == "lost-update" {
                (
                    vec![r(&kx, &[]), a(&kx, x)],
                    vec![r(&kx, &[]), a(&kx, x + 1)],
                )
            } else {
                (
                    vec![r(&kx, &[]), a(&ky, x)],
                    vec![r(&ky, &[]), a(&kx, x + 1)],
                )
            };
            let n = ops.len() as u64;
            let inv = |m: &Vec<MicroOp>| -> Vec<MicroOp> {
                m.iter()
                    .map(|m| match m {
                        MicroOp::Read(k, _) => MicroOp::Read(k.clone(), ReadValue::Nil),
                        o => o.clone(),
                    })
                    .collect()
            };
            ops.push(Op::txn(n, OpType::Invoke, P, inv(&t1)));
            ops.push(Op::txn(n + 1, OpType::Invoke, P + 1, inv(&t2)));
            ops.push(Op::txn(n + 2, OpType::Ok, P, t1));
            ops.push(Op::txn(n + 3, OpType::Ok, P + 1, t2));
            let last = if kind == "lost-update" {
                vec![r(&kx, &[x, x + 1])]
            } else {
                vec![r(&kx, &[x + 1]), r(&ky, &[x])]
            };
            push(ops, OpType::Ok, P + 2, last);
        }
        "G-single-item-realtime" => {
            // A stale read after the append completed.
            push(ops, OpType::Ok, P, vec![a(&k, x)]);
            push(ops, OpType::Ok, P + 1, vec![r(&k, &cur)]);
            push(ops, OpType::Ok, P + 2, vec![r(&k, &with(&[x]))]);
        }
        "G1c" => {
            // Each of two concurrent txns observes the other's append.
            let (kx, ky) = (fresh(2), fresh(3));
            let n = ops.len() as u64;
            ops.push(Op::txn(
                n,
                OpType::Invoke,
                P,
                vec![a(&kx, x), MicroOp::Read(ky.clone(), ReadValue::Nil)],
            ));
            ops.push(Op::txn(
                n + 1,
                OpType::Invoke,
                P + 1,
                vec![a(&ky, x), MicroOp::Read(kx.clone(), ReadValue::Nil)],
            ));
            ops.push(Op::txn(n + 2, OpType::Ok, P, vec![a(&kx, x), r(&ky, &[x])]));
            ops.push(Op::txn(
                n + 3,
                OpType::Ok,
                P + 1,
                vec![a(&ky, x), r(&kx, &[x])],
            ));
        }
        "G0" => {
            let (kx, ky) = (fresh(4), fresh(5));
            let n = ops.len() as u64;
            ops.push(Op::txn(n, OpType::Invoke, P, vec![a(&kx, x), a(&ky, x)]));
            ops.push(Op::txn(
                n + 1,
                OpType::Invoke,
                P + 1,
                vec![a(&kx, x + 1), a(&ky, x + 1)],
            ));
            ops.push(Op::txn(n + 2, OpType::Ok, P, vec![a(&kx, x), a(&ky, x)]));
            ops.push(Op::txn(
                n + 3,
                OpType::Ok,
                P + 1,
                vec![a(&kx, x + 1), a(&ky, x + 1)],
            ));
            push(
                ops,
                OpType::Ok,
                P + 2,
                vec![r(&kx, &[x, x + 1]), r(&ky, &[x + 1, x])],
            );
        }
        other => panic!("unknown injection {other}"),
    }
}

const KINDS: &[&str] = &[
    "G1a",
    "G1b",
    "internal",
    "future-read",
    "garbage-read",
    "duplicate-elements",
    "incompatible-order",
    "lost-update",
    "G2-item",
    "G-single-item-realtime",
    "G1c",
    "G0",
];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn serial_list_append_histories_are_valid(seed in any::<u64>(), n in 1usize..60, conc in 1u64..6, keys in 1i64..5, crash in 0u64..30) {
        let (ops, _) = serial_history(seed, n, conc, keys, crash, true);
        let found = analyze_ops(ops, true);
        prop_assert!(found.is_empty(), "found {found:?}");
    }

    #[test]
    fn serial_rw_register_histories_are_valid(seed in any::<u64>(), n in 1usize..60, conc in 1u64..6, keys in 1i64..5, crash in 0u64..30) {
        let (ops, _) = serial_history(seed, n, conc, keys, crash, false);
        let found = analyze_ops(ops, false);
        prop_assert!(found.is_empty(), "found {found:?}");
    }

    #[test]
    fn injected_anomalies_are_found(seed in any::<u64>(), n in 1usize..40, conc in 1u64..5, keys in 1i64..4, crash in 0u64..20, kind in 0usize..KINDS.len()) {
        let (mut ops, db) = serial_history(seed, n, conc, keys, crash, true);
        let kind = KINDS[kind];
        inject(&mut ops, &db, kind);
        let found = analyze_ops(ops, true);
        prop_assert!(found.contains(&kind), "{kind} not in {found:?}");
    }
}

#[test]
fn info_only_history_is_clean() {
    // Only indeterminate transactions, never observed: nothing to report but
    // an empty graph (no G1a, no cycles through them).
    let mut ops = Vec::new();
    for p in 0..20u64 {
        let k = Key::int((p % 3) as i64);
        ops.push(Op::txn(
            ops.len() as u64,
            OpType::Invoke,
            p,
            vec![
                MicroOp::Append(k.clone(), Val::int(p as i64)),
                MicroOp::Read(k.clone(), ReadValue::Nil),
            ],
        ));
    }
    for p in 0..20u64 {
        let k = Key::int((p % 3) as i64);
        ops.push(Op::txn(
            ops.len() as u64,
            OpType::Info,
            p,
            vec![
                MicroOp::Append(k.clone(), Val::int(p as i64)),
                MicroOp::Read(k, ReadValue::Nil),
            ],
        ));
    }
    assert_eq!(analyze_ops(ops, true), Vec::<&str>::new());
}

#[test]
fn million_transaction_cycle_is_found_without_stack_overflow() {
    // T_i appends i to key i and reads key i-1 seeing T_{i-1}'s append:
    // a wr chain; T_0 reads key n-1 seeing T_{n-1}'s append: one G1c cycle
    // through 1M transactions, all in one SCC.
    let n: i64 = if cfg!(debug_assertions) {
        200_000
    } else {
        1_000_000
    };
    let mut ops = Vec::with_capacity(2 * n as usize);
    for i in 0..n {
        let prev = (i + n - 1) % n;
        let mops = vec![
            MicroOp::Append(Key::int(i), Val::int(1)),
            MicroOp::Read(Key::int(prev), ReadValue::List(vec![Val::int(1)].into())),
        ];
        ops.push(Op::txn(ops.len() as u64, OpType::Ok, i as u64, mops));
    }
    let h = History::new(ops).unwrap();
    let search = [checker::anomaly::AnomalyType::G1c].into_iter().collect();
    let found = run(Workload::ListAppend, &h, search);
    let g1c = &found[&checker::anomaly::AnomalyType::G1c];
    assert_eq!(g1c.len(), 1);
    let checker::explain::Evidence::Cycle { cycle, .. } = &g1c[0].evidence else {
        panic!()
    };
    assert_eq!(cycle.len() as i64, n + 1);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn arbitrary_histories_do_not_panic(seed in any::<u64>(), n in 0usize..40) {
        if let Some(h) = arbitrary_history(seed, n) {
            for w in [Workload::ListAppend, Workload::RwRegister] {
                for a in run(w, &h, all_cycles()).values().flatten() {
                    let _ = checker::explain::render_text(a, &h);
                    let _ = checker::explain::render_dot(a, &h);
                    let _ = serde_json::to_string(a);
                }
            }
        }
    }
}
