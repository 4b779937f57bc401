//! `harness reproduce RUN_DIR --shrink`: a smaller configuration that still
//! fails the same way, found by repeated runs within a time budget, written
//! as a scenario file beside the run (`shrunk.toml`, rerun with `harness
//! reproduce RUN_DIR/shrunk.toml`) with the search in `shrink.json`.
//!
//! The search (delta debugging over the configuration, as property-based
//! testing shrinks inputs): one dimension at a time — workers
//! (`--concurrency`), keys (`--key-count`), transactions (`--ops`), seconds
//! (`--time-limit`), fault packages (`--nemesis`, one package dropped at a
//! time) — try smaller values, smallest first; keep the first that still
//! shows one of the stored run's anomaly types in at least one of `tries`
//! runs (same seed: on the simulator a run is a function of its seed and
//! configuration, so one try is exact; on a real database the schedule is
//! not, hence tries), and go round again until nothing shrinks or the budget
//! is spent. At the end the smallest configuration is run `tries` more times
//! for its reproduction rate. The runs go to `RUN_DIR/shrink/` (a store).

use super::checked_run_flags;
use anyhow::{Context as _, bail};
use engine::suite::{self, ChildSpec, Outcome, flag_value, run_child, run_dirs};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The dimensions, as `(flag, label)`.
const DIMS: [(&str, &str); 5] = [
    ("--concurrency", "workers"),
    ("--key-count", "keys"),
    ("--ops", "ops"),
    ("--time-limit", "seconds"),
    ("--nemesis", "faults"),
];

/// The value of `flag` in `flags` (`--f v` or `--f=v`).
fn get(flags: &[String], flag: &str) -> Option<String> {
    flag_value(flags, flag).map(str::to_string)
}

/// `flags` with `flag` set to `value` (replaced where it was, else added);
/// `None` removes it.
pub fn set(flags: &[String], flag: &str, value: Option<&str>) -> Vec<String> {
    let mut out = Vec::new();
    let mut i = 0;
    let mut done = false;
    while i < flags.len() {
        let f = &flags[i];
        if f == flag {
            if let (Some(v), false) = (value, done) {
                out.extend([flag.to_string(), v.to_string()]);
                done = true;
            }
            i += 2;
            continue;
        }
        if f.starts_with(&format!("{flag}=")) {
            if let (Some(v), false) = (value, done) {
                out.extend([flag.to_string(), v.to_string()]);
                done = true;
            }
            i += 1;
            continue;
        }
        out.push(f.clone());
        i += 1;
    }
    if let (Some(v), false) = (value, done) {
        out.extend([flag.to_string(), v.to_string()]);
    }
    out
}

/// A dimension's size, for the report (faults: packages).
fn size(flags: &[String], flag: &str) -> Option<f64> {
    let v = get(flags, flag)?;
    match flag {
        "--time-limit" => humantime::parse_duration(&v).ok().map(|d| d.as_secs_f64()),
        "--nemesis" => Some(faults(&v).len() as f64),
        "--concurrency" => v.trim_end_matches('n').parse().ok(),
        _ => v.parse().ok(),
    }
}

