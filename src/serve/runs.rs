//! Finding runs in the store, opening their files without leaving it, and
//! the small per-run digest the index and run pages are made from.
//!
//! Key decisions: every file is opened through [`open_inside`], which
//! resolves it (symlinks included) and refuses anything that ends up outside
//! the canonical store root, so a symlinked `test.json`, `results.json`,
//! explanation or history never shows what it points at. `results.json` is
//! never held whole: it is read once, streaming, into a [`ResultsDigest`]
//! (verdict, anomaly types with exact counts, `not`/`also-not`, reason and
//! a short preview per type) that the [`Cache`] keeps, keyed by the files'
//! size and modification time, so a request costs a `stat` per run however
//! big the file is. `test.json` is read loosely (`serde_json::Value`) and
//! only up to [`MAX_TEST_JSON_BYTES`]; missing and differently-shaped fields
//! are tolerated, so runs written by older or newer versions still list; a
//! run whose files cannot be read becomes a row carrying the error.

use std::collections::HashMap;
use std::fs::{self, File};
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;
pub use store::run::ResultsDigest;

/// Largest `test.json` read (bytes); a bigger one is an error row.
pub const MAX_TEST_JSON_BYTES: u64 = 4 << 20;

/// Opens `path` for reading only if it resolves (every symlink followed)
/// to a regular file inside `root` (canonical).
///
/// # Errors
/// `PermissionDenied` when it leads out of the store, `InvalidInput` when
/// it is not a regular file, and whatever resolving or opening says.
pub fn open_inside(root: &Path, path: &Path) -> io::Result<(File, fs::Metadata)> {
    let real = resolve_inside(root, path)?;
    use std::os::unix::fs::OpenOptionsExt;
    // The resolved path has no symlinks left: refuse one swapped in since.
    let file = fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&real)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "not a regular file",
        ));
    }
    Ok((file, meta))
}

/// `path` resolved, if that lies inside `root`.
///
/// # Errors
/// `PermissionDenied` when it leads out of the store; resolving errors.
pub fn resolve_inside(root: &Path, path: &Path) -> io::Result<PathBuf> {
    let real = path.canonicalize()?;
    if real.starts_with(root) {
        Ok(real)
    } else {
        Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            "leads outside the store (symlink)",
        ))
    }
}

/// Whether `path` is a regular file inside the store (after symlinks).
pub fn is_file_inside(root: &Path, path: &Path) -> bool {
    resolve_inside(root, path).is_ok_and(|p| p.is_file())
}

/// Reads at most `max` bytes of a file inside the store; the flag says
/// whether there was more.
///
/// # Errors
/// As [`open_inside`], and read errors.
pub fn read_inside_capped(root: &Path, path: &Path, max: u64) -> io::Result<(Vec<u8>, bool)> {
    let (file, meta) = open_inside(root, path)?;
    let mut buf = Vec::with_capacity(usize::try_from(meta.len().min(max)).unwrap_or(0));
    file.take(max).read_to_end(&mut buf)?;
    Ok((buf, meta.len() > max))
}

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

/// Reads `results.json` in one streaming pass (memory: the digest).
///
/// # Errors
/// An unreadable file or malformed JSON, as text for the page.
pub fn digest_results(root: &Path, path: &Path) -> Result<Option<ResultsDigest>, String> {
    let name = || {
        path.file_name()
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned())
    };
    match open_inside(root, path) {
        Ok((file, _)) => {
            let reader = io::BufReader::with_capacity(256 * 1024, file);
            ResultsDigest::from_reader(reader)
                .map(Some)
                .map_err(|e| format!("{}: {e}", name()))
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(format!("{}: {e}", name())),
    }
}

/// One run as listed in the index.
#[derive(Clone, Debug)]
pub struct RunInfo {
    /// Path relative to the store root, `/`-separated (`<test>/<timestamp>`).
    pub rel: String,
    /// The canonical store root.
    pub root: PathBuf,
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
    /// Isolation level asked for, or for a simulator bug mode what ran
    /// (`bug mode lost-update, claims snapshot-isolation`).
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
    /// The harness version that made it (empty when not recorded).
    pub harness_version: String,
    /// `test.json`, parsed (run pages only; the index does not keep it).
    pub test: Option<store::run::RunMeta>,
    /// `results.json`, digested.
    pub results: Option<Arc<ResultsDigest>>,
}

fn read_test_json(root: &Path, path: &Path) -> Result<Option<store::run::RunMeta>, String> {
    match read_inside_capped(root, path, MAX_TEST_JSON_BYTES) {
        Ok((_, true)) => Err(format!(
            "test.json: larger than {} MiB, not read",
            MAX_TEST_JSON_BYTES >> 20
        )),
        Ok((bytes, false)) => store::run::RunMeta::from_json(&bytes)
            .map(Some)
            .map_err(|e| format!("test.json: {e}")),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(format!("test.json: {e}")),
    }
}

/// What identifies a version of a file: size and modification time
/// (`None` when it is missing or cannot be resolved inside the store).
type FileKey = Option<(u64, SystemTime)>;

