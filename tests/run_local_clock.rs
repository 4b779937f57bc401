//! Clock faults without root: a `--local` PostgreSQL started under
//! libfaketime, bumped and strobed by `--nemesis clock`; the offsets read
//! from `clock_timestamp()` are recorded on the nemesis ops and plotted;
//! nothing of the run is left behind (its own processes and files: see
//! `ClockRun`; other clock faults may run on the machine meanwhile); rate
//! skews (`--clock-rate`) restart the server under `+<offset> x<rate>` and
//! its clock drifts as asked. Plus the errors for databases and placements
//! clock faults cannot reach, and the ±1 h self-test under load.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod run_common;

use run_common::*;
use std::path::Path;

/// How far a recorded offset may be from what the control file said. The
/// read is bracketed by the harness clock (error ≤ half its round trip,
/// ~1 ms here); measured differences were below 5 ms.
const TOLERANCE_S: f64 = 0.05;

/// History lines of process `nemesis`.
fn nemesis_ops(dir: &Path) -> Vec<serde_json::Value> {
    history_text(dir)
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v["process"] == "nemesis")
        .collect()
}

/// The clock runs below take turns: each measures offsets to within
/// [`TOLERANCE_S`] and latencies of its own loaded server, which a second
/// loaded cluster on the same cores would disturb.
static ONE_CLOCK_RUN_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn one_clock_run_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    ONE_CLOCK_RUN_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A `harness run --local` of this test with a temp dir of its own
/// (`TMPDIR`): the cluster it makes, and the libfaketime control file in
/// it, live under that directory, so the checks that nothing is left
/// behind look at this run's processes and files only. Other clock faults
/// may run on the machine meanwhile (CI runs the testbed's tests, clock
/// faults on nodes included, in a second stream at the same time);
/// `zz_after_suite` checks the whole machine after both streams.
struct ClockRun {
    tmp: tempfile::TempDir,
}

impl ClockRun {
    fn new() -> ClockRun {
        use std::os::unix::fs::PermissionsExt as _;
        let tmp = tempfile::tempdir().unwrap();
        // As root the server runs as `postgres`, which must reach its cluster.
        std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        ClockRun { tmp }
    }

    /// `harness run --store <store> <args>`; also returns the most processes
    /// of this run seen under libfaketime at once while it ran (polled), the
    /// proof that [`ClockRun::preloaded`] finds the run's server.
    fn run(&self, store: &Path, args: &[&str]) -> (std::process::Output, usize) {
        use std::process::Stdio;
        let child = harness()
            .env("TMPDIR", self.tmp.path())
            .arg("run")
            .arg("--store")
            .arg(store)
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let waiter = std::thread::spawn(move || child.wait_with_output().unwrap());
        let mut most = 0;
        while !waiter.is_finished() {
            most = most.max(self.preloaded().len());
            std::thread::sleep(std::time::Duration::from_millis(200));
        }
        let out = waiter.join().unwrap();
        show_run(store, args, &out);
        (out, most)
    }

    /// Processes with libfaketime mapped whose control file lies under this
    /// run's temp dir (readable ones: as root, all).
    fn preloaded(&self) -> Vec<u32> {
        let ours = format!("FAKETIME_TIMESTAMP_FILE={}/", self.tmp.path().display());
        std::fs::read_dir("/proc")
            .unwrap()
            .flatten()
            .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
            .filter(|p| {
                std::fs::read(format!("/proc/{p}/environ")).is_ok_and(|env| {
                    env.split(|b| *b == 0)
                        .any(|v| v.starts_with(ours.as_bytes()))
                })
            })
            .filter(|p| {
                std::fs::read_to_string(format!("/proc/{p}/maps"))
                    .is_ok_and(|m| m.contains("libfaketime") || m.contains("libharness-walltime"))
            })
            .collect()
    }

