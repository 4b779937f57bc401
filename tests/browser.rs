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
    visit_sized(url, shot, 900)
}

/// [`visit`] with a screenshot `height` pixels tall (1280 wide).
fn visit_sized(url: &str, shot: &str, height: u32) -> String {
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
            format!("--window-size=1280,{height}"),
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

/// What `harness run` printed, for assertion messages.
fn run_harness(args: &[&str]) -> String {
    let (code, out, err) = harness(args);
    assert!(
        (0..=2).contains(&code),
        "harness {args:?} → {code}\n{out}\n{err}"
    );
    format!("{out}{err}")
}

/// The single run directory of test `name` in `store` newest first.
fn run_dirs(store: &Path, name: &str) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(store.join("runs").join(name))
        .map(|rd| {
            rd.filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| !p.is_symlink() && p.is_dir())
                .collect()
        })
        .unwrap_or_default();
    dirs.sort();
    dirs.reverse();
    dirs
}

/// Copies the run's plots into the artifacts as `<prefix>-<plot>.png`.
fn keep_plots(run: &Path, prefix: &str) {
    for p in ["latency-raw", "latency-quantiles", "rate", "clock-skew"] {
        let from = run.join(format!("{p}.png"));
        if from.is_file() {
            let _ = std::fs::copy(&from, artifacts().join(format!("{prefix}-{p}.png")));
        }
    }
}

/// The fault lanes a plot's SVG labels (text elements naming a package).
fn svg_lanes(run: &Path, plot: &str) -> Vec<String> {
    let svg = std::fs::read_to_string(run.join(format!("{plot}.svg"))).unwrap_or_default();
    let texts: Vec<&str> = svg
        .split("<text")
        .skip(1)
        .filter_map(|t| t.split_once('>'))
        .filter_map(|(_, rest)| rest.split("</text>").next())
        .map(str::trim)
        .collect();
    // A lane is labelled by its package, and by its target where the
    // windows name one (`kill n1`).
    ["partition", "kill", "pause", "clock"]
        .iter()
        .filter(|k| {
            texts
                .iter()
                .any(|t| t == *k || t.strip_prefix(**k).is_some_and(|r| r.starts_with(' ')))
        })
        .map(|k| k.to_string())
        .collect()
}

