//! The performance regression guard: instruction counts of the `harness`
//! binary on fixed inputs, under valgrind (`cachegrind --cache-sim=no`:
//! the count of executed instructions, which a busy shared machine does not
//! change, unlike wall time), against the committed baseline
//! `tests/perf_guard/baseline.toml`. A case whose count grows by more than
//! the baseline's margin fails the test; every run prints the table.
//!
//! Cases: start-up (`--version`, the check of a 2-transaction file), the
//! 100k list-append check (Elle's inference, cycles and the weak levels a
//! strict-serializable check runs), a register check decided by the
//! complete (SAT) serializability check, one at plain snapshot isolation
//! without real time (PolySI's fig. 7 shape, zipfian keys: pruning a hot
//! key's writer pairs), a weak-level (causal) check, read committed with
//! session order on the PolySI-shaped history (process edges, Elle's
//! census of allowed anomalies, the strong-session weak check), and a
//! linearizability search (Porcupine's c50 kv history). Inputs are
//! generated from a fixed seed (`checker/examples/common/history_gen.rs`,
//! `checker/tests/common/polysi_gen.rs`) or are small files of `testdata/`.
//!
//! Counts are of the binary `cargo test` builds (the dev profile: the
//! checker and the store at opt-level 2, see Cargo.toml), built as CI
//! builds it: without incremental compilation or line tables
//! (`CARGO_INCREMENTAL=0 CARGO_PROFILE_DEV_DEBUG=false`; an incremental
//! build partitions code differently and counted up to 4.5 % fewer or
//! 1.2 % more on these cases), so a new compiler or dependency version
//! moves them too. To accept a change on purpose:
//! `CARGO_INCREMENTAL=0 CARGO_PROFILE_DEV_DEBUG=false PERF_GUARD_UPDATE=1 cargo test -p harness --test perf_guard -- --ignored --nocapture`
//! rewrites the baseline (commit it, saying why). A case that got more than
//! the margin cheaper is reported, not failed: update the baseline so the
//! gain is kept.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "../../checker/examples/common/history_gen.rs"]
mod history_gen;
#[path = "../../checker/tests/common/polysi_gen.rs"]
mod polysi_gen;

use history_gen::Shape;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_harness");
const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// One measured command.
struct Case {
    name: &'static str,
    /// Arguments of `harness` (`{dir}` is the scratch directory).
    args: Vec<String>,
    /// The exit code the command must end with (a case that stops early
    /// would count too few instructions).
    exit: i32,
}

fn baseline_path() -> PathBuf {
    Path::new(ROOT).join("tests/perf_guard/baseline.toml")
}

/// The profile the counts are of: they differ between dev and release.
fn profile() -> &'static str {
    if cfg!(debug_assertions) {
        "dev"
    } else {
        "release"
    }
}

fn write_history(path: &Path, shape: &Shape) {
    let mut w = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    history_gen::generate(shape, &mut w).unwrap();
    w.flush().unwrap();
}