fn file_key(root: &Path, path: &Path) -> FileKey {
    let real = resolve_inside(root, path).ok()?;
    let m = fs::metadata(real).ok()?;
    Some((m.len(), m.modified().ok()?))
}

/// A run's digest as last computed, and the file versions it came from.
struct Cached {
    key: (FileKey, FileKey),
    info: RunInfo,
}

/// Run digests by run, recomputed only when `test.json` or `results.json`
/// changes. One lock per run, so concurrent requests for a run digest it
/// once and wait for that, while other runs proceed.
#[derive(Default)]
pub struct Cache {
    runs: Mutex<HashMap<String, Arc<Mutex<Option<Cached>>>>>,
}

impl Cache {
    /// The run at `rel`, without its `test.json` value.
    pub fn run(&self, root: &Path, rel: &str) -> RunInfo {
        let dir = root.join(rel);
        let key = (
            file_key(root, &dir.join(store::run::TEST_JSON)),
            file_key(root, &dir.join(store::run::RESULTS_JSON)),
        );
        let slot = {
            let mut runs = self
                .runs
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            Arc::clone(runs.entry(rel.to_string()).or_default())
        };
        let mut slot = slot
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(c) = slot.as_ref()
            && c.key == key
        {
            return c.info.clone();
        }
        let mut info = read_run(root, rel);
        info.test = None;
        *slot = Some(Cached {
            key,
            info: info.clone(),
        });
        info
    }

    /// Forgets runs not in `rels` (deleted from the store).
    pub fn retain(&self, rels: &[String]) {
        let keep: std::collections::HashSet<&str> = rels.iter().map(String::as_str).collect();
        self.runs
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .retain(|k, _| keep.contains(k.as_str()));
    }

    /// How many runs it holds (for tests).
    #[cfg(test)]
    fn len(&self) -> usize {
        self.runs
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .len()
    }
}

