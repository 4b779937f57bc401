//! The typed run record loads runs the previous release wrote
//! (`testdata/run-format/v1`), and writes back what it read.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use store::run::{RunMeta, RunResults, RunStats, Verdict};

fn fixture(name: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../testdata/run-format/v1")
        .join(name)
}

#[test]
fn a_previous_release_test_json_loads() {
    let m = RunMeta::load(&fixture("test.json")).unwrap();
    assert_eq!(m.format, 1);
    assert_eq!(m.test_name().as_deref(), Some("sim-list-append"));
    assert_eq!(m.seed, Some(42));
    assert_eq!(m.harness_version().as_deref(), Some("0.1.0 (4384e58)"));
    assert_eq!(m.db().as_deref(), Some("sim"));
    assert_eq!(m.workload().as_deref(), Some("list-append"));
    assert_eq!(m.expected_model().as_deref(), Some("serializable"));
    assert_eq!(m.config.concurrency, Some(4));
    assert_eq!(m.run_flags, ["--db", "sim", "--seed", "42"]);
    assert_eq!(m.verdict.as_deref(), Some("false"));
    assert!(m.extra.is_empty(), "{:?}", m.extra);
}

#[test]
fn a_previous_release_results_json_loads() {
    let r = RunResults::load(&fixture("results.json")).unwrap();
    assert_eq!(r.valid, Verdict::False);
    assert_eq!(r.format, 0, "no format field: the first release");
    assert_eq!(r.types(), ["G1c"]);
    assert_eq!(r.found("G1c"), 7);
    assert_eq!(r.not, ["read-committed"]);
    assert!(r.stats.is_none());
}

#[test]
fn missing_fields_default_and_unknown_fields_survive() {
    let m = RunMeta::from_json(br#"{"test_name":"old","harness_version":"0.0.9","x":1}"#).unwrap();
    assert_eq!(m.test_name().as_deref(), Some("old"));
    assert_eq!(m.harness_version().as_deref(), Some("0.0.9"));
    let back = serde_json::to_value(&m).unwrap();
    assert_eq!(back["x"], 1);
    let r =
        RunResults::from_json(br#"{"valid?":"unknown","reason":"r","jepsen":{"a":1}}"#).unwrap();
    assert_eq!(r.valid, Verdict::Unknown);
    let back = r.to_value();
    assert_eq!(back["jepsen"]["a"], 1);
    assert_eq!(
        RunResults::from_json(b"{}").unwrap().valid,
        Verdict::Unknown
    );
}

#[test]
fn stats_count_per_f_and_pair_fault_windows() {
    let jsonl = concat!(
        "{\"type\":\"invoke\",\"process\":0,\"f\":\"txn\",\"value\":[[\"append\",1,1]],\"time\":0}\n",
        "{\"type\":\"invoke\",\"process\":\"nemesis\",\"f\":\"start-partition\",\"time\":1000000000}\n",
        "{\"type\":\"info\",\"process\":\"nemesis\",\"f\":\"start-partition\",\"time\":1100000000}\n",
        "{\"type\":\"ok\",\"process\":0,\"f\":\"txn\",\"value\":[[\"append\",1,1]],\"time\":2000000000}\n",
        "{\"type\":\"invoke\",\"process\":0,\"f\":\"txn\",\"value\":[[\"append\",1,2]],\"time\":2000000000}\n",
        "{\"type\":\"invoke\",\"process\":\"nemesis\",\"f\":\"stop-partition\",\"time\":3000000000}\n",
        "{\"type\":\"info\",\"process\":\"nemesis\",\"f\":\"stop-partition\",\"time\":3100000000}\n",
        "{\"type\":\"fail\",\"process\":0,\"f\":\"txn\",\"value\":[[\"append\",1,2]],\"time\":4000000000}\n",
    );
    let read = store::format::read_str(jsonl, store::format::Format::JsonLines).unwrap();
    let h = store::History::new(read.ops).unwrap();
    let s = RunStats::of(&h);
    let txn = &s.counts["txn"];
    assert_eq!((txn.invoke, txn.ok, txn.fail, txn.info), (2, 1, 1, 0));
    assert_eq!(s.latency_ms["txn"].n, 2);
    assert_eq!(s.latency_ms["txn"].max, 2000.0);
    assert_eq!(s.fault_windows.len(), 1, "{:?}", s.fault_windows);
    assert_eq!(s.fault_windows[0].fault, "partition");
    assert_eq!(s.fault_windows[0].start_s, 1.0);
    // In force until the stop op completed.
    assert_eq!(s.fault_windows[0].end_s, Some(3.1));
    assert_eq!(s.throughput.duration_s, 4.0);
    assert_eq!(s.throughput.ok_per_s, 0.25);
}

#[test]
fn a_checker_map_that_does_not_fit_is_kept_whole_with_its_verdict() {
    // `not` must be a list of names: a number makes the typed read fail.
    let v = serde_json::json!({"valid?": false, "anomaly-types": ["G1c"], "not": 7,
        "anomalies": {"G1c": [{"cycle": [1, 2]}]}});
    assert!(RunResults::from_value(v.clone()).is_err());
    let (r, err) = RunResults::from_value_lossless(v);
    assert!(err.is_some());
    assert_eq!(r.valid, Verdict::False);
    assert_eq!(r.extra["anomaly-types"], serde_json::json!(["G1c"]));
    assert_eq!(
        r.extra["anomalies"]["G1c"][0]["cycle"],
        serde_json::json!([1, 2])
    );
    let (ok, none) = RunResults::from_value_lossless(serde_json::json!({"valid?": true}));
    assert!(none.is_none());
    assert_eq!(ok.valid, Verdict::True);
}

#[test]
fn leave_and_join_are_closed_names_and_open_and_close_a_membership_window() {
    assert_eq!(store::F::parse("leave"), store::F::Leave);
    assert_eq!(store::F::Join.as_str(), "join");
    let jsonl = concat!(
        "{\"type\":\"invoke\",\"process\":\"nemesis\",\"f\":\"leave\",\"value\":\"n2\",\"time\":1000000000}\n",
        "{\"type\":\"info\",\"process\":\"nemesis\",\"f\":\"leave\",\"value\":[\"n2\",{\"wiped\":true}],\"time\":1500000000}\n",
        "{\"type\":\"invoke\",\"process\":\"nemesis\",\"f\":\"join\",\"value\":\"n2\",\"time\":4000000000}\n",
        "{\"type\":\"info\",\"process\":\"nemesis\",\"f\":\"join\",\"value\":[\"n2\",{\"transfer\":\"sst\"}],\"time\":9000000000}\n",
    );
    let read = store::format::read_str(jsonl, store::format::Format::JsonLines).unwrap();
    let h = store::History::new(read.ops).unwrap();
    assert_eq!(h.f(0), Some(&store::F::Leave));
    assert_eq!(h.f(3), Some(&store::F::Join));
    let s = RunStats::of(&h);
    assert_eq!(s.fault_windows.len(), 1, "{:?}", s.fault_windows);
    assert_eq!(s.fault_windows[0].fault, "membership");
    assert_eq!(s.fault_windows[0].start_s, 0.0);
    // Out of the cluster until the join completed.
    assert_eq!(s.fault_windows[0].end_s, Some(8.0));
    assert_eq!(s.fault_windows[0].targets, vec!["n2".to_string()]);
}
