//! The reports of a soak: `summary.json`, `junit.xml` and the table the
//! console shows, from the planned runs and the records of finished ones.
//!
//! Key decision: these are pure functions of the records (the soak command
//! runs the children and writes the files), so tests build records by hand.

use crate::suite::{ChildEnd, Outcome, RunFacts};
use serde_json::json;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// One run of a suite, before it runs.
#[derive(Debug, Clone)]
pub struct Planned {
    /// Position in the suite, from 1.
    pub id: usize,
    /// The `[[test]]` it comes from.
    pub test: String,
    /// Its `--test-name` (test name plus matrix values).
    pub test_name: String,
    /// `harness run` flags, without store, seed and test name.
    pub flags: Vec<String>,
    /// Acceptable outcomes.
    pub expect: Vec<Outcome>,
    /// Longest time the run may take before it is stopped.
    pub watchdog: Duration,
}

/// A parsed suite.
#[derive(Debug)]
pub struct Suite {
    /// The suite's name.
    pub name: String,
    /// Base seed (`None`: from the clock).
    pub seed: Option<u64>,
    /// Time between SIGINT and SIGKILL of a run past its watchdog.
    pub grace: Duration,
    /// Every run, in order.
    pub runs: Vec<Planned>,
}

/// One finished run.
#[derive(Debug)]
pub struct Record {
    /// What was planned.
    pub planned: Planned,
    /// The seed it ran with.
    pub seed: u64,
    /// How it ended.
    pub outcome: Outcome,
    /// The child process's end: exit code or signal, wall time, peak RSS.
    pub end: ChildEnd,
    /// Its run directory, if it made one.
    pub run_dir: Option<PathBuf>,
    /// Its console output.
    pub log: PathBuf,
    /// What its run directory says.
    pub facts: RunFacts,
    /// Why it crashed or could not start (last lines of its output).
    pub detail: Option<String>,
    /// RSS of the soak process after it (kB).
    pub soak_rss_kb: Option<u64>,
}

impl Record {
    /// Whether it ended as the suite expected.
    pub fn as_expected(&self) -> bool {
        self.planned.expect.contains(&self.outcome)
    }
}

/// Acceptable outcomes as `valid|unknown`.
pub fn expect_names(expect: &[Outcome]) -> String {
    expect
        .iter()
        .map(|o| o.name())
        .collect::<Vec<_>>()
        .join("|")
}

/// How many runs ended with each outcome (every outcome listed).
pub fn outcome_counts(records: &[Record]) -> BTreeMap<&'static str, usize> {
    let mut counts: BTreeMap<&str, usize> = Outcome::ALL.iter().map(|o| (o.name(), 0)).collect();
    for r in records {
        *counts.entry(r.outcome.name()).or_default() += 1;
    }
    counts
}

/// The last `n` non-empty lines of a log file, joined by " | ".
pub fn log_tail(path: &Path, n: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(n)..].join(" | ")
}

/// `summary.json`: the suite, every run's record, the counts, the runs
/// not run (interrupted), and the binary that ran them.
#[allow(clippy::too_many_arguments)]
pub fn summary_json(
    suite: &Suite,
    file: &Path,
    records: &[Record],
    not_run: &[Planned],
    started: SystemTime,
    ended: SystemTime,
    interrupted: bool,
    build: crate::run::Build,
) -> serde_json::Value {
    let counts = outcome_counts(records);
    let runs: Vec<serde_json::Value> = records
        .iter()
        .map(|r| {
            json!({
                "id": r.planned.id,
                "test": r.planned.test,
                "test_name": r.planned.test_name,
                "seed": r.seed,
                "flags": r.planned.flags,
                "outcome": r.outcome.name(),
                "expected": r.planned.expect.iter().map(|o| o.name()).collect::<Vec<_>>(),
                "as_expected": r.as_expected(),
                "exit_code": r.end.code,
                "signal": r.end.signal,
                "interrupted": r.end.interrupted,
                "duration_s": r.end.elapsed.as_secs_f64(),
                "watchdog_s": r.planned.watchdog.as_secs_f64(),
                "run_dir": r.run_dir.as_ref().map(|d| d.display().to_string()),
                "log": r.log.display().to_string(),
                "valid": r.facts.valid,
                "anomaly_types": r.facts.anomaly_types,
                "detail": r.detail,
                "child_max_rss_kb": r.end.max_rss_kb,
                "soak_rss_kb": r.soak_rss_kb,
            })
        })
        .collect();
    json!({
        "suite": suite.name,
        "suite_file": file.display().to_string(),
        "base_seed": suite.seed,
        "started": humantime::format_rfc3339_millis(started).to_string(),
        "ended": humantime::format_rfc3339_millis(ended).to_string(),
        "interrupted": interrupted,
        "planned": records.len() + not_run.len(),
        "outcomes": counts,
        "as_expected": records.iter().filter(|r| r.as_expected()).count(),
        "unexpected": records.iter().filter(|r| !r.as_expected()).count(),
        "runs": runs,
        "not_run": not_run.iter().map(|p| json!({"id": p.id, "test_name": p.test_name})).collect::<Vec<_>>(),
        "harness": {
            "version": build.version,
            "commit": build.commit,
        },
    })
}

