//! The FUSE operations: a passthrough over the backing directory whose
//! regular-file data and sizes go through the [`Cache`](super::cache::Cache).
//!
//! Inode numbers are the backing files' (the backing root is FUSE's inode 1,
//! and a backing inode numbered 1 takes the root's number), so hard links
//! and renames keep their identity and the cache is keyed by inode.
//!
//! The kernel caches what it can, because every FUSE round trip costs a
//! database on the mount (`lseek(SEEK_END)`, which PostgreSQL calls to
//! size a relation, is one without a cached size). Entry and attribute
//! timeouts are long ([`TTL`]; zero in strict mode, whose `lose` moves
//! names behind the kernel's back), and an open keeps the file's pages
//! (`FOPEN_KEEP_CACHE`). That is faithful because FUSE without
//! `writeback_cache` is write-through: every write still reaches the
//! daemon at once, the kernel updates its size of the file on a write
//! itself, and its page cache only ever holds what the application sees.
//! Whatever changes file contents or sizes behind the kernel's back drops
//! its pages and attributes through a FUSE notification
//! ([`Shared::invalidate`]): `lose` for every file that had un-synced
//! state and every file its journal brought back (an unlink forgets the
//! file's un-synced bytes in the cache, while an open handle can keep the
//! kernel's inode and pages of them), and a corruption for its file.
//!
//! Files and directories created through the mount are chowned to the
//! caller (the daemon runs as root, the database as its own user).
//! `O_SYNC`/`O_DSYNC` handles sync after every write. By default
//! `fsyncdir` succeeds and does nothing (the namespace is durable at once);
//! in strict mode every namespace operation is also recorded in the
//! [`Journal`], `fsyncdir` and a file's sync commit a prefix of it, and
//! unlink/rmdir/a replaced rename target move the name into the journal's
//! trash instead of deleting it (see [`super::journal`]).

use super::cache::Cache;
use super::ctl::{DiskError, DiskFault};
use super::journal::{Entry, Journal, Undo, parent_of};
use fuser::{
    Errno, FileAttr, FileHandle, FileType, Filesystem, FopenFlags, Generation, INodeNo, LockOwner,
    OpenFlags, RenameFlags, ReplyAttr, ReplyCreate, ReplyData, ReplyDirectory, ReplyEmpty,
    ReplyEntry, ReplyOpen, ReplyStatfs, ReplyWrite, Request, TimeOrNow, WriteFlags,
};
use std::collections::HashMap;
use std::ffi::OsStr;
use std::fs::{self, File, FileTimes};
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// How long the kernel may keep names and attributes in the default mode:
/// every change to them goes through the kernel, and `lose`/a corruption
/// invalidate what they change behind its back.
const TTL: Duration = Duration::from_secs(3600);

/// State shared by the FUSE threads and the control socket.
pub struct Shared {
    /// The backing directory (absolute).
    pub root: PathBuf,
    /// Un-synced data.
    pub cache: Mutex<Cache>,
    /// Inode → path relative to the root (as last seen).
    paths: Mutex<HashMap<u64, PathBuf>>,
    /// Active disk faults.
    pub faults: Mutex<Vec<DiskFault>>,
    /// Strict mode's namespace journal (`None`: the namespace is durable
    /// at once).
    pub journal: Option<Mutex<Journal>>,
    /// Sends page-cache invalidations to the kernel (set once mounted).
    pub notifier: std::sync::OnceLock<fuser::Notifier>,
    root_ino: u64,
}

impl Shared {
    /// State over `root` with a cache of `max_blocks` blocks; `strict`
    /// makes namespace operations lossy too.
    ///
    /// # Errors
    /// The root cannot be read, or (strict) its trash cannot be made.
    pub fn new(root: &Path, max_blocks: usize, strict: bool) -> io::Result<Shared> {
        let root = fs::canonicalize(root)?;
        let root_ino = fs::metadata(&root)?.ino();
        let mut paths = HashMap::new();
        paths.insert(1, PathBuf::new());
        let journal = if strict {
            Some(Mutex::new(Journal::new(&root)?))
        } else {
            None
        };
        Ok(Shared {
            root,
            cache: Mutex::new(Cache::new(max_blocks)),
            paths: Mutex::new(paths),
            faults: Mutex::new(Vec::new()),
            journal,
            notifier: std::sync::OnceLock::new(),
            root_ino,
        })
    }