/// Writes the inputs into `dir` and returns the cases.
fn cases(dir: &Path) -> Vec<Case> {
    let tiny = dir.join("tiny.jsonl");
    std::fs::write(
        &tiny,
        concat!(
            r#"{"index":0,"process":0,"type":"invoke","value":[["append",1,1]]}"#,
            "\n",
            r#"{"index":1,"process":0,"type":"ok","value":[["append",1,1]]}"#,
            "\n",
            r#"{"index":2,"process":1,"type":"invoke","value":[["r",1,null]]}"#,
            "\n",
            r#"{"index":3,"process":1,"type":"ok","value":[["r",1,[1]]]}"#,
            "\n",
        ),
    )
    .unwrap();
    let la = dir.join("la-ser-100k.jsonl");
    write_history(
        &la,
        &Shape {
            txns: 100_000,
            ..Shape::default()
        },
    );
    let rw_ser = dir.join("rw-ser-10k.jsonl");
    write_history(
        &rw_ser,
        &Shape {
            list: false,
            txns: 10_000,
            concurrency: 20,
            ..Shape::default()
        },
    );
    let rw_si = dir.join("rw-si-50k.jsonl");
    write_history(
        &rw_si,
        &Shape {
            list: false,
            txns: 50_000,
            si: true,
            concurrency: 20,
            ..Shape::default()
        },
    );
    // 20 sessions × 100 transactions, zipfian keys, 25 % reads, from a
    // snapshot-isolation store, in PolySI's text format (no clocks).
    let polysi = dir.join("polysi-2k-zipf.txt");
    let mut shape = polysi_gen::Shape::polysi(100, polysi_gen::Dist::Zipf);
    shape.read_pct = 25;
    let text = polysi_gen::generate(shape, polysi_gen::Db::Si, polysi_gen::Inject::None, 1);
    std::fs::write(&polysi, text).unwrap();
    let lin = Path::new(ROOT).join("testdata/porcupine/kv/c50-ok.txt");
    let s = |p: &Path| p.display().to_string();
    let args = |xs: &[&str]| xs.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    vec![
        Case {
            name: "startup-version",
            args: args(&["--version"]),
            exit: 0,
        },
        Case {
            name: "startup-check-2-txns",
            args: args(&["check", &s(&tiny)]),
            exit: 0,
        },
        Case {
            name: "list-append-100k-strict-ser",
            args: args(&["check", &s(&la)]),
            exit: 0,
        },
        Case {
            name: "register-10k-ser-sat",
            args: args(&["check", &s(&rw_ser), "-c", "serializable"]),
            exit: 0,
        },
        Case {
            name: "polysi-2k-zipf-plain-si-sat",
            args: args(&["check", &s(&polysi), "-c", "snapshot-isolation"]),
            exit: 0,
        },
        Case {
            name: "register-50k-si-db-causal",
            args: args(&["check", &s(&rw_si), "-c", "causal-cerone"]),
            exit: 0,
        },
        // Read committed with session order (AWDIT's RC): process edges in
        // the graph, Elle's census of the anomalies the model allows, the
        // strong-session weak check.
        Case {
            name: "polysi-2k-zipf-rc-sessions",
            args: args(&["check", &s(&polysi), "-c", "RC"]),
            exit: 0,
        },
        Case {
            name: "linearizable-porcupine-c50",
            args: args(&["check", &s(&lin)]),
            exit: 0,
        },
    ]
}

