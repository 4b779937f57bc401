//! Clock faults a real machine can have: under harness's
//! wall-clock preload (`nemesis::clock::walltime`, the default mode) a
//! bump and a reset move a process's wall clock as asked and its
//! `CLOCK_MONOTONIC` never goes backwards; under libfaketime
//! (`--clock-monotonic fake`) the same probe sees its monotonic clock go
//! backwards. Read back: a probe program's two clocks under the exact
//! preload environment of the server (`/proc/<pid>/environ`), the library
//! mapped in the server (`/proc/<pid>/maps`), and the server's own wall
//! clock (`clock_timestamp()`). The server's monotonic clock itself is not
//! readable from SQL: the probe under its environment stands for it.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod clock_probe;

use nemesis::clock::{Spec, write_control_file};
use std::path::Path;

fn set(file: &Path, offset_s: f64) {
    write_control_file(
        file,
        &Spec {
            offset_s,
            rate: None,
        },
    )
    .unwrap();
}

/// Runs the probe under `env` while `file` goes +1 h, −1 h, then back to
/// 0; returns its summary.
fn bump_and_reset(exe: &Path, env: &[(String, String)], file: &Path) -> (bool, f64, f64, f64) {
    set(file, 0.0);
    let mut step = 0;
    let samples = clock_probe::run(exe, env, 300, |t| {
        let due = [(0.6, 3600.0), (1.4, -3600.0), (2.2, 0.0)];
        if let Some((at, off)) = due.get(step)
            && t > *at
        {
            set(file, *off);
            step += 1;
        }
    });
    assert_eq!(step, 3, "the clock was moved three times");
    clock_probe::summary(&samples)
}

#[test]
fn the_wall_clock_preload_moves_the_wall_clock_only_and_libfaketime_moves_monotonic_too() {
    let d = tempfile::tempdir().unwrap();
    let exe = clock_probe::build(d.path());
    let rc = d.path().join("faketime.rc");
    set(&rc, 0.0);
    // Exactly what a database is started with in the default mode.
    let env = nemesis::clock::preload_env(&rc, true);
    assert!(
        env.iter()
            .any(|(k, v)| k == "LD_PRELOAD" && v.ends_with("libharness-walltime.so")),
        "{env:?}"
    );
    let (monotonic, max, min, last) = bump_and_reset(&exe, &env, &rc);
    assert!(monotonic, "CLOCK_MONOTONIC never went backwards");
    assert!(
        (max - 3600.0).abs() < 1.0,
        "the wall clock went +1 h: {max}"
    );
    assert!((min + 3600.0).abs() < 1.0, "and −1 h: {min}");
    assert!(last.abs() < 0.5, "and back to true time: {last}");
    // The harsher mode, where libfaketime is installed: the same moves
    // take the monotonic clock with them (backwards at the −1 h).
    if Path::new(nemesis::clock::LIBFAKETIME).is_file() {
        let fake: Vec<(String, String)> = env
            .iter()
            .map(|(k, v)| {
                if k == "LD_PRELOAD" {
                    (k.clone(), nemesis::clock::LIBFAKETIME.to_string())
                } else {
                    (k.clone(), v.clone())
                }
            })
            .collect();
        let (monotonic, max, _, _) = bump_and_reset(&exe, &fake, &rc);
        assert!(!monotonic, "libfaketime moves CLOCK_MONOTONIC backwards");
        assert!(max.abs() < 1.0, "wall − monotonic stays put: {max}");
    }
}

/// A step while an absolute wall-clock wait is under way moves its end as
/// a stepped kernel clock would: +60 s during a 60 s wait ends it at once
/// (not 60 s later), −1 s during a 1 s wait lengthens it to 2 s; in every
/// case the wait ends once the faked wall clock reached its deadline (read
/// back by the waiter right after). A timerfd armed at an absolute
/// wall-clock time under an offset fires at that faked time.
#[test]
fn an_absolute_wall_clock_wait_under_way_follows_a_step() {
    use std::io::{BufRead as _, BufReader};
    let d = tempfile::tempdir().unwrap();
    let exe = clock_probe::build_waiter(d.path());
    let rc = d.path().join("faketime.rc");
    set(&rc, 0.0);
    let env = nemesis::clock::preload_env(&rc, true);
    let mut child = std::process::Command::new(&exe)
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut offset = 0.0;
    let mut done = Vec::new();
    for line in BufReader::new(child.stdout.take().unwrap()).lines() {
        let line = line.unwrap();
        let w: Vec<&str> = line.split(' ').collect();
        match w[0] {
            "wait" => {
                // The wait is under way; then the step.
                clock_probe::pause_ms(200);
                offset += w[2].parse::<f64>().unwrap();
                set(&rc, offset);
            }
            _ => done.push(line.clone()),
        }
    }
    assert!(child.wait().unwrap().success());
    assert_eq!(done.len(), 7, "{done:?}");
    for line in &done {
        let w: Vec<&str> = line.split(' ').collect();
        let n = |i: usize| w[i].parse::<i64>().unwrap();
        let (step, wall, deadline, elapsed, rc) = (n(2), n(3), n(4), n(5), n(6));
        assert_eq!(rc, 0, "{line}: timed out");
        assert!(wall >= deadline, "{line}: ended before the faked deadline");
        if step > 0 {
            assert!(
                elapsed < 30_000_000_000,
                "{line}: the forward step did not end the wait"
            );
        }
        if step < 0 {
            assert!(
                elapsed >= 1_500_000_000,
                "{line}: the backward step did not lengthen the wait"
            );
        }
        if step == 0 {
            assert!(
                elapsed < 30_000_000_000,
                "{line}: the timerfd fired at true time, not at the faked deadline"
            );
        }
    }
}