    /// Control files of this run's local clusters still on disk with an
    /// offset.
    fn offset_control_files(&self) -> Vec<String> {
        std::fs::read_dir(self.tmp.path())
            .unwrap()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().starts_with("harness-pg-"))
            .filter_map(|e| {
                let f = e.path().join("faketime.rc");
                let spec = std::fs::read_to_string(&f).ok()?;
                (spec.trim() != "+0.000").then(|| format!("{}: {spec}", f.display()))
            })
            .collect()
    }
}

/// Kills and reaps a child when dropped (also when the test panics).
struct Reaped(std::process::Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// What the checks after a clock run look at: a process under libfaketime
/// whose control file is in the run's temp dir counts, one whose control
/// file is elsewhere (another run's, another stream's) does not, and an
/// offset control file counts only in the run's own temp dir.
#[test]
#[ignore = "needs libfaketime: run by .ci/run"]
fn only_the_runs_own_faked_processes_and_control_files_count() {
    let clock = ClockRun::new();
    let elsewhere = tempfile::tempdir().unwrap();
    let faked = |dir: &Path| {
        let rc = dir.join("harness-pg-1-2").join("faketime.rc");
        std::fs::create_dir_all(rc.parent().unwrap()).unwrap();
        std::fs::write(&rc, "+5.000").unwrap();
        let mut cmd = std::process::Command::new("sleep");
        cmd.arg("30");
        for (k, v) in nemesis::clock::preload_env(&rc, false) {
            cmd.env(k, v);
        }
        Reaped(cmd.spawn().unwrap())
    };
    let theirs = faked(elsewhere.path());
    assert!(
        wait_for(10, || preloaded(theirs.0.id())),
        "libfaketime mapped"
    );
    assert!(clock.preloaded().is_empty(), "{:?}", clock.preloaded());
    assert!(clock.offset_control_files().is_empty());
    let ours = faked(clock.tmp.path());
    assert!(wait_for(10, || clock.preloaded() == [ours.0.id()]));
    assert_eq!(clock.offset_control_files().len(), 1);
    drop(ours);
    assert!(clock.preloaded().is_empty(), "{:?}", clock.preloaded());
}

/// Whether process `pid` has libfaketime mapped.
fn preloaded(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/maps"))
        .is_ok_and(|m| m.contains("libfaketime") || m.contains("libharness-walltime"))
}

#[test]
fn clock_faults_where_they_cannot_reach_are_rejected_with_the_reason() {
    let store = tempfile::tempdir().unwrap();
    for (args, want) in [
        (
            vec!["--db", "sqlite", "--nemesis", "clock"],
            "--nemesis clock: --db sqlite: SQLite runs inside the harness process",
        ),
        (
            vec!["--db", "sim", "--nemesis", "kill,clock"],
            "--nemesis clock: --db sim has clocks only on simulated replicas",
        ),
        (
            vec![
                "--db",
                "sim",
                "--sim-replicas",
                "3",
                "--nemesis",
                "clock",
                "--clock-rate",
                "1.1",
            ],
            "rate skew is not simulated",
        ),
        (
            vec!["--db", "postgres", "--local", "--clock-rate", "1.1"],
            "add --nemesis clock",
        ),
        (
            vec!["--db", "postgres", "--local", "--clock-mix", "strobe-skews"],
            "add --nemesis clock",
        ),
        (
            vec![
                "--db",
                "postgres",
                "--local",
                "--nemesis",
                "clock",
                "--clock-rate",
                "0.9",
            ],
            "give a factor above 1",
        ),
        (
            vec!["--db", "etcd", "--nemesis", "clock"],
            "etcd is a Go binary",
        ),
        (
            vec![
                "--db",
                "postgres",
                "--url",
                "postgres://127.0.0.1:1/x",
                "--nemesis",
                "clock",
            ],
            "behind --url the server runs already",
        ),
        (
            vec![
                "--db",
                "patroni",
                "--nodes",
                "n1,n2,n3",
                "--nemesis",
                "clock",
            ],
            "Patroni starts PostgreSQL itself",
        ),
    ] {
        let out = run(store.path(), &args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(3), "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
    }
    assert!(
        !store.path().join("runs").exists()
            || std::fs::read_dir(store.path().join("runs"))
                .unwrap()
                .next()
                .is_none(),
        "nothing started"
    );
}

/// `--nemesis clock` on `--local` PostgreSQL at serializable: bumps and
/// strobes happen, every recorded offset is what the control file said,
/// the plot and the CSV are written, the run is valid, and no process of
/// the run under libfaketime nor control file with an offset is left.
#[test]
#[ignore = "needs PostgreSQL binaries and libfaketime: run by .ci/run"]
fn local_postgres_clock_bump_and_strobe_are_measured_and_valid() {
    let _alone = one_clock_run_at_a_time();
    let store = tempfile::tempdir().unwrap();
    let name = "pg-local-clock";
    let clock = ClockRun::new();
    let (out, seen) = clock.run(
        store.path(),
        &[
            "--db",
            "postgres",
            "--local",
            "--isolation",
            "serializable",
            "--nemesis",
            "clock",
            "--nemesis-interval",
            "1s",
            "--time-limit",
            "20s",
            "--concurrency",
            "6",
            "--seed",
            "5",
            "--test-name",
            name,
        ],
    );
    let dir = run_dir(store.path(), name);
    assert_complete(&dir);
    let ops = nemesis_ops(&dir);
    let infos: Vec<&serde_json::Value> = ops.iter().filter(|o| o["type"] == "info").collect();
    assert!(
        infos.iter().all(|o| o["error"].is_null()),
        "every clock op applied: {infos:?}"
    );
    let kinds = |k: &str| infos.iter().filter(|o| o["value"][k].is_object()).count();
    assert!(
        kinds("bump") >= 1 && kinds("strobe") >= 1,
        "bumps and strobes: {infos:?}"
    );
    let mut measured = 0;
    let mut worst: f64 = 0.0;
    let mut largest: f64 = 0.0;
    for o in &infos {
        let offsets = o["value"]["clock-offsets"].as_object().expect("offsets");
        for (node, got) in offsets {
            let got = got.as_f64().unwrap();
            let want = o["value"]["expected-offsets"][node].as_f64().unwrap();
            worst = worst.max((got - want).abs());
            largest = largest.max(want.abs());
            measured += 1;
        }
    }
    eprintln!(
        "{measured} offsets measured, largest asked {largest:.3} s, worst difference {worst:.4} s"
    );
    assert!(measured >= infos.len(), "every op measured the node");
    assert!(largest > 0.01, "some offset was not zero");
    assert!(worst < TOLERANCE_S, "worst difference {worst} s");
    let last = infos.last().unwrap();
    assert_eq!(last["f"], "stop-clock", "the package ends with a reset");
    assert!(
        last["value"]["clock-offsets"]["local"]
            .as_f64()
            .unwrap()
            .abs()
            < TOLERANCE_S,
        "{last}"
    );
    for f in ["clock-skew.svg", "clock-skew.png", "clock-offsets.csv"] {
        assert!(dir.join(f).is_file(), "{f} written");
    }
    let svg = std::fs::read_to_string(dir.join("clock-skew.svg")).unwrap();
    assert!(
        svg.contains("clock offset per node") && svg.contains("local"),
        "plot"
    );
    let csv = std::fs::read_to_string(dir.join("clock-offsets.csv")).unwrap();
    assert_eq!(csv.lines().count(), measured + 1, "{csv}");
    if let Err(e) = postgres_serializable_outcome(&dir, out.status.code()) {
        panic!("{e}");
    }
    assert!(seen > 0, "the run's server ran under libfaketime");
    assert!(
        clock.preloaded().is_empty(),
        "no process of the run runs under libfaketime after it: {:?}",
        clock.preloaded()
    );
    assert!(
        clock.offset_control_files().is_empty(),
        "{:?}",
        clock.offset_control_files()
    );
    assert!(
        !dir.join("postgres").exists(),
        "the cluster (and its control file) is removed"
    );
}

/// The monotonic-mode self-test: PostgreSQL under libfaketime in its
/// default mode (monotonic clocks faked too) while `harness run` drives
/// serializable transactions against it; the clock jumps +1 h, back, −1 h
/// and back. The server must not crash, the reads must follow the jumps,
/// the run must be valid, and latencies stay sane (printed; see
/// `nemesis::clock` for the measured figures).
#[test]
#[ignore = "needs PostgreSQL binaries and libfaketime: run by .ci/run"]
fn local_postgres_survives_hour_jumps_of_its_clock_under_load() {
    use nemesis::process::Process as _;
    let _alone = one_clock_run_at_a_time();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let pgdir = tempfile::tempdir().unwrap();
    let cluster = rt
        .block_on(db_adapters::postgres::local::LocalCluster::start_with(
            pgdir.path(),
            true,
        ))
        .unwrap();
    let process = cluster.process();
    let node = nemesis::Node::local();
    let file = std::path::PathBuf::from(process.clock_file(&node).expect("control file"));
    let store = tempfile::tempdir().unwrap();
    let name = "pg-clock-selftest";
    let mut load = harness()
        .args(["run", "--store"])
        .arg(store.path())
        .args([
            "--db",
            "postgres",
            "--url",
            &cluster.url(),
            "--isolation",
            "serializable",
            "--time-limit",
            "32s",
            "--concurrency",
            "4",
            "--seed",
            "9",
            "--test-name",
            name,
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // HARNESS_CLOCK_JUMP_S=0 runs the same load without jumps (baseline).
    let jump: f64 = std::env::var("HARNESS_CLOCK_JUMP_S")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3600.0);
    let mut seen = Vec::new();
    for offset in [jump, 0.0, -jump, 0.0] {
        std::thread::sleep(std::time::Duration::from_secs(6));
        nemesis::clock::write_control_file(
            &file,
            &nemesis::clock::Spec {
                offset_s: offset,
                rate: None,
            },
        )
        .unwrap();
        let (got, err) = rt.block_on(process.db_clock(&node)).unwrap().offset();
        eprintln!("asked {offset:+.0} s: read {got:+.4} s (± {err:.4} s)");
        seen.push((offset, got));
    }
    let status = load.wait().unwrap();
    let alive = db_adapters::postgres::local::process::postmaster_pid(&cluster.data_dir());
    rt.block_on(cluster.stop()).unwrap();
    for (asked, got) in &seen {
        assert!((asked - got).abs() < TOLERANCE_S, "{seen:?}");
    }
    assert!(alive.is_some(), "the postmaster survived the jumps");
    let dir = run_dir(store.path(), name);
    let r = results(&dir);
    let slow = slow_ops(&dir, 1.0);
    eprintln!("ops slower than 1 s, by start second: {slow:?}");
    let lat = &r["stats"]["latency-ms"]["txn"];
    eprintln!("latency (ms) under ±1 h jumps: {lat}");
    // Valid, or a G2-item that is PostgreSQL's own at serializable with or
    // without clock faults (twice in CI, once in 46 local runs; each one
    // snapshot isolation). Anything else: its evidence, and the run kept.
    if let Err(e) = postgres_serializable_outcome(&dir, status.code()) {
        eprintln!("{}", evidence(&dir, 16_000));
        // `stop` copied the server's log beside the cluster: keep it too.
        let _ = std::fs::copy(
            pgdir.path().join("postgresql.log"),
            dir.join("postgresql.log"),
        );
        let kept = keep_store(store, name);
        panic!(
            "{e}; the run is kept in {} (`harness analyze`)",
            kept.display()
        );
    }
    // Measured: a forward jump stalls the open sessions until the 5 s op
    // timeout, in both monotonic modes: timers that expire while a backend
    // waits fire late by the offset under libfaketime (deadlock_timeout
    // among them; `nemesis::clock`). No op hangs past the op timeout and
    // the median stays low.
    let p50 = lat["p50"].as_f64().expect("latency recorded");
    let max = lat["max"].as_f64().expect("latency recorded");
    assert!(p50 < 1_000.0 && max < 6_000.0, "p50 {p50} ms, max {max} ms");
}

/// `--nemesis clock --clock-rate 2` on `--local` PostgreSQL: skews restart
/// the server under `x<rate>` (rates in [0.67, 1.33]); every offset read
/// through `clock_timestamp()` is what the offsets and rates predict
/// (drift included), some read shows a drift of its own, the run is
/// valid at serializable, and the heal leaves `+0.000` and no preloaded
/// process.
#[test]
#[ignore = "needs PostgreSQL binaries and libfaketime: run by .ci/run"]
fn local_postgres_clock_rate_skew_drifts_as_asked_and_is_valid() {
    let _alone = one_clock_run_at_a_time();
    let store = tempfile::tempdir().unwrap();
    let name = "pg-local-clock-rate";
    let clock = ClockRun::new();
    let (out, seen) = clock.run(
        store.path(),
        &[
            "--db",
            "postgres",
            "--local",
            "--isolation",
            "serializable",
            "--nemesis",
            "clock",
            "--clock-rate",
            "2",
            "--nemesis-interval",
            "1s",
            "--time-limit",
            "15s",
            "--concurrency",
            "4",
            "--seed",
            "5",
            "--test-name",
            name,
        ],
    );
    let dir = run_dir(store.path(), name);
    assert_complete(&dir);
    let infos: Vec<serde_json::Value> = nemesis_ops(&dir)
        .into_iter()
        .filter(|o| o["type"] == "info")
        .collect();
    assert!(
        infos.iter().all(|o| o["error"].is_null()),
        "every clock op applied: {infos:?}"
    );
    let skews: Vec<&serde_json::Value> = infos
        .iter()
        .filter(|o| o["value"]["skew"].is_object())
        .collect();
    assert!(!skews.is_empty(), "a skew was drawn: {infos:?}");
    let mut worst: f64 = 0.0;
    let mut measured = 0;
    // (rate, time of the skew) of the node while it lasts.
    let mut rate: Option<(f64, i64)> = None;
    let mut drift_seen: f64 = 0.0;
    for o in &infos {
        let t = o["time"].as_i64().unwrap();
        if let Some(r) = o["value"]["skew"]["local"].as_f64() {
            rate = Some((r, t));
        }
        if o["value"]["reset"].is_array() {
            rate = None;
        }
        let (Some(got), Some(want)) = (
            o["value"]["clock-offsets"]["local"].as_f64(),
            o["value"]["expected-offsets"]["local"].as_f64(),
        ) else {
            continue;
        };
        measured += 1;
        worst = worst.max((got - want).abs());
        if let Some((r, since)) = rate {
            drift_seen = drift_seen.max((r - 1.0).abs() * (t - since) as f64 / 1e9);
        }
    }
    eprintln!(
        "{} skews, {measured} offsets measured, worst difference {worst:.4} s, largest drift {drift_seen:.3} s",
        skews.len()
    );
    assert!(worst < TOLERANCE_S, "worst difference {worst} s");
    assert!(
        drift_seen > 2.0 * TOLERANCE_S,
        "some read came long enough after a skew to show its drift: {drift_seen}"
    );
    if let Err(e) = postgres_serializable_outcome(&dir, out.status.code()) {
        panic!("{e}");
    }
    assert!(seen > 0, "the run's server ran under libfaketime");
    assert!(
        clock.preloaded().is_empty(),
        "no process of the run runs under libfaketime after it: {:?}",
        clock.preloaded()
    );
    assert!(
        clock.offset_control_files().is_empty(),
        "{:?}",
        clock.offset_control_files()
    );
}
