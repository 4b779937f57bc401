//! File corruption on durable (backing) files: bitflip with a probability
//! per bit, truncate the last N bytes, and snapshot/restore of file chunks
//! (a rollback of part of a file: a lost or misdirected write).
//!
//! Run by the filesystem daemon on its backing directory (so the damage is
//! on "disk", not in the lossy cache) while the database is down, as the
//! second step of kill → corrupt → start. Every result names the file and
//! what was changed, so a finding can be reproduced. A chunk's end is
//! always `start + chunk_size` clipped to the file size (Jepsen's helper
//! computes it from the previous chunk's end, which stops restoring after
//! a skipped chunk).

use crate::rng::Rng;
use std::fs::{self, File};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

/// One kind of damage.
#[derive(Clone, Debug, PartialEq)]
pub enum Corruption {
    /// Flip each bit with this probability.
    Bitflip {
        /// Per-bit probability in `[0, 1]`.
        probability: f64,
    },
    /// Remove the last `bytes` bytes.
    Truncate {
        /// Bytes to drop (clamped to the size).
        bytes: u64,
    },
    /// Save every chunk of the file (the file is unchanged).
    Snapshot {
        /// Chunk size in bytes.
        chunk: u64,
    },
    /// Put back each saved chunk with this probability.
    Restore {
        /// Chunk size in bytes (as at the snapshot).
        chunk: u64,
        /// Per-chunk probability in `[0, 1]`.
        probability: f64,
    },
}

/// What one corruption did to one file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Damage {
    /// The file, relative to the backing directory.
    pub file: String,
    /// Bits flipped, bytes removed, chunks saved or chunks restored.
    pub count: u64,
    /// The unit of `count` (`bits`, `bytes`, `chunks-saved`, `chunks-restored`).
    pub unit: &'static str,
}

/// Picks the regular file `rel` names under `root`; when it is a directory,
/// a random regular file below it (sorted walk, so a seed repeats).
///
/// # Errors
/// No such file, or no regular file under the directory.
pub fn pick_file(root: &Path, rel: &str, rng: &mut Rng) -> io::Result<PathBuf> {
    let start = root.join(rel.trim_start_matches('/'));
    let meta = fs::symlink_metadata(&start)?;
    if meta.is_file() {
        return Ok(start);
    }
    let mut files = Vec::new();
    let mut stack = vec![start];
    while let Some(dir) = stack.pop() {
        let mut entries: Vec<_> = fs::read_dir(&dir)?.filter_map(Result::ok).collect();
        entries.sort_by_key(|e| e.file_name());
        for e in entries {
            let ft = e.file_type()?;
            if ft.is_dir() {
                stack.push(e.path());
            } else if ft.is_file() && e.metadata()?.len() > 0 {
                files.push(e.path());
            }
        }
    }
    files.sort();
    if files.is_empty() {
        return Err(io::Error::new(
            io::ErrorKind::NotFound,
            format!("no non-empty regular file under {rel}"),
        ));
    }
    let i = rng.below(files.len());
    Ok(files.swap_remove(i))
}