/// The processes whose environment names `file` as their control file.
fn preloaded_with(file: &Path) -> Vec<u32> {
    let want = format!("FAKETIME_TIMESTAMP_FILE={}", file.display());
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|p| {
            std::fs::read(format!("/proc/{p}/environ"))
                .is_ok_and(|env| env.split(|b| *b == 0).any(|v| v == want.as_bytes()))
        })
        .collect()
}

/// `--local` PostgreSQL started for clock faults in the default mode: the
/// server runs with harness's wall-clock library mapped and
/// `HARNESS_CLOCK_MODE=real`; after +1 h and a reset `clock_timestamp()`
/// read +1 h then true time; a probe under the server's own preload
/// environment saw its monotonic clock never go backwards.
#[test]
#[ignore = "needs PostgreSQL binaries: run by .ci/run"]
fn local_postgres_wall_clock_moves_and_its_monotonic_clock_does_not() {
    use nemesis::process::Process as _;
    let rt = tokio::runtime::Runtime::new().unwrap();
    let pgdir = tempfile::tempdir().unwrap();
    {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(pgdir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let cluster = rt
        .block_on(db_adapters::postgres::local::LocalCluster::start_with(
            pgdir.path(),
            true,
        ))
        .unwrap();
    let process = cluster.process();
    let node = nemesis::Node::local();
    let file = std::path::PathBuf::from(process.clock_file(&node).expect("control file"));
    let pm = db_adapters::postgres::local::process::postmaster_pid(&cluster.data_dir())
        .expect("postmaster");
    let pids = preloaded_with(&file);
    let env = clock_probe::preload_env_of(pm);
    let maps = std::fs::read_to_string(format!("/proc/{pm}/maps")).unwrap_or_default();
    let mut read = Vec::new();
    for asked in [3600.0, 0.0] {
        set(&file, asked);
        clock_probe::pause_ms(20);
        let (got, _) = rt.block_on(process.db_clock(&node)).unwrap().offset();
        read.push((asked, got));
    }
    let d = tempfile::tempdir().unwrap();
    let exe = clock_probe::build(d.path());
    let probe = bump_and_reset(&exe, &env, &file);
    rt.block_on(cluster.stop()).unwrap();
    assert!(
        pids.contains(&pm),
        "the postmaster runs under the control file"
    );
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
    for (asked, got) in &read {
        assert!((asked - got).abs() < 0.05, "clock_timestamp(): {read:?}");
    }
    let (monotonic, max, _, last) = probe;
    assert!(
        monotonic,
        "CLOCK_MONOTONIC never went backwards under the server's preload"
    );
    assert!((max - 3600.0).abs() < 1.0 && last.abs() < 0.5, "{probe:?}");
}

#[test]
fn a_clock_mode_that_does_not_exist_is_refused_by_name() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_harness"))
        .args(["run", "--db", "sim", "--clock-monotonic", "bogus"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(err.contains("--clock-monotonic \"bogus\""), "{err}");
}

/// The clock mode is in test.json and on the run header: the default
/// (`real`: the wall clock only) and the opt-in harsher one (`fake`).
#[test]
#[ignore = "needs PostgreSQL binaries and libfaketime: run by .ci/run"]
fn the_clock_mode_is_recorded_and_on_the_run_header() {
    for (flag, header) in [
        ("real", "wall clock only"),
        ("fake", "harsher than a real machine"),
    ] {
        let store = tempfile::tempdir().unwrap();
        let tmp = tempfile::tempdir().unwrap();
        {
            use std::os::unix::fs::PermissionsExt as _;
            std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        let name = format!("clock-mode-{flag}");
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_harness"))
            .env("TMPDIR", tmp.path())
            .args(["run", "--store"])
            .arg(store.path())
            .args([
                "--db",
                "postgres",
                "--local",
                "--nemesis",
                "clock",
                "--clock-monotonic",
                flag,
                "--time-limit",
                "3s",
                "--nemesis-interval",
                "1s",
                "--test-name",
                &name,
            ])
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            stdout.lines().next().is_some_and(|l| l.contains(header)),
            "{stdout}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let runs = store.path().join("runs").join(&name);
        let dir = std::fs::read_dir(&runs)
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .find(|p| p.join("test.json").is_file())
            .expect("run dir");
        let meta: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("test.json")).unwrap()).unwrap();
        assert_eq!(meta["config"]["clock_mode"], flag, "{meta}");
    }
}
