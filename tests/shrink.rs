//! `harness reproduce RUN_DIR --shrink`: a failing run shrunk to a smaller
//! configuration that still fails, written as a scenario beside the run.
//! On the simulator (a lost-update bug, with simulated partitions and
//! kills it does not need): exact, every dimension smaller, the faults
//! dropped, and the scenario reproduces. On a local PostgreSQL at
//! repeatable read (write skew, G2-item; CI): smaller within a time budget,
//! with a reproduction rate.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

mod run_common;

use run_common::{harness, run_dir, run_line};
use serde_json::Value;
use std::path::Path;

/// The shrink report's sizes: (original, shrunk) of `dim`.
fn sizes(report: &Value, dim: &str) -> (f64, f64) {
    (
        report["original"]["sizes"][dim].as_f64().unwrap_or(0.0),
        report["shrunk"]["sizes"][dim].as_f64().unwrap_or(0.0),
    )
}

fn shrink(run: &Path, extra: &[&str]) -> (Option<i32>, String) {
    let out = harness()
        .arg("reproduce")
        .arg(run)
        .arg("--shrink")
        .args(extra)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    eprintln!("{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    (out.status.code(), stdout)
}

/// The scenario beside the run parses (`reproduce --list`) and reproduces.
fn scenario_reproduces(run: &Path, store: &Path) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(run.join("shrunk.toml"), dir.path().join("shrunk.toml")).unwrap();
    let out = harness()
        .args(["reproduce", "--list"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let out = harness()
        .arg("reproduce")
        .arg(run.join("shrunk.toml"))
        .arg("--store")
        .arg(store)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(stdout.contains("reproduced: yes"), "{stdout}");
}

#[test]
fn a_failing_sim_run_shrinks_exactly_and_its_scenario_still_fails() {
    let store = tempfile::tempdir().unwrap();
    let out = run_line(
        store.path(),
        "--db sim --sim-bug lost-update --sim-replicas 3 --nemesis partition,kill \
         --nemesis-interval 1s --concurrency 8 --key-count 8 --ops 1500 --time-limit 20s \
         --test-name lu",
    );
    assert_eq!(out.status.code(), Some(1), "the bug is caught");
    let run = run_dir(store.path(), "lu");
    let (code, stdout) = shrink(&run, &["--anomaly", "lost-update", "--shrink-budget", "3m"]);
    assert_eq!(code, Some(0), "the shrunk configuration still fails");
    assert!(stdout.contains("shrunk from workers 8"), "{stdout}");
    let report: Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("shrink.json")).unwrap()).unwrap();
    assert_eq!(report["anomalies"], serde_json::json!(["lost-update"]));
    assert_eq!(report["still_fails"]["failed"], 1);
    for dim in ["workers", "keys", "ops", "seconds", "faults"] {
        let (o, s) = sizes(&report, dim);
        eprintln!("{dim}: {o} → {s}");
        assert!(s < o, "{dim}: {o} → {s}");
    }
    assert_eq!(
        sizes(&report, "faults").1,
        0.0,
        "a lost update needs no faults"
    );
    // Deterministic: the scenario (with the run's seed) fails the same way.
    let scenario = std::fs::read_to_string(run.join("shrunk.toml")).unwrap();
    assert!(
        scenario.contains("expect = [\"lost-update\"]"),
        "{scenario}"
    );
    assert!(scenario.contains("nemesis = \"none\""), "{scenario}");
    scenario_reproduces(&run, store.path());
    // A run without an anomaly has nothing to shrink towards.
    let out = run_line(store.path(), "--db sim --ops 100 --test-name fine");
    assert_eq!(out.status.code(), Some(0));
    let out = harness()
        .arg("reproduce")
        .arg(run_dir(store.path(), "fine"))
        .arg("--shrink")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no anomaly"));
}

#[test]
#[ignore = "system test, needs a PostgreSQL server install; .ci/run runs it (~3 min)"]
fn postgres_write_skew_shrinks_within_its_budget_and_still_fails() {
    let store = tempfile::tempdir().unwrap();
    let out = run_line(
        store.path(),
        "--db postgres --local --workload list-append --isolation repeatable-read \
         --expected-consistency-model serializable --concurrency 20 --key-count 8 \
         --time-limit 10s --test-name pg-skew",
    );
    assert_eq!(out.status.code(), Some(1), "write skew at repeatable read");
    let run = run_dir(store.path(), "pg-skew");
    let (code, stdout) = shrink(
        &run,
        &[
            "--anomaly",
            "G2-item",
            "--tries",
            "2",
            "--shrink-budget",
            "150s",
        ],
    );
    assert_eq!(code, Some(0), "still fails: {stdout}");
    let report: Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("shrink.json")).unwrap()).unwrap();
    assert!(report["still_fails"]["failed"].as_u64().unwrap() >= 1);
    assert_eq!(report["still_fails"]["runs"], 2);
    let mut smaller = 0;
    for dim in ["workers", "keys", "seconds"] {
        let (o, s) = sizes(&report, dim);
        eprintln!("{dim}: {o} → {s}");
        assert!(s <= o, "{dim}: {o} → {s}");
        smaller += usize::from(s < o);
    }
    assert!(smaller >= 2, "{report}");
    let scenario = std::fs::read_to_string(run.join("shrunk.toml")).unwrap();
    assert!(scenario.contains("expect = [\"G2-item\"]"), "{scenario}");
    assert!(scenario.contains("local = true"), "{scenario}");
}
