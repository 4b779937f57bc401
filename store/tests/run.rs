//! `store::run`: the run directory layout and the durable history log,
//! including a real SIGKILL of a process in the middle of appending.

// Tests may panic on failure; the workspace lints target library code.
#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use store::format;
use store::run::{HistoryLog, RunDir, RunError, timestamp_name};
use store::{Key, MicroOp, Op, OpIndex, OpType, ReadValue, Val};

fn op(i: u64) -> Op {
    Op::txn(
        9999, // overwritten by append
        if i.is_multiple_of(2) {
            OpType::Invoke
        } else {
            OpType::Ok
        },
        i % 4,
        vec![
            MicroOp::Append(Key::int((i % 10) as i64), Val::int(i as i64)),
            MicroOp::Read(
                Key::int(3),
                ReadValue::List((0..(i % 300) as i64).map(Val::int).collect()),
            ),
        ],
    )
}

#[test]
fn timestamps_are_utc_calendar_names() {
    assert_eq!(timestamp_name(0), "19700101T000000.000");
    // 2026-11-22 04:05:06.789 UTC
    assert_eq!(timestamp_name(1_795_320_306_789), "20261122T040506.789");
    assert_eq!(timestamp_name(951_782_400_000), "20000229T000000.000");
}

#[test]
fn run_dirs_are_laid_out_and_latest_follows() {
    let root = tempfile::tempdir().unwrap();
    let a = RunDir::create(root.path(), "pg-append").unwrap();
    let b = RunDir::create(root.path(), "pg-append").unwrap();
    assert_ne!(a.path(), b.path());
    for r in [&a, &b] {
        assert!(r.path().is_dir());
        assert_eq!(
            r.path().parent().unwrap(),
            root.path().join("runs/pg-append")
        );
        let name = r.path().file_name().unwrap().to_str().unwrap();
        assert_eq!(name.len(), "YYYYMMDDTHHMMSS.mmm".len(), "{name}");
        assert_eq!(&name[8..9], "T");
    }
    let latest = root.path().join("runs/latest");
    let target = std::fs::read_link(&latest).unwrap();
    assert!(target.is_relative(), "{}", target.display());
    assert_eq!(root.path().join("runs").join(&target), b.path());
    assert_eq!(
        std::fs::canonicalize(&latest).unwrap(),
        std::fs::canonicalize(b.path()).unwrap()
    );
    assert_eq!(b.history_path(), b.path().join("history.jsonl"));
    assert_eq!(b.results_path(), b.path().join("results.json"));
    assert_eq!(b.test_json_path(), b.path().join("test.json"));
    assert_eq!(b.log_path(), b.path().join("harness.log"));
    let reopened = RunDir::open(&latest).unwrap();
    assert_eq!(reopened.history_path(), latest.join("history.jsonl"));
    // No temporary link is left behind.
    let names: Vec<_> = std::fs::read_dir(root.path().join("runs"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names.len(), 2, "{names:?}");
}

#[test]
fn bad_test_names_and_missing_dirs_are_errors() {
    let root = tempfile::tempdir().unwrap();
    for bad in ["", "latest", "..", "a/b", ".hidden", "sp ace"] {
        assert!(
            matches!(
                RunDir::create(root.path(), bad),
                Err(RunError::InvalidTestName(_))
            ),
            "{bad:?}"
        );
    }
    assert!(RunDir::open(&root.path().join("nope")).is_err());
    let f = root.path().join("file");
    std::fs::write(&f, "").unwrap();
    assert!(matches!(RunDir::open(&f), Err(RunError::NotARunDir(_))));
}

#[test]
fn the_log_assigns_indices_and_reads_back() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("history.jsonl");
    let mut log = HistoryLog::create(&p).unwrap();
    for i in 0..1000 {
        assert_eq!(log.append(op(i)).unwrap(), OpIndex(i));
        if i == 500 {
            log.sync().unwrap();
        }
    }
    // Visible to readers before finish: each append reached the OS.
    let mid = format::read_path(&p).unwrap();
    assert_eq!(mid.ops.len(), 1000);
    log.finish().unwrap();
    let out = format::read_path(&p).unwrap();
    assert!(out.warnings.is_empty());
    for (i, o) in out.ops.iter().enumerate() {
        let mut want = op(i as u64);
        want.index = OpIndex(i as u64);
        assert_eq!(o, &want);
    }
}

#[test]
fn pushed_lines_reach_the_file_at_flush_in_one_piece() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("history.jsonl");
    let mut log = HistoryLog::create(&p).unwrap();
    assert_eq!(log.push(op(0)).unwrap(), OpIndex(0));
    assert_eq!(log.push(op(1)).unwrap(), OpIndex(1));
    assert!(
        format::read_path(&p).unwrap().ops.is_empty(),
        "pushed, not written"
    );
    log.flush().unwrap();
    assert_eq!(format::read_path(&p).unwrap().ops.len(), 2);
    // `append` writes what was pushed before it, in index order.
    log.push(op(2)).unwrap();
    assert_eq!(log.append(op(3)).unwrap(), OpIndex(3));
    let indices: Vec<u64> = format::read_path(&p)
        .unwrap()
        .ops
        .iter()
        .map(|o| o.index.0)
        .collect();
    assert_eq!(indices, [0, 1, 2, 3]);
    // `finish` writes the rest.
    log.push(op(4)).unwrap();
    log.finish().unwrap();
    assert_eq!(format::read_path(&p).unwrap().ops.len(), 5);
}

