//! `harness serve` under load: a store holding a 10-million-
//! transaction run — a 1 GB history as `history.jsonl.gz` and a ~160 MB
//! `results.json` with 400,000 anomalies, as a run checked before results
//! were capped left it — served to 200 concurrent clients (index, run page,
//! both big files in full, on-the-fly conversions read in part). Every
//! request must succeed and the server's peak resident memory (VmHWM) stay
//! under [`RSS_CEILING_MB`]. Before the fix the same load grew the server
//! to 23.8 GB until the kernel killed it.
//!
//! Generated synthetically (about two minutes in a debug build; `gzip` on
//! PATH), not by running
//! the simulator for 86 s: the server's load is the files, not how they
//! were made.

#![allow(clippy::panic)]

mod report_support;

use report_support::serve;
use std::io::{BufRead, BufReader, BufWriter, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Transactions in the history.
const TXNS: u64 = 10_000_000;
/// Anomalies listed in the (uncapped, old-style) results.json.
const ANOMALIES: u64 = 550_000;
/// Concurrent clients.
const CLIENTS: usize = 200;
/// The ceiling asserted on the server's peak resident memory.
const RSS_CEILING_MB: u64 = 300;

fn make_run(run: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(run.join("elle"))?;
    std::fs::write(
        run.join("test.json"),
        r#"{"schema_version":1,"name":"sim-list-append-lost-update","harness":{"version":"0.1.0","commit":"load"},
            "config":{"db":"sim","workload":"list-append","isolation":"serializable","sim_bug":"lost-update",
                      "expected_consistency_model":"snapshot-isolation","nemesis":"none"}}"#,
    )?;
    // results.json as an uncapped check wrote it: every anomaly listed.
    let mut r = BufWriter::new(std::fs::File::create(run.join("results.json"))?);
    write!(
        r,
        r#"{{"valid?":false,"anomaly-types":["G-single-item","lost-update"],"anomalies":{{"lost-update":["#
    )?;
    for i in 0..ANOMALIES {
        if i > 0 {
            r.write_all(b",")?;
        }
        write!(
            r,
            r#"{{"type":"lost-update","key":{i},"value":[1,2,3,4,5,6,7,8],"txns":[{{"index":{a},"type":"ok","process":3,"f":"txn","value":[["r",{i},[1,2,3,4,5,6,7,8]],["append",{i},9]]}},{{"index":{b},"type":"ok","process":7,"f":"txn","value":[["r",{i},[1,2,3,4,5,6,7,8]],["append",{i},10]]}}]}}"#,
            a = i * 25,
            b = i * 25 + 11
        )?;
    }
    write!(
        r,
        r#"],"G-single-item":[{{"cycle":[1,2,3]}}]}},"not":["snapshot-isolation"],"also-not":["serializable"]}}"#
    )?;
    r.flush()?;
    std::fs::write(run.join("elle/lost-update.txt"), "lost-update #0\nLet: …\n")?;
    std::fs::write(run.join("timeline.html"), "<html></html>")?;
    // history.jsonl.gz: completions only (each one a transaction).
    let gz = std::fs::File::create(run.join("history.jsonl.gz"))?;
    let mut child = Command::new("gzip")
        .arg("-1")
        .stdin(Stdio::piped())
        .stdout(gz)
        .spawn()?;
    {
        let stdin = child
            .stdin
            .take()
            .ok_or_else(|| std::io::Error::other("no stdin"))?;
        let mut w = BufWriter::with_capacity(1 << 20, stdin);
        for n in 0..TXNS {
            let k = n % 1000;
            writeln!(
                w,
                r#"{{"index":{n},"time":{t},"type":"ok","process":{p},"f":"txn","value":[["append",{k},{n}],["r",{k2},[1,2,3]]]}}"#,
                t = n * 1000,
                p = n % 50,
                k2 = (k + 1) % 1000
            )?;
        }
        w.flush()?;
    }
    let status = child.wait()?;
    if !status.success() {
        return Err(std::io::Error::other(format!("gzip: {status}")));
    }
    Ok(())
}