/// [`super::html_escape`], which is valid XML too, after blanking
/// the control characters XML 1.0 forbids.
pub fn xml_escape(s: &str) -> String {
    super::html_escape(&s.replace(
        |c: char| (c as u32) < 0x20 && !matches!(c, '\n' | '\r' | '\t'),
        " ",
    ))
}

/// JUnit XML: a test case per run; a run that ended as expected passes,
/// an unexpected verdict is a `failure`, an unexpected crash, timeout or
/// setup failure an `error`, a run an interrupt kept from starting `skipped`.
pub fn junit_xml(
    suite: &Suite,
    records: &[Record],
    not_run: &[Planned],
    started: SystemTime,
) -> String {
    let failures = records
        .iter()
        .filter(|r| !r.as_expected() && r.outcome.is_verdict())
        .count();
    let errors = records.iter().filter(|r| !r.as_expected()).count() - failures;
    let time: f64 = records.iter().map(|r| r.end.elapsed.as_secs_f64()).sum();
    let tests = records.len() + not_run.len();
    let mut x = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        x,
        "<testsuites name=\"harness soak\" tests=\"{tests}\" failures=\"{failures}\" errors=\"{errors}\" skipped=\"{}\" time=\"{time:.3}\">",
        not_run.len()
    );
    let _ = writeln!(
        x,
        "  <testsuite name=\"{}\" tests=\"{tests}\" failures=\"{failures}\" errors=\"{errors}\" skipped=\"{}\" time=\"{time:.3}\" timestamp=\"{}\">",
        xml_escape(&suite.name),
        not_run.len(),
        humantime::format_rfc3339_seconds(started)
    );
    for r in records {
        let _ = writeln!(
            x,
            "    <testcase classname=\"{}.{}\" name=\"{}#{} seed={}\" time=\"{:.3}\">",
            xml_escape(&suite.name),
            xml_escape(&r.planned.test),
            xml_escape(&r.planned.test_name),
            r.planned.id,
            r.seed,
            r.end.elapsed.as_secs_f64()
        );
        if !r.as_expected() {
            let tag = if r.outcome.is_verdict() {
                "failure"
            } else {
                "error"
            };
            let mut body = String::new();
            if !r.facts.anomaly_types.is_empty() {
                let _ = writeln!(body, "anomalies: {}", r.facts.anomaly_types.join(", "));
            }
            if let Some(d) = &r.detail {
                let _ = writeln!(body, "{d}");
            }
            let _ = writeln!(body, "harness run {}", r.planned.flags.join(" "));
            let _ = writeln!(
                x,
                "      <{tag} type=\"{}\" message=\"{} (expected {})\">{}</{tag}>",
                r.outcome.name(),
                r.outcome.name(),
                expect_names(&r.planned.expect),
                xml_escape(body.trim_end())
            );
        }
        let _ = writeln!(
            x,
            "      <system-out>outcome: {}\nrun dir: {}\nlog: {}</system-out>",
            r.outcome.name(),
            xml_escape(
                &r.run_dir
                    .as_ref()
                    .map(|d| d.display().to_string())
                    .unwrap_or_else(|| "(none)".to_string())
            ),
            xml_escape(&r.log.display().to_string())
        );
        x.push_str("    </testcase>\n");
    }
    for p in not_run {
        let _ = writeln!(
            x,
            "    <testcase classname=\"{}.{}\" name=\"{}#{}\" time=\"0\">\n      <skipped message=\"not run: the suite was interrupted\"/>\n    </testcase>",
            xml_escape(&suite.name),
            xml_escape(&p.test),
            xml_escape(&p.test_name),
            p.id
        );
    }
    x.push_str("  </testsuite>\n</testsuites>\n");
    x
}

/// The terminal table.
pub fn table(records: &[Record], not_run: &[Planned]) -> String {
    let mut t = String::new();
    let _ = writeln!(
        t,
        "{:>3}  {:<32} {:>20}  {:<13} {:<8} {:>8}  anomalies / detail",
        "#", "test", "seed", "outcome", "expected", "time"
    );
    for r in records {
        let note = if !r.facts.anomaly_types.is_empty() {
            r.facts.anomaly_types.join(", ")
        } else {
            r.detail.clone().unwrap_or_default()
        };
        let note: String = note.chars().take(80).collect();
        let _ = writeln!(
            t,
            "{:>3}  {:<32} {:>20}  {:<13} {:<8} {:>7.1}s  {}",
            r.planned.id,
            r.planned.test_name,
            r.seed,
            r.outcome.name(),
            if r.as_expected() { "yes" } else { "NO" },
            r.end.elapsed.as_secs_f64(),
            note
        );
    }
    for p in not_run {
        let _ = writeln!(
            t,
            "{:>3}  {:<32} {:>20}  {:<13} {:<8} {:>8}  the suite was interrupted",
            p.id, p.test_name, "-", "not-run", "-", "-"
        );
    }
    let line: Vec<String> = outcome_counts(records)
        .iter()
        .filter(|(_, v)| **v > 0)
        .map(|(k, v)| format!("{v} {k}"))
        .collect();
    let unexpected = records.iter().filter(|r| !r.as_expected()).count();
    let _ = writeln!(
        t,
        "{} runs: {}; {} not as expected{}",
        records.len(),
        line.join(", "),
        unexpected,
        if not_run.is_empty() {
            String::new()
        } else {
            format!("; {} not run", not_run.len())
        }
    );
    t
}
