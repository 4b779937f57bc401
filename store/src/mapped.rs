//! An append-only file written through a shared memory mapping: the
//! history log's way of handing its lines to the OS without a system call.
//!
//! Key decision: at concurrency 1 every transaction waits for the runner to
//! log its invocation before its first request goes out, and a `write(2)`
//! of that line cost 2.5–3 µs of the ~25 µs between a completion and the
//! next request (BENCHMARKS.md). A copy into the page cache
//! through a `MAP_SHARED` mapping is as durable against a crash of the
//! process (the kernel owns the page once the copy is done), and
//! `fdatasync` writes it back like any other dirty page. So the file grows
//! a window at a time: [`WINDOW`] bytes are reserved with `fallocate(2)`,
//! which extends the file, and mapped. Reserving the blocks first means a
//! full disk is an error from [`MappedAppend::append`], never a `SIGBUS`
//! on a store into the mapping; and `append` reserves every window its
//! bytes reach before it copies any, so a failed append leaves nothing
//! behind (the log stays whole lines when the failed batch is retried). [`MappedAppend::close`] (and `Drop`) unmaps
//! and cuts the file back to the bytes appended. A process killed before
//! that leaves the file padded with NUL bytes to the end of its window;
//! the JSON Lines reader ignores such a tail, with a warning.
//!
//! Where `fallocate` or `mmap` is refused (a filesystem without
//! `fallocate`), [`MappedAppend::new`] hands the file back and the caller
//! writes with `write(2)` as before.
#![allow(unsafe_code)]

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::ptr::NonNull;

/// Bytes reserved and mapped at a time (a multiple of the page size).
pub(crate) const WINDOW: usize = 1 << 20;

/// An open file appended to through a mapped window at its end.
pub(crate) struct MappedAppend {
    file: File,
    /// `WINDOW` bytes of the file from `start`; `None` once closed.
    map: Option<NonNull<u8>>,
    start: u64,
    /// Bytes appended, from the start of the file.
    len: u64,
}

// SAFETY: the mapping is reachable only through this value (no pointer into
// it escapes), so moving the value to another thread moves sole ownership,
// as for a `Vec<u8>`.
unsafe impl Send for MappedAppend {}

impl MappedAppend {
    /// Maps the first window of `file`, which must be empty and open for
    /// reading and writing. On failure the file comes back with the error.
    pub(crate) fn new(file: File) -> Result<MappedAppend, (File, io::Error)> {
        match map_window(&file, 0) {
            Ok(map) => Ok(MappedAppend {
                file,
                map: Some(map),
                start: 0,
                len: 0,
            }),
            Err(e) => Err((file, e)),
        }
    }

    /// The file (for `fdatasync`; its length runs ahead of the data until
    /// [`Self::close`]).
    pub(crate) fn file(&self) -> &File {
        &self.file
    }

    /// Copies `bytes` to the end of the data; when this returns, the OS has
    /// them.
    ///
    /// # Errors
    /// Reserving the windows the bytes reach failed (a full disk): nothing
    /// was appended, so the data stays whole lines. (Mapping a reserved
    /// window can still fail, out of address space, after a part was
    /// copied.)
    pub(crate) fn append(&mut self, mut bytes: &[u8]) -> io::Result<()> {
        let mapped_end = self.start + WINDOW as u64;
        let end = self.len + bytes.len() as u64;
        if end > mapped_end {
            let window = WINDOW as u64;
            reserve(
                &self.file,
                mapped_end,
                end.div_ceil(window) * window - mapped_end,
            )?;
        }
        while !bytes.is_empty() {
            let map = self
                .map
                .ok_or_else(|| io::Error::other("the log is closed"))?;
            let used = (self.len - self.start) as usize;
            if used == WINDOW {
                self.advance(map)?;
                continue;
            }
            let n = bytes.len().min(WINDOW - used);
            // SAFETY: `used + n <= WINDOW`, inside the mapping; its file
            // blocks are reserved (no SIGBUS); nothing else writes to it;
            // `bytes` is a separate allocation.
            unsafe {
                std::ptr::copy_nonoverlapping(bytes.as_ptr(), map.as_ptr().add(used), n);
            }
            self.len += n as u64;
            bytes = &bytes[n..];
        }
        Ok(())
    }

