//! `harness soak` and `harness reproduce` end to end: the CI suite against
//! embedded SQLite, the simulator and a real local PostgreSQL; a setup
//! failure, the watchdog, Ctrl-C and flat memory in a suite; re-running a
//! stored run; every scenario of the catalog parsed and validated (always),
//! and reproduced where this machine can run it (PostgreSQL locally,
//! MariaDB, Galera and Patroni on the testbed): by default one scenario per
//! database and fault family, all of them with `HARNESS_LONG=1`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

mod run_common;

use nemesis::testbed::TestbedLock;
use run_common::{
    harness, history_text, keep_store, run_dir, run_line, signal, stored_runs, wait_for,
};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Output;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn soak(store: &Path, suite: &Path) -> Output {
    let out = harness()
        .args(["soak"])
        .arg(suite)
        .arg("--store")
        .arg(store)
        .output()
        .unwrap();
    eprintln!(
        "harness soak {} → {:?}\n--- stdout\n{}\n--- stderr\n{}",
        suite.display(),
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// The one soak directory of suite `name` under `store`.
fn soak_dir(store: &Path, name: &str) -> PathBuf {
    let dirs: Vec<PathBuf> = std::fs::read_dir(store.join("soak").join(name))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    assert_eq!(dirs.len(), 1, "{dirs:?}");
    dirs[0].clone()
}

fn summary(dir: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).unwrap()).unwrap()
}

