//! list-append analysis: one minimal history per anomaly type and variant,
//! with snapshots of the explanation text.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;
use common::*;

#[test]
fn serial_history_is_clean() {
    check_la(
        "ok 0 [a x 1] [r y nil]
         ok 1 [r x [1]] [a y 1]
         ok 0 [r x [1]] [r y [1]] [a x 2]
         ok 1 [r x [1 2]]",
        &[],
    );
}

#[test]
fn g0() {
    insta::assert_snapshot!(check_la(
        "ok 0 [a x 1] [a y 2]
         ok 1 [a x 2] [a y 1]
         ok 2 [r x [1 2]] [r y [1 2]]",
        &["G0"],
    ));
}

#[test]
fn g1c_readme_example() {
    insta::assert_snapshot!(check_la(
        "ok 0 [a x 1] [r y [1]]
         ok 1 [a x 2] [a y 1]
         ok 2 [r x [1 2]]",
        &["G1c"],
    ));
}

#[test]
fn g_single_item_tidb() {
    insta::assert_snapshot!(check_la(
        "ok 2 [a 34 2] [a 34 1]
         invoke 0 [r 34 nil] [a 36 5] [a 34 4]
         invoke 1 [a 34 5]
         ok 0 [r 34 [2 1]] [a 36 5] [a 34 4]
         ok 1 [a 34 5]
         ok 3 [r 34 [2 1 5 4]]",
        &["G-single-item"],
    ));
}

#[test]
fn g2_item_write_skew() {
    insta::assert_snapshot!(check_la(
        "invoke 0 [r x nil] [a y 1]
         invoke 1 [r y nil] [a x 1]
         ok 0 [r x []] [a y 1]
         ok 1 [r y []] [a x 1]
         ok 2 [r x [1]] [r y [1]]",
        &["G2-item"],
    ));
}

#[test]
fn g_nonadjacent_item() {
    // T1 -rw-> T2 -wr-> T3 -rw-> T4 -wr-> T1
    insta::assert_snapshot!(check_la(
        "invoke 0 [r x nil] [r w nil]
         invoke 1 [a x 1] [a y 1]
         invoke 2 [r y nil] [r z nil]
         invoke 3 [a z 1] [a w 1]
         ok 1 [a x 1] [a y 1]
         ok 3 [a z 1] [a w 1]
         ok 0 [r x []] [r w [1]]
         ok 2 [r y [1]] [r z []]",
        &["G-nonadjacent-item"],
    ));
}

#[test]
fn g1a_aborted_read() {
    insta::assert_snapshot!(check_la(
        "fail 0 [a x 1]
         ok 1 [r x [1]]",
        &["G1a"],
    ));
}

#[test]
fn g1b_intermediate_read() {
    insta::assert_snapshot!(check_la(
        "ok 0 [a x 1] [a x 2]
         ok 1 [r x [1]]
         ok 2 [r x [1 2]]",
        // As in Elle, the intermediate read also closes a cycle with the writer.
        &["G1b", "G-single-item"],
    ));
}

#[test]
fn internal() {
    insta::assert_snapshot!(check_la("ok 0 [a 0 6] [r 0 nil]", &["internal"]));
}

#[test]
fn internal_after_read() {
    check_la(
        "ok 1 [a 0 1]
         ok 0 [r 0 [1]] [a 0 2] [r 0 [1]]",
        &["internal"],
    );
}

#[test]
fn future_read() {
    insta::assert_snapshot!(check_la("ok 0 [r x [1]] [a x 1]", &["future-read"]));
}

#[test]
fn duplicate_elements() {
    insta::assert_snapshot!(check_la(
        "ok 0 [a x 1]
         ok 1 [r x [1 1]]",
        &["duplicate-elements"],
    ));
}

#[test]
fn incompatible_order() {
    insta::assert_snapshot!(check_with(
        checker::analysis::Workload::ListAppend,
        "ok 0 [a x 1]
         ok 1 [a x 2]
         ok 2 [r x [1 2]]
         ok 3 [r x [2 1]]",
        plain_cycles(),
        &["incompatible-order"],
    ));
}

