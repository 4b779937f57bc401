//! The lossy filesystem's cache, driven without a mount (no root needed)
//! by random operation sequences, against the reference model: the bytes
//! each file shows agree after every operation, and after every `lose`.

#![allow(clippy::unwrap_used, clippy::panic)]

mod lossyfs_common;

use nemesis::lossyfs::cache::{BLOCK, Cache};
use nemesis::lossyfs::model::{Model, Op, Outcome};
use proptest::prelude::*;
use std::collections::BTreeMap;
use std::fs::{self, File};
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

/// The filesystem's bookkeeping over `dir`, minus FUSE.
struct Driver<'a> {
    dir: &'a Path,
    cache: Cache,
}

impl Driver<'_> {
    fn ino(&self, name: &str) -> Option<u64> {
        fs::metadata(self.dir.join(name)).ok().map(|m| m.ino())
    }

    fn opener(&self, name: &str) -> impl Fn() -> io::Result<(File, String)> + use<> {
        let p = self.dir.join(name);
        let n = name.to_string();
        move || Ok((File::options().read(true).write(true).open(&p)?, n.clone()))
    }

    fn size(&self, name: &str, ino: u64) -> u64 {
        self.cache
            .size(ino)
            .unwrap_or_else(|| fs::metadata(self.dir.join(name)).unwrap().len())
    }

    fn apply(&mut self, op: &Op) -> Outcome {
        match op {
            Op::Write { path, off, data } | Op::SyncWrite { path, off, data } => {
                if self.ino(path).is_none() {
                    File::create(self.dir.join(path)).unwrap();
                }
                let ino = self.ino(path).unwrap();
                let open = self.opener(path);
                self.cache.write(ino, &open, *off, data).unwrap();
                if matches!(op, Op::SyncWrite { .. }) {
                    self.cache.sync(ino).unwrap();
                }
                Outcome::Ok
            }
            Op::Truncate { path, len } => match self.ino(path) {
                Some(ino) => {
                    let open = self.opener(path);
                    self.cache.truncate(ino, &open, *len).unwrap();
                    Outcome::Ok
                }
                None => Outcome::NotFound,
            },
            Op::Fallocate { path, off, len } => match self.ino(path) {
                Some(ino) => {
                    if off + len > self.size(path, ino) {
                        let open = self.opener(path);
                        self.cache.truncate(ino, &open, off + len).unwrap();
                    }
                    Outcome::Ok
                }
                None => Outcome::NotFound,
            },
            Op::Fsync(path) | Op::Fdatasync(path) => match self.ino(path) {
                Some(ino) => {
                    self.cache.sync(ino).unwrap();
                    Outcome::Ok
                }
                None => Outcome::NotFound,
            },
            Op::Rename { from, to } => {
                let Some(ino) = self.ino(from) else {
                    return Outcome::NotFound;
                };
                if let Some(t) = self.ino(to)
                    && t != ino
                {
                    self.cache.forget(t);
                }
                fs::rename(self.dir.join(from), self.dir.join(to)).unwrap();
                self.cache.set_path(ino, to);
                Outcome::Ok
            }
            Op::Unlink(path) => match self.ino(path) {
                Some(ino) => {
                    self.cache.forget(ino);
                    fs::remove_file(self.dir.join(path)).unwrap();
                    Outcome::Ok
                }
                None => Outcome::NotFound,
            },
            Op::Mkdir(_) | Op::Rmdir(_) | Op::FsyncDir(_) => {
                panic!("directory operations are driven through the mount only")
            }
            Op::Lose => {
                self.cache.lose().unwrap();
                assert_eq!(self.cache.used_blocks(), 0);
                Outcome::Ok
            }
            Op::Checkpoint => {
                self.cache.checkpoint().unwrap();
                assert_eq!(self.cache.used_blocks(), 0);
                Outcome::Ok
            }
        }
    }

    fn visible(&self) -> BTreeMap<String, Vec<u8>> {
        let mut out = BTreeMap::new();
        for e in fs::read_dir(self.dir).unwrap() {
            let e = e.unwrap();
            let name = e.file_name().to_string_lossy().into_owned();
            let f = File::open(e.path()).unwrap();
            let ino = f.metadata().unwrap().ino();
            out.insert(name, self.cache.read(ino, &f, 0, 1 << 20).unwrap());
        }
        out
    }

    fn durable(&self) -> BTreeMap<String, Vec<u8>> {
        fs::read_dir(self.dir)
            .unwrap()
            .map(|e| {
                let e = e.unwrap();
                (
                    e.file_name().to_string_lossy().into_owned(),
                    fs::read(e.path()).unwrap(),
                )
            })
            .collect()
    }
}

fn check(ops: &[Op]) -> Result<(), TestCaseError> {
    let dir = tempfile::tempdir().unwrap();
    let mut d = Driver {
        dir: dir.path(),
        cache: Cache::new(1 << 20),
    };
    let mut m = Model::new();
    for (i, op) in ops.iter().enumerate() {
        prop_assert_eq!(d.apply(op), m.apply(op), "outcome of op {} {:?}", i, op);
        prop_assert_eq!(d.visible(), m.visible(), "visible after op {} {:?}", i, op);
        if matches!(op, Op::Lose | Op::Checkpoint) {
            prop_assert_eq!(d.durable(), m.durable(), "durable after op {} {:?}", i, op);
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]
    #[test]
    fn cache_agrees_with_the_model(ops in lossyfs_common::ops(40)) {
        check(&ops)?;
    }
}

#[test]
fn fsync_then_lose_then_truncate_up_keeps_the_synced_bytes() {
    // The sequence that turned LazyFS's file into zeros (local-fs).
    let ops = vec![
        Op::Write {
            path: "a".into(),
            off: 0,
            data: vec![7; 100],
        },
        Op::Fsync("a".into()),
        Op::Write {
            path: "a".into(),
            off: 50,
            data: vec![9; 5000],
        },
        Op::Lose,
        Op::Truncate {
            path: "a".into(),
            len: 6000,
        },
        Op::Truncate {
            path: "a".into(),
            len: 30,
        },
        Op::Fallocate {
            path: "a".into(),
            off: 0,
            len: 9000,
        },
        Op::Lose,
    ];
    check(&ops).unwrap();
}

#[test]
fn a_full_cache_writes_through_and_counts_it() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("f");
    File::create(&p).unwrap();
    let ino = fs::metadata(&p).unwrap().ino();
    let mut cache = Cache::new(2);
    let open = || {
        Ok((
            File::options().read(true).write(true).open(&p)?,
            "f".to_string(),
        ))
    };
    cache
        .write(ino, &open, 0, &vec![1; 2 * BLOCK as usize])
        .unwrap();
    assert_eq!(cache.stats().overflows, 0);
    cache.write(ino, &open, 2 * BLOCK, &[2; 10]).unwrap();
    assert_eq!(cache.stats().overflows, 1, "the third block does not fit");
    assert_eq!(cache.stats().overflow_bytes, 10);
    let lost = cache.lose().unwrap();
    assert!(
        lost.is_empty(),
        "the overflowing write synced the file: {lost:?}"
    );
    assert_eq!(fs::metadata(&p).unwrap().len(), 2 * BLOCK + 10);
}
