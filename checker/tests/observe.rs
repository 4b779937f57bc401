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
            let from = match r.from() {
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
            (r.txn, r.mop, from, r.first_on_key(), r.writes_later())
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

#[test]
fn a_value_written_twice_keeps_its_first_writer_and_warns_once_per_repeat() {
    let hist = h("ok 0 [a 1 1] [a 2 1]
         ok 1 [a 1 2] [a 1 1]
         ok 2 [a 2 1] [a 1 3]
         ok 3 [r 1 [1 2 3]] [r 2 [1]]");
    let txns = Txns::new(&hist);
    let obs = Observations::new(&txns, &hist, Workload::ListAppend);
    // Five distinct (key, value) pairs are written; the repeats leave the list.
    let kv: Vec<(u32, u32, bool)> = obs
        .writes
        .iter()
        .map(|w| (w.txn, w.mop, w.repeated))
        .collect();
    assert_eq!(
        kv,
        vec![(0, 1, true), (0, 0, true), (1, 0, false), (2, 1, false)]
    );
    assert_eq!(obs.warnings.len(), 2, "{:?}", obs.warnings);
    assert!(obs.warnings[0].contains("value 1 appended to key 1 more than once"));
    assert!(obs.warnings[1].contains("value 1 appended to key 2 more than once"));
    // Every read's writer is an id into the compacted list.
    let from: Vec<ReadFrom> = obs.reads.iter().map(|r| r.from()).collect();
    assert_eq!(from, vec![ReadFrom::Write(3), ReadFrom::Write(0)]);
    let k1 = obs.reads[0].key(&txns);
    assert_eq!(obs.write_of(k1, &store::Val::int(2)), Some(2));
    assert_eq!(obs.write_of(k1, &store::Val::int(1)), Some(1));
}
