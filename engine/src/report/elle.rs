//! The `elle/` directory of a run: `<type>.txt` with the explanation of each
//! anomaly of that type, and `<type>/<n>.dot` + `<type>/<n>.svg` for each
//! cycle (the layout Jepsen's store uses: a text file per class, a directory
//! of graphs per class).
//!
//! Key decision: the SVG comes from Graphviz `dot` when it is installed
//! (bounded by a timeout) and from [`super::graph_svg`] otherwise, so a
//! report never lacks its pictures. The directory is rebuilt from scratch so
//! a re-check never leaves graphs of anomalies it no longer reports.

use super::graph_svg::dot_to_svg;
use anyhow::Context;
use checker::CheckResult;
use std::fs;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};
use store::History;

/// Explanations written per anomaly type at most (`results.json` keeps as
/// many; both count the rest).
const MAX_EXPLAINED_PER_TYPE: usize = super::caps::MAX_ANOMALIES_PER_TYPE;
/// Cycle graphs drawn per anomaly type at most.
const MAX_GRAPHS_PER_TYPE: usize = 20;
/// How long one `dot` run may take before the fallback layout is used.
const DOT_TIMEOUT_MS: u64 = 20_000;

/// Whether to use Graphviz: installed, and not turned off with
/// `HARNESS_GRAPHVIZ=0` (which forces the built-in layout).
fn dot_installed() -> bool {
    static DOT: OnceLock<bool> = OnceLock::new();
    *DOT.get_or_init(|| {
        std::env::var("HARNESS_GRAPHVIZ").map_or(true, |v| v != "0")
            && Command::new("dot")
                .arg("-V")
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success())
    })
}

/// Runs `dot -Tsvg` on `dot_path`; `None` when it fails or times out.
fn graphviz_svg(dot_path: &Path) -> Option<String> {
    if !dot_installed() {
        return None;
    }
    let mut child = Command::new("dot")
        .arg("-Tsvg")
        .arg(dot_path)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let mut out = child.stdout.take()?;
    let reader = std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = std::io::Read::read_to_end(&mut out, &mut buf);
        buf
    });
    let deadline = Instant::now() + Duration::from_millis(DOT_TIMEOUT_MS);
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break Some(s),
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(10)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
        }
    };
    let buf = reader.join().ok()?;
    match status {
        Some(s) if s.success() && !buf.is_empty() => String::from_utf8(buf).ok(),
        _ => None,
    }
}

/// How much of a result [`write`] puts on disk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Explanations per anomaly type in `<type>.txt`.
    pub explained: usize,
    /// Cycle graphs per anomaly type.
    pub graphs: usize,
}

impl Limits {
    /// A run's `elle/`: the caps `results.json` uses, 20 graphs a type.
    pub const RUN: Limits = Limits {
        explained: MAX_EXPLAINED_PER_TYPE,
        graphs: MAX_GRAPHS_PER_TYPE,
    };
    /// `check --directory`: every anomaly the result kept (the result is
    /// already cut to its caps unless `--all-anomalies`).
    pub const KEPT: Limits = Limits {
        explained: usize::MAX,
        graphs: usize::MAX,
    };
}

/// All explanations of one anomaly type, each headed `<type> #<i>`,
/// separated by blank lines (Elle's `<type>.txt`); `check` prints the same
/// text on stdout.
pub fn type_text(
    ty: checker::AnomalyType,
    cases: &[checker::explain::Anomaly],
    history: &History,
) -> String {
    let mut out = String::new();
    for (i, a) in cases.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        out.push_str(&format!("{ty} #{i}\n"));
        let body = checker::explain::render_text(a, history);
        out.push_str(&body);
        if !body.ends_with('\n') {
            out.push('\n');
        }
    }
    out
}

/// Clears `dir` (a run's `elle/`) and writes it anew with [`Limits::RUN`]:
/// a re-check never leaves graphs of anomalies it no longer reports.
///
/// # Errors
/// When the directory cannot be cleared or a file cannot be written.
pub fn rewrite(
    dir: &Path,
    result: &CheckResult,
    counts: &super::caps::AnomalyCounts,
    history: &History,
) -> anyhow::Result<()> {
    if dir.exists() {
        fs::remove_dir_all(dir).with_context(|| format!("clearing {}", dir.display()))?;
    }
    if result.anomalies.is_empty() {
        return Ok(());
    }
    write(dir, result, counts, history, Limits::RUN)
}

/// Writes `<dir>/<type>.txt` per reported type and `<dir>/<type>/<n>.dot` +
/// `.svg` per cycle for `result`, whose lists may have been cut already:
/// `counts` holds how many of each type were found, and each text file
/// ends saying how many were left out. Files already in `dir` are kept
/// (it may be a user's directory); only the ones named here are replaced.
///
/// # Errors
/// When a file cannot be written.
pub fn write(
    dir: &Path,
    result: &CheckResult,
    counts: &super::caps::AnomalyCounts,
    history: &History,
    limits: Limits,
) -> anyhow::Result<()> {
    fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    for (ty, list) in &result.anomalies {
        let name = ty.name();
        let shown = list.len().min(limits.explained);
        let mut text = type_text(*ty, &list[..shown], history);
        let found = counts.found.get(ty).copied().unwrap_or(0).max(list.len());
        if found > shown {
            text.push_str(&format!(
                "\n… and {} more {name} anomalies ({found} found; the first {shown} are explained \
                 here; results.json counts them all under anomaly-counts, and `check \
                 --all-anomalies` explains every one)\n",
                found - shown
            ));
        }
        let txt = dir.join(format!("{name}.txt"));
        fs::write(&txt, text).with_context(|| format!("writing {}", txt.display()))?;
        let graphs: Vec<String> = list
            .iter()
            .take(shown)
            .filter_map(|a| checker::explain::render_dot(a, history))
            .take(limits.graphs)
            .collect();
        if graphs.is_empty() {
            continue;
        }
        let gdir = dir.join(name);
        fs::create_dir_all(&gdir).with_context(|| format!("cannot create {}", gdir.display()))?;
        for (i, dot) in graphs.iter().enumerate() {
            let dot_path = gdir.join(format!("{i}.dot"));
            fs::write(&dot_path, dot).with_context(|| format!("writing {}", dot_path.display()))?;
            let svg = graphviz_svg(&dot_path).unwrap_or_else(|| dot_to_svg(dot));
            let svg_path = gdir.join(format!("{i}.svg"));
            fs::write(&svg_path, svg).with_context(|| format!("writing {}", svg_path.display()))?;
        }
    }
    Ok(())
}
