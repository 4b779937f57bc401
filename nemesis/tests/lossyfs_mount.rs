//! The lossy filesystem mounted for real (needs root and /dev/fuse), driven
//! by random operation sequences through ordinary system calls and checked
//! against the reference model after every operation and every `lose`;
//! then unmounted, with no mount, daemon thread or socket left behind.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod lossyfs_common;

use nemesis::lossyfs::ctl::{self, Command};
use nemesis::lossyfs::model::{Model, Op, Outcome};
use nemesis::lossyfs::{self, Options};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use std::collections::BTreeMap;
use std::fs::{self, File};
use std::io::{self, ErrorKind};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

struct Mounted {
    mnt: PathBuf,
    socket: PathBuf,
    thread: Option<std::thread::JoinHandle<io::Result<()>>>,
    _dir: tempfile::TempDir,
}

fn is_mounted(mnt: &Path) -> bool {
    let mounts = fs::read_to_string("/proc/self/mounts").unwrap();
    let m = mnt.to_string_lossy();
    mounts.lines().any(|l| l.split(' ').nth(1) == Some(&*m))
}

impl Mounted {
    fn new(cache_bytes: u64) -> Mounted {
        Mounted::with(cache_bytes, false)
    }

    fn with(cache_bytes: u64, strict: bool) -> Mounted {
        let dir = tempfile::tempdir().unwrap();
        let (back, mnt) = (dir.path().join("back"), dir.path().join("mnt"));
        fs::create_dir_all(&back).unwrap();
        fs::create_dir_all(&mnt).unwrap();
        let opts = Options {
            backing: back,
            mountpoint: mnt.clone(),
            socket: dir.path().join("ctl.sock"),
            cache_bytes,
            threads: 2,
            strict,
        };
        let thread = std::thread::spawn(move || lossyfs::run(&opts));
        let t = Instant::now();
        while !is_mounted(&mnt) || !dir.path().join("ctl.sock").exists() {
            assert!(
                t.elapsed() < Duration::from_secs(10),
                "mount did not appear"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        Mounted {
            mnt,
            socket: dir.path().join("ctl.sock"),
            thread: Some(thread),
            _dir: dir,
        }
    }

    fn ctl(&self, c: Command) -> ctl::Reply {
        let r = ctl::send(&self.socket, &c, Duration::from_secs(30)).unwrap();
        assert!(r.ok, "{c}: {}", r.message);
        r
    }

    fn unmount(mut self) {
        let st = std::process::Command::new("fusermount3")
            .arg("-u")
            .arg(&self.mnt)
            .status()
            .unwrap();
        assert!(st.success());
        let r = self.thread.take().unwrap().join().unwrap();
        assert!(r.is_ok(), "daemon ended with {r:?}");
        assert!(!is_mounted(&self.mnt));
        assert!(!self.socket.exists(), "the socket is removed at unmount");
    }
}

/// A test that fails before [`Mounted::unmount`] still unmounts (lazily):
/// a mount left behind fails the suite's whole-machine checks after it.
impl Drop for Mounted {
    fn drop(&mut self) {
        if self.thread.is_some() && is_mounted(&self.mnt) {
            let _ = std::process::Command::new("fusermount3")
                .args(["-u", "-z"])
                .arg(&self.mnt)
                .status();
        }
    }
}

fn exists(p: &Path) -> bool {
    fs::symlink_metadata(p).is_ok()
}

fn apply(m: &Mounted, dir: &Path, op: &Op) -> Outcome {
    let p = |n: &str| dir.join(n);
    match op {
        Op::Write { path, off, data } | Op::SyncWrite { path, off, data } => {
            let mut o = File::options();
            o.write(true).create(true);
            if matches!(op, Op::SyncWrite { .. }) {
                o.custom_flags(libc::O_DSYNC);
            }
            match o.open(p(path)) {
                Ok(f) => f.write_all_at(data, *off).unwrap(),
                Err(e) if e.kind() == ErrorKind::NotFound => return Outcome::NotFound,
                Err(e) => panic!("open {path}: {e}"),
            }
            Outcome::Ok
        }
        Op::Truncate { path, len } if exists(&p(path)) => {
            File::options()
                .write(true)
                .open(p(path))
                .unwrap()
                .set_len(*len)
                .unwrap();
            Outcome::Ok
        }
        Op::Fallocate { path, off, len } if exists(&p(path)) => {
            let f = File::options().write(true).open(p(path)).unwrap();
            nix::fcntl::fallocate(
                &f,
                nix::fcntl::FallocateFlags::empty(),
                *off as i64,
                *len as i64,
            )
            .unwrap();
            Outcome::Ok
        }
        Op::Fsync(path) if exists(&p(path)) => {
            File::open(p(path)).unwrap().sync_all().unwrap();
            Outcome::Ok
        }
        Op::Fdatasync(path) if exists(&p(path)) => {
            File::open(p(path)).unwrap().sync_data().unwrap();
            Outcome::Ok
        }
        Op::Rename { from, to } => match fs::rename(p(from), p(to)) {
            Ok(()) => Outcome::Ok,
            Err(e) if e.kind() == ErrorKind::NotFound => Outcome::NotFound,
            Err(e) => panic!("rename: {e}"),
        },
        Op::Unlink(path) => match fs::remove_file(p(path)) {
            Ok(()) => Outcome::Ok,
            Err(e) if e.kind() == ErrorKind::NotFound => Outcome::NotFound,
            Err(e) => panic!("unlink: {e}"),
        },
        Op::Mkdir(d) => match fs::create_dir(p(d)) {
            Ok(()) => Outcome::Ok,
            Err(e) if e.kind() == ErrorKind::NotFound => Outcome::NotFound,
            Err(e) if e.kind() == ErrorKind::AlreadyExists => Outcome::Exists,
            Err(e) => panic!("mkdir: {e}"),
        },
        Op::Rmdir(d) => match fs::remove_dir(p(d)) {
            Ok(()) => Outcome::Ok,
            Err(e) if e.kind() == ErrorKind::NotFound => Outcome::NotFound,
            Err(e) if e.kind() == ErrorKind::DirectoryNotEmpty => Outcome::NotEmpty,
            Err(e) => panic!("rmdir: {e}"),
        },
        Op::FsyncDir(d) => match File::open(p(d)) {
            Ok(f) => {
                f.sync_all().unwrap();
                Outcome::Ok
            }
            Err(e) if e.kind() == ErrorKind::NotFound => Outcome::NotFound,
            Err(e) => panic!("open dir: {e}"),
        },
        Op::Lose => {
            m.ctl(Command::Lose);
            Outcome::Ok
        }
        Op::Checkpoint => {
            m.ctl(Command::Checkpoint);
            Outcome::Ok
        }
        _ => Outcome::NotFound,
    }
}

/// Every name under `dir` with its bytes; a subdirectory is `name/` with
/// no bytes, followed by its own names.
fn contents(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![(dir.to_path_buf(), String::new())];
    while let Some((d, prefix)) = stack.pop() {
        for e in fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            let name = format!("{prefix}{}", e.file_name().to_string_lossy());
            if e.file_type().unwrap().is_dir() {
                out.insert(format!("{name}/"), Vec::new());
                stack.push((e.path(), format!("{name}/")));
            } else {
                out.insert(name, fs::read(e.path()).unwrap());
            }
        }
    }
    out
}

#[test]
#[ignore = "needs root and /dev/fuse: run by .ci/run"]
fn mounted_filesystem_agrees_with_the_model() {
    let m = Mounted::new(256 << 20);
    let mut runner = TestRunner::new(Config {
        cases: 48,
        ..Config::default()
    });
    let case = std::sync::atomic::AtomicUsize::new(0);
    let result = runner.run(&lossyfs_common::ops(30), |ops| {
        let n = case.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = m.mnt.join(format!("case{n}"));
        fs::create_dir(&dir).unwrap();
        let mut model = Model::new();
        for (i, op) in ops.iter().enumerate() {
            prop_assert_eq!(apply(&m, &dir, op), model.apply(op), "op {} {:?}", i, op);
            prop_assert_eq!(contents(&dir), model.visible(), "after op {} {:?}", i, op);
        }
        Ok(())
    });
    m.unmount();
    result.unwrap();
}

#[test]
#[ignore = "needs root and /dev/fuse: run by .ci/run"]
fn strict_mount_loses_namespace_operations_like_the_model() {
    let m = Mounted::with(256 << 20, true);
    let mut runner = TestRunner::new(Config {
        cases: 64,
        ..Config::default()
    });
    let case = std::sync::atomic::AtomicUsize::new(0);
    let result = runner.run(&lossyfs_common::strict_ops(40), |ops| {
        let n = case.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = m.mnt.join(format!("case{n}"));
        fs::create_dir(&dir).unwrap();
        // The case directory itself must survive the case's losses.
        File::open(&m.mnt).unwrap().sync_all().unwrap();
        let mut model = Model::strict();
        for (i, op) in ops.iter().enumerate() {
            prop_assert_eq!(apply(&m, &dir, op), model.apply(op), "op {} {:?}", i, op);
            prop_assert_eq!(contents(&dir), model.visible(), "after op {} {:?}", i, op);
        }
        Ok(())
    });
    let trash = m._dir.path().join("back.trash");
    assert!(
        trash.is_dir(),
        "strict mode keeps removed names in the trash"
    );
    m.unmount();
    assert!(!trash.exists(), "the trash is removed at unmount");
    result.unwrap();
}

#[test]
#[ignore = "needs root and /dev/fuse: run by .ci/run"]
fn strict_lose_brings_back_an_unlinked_file_and_drops_an_unsynced_create() {
    let m = Mounted::with(64 << 20, true);
    fs::write(m.mnt.join("keep"), b"durable").unwrap();
    File::open(m.mnt.join("keep")).unwrap().sync_all().unwrap();
    fs::write(m.mnt.join("new"), b"never synced").unwrap();
    fs::create_dir(m.mnt.join("d")).unwrap();
    fs::rename(m.mnt.join("keep"), m.mnt.join("d/moved")).unwrap();
    let r = m.ctl(Command::Report);
    assert!(
        r.message.contains("3 namespace operations un-synced"),
        "{}",
        r.message
    );
    let r = m.ctl(Command::Lose);
    assert!(
        r.message.contains("undid 3 namespace operations"),
        "{}",
        r.message
    );
    assert_eq!(fs::read(m.mnt.join("keep")).unwrap(), b"durable");
    assert!(!m.mnt.join("new").exists());
    assert!(!m.mnt.join("d").exists());
    // Unlink, then a directory fsync: the removal is durable.
    fs::remove_file(m.mnt.join("keep")).unwrap();
    File::open(&m.mnt).unwrap().sync_all().unwrap();
    m.ctl(Command::Lose);
    assert!(!m.mnt.join("keep").exists());
    m.unmount();
}

/// A file unlinked while open, with un-synced bytes written through that
/// handle: `lose` brings the name back with the synced bytes, and the
/// kernel must not serve its pages of the un-synced ones (the open handle
/// keeps the kernel's inode, and its pages, alive across the unlink; the
/// brought-back name has the same inode number). The shape of a case CI's
/// strict proptest failed on once, where the kernel happened to keep it.
#[test]
#[ignore = "needs root and /dev/fuse: run by .ci/run"]
fn strict_lose_drops_the_kernels_pages_of_a_file_it_brings_back() {
    let m = Mounted::with(64 << 20, true);
    let keep = m.mnt.join("keep");
    fs::write(&keep, b"durable").unwrap();
    File::open(&keep).unwrap().sync_all().unwrap();
    File::open(&m.mnt).unwrap().sync_all().unwrap();
    let held = File::options().read(true).write(true).open(&keep).unwrap();
    held.write_all_at(b"LOST", 0).unwrap();
    let mut seen = [0u8; 7];
    held.read_exact_at(&mut seen, 0).unwrap();
    assert_eq!(&seen, b"LOSTble", "the un-synced bytes are visible before");
    fs::remove_file(&keep).unwrap();
    let r = m.ctl(Command::Lose);
    assert!(
        r.message.contains("undid 1 namespace operations"),
        "{}",
        r.message
    );
    assert_eq!(fs::read(&keep).unwrap(), b"durable", "by name, after lose");
    held.read_exact_at(&mut seen, 0).unwrap();
    assert_eq!(&seen, b"durable", "through the handle held across it");
    drop(held);
    m.unmount();
}

#[test]
#[ignore = "needs root and /dev/fuse: run by .ci/run"]
fn lose_reports_bytes_per_file_and_disk_faults_fail_then_heal() {
    let m = Mounted::new(64 << 20);
    let f = m.mnt.join("wal");
    fs::write(&f, vec![1u8; 10_000]).unwrap();
    File::open(&f).unwrap().sync_all().unwrap();
    File::options()
        .write(true)
        .open(&f)
        .unwrap()
        .write_all_at(&[2u8; 5000], 10_000)
        .unwrap();
    let r = m.ctl(Command::Lose);
    assert_eq!(r.files.len(), 1);
    assert_eq!(r.files[0].path, "wal");
    assert_eq!(
        (r.files[0].cached_size, r.files[0].synced_size),
        (15_000, 10_000)
    );
    assert_eq!(fs::read(&f).unwrap(), vec![1u8; 10_000]);

    m.ctl("fail eio-fsync".parse().unwrap());
    File::options()
        .write(true)
        .open(&f)
        .unwrap()
        .write_all_at(b"x", 0)
        .unwrap();
    let e = File::open(&f).unwrap().sync_all().unwrap_err();
    assert_eq!(e.raw_os_error(), Some(libc::EIO));
    m.ctl("fail enospc".parse().unwrap());
    let e = fs::write(m.mnt.join("new"), b"y").unwrap_err();
    assert_eq!(e.raw_os_error(), Some(libc::ENOSPC));
    m.ctl(Command::Heal);
    File::open(&f).unwrap().sync_all().unwrap();
    m.ctl(Command::Lose);
    assert_eq!(
        fs::read(&f).unwrap()[0],
        b'x',
        "synced after the heal: kept"
    );

    let r = m.ctl("corrupt truncate wal 100 1".parse().unwrap());
    assert_eq!(r.damage[0].count, 100);
    assert_eq!(fs::metadata(&f).unwrap().len(), 9_900);
    m.unmount();
}

#[test]
#[ignore = "needs root and /dev/fuse: run by .ci/run"]
fn snapshot_keeps_unsynced_data_and_restore_writes_the_stale_chunks_back() {
    let m = Mounted::new(64 << 20);
    let f = m.mnt.join("rel");
    fs::write(&f, vec![1u8; 10_000]).unwrap();
    File::open(&f).unwrap().sync_all().unwrap();
    File::options()
        .write(true)
        .open(&f)
        .unwrap()
        .write_all_at(&[5u8; 100], 0)
        .unwrap();
    let r = m.ctl("corrupt snapshot rel 4096 9".parse().unwrap());
    assert_eq!((r.damage[0].count, r.damage[0].unit), (3, "chunks-saved"));
    assert_eq!(
        fs::read(&f).unwrap()[..100],
        [5u8; 100],
        "a snapshot under a live database keeps its un-synced writes"
    );
    File::options()
        .write(true)
        .open(&f)
        .unwrap()
        .write_all_at(&[2u8; 10_000], 0)
        .unwrap();
    File::open(&f).unwrap().sync_all().unwrap();
    let r = m.ctl("corrupt restore rel 4096 1 9".parse().unwrap());
    assert_eq!(
        (r.damage[0].count, r.damage[0].unit),
        (3, "chunks-restored")
    );
    assert_eq!(
        fs::read(&f).unwrap(),
        vec![1u8; 10_000],
        "synced content of the snapshot"
    );
    m.unmount();
}

#[test]
#[ignore = "needs root and /dev/fuse: run by .ci/run"]
fn lose_drops_the_kernels_cached_pages_of_a_file_still_open() {
    let m = Mounted::new(64 << 20);
    let f = m.mnt.join("open");
    fs::write(&f, vec![1u8; 8192]).unwrap();
    File::open(&f).unwrap().sync_all().unwrap();
    let h = File::options().read(true).write(true).open(&f).unwrap();
    h.write_all_at(&[9u8; 8192], 0).unwrap();
    let mut buf = vec![0u8; 8192];
    h.read_exact_at(&mut buf, 0).unwrap();
    assert_eq!(buf, vec![9u8; 8192]);
    m.ctl(Command::Lose);
    h.read_exact_at(&mut buf, 0).unwrap();
    assert_eq!(
        buf,
        vec![1u8; 8192],
        "the open handle reads the durable bytes"
    );
    m.ctl("corrupt truncate open 4096 1".parse().unwrap());
    let n = h.read_at(&mut buf, 0).unwrap();
    assert_eq!(
        n, 4096,
        "a corruption's change is seen through the open handle"
    );
    drop(h);
    m.unmount();
}

#[test]
#[ignore = "needs root and /dev/fuse: run by .ci/run"]
fn lose_restores_the_sizes_and_names_the_kernel_caches() {
    use std::io::{Seek, SeekFrom};
    let m = Mounted::new(64 << 20);
    let f = m.mnt.join("grow");
    fs::write(&f, vec![1u8; 5000]).unwrap();
    File::open(&f).unwrap().sync_all().unwrap();
    let mut h = File::options().read(true).write(true).open(&f).unwrap();
    // Whole blocks written past the end (the cache takes them without
    // reading the file) and a partial one inside it.
    h.write_all_at(&[7u8; 8192], 8192).unwrap();
    h.write_all_at(&[3u8; 10], 4090).unwrap();
    assert_eq!(h.seek(SeekFrom::End(0)).unwrap(), 16_384);
    assert_eq!(fs::metadata(&f).unwrap().len(), 16_384);
    let mut buf = vec![0u8; 16_384];
    h.read_exact_at(&mut buf, 0).unwrap();
    assert_eq!(&buf[4090..4100], &[3u8; 10]);
    assert_eq!(&buf[5000..8192], &vec![0u8; 3192][..], "the gap reads zero");
    assert_eq!(&buf[8192..], &[7u8; 8192][..]);
    // A file created and never synced keeps its name (the default mode's
    // namespace is durable at once) but loses its bytes.
    let g = m.mnt.join("new");
    fs::write(&g, b"unsynced").unwrap();
    assert_eq!(fs::metadata(&g).unwrap().len(), 8);
    m.ctl(Command::Lose);
    assert_eq!(
        h.seek(SeekFrom::End(0)).unwrap(),
        5000,
        "the open handle's end is the synced size"
    );
    assert_eq!(h.metadata().unwrap().len(), 5000);
    assert_eq!(fs::metadata(&f).unwrap().len(), 5000);
    assert_eq!(fs::read(&f).unwrap(), vec![1u8; 5000]);
    assert_eq!(fs::metadata(&g).unwrap().len(), 0);
    assert_eq!(fs::read(&g).unwrap(), b"");
    drop(h);
    m.unmount();
}
