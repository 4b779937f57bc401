//! `harness run --db etcd` end to end against real etcd members
//! (`/usr/bin/etcd`, Debian `etcd-server`): a `--local` 3-member cluster
//! checked at strict-serializable for list-append and rw-register and for
//! linearizability with the register workload; and a run behind `--url`
//! to a cluster this test starts, one member of which it kills (by pid)
//! and restarts mid-run; `--local --nemesis kill,pause` without root; and
//! `--version-order db` (etcd's revisions replayed by the checker). Each
//! run is 8 s of workload (the faulted one 16 s).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod run_common;

use run_common::*;
use std::time::Duration;

const ETCD: &str = "/usr/bin/etcd";

fn etcd_run(store: &std::path::Path, extra: &[&str], name: &str) -> serde_json::Value {
    let mut args = vec!["--db", "etcd"];
    if !extra.contains(&"--time-limit") {
        args.extend(["--time-limit", "8s"]);
    }
    args.extend(["--concurrency", "6", "--seed", "25", "--test-name", name]);
    args.extend_from_slice(extra);
    let out = run(store, &args);
    let r = results(&run_dir(store, name));
    assert_eq!(out.status.code(), Some(0), "{r}");
    r
}

/// Transactions that committed (`ok`) in a run.
fn oks(store: &std::path::Path, name: &str) -> usize {
    counts(&run_dir(store, name)).1
}

#[test]
#[ignore = "needs the etcd binary (Debian etcd-server): run by .ci/run"]
fn etcd_local_list_append_is_strict_serializable() {
    let store = tempfile::tempdir().unwrap();
    let r = etcd_run(
        store.path(),
        &["--local", "--workload", "append"],
        "etcd-append",
    );
    assert_eq!(r["valid?"], true, "{r}");
    assert!(oks(store.path(), "etcd-append") > 100);
    // The members' data is removed at the end; their logs are kept.
    let dir = run_dir(store.path(), "etcd-append").join("etcd");
    assert!(dir.join("e0.log").exists());
    assert!(!dir.join("e0.etcd").exists());
}

#[test]
#[ignore = "needs the etcd binary (Debian etcd-server): run by .ci/run"]
fn etcd_local_rw_register_is_strict_serializable() {
    let store = tempfile::tempdir().unwrap();
    let r = etcd_run(
        store.path(),
        &["--local", "--workload", "rw-register"],
        "etcd-wr",
    );
    assert_eq!(r["valid?"], true, "{r}");
    assert!(oks(store.path(), "etcd-wr") > 100);
}

#[test]
#[ignore = "needs the etcd binary (Debian etcd-server): run by .ci/run"]
fn etcd_local_register_is_linearizable() {
    let store = tempfile::tempdir().unwrap();
    let r = etcd_run(
        store.path(),
        &["--local", "--workload", "register"],
        "etcd-reg",
    );
    assert_eq!(r["valid?"], true, "{r}");
    assert_eq!(r["analyzer"], "wgl", "{r}");
    let h = history_text(&run_dir(store.path(), "etcd-reg"));
    assert!(h.contains(r#""f":"cas","value":["#));
}

/// Behind `--url` to three members, one of which is killed with SIGKILL
/// 3 s into the run and restarted 3 s later: still valid, and some
/// transactions still commit.
#[test]
#[ignore = "needs the etcd binary (Debian etcd-server): run by .ci/run"]
fn etcd_with_a_member_killed_stays_strict_serializable() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let data = tempfile::tempdir().unwrap();
    let mut cluster = rt
        .block_on(db_adapters::etcd::LocalCluster::start(ETCD, data.path(), 3))
        .unwrap();
    let hosts: Vec<String> = cluster.nodes().into_iter().map(|n| n.host).collect();
    let url = format!("etcd://{}", hosts.join(","));
    let store = tempfile::tempdir().unwrap();
    let store_path = store.path().to_path_buf();
    let runner = std::thread::spawn(move || {
        etcd_run(
            &store_path,
            &["--url", &url, "--workload", "append"],
            "etcd-kill",
        )
    });
    std::thread::sleep(Duration::from_secs(3));
    let pid = cluster.pid(1).unwrap();
    cluster.kill(1);
    assert!(!std::path::Path::new(&format!("/proc/{pid}")).exists());
    std::thread::sleep(Duration::from_secs(3));
    cluster.restart(1).unwrap();
    let r = runner.join().unwrap();
    assert_eq!(r["valid?"], true, "{r}");
    assert!(oks(store.path(), "etcd-kill") > 50);
    drop(cluster);
}

/// History lines of process `nemesis`.
fn nemesis_ops(dir: &std::path::Path) -> Vec<serde_json::Value> {
    history_text(dir)
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v["process"] == "nemesis")
        .collect()
}

