//! `/run/<test>/<timestamp>/archive.tar.gz`: a run as one file, to attach to
//! a bug report. Streamed: the tar (ustar, GNU long names and base-256
//! sizes past ustar's limits) is written file by file, in [`CHUNK`] reads,
//! through gzip into the response's bounded channel, so memory does not
//! grow with the run (measured in BENCHMARKS.md). Only regular files whose
//! real path lies inside the store go in (`runs::open_inside`); symlinks
//! leading out are left out, as the file routes refuse them.

use super::{CHUNK_BYTES, CONVERSION_AHEAD_CHUNKS, Content, Reply};
use axum::body::Body;
use axum::http::StatusCode;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use tokio::sync::OwnedSemaphorePermit;

/// Bytes per read of a file.
const CHUNK: usize = 64 * 1024;
/// Most entries (files and directories) in one archive.
pub const MAX_ENTRIES: usize = 100_000;

/// The files and directories of `dir`, relative, sorted, depth first;
/// symlinks skipped (a link inside the store is reached by its target's
/// own run anyway).
pub fn entries(dir: &Path) -> io::Result<Vec<(PathBuf, bool)>> {
    let mut out = Vec::new();
    let mut stack = vec![PathBuf::new()];
    while let Some(rel) = stack.pop() {
        let mut here: Vec<(PathBuf, bool)> = Vec::new();
        for e in std::fs::read_dir(dir.join(&rel))? {
            let e = e?;
            let ft = e.file_type()?;
            if ft.is_symlink() {
                continue;
            }
            here.push((rel.join(e.file_name()), ft.is_dir()));
        }
        here.sort();
        for (p, is_dir) in here.into_iter().rev() {
            if is_dir {
                stack.push(p.clone());
            }
            out.push((p, is_dir));
            if out.len() > MAX_ENTRIES {
                return Err(io::Error::other(format!(
                    "more than {MAX_ENTRIES} files: too many for one archive"
                )));
            }
        }
    }
    out.sort();
    Ok(out)
}

fn octal(field: &mut [u8], v: u64) {
    let s = format!("{v:0width$o}", width = field.len() - 1);
    field[..s.len()].copy_from_slice(s.as_bytes());
}

/// A 512-byte ustar header.
fn header(name: &[u8], size: u64, mode: u32, mtime: u64, kind: u8) -> [u8; 512] {
    let mut h = [0u8; 512];
    let n = name.len().min(100);
    h[..n].copy_from_slice(&name[..n]);
    octal(&mut h[100..108], u64::from(mode));
    octal(&mut h[108..116], 0);
    octal(&mut h[116..124], 0);
    if size < 0o77_777_777_777 {
        octal(&mut h[124..136], size);
    } else {
        // GNU base-256: high bit set, big-endian.
        h[124] = 0x80;
        h[128..136].copy_from_slice(&size.to_be_bytes());
    }
    octal(&mut h[136..148], mtime.min(0o77_777_777_777));
    h[156] = kind;
    h[257..263].copy_from_slice(b"ustar\0");
    h[263..265].copy_from_slice(b"00");
    h[148..156].copy_from_slice(b"        ");
    let sum: u64 = h.iter().map(|&b| u64::from(b)).sum();
    let s = format!("{sum:06o}\0 ");
    h[148..156].copy_from_slice(s.as_bytes());
    h
}

fn pad<W: Write>(w: &mut W, size: u64) -> io::Result<()> {
    let rem = (512 - (size % 512) as usize) % 512;
    w.write_all(&[0u8; 512][..rem])
}

/// A header for `name`, with a GNU long-name entry before it when the name
/// does not fit ustar's 100 bytes.
fn write_header<W: Write>(
    w: &mut W,
    name: &str,
    size: u64,
    mode: u32,
    mtime: u64,
    kind: u8,
) -> io::Result<()> {
    let bytes = name.as_bytes();
    if bytes.len() > 100 {
        let mut long = bytes.to_vec();
        long.push(0);
        w.write_all(&header(b"././@LongLink", long.len() as u64, 0o644, 0, b'L'))?;
        w.write_all(&long)?;
        pad(w, long.len() as u64)?;
    }
    w.write_all(&header(bytes, size, mode, mtime, kind))
}

