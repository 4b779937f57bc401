//! The run store on disk and the durable, append-only history log.
//!
//! Layout: `<store_root>/runs/<test-name>/<YYYYMMDDTHHMMSS.mmm>/` (UTC), and
//! `<store_root>/runs/latest` → `<test-name>/<timestamp>` (relative symlink,
//! replaced atomically by renaming a fresh link over it).
//!
//! Key decision: [`HistoryLog::append`] hands each op to the OS before it
//! returns (no userspace buffer outlives the call), so a crash of the
//! harness loses nothing that `append` returned for. The runner batches
//! instead: [`HistoryLog::push`] keeps the line in a buffer that
//! [`HistoryLog::flush`] hands over in one piece, and the runner flushes
//! before any request can follow from a pushed line (a crash in between
//! loses only completions, whose invocations then read as indeterminate).
//! "Hands to the OS" is a copy into the file's shared mapping
//! (`mapped.rs`: no system call on a transaction's critical path), or one
//! `write(2)` where the filesystem cannot reserve space ahead. A
//! background thread `fdatasync`s the file about once a second while there
//! is unsynced data, and [`HistoryLog::finish`] syncs at the end, so a machine
//! crash loses at most about a second. A crash mid-copy leaves a torn last
//! line, and a killed run's mapped log ends in NUL padding; the readers
//! report both as warnings.
//!
//! What a run *is* — `test.json` and `results.json` — is typed in
//! `run/record.rs` ([`RunMeta`], [`RunResults`]); the statistics of
//! `results.json` are computed in `run/stats.rs` ([`RunStats`]); a bounded
//! streaming digest of it for long-lived readers is `run/digest.rs`
//! ([`ResultsDigest`]).

mod digest;
pub mod faults;
mod record;
mod soak_tag;
mod stats;

pub use digest::ResultsDigest;
pub use record::{
    CheckerTiming, HarnessBuild, META_FORMAT, NodeMeta, RESULTS_FORMAT, RecordError, RunConfig,
    RunMeta, RunResults, Verdict,
};
pub use soak_tag::{SOAK_JSON, SoakTag};
pub use stats::{FaultWindow, Latency, OpCounts, RunStats, Throughput};

use crate::format;
use crate::history::{Op, OpIndex};
use crate::mapped::MappedAppend;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Seek, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The file name of a run's [`RunMeta`].
pub const TEST_JSON: &str = "test.json";
/// The file name of a run's [`RunResults`].
pub const RESULTS_JSON: &str = "results.json";

/// The gzip level of a finished run's `history.jsonl.gz`.
pub const HISTORY_GZIP_LEVEL: u32 = 6;

/// How often unsynced history data is fsync'd.
pub const SYNC_INTERVAL_MS: u64 = 1000;

/// A failure of the run store.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// A filesystem operation failed. The cause is part of the message and
    /// deliberately not a `source()`: an error chain printed whole
    /// (`{:#}`) would say it twice ("No space left on device (os error
    /// 28): No space left on device (os error 28)").
    #[error("cannot {op} {}: {cause}", path.display())]
    Io {
        /// What was done to it: `create`, `open`, `read`, `write`, …
        op: &'static str,
        /// The file or directory.
        path: PathBuf,
        /// The cause.
        cause: io::Error,
    },
    /// A test name that cannot be a directory name.
    #[error("invalid test name {0:?}: use letters, digits, `-`, `_`, `.`; not `latest`")]
    InvalidTestName(String),
    /// `RunDir::open` on something that is not a directory.
    #[error("{}: not a run directory", .0.display())]
    NotARunDir(PathBuf),
    /// The background fsync failed; data since the last good sync may not be durable.
    #[error("{}: background fsync failed: {message}", path.display())]
    Sync {
        /// The log file.
        path: PathBuf,
        /// The OS error.
        message: String,
    },
}

fn io_err<'a>(op: &'static str, path: &'a Path) -> impl FnOnce(io::Error) -> RunError + 'a {
    move |cause| RunError::Io {
        op,
        path: path.to_path_buf(),
        cause,
    }
}

/// One run's directory.
///
/// A directory made by [`RunDir::create`] is locked (`flock` on the
/// directory) for as long as any clone of it lives: a later run's sweep of
/// stale temporary files leaves a live run's alone.
#[derive(Debug, Clone)]
pub struct RunDir {
    path: PathBuf,
    _lock: Option<Arc<File>>,
}

/// The suffix of every file written whole and renamed into place.
pub const TMP_SUFFIX: &str = ".tmp";

