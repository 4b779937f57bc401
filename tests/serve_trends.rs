//! Trends across nights in `harness serve`: five nights of a small suite
//! run by `harness soak` on the simulator (nights 1–3 in one store, 4–5 in
//! another, served together), one cell made to fail on night 3 only (a
//! `lost-update` bug that night), one flaky (the bug on nights 2 and 4), one
//! steady. `/api/runs` and `/trends` give each cell's first failure and
//! flake rate, every square links to a run that serves; a run downloads as
//! one tar.gz holding its files. With Chromium (CI): the trends page
//! rendered, its DOM checked, a screenshot saved to
//! `target/ci-artifacts/trends.png` (a copy is docs/trends.png).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

mod run_common;

use run_common::harness;
use serde_json::Value;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const NIGHTS: [&str; 5] = [
    "2026-12-01",
    "2026-12-02",
    "2026-12-03",
    "2026-12-04",
    "2026-12-05",
];

/// The suite of night `n` (from 1): the bug where the night says.
fn suite(n: usize) -> String {
    let bug = |on: bool| {
        if on {
            "sim-bug = \"lost-update\"\n"
        } else {
            ""
        }
    };
    format!(
        r#"
[suite]
name = "nightly-mini"
seed = {n}
[defaults]
db = "sim"
ops = 300
concurrency = 2
[[test]]
name = "steady"
[[test]]
name = "regressed"
{}[[test]]
name = "flaky"
{}"#,
        bug(n == 3),
        bug(n == 2 || n == 4)
    )
}

/// Runs the five nights; returns the two stores.
fn five_nights(tmp: &Path) -> (PathBuf, PathBuf) {
    let (a, b) = (tmp.join("store-a"), tmp.join("store-b"));
    for (i, night) in NIGHTS.iter().enumerate() {
        let n = i + 1;
        let file = tmp.join(format!("night{n}.toml"));
        std::fs::write(&file, suite(n)).unwrap();
        let store = if n <= 3 { &a } else { &b };
        let out = harness()
            .arg("soak")
            .arg(&file)
            .arg("--store")
            .arg(store)
            .args(["--night", night, "--db-commit", &format!("abc{n}")])
            .args(["--triage", "1"])
            .output()
            .unwrap();
        let want = if matches!(n, 2..=4) { 1 } else { 0 };
        assert_eq!(
            out.status.code(),
            Some(want),
            "night {n}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    (a, b)
}

struct Server {
    child: Child,
    addr: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn serve(stores: &[&Path]) -> Server {
    let mut cmd = harness();
    cmd.args(["serve", "--port", "0"]);
    for s in stores {
        cmd.arg("--store").arg(s);
    }
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut line = String::new();
    let _ = BufReader::new(child.stdout.take().unwrap()).read_line(&mut line);
    let addr = line
        .split("http://")
        .nth(1)
        .and_then(|s| s.split('/').next())
        .unwrap_or_else(|| panic!("no address: {line:?}"))
        .to_string();
    Server { child, addr }
}

/// GET over HTTP/1.0 (the body ends when the connection closes): status,
/// headers, body bytes.
fn get(addr: &str, target: &str) -> (u16, String, Vec<u8>) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    write!(s, "GET {target} HTTP/1.0\r\nHost: {addr}\r\n\r\n").unwrap();
    let mut buf = Vec::new();
    s.read_to_end(&mut buf).unwrap();
    let end = buf.windows(4).position(|w| w == b"\r\n\r\n").unwrap();
    let head = String::from_utf8_lossy(&buf[..end]).to_string();
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    (status, head, buf[end + 4..].to_vec())
}

fn api(addr: &str) -> Value {
    let (status, head, body) = get(addr, "/api/runs");
    assert_eq!(status, 200, "{head}");
    assert!(
        head.to_ascii_lowercase().contains("application/json"),
        "{head}"
    );
    serde_json::from_slice(&body).unwrap()
}

fn cell<'a>(api: &'a Value, name: &str) -> &'a Value {
    api["cells"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["cell"] == name)
        .unwrap_or_else(|| panic!("no cell {name}"))
}

