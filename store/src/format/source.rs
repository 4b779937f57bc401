//! A refillable byte buffer over a reader, with line/column bookkeeping.
//!
//! Parsers work on `avail()`; when one runs out of bytes mid-item it reports
//! [`PErr::Incomplete`], the caller refills (reading at least as much again
//! as is buffered, so re-parsing stays linear overall) and retries. Only the
//! current item plus one read chunk is ever in memory.

use std::io::{self, Read};

/// Bytes read per refill, at least.
pub(crate) const CHUNK: usize = 1 << 20;

/// Largest single op (or line) accepted, in bytes.
pub(crate) const MAX_ITEM_BYTES: usize = 64 << 20;

/// The UTF-8 byte-order mark.
pub(crate) const BOM: [u8; 3] = [0xef, 0xbb, 0xbf];

/// A parse failure inside a buffer.
#[derive(Debug)]
pub(crate) enum PErr {
    /// The buffer ended inside the item.
    Incomplete,
    /// Malformed input at byte `pos` of the buffer.
    Bad { pos: usize, reason: String },
}

pub(crate) struct Source<R> {
    r: R,
    /// `buf[start..end]` is unread; the bytes past `end` are room for the
    /// next read, zeroed once when the buffer grew (not at every refill:
    /// zeroing a fresh MiB per refill was ~2 % of a check's instructions).
    buf: Vec<u8>,
    start: usize,
    end: usize,
    /// The reader is exhausted.
    pub eof: bool,
    /// 1-based line of `buf[start]`.
    line: u64,
    /// 0-based column (bytes) of `buf[start]`.
    col: u64,
    /// The last byte read from `r` (kept when `buf` drops consumed bytes).
    last: Option<u8>,
}

impl<R: Read> Source<R> {
    pub fn new(r: R) -> Source<R> {
        Source {
            r,
            buf: Vec::new(),
            start: 0,
            end: 0,
            eof: false,
            line: 1,
            col: 0,
            last: None,
        }
    }

    /// Reads into `buf` from now on (before the first read): its bytes
    /// are room, whatever they hold.
    pub fn reuse(&mut self, buf: Vec<u8>) {
        if self.end == 0 && buf.len() > self.buf.len() {
            self.buf = buf;
        }
    }

    /// The buffer, for another source to [`Source::reuse`].
    pub fn into_buffer(self) -> Vec<u8> {
        self.buf
    }

    pub fn avail(&self) -> &[u8] {
        self.buf.get(self.start..self.end).unwrap_or(&[])
    }

    /// Reads more; sets `eof` when the reader has nothing left.
    pub fn fill(&mut self) -> io::Result<()> {
        if self.eof {
            return Ok(());
        }
        if self.start > 0 {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        // Doubling keeps re-parsing linear; the cap lets the caller notice an
        // item over the limit without reading (much) more than the limit.
        // The room the buffer has is read into while it is at least half a
        // chunk and at least what is buffered: growing it by the few bytes
        // of a new longest leftover line reallocated it, a fresh MiB faulted
        // in (and copied) each time (6 % of the 100k-transaction load's
        // page faults).
        let old = self.end;
        let cap = (MAX_ITEM_BYTES + 1).saturating_sub(old).max(CHUNK);
        let room = self.buf.len() - old;
        let want = if room >= CHUNK / 2 && room >= old {
            room.min(cap)
        } else {
            CHUNK.max(old).min(cap)
        };
        if self.buf.len() < old + want {
            self.buf.resize(old + want, 0);
        }
        let n = loop {
            match self.r.read(&mut self.buf[old..old + want]) {
                Ok(n) => break n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        };
        self.end = old + n;
        if n == 0 {
            self.eof = true;
        } else {
            self.last = self.buf.get(self.end - 1).copied();
        }
        Ok(())
    }

    /// Skips a UTF-8 byte-order mark at the very start; whether there was
    /// one (the caller warns: editors on Windows write it, JSON forbids it).
    pub fn skip_bom(&mut self) -> io::Result<bool> {
        while self.avail().len() < BOM.len() && !self.eof {
            self.fill()?;
        }
        if self.line == 1 && self.col == 0 && self.avail().starts_with(&BOM) {
            self.consume(BOM.len());
            return Ok(true);
        }
        Ok(false)
    }

    /// Marks `n` bytes of `avail()` as used.
    pub fn consume(&mut self, n: usize) {
        let n = n.min(self.avail().len());
        let used = &self.buf[self.start..self.start + n];
        match memchr::memrchr(b'\n', used) {
            Some(last) => {
                self.line += memchr::memchr_iter(b'\n', used).count() as u64;
                self.col = (n - last - 1) as u64;
            }
            None => self.col += n as u64,
        }
        self.start += n;
    }

    /// Marks one line of `avail()` as used: its `n` bytes end with its only
    /// newline (what the JSON Lines reader knows of each line it parsed).
    pub fn consume_line(&mut self, n: usize) {
        debug_assert_eq!(self.avail().get(..n).map(|l| l.last()), Some(Some(&b'\n')));
        self.line += 1;
        self.col = 0;
        self.start += n.min(self.avail().len());
    }

    /// The line (1-based) of the last byte consumed: the line of an item
    /// just read, whether or not its newline was consumed with it.
    pub fn last_line(&self) -> u64 {
        if self.col == 0 && self.line > 1 {
            self.line - 1
        } else {
            self.line
        }
    }

    /// Line (1-based) and column (1-based, in bytes) of `avail()[off]`.
    pub fn position(&self, off: usize) -> (u64, u64) {
        let a = self.avail();
        let before = a.get(..off).unwrap_or(a);
        match memchr::memrchr(b'\n', before) {
            Some(last) => (
                self.line + memchr::memchr_iter(b'\n', before).count() as u64,
                (before.len() - last) as u64,
            ),
            None => (self.line, self.col + before.len() as u64 + 1),
        }
    }

    /// Whether the data read so far ends with a newline (meaningful at EOF).
    pub fn ends_with_newline(&self) -> bool {
        // Not `buf`: refilling drops consumed bytes, so after `[` was
        // consumed and the input ended, `buf` is empty although the input
        // ended without a newline (found by the cut-file property test).
        self.last.is_none_or(|b| b == b'\n')
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// Reading line after line, each refill leaving a part of a line
    /// behind, keeps the buffer at one chunk: it grows only for an item
    /// longer than half of it.
    #[test]
    fn refills_read_into_the_room_the_buffer_has() {
        let line = |i: usize| format!("{{\"line\":{i},\"pad\":\"{}\"}}\n", "x".repeat(i % 300));
        let text: String = (0..40_000).map(line).collect();
        assert!(text.len() > 4 * CHUNK);
        let mut s = Source::new(text.as_bytes());
        let mut lines = 0;
        loop {
            match memchr::memchr(b'\n', s.avail()) {
                Some(k) => {
                    s.consume_line(k + 1);
                    lines += 1;
                }
                None if s.eof => break,
                None => s.fill().unwrap(),
            }
            assert_eq!(s.buf.len(), CHUNK);
        }
        assert_eq!(lines, 40_000);
        assert_eq!(s.last_line(), 40_000);
        // An item longer than the buffer still grows it, by doubling.
        let long = "y".repeat(3 * CHUNK);
        let mut s = Source::new(long.as_bytes());
        while !s.eof {
            s.fill().unwrap();
        }
        assert_eq!(s.avail().len(), 3 * CHUNK);
    }
}
