//! `harness run --workload predicate` against a throwaway PostgreSQL
//! (issue 16): repeatable read shows predicate `G2` (phantom write skew)
//! that the item analysis alone cannot see; serializable stays valid over a
//! long run.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod run_common;

use checker::{CheckOptions, ConsistencyModel, Valid, Workload};
use run_common::*;
use store::{Format, History, MicroOp, OpValue};

fn pg_predicate(store: &std::path::Path, isolation: &str, ops: &str, seed: &str, name: &str) {
    let out = run(
        store,
        &[
            "--db",
            "postgres",
            "--local",
            "--workload",
            "predicate",
            "--isolation",
            isolation,
            "--expected-consistency-model",
            "serializable",
            "--ops",
            ops,
            "--time-limit",
            "3m",
            "--concurrency",
            "10",
            "--key-count",
            "5",
            "--max-writes-per-key",
            "1",
            "--seed",
            seed,
            "--test-name",
            name,
        ],
    );
    let expect = if isolation == "serializable" { 0 } else { 1 };
    let dir = run_dir(store, name);
    assert_complete(&dir);
    assert_eq!(
        out.status.code(),
        Some(expect),
        "{isolation}: {:?}\n{}",
        anomaly_types(&results(&dir)),
        String::from_utf8_lossy(&out.stdout)
    );
}

/// The run's history, optionally without its range reads (what an
/// item-only checker would be given).
fn history(dir: &std::path::Path, strip_ranges: bool) -> History {
    let mut ops = store::read_str(&history_text(dir), Format::JsonLines)
        .unwrap()
        .ops;
    if strip_ranges {
        for op in &mut ops {
            if let OpValue::Txn(m) = &mut op.value {
                m.retain(|x| !matches!(x, MicroOp::ReadRange(_)));
            }
        }
    }
    History::new(ops).unwrap()
}

fn check_ser(h: &History) -> checker::CheckResult {
    let mut o = CheckOptions::new(Workload::ListAppend);
    o.models = vec![ConsistencyModel::Serializable];
    checker::check(h, &o)
}

#[test]
#[ignore = "system test, needs a PostgreSQL server install; .ci/run runs it"]
fn repeatable_read_shows_predicate_g2_the_item_analysis_misses() {
    let store = tempfile::tempdir().unwrap();
    pg_predicate(store.path(), "repeatable-read", "3000", "3", "pg-pred-rr");
    let dir = run_dir(store.path(), "pg-pred-rr");
    let types = anomaly_types(&results(&dir));
    assert!(types.contains(&"G2".to_string()), "{types:?}");
    assert!(
        types.iter().all(|t| !t.ends_with("-item")),
        "item anomalies at repeatable read: {types:?}"
    );
    // The same history without its range reads: nothing for the item
    // analysis to find.
    let full = check_ser(&history(&dir, false));
    assert_eq!(full.valid, Valid::False);
    let items = check_ser(&history(&dir, true));
    assert_eq!(items.valid, Valid::True, "{:?}", items.found_types);
    // Readable explanations naming the range and the missing row.
    let text = std::fs::read_to_string(dir.join("elle/G2.txt")).unwrap();
    assert!(
        text.contains("range read of keys") && text.contains("(missing row)"),
        "{text}"
    );
}

#[test]
#[ignore = "system test, needs a PostgreSQL server install; .ci/run runs it"]
fn serializable_20k_predicate_transactions_are_valid() {
    let store = tempfile::tempdir().unwrap();
    pg_predicate(store.path(), "serializable", "20000", "4", "pg-pred-ser");
    let dir = run_dir(store.path(), "pg-pred-ser");
    let h = history(&dir, false);
    let ranges = h
        .ops()
        .iter()
        .filter_map(|o| o.value.txn())
        .flatten()
        .filter(|m| matches!(m, MicroOp::ReadRange(r) if r.rows.as_ref().is_some_and(|r| !r.is_empty())))
        .count();
    assert!(ranges > 5_000, "{ranges} non-empty range reads");
    assert_eq!(check_ser(&h).valid, Valid::True);
}
