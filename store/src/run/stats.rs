//! What Jepsen's results carry beside the verdict, computed from a
//! history in one pass: op counts per `f` and outcome, throughput, latency
//! quantiles per `f`, and the fault windows the nemesis recorded.
//!
//! Key decision: bounded whatever the history. At most [`MAX_FS`] distinct
//! `f`s are kept (the rest add up under `other`), at most
//! [`MAX_FAULT_WINDOWS`] windows (the rest are counted in
//! `fault-windows-omitted`); latencies are kept only as the quantiles.
//!
//! Fault windows are those of [`super::faults`] (what took effect, per
//! fault and target set): `start-X` … `stop-X`, `kill` … `start`, `pause`
//! … `resume`, clock offsets per node. A window still open at the end has
//! no `end-s`; a nemesis op of no fault is an instant (`end-s` =
//! `start-s`). Times are seconds since the history's first op.

use crate::history::{History, OpType};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Distinct `f`s counted separately at most.
pub const MAX_FS: usize = 64;
/// Fault windows kept at most.
pub const MAX_FAULT_WINDOWS: usize = 1000;
/// Where the `f`s past [`MAX_FS`] are counted.
pub const OTHER_F: &str = "other";

/// Ops of one `f` by type.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct OpCounts {
    /// Invocations.
    pub invoke: u64,
    /// Completed, took effect.
    pub ok: u64,
    /// Completed, did not take effect.
    pub fail: u64,
    /// Completed, outcome unknown.
    pub info: u64,
}

/// Latency quantiles of one `f`, milliseconds (invocation to completion).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Latency {
    /// Completed ops measured.
    pub n: u64,
    /// Median.
    pub p50: f64,
    /// 95th percentile.
    pub p95: f64,
    /// 99th percentile.
    pub p99: f64,
    /// Slowest.
    pub max: f64,
}

/// Completed ops per second over the history's span.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Throughput {
    /// Seconds from the first op to the last.
    #[serde(rename = "duration-s")]
    pub duration_s: f64,
    /// `ok` client ops per second.
    #[serde(rename = "ok-per-s")]
    pub ok_per_s: f64,
    /// Completed (ok, fail, info) client ops per second.
    #[serde(rename = "completed-per-s")]
    pub completed_per_s: f64,
}

/// A fault window, from the nemesis' ops.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct FaultWindow {
    /// The fault (`partition`, `kill`, `pause`, …).
    pub fault: String,
    /// When it began, seconds since the first op.
    #[serde(rename = "start-s")]
    pub start_s: f64,
    /// When it ended; `None` if it never did.
    #[serde(rename = "end-s")]
    pub end_s: Option<f64>,
    /// The nodes it was in force on (empty when its ops named none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub targets: Vec<String>,
}

/// What `results.json`'s `stats` holds.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct RunStats {
    /// Client ops per `f`.
    pub counts: BTreeMap<String, OpCounts>,
    /// Nemesis ops per `f`.
    #[serde(rename = "nemesis-counts", skip_serializing_if = "BTreeMap::is_empty")]
    pub nemesis_counts: BTreeMap<String, OpCounts>,
    /// Throughput.
    pub throughput: Throughput,
    /// Latency quantiles per `f`, milliseconds; only when the history has
    /// times.
    #[serde(rename = "latency-ms")]
    pub latency_ms: BTreeMap<String, Latency>,
    /// Fault windows in start order.
    #[serde(rename = "fault-windows")]
    pub fault_windows: Vec<FaultWindow>,
    /// Windows left out past [`MAX_FAULT_WINDOWS`].
    #[serde(rename = "fault-windows-omitted", skip_serializing_if = "is_zero")]
    pub fault_windows_omitted: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

fn counted<'m>(map: &'m mut BTreeMap<String, OpCounts>, f: &str) -> &'m mut OpCounts {
    if !map.contains_key(f) && map.len() >= MAX_FS {
        return map.entry(OTHER_F.to_string()).or_default();
    }
    map.entry(f.to_string()).or_default()
}

fn quantile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((sorted.len() as f64 * q).ceil() as usize).clamp(1, sorted.len()) - 1;
    sorted[i]
}

impl RunStats {
    /// The statistics of `history`.
    pub fn of(history: &History) -> RunStats {
        let mut s = RunStats::default();
        let mut latencies: BTreeMap<String, Vec<f64>> = BTreeMap::new();
        let (mut first, mut last) = (None::<i64>, None::<i64>);
        let secs = |t: Option<i64>, first: Option<i64>| match (t, first) {
            (Some(t), Some(f)) => (t - f) as f64 / 1e9,
            _ => 0.0,
        };
        for pos in 0..history.len() {
            let t = history.time_ns(pos);
            if let Some(t) = t {
                first = Some(first.map_or(t, |f| f.min(t)));
                last = Some(last.map_or(t, |l| l.max(t)));
            }
            let f = history.f(pos).map_or("", |f| f.as_str());
            let ty = history.op_type(pos);
            let nemesis = history.is_nemesis(pos);
            let c = if nemesis {
                counted(&mut s.nemesis_counts, f)
            } else if history.is_client(pos) {
                counted(&mut s.counts, f)
            } else {
                continue;
            };
            match ty {
                OpType::Invoke => c.invoke += 1,
                OpType::Ok => c.ok += 1,
                OpType::Fail => c.fail += 1,
                OpType::Info => c.info += 1,
            }
            if !nemesis
                && ty.is_completion()
                && let (Some(inv), Some(end)) = (history.invocation(pos), t)
                && let Some(start) = history.time_ns(inv)
            {
                let key = if s.counts.contains_key(f) { f } else { OTHER_F };
                latencies
                    .entry(key.to_string())
                    .or_default()
                    .push((end - start).max(0) as f64 / 1e6);
            }
        }
        for (f, mut l) in latencies {
            l.sort_by(f64::total_cmp);
            s.latency_ms.insert(
                f,
                Latency {
                    n: l.len() as u64,
                    p50: quantile(&l, 0.50),
                    p95: quantile(&l, 0.95),
                    p99: quantile(&l, 0.99),
                    max: l.last().copied().unwrap_or(0.0),
                },
            );
        }
        let duration = secs(last, first);
        let (ok, completed) = s.counts.values().fold((0, 0), |(ok, all), c| {
            (ok + c.ok, all + c.ok + c.fail + c.info)
        });
        s.throughput = Throughput {
            duration_s: duration,
            ok_per_s: if duration > 0.0 {
                ok as f64 / duration
            } else {
                0.0
            },
            completed_per_s: if duration > 0.0 {
                completed as f64 / duration
            } else {
                0.0
            },
        };
        let t0 = first.unwrap_or(0);
        let mut windows: Vec<FaultWindow> =
            super::faults::windows(history, &|p| history.time_ns(p).unwrap_or(t0))
                .into_iter()
                .map(|w| FaultWindow {
                    fault: w.fault,
                    start_s: (w.start_ns - t0) as f64 / 1e9,
                    end_s: w.end_ns.map(|e| (e - t0) as f64 / 1e9),
                    targets: w.targets,
                })
                .collect();
        if windows.len() > MAX_FAULT_WINDOWS {
            s.fault_windows_omitted = (windows.len() - MAX_FAULT_WINDOWS) as u64;
            windows.truncate(MAX_FAULT_WINDOWS);
        }
        s.fault_windows = windows;
        s
    }
}
