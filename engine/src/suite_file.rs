//! A soak suite file (TOML) as the runs it expands to ([`Suite`]).
//!
//! ```toml
//! [suite]
//! name = "nightly"        # default: the file's stem
//! seed = 42               # base of the per-run seeds (default: the clock)
//! watchdog = "20m"        # per run, run + analysis (default: 2 × time-limit + 10 min)
//! grace = "3m"            # SIGINT → SIGKILL when the watchdog fires
//!
//! [defaults]              # `harness run` flags for every test
//! time-limit = "30s"
//!
//! [[test]]
//! name = "pg"
//! db = "postgres"
//! local = true
//! expect = "valid"        # or a list of acceptable outcomes
//! count = 2               # runs per matrix cell
//! [test.matrix]           # one run per combination
//! isolation = ["serializable", "repeatable-read"]
//! ```
//!
//! Every key other than `name`, `expect`, `count`, `watchdog` and `matrix`
//! is a `harness run` flag (`key = "v"` → `--key v`, `key = true` →
//! `--key`). A `[defaults]` flag that shapes faults (`nemesis-interval`,
//! `kill-targets`, …) is left out of a run without a nemesis (a run refuses
//! it there: it would change nothing); written in the test, it is kept.
//!
//! Key decision: the flags are `harness run`'s, so the caller (the CLI,
//! which owns them) passes its parser in; every run is checked with it
//! before the first one starts, so a typo fails the suite, not run 37.

use crate::report::soak::{Planned, Suite};
use crate::spec::RunSpec;
use crate::suite::{self, Outcome, table_flags};
use anyhow::{Context as _, bail};
use std::path::Path;
use std::time::Duration;

const RESERVED: [&str; 5] = ["name", "expect", "count", "watchdog", "matrix"];

/// The flags that shape faults (a run without a nemesis refuses them).
const FAULT_SHAPES: &[&str] = &[
    "nemesis-interval",
    "nemesis-schedule",
    "initial-quiet-period",
    "nemesis-stable-period",
    "choreography-hold",
    "partition",
    "kill-targets",
    "pause-targets",
    "packet",
    "packet-targets",
    "clock-rate",
    "clock-mix",
    "clock-monotonic",
];
const SET_BY_SOAK: [&str; 3] = ["store", "seed", "test-name"];

fn duration(v: &toml::Value, what: &str) -> anyhow::Result<Duration> {
    let s = v
        .as_str()
        .with_context(|| format!("{what}: expected a duration such as \"10m\""))?;
    humantime::parse_duration(s).with_context(|| format!("{what}: {s:?}"))
}