#[test]
fn lost_update() {
    insta::assert_snapshot!(check_la(
        "invoke 0 [r x nil] [a x 1]
         invoke 1 [r x nil] [a x 2]
         ok 0 [r x []] [a x 1]
         ok 1 [r x []] [a x 2]
         ok 2 [r x [1 2]]",
        &["G-single-item", "lost-update"],
    ));
}

#[test]
fn dirty_update() {
    insta::assert_snapshot!(check_la(
        "fail 0 [a x 1]
         ok 1 [a x 2]
         ok 2 [r x [1 2]]",
        &["G1a", "dirty-update"],
    ));
}

#[test]
fn garbage_read() {
    insta::assert_snapshot!(check_la("ok 0 [r x [9]]", &["garbage-read"]));
}

#[test]
fn g0_process() {
    insta::assert_snapshot!(check_with(
        checker::analysis::Workload::ListAppend,
        "ok 0 [a x 2]
         ok 0 [a x 1]
         ok 1 [r x [1 2]]",
        process_cycles(),
        &["G0-process"],
    ));
}

#[test]
fn g0_realtime() {
    insta::assert_snapshot!(check_la(
        "ok @1 0 [a x 2]
         ok @5 1 [a x 1]
         ok @9 2 [r x [1 2]]",
        &["G0-realtime"],
    ));
}

#[test]
fn g1c_process() {
    insta::assert_snapshot!(check_with(
        checker::analysis::Workload::ListAppend,
        "ok 0 [r x [1]]
         ok 0 [a x 1]",
        process_cycles(),
        &["G1c-process"],
    ));
}

#[test]
fn g1c_realtime() {
    insta::assert_snapshot!(check_la(
        "ok 0 [r x [1]]
         ok 1 [a x 1]",
        &["G1c-realtime"],
    ));
}

#[test]
fn g_single_item_process() {
    // A process fails to observe its own earlier append.
    insta::assert_snapshot!(check_with(
        checker::analysis::Workload::ListAppend,
        "ok 0 [a x 1]
         ok 0 [r x []]
         ok 1 [r x [1]]",
        process_cycles(),
        &["G-single-item-process"],
    ));
}

#[test]
fn g_single_item_realtime() {
    // A stale read: the append completed before the read began.
    insta::assert_snapshot!(check_la(
        "ok 0 [a x 1]
         ok 1 [r x []]
         ok 2 [r x [1]]",
        &["G-single-item-realtime"],
    ));
}

#[test]
fn g2_item_process_and_realtime() {
    // Two rw edges, closed by process / realtime order.
    let text = "invoke 0 [a x 1]
         invoke 1 [a y 1]
         ok 0 [a x 1]
         ok 1 [a y 1]
         ok 0 [r y []]
         ok 1 [r x []]
         ok 2 [r x [1]] [r y [1]]";
    insta::assert_snapshot!(
        "g2_item_process",
        check_with(
            checker::analysis::Workload::ListAppend,
            text,
            process_cycles(),
            &["G-nonadjacent-item-process"],
        )
    );
    insta::assert_snapshot!(
        "g2_item_realtime",
        check_la(text, &["G-single-item-realtime"])
    );
}

#[test]
fn info_only_history_has_no_false_positives() {
    // Indeterminate transactions whose effects were never observed: no G1a,
    // no cycle through them.
    check_la(
        "info 0 [a x 1] [r y nil]
         info 1 [a y 1] [r x nil]
         ok 2 [r x []] [r y []]
         info 3 [a x 2]",
        &[],
    );
}

#[test]
fn observed_info_write_counts_as_committed() {
    check_la(
        "info 0 [a x 1] [a y 2]
         ok 1 [a x 2] [a y 1]
         ok 2 [r x [1 2]] [r y [1 2]]",
        &["G0"],
    );
}

