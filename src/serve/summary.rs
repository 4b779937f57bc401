//! What a run page says first, in plain words ("what happened"), and the
//! index's per-run figures: transactions, duration, faults in force, lost
//! acknowledged writes. Everything comes from the run's digest
//! (`results.json` `stats`, `lost-writes`, `warnings`, checker timings) and
//! `test.json`; every value is escaped.

use super::runs::{RunInfo, Verdict};
use engine::report::html_escape as esc;
use store::run::RunStats;

/// Client operations of a run: (invoked, ok, fail, info).
pub fn transactions(stats: &RunStats) -> (u64, u64, u64, u64) {
    stats.counts.values().fold((0, 0, 0, 0), |a, c| {
        (a.0 + c.invoke, a.1 + c.ok, a.2 + c.fail, a.3 + c.info)
    })
}

/// One fault package's windows.
#[derive(Debug, PartialEq)]
pub struct FaultSummary {
    /// The fault (`kill`, `pause`, …).
    pub fault: String,
    /// Windows in force.
    pub windows: usize,
    /// Seconds in force, summed over windows (open ones to the run's end).
    pub seconds: f64,
    /// Targets named by the windows, in first-seen order.
    pub targets: Vec<String>,
    /// Windows never healed.
    pub open: usize,
}

/// The fault windows of `stats`, per fault, in first-seen order.
pub fn faults(stats: &RunStats) -> Vec<FaultSummary> {
    let end = stats.throughput.duration_s;
    let mut out: Vec<FaultSummary> = Vec::new();
    for w in &stats.fault_windows {
        let i = match out.iter().position(|f| f.fault == w.fault) {
            Some(i) => i,
            None => {
                out.push(FaultSummary {
                    fault: w.fault.clone(),
                    windows: 0,
                    seconds: 0.0,
                    targets: Vec::new(),
                    open: 0,
                });
                out.len() - 1
            }
        };
        let f = &mut out[i];
        f.windows += 1;
        f.seconds += (w.end_s.unwrap_or(end) - w.start_s).max(0.0);
        if w.end_s.is_none() {
            f.open += 1;
        }
        for t in &w.targets {
            if !f.targets.contains(t) && f.targets.len() < 16 {
                f.targets.push(t.clone());
            }
        }
    }
    // The plots' lane order; other faults after, by name.
    const ORDER: [&str; 6] = ["partition", "kill", "pause", "clock", "loss", "membership"];
    let rank = |f: &str| ORDER.iter().position(|o| *o == f).unwrap_or(ORDER.len());
    out.sort_by(|a, b| {
        rank(&a.fault)
            .cmp(&rank(&b.fault))
            .then_with(|| a.fault.cmp(&b.fault))
    });
    out
}

/// "transactions" when every client op is a `txn`, else "operations".
pub fn ops_word(stats: &RunStats) -> &'static str {
    if !stats.counts.is_empty() && stats.counts.keys().all(|f| f == "txn") {
        "transactions"
    } else {
        "operations"
    }
}

pub use engine::console::thousands;

/// A duration in seconds, to a sensible precision.
pub fn secs(s: f64) -> String {
    if s >= 100.0 {
        format!("{s:.0} s")
    } else if s >= 1.0 {
        format!("{s:.1} s")
    } else {
        format!("{:.0} ms", s * 1000.0)
    }
}

