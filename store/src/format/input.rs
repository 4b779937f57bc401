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
use std::io::{self, BufReader, BufWriter, Read};
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

/// Compresses `src` into `dst` (gzip, `level` 0–9) through a temporary file
/// that is synced and renamed into place, so `dst` is either absent or
/// whole. Returns the compressed size in bytes. `src` is left alone.
///
/// # Errors
/// Reading `src` or writing `dst` failed (the temporary file is removed).
pub fn compress_file(src: &Path, dst: &Path, level: u32) -> io::Result<u64> {
    let mut tmp = dst.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    let result = (|| {
        let mut input = BufReader::with_capacity(1 << 20, File::open(src)?);
        let out = BufWriter::with_capacity(1 << 20, File::create(&tmp)?);
        let mut gz = GzEncoder::new(out, Compression::new(level.min(9)));
        io::copy(&mut input, &mut gz)?;
        let file = gz.finish()?.into_inner().map_err(|e| e.into_error())?;
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
}