#[test]
fn trends_give_first_failure_and_flake_rate_and_runs_download_as_archives() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = five_nights(tmp.path());
    let server = serve(&[&a, &b]);
    let api = api(&server.addr);
    assert_eq!(api["runs"].as_array().unwrap().len(), 15);
    assert_eq!(api["stores"].as_array().unwrap().len(), 2);

    let regressed = cell(&api, "regressed");
    assert_eq!(regressed["first_failure"], "2026-12-03");
    assert_eq!(regressed["first_failure_db_commit"], "abc3");
    // The commit range: last pass before the first failure.
    assert_eq!(regressed["last_pass_before"]["night"], "2026-12-02");
    assert_eq!(regressed["last_pass_before"]["db_commit"], "abc2");
    assert_eq!(regressed["failing_nights"], 1);
    assert_eq!(regressed["nights_run"], 5);
    assert_eq!(regressed["flake_rate"], 0.2);
    let flaky = cell(&api, "flaky");
    assert_eq!(flaky["first_failure"], "2026-12-02");
    assert_eq!(flaky["failing_nights"], 2);
    assert_eq!(flaky["flake_rate"], 0.4);
    assert_eq!(flaky["status"], "flaky");
    assert_eq!(flaky["nights"]["2026-12-03"]["square"], "pass");
    assert_eq!(flaky["nights"]["2026-12-04"]["square"], "fail");
    assert_eq!(regressed["status"], "recovered");
    let steady = cell(&api, "steady");
    assert_eq!(steady["status"], "stable");
    assert_eq!(steady["failing_nights"], 0);
    // The record keeps what a trend needs.
    let run = api["runs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["cell"] == "regressed" && r["night"] == "2026-12-03")
        .unwrap();
    assert_eq!(run["suite"], "nightly-mini");
    assert_eq!(run["outcome"], "invalid");
    assert_eq!(run["as_expected"], false);
    assert_eq!(run["db_commit"], "abc3");
    assert!(run["seed"].as_u64().is_some());
    assert!(!run["harness_version"].as_str().unwrap().is_empty());
    assert!(
        run["anomaly_types"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t == "lost-update"),
        "{run}"
    );

    // Its run page: the soak, the triage, the archive link; after
    // `reproduce --shrink`, the shrunk configuration too.
    let (_, _, page) = get(&server.addr, run["url"].as_str().unwrap());
    let page = String::from_utf8_lossy(&page).to_string();
    assert!(page.contains("soak <b>nightly-mini</b>, cell <b>regressed</b>, night 2026-12-03, db commit abc3: invalid (expected valid)"), "{page}");
    assert!(
        page.contains("triage: reproduced 1/1 with its seed"),
        "{page}"
    );
    assert!(page.contains("href=\"archive.tar.gz\""));
    let dir = a.join("runs").join(run["run"].as_str().unwrap());
    let out = harness()
        .arg("reproduce")
        .arg(&dir)
        .args(["--shrink", "--anomaly", "lost-update"])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (_, _, page) = get(&server.addr, run["url"].as_str().unwrap());
    let page = String::from_utf8_lossy(&page).to_string();
    assert!(
        page.contains("<tr><th>workers</th><td>2</td><td>"),
        "{page}"
    );
    assert!(
        page.contains("still fails (lost-update) in 1 of 1 runs: <a href=\"shrunk.toml\">"),
        "{page}"
    );
    let (status, _, toml) = get(
        &server.addr,
        &format!("{}shrunk.toml", run["url"].as_str().unwrap()),
    );
    assert_eq!(status, 200);
    assert!(String::from_utf8_lossy(&toml).contains("expect = [\"lost-update\"]"));

    // Every square's run serves, from both stores.
    let mut second_store = 0;
    for r in api["runs"].as_array().unwrap() {
        let url = r["url"].as_str().unwrap();
        second_store += usize::from(url.starts_with("/s/1/run/"));
        let (status, head, body) = get(&server.addr, url);
        assert_eq!(status, 200, "{url}: {head}");
        assert!(
            String::from_utf8_lossy(&body)
                .contains(r["run"].as_str().unwrap().split('/').next().unwrap())
        );
    }
    assert_eq!(second_store, 6, "nights 4 and 5 are in the second store");
    let (status, _, html) = get(&server.addr, "/trends");
    assert_eq!(status, 200);
    let html = String::from_utf8_lossy(&html);
    assert!(
        html.contains("20% (1/5 nights)") && html.contains("40% (2/5 nights)"),
        "{html}"
    );

    // A run as one archive: every file of the run directory, byte for byte.
    let url = format!("{}archive.tar.gz", run["url"].as_str().unwrap());
    let (status, head, gz) = get(&server.addr, &url);
    assert_eq!(status, 200, "{head}");
    let lower = head.to_ascii_lowercase();
    assert!(lower.contains("content-type: application/gzip"), "{head}");
    assert!(
        lower.contains("content-disposition: attachment; filename=\"regressed-"),
        "{head}"
    );
    let x = tmp.path().join("x");
    std::fs::create_dir(&x).unwrap();
    std::fs::write(tmp.path().join("run.tar.gz"), &gz).unwrap();
    let st = Command::new("tar")
        .arg("-xzf")
        .arg(tmp.path().join("run.tar.gz"))
        .arg("-C")
        .arg(&x)
        .status()
        .unwrap();
    assert!(st.success());
    let run_dir = a.join("runs").join(run["run"].as_str().unwrap());
    let top = x.join(run["run"].as_str().unwrap().replace('/', "-"));
    let mut n = 0;
    for e in walk(&run_dir) {
        let rel = e.strip_prefix(&run_dir).unwrap();
        assert_eq!(
            std::fs::read(&e).unwrap(),
            std::fs::read(top.join(rel)).unwrap_or_default(),
            "{}",
            rel.display()
        );
        n += 1;
    }
    assert!(n >= 5, "{n} files");
    assert!(top.join("history.jsonl.gz").is_file() || top.join("history.jsonl").is_file());
    // Only the stores given, and no way out of them.
    assert_eq!(get(&server.addr, "/s/7/run/regressed/").0, 404);
    assert_eq!(get(&server.addr, "/s/1/run/%2e%2e/%2e%2e/").0, 400);
    // Not a run: no archive.
    let (status, _, _) = get(&server.addr, "/run/regressed/archive.tar.gz");
    assert_eq!(status, 404);
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        let ft = e.file_type().unwrap();
        if ft.is_dir() {
            out.extend(walk(&p));
        } else if ft.is_file() {
            out.push(p);
        }
    }
    out
}