/// test name → outcome, from summary.json.
fn outcomes(s: &Value) -> Vec<(String, String)> {
    s["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["test_name"].as_str().unwrap().to_string(),
                r["outcome"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// Attribute `name` of the first `<tag …>` element in `xml`.
fn attr(xml: &str, tag: &str, name: &str) -> String {
    let start = xml.find(&format!("<{tag} ")).unwrap();
    let end = start + xml[start..].find('>').unwrap();
    let el = &xml[start..end];
    let key = format!("{name}=\"");
    let v = el.find(&key).unwrap() + key.len();
    el[v..v + el[v..].find('"').unwrap()].to_string()
}

fn write_suite(dir: &Path, text: &str) -> PathBuf {
    let p = dir.join("suite.toml");
    std::fs::write(&p, text).unwrap();
    p
}

#[test]
#[ignore = "system test, needs a PostgreSQL server install; .ci/run runs it"]
fn the_ci_suite_gives_the_expected_outcomes_in_summary_and_junit() {
    let store = tempfile::tempdir().unwrap();
    let out = soak(store.path(), &repo().join("suites/ci.toml"));
    assert_eq!(out.status.code(), Some(0), "every run as expected");
    let dir = soak_dir(store.path(), "ci");
    let s = summary(&dir);
    assert_eq!(
        outcomes(&s),
        [
            ("sqlite".to_string(), "valid".to_string()),
            ("sim-read-committed".to_string(), "invalid".to_string()),
            ("postgres-serializable".to_string(), "valid".to_string()),
        ]
    );
    assert_eq!(s["unexpected"], 0);
    assert_eq!(s["interrupted"], false);
    // Each run got its own seed, recorded in its run directory.
    let mut seeds = Vec::new();
    for r in s["runs"].as_array().unwrap() {
        let rd = PathBuf::from(r["run_dir"].as_str().unwrap());
        let meta: Value =
            serde_json::from_str(&std::fs::read_to_string(rd.join("test.json")).unwrap()).unwrap();
        assert_eq!(meta["seed"], r["seed"]);
        seeds.push(r["seed"].as_u64().unwrap());
        assert!(r["child_max_rss_kb"].as_i64().unwrap() > 0);
    }
    seeds.sort_unstable();
    seeds.dedup();
    assert_eq!(seeds.len(), 3, "fresh seeds: {seeds:?}");
    let sim = &s["runs"][1];
    assert!(
        !sim["anomaly_types"].as_array().unwrap().is_empty(),
        "the sim run names its anomalies: {sim}"
    );
    let junit = std::fs::read_to_string(dir.join("junit.xml")).unwrap();
    assert_eq!(attr(&junit, "testsuite", "tests"), "3");
    assert_eq!(attr(&junit, "testsuite", "failures"), "0");
    assert_eq!(attr(&junit, "testsuite", "errors"), "0");
    assert_eq!(junit.matches("<testcase ").count(), 3);
    assert!(junit.contains("name=\"sim-read-committed#2 seed="));
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(
        table.contains("3 runs: 1 invalid, 2 valid; 0 not as expected"),
        "{table}"
    );
}

#[test]
fn a_setup_failure_is_reported_and_the_suite_goes_on() {
    let tmp = tempfile::tempdir().unwrap();
    let suite = write_suite(
        tmp.path(),
        r#"
[suite]
name = "setup"
[defaults]
time-limit = "2s"
[[test]]
name = "unreachable"
db = "postgres"
url = "postgres://harness@127.0.0.1:1/harness"
[[test]]
name = "after"
db = "sim"
"#,
    );
    let out = soak(tmp.path(), &suite);
    assert_eq!(out.status.code(), Some(1), "a run not as expected");
    let dir = soak_dir(tmp.path(), "setup");
    let s = summary(&dir);
    assert_eq!(
        outcomes(&s),
        [
            ("unreachable".to_string(), "setup-failed".to_string()),
            ("after".to_string(), "valid".to_string()),
        ]
    );
    let detail = s["runs"][0]["detail"].as_str().unwrap();
    assert!(detail.contains("127.0.0.1"), "names what failed: {detail}");
    let junit = std::fs::read_to_string(dir.join("junit.xml")).unwrap();
    assert_eq!(attr(&junit, "testsuite", "errors"), "1");
    assert_eq!(attr(&junit, "testsuite", "failures"), "0");
    assert!(junit.contains("<error type=\"setup-failed\""), "{junit}");
}

#[test]
fn the_watchdog_stops_a_run_and_says_timed_out() {
    let tmp = tempfile::tempdir().unwrap();
    let suite = write_suite(
        tmp.path(),
        r#"
[suite]
name = "dog"
grace = "30s"
[[test]]
name = "long"
db = "sim"
time-limit = "10m"
ops = "100000000"
watchdog = "3s"
[[test]]
name = "short"
db = "sim"
time-limit = "1s"
"#,
    );
    let out = soak(tmp.path(), &suite);
    assert_eq!(out.status.code(), Some(1));
    let s = summary(&soak_dir(tmp.path(), "dog"));
    assert_eq!(
        outcomes(&s),
        [
            ("long".to_string(), "timed-out".to_string()),
            ("short".to_string(), "valid".to_string()),
        ]
    );
    // Stopped by the watchdog's SIGINT (not killed after the grace): the
    // run ended its main phase on the stop request, healed, checked and
    // kept its history.
    let long = &s["runs"][0];
    assert!(long["signal"].is_null(), "not killed: {long}");
    assert_eq!(long["exit_code"], 0, "checked and valid: {long}");
    let rd = PathBuf::from(long["run_dir"].as_str().unwrap());
    assert!(rd.join("history.jsonl.gz").is_file() && rd.join("results.json").is_file());
    let meta: Value =
        serde_json::from_str(&std::fs::read_to_string(rd.join("test.json")).unwrap()).unwrap();
    assert_eq!(meta["summary"]["main_phase_end"], "stopped");
}

#[test]
fn ctrl_c_stops_the_suite_cleanly_and_still_writes_the_summary() {
    let tmp = tempfile::tempdir().unwrap();
    let suite = write_suite(
        tmp.path(),
        r#"
[suite]
name = "intr"
[[test]]
name = "sim"
db = "sim"
time-limit = "5m"
count = 3
"#,
    );
    let child = harness()
        .arg("soak")
        .arg(&suite)
        .arg("--store")
        .arg(tmp.path())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until the first run has its history file.
    let runs = tmp.path().join("runs").join("sim");
    assert!(wait_for(60, || {
        std::fs::read_dir(&runs)
            .map(|rd| {
                rd.flatten()
                    .any(|e| e.path().join("history.jsonl").is_file())
            })
            .unwrap_or(false)
    }));
    std::thread::sleep(std::time::Duration::from_secs(1));
    signal(child.id(), "INT");
    let out = child.wait_with_output().unwrap();
    eprintln!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.status.code(), Some(2), "interrupted suite");
    let dir = soak_dir(tmp.path(), "intr");
    let s = summary(&dir);
    assert_eq!(s["interrupted"], true);
    assert_eq!(s["runs"].as_array().unwrap().len(), 1);
    assert_eq!(s["runs"][0]["interrupted"], true);
    // The interrupted run stopped early, healed and was checked.
    assert_eq!(s["runs"][0]["outcome"], "valid");
    assert_eq!(s["not_run"].as_array().unwrap().len(), 2);
    let junit = std::fs::read_to_string(dir.join("junit.xml")).unwrap();
    assert_eq!(attr(&junit, "testsuite", "skipped"), "2");
}

#[test]
fn memory_stays_flat_across_many_runs() {
    let tmp = tempfile::tempdir().unwrap();
    let suite = write_suite(
        tmp.path(),
        r#"
[suite]
name = "mem"
[[test]]
name = "sim"
db = "sim"
ops = 3000
count = 12
"#,
    );
    let out = soak(tmp.path(), &suite);
    assert_eq!(out.status.code(), Some(0));
    let s = summary(&soak_dir(tmp.path(), "mem"));
    let rss: Vec<u64> = s["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["soak_rss_kb"].as_u64().unwrap())
        .collect();
    assert_eq!(rss.len(), 12);
    // Runs are child processes; the suite itself keeps a record per run.
    let (lo, hi) = (*rss.iter().min().unwrap(), *rss.iter().max().unwrap());
    assert!(
        hi - lo < 2048,
        "soak RSS grew from {lo} to {hi} KiB: {rss:?}"
    );
}

#[test]
fn bad_suites_and_targets_are_errors_naming_the_problem() {
    let tmp = tempfile::tempdir().unwrap();
    let suite = write_suite(
        tmp.path(),
        "[[test]]\ndb = \"sim\"\nisolation = \"snapshott\"\n",
    );
    let out = soak(tmp.path(), &suite);
    assert_eq!(out.status.code(), Some(3));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("suite.toml") && err.contains("snapshott"),
        "{err}"
    );
    assert!(!tmp.path().join("soak").exists(), "nothing ran");
    let out = harness()
        .args(["reproduce", "/nonexistent/run"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&out.stderr).contains("/nonexistent/run"));
    let sc = tmp.path().join("bad.toml");
    std::fs::write(
        &sc,
        "title = \"t\"\nsource = \"s\"\nseen-on = \"x\"\nreport = \"r\"\nexpect = [\"G3\"]\n[run]\ndb = \"sim\"\n",
    )
    .unwrap();
    let out = harness().arg("reproduce").arg(&sc).output().unwrap();
    assert_eq!(out.status.code(), Some(3));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("bad.toml") && err.contains("G3"), "{err}");
}

/// A history file without its times (and without the time-derived fields).
fn untimed(dir: &Path) -> Vec<Value> {
    history_text(dir)
        .lines()
        .map(|l| {
            let mut v: Value = serde_json::from_str(l).unwrap();
            v.as_object_mut().unwrap().remove("time");
            v
        })
        .collect()
}

fn meta(dir: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join("test.json")).unwrap()).unwrap()
}

