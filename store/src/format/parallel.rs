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
/// Chunks per core. Measured before histories were built in columns, when
/// joining moved every op but the first chunk's once more and held one
/// chunk twice for a moment: on a 1M-op file one chunk per core loads in 0.53–0.56 s
/// with a 668 MB peak, four per core in 0.59–0.75 s with 611 MB (594 MB
/// sequential), and a 1M-transaction `harness check` takes 2.8–3.1 s
/// against 3.0–3.2 s, its peak (in the analysis) unchanged. Speed wins.
const CHUNKS_PER_THREAD: usize = 1;

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

/// [`read_jsonl`] on `threads` threads.
fn read_jsonl_with<S: OpSink>(path: &Path, threads: usize) -> Option<S> {
    let len = std::fs::metadata(path).ok()?.len();
    if threads < 2 || len < MIN_BYTES || first_byte(path)? != b'{' {
        return None;
    }
    let bounds = chunk_bounds(path, len, threads * CHUNKS_PER_THREAD)?;
    let parts: Vec<Option<S>> = std::thread::scope(|s| {
        let handles: Vec<_> = bounds
            .windows(2)
            .map(|w| {
                let (start, end) = (w[0], w[1]);
                // The first chunk's sink is sized for the whole file: the
                // others are appended to it (`OpSink::join`).
                let room = if start == 0 { len } else { end - start };
                s.spawn(move || parse_chunk(path, start, end, room))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().ok().flatten())
            .collect()
    });
    let parts: Vec<S> = parts.into_iter().collect::<Option<_>>()?;
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
/// newline, cutting the file into about `parts` equal chunks.
fn chunk_bounds(path: &Path, len: u64, parts: usize) -> Option<Vec<u64>> {
    let mut f = File::open(path).ok()?;
    let mut bounds = vec![0u64];
    let mut buf = vec![0u8; 1 << 16];
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

/// The ops of `[start, end)` in a sink sized for `room` bytes, or `None`
/// on any error or warning.
fn parse_chunk<S: OpSink>(path: &Path, start: u64, end: u64, room: u64) -> Option<S> {
    let mut f = File::open(path).ok()?;
    f.seek(SeekFrom::Start(start)).ok()?;
    let r = OpReader::new(
        f.take(end - start),
        Format::JsonLines,
        Some(path.to_path_buf()),
    );
    let mut r = r.sharing_lists();
    let mut sink = S::for_bytes(room);
    r.read_into(&mut sink).ok()?;
    r.warnings().is_empty().then_some(sink)
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
        // Every pair but those cut by the chunk boundary.
        assert!((119_993..=120_000).contains(&elided), "{elided}");
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
