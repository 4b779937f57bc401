//! `harness run` against databases on the local testbed, with faults: real
//! Galera, PostgreSQL primary + replica and MariaDB, real partitions, kills
//! and pauses. Needs root and the packages of `.ci/run` (plus rsync for
//! Galera SST). Every test holds the testbed lock and leaves no rule behind.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

mod run_common;

use nemesis::fault::Nemesis;
use nemesis::remote::Remote;
use nemesis::testbed::{Testbed, TestbedLock};
use run_common::{
    Down, anomaly_types, assert_complete, harness, history_text, results, run, run_dir, signal,
    testbed_up, wait_for,
};
use std::path::Path;
use std::sync::Arc;

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// Harness partition rules left on any testbed node.
fn harness_rules_left() -> usize {
    rt().block_on(async {
        let tb = Testbed::current().unwrap();
        let remotes: Vec<Arc<dyn Remote>> = tb.dyn_remotes();
        let rules = Nemesis::new(remotes, None).harness_rules().await.unwrap();
        eprintln!("harness rules left: {rules:?}");
        rules.values().map(Vec::len).sum()
    })
}

fn testbed_down() {
    let out = harness().args(["testbed", "down"]).output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let ns = std::process::Command::new("ip")
        .args(["netns", "list"])
        .output()
        .unwrap();
    let ns = String::from_utf8_lossy(&ns.stdout).to_string();
    assert!(
        !ns.lines().any(|l| l.starts_with("n1 ") || l == "n1"),
        "namespaces left: {ns}"
    );
}

/// History lines of process `nemesis`.
fn nemesis_ops(dir: &Path) -> Vec<serde_json::Value> {
    history_text(dir)
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v["process"] == "nemesis")
        .collect()
}

#[test]
#[ignore = "system test, needs root + the testbed (network namespaces, sshd, iptables); .ci/run runs it"]
fn postgres_on_nodes_with_kills_pauses_and_clock_faults_completes() {
    let _lock = TestbedLock::acquire().unwrap();
    let _down = Down;
    testbed_up();
    let store = tempfile::tempdir().unwrap();
    let out = run(
        store.path(),
        &[
            "--db",
            "postgres",
            "--nodes",
            "testbed",
            "--nemesis",
            "kill,pause,clock",
            "--nemesis-interval",
            "4s",
            "--isolation",
            "serializable",
            "--time-limit",
            "30s",
            "--seed",
            "7",
            "--test-name",
            "pg-faults",
        ],
    );
    assert!(matches!(out.status.code(), Some(0..=2)), "a verdict");
    let dir = run_dir(store.path(), "pg-faults");
    assert_complete(&dir);
    let ops = nemesis_ops(&dir);
    let fs: Vec<String> = ops
        .iter()
        .filter_map(|o| o["f"].as_str().map(str::to_string))
        .collect();
    assert!(fs.iter().any(|f| f == "kill" || f == "pause"), "{fs:?}");
    // PostgreSQL on the nodes runs under libfaketime: clock_timestamp()
    // reads back what the nemesis wrote.
    assert_clock_read_back(&ops, 0.0);
    assert!(dir.join("nodes/n1/postgresql.log").is_file());
    testbed_down();
}

#[test]
#[ignore = "system test, needs root + the testbed (network namespaces, sshd, iptables); .ci/run runs it"]
fn sigint_during_a_partition_removes_every_rule() {
    sigint_during_a_partition(false);
}

#[test]
#[ignore = "system test, needs root + the testbed (network namespaces, sshd, iptables); .ci/run runs it"]
fn a_second_sigint_heals_before_exiting() {
    sigint_during_a_partition(true);
}

