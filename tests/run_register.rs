//! `harness run --workload register` end to end: valid on SQLite
//! and the simulator at serializable, invalid with the simulator's
//! stale-read bug (explained per key), PostgreSQL and MariaDB as system
//! tests.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod run_common;

use run_common::*;

fn register_run(
    store: &std::path::Path,
    extra: &[&str],
    name: &str,
) -> (Option<i32>, serde_json::Value) {
    let mut args = vec![
        "--workload",
        "register",
        "--ops",
        "3000",
        "--time-limit",
        "2m",
        "--concurrency",
        "10",
        "--key-count",
        "5",
        "--seed",
        "28",
        "--test-name",
        name,
    ];
    args.extend_from_slice(extra);
    let out = run(store, &args);
    let dir = run_dir(store, name);
    (out.status.code(), results(&dir))
}

#[test]
fn register_on_sqlite_serializable_is_linearizable() {
    let store = tempfile::tempdir().unwrap();
    let (code, r) = register_run(store.path(), &["--isolation", "serializable"], "reg-sqlite");
    assert_eq!(code, Some(0));
    assert_eq!(r["valid?"], true);
    assert_eq!(r["analyzer"], "wgl");
    assert!(r["key-count"].as_u64().unwrap() >= 5);
    // The history holds Jepsen's register shapes.
    let h = history_text(&run_dir(store.path(), "reg-sqlite"));
    assert!(
        h.contains(r#""f":"cas","value":["#),
        "{}",
        &h[..400.min(h.len())]
    );
}

#[test]
fn register_on_the_simulator_is_linearizable() {
    let store = tempfile::tempdir().unwrap();
    let (code, r) = register_run(store.path(), &["--db", "sim"], "reg-sim");
    assert_eq!(code, Some(0), "{r}");
    assert_eq!(r["valid?"], true);
}

#[test]
fn stale_reads_break_linearizability_and_are_explained() {
    let store = tempfile::tempdir().unwrap();
    let (code, r) = register_run(
        store.path(),
        &["--db", "sim", "--sim-bug", "stale-read"],
        "reg-stale",
    );
    assert_eq!(code, Some(1), "{r}");
    assert_eq!(r["valid?"], false);
    let failing = r["failures"].as_array().unwrap();
    assert!(!failing.is_empty());
    let first = failing[0].as_str().unwrap();
    assert!(r["results"][first]["op"]["description"].is_string());
    let dir = run_dir(store.path(), "reg-stale");
    let text = std::fs::read_to_string(dir.join("linear/linear.txt")).unwrap();
    assert!(
        text.contains("not linearizable") && text.contains("impossible in state"),
        "{text}"
    );
    let html = std::fs::read_to_string(dir.join("linear/linear.html")).unwrap();
    assert!(html.contains("<svg") && html.contains("class=\"bad\""));
}

#[test]
#[ignore = "system test, needs a PostgreSQL server install; .ci/run runs it"]
fn register_on_postgres_serializable_is_linearizable() {
    let store = tempfile::tempdir().unwrap();
    let (code, r) = register_run(
        store.path(),
        &["--db", "postgres", "--local", "--isolation", "serializable"],
        "reg-pg",
    );
    assert_eq!(code, Some(0), "{r}");
    assert_eq!(r["valid?"], true);
}

#[test]
#[ignore = "system test, needs root + the testbed and a MariaDB install; .ci/run runs it"]
fn register_on_mariadb_serializable_is_linearizable() {
    let _lock = nemesis::testbed::TestbedLock::acquire().unwrap();
    testbed_up();
    let store = tempfile::tempdir().unwrap();
    let (code, r) = register_run(
        store.path(),
        &[
            "--db",
            "mariadb",
            "--nodes",
            "testbed",
            "--isolation",
            "serializable",
        ],
        "reg-mariadb",
    );
    assert_eq!(code, Some(0), "{r}");
    assert_eq!(r["valid?"], true);
}
