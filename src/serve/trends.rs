//! `/trends` and `/api/runs`: the runs soaks tagged (`soak.json`,
//! [`store::run::SoakTag`]) in every store `serve` was given, as a grid of
//! one row per cell and one column per night, and the same as JSON.
//!
//! Per cell: the outcome of each night (green: every run as expected; red:
//! an unexpected verdict; purple: an unexpected crash, timeout or setup
//! failure; each square links to its run, the failing one first), the first
//! night with a failure (and the database commit of that night, if given),
//! and the flake rate: failing nights out of nights run. A cell whose
//! failing nights form one run reaching the last night is "broken since"
//! its first failure; one run of failing nights followed by passes is
//! "recovered"; two or more runs of failures with passes between them is
//! "flaky".
//!
//! Bounded: one small tag per run (capped at [`MAX_TAG_BYTES`]), at most
//! [`MAX_RUNS`] runs; the page is built per request from them.

use engine::report::html_escape as esc;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::PathBuf;
use store::run::SoakTag;

/// Largest `soak.json` read.
pub const MAX_TAG_BYTES: u64 = 64 * 1024;
/// Most tagged runs read per request: the newest runs of each store
/// (`list_rels` is newest first) until this many (~1 KB each).
pub const MAX_RUNS: usize = 50_000;

/// One tagged run.
#[derive(Debug, Clone)]
pub struct TrendRun {
    /// The run page's URL.
    pub url: String,
    /// Which `--store` (from 0).
    pub store: usize,
    /// Its path in that store (`<test>/<timestamp>`).
    pub rel: String,
    /// Its tag.
    pub tag: SoakTag,
}

/// A run's URL: the first store's under `/run/`, the others' under
/// `/s/<k>/run/`.
pub fn run_url(store: usize, rel: &str) -> String {
    let path = super::pages::url_path(rel);
    if store == 0 {
        format!("/run/{path}/")
    } else {
        format!("/s/{store}/run/{path}/")
    }
}

/// Every tagged run under the stores' roots (`<test>/<timestamp>/soak.json`).
pub fn collect(roots: &[PathBuf]) -> Vec<TrendRun> {
    let mut out = Vec::new();
    for (k, root) in roots.iter().enumerate() {
        let Ok(rels) = super::runs::list_rels(root) else {
            continue;
        };
        for rel in rels {
            if out.len() >= MAX_RUNS {
                break;
            }
            let p = root.join(&rel).join(store::run::SOAK_JSON);
            let Ok((bytes, more)) = super::runs::read_inside_capped(root, &p, MAX_TAG_BYTES) else {
                continue;
            };
            if more {
                continue;
            }
            let Ok(tag) = serde_json::from_slice::<SoakTag>(&bytes) else {
                continue;
            };
            out.push(TrendRun {
                url: run_url(k, &rel),
                store: k,
                rel,
                tag,
            });
        }
    }
    out.sort_by(|a, b| {
        (b.tag.night.as_str(), a.tag.cell.as_str(), a.rel.as_str()).cmp(&(
            a.tag.night.as_str(),
            b.tag.cell.as_str(),
            b.rel.as_str(),
        ))
    });
    out
}

/// How a cell did on one night.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Square {
    /// Every run as expected.
    Pass,
    /// An unexpected verdict (valid, invalid, unknown).
    Fail,
    /// An unexpected crash, timeout or setup failure.
    Error,
}

impl Square {
    fn class(self) -> &'static str {
        match self {
            Square::Pass => "pass",
            Square::Fail => "fail",
            Square::Error => "error",
        }
    }
}

fn square_of(tag: &SoakTag) -> Square {
    if tag.as_expected {
        Square::Pass
    } else if matches!(tag.outcome.as_str(), "valid" | "invalid" | "unknown") {
        Square::Fail
    } else {
        Square::Error
    }
}

