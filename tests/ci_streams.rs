//! `.ci/run` runs the suite as two concurrent streams: the integration
//! tests that use the testbed (serialised by `TestbedLock` anyway) and
//! everything else. `.ci/streams` sorts the targets from the sources; these
//! tests check that sorting against Cargo's own list of test targets and
//! check the rule it relies on: a target that uses the testbed takes
//! `TestbedLock` itself, or it would run beside another stream's testbed
//! test.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Every integration-test target of the workspace, (name, root file), as
/// `cargo metadata` lists them, sorted.
fn test_targets() -> Vec<(String, PathBuf)> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_string());
    let out = Command::new(cargo)
        .current_dir(root())
        .args([
            "metadata",
            "--no-deps",
            "--offline",
            "--format-version",
            "1",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut targets = Vec::new();
    for pkg in meta["packages"].as_array().unwrap() {
        for t in pkg["targets"].as_array().unwrap() {
            if t["kind"].as_array().unwrap().iter().any(|k| k == "test") {
                let name = t["name"].as_str().unwrap().to_string();
                targets.push((name, PathBuf::from(t["src_path"].as_str().unwrap())));
            }
        }
    }
    targets.sort();
    targets
}

/// `.ci/streams`' output, (target, stream), sorted.
fn stream_lines() -> Vec<(String, String)> {
    let out = Command::new("bash")
        .arg(root().join(".ci/streams"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut lines: Vec<(String, String)> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| {
            let (stream, target) = l.split_once(' ').unwrap();
            (target.to_string(), stream.to_string())
        })
        .collect();
    lines.sort();
    lines
}

/// Target name → stream. Packages may have test targets of the same name
/// (`cargo test --workspace --test <name>` runs them all): they must share
/// a stream.
fn streams() -> BTreeMap<String, String> {
    let mut map = BTreeMap::new();
    for (target, stream) in stream_lines() {
        if let Some(other) = map.insert(target.clone(), stream.clone()) {
            assert_eq!(other, stream, "targets named {target} in two streams");
        }
    }
    map
}

/// Whether a test file drives the testbed: brings it up, opens it, or runs
/// on its nodes.
fn uses_testbed(text: &str) -> bool {
    ["testbed_up()", "Testbed::", "\"testbed\""]
        .iter()
        .any(|s| text.contains(s))
}

#[test]
fn every_test_target_is_in_exactly_one_stream() {
    let listed: Vec<String> = stream_lines().into_iter().map(|(t, _)| t).collect();
    let known: Vec<String> = test_targets().into_iter().map(|(t, _)| t).collect();
    assert_eq!(listed, known, "`.ci/streams` lists Cargo's test targets");
    let streams = streams();
    for (target, stream) in &streams {
        assert!(
            ["testbed", "other", "after"].contains(&stream.as_str()),
            "{target}: {stream}"
        );
    }
    // Known members of each stream.
    for (target, want) in [
        ("nemesis_cluster", "testbed"),
        ("galera", "testbed"),
        ("testbed", "testbed"),
        ("run_register", "testbed"),
        ("run_local_clock", "other"),
        ("run_postgres", "other"),
        ("ci_streams", "other"),
        ("zz_after_suite", "after"),
    ] {
        assert_eq!(streams[target], want, "{target}");
    }
}

#[test]
fn every_target_that_uses_the_testbed_takes_its_lock() {
    let streams = streams();
    let mut without_lock = Vec::new();
    for (name, path) in test_targets() {
        let text = std::fs::read_to_string(&path).unwrap();
        // This file names the patterns it looks for.
        if name.starts_with("zz_") || name == "ci_streams" || !uses_testbed(&text) {
            continue;
        }
        if streams[&name] != "testbed" {
            without_lock.push(format!("{name} ({})", path.display()));
        }
    }
    assert!(
        without_lock.is_empty(),
        "use the testbed without nemesis::testbed::TestbedLock, so CI would run them beside \
         the testbed stream: {without_lock:?}"
    );
}

#[test]
fn the_testbed_detector_sees_each_way_in() {
    assert!(uses_testbed("    testbed_up();"));
    assert!(uses_testbed("let tb = Testbed::open()?;"));
    assert!(uses_testbed(r#"&["--nodes", "testbed"]"#));
    assert!(!uses_testbed("//! runs on --local PostgreSQL"));
}
