//! The clock self-test on MariaDB, the twin of PostgreSQL's in
//! `run_local_clock.rs`: mariadbd under harness's wall-clock preload (the
//! default clock mode: `CLOCK_MONOTONIC` untouched) on a testbed node while
//! `harness run` drives serializable transactions against it; its clock
//! jumps +1 h, back, −1 h and back. The server must not crash, `NOW(6)`
//! must follow the jumps, the run must be valid and latencies stay sane;
//! the server runs with the library mapped and `HARNESS_CLOCK_MODE=real`,
//! and a probe under its exact preload environment sees its monotonic
//! clock never go backwards over a bump and a reset. Needs root and the
//! testbed; holds the testbed lock.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

mod clock_probe;
mod run_common;

use nemesis::testbed::TestbedLock;
use run_common::{Down, anomaly_types, harness, results, run_dir, testbed_up, wait_for};
use std::process::{Command, Stdio};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

const DIR: &str = "/var/lib/harness/mariadb/n1";

fn now_s() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}

/// `sql` on n1's server as root over its socket (inside n1's network
/// namespace), its output trimmed; `None` when it failed.
fn sql(q: &str) -> Option<String> {
    let out = Command::new("ip")
        .args(["netns", "exec", "n1", "mariadb", "-uroot", "-N", "-s"])
        .arg(format!("--socket={DIR}/mysqld.sock"))
        .args(["--connect-timeout=2", "-e", q])
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// The server's `NOW(6)` minus the middle of the harness-clock bracket,
/// and half the bracket (a process start is inside it: tens of ms).
fn offset() -> (f64, f64) {
    let sent = now_s();
    let db: f64 = sql("SET time_zone = '+00:00'; SELECT UNIX_TIMESTAMP(NOW(6))")
        .expect("NOW(6)")
        .parse()
        .unwrap();
    let received = now_s();
    (db - (sent + received) / 2.0, (received - sent) / 2.0)
}

/// mariadbd's pid on n1 (its command line names n1's my.cnf).
fn mariadbd_pid() -> Option<String> {
    let out = Command::new("pgrep")
        .args([
            "-f",
            &format!("^/usr/sbin/mariadbd --defaults-file={DIR}/my.cnf"),
        ])
        .output()
        .ok()?;
    let s = String::from_utf8_lossy(&out.stdout).trim().to_string();
    (!s.is_empty()).then_some(s)
}

#[test]
#[ignore = "system test, needs root + the testbed (network namespaces, sshd, MariaDB, libfaketime); .ci/run runs it"]
fn mariadb_survives_hour_jumps_of_its_clock_under_load() {
    let _lock = TestbedLock::acquire().unwrap();
    let _down = Down;
    testbed_up();
    let store = tempfile::tempdir().unwrap();
    let name = "mariadb-clock-selftest";
    // --nemesis clock starts mariadbd under the clock preload; the package
    // itself stays quiet (its first op would come after 1000 s): the
    // test writes the control file.
    let mut load = harness()
        .args(["run", "--store"])
        .arg(store.path())
        .args([
            "--db",
            "mariadb",
            "--nodes",
            "testbed",
            "--nemesis",
            "clock",
            "--initial-quiet-period",
            "1000s",
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
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let file = std::path::PathBuf::from(format!("{DIR}/faketime.rc"));
    assert!(
        wait_for(120, || file.is_file()
            && sql("SELECT 1").as_deref() == Some("1")),
        "mariadbd on n1 serving under its control file"
    );
    let pid = mariadbd_pid().expect("mariadbd runs");
    let environ =
        std::fs::read(format!("/proc/{}/environ", pid.lines().next().unwrap())).unwrap_or_default();
    assert!(
        environ
            .split(|b| *b == 0)
            .any(|v| v == format!("FAKETIME_TIMESTAMP_FILE={}", file.display()).as_bytes()),
        "mariadbd runs under its control file"
    );
    let mut seen = Vec::new();
    for asked in [3600.0, 0.0, -3600.0, 0.0] {
        std::thread::sleep(Duration::from_secs(6));
        nemesis::clock::write_control_file(
            &file,
            &nemesis::clock::Spec {
                offset_s: asked,
                rate: None,
            },
        )
        .unwrap();
        let (got, err) = offset();
        eprintln!("asked {asked:+.0} s: read {got:+.4} s (± {err:.4} s)");
        seen.push((asked, got, err));
    }
    // What the server runs under, and a probe under exactly that.
    let env = clock_probe::preload_env_of(pid.lines().next().unwrap().parse().unwrap());
    let maps = std::fs::read_to_string(format!("/proc/{}/maps", pid.lines().next().unwrap()))
        .unwrap_or_default();
    let probe_dir = tempfile::tempdir().unwrap();
    let exe = clock_probe::build(probe_dir.path());
    let mut step = 0;
    let samples = clock_probe::run(&exe, &env, 250, |t| {
        let due = [(0.5, 3600.0), (1.5, 0.0)];
        if let Some((at, off)) = due.get(step)
            && t > *at
        {
            nemesis::clock::write_control_file(
                &file,
                &nemesis::clock::Spec {
                    offset_s: *off,
                    rate: None,
                },
            )
            .unwrap();
            step += 1;
        }
    });
    let (monotonic, max, _, last) = clock_probe::summary(&samples);
    let alive = mariadbd_pid();
    let status = load.wait().unwrap();
    assert!(
        env.iter()
            .any(|(k, v)| k == "LD_PRELOAD" && v.ends_with("libharness-walltime.so")),
        "{env:?}"
    );
    assert!(
        env.iter()
            .any(|(k, v)| k == "HARNESS_CLOCK_MODE" && v == "real"),
        "{env:?}"
    );
    assert!(
        maps.contains("libharness-walltime.so"),
        "the library is mapped"
    );
    assert!(
        monotonic,
        "CLOCK_MONOTONIC never went backwards under mariadbd's preload"
    );
    assert!(
        (max - 3600.0).abs() < 1.0 && last.abs() < 0.5,
        "{max} {last}"
    );
    for (asked, got, err) in &seen {
        assert!((asked - got).abs() < err + 0.05, "{seen:?}");
    }
    assert_eq!(alive, Some(pid), "mariadbd survived the jumps");
    let dir = run_dir(store.path(), name);
    let r = results(&dir);
    let lat = &r["stats"]["latency-ms"]["txn"];
    eprintln!("latency (ms) under ±1 h jumps: {lat}");
    // harness's own clock package stayed quiet (the test moved the clock
    // itself), so the run says no fault of its own took effect: `unknown`
    // (exit 2), never `valid`; the checker found no anomaly.
    assert_eq!(status.code(), Some(2), "{:?}", anomaly_types(&r));
    assert!(r.get("no-fault").is_some(), "no-fault reason: {r}");
    assert!(anomaly_types(&r).is_empty(), "{:?}", anomaly_types(&r));
    let p50 = lat["p50"].as_f64().expect("latency recorded");
    let max = lat["max"].as_f64().expect("latency recorded");
    assert!(p50 < 1_000.0 && max < 6_000.0, "p50 {p50} ms, max {max} ms");
}