/// Reads one run directory. Never fails: problems become `error`.
pub fn read_run(root: &Path, rel: &str) -> RunInfo {
    let dir = root.join(rel);
    let dir_name = rel.rsplit('/').next().unwrap_or(rel).to_string();
    let test_dir = rel.split('/').next().unwrap_or(rel).to_string();
    let mut info = RunInfo {
        rel: rel.to_string(),
        root: root.to_path_buf(),
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
        harness_version: String::new(),
        test: None,
        results: None,
    };
    let mut errors = Vec::new();
    match read_test_json(root, &dir.join("test.json")) {
        Ok(Some(t)) => {
            if let Some(name) = t.test_name() {
                info.name = name;
            }
            info.db = t.db().unwrap_or_default();
            // Canonical names of the one vocabulary (`append` → list-append);
            // a name it does not know is shown as recorded.
            info.workload = t
                .workload()
                .map(|w| workloads::WorkloadKind::parse(&w).map_or(w, |k| k.name().to_string()))
                .unwrap_or_default();
            info.nemesis = t.nemesis().unwrap_or_default();
            info.isolation = isolation(&t);
            info.harness_version = t.harness_version().unwrap_or_default();
            if let Some(date) = t.started() {
                info.date = date;
            }
            info.test = Some(t);
        }
        Ok(None) => errors.push("test.json missing".to_string()),
        Err(e) => errors.push(e),
    }
    match digest_results(root, &dir.join("results.json")) {
        Ok(Some(r)) => {
            info.verdict = match r.valid {
                Some(store::run::Verdict::True) => Verdict::Valid,
                Some(store::run::Verdict::False) => Verdict::Invalid,
                Some(store::run::Verdict::Unknown) => Verdict::Unknown,
                None => {
                    errors.push("results.json: no valid? field".to_string());
                    Verdict::Error
                }
            };
            info.anomaly_types = r.anomaly_types.clone();
            info.not = r.not.clone();
            info.results = Some(Arc::new(r));
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

/// A run's `test.json` (capped at [`MAX_TEST_JSON_BYTES`]), for its page;
/// `None` when missing or unreadable (the digest carries the error).
pub fn read_run_test(root: &Path, rel: &str) -> Option<store::run::RunMeta> {
    read_test_json(root, &root.join(rel).join("test.json"))
        .ok()
        .flatten()
}

/// What ran: the isolation level asked for, or for a simulator bug mode
/// (`config.sim_bug`, which replaces the level) the bug and the model it
/// claims (the one the run was checked against).
fn isolation(t: &store::run::RunMeta) -> String {
    let Some(bug) = t.sim_bug() else {
        return t.isolation().unwrap_or_default();
    };
    let claims = t.expected_model().unwrap_or_default();
    if claims.is_empty() {
        format!("bug mode {bug}")
    } else {
        format!("bug mode {bug}, claims {claims}")
    }
}

fn is_real_dir(p: &Path) -> bool {
    fs::symlink_metadata(p).is_ok_and(|m| m.is_dir())
}

/// The files whose presence makes a directory a run.
pub const RUN_FILES: [&str; 4] = [
    "test.json",
    "results.json",
    "history.jsonl",
    "history.jsonl.gz",
];

fn looks_like_run(p: &Path) -> bool {
    RUN_FILES
        .iter()
        .any(|f| fs::symlink_metadata(p.join(f)).is_ok())
}

/// The runs under `root` (`<test>/<timestamp>/`, or a run directly at
/// `<dir>/`), newest first, as relative paths. Symlinked directories
/// (`latest`) are skipped.
///
/// # Errors
/// When `root` itself cannot be read.
pub fn list_rels(root: &Path) -> io::Result<Vec<String>> {
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
    // Timestamps sort lexically; newest first, then by name.
    rels.sort_by(|a, b| {
        let ka = a.rsplit('/').next().unwrap_or("");
        let kb = b.rsplit('/').next().unwrap_or("");
        kb.cmp(ka).then_with(|| a.cmp(b))
    });
    Ok(rels)
}

/// All runs under `root`, newest first, from `cache`.
///
/// # Errors
/// When `root` itself cannot be read.
pub fn list_runs(root: &Path, cache: &Cache) -> io::Result<Vec<RunInfo>> {
    let rels = list_rels(root)?;
    cache.retain(&rels);
    Ok(rels.iter().map(|r| cache.run(root, r)).collect())
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    #[test]
    fn sim_bug_runs_show_the_bug_and_the_claimed_model() {
        let t = serde_json::json!({"config": {"isolation": "serializable", "sim_bug": "lost-update",
            "expected_consistency_model": "snapshot-isolation"}});
        assert_eq!(
            isolation(&meta(t.clone())),
            "bug mode lost-update, claims snapshot-isolation"
        );
        let t = serde_json::json!({"config": {"isolation": "serializable", "sim_bug": null}});
        assert_eq!(isolation(&meta(t.clone())), "serializable");
    }

    fn meta(v: serde_json::Value) -> store::run::RunMeta {
        serde_json::from_value(v).unwrap_or_default()
    }

    #[test]
    fn the_harness_version_is_read_from_either_shape() {
        let t = serde_json::json!({"harness": {"version": "0.1.0", "commit": "abc1234"}});
        assert_eq!(
            meta(t).harness_version().as_deref(),
            Some("0.1.0 (abc1234)")
        );
        let t = serde_json::json!({"harness_version": "0.0.9"});
        assert_eq!(meta(t).harness_version().as_deref(), Some("0.0.9"));
        assert_eq!(meta(serde_json::json!({})).harness_version(), None);
    }

    #[test]
    fn the_cache_digests_a_run_once_per_version_of_its_files() -> io::Result<()> {
        let dir = tempfile::tempdir()?;
        let root = dir.path().canonicalize()?;
        let run = root.join("t/20260101T000000.000");
        fs::create_dir_all(&run)?;
        fs::write(run.join("test.json"), r#"{"name":"t"}"#)?;
        fs::write(run.join("results.json"), r#"{"valid?":true}"#)?;
        let cache = Cache::default();
        let runs = list_runs(&root, &cache)?;
        assert_eq!(runs.len(), 1);
        assert_eq!(runs[0].verdict, Verdict::Valid);
        assert!(runs[0].test.is_none(), "the index keeps no test.json");
        // A changed results.json (another size) is read again.
        fs::write(
            run.join("results.json"),
            r#"{"valid?":false,"anomaly-types":["G0"]}"#,
        )?;
        let runs = list_runs(&root, &cache)?;
        assert_eq!(runs[0].verdict, Verdict::Invalid);
        assert_eq!(runs[0].anomaly_types, ["G0"]);
        // A deleted run is forgotten.
        fs::remove_dir_all(root.join("t"))?;
        assert!(list_runs(&root, &cache)?.is_empty());
        assert_eq!(cache.len(), 0);
        Ok(())
    }

    #[test]
    fn files_behind_symlinks_out_of_the_store_are_not_opened() -> io::Result<()> {
        let outside = tempfile::tempdir()?;
        let secret = outside.path().join("secret.json");
        fs::write(&secret, r#"{"name":"SECRET"}"#)?;
        let dir = tempfile::tempdir()?;
        let root = dir.path().canonicalize()?;
        let run = root.join("t/r");
        fs::create_dir_all(&run)?;
        std::os::unix::fs::symlink(&secret, run.join("test.json"))?;
        fs::write(run.join("inside.json"), "{}")?;
        std::os::unix::fs::symlink(run.join("inside.json"), run.join("alias.json"))?;
        let err = open_inside(&root, &run.join("test.json")).err();
        assert_eq!(err.map(|e| e.kind()), Some(io::ErrorKind::PermissionDenied));
        assert!(
            open_inside(&root, &run.join("alias.json")).is_ok(),
            "links inside are fine"
        );
        let info = read_run(&root, "t/r");
        assert_eq!(info.verdict, Verdict::Error);
        assert!(
            info.error
                .as_deref()
                .is_some_and(|e| e.contains("outside the store"))
        );
        assert_ne!(info.name, "SECRET");
        Ok(())
    }
}
