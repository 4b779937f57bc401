//! Headless Chromium (Debian's `chromium`) opens `harness serve`'s index, a
//! run page with an anomaly, and the timeline of a 100k-op history; checks the
//! rendered DOM (verdict, explanation text, timeline drawn), that no console
//! error or blocked resource was logged, and saves screenshots into
//! `target/ci-artifacts/` (or `$CARGO_TARGET_DIR/ci-artifacts/`).
//!
//! CI installs `chromium`; set `CHROMIUM` to use another binary.

#![allow(clippy::panic)]

mod report_support;

use report_support::{big_run, g1c_run, harness, malformed_run, serve};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn artifacts() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target"));
    let dir = target.join("ci-artifacts");
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    dir
}

fn chromium() -> String {
    if let Ok(c) = std::env::var("CHROMIUM") {
        return c;
    }
    for c in ["chromium", "chromium-browser", "google-chrome"] {
        if Command::new(c)
            .arg("--version")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
        {
            return c.to_string();
        }
    }
    panic!("no chromium found: CI must `apt-get install -y chromium` (or set CHROMIUM)");
}

/// Runs headless Chromium on `url` with `extra` flags; returns (stdout, stderr).
/// Killed (by pid) after 120 s.
fn run_chromium(url: &str, extra: &[String]) -> (String, String) {
    let profile = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let mut cmd = Command::new(chromium());
    cmd.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-dev-shm-usage",
        "--enable-logging=stderr",
        "--v=0",
        "--virtual-time-budget=5000",
    ])
    .arg(format!("--user-data-dir={}", profile.path().display()))
    // Nothing of Chromium's outside its throwaway profile: no crash-report
    // or cache folders in the home directory.
    .args(["--disable-breakpad", "--disable-crash-reporter"])
    .env("HOME", profile.path())
    .env("XDG_CONFIG_HOME", profile.path().join("config"))
    .env("XDG_CACHE_HOME", profile.path().join("cache"))
    .args(extra)
    .arg(url)
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    let mut child = cmd
        .spawn()
        .unwrap_or_else(|e| panic!("spawning chromium: {e}"));
    let mut so = child.stdout.take().unwrap_or_else(|| panic!("stdout"));
    let mut se = child.stderr.take().unwrap_or_else(|| panic!("stderr"));
    let ro = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = std::io::Read::read_to_string(&mut so, &mut s);
        s
    });
    let re = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = std::io::Read::read_to_string(&mut se, &mut s);
        s
    });
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(50)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                panic!("chromium did not finish within 120 s on {url}");
            }
        }
    }
    (ro.join().unwrap_or_default(), re.join().unwrap_or_default())
}

/// Console messages, uncaught exceptions, CSP refusals and failed loads.
/// Chromium logs every console message (any level, errors included) as an
/// `INFO:CONSOLE` line; our pages log nothing, so any such line is a problem.
fn console_problems(stderr: &str) -> Vec<String> {
    stderr
        .lines()
        .filter(|l| {
            l.contains(":CONSOLE")
                || l.contains("Uncaught")
                || l.contains("Refused to")
                || l.contains("Failed to load resource")
        })
        .map(str::to_string)
        .collect()
}