/// One GET; reads the body up to `max` bytes (all when `None`), counting
/// it. Returns (status, bytes read, the first bytes of the body).
fn get(addr: &str, target: &str, max: Option<u64>) -> std::io::Result<(u16, u64, String)> {
    let s = TcpStream::connect(addr)?;
    s.set_read_timeout(Some(Duration::from_secs(300)))?;
    let mut w = s.try_clone()?;
    write!(
        w,
        "GET {target} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )?;
    let mut r = BufReader::with_capacity(64 * 1024, s);
    let mut status_line = String::new();
    r.read_line(&mut status_line)?;
    let status = status_line
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    loop {
        let mut h = String::new();
        if r.read_line(&mut h)? == 0 || h == "\r\n" {
            break;
        }
    }
    let mut total = 0u64;
    let mut first = String::new();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        if max.is_some_and(|m| total >= m) {
            break;
        }
        let n = r.read(&mut buf)?;
        if n == 0 {
            break;
        }
        if first.len() < 16 * 1024 {
            first.push_str(&String::from_utf8_lossy(&buf[..n.min(16 * 1024)]));
        }
        total += n as u64;
    }
    Ok((status, total, first))
}

fn vm_hwm_kb(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

#[test]
#[ignore = "system test: generates a 10M-transaction store (~1 minute, needs gzip) and 200 clients"]
fn serve_stays_bounded_under_200_concurrent_requests_on_a_10m_transaction_store() {
    let store = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let rel = "sim-list-append-lost-update/20261126T170000.000";
    let run = store.path().join(rel);
    let made = Instant::now();
    make_run(&run).unwrap_or_else(|e| panic!("generating the store: {e}"));
    let size = |f: &str| std::fs::metadata(run.join(f)).map_or(0, |m| m.len());
    let (results_bytes, gz_bytes) = (size("results.json"), size("history.jsonl.gz"));
    eprintln!(
        "store made in {:.1} s: results.json {:.1} MB, history.jsonl.gz {:.1} MB ({TXNS} transactions)",
        made.elapsed().as_secs_f64(),
        results_bytes as f64 / 1e6,
        gz_bytes as f64 / 1e6
    );
    let srv = serve(store.path());
    let addr = srv.addr.clone();
    let started = Instant::now();
    let handles: Vec<_> = (0..CLIENTS)
        .map(|i| {
            let addr = addr.clone();
            let (target, max, kind) = match i % 10 {
                0..=3 => ("/".to_string(), None, "index"),
                4..=6 => (format!("/run/{rel}/"), None, "run page"),
                7 if i % 20 == 7 => (format!("/run/{rel}/results.json"), None, "results.json"),
                7 => (
                    format!("/run/{rel}/history.jsonl.gz"),
                    None,
                    "history.jsonl.gz",
                ),
                8 => (
                    format!("/run/{rel}/history.jsonl"),
                    Some(1 << 20),
                    "history.jsonl",
                ),
                _ => (
                    format!("/run/{rel}/history.edn"),
                    Some(1 << 20),
                    "history.edn",
                ),
            };
            std::thread::spawn(move || {
                let t = Instant::now();
                let r = get(&addr, &target, max);
                (kind, r, t.elapsed())
            })
        })
        .collect();
    let mut failures = Vec::new();
    let mut slowest: std::collections::BTreeMap<&str, (usize, Duration)> = Default::default();
    for h in handles {
        let (kind, r, took) = h
            .join()
            .unwrap_or_else(|_| panic!("client thread panicked"));
        let e = slowest.entry(kind).or_insert((0, Duration::ZERO));
        e.0 += 1;
        e.1 = e.1.max(took);
        match r {
            Ok((200, n, first)) => {
                let ok = match kind {
                    "index" => first.contains("harness runs"),
                    "run page" => first.contains("<!DOCTYPE html>"),
                    "results.json" => n == results_bytes,
                    "history.jsonl.gz" => n == gz_bytes,
                    // Chunked: the first chunk's size line comes first.
                    "history.jsonl" => n >= 1 << 20 && first.contains("\r\n{\"index\":0,"),
                    _ => n >= 1 << 20 && first.contains("\r\n{:index 0,"),
                };
                if !ok {
                    failures.push(format!(
                        "{kind}: {n} bytes, starts {:?}",
                        &first[..first.len().min(80)]
                    ));
                }
            }
            Ok((status, _, first)) => failures.push(format!(
                "{kind}: status {status}: {}",
                &first[..first.len().min(200)]
            )),
            Err(e) => failures.push(format!("{kind}: {e}")),
        }
    }
    let wall = started.elapsed();
    let hwm_mb = vm_hwm_kb(srv.pid()) / 1024;
    eprintln!(
        "{CLIENTS} concurrent requests in {:.1} s, {} failed; server peak RSS (VmHWM) {hwm_mb} MB",
        wall.as_secs_f64(),
        failures.len()
    );
    for (kind, (n, t)) in &slowest {
        eprintln!("  {kind}: {n} requests, slowest {:.1} s", t.as_secs_f64());
    }
    assert!(failures.is_empty(), "{failures:#?}");
    assert!(hwm_mb > 0, "VmHWM read");
    assert!(
        hwm_mb <= RSS_CEILING_MB,
        "peak RSS {hwm_mb} MB > {RSS_CEILING_MB} MB"
    );
    // The index again, warm: the digest is cached, not re-read.
    let t = Instant::now();
    let (status, _, body) = get(&addr, "/", None).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(status, 200);
    assert!(body.contains("lost-update"), "{body}");
    eprintln!("warm index: {:.3} s", t.elapsed().as_secs_f64());

    // The whole run as one archive: streamed, so the server's resident
    // memory stays where it was while a 1 GB+ archive goes out.
    let pid = srv.pid();
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let sampler = {
        let done = std::sync::Arc::clone(&done);
        std::thread::spawn(move || {
            let mut peak = 0u64;
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                peak = peak.max(vm_rss_kb(pid));
                std::thread::sleep(Duration::from_millis(50));
            }
            peak
        })
    };
    let before_mb = vm_rss_kb(pid) / 1024;
    let t = Instant::now();
    let (n, listing) = archive_listing(&addr, &format!("/run/{rel}/archive.tar.gz"))
        .unwrap_or_else(|e| panic!("{e}"));
    done.store(true, std::sync::atomic::Ordering::Relaxed);
    let peak_mb = sampler.join().unwrap_or(0) / 1024;
    eprintln!(
        "archive.tar.gz: {:.1} MB in {:.1} s; server RSS {before_mb} MB before, peak {peak_mb} MB during",
        n as f64 / 1e6,
        t.elapsed().as_secs_f64()
    );
    // Every file whole: `tar -tv` lists each with its size.
    for (f, bytes) in [
        ("history.jsonl.gz", gz_bytes),
        ("results.json", results_bytes),
    ] {
        assert!(
            listing
                .lines()
                .any(|l| l.ends_with(&format!("/{f}")) && l.contains(&format!(" {bytes} "))),
            "{f} ({bytes} bytes) not in the archive:\n{listing}"
        );
    }
    assert!(
        peak_mb <= RSS_CEILING_MB,
        "peak RSS {peak_mb} MB while archiving > {RSS_CEILING_MB} MB"
    );
}

