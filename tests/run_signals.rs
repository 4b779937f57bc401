//! A second SIGINT ends `harness run` at once with exit 130 in every phase,
//! leaving a readable history and no temporary file; a real child process
//! receives real signals.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod run_common;

use run_common::interrupt::{interrupt_twice, running_on, spawn_run, wait_line};
use run_common::*;
use std::path::{Path, PathBuf};
use std::time::Duration;

fn only_run_dir(store: &Path, name: &str) -> PathBuf {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(store.join("runs").join(name))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(dirs.len(), 1, "{dirs:?}");
    dirs.remove(0)
}

/// No `*.tmp` left in the run directory or its `elle/`.
fn assert_no_tmp(dir: &Path) {
    for d in [dir.to_path_buf(), dir.join("elle")] {
        for e in std::fs::read_dir(&d).into_iter().flatten() {
            let name = e.unwrap().file_name().to_string_lossy().into_owned();
            assert!(!name.ends_with(".tmp"), "{name} left in {}", d.display());
        }
    }
}

/// `harness check` reads the run's history (whichever copy is there).
fn assert_history_readable(dir: &Path) {
    let plain = dir.join("history.jsonl");
    let h = if plain.exists() {
        plain
    } else {
        dir.join("history.jsonl.gz")
    };
    let out = harness()
        .args(["check", "--workload", "list-append"])
        .arg(&h)
        .output()
        .unwrap();
    assert!(
        matches!(out.status.code(), Some(0..=2)),
        "{}: {}",
        h.display(),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn a_second_sigint_in_the_main_phase_exits_130() {
    let store = tempfile::tempdir().unwrap();
    let (child, rx) = spawn_run(
        store.path(),
        &["--time-limit", "60s", "--seed", "5", "--test-name", "main"],
    );
    assert!(wait_line(&rx, "run directory", 60));
    let dir = only_run_dir(store.path(), "main");
    assert!(wait_for(60, || std::fs::metadata(
        dir.join("history.jsonl")
    )
    // Megabytes of history, so the check, reports and compression after
    // the first signal outlast the 300 ms before the second.
    .is_ok_and(|m| m.len() > 8_000_000)));
    let (code, took, stderr) = interrupt_twice(child, 300);
    assert_eq!(code, Some(130), "{stderr}");
    assert!(took < Duration::from_secs(30), "exits, not hangs: {took:?}");
    assert!(stderr.contains("exiting now (130)"), "{stderr}");
    assert_no_tmp(&dir);
    assert_history_readable(&dir);
}

#[test]
fn a_second_sigint_while_checking_exits_130_without_a_verdict() {
    // Before: the check, reports and compression went on and the exit code
    // was 0 or 1, though the run had said "signal again to exit now".
    let store = tempfile::tempdir().unwrap();
    let (child, rx) = spawn_run(
        store.path(),
        &[
            "--db",
            "sim",
            "--sim-bug",
            "lost-update",
            "--ops",
            "200000",
            "--seed",
            "6",
            "--test-name",
            "check",
        ],
    );
    assert!(
        wait_line(&rx, "checking the history", 300),
        "reached the check"
    );
    let (code, took, stderr) = interrupt_twice(child, 300);
    assert_eq!(code, Some(130), "{stderr}");
    assert!(took < Duration::from_secs(30), "exits, not hangs: {took:?}");
    assert!(stderr.contains("the run is finishing"), "{stderr}");
    let dir = only_run_dir(store.path(), "check");
    assert!(!dir.join("results.json").exists(), "no verdict was written");
    assert_no_tmp(&dir);
    assert_history_readable(&dir);
}

/// A second SIGINT on a `--local` PostgreSQL run used to exit 130
/// and leave the postmaster running and its data directory behind (until a
/// later `--local` run reaped them). Now the server is stopped and its
/// directory removed before the exit; checked by the pid and the path this
/// run recorded, never by name.
#[test]
#[ignore = "system test, needs a PostgreSQL server install; .ci/run runs it"]
fn a_second_sigint_on_a_local_postgres_run_leaves_no_server_and_no_data_directory() {
    let store = tempfile::tempdir().unwrap();
    let (child, rx) = spawn_run(
        store.path(),
        &[
            "--db",
            "postgres",
            "--local",
            "--nemesis",
            "pause",
            "--nemesis-interval",
            "1s",
            "--time-limit",
            "60s",
            "--test-name",
            "pg-sigint",
        ],
    );
    assert!(wait_line(&rx, "run directory", 120));
    let dir = only_run_dir(store.path(), "pg-sigint");
    // The run links its cluster directory while the server runs.
    let mut base = None;
    assert!(wait_for(120, || {
        base = std::fs::read_link(dir.join("postgres")).ok();
        base.as_ref()
            .is_some_and(|b| b.join("data").join("postmaster.pid").exists())
    }));
    let base = base.unwrap();
    // Some transactions and a fault or two first.
    some_transactions_and_faults(&dir);
    let pid: u32 = std::fs::read_to_string(base.join("data").join("postmaster.pid"))
        .ok()
        .and_then(|s| s.lines().next()?.trim().parse().ok())
        .expect("a postmaster pid");
    let alive = |pid: u32| {
        std::fs::read(format!("/proc/{pid}/cmdline"))
            .is_ok_and(|c| String::from_utf8_lossy(&c).contains("postgres"))
    };
    // Running, or paused by the nemesis (the harder case: a stopped
    // postmaster answers no SIGQUIT until it is continued).
    assert!(alive(pid), "the postmaster {pid} runs before the signals");
    // 100 ms apart: a short run's check may end before a later second
    // signal (then nothing is left either, but exit 130 is the case here).
    let (code, took, stderr) = interrupt_twice(child, 100);
    assert_eq!(code, Some(130), "{stderr}");
    assert!(took < Duration::from_secs(60), "exits, not hangs: {took:?}");
    // Said when the exit stopped it (the run may have stopped it itself
    // between the signals).
    eprintln!(
        "stopped at the exit: {}",
        stderr.contains("stopped and removed local PostgreSQL")
    );
    // Right after the exit: every process harness started is gone — the
    // postmaster, its backends, and a `pg_ctl stop` the run had in flight
    // (killed with its process group by the exit cleanup) — and so is the
    // directory.
    assert!(!alive(pid), "postmaster {pid} left running");
    assert!(!base.exists(), "{} left behind", base.display());
    assert!(!dir.join("postgres").exists(), "the link is removed");
    let left = running_on(&base.to_string_lossy());
    assert!(left.is_empty(), "still running: {left:?}");
}

/// Waits for 20 kB of history, then 3 s more (a fault or two).
fn some_transactions_and_faults(dir: &Path) {
    assert!(wait_for(60, || std::fs::metadata(
        dir.join("history.jsonl")
    )
    .is_ok_and(|m| m.len() > 20_000)));
    std::thread::sleep(Duration::from_secs(3));
}

/// The same for a local etcd cluster (`--db etcd --local`, three members
/// under the run directory): after the second SIGINT no member runs and no
/// member's data directory is left, read from /proc right after the exit.
#[test]
#[ignore = "system test, needs etcd installed; .ci/run runs it"]
fn a_second_sigint_on_a_local_etcd_run_leaves_no_member_and_no_data_directory() {
    let store = tempfile::tempdir().unwrap();
    let pause = ["--nemesis", "pause", "--nemesis-interval", "1s"];
    let (child, dir) = local_etcd_run(store.path(), "etcd-sigint", &pause);
    let path = dir.join("etcd").to_string_lossy().into_owned();
    assert!(
        wait_for(120, || running_on(&path).len() >= 3),
        "members start"
    );
    some_transactions_and_faults(&dir);
    assert!(
        !running_on(&path).is_empty(),
        "members run before the signals"
    );
    let (code, _, stderr) = interrupt_twice(child, 100);
    assert_eq!(code, Some(130), "{stderr}");
    assert_no_member_left(&dir.join("etcd"));
}

/// The case the exit used to miss, made certain: a paused postmaster keeps
/// `pg_ctl stop -w` waiting (up to its `-t 20`); the exit cleanup run then
/// (what a second Ctrl-C runs before exiting) kills that `pg_ctl` with its
/// process group, stops the server and removes its directory — nothing is
/// left right after it returns, read from /proc.
#[test]
#[ignore = "system test, needs a PostgreSQL server install; .ci/run runs it"]
fn the_exit_cleanup_kills_a_pg_ctl_stop_in_flight() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let run_dir = tempfile::tempdir().unwrap();
    {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(run_dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let cluster = rt
        .block_on(db_adapters::postgres::local::LocalCluster::start(
            run_dir.path(),
        ))
        .unwrap();
    let pid = cluster.pid().expect("a postmaster");
    let base = cluster.data_dir().parent().unwrap().to_path_buf();
    let path = base.to_string_lossy().into_owned();
    signal(pid, "STOP");
    let stopping = rt.spawn(cluster.stop());
    assert!(
        wait_for(30, || running_on(&path)
            .iter()
            .any(|c| c.contains("pg_ctl") && c.contains(" stop"))),
        "pg_ctl stop waits for the paused server: {:?}",
        running_on(&path)
    );
    let done = db_adapters::exit_cleanup::run_all();
    assert!(
        done.iter()
            .any(|d| d.starts_with("stopped and removed pg_ctl stop (process group")),
        "{done:?}"
    );
    let left = running_on(&path);
    assert!(left.is_empty(), "still running: {left:?}");
    assert!(!base.exists(), "{} left behind", base.display());
    // The interrupted stop ends too (its pg_ctl was killed).
    let _ = rt.block_on(stopping);
}

/// The local etcd's start-up window: its exit cleanup used to be registered
/// only once every member answered, so a second SIGINT while the members
/// were starting left them running with their data. Now it is registered
/// before the first member starts; signalled right after the first member's
/// process appears (before the main phase: no history yet), nothing is left.
#[test]
#[ignore = "system test, needs etcd installed; .ci/run runs it"]
fn a_second_sigint_while_the_local_etcd_starts_leaves_no_member_and_no_data_directory() {
    let store = tempfile::tempdir().unwrap();
    let (child, dir) = local_etcd_run(store.path(), "etcd-startup", &[]);
    let path = dir.join("etcd").to_string_lossy().into_owned();
    let mut first = Vec::new();
    for _ in 0..60_000 {
        first = running_on(&path);
        if !first.is_empty() {
            break;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    assert!(!first.is_empty(), "a member starts");
    let (code, _, stderr) = interrupt_twice(child, 20);
    assert_eq!(code, Some(130), "{stderr}");
    let history = std::fs::metadata(dir.join("history.jsonl")).map_or(0, |m| m.len());
    assert_eq!(
        history, 0,
        "signalled during start-up, before the main phase"
    );
    assert!(
        stderr.contains(&format!("stopped and removed local etcd in {path}")),
        "{stderr}"
    );
    assert_no_member_left(&dir.join("etcd"));
}

/// Starts a `--db etcd --local` register run named `name` with `extra`
/// flags; the child and its run directory, once it is named.
fn local_etcd_run(store: &Path, name: &str, extra: &[&str]) -> (std::process::Child, PathBuf) {
    let mut args = vec!["--db", "etcd", "--local", "--workload", "register"];
    args.extend_from_slice(extra);
    args.extend_from_slice(&["--time-limit", "60s", "--test-name", name]);
    let (child, rx) = spawn_run(store, &args);
    assert!(wait_line(&rx, "run directory", 120));
    (child, only_run_dir(store, name))
}

/// No process names the local etcd's directory `etcd` and no member's
/// data directory is left in it, right after the exit.
fn assert_no_member_left(etcd: &Path) {
    let left = running_on(&etcd.to_string_lossy());
    assert!(left.is_empty(), "still running: {left:?}");
    let data = member_dirs(etcd);
    assert!(data.is_empty(), "member data directories left: {data:?}");
}

/// The members' data directories (`*.etcd`) under a local etcd's directory.
fn member_dirs(etcd: &Path) -> Vec<String> {
    std::fs::read_dir(etcd)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".etcd"))
        .collect()
}