#[test]
#[ignore = "system test, needs Chromium; .ci/run runs it"]
fn console_scanner_sees_errors() {
    let page = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let f = page.path().join("bad.html");
    std::fs::write(
        &f,
        "<html><body><script>console.error('x'); undefinedFn();</script></body></html>",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let (_, err) = run_chromium(
        &format!("file://{}", f.display()),
        &["--dump-dom".to_string()],
    );
    let problems = console_problems(&err);
    assert!(
        problems
            .iter()
            .any(|l| l.contains("Uncaught ReferenceError")),
        "{err}"
    );
    assert!(
        problems.len() >= 2,
        "console.error is seen too: {problems:?}"
    );
}

/// Dumps the DOM of `url` after its scripts ran, and takes a screenshot.
fn visit(url: &str, shot: &str) -> String {
    let (dom, err) = run_chromium(url, &["--dump-dom".to_string()]);
    let problems = console_problems(&err);
    assert!(
        problems.is_empty(),
        "{url}: console problems:\n{}",
        problems.join("\n")
    );
    let png = artifacts().join(shot);
    let _ = std::fs::remove_file(&png);
    let (_, err) = run_chromium(
        url,
        &[
            format!("--screenshot={}", png.display()),
            "--window-size=1280,900".to_string(),
        ],
    );
    let bytes =
        std::fs::read(&png).unwrap_or_else(|e| panic!("screenshot {}: {e}\n{err}", png.display()));
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n", "{shot} is a PNG");
    dom
}

fn html_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

#[test]
#[ignore = "system test, needs Chromium; .ci/run runs it"]
fn chromium_renders_index_run_page_and_100k_op_timeline() {
    // Chromium's own folders in the home directory that did not exist before
    // must not exist after (crash reports, caches): the browser is given a
    // throwaway HOME.
    let home = PathBuf::from(std::env::var_os("HOME").unwrap_or_default());
    let chromium_dirs: Vec<PathBuf> = [
        ".config/chromium",
        ".cache/chromium",
        ".local/share/chromium",
    ]
    .iter()
    .map(|d| home.join(d))
    .filter(|d| !d.exists())
    .collect();
    let store = artifacts().join("browser-store");
    let _ = std::fs::remove_dir_all(&store);
    std::fs::create_dir_all(&store).unwrap_or_else(|e| panic!("{e}"));
    let g1c = g1c_run(&store, "sim-append", "20261122T050000.000");
    let (code, out, err) = harness(&["analyze", &g1c.to_string_lossy()]);
    assert_eq!(code, 1, "{out}{err}");
    // 50k transactions = 100k client ops (+ nemesis ops).
    let big = big_run(&store, "big-append", "20261122T040000.000", 50_000);
    let (code, out, err) = harness(&["analyze", &big.to_string_lossy(), "--reports-only"]);
    assert_eq!(code, 0, "{out}{err}");
    let timeline_bytes = std::fs::metadata(big.join("timeline.html"))
        .map(|m| m.len())
        .unwrap_or(0);
    assert!(
        timeline_bytes > 0 && timeline_bytes < 20 * 1024 * 1024,
        "{timeline_bytes} bytes"
    );
    malformed_run(&store, "broken", "20261122T030000.000");

    let srv = serve(&store);
    let base = format!("http://{}", srv.addr);

    let index = visit(&format!("{base}/"), "index.png");
    assert!(
        index.contains("sim-append") && index.contains("big-append"),
        "{index}"
    );
    assert!(index.contains("v-invalid") && index.contains("v-valid"));
    assert!(
        index.contains("error-row"),
        "malformed run shown as an error row"
    );

    let page = visit(
        &format!("{base}/run/sim-append/20261122T050000.000/"),
        "run-g1c.png",
    );
    assert!(
        page.contains("verdict v-invalid\">invalid<"),
        "verdict shown: {page}"
    );
    let explanation = std::fs::read_to_string(g1c.join("elle/G1c.txt")).unwrap_or_default();
    let first_lines: Vec<&str> = explanation
        .lines()
        .filter(|l| !l.trim().is_empty())
        .take(3)
        .collect();
    assert!(!first_lines.is_empty());
    for l in first_lines {
        assert!(
            page.contains(&html_escape(l)),
            "explanation line {l:?} not in the page"
        );
    }
    assert!(
        page.contains("src=\"elle/G1c/0.svg\""),
        "cycle graph inline"
    );
    assert!(page.contains("src=\"latency-raw.svg\""), "plots inline");

    let tl = visit(
        &format!("{base}/run/big-append/20261122T040000.000/timeline.html"),
        "timeline-100k.png",
    );
    // 50k transactions + 10 nemesis actions (5 partitions started and stopped).
    let spans = 50_000 + 10;
    let status = tl
        .split("id=\"status\">")
        .nth(1)
        .and_then(|s| s.split('<').next())
        .unwrap_or("");
    assert!(
        status.starts_with(&format!("rendered {spans} ops")),
        "timeline status: {status:?}"
    );
    assert!(tl.contains("<div id=\"errors\"></div>"), "no script errors");
    for d in &chromium_dirs {
        assert!(!d.exists(), "Chromium left {} behind", d.display());
    }
}
