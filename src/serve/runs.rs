//! Finding runs in the store and reading their metadata loosely.
//!
//! Key decision: `test.json` and `results.json` are read as loose JSON
//! (`serde_json::Value`), tolerating missing and differently-shaped fields,
//! so runs written by older or newer harness versions still list; a run
//! whose files cannot be parsed becomes a row carrying the error.

use serde_json::Value;
use std::fs;
use std::path::{Path, PathBuf};

/// The verdict of a run, from `results.json`'s `valid?`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// `valid?` true.
    Valid,
    /// `valid?` false.
    Invalid,
    /// `valid?` "unknown".
    Unknown,
    /// No `results.json` (still running, or crashed before checking).
    NoResult,
    /// A file could not be read or parsed.
    Error,
}

impl Verdict {
    /// Label shown in the UI.
    pub fn label(self) -> &'static str {
        match self {
            Verdict::Valid => "valid",
            Verdict::Invalid => "invalid",
            Verdict::Unknown => "unknown",
            Verdict::NoResult => "no result",
            Verdict::Error => "error",
        }
    }

    /// CSS class.
    pub fn class(self) -> &'static str {
        match self {
            Verdict::Valid => "v-valid",
            Verdict::Invalid => "v-invalid",
            Verdict::Unknown => "v-unknown",
            Verdict::NoResult => "v-none",
            Verdict::Error => "v-error",
        }
    }
}

/// One run as listed in the index.
#[derive(Clone, Debug)]
pub struct RunInfo {
    /// Path relative to the store root, `/`-separated (`<test>/<timestamp>`).
    pub rel: String,
    /// Absolute directory.
    pub dir: PathBuf,
    /// Test name.
    pub name: String,
    /// Database.
    pub db: String,
    /// Workload.
    pub workload: String,
    /// Nemesis.
    pub nemesis: String,
    /// Isolation level asked for.
    pub isolation: String,
    /// Start time (as written), or the directory's timestamp.
    pub date: String,
    /// Verdict.
    pub verdict: Verdict,
    /// Anomaly types found.
    pub anomaly_types: Vec<String>,
    /// Models ruled out (`not`).
    pub not: Vec<String>,
    /// What went wrong reading this run, if anything.
    pub error: Option<String>,
    /// `test.json`, parsed.
    pub test: Option<Value>,
    /// `results.json`, parsed.
    pub results: Option<Value>,
}

/// A short display string for a loose JSON value.
pub fn show(v: &Value) -> String {
    match v {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::Array(a) => a.iter().map(show).collect::<Vec<_>>().join(", "),
        Value::Object(o) => {
            for k in ["name", "kind", "type"] {
                if let Some(Value::String(s)) = o.get(k) {
                    return s.clone();
                }
            }
            v.to_string()
        }
    }
}

fn field<'a>(v: &'a Value, path: &[&str]) -> Option<&'a Value> {
    let mut cur = v;
    for p in path {
        cur = cur.get(p)?;
    }
    (!cur.is_null()).then_some(cur)
}

/// The first of several places a field may live, as display text.
fn first(v: &Value, paths: &[&[&str]]) -> String {
    paths
        .iter()
        .find_map(|p| field(v, p))
        .map(show)
        .unwrap_or_default()
}