/// Removes the `*.tmp` files of `dir` and of its `elle/` (what a killed
/// writer leaves: a half-compressed `history.jsonl.gz.tmp`, a
/// `results.json.tmp`). Returns the paths removed.
pub fn remove_tmp_files(dir: &Path) -> Vec<PathBuf> {
    let mut removed = Vec::new();
    for d in [dir.to_path_buf(), dir.join("elle")] {
        let Ok(rd) = fs::read_dir(&d) else { continue };
        for e in rd.flatten() {
            let is_tmp = e
                .file_name()
                .to_str()
                .is_some_and(|n| n.ends_with(TMP_SUFFIX));
            if is_tmp
                && e.file_type().is_ok_and(|t| t.is_file())
                && fs::remove_file(e.path()).is_ok()
            {
                removed.push(e.path());
            }
        }
    }
    removed
}

/// Removes stale `*.tmp` files from every run directory under
/// `<store_root>/runs/` that no live run holds (see [`RunDir`]): what a run
/// killed mid-write left behind. Returns the paths removed.
pub fn sweep_stale_tmp(store_root: &Path) -> Vec<PathBuf> {
    let mut removed = Vec::new();
    let Ok(tests) = fs::read_dir(store_root.join("runs")) else {
        return removed;
    };
    for t in tests.flatten() {
        // Not `latest` (a symlink) nor the `.latest.*` being renamed.
        if !t.file_type().is_ok_and(|ft| ft.is_dir()) {
            continue;
        }
        let Ok(runs) = fs::read_dir(t.path()) else {
            continue;
        };
        for r in runs.flatten() {
            if !r.file_type().is_ok_and(|ft| ft.is_dir()) {
                continue;
            }
            let Ok(dir) = File::open(r.path()) else {
                continue;
            };
            // Held by a live run (this process's or another's): leave it.
            if dir.try_lock().is_err() {
                continue;
            }
            removed.extend(remove_tmp_files(&r.path()));
            let _ = dir.unlock();
        }
    }
    removed
}

/// Days since 1970-01-01 → (year, month, day) (Howard Hinnant's algorithm).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

/// `YYYYMMDDTHHMMSS.mmm` (UTC) for milliseconds since the epoch.
pub fn timestamp_name(unix_ms: i64) -> String {
    let secs = unix_ms.div_euclid(1000);
    let ms = unix_ms.rem_euclid(1000);
    let (y, mo, d) = civil_from_days(secs.div_euclid(86_400));
    let s = secs.rem_euclid(86_400);
    format!(
        "{y:04}{mo:02}{d:02}T{:02}{:02}{:02}.{ms:03}",
        s / 3600,
        (s / 60) % 60,
        s % 60
    )
}

fn valid_test_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 200
        && name != "latest"
        && name != "."
        && name != ".."
        && !name.starts_with('.')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '+'))
}