/// SIGINT (twice when `twice`: the second one exits at once, after healing)
/// while a partition is in effect; no harness rule may be left.
fn sigint_during_a_partition(twice: bool) {
    let _lock = TestbedLock::acquire().unwrap();
    let _down = Down;
    testbed_up();
    let store = tempfile::tempdir().unwrap();
    let child = harness()
        .args(["run", "--store"])
        .arg(store.path())
        .args([
            "--db",
            "postgres",
            "--nodes",
            "testbed",
            "--nemesis",
            "partition",
            "--partition",
            "one",
            "--nemesis-interval",
            "2s",
            "--time-limit",
            "300s",
            "--test-name",
            "pg-sigint",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let history = || {
        std::fs::read_dir(store.path().join("runs/pg-sigint"))
            .ok()
            .and_then(|mut d| d.next())
            .and_then(|e| e.ok())
            .map(|e| e.path().join("history.jsonl"))
    };
    // Wait until a partition is in effect (its info op is written after it applied).
    let partitioned = wait_for(120, || {
        history()
            .and_then(|h| std::fs::read_to_string(h).ok())
            .is_some_and(|t| {
                t.lines()
                    .any(|l| l.contains("\"start-partition\"") && l.contains("\"info\""))
            })
    });
    assert!(partitioned, "no partition started");
    assert!(harness_rules_left() > 0, "the partition is in effect");
    signal(child.id(), "INT");
    if twice {
        std::thread::sleep(std::time::Duration::from_millis(200));
        signal(child.id(), "INT");
    }
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    eprintln!("{stderr}");
    if twice {
        assert_eq!(out.status.code(), Some(130), "exited at once");
        assert!(stderr.contains("healing faults before exiting"), "{stderr}");
    } else {
        assert!(out.status.code().is_some(), "exited normally");
    }
    assert_eq!(harness_rules_left(), 0, "every rule is gone after SIGINT");
    testbed_down();
}

#[test]
fn unreachable_nodes_are_reported_by_name_before_any_workload() {
    let store = tempfile::tempdir().unwrap();
    let out = run(
        store.path(),
        &[
            "--db",
            "galera",
            "--nodes",
            "db1=127.0.0.1,db2=127.0.0.2,db3=127.0.0.3",
            "--ssh-port",
            "1",
            "--time-limit",
            "5s",
            "--test-name",
            "unreachable",
        ],
    );
    assert_eq!(out.status.code(), Some(4));
    let err = String::from_utf8_lossy(&out.stderr);
    for n in ["db1", "db2", "db3"] {
        assert!(
            err.contains(&format!("node {n}: unreachable")),
            "{n} named: {err}"
        );
    }
}

#[test]
#[ignore = "system test, needs root + the testbed (network namespaces, sshd, iptables); .ci/run runs it"]
fn mariadb_repeatable_read_shows_lost_update() {
    let _lock = TestbedLock::acquire().unwrap();
    let _down = Down;
    testbed_up();
    let store = tempfile::tempdir().unwrap();
    let out = run(
        store.path(),
        &[
            "--db",
            "mariadb",
            "--nodes",
            "testbed",
            "--isolation",
            "repeatable-read",
            "--workload",
            "append",
            "--time-limit",
            "20s",
            "--concurrency",
            "10",
            "--key-count",
            "3",
            "--seed",
            "11",
            "--test-name",
            "mariadb-rr",
        ],
    );
    testbed_down();
    assert_eq!(out.status.code(), Some(1), "invalid at repeatable-read");
    let dir = run_dir(store.path(), "mariadb-rr");
    let r = results(&dir);
    let types = anomaly_types(&r);
    assert!(
        types
            .iter()
            .any(|t| t == "lost-update" || t == "G-single-item"),
        "{types:?}"
    );
    let kind = if types.iter().any(|t| t == "lost-update") {
        "lost-update"
    } else {
        "G-single-item"
    };
    let first = &r["anomalies"][kind][0];
    eprintln!("{kind}: {first}");
    // The explanation names the transactions (op indices) involved.
    let named = first["txns"]
        .as_array()
        .or_else(|| first["cycle"].as_array())
        .map(|a| a.len())
        .unwrap_or(0);
    assert!(named >= 2, "explanation names the transactions: {first}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("T1 = {:index") && stdout.contains("T2 = {:index"),
        "{stdout}"
    );
}

/// Galera on 3 nodes with partition, kill, pause, clock and packet
/// packages running concurrently (staggered, each on its own seeded
/// stream), partitions of two shapes, kills of one node, mariadbd under
/// libfaketime: the windows overlap, the faults hit the nodes asked for,
/// every clock op's offsets are read back from `NOW(6)` as asked, packets
/// were dropped, everything is healed (no rule, control files at `+0`) and
/// the final reads ran. 30 s by default; HARNESS_LONG=1 runs 5 minutes.
///
/// Clock offsets are roachtest's subcritical skews (+200 ms or 0): with
/// Jepsen's mix (bumps up to minutes) a reset moves the faked monotonic
/// clock back by as much, Galera's group-communication timers stall that
/// long (inferred), and the cluster may miss `--heal-timeout` after the
/// final heal (seen once in a full suite: `max_install_timeouts` exceeded
/// on the donor).
/// The 5-minute run with Jepsen's mix is `findings/galera-composed-faults-5min`.
#[test]
#[ignore = "system test, needs root + the testbed (network namespaces, sshd, iptables); .ci/run runs it"]
fn galera_with_overlapping_fault_packages_heals_and_recovers() {
    let _lock = TestbedLock::acquire().unwrap();
    let _down = Down;
    testbed_up();
    let store = tempfile::tempdir().unwrap();
    let long = std::env::var_os("HARNESS_LONG").is_some_and(|v| v == "1");
    let time_limit = if long { "300s" } else { "30s" };
    let out = run(
        store.path(),
        &[
            "--db",
            "galera",
            "--nodes",
            "testbed",
            "--workload",
            "append",
            "--nemesis",
            "partition,kill,pause,clock,packet",
            "--clock-mix",
            "subcritical-skews",
            "--partition",
            "one,majority",
            "--kill-targets",
            "one",
            "--pause-targets",
            "n3",
            "--nemesis-interval",
            "3s",
            "--initial-quiet-period",
            "2s",
            "--time-limit",
            time_limit,
            "--concurrency",
            "6",
            "--seed",
            "13",
            "--test-name",
            "galera-composed",
        ],
    );
    let code = out.status.code();
    assert!(
        matches!(code, Some(0..=2)),
        "a verdict, got {code:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let dir = run_dir(store.path(), "galera-composed");
    assert_complete(&dir);
    // The settings harness imposed on the servers are in the record.
    let test: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("test.json")).unwrap()).unwrap();
    assert_eq!(
        test["db_settings"]["innodb_flush_log_at_trx_commit"], "2",
        "test.json db_settings: {}",
        test["db_settings"]
    );
    assert_eq!(test["db_settings"]["wsrep_on"], "ON");
    assert_eq!(test["db_settings"]["innodb_lock_wait_timeout"], "3");
    let ops = nemesis_ops(&dir);
    // Strictly paired: the nemesis process never has two ops in flight.
    for pair in ops.chunks(2) {
        assert_eq!(pair.len(), 2, "{ops:?}");
        assert_eq!(pair[0]["type"], "invoke");
        assert_eq!(pair[1]["type"], "info");
        assert_eq!(pair[0]["f"], pair[1]["f"]);
    }
    let mut active = std::collections::BTreeSet::new();
    let mut most = 0;
    for o in ops.iter().filter(|o| o["type"] == "info") {
        let f = o["f"].as_str().unwrap_or("");
        match f {
            "start-partition" | "kill" | "pause" | "start-clock" | "start-packet" => {
                active.insert(f.to_string());
            }
            "stop-partition" | "stop-clock" | "stop-packet" => {
                active.remove(&f.replace("stop-", "start-"));
            }
            "start" => {
                active.remove("kill");
            }
            "resume" => {
                active.remove("pause");
            }
            _ => {}
        }
        most = most.max(active.len());
        // What took effect: the node asked, or none when it was down (a
        // kill's no-op, a pause's failure, each said in the error).
        let down = o["error"]
            .as_str()
            .is_some_and(|e| e.contains("not running"));
        if f == "kill" {
            let n = o["value"].as_array().map(Vec::len);
            assert!(n == Some(1) || (down && n == Some(0)), "one: {o}");
        }
        if f == "pause" {
            assert!(
                o["value"] == serde_json::json!(["n3"])
                    || (down && o["value"] == serde_json::json!([])),
                "named: {o}"
            );
        }
    }
    eprintln!(
        "{} nemesis ops, at most {most} fault kinds in effect at once",
        ops.len()
    );
    assert!(most >= 3, "no overlapping fault windows in {ops:?}");
    let part = ops.iter().find(|o| o["f"] == "start-partition").unwrap();
    assert!(part["value"].is_object(), "grudge as value: {part}");
    assert!(
        dir.join("nodes/n1/mariadb-error.log").is_file(),
        "node logs collected"
    );
    assert!(
        dir.join("nodes/n1/mariadb-stdout.log").is_file(),
        "mariadbd's own output collected (a start that fails early writes only there)"
    );
    assert_clock_read_back(&ops, 0.15);
    assert_packets_dropped(&ops);
    let meta: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("test.json")).unwrap()).unwrap();
    assert_eq!(
        meta["summary"]["final_reads_done"], true,
        "final reads done"
    );
    assert_eq!(harness_rules_left(), 0);
    assert_eq!(left_under_libfaketime(), Vec::<String>::new());
    testbed_down();
}

/// Galera at serializable without faults never stands still. A replicated
/// write set can wait for the S locks of a local reader that waits for it
/// in commit order; only `innodb_lock_wait_timeout` ends that, and every
/// commit of the cluster waits meanwhile. At MariaDB's 50 s, 90 of a
/// 110 s run's seconds were such stalls (49 s each, a few commits in all);
/// an SST donor's FLUSH TABLES WITH READ LOCK waits behind the stalled
/// statements, so members that need an SST after a fault wait too.
/// Harness sets the timeout to a few seconds.
#[test]
#[ignore = "system test, needs root + the testbed (network namespaces, sshd, iptables); .ci/run runs it"]
fn galera_at_serializable_without_faults_never_stands_still() {
    let _lock = TestbedLock::acquire().unwrap();
    let _down = Down;
    testbed_up();
    let store = tempfile::tempdir().unwrap();
    let flags = "--db galera --nodes testbed --workload append --isolation serializable \
                 --time-limit 30s --concurrency 6 --seed 13 --test-name galera-calm";
    let out = run(store.path(), &flags.split_whitespace().collect::<Vec<_>>());
    let code = out.status.code();
    assert!(matches!(code, Some(0..=2)), "a verdict, got {code:?}");
    let dir = run_dir(store.path(), "galera-calm");
    let test: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("test.json")).unwrap()).unwrap();
    let wait = db_adapters::mysql::lifecycle::GALERA_LOCK_WAIT_S.to_string();
    assert_eq!(
        test["db_settings"]["innodb_lock_wait_timeout"],
        wait.as_str()
    );
    // Measured: 49 s at MariaDB's default timeout, at most 4 s at 5 s.
    let stall = longest_stall(&history_text(&dir));
    eprintln!("longest stretch with fewer than 5 commits a second: {stall} s");
    assert!(
        stall < 15,
        "{stall} s with fewer than 5 commits a second, no faults"
    );
    testbed_down();
}

