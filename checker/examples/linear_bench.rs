//! The linearizability check of history files (Porcupine's etcd logs and kv
//! histories, or any register / kv history), outside the `harness` binary:
//! with the system allocator, so heap profilers (heaptrack) see every
//! allocation. Usage:
//! `cargo run --release -p checker --example linear_bench -- FILE...`.
//! Prints per file: verdict, ops, keys, search steps, cached
//! configurations, model states and check time (parse excluded).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use checker::Budget;
use checker::linear::{LinearOptions, check_kv, check_register};

fn main() {
    for path in std::env::args().skip(1) {
        let loaded = store::import::load(std::path::Path::new(&path), None).expect("load");
        let h = &loaded.history;
        let kv = (0..h.len()).any(|p| h.f(p).is_some_and(|f| f.as_str() == "get"));
        let opts = LinearOptions::default();
        let t = std::time::Instant::now();
        let (valid, ops, keys, steps, cache, states) = if kv {
            let r = check_kv(h, &opts, &Budget::unlimited()).expect("kv");
            let s = &r.keys;
            (
                r.valid,
                r.op_count(),
                s.len(),
                s.iter().map(|k| k.searched.steps).sum::<u64>(),
                s.iter()
                    .map(|k| k.searched.cache_entries)
                    .max()
                    .unwrap_or(0),
                s.iter().map(|k| k.searched.states).max().unwrap_or(0),
            )
        } else {
            let r = check_register(h, &opts, &Budget::unlimited()).expect("register");
            let s = &r.keys;
            (
                r.valid,
                r.op_count(),
                s.len(),
                s.iter().map(|k| k.searched.steps).sum::<u64>(),
                s.iter()
                    .map(|k| k.searched.cache_entries)
                    .max()
                    .unwrap_or(0),
                s.iter().map(|k| k.searched.states).max().unwrap_or(0),
            )
        };
        println!(
            "{path}: {valid:?}, {ops} ops, {keys} keys, {steps} steps, largest cache {cache}, \
             most states {states}, {:.3} s",
            t.elapsed().as_secs_f64()
        );
    }
}
