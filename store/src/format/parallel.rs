//! JSON Lines read by several threads at once: the file is cut at line ends
//! into one chunk per core, each chunk parsed by its own [`OpReader`] on its
//! own thread, the ops joined in file order.
//!
//! Key decision: this is only a faster way to get the same answer. Any chunk
//! that fails, warns (a torn last line), or starts with an op whose index
//! may have been assigned by position (see [`read_jsonl`]) makes the caller
//! read the file sequentially instead, so errors, warnings, their line
//! numbers and assigned indices are always exactly those of the sequential
//! reader.

use super::source::MAX_ITEM_BYTES;
use super::{Format, OpReader, OpSink};
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

/// Smaller files are read sequentially (threads cost more than they save).
const MIN_BYTES: u64 = 16 << 20;
/// Cores used at most.
const MAX_THREADS: usize = 4;
/// Pieces per core. The file is cut into this many pieces per thread and
/// the pieces handed out as the threads finish them (see
/// [`read_jsonl_with`]): cut into one equal chunk per core, a core the
/// machine slowed down (another process, a virtual CPU descheduled) left
/// the other idle at the end — one 100k-transaction load took 80 ms on one
/// thread against 55 on the other, reading the same bytes.
const PIECES_PER_THREAD: usize = 16;

/// Reads `path` (JSON Lines) in parallel into one sink per chunk, joined
/// in order; `None` when it should be read sequentially: too small, one
/// core, not one object per line, or anything but a clean parse of every
/// chunk.
pub(crate) fn read_jsonl<S: OpSink>(path: &Path) -> Option<S> {
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(MAX_THREADS);
    read_jsonl_with(path, threads)
}

/// [`read_jsonl`] on `threads` threads. The first thread reads the file
/// from its start, one reader into one sink (sized for the whole file) that
/// takes the next piece whenever it reaches the end of those it has; every
/// other thread takes pieces from the end, each into a sink of its own. They
/// meet where their speeds put them; the join copies only the pieces taken
/// from the end, about half the file as with one chunk per core.
fn read_jsonl_with<S: OpSink>(path: &Path, threads: usize) -> Option<S> {
    let len = std::fs::metadata(path).ok()?.len();
    if threads < 2 || len < MIN_BYTES || first_byte(path)? != b'{' {
        return None;
    }
    let bounds = chunk_bounds(path, len, threads * PIECES_PER_THREAD)?;
    let pieces = Pieces::new(bounds.len() - 1);
    let pieces = &pieces;
    let bounds = &bounds;
    let (front, back): (Option<S>, Vec<Option<Taken<S>>>) = std::thread::scope(|s| {
        let handles: Vec<_> = (1..threads)
            .map(|_| s.spawn(move || parse_from_back(path, bounds, pieces)))
            .collect();
        let front = parse_from_front(path, bounds, pieces, len);
        if front.is_none() {
            pieces.stop();
        }
        let back = handles
            .into_iter()
            .map(|h| h.join().ok().flatten())
            .collect();
        (front, back)
    });
    let mut back: Vec<(usize, S)> = back
        .into_iter()
        .collect::<Option<Vec<_>>>()?
        .into_iter()
        .flatten()
        .collect();
    back.sort_unstable_by_key(|(i, _)| *i);
    let parts: Vec<S> = std::iter::once(front?)
        .chain(back.into_iter().map(|(_, part)| part))
        .collect();
    // A later chunk's first op without an `index` was given 0 (its chunk's
    // position) where the sequential reader gives the previous op's index
    // + 1; an explicit 0 there is out of order anyway.
    if parts
        .iter()
        .skip(1)
        .any(|part| part.first_index() == Some(0))
    {
        return None;
    }
    S::join(parts)
}

/// The pieces a thread parsed from the end, each with its number.
type Taken<S> = Vec<(usize, S)>;

/// The pieces not yet taken: `front..back`, taken from either end.
struct Pieces {
    left: std::sync::Mutex<(usize, usize)>,
}