impl RunDir {
    /// Creates `<store_root>/runs/<test_name>/<timestamp>/`, locks it,
    /// points `<store_root>/runs/latest` at it and removes the stale
    /// `*.tmp` files of runs no longer alive ([`sweep_stale_tmp`]).
    ///
    /// # Errors
    /// An invalid test name, or a filesystem failure.
    pub fn create(store_root: &Path, test_name: &str) -> Result<RunDir, RunError> {
        if !valid_test_name(test_name) {
            return Err(RunError::InvalidTestName(test_name.to_string()));
        }
        let runs = store_root.join("runs");
        let test_dir = runs.join(test_name);
        fs::create_dir_all(&test_dir).map_err(io_err("create", &test_dir))?;
        let now_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as i64);
        // Two runs in the same millisecond: take the next free millisecond.
        let mut ms = now_ms;
        let (ts, path) = loop {
            let ts = timestamp_name(ms);
            let path = test_dir.join(&ts);
            match fs::create_dir(&path) {
                Ok(()) => break (ts, path),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists && ms < now_ms + 10_000 => {
                    ms += 1;
                }
                Err(e) => return Err(io_err("create", &path)(e)),
            }
        };
        let lock = File::open(&path).map_err(io_err("open", &path))?;
        // A fresh directory: nobody else can hold it.
        lock.try_lock()
            .map_err(|e| io_err("lock", &path)(e.into()))?;
        let target = Path::new(test_name).join(&ts);
        let tmp = runs.join(format!(".latest.{}.{ts}", std::process::id()));
        let _ = fs::remove_file(&tmp);
        std::os::unix::fs::symlink(&target, &tmp).map_err(io_err("create", &tmp))?;
        let latest = runs.join("latest");
        fs::rename(&tmp, &latest).map_err(io_err("create", &latest))?;
        // Whatever runs killed mid-write left; this one is locked already.
        sweep_stale_tmp(store_root);
        Ok(RunDir {
            path,
            _lock: Some(Arc::new(lock)),
        })
    }

    /// An existing run directory.
    ///
    /// # Errors
    /// `path` is not a directory.
    pub fn open(path: &Path) -> Result<RunDir, RunError> {
        let md = fs::metadata(path).map_err(io_err("read", path))?;
        if !md.is_dir() {
            return Err(RunError::NotARunDir(path.to_path_buf()));
        }
        Ok(RunDir {
            path: path.to_path_buf(),
            _lock: None,
        })
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The run's history as it is stored now: `history.jsonl` while it
    /// exists (a run in progress, or one that ended before compressing it),
    /// else `history.jsonl.gz` when that exists; `history.jsonl` otherwise.
    /// Every history reader takes either (gzip is read through).
    pub fn history_path(&self) -> PathBuf {
        let log = self.history_log_path();
        let gz = self.history_gz_path();
        if !log.exists() && gz.exists() {
            gz
        } else {
            log
        }
    }

    /// `history.jsonl`: the durable log a run appends to.
    pub fn history_log_path(&self) -> PathBuf {
        self.path.join("history.jsonl")
    }

    /// `history.jsonl.gz`: the log of a finished run, compressed.
    pub fn history_gz_path(&self) -> PathBuf {
        self.path.join("history.jsonl.gz")
    }

    /// Replaces `history.jsonl` by `history.jsonl.gz` (written whole and
    /// synced before the log is removed, so a crash leaves one complete
    /// copy). Returns (log bytes, compressed bytes).
    ///
    /// # Errors
    /// Reading the log or writing the compressed file failed; the log is
    /// then left in place.
    pub fn compress_history(&self) -> Result<(u64, u64), RunError> {
        let log = self.history_log_path();
        let gz = self.history_gz_path();
        let raw = fs::metadata(&log).map_err(io_err("read", &log))?.len();
        // Level 6, in parallel members: on the 22 MB log of a 73k-transaction
        // SQLite run, level 1 packed 6.2x, 4 7.6x, 6 8.6x, 9 9.0x (zstd -3
        // 6.9x, -9 9.1x); level 6 keeps a 950k-transaction 30 s run's
        // directory under 50 MB (1: 46 MB of history alone), and the
        // threads pay for its extra time (BENCHMARKS.md).
        let packed = crate::format::compress_file(&log, &gz, HISTORY_GZIP_LEVEL)
            .map_err(io_err("write", &gz))?;
        fs::remove_file(&log).map_err(io_err("remove", &log))?;
        Ok((raw, packed))
    }

    /// `history.edn`: export for Jepsen/Elle tools.
    pub fn history_edn_path(&self) -> PathBuf {
        self.path.join("history.edn")
    }

    /// `results.json`: the checker's result.
    pub fn results_path(&self) -> PathBuf {
        self.path.join(RESULTS_JSON)
    }

    /// `test.json`: configuration, seed, versions, command line.
    pub fn test_json_path(&self) -> PathBuf {
        self.path.join(TEST_JSON)
    }

    /// `harness.log`: the tracing log of the run.
    pub fn log_path(&self) -> PathBuf {
        self.path.join("harness.log")
    }

    /// `elle/`: explanations and graphs per anomaly type.
    pub fn elle_dir(&self) -> PathBuf {
        self.path.join("elle")
    }

    /// `nodes/<node>/`: log files collected from a node.
    pub fn node_dir(&self, node: &str) -> PathBuf {
        self.path.join("nodes").join(node)
    }
}

/// The background syncer of a [`HistoryLog`].
struct Syncer {
    stop: mpsc::Sender<()>,
    handle: thread::JoinHandle<()>,
}

/// Where a [`HistoryLog`]'s bytes go.
enum Out {
    /// Copied into a mapped window (see `mapped.rs`).
    Mapped(MappedAppend),
    /// `write(2)`, where the filesystem refuses `fallocate` or `mmap`;
    /// with the bytes written so far.
    Written(File, u64),
}

impl Out {
    fn file(&self) -> &File {
        match self {
            Out::Mapped(m) => m.file(),
            Out::Written(f, _) => f,
        }
    }