/// Both runs of `name` under `store`, oldest first.
fn two_runs(store: &Path, name: &str) -> (PathBuf, PathBuf) {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(store.join("runs").join(name))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    assert_eq!(dirs.len(), 2, "{dirs:?}");
    (dirs[0].clone(), dirs[1].clone())
}

#[test]
fn reproducing_a_sim_run_reissues_the_same_history() {
    let store = tempfile::tempdir().unwrap();
    let out = run_line(
        store.path(),
        "--db sim --sim-bug stale-read --concurrency 1 --ops 400 --test-name again",
    );
    assert_eq!(out.status.code(), Some(1));
    let first = run_dir(store.path(), "again");
    let out = harness().arg("reproduce").arg(&first).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    eprintln!("{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "reproduced");
    assert!(stdout.contains("reproduced: yes"), "{stdout}");
    assert!(stdout.contains("G-single-item-realtime"), "{stdout}");
    let (a, b) = two_runs(store.path(), "again");
    assert_eq!(a, first);
    let (ha, hb) = (untimed(&a), untimed(&b));
    assert!(ha.len() > 800, "{} ops", ha.len());
    assert_eq!(ha, hb, "identical apart from times");
    let (ma, mb) = (meta(&a), meta(&b));
    assert_eq!(ma["seed"], mb["seed"]);
    assert_eq!(ma["config"], mb["config"]);
    assert_eq!(ma["run_flags"], mb["run_flags"]);
}

#[test]
#[ignore = "system test, needs a PostgreSQL server install; .ci/run runs it"]
fn reproducing_a_postgres_run_reuses_its_config_seed_and_generator() {
    let store = tempfile::tempdir().unwrap();
    let out = run_line(
        store.path(),
        "--db postgres --local --concurrency 4 --ops 300 --key-count 4 --test-name pg-again",
    );
    assert_eq!(out.status.code(), Some(0));
    let first = run_dir(store.path(), "pg-again");
    let out = harness().arg("reproduce").arg(&first).output().unwrap();
    eprintln!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.status.code(), Some(0), "valid again: reproduced");
    let (a, b) = two_runs(store.path(), "pg-again");
    let (ma, mb) = (meta(&a), meta(&b));
    assert_eq!(ma["seed"], mb["seed"]);
    assert_eq!(ma["config"], mb["config"]);
    assert_eq!(ma["run_flags"], mb["run_flags"]);
    // Same generator: the first invocation (before any completion can
    // differ) is the same transaction.
    let first_invoke = |d: &Path| {
        untimed(d)
            .into_iter()
            .find(|o| o["type"] == "invoke")
            .unwrap()["value"]
            .clone()
    };
    assert_eq!(first_invoke(&a), first_invoke(&b));
}

