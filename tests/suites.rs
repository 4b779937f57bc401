//! The suites the repository ships (`suites/*.toml`) stay runnable: each
//! expands with `harness soak --dry-run`, which checks every run's flags as
//! `harness run` would. No root, no server.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

mod run_common;

use run_common::harness;

fn repo() -> std::path::PathBuf {
    std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every suite the repository ships expands (`--dry-run` checks each run's
/// flags as `harness run` would) into at least one run.
#[test]
fn every_shipped_suite_expands() {
    let mut n = 0;
    for e in std::fs::read_dir(repo().join("suites")).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_none_or(|x| x != "toml") {
            continue;
        }
        let out = harness()
            .args(["soak", "--dry-run"])
            .arg(&p)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && text.contains("harness run"),
            "{}: {}{}",
            p.display(),
            text,
            String::from_utf8_lossy(&out.stderr)
        );
        n += 1;
    }
    assert!(n >= 3, "suites found: {n}");
}
