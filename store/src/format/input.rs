//! Plain or gzip-compressed history files, read the same way.
//!
//! Key decision: compression is recognised by its magic bytes, not by the
//! name, so a renamed file still reads; the name only helps to guess the
//! format inside (`history.jsonl.gz` → JSON Lines). Concatenated gzip
//! members read as one stream ([`MultiGzDecoder`]), so a file compressed in
//! parallel pieces reads like any other.

use flate2::Compression;
use flate2::read::MultiGzDecoder;
use flate2::write::GzEncoder;
use std::fs::File;
use std::io::{self, BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

/// The two bytes every gzip member starts with.
const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];

/// An opened history file: plain bytes, or bytes decompressed on the fly.
pub enum Input {
    /// An uncompressed file.
    Plain(File),
    /// A gzip file (one or more members).
    Gzip(Box<MultiGzDecoder<BufReader<File>>>),
}

impl Input {
    /// Opens `path`, reading through gzip when its first bytes say so.
    ///
    /// # Errors
    /// The file cannot be opened or read.
    pub fn open(path: &Path) -> io::Result<Input> {
        if is_gzip(path) {
            let f = File::open(path)?;
            Ok(Input::Gzip(Box::new(MultiGzDecoder::new(
                BufReader::with_capacity(1 << 16, f),
            ))))
        } else {
            Ok(Input::Plain(File::open(path)?))
        }
    }
}

impl Read for Input {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Input::Plain(f) => f.read(buf),
            Input::Gzip(g) => g.read(buf),
        }
    }
}

/// A stream whose first bytes were read ahead, for sniffing its format
/// without seeking or opening it again (stdin, a pipe, a FIFO): those bytes
/// are read again first. A gzip stream is decompressed, and `head` holds the
/// first decompressed bytes.
pub struct Peeked {
    head: Vec<u8>,
    at: usize,
    rest: Box<dyn Read + Send>,
    gzip: bool,
}

impl Peeked {
    /// Reads up to `n` bytes ahead of `r` (through gzip when its first
    /// bytes say so).
    ///
    /// # Errors
    /// Reading `r` failed.
    pub fn new(r: impl Read + Send + 'static, n: usize) -> io::Result<Peeked> {
        let mut raw = Vec::with_capacity(n);
        let mut r = Box::new(r) as Box<dyn Read + Send>;
        read_up_to(&mut r, &mut raw, n)?;
        if !raw.starts_with(&GZIP_MAGIC) {
            return Ok(Peeked {
                head: raw,
                at: 0,
                rest: r,
                gzip: false,
            });
        }
        let mut gz: Box<dyn Read + Send> = Box::new(MultiGzDecoder::new(BufReader::with_capacity(
            1 << 16,
            io::Cursor::new(raw).chain(r),
        )));
        let mut head = Vec::with_capacity(n);
        read_up_to(&mut gz, &mut head, n)?;
        Ok(Peeked {
            head,
            at: 0,
            rest: gz,
            gzip: true,
        })
    }

    /// The first bytes (decompressed), as read ahead.
    pub fn head(&self) -> &[u8] {
        &self.head
    }

    /// Whether the stream is gzip-compressed.
    pub fn is_gzip(&self) -> bool {
        self.gzip
    }
}

