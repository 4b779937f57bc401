//! The un-synced state of regular files: dirty 4 KiB blocks and a cached
//! size per inode, over the backing file that holds what is durable.
//!
//! The visible content of a cached file at offset `x < size` is the dirty
//! block holding `x` if there is one, else zero when `x >= floor` (the
//! lowest size the file was truncated to since it was last synced: backing
//! bytes past it are gone as far as the application knows), else the
//! backing file's byte (zero past its end). Bytes of dirty blocks past
//! `size` are kept zero, so growing a file (truncate up, a write past the
//! end) shows zeros in the gap, as POSIX says.
//!
//! [`Cache::sync`] makes one file durable (shrink the backing file to the
//! floor, write the dirty blocks, set the size); [`Cache::lose`] drops
//! every file's state, so each file is its backing file again: its synced
//! content and size. A file with no state is the backing file: reads and
//! sizes go straight to it.
//!
//! The cache is bounded ([`Cache::new`]'s block limit). When a write needs
//! a new block and the limit is reached, the file being written is synced
//! first and the write goes straight to the backing file: that write is
//! durable, which a lossy filesystem must never do silently, so every such
//! event is counted ([`Stats::overflows`]) and shown in every report and
//! `lose` reply.

use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;

/// The unit of caching (LazyFS uses the same).
pub const BLOCK: u64 = 4096;

/// What one file had un-synced (a line of a report or of a `lose` reply).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileReport {
    /// Path inside the mount (as last seen).
    pub path: String,
    /// Size the application sees.
    pub cached_size: u64,
    /// Size of the backing (durable) file.
    pub synced_size: u64,
    /// Bytes in dirty blocks (whole blocks, clipped to the cached size).
    pub dirty_bytes: u64,
}

/// Counters since the filesystem was mounted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Writes that went straight to disk because the cache was full.
    pub overflows: u64,
    /// Bytes those writes carried.
    pub overflow_bytes: u64,
    /// `lose` commands applied.
    pub loses: u64,
    /// Dirty bytes dropped by all `lose` commands.
    pub lost_bytes: u64,
}

struct FileState {
    file: File,
    path: String,
    size: u64,
    floor: u64,
    blocks: BTreeMap<u64, Box<[u8]>>,
}

fn backing_len(file: &File) -> io::Result<u64> {
    Ok(file.metadata()?.len())
}