/// Writes `dir` (a run directory inside `root`) as a gzipped tar under the
/// top directory `top` to `out`. A file that shrinks while it is read is
/// padded with zeros to the size its header gave (a running run's log).
///
/// # Errors
/// A read or write error (a client that went away is a write error).
pub fn write_tar_gz<W: Write>(root: &Path, dir: &Path, top: &str, out: W) -> io::Result<W> {
    let mut gz = flate2::write::GzEncoder::new(out, flate2::Compression::fast());
    write_header(&mut gz, &format!("{top}/"), 0, 0o755, 0, b'5')?;
    let mut buf = vec![0u8; CHUNK];
    for (rel, is_dir) in entries(dir)? {
        let name = format!("{top}/{}", rel.to_string_lossy());
        let path = dir.join(&rel);
        if is_dir {
            write_header(&mut gz, &format!("{name}/"), 0, 0o755, 0, b'5')?;
            continue;
        }
        let Ok((file, meta)) = super::runs::open_inside(root, &path) else {
            continue;
        };
        if !meta.is_file() {
            continue;
        }
        let mtime = meta
            .modified()
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_secs());
        let size = meta.len();
        write_header(&mut gz, &name, size, 0o644, mtime, b'0')?;
        let mut left = size;
        let mut file = file.take(size);
        while left > 0 {
            let n = match file.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            gz.write_all(&buf[..n])?;
            left -= n as u64;
        }
        while left > 0 {
            let n = left.min(CHUNK as u64) as usize;
            gz.write_all(&vec![0u8; n])?;
            left -= n as u64;
        }
        pad(&mut gz, size)?;
    }
    gz.write_all(&[0u8; 1024])?;
    gz.finish()
}

/// `<run>/archive.tar.gz` when the run has no such file: the run directory
/// as one archive. `None` for anything else.
pub(super) fn reply(root: &Path, target: &Path) -> Option<Reply> {
    if target.file_name()? != "archive.tar.gz" || std::fs::symlink_metadata(target).is_ok() {
        return None;
    }
    let run = target.parent()?.canonicalize().ok()?;
    if !run.starts_with(root) || run == root {
        return None;
    }
    let is_run = super::runs::RUN_FILES
        .iter()
        .any(|f| std::fs::symlink_metadata(run.join(f)).is_ok());
    if !is_run {
        return None;
    }
    // `<test>-<timestamp>` (or the run's own name when it is at the root).
    let top = run
        .strip_prefix(root)
        .map(|p| p.to_string_lossy().replace('/', "-"))
        .unwrap_or_else(|_| "run".to_string());
    Some(Reply {
        status: StatusCode::OK,
        content_type: "application/gzip",
        body: Content::Archive(root.to_path_buf(), run, top),
        location: None,
        retry_after_s: None,
    })
}

/// `dir` as a tar.gz made on a blocking thread that holds `permit`, into a
/// bounded channel (as `stream::conversion_body`); a failure mid-way breaks the
/// transfer rather than ending it short.
pub(super) fn body(root: PathBuf, dir: PathBuf, top: String, permit: OwnedSemaphorePermit) -> Body {
    let (tx, rx) = tokio::sync::mpsc::channel(CONVERSION_AHEAD_CHUNKS);
    tokio::task::spawn_blocking(move || {
        let _permit = permit;
        let err_tx = tx.clone();
        let out = super::stream::ChannelWriter {
            tx,
            buf: Vec::with_capacity(CHUNK_BYTES),
        };
        let done = write_tar_gz(&root, &dir, &top, out)
            .and_then(|mut out| std::io::Write::flush(&mut out));
        if let Err(e) = done {
            let _ = err_tx.blocking_send(Err(e));
        }
    });
    super::stream::stream_body(rx)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn a_run_directory_round_trips_through_tar() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().canonicalize().unwrap();
        let run = root.join("t/2026");
        std::fs::create_dir_all(run.join("elle")).unwrap();
        std::fs::write(run.join("test.json"), b"{}\n").unwrap();
        let long = "x".repeat(140);
        std::fs::write(run.join("elle").join(&long), vec![7u8; 70_000]).unwrap();
        std::os::unix::fs::symlink("/etc/passwd", run.join("out")).unwrap();
        let gz = write_tar_gz(&root, &run, "t-2026", Vec::new()).unwrap();
        let mut tar = Vec::new();
        flate2::read::GzDecoder::new(&gz[..])
            .read_to_end(&mut tar)
            .unwrap();
        let x = tmp.path().join("x");
        std::fs::create_dir(&x).unwrap();
        std::fs::write(tmp.path().join("a.tar"), &tar).unwrap();
        let st = std::process::Command::new("tar")
            .arg("-xf")
            .arg(tmp.path().join("a.tar"))
            .arg("-C")
            .arg(&x)
            .status()
            .unwrap();
        assert!(st.success());
        assert_eq!(std::fs::read(x.join("t-2026/test.json")).unwrap(), b"{}\n");
        assert_eq!(
            std::fs::read(x.join("t-2026/elle").join(&long)).unwrap(),
            vec![7u8; 70_000]
        );
        assert!(!x.join("t-2026/out").exists(), "symlinks are left out");
    }

    #[test]
    fn huge_sizes_use_base_256() {
        let h = header(b"f", 1 << 40, 0o644, 0, b'0');
        assert_eq!(h[124], 0x80);
        assert_eq!(&h[128..136], &(1u64 << 40).to_be_bytes());
    }
}