/// GET `target` over HTTP/1.0 (no chunking: the body is the archive) and
/// stream the body into `tar -tvz`: (body bytes, tar's listing).
fn archive_listing(addr: &str, target: &str) -> std::io::Result<(u64, String)> {
    let s = TcpStream::connect(addr)?;
    s.set_read_timeout(Some(Duration::from_secs(300)))?;
    let mut w = s.try_clone()?;
    write!(w, "GET {target} HTTP/1.0\r\nHost: {addr}\r\n\r\n")?;
    let mut r = BufReader::with_capacity(64 * 1024, s);
    let mut status = String::new();
    r.read_line(&mut status)?;
    if !status.contains(" 200 ") {
        return Err(std::io::Error::other(format!("status {status}")));
    }
    loop {
        let mut h = String::new();
        if r.read_line(&mut h)? == 0 || h == "\r\n" {
            break;
        }
    }
    let mut tar = Command::new("tar")
        .args(["-tvzf", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()?;
    let mut out = tar
        .stdout
        .take()
        .ok_or_else(|| std::io::Error::other("no stdout"))?;
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = out.read_to_string(&mut s);
        s
    });
    let n = {
        let mut stdin = tar
            .stdin
            .take()
            .ok_or_else(|| std::io::Error::other("no stdin"))?;
        std::io::copy(&mut r, &mut stdin)?
    };
    let st = tar.wait()?;
    let listing = reader.join().unwrap_or_default();
    if !st.success() {
        return Err(std::io::Error::other(format!("tar: {st}")));
    }
    Ok((n, listing))
}

fn vm_rss_kb(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}
