//! `harness serve` when every conversion permit is taken: a request that
//! waits past the queue wait (120 s by default; `HARNESS_SERVE_QUEUE_WAIT_MS`
//! here) gets 503 with `Retry-After` and a page that says why.

// Tests may panic on failure; the workspace lints target library code.
#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

mod report_support;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Kills the server (by pid) when dropped.
struct Child(std::process::Child);

impl Drop for Child {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Sends a GET and reads only the status line and headers (the body is
/// left unread, so a streamed conversion keeps its permit).
fn open_slow(addr: &str, target: &str) -> (TcpStream, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let req = format!("GET {target} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    s.write_all(req.as_bytes()).unwrap();
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        assert_eq!(s.read(&mut byte).unwrap(), 1, "connection closed early");
        head.push(byte[0]);
    }
    (s, String::from_utf8_lossy(&head).into_owned())
}

#[test]
fn a_request_beyond_the_conversion_permits_gets_503_with_a_clear_body() {
    let dir = tempfile::tempdir().unwrap();
    let run = report_support::big_run(dir.path(), "big", "20261126T200000.000", 100_000);
    let gz = run.join("history.jsonl.gz");
    store::format::compress_file(&run.join("history.jsonl"), &gz, 1).unwrap();
    std::fs::remove_file(run.join("history.jsonl")).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_harness"))
        .args(["serve", "--port", "0", "--store"])
        .arg(dir.path())
        .env("HARNESS_SERVE_QUEUE_WAIT_MS", "500")
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let child = Child(child);
    let mut line = String::new();
    BufReader::new(stdout).read_line(&mut line).unwrap();
    let addr = line
        .split("http://")
        .nth(1)
        .and_then(|s| s.split('/').next())
        .unwrap_or_else(|| panic!("no address in {line:?}"))
        .to_string();
    let target = "/run/big/20261126T200000.000/history.jsonl";
    // Two conversions (CONVERSION_PERMITS) whose clients read nothing: each
    // holds its permit while its bounded channel and the socket are full.
    let held: Vec<_> = (0..2).map(|_| open_slow(&addr, target)).collect();
    for (_, head) in &held {
        assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    }
    let started = Instant::now();
    let (status, body) = report_support::raw_get(&addr, "GET", target);
    let waited = started.elapsed();
    assert_eq!(status, 503, "{body}");
    assert!(
        body.contains("busy: too many requests are reading the store; retry shortly"),
        "{body}"
    );
    assert!(
        waited >= Duration::from_millis(400),
        "it waited: {waited:?}"
    );
    // The headers say when to retry.
    let (mut s, head) = open_slow(&addr, target);
    assert!(head.starts_with("HTTP/1.1 503"), "{head}");
    assert!(
        head.to_ascii_lowercase().contains("retry-after: 5"),
        "{head}"
    );
    let _ = s.read_to_end(&mut Vec::new());
    // Pages do not wait on conversions: the index still answers.
    let (status, page) = report_support::raw_get(&addr, "GET", "/");
    assert_eq!(status, 200, "{page}");
    // A permit given back is taken by the next request.
    drop(held);
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (mut s, head) = open_slow(&addr, target);
        if head.starts_with("HTTP/1.1 200") {
            break;
        }
        let _ = s.read_to_end(&mut Vec::new());
        assert!(Instant::now() < deadline, "permits never came back: {head}");
        std::thread::sleep(Duration::from_millis(100));
    }
    drop(child);
}
