//! Faults without root: kill and pause of a `--local` PostgreSQL cluster
//! (processes this machine started, by pid), and the errors for faults a
//! database off nodes cannot take.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod run_common;

use db_adapters::catalog::{Placement, names_where};
use run_common::*;

/// History lines of process `nemesis`.
fn nemesis_ops(dir: &std::path::Path) -> Vec<serde_json::Value> {
    history_text(dir)
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v["process"] == "nemesis")
        .collect()
}

#[test]
fn network_faults_off_nodes_are_rejected_by_name() {
    let store = tempfile::tempdir().unwrap();
    let out = run(store.path(), &["--db", "sim", "--nemesis", "kill"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_ne!(out.status.code(), Some(0));
    assert!(
        err.contains("--nemesis kill needs a database on --nodes"),
        "{err}"
    );
    let out = run(
        store.path(),
        &[
            "--db",
            "postgres",
            "--local",
            "--nemesis",
            "pause,partition",
        ],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    // The list of databases comes from the catalog, here as in the message.
    let want = format!(
        "--nemesis partition needs a database on --nodes ({}); on the local server only kill, pause, pause-kill and clock",
        names_where(|k| k.placement() != Placement::Embedded)
    );
    assert!(err.contains(&want), "want {want:?} in {err}");
    let out = run(
        store.path(),
        &["--db", "etcd", "--local", "--nemesis", "membership"],
    );
    assert_eq!(out.status.code(), Some(3));
    let err = String::from_utf8_lossy(&out.stderr);
    let members = names_where(|k| k.capabilities().membership);
    assert!(members.contains("etcd"), "{members}");
    let want = format!(
        "--nemesis membership: --db etcd --local has no membership changes (a member set fixed at start); run it on --nodes with --db {members}"
    );
    assert!(err.contains(&want), "want {want:?} in {err}");
    let out = run(
        store.path(),
        &["--db", "postgres", "--local", "--kill-targets", "one,,all"],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--kill-targets: empty target"), "{err}");
}

/// A faulted serializable run on the local server: its run directory,
/// exit code, anomaly types and nemesis ops, after checking that every
/// fault applied and was healed and the final reads ran.
fn faulted_local_run(nemesis: &str, name: &str) -> (Option<i32>, Vec<String>, Vec<String>) {
    let store = tempfile::tempdir().unwrap();
    let out = run(
        store.path(),
        &[
            "--db",
            "postgres",
            "--local",
            "--isolation",
            "serializable",
            "--nemesis",
            nemesis,
            "--nemesis-interval",
            "1s",
            "--time-limit",
            "15s",
            "--concurrency",
            "6",
            "--seed",
            "3",
            "--test-name",
            name,
        ],
    );
    let dir = run_dir(store.path(), name);
    assert_complete(&dir);
    let types = anomaly_types(&results(&dir));
    let ops = nemesis_ops(&dir);
    let fs: Vec<String> = ops
        .iter()
        .filter_map(|o| o["f"].as_str().map(str::to_string))
        .collect();
    // Every fault applied, but where another package's fault was in the
    // way (a pause or kill of a node that is down: said as such).
    assert!(
        ops.iter().all(|o| o["error"]
            .as_str()
            .is_none_or(|e| e.contains("not running") || e.contains("no-op"))),
        "every fault applied: {ops:?}"
    );
    let meta: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("test.json")).unwrap()).unwrap();
    assert_eq!(
        meta["summary"]["final_reads_done"], true,
        "final reads done"
    );
    eprintln!(
        "{name}: exit {:?}, anomalies {types:?}, nemesis {fs:?}",
        out.status.code()
    );
    (out.status.code(), types, fs)
}

/// SIGSTOP/SIGCONT of the local server (no root) while serializable
/// transactions run: valid (PostgreSQL's rare G2-item aside, see
/// run_postgres.rs).
#[test]
#[ignore = "system test, needs a PostgreSQL server install; .ci/run runs it"]
fn local_postgres_pause_without_root_is_healed_and_valid() {
    let (code, types, fs) = faulted_local_run("pause", "pg-local-pause");
    assert!(
        fs.iter().any(|f| f == "pause") && fs.iter().any(|f| f == "resume"),
        "{fs:?}"
    );
    assert!(
        code == Some(0) || types.iter().all(|t| t == "G2-item"),
        "{code:?} {types:?}"
    );
}

/// SIGKILL of the local server and restart (no root): recorded, healed,
/// final reads after the restart. The local cluster runs with
/// `synchronous_commit=off`, so a kill may lose acknowledged commits
/// still in the WAL buffers: the verdict is recorded, not asserted valid.
#[test]
#[ignore = "system test, needs a PostgreSQL server install; .ci/run runs it"]
fn local_postgres_kill_without_root_is_recorded_and_healed() {
    let (code, _types, fs) = faulted_local_run("kill", "pg-local-kill");
    assert!(
        fs.iter().any(|f| f == "kill") && fs.iter().any(|f| f == "start"),
        "{fs:?}"
    );
    assert!(matches!(code, Some(0..=2)), "a verdict: {code:?}");
}

/// A 30 s `--local` PostgreSQL run under kill and pause with `extra`
/// flags: (exit code, test.json, results.json, faults that took effect).
fn local_durability_run(
    name: &str,
    extra: &[&str],
) -> (Option<i32>, serde_json::Value, serde_json::Value, usize) {
    let store = tempfile::tempdir().unwrap();
    let mut args = vec![
        "--db",
        "postgres",
        "--local",
        "--nemesis",
        "kill,pause",
        "--nemesis-interval",
        "2s",
        "--time-limit",
        "30s",
        "--seed",
        "3",
        "--test-name",
        name,
    ];
    args.extend_from_slice(extra);
    let out = run(store.path(), &args);
    let dir = run_dir(store.path(), name);
    assert_complete(&dir);
    let meta: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("test.json")).unwrap()).unwrap();
    let in_force = nemesis_ops(&dir)
        .iter()
        .filter(|o| o["type"] != "invoke" && o["error"].is_null() && o["f"] == "kill")
        .count();
    (out.status.code(), meta, results(&dir), in_force)
}

