//! Combinator tests: limit, time limit, phases barrier, stagger bounds,
//! each-thread, mix, final reads, determinism.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::run;
use store::{F, Key, MicroOp, ReadValue, Val};
use workloads::generator::{
    self, Ctx, Generator, Invocation, Next, Thread, each_thread, final_reads, limit, mix, once,
    phases, stagger, then_final_reads, time_limit,
};
use workloads::{WorkloadConfig, WorkloadKind, for_workload};

fn append_gen(seed: u64) -> Box<dyn Generator> {
    for_workload(WorkloadKind::ListAppend, &WorkloadConfig::default(), seed).unwrap()
}

fn read_of(k: i64) -> Invocation {
    Invocation {
        f: F::Txn,
        value: vec![MicroOp::Read(Key::int(k), ReadValue::Nil)],
    }
}

#[test]
fn limit_stops_after_n_ops() {
    let mut g = limit(7, append_gen(1));
    let ops = run(&mut g, 3, 10, 1000);
    assert_eq!(ops.len(), 7);
    assert_eq!(g.next(&Ctx::all_free(0, 3)), Next::Exhausted);
}

#[test]
fn time_limit_cuts_off_at_deadline() {
    // 1 thread, each op 100 ns: ops start at 0, 100, ..., 900 within 1000 ns.
    let mut g = time_limit(1000, append_gen(1));
    let ops = run(&mut g, 1, 100, 1000);
    assert_eq!(ops.len(), 10);
    assert!(ops.iter().all(|(_, at, _)| *at < 1000));
}

#[test]
fn time_limit_drops_ops_scheduled_after_deadline() {
    // Stagger with a mean gap far beyond the limit: at most a few ops fit.
    let mut g = time_limit(1_000, stagger(1_000_000, 5, append_gen(1)));
    let ops = run(&mut g, 4, 1, 1000);
    assert!(!ops.is_empty() && ops.len() < 4, "{} ops", ops.len());
    assert!(ops.iter().all(|(_, at, _)| *at < 1_000));
}

#[test]
fn stagger_gaps_are_within_zero_and_twice_dt() {
    let dt = 1_000u64;
    let mut g = stagger(dt, 42, append_gen(1));
    let ops = run(&mut g, 8, 1, 2000);
    assert_eq!(ops.len(), 2000);
    let times: Vec<u64> = ops.iter().map(|(_, at, _)| *at).collect();
    let gaps: Vec<u64> = times.windows(2).map(|w| w[1] - w[0]).collect();
    assert!(
        gaps.iter().all(|&g| g < 2 * dt),
        "a gap of {:?}",
        gaps.iter().max()
    );
    let mean = gaps.iter().sum::<u64>() as f64 / gaps.len() as f64;
    assert!(
        (mean - dt as f64).abs() < 0.1 * dt as f64,
        "mean gap {mean}"
    );
    // Uniform: both halves of [0, 2dt) are used.
    assert!(gaps.iter().any(|&g| g < dt / 4) && gaps.iter().any(|&g| g > 7 * dt / 4));
}

#[test]
fn rate_rejects_nonsense() {
    assert!(generator::rate(0.0, 1, append_gen(1)).is_err());
    assert!(generator::rate(f64::NAN, 1, append_gen(1)).is_err());
    let g = generator::rate(1000.0, 1, limit(100, append_gen(1)));
    let mut g = g.unwrap();
    let ops = run(&mut g, 4, 1, 1000);
    let span = ops.last().unwrap().1 - ops[0].1;
    // 100 ops at ~1000/s ≈ 0.1 s of logical time, give or take.
    assert!((50_000_000..150_000_000).contains(&span), "span {span}");
}

#[test]
fn phases_wait_for_all_threads_idle() {
    // Phase 1: 5 slow ops on 3 threads; phase 2 must start only after all finished.
    let mut g = phases(vec![
        Box::new(limit(5, append_gen(1))) as Box<dyn Generator>,
        Box::new(once(read_of(99))),
    ]);
    let op_ns = 100;
    let ops = run(&mut g, 3, op_ns, 100);
    assert_eq!(ops.len(), 6);
    let last_main_end = ops[..5].iter().map(|(_, at, _)| at + op_ns).max().unwrap();
    let (_, final_at, inv) = &ops[5];
    assert_eq!(inv, &read_of(99));
    assert!(*final_at >= last_main_end, "{final_at} < {last_main_end}");
}