/// One row of the grid.
#[derive(Debug)]
pub struct CellTrend {
    /// Suite name.
    pub suite: String,
    /// Cell (test name).
    pub cell: String,
    /// night → (square, runs of that night, failing first).
    pub nights: BTreeMap<String, (Square, Vec<usize>)>,
    /// The first night with a failing run.
    pub first_failure: Option<String>,
    /// `--db-commit` of that night's failing run.
    pub first_failure_commit: Option<String>,
    /// The last night it passed before its first failure, and that night's
    /// `--db-commit`: with the first failure's, the commit range.
    pub last_pass: Option<(String, Option<String>)>,
    /// Nights with a failing run.
    pub failing_nights: usize,
    /// Whether its failing nights form two or more runs.
    pub flaky: bool,
    /// Whether its last night failed.
    pub failing_now: bool,
}

impl CellTrend {
    /// Failing nights / nights run.
    pub fn flake_rate(&self) -> f64 {
        self.failing_nights as f64 / self.nights.len().max(1) as f64
    }

    fn status(&self) -> String {
        match &self.first_failure {
            None => "stable".to_string(),
            Some(_) if self.flaky => "flaky".to_string(),
            Some(n) if self.failing_now => format!("broken since {n}"),
            Some(_) => "recovered".to_string(),
        }
    }
}

/// The grid's rows (by suite, then cell) from `runs`.
pub fn cells(runs: &[TrendRun]) -> Vec<CellTrend> {
    let mut by_cell: BTreeMap<(String, String), BTreeMap<String, Vec<usize>>> = BTreeMap::new();
    for (i, r) in runs.iter().enumerate() {
        by_cell
            .entry((r.tag.suite.clone(), r.tag.cell.clone()))
            .or_default()
            .entry(r.tag.night.clone())
            .or_default()
            .push(i);
    }
    let mut out = Vec::new();
    for ((suite, cell), nights) in by_cell {
        let mut row = CellTrend {
            suite,
            cell,
            nights: BTreeMap::new(),
            first_failure: None,
            first_failure_commit: None,
            last_pass: None,
            failing_nights: 0,
            flaky: false,
            failing_now: false,
        };
        // Runs of failing nights so far, and whether the last night failed.
        let mut blocks = 0;
        for (night, mut idx) in nights {
            // Failing runs first (the square links to the first), then by path.
            idx.sort_by_key(|&i| (square_of(&runs[i].tag) == Square::Pass, runs[i].rel.clone()));
            let square = idx
                .iter()
                .map(|&i| square_of(&runs[i].tag))
                .find(|s| *s != Square::Pass)
                .unwrap_or(Square::Pass);
            if square == Square::Pass {
                row.failing_now = false;
                if row.first_failure.is_none() {
                    row.last_pass = Some((
                        night.clone(),
                        idx.first().and_then(|&i| runs[i].tag.db_commit.clone()),
                    ));
                }
            } else {
                if !row.failing_now {
                    blocks += 1;
                }
                row.failing_now = true;
                row.failing_nights += 1;
                if row.first_failure.is_none() {
                    row.first_failure = Some(night.clone());
                    row.first_failure_commit =
                        idx.first().and_then(|&i| runs[i].tag.db_commit.clone());
                }
            }
            row.nights.insert(night, (square, idx));
        }
        row.flaky = blocks >= 2;
        out.push(row);
    }
    out
}