/// Keeps test-name characters (`harness run` accepts `[A-Za-z0-9-_.+]`).
fn name_part(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '+') {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// Parses a suite file; `check` is `harness run`'s own flag parser and
/// validation, applied to every run's flags.
///
/// # Errors
/// The first problem, naming the test (`[[test]] #N`) and the key.
pub fn parse(
    path: &Path,
    text: &str,
    check: &dyn Fn(&[String]) -> anyhow::Result<RunSpec>,
) -> anyhow::Result<Suite> {
    let doc: toml::Table = toml::from_str(text).map_err(|e| anyhow::anyhow!("{e}"))?;
    for k in doc.keys() {
        if !matches!(k.as_str(), "suite" | "defaults" | "test") {
            bail!("unknown top-level key {k:?} (expected [suite], [defaults], [[test]])");
        }
    }
    let empty = toml::Table::new();
    let head = match doc.get("suite") {
        None => &empty,
        Some(toml::Value::Table(t)) => t,
        Some(_) => bail!("[suite] must be a table"),
    };
    for k in head.keys() {
        if !matches!(k.as_str(), "name" | "seed" | "watchdog" | "grace") {
            bail!("[suite]: unknown key {k:?} (expected name, seed, watchdog, grace)");
        }
    }
    let name = match head.get("name") {
        Some(v) => v
            .as_str()
            .context("[suite] name: expected a string")?
            .to_string(),
        None => path
            .file_stem()
            .map(|s| s.to_string_lossy().to_string())
            .unwrap_or_else(|| "suite".to_string()),
    };
    let name = name_part(&name);
    let seed = match head.get("seed") {
        Some(v) => Some(
            v.as_integer()
                .and_then(|i| u64::try_from(i).ok())
                .context("[suite] seed: expected a non-negative integer")?,
        ),
        None => None,
    };
    let suite_watchdog = head
        .get("watchdog")
        .map(|v| duration(v, "[suite] watchdog"))
        .transpose()?;
    let grace = head
        .get("grace")
        .map(|v| duration(v, "[suite] grace"))
        .transpose()?
        .unwrap_or(Duration::from_secs(180));
    let defaults = match doc.get("defaults") {
        None => empty.clone(),
        Some(toml::Value::Table(t)) => t.clone(),
        Some(_) => bail!("[defaults] must be a table"),
    };
    let tests = match doc.get("test") {
        Some(toml::Value::Array(a)) if !a.is_empty() => a,
        _ => bail!("no [[test]] entries"),
    };
    let mut runs = Vec::new();
    for (ti, t) in tests.iter().enumerate() {
        let t = t
            .as_table()
            .with_context(|| format!("[[test]] #{}: expected a table", ti + 1))?;
        let tname = match t.get("name") {
            Some(v) => v
                .as_str()
                .with_context(|| format!("[[test]] #{}: name must be a string", ti + 1))?
                .to_string(),
            None => format!("test{}", ti + 1),
        };
        let what = format!("test {tname:?} ([[test]] #{})", ti + 1);
        let mut base = defaults.clone();
        for (k, v) in t {
            if !RESERVED.contains(&k.as_str()) {
                base.insert(k.clone(), v.clone());
            }
        }
        let expect = match t.get("expect") {
            None => vec![Outcome::Valid],
            Some(toml::Value::String(s)) => {
                vec![Outcome::parse(s).map_err(|e| anyhow::anyhow!("{what}: expect: {e}"))?]
            }
            Some(toml::Value::Array(a)) => a
                .iter()
                .map(|v| {
                    let s = v
                        .as_str()
                        .with_context(|| format!("{what}: expect: expected strings"))?;
                    Outcome::parse(s).map_err(|e| anyhow::anyhow!("{what}: expect: {e}"))
                })
                .collect::<anyhow::Result<_>>()?,
            Some(_) => bail!("{what}: expect: a string or a list of strings"),
        };
        let count =
            suite::count_setting(t.get("count"), &format!("{what}: count"), 100_000, 1)? as usize;
        let watchdog = t
            .get("watchdog")
            .map(|v| duration(v, &format!("{what}: watchdog")))
            .transpose()?
            .or(suite_watchdog);
        // The matrix: every combination, keys in sorted order.
        let mut cells: Vec<(Vec<String>, toml::Table)> = vec![(Vec::new(), toml::Table::new())];
        match t.get("matrix") {
            None => {}
            Some(toml::Value::Table(m)) => {
                for (k, vals) in m {
                    let vals = vals.as_array().filter(|a| !a.is_empty()).with_context(|| {
                        format!("{what}: matrix.{k}: expected a non-empty list")
                    })?;
                    let mut next = Vec::new();
                    for (labels, cell) in &cells {
                        for v in vals {
                            let mut l = labels.clone();
                            l.push(name_part(
                                &suite::scalar(v).with_context(|| format!("{what}: matrix.{k}"))?,
                            ));
                            let mut c = cell.clone();
                            c.insert(k.clone(), v.clone());
                            next.push((l, c));
                        }
                    }
                    cells = next;
                }
            }
            Some(_) => bail!("{what}: matrix must be a table of lists"),
        }
        for (labels, cell) in cells {
            let mut table = base.clone();
            table.extend(cell);
            let no_nemesis = table
                .get("nemesis")
                .and_then(toml::Value::as_str)
                .is_none_or(|n| n.trim() == "none");
            if no_nemesis {
                for k in FAULT_SHAPES {
                    if defaults.contains_key(*k) && !t.contains_key(*k) {
                        table.remove(*k);
                    }
                }
            }
            let flags = table_flags(
                &table,
                &what,
                &SET_BY_SOAK,
                "soak for each run (use [suite] seed, soak --store)",
            )?;
            let test_name = if labels.is_empty() {
                name_part(&tname)
            } else {
                format!("{}-{}", name_part(&tname), labels.join("-"))
            };
            // Checked now, so a typo fails the suite before the first run.
            let args = check(&flags).with_context(|| what.clone())?;
            let watchdog =
                watchdog.unwrap_or(args.limits.time_limit * 2 + Duration::from_secs(600));
            for _ in 0..count {
                runs.push(Planned {
                    id: runs.len() + 1,
                    test: tname.clone(),
                    test_name: test_name.clone(),
                    flags: flags.clone(),
                    expect: expect.clone(),
                    watchdog,
                });
            }
        }
    }
    Ok(Suite {
        name,
        seed,
        grace,
        runs,
    })
}
