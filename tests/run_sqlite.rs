//! `harness run` end to end with the embedded SQLite default: the README's
//! main command, bad flags, and what SIGINT / SIGKILL leave behind.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod run_common;

use run_common::*;
use std::process::Stdio;

#[test]
fn default_run_completes_valid_with_a_complete_run_dir() {
    let store = tempfile::tempdir().unwrap();
    let out = run(store.path(), &["--time-limit", "5s", "--seed", "1"]);
    assert_eq!(out.status.code(), Some(0), "valid → exit 0");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("valid"), "{stdout}");
    let name = "sqlite-list-append-serializable";
    let dir = run_dir(store.path(), name);
    assert!(
        stdout.contains(&dir.display().to_string()),
        "prints the run dir"
    );
    assert_complete(&dir);
    assert!(dir.join("sqlite.db").is_file());
    assert_eq!(results(&dir)["valid?"], true);
    // A valid run's results carry Jepsen's stats, not only the verdict.
    let stats = &results(&dir)["stats"];
    assert!(stats["counts"]["txn"]["ok"].as_u64() > Some(100), "{stats}");
    assert!(stats["latency-ms"]["txn"]["p99"].is_number(), "{stats}");
    assert!(
        stats["throughput"]["ok-per-s"].as_f64() > Some(0.0),
        "{stats}"
    );
    assert!(results(&dir)["checker-timings"].is_array());
    let (invoke, ok, _fail, info) = counts(&dir);
    assert!(ok > 100, "ok transactions: {ok}");
    assert_eq!(
        info, 0,
        "no indefinite outcomes against an embedded database"
    );
    assert!(invoke >= ok);
    let latest = store.path().join("runs").join("latest");
    assert!(latest.exists(), "store/latest");
    assert_eq!(
        std::fs::canonicalize(&latest).unwrap(),
        std::fs::canonicalize(&dir).unwrap()
    );
    let meta: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("test.json")).unwrap()).unwrap();
    assert_eq!(meta["seed"], 1);
    assert_eq!(
        meta["config"]["expected_consistency_model"],
        "strong-serializable"
    );
    assert_eq!(meta["verdict"], "true");
}

#[test]
fn rw_register_on_sqlite_is_valid() {
    let store = tempfile::tempdir().unwrap();
    let out = run(
        store.path(),
        &[
            "--workload",
            "wr",
            "--ops",
            "1500",
            "--seed",
            "2",
            "--test-name",
            "wr",
        ],
    );
    assert_eq!(out.status.code(), Some(0));
    assert_complete(&run_dir(store.path(), "wr"));
}

#[test]
fn unsupported_isolation_and_bad_flags_exit_3_before_running() {
    let store = tempfile::tempdir().unwrap();
    let out = run(store.path(), &["--isolation", "read-committed"]);
    assert_eq!(out.status.code(), Some(3));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("read-committed") && err.contains("sqlite"),
        "{err}"
    );
    for bad in [
        &["--isolation", "serialisable"][..],
        &["--workload", "banking"],
        &["--expected-consistency-model", "strict-serialisable"],
        &["--concurrency", "0"],
        &["--read-ratio", "2"],
        &["--local"],
        &["--time-limit", "soon"],
    ] {
        let out = run(store.path(), bad);
        assert_eq!(out.status.code(), Some(3), "{bad:?}");
    }
    assert!(
        std::fs::read_dir(store.path()).unwrap().next().is_none(),
        "nothing created for rejected flags"
    );
}

#[test]
fn sigint_mid_run_still_checks_and_reports() {
    let store = tempfile::tempdir().unwrap();
    let child = harness()
        .args([
            "run",
            "--time-limit",
            "60s",
            "--seed",
            "3",
            "--test-name",
            "int",
            "--store",
        ])
        .arg(store.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let history = || {
        std::fs::read_dir(store.path().join("runs").join("int"))
            .ok()
            .and_then(|mut d| d.next())
            .and_then(|e| e.ok())
            .map(|e| e.path().join("history.jsonl"))
    };
    assert!(wait_for(30, || history().is_some_and(|h| {
        std::fs::metadata(h).is_ok_and(|m| m.len() > 10_000)
    })));
    let started = std::time::Instant::now();
    signal(child.id(), "INT");
    let out = child.wait_with_output().unwrap();
    assert!(started.elapsed().as_secs() < 30, "stopped promptly");
    let stdout = String::from_utf8_lossy(&out.stdout);
    eprintln!("{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "a verdict (valid)");
    assert!(stdout.contains("valid"));
    let dir = run_dir(store.path(), "int");
    assert_complete(&dir);
    let (invoke, ok, fail, info) = counts(&dir);
    assert_eq!(invoke, ok + fail + info, "every invocation completed");
}

#[test]
fn sigkill_mid_run_leaves_a_history_harness_check_reads() {
    let store = tempfile::tempdir().unwrap();
    let mut child = harness()
        .args([
            "run",
            "--time-limit",
            "60s",
            "--seed",
            "4",
            "--test-name",
            "kill",
            "--store",
        ])
        .arg(store.path())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let history = || {
        std::fs::read_dir(store.path().join("runs").join("kill"))
            .ok()
            .and_then(|mut d| d.next())
            .and_then(|e| e.ok())
            .map(|e| e.path().join("history.jsonl"))
    };
    // Lines, not bytes: the mapped history log reserves its window (NUL
    // padding) before any line is in it.
    assert!(wait_for(30, || history().is_some_and(|h| {
        std::fs::read(h).is_ok_and(|b| b.iter().filter(|&&c| c == b'\n').count() > 60)
    })));
    signal(child.id(), "KILL");
    child.wait().unwrap();
    let h = history().unwrap();
    let text = std::fs::read_to_string(&h).unwrap();
    assert!(text.lines().count() > 50);
    let out = harness()
        .args([
            "check",
            "--workload",
            "list-append",
            "-c",
            "strict-serializable",
        ])
        .arg(&h)
        .output()
        .unwrap();
    eprintln!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    // The prefix is a well-formed history; open invocations count as info.
    assert!(
        matches!(out.status.code(), Some(0) | Some(2)),
        "harness check reads the killed run's history"
    );
}

#[test]
fn the_default_30_s_run_stores_at_most_50_mb_with_every_report() {
    let store = tempfile::tempdir().unwrap();
    let out = run(store.path(), &["--seed", "11"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let dir = run_dir(store.path(), "sqlite-list-append-serializable");
    assert_complete(&dir);
    let mut total = 0u64;
    for e in std::fs::read_dir(&dir).unwrap() {
        total += e.unwrap().metadata().unwrap().len();
    }
    assert!(total <= 50_000_000, "{total} bytes in {}", dir.display());
    for f in [
        "timeline.html",
        "latency-raw.png",
        "latency-quantiles.svg",
        "rate.png",
        "results.edn",
    ] {
        assert!(dir.join(f).is_file(), "{f} missing");
    }
    assert!(
        !dir.join("history.edn").exists(),
        "EDN only with --keep edn"
    );
    assert!(
        !dir.join("sqlite.db-wal").exists(),
        "the WAL is folded back"
    );
    let (invoke, ok, _, _) = counts(&dir);
    assert!(invoke > 10_000 && ok == invoke, "{invoke} {ok}");
}