fn uniform(rng: &mut Rng) -> f64 {
    (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64
}

fn snapshot_name(snapshots: &Path, rel: &str, start: u64, end: u64) -> PathBuf {
    snapshots.join(format!("{}:{start}:{end}", rel.replace('/', "%")))
}

/// Applies `c` to `file` (`rel` is its name for reports and snapshots).
///
/// # Errors
/// Reading or writing the file or a snapshot.
pub fn apply(
    c: &Corruption,
    file: &Path,
    rel: &str,
    snapshots: &Path,
    rng: &mut Rng,
) -> io::Result<Damage> {
    let f = File::options().read(true).write(true).open(file)?;
    let size = f.metadata()?.len();
    let damage = |count, unit| Damage {
        file: rel.to_string(),
        count,
        unit,
    };
    match c {
        Corruption::Bitflip { probability } => {
            let p = probability.clamp(0.0, 1.0);
            let bits = size * 8;
            let mut flipped = 0;
            if p > 0.0 {
                // Gaps between flipped bits are geometric (a Bernoulli
                // process per bit), so the cost is per flip, not per bit.
                let mut pos: u64 = 0;
                loop {
                    let gap = if p >= 1.0 {
                        0
                    } else {
                        let u = uniform(rng).max(f64::MIN_POSITIVE);
                        (u.ln() / (1.0 - p).ln()).floor() as u64
                    };
                    pos = pos.saturating_add(gap);
                    if pos >= bits {
                        break;
                    }
                    let mut b = [0u8; 1];
                    f.read_exact_at(&mut b, pos / 8)?;
                    b[0] ^= 1 << (pos % 8);
                    f.write_all_at(&b, pos / 8)?;
                    flipped += 1;
                    pos += 1;
                }
            }
            Ok(damage(flipped, "bits"))
        }
        Corruption::Truncate { bytes } => {
            let drop = (*bytes).min(size);
            f.set_len(size - drop)?;
            Ok(damage(drop, "bytes"))
        }
        Corruption::Snapshot { chunk } => {
            let chunk = (*chunk).max(1);
            fs::create_dir_all(snapshots)?;
            let mut saved = 0;
            let mut start = 0;
            while start < size {
                let end = (start + chunk).min(size);
                let mut buf = vec![0u8; (end - start) as usize];
                f.read_exact_at(&mut buf, start)?;
                fs::write(snapshot_name(snapshots, rel, start, end), &buf)?;
                saved += 1;
                start += chunk;
            }
            Ok(damage(saved, "chunks-saved"))
        }
        Corruption::Restore { chunk, probability } => {
            let chunk = (*chunk).max(1);
            let mut restored = 0;
            let mut start = 0;
            while start < size {
                let end = (start + chunk).min(size);
                let name = snapshot_name(snapshots, rel, start, end);
                if uniform(rng) < *probability
                    && let Ok(buf) = fs::read(&name)
                {
                    f.write_all_at(&buf, start)?;
                    restored += 1;
                }
                start += chunk;
            }
            Ok(damage(restored, "chunks-restored"))
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn bitflip_flips_about_p_of_the_bits_and_repeats_with_the_seed() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("f");
        let run = |seed| {
            fs::write(&file, vec![0u8; 8192]).unwrap();
            let d = apply(
                &Corruption::Bitflip { probability: 0.01 },
                &file,
                "f",
                dir.path(),
                &mut Rng::new(seed),
            )
            .unwrap();
            let ones: u32 = fs::read(&file)
                .unwrap()
                .iter()
                .map(|b| b.count_ones())
                .sum();
            assert_eq!(u64::from(ones), d.count);
            (d.count, fs::read(&file).unwrap())
        };
        let (n, a) = run(1);
        assert!((400..=900).contains(&n), "65536 bits at 1%: {n}");
        assert_eq!(run(1).1, a);
        assert_ne!(run(2).1, a);
    }

    #[test]
    fn truncate_drops_the_tail_and_restore_puts_every_chunk_back() {
        let dir = tempfile::tempdir().unwrap();
        let snaps = dir.path().join("snaps");
        let file = dir.path().join("f");
        let orig: Vec<u8> = (0..10_000u32).map(|i| (i % 251) as u8).collect();
        fs::write(&file, &orig).unwrap();
        let mut rng = Rng::new(3);
        let s = apply(
            &Corruption::Snapshot { chunk: 4096 },
            &file,
            "f",
            &snaps,
            &mut rng,
        );
        assert_eq!(s.unwrap().count, 3, "two whole chunks and a short last one");
        fs::write(&file, vec![7u8; 10_000]).unwrap();
        let r = apply(
            &Corruption::Restore {
                chunk: 4096,
                probability: 1.0,
            },
            &file,
            "f",
            &snaps,
            &mut rng,
        );
        assert_eq!(
            r.unwrap().count,
            3,
            "the chunk after a short one is found too"
        );
        assert_eq!(fs::read(&file).unwrap(), orig);
        let t = apply(
            &Corruption::Truncate { bytes: 100 },
            &file,
            "f",
            &snaps,
            &mut rng,
        );
        assert_eq!(t.unwrap().count, 100);
        assert_eq!(fs::metadata(&file).unwrap().len(), 9_900);
    }

    #[test]
    fn a_directory_target_picks_a_regular_file_below_it() {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir_all(dir.path().join("base/1")).unwrap();
        fs::write(dir.path().join("base/1/x"), b"data").unwrap();
        fs::write(dir.path().join("base/empty"), b"").unwrap();
        let p = pick_file(dir.path(), "base", &mut Rng::new(1)).unwrap();
        assert!(p.ends_with("base/1/x"));
        assert!(pick_file(dir.path(), "nothing", &mut Rng::new(1)).is_err());
    }

    #[test]
    fn a_partial_restore_puts_back_whole_chunks_after_skipped_ones() {
        let dir = tempfile::tempdir().unwrap();
        let snaps = dir.path().join("snaps");
        let file = dir.path().join("f");
        fs::write(&file, vec![1u8; 40_000]).unwrap();
        let mut rng = Rng::new(11);
        let s = apply(
            &Corruption::Snapshot { chunk: 1000 },
            &file,
            "f",
            &snaps,
            &mut rng,
        );
        assert_eq!(s.unwrap().count, 40);
        fs::write(&file, vec![2u8; 40_000]).unwrap();
        let how = Corruption::Restore {
            chunk: 1000,
            probability: 0.5,
        };
        let r = apply(&how, &file, "f", &snaps, &mut rng).unwrap();
        assert!((8..=32).contains(&r.count), "about half of 40: {}", r.count);
        let now = fs::read(&file).unwrap();
        let restored: Vec<usize> = (0..40).filter(|c| now[c * 1000] == 1).collect();
        assert_eq!(restored.len() as u64, r.count);
        for c in 0..40 {
            let chunk = &now[c * 1000..(c + 1) * 1000];
            assert!(
                chunk.iter().all(|b| *b == chunk[0]),
                "chunk {c} is restored whole or not at all"
            );
        }
        assert!(
            restored.windows(2).any(|w| w[1] > w[0] + 1),
            "a restored chunk follows a skipped one"
        );
    }
}
