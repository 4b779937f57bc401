//! Fault windows from what took effect (`store::run::faults`): the cases of
//! reported cases (a pause of a dead process, a paused process that is killed, a
//! clock left off on one node by a partial reset, strobes, resets, a
//! partition that installed no rule), and old records.

#![allow(clippy::unwrap_used)]

use store::run::RunStats;
use store::run::faults::{Window, took_effect, windows};

/// A nemesis op pair line: `(f, invoke value, info value, invoke s, info s)`.
fn history(ops: &[(&str, &str, &str, f64, f64)]) -> store::History {
    let mut jsonl = String::from(
        "{\"type\":\"invoke\",\"process\":0,\"f\":\"txn\",\"value\":[[\"append\",1,1]],\"time\":0}\n",
    );
    for (f, inv, done, t0, t1) in ops {
        jsonl.push_str(&format!(
            "{{\"type\":\"invoke\",\"process\":\"nemesis\",\"f\":\"{f}\",\"value\":{inv},\"time\":{}}}\n",
            (t0 * 1e9).round() as i64
        ));
        jsonl.push_str(&format!(
            "{{\"type\":\"info\",\"process\":\"nemesis\",\"f\":\"{f}\",\"value\":{done},\"time\":{}}}\n",
            (t1 * 1e9).round() as i64
        ));
    }
    jsonl.push_str(
        "{\"type\":\"ok\",\"process\":0,\"f\":\"txn\",\"value\":[[\"append\",1,1]],\"time\":30000000000}\n",
    );
    let read = store::format::read_str(&jsonl, store::format::Format::JsonLines).unwrap();
    store::History::new(read.ops).unwrap()
}

fn of(h: &store::History) -> Vec<Window> {
    windows(h, &|p| h.time_ns(p).unwrap_or(0))
}

/// `(fault, start s, end s or -1, targets)` of every window.
fn summary(h: &store::History) -> Vec<(String, f64, f64, Vec<String>)> {
    of(h)
        .into_iter()
        .map(|w| {
            (
                w.fault,
                w.start_ns as f64 / 1e9,
                w.end_ns.map_or(-1.0, |e| e as f64 / 1e9),
                w.targets,
            )
        })
        .collect()
}

fn s(v: &[&str]) -> Vec<String> {
    v.iter().map(|x| x.to_string()).collect()
}

#[test]
fn a_pause_sent_while_the_server_is_killed_is_no_window() {
    // kill n1 at 10 s; pause at 16.6 s fails (value lists nobody); start at
    // 20.9 s; resume at 30 s.
    let h = history(&[
        ("kill", "[\"n1\"]", "[\"n1\"]", 10.0, 10.1),
        ("pause", "[\"n1\"]", "[]", 16.6, 16.7),
        ("start", "[\"n1\"]", "[\"n1\"]", 20.9, 21.0),
        ("resume", "[\"n1\"]", "[\"n1\"]", 29.0, 29.1),
    ]);
    assert_eq!(
        summary(&h),
        vec![("kill".to_string(), 10.0, 21.0, s(&["n1"]))],
        "no pause window on a dead server"
    );
    // The pause's info (position 4) took effect nowhere; the kill did.
    assert!(!took_effect(&h, 4));
    assert!(took_effect(&h, 2));
}

#[test]
fn a_paused_server_that_is_killed_ends_its_pause_window_at_the_kill() {
    let h = history(&[
        ("pause", "[\"n1\",\"n2\"]", "[\"n1\",\"n2\"]", 5.0, 5.1),
        ("kill", "[\"n1\"]", "[\"n1\"]", 8.0, 8.2),
        ("start", "[\"n1\"]", "[\"n1\"]", 12.0, 12.5),
        ("resume", "[\"n1\",\"n2\"]", "[\"n1\",\"n2\"]", 15.0, 15.1),
    ]);
    assert_eq!(
        summary(&h),
        vec![
            ("pause".to_string(), 5.0, 8.2, s(&["n1", "n2"])),
            ("kill".to_string(), 8.0, 12.5, s(&["n1"])),
            ("pause".to_string(), 8.2, 15.1, s(&["n2"])),
        ]
    );
}