fn faults(v: &str) -> Vec<String> {
    if v.trim() == "none" {
        return Vec::new();
    }
    v.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

mod shapes;
use shapes::unshaped;

/// Smaller values of a numeric dimension, smallest first.
fn smaller(v: u64, min: u64) -> Vec<u64> {
    let mut c: Vec<u64> = [min, v / 8, v / 4, v / 2, v * 3 / 4]
        .into_iter()
        .filter(|&x| x >= min && x < v)
        .collect();
    c.sort_unstable();
    c.dedup();
    c
}

/// The candidates for one dimension: flags with it made smaller.
fn candidates(flags: &[String], flag: &str) -> Vec<Vec<String>> {
    let Some(v) = get(flags, flag) else {
        return Vec::new();
    };
    match flag {
        "--nemesis" => {
            let fs = faults(&v);
            if fs.is_empty() {
                return Vec::new();
            }
            let mut out = vec![unshaped(&set(flags, flag, Some("none")), &[])];
            if fs.len() > 1 {
                for i in 0..fs.len() {
                    let mut rest = fs.clone();
                    rest.remove(i);
                    out.push(unshaped(&set(flags, flag, Some(&rest.join(","))), &rest));
                }
            }
            out
        }
        "--time-limit" => {
            let Ok(d) = humantime::parse_duration(&v) else {
                return Vec::new();
            };
            smaller(d.as_secs(), 1)
                .into_iter()
                .map(|s| set(flags, flag, Some(&format!("{s}s"))))
                .collect()
        }
        "--concurrency" => {
            let per_node = v.ends_with('n');
            let Ok(n) = v.trim_end_matches('n').parse::<u64>() else {
                return Vec::new();
            };
            smaller(n, 1)
                .into_iter()
                .map(|x| {
                    set(
                        flags,
                        flag,
                        Some(&format!("{x}{}", if per_node { "n" } else { "" })),
                    )
                })
                .collect()
        }
        "--ops" => v.parse::<u64>().map_or(Vec::new(), |n| {
            smaller(n, 10)
                .into_iter()
                .map(|x| set(flags, flag, Some(&x.to_string())))
                .collect()
        }),
        _ => v.parse::<u64>().map_or(Vec::new(), |n| {
            smaller(n, 1)
                .into_iter()
                .map(|x| set(flags, flag, Some(&x.to_string())))
                .collect()
        }),
    }
}

/// What the shrinker needs to know of the stored run.
pub struct Target {
    /// The run directory.
    pub dir: PathBuf,
    /// Its flags (with `--seed` and `--test-name`).
    pub flags: Vec<String>,
    /// Its effective configuration (for sizes its flags leave to defaults).
    pub config: store::run::RunConfig,
    /// Anomaly types any of which counts as "still fails".
    pub anomalies: Vec<String>,
    /// Working directory of the original run.
    pub cwd: Option<PathBuf>,
}

/// Spells out the sizes the flags leave to defaults, from the run's
/// recorded configuration, so each can be shrunk.
fn explicit(flags: &[String], c: &store::run::RunConfig) -> Vec<String> {
    let mut f = flags.to_vec();
    let fill = |f: &mut Vec<String>, flag: &str, v: Option<String>| {
        if get(f, flag).is_none()
            && let Some(v) = v
        {
            *f = set(f, flag, Some(&v));
        }
    };
    fill(
        &mut f,
        "--concurrency",
        c.concurrency.map(|n| n.to_string()),
    );
    fill(&mut f, "--key-count", c.key_count.map(|n| n.to_string()));
    fill(&mut f, "--ops", c.ops.map(|n| n.to_string()));
    fill(
        &mut f,
        "--time-limit",
        c.time_limit_s.map(|s| format!("{}s", s.ceil() as u64)),
    );
    fill(
        &mut f,
        "--nemesis",
        c.nemesis.clone().filter(|n| n != "none"),
    );
    f
}

struct Runner<'a> {
    store: PathBuf,
    logs: PathBuf,
    cwd: Option<&'a Path>,
    n: usize,
}

