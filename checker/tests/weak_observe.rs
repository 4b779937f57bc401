//! The weak checks' observations take the keys each transaction writes
//! from the shared observations on a list-append history; on any history
//! they are the keys its micro-ops write (`weak::observe::keys_written`).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "common/register_gen.rs"]
mod register_gen;

#[path = "common/arbitrary.rs"]
mod arbitrary;

use checker::Workload;
use checker::txn::Txns;
use checker::weak::observe::{Observations, keys_written};

#[test]
fn the_keys_written_are_the_micro_ops_keys_on_any_history() {
    let (mut shared, mut fallback) = (0, 0);
    for seed in 0..3000u64 {
        let Some(h) = arbitrary::arbitrary_history(seed, 2 + (seed % 12) as usize) else {
            continue;
        };
        let txns = Txns::new(&h);
        for w in [Workload::ListAppend, Workload::RwRegister] {
            let seen = checker::observe::Observations::new(&txns, &h, w);
            let obs = Observations::new(&txns, &seen, w);
            let (list, off) = keys_written(&txns, w, 0);
            assert_eq!(
                obs.written_keys(),
                (&list[..], &off[..]),
                "seed {seed} {w:?}"
            );
            if w == Workload::ListAppend {
                if seen.writes.len() == txns.n_appends {
                    shared += 1;
                } else {
                    fallback += 1;
                }
            }
        }
    }
    // Both ways were taken, many times each.
    assert!(shared > 1000 && fallback > 100, "{shared} {fallback}");
}
