//! A suite split over N machines: which runs a shard takes
//! ([`Shard::takes`]), and a shard's `summary.json` read back as the records
//! it was written from ([`ShardSummary::parse`]), so `soak merge` writes the
//! unsharded summary, JUnit and table with the same functions as `soak`.
//!
//! Key decision: a run's shard is a pure function of its cell key (its test
//! name and its copy number within that name, [`cell_keys`]) and N — an
//! FNV-1a hash of the key modulo N, not its position — so reordering the
//! suite file, or adding an unrelated test, moves no other run to another
//! shard. Seeds stay those of the unsharded suite (the run's position), so a
//! shard runs exactly what the unsharded suite would have run.

use crate::report::soak::{Planned, Record, Suite};
use crate::suite::{ChildEnd, Outcome, RunFacts};
use anyhow::{Context as _, bail};
use serde_json::Value;
use std::path::PathBuf;
use std::time::{Duration, SystemTime};

/// `--shard I/N`: the I-th of N shards, I from 1.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shard {
    /// From 1 to `count`.
    pub index: usize,
    /// How many shards the suite is split into.
    pub count: usize,
}

impl Shard {
    /// Parses `I/N` (1 ≤ I ≤ N ≤ 10000).
    ///
    /// # Errors
    /// Anything else, saying what was expected.
    pub fn parse(s: &str) -> anyhow::Result<Shard> {
        let bad = || {
            anyhow::anyhow!(
                "--shard {s:?}: expected I/N with 1 ≤ I ≤ N ≤ 10000, e.g. 2/5 \
                 (a Kubernetes index is from 0: pass $((JOB_COMPLETION_INDEX + 1))/N)"
            )
        };
        let (i, n) = s.split_once('/').ok_or_else(bad)?;
        let index: usize = i.trim().parse().map_err(|_| bad())?;
        let count: usize = n.trim().parse().map_err(|_| bad())?;
        if index == 0 || index > count || count > 10_000 {
            return Err(bad());
        }
        Ok(Shard { index, count })
    }

    /// Whether the run with cell key `key` belongs to this shard.
    pub fn takes(&self, key: &str) -> bool {
        shard_of(key, self.count) == self.index
    }

    /// `2of5`, for directory names.
    pub fn label(&self) -> String {
        format!("{}of{}", self.index, self.count)
    }
}

/// FNV-1a, 64 bits: stable across versions and platforms (unlike std's
/// hasher, which may change).
pub fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// The shard (from 1) of cell key `key` among `n`.
pub fn shard_of(key: &str, n: usize) -> usize {
    (fnv1a(key.as_bytes()) % n.max(1) as u64) as usize + 1
}

/// Each run's cell key: its test name, and `#k` for the k-th copy (k ≥ 2)
/// of the same test name (`count` > 1). Independent of the order of
/// `[[test]]` entries with different names.
pub fn cell_keys(runs: &[Planned]) -> Vec<String> {
    let mut seen: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    runs.iter()
        .map(|p| {
            let k = seen.entry(p.test_name.as_str()).or_default();
            *k += 1;
            if *k == 1 {
                p.test_name.clone()
            } else {
                format!("{}#{}", p.test_name, k)
            }
        })
        .collect()
}

/// A `summary.json` read back.
#[derive(Debug)]
pub struct ShardSummary {
    /// The suite (name and base seed; `runs` holds the runs not run).
    pub suite: Suite,
    /// `suite_file`.
    pub suite_file: PathBuf,
    /// The shard it ran, if sharded.
    pub shard: Option<Shard>,
    /// `night`, if recorded.
    pub night: Option<String>,
    /// Start and end.
    pub started: SystemTime,
    /// End.
    pub ended: SystemTime,
    /// Whether it was interrupted.
    pub interrupted: bool,
    /// Every finished run.
    pub records: Vec<Record>,
    /// Runs not run (interrupted), with id and test name only.
    pub not_run: Vec<Planned>,
    /// The `harness` object (version, commit).
    pub harness: Value,
}

fn str_of<'a>(v: &'a Value, key: &str, what: &str) -> anyhow::Result<&'a str> {
    v[key]
        .as_str()
        .with_context(|| format!("{what}: {key:?} is missing or not a string"))
}

fn u64_of(v: &Value, key: &str, what: &str) -> anyhow::Result<u64> {
    v[key]
        .as_u64()
        .with_context(|| format!("{what}: {key:?} is missing or not a non-negative integer"))
}

fn time_of(v: &Value, key: &str) -> anyhow::Result<SystemTime> {
    let s = str_of(v, key, "summary")?;
    humantime::parse_rfc3339(s).with_context(|| format!("summary: {key:?}: {s:?}"))
}