/// Runs `case` under cachegrind and returns its instruction count.
fn count(case: &Case, dir: &Path) -> u64 {
    let log = dir.join(format!("{}.valgrind", case.name));
    let out = Command::new("valgrind")
        .args([
            "--tool=cachegrind",
            "--cache-sim=no",
            "--cachegrind-out-file=/dev/null",
        ])
        .arg(format!("--log-file={}", log.display()))
        .arg(BIN)
        .args(&case.args)
        .output()
        .unwrap_or_else(|e| panic!("valgrind: {e} (install it: apt-get install valgrind)"));
    let code = out.status.code();
    assert_eq!(
        code,
        Some(case.exit),
        "{}: harness {} exited {code:?}, expected {}; stdout:\n{}\nstderr:\n{}",
        case.name,
        case.args.join(" "),
        case.exit,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(&log).unwrap();
    parse_refs(&text)
        .unwrap_or_else(|| panic!("{}: no `I refs` in valgrind's log:\n{text}", case.name))
}

/// The `I refs` figure of a cachegrind log.
fn parse_refs(log: &str) -> Option<u64> {
    let line = log
        .lines()
        .find(|l| l.contains("I") && l.contains("refs:"))?;
    let digits: String = line
        .split("refs:")
        .nth(1)?
        .chars()
        .filter(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

/// The baseline: margin (percent), profile, and per case its count.
struct Baseline {
    margin_percent: f64,
    profile: String,
    counts: BTreeMap<String, u64>,
}

fn read_baseline() -> Option<Baseline> {
    let text = std::fs::read_to_string(baseline_path()).ok()?;
    let v: toml::Table = text
        .parse()
        .unwrap_or_else(|e| panic!("baseline.toml: {e}"));
    let counts = v
        .get("instructions")
        .and_then(|t| t.as_table())
        .map(|t| {
            t.iter()
                .filter_map(|(k, v)| Some((k.clone(), u64::try_from(v.as_integer()?).ok()?)))
                .collect()
        })
        .unwrap_or_default();
    Some(Baseline {
        margin_percent: v
            .get("margin_percent")
            .and_then(|m| m.as_float().or(m.as_integer().map(|i| i as f64)))
            .unwrap_or(10.0),
        profile: v
            .get("profile")
            .and_then(|p| p.as_str())
            .unwrap_or("dev")
            .to_string(),
        counts,
    })
}

fn write_baseline(margin: f64, measured: &[(&str, u64)]) {
    let mut text = String::from(
        "# Instruction counts of `harness` on tests/perf_guard's cases (valgrind\n\
         # cachegrind, --cache-sim=no), written by\n\
         # CARGO_INCREMENTAL=0 CARGO_PROFILE_DEV_DEBUG=false PERF_GUARD_UPDATE=1 \
         cargo test -p harness --test perf_guard -- --ignored --nocapture\n\
         # A case that grows by more than margin_percent fails the guard.\n",
    );
    text += &format!(
        "margin_percent = {margin}\nprofile = \"{}\"\n\n[instructions]\n",
        profile()
    );
    for (name, n) in measured {
        text += &format!("{name} = {n}\n");
    }
    std::fs::write(baseline_path(), text).unwrap();
}

fn mi(n: u64) -> String {
    format!("{:.1} M", n as f64 / 1e6)
}

#[test]
#[ignore = "needs valgrind; about a minute: run by .ci/run"]
fn instruction_counts_stay_within_the_baseline() {
    let dir = tempfile::tempdir().unwrap();
    let cases = cases(dir.path());
    let base = read_baseline();
    let margin = base.as_ref().map_or(10.0, |b| b.margin_percent);
    let comparable = base.as_ref().is_some_and(|b| b.profile == profile());
    let mut measured = Vec::new();
    let mut failed = Vec::new();
    let mut table = format!(
        "perf guard ({} profile, margin {margin} %):\n{:<30} {:>14} {:>14} {:>8}\n",
        profile(),
        "case",
        "baseline",
        "now",
        "change"
    );
    for case in &cases {
        let started = std::time::Instant::now();
        let n = count(case, dir.path());
        let secs = started.elapsed().as_secs_f64();
        measured.push((case.name, n));
        let old = base
            .as_ref()
            .filter(|_| comparable)
            .and_then(|b| b.counts.get(case.name).copied());
        let (old_s, change, verdict) = match old {
            Some(o) => {
                let pct = (n as f64 / o as f64 - 1.0) * 100.0;
                let verdict = if pct > margin {
                    failed.push(format!("{} +{pct:.1} %", case.name));
                    "  REGRESSION"
                } else if pct < -margin {
                    "  cheaper: update the baseline"
                } else {
                    ""
                };
                (mi(o), format!("{pct:+.1} %"), verdict)
            }
            None => ("—".to_string(), "new".to_string(), ""),
        };
        table += &format!(
            "{:<30} {:>14} {:>14} {:>8}{verdict}   ({secs:.1} s under valgrind)\n",
            case.name,
            old_s,
            mi(n),
            change
        );
    }
    println!("{table}");
    if std::env::var_os("PERF_GUARD_UPDATE").is_some() {
        write_baseline(margin, &measured);
        println!("baseline rewritten: {}", baseline_path().display());
        return;
    }
    let Some(base) = base else {
        panic!(
            "no baseline at {}; write one with PERF_GUARD_UPDATE=1",
            baseline_path().display()
        );
    };
    if !comparable {
        println!(
            "not compared: the baseline is of the {} profile, this build is {} (run the guard as \
             `cargo test` does, in the dev profile)",
            base.profile,
            profile()
        );
        return;
    }
    let missing: Vec<&str> = cases
        .iter()
        .map(|c| c.name)
        .filter(|n| !base.counts.contains_key(*n))
        .collect();
    assert!(
        missing.is_empty(),
        "cases without a baseline: {missing:?}; add them with PERF_GUARD_UPDATE=1"
    );
    assert!(
        failed.is_empty(),
        "instruction counts grew by more than {margin} %: {}.\n{table}\nIf the growth is meant \
         (a new analysis, a compiler update), rewrite the baseline with CARGO_INCREMENTAL=0 CARGO_PROFILE_DEV_DEBUG=false PERF_GUARD_UPDATE=1 cargo \
         test -p harness --test perf_guard -- --ignored --nocapture and commit it with the reason.",
        failed.join(", ")
    );
}

/// The parser reads cachegrind's summary line.
#[test]
fn parses_cachegrind_summary() {
    let log = "==12== Cachegrind, a cache and branch-prediction profiler\n==12== \n==12== I   refs:      1,234,567\n";
    assert_eq!(parse_refs(log), Some(1_234_567));
    assert_eq!(parse_refs("==1== nothing\n"), None);
}
