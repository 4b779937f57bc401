//! HTML of the run index and of a run page. Everything user-controlled is
//! escaped; pages are self-contained (inline CSS and JS, no network). Every
//! file a page reads goes through `runs::open_inside` and is read only up
//! to a cap, so a page costs little whatever the run holds.

use super::runs::{RunInfo, Verdict, is_file_inside, read_inside_capped};
use engine::report::html_escape as esc;
use serde_json::Value;
use std::fs;
use std::path::Path;

/// Longest explanation text shown inline (bytes); the file link has it all.
const MAX_INLINE_TEXT_BYTES: usize = 200_000;
/// Most files listed on a run page.
const MAX_LISTED_FILES: usize = 2_000;

const STYLE: &str = r#"<style>
body { font: 14px system-ui, sans-serif; margin: 16px 24px; color: #222; }
h1 { font-size: 20px; } h2 { font-size: 17px; margin-top: 26px; border-bottom: 1px solid #ddd; } h3 { font-size: 15px; }
table { border-collapse: collapse; }
td, th { border: 1px solid #ddd; padding: 3px 8px; text-align: left; vertical-align: top; }
th { background: #f4f4f4; cursor: pointer; user-select: none; }
th.sorted-asc::after { content: " ▲"; } th.sorted-desc::after { content: " ▼"; }
.verdict { font-weight: bold; padding: 2px 8px; border-radius: 4px; color: #fff; white-space: nowrap; }
.v-valid { background: #2e8b3a; } .v-invalid { background: #c62828; } .v-unknown { background: #e08a00; }
.v-none { background: #888; } .v-error { background: #6a1b9a; }
tr.error-row td { background: #fbeff5; }
pre { background: #f7f7f7; border: 1px solid #e4e4e4; padding: 8px; overflow-x: auto; white-space: pre-wrap; }
pre.explanation { max-height: 32em; overflow-y: auto; }
img.plot { max-width: 100%; border: 1px solid #ddd; margin: 6px 0; }
img.cycle { max-width: 100%; border: 1px solid #ddd; margin: 6px 0; background: #fff; }
#filter { width: 320px; padding: 4px; margin-bottom: 8px; }
.muted { color: #777; }
</style>"#;

fn page(title: &str, body: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>{}</title>\n{STYLE}\n</head>\n<body>\n{body}\n</body>\n</html>\n",
        esc(title)
    )
}

fn verdict_badge(v: Verdict) -> String {
    format!("<span class=\"verdict {}\">{}</span>", v.class(), v.label())
}

/// Percent-encodes a relative path for a URL, keeping `/`.
pub fn url_path(rel: &str) -> String {
    let mut out = String::with_capacity(rel.len());
    for b in rel.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~/".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The run index.
pub fn index(root: &Path, runs: &[RunInfo]) -> String {
    let mut b = String::new();
    b.push_str("<h1>harness runs</h1>\n");
    b.push_str(&format!(
        "<p class=\"muted\">store: {} · {} runs</p>\n",
        esc(&root.display().to_string()),
        runs.len()
    ));
    b.push_str("<p><a href=\"/trends\">trends across nights</a> · <a href=\"/api/runs\">/api/runs</a></p>\n");
    b.push_str("<input id=\"filter\" placeholder=\"filter (any column)\" autofocus>\n");
    b.push_str("<table id=\"runs\">\n<thead><tr>");
    for h in [
        "name",
        "db",
        "workload",
        "nemesis",
        "isolation",
        "date",
        "verdict",
        "anomalies",
    ] {
        b.push_str(&format!("<th>{h}</th>"));
    }
    b.push_str("</tr></thead>\n<tbody>\n");
    for r in runs {
        let link = format!("/run/{}/", url_path(&r.rel));
        if let Some(err) = &r.error {
            b.push_str(&format!(
                "<tr class=\"error-row\"><td><a href=\"{link}\">{}</a></td><td colspan=\"5\">error reading run {}: {}</td><td data-v=\"error\">{}</td><td></td></tr>\n",
                esc(&r.name),
                esc(&r.rel),
                esc(err),
                verdict_badge(r.verdict),
            ));
            continue;
        }
        b.push_str(&format!(
            "<tr><td><a href=\"{link}\">{}</a></td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td data-v=\"{}\">{}</td><td>{}</td></tr>\n",
            esc(&r.name),
            esc(&r.db),
            esc(&r.workload),
            esc(&r.nemesis),
            esc(&r.isolation),
            esc(&r.date),
            r.verdict.label(),
            verdict_badge(r.verdict),
            esc(&r.anomaly_types.join(", ")),
        ));
    }
    b.push_str("</tbody>\n</table>\n");
    if runs.is_empty() {
        b.push_str("<p>No runs yet.</p>\n");
    }
    b.push_str(INDEX_JS);
    page("harness runs", &b)
}

const INDEX_JS: &str = r#"<script>
"use strict";
(function () {
  const table = document.getElementById("runs"), body = table.tBodies[0];
  const filter = document.getElementById("filter");
  filter.addEventListener("input", function () {
    const q = filter.value.toLowerCase();
    for (const tr of body.rows) tr.style.display = tr.textContent.toLowerCase().includes(q) ? "" : "none";
  });
  const ths = table.tHead.rows[0].cells;
  for (let c = 0; c < ths.length; c++) {
    ths[c].addEventListener("click", function () {
      const asc = !ths[c].classList.contains("sorted-asc");
      for (const th of ths) th.classList.remove("sorted-asc", "sorted-desc");
      ths[c].classList.add(asc ? "sorted-asc" : "sorted-desc");
      const rows = Array.from(body.rows);
      const key = tr => (tr.cells[c] ? tr.cells[c].textContent : "").toLowerCase();
      rows.sort((a, b) => (asc ? 1 : -1) * key(a).localeCompare(key(b), undefined, { numeric: true }));
      for (const tr of rows) body.appendChild(tr);
    });
  }
})();
</script>"#;

fn pretty(v: &Value) -> String {
    serde_json::to_string_pretty(v).unwrap_or_default()
}

fn read_text_capped(root: &Path, path: &Path) -> Option<String> {
    let (bytes, more) = read_inside_capped(root, path, MAX_INLINE_TEXT_BYTES as u64).ok()?;
    let mut s = String::from_utf8_lossy(&bytes).into_owned();
    if more {
        s.push_str("\n… (cut; open the file for the rest)");
    }
    Some(s)
}

/// Files under `dir`, relative, sorted, with sizes; symlinks are not followed.
fn walk(dir: &Path) -> Vec<(String, u64)> {
    let mut out = Vec::new();
    let mut stack = vec![(dir.to_path_buf(), String::new())];
    while let Some((d, prefix)) = stack.pop() {
        let Ok(entries) = fs::read_dir(&d) else {
            continue;
        };
        for e in entries.filter_map(Result::ok) {
            let name = e.file_name().to_string_lossy().into_owned();
            let rel = if prefix.is_empty() {
                name.clone()
            } else {
                format!("{prefix}/{name}")
            };
            let Ok(meta) = fs::symlink_metadata(e.path()) else {
                continue;
            };
            if meta.is_dir() {
                stack.push((e.path(), rel));
            } else if meta.is_file() {
                out.push((rel, meta.len()));
            }
            if out.len() >= MAX_LISTED_FILES {
                break;
            }
        }
    }
    out.sort();
    out
}

fn human_size(n: u64) -> String {
    match n {
        n if n >= 1 << 30 => format!("{:.1} GiB", n as f64 / (1u64 << 30) as f64),
        n if n >= 1 << 20 => format!("{:.1} MiB", n as f64 / (1u64 << 20) as f64),
        n if n >= 1 << 10 => format!("{:.1} KiB", n as f64 / 1024.0),
        n => format!("{n} B"),
    }
}

/// A run page. Links are relative to `/run/<rel>/`.
pub fn run_page(run: &RunInfo) -> String {
    let mut b = String::new();
    b.push_str("<p><a href=\"/\">← all runs</a></p>\n");
    b.push_str(&format!(
        "<h1>{} <span class=\"muted\">{}</span> {}</h1>\n",
        esc(&run.name),
        esc(&run.rel),
        verdict_badge(run.verdict)
    ));
    if let Some(err) = &run.error {
        b.push_str(&format!(
            "<p class=\"v-error verdict\">error reading run: {}</p>\n",
            esc(err)
        ));
    }

    b.push_str("<h2>Configuration</h2>\n<table>\n");
    for (k, v) in [
        ("db", &run.db),
        ("workload", &run.workload),
        ("nemesis", &run.nemesis),
        ("isolation", &run.isolation),
        ("date", &run.date),
    ] {
        b.push_str(&format!("<tr><th>{k}</th><td>{}</td></tr>\n", esc(v)));
    }
    if let Some(t) = &run.test {
        if let Some(v) = t.harness_version() {
            b.push_str(&format!(
                "<tr><th>harness</th><td id=\"harness-version\">{}</td></tr>\n",
                esc(&v)
            ));
        }
        let nodes: Vec<&str> = t.nodes.iter().map(|n| n.name.as_str()).collect();
        for (k, v) in [
            ("seed", t.seed.map(|s| s.to_string())),
            ("nodes", (!nodes.is_empty()).then(|| nodes.join(", "))),
            ("end_time", t.end_time.clone()),
            (
                "db_settings",
                (!t.db_settings.is_empty()).then(|| {
                    let kv: Vec<String> = t
                        .db_settings
                        .iter()
                        .map(|(k, v)| format!("{k}={v}"))
                        .collect();
                    kv.join(", ")
                }),
            ),
            (
                "command_line",
                (!t.command_line.is_empty()).then(|| t.command_line.join(", ")),
            ),
        ] {
            if let Some(v) = v {
                b.push_str(&format!("<tr><th>{k}</th><td>{}</td></tr>\n", esc(&v)));
            }
        }
    }
    b.push_str("</table>\n");
    if let Some(t) = &run.test {
        b.push_str(&format!(
            "<details><summary>test.json</summary><pre>{}</pre></details>\n",
            esc(&pretty(&serde_json::to_value(t).unwrap_or_default()))
        ));
    }

    b.push_str("<h2>Verdict</h2>\n");
    b.push_str(&format!("<p>{}", verdict_badge(run.verdict)));
    if !run.not.is_empty() {
        b.push_str(&format!(" — not {}", esc(&run.not.join(", "))));
    }
    if let Some(r) = &run.results
        && !r.also_not.is_empty()
    {
        b.push_str(&format!("; also not {}", esc(&r.also_not.join(", "))));
    }
    b.push_str("</p>\n");
    if let Some(reason) = run.results.as_ref().and_then(|r| r.reason.as_deref()) {
        b.push_str(&format!("<p>reason: {}</p>\n", esc(reason)));
    }
    for w in run.results.iter().flat_map(|r| &r.warnings) {
        b.push_str(&format!("<p class=\"warning\">warning: {}</p>\n", esc(w)));
    }
    b.push_str(&super::soak_section::section(run));

    let elle = run.dir.join("elle");
    if !run.anomaly_types.is_empty() {
        b.push_str("<h2>Anomalies</h2>\n");
        for ty in &run.anomaly_types {
            let found = run
                .results
                .as_ref()
                .and_then(|r| r.counts.get(ty.as_str()))
                .map_or(String::new(), |n| {
                    format!(" <span class=\"muted\">({n} found)</span>")
                });
            b.push_str(&format!("<h3 id=\"{0}\">{0}{found}</h3>\n", esc(ty)));
            let txt = elle.join(format!("{ty}.txt"));
            let text = if is_plain_name(ty) {
                read_text_capped(&run.root, &txt)
            } else {
                None
            };
            match text {
                Some(t) => b.push_str(&format!("<pre class=\"explanation\">{}</pre>\n", esc(&t))),
                None => {
                    // No rendered explanation: show the checker's data (the
                    // first few cases, kept by the digest).
                    if let Some(p) = run
                        .results
                        .as_ref()
                        .and_then(|r| r.previews.get(ty.as_str()))
                    {
                        b.push_str(&format!("<pre class=\"explanation\">{}</pre>\n", esc(p)));
                    }
                }
            }
            if !is_plain_name(ty) {
                continue;
            }
            // Cycle graphs: elle/<type>/<n>.svg (+ .dot).
            let gdir = elle.join(ty);
            if super::runs::resolve_inside(&run.root, &gdir).is_err() {
                continue;
            }
            let mut graphs: Vec<(u64, String)> = fs::read_dir(&gdir)
                .map(|rd| {
                    rd.filter_map(Result::ok)
                        .map(|e| e.file_name().to_string_lossy().into_owned())
                        .filter(|f| f.ends_with(".svg"))
                        .take(MAX_LISTED_FILES)
                        .map(|f| (numeric_stem(&f), f))
                        .collect()
                })
                .unwrap_or_default();
            graphs.sort();
            for (_, f) in graphs {
                let rel = format!("{ty}/{f}");
                let dot = format!("{}.dot", f.trim_end_matches(".svg"));
                b.push_str(&format!(
                    "<div><img class=\"cycle\" alt=\"cycle graph {0}\" src=\"elle/{1}\"><br><a href=\"elle/{1}\">{0}</a>{2}</div>\n",
                    esc(&rel),
                    url_path(&rel),
                    if gdir.join(&dot).is_file() {
                        format!(" · <a href=\"elle/{}\">DOT</a>", url_path(&format!("{ty}/{dot}")))
                    } else {
                        String::new()
                    }
                ));
            }
        }
    }

    if let Some(lost) = run.results.as_ref().and_then(|r| r.lost_writes.as_ref()) {
        b.push_str(&super::lost::section(lost));
    }

    let plots: Vec<String> = ["latency-raw", "latency-quantiles", "rate", "clock-skew"]
        .iter()
        .filter_map(|stem| {
            ["svg", "png"]
                .iter()
                .map(|ext| format!("{stem}.{ext}"))
                .find(|f| is_file_inside(&run.root, &run.dir.join(f)))
        })
        .collect();
    let timeline = is_file_inside(&run.root, &run.dir.join("timeline.html"));
    if !plots.is_empty() || timeline {
        b.push_str("<h2>Performance</h2>\n");
        if timeline {
            b.push_str(&format!(
                "<p><a id=\"timeline\" href=\"timeline.html\">timeline of the transactions</a> \
                 <span class=\"muted\">(a run of more than {} transactions is sampled: every k-th, \
                 plus all in a reported anomaly; the page says what it left out, and \
                 <code>harness analyze --keep timeline</code> draws every one)</span></p>\n",
                engine::report::timeline::MAX_SPANS
            ));
        }
        for p in plots {
            b.push_str(&format!(
                "<div><img class=\"plot\" alt=\"{0}\" src=\"{0}\"></div>\n",
                esc(&p)
            ));
        }
    }

    let files = walk(&run.dir);
    let (nodes, others): (Vec<_>, Vec<_>) =
        files.iter().partition(|(f, _)| f.starts_with("nodes/"));
    if !nodes.is_empty() {
        b.push_str("<h2>Node logs</h2>\n<ul>\n");
        for (f, size) in &nodes {
            b.push_str(&format!(
                "<li><a href=\"{}\">{}</a> <span class=\"muted\">{}</span></li>\n",
                url_path(f),
                esc(f),
                human_size(*size)
            ));
        }
        b.push_str("</ul>\n");
    }
    b.push_str("<h2>Files</h2>\n<ul>\n");
    for (f, size) in &others {
        b.push_str(&format!(
            "<li><a href=\"{}\">{}</a> <span class=\"muted\">{}</span></li>\n",
            url_path(f),
            esc(f),
            human_size(*size)
        ));
    }
    // The history is stored once; these are made from it when asked.
    for (name, what) in [
        ("history.edn", "the history as Jepsen EDN"),
        ("history.jsonl", "the history as plain JSON Lines"),
    ] {
        if fs::symlink_metadata(run.dir.join(name)).is_err()
            && is_file_inside(&run.root, &run.dir.join("history.jsonl.gz"))
        {
            b.push_str(&format!(
                "<li><a href=\"{name}\">{name}</a> <span class=\"muted\">{what}, converted on request</span></li>\n"
            ));
        }
    }
    b.push_str("</ul>\n");
    page(&format!("{} {}", run.name, run.rel), &b)
}

/// A directory listing (for directories that are not runs), at most
/// `MAX_LISTED_FILES` entries.
pub fn listing(rel: &str, dir: &Path) -> String {
    let mut entries: Vec<(String, bool)> = fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(Result::ok)
                .take(MAX_LISTED_FILES)
                .map(|e| {
                    let is_dir = fs::symlink_metadata(e.path()).is_ok_and(|m| m.is_dir());
                    (e.file_name().to_string_lossy().into_owned(), is_dir)
                })
                .collect()
        })
        .unwrap_or_default();
    entries.sort();
    let mut b = format!(
        "<p><a href=\"/\">← all runs</a></p>\n<h1>{}</h1>\n<ul>\n",
        esc(rel)
    );
    for (name, is_dir) in entries {
        let slash = if is_dir { "/" } else { "" };
        b.push_str(&format!(
            "<li><a href=\"{}{slash}\">{}{slash}</a></li>\n",
            url_path(&name),
            esc(&name)
        ));
    }
    b.push_str("</ul>\n");
    page(rel, &b)
}

/// An error page.
pub fn error_page(status: u16, message: &str) -> String {
    page(
        &format!("{status}"),
        &format!(
            "<h1>{status}</h1>\n<p>{}</p>\n<p><a href=\"/\">all runs</a></p>",
            esc(message)
        ),
    )
}

/// Anomaly type names become file names: only plain ones are looked up.
fn is_plain_name(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// `10.svg` → 10, so graphs sort numerically; non-numeric names last.
fn numeric_stem(f: &str) -> u64 {
    f.split('.')
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or(u64::MAX)
}