const CHILD_ENV: &str = "STORE_TEST_CRASH_LOG";

/// Not a test on its own: the child process of
/// `sigkill_mid_stream_loses_no_returned_append`, selected by an env var.
#[test]
fn crash_child_writer() {
    let Some(path) = std::env::var_os(CHILD_ENV) else {
        return;
    };
    let mut log = HistoryLog::create(Path::new(&path)).unwrap();
    let out = std::io::stdout();
    let started = std::time::Instant::now();
    for i in 0.. {
        let idx = log.append(op(i)).unwrap();
        let mut o = out.lock();
        writeln!(o, "APPENDED {}", idx.0).unwrap();
        o.flush().unwrap();
        if started.elapsed().as_secs() > 60 {
            break; // the parent went away
        }
    }
}

#[test]
fn sigkill_mid_stream_loses_no_returned_append() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("history.jsonl");
    let exe = std::env::current_exe().unwrap();
    let mut child = Command::new(exe)
        .args([
            "--exact",
            "crash_child_writer",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_ENV, &p)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Kill it by pid on any exit from this test.
    struct Guard(std::process::Child);
    impl Drop for Guard {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let stdout = child.stdout.take().unwrap();
    let mut guard = Guard(child);
    let mut last: Option<u64> = None;
    for line in BufReader::new(stdout).lines() {
        let line = line.unwrap();
        if let Some(n) = line.strip_prefix("APPENDED ") {
            let n: u64 = n.parse().unwrap();
            last = Some(n);
            if n >= 3000 {
                break;
            }
        }
    }
    // SIGKILL while it keeps appending.
    guard.0.kill().unwrap();
    let status = guard.0.wait().unwrap();
    assert!(!status.success());
    let last = last.expect("the child appended");
    let out = format::read_path(&p).unwrap_or_else(|e| panic!("{e}"));
    // The mapped log's NUL padding, and a torn line if the kill landed
    // mid-copy.
    assert!(
        out.warnings
            .iter()
            .all(|w| w.contains("NUL bytes") || w.contains("torn last line")),
        "{:?}",
        out.warnings
    );
    assert!(out.warnings.len() <= 2, "{:?}", out.warnings);
    assert!(
        out.ops.len() as u64 > last,
        "{} ops read, {last} acknowledged",
        out.ops.len()
    );
    for (i, o) in out.ops.iter().enumerate() {
        let mut want = op(i as u64);
        want.index = OpIndex(i as u64);
        assert_eq!(o, &want, "op {i}");
    }
}

/// A log at `p` with ops 0–9 appended.
fn log_of_ten(p: &Path) -> HistoryLog {
    let mut log = HistoryLog::create(p).unwrap();
    for i in 0..10 {
        log.append(op(i)).unwrap();
    }
    log
}

#[test]
fn a_torn_tail_in_the_log_is_reported_and_the_prefix_kept() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("history.jsonl");
    let log = log_of_ten(&p);
    log.finish().unwrap();
    // Simulate a crash mid-write of the last line.
    let len = std::fs::metadata(&p).unwrap().len();
    let f = std::fs::OpenOptions::new().write(true).open(&p).unwrap();
    f.set_len(len - 7).unwrap();
    let out = format::read_path(&p).unwrap();
    assert_eq!(out.ops.len(), 9);
    assert_eq!(out.warnings.len(), 1);
    assert!(
        out.warnings[0].contains(":10:1: torn last line"),
        "{}",
        out.warnings[0]
    );
}

#[test]
fn a_log_never_closed_reads_back_with_a_warning_and_finish_cuts_the_padding() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("history.jsonl");
    let log = log_of_ten(&p);
    // No Drop, no finish: the file as a killed run leaves it.
    std::mem::forget(log);
    let len = std::fs::metadata(&p).unwrap().len();
    let out = format::read_path(&p).unwrap();
    assert_eq!(out.ops.len(), 10);
    assert_eq!(out.warnings.len(), 1, "{:?}", out.warnings);
    assert!(
        out.warnings[0].contains(":11:1: the input ends in"),
        "{}",
        out.warnings[0]
    );
    assert!(len >= 1 << 20, "the window is reserved ahead: {len} bytes");

    let q = dir.path().join("closed.jsonl");
    let log = log_of_ten(&q);
    log.finish().unwrap();
    let bytes = std::fs::read(&q).unwrap();
    assert!(!bytes.contains(&0) && bytes.ends_with(b"\n"));
    assert_eq!(bytes.iter().filter(|&&b| b == b'\n').count(), 10);
}

#[test]
fn the_log_is_send() {
    fn is_send<T: Send>() {}
    is_send::<HistoryLog>();
}