fn secs(v: &Value, key: &str, what: &str) -> anyhow::Result<Duration> {
    let s = v[key]
        .as_f64()
        .filter(|s| s.is_finite() && *s >= 0.0)
        .with_context(|| format!("{what}: {key:?} is missing or not a number of seconds"))?;
    Ok(Duration::from_secs_f64(s))
}

fn record(r: &Value, i: usize) -> anyhow::Result<Record> {
    let what = format!("runs[{i}]");
    let outcome =
        Outcome::parse(str_of(r, "outcome", &what)?).map_err(|e| anyhow::anyhow!("{what}: {e}"))?;
    let expect = r["expected"]
        .as_array()
        .with_context(|| format!("{what}: \"expected\" is not a list"))?
        .iter()
        .map(|e| {
            Outcome::parse(e.as_str().unwrap_or_default())
                .map_err(|e| anyhow::anyhow!("{what}: expected: {e}"))
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    let strings = |key: &str| crate::suite::json_strings(&r[key]);
    let opt_str = |key: &str| r[key].as_str().map(str::to_string);
    Ok(Record {
        planned: Planned {
            id: u64_of(r, "id", &what)? as usize,
            test: str_of(r, "test", &what)?.to_string(),
            test_name: str_of(r, "test_name", &what)?.to_string(),
            flags: strings("flags"),
            expect,
            watchdog: secs(r, "watchdog_s", &what)?,
        },
        seed: u64_of(r, "seed", &what)?,
        outcome,
        end: ChildEnd {
            code: r["exit_code"].as_i64().map(|c| c as i32),
            signal: r["signal"].as_i64().map(|c| c as i32),
            timed_out: outcome == Outcome::TimedOut,
            interrupted: r["interrupted"].as_bool().unwrap_or(false),
            max_rss_kb: r["child_max_rss_kb"].as_i64().unwrap_or(0),
            elapsed: secs(r, "duration_s", &what)?,
        },
        run_dir: opt_str("run_dir").map(PathBuf::from),
        log: PathBuf::from(str_of(r, "log", &what)?),
        facts: RunFacts {
            valid: opt_str("valid"),
            anomaly_types: strings("anomaly_types"),
            error: None,
            // summary.json keeps the outcome (`no-fault` included), not its reason.
            no_fault: None,
        },
        detail: opt_str("detail"),
        soak_rss_kb: r["soak_rss_kb"].as_u64(),
    })
}

impl ShardSummary {
    /// Reads a `summary.json` written by `harness soak`.
    ///
    /// # Errors
    /// A missing or mistyped field, named.
    pub fn parse(v: &Value) -> anyhow::Result<ShardSummary> {
        let shard = match &v["shard"] {
            Value::Null => None,
            s => Some(Shard {
                index: u64_of(s, "index", "shard")? as usize,
                count: u64_of(s, "count", "shard")? as usize,
            }),
        };
        let records = v["runs"]
            .as_array()
            .context("summary: \"runs\" is not a list")?
            .iter()
            .enumerate()
            .map(|(i, r)| record(r, i))
            .collect::<anyhow::Result<Vec<_>>>()?;
        let not_run = v["not_run"]
            .as_array()
            .context("summary: \"not_run\" is not a list")?
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let what = format!("not_run[{i}]");
                Ok(Planned {
                    id: u64_of(p, "id", &what)? as usize,
                    test: String::new(),
                    test_name: str_of(p, "test_name", &what)?.to_string(),
                    flags: Vec::new(),
                    expect: Vec::new(),
                    watchdog: Duration::ZERO,
                })
            })
            .collect::<anyhow::Result<Vec<_>>>()?;
        Ok(ShardSummary {
            suite: Suite {
                name: str_of(v, "suite", "summary")?.to_string(),
                seed: v["base_seed"].as_u64(),
                grace: Duration::ZERO,
                runs: Vec::new(),
            },
            suite_file: PathBuf::from(str_of(v, "suite_file", "summary")?),
            shard,
            night: v["night"].as_str().map(str::to_string),
            started: time_of(v, "started")?,
            ended: time_of(v, "ended")?,
            interrupted: v["interrupted"].as_bool().unwrap_or(false),
            records,
            not_run,
            harness: v["harness"].clone(),
        })
    }
}

