//! A second SIGINT on a run of a database harness set up on nodes (the
//! testbed) stops it there and removes its node directories before the
//! exit (130): one generic teardown for every database on nodes, checked
//! here for each that runs on this machine. What is left is read from
//! /proc by the node directories in command lines (`--defaults-file=<dir>/
//! my.cnf`, `-D <dir>/data`, `<dir>/patroni.yml`), never by names.
//! Before: mariadbd, postgres, patroni and etcd kept running on the nodes
//! with their directories until the next run's setup.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

mod run_common;

use nemesis::testbed::TestbedLock;
use run_common::interrupt::{interrupt_twice, running_on, spawn_run, wait_line};
use run_common::{Down, wait_for};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The node directories of `base` on `nodes` testbed nodes (`n1`, …),
/// with a trailing `/` so `n1` never matches `n10`.
fn node_dirs(base: &str, nodes: usize) -> Vec<String> {
    (1..=nodes).map(|i| format!("{base}/n{i}/")).collect()
}

/// What runs naming any of `dirs`.
fn running_in(dirs: &[String]) -> Vec<String> {
    dirs.iter().flat_map(|d| running_on(d)).collect()
}

/// The history of the one run of `name` under `store`, once it exists.
fn history(store: &Path, name: &str) -> Option<PathBuf> {
    let d = std::fs::read_dir(store.join("runs").join(name)).ok()?;
    let run = d.flatten().next()?.path();
    Some(run.join("history.jsonl"))
}

/// Runs `--db db --nodes testbed:N` (N: `nodes`) with `flags`, waits for
/// the main phase to have recorded transactions while the servers run in
/// the node directories under each of `bases`, interrupts it twice and
/// returns its stderr, having checked the exit code (130) and the time to
/// exit (the heal and the teardown are bounded by 30 s each).
fn interrupted_in_the_main_phase(db: &str, nodes: usize, bases: &[&str], flags: &[&str]) -> String {
    let store = tempfile::tempdir().unwrap();
    let name = format!("{db}-sigint");
    let testbed = format!("testbed:{nodes}");
    let mut args = vec![
        "--db",
        db,
        "--nodes",
        &testbed,
        "--time-limit",
        "600s",
        "--test-name",
        &name,
    ];
    args.extend_from_slice(flags);
    let (child, rx) = spawn_run(store.path(), &args);
    assert!(wait_line(&rx, "run directory", 120), "the run starts");
    let recorded = || {
        history(store.path(), &name)
            .and_then(|h| std::fs::metadata(h).ok())
            .is_some_and(|m| m.len() > 20_000)
    };
    assert!(wait_for(600, recorded), "transactions recorded");
    let dirs: Vec<String> = bases.iter().flat_map(|b| node_dirs(b, nodes)).collect();
    let before = running_in(&dirs);
    assert!(
        !before.is_empty(),
        "servers run in {dirs:?} before the signals"
    );
    eprintln!("running before the signals:\n{}", before.join("\n"));
    let (code, took, stderr) = interrupt_twice(child, 100);
    assert_eq!(code, Some(130), "{stderr}");
    assert!(took < Duration::from_secs(90), "exits, not hangs: {took:?}");
    stderr
}

/// Nothing runs in `dirs` and none of them exists, right after the exit.
fn assert_nothing_left(dirs: &[String]) {
    let left = running_in(dirs);
    assert!(left.is_empty(), "still running: {left:?}");
    for d in dirs {
        assert!(!Path::new(d).exists(), "{d} left behind");
    }
}

/// The whole check for `db`: interrupted, torn down, said so, nothing left.
fn leaves_nothing(db: &str, nodes: usize, bases: &[&str]) {
    let _lock = TestbedLock::acquire().unwrap();
    let _down = Down;
    let stderr = interrupted_in_the_main_phase(db, nodes, bases, &[]);
    assert!(
        stderr.contains(&format!("stopped and removed {db} on nodes n1")),
        "{stderr}"
    );
    let dirs: Vec<String> = bases.iter().flat_map(|b| node_dirs(b, nodes)).collect();
    assert_nothing_left(&dirs);
}