    /// Appends all of `bytes` or, on an error (a full disk), none: a part
    /// left behind would turn into a broken line mid-file at the next
    /// flush, which repeats the batch.
    fn append(&mut self, bytes: &[u8]) -> io::Result<()> {
        match self {
            Out::Mapped(m) => m.append(bytes),
            Out::Written(f, len) => match f.write_all(bytes) {
                Ok(()) => {
                    *len += bytes.len() as u64;
                    Ok(())
                }
                Err(e) => {
                    // Best effort: the error is the one to report.
                    let _ = f.set_len(*len);
                    let _ = f.seek(io::SeekFrom::Start(*len));
                    Err(e)
                }
            },
        }
    }

    /// Cuts a mapped log to its data (a written one is exact already).
    fn close(&mut self) -> io::Result<()> {
        match self {
            Out::Mapped(m) => m.close(),
            Out::Written(..) => Ok(()),
        }
    }
}

/// The append-only history log of a run (`history.jsonl`).
pub struct HistoryLog {
    out: Out,
    path: PathBuf,
    next: u64,
    /// Lines pushed and not yet written.
    pending: String,
    dirty: Arc<AtomicBool>,
    sync_error: Arc<Mutex<Option<String>>>,
    syncer: Option<Syncer>,
}

impl HistoryLog {
    /// Creates (or truncates) the log at `path` and starts its syncer.
    ///
    /// # Errors
    /// The file cannot be created.
    pub fn create(path: &Path) -> Result<HistoryLog, RunError> {
        HistoryLog::create_as(path, true)
    }

    /// [`Self::create`], through a mapping only if `map` (and the
    /// filesystem allows it).
    fn create_as(path: &Path, map: bool) -> Result<HistoryLog, RunError> {
        // Readable too: a shared writable mapping needs both.
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(path)
            .map_err(io_err("create", path))?;
        let dirty = Arc::new(AtomicBool::new(false));
        let sync_error = Arc::new(Mutex::new(None));
        let syncer = {
            let file = file.try_clone().map_err(io_err("open", path))?;
            let dirty = Arc::clone(&dirty);
            let sync_error = Arc::clone(&sync_error);
            let (stop, rx) = mpsc::channel::<()>();
            let handle = thread::Builder::new()
                .name("history-fsync".into())
                .spawn(move || {
                    while let Err(mpsc::RecvTimeoutError::Timeout) =
                        rx.recv_timeout(Duration::from_millis(SYNC_INTERVAL_MS))
                    {
                        if dirty.swap(false, Ordering::AcqRel)
                            && let Err(e) = file.sync_data()
                            && let Ok(mut g) = sync_error.lock()
                        {
                            *g = Some(e.to_string());
                        }
                    }
                })
                .map_err(io_err("write", path))?;
            Syncer { stop, handle }
        };
        let out = if map {
            match MappedAppend::new(file) {
                Ok(m) => Out::Mapped(m),
                // No space reserved ahead on this filesystem: write(2).
                Err((file, _)) => Out::Written(file, 0),
            }
        } else {
            Out::Written(file, 0)
        };
        Ok(HistoryLog {
            out,
            path: path.to_path_buf(),
            next: 0,
            pending: String::with_capacity(64 << 10),
            dirty,
            sync_error,
            syncer: Some(syncer),
        })
    }

    /// The log's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The index the next appended op will get.
    pub fn next_index(&self) -> OpIndex {
        OpIndex(self.next)
    }

    fn check_sync_error(&self) -> Result<(), RunError> {
        let msg = self.sync_error.lock().ok().and_then(|mut g| g.take());
        match msg {
            Some(message) => Err(RunError::Sync {
                path: self.path.clone(),
                message,
            }),
            None => Ok(()),
        }
    }

    /// Gives `op` the next index (0, 1, 2, …) and hands it to the OS as one
    /// JSON line (with any lines pushed before it); when this returns, the
    /// OS has the line.
    ///
    /// # Errors
    /// The write failed, or an earlier background fsync failed.
    pub fn append(&mut self, op: Op) -> Result<OpIndex, RunError> {
        let index = self.push(op)?;
        self.flush()?;
        Ok(index)
    }

    /// Gives `op` the next index and buffers its line until [`Self::flush`].
    ///
    /// # Errors
    /// An earlier background fsync failed.
    pub fn push(&mut self, mut op: Op) -> Result<OpIndex, RunError> {
        self.check_sync_error()?;
        let index = OpIndex(self.next);
        op.index = index;
        format::push_json_line(&mut self.pending, &op);
        self.pending.push('\n');
        self.next += 1;
        Ok(index)
    }