/// The longest stretch, in whole seconds of the history, in which fewer
/// than 5 client transactions completed `ok` (a trickle of commits from
/// workers that reconnected does not hide a stall).
fn longest_stall(history: &str) -> usize {
    let mut per_second: Vec<usize> = Vec::new();
    for v in history
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v["type"] == "ok" && v["process"].is_u64())
    {
        let s = (v["time"].as_u64().unwrap_or(0) / 1_000_000_000) as usize;
        if per_second.len() <= s {
            per_second.resize(s + 1, 0);
        }
        per_second[s] += 1;
    }
    let (mut best, mut run) = (0, 0);
    for n in per_second {
        run = if n < 5 { run + 1 } else { 0 };
        best = best.max(run);
    }
    best
}

#[test]
fn a_stall_is_a_stretch_of_seconds_with_few_commits() {
    let op = |t: f64, ty: &str, p: &str| {
        format!(
            r#"{{"time":{},"type":"{ty}","process":{p},"f":"txn","value":[]}}"#,
            (t * 1e9) as u64
        )
    };
    let mut h: Vec<String> = (0..10).map(|i| op(0.1 * f64::from(i), "ok", "0")).collect();
    // Seconds 1-7: two commits and a nemesis op; second 8: five commits.
    h.extend([
        op(2.5, "ok", "1"),
        op(4.0, "info", "\"nemesis\""),
        op(6.2, "ok", "2"),
    ]);
    h.extend((0..5).map(|i| op(8.0 + 0.1 * f64::from(i), "ok", "3")));
    h.extend([op(9.5, "fail", "1")]);
    assert_eq!(longest_stall(&h.join("\n")), 7);
}