impl Pieces {
    /// `n` pieces; the first is the front reader's from the start.
    fn new(n: usize) -> Pieces {
        Pieces {
            left: std::sync::Mutex::new((1, n)),
        }
    }

    /// The next piece from the front, if any is left.
    fn take_front(&self) -> Option<usize> {
        let mut g = self.left.lock().ok()?;
        (g.0 < g.1).then(|| {
            g.0 += 1;
            g.0 - 1
        })
    }

    /// The next piece from the back, if any is left.
    fn take_back(&self) -> Option<usize> {
        let mut g = self.left.lock().ok()?;
        (g.0 < g.1).then(|| {
            g.1 -= 1;
            g.1
        })
    }

    /// Hands out no more pieces (a reader failed: the file is read
    /// sequentially instead).
    fn stop(&self) {
        if let Ok(mut g) = self.left.lock() {
            g.1 = g.0;
        }
    }
}

/// The file from its start as the front reader sees it: the pieces it
/// took, one after the other, ending where the next piece is another's.
struct Front<'a> {
    f: File,
    /// Offset of the next byte read, and the end of the pieces taken.
    pos: u64,
    end: u64,
    bounds: &'a [u64],
    pieces: &'a Pieces,
}

impl Read for Front<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.pos == self.end {
            match self.pieces.take_front() {
                Some(i) => self.end = self.bounds[i + 1],
                None => return Ok(0),
            }
        }
        let room = usize::try_from(self.end - self.pos).unwrap_or(usize::MAX);
        let want = buf.len().min(room);
        let n = self.f.read(&mut buf[..want])?;
        self.pos += n as u64;
        Ok(n)
    }
}

/// The front reader's ops (from the file's start, as many pieces as it
/// reached), or `None` on any error or warning.
fn parse_from_front<S: OpSink>(
    path: &Path,
    bounds: &[u64],
    pieces: &Pieces,
    room: u64,
) -> Option<S> {
    let front = Front {
        f: File::open(path).ok()?,
        pos: 0,
        end: bounds[1],
        bounds,
        pieces,
    };
    let mut r = OpReader::new(front, Format::JsonLines, Some(path.to_path_buf())).sharing_lists();
    let mut sink = S::for_bytes(room);
    r.read_into(&mut sink).ok()?;
    r.warnings().is_empty().then_some(sink)
}

/// The pieces one thread took from the end, each with its number, or
/// `None` (every reader stops) on any error or warning.
fn parse_from_back<S: OpSink>(
    path: &Path,
    bounds: &[u64],
    pieces: &Pieces,
) -> Option<Vec<(usize, S)>> {
    let mut done = Vec::new();
    let mut buf = Vec::new();
    // One open file per thread, positioned anew for each piece.
    let f = File::open(path).ok()?;
    while let Some(i) = pieces.take_back() {
        match parse_chunk(&f, path, bounds[i], bounds[i + 1], &mut buf) {
            Some(part) => done.push((i, part)),
            None => {
                pieces.stop();
                return None;
            }
        }
    }
    Some(done)
}

/// The first byte that is not white space.
fn first_byte(path: &Path) -> Option<u8> {
    let mut f = File::open(path).ok()?;
    let mut buf = [0u8; 4096];
    loop {
        let n = f.read(&mut buf).ok()?;
        if n == 0 {
            return None;
        }
        if let Some(b) = buf[..n].iter().find(|b| !b.is_ascii_whitespace()) {
            return Some(*b);
        }
    }
}

/// Offsets `0 = b0 < b1 < … < bn = len`, each inner one just after a
/// newline, cutting the file into about `parts` equal pieces.
fn chunk_bounds(path: &Path, len: u64, parts: usize) -> Option<Vec<u64>> {
    let mut f = File::open(path).ok()?;
    let mut bounds = vec![0u64];
    // A line is a few hundred bytes: a page finds its end, and a longer
    // one is read on (the file is cut at dozens of places).
    let mut buf = vec![0u8; 4096];
    for i in 1..parts as u64 {
        let target = len * i / parts as u64;
        if target <= *bounds.last()? {
            continue;
        }
        f.seek(SeekFrom::Start(target)).ok()?;
        let mut pos = target;
        let cut = loop {
            let n = f.read(&mut buf).ok()?;
            if n == 0 {
                break None;
            }
            if let Some(k) = memchr::memchr(b'\n', &buf[..n]) {
                break Some(pos + k as u64 + 1);
            }
            pos += n as u64;
            if pos - target > MAX_ITEM_BYTES as u64 {
                // A huge line: let the sequential reader report it.
                return None;
            }
        };
        match cut {
            Some(c) if c < len => bounds.push(c),
            _ => break,
        }
    }
    bounds.push(len);
    (bounds.len() > 2).then_some(bounds)
}