    /// Hands every pushed line to the OS in one piece (one copy into the
    /// mapping, or one `write(2)`); when this returns, the OS has them.
    ///
    /// # Errors
    /// The write failed (the lines stay buffered), or an earlier background
    /// fsync failed.
    pub fn flush(&mut self) -> Result<(), RunError> {
        self.check_sync_error()?;
        if self.pending.is_empty() {
            return Ok(());
        }
        self.out
            .append(self.pending.as_bytes())
            .map_err(io_err("write", &self.path))?;
        self.pending.clear();
        self.dirty.store(true, Ordering::Release);
        Ok(())
    }

    /// Forces everything appended so far to stable storage now.
    ///
    /// # Errors
    /// fsync failed.
    pub fn sync(&mut self) -> Result<(), RunError> {
        self.flush()?;
        self.dirty.store(false, Ordering::Release);
        self.out
            .file()
            .sync_data()
            .map_err(io_err("write", &self.path))
    }

    fn stop_syncer(&mut self) {
        if let Some(s) = self.syncer.take() {
            let _ = s.stop.send(());
            let _ = s.handle.join();
        }
    }

    /// Stops the syncer, fsyncs and closes the log.
    ///
    /// # Errors
    /// The final fsync (or an earlier background one) failed.
    pub fn finish(mut self) -> Result<(), RunError> {
        let flushed = self.flush();
        self.stop_syncer();
        flushed?;
        self.check_sync_error()?;
        self.out.close().map_err(io_err("write", &self.path))?;
        self.out
            .file()
            .sync_all()
            .map_err(io_err("write", &self.path))
    }
}

impl Drop for HistoryLog {
    fn drop(&mut self) {
        let _ = self.flush();
        self.stop_syncer();
        let _ = self.out.close();
        let _ = self.out.file().sync_data();
    }
}

impl std::fmt::Debug for HistoryLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HistoryLog")
            .field("path", &self.path)
            .field("next", &self.next)
            .finish()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::panic)]
mod tests {
    use super::{HistoryLog, RunDir, sweep_stale_tmp};
    use crate::history::{Op, OpIndex};
    use std::fs;
    use std::path::Path;

    #[test]
    fn an_io_error_says_its_cause_once_even_as_a_chain() {
        let e = super::io_err("write", Path::new("runs/x/results.json"))(
            std::io::Error::from_raw_os_error(28),
        );
        // Printed whole (`{:#}` of anyhow walks `source()`): once.
        let mut text = e.to_string();
        let mut cause = std::error::Error::source(&e);
        while let Some(c) = cause {
            text += &format!(": {c}");
            cause = c.source();
        }
        assert_eq!(text.matches("No space left on device").count(), 1, "{text}");
        assert!(
            text.starts_with("cannot write runs/x/results.json: "),
            "{text}"
        );
    }

    #[test]
    fn a_new_run_removes_the_tmp_files_of_dead_runs_only() {
        let store = tempfile::tempdir().unwrap();
        let dead = RunDir::create(store.path(), "t").unwrap();
        let dead_path = dead.path().to_path_buf();
        // A run killed during compression and while writing a report.
        fs::write(dead_path.join("history.jsonl"), "{}\n").unwrap();
        fs::write(dead_path.join("history.jsonl.gz.tmp"), "partial").unwrap();
        fs::create_dir_all(dead_path.join("elle")).unwrap();
        fs::write(dead_path.join("elle").join("G1c.txt.tmp"), "partial").unwrap();
        drop(dead);
        // A live run (held) keeps its temporary files.
        let live = RunDir::create(store.path(), "u").unwrap();
        fs::write(live.path().join("results.json.tmp"), "writing").unwrap();
        let _next = RunDir::create(store.path(), "t").unwrap();
        assert!(!dead_path.join("history.jsonl.gz.tmp").exists());
        assert!(!dead_path.join("elle").join("G1c.txt.tmp").exists());
        assert!(
            dead_path.join("history.jsonl").exists(),
            "the history stays"
        );
        assert!(
            live.path().join("results.json.tmp").exists(),
            "live run untouched"
        );
        // A clone keeps the lock; the last one dropped releases it.
        let clone = live.clone();
        drop(live);
        assert!(sweep_stale_tmp(store.path()).is_empty());
        drop(clone);
        let removed = sweep_stale_tmp(store.path());
        assert_eq!(removed.len(), 1, "{removed:?}");
    }

