//! Reports written into a run directory after checking: `timeline.html`,
//! latency and rate plots (PNG + SVG), the clock-skew plot of runs with
//! clock faults, and the checker's output for
//! Jepsen/Elle tools (`results.edn`, `history.edn`, `elle/`).
//!
//! Key decision: everything is derived from the `History` and the
//! `CheckResult` alone (no database, no network), so `harness analyze` can
//! regenerate any run's reports from its stored files.

pub mod bank_plot;
pub mod caps;
pub mod clock_plot;
pub mod elle;
pub mod graph_svg;
pub mod lost_writes;
pub mod permit;
pub mod plots;
pub mod repro;
pub mod shard;
pub mod soak;
pub mod spans;
pub mod timeline;

#[cfg(test)]
mod tests;

use anyhow::Context;
use checker::CheckResult;
use std::fs;
use std::path::Path;
use store::History;

/// Escapes text for HTML element content and attribute values.
pub fn html_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// The test name from `test.json` (loosely), else the directory names.
pub fn run_title(run_dir: &Path) -> String {
    let from_json = store::RunDir::open(run_dir)
        .ok()
        .and_then(|run| store::run::RunMeta::load(&run.test_json_path()).ok())
        .and_then(|meta| meta.test_name());
    let dirs: Vec<String> = run_dir
        .components()
        .rev()
        .take(2)
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    match from_json {
        Some(name) => format!("{name} {}", dirs.first().cloned().unwrap_or_default()),
        None => dirs.into_iter().rev().collect::<Vec<_>>().join("/"),
    }
}

/// What a run directory keeps beyond the canonical `history.jsonl.gz`,
/// results, explanations, a bounded timeline and the plots (`--keep`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Keep {
    /// `history.edn` too (Jepsen/Elle tools read it; `harness history
    /// convert` and `serve` make it on request otherwise).
    pub edn: bool,
    /// `history.jsonl` uncompressed.
    pub jsonl: bool,
    /// Every transaction in `timeline.html`, not a sample of a long run.
    pub timeline: bool,
}

/// One `--keep` item.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeepItem {
    /// Everything below.
    All,
    /// `history.edn`, the history as Jepsen EDN.
    Edn,
    /// `history.jsonl` uncompressed (instead of `history.jsonl.gz`).
    Jsonl,
    /// Every transaction in `timeline.html` (no sampling).
    Timeline,
}

impl KeepItem {
    /// Every item, in `--help` order.
    pub const ALL: [KeepItem; 4] = [
        KeepItem::All,
        KeepItem::Edn,
        KeepItem::Jsonl,
        KeepItem::Timeline,
    ];

    /// The `--keep` spelling.
    pub fn name(self) -> &'static str {
        match self {
            KeepItem::All => "all",
            KeepItem::Edn => "edn",
            KeepItem::Jsonl => "jsonl",
            KeepItem::Timeline => "timeline",
        }
    }

    /// The help line of its `--keep` value.
    pub fn about(self) -> &'static str {
        match self {
            KeepItem::All => "Everything below",
            KeepItem::Edn => "`history.edn`, the history as Jepsen EDN",
            KeepItem::Jsonl => "`history.jsonl` uncompressed (instead of `history.jsonl.gz`)",
            KeepItem::Timeline => "Every transaction in `timeline.html` (no sampling)",
        }
    }
}

impl std::str::FromStr for KeepItem {
    type Err = String;

    /// Parses a `--keep` item.
    ///
    /// # Errors
    /// Names the unknown item and lists the known ones.
    fn from_str(s: &str) -> Result<KeepItem, String> {
        KeepItem::ALL
            .into_iter()
            .find(|k| k.name() == s)
            .ok_or_else(|| {
                format!("unknown --keep item {s:?}; expected all, edn, jsonl or timeline")
            })
    }
}