#[test]
fn unobserved_append_follows_observed_prefix() {
    // T1 appends 2 to x, never read; T0 read [1]: T0 -rw-> T1. T1's append
    // of 1 to y read by T0 gives T1 -wr-> T0: G-single.
    check_with(
        checker::analysis::Workload::ListAppend,
        "ok 3 [a x 1]
         ok 0 [r x [1]] [r y [1]]
         ok 1 [a x 2] [a y 1]",
        plain_cycles(),
        &["G-single-item"],
    );
}

#[test]
fn string_keys_and_odd_shapes_do_not_panic() {
    let hist = {
        let mut ops = h("ok 0 [a x 1]
             ok 1 [r x [1]] [w y 3] [r z 4]")
        .into_ops();
        ops.push(store::Op::txn(10, store::OpType::Ok, 5, vec![]));
        store::History::new(ops).unwrap()
    };
    let found = run(checker::analysis::Workload::ListAppend, &hist, all_cycles());
    assert!(types(&found).is_empty(), "{:?}", found);
    let found = run(checker::analysis::Workload::RwRegister, &hist, all_cycles());
    let t = types(&found);
    assert_eq!(t, vec!["garbage-read"]);
}

#[test]
fn exhausted_budget_gives_cycle_search_timeout() {
    use checker::analysis::{AnalyzeOptions, Workload, analyze};
    use checker::anomaly::AnomalyType;
    use checker::budget::Budget;
    let hist = h("ok 0 [a x 1] [r y [1]]
                  ok 1 [a x 2] [a y 1]
                  ok 2 [r x [1 2]]");
    let budget = Budget::steps(0);
    let opts = AnalyzeOptions::new(Workload::ListAppend, all_cycles(), &budget);
    let found = analyze(&hist, &opts).anomalies;
    assert!(
        found.contains_key(&AnomalyType::CycleSearchTimeout),
        "{found:?}"
    );
    assert!(!found.contains_key(&AnomalyType::G1c));
    let t = &found[&AnomalyType::CycleSearchTimeout][0];
    insta::assert_snapshot!(checker::explain::render_text(t, &hist));
}

#[test]
fn dot_of_a_cycle() {
    use checker::analysis::Workload;
    use checker::anomaly::AnomalyType;
    let hist = h("ok 0 [a x 1] [r y [1]]
                  ok 1 [a x 2] [a y 1]
                  ok 2 [r x [1 2]]");
    let found = run(Workload::ListAppend, &hist, plain_cycles());
    let a = &found[&AnomalyType::G1c][0];
    let dot = checker::explain::render_dot(a, &hist).unwrap();
    insta::assert_snapshot!(dot);
    insta::assert_snapshot!(serde_json::to_string_pretty(a).unwrap());
    let g1 = &found.get(&AnomalyType::G1c).unwrap()[0];
    assert!(checker::explain::render_dot(g1, &hist).is_some());
}

#[test]
fn g2_item_process_and_realtime_variants() {
    // Ta -rw-> Tb -rw-> Tc, and Tc precedes Ta in process 0 (and in real time).
    let text = "invoke 1 [r y nil] [a x 1]
         ok 0 [a y 1]
         ok 0 [r x []]
         ok 1 [r y []] [a x 1]
         ok 2 [r x [1]] [r y [1]]";
    insta::assert_snapshot!(
        "g2_item_process_variant",
        check_with(
            checker::analysis::Workload::ListAppend,
            text,
            process_cycles(),
            &["G2-item-process"],
        )
    );
    insta::assert_snapshot!(
        "g2_item_realtime_variant",
        check_la(text, &["G2-item-realtime"])
    );
}

#[test]
fn g_nonadjacent_item_realtime() {
    // T1 -rw-> T2 -wr-> T3 -rw-> T4 -realtime-> T1.
    insta::assert_snapshot!(check_la(
        "invoke 3 [r z nil] [r y nil]
         invoke 4 [a y 1]
         invoke 2 [a x 1] [a z 1]
         ok 4 [a y 1]
         invoke 1 [r x nil]
         ok 2 [a x 1] [a z 1]
         ok 3 [r z [1]] [r y []]
         ok 1 [r x []]
         ok 9 [r x [1]] [r y [1]]",
        &["G-nonadjacent-item-realtime"],
    ));
}