    /// The cache, even after a panic elsewhere.
    pub fn cache(&self) -> MutexGuard<'_, Cache> {
        self.cache.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn paths(&self) -> MutexGuard<'_, HashMap<u64, PathBuf>> {
        self.paths.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Strict mode's journal (`None` in the default mode).
    pub fn journal(&self) -> Option<MutexGuard<'_, Journal>> {
        self.journal
            .as_ref()
            .map(|j| j.lock().unwrap_or_else(|p| p.into_inner()))
    }

    /// Records a namespace operation (strict mode; else nothing).
    fn record(&self, dirs: Vec<PathBuf>, created: Option<u64>, undo: Undo) {
        if let Some(mut j) = self.journal() {
            j.record(Entry {
                dirs,
                created,
                undo: vec![undo],
            });
        }
    }

    /// Makes `ino`'s data durable and (strict) commits its creation.
    ///
    /// # Errors
    /// Writing the backing file.
    pub fn sync_file(&self, ino: u64) -> io::Result<u64> {
        let n = self.cache().sync(ino)?;
        if let Some(mut j) = self.journal() {
            j.commit_file(ino);
        }
        Ok(n)
    }

    /// Drops the kernel's cached pages of `inos` (FUSE inode numbers);
    /// an inode the kernel does not hold is skipped. Never call it from a
    /// FUSE request handler (the kernel may wait on that request).
    pub fn invalidate(&self, inos: &[u64]) {
        let Some(n) = self.notifier.get() else { return };
        for ino in inos {
            if let Err(e) = n.inval_inode(INodeNo(*ino), 0, 0)
                && e.raw_os_error() != Some(libc::ENOENT)
            {
                tracing::warn!("lossyfs: invalidate inode {ino}: {e}");
            }
        }
    }

    /// The active disk faults.
    pub fn faults(&self) -> MutexGuard<'_, Vec<DiskFault>> {
        self.faults.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// FUSE inode number of a backing inode (a swap of 1 and the root's).
    pub fn fuse_ino(&self, st_ino: u64) -> u64 {
        if st_ino == self.root_ino {
            1
        } else if st_ino == 1 {
            self.root_ino
        } else {
            st_ino
        }
    }
}

struct Handle {
    file: Arc<File>,
    sync: bool,
}

/// The filesystem.
pub struct LossyFs {
    shared: Arc<Shared>,
    handles: Mutex<HashMap<u64, Handle>>,
    next_fh: AtomicU64,
}

fn errno(e: &io::Error) -> Errno {
    Errno::from_i32(e.raw_os_error().unwrap_or(libc::EIO))
}

fn systime(secs: i64, nsec: i64) -> SystemTime {
    if secs >= 0 {
        UNIX_EPOCH + Duration::new(secs as u64, nsec.clamp(0, 999_999_999) as u32)
    } else {
        UNIX_EPOCH
    }
}

fn kind(m: &fs::Metadata) -> FileType {
    let ft = m.file_type();
    if ft.is_dir() {
        FileType::Directory
    } else if ft.is_symlink() {
        FileType::Symlink
    } else {
        FileType::RegularFile
    }
}

fn time_of(t: TimeOrNow) -> SystemTime {
    match t {
        TimeOrNow::SpecificTime(t) => t,
        TimeOrNow::Now => SystemTime::now(),
    }
}

impl LossyFs {
    /// A filesystem over `shared`.
    pub fn new(shared: Arc<Shared>) -> LossyFs {
        LossyFs {
            shared,
            handles: Mutex::new(HashMap::new()),
            next_fh: AtomicU64::new(1),
        }
    }

