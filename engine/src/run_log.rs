//! `harness.log`: the run's tracing log, and the room it keeps for the line
//! that says the disk filled up.
//!
//! Key decision: the log lives in the run directory, on the disk that may
//! fill up, and the one line a person most needs from it after a full disk
//! is the one saying so. So the log file keeps [`RESERVE_BYTES`] allocated
//! beyond its end (`fallocate` with `FALLOC_FL_KEEP_SIZE`: the file's size
//! does not change, its blocks are taken): an append that fits in them needs
//! no free block. The reserve is topped up as the log grows; on a
//! filesystem without `fallocate` there is none and the log is as before.
//! Lines meant for the log only (a message the terminal already showed in
//! its own words) go to the target [`LOG_ONLY`], which the terminal's layer
//! leaves out.

use std::fs::File;
use std::io::{self, Write};
use std::os::fd::AsRawFd;
use std::path::Path;
use std::sync::Mutex;

/// Bytes kept allocated past the log's end.
pub const RESERVE_BYTES: u64 = 64 * 1024;

/// The tracing target of events written to `harness.log` only.
pub const LOG_ONLY: &str = "harness::log_only";

/// Logs to `harness.log` (info and up, or `RUST_LOG`) and to stderr (warn
/// and up, as `warning: MESSAGE`, except [`LOG_ONLY`] events).
pub fn init(log_path: &Path) {
    use tracing_subscriber::filter::{EnvFilter, LevelFilter, filter_fn};
    use tracing_subscriber::prelude::*;
    let file = match std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log_path)
    {
        Ok(f) => f,
        Err(e) => {
            eprintln!("warning: cannot open {}: {e}", log_path.display());
            return;
        }
    };
    let file_filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let _ = tracing_subscriber::registry()
        .with(
            tracing_subscriber::fmt::layer()
                .with_writer(Mutex::new(ReservedFile::new(file)))
                .with_ansi(false)
                .with_filter(file_filter),
        )
        .with(
            tracing_subscriber::fmt::layer()
                .with_writer(io::stderr)
                // No colour codes in a redirected stderr (soak logs, CI).
                .with_ansi(false)
                .event_format(crate::console::PlainWarnings)
                .with_filter(LevelFilter::WARN)
                .with_filter(filter_fn(|m| m.target() != LOG_ONLY)),
        )
        .try_init();
}

/// Writes `message` to `harness.log` as an error, not to the terminal.
pub fn log_only_error(message: &str) {
    tracing::error!(target: LOG_ONLY, "{message}");
}

/// An append-only file that keeps [`RESERVE_BYTES`] allocated past its end.
pub struct ReservedFile {
    file: File,
    /// Bytes written (the file's length, as it was opened for append).
    len: u64,
    /// Where the allocation taken ahead ends (0: none, or unsupported).
    reserved_to: u64,
    /// `fallocate` is not supported here: stop asking.
    unsupported: bool,
}

impl ReservedFile {
    /// Wraps `file` (opened for append) and takes its first reserve.
    pub fn new(file: File) -> ReservedFile {
        let len = file.metadata().map(|m| m.len()).unwrap_or(0);
        let mut f = ReservedFile {
            file,
            len,
            reserved_to: 0,
            unsupported: false,
        };
        f.top_up();
        f
    }

    /// Keeps at least half the reserve ahead of the end. A failure (a full
    /// disk, no `fallocate`) leaves what is there: the write itself is what
    /// matters.
    fn top_up(&mut self) {
        if self.unsupported || self.reserved_to >= self.len + RESERVE_BYTES / 2 {
            return;
        }
        match fallocate_keep_size(&self.file, self.len, RESERVE_BYTES) {
            Ok(()) => self.reserved_to = self.len + RESERVE_BYTES,
            Err(e)
                if matches!(
                    e.raw_os_error(),
                    Some(libc::EOPNOTSUPP) | Some(libc::ENOSYS)
                ) =>
            {
                self.unsupported = true
            }
            Err(_) => {}
        }
    }
}

impl Write for ReservedFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.file.write(buf)?;
        self.len += n as u64;
        self.top_up();
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.file.flush()
    }
}

/// Allocates `len` bytes of `file` from `offset` without changing its size.
#[allow(unsafe_code)]
fn fallocate_keep_size(file: &File, offset: u64, len: u64) -> io::Result<()> {
    let (Ok(offset), Ok(len)) = (libc::off_t::try_from(offset), libc::off_t::try_from(len)) else {
        return Err(io::Error::from(io::ErrorKind::InvalidInput));
    };
    // SAFETY: fallocate reads no memory of ours; the fd is open for the
    // call's duration (borrowed from `file`).
    let rc = unsafe { libc::fallocate(file.as_raw_fd(), libc::FALLOC_FL_KEEP_SIZE, offset, len) };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::MetadataExt;

    #[test]
    fn the_log_keeps_its_reserve_allocated_past_its_end_as_it_grows() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("harness.log");
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .unwrap();
        let mut log = ReservedFile::new(file);
        let line = [b'x'; 1000];
        for _ in 0..200 {
            log.write_all(&line).unwrap();
        }
        let meta = std::fs::metadata(&path).unwrap();
        assert_eq!(meta.len(), 200_000, "the size is what was written");
        if log.unsupported {
            eprintln!("fallocate is not supported on this filesystem: no reserve to check");
            return;
        }
        // Blocks of 512 bytes: the allocation runs at least half a reserve
        // past the end.
        assert!(
            meta.blocks() * 512 >= 200_000 + RESERVE_BYTES / 2,
            "allocated {} bytes for a 200,000-byte log",
            meta.blocks() * 512
        );
    }
}