#[test]
#[ignore = "system test, needs root and the testbed: run by .ci/run"]
fn a_second_sigint_on_mariadb_on_a_node_leaves_no_server_and_no_node_directory() {
    leaves_nothing("mariadb", 1, &["/var/lib/harness/mariadb"]);
}

#[test]
#[ignore = "system test, needs root and the testbed: run by .ci/run"]
fn a_second_sigint_on_galera_leaves_no_server_and_no_node_directory() {
    leaves_nothing("galera", 3, &["/var/lib/harness/mariadb"]);
}

#[test]
#[ignore = "system test, needs root and the testbed: run by .ci/run"]
fn a_second_sigint_on_postgres_on_nodes_leaves_no_server_and_no_node_directory() {
    leaves_nothing("postgres", 2, &["/var/lib/harness/postgres"]);
}

#[test]
#[ignore = "system test, needs root and the testbed: run by .ci/run"]
fn a_second_sigint_on_patroni_leaves_no_server_no_dcs_and_no_node_directory() {
    leaves_nothing(
        "patroni",
        3,
        &["/var/lib/harness/patroni", "/var/lib/harness/patroni-etcd"],
    );
}

/// With `--leave-db-running` the exit tears nothing down and says so; the
/// next run's setup removes what was left (then its own teardown).
#[test]
#[ignore = "system test, needs root and the testbed: run by .ci/run"]
fn a_second_sigint_with_leave_db_running_leaves_the_server_on_purpose() {
    let _lock = TestbedLock::acquire().unwrap();
    let _down = Down;
    let base = "/var/lib/harness/mariadb";
    let stderr = interrupted_in_the_main_phase("mariadb", 1, &[base], &["--leave-db-running"]);
    assert!(
        stderr.contains("left mariadb on nodes n1 running on purpose (--leave-db-running)"),
        "{stderr}"
    );
    assert!(!stderr.contains("stopped and removed mariadb"), "{stderr}");
    let dirs = node_dirs(base, 1);
    assert!(!running_in(&dirs).is_empty(), "the server still runs");
    assert!(Path::new(&dirs[0]).is_dir(), "its directory is kept");
    let store = tempfile::tempdir().unwrap();
    let out = run_common::run(
        store.path(),
        &[
            "--db",
            "mariadb",
            "--nodes",
            "testbed:1",
            "--time-limit",
            "2s",
        ],
    );
    assert!(matches!(out.status.code(), Some(0..=2)), "a verdict");
    assert_nothing_left(&dirs);
}

/// During setup (the first Galera server up, the others still to join) a
/// second SIGINT leaves nothing either: the exit's entry is made before
/// setup starts. No history yet proves the signals came during setup.
#[test]
#[ignore = "system test, needs root and the testbed: run by .ci/run"]
fn a_second_sigint_during_galera_setup_leaves_no_server_and_no_node_directory() {
    let _lock = TestbedLock::acquire().unwrap();
    let _down = Down;
    let store = tempfile::tempdir().unwrap();
    let name = "galera-setup";
    let args = [
        "--db",
        "galera",
        "--nodes",
        "testbed:3",
        "--test-name",
        name,
    ];
    let (child, rx) = spawn_run(store.path(), &args);
    assert!(wait_line(&rx, "run directory", 120), "the run starts");
    let dirs = node_dirs("/var/lib/harness/mariadb", 3);
    let first = format!("--defaults-file={}my.cnf", dirs[0]);
    assert!(
        wait_for(300, || !running_on(&first).is_empty()),
        "the first server starts"
    );
    let (code, _, stderr) = interrupt_twice(child, 100);
    assert_eq!(code, Some(130), "{stderr}");
    let recorded = history(store.path(), name)
        .and_then(|h| std::fs::metadata(h).ok())
        .map_or(0, |m| m.len());
    assert_eq!(recorded, 0, "signalled during setup, before the main phase");
    assert!(
        stderr.contains("stopped and removed galera on nodes n1, n2, n3"),
        "{stderr}"
    );
    assert_nothing_left(&dirs);
}