/// `--local --nemesis kill,pause` without root: members are killed
/// (SIGKILL by pid, data kept) and restarted, paused and resumed, one at
/// a time; every fault applies, the final reads run, the run is valid at
/// strict serializability.
#[test]
#[ignore = "needs the etcd binary (Debian etcd-server): run by .ci/run"]
fn etcd_local_kill_and_pause_without_root_stay_strict_serializable() {
    let store = tempfile::tempdir().unwrap();
    let name = "etcd-local-faults";
    let r = etcd_run(
        store.path(),
        &[
            "--local",
            "--workload",
            "append",
            "--nemesis",
            "kill,pause",
            "--nemesis-interval",
            "2s",
            "--time-limit",
            "16s",
            "--expected-consistency-model",
            "strict-serializable",
        ],
        name,
    );
    assert_eq!(r["valid?"], true, "{r}");
    let dir = run_dir(store.path(), name);
    let ops = nemesis_ops(&dir);
    // Every fault applied, but where another package's fault was in the
    // way (a pause or kill of a node that is down: said as such).
    assert!(
        ops.iter().all(|o| o["error"]
            .as_str()
            .is_none_or(|e| e.contains("not running") || e.contains("no-op"))),
        "every fault applied: {ops:?}"
    );
    let fs: Vec<&str> = ops.iter().filter_map(|o| o["f"].as_str()).collect();
    for f in ["kill", "start", "pause", "resume"] {
        assert!(fs.contains(&f), "{f} in {fs:?}");
    }
    let meta: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("test.json")).unwrap()).unwrap();
    assert_eq!(meta["summary"]["final_reads_done"], true);
    assert!(oks(store.path(), name) > 100);
    // A restarted member logged its second start on the same data.
    let starts = (0..3)
        .map(|i| {
            std::fs::read_to_string(dir.join(format!("etcd/e{i}.log")))
                .unwrap_or_default()
                .matches("etcdmain: etcd Version")
                .count()
        })
        .max()
        .unwrap();
    assert!(starts >= 2, "some member restarted ({starts} starts)");
}

/// `--version-order db`: every `ok` transaction records etcd's revision
/// (`revision`, `commit-ts`; writers also `txid`/`snapshot`), revisions
/// of writers are distinct, the checker's commit-order replay (the
/// white-box path) runs and finds nothing, and the same history with one
/// read changed is an `expected-order-violation` naming that read — which
/// only the replay reports.
#[test]
#[ignore = "needs the etcd binary (Debian etcd-server): run by .ci/run"]
fn etcd_revisions_are_the_version_order_the_checker_replays() {
    use checker::{AnomalyType, CheckOptions, ConsistencyModel, Workload};
    use store::{Data, History, OpType};
    let store = tempfile::tempdir().unwrap();
    let name = "etcd-version-order";
    let r = etcd_run(
        store.path(),
        &[
            "--local",
            "--workload",
            "wr",
            "--version-order",
            "db",
            "--expected-consistency-model",
            "strict-serializable",
        ],
        name,
    );
    assert_eq!(r["valid?"], true, "{r}");
    let dir = run_dir(store.path(), name);
    let h = store::format::load_history(&dir.join("history.jsonl.gz"))
        .unwrap()
        .0;
    let oks: Vec<usize> = (0..h.len())
        .filter(|&p| h.op_type(p) == OpType::Ok && h.is_txn(p))
        .collect();
    assert!(oks.len() > 100, "{} ok", oks.len());
    assert!(
        oks.iter()
            .all(|&p| checker::whitebox::has_commit_ts(h.extra(p)))
    );
    let mut writer_revs: Vec<i64> = oks
        .iter()
        .filter_map(|&p| checker::whitebox::cert(h.extra(p)).map(|c| c.txid as i64))
        .collect();
    let writers = writer_revs.len();
    writer_revs.sort_unstable();
    writer_revs.dedup();
    assert!(writers > 50);
    assert_eq!(writer_revs.len(), writers, "one revision per writer");
    let mut o = CheckOptions::new(Workload::RwRegister);
    o.models = vec![ConsistencyModel::StrictSerializable];
    assert_eq!(checker::check(&h, &o).valid, checker::Valid::True);
    // Change the first non-nil register read to a value never written.
    let mut ops = h.to_ops();
    let at = ops
        .iter()
        .position(|op| {
            op.op_type == OpType::Ok
                && op
                    .value
                    .txn()
                    .into_iter()
                    .flatten()
                    .any(|m| matches!(m, store::MicroOp::Read(_, store::ReadValue::Scalar(_))))
        })
        .expect("a non-nil read");
    if let store::OpValue::Txn(m) = &mut ops[at].value {
        for x in m.iter_mut() {
            if let store::MicroOp::Read(_, v @ store::ReadValue::Scalar(_)) = x {
                *v = store::ReadValue::Scalar(store::Val::int(-7));
                break;
            }
        }
    }
    let index = ops[at].index;
    assert!(matches!(
        ops[at].extra.iter().find(|(k, _)| k == "commit-ts"),
        Some((_, Data::Vec(_)))
    ));
    let bad = History::new(ops).unwrap();
    let res = checker::check(&bad, &o);
    let found = &res.anomalies[&AnomalyType::ExpectedOrderViolation];
    assert!(found.iter().any(|a| a.ops() == vec![index]), "{found:?}");
}