/// The local server's own settings are part of the record, and a
/// loss they permit is said to follow from them.
#[test]
#[ignore = "system test, needs a PostgreSQL server install; .ci/run runs it"]
fn local_postgres_records_its_durability_settings_and_names_a_loss_they_permit() {
    let (code, meta, res, kills) = local_durability_run("pg-local-settings", &[]);
    assert!(kills > 0, "a kill took effect");
    assert!(matches!(code, Some(0..=2)), "a verdict: {code:?}");
    for (k, v) in [
        ("fsync", "off"),
        ("synchronous_commit", "off"),
        ("full_page_writes", "off"),
    ] {
        assert_eq!(meta["db_settings"][k], v, "{}", meta["db_settings"]);
        assert_eq!(res["db-settings"][k], v, "{}", res["db-settings"]);
    }
    let lost = res["lost-writes"]["count"].as_u64().unwrap_or(0);
    eprintln!("lost acknowledged writes with synchronous_commit=off: {lost}");
    if lost > 0 {
        let permit = res["lost-writes"]["permitted-by"].to_string();
        assert!(
            permit
                .contains("synchronous_commit=off: an acknowledged commit may be lost at a crash"),
            "{permit}"
        );
        assert!(
            res["warnings"]
                .to_string()
                .contains("synchronous_commit=off")
        );
    }
}

/// The same run with durable settings asked by `--db-conf` (applied to the
/// local server and recorded) loses no acknowledged write.
#[test]
#[ignore = "system test, needs a PostgreSQL server install; .ci/run runs it"]
fn local_postgres_with_durable_db_conf_loses_no_acknowledged_write() {
    let (code, meta, res, kills) = local_durability_run(
        "pg-local-durable",
        &["--db-conf", "synchronous_commit=on,fsync=on"],
    );
    assert!(kills > 0, "a kill took effect");
    assert_eq!(meta["db_settings"]["synchronous_commit"], "on");
    assert_eq!(meta["db_settings"]["fsync"], "on");
    assert_eq!(res["db-settings"]["synchronous_commit"], "on");
    assert!(res["lost-writes"]["permitted-by"].is_null());
    assert_eq!(
        res["lost-writes"]["count"].as_u64().unwrap_or(0),
        0,
        "{}",
        res["lost-writes"]
    );
    assert!(matches!(code, Some(0..=2)), "a verdict: {code:?}");
}
