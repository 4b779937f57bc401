//! Runs interrupted by signals: a `harness run` started with its stdout
//! read line by line, two SIGINTs, and what is left running, read from
//! /proc.

use super::{harness, signal};
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Starts `harness run` with `args`, its stdout lines sent to the receiver.
pub fn spawn_run(store: &Path, args: &[&str]) -> (Child, mpsc::Receiver<String>) {
    let mut child = harness()
        .arg("run")
        .args(args)
        .arg("--store")
        .arg(store)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    (child, rx)
}

/// Waits (at most `secs`) for a stdout line containing `what`.
pub fn wait_line(rx: &mpsc::Receiver<String>, what: &str, secs: u64) -> bool {
    let end = Instant::now() + Duration::from_secs(secs);
    while let Some(left) = end.checked_duration_since(Instant::now()) {
        match rx.recv_timeout(left) {
            Ok(l) if l.contains(what) => return true,
            Ok(_) => {}
            Err(_) => return false,
        }
    }
    false
}

/// Two SIGINTs `gap_ms` apart (two deliveries, not one coalesced);
/// returns the exit code, the time from the second signal to the exit and
/// stderr.
pub fn interrupt_twice(child: Child, gap_ms: u64) -> (Option<i32>, Duration, String) {
    signal(child.id(), "INT");
    std::thread::sleep(Duration::from_millis(gap_ms));
    signal(child.id(), "INT");
    let second = Instant::now();
    let out = child.wait_with_output().unwrap();
    let took = second.elapsed();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    eprintln!(
        "exit {:?} {took:?} after the second signal\n{stderr}",
        out.status.code()
    );
    (out.status.code(), took, stderr)
}

/// The command lines of the live (not zombie) processes that name `path`.
pub fn running_on(path: &str) -> Vec<String> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter(|e| {
            std::fs::read_to_string(e.path().join("stat")).is_ok_and(|s| !s.contains(") Z "))
        })
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
        .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
        .filter(|c| c.contains(path))
        .collect()
}