#[test]
#[ignore = "system test, needs Chromium; .ci/run runs it"]
fn chromium_shows_fault_lanes_what_happened_and_runs_told_apart() {
    let store = artifacts().join("pages-store");
    let _ = std::fs::remove_dir_all(&store);
    std::fs::create_dir_all(&store).unwrap_or_else(|e| panic!("{e}"));
    let s = store.to_string_lossy().to_string();
    let name = "sim-four-faults";
    // Four fault packages overlapping on three simulated replicas, twice
    // under the same name (two seeds): the index must tell them apart.
    for seed in ["7", "8"] {
        run_harness(&[
            "run",
            "--store",
            &s,
            "--db",
            "sim",
            "--sim-replicas",
            "3",
            "--test-name",
            name,
            "--nemesis",
            "partition,kill,pause,clock",
            "--nemesis-interval",
            "300ms",
            "--time-limit",
            "8s",
            "--rate",
            "400",
            "--concurrency",
            "6",
            "--op-timeout",
            "1s",
            "--seed",
            seed,
        ]);
    }
    let runs = run_dirs(&store, name);
    assert_eq!(runs.len(), 2, "{runs:?}");
    let run = &runs[0];
    // Every time plot draws a labelled lane per package, above the data.
    for plot in ["latency-raw", "latency-quantiles", "rate"] {
        assert_eq!(
            svg_lanes(run, plot),
            ["partition", "kill", "pause", "clock"],
            "{plot}.svg lanes"
        );
    }
    keep_plots(run, "sim-four-faults");
    // A run with no results.json (killed before checking) says how to get one.
    let broken = store.join("runs").join(name).join("20200101T000000.000");
    std::fs::create_dir_all(&broken).unwrap_or_else(|e| panic!("{e}"));
    std::fs::copy(run.join("test.json"), broken.join("test.json"))
        .unwrap_or_else(|e| panic!("{e}"));

    let srv = serve(&store);
    let base = format!("http://{}", srv.addr);
    let index = visit(&format!("{base}/"), "pages-index.png");
    let stamps: Vec<String> = runs
        .iter()
        .map(|r| {
            r.file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default()
        })
        .collect();
    for stamp in &stamps {
        assert!(
            index.contains(&format!("{name} <span class=\"stamp\">{stamp}</span>")),
            "the index names run {stamp} apart: {index}"
        );
    }
    for col in [
        "ops",
        "duration",
        "faults in force",
        "lost writes",
        "harness",
    ] {
        assert!(index.contains(&format!("<th>{col}</th>")), "column {col}");
    }
    assert!(index.contains("kill×"), "faults in force listed: {index}");

    let rel = format!("{name}/{}", stamps[0]);
    let page = visit_sized(
        &format!("{base}/run/{rel}/"),
        "pages-run-sim-four-faults.png",
        2600,
    );
    let what = page
        .split("id=\"what-happened\">")
        .nth(1)
        .and_then(|s| s.split("</ul>").next())
        .unwrap_or_else(|| panic!("no what-happened list: {page}"));
    assert!(what.contains("Checked "), "{what}");
    assert!(what.contains("Faults that took effect"), "{what}");
    for k in ["partition", "kill", "pause", "clock"] {
        assert!(what.contains(&format!("<b>{k}</b>")), "{k} in {what}");
    }
    assert!(
        page.find("id=\"what-happened\"") < page.find("<h2>Configuration</h2>"),
        "what happened comes first"
    );
    assert!(
        page.contains("(every operation; those in a reported anomaly outlined)"),
        "an unsampled run's timeline is not called sampled"
    );
    assert!(
        !page.contains("--nemesis, partition"),
        "the command line is a shell line, not comma-joined"
    );
    let tl = visit(
        &format!("{base}/run/{rel}/timeline.html"),
        "pages-timeline-sim-four-faults.png",
    );
    assert!(
        tl.contains("nemesis operations"),
        "client and nemesis ops counted apart"
    );
    for n in [1, 2, 3] {
        assert!(!tl.contains(&format!("every {n}th")), "no \"every {n}th\"");
    }
    assert!(
        !tl.contains("Showing "),
        "an unsampled run says nothing about sampling"
    );

    let none = visit(
        &format!("{base}/run/{name}/20200101T000000.000/"),
        "pages-run-no-result.png",
    );
    assert!(
        none.contains(&format!(
            "harness analyze {}",
            store
                .canonicalize()
                .unwrap_or_default()
                .join("runs")
                .join(name)
                .join("20200101T000000.000")
                .display()
        )),
        "a run without results says how to get them: {none}"
    );
}

#[test]
#[ignore = "system test, needs PostgreSQL and Chromium; .ci/run runs it"]
fn chromium_shows_a_postgres_kill_run() {
    let store = artifacts().join("pages-store-postgres");
    let _ = std::fs::remove_dir_all(&store);
    std::fs::create_dir_all(&store).unwrap_or_else(|e| panic!("{e}"));
    let s = store.to_string_lossy().to_string();
    let name = "postgres-kill";
    run_harness(&[
        "run",
        "--store",
        &s,
        "--db",
        "postgres",
        "--local",
        "--test-name",
        name,
        "--nemesis",
        "kill",
        "--nemesis-interval",
        "4s",
        "--time-limit",
        "20s",
        "--concurrency",
        "6",
        "--op-timeout",
        "2s",
    ]);
    let runs = run_dirs(&store, name);
    let run = runs
        .first()
        .unwrap_or_else(|| panic!("no run in {}", store.display()));
    assert_eq!(svg_lanes(run, "latency-quantiles"), ["kill"]);
    keep_plots(run, "postgres-kill");
    let srv = serve(&store);
    let base = format!("http://{}", srv.addr);
    let stamp = run
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let page = visit_sized(
        &format!("{base}/run/{name}/{stamp}/"),
        "pages-run-postgres-kill.png",
        2600,
    );
    assert!(page.contains("<b>kill</b>"), "{page}");
    visit(
        &format!("{base}/run/{name}/{stamp}/timeline.html"),
        "pages-timeline-postgres-kill.png",
    );
}