fn scenario_files() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(repo().join("scenarios"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    files.sort();
    files
}

/// Every scenario file parses and its run flags validate (the dry run of
/// `harness reproduce --list`), without running anything: a broken file in
/// `scenarios/` fails the default test run even where the databases are
/// missing and the reproductions below are skipped.
#[test]
fn every_scenario_parses_and_validates_without_running() {
    let dir = repo().join("scenarios");
    let list = harness()
        .args(["reproduce", "--list"])
        .arg(&dir)
        .output()
        .unwrap();
    let listing = String::from_utf8_lossy(&list.stdout).to_string();
    assert_eq!(
        list.status.code(),
        Some(0),
        "{listing}\n{}",
        String::from_utf8_lossy(&list.stderr)
    );
    let files = scenario_files();
    assert!(files.len() >= 7, "{files:?}");
    for f in &files {
        let name = f.file_stem().unwrap().to_string_lossy().to_string();
        assert!(listing.contains(&name), "{name} listed: {listing}");
    }
    // The TiDB scenario is listed as needing its database.
    assert!(listing.contains("tidb-2.1.7-auto-retry"));
    assert!(listing.contains("needs a TiDB 2.1.7 cluster"));
    // CI's default reproductions name existing scenarios.
    for name in CI_SCENARIOS {
        assert!(
            files
                .iter()
                .any(|f| f.file_stem().is_some_and(|s| s == name)),
            "{name}: no scenarios/{name}.toml"
        );
    }
    // A broken copy (a typo in a run flag, then in an anomaly name) fails
    // the listing, naming the file and the problem.
    let tmp = tempfile::tempdir().unwrap();
    let galera =
        std::fs::read_to_string(dir.join("galera-coordinated-crash-lost-writes.toml")).unwrap();
    for (broken, why) in [
        (galera.replace("kill-targets", "kill-target"), "kill-target"),
        (galera.replace("G0-realtime", "G0-realtim"), "G0-realtim"),
    ] {
        std::fs::write(tmp.path().join("broken.toml"), &broken).unwrap();
        let out = harness()
            .args(["reproduce", "--list"])
            .arg(tmp.path())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(3), "{err}");
        assert!(err.contains("broken.toml") && err.contains(why), "{err}");
    }
}