fn chromium() -> String {
    if let Ok(c) = std::env::var("CHROMIUM") {
        return c;
    }
    "chromium".to_string()
}

/// Headless Chromium on `url` with `extra` flags; (stdout, stderr).
fn run_chromium(url: &str, extra: &[String]) -> (String, String) {
    let profile = tempfile::tempdir().unwrap();
    let mut child = Command::new(chromium())
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-dev-shm-usage",
            "--disable-breakpad",
            "--disable-crash-reporter",
            "--enable-logging=stderr",
            "--v=0",
            "--virtual-time-budget=3000",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .env("HOME", profile.path())
        .env("XDG_CONFIG_HOME", profile.path().join("config"))
        .env("XDG_CACHE_HOME", profile.path().join("cache"))
        .args(extra)
        .arg(url)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("chromium (CI installs it; or set CHROMIUM): {e}"));
    let mut so = child.stdout.take().unwrap();
    let mut se = child.stderr.take().unwrap();
    let ro = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = so.read_to_string(&mut s);
        s
    });
    let re = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = se.read_to_string(&mut s);
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
                panic!("chromium did not finish within 120 s");
            }
        }
    }
    (ro.join().unwrap(), re.join().unwrap())
}

fn artifacts() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target"));
    let dir = target.join("ci-artifacts");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The text of the `<td class="{class}">` in the row of `cell`.
fn row_field(dom: &str, cell: &str, class: &str) -> String {
    let row = dom
        .split("<tr data-cell=\"")
        .find(|r| r.starts_with(&format!("{cell}\"")))
        .unwrap_or_else(|| panic!("no row {cell}"));
    let row = &row[..row.find("</tr>").unwrap()];
    let start = row
        .find(&format!("class=\"{class}"))
        .unwrap_or_else(|| panic!("no {class} in {row}"));
    let from = start + row[start..].find('>').unwrap() + 1;
    let text = &row[from..];
    // Up to the cell's end, tags dropped.
    let text = &text[..text.find("</td>").unwrap()];
    let mut out = String::new();
    let mut in_tag = false;
    for c in text.chars() {
        match c {
            '<' => in_tag = true,
            '>' => in_tag = false,
            c if !in_tag => out.push(c),
            _ => {}
        }
    }
    out
}

#[test]
#[ignore = "system test, needs Chromium; .ci/run runs it"]
fn chromium_renders_the_trends_page_of_five_nights() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = five_nights(tmp.path());
    let server = serve(&[&a, &b]);
    let url = format!("http://{}/trends", server.addr);
    let (dom, err) = run_chromium(&url, &["--dump-dom".to_string()]);
    let problems: Vec<&str> = err
        .lines()
        .filter(|l| {
            l.contains(":CONSOLE") || l.contains("Refused to") || l.contains("Failed to load")
        })
        .collect();
    assert!(problems.is_empty(), "{problems:?}");
    assert_eq!(
        row_field(&dom, "regressed", "first-failure"),
        "2026-12-03 (db abc3) last pass 2026-12-02 (db abc2)"
    );
    assert_eq!(
        row_field(&dom, "regressed", "flake-rate"),
        "20% (1/5 nights)"
    );
    assert_eq!(row_field(&dom, "regressed", "status"), "recovered");
    assert_eq!(
        row_field(&dom, "flaky", "first-failure"),
        "2026-12-02 (db abc2) last pass 2026-12-01 (db abc1)"
    );
    assert_eq!(row_field(&dom, "flaky", "flake-rate"), "40% (2/5 nights)");
    assert_eq!(row_field(&dom, "flaky", "status"), "flaky");
    assert_eq!(row_field(&dom, "steady", "flake-rate"), "0% (0/5 nights)");
    // 3 cells × 5 nights of squares, 3 of them failing, each a link to a run.
    assert_eq!(dom.matches("<td class=\"sq\"><a class=\"").count(), 15);
    assert_eq!(dom.matches("<a class=\"fail\" href=\"/").count(), 3);
    for night in NIGHTS {
        assert!(dom.contains(&format!("<th>{night}</th>")), "{night}");
    }
    let png = artifacts().join("trends.png");
    let _ = std::fs::remove_file(&png);
    let (_, err) = run_chromium(
        &url,
        &[
            format!("--screenshot={}", png.display()),
            "--window-size=1400,300".to_string(),
        ],
    );
    let bytes = std::fs::read(&png).unwrap_or_else(|e| panic!("{}: {e}\n{err}", png.display()));
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n");
    eprintln!("screenshot: {}", png.display());
}
