//! Strict mode's namespace journal: create, mkdir, symlink, link, unlink,
//! rmdir and rename are applied to the backing directory at once (so the
//! application sees them), but each is also recorded here with how to undo
//! it, and `lose` undoes every one not yet committed, newest first.
//!
//! Durability rule (decided here, in the spirit of ext4's ordered journal,
//! which commits metadata operations in order): the journal is a sequence,
//! and a commit always takes a *prefix* of it.
//!
//! - `fsync`/`fdatasync` of a directory commits every entry up to the
//!   newest one that changed that directory (for a rename: either its old
//!   or its new parent).
//! - Making a file's data durable (`fsync`, `fdatasync`, an `O_SYNC`/
//!   `O_DSYNC` write) commits every entry up to the newest one that created
//!   that file (POSIX leaves the name undefined without a directory fsync;
//!   ext4 and XFS persist it with the file, and databases rely on that).
//! - `checkpoint` commits everything.
//!
//! Because commits are prefixes, the un-committed entries are always a
//! suffix, and undoing it newest first is always possible: a removed name
//! was moved into the trash directory (`<backing>.trash`, beside the
//! backing directory, so it never shows in the mount) and is moved back; a
//! created name is removed; a renamed one is renamed back. Committing an
//! entry deletes the trash it held. The trash of a previous mount is
//! deleted at mount (what a crash of the daemon leaves is not recoverable).

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

/// How to undo one step of a namespace operation (paths relative to the
/// backing root; trash paths absolute).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Undo {
    /// A name was created (file, symlink, hard link): remove it.
    Remove(PathBuf),
    /// A directory was created: remove it (empty by then).
    RemoveDir(PathBuf),
    /// A name was moved to the trash: move it back.
    Restore {
        /// Where it is in the trash.
        trash: PathBuf,
        /// The name it had.
        to: PathBuf,
    },
    /// A name was renamed: rename it back.
    Move {
        /// Its current name.
        from: PathBuf,
        /// Its old name.
        to: PathBuf,
    },
}

/// One recorded namespace operation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// The directories it changed (relative; the root is the empty path).
    pub dirs: Vec<PathBuf>,
    /// The inode it created (a file's `fsync` commits it), if any.
    pub created: Option<u64>,
    /// Undo steps, applied last to first.
    pub undo: Vec<Undo>,
}

/// The un-committed namespace operations of a strict-mode mount.
#[derive(Debug)]
pub struct Journal {
    root: PathBuf,
    trash: PathBuf,
    next: u64,
    entries: Vec<Entry>,
    undone: u64,
}

/// The parent directory of a relative path (the root for a top-level name).
pub fn parent_of(rel: &Path) -> PathBuf {
    rel.parent().map(Path::to_path_buf).unwrap_or_default()
}

impl Journal {
    /// A journal for the backing directory `root` (absolute); its trash is
    /// `<root>.trash`, emptied here.
    ///
    /// # Errors
    /// The trash directory cannot be made.
    pub fn new(root: &Path) -> io::Result<Journal> {
        let mut t = root.as_os_str().to_os_string();
        t.push(".trash");
        let trash = PathBuf::from(t);
        if trash.exists() {
            fs::remove_dir_all(&trash)?;
        }
        fs::create_dir_all(&trash)?;
        Ok(Journal {
            root: root.to_path_buf(),
            trash,
            next: 0,
            entries: Vec::new(),
            undone: 0,
        })
    }

    /// The trash directory.
    pub fn trash_dir(&self) -> &Path {
        &self.trash
    }

    /// Un-committed entries.
    pub fn pending(&self) -> usize {
        self.entries.len()
    }

    /// Entries undone by every `lose` so far.
    pub fn undone(&self) -> u64 {
        self.undone
    }

    /// Records an operation already applied.
    pub fn record(&mut self, e: Entry) {
        self.entries.push(e);
    }

    /// Moves `rel` (a file, or an empty directory) into the trash and
    /// returns the undo step that brings it back.
    ///
    /// # Errors
    /// The rename into the trash failed (nothing changed).
    pub fn trash(&mut self, rel: &Path) -> io::Result<Undo> {
        self.next += 1;
        let t = self.trash.join(self.next.to_string());
        fs::rename(self.root.join(rel), &t)?;
        Ok(Undo::Restore {
            trash: t,
            to: rel.to_path_buf(),
        })
    }

    fn commit_through(&mut self, last: Option<usize>) -> usize {
        let Some(i) = last else { return 0 };
        for e in self.entries.drain(..=i) {
            for u in e.undo {
                if let Undo::Restore { trash, .. } = u {
                    let r = if trash.is_dir() {
                        fs::remove_dir_all(&trash)
                    } else {
                        fs::remove_file(&trash)
                    };
                    if let Err(e) = r {
                        tracing::warn!("lossyfs: trash {}: {e}", trash.display());
                    }
                }
            }
        }
        i + 1
    }