#[test]
fn a_kill_of_a_dead_process_is_a_no_op_and_no_window() {
    let h = history(&[("kill", "[\"n1\"]", "[]", 3.0, 3.1)]);
    assert!(of(&h).is_empty(), "{:?}", of(&h));
}

#[test]
fn a_clock_reset_of_other_nodes_leaves_a_bumped_node_in_its_window() {
    // start-clock bumps s1 at 6.3 s; stop-clock resets s2 and s3 at 7.4 s
    // (s1 still +54.4 s); a later reset of s1 at 30.8 s ends it.
    let h = history(&[
        (
            "start-clock",
            "{\"bump\":{\"s1\":54.4}}",
            "{\"bump\":{\"s1\":54.4},\"clock-offsets\":{\"s1\":54.4},\"clock-in-force\":{\"s1\":54.4}}",
            6.3,
            6.35,
        ),
        (
            "stop-clock",
            "{\"reset\":[\"s2\",\"s3\"]}",
            "{\"reset\":[\"s2\",\"s3\"],\"clock-in-force\":{\"s1\":54.4}}",
            7.4,
            7.45,
        ),
        (
            "stop-clock",
            "{\"reset\":[\"s1\"]}",
            "{\"reset\":[\"s1\"],\"clock-in-force\":{}}",
            30.8,
            30.85,
        ),
    ]);
    assert_eq!(
        summary(&h),
        vec![("clock".to_string(), 6.3, 30.85, s(&["s1"]))]
    );
}

#[test]
fn old_clock_records_follow_the_ops_values() {
    // No `clock-in-force`: the bumps, resets and strobes say it.
    let h = history(&[
        (
            "start-clock",
            "{\"bump\":{\"s1\":5.0}}",
            "{\"bump\":{\"s1\":5.0}}",
            1.0,
            1.1,
        ),
        (
            "stop-clock",
            "{\"reset\":[\"s2\"]}",
            "{\"reset\":[\"s2\"]}",
            2.0,
            2.1,
        ),
        (
            "start-clock",
            "{\"bump\":{\"s2\":-1.0}}",
            "{\"bump\":{\"s2\":-1.0}}",
            3.0,
            3.1,
        ),
        (
            "stop-clock",
            "{\"reset\":[\"s1\",\"s2\"]}",
            "{\"reset\":[\"s1\",\"s2\"]}",
            4.0,
            4.1,
        ),
    ]);
    assert_eq!(
        summary(&h),
        vec![
            ("clock".to_string(), 1.0, 3.0, s(&["s1"])),
            ("clock".to_string(), 3.0, 4.1, s(&["s1", "s2"])),
        ]
    );
}

