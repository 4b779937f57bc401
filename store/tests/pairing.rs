//! `store::pairing`: the streaming pairing agrees with `History::new`, op by
//! op, on every rule and warning.

// Tests may panic on failure; the workspace lints target library code.
#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

use store::format::{self, Format};
use store::pairing::StreamPairing;
use store::{History, HistoryError, HistoryWarning, OpIndex};

/// Pairs `edn` both ways and returns the common outcome.
fn both(edn: &str) -> Result<Vec<HistoryWarning>, HistoryError> {
    let ops = format::read_str(edn, Format::Edn)
        .unwrap_or_else(|e| panic!("{e}"))
        .ops;
    let whole = History::new(ops.clone()).map(|h| h.warnings().to_vec());
    let mut stream = StreamPairing::default();
    let streamed = ops
        .iter()
        .try_for_each(|op| stream.push(op))
        .map(|()| stream.finish());
    assert_eq!(
        streamed, whole,
        "streaming and whole-history pairing differ"
    );
    whole
}

#[test]
fn unmatched_reused_and_nemesis_ops_warn_alike() {
    let w = both(
        r#"
        {:index 0 :type :invoke :process 0 :f :txn :value [[:r 1 nil]]}
        {:index 1 :type :info :process 0 :f :txn :value [[:r 1 nil]]}
        {:index 2 :type :invoke :process 1 :f :txn :value [[:append 1 1]]}
        {:index 3 :type :invoke :process 0 :f :txn :value [[:r 1 nil]]}
        {:index 4 :type :invoke :process :nemesis :f :kill :value ["n1"]}
        {:index 5 :type :info :process :nemesis :f :kill :value ["n1"]}
        {:index 6 :type :ok :process 1 :f :txn :value [[:append 1 1]]}
        {:index 7 :type :invoke :process :nemesis :f :kill :value ["n1"]}
    "#,
    )
    .unwrap();
    assert_eq!(
        w,
        [
            HistoryWarning::ProcessReusedAfterInfo {
                index: OpIndex(3),
                process: store::Process::Client(store::ProcessId(0))
            },
            HistoryWarning::Unmatched { index: OpIndex(3) },
            HistoryWarning::Unmatched { index: OpIndex(7) },
        ]
    );
}

#[test]
fn adjacency_pairs_alike_and_leaves_the_unpaired_open() {
    let w = both(
        r#"
        {:index 0 :type :invoke :value [[:append 1 1]]}
        {:index 1 :type :invoke :value [[:r 1 nil]]}
        {:index 2 :type :invoke :value [[:r 2 nil]]}
        {:index 3 :type :ok :value [[:r 1 [1]]]}
        {:index 4 :type :ok :value [[:append 1 1]]}
        {:index 5 :type :ok :value [[:append 9 9]]}
    "#,
    )
    .unwrap();
    assert_eq!(
        w,
        [
            HistoryWarning::CompletionWithoutInvocation { index: OpIndex(5) },
            HistoryWarning::Unmatched { index: OpIndex(2) }
        ]
    );
}

#[test]
fn every_rule_fails_alike() {
    type Is = fn(&HistoryError) -> bool;
    let cases: [(&str, Is); 4] = [
        (
            "{:index 0 :type :invoke :process 3 :f :txn :value [[:append 1 1]]}
             {:index 1 :type :invoke :process 3 :f :txn :value [[:append 1 2]]}",
            |e| matches!(e, HistoryError::DoubleInvoke { .. }),
        ),
        (
            "{:index 0 :type :invoke :process 0 :f :txn :value [[:append 1 1]]}
             {:index 1 :type :ok :process 0 :f :read :value [[:append 1 1]]}",
            |e| matches!(e, HistoryError::FMismatch { .. }),
        ),
        (
            "{:index 0 :type :invoke :process 0 :f :txn :value [[:append 1 1]]}
             {:index 1 :type :ok :process 0 :f :txn :value [[:r 1 [1]]]}",
            |e| matches!(e, HistoryError::ValueMismatch { .. }),
        ),
        (
            "{:index 5 :type :ok :value []}\n{:index 4 :type :ok :value []}",
            |e| matches!(e, HistoryError::NonMonotonicIndex { .. }),
        ),
    ];
    for (edn, is) in cases {
        let e = both(edn).unwrap_err();
        assert!(is(&e), "{e:?}");
    }
}

