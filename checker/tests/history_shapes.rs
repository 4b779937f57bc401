//! Nothing made up: a completion without the fields its type
//! needs is refused with its position, or kept as indeterminate (`info`)
//! with a warning — the checker never fills an `ok`'s reads from its
//! invocation. One test per history shape.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use checker::{CheckOptions, CheckResult, Valid, Workload, check};
use store::History;
use store::format::{Format, read_str};

/// Parses JSON Lines and builds the history; the build error as text.
fn load(jsonl: &str) -> Result<History, String> {
    let read = read_str(jsonl, Format::JsonLines).map_err(|e| e.to_string())?;
    History::new(read.ops).map_err(|e| e.to_string())
}

fn check_la(h: &History) -> CheckResult {
    check(h, &CheckOptions::new(Workload::ListAppend))
}

/// p0 appends 1 to key 1 and commits; then p1 reads key 1, and its `ok`
/// says (`tail`) what it read — or not.
fn after_append(tail: &str) -> String {
    format!(
        "{{\"index\":0,\"type\":\"invoke\",\"process\":0,\"f\":\"txn\",\"value\":[[\"append\",1,1]]}}\n\
         {{\"index\":1,\"type\":\"ok\",\"process\":0,\"f\":\"txn\",\"value\":[[\"append\",1,1]]}}\n\
         {{\"index\":2,\"type\":\"invoke\",\"process\":1,\"f\":\"txn\",\"value\":[[\"r\",1,null]]}}\n\
         {{\"index\":3,\"type\":\"ok\",\"process\":1,\"f\":\"txn\"{tail}}}\n\
         {{\"index\":4,\"type\":\"invoke\",\"process\":2,\"f\":\"txn\",\"value\":[[\"r\",1,null]]}}\n\
         {{\"index\":5,\"type\":\"ok\",\"process\":2,\"f\":\"txn\",\"value\":[[\"r\",1,[1]]]}}\n"
    )
}

fn assert_kept_as_info(tail: &str) {
    let h = load(&after_append(tail)).unwrap();
    let r = check_la(&h);
    // Before: the invocation's `nil` read was taken as what the `ok` read,
    // a G-single-item-realtime (exit 1) with no warning.
    assert_ne!(r.valid, Valid::False, "{tail}: {:?}", r.anomaly_types);
    assert!(r.anomaly_types.is_empty(), "{tail}: {:?}", r.anomaly_types);
    assert!(
        r.warnings
            .iter()
            .any(|w| w.contains("op 3") && w.contains("without a transaction value")),
        "{tail}: {:?}",
        r.warnings
    );
}

#[test]
fn an_ok_without_a_value_is_kept_as_info_with_a_warning() {
    assert_kept_as_info("");
}

#[test]
fn an_ok_with_a_null_value_is_kept_as_info_with_a_warning() {
    assert_kept_as_info(",\"value\":null");
}

#[test]
fn an_ok_with_its_value_is_checked_as_it_says() {
    // The same history with the `ok` saying it read nothing after a
    // committed append: a real anomaly, found.
    let h = load(&after_append(",\"value\":[[\"r\",1,null]]")).unwrap();
    let r = check_la(&h);
    assert_eq!(r.valid, Valid::False, "{:?}", r);
    assert!(
        r.warnings
            .iter()
            .all(|w| !w.contains("without a transaction value"))
    );
}

#[test]
fn an_ok_with_fewer_micro_ops_than_invoked_is_refused_with_its_position() {
    let e = load(&after_append(",\"value\":[]")).unwrap_err();
    assert!(e.contains('3') && e.contains("micro-ops"), "{e}");
}

#[test]
fn an_ok_with_a_different_micro_op_is_refused_with_its_position() {
    let e = load(&after_append(",\"value\":[[\"append\",1,2]]")).unwrap_err();
    assert!(e.contains('3') && e.contains("differs"), "{e}");
}

#[test]
fn an_ok_whose_value_is_not_a_transaction_is_refused_with_its_line() {
    // A number where micro-ops belong: an error with the op's line.
    let e = load(&after_append(",\"value\":7")).unwrap_err();
    assert!(
        e.contains(":4:") && e.contains("expected a transaction"),
        "{e}"
    );
}

#[test]
fn an_info_or_fail_without_a_value_keeps_its_invocation_writes_and_no_reads() {
    for ty in ["info", "fail"] {
        let text = format!(
            "{{\"index\":0,\"type\":\"invoke\",\"process\":0,\"f\":\"txn\",\"value\":[[\"append\",1,1]]}}\n\
             {{\"index\":1,\"type\":\"{ty}\",\"process\":0,\"f\":\"txn\"}}\n\
             {{\"index\":2,\"type\":\"invoke\",\"process\":1,\"f\":\"txn\",\"value\":[[\"r\",1,null]]}}\n\
             {{\"index\":3,\"type\":\"ok\",\"process\":1,\"f\":\"txn\",\"value\":[[\"r\",1,[1]]]}}\n"
        );
        let h = load(&text).unwrap();
        let r = check_la(&h);
        if ty == "info" {
            // The read of 1 is explained by the info append: no anomaly.
            assert!(r.anomaly_types.is_empty(), "{ty}: {:?}", r.anomaly_types);
        } else {
            // A failed append read back is an aborted read: found.
            assert_eq!(r.valid, Valid::False, "{ty}: {:?}", r);
        }
        assert!(
            r.warnings
                .iter()
                .all(|w| !w.contains("without a transaction value")),
            "{ty}: {:?}",
            r.warnings
        );
    }
}