/// The scenarios CI reproduces by default: those that prove the mechanism
/// of a database and fault family (local PostgreSQL isolation, single-node
/// MariaDB isolation, Patroni under partition and kill, Galera under
/// coordinated crashes), plus the cheap PostgreSQL write skew (~20 s).
/// `galera-lost-update` (~75 s: a Galera cluster's setup for an isolation
/// anomaly the MariaDB scenario already shows) runs with `HARNESS_LONG=1`.
/// Measured per scenario: BENCHMARKS.md.
const CI_SCENARIOS: [&str; 5] = [
    "galera-coordinated-crash-lost-writes",
    "mariadb-repeatable-read-lost-update",
    "patroni-async-loss",
    "postgres-read-committed-lost-update",
    "postgres-repeatable-read-write-skew",
];

fn long() -> bool {
    std::env::var("HARNESS_LONG").is_ok_and(|v| v == "1")
}

/// A scenario that misses keeps its store: the runs outlive the test.
#[test]
fn a_kept_store_survives_its_tempdir_with_its_runs() {
    let store = tempfile::tempdir().unwrap();
    let run = store.path().join("runs/scenario-x/20261207T000000");
    std::fs::create_dir_all(&run).unwrap();
    std::fs::write(run.join("history.jsonl.gz"), b"h").unwrap();
    let kept = keep_store(store, "x");
    let runs = stored_runs(&kept);
    assert_eq!(runs, [kept.join("runs/scenario-x/20261207T000000")]);
    assert_eq!(
        std::fs::read(runs[0].join("history.jsonl.gz")).unwrap(),
        b"h"
    );
    std::fs::remove_dir_all(&kept).unwrap();
}

#[test]
#[ignore = "system test, needs PostgreSQL, MariaDB/Galera and root for the testbed; .ci/run runs it"]
fn every_scenario_this_machine_can_run_reproduces() {
    let store = tempfile::tempdir().unwrap();
    let mut ran = Vec::new();
    let mut runs_here = 0;
    for f in &scenario_files() {
        let text = std::fs::read_to_string(f).unwrap();
        let name = f.file_stem().unwrap().to_string_lossy().to_string();
        let needs = text.lines().any(|l| l.starts_with("needs"));
        runs_here += usize::from(!needs);
        if !needs && !long() && !CI_SCENARIOS.contains(&name.as_str()) {
            eprintln!("{name}: skipped (HARNESS_LONG=1 runs it)");
            continue;
        }
        // The testbed is shared: hold its lock for one scenario at a time.
        let testbed = text.contains("\"testbed\"");
        let lock = testbed.then(|| TestbedLock::acquire().unwrap());
        let started = std::time::Instant::now();
        let out = harness()
            .arg("reproduce")
            .arg(f)
            .arg("--store")
            .arg(store.path())
            .output()
            .unwrap();
        let secs = started.elapsed().as_secs_f64();
        if testbed {
            let _ = harness().args(["testbed", "down"]).output();
        }
        drop(lock);
        let stdout = String::from_utf8_lossy(&out.stdout);
        if needs {
            assert_eq!(out.status.code(), Some(4), "{name}: needs its database");
            continue;
        }
        eprintln!(
            "{name}: {:?} in {secs:.1} s\n{}",
            out.status.code(),
            stdout
                .lines()
                .filter(|l| !l.starts_with("  T"))
                .take(12)
                .collect::<Vec<_>>()
                .join("\n")
        );
        if out.status.code() != Some(0) || !stdout.contains("reproduced: yes") {
            eprintln!("{}", String::from_utf8_lossy(&out.stderr));
            // The runs that missed stay, to be checked again.
            let kept = stored_runs(&keep_store(store, &name));
            panic!(
                "{name} did not reproduce ({:?}); its runs are kept: {kept:?}",
                out.status.code()
            );
        }
        ran.push(name);
    }
    let want = if long() {
        runs_here
    } else {
        CI_SCENARIOS.len()
    };
    assert_eq!(ran.len(), want, "ran {ran:?}");
}