/// The shards of one suite, checked and combined: every shard of 1..N once,
/// the same suite, base seed, night and binary, no run twice.
///
/// # Errors
/// Names the shard missing, doubled or disagreeing, and where it came from.
pub fn merge(parts: Vec<(String, ShardSummary)>) -> anyhow::Result<ShardSummary> {
    let Some((first_from, first)) = parts.first() else {
        bail!("no shard summaries to merge");
    };
    let count = first.shard.map(|s| s.count).with_context(|| {
        format!("{first_from}: not a shard's summary (run with soak --shard I/N)")
    })?;
    let mut seen: Vec<Option<&str>> = vec![None; count];
    for (from, p) in &parts {
        let Some(s) = p.shard else {
            bail!("{from}: not a shard's summary (run with soak --shard I/N)");
        };
        if s.count != count {
            bail!(
                "{from}: shard {}/{} of a split into {count} ({first_from})",
                s.index,
                s.count
            );
        }
        for (key, a, b) in [
            (
                "suite",
                Some(p.suite.name.clone()),
                Some(first.suite.name.clone()),
            ),
            (
                "base seed",
                p.suite.seed.map(|s| s.to_string()),
                first.suite.seed.map(|s| s.to_string()),
            ),
            ("night", p.night.clone(), first.night.clone()),
            (
                "harness",
                Some(p.harness.to_string()),
                Some(first.harness.to_string()),
            ),
        ] {
            if a != b {
                bail!("{from}: {key} {a:?} differs from {b:?} ({first_from})");
            }
        }
        let slot = seen
            .get_mut(s.index.wrapping_sub(1))
            .with_context(|| format!("{from}: shard {}/{count} out of range", s.index))?;
        if let Some(other) = slot {
            bail!("shard {}/{count} given twice: {other} and {from}", s.index);
        }
        *slot = Some(from.as_str());
    }
    let missing: Vec<String> = seen
        .iter()
        .enumerate()
        .filter(|(_, s)| s.is_none())
        .map(|(i, _)| format!("{}/{count}", i + 1))
        .collect();
    if !missing.is_empty() {
        bail!("shards missing: {}", missing.join(", "));
    }
    let mut parts = parts.into_iter();
    let Some((_, mut all)) = parts.next() else {
        bail!("no shard summaries to merge");
    };
    for (_, p) in parts {
        all.started = all.started.min(p.started);
        all.ended = all.ended.max(p.ended);
        all.interrupted |= p.interrupted;
        all.records.extend(p.records);
        all.not_run.extend(p.not_run);
    }
    all.records.sort_by_key(|r| r.planned.id);
    all.not_run.sort_by_key(|p| p.id);
    let mut ids: Vec<usize> = all.records.iter().map(|r| r.planned.id).collect();
    ids.extend(all.not_run.iter().map(|p| p.id));
    ids.sort_unstable();
    if let Some(w) = ids.windows(2).find(|w| w[0] == w[1]) {
        bail!("run #{} is in more than one shard", w[0]);
    }
    all.shard = None;
    Ok(all)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn planned(name: &str) -> Planned {
        Planned {
            id: 0,
            test: name.into(),
            test_name: name.into(),
            flags: Vec::new(),
            expect: vec![Outcome::Valid],
            watchdog: Duration::ZERO,
        }
    }

    #[test]
    fn shards_parse_and_name_bad_input() {
        assert_eq!(Shard::parse("2/5").unwrap(), Shard { index: 2, count: 5 });
        for bad in ["0/3", "4/3", "3", "a/b", "1/0", "1/20000", ""] {
            let e = format!("{:#}", Shard::parse(bad).unwrap_err());
            assert!(e.contains(&format!("{bad:?}")) && e.contains("I/N"), "{e}");
        }
    }

    #[test]
    fn every_key_is_in_exactly_one_shard_whatever_the_order() {
        let runs: Vec<Planned> = ["a", "b", "a", "c", "d", "a"].map(planned).to_vec();
        let keys = cell_keys(&runs);
        assert_eq!(keys, ["a", "b", "a#2", "c", "d", "a#3"]);
        for n in 1..6 {
            for k in &keys {
                let holders: Vec<usize> = (1..=n)
                    .filter(|&i| Shard { index: i, count: n }.takes(k))
                    .collect();
                assert_eq!(holders.len(), 1, "{k} in {holders:?} of {n}");
            }
        }
        // Reordering the distinct tests keeps each key (and so its shard).
        let reordered: Vec<Planned> = ["d", "a", "a", "c", "b", "a"].map(planned).to_vec();
        let mut k2 = cell_keys(&reordered);
        let mut k1 = keys.clone();
        k1.sort();
        k2.sort();
        assert_eq!(k1, k2);
        // Pinned values: a change of hash would move every night's cells.
        assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(
            shard_of("a", 3),
            (0xaf63_dc4c_8601_ec8c_u64 % 3) as usize + 1
        );
    }
}