impl Runner<'_> {
    /// One run of `flags`: its anomaly types, or `None` without a verdict.
    fn once(&mut self, flags: &[String]) -> anyhow::Result<Option<Vec<String>>> {
        self.n += 1;
        let name = flag_value(flags, "--test-name")
            .context("internal: no --test-name")?
            .to_string();
        let mut all = flags.to_vec();
        all.extend(["--store".to_string(), self.store.display().to_string()]);
        let before = run_dirs(&self.store, &name);
        let log = self.logs.join(format!("{:03}.log", self.n));
        let end = run_child(&ChildSpec {
            flags: &all,
            cwd: self.cwd,
            log: Some(&log),
            watchdog: None,
            grace: Duration::from_secs(180),
            own_group: true,
        })?;
        let outcome = end.code.map_or(Outcome::Crashed, Outcome::from_exit_code);
        if !outcome.is_verdict() {
            return Ok(None);
        }
        let dir = suite::new_run_dir(&before, &run_dirs(&self.store, &name));
        Ok(Some(
            dir.as_deref()
                .map(suite::run_facts)
                .unwrap_or_default()
                .anomaly_types,
        ))
    }

    /// How many of `tries` runs of `flags` show one of `want`.
    fn fails(
        &mut self,
        flags: &[String],
        want: &[String],
        tries: u32,
        stop_at_first: bool,
    ) -> anyhow::Result<u32> {
        let mut k = 0;
        for _ in 0..tries {
            if suite::interrupted() {
                break;
            }
            if let Some(types) = self.once(flags)?
                && types.iter().any(|t| want.contains(t))
            {
                k += 1;
                if stop_at_first {
                    break;
                }
            }
        }
        Ok(k)
    }
}

/// Flags as a scenario's `[run]` table (`--k v` → `k = "v"`, a bare flag →
/// `k = true`, a repeated one → a list), without store, seed and test name.
pub fn run_table(flags: &[String]) -> toml::Table {
    let mut t = toml::Table::new();
    let mut i = 0;
    while i < flags.len() {
        let Some(raw) = flags[i].strip_prefix("--") else {
            i += 1;
            continue;
        };
        let (key, value) = match raw.split_once('=') {
            Some((k, v)) => (k.to_string(), toml::Value::String(v.to_string())),
            None => match flags.get(i + 1) {
                Some(v) if !v.starts_with("--") => {
                    i += 1;
                    (raw.to_string(), toml::Value::String(v.clone()))
                }
                _ => (raw.to_string(), toml::Value::Boolean(true)),
            },
        };
        i += 1;
        if matches!(key.as_str(), "store" | "seed" | "test-name") {
            continue;
        }
        match t.get_mut(&key) {
            Some(toml::Value::Array(a)) => a.push(value),
            Some(old) => {
                let first = old.clone();
                *old = toml::Value::Array(vec![first, value]);
            }
            None => {
                t.insert(key, value);
            }
        }
    }
    t
}