/// The index's "faults in force" cell: `kill×3 pause×2`, `none`, or
/// empty when the run has no stats.
pub fn faults_cell(run: &RunInfo) -> String {
    let Some(st) = run.results.as_ref().and_then(|r| r.stats.as_ref()) else {
        return String::new();
    };
    let f = faults(st);
    if f.is_empty() {
        return "none".to_string();
    }
    f.iter()
        .map(|f| format!("{}×{}", f.fault, f.windows))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The number of lost acknowledged writes, when the run checked for them.
pub fn lost_count(run: &RunInfo) -> Option<u64> {
    run.results
        .as_ref()
        .and_then(|r| r.lost_writes.as_ref())
        .and_then(|l| l["count"].as_u64())
}

/// A command line as one shell line, each word quoted when it must be.
pub fn shell_line(words: &[String]) -> String {
    words
        .iter()
        .map(|w| {
            let plain = !w.is_empty()
                && w.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"-_./=:,@%+".contains(&b));
            if plain {
                w.clone()
            } else {
                format!("'{}'", w.replace('\'', r"'\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// At most `n` names, then "and K more".
fn some(names: &[String], n: usize) -> String {
    if names.len() <= n {
        return names.join(", ");
    }
    format!("{} and {} more", names[..n].join(", "), names.len() - n)
}

/// The "What happened" section at the top of a run page.
pub fn what_happened(run: &RunInfo) -> String {
    let mut items: Vec<String> = Vec::new();
    let test = run.test.as_ref();
    let results = run.results.as_deref();
    // Verdict, and what was checked against what.
    let expected = test
        .and_then(|t| t.expected_model())
        .filter(|m| !m.is_empty())
        .or_else(|| test.and_then(|t| t.isolation()))
        .unwrap_or_default();
    let verdict = match run.verdict {
        Verdict::Valid => "<b>Valid</b>: the checker found no anomaly.".to_string(),
        Verdict::Invalid => {
            let found: Vec<String> = run
                .anomaly_types
                .iter()
                .map(|t| match results.and_then(|r| r.counts.get(t.as_str())) {
                    Some(n) => format!("{t} ×{n}"),
                    None => t.clone(),
                })
                .collect();
            let mut s = format!(
                "<b>Invalid</b>: the checker found {}.",
                esc(&some(&found, 6))
            );
            if !run.not.is_empty() {
                s.push_str(&format!(" The history is not {}.", esc(&some(&run.not, 4))));
            }
            s
        }
        Verdict::Unknown => format!(
            "<b>Unknown</b>: the checker could not decide{}.",
            results
                .and_then(|r| r.reason.as_deref())
                .map_or(String::new(), |r| format!(" ({})", esc(r)))
        ),
        Verdict::NoResult => format!(
            "<b>No result</b>: this run has no <code>results.json</code>, so its history was never \
             checked — the run was interrupted or killed before checking, or is still running. \
             To check what it recorded: <code id=\"analyze-hint\">harness analyze {}</code>",
            esc(&shell_line(&[run.dir.display().to_string()]))
        ),
        Verdict::Error => "<b>Error</b>: the run's files could not be read (below).".to_string(),
    };
    items.push(verdict);
    if let Some(st) = results.and_then(|r| r.stats.as_ref()) {
        let (n, ok, fail, info) = transactions(st);
        let mut s = format!(
            "Checked {} {} ({} ok, {} failed, {} with unknown outcome)",
            thousands(n),
            ops_word(st),
            thousands(ok),
            thousands(fail),
            thousands(info)
        );
        if !run.workload.is_empty() {
            s.push_str(&format!(" of <b>{}</b>", esc(&run.workload)));
        }
        if !run.db.is_empty() {
            s.push_str(&format!(" on <b>{}</b>", esc(&run.db)));
        }
        if !expected.is_empty() {
            s.push_str(&format!(" against <b>{}</b>", esc(&expected)));
        }
        s.push_str(&format!(
            "; the run took {}",
            secs(st.throughput.duration_s)
        ));
        if let Some(c) = results.and_then(|r| r.checker_seconds) {
            s.push_str(&format!(", the check {}", secs(c)));
        }
        s.push('.');
        items.push(s);
        items.push(faults_sentence(run, st));
    }
    if let Some(n) = lost_count(run) {
        items.push(if n == 0 {
            "No acknowledged write was lost.".to_string()
        } else {
            format!(
                "<b>{} acknowledged write{} lost</b> (<a href=\"#lost-writes\">below</a>).",
                thousands(n),
                if n == 1 { " was" } else { "s were" }
            )
        });
    }
    // A clock fault mode harsher than a real machine is said on the page.
    if let Some(detail) = test
        .filter(|t| t.config.extra.get("clock_mode").and_then(|m| m.as_str()) == Some("fake"))
        .and_then(|t| t.config.extra.get("clock_mode_detail"))
        .and_then(|d| d.as_str())
    {
        items.push(format!(
            "<b>Clock faults harsher than a real machine</b>: {}.",
            esc(detail)
        ));
    }
    for w in results.map(|r| r.warnings.as_slice()).unwrap_or_default() {
        items.push(format!("<b>Warning</b>: {}", esc(w)));
    }
    let mut b = String::from("<h2>What happened</h2>\n<ul id=\"what-happened\">\n");
    for i in items {
        b.push_str(&format!("<li>{i}</li>\n"));
    }
    b.push_str("</ul>\n");
    b
}

/// A small square in the fault's colour, as in the plots' lanes and the
/// timeline (nothing for a fault those do not draw).
fn swatch(fault: &str) -> String {
    use engine::report::spans::FaultKind;
    FaultKind::ALL
        .iter()
        .find(|k| k.name() == fault)
        .map_or(String::new(), |k| {
            let (r, g, b) = k.rgb();
            format!("<span class=\"swatch\" style=\"background:rgb({r},{g},{b})\"></span>")
        })
}

fn faults_sentence(run: &RunInfo, st: &RunStats) -> String {
    let f = faults(st);
    let asked = run.nemesis.trim();
    if f.is_empty() {
        return if asked.is_empty() || asked == "none" {
            "No fault was injected.".to_string()
        } else {
            format!(
                "<b>No fault took effect</b> (nemesis asked for: {}).",
                esc(asked)
            )
        };
    }
    let parts: Vec<String> = f
        .iter()
        .map(|f| {
            let mut s = format!(
                "{}<b>{}</b> {} window{}, {} in force",
                swatch(&f.fault),
                esc(&f.fault),
                f.windows,
                if f.windows == 1 { "" } else { "s" },
                secs(f.seconds)
            );
            if !f.targets.is_empty() {
                s.push_str(&format!(" on {}", esc(&f.targets.join(", "))));
            }
            if f.open > 0 {
                s.push_str(&format!(" ({} never healed)", f.open));
            }
            s
        })
        .collect();
    let mut s = format!("Faults that took effect: {}.", parts.join("; "));
    if st.fault_windows_omitted > 0 {
        s.push_str(&format!(
            " ({} more windows not recorded.)",
            st.fault_windows_omitted
        ));
    }
    s
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn shell_lines_quote_what_the_shell_would_split() {
        let w = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            shell_line(&w(&["harness", "run", "--nemesis", "kill,pause"])),
            "harness run --nemesis kill,pause"
        );
        assert_eq!(shell_line(&w(&["a b", "it's", ""])), r"'a b' 'it'\''s' ''");
    }

    #[test]
    fn a_clock_mode_harsher_than_a_machine_is_said_on_the_page() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("t/2026-12-06T00-00-00");
        std::fs::create_dir_all(&dir).unwrap();
        let test = |mode: &str| {
            serde_json::json!({
                "name": "t",
                "config": {"clock_mode": mode, "clock_mode_detail": format!("{mode} detail")},
            })
            .to_string()
        };
        std::fs::write(dir.join("test.json"), test("fake")).unwrap();
        let page = what_happened(&super::super::runs::read_run(
            root.path(),
            "t/2026-12-06T00-00-00",
        ));
        assert!(
            page.contains("harsher than a real machine</b>: fake detail"),
            "{page}"
        );
        std::fs::write(dir.join("test.json"), test("real")).unwrap();
        let page = what_happened(&super::super::runs::read_run(
            root.path(),
            "t/2026-12-06T00-00-00",
        ));
        assert!(!page.contains("harsher"), "{page}");
    }

    #[test]
    fn numbers_read_as_a_person_writes_them() {
        assert_eq!(thousands(587071), "587,071");
        assert_eq!(thousands(999), "999");
        assert_eq!(secs(30.04), "30.0 s");
        assert_eq!(secs(0.25), "250 ms");
    }

    #[test]
    fn faults_are_summed_per_package() {
        let st: RunStats = serde_json::from_value(serde_json::json!({
            "throughput": {"duration-s": 10.0},
            "fault-windows": [
                {"fault": "kill", "start-s": 1.0, "end-s": 3.0, "targets": ["n1"]},
                {"fault": "pause", "start-s": 2.0, "end-s": 2.5},
                {"fault": "kill", "start-s": 5.0, "end-s": null, "targets": ["n2"]},
            ]
        }))
        .unwrap_or_default();
        let f = faults(&st);
        assert_eq!(f.len(), 2);
        assert_eq!(f[0].fault, "kill");
        assert_eq!(f[1].fault, "pause");
        assert_eq!(f[0].windows, 2);
        assert_eq!(f[0].seconds, 7.0);
        assert_eq!(f[0].targets, ["n1", "n2"]);
        assert_eq!(f[0].open, 1);
        assert_eq!(f[1].seconds, 0.5);
    }
}