#[test]
fn completions_without_invocation_warn_only_among_invocations() {
    // Before: a completion with no invocation was counted with no warning.
    let w = both(
        r#"
        {:index 0 :type :invoke :process 0 :f :txn :value [[:append 1 1]]}
        {:index 1 :type :ok :process 0 :f :txn :value [[:append 1 1]]}
        {:index 2 :type :ok :process 1 :f :txn :value [[:r 1 [1]]]}
    "#,
    )
    .unwrap();
    assert_eq!(
        w,
        [HistoryWarning::CompletionWithoutInvocation { index: OpIndex(2) }]
    );
    // Elle's completion-only histories: each completion is its own
    // invocation, nothing to warn about.
    let w = both(
        r#"
        {:index 0 :type :ok :process 0 :f :txn :value [[:append 1 1]]}
        {:index 1 :type :ok :process 1 :f :txn :value [[:r 1 [1]]]}
    "#,
    )
    .unwrap();
    assert_eq!(w, []);
}

#[test]
fn orphans_past_the_listing_limit_are_counted_in_one_warning() {
    let mut edn = String::from("{:index 0 :type :invoke :process 0 :f :txn :value [[:r 1 nil]]}\n");
    let n = store::pairing::MAX_ORPHANS_LISTED + 5;
    for i in 0..n {
        edn += &format!(
            "{{:index {} :type :ok :process {} :f :txn :value [[:r 1 nil]]}}\n",
            i + 1,
            i + 1
        );
    }
    let w = both(&edn).unwrap();
    let listed = w
        .iter()
        .filter(|w| matches!(w, HistoryWarning::CompletionWithoutInvocation { .. }))
        .count();
    assert_eq!(listed, store::pairing::MAX_ORPHANS_LISTED);
    assert!(w.contains(&HistoryWarning::MoreCompletionsWithoutInvocation { count: 5 }));
    assert!(w.contains(&HistoryWarning::Unmatched { index: OpIndex(0) }));
}

/// EDN of transactions `(type, process, key)`, indexed 0, 1, …, each one
/// read of `key` (an ok one reads `[1]`).
fn reads(ops: &[(&str, u64, u64)]) -> String {
    let line = |(i, &(t, p, k)): (usize, &(&str, u64, u64))| {
        let r = if t == "ok" { "[1]" } else { "nil" };
        format!("{{:index {i} :type :{t} :process {p} :f :txn :value [[:r {k} {r}]]}}\n")
    };
    ops.iter().enumerate().map(line).collect()
}

/// Small ids are kept in a table, others in maps: both kinds, and ids
/// that would meet in the table were it taken modulo its size, pair apart.
#[test]
fn small_and_large_process_ids_pair_apart() {
    let huge = 1 << 40;
    let w = both(&reads(&[
        ("invoke", 4464, 1),
        ("invoke", 70000, 1),
        ("invoke", huge, 1),
        ("info", 70000, 1),
        ("ok", 4464, 1),
        ("invoke", 70000, 2),
        ("invoke", 4464, 2),
        ("info", 4464, 2),
        ("invoke", 4464, 3),
        ("ok", 9, 3),
    ]))
    .unwrap();
    let p = |id| store::Process::Client(store::ProcessId(id));
    assert_eq!(
        w,
        [
            HistoryWarning::ProcessReusedAfterInfo {
                index: OpIndex(5),
                process: p(70000)
            },
            HistoryWarning::ProcessReusedAfterInfo {
                index: OpIndex(8),
                process: p(4464)
            },
            HistoryWarning::CompletionWithoutInvocation { index: OpIndex(9) },
            HistoryWarning::Unmatched { index: OpIndex(2) },
            HistoryWarning::Unmatched { index: OpIndex(5) },
            HistoryWarning::Unmatched { index: OpIndex(8) },
        ]
    );
    let e = both(&reads(&[
        ("invoke", 70000, 1),
        ("invoke", 4464, 1),
        ("invoke", 4464, 1),
    ]))
    .unwrap_err();
    assert!(
        matches!(
            e,
            HistoryError::DoubleInvoke {
                index: OpIndex(2),
                open: OpIndex(1),
                ..
            }
        ),
        "{e}"
    );
}