/// The ops of `[start, end)` of `f` (the file at `path`, named in errors)
/// in a sink sized for the piece, or `None` on any error or warning; read
/// through `buf` (left for the next piece).
fn parse_chunk<S: OpSink>(
    mut f: &File,
    path: &Path,
    start: u64,
    end: u64,
    buf: &mut Vec<u8>,
) -> Option<S> {
    f.seek(SeekFrom::Start(start)).ok()?;
    let r = OpReader::new(
        f.take(end - start),
        Format::JsonLines,
        Some(path.to_path_buf()),
    );
    let mut r = r.sharing_lists().with_buffer(std::mem::take(buf));
    let mut sink = S::for_bytes(end - start);
    let read = r.read_into(&mut sink);
    let clean = read.is_ok() && r.warnings().is_empty();
    *buf = r.into_buffer();
    clean.then_some(sink)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use crate::format::{OpReader, ReadOutcome, collect};
    use std::io::Write as _;

    /// Ops as JSON Lines text, `n` of them, big enough to be read in parallel.
    fn big_history(n: usize, with_index: bool) -> String {
        let mut s = String::new();
        for i in 0..n {
            let idx = if with_index {
                format!("\"index\":{},", 2 * i)
            } else {
                String::new()
            };
            s.push_str(&format!(
                "{{{idx}\"type\":\"invoke\",\"process\":{p},\"f\":\"txn\",\"value\":[[\"append\",{k},{i}],[\"r\",{k},null]]}}\n",
                p = i % 7,
                k = i % 13
            ));
            let idx = if with_index {
                format!("\"index\":{},", 2 * i + 1)
            } else {
                String::new()
            };
            s.push_str(&format!(
                "{{{idx}\"type\":\"ok\",\"process\":{p},\"f\":\"txn\",\"value\":[[\"append\",{k},{i}],[\"r\",{k},[1,2,3,{i}]]]}}\n",
                p = i % 7,
                k = i % 13
            ));
        }
        s
    }

    fn write(dir: &Path, name: &str, text: &str) -> std::path::PathBuf {
        let p = dir.join(name);
        let mut f = File::create(&p).unwrap();
        f.write_all(text.as_bytes()).unwrap();
        p
    }

    fn sequential(p: &Path) -> ReadOutcome {
        collect(OpReader::open(p).unwrap()).unwrap()
    }

    #[test]
    fn parallel_and_sequential_reads_agree() {
        let dir = tempfile::tempdir().unwrap();
        let text = big_history(120_000, true);
        assert!(text.len() as u64 >= MIN_BYTES, "{} bytes", text.len());
        let p = write(dir.path(), "h.jsonl", &text);
        let par: Vec<crate::Op> = read_jsonl_with(&p, 2).expect("read in parallel");
        let seq = sequential(&p);
        assert_eq!(par, seq.ops);
        assert_eq!(par.len(), 240_000);
    }

    #[test]
    fn chunks_build_one_history_with_one_arena_and_it_gives_back_what_was_read() {
        let dir = tempfile::tempdir().unwrap();
        let p = write(dir.path(), "h.jsonl", &big_history(120_000, true));
        let b: crate::HistoryBuilder = read_jsonl_with(&p, 2).expect("read in parallel");
        let h = b.finish().unwrap();
        let elided = (0..h.len())
            .filter(|&pos| h.is_txn(pos) && h.stored_txn(pos).is_none())
            .count();
        // Every pair but those cut by a piece's boundary (one at most per
        // boundary: each completion follows its invocation).
        let cuts = 2 * PIECES_PER_THREAD - 1;
        assert!((120_000 - cuts..=120_000).contains(&elided), "{elided}");
        assert_eq!(h.mop_count(), 2 * (240_000 - elided));
        assert_eq!(h.into_ops(), sequential(&p).ops);
    }

    #[test]
    fn ops_with_rare_fields_in_every_chunk_keep_them() {
        let dir = tempfile::tempdir().unwrap();
        let text: String = big_history(120_000, true)
            .lines()
            .enumerate()
            .map(|(i, l)| match i % 997 {
                0 => format!("{},\"node\":\"n{i}\"}}\n", &l[..l.len() - 1]),
                _ => format!("{l}\n"),
            })
            .collect();
        let p = write(dir.path(), "h.jsonl", &text);
        let b: crate::HistoryBuilder = read_jsonl_with(&p, 2).expect("read in parallel");
        let h = b.finish().unwrap();
        assert_eq!(h.extra(997)[0].1, crate::Data::Str("n997".into()));
        assert_eq!(h.extra(239_280)[0].1, crate::Data::Str("n239280".into()));
        assert!(h.extra(998).is_empty());
        assert_eq!(h.into_ops(), sequential(&p).ops);
    }

    /// Pieces taken from both ends by racing threads: each taken once,
    /// the front's an unbroken run from the first.
    #[test]
    fn every_piece_is_taken_once_from_one_end() {
        for _ in 0..50 {
            let pieces = Pieces::new(64);
            let (front, back) = std::thread::scope(|s| {
                let back: Vec<_> = (0..3)
                    .map(|_| {
                        s.spawn(|| std::iter::from_fn(|| pieces.take_back()).collect::<Vec<_>>())
                    })
                    .collect();
                let front: Vec<usize> = std::iter::from_fn(|| pieces.take_front()).collect();
                let back: Vec<usize> = back.into_iter().flat_map(|h| h.join().unwrap()).collect();
                (front, back)
            });
            assert_eq!(front, (1..front.len() + 1).collect::<Vec<_>>());
            let mut all: Vec<usize> = std::iter::once(0).chain(front).chain(back).collect();
            all.sort_unstable();
            assert_eq!(all, (0..64).collect::<Vec<_>>());
        }
        let stopped = Pieces::new(10);
        assert_eq!(stopped.take_back(), Some(9));
        stopped.stop();
        assert_eq!(stopped.take_front(), None);
        assert_eq!(stopped.take_back(), None);
    }

    #[test]
    fn anything_unusual_falls_back_to_the_sequential_reader() {
        let dir = tempfile::tempdir().unwrap();
        // Positional indices: the second chunk cannot know its offset.
        let p = write(dir.path(), "noidx.jsonl", &big_history(120_000, false));
        assert!(read_jsonl_with::<Vec<crate::Op>>(&p, 2).is_none());
        // A torn last line: a warning with its line number.
        let mut torn = big_history(120_000, true);
        torn.push_str("{\"index\":240000,\"type\":\"inv");
        let p = write(dir.path(), "torn.jsonl", &torn);
        assert!(read_jsonl_with::<Vec<crate::Op>>(&p, 2).is_none());
        // A bad line in the middle: the sequential reader names its line.
        let mut lines: Vec<String> = big_history(120_000, true)
            .lines()
            .map(str::to_string)
            .collect();
        lines[150_000] = "{\"index\":1,\"type\":\"bogus\"}".to_string();
        let p = write(dir.path(), "bad.jsonl", &(lines.join("\n") + "\n"));
        assert!(read_jsonl_with::<Vec<crate::Op>>(&p, 2).is_none());
        let e = crate::format::read_path(&p).unwrap_err().to_string();
        assert!(e.contains(":150001:"), "{e}");
        // Small files are not worth threads.
        let p = write(dir.path(), "small.jsonl", &big_history(100, true));
        assert!(read_jsonl_with::<Vec<crate::Op>>(&p, 2).is_none());
    }
}
