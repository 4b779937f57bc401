//! `harness run` on a disk that fills up while it checks: the verdict is
//! printed and its exit code returned, the error is said once (not
//! "No space left on device (os error 28): No space left on device (os
//! error 28)"), the run directory is named once, and the run says clearly
//! that no verdict was recorded, in `harness.log` as well.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod run_common;

use run_common::*;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

/// Unmounts the tmpfs when dropped (also when the test panics).
struct Mount(std::path::PathBuf);

impl Drop for Mount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

#[test]
#[ignore = "system test, needs root (mounts a small tmpfs); .ci/run runs it"]
fn a_disk_full_at_the_check_still_gives_the_verdict_and_says_none_was_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let ok = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=256m", "tmpfs"])
        .arg(dir.path())
        .status()
        .unwrap();
    assert!(ok.success(), "mount tmpfs");
    let _mount = Mount(dir.path().to_path_buf());
    let mut child = harness()
        .args([
            "run",
            "--db",
            "sim",
            "--sim-bug",
            "lost-update",
            "--ops",
            "20000",
            "--seed",
            "8",
            "--test-name",
            "full",
            "--store",
        ])
        .arg(dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut seen = String::new();
    loop {
        let mut line = String::new();
        assert!(
            stdout.read_line(&mut line).unwrap() > 0,
            "ended early: {seen}"
        );
        seen += &line;
        if line.contains("checking the history") {
            break;
        }
    }
    // Stopped while the disk fills up: the results and test.json then
    // cannot be written.
    signal(child.id(), "STOP");
    let filler = dir.path().join("filler");
    let _ = Command::new("dd")
        .args(["if=/dev/zero", "bs=1M"])
        .arg(format!("of={}", filler.display()))
        .stderr(Stdio::null())
        .status();
    signal(child.id(), "CONT");
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stdout, &mut rest).unwrap();
    seen += &rest;
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    eprintln!("{seen}\n--- stderr\n{stderr}");
    // The verdict of the lost-update bug, printed and returned.
    assert_eq!(out.status.code(), Some(1), "the verdict's exit code");
    assert!(seen.contains("INVALID"), "{seen}");
    assert!(
        stderr.contains("error: no verdict was recorded in"),
        "says so clearly: {stderr}"
    );
    assert!(
        !stderr.contains("(os error 28): No space left on device"),
        "the cause once per message: {stderr}"
    );
    let lines: Vec<&str> = stderr.lines().collect();
    for (i, l) in lines.iter().enumerate() {
        assert!(
            !lines[..i]
                .iter()
                .any(|m| m.ends_with(l.trim_start_matches("warning: "))),
            "said twice: {l}"
        );
    }
    assert_eq!(
        format!("{seen}{stderr}").matches("run directory:").count(),
        2,
        "at the start and with the verdict, not again for an error"
    );
    // harness.log, on the full disk too, says what was lost: its reserve
    // (allocated ahead of its end) holds the line.
    let run_dir = std::fs::read_dir(dir.path().join("runs/full"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.join("harness.log").is_file())
        .expect("a run directory with harness.log");
    let log = std::fs::read_to_string(run_dir.join("harness.log")).unwrap();
    let line = log
        .lines()
        .find(|l| l.contains("ERROR") && l.contains("no verdict was recorded"))
        .unwrap_or_else(|| panic!("no disk-full line in harness.log:\n{log}"));
    assert!(line.contains("No space left on device"), "{line}");
}