/// The clock ops read the databases' clocks; each reading is what the
/// nemesis asked for (within the reading's error bound + 50 ms); some
/// reading was off by more than `moved` seconds; the last clock op reset
/// every node.
fn assert_clock_read_back(ops: &[serde_json::Value], moved: f64) {
    let clock: Vec<&serde_json::Value> = ops
        .iter()
        .filter(|o| o["type"] == "info" && o["f"].as_str().is_some_and(|f| f.ends_with("-clock")))
        .collect();
    assert!(!clock.is_empty(), "clock ops: {ops:?}");
    let mut largest: f64 = 0.0;
    let mut read = 0;
    for o in &clock {
        // A node that is down, paused or outside the primary component
        // is not read: an op may have no reading at all.
        let got = o["value"]["clock-offsets"].as_object().expect("offsets");
        read += got.len();
        for (node, g) in got {
            let want = o["value"]["expected-offsets"][node].as_f64().unwrap();
            let err = o["value"]["clock-offset-errors"][node].as_f64().unwrap();
            let g = g.as_f64().unwrap();
            assert!((g - want).abs() <= err + 0.05, "{node}: {g} vs {want}: {o}");
            largest = largest.max(g.abs());
        }
    }
    assert!(read > 0, "no database clock was read: {clock:?}");
    assert!(
        largest >= moved,
        "a database clock moved by {moved} s: {clock:?}"
    );
    let last = clock.last().unwrap();
    assert_eq!(last["f"], "stop-clock", "{last}");
    assert_eq!(
        last["value"]["reset"],
        serde_json::json!(["n1", "n2", "n3"]),
        "{last}"
    );
}

