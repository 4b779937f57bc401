//! The observations: whose write each read saw, computed once for every
//! analysis.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use checker::analysis::Workload;
use checker::observe::{Observations, ReadFrom};
use checker::txn::Txns;
use common::h;

/// (txn, mop, from as "init" | "garbage" | "T<txn>:<mop>", first_on_key, writes_later).
fn reads(text: &str, w: Workload) -> Vec<(u32, u32, String, bool, bool)> {
    let hist = h(text);
    let txns = Txns::new(&hist);
    let obs = Observations::new(&txns, &hist, w);
    obs.reads
        .iter()
        .map(|r| {
            let from = match r.from {
                ReadFrom::Initial => "init".to_string(),
                ReadFrom::Garbage => "garbage".to_string(),
                ReadFrom::Write(id) => {
                    let wr = obs.write(id);
                    format!(
                        "T{}:{}{}",
                        wr.txn,
                        wr.mop,
                        if wr.is_final { "" } else { "'" }
                    )
                }
            };
            (r.txn, r.mop, from, r.first_on_key, r.writes_later)
        })
        .collect()
}

#[test]
fn list_reads_name_the_writer_of_their_last_element() {
    let r = reads(
        "ok 0 [a 1 1] [a 1 2]
         ok 1 [r 1 [1]] [a 1 3]
         ok 2 [r 1 [1 2 3]] [r 1 [9]] [r 1 nil]
         info 3 [r 1 nil]
         fail 4 [r 1 [1]]",
        Workload::ListAppend,
    );
    assert_eq!(
        r,
        vec![
            (1, 0, "T0:0'".into(), true, true),
            (2, 0, "T1:1".into(), true, false),
            (2, 1, "garbage".into(), false, false),
            (2, 2, "init".into(), false, false),
        ]
    );
}

#[test]
fn register_reads_name_the_writer_of_their_value() {
    let r = reads(
        "ok 0 [w 1 1] [w 1 2]
         fail 1 [w 1 3]
         ok 2 [r 1 1] [r 1 3] [w 1 4]
         ok 3 [r 1 nil] [r 1 7]",
        Workload::RwRegister,
    );
    assert_eq!(
        r,
        vec![
            (2, 0, "T0:0'".into(), true, true),
            (2, 1, "T1:0".into(), false, true),
            (3, 0, "init".into(), true, false),
            (3, 1, "garbage".into(), false, false),
        ]
    );
}