    /// Maps the window after the current one (reserved by `append`), then
    /// unmaps the current one.
    fn advance(&mut self, current: NonNull<u8>) -> io::Result<()> {
        let next = self.start + WINDOW as u64;
        let map = map(&self.file, next)?;
        unmap(current);
        self.map = Some(map);
        self.start = next;
        Ok(())
    }

    /// Unmaps the window and cuts the file to the bytes appended.
    ///
    /// # Errors
    /// Cutting the file failed; it then keeps its NUL tail.
    pub(crate) fn close(&mut self) -> io::Result<()> {
        if let Some(map) = self.map.take() {
            unmap(map);
            self.file.set_len(self.len)?;
        }
        Ok(())
    }
}

impl Drop for MappedAppend {
    fn drop(&mut self) {
        let _ = self.close();
    }
}

/// Reserves `WINDOW` bytes of `file` from `start` and maps them.
fn map_window(file: &File, start: u64) -> io::Result<NonNull<u8>> {
    reserve(file, start, WINDOW as u64)?;
    map(file, start)
}

fn offset(at: u64) -> io::Result<libc::off_t> {
    libc::off_t::try_from(at)
        .map_err(|_| io::Error::other("the history log outgrew the file offset range"))
}

/// Allocates the file's blocks for `len` bytes from `start`, extending it.
fn reserve(file: &File, start: u64, len: u64) -> io::Result<()> {
    let (off, len) = (offset(start)?, offset(len)?);
    // SAFETY: a system call on an open descriptor; no memory is passed.
    if unsafe { libc::fallocate(file.as_raw_fd(), 0, off, len) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Maps `WINDOW` bytes of `file` from `start` (which the file covers)
/// shared and writable.
fn map(file: &File, start: u64) -> io::Result<NonNull<u8>> {
    let (fd, off) = (file.as_raw_fd(), offset(start)?);
    // SAFETY: a fresh mapping chosen by the kernel (no fixed address), of
    // a range the file now covers; it is unmapped only by `unmap`.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            WINDOW,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED,
            fd,
            off,
        )
    };
    if p == libc::MAP_FAILED {
        return Err(io::Error::last_os_error());
    }
    NonNull::new(p.cast()).ok_or_else(|| io::Error::other("mmap returned a null mapping"))
}

fn unmap(map: NonNull<u8>) {
    // SAFETY: `map` came from `map` with length `WINDOW` and is
    // unmapped once (its owner drops its copy of the pointer).
    unsafe { libc::munmap(map.as_ptr().cast(), WINDOW) };
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::panic)]
mod tests {
    use super::*;
    use std::fs::OpenOptions;

    fn open(path: &std::path::Path) -> File {
        OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(path)
            .unwrap()
    }

    fn mapped(path: &std::path::Path) -> MappedAppend {
        match MappedAppend::new(open(path)) {
            Ok(m) => m,
            Err((_, e)) => panic!("the test directory refuses a mapped log: {e}"),
        }
    }

    #[test]
    fn appends_across_windows_and_cuts_the_tail_on_close() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log");
        let mut m = mapped(&path);
        // Lines of 1000 bytes: one straddles the first window's end.
        let line = format!("{}\n", "x".repeat(999));
        let n = WINDOW / line.len() + 2;
        for _ in 0..n {
            m.append(line.as_bytes()).unwrap();
        }
        // Visible through the file system before close, padded with NULs.
        let before = std::fs::read(&path).unwrap();
        assert_eq!(before.len(), 2 * WINDOW);
        assert_eq!(&before[..n * line.len()], line.repeat(n).as_bytes());
        assert!(before[n * line.len()..].iter().all(|&b| b == 0));
        m.close().unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), line.repeat(n).as_bytes());
    }

    #[test]
    fn drop_cuts_the_file_and_an_empty_log_is_empty() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log");
        let mut m = mapped(&path);
        m.append(b"{\"index\":0}\n").unwrap();
        drop(m);
        assert_eq!(std::fs::read(&path).unwrap(), b"{\"index\":0}\n");
        let empty = dir.path().join("empty");
        drop(MappedAppend::new(open(&empty)).ok());
        assert_eq!(std::fs::metadata(&empty).unwrap().len(), 0);
    }
}