#[test]
fn a_strobe_is_a_window_of_its_duration_and_a_reset_never_opens_one() {
    let strobe = "{\"strobe\":{\"s2\":{\"delta\":0.006,\"period\":0.001,\"duration\":0.9}}}";
    let strobe_done = "{\"strobe\":{\"s2\":{\"delta\":0.006,\"period\":0.001,\"duration\":0.9}},\"clock-in-force\":{}}";
    let h = history(&[
        (
            "stop-clock",
            "{\"reset\":[\"s1\"]}",
            "{\"reset\":[\"s1\"],\"clock-in-force\":{}}",
            1.0,
            1.1,
        ),
        ("start-clock", strobe, strobe_done, 2.0, 2.9),
        (
            "stop-clock",
            "{\"reset\":[\"s1\",\"s2\",\"s3\"]}",
            "{\"reset\":[\"s1\",\"s2\",\"s3\"],\"clock-in-force\":{}}",
            9.0,
            9.1,
        ),
    ]);
    assert_eq!(
        summary(&h),
        vec![("clock".to_string(), 2.0, 2.9, s(&["s2"]))]
    );
    // A strobe on a bumped node: the node stays in force after it.
    let h = history(&[
        (
            "start-clock",
            "{\"bump\":{\"s1\":2.0}}",
            "{\"bump\":{\"s1\":2.0},\"clock-in-force\":{\"s1\":2.0}}",
            1.0,
            1.1,
        ),
        (
            "start-clock",
            "{\"strobe\":{\"s1\":{\"delta\":1,\"period\":0.1,\"duration\":1},\"s2\":{\"delta\":1,\"period\":0.1,\"duration\":1}}}",
            "{\"strobe\":{\"s1\":{\"delta\":1,\"period\":0.1,\"duration\":1},\"s2\":{\"delta\":1,\"period\":0.1,\"duration\":1}},\"clock-in-force\":{\"s1\":2.0}}",
            2.0,
            3.0,
        ),
    ]);
    assert_eq!(
        summary(&h),
        vec![
            ("clock".to_string(), 1.0, 2.0, s(&["s1"])),
            ("clock".to_string(), 2.0, 3.0, s(&["s1", "s2"])),
            ("clock".to_string(), 3.0, -1.0, s(&["s1"])),
        ]
    );
    for w in of(&h) {
        assert!(w.end_ns != Some(w.start_ns), "zero-length window {w:?}");
    }
}

#[test]
fn a_partition_that_installed_no_rule_is_no_window() {
    let h = history(&[
        ("start-partition", "{\"n1\":[\"n2\"]}", "{}", 1.0, 1.1),
        ("stop-partition", "null", "null", 2.0, 2.1),
        (
            "start-partition",
            "{\"n1\":[\"n2\"],\"n3\":[]}",
            "{\"n1\":[\"n2\"],\"n3\":[]}",
            3.0,
            3.1,
        ),
        ("stop-partition", "null", "null", 4.0, 4.1),
    ]);
    assert_eq!(
        summary(&h),
        vec![("partition".to_string(), 3.0, 4.1, s(&["n1"]))]
    );
}

#[test]
fn results_json_windows_carry_targets_and_old_records_load() {
    let h = history(&[("kill", "[\"n1\",\"n2\"]", "[\"n2\"]", 1.0, 1.5)]);
    let st = RunStats::of(&h);
    assert_eq!(st.fault_windows.len(), 1);
    assert_eq!(st.fault_windows[0].targets, s(&["n2"]));
    assert_eq!(st.fault_windows[0].end_s, None);
    let j = serde_json::to_value(&st).unwrap();
    assert_eq!(j["fault-windows"][0]["targets"], serde_json::json!(["n2"]));
    // A window of an older record, without targets, loads; one without
    // targets writes none.
    let old: store::run::FaultWindow =
        serde_json::from_value(serde_json::json!({"fault": "kill", "start-s": 1.0, "end-s": 2.0}))
            .unwrap();
    assert!(old.targets.is_empty());
    let back = serde_json::to_value(&old).unwrap();
    assert!(back.get("targets").is_none(), "{back}");
}

#[test]
fn a_start_that_never_completed_is_in_force_as_asked_to_the_end() {
    let jsonl = concat!(
        "{\"type\":\"invoke\",\"process\":\"nemesis\",\"f\":\"pause\",\"value\":[\"n3\"],\"time\":1000000000}\n",
        "{\"type\":\"invoke\",\"process\":0,\"f\":\"txn\",\"value\":[[\"append\",1,1]],\"time\":2000000000}\n",
    );
    let read = store::format::read_str(jsonl, store::format::Format::JsonLines).unwrap();
    let h = store::History::new(read.ops).unwrap();
    assert_eq!(
        summary(&h),
        vec![("pause".to_string(), 1.0, -1.0, s(&["n3"]))]
    );
}