    /// `fsync` of directory `dir`: commits the prefix through the newest
    /// entry that changed it; returns how many entries were committed.
    pub fn commit_dir(&mut self, dir: &Path) -> usize {
        let last = self
            .entries
            .iter()
            .rposition(|e| e.dirs.iter().any(|d| d == dir));
        self.commit_through(last)
    }

    /// A file's data was made durable: commits the prefix through the
    /// newest entry that created inode `ino`.
    pub fn commit_file(&mut self, ino: u64) -> usize {
        let last = self.entries.iter().rposition(|e| e.created == Some(ino));
        self.commit_through(last)
    }

    /// Commits everything.
    pub fn commit_all(&mut self) -> usize {
        let n = self.entries.len();
        self.commit_through(n.checked_sub(1))
    }

    /// Undoes every un-committed entry, newest first; returns how many,
    /// and pushes onto `back` every name (relative) it put a file back at
    /// (out of the trash, or renamed back): the kernel may still hold
    /// pages of those inodes from before (an unlink drops the file's
    /// un-synced bytes from the cache, not from the kernel's pages).
    /// A step that fails is logged and skipped (the rest still run).
    ///
    /// # Errors
    /// The first step that failed (after all were tried).
    pub fn lose(&mut self, back: &mut Vec<PathBuf>) -> io::Result<usize> {
        let n = self.entries.len();
        let mut first_err = None;
        while let Some(e) = self.entries.pop() {
            for u in e.undo.iter().rev() {
                match self.undo(u) {
                    Ok(()) => {
                        if let Undo::Restore { to, .. } | Undo::Move { to, .. } = u {
                            back.push(to.clone());
                        }
                    }
                    Err(err) => {
                        tracing::warn!("lossyfs: undo {u:?}: {err}");
                        first_err.get_or_insert(err);
                    }
                }
            }
        }
        self.undone += n as u64;
        match first_err {
            Some(e) => Err(e),
            None => Ok(n),
        }
    }

    fn undo(&self, u: &Undo) -> io::Result<()> {
        let at = |p: &Path| self.root.join(p);
        match u {
            Undo::Remove(p) => fs::remove_file(at(p)),
            Undo::RemoveDir(p) => fs::remove_dir_all(at(p)),
            Undo::Restore { trash, to } => fs::rename(trash, at(to)),
            Undo::Move { from, to } => fs::rename(at(from), at(to)),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn lose_undoes_the_uncommitted_suffix_and_a_dir_fsync_commits_a_prefix() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("back");
        fs::create_dir(&root).unwrap();
        fs::write(root.join("old"), b"durable").unwrap();
        let mut j = Journal::new(&root).unwrap();
        assert!(dir.path().join("back.trash").is_dir());
        // mkdir d; create d/x; unlink old; rename d/x -> y
        fs::create_dir(root.join("d")).unwrap();
        j.record(Entry {
            dirs: vec![PathBuf::new()],
            created: None,
            undo: vec![Undo::RemoveDir("d".into())],
        });
        fs::write(root.join("d/x"), b"").unwrap();
        j.record(Entry {
            dirs: vec!["d".into()],
            created: Some(7),
            undo: vec![Undo::Remove("d/x".into())],
        });
        let u = j.trash(Path::new("old")).unwrap();
        j.record(Entry {
            dirs: vec![PathBuf::new()],
            created: None,
            undo: vec![u],
        });
        fs::rename(root.join("d/x"), root.join("y")).unwrap();
        j.record(Entry {
            dirs: vec!["d".into(), PathBuf::new()],
            created: None,
            undo: vec![Undo::Move {
                from: "y".into(),
                to: "d/x".into(),
            }],
        });
        assert_eq!(j.commit_file(7), 2, "the create and the mkdir before it");
        assert_eq!(j.commit_dir(Path::new("nothing")), 0);
        let mut back = Vec::new();
        assert_eq!(j.lose(&mut back).unwrap(), 2);
        // Newest first: the rename moved back, then the unlinked file.
        assert_eq!(back, vec![PathBuf::from("d/x"), PathBuf::from("old")]);
        assert_eq!(fs::read(root.join("old")).unwrap(), b"durable");
        assert!(root.join("d/x").exists(), "committed create, rename undone");
        assert!(!root.join("y").exists());
        assert_eq!(j.pending(), 0);
        assert_eq!(j.undone(), 2);
        // Committing an unlink deletes its trash.
        let u = j.trash(Path::new("old")).unwrap();
        j.record(Entry {
            dirs: vec![PathBuf::new()],
            created: None,
            undo: vec![u],
        });
        assert_eq!(j.commit_dir(Path::new("")), 1);
        assert_eq!(fs::read_dir(j.trash_dir()).unwrap().count(), 0);
        assert_eq!(j.lose(&mut Vec::new()).unwrap(), 0);
        assert!(!root.join("old").exists());
    }
}