/// Packet faults dropped packets at about the asked rate.
fn assert_packets_dropped(ops: &[serde_json::Value]) {
    let (mut seen, mut dropped) = (0u64, 0u64);
    for o in ops
        .iter()
        .filter(|o| o["type"] == "info" && o["f"] == "stop-packet")
    {
        for (_, c) in o["value"].as_object().unwrap() {
            if let (Some(s), Some(d)) = (c["seen"].as_u64(), c["dropped"].as_u64()) {
                seen += s;
                dropped += d;
            }
        }
    }
    eprintln!("packets: {dropped} of {seen} dropped (asked 0.2)");
    assert!(dropped > 0, "packets dropped: {ops:?}");
    if seen >= 200 {
        let rate = dropped as f64 / seen as f64;
        assert!((0.1..0.3).contains(&rate), "loss {rate} for 0.2");
    }
}

/// What is left of clock faults on the testbed nodes: a process still
/// under libfaketime (the nodes' processes are visible here: their pid
/// namespaces are children of this one), or a MariaDB control file not at
/// `+0.000` — usually there is none left to read, the run's teardown
/// removes the node directories; the process check is what bites.
fn left_under_libfaketime() -> Vec<String> {
    let mut out = Vec::new();
    for n in ["n1", "n2", "n3"] {
        let f = format!("/var/lib/harness/mariadb/{n}/faketime.rc");
        if let Ok(text) = std::fs::read_to_string(&f)
            && text.trim() != "+0.000"
        {
            out.push(format!("{f}: {text:?}"));
        }
    }
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let env = std::fs::read(e.path().join("environ")).unwrap_or_default();
        let cmd = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
        let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
        if cmd.contains("/var/lib/harness/")
            && env
                .split(|b| *b == 0)
                .any(|v| v.starts_with(b"FAKETIME_TIMESTAMP_FILE="))
        {
            out.push(format!("under libfaketime: {cmd}"));
        }
    }
    out
}