#[test]
fn phases_report_pending_at_the_barrier() {
    let mut g = phases(vec![
        Box::new(limit(1, append_gen(1))) as Box<dyn Generator>,
        Box::new(once(read_of(1))),
    ]);
    let first = g.next(&Ctx::all_free(0, 2));
    assert!(matches!(first, Next::Op { .. }));
    // Thread 0 busy: the second phase may not start.
    let busy = Ctx {
        time_ns: 1,
        free_threads: vec![Thread(1)],
        thread_count: 2,
    };
    assert_eq!(g.next(&busy), Next::Pending);
    assert!(matches!(g.next(&Ctx::all_free(2, 2)), Next::Op { .. }));
    assert_eq!(g.next(&Ctx::all_free(3, 2)), Next::Exhausted);
}

#[test]
fn each_thread_gives_every_thread_its_own_copy() {
    let mut g = each_thread(|t: Thread| {
        generator::Sequence::new([read_of(t.0 as i64), read_of(100 + t.0 as i64)])
    });
    let ops = run(&mut g, 4, 10, 100);
    assert_eq!(ops.len(), 8);
    for t in 0..4 {
        let mine: Vec<&Invocation> = ops
            .iter()
            .filter(|(th, _, _)| th.0 == t)
            .map(|(_, _, i)| i)
            .collect();
        assert_eq!(mine, vec![&read_of(t as i64), &read_of(100 + t as i64)]);
    }
}

#[test]
fn mix_draws_from_all_and_ends_when_all_end() {
    let a = generator::Sequence::new((0..50).map(|_| read_of(1)));
    let b = generator::Sequence::new((0..50).map(|_| read_of(2)));
    let mut g = mix(vec![a, b], 9);
    let ops = run(&mut g, 2, 1, 1000);
    assert_eq!(ops.len(), 100);
    // Interleaved, not one after the other.
    let first_half_ones = ops[..50]
        .iter()
        .filter(|(_, _, i)| *i == read_of(1))
        .count();
    assert!((10..40).contains(&first_half_ones), "{first_half_ones}");
}

#[test]
fn final_reads_read_every_touched_key_once() {
    let mut g = then_final_reads(limit(200, append_gen(3)), 8);
    let ops = run(&mut g, 5, 10, 10_000);
    let main: Vec<_> = ops[..200].to_vec();
    let reads: Vec<_> = ops[200..].to_vec();
    let mut touched: Vec<Key> = main
        .iter()
        .flat_map(|(_, _, i)| i.value.iter().map(|m| m.key().clone()))
        .collect();
    touched.sort();
    touched.dedup();
    let mut read_keys: Vec<Key> = Vec::new();
    for (_, _, inv) in &reads {
        assert!(inv.value.len() <= 8);
        for m in &inv.value {
            assert!(matches!(m, MicroOp::Read(_, ReadValue::Nil)));
            read_keys.push(m.key().clone());
        }
    }
    assert_eq!(read_keys, touched);
    let main_end = main.iter().map(|(_, at, _)| at + 10).max().unwrap();
    assert!(reads.iter().all(|(_, at, _)| *at >= main_end));
    assert_eq!(
        final_reads(&touched, 8).remaining(),
        touched.len().div_ceil(8)
    );
}

#[test]
fn same_seed_same_ops_different_seed_different_ops() {
    let build = |seed| stagger(500, seed, limit(500, append_gen(seed)));
    let a = run(&mut build(11), 4, 30, 10_000);
    let b = run(&mut build(11), 4, 30, 10_000);
    let c = run(&mut build(12), 4, 30, 10_000);
    assert_eq!(a, b);
    assert_ne!(a, c);
}

#[test]
fn touched_keys_pass_through_combinators() {
    let mut g = time_limit(1_000_000, stagger(10, 1, limit(50, append_gen(5))));
    run(&mut g, 2, 10, 1000);
    let keys = g.touched_keys();
    assert!(!keys.is_empty());
    assert!(keys.windows(2).all(|w| w[0] < w[1]));
    let _ = Val::int(0);
}
