//! `harness run --workload predicate` against a throwaway PostgreSQL
//! repeatable read shows predicate `G2` (phantom write skew)
//! that the item analysis alone cannot see; serializable stays valid over a
//! long run. MariaDB at repeatable read (on the testbed, as every MariaDB
//! `harness run` test): phantoms the item analysis alone does not explain.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod run_common;

use checker::{CheckOptions, ConsistencyModel, Valid, Workload};
use run_common::*;
use store::{Format, History, MicroOp, OpType, OpValue};

/// Runs the predicate workload on `db` (its `--db …` flags) and returns the
/// run directory; serializable must be valid, anything weaker invalid.
fn predicate_run(
    store: &std::path::Path,
    db: &[&str],
    isolation: &str,
    ops: &str,
    seed: &str,
    name: &str,
) -> std::path::PathBuf {
    let flags = [
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
    ];
    let out = run(store, &[db, &flags].concat());
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
    dir
}

fn pg_predicate(store: &std::path::Path, isolation: &str, ops: &str, seed: &str, name: &str) {
    let db = ["--db", "postgres", "--local"];
    predicate_run(store, &db, isolation, ops, seed, name);
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
    // Readable explanations naming the range and the missing row (a row
    // or a count read's).
    let text = std::fs::read_to_string(dir.join("elle/G2.txt")).unwrap();
    assert!(
        (text.contains("range read of keys") && text.contains("(missing row)"))
            || text.contains("so it did not count row"),
        "{text}"
    );
}

/// The predicate anomaly types (no `-item`), any variant.
fn predicate_cycles(types: &[String]) -> Vec<&String> {
    types
        .iter()
        .filter(|t| {
            ["G1c", "G-single", "G-nonadjacent", "G2"]
                .iter()
                .any(|p| t.starts_with(p))
        })
        .filter(|t| !t.contains("-item"))
        .collect()
}

#[test]
#[ignore = "system test, needs root + the testbed and a MariaDB install; .ci/run runs it"]
fn mariadb_repeatable_read_shows_phantoms_the_item_analysis_misses() {
    let _lock = nemesis::testbed::TestbedLock::acquire().unwrap();
    let _down = Down;
    testbed_up();
    let store = tempfile::tempdir().unwrap();
    let db = ["--db", "mariadb", "--nodes", "testbed"];
    let rr = "repeatable-read";
    let dir = predicate_run(store.path(), &db, rr, "3000", "5", "mariadb-pred-rr");
    let types = anomaly_types(&results(&dir));
    eprintln!("MariaDB repeatable read: {types:?}");
    assert!(!predicate_cycles(&types).is_empty(), "{types:?}");
    // Without its range and count reads the history is serializable: the
    // phantoms are what the item analysis cannot see.
    let items = check_ser(&history(&dir, true));
    assert_eq!(items.valid, Valid::True, "{:?}", items.found_types);
    let kind = predicate_cycles(&types)[0];
    let text = std::fs::read_to_string(dir.join(format!("elle/{kind}.txt"))).unwrap();
    assert!(text.contains("read of keys"), "{text}");
}

#[test]
#[ignore = "system test, needs a PostgreSQL server install; .ci/run runs it"]
fn serializable_20k_predicate_transactions_are_valid() {
    let store = tempfile::tempdir().unwrap();
    pg_predicate(store.path(), "serializable", "20000", "4", "pg-pred-ser");
    let dir = run_dir(store.path(), "pg-pred-ser");
    let h = history(&dir, false);
    // Predicate reads that saw a row: non-empty row reads and non-zero
    // counts (one predicate read in four is a count). The check must not be
    // vacuous: over a third of the committed predicate reads see a row
    // (44.4–45.1 % in five runs here, e.g. 5,030 of 11,340). A fixed count (it was 5,000) failed when a run's
    // interleaving committed fewer predicate reads: CI saw 4,970.
    let saw_a_row = |r: &store::RangeRead| match r.kind {
        store::RangeKind::Count(n) => n.is_some_and(|n| n > 0),
        store::RangeKind::Rows => r.rows.as_ref().is_some_and(|r| !r.is_empty()),
    };
    let ranges: Vec<&store::RangeRead> = (0..h.len())
        .filter(|&p| h.op_type(p) == OpType::Ok)
        .filter_map(|p| h.stored_txn(p))
        .flatten()
        .filter_map(|m| match m {
            MicroOp::ReadRange(r) => Some(&**r),
            _ => None,
        })
        .collect();
    let saw = ranges.iter().filter(|r| saw_a_row(r)).count();
    eprintln!(
        "{saw} of {} committed predicate reads saw a row",
        ranges.len()
    );
    assert!(
        saw * 3 > ranges.len(),
        "{saw} of {} saw a row",
        ranges.len()
    );
    assert_eq!(check_ser(&h).valid, Valid::True);
}
