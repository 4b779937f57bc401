//! `store::history`: pairing and validation.

// Tests may panic on failure; the workspace lints target library code.
#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

use store::format::{self, Format};
use store::{History, HistoryError, HistoryWarning, OpIndex, Process, ProcessId};

fn h(edn: &str) -> Result<History, HistoryError> {
    let out = format::read_str(edn, Format::Edn).unwrap_or_else(|e| panic!("{e}"));
    History::new(out.ops)
}

#[test]
fn pairs_by_process_across_interleaving() {
    let h = h(r#"
        {:index 0 :type :invoke :process 0 :f :txn :value [[:append 1 1]]}
        {:index 1 :type :invoke :process 1 :f :txn :value [[:r 1 nil]]}
        {:index 2 :type :ok     :process 1 :f :txn :value [[:r 1 []]]}
        {:index 3 :type :ok     :process 0 :f :txn :value [[:append 1 1]]}
    "#)
    .unwrap();
    assert_eq!(h.partner(0), Some(3));
    assert_eq!(h.partner(1), Some(2));
    assert_eq!(h.completion(0).map(|p| h.index(p)), Some(OpIndex(3)));
    assert_eq!(h.invocation(2).map(|p| h.index(p)), Some(OpIndex(1)));
    assert!(h.warnings().is_empty());
}

#[test]
fn pairs_by_adjacency_without_process() {
    // jepsen-io/elle's paper example has no :process.
    let h = h(r#"
        {:index 0 :type :invoke :value [[:append 1 1]]}
        {:index 1 :type :invoke :value [[:r 1 nil]]}
        {:index 2 :type :ok :value [[:r 1 [1]]]}
        {:index 3 :type :ok :value [[:append 1 1]]}
    "#)
    .unwrap();
    assert_eq!(h.partner(0), Some(3));
    assert_eq!(h.partner(1), Some(2));
}

#[test]
fn completions_only_stand_for_their_own_invocations() {
    let h = h("{:type :ok :value [[:append :x 1]]}\n{:type :ok :value [[:r :x [1]]]}\n").unwrap();
    assert_eq!(h.len(), 2);
    assert_eq!(h.partner(0), None);
    assert_eq!(h.invocation(1).map(|p| h.index(p)), Some(OpIndex(1)));
    assert!(h.warnings().is_empty());
}

#[test]
fn double_invoke_is_an_error_naming_both_ops() {
    let e = h(r#"
        {:index 0 :type :invoke :process 3 :f :txn :value [[:append 1 1]]}
        {:index 1 :type :invoke :process 3 :f :txn :value [[:append 1 2]]}
    "#)
    .unwrap_err();
    assert_eq!(
        e,
        HistoryError::DoubleInvoke {
            index: OpIndex(1),
            process: Process::Client(ProcessId(3)),
            open: OpIndex(0)
        }
    );
    assert!(e.to_string().starts_with("op 1:"));
}

#[test]
fn f_mismatch_is_an_error() {
    let e = h(r#"
        {:index 0 :type :invoke :process 0 :f :txn :value [[:append 1 1]]}
        {:index 1 :type :ok :process 0 :f :read :value [[:append 1 1]]}
    "#)
    .unwrap_err();
    assert!(
        matches!(
            e,
            HistoryError::FMismatch {
                index: OpIndex(1),
                invoke: OpIndex(0),
                ..
            }
        ),
        "{e:?}"
    );
    // Said in plain words, not as Rust's `Some("txn")`.
    assert_eq!(
        e.to_string(),
        "op 1: completion f read does not match invocation op 0's f txn"
    );
}

#[test]
fn type_mismatch_of_micro_ops_is_an_error() {
    let e = h(r#"
        {:index 0 :type :invoke :process 0 :f :txn :value [[:append 1 1]]}
        {:index 1 :type :ok :process 0 :f :txn :value [[:r 1 [1]]]}
    "#)
    .unwrap_err();
    assert!(
        matches!(
            e,
            HistoryError::ValueMismatch {
                index: OpIndex(1),
                ..
            }
        ),
        "{e:?}"
    );
}

#[test]
fn non_monotonic_index_is_an_error() {
    let e = h("{:index 5 :type :ok :value []}\n{:index 5 :type :ok :value []}\n").unwrap_err();
    assert_eq!(
        e,
        HistoryError::NonMonotonicIndex {
            index: OpIndex(5),
            previous: OpIndex(5)
        }
    );
}

#[test]
fn unmatched_and_reused_processes_are_warnings() {
    let h = h(r#"
        {:index 0 :type :invoke :process 0 :f :txn :value [[:r 1 nil]]}
        {:index 1 :type :info :process 0 :f :txn :value [[:r 1 nil]]}
        {:index 2 :type :invoke :process 0 :f :txn :value [[:r 1 nil]]}
        {:index 3 :type :invoke :process :nemesis :f :kill :value ["n1"]}
    "#)
    .unwrap();
    assert_eq!(
        h.warnings(),
        &[
            HistoryWarning::ProcessReusedAfterInfo {
                index: OpIndex(2),
                process: Process::Client(ProcessId(0))
            },
            HistoryWarning::Unmatched { index: OpIndex(2) },
            HistoryWarning::Unmatched { index: OpIndex(3) },
        ]
    );
}

#[test]
fn load_history_maps_history_errors_to_format_errors_with_the_op() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("h.edn");
    std::fs::write(
        &p,
        "{:index 0 :type :invoke :process 1 :value []}\n{:index 1 :type :invoke :process 1 :value []}\n",
    )
    .unwrap();
    let e = format::load_history(&p).unwrap_err();
    assert_eq!(e.file.as_deref(), Some(p.as_path()));
    assert!(e.to_string().contains("op 1: process 1 invoked"), "{e}");
}