fn read_json(path: &Path) -> Result<Option<Value>, String> {
    match fs::read(path) {
        Ok(bytes) => serde_json::from_slice(&bytes).map(Some).map_err(|e| {
            format!(
                "{}: {e}",
                path.file_name()
                    .map_or_else(String::new, |n| n.to_string_lossy().into_owned())
            )
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(format!("{}: {e}", path.display())),
    }
}

fn names(v: Option<&Value>) -> Vec<String> {
    match v {
        Some(Value::Array(a)) => a.iter().map(show).collect(),
        Some(Value::Object(o)) => o.keys().cloned().collect(),
        _ => Vec::new(),
    }
}

/// Reads one run directory. Never fails: problems become `error`.
pub fn read_run(root: &Path, rel: &str) -> RunInfo {
    let dir = root.join(rel);
    let dir_name = rel.rsplit('/').next().unwrap_or(rel).to_string();
    let test_dir = rel.split('/').next().unwrap_or(rel).to_string();
    let mut info = RunInfo {
        rel: rel.to_string(),
        dir: dir.clone(),
        name: test_dir,
        db: String::new(),
        workload: String::new(),
        nemesis: String::new(),
        isolation: String::new(),
        date: dir_name,
        verdict: Verdict::NoResult,
        anomaly_types: Vec::new(),
        not: Vec::new(),
        error: None,
        test: None,
        results: None,
    };
    let mut errors = Vec::new();
    match read_json(&dir.join("test.json")) {
        Ok(Some(t)) => {
            if !t.is_object() {
                errors.push("test.json: not a JSON object".to_string());
            } else {
                let name = first(
                    &t,
                    &[
                        &["test_name"],
                        &["name"],
                        &["config", "test_name"],
                        &["config", "name"],
                    ],
                );
                if !name.is_empty() {
                    info.name = name;
                }
                info.db = first(&t, &[&["config", "db"], &["db"]]);
                info.workload = first(&t, &[&["config", "workload"], &["workload"]]);
                info.nemesis = first(&t, &[&["config", "nemesis"], &["nemesis"]]);
                info.isolation = first(&t, &[&["config", "isolation"], &["isolation"]]);
                let date = first(&t, &[&["start_time"], &["start-time"], &["started_at"]]);
                if !date.is_empty() {
                    info.date = date;
                }
            }
            info.test = Some(t);
        }
        Ok(None) => errors.push("test.json missing".to_string()),
        Err(e) => errors.push(e),
    }
    match read_json(&dir.join("results.json")) {
        Ok(Some(r)) => {
            let valid = r.get("valid?").or_else(|| r.get("valid"));
            info.verdict = match valid {
                Some(Value::Bool(true)) => Verdict::Valid,
                Some(Value::Bool(false)) => Verdict::Invalid,
                Some(Value::String(s)) if s.trim_start_matches(':') == "unknown" => {
                    Verdict::Unknown
                }
                _ => {
                    errors.push("results.json: no valid? field".to_string());
                    Verdict::Error
                }
            };
            info.anomaly_types = names(r.get("anomaly-types").or_else(|| r.get("anomaly_types")));
            if info.anomaly_types.is_empty() {
                info.anomaly_types = names(r.get("anomalies"));
            }
            info.not = names(r.get("not"));
            info.results = Some(r);
        }
        Ok(None) => {}
        Err(e) => errors.push(e),
    }
    if !errors.is_empty() {
        info.verdict = Verdict::Error;
        info.error = Some(errors.join("; "));
    }
    info
}

fn is_real_dir(p: &Path) -> bool {
    fs::symlink_metadata(p).is_ok_and(|m| m.is_dir())
}

fn looks_like_run(p: &Path) -> bool {
    [
        "test.json",
        "results.json",
        "history.jsonl",
        "history.jsonl.gz",
    ]
    .iter()
    .any(|f| p.join(f).exists())
}

/// All runs under `root` (`<test>/<timestamp>/`, or a run directly at
/// `<dir>/`), newest first. Symlinks (`latest`) are skipped.
///
/// # Errors
/// When `root` itself cannot be read.
pub fn list_runs(root: &Path) -> std::io::Result<Vec<RunInfo>> {
    let mut rels = Vec::new();
    let mut tests: Vec<_> = fs::read_dir(root)?.filter_map(Result::ok).collect();
    tests.sort_by_key(|e| e.file_name());
    for t in tests {
        let tpath = t.path();
        let tname = t.file_name().to_string_lossy().into_owned();
        if tname.starts_with('.') || !is_real_dir(&tpath) {
            continue;
        }
        if looks_like_run(&tpath) {
            rels.push(tname);
            continue;
        }
        let Ok(entries) = fs::read_dir(&tpath) else {
            continue;
        };
        for e in entries.filter_map(Result::ok) {
            let name = e.file_name().to_string_lossy().into_owned();
            if name.starts_with('.') || !is_real_dir(&e.path()) {
                continue;
            }
            rels.push(format!("{tname}/{name}"));
        }
    }
    let mut runs: Vec<RunInfo> = rels.iter().map(|r| read_run(root, r)).collect();
    // Timestamps sort lexically; newest first, then by name.
    runs.sort_by(|a, b| {
        let ka = a.rel.rsplit('/').next().unwrap_or("");
        let kb = b.rel.rsplit('/').next().unwrap_or("");
        kb.cmp(ka).then_with(|| a.rel.cmp(&b.rel))
    });
    Ok(runs)
}