    /// Entry and attribute timeout: [`TTL`] by default; zero in strict
    /// mode, whose `lose` moves names behind the kernel's back.
    fn ttl(&self) -> Duration {
        if self.shared.journal.is_some() {
            Duration::ZERO
        } else {
            TTL
        }
    }

    fn handles(&self) -> MutexGuard<'_, HashMap<u64, Handle>> {
        self.handles.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn rel(&self, ino: INodeNo) -> Result<PathBuf, Errno> {
        self.shared
            .paths()
            .get(&ino.0)
            .cloned()
            .ok_or(Errno::ESTALE)
    }

    fn attr(&self, m: &fs::Metadata) -> FileAttr {
        let ino = self.shared.fuse_ino(m.ino());
        let mut size = m.size();
        if m.is_file()
            && let Some(s) = self.shared.cache().size(ino)
        {
            size = s;
        }
        FileAttr {
            ino: INodeNo(ino),
            size,
            blocks: size.div_ceil(512),
            atime: systime(m.atime(), m.atime_nsec()),
            mtime: systime(m.mtime(), m.mtime_nsec()),
            ctime: systime(m.ctime(), m.ctime_nsec()),
            crtime: UNIX_EPOCH,
            kind: kind(m),
            perm: (m.mode() & 0o7777) as u16,
            nlink: m.nlink() as u32,
            uid: m.uid(),
            gid: m.gid(),
            rdev: m.rdev() as u32,
            blksize: 4096,
            flags: 0,
        }
    }

    /// Looks `rel` up in the backing directory and remembers its path.
    fn entry(&self, rel: PathBuf) -> Result<FileAttr, Errno> {
        let m = fs::symlink_metadata(self.shared.root.join(&rel)).map_err(|e| errno(&e))?;
        let attr = self.attr(&m);
        self.shared.paths().insert(attr.ino.0, rel);
        Ok(attr)
    }

    fn fault(&self, what: DiskError, ino: INodeNo) -> Option<Errno> {
        let faults = self.shared.faults();
        if faults.is_empty() {
            return None;
        }
        let path = self.shared.paths().get(&ino.0).cloned().unwrap_or_default();
        let hit = faults
            .iter()
            .any(|f| f.error == what && path.to_string_lossy().starts_with(&f.prefix));
        hit.then_some(if what == DiskError::Enospc {
            Errno::ENOSPC
        } else {
            Errno::EIO
        })
    }

    fn handle_file(&self, fh: FileHandle) -> Option<(Arc<File>, bool)> {
        self.handles().get(&fh.0).map(|h| (h.file.clone(), h.sync))
    }

    /// A read-write handle on the backing file behind `file` (works for
    /// unlinked files too), and the path for reports.
    fn reopen(&self, ino: INodeNo, file: &File) -> io::Result<(File, String)> {
        let f = File::options()
            .read(true)
            .write(true)
            .open(format!("/proc/self/fd/{}", file.as_raw_fd()))?;
        let path = self
            .shared
            .paths()
            .get(&ino.0)
            .map(|p| p.to_string_lossy().into_owned())
            .unwrap_or_default();
        Ok((f, path))
    }

    fn reopen_path(&self, ino: INodeNo) -> io::Result<(File, String)> {
        let rel = self
            .rel(ino)
            .map_err(|e| io::Error::from_raw_os_error(e.code()))?;
        let f = File::options()
            .read(true)
            .write(true)
            .open(self.shared.root.join(&rel))?;
        Ok((f, rel.to_string_lossy().into_owned()))
    }