/// Runs the search; writes `shrunk.toml` and `shrink.json` into the run
/// directory. Exit 0 when the shrunk configuration still fails, 1 when the
/// original did not fail again.
///
/// # Errors
/// The run cannot be shrunk (no anomaly), or a file cannot be written.
pub fn shrink(t: &Target, budget: Duration, tries: u32) -> anyhow::Result<u8> {
    if t.anomalies.is_empty() {
        bail!(
            "{}: the stored run shows no anomaly: nothing to shrink towards",
            t.dir.display()
        );
    }
    suite::install_interrupt_flag();
    let started = Instant::now();
    let work = t.dir.join("shrink");
    let logs = work.join("logs");
    std::fs::create_dir_all(&logs).with_context(|| format!("cannot create {}", logs.display()))?;
    let store = suite::prepare_store(&work)?;
    let mut runner = Runner {
        store,
        logs,
        cwd: t.cwd.as_deref(),
        n: 0,
    };
    let original = explicit(&t.flags, &t.config);
    checked_run_flags(&original)?;
    let sizes = |f: &[String]| -> serde_json::Map<String, serde_json::Value> {
        DIMS.iter()
            .map(|(flag, label)| (label.to_string(), json!(size(f, flag))))
            .collect()
    };
    eprintln!(
        "shrink {}: looking for {} (budget {}, {tries} tries per step)",
        t.dir.display(),
        t.anomalies.join(" or "),
        humantime::format_duration(budget)
    );
    let mut steps = Vec::new();
    if runner.fails(&original, &t.anomalies, tries, true)? == 0 {
        eprintln!("shrink: the original configuration did not fail again in {tries} tries");
        write_report(
            t,
            &original,
            &original,
            &steps,
            (0, tries),
            started,
            runner.n,
            &sizes,
        )?;
        return Ok(engine::exit::INVALID);
    }
    let mut best = original.clone();
    // Configurations already tried (a later round would try them again).
    let mut tried: std::collections::HashSet<Vec<String>> = std::collections::HashSet::new();
    'rounds: loop {
        let mut changed = false;
        for (flag, label) in DIMS {
            for cand in candidates(&best, flag) {
                if started.elapsed() >= budget || suite::interrupted() {
                    break 'rounds;
                }
                if !tried.insert(cand.clone()) || checked_run_flags(&cand).is_err() {
                    continue;
                }
                let k = runner.fails(&cand, &t.anomalies, tries, true)?;
                let from = get(&best, flag).unwrap_or_default();
                let to = get(&cand, flag).unwrap_or_default();
                eprintln!(
                    "  {label}: {from} → {to}: {}",
                    if k > 0 { "still fails" } else { "passes" }
                );
                steps.push(
                    json!({"dimension": label, "from": from, "to": to, "still_fails": k > 0}),
                );
                if k > 0 {
                    best = cand;
                    changed = true;
                    break;
                }
            }
        }
        if !changed {
            break;
        }
    }
    let rate = runner.fails(&best, &t.anomalies, tries, false)?;
    write_report(
        t,
        &original,
        &best,
        &steps,
        (rate, tries),
        started,
        runner.n,
        &sizes,
    )?;
    Ok(if rate > 0 {
        engine::exit::VALID
    } else {
        engine::exit::INVALID
    })
}

