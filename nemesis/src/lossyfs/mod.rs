//! A lossy filesystem (LazyFS semantics, our own FUSE daemon): a passthrough
//! over a backing directory that keeps written file data in its own cache
//! until `fsync`/`fdatasync`/an `O_SYNC`/`O_DSYNC` write makes it durable,
//! and on command loses every un-synced byte — what a power loss or OS
//! crash does to a database that acknowledged before it synced.
//!
//! - [`cache`]: the un-synced state (dirty 4 KiB blocks, cached sizes) and
//!   sync/lose/checkpoint; bounded, and a full cache is counted, never silent.
//! - [`fs`]: the FUSE operations (`fuser`, pure Rust, mounted through
//!   `fusermount3`/`mount(2)`; no libfuse).
//! - [`ctl`]: the control protocol on a Unix socket; a command is answered
//!   once it has taken effect.
//! - [`corrupt`]: damage to durable files (bitflip, truncate, chunk
//!   snapshot/restore), run by the daemon on its backing directory.
//! - [`journal`]: strict mode's record of un-committed namespace operations.
//! - [`model`]: the reference model the property tests check it against.
//!
//! Semantics decided here: file data and sizes are lossy. By default
//! create, rename, unlink, mkdir, rmdir, symlink and link are applied to
//! the backing directory at once and are never lost (as LazyFS). In strict
//! mode ([`Options::strict`], `--strict`) they are lost too unless made
//! durable: a directory fsync commits the namespace operations up to the
//! newest one that changed that directory, a file's fsync commits up to
//! its creation, and `lose` undoes the rest newest first ([`journal`] has
//! the exact rule). `syncfs`, `sync`
//! and `sync_file_range` never reach a FUSE filesystem, so a database on it
//! must use `fsync` for anything it needs durable. Disk faults (`fail`)
//! make reads, writes or fsyncs of chosen files return `EIO`, or writes
//! and creates return `ENOSPC`, until `heal`.
//!
//! The daemon is `harness lossyfs mount BACKING MOUNTPOINT --socket PATH`
//! ([`run`]); commands are `harness lossyfs ctl PATH lose|checkpoint|…`
//! ([`ctl::send`]).

pub mod cache;
pub mod corrupt;
pub mod ctl;
pub mod fs;
pub mod journal;
pub mod model;

use crate::rng::Rng;
use ctl::{Command, Reply};
use std::io::{self, BufRead, BufReader, Write};
use std::os::unix::fs::MetadataExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// How to run the daemon.
#[derive(Clone, Debug)]
pub struct Options {
    /// The directory holding what is durable.
    pub backing: PathBuf,
    /// Where the lossy view is mounted.
    pub mountpoint: PathBuf,
    /// The control socket.
    pub socket: PathBuf,
    /// Cache limit in bytes (dirty data held at once).
    pub cache_bytes: u64,
    /// FUSE worker threads.
    pub threads: usize,
    /// Strict mode: namespace operations are lost too without a
    /// directory (or, for a create, file) fsync.
    pub strict: bool,
}

