//! The `expected-order` analysis (Enne): histories in the shape
//! the white-box CockroachDB client records (`commit-ts` = `[wall,
//! logical]`, `version-ts` per micro-op), replayed in commit-timestamp
//! order. Enne's Fig. 3: a range read that misses a row committed below its
//! timestamp is a violation, though a black-box check accepts it (the
//! serial order T1, T3, T2 explains it).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use checker::explain::render_text;
use checker::{AnomalyType, CheckOptions, ConsistencyModel, Valid, Workload, check};
use store::{Format, History, read_str};

fn history(jsonl: &str) -> History {
    let text: String = jsonl
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(|l| format!("{l}\n"))
        .collect();
    History::new(read_str(&text, Format::JsonLines).unwrap().ops).unwrap()
}

fn serializable(h: &History) -> checker::CheckResult {
    let mut o = CheckOptions::new(Workload::ListAppend);
    o.models = vec![ConsistencyModel::Serializable];
    check(h, &o)
}

const FIG3: &str = r#"
{"index":0,"type":"invoke","process":0,"f":"txn","value":[["append",1,1]]}
{"index":1,"type":"ok","process":0,"f":"txn","value":[["append",1,1]],"commit-ts":[1700000000000000010,0],"version-ts":[null]}
{"index":2,"type":"invoke","process":1,"f":"txn","value":[["append",2,1]]}
{"index":3,"type":"ok","process":1,"f":"txn","value":[["append",2,1]],"commit-ts":[1700000000000000020,0],"version-ts":[null]}
{"index":4,"type":"invoke","process":2,"f":"txn","value":[["rr",[0,9],null]]}
{"index":5,"type":"ok","process":2,"f":"txn","value":[["rr",[0,9],[[1,[1]]]]],"commit-ts":[1700000000000000030,0],"version-ts":[null]}
{"index":6,"type":"invoke","process":3,"f":"txn","value":[["r",1,null],["r",2,null]]}
{"index":7,"type":"ok","process":3,"f":"txn","value":[["r",1,[1]],["r",2,[1]]],"commit-ts":[1700000000000000040,0],"version-ts":[[1700000000000000010,0],[1700000000000000020,0]]}
"#;

#[test]
fn a_row_below_the_readers_timestamp_missing_is_an_expected_order_violation() {
    let h = history(FIG3);
    let r = serializable(&h);
    assert_eq!(r.valid, Valid::False, "{r:?}");
    let found: Vec<_> = r.found_types.iter().map(|a| a.name()).collect();
    assert_eq!(found, vec!["expected-order-violation"]);
    let a = &r.anomalies[&AnomalyType::ExpectedOrderViolation][0];
    assert_eq!(a.ops(), vec![store::OpIndex(5)]);
    let text = render_text(a, &h);
    assert!(
        text.contains("should have read rows [[1 [1]] [2 [1]]]"),
        "{text}"
    );
    // The same history without its certificates: black-box, it is valid.
    let bare = history(&FIG3.replace(r#","commit-ts""#, r#","x""#));
    assert_eq!(serializable(&bare).valid, Valid::True);
}

#[test]
fn reads_and_counts_that_agree_with_the_timestamps_are_valid() {
    let h = history(
        r#"
{"index":0,"type":"ok","process":0,"f":"txn","value":[["append",1,1]],"commit-ts":[10,0]}
{"index":1,"type":"ok","process":1,"f":"txn","value":[["rc",[0,9],1],["append",2,1]],"commit-ts":[10,1]}
{"index":2,"type":"ok","process":0,"f":"txn","value":[["r",1,[1]],["r",2,[1]],["rc",[2,3],1]],"commit-ts":[11,0]}
"#,
    );
    let r = serializable(&h);
    assert_eq!(r.valid, Valid::True, "{r:?}");
    // A count the order contradicts is found too.
    let bad = history(
        r#"
{"index":0,"type":"ok","process":0,"f":"txn","value":[["append",1,1]],"commit-ts":5}
{"index":1,"type":"ok","process":1,"f":"txn","value":[["rc",[0,9],0]],"commit-ts":6}
"#,
    );
    let r = serializable(&bad);
    let a = &r.anomalies[&AnomalyType::ExpectedOrderViolation][0];
    assert!(render_text(a, &bad).contains("should have read count 1"));
}

#[test]
fn a_history_with_some_timestamps_missing_is_not_replayed_and_says_so() {
    let h = history(
        r#"
{"index":0,"type":"ok","process":0,"f":"txn","value":[["append",1,1]],"commit-ts":5}
{"index":1,"type":"ok","process":1,"f":"txn","value":[["r",1,[]]]}
"#,
    );
    let r = serializable(&h);
    assert!(
        !r.anomalies
            .contains_key(&AnomalyType::ExpectedOrderViolation)
    );
    assert!(
        r.warnings.iter().any(|w| w.contains("no commit-ts")),
        "{:?}",
        r.warnings
    );
}

#[test]
fn reads_of_what_an_indeterminate_transaction_wrote_are_not_judged() {
    // T1's commit was ambiguous (info, no timestamp) but took effect; T2
    // read its append. No expected order places T1, so no violation.
    let h = history(
        r#"
{"index":0,"type":"invoke","process":0,"f":"txn","value":[["append",1,1]]}
{"index":1,"type":"info","process":0,"f":"txn","value":[["append",1,1]]}
{"index":2,"type":"ok","process":1,"f":"txn","value":[["r",1,[1]],["rc",[0,3],1],["append",2,1]],"commit-ts":7}
{"index":3,"type":"ok","process":2,"f":"txn","value":[["r",2,[2]]],"commit-ts":8}
"#,
    );
    let r = serializable(&h);
    // Only the read of key 2 is judged (it should have been [1]).
    let found = &r.anomalies[&AnomalyType::ExpectedOrderViolation];
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].ops(), vec![store::OpIndex(3)]);
}