    fn an_op() -> Op {
        let text = r#"{"index":0,"type":"invoke","process":0,"f":"txn","value":[["append",1,2]]}"#;
        crate::read_str(text, crate::Format::JsonLines).unwrap().ops[0].clone()
    }

    const FULL_DISK_CHILD: &str = "STORE_TEST_FULL_DISK";

    /// Not a test on its own: the child process of
    /// `a_full_disk_fails_a_flush_whole`, selected by an env var
    /// (`mapped:PATH` or `written:PATH`). Files it writes may not grow past
    /// 1.5 MiB (`RLIMIT_FSIZE`, the writes then fail with `EFBIG`, as on a
    /// full disk); it appends until an append fails, flushes once more (as
    /// the log's `Drop` does), and prints how many appends succeeded.
    #[test]
    #[allow(unsafe_code)]
    fn full_disk_child() {
        let Some(spec) = std::env::var_os(FULL_DISK_CHILD) else {
            return;
        };
        let spec = spec.into_string().unwrap();
        let (mode, path) = spec.split_once(':').unwrap();
        let limit = libc::rlimit {
            rlim_cur: 3 << 19,
            rlim_max: 3 << 19,
        };
        // SAFETY: process-wide settings of this child process alone, made
        // before it writes anything: no `SIGXFSZ` kill, a file-size limit.
        unsafe {
            libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
            assert_eq!(libc::setrlimit(libc::RLIMIT_FSIZE, &limit), 0);
        }
        let mut log = HistoryLog::create_as(Path::new(path), mode == "mapped").unwrap();
        let mut acked = 0;
        let failure = loop {
            match log.append(an_op()) {
                Ok(_) => acked += 1,
                Err(e) => break e,
            }
        };
        assert!(log.flush().is_err(), "the limit still holds");
        drop(log);
        println!("ACKED {acked} FAILED {failure}");
    }

    #[test]
    fn a_full_disk_fails_a_flush_whole_and_the_log_stays_whole_lines() {
        for mode in ["mapped", "written"] {
            let dir = tempfile::tempdir().unwrap();
            let p = dir.path().join("history.jsonl");
            let out = std::process::Command::new(std::env::current_exe().unwrap())
                .args([
                    "--exact",
                    "run::tests::full_disk_child",
                    "--nocapture",
                    "--test-threads=1",
                ])
                .env(FULL_DISK_CHILD, format!("{mode}:{}", p.display()))
                .output()
                .unwrap();
            let stdout = String::from_utf8_lossy(&out.stdout);
            assert!(
                out.status.success(),
                "{mode}: {stdout}{}",
                String::from_utf8_lossy(&out.stderr)
            );
            let acked: usize = stdout
                .split("ACKED ")
                .nth(1)
                .and_then(|t| t.split_whitespace().next())
                .and_then(|n| n.parse().ok())
                .unwrap_or_else(|| panic!("{mode}: no count in {stdout}"));
            let read = crate::read_path(&p).unwrap();
            assert!(read.warnings.is_empty(), "{mode}: {:?}", read.warnings);
            assert_eq!(read.ops.len(), acked, "{mode}");
            assert!(
                acked > 10_000,
                "{mode}: only {acked} appends before the limit"
            );
        }
    }

    /// The `write(2)` fallback (a filesystem without `fallocate`): exact
    /// file length at every flush, the same lines as the mapped log.
    #[test]
    fn the_written_fallback_appends_exactly_what_it_was_given() {
        let dir = tempfile::tempdir().unwrap();
        let (w, m) = (dir.path().join("w.jsonl"), dir.path().join("m.jsonl"));
        let mut written = HistoryLog::create_as(&w, false).unwrap();
        let mut mapped = HistoryLog::create_as(&m, true).unwrap();
        let op = an_op();
        for i in 0..100 {
            assert_eq!(written.append(op.clone()).unwrap(), OpIndex(i));
            mapped.append(op.clone()).unwrap();
        }
        let len = std::fs::metadata(&w).unwrap().len();
        assert_eq!(crate::read_path(&w).unwrap().ops.len(), 100);
        written.finish().unwrap();
        mapped.finish().unwrap();
        assert_eq!(
            std::fs::metadata(&w).unwrap().len(),
            len,
            "no padding to cut"
        );
        assert_eq!(std::fs::read(&w).unwrap(), std::fs::read(&m).unwrap());
    }
}