#[allow(clippy::too_many_arguments)]
fn write_report(
    t: &Target,
    original: &[String],
    best: &[String],
    steps: &[serde_json::Value],
    rate: (u32, u32),
    started: Instant,
    runs: usize,
    sizes: &dyn Fn(&[String]) -> serde_json::Map<String, serde_json::Value>,
) -> anyhow::Result<()> {
    let (o, b) = (sizes(original), sizes(best));
    let line = |m: &serde_json::Map<String, serde_json::Value>| {
        DIMS.iter()
            .filter_map(|(_, l)| {
                m.get(*l)
                    .and_then(|v| v.as_f64())
                    .map(|v| format!("{l} {v}"))
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    let summary = format!(
        "shrunk from {} to {}; fails {}/{} runs",
        line(&o),
        line(&b),
        rate.0,
        rate.1
    );
    engine::say!("{summary}");
    let seed: Option<u64> = get(best, "--seed").and_then(|s| s.parse().ok());
    let mut doc = toml::Table::new();
    let name = t
        .dir
        .iter()
        .rev()
        .nth(1)
        .map(|s| s.to_string_lossy().to_string())
        .unwrap_or_default();
    doc.insert(
        "title".into(),
        format!("{name}: {} (shrunk)", t.anomalies.join(" or ")).into(),
    );
    doc.insert("source".into(), t.dir.display().to_string().into());
    doc.insert(
        "seen-on".into(),
        t.config.db.clone().unwrap_or_else(|| "?".into()).into(),
    );
    doc.insert("report".into(), summary.clone().into());
    doc.insert(
        "expect".into(),
        toml::Value::Array(t.anomalies.iter().map(|a| a.clone().into()).collect()),
    );
    doc.insert("attempts".into(), i64::from(rate.1.max(1)).into());
    if let Some(s) = seed.and_then(|s| i64::try_from(s).ok()) {
        doc.insert("seed".into(), s.into());
    }
    doc.insert("run".into(), toml::Value::Table(run_table(best)));
    let scenario = t.dir.join("shrunk.toml");
    let text = format!(
        "# Written by `harness reproduce --shrink`; rerun with `harness reproduce {}`.\n{}",
        scenario.display(),
        toml::to_string(&doc).context("writing the scenario")?
    );
    std::fs::write(&scenario, text).with_context(|| format!("writing {}", scenario.display()))?;
    let report = json!({
        "anomalies": t.anomalies,
        "original": {"flags": original, "sizes": o},
        "shrunk": {"flags": best, "sizes": b},
        "still_fails": {"runs": rate.1, "failed": rate.0},
        "steps": steps,
        "runs": runs,
        "seconds": started.elapsed().as_secs_f64(),
        "scenario": "shrunk.toml",
    });
    let path = t.dir.join("shrink.json");
    std::fs::write(&path, serde_json::to_string_pretty(&report)? + "\n")
        .with_context(|| format!("writing {}", path.display()))?;
    engine::say!("scenario: {}", scenario.display());
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn v(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_string).collect()
    }

    #[test]
    fn flags_are_set_replaced_and_removed() {
        let f = v("--db sim --ops=400 --concurrency 5 --local");
        assert_eq!(
            set(&f, "--ops", Some("10")),
            v("--db sim --ops 10 --concurrency 5 --local")
        );
        assert_eq!(
            set(&f, "--concurrency", None),
            v("--db sim --ops=400 --local")
        );
        assert_eq!(
            set(&f, "--key-count", Some("3")),
            v("--db sim --ops=400 --concurrency 5 --local --key-count 3")
        );
    }

    #[test]
    fn candidates_are_smaller_smallest_first() {
        let f = v("--concurrency 8 --time-limit 15s --nemesis partition,kill");
        let c: Vec<String> = candidates(&f, "--concurrency")
            .iter()
            .map(|f| get(f, "--concurrency").unwrap())
            .collect();
        assert_eq!(c, ["1", "2", "4", "6"]);
        let t: Vec<String> = candidates(&f, "--time-limit")
            .iter()
            .map(|f| get(f, "--time-limit").unwrap())
            .collect();
        assert_eq!(t, ["1s", "3s", "7s", "11s"]);
        let n: Vec<String> = candidates(&f, "--nemesis")
            .iter()
            .map(|f| get(f, "--nemesis").unwrap())
            .collect();
        assert_eq!(n, ["none", "kill", "partition"]);
        assert!(candidates(&v("--concurrency 1"), "--concurrency").is_empty());
    }

    /// A run refuses a flag shaping a package it does not run: dropping a
    /// package drops the flags that shaped it only, and each candidate
    /// still passes the run's checks.
    #[test]
    fn dropping_a_package_drops_the_flags_that_shaped_it() {
        let f = v(
            "--db sim --sim-replicas 3 --nemesis partition,kill --partition one --kill-targets one --nemesis-interval 200ms",
        );
        assert!(checked_run_flags(&f).is_ok());
        let c = candidates(&f, "--nemesis");
        assert_eq!(c[0], v("--db sim --sim-replicas 3 --nemesis none"));
        assert_eq!(
            c[1],
            v(
                "--db sim --sim-replicas 3 --nemesis kill --kill-targets one --nemesis-interval 200ms"
            )
        );
        assert_eq!(
            c[2],
            v(
                "--db sim --sim-replicas 3 --nemesis partition --partition one --nemesis-interval 200ms"
            )
        );
        for cand in &c {
            assert!(checked_run_flags(cand).is_ok(), "{cand:?}");
        }
    }

    #[test]
    fn flags_become_a_run_table() {
        let t = run_table(&v(
            "--db postgres --local --seed 3 --db-conf a=1 --db-conf b=2 --test-name x --isolation=repeatable-read",
        ));
        assert_eq!(
            toml::to_string(&t).unwrap(),
            "db = \"postgres\"\ndb-conf = [\"a=1\", \"b=2\"]\nisolation = \"repeatable-read\"\nlocal = true\n"
        );
    }
}