/// Reads `buf.len()` bytes at `off`, zero-filling past the end of the file.
fn pread_full(file: &File, buf: &mut [u8], off: u64) -> io::Result<()> {
    let mut done = 0;
    while done < buf.len() {
        match file.read_at(&mut buf[done..], off + done as u64) {
            Ok(0) => break,
            Ok(n) => done += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    buf[done..].fill(0);
    Ok(())
}

/// Reads up to `len` bytes at `off` of a file with no un-synced state
/// (short at its end; one `pread` loop, no `fstat`).
///
/// # Errors
/// Reading the file.
pub fn read_backing(file: &File, off: u64, len: usize) -> io::Result<Vec<u8>> {
    let mut out = vec![0u8; len];
    let mut done = 0;
    while done < len {
        match file.read_at(&mut out[done..], off + done as u64) {
            Ok(0) => break,
            Ok(n) => done += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    out.truncate(done);
    Ok(out)
}

impl FileState {
    fn new(file: File, path: String) -> io::Result<FileState> {
        let size = backing_len(&file)?;
        Ok(FileState {
            file,
            path,
            size,
            floor: u64::MAX,
            blocks: BTreeMap::new(),
        })
    }

    /// Fills `buf` with the visible bytes at `off` that no dirty block holds.
    fn read_clean(&self, buf: &mut [u8], off: u64) -> io::Result<()> {
        let end = off + buf.len() as u64;
        let lim = end.min(self.floor).max(off);
        let n = (lim - off) as usize;
        pread_full(&self.file, &mut buf[..n], off)?;
        buf[n..].fill(0);
        Ok(())
    }

    fn materialize(&self, b: u64) -> io::Result<Box<[u8]>> {
        let mut buf = vec![0u8; BLOCK as usize].into_boxed_slice();
        self.read_clean(&mut buf, b * BLOCK)?;
        let start = b * BLOCK;
        if self.size < start + BLOCK {
            let keep = self.size.saturating_sub(start) as usize;
            buf[keep..].fill(0);
        }
        Ok(buf)
    }

    fn read(&self, off: u64, len: usize) -> io::Result<Vec<u8>> {
        if off >= self.size {
            return Ok(Vec::new());
        }
        let end = (off + len as u64).min(self.size);
        let mut out = vec![0u8; (end - off) as usize];
        let mut pos = off;
        while pos < end {
            let b = pos / BLOCK;
            let in_block = (pos - b * BLOCK) as usize;
            let dst = (pos - off) as usize;
            if let Some(block) = self.blocks.get(&b) {
                let n = ((BLOCK as usize - in_block) as u64).min(end - pos) as usize;
                out[dst..dst + n].copy_from_slice(&block[in_block..in_block + n]);
                pos += n as u64;
            } else {
                // A run of clean blocks up to the next dirty one.
                let next_dirty = self
                    .blocks
                    .range(b..)
                    .next()
                    .map(|(k, _)| k * BLOCK)
                    .unwrap_or(u64::MAX);
                let run_end = end.min(next_dirty);
                let n = (run_end - pos) as usize;
                self.read_clean(&mut out[dst..dst + n], pos)?;
                pos = run_end;
            }
        }
        Ok(out)
    }

    fn dirty_bytes(&self) -> u64 {
        self.blocks
            .keys()
            .map(|b| (b * BLOCK + BLOCK).min(self.size).saturating_sub(b * BLOCK))
            .sum()
    }

    fn truncate(&mut self, new: u64) -> io::Result<()> {
        if new < self.size {
            let last = new / BLOCK;
            if !new.is_multiple_of(BLOCK) && !self.blocks.contains_key(&last) {
                let block = self.materialize(last)?;
                self.blocks.insert(last, block);
            }
            let first_gone = new.div_ceil(BLOCK);
            self.blocks.split_off(&first_gone);
            if let Some(block) = self.blocks.get_mut(&last) {
                block[(new % BLOCK) as usize..].fill(0);
            }
            self.floor = self.floor.min(new);
        }
        self.size = new;
        Ok(())
    }

    /// Writes everything to the backing file; returns the dirty bytes written.
    fn sync(&mut self) -> io::Result<u64> {
        let len = backing_len(&self.file)?;
        if self.floor < len {
            self.file.set_len(self.floor)?;
        }
        let written = self.dirty_bytes();
        for (b, block) in &self.blocks {
            let start = b * BLOCK;
            if start >= self.size {
                continue;
            }
            let n = (self.size - start).min(BLOCK) as usize;
            self.file.write_all_at(&block[..n], start)?;
        }
        if backing_len(&self.file)? != self.size {
            self.file.set_len(self.size)?;
        }
        self.blocks.clear();
        self.floor = u64::MAX;
        Ok(written)
    }

    fn report(&self) -> io::Result<FileReport> {
        Ok(FileReport {
            path: self.path.clone(),
            cached_size: self.size,
            synced_size: backing_len(&self.file)?,
            dirty_bytes: self.dirty_bytes(),
        })
    }
}

/// The un-synced state of every regular file, keyed by inode number.
pub struct Cache {
    files: HashMap<u64, FileState>,
    max_blocks: usize,
    used_blocks: usize,
    stats: Stats,
}

impl Cache {
    /// An empty cache holding at most `max_blocks` dirty blocks.
    pub fn new(max_blocks: usize) -> Cache {
        Cache {
            files: HashMap::new(),
            max_blocks,
            used_blocks: 0,
            stats: Stats::default(),
        }
    }

    /// Counters since creation.
    pub fn stats(&self) -> Stats {
        self.stats
    }

    /// Dirty blocks held now.
    pub fn used_blocks(&self) -> usize {
        self.used_blocks
    }

    /// The size the application sees, when `ino` has un-synced state.
    pub fn size(&self, ino: u64) -> Option<u64> {
        self.files.get(&ino).map(|f| f.size)
    }

    /// Whether `ino` has un-synced state.
    pub fn is_cached(&self, ino: u64) -> bool {
        self.files.contains_key(&ino)
    }

    /// Records that `ino` is now reached by `path` (after a rename).
    pub fn set_path(&mut self, ino: u64, path: &str) {
        if let Some(f) = self.files.get_mut(&ino) {
            f.path = path.to_string();
        }
    }

    fn state(
        &mut self,
        ino: u64,
        open: &dyn Fn() -> io::Result<(File, String)>,
    ) -> io::Result<&mut FileState> {
        match self.files.entry(ino) {
            std::collections::hash_map::Entry::Occupied(e) => Ok(e.into_mut()),
            std::collections::hash_map::Entry::Vacant(e) => {
                let (file, path) = open()?;
                Ok(e.insert(FileState::new(file, path)?))
            }
        }
    }

    /// Reads up to `len` bytes at `off` of `ino` as the application sees
    /// them; `backing` is used when the file has no un-synced state.
    ///
    /// # Errors
    /// Reading the backing file.
    pub fn read(&self, ino: u64, backing: &File, off: u64, len: usize) -> io::Result<Vec<u8>> {
        if let Some(f) = self.files.get(&ino) {
            return f.read(off, len);
        }
        read_backing(backing, off, len)
    }

    /// The inodes with un-synced state now.
    pub fn inodes(&self) -> Vec<u64> {
        self.files.keys().copied().collect()
    }

    /// Writes `data` at `off` of `ino` into the cache (`open` gives a
    /// read-write handle on the backing file and its path, used the first
    /// time the file gets state).
    ///
    /// # Errors
    /// Reading or (on overflow) writing the backing file.
    pub fn write(
        &mut self,
        ino: u64,
        open: &dyn Fn() -> io::Result<(File, String)>,
        off: u64,
        data: &[u8],
    ) -> io::Result<()> {
        if data.is_empty() {
            return Ok(());
        }
        let first = off / BLOCK;
        let last = (off + data.len() as u64 - 1) / BLOCK;
        let st = self.state(ino, open)?;
        let new_blocks = (first..=last)
            .filter(|b| !st.blocks.contains_key(b))
            .count();
        if self.used_blocks + new_blocks > self.max_blocks {
            return self.overflow_write(ino, off, data);
        }
        let st = self.state(ino, open)?;
        for b in first..=last {
            let bstart = b * BLOCK;
            let from = off.max(bstart);
            let to = (off + data.len() as u64).min(bstart + BLOCK);
            if !st.blocks.contains_key(&b) {
                // A block the write covers whole needs nothing of the file.
                let block = if to - from == BLOCK {
                    vec![0u8; BLOCK as usize].into_boxed_slice()
                } else {
                    st.materialize(b)?
                };
                st.blocks.insert(b, block);
            }
            if let Some(block) = st.blocks.get_mut(&b) {
                block[(from - bstart) as usize..(to - bstart) as usize]
                    .copy_from_slice(&data[(from - off) as usize..(to - off) as usize]);
            }
        }
        st.size = st.size.max(off + data.len() as u64);
        self.used_blocks += new_blocks;
        Ok(())
    }

    fn overflow_write(&mut self, ino: u64, off: u64, data: &[u8]) -> io::Result<()> {
        self.stats.overflows += 1;
        self.stats.overflow_bytes += data.len() as u64;
        if self.stats.overflows.is_power_of_two() {
            tracing::warn!(
                overflows = self.stats.overflows,
                "lossyfs: cache full ({} blocks): writes go straight to disk and will not be lost",
                self.max_blocks
            );
        }
        let Some(mut st) = self.files.remove(&ino) else {
            return Err(io::Error::other("cache entry vanished"));
        };
        self.used_blocks -= st.blocks.len();
        st.sync()?;
        st.file.write_all_at(data, off)
    }

    /// Sets the size of `ino` (truncate or extend) in the cache.
    ///
    /// # Errors
    /// Reading the backing file.
    pub fn truncate(
        &mut self,
        ino: u64,
        open: &dyn Fn() -> io::Result<(File, String)>,
        size: u64,
    ) -> io::Result<()> {
        let st = self.state(ino, open)?;
        let before = st.blocks.len();
        st.truncate(size)?;
        let after = st.blocks.len();
        self.used_blocks = self.used_blocks + after - before;
        Ok(())
    }

    /// Makes `ino` durable; returns the dirty bytes written (0 when it had
    /// no state).
    ///
    /// # Errors
    /// Writing the backing file (the state is kept: nothing is lost).
    pub fn sync(&mut self, ino: u64) -> io::Result<u64> {
        let Some(st) = self.files.get_mut(&ino) else {
            return Ok(0);
        };
        let held = st.blocks.len();
        let n = st.sync()?;
        self.files.remove(&ino);
        self.used_blocks -= held;
        Ok(n)
    }

    /// Forgets `ino` (unlinked for good): nothing of it is written.
    pub fn forget(&mut self, ino: u64) {
        if let Some(st) = self.files.remove(&ino) {
            self.used_blocks -= st.blocks.len();
        }
    }

    /// What each file has un-synced now, sorted by path.
    ///
    /// # Errors
    /// Reading a backing file's size.
    pub fn report(&self) -> io::Result<Vec<FileReport>> {
        let mut out = self
            .files
            .values()
            .map(FileState::report)
            .collect::<io::Result<Vec<_>>>()?;
        out.sort_by(|a, b| a.path.cmp(&b.path));
        Ok(out)
    }

    /// Drops every un-synced byte; returns what each file lost.
    ///
    /// # Errors
    /// Reading a backing file's size (the state is dropped anyway).
    pub fn lose(&mut self) -> io::Result<Vec<FileReport>> {
        let report = self.report();
        self.files.clear();
        self.used_blocks = 0;
        self.stats.loses += 1;
        if let Ok(r) = &report {
            self.stats.lost_bytes += r.iter().map(|f| f.dirty_bytes).sum::<u64>();
        }
        report
    }

    /// Makes every file durable; returns what was written.
    ///
    /// # Errors
    /// The first file that could not be written (the others are synced).
    pub fn checkpoint(&mut self) -> io::Result<Vec<FileReport>> {
        let report = self.report()?;
        let inos: Vec<u64> = self.files.keys().copied().collect();
        let mut first_err = None;
        for ino in inos {
            if let Err(e) = self.sync(ino) {
                first_err.get_or_insert(e);
            }
        }
        match first_err {
            Some(e) => Err(e),
            None => Ok(report),
        }
    }
}