const STYLE: &str = r#"<style>
body { font: 14px system-ui, sans-serif; margin: 16px 24px; color: #222; }
h1 { font-size: 20px; } h2 { font-size: 17px; margin-top: 22px; }
table { border-collapse: collapse; }
td, th { border: 1px solid #ddd; padding: 3px 8px; text-align: left; white-space: nowrap; }
th { background: #f4f4f4; }
td.sq { padding: 0; text-align: center; }
td.sq a { display: block; min-width: 34px; height: 22px; line-height: 22px; color: #fff; text-decoration: none; font-size: 11px; }
a.pass { background: #2e8b3a; } a.fail { background: #c62828; } a.error { background: #6a1b9a; }
td.none { background: #f0f0f0; }
.flaky { color: #b26a00; font-weight: bold; } .broken { color: #c62828; font-weight: bold; }
.muted { color: #777; }
</style>"#;

/// The `/trends` page.
pub fn page(runs: &[TrendRun], cells: &[CellTrend], stores: &[PathBuf]) -> String {
    let mut b = String::from("<h1>harness trends</h1>\n");
    b.push_str(&format!(
        "<p class=\"muted\">{} soak runs in {} store(s): {} · <a href=\"/api/runs\">JSON</a> · <a href=\"/\">all runs</a></p>\n",
        runs.len(),
        stores.len(),
        esc(&stores
            .iter()
            .map(|s| s.display().to_string())
            .collect::<Vec<_>>()
            .join(", "))
    ));
    if runs.len() >= MAX_RUNS {
        b.push_str(&format!(
            "<p class=\"muted\">only the newest {MAX_RUNS} tagged runs are read</p>\n"
        ));
    }
    if cells.is_empty() {
        b.push_str(
            "<p>No runs tagged by <code>harness soak</code> (soak.json) in these stores.</p>\n",
        );
    }
    let mut suites: Vec<&str> = cells.iter().map(|c| c.suite.as_str()).collect();
    suites.dedup();
    for suite in suites {
        let rows: Vec<&CellTrend> = cells.iter().filter(|c| c.suite == suite).collect();
        let mut nights: Vec<&String> = rows.iter().flat_map(|c| c.nights.keys()).collect();
        nights.sort();
        nights.dedup();
        b.push_str(&format!(
            "<h2>suite {}</h2>\n<table class=\"trend\">\n<thead><tr><th>cell</th>",
            esc(suite)
        ));
        for n in &nights {
            b.push_str(&format!("<th>{}</th>", esc(n)));
        }
        b.push_str(
            "<th>status</th><th>first failure</th><th>flake rate</th></tr></thead>\n<tbody>\n",
        );
        for c in rows {
            b.push_str(&format!(
                "<tr data-cell=\"{}\"><td>{}</td>",
                esc(&c.cell),
                esc(&c.cell)
            ));
            for n in &nights {
                match c.nights.get(*n) {
                    None => b.push_str("<td class=\"sq none\"></td>"),
                    Some((sq, idx)) => {
                        let first = idx.first().map(|&i| &runs[i]);
                        let (url, title) = first.map_or((String::new(), String::new()), |r| {
                            let mut t = format!(
                                "{} {}: {} (expected {}), seed {}",
                                r.tag.cell,
                                r.tag.night,
                                r.tag.outcome,
                                r.tag.expected.join("|"),
                                r.tag.seed
                            );
                            if !r.tag.anomaly_types.is_empty() {
                                t.push_str(&format!("; {}", r.tag.anomaly_types.join(", ")));
                            }
                            if let Some(c) = &r.tag.db_commit {
                                t.push_str(&format!("; db commit {c}"));
                            }
                            if idx.len() > 1 {
                                t.push_str(&format!("; {} runs", idx.len()));
                            }
                            (r.url.clone(), t)
                        });
                        let label = match sq {
                            Square::Pass => "ok".to_string(),
                            _ => first.map(|r| short(&r.tag.outcome)).unwrap_or_default(),
                        };
                        b.push_str(&format!(
                            "<td class=\"sq\"><a class=\"{}\" href=\"{}\" title=\"{}\" data-night=\"{}\">{}</a></td>",
                            sq.class(),
                            esc(&url),
                            esc(&title),
                            esc(n),
                            esc(&label)
                        ));
                    }
                }
            }
            let status = c.status();
            let class = if c.flaky {
                "flaky"
            } else if c.failing_now {
                "broken"
            } else {
                "muted"
            };
            b.push_str(&format!(
                "<td class=\"status {class}\">{}</td>",
                esc(&status)
            ));
            let last_pass = match (&c.first_failure, &c.last_pass) {
                (Some(_), Some((n, commit))) => format!(
                    " <span class=\"muted\">last pass {}{}</span>",
                    esc(n),
                    commit
                        .as_ref()
                        .map(|x| format!(" (db {})", esc(x)))
                        .unwrap_or_default()
                ),
                _ => String::new(),
            };
            b.push_str(&format!(
                "<td class=\"first-failure\">{}{}{last_pass}</td>",
                esc(c.first_failure.as_deref().unwrap_or("—")),
                c.first_failure_commit
                    .as_ref()
                    .map(|x| format!(" <span class=\"muted\">(db {})</span>", esc(x)))
                    .unwrap_or_default()
            ));
            b.push_str(&format!(
                "<td class=\"flake-rate\">{:.0}% ({}/{} nights)</td></tr>\n",
                c.flake_rate() * 100.0,
                c.failing_nights,
                c.nights.len()
            ));
        }
        b.push_str("</tbody></table>\n");
    }
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>trends</title>\n{STYLE}\n</head>\n<body>\n{b}\n</body>\n</html>\n"
    )
}

fn short(outcome: &str) -> String {
    match outcome {
        "invalid" => "inv",
        "valid" => "val",
        "unknown" => "unk",
        "crashed" => "crash",
        "timed-out" => "t/o",
        "setup-failed" => "setup",
        o => o,
    }
    .to_string()
}

/// `/api/runs`: every tagged run and every cell's trend.
pub fn api(runs: &[TrendRun], cells: &[CellTrend], stores: &[PathBuf]) -> Value {
    json!({
        "stores": stores.iter().map(|s| s.display().to_string()).collect::<Vec<_>>(),
        "runs": runs.iter().map(|r| {
            let mut v = serde_json::to_value(&r.tag).unwrap_or(Value::Null);
            v["url"] = r.url.clone().into();
            v["store"] = r.store.into();
            v["run"] = r.rel.clone().into();
            v
        }).collect::<Vec<_>>(),
        "cells": cells.iter().map(|c| json!({
            "suite": c.suite,
            "cell": c.cell,
            "status": c.status(),
            "first_failure": c.first_failure,
            "first_failure_db_commit": c.first_failure_commit,
            "last_pass_before": c.first_failure.as_ref().and(c.last_pass.as_ref()).map(|(n, commit)| json!({"night": n, "db_commit": commit})),
            "failing_nights": c.failing_nights,
            "nights_run": c.nights.len(),
            "flake_rate": c.flake_rate(),
            "flaky": c.flaky,
            "nights": c.nights.iter().map(|(n, (sq, idx))| (n.clone(), json!({
                "square": sq.class(),
                "runs": idx.iter().map(|&i| runs[i].url.clone()).collect::<Vec<_>>(),
            }))).collect::<serde_json::Map<String, Value>>(),
        })).collect::<Vec<_>>(),
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn run(cell: &str, night: &str, ok: bool) -> TrendRun {
        TrendRun {
            url: format!("/run/{cell}/{night}/"),
            store: 0,
            rel: format!("{cell}/{night}"),
            tag: SoakTag {
                suite: "s".into(),
                cell: cell.into(),
                night: night.into(),
                outcome: if ok { "valid" } else { "invalid" }.into(),
                as_expected: ok,
                db_commit: Some(format!("c-{night}")),
                ..SoakTag::default()
            },
        }
    }

    #[test]
    fn first_failure_flake_rate_and_status() {
        let runs = vec![
            run("a", "n1", true),
            run("a", "n2", true),
            run("a", "n3", false),
            run("a", "n4", false),
            run("b", "n1", true),
            run("b", "n2", false),
            run("b", "n3", true),
            run("b", "n4", false),
            run("c", "n1", true),
            run("c", "n2", false),
            run("c", "n3", true),
            run("d", "n1", true),
        ];
        let c = cells(&runs);
        assert_eq!(c.len(), 4);
        assert_eq!(c[0].first_failure.as_deref(), Some("n3"));
        assert_eq!(c[0].first_failure_commit.as_deref(), Some("c-n3"));
        assert_eq!(
            c[0].last_pass,
            Some(("n2".to_string(), Some("c-n2".to_string())))
        );
        assert!(page(&runs, &c, &[]).contains("last pass n2 (db c-n2)"));
        assert_eq!(c[0].status(), "broken since n3");
        assert_eq!(c[0].failing_nights, 2);
        assert!((c[0].flake_rate() - 0.5).abs() < 1e-9);
        assert_eq!(c[1].status(), "flaky");
        assert_eq!(c[2].status(), "recovered");
        assert_eq!(c[3].status(), "stable");
        let html = page(&runs, &c, &[PathBuf::from("/s")]);
        assert!(html.contains("broken since n3"));
        assert!(html.contains("50% (2/4 nights)"), "{html}");
        assert!(html.contains("33% (1/3 nights)"), "{html}");
        let api = api(&runs, &c, &[]);
        assert_eq!(api["cells"][1]["flaky"], true);
        assert_eq!(api["cells"][0]["nights"]["n3"]["square"], "fail");
    }
}