impl Keep {
    /// The union of `items`.
    pub fn from_items(items: &[KeepItem]) -> Keep {
        let mut k = Keep::default();
        for i in items {
            match i {
                KeepItem::All => {
                    k = Keep {
                        edn: true,
                        jsonl: true,
                        timeline: true,
                    }
                }
                KeepItem::Edn => k.edn = true,
                KeepItem::Jsonl => k.jsonl = true,
                KeepItem::Timeline => k.timeline = true,
            }
        }
        k
    }
}

/// Writes `timeline.html` and the plots (`latency-raw`, `latency-quantiles`,
/// `rate`, each `.png` and `.svg`; `clock-skew` when clock offsets were
/// recorded) into `run_dir`. The timeline keeps every
/// transaction of `result`'s anomalies however long the run.
///
/// # Errors
/// When a file cannot be written.
pub fn write_perf_reports(
    run_dir: &Path,
    history: &History,
    result: Option<&CheckResult>,
    keep: Keep,
) -> anyhow::Result<()> {
    let extract = spans::extract(history);
    let in_anomalies: std::collections::BTreeSet<u64> = result
        .map(|r| {
            r.anomalies
                .values()
                .flatten()
                .flat_map(|a| a.ops())
                .map(|i| i.0)
                .collect()
        })
        .unwrap_or_default();
    let shown = if keep.timeline {
        timeline::Shown::All
    } else {
        timeline::Shown::AtMost(timeline::MAX_SPANS, &in_anomalies)
    };
    let html = timeline::render(history, &extract, &run_title(run_dir), &shown);
    let path = run_dir.join("timeline.html");
    fs::write(&path, html).with_context(|| format!("writing {}", path.display()))?;
    plots::write_all(run_dir, &extract)?;
    clock_plot::write(run_dir, history, &extract)?;
    Ok(())
}

/// Writes every report of a run into `run_dir`: `history.edn` when `keep`
/// says so, and when a check result is given `results.edn` and `elle/`
/// (explanations, cycle graphs as DOT and SVG, `repro.sql` for cycles); then
/// `timeline.html` and the plots. Each part is attempted even when an
/// earlier one fails; the errors are reported together. `results.json` is
/// the caller's (the runner and `analyze` write it). The result comes with
/// its exact anomaly counts (`caps::cap` has normally cut its lists), which
/// `results.edn` and `elle/` state.
///
/// # Errors
/// When any report cannot be written (the others are still written).
pub fn write_reports(
    run_dir: &Path,
    history: &History,
    checked: Option<(&CheckResult, &caps::AnomalyCounts)>,
    keep: Keep,
) -> anyhow::Result<()> {
    let result = checked.map(|(r, _)| r);
    let mut errors: Vec<String> = Vec::new();
    let edn = run_dir.join("history.edn");
    if keep.edn
        && let Err(e) = store::format::write_path(&edn, history.iter_ops(), store::Format::Edn)
    {
        errors.push(format!("writing {}: {e}", edn.display()));
    }
    if let Some((result, counts)) = checked {
        let path = run_dir.join("results.edn");
        let mut data = result.to_data();
        counts.annotate_data(&mut data);
        let mut edn = store::format::data_to_edn(&data);
        edn.push('\n');
        if let Err(e) = fs::write(&path, edn) {
            errors.push(format!("writing {}: {e}", path.display()));
        }
        if let Err(e) = elle::rewrite(&run_dir.join("elle"), result, counts, history) {
            errors.push(format!("{e:#}"));
        } else if let Err(e) = repro::write(&run_dir.join("elle"), run_dir, result, history) {
            errors.push(format!("{e:#}"));
        }
    }
    if let Err(e) = write_perf_reports(run_dir, history, result, keep) {
        errors.push(format!("{e:#}"));
    }
    if errors.is_empty() {
        Ok(())
    } else {
        anyhow::bail!("reports of {}: {}", run_dir.display(), errors.join("; "))
    }
}