    fn open_backing(&self, path: &Path, flags: i32, mode: Option<u32>) -> io::Result<File> {
        let acc = flags & libc::O_ACCMODE;
        let mut o = File::options();
        o.read(acc == libc::O_RDONLY || acc == libc::O_RDWR)
            .write(acc == libc::O_WRONLY || acc == libc::O_RDWR);
        if let Some(m) = mode {
            o.create(true).mode(m);
            if flags & libc::O_EXCL != 0 {
                o.create_new(true);
            }
        }
        // O_TRUNC becomes a cached truncate, O_APPEND is the kernel's
        // business (pwrite on an O_APPEND fd would ignore the offset),
        // O_DIRECT would demand aligned buffers of the daemon.
        let keep = flags
            & !(libc::O_ACCMODE
                | libc::O_TRUNC
                | libc::O_APPEND
                | libc::O_DIRECT
                | libc::O_CREAT
                | libc::O_EXCL);
        o.custom_flags(keep);
        o.open(path)
    }

    fn new_handle(&self, file: File, flags: i32) -> FileHandle {
        let fh = self.next_fh.fetch_add(1, Ordering::Relaxed);
        let sync = flags & (libc::O_SYNC | libc::O_DSYNC) != 0;
        self.handles().insert(
            fh,
            Handle {
                file: Arc::new(file),
                sync,
            },
        );
        FileHandle(fh)
    }

    fn chown_to(&self, path: &Path, req: &Request) {
        if let Err(e) = std::os::unix::fs::lchown(path, Some(req.uid()), Some(req.gid())) {
            tracing::warn!("lossyfs: chown {}: {e}", path.display());
        }
    }
}

impl Filesystem for LossyFs {
    fn lookup(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        match self.rel(parent).and_then(|p| self.entry(p.join(name))) {
            Ok(attr) => reply.entry(&self.ttl(), &attr, Generation(0)),
            Err(e) => reply.error(e),
        }
    }

    fn getattr(&self, _req: &Request, ino: INodeNo, fh: Option<FileHandle>, reply: ReplyAttr) {
        let m = match fh.and_then(|fh| self.handle_file(fh)) {
            Some((f, _)) => f.metadata().map_err(|e| errno(&e)),
            None => self.rel(ino).and_then(|p| {
                fs::symlink_metadata(self.shared.root.join(p)).map_err(|e| errno(&e))
            }),
        };
        match m {
            Ok(m) => reply.attr(&self.ttl(), &self.attr(&m)),
            Err(e) => reply.error(e),
        }
    }

    fn setattr(
        &self,
        _req: &Request,
        ino: INodeNo,
        mode: Option<u32>,
        uid: Option<u32>,
        gid: Option<u32>,
        size: Option<u64>,
        atime: Option<TimeOrNow>,
        mtime: Option<TimeOrNow>,
        _ctime: Option<SystemTime>,
        fh: Option<FileHandle>,
        _crtime: Option<SystemTime>,
        _chgtime: Option<SystemTime>,
        _bkuptime: Option<SystemTime>,
        _flags: Option<fuser::BsdFileFlags>,
        reply: ReplyAttr,
    ) {
        let r = (|| -> Result<FileAttr, Errno> {
            let rel = self.rel(ino)?;
            let path = self.shared.root.join(&rel);
            let io = |e: io::Error| errno(&e);
            if let Some(m) = mode {
                fs::set_permissions(&path, fs::Permissions::from_mode(m & 0o7777)).map_err(io)?;
            }
            if uid.is_some() || gid.is_some() {
                std::os::unix::fs::lchown(&path, uid, gid).map_err(io)?;
            }
            if let Some(s) = size {
                let handle = fh.and_then(|fh| self.handle_file(fh));
                let open = || match &handle {
                    Some((f, _)) => self.reopen(ino, f),
                    None => self.reopen_path(ino),
                };
                self.shared.cache().truncate(ino.0, &open, s).map_err(io)?;
            }
            if atime.is_some() || mtime.is_some() {
                let mut t = FileTimes::new();
                if let Some(a) = atime {
                    t = t.set_accessed(time_of(a));
                }
                if let Some(m) = mtime {
                    t = t.set_modified(time_of(m));
                }
                File::open(&path).and_then(|f| f.set_times(t)).map_err(io)?;
            }
            self.entry(rel)
        })();
        match r {
            Ok(a) => reply.attr(&self.ttl(), &a),
            Err(e) => reply.error(e),
        }
    }