/// Applies one control command.
pub fn apply(shared: &fs::Shared, snapshots: &Path, cmd: &Command) -> Reply {
    let mut reply = Reply {
        ok: true,
        ..Reply::default()
    };
    let r: io::Result<String> = (|| match cmd {
        Command::Lose => {
            let mut inos = shared.cache().inodes();
            let lost = shared.cache().lose();
            let mut back = Vec::new();
            let undone = shared.journal().map(|mut j| j.lose(&mut back));
            // The kernel's pages of those files hold the lost bytes, and
            // so may its pages of a file the journal brought back (written
            // before its unlink, through a handle that kept the kernel's
            // inode). Invalidated with no lock held.
            for p in &back {
                if let Ok(m) = std::fs::symlink_metadata(shared.root.join(p)) {
                    inos.push(shared.fuse_ino(m.ino()));
                }
            }
            shared.invalidate(&inos);
            reply.files = lost?;
            let undone = match undone {
                Some(n) => format!("; undid {} namespace operations", n?),
                None => String::new(),
            };
            Ok(format!(
                "lost {} un-synced bytes in {} files{undone}",
                reply.dirty_bytes(),
                reply.files.len()
            ))
        }
        Command::Checkpoint => {
            reply.files = shared.cache().checkpoint()?;
            if let Some(mut j) = shared.journal() {
                j.commit_all();
            }
            Ok(format!(
                "synced {} bytes in {} files",
                reply.dirty_bytes(),
                reply.files.len()
            ))
        }
        Command::Report => {
            let (files, blocks) = {
                let cache = shared.cache();
                (cache.report()?, cache.used_blocks())
            };
            reply.files = files;
            let ns = match shared.journal() {
                Some(j) => format!(", {} namespace operations un-synced", j.pending()),
                None => String::new(),
            };
            Ok(format!(
                "{} un-synced bytes in {} files ({blocks} blocks cached){ns}",
                reply.dirty_bytes(),
                reply.files.len(),
            ))
        }
        Command::Fail(f) => {
            shared.faults().push(f.clone());
            Ok(format!("failing {} on {:?}", f.error.as_str(), f.prefix))
        }
        Command::Heal => {
            let n = std::mem::take(&mut *shared.faults()).len();
            Ok(format!("ended {n} disk faults"))
        }
        Command::Corrupt { path, how, seed } => {
            let mut rng = Rng::new(*seed);
            let file = corrupt::pick_file(&shared.root, path, &mut rng)?;
            let rel = file
                .strip_prefix(&shared.root)
                .map(|p| p.to_string_lossy().into_owned())
                .unwrap_or_default();
            // The damage is to the durable file; un-synced data of it would
            // hide the damage, so it is dropped (the database is down). A
            // snapshot changes nothing and runs under a live database: it
            // copies the durable bytes and keeps the cache.
            let ino = shared.fuse_ino(std::fs::metadata(&file)?.ino());
            let changes = !matches!(how, corrupt::Corruption::Snapshot { .. });
            if changes {
                shared.cache().forget(ino);
            }
            let d = corrupt::apply(how, &file, &rel, snapshots, &mut rng);
            if changes {
                shared.invalidate(&[ino]);
            }
            let d = d?;
            let msg = format!("{} {} in {}", d.count, d.unit, d.file);
            reply.damage.push(d);
            Ok(msg)
        }
    })();
    match r {
        Ok(m) => reply.message = m,
        Err(e) => {
            reply.ok = false;
            reply.message = e.to_string();
        }
    }
    reply.stats = shared.cache().stats();
    reply
}

fn serve_one(shared: &fs::Shared, snapshots: &Path, stream: UnixStream) -> io::Result<()> {
    let mut line = String::new();
    BufReader::new(&stream).read_line(&mut line)?;
    let reply = match line.trim().parse::<Command>() {
        Ok(cmd) => {
            let r = apply(shared, snapshots, &cmd);
            tracing::info!("lossyfs: {cmd}: {}", r.message);
            r
        }
        Err(e) => Reply {
            ok: false,
            message: e,
            stats: shared.cache().stats(),
            ..Reply::default()
        },
    };
    (&stream).write_all(reply.render().as_bytes())
}

/// Serves control commands on `listener`, one connection at a time (so
/// commands are applied in the order they arrive), until it fails.
pub fn serve_control(shared: Arc<fs::Shared>, snapshots: PathBuf, listener: UnixListener) {
    for stream in listener.incoming() {
        match stream {
            Ok(s) => {
                if let Err(e) = serve_one(&shared, &snapshots, s) {
                    tracing::warn!("lossyfs control connection: {e}");
                }
            }
            Err(e) => {
                tracing::warn!("lossyfs control socket: {e}");
                return;
            }
        }
    }
}

/// Mounts the filesystem and serves it and its control socket until it is
/// unmounted (`fusermount3 -u`, or the process is killed).
///
/// # Errors
/// The backing directory, the socket or the mount could not be set up.
pub fn run(opts: &Options) -> io::Result<()> {
    let max_blocks = (opts.cache_bytes / cache::BLOCK).max(1) as usize;
    let shared = Arc::new(fs::Shared::new(&opts.backing, max_blocks, opts.strict)?);
    let _ = std::fs::remove_file(&opts.socket);
    let listener = UnixListener::bind(&opts.socket)?;
    let snapshots = opts.socket.with_extension("snapshots");
    let s2 = shared.clone();
    let snaps = snapshots.clone();
    std::thread::Builder::new()
        .name("lossyfs-ctl".into())
        .spawn(move || serve_control(s2, snaps, listener))?;
    let mut config = fuser::Config::default();
    config.mount_options = vec![
        fuser::MountOption::FSName("lossyfs".into()),
        fuser::MountOption::Subtype("lossyfs".into()),
        fuser::MountOption::DefaultPermissions,
    ];
    config.acl = fuser::SessionACL::All;
    config.n_threads = Some(opts.threads.max(1));
    config.clone_fd = opts.threads > 1;
    let trash = shared.journal().map(|j| j.trash_dir().to_path_buf());
    let session = fuser::Session::new(fs::LossyFs::new(shared.clone()), &opts.mountpoint, &config)?;
    let _ = shared.notifier.set(session.notifier());
    let r = session.run();
    let _ = std::fs::remove_file(&opts.socket);
    let _ = std::fs::remove_dir_all(&snapshots);
    if let Some(t) = trash {
        let _ = std::fs::remove_dir_all(t);
    }
    r
}