/// Reads until `buf` holds `n` bytes or `r` ends.
fn read_up_to(r: &mut dyn Read, buf: &mut Vec<u8>, n: usize) -> io::Result<()> {
    let mut chunk = [0u8; 8192];
    while buf.len() < n {
        let want = (n - buf.len()).min(chunk.len());
        match r.read(&mut chunk[..want]) {
            Ok(0) => break,
            Ok(k) => buf.extend_from_slice(&chunk[..k]),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

impl Read for Peeked {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.at < self.head.len() {
            let n = buf.len().min(self.head.len() - self.at);
            buf[..n].copy_from_slice(&self.head[self.at..self.at + n]);
            self.at += n;
            return Ok(n);
        }
        self.rest.read(buf)
    }
}

/// Whether `path` starts with the gzip magic bytes (false when unreadable:
/// opening it again reports the real error).
pub fn is_gzip(path: &Path) -> bool {
    let mut head = [0u8; 2];
    File::open(path)
        .and_then(|mut f| f.read_exact(&mut head))
        .is_ok_and(|()| head == GZIP_MAGIC)
}

/// `path` without a trailing `.gz`, for guessing the format inside.
pub(crate) fn without_gz(path: &Path) -> PathBuf {
    match path.extension() {
        Some(e) if e.eq_ignore_ascii_case("gz") => path.with_extension(""),
        _ => path.to_path_buf(),
    }
}

/// Bytes compressed as one gzip member by one thread.
const MEMBER_BYTES: usize = 8 << 20;
/// Threads compressing at once, at most.
const MAX_COMPRESS_THREADS: usize = 4;

/// Compresses `src` into `dst` (gzip, `level` 0–9) through a temporary file
/// that is synced and renamed into place, so `dst` is either absent or
/// whole. Returns the compressed size in bytes. `src` is left alone.
///
/// The input is cut into [`MEMBER_BYTES`] pieces compressed on up to
/// [`MAX_COMPRESS_THREADS`] threads, each piece one gzip member, written in
/// order: one stream to every reader ([`MultiGzDecoder`], `gzip -d`), at
/// the cost of a few bytes per member. At most two pieces per thread are
/// in memory.
///
/// # Errors
/// Reading `src` or writing `dst` failed (the temporary file is removed).
pub fn compress_file(src: &Path, dst: &Path, level: u32) -> io::Result<u64> {
    let mut tmp = dst.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(MAX_COMPRESS_THREADS);
    let result = (|| {
        let mut input = BufReader::with_capacity(1 << 20, File::open(src)?);
        let mut out = BufWriter::with_capacity(1 << 20, File::create(&tmp)?);
        let level = Compression::new(level.min(9));
        loop {
            let mut pieces = Vec::with_capacity(threads);
            for _ in 0..threads {
                let mut piece = Vec::with_capacity(MEMBER_BYTES);
                (&mut input)
                    .take(MEMBER_BYTES as u64)
                    .read_to_end(&mut piece)?;
                if piece.is_empty() {
                    break;
                }
                pieces.push(piece);
            }
            if pieces.is_empty() {
                break;
            }
            let packed: Vec<io::Result<Vec<u8>>> = std::thread::scope(|s| {
                let handles: Vec<_> = pieces
                    .iter()
                    .map(|p| s.spawn(move || gzip_member(p, level)))
                    .collect();
                handles
                    .into_iter()
                    .map(|h| {
                        h.join().unwrap_or_else(|_| {
                            Err(io::Error::other("a compression thread panicked"))
                        })
                    })
                    .collect()
            });
            for member in packed {
                out.write_all(&member?)?;
            }
        }
        let file = out.into_inner().map_err(|e| e.into_error())?;
        file.sync_all()?;
        let len = file.metadata()?.len();
        std::fs::rename(&tmp, dst)?;
        Ok(len)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// One gzip member holding `bytes`.
fn gzip_member(bytes: &[u8], level: Compression) -> io::Result<Vec<u8>> {
    let mut gz = GzEncoder::new(Vec::with_capacity(bytes.len() / 4), level);
    gz.write_all(bytes)?;
    gz.finish()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_compressed_file_reads_back_byte_for_byte_and_plain_files_are_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path().join("h.jsonl");
        let text: String = (0..5000)
            .map(|i| format!("{{\"index\":{i},\"type\":\"invoke\"}}\n"))
            .collect();
        std::fs::write(&src, &text).unwrap();
        assert!(!is_gzip(&src));
        let dst = dir.path().join("h.jsonl.gz");
        let len = compress_file(&src, &dst, 1).unwrap();
        assert!(is_gzip(&dst));
        assert!(len < text.len() as u64 / 4, "{len} bytes");
        let mut back = String::new();
        Input::open(&dst)
            .unwrap()
            .read_to_string(&mut back)
            .unwrap();
        assert_eq!(back, text);
        assert!(!dir.path().join("h.jsonl.gz.tmp").exists());
        assert_eq!(without_gz(&dst), src);
    }

    #[test]
    fn a_file_of_many_members_reads_back_whole() {
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path().join("big.jsonl");
        // More than two members' worth, not a multiple of a member.
        let line = "{\"index\":1,\"type\":\"invoke\",\"value\":[[\"append\",7,1]]}\n";
        let text = line.repeat(2 * MEMBER_BYTES / line.len() + 777);
        std::fs::write(&src, &text).unwrap();
        let dst = dir.path().join("big.jsonl.gz");
        compress_file(&src, &dst, 6).unwrap();
        let mut back = String::new();
        Input::open(&dst)
            .unwrap()
            .read_to_string(&mut back)
            .unwrap();
        assert_eq!(back.len(), text.len());
        assert!(back == text);
    }

    #[test]
    fn a_peeked_stream_reads_whole_and_through_gzip() {
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path().join("h.jsonl");
        let text: String = (0..3000)
            .map(|i| format!("{{\"index\":{i},\"type\":\"invoke\"}}\n"))
            .collect();
        std::fs::write(&src, &text).unwrap();
        let dst = dir.path().join("h.jsonl.gz");
        compress_file(&src, &dst, 1).unwrap();
        for (path, gzip) in [(&src, false), (&dst, true)] {
            // A pipe-like reader: no seeking, read once.
            let bytes = std::fs::read(path).unwrap();
            let mut p = Peeked::new(io::Cursor::new(bytes), 100).unwrap();
            assert_eq!(p.is_gzip(), gzip);
            assert_eq!(p.head(), &text.as_bytes()[..100]);
            let mut back = String::new();
            p.read_to_string(&mut back).unwrap();
            assert_eq!(back, text);
        }
    }
}