    fn readlink(&self, _req: &Request, ino: INodeNo, reply: ReplyData) {
        match self
            .rel(ino)
            .and_then(|p| fs::read_link(self.shared.root.join(p)).map_err(|e| errno(&e)))
        {
            Ok(t) => reply.data(t.as_os_str().as_encoded_bytes()),
            Err(e) => reply.error(e),
        }
    }

    fn mkdir(
        &self,
        req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        reply: ReplyEntry,
    ) {
        if let Some(e) = self.fault(DiskError::Enospc, parent) {
            return reply.error(e);
        }
        let r = self.rel(parent).and_then(|p| {
            let rel = p.join(name);
            let path = self.shared.root.join(&rel);
            fs::create_dir(&path).map_err(|e| errno(&e))?;
            self.shared
                .record(vec![p.clone()], None, Undo::RemoveDir(rel.clone()));
            let _ = fs::set_permissions(&path, fs::Permissions::from_mode(mode & !umask & 0o7777));
            self.chown_to(&path, req);
            self.entry(rel)
        });
        match r {
            Ok(a) => reply.entry(&self.ttl(), &a, Generation(0)),
            Err(e) => reply.error(e),
        }
    }

    fn unlink(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        let r = self.rel(parent).and_then(|p| {
            let rel = p.join(name);
            let path = self.shared.root.join(&rel);
            let m = fs::symlink_metadata(&path).map_err(|e| errno(&e))?;
            if m.is_dir() {
                return Err(Errno::EISDIR);
            }
            match self.shared.journal() {
                Some(mut j) => {
                    let undo = j.trash(&rel).map_err(|e| errno(&e))?;
                    j.record(Entry {
                        dirs: vec![p],
                        created: None,
                        undo: vec![undo],
                    });
                }
                None => fs::remove_file(&path).map_err(|e| errno(&e))?,
            }
            if m.nlink() <= 1 {
                let ino = self.shared.fuse_ino(m.ino());
                self.shared.cache().forget(ino);
                self.shared.paths().remove(&ino);
            }
            Ok(())
        });
        match r {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    fn rmdir(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        match self.rel(parent).and_then(|p| {
            let rel = p.join(name);
            let path = self.shared.root.join(&rel);
            match self.shared.journal() {
                Some(mut j) => {
                    let m = fs::symlink_metadata(&path).map_err(|e| errno(&e))?;
                    if !m.is_dir() {
                        return Err(Errno::ENOTDIR);
                    }
                    if fs::read_dir(&path).map_err(|e| errno(&e))?.next().is_some() {
                        return Err(Errno::ENOTEMPTY);
                    }
                    let undo = j.trash(&rel).map_err(|e| errno(&e))?;
                    j.record(Entry {
                        dirs: vec![p],
                        created: None,
                        undo: vec![undo],
                    });
                    Ok(())
                }
                None => fs::remove_dir(path).map_err(|e| errno(&e)),
            }
        }) {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    fn symlink(
        &self,
        req: &Request,
        parent: INodeNo,
        link_name: &OsStr,
        target: &Path,
        reply: ReplyEntry,
    ) {
        let r = self.rel(parent).and_then(|p| {
            let rel = p.join(link_name);
            let path = self.shared.root.join(&rel);
            std::os::unix::fs::symlink(target, &path).map_err(|e| errno(&e))?;
            self.shared
                .record(vec![p.clone()], None, Undo::Remove(rel.clone()));
            self.chown_to(&path, req);
            self.entry(rel)
        });
        match r {
            Ok(a) => reply.entry(&self.ttl(), &a, Generation(0)),
            Err(e) => reply.error(e),
        }
    }

    fn rename(
        &self,
        _req: &Request,
        parent: INodeNo,
        name: &OsStr,
        newparent: INodeNo,
        newname: &OsStr,
        flags: RenameFlags,
        reply: ReplyEmpty,
    ) {
        let r = (|| -> Result<(), Errno> {
            let from = self.rel(parent)?.join(name);
            let to = self.rel(newparent)?.join(newname);
            let (pf, pt) = (self.shared.root.join(&from), self.shared.root.join(&to));
            let target = fs::symlink_metadata(&pt).ok();
            if flags.bits() & libc::RENAME_NOREPLACE != 0 {
                if target.is_some() {
                    return Err(Errno::EEXIST);
                }
            } else if flags.bits() != 0 {
                return Err(Errno::EINVAL);
            }
            if from == to {
                return Ok(());
            }
            match self.shared.journal() {
                Some(mut j) => {
                    let src = fs::symlink_metadata(&pf).map_err(|e| errno(&e))?;
                    let mut undo = Vec::new();
                    if let Some(t) = &target {
                        if t.is_dir() && !src.is_dir() {
                            return Err(Errno::EISDIR);
                        }
                        if !t.is_dir() && src.is_dir() {
                            return Err(Errno::ENOTDIR);
                        }
                        if t.is_dir() && fs::read_dir(&pt).map_err(|e| errno(&e))?.next().is_some()
                        {
                            return Err(Errno::ENOTEMPTY);
                        }
                        undo.push(j.trash(&to).map_err(|e| errno(&e))?);
                    }
                    if let Err(e) = fs::rename(&pf, &pt) {
                        if let Some(Undo::Restore { trash, .. }) = undo.pop() {
                            let _ = fs::rename(trash, &pt);
                        }
                        return Err(errno(&e));
                    }
                    undo.push(Undo::Move {
                        from: to.clone(),
                        to: from.clone(),
                    });
                    j.record(Entry {
                        dirs: vec![parent_of(&from), parent_of(&to)],
                        created: None,
                        undo,
                    });
                }
                None => fs::rename(&pf, &pt).map_err(|e| errno(&e))?,
            }
            if let Some(t) = target
                && t.is_file()
                && t.nlink() <= 1
            {
                self.shared.cache().forget(self.shared.fuse_ino(t.ino()));
            }
            // Lock order everywhere: cache before paths.
            let mut cache = self.shared.cache();
            let mut paths = self.shared.paths();
            for (ino, p) in paths.iter_mut() {
                if let Ok(rest) = p.strip_prefix(&from) {
                    *p = if rest.as_os_str().is_empty() {
                        to.clone()
                    } else {
                        to.join(rest)
                    };
                    cache.set_path(*ino, &p.to_string_lossy());
                }
            }
            Ok(())
        })();
        match r {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    fn link(
        &self,
        _req: &Request,
        ino: INodeNo,
        newparent: INodeNo,
        newname: &OsStr,
        reply: ReplyEntry,
    ) {
        let r = (|| -> Result<FileAttr, Errno> {
            let from = self.rel(ino)?;
            let to = self.rel(newparent)?.join(newname);
            fs::hard_link(self.shared.root.join(&from), self.shared.root.join(&to))
                .map_err(|e| errno(&e))?;
            self.shared
                .record(vec![parent_of(&to)], None, Undo::Remove(to.clone()));
            let attr = self.entry(to)?;
            self.shared.paths().insert(attr.ino.0, from);
            Ok(attr)
        })();
        match r {
            Ok(a) => reply.entry(&self.ttl(), &a, Generation(0)),
            Err(e) => reply.error(e),
        }
    }

    fn open(&self, _req: &Request, ino: INodeNo, flags: OpenFlags, reply: ReplyOpen) {
        let r = (|| -> Result<FileHandle, Errno> {
            let path = self.shared.root.join(self.rel(ino)?);
            let file = self
                .open_backing(&path, flags.0, None)
                .map_err(|e| errno(&e))?;
            if flags.0 & libc::O_TRUNC != 0 {
                self.shared
                    .cache()
                    .truncate(ino.0, &|| self.reopen(ino, &file), 0)
                    .map_err(|e| errno(&e))?;
            }
            Ok(self.new_handle(file, flags.0))
        })();
        match r {
            Ok(fh) => reply.opened(fh, FopenFlags::FOPEN_KEEP_CACHE),
            Err(e) => reply.error(e),
        }
    }

    fn read(
        &self,
        _req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        size: u32,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyData,
    ) {
        if let Some(e) = self.fault(DiskError::EioRead, ino) {
            return reply.error(e);
        }
        let Some((file, _)) = self.handle_file(fh) else {
            return reply.error(Errno::EBADF);
        };
        let cached = {
            let cache = self.shared.cache();
            cache
                .is_cached(ino.0)
                .then(|| cache.read(ino.0, &file, offset, size as usize))
        };
        // A file without un-synced state is its backing file: read it
        // without holding the cache (a write racing with this read may or
        // may not be seen, as with any overlapping read and write).
        match cached.unwrap_or_else(|| super::cache::read_backing(&file, offset, size as usize)) {
            Ok(d) => reply.data(&d),
            Err(e) => reply.error(errno(&e)),
        }
    }

    fn write(
        &self,
        _req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        data: &[u8],
        _write_flags: WriteFlags,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyWrite,
    ) {
        for what in [DiskError::EioWrite, DiskError::Enospc] {
            if let Some(e) = self.fault(what, ino) {
                return reply.error(e);
            }
        }
        let Some((file, sync)) = self.handle_file(fh) else {
            return reply.error(Errno::EBADF);
        };
        let written = self
            .shared
            .cache()
            .write(ino.0, &|| self.reopen(ino, &file), offset, data);
        // The cache lock is released here: `sync_file` takes it again.
        let r = written.and_then(|()| {
            if sync {
                self.shared.sync_file(ino.0).map(|_| ())
            } else {
                Ok(())
            }
        });
        match r {
            Ok(()) => reply.written(data.len() as u32),
            Err(e) => reply.error(errno(&e)),
        }
    }

    fn flush(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _lock_owner: LockOwner,
        reply: ReplyEmpty,
    ) {
        reply.ok();
    }

    fn release(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        _flush: bool,
        reply: ReplyEmpty,
    ) {
        self.handles().remove(&fh.0);
        reply.ok();
    }

    fn fsync(&self, _req: &Request, ino: INodeNo, _fh: FileHandle, _ds: bool, reply: ReplyEmpty) {
        if let Some(e) = self.fault(DiskError::EioFsync, ino) {
            return reply.error(e);
        }
        match self.shared.sync_file(ino.0) {
            Ok(_) => reply.ok(),
            Err(e) => reply.error(errno(&e)),
        }
    }

    fn opendir(&self, _req: &Request, _ino: INodeNo, _flags: OpenFlags, reply: ReplyOpen) {
        reply.opened(FileHandle(0), FopenFlags::empty());
    }

    fn readdir(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        mut reply: ReplyDirectory,
    ) {
        let r = (|| -> Result<Vec<(u64, FileType, std::ffi::OsString)>, Errno> {
            let rel = self.rel(ino)?;
            let dir = self.shared.root.join(&rel);
            let mut out = vec![
                (ino.0, FileType::Directory, ".".into()),
                (ino.0, FileType::Directory, "..".into()),
            ];
            for e in fs::read_dir(&dir).map_err(|e| errno(&e))? {
                let e = e.map_err(|e| errno(&e))?;
                let Ok(m) = e.metadata() else { continue };
                let fino = self.shared.fuse_ino(m.ino());
                self.shared.paths().insert(fino, rel.join(e.file_name()));
                out.push((fino, kind(&m), e.file_name()));
            }
            Ok(out)
        })();
        match r {
            Ok(entries) => {
                for (i, (ino, k, name)) in entries.into_iter().enumerate().skip(offset as usize) {
                    if reply.add(INodeNo(ino), (i + 1) as u64, k, &name) {
                        break;
                    }
                }
                reply.ok();
            }
            Err(e) => reply.error(e),
        }
    }

    fn fsyncdir(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        _ds: bool,
        reply: ReplyEmpty,
    ) {
        if let Some(e) = self.fault(DiskError::EioFsync, ino) {
            return reply.error(e);
        }
        if let Some(mut j) = self.shared.journal() {
            match self.rel(ino) {
                Ok(dir) => {
                    j.commit_dir(&dir);
                }
                Err(e) => return reply.error(e),
            }
        }
        reply.ok();
    }

    fn statfs(&self, _req: &Request, _ino: INodeNo, reply: ReplyStatfs) {
        match nix::sys::statvfs::statvfs(&self.shared.root) {
            Ok(s) => reply.statfs(
                s.blocks(),
                s.blocks_free(),
                s.blocks_available(),
                s.files(),
                s.files_free(),
                s.block_size() as u32,
                s.name_max() as u32,
                s.fragment_size() as u32,
            ),
            Err(e) => reply.error(Errno::from_i32(e as i32)),
        }
    }

    fn access(&self, _req: &Request, _ino: INodeNo, _mask: fuser::AccessFlags, reply: ReplyEmpty) {
        reply.ok();
    }

    fn create(
        &self,
        req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        flags: i32,
        reply: ReplyCreate,
    ) {
        if let Some(e) = self.fault(DiskError::Enospc, parent) {
            return reply.error(e);
        }
        let r = (|| -> Result<(FileAttr, FileHandle), Errno> {
            let rel = self.rel(parent)?.join(name);
            let path = self.shared.root.join(&rel);
            let existed = path.exists();
            let file = self
                .open_backing(&path, flags, Some(mode & !umask & 0o7777))
                .map_err(|e| errno(&e))?;
            if !existed {
                self.chown_to(&path, req);
            }
            let attr = self.entry(rel.clone())?;
            if !existed {
                self.shared.record(
                    vec![parent_of(&rel)],
                    Some(attr.ino.0),
                    Undo::Remove(rel.clone()),
                );
            }
            if existed && flags & libc::O_TRUNC != 0 {
                self.shared
                    .cache()
                    .truncate(attr.ino.0, &|| self.reopen(attr.ino, &file), 0)
                    .map_err(|e| errno(&e))?;
            }
            let attr = FileAttr {
                size: self.shared.cache().size(attr.ino.0).unwrap_or(attr.size),
                ..attr
            };
            Ok((attr, self.new_handle(file, flags)))
        })();
        match r {
            Ok((a, fh)) => reply.created(
                &self.ttl(),
                &a,
                Generation(0),
                fh,
                FopenFlags::FOPEN_KEEP_CACHE,
            ),
            Err(e) => reply.error(e),
        }
    }

    fn fallocate(
        &self,
        _req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        length: u64,
        mode: i32,
        reply: ReplyEmpty,
    ) {
        if let Some(e) = self.fault(DiskError::Enospc, ino) {
            return reply.error(e);
        }
        let Some((file, _)) = self.handle_file(fh) else {
            return reply.error(Errno::EBADF);
        };
        let r = match mode {
            0 => {
                let mut cache = self.shared.cache();
                let size = match cache.size(ino.0) {
                    Some(s) => Ok(s),
                    None => file.metadata().map(|m| m.len()),
                };
                size.and_then(|s| {
                    if offset + length > s {
                        cache.truncate(ino.0, &|| self.reopen(ino, &file), offset + length)
                    } else {
                        Ok(())
                    }
                })
                .map_err(|e| errno(&e))
            }
            libc::FALLOC_FL_KEEP_SIZE => Ok(()),
            _ => Err(Errno::EOPNOTSUPP),
        };
        match r {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }
}
