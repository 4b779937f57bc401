//! `--nemesis membership` against real clusters on the testbed: Galera
//! nodes leave (clean shutdown, data wiped) and join again (SST), and
//! PostgreSQL replicas are removed and re-added (`pg_basebackup`) during a
//! run; the heal joins every removed node before the final reads, and the
//! verdict is recorded. Plus the checks that refuse the package before
//! anything starts, which need nothing.
//!
//! The system tests need root and the testbed; each holds the testbed lock
//! and runs a 20 s main phase (HARNESS_LONG=1: 5 minutes).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

mod run_common;

use nemesis::testbed::TestbedLock;
use run_common::{Down, assert_complete, history_text, results, run, run_dir, testbed_up};
use std::path::Path;

/// Nemesis ops of the run in `dir`, in history order.
fn nemesis_ops(dir: &Path) -> Vec<serde_json::Value> {
    history_text(dir)
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v["process"] == "nemesis")
        .collect()
}

fn time_limit() -> &'static str {
    if std::env::var_os("HARNESS_LONG").is_some_and(|v| v == "1") {
        "300s"
    } else {
        "20s"
    }
}

/// Runs `--nemesis membership` on `db` and checks what every database
/// shares: a verdict, strictly paired leave/join ops whose completions are
/// `[node result]`, at least one leave that happened, the last change a
/// join that restored every member, final reads done, the membership
/// window in `results.json`. Returns the completions (`info` ops).
fn membership_run(db: &str, extra: &[&str], name: &str) -> Vec<serde_json::Value> {
    let store = tempfile::tempdir().unwrap();
    let mut args = vec![
        "--db",
        db,
        "--nodes",
        "testbed",
        "--nemesis",
        "membership",
        "--nemesis-schedule",
        "fixed",
        "--nemesis-interval",
        "4s",
        "--time-limit",
        time_limit(),
        "--concurrency",
        "4",
        "--seed",
        "3",
        "--test-name",
        name,
    ];
    args.extend_from_slice(extra);
    let t = std::time::Instant::now();
    let out = run(store.path(), &args);
    eprintln!("{name}: harness run took {:?}", t.elapsed());
    let code = out.status.code();
    assert!(
        matches!(code, Some(0..=2)),
        "a verdict, got {code:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let dir = run_dir(store.path(), name);
    assert_complete(&dir);
    let ops = nemesis_ops(&dir);
    for pair in ops.chunks(2) {
        assert_eq!(pair.len(), 2, "{ops:?}");
        assert_eq!(pair[0]["type"], "invoke");
        assert_eq!(pair[1]["type"], "info");
        assert_eq!(pair[0]["f"], pair[1]["f"]);
        assert_eq!(pair[1]["value"][0], pair[0]["value"], "[node result]");
    }
    let infos: Vec<serde_json::Value> = ops.into_iter().filter(|o| o["type"] == "info").collect();
    eprintln!("{name}: membership ops {infos:#?}");
    let left = infos
        .iter()
        .filter(|o| o["f"] == "leave" && o["value"][1]["wiped"] == true)
        .count();
    assert!(left >= 1, "a node left: {infos:?}");
    let last = infos.last().unwrap();
    assert_eq!(last["f"], "join", "the last change is a join: {last}");
    assert!(last["error"].is_null(), "{last}");
    assert_eq!(
        last["value"][1]["members"].as_array().map(Vec::len),
        Some(3),
        "full membership after the last join: {last}"
    );
    let meta: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("test.json")).unwrap()).unwrap();
    assert_eq!(meta["summary"]["final_reads_done"], true);
    let r = results(&dir);
    assert!(r["valid?"].is_boolean() || r["valid?"].is_string(), "{r}");
    let stats = r["stats"].to_string();
    assert!(
        stats.contains("\"membership\""),
        "membership window: {stats}"
    );
    infos
}

#[test]
#[ignore = "needs root and the testbed: run by .ci/run"]
fn galera_nodes_leave_and_join_by_sst_and_final_reads_see_every_member() {
    let _lock = TestbedLock::acquire().unwrap();
    let _down = Down;
    testbed_up();
    let infos = membership_run("galera", &["--workload", "append"], "galera-membership");
    let joins: Vec<&serde_json::Value> = infos
        .iter()
        .filter(|o| o["f"] == "join" && o["value"][1]["transfer"].is_string())
        .collect();
    assert!(!joins.is_empty(), "{infos:?}");
    for j in joins {
        // The leave wiped the data directory: only a full SST can rejoin.
        assert_eq!(j["value"][1]["transfer"], "sst", "{j}");
        assert!(j["value"][1]["ms"].as_i64().unwrap() > 0);
    }
}

#[test]
#[ignore = "needs root and the testbed: run by .ci/run"]
fn postgres_replicas_are_removed_and_added_back_and_the_primary_never_leaves() {
    let _lock = TestbedLock::acquire().unwrap();
    let _down = Down;
    testbed_up();
    let infos = membership_run(
        "postgres",
        &["--isolation", "serializable"],
        "pg-membership",
    );
    assert!(
        infos.iter().all(|o| o["value"][0] != "n1"),
        "the primary never leaves: {infos:?}"
    );
    let adds: Vec<&serde_json::Value> = infos
        .iter()
        .filter(|o| o["f"] == "join" && o["value"][1]["transfer"] == "basebackup")
        .collect();
    assert!(!adds.is_empty(), "{infos:?}");
    for a in adds {
        assert!(a["value"][1]["basebackup-ms"].as_i64().unwrap() > 0, "{a}");
    }
}

#[test]
fn membership_on_a_database_without_it_is_refused_before_anything_starts() {
    let store = tempfile::tempdir().unwrap();
    // Unreachable nodes: the refusal comes before any connection.
    let out = run(
        store.path(),
        &[
            "--db",
            "mariadb",
            "--nodes",
            "db1=127.0.0.1",
            "--ssh-port",
            "1",
            "--nemesis",
            "membership",
            "--time-limit",
            "5s",
        ],
    );
    assert_eq!(out.status.code(), Some(3));
    let err = String::from_utf8_lossy(&out.stderr);
    // The supported databases come from the catalog, here as in the message.
    let want = format!(
        "--nemesis membership: --db mariadb has no membership changes (supported: {} on --nodes)",
        db_adapters::catalog::names_where(|k| k.capabilities().membership)
    );
    assert!(err.contains(&want), "want {want:?} in {err}");
    let out = run(
        store.path(),
        &[
            "--db",
            "sqlite",
            "--nemesis",
            "membership",
            "--time-limit",
            "5s",
        ],
    );
    assert_eq!(out.status.code(), Some(3));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--nemesis membership needs a database on --nodes"),
        "{err}"
    );
}
