//! Every workload is first-class: a stored run of each (on SQLite, no
//! root) re-checked by `harness analyze` gets the run's verdict and the
//! run's `results.json` back (timings aside), the run header names the
//! checker that decides it, and every run has its timeline.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod run_common;

use run_common::*;
use workloads::{WORKLOADS, WorkloadKind};

/// `results.json` without what a re-check may change: the timings.
fn comparable(mut r: serde_json::Value) -> serde_json::Value {
    if let Some(m) = r.as_object_mut() {
        m.remove("checker-timings");
    }
    r
}

#[test]
fn analyze_reproduces_the_verdict_and_results_of_every_workload() {
    let store = tempfile::tempdir().unwrap();
    let mut checked = Vec::new();
    for w in WORKLOADS.iter().filter(|n| n.runs) {
        let name = format!("every-{}", w.name);
        let out = run(
            store.path(),
            &[
                "--db",
                "sqlite",
                "--workload",
                w.name,
                "--ops",
                "400",
                "--time-limit",
                "20s",
                "--concurrency",
                "4",
                "--seed",
                "11",
                "--test-name",
                &name,
            ],
        );
        let code = out.status.code();
        assert!(
            matches!(code, Some(0..=2)),
            "{}: run ended {code:?}",
            w.name
        );
        let stdout = String::from_utf8_lossy(&out.stdout);
        let header = stdout.lines().next().unwrap_or_default();
        let checker = match w.kind {
            WorkloadKind::Register | WorkloadKind::Kv => "checked for linearizability per key",
            WorkloadKind::Jepsen(_) => "checked ",
            _ => "checked as ",
        };
        assert!(header.contains(checker), "{}: {header}", w.name);
        if matches!(w.kind, WorkloadKind::Jepsen(_) | WorkloadKind::Register) {
            assert!(
                !header.contains("checked as"),
                "{}: a model Elle does not check: {header}",
                w.name
            );
        }
        let dir = run_dir(store.path(), &name);
        let stored = results(&dir);
        assert_eq!(stored["workload"], w.name, "{stored}");
        assert!(
            dir.join("timeline.html").is_file(),
            "{}: no timeline",
            w.name
        );
        let a = harness()
            .arg("analyze")
            .arg(&dir)
            .output()
            .expect("spawn harness analyze");
        let said = String::from_utf8_lossy(&a.stdout);
        assert_eq!(
            a.status.code(),
            code,
            "{}: analyze gave another verdict\nstdout: {said}\nstderr: {}",
            w.name,
            String::from_utf8_lossy(&a.stderr)
        );
        let again = results(&dir);
        assert_eq!(
            comparable(again),
            comparable(stored.clone()),
            "{}: results.json changed",
            w.name
        );
        // One verdict line shape for every family.
        let verdict = ["valid: ", "INVALID: ", "unknown: "]
            .iter()
            .find_map(|p| {
                said.lines()
                    .find(|l| l.starts_with(p) && l.contains(&format!("{p}{} ", w.name)))
            })
            .unwrap_or_else(|| panic!("{}: no verdict line in {said}", w.name));
        assert!(verdict.contains(" — "), "{verdict}");
        checked.push((w.name, stored["valid?"].clone()));
    }
    eprintln!("{checked:?}");
    assert_eq!(checked.len(), WORKLOADS.iter().filter(|n| n.runs).count());
}

/// Invalid runs too: the simulator's stale reads break a register run's
/// linearizability, its lost updates a list-append run's isolation;
/// `analyze` says invalid again (it once re-checked a register run as
/// rw-register: valid became unknown) and rewrites the same results.
#[test]
fn analyze_reproduces_invalid_register_and_list_append_runs() {
    let store = tempfile::tempdir().unwrap();
    for (workload, bug) in [("register", "stale-read"), ("list-append", "lost-update")] {
        let name = format!("bug-{workload}");
        let out = run(
            store.path(),
            &[
                "--db",
                "sim",
                "--sim-bug",
                bug,
                "--workload",
                workload,
                "--ops",
                "2000",
                "--seed",
                "7",
                "--test-name",
                &name,
            ],
        );
        assert_eq!(out.status.code(), Some(1), "{workload} with {bug}");
        let dir = run_dir(store.path(), &name);
        let stored = results(&dir);
        let a = harness().arg("analyze").arg(&dir).output().unwrap();
        assert_eq!(
            a.status.code(),
            Some(1),
            "{workload}: {}",
            String::from_utf8_lossy(&a.stdout)
        );
        assert_eq!(comparable(results(&dir)), comparable(stored), "{workload}");
    }
}
