//! The reference model the lossy filesystem is checked against: for every
//! file, what the application sees and what is durable, and the operations
//! property tests drive both the model and the real filesystem with.
//!
//! Semantics (the filesystem's default mode, as LazyFS): file *data and
//! size* are lossy until the file is synced; the namespace (create, rename,
//! unlink) is durable at once. A file created and never synced is durable
//! as an empty file. `lose` makes every file its durable self again;
//! `checkpoint` makes everything durable.

use std::collections::BTreeMap;

/// One operation of a property test (paths are names in one directory).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Op {
    /// `pwrite(data, off)` (creates the file when missing).
    Write {
        /// File name.
        path: String,
        /// Offset.
        off: u64,
        /// Bytes.
        data: Vec<u8>,
    },
    /// A write on an `O_DSYNC` handle: durable when it returns.
    SyncWrite {
        /// File name.
        path: String,
        /// Offset.
        off: u64,
        /// Bytes.
        data: Vec<u8>,
    },
    /// `ftruncate(len)`.
    Truncate {
        /// File name.
        path: String,
        /// New size.
        len: u64,
    },
    /// `fallocate(mode 0, off, len)`: grows the file to at least `off+len`.
    Fallocate {
        /// File name.
        path: String,
        /// Offset.
        off: u64,
        /// Length.
        len: u64,
    },
    /// `fsync`.
    Fsync(String),
    /// `fdatasync`.
    Fdatasync(String),
    /// `rename(from, to)` (replaces `to`).
    Rename {
        /// Old name.
        from: String,
        /// New name.
        to: String,
    },
    /// `unlink`.
    Unlink(String),
    /// Drop every un-synced byte.
    Lose,
    /// Make everything durable.
    Checkpoint,
}

#[derive(Clone, Debug, Default)]
struct Inode {
    durable: Vec<u8>,
    visible: Vec<u8>,
}

/// The model: names to inodes, and each inode's durable and visible bytes.
#[derive(Clone, Debug, Default)]
pub struct Model {
    names: BTreeMap<String, usize>,
    inodes: Vec<Inode>,
}

/// What an operation returned in the model (an errno-like outcome).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// It succeeded.
    Ok,
    /// The file does not exist (`ENOENT`).
    NotFound,
}

impl Model {
    /// An empty directory.
    pub fn new() -> Model {
        Model::default()
    }

    fn inode(&mut self, path: &str, create: bool) -> Option<&mut Inode> {
        let idx = match self.names.get(path) {
            Some(i) => *i,
            None if create => {
                self.inodes.push(Inode::default());
                let i = self.inodes.len() - 1;
                self.names.insert(path.to_string(), i);
                i
            }
            None => return None,
        };
        self.inodes.get_mut(idx)
    }

    /// Applies `op`.
    pub fn apply(&mut self, op: &Op) -> Outcome {
        match op {
            Op::Write { path, off, data } | Op::SyncWrite { path, off, data } => {
                let sync = matches!(op, Op::SyncWrite { .. });
                let Some(ino) = self.inode(path, true) else {
                    return Outcome::NotFound;
                };
                let end = *off as usize + data.len();
                if ino.visible.len() < end {
                    ino.visible.resize(end, 0);
                }
                ino.visible[*off as usize..end].copy_from_slice(data);
                if sync {
                    ino.durable = ino.visible.clone();
                }
                Outcome::Ok
            }
            Op::Truncate { path, len } => match self.inode(path, false) {
                Some(ino) => {
                    ino.visible.resize(*len as usize, 0);
                    Outcome::Ok
                }
                None => Outcome::NotFound,
            },
            Op::Fallocate { path, off, len } => match self.inode(path, false) {
                Some(ino) => {
                    let end = (*off + *len) as usize;
                    if ino.visible.len() < end {
                        ino.visible.resize(end, 0);
                    }
                    Outcome::Ok
                }
                None => Outcome::NotFound,
            },
            Op::Fsync(path) | Op::Fdatasync(path) => match self.inode(path, false) {
                Some(ino) => {
                    ino.durable = ino.visible.clone();
                    Outcome::Ok
                }
                None => Outcome::NotFound,
            },
            Op::Rename { from, to } => match self.names.remove(from) {
                Some(i) => {
                    self.names.insert(to.clone(), i);
                    Outcome::Ok
                }
                None => Outcome::NotFound,
            },
            Op::Unlink(path) => match self.names.remove(path) {
                Some(_) => Outcome::Ok,
                None => Outcome::NotFound,
            },
            Op::Lose => {
                for ino in &mut self.inodes {
                    ino.visible = ino.durable.clone();
                }
                Outcome::Ok
            }
            Op::Checkpoint => {
                for ino in &mut self.inodes {
                    ino.durable = ino.visible.clone();
                }
                Outcome::Ok
            }
        }
    }

    /// Every file name with the bytes the application sees.
    pub fn visible(&self) -> BTreeMap<String, Vec<u8>> {
        self.names
            .iter()
            .filter_map(|(n, i)| {
                self.inodes
                    .get(*i)
                    .map(|ino| (n.clone(), ino.visible.clone()))
            })
            .collect()
    }

    /// Every file name with its durable bytes.
    pub fn durable(&self) -> BTreeMap<String, Vec<u8>> {
        self.names
            .iter()
            .filter_map(|(n, i)| {
                self.inodes
                    .get(*i)
                    .map(|ino| (n.clone(), ino.durable.clone()))
            })
            .collect()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn w(path: &str, off: u64, data: &[u8]) -> Op {
        Op::Write {
            path: path.into(),
            off,
            data: data.to_vec(),
        }
    }

    #[test]
    fn lose_reverts_unsynced_data_but_keeps_names() {
        let mut m = Model::new();
        m.apply(&w("a", 0, b"hello"));
        m.apply(&Op::Fsync("a".into()));
        m.apply(&w("a", 5, b" world"));
        m.apply(&w("b", 0, b"new"));
        m.apply(&Op::Rename {
            from: "b".into(),
            to: "c".into(),
        });
        assert_eq!(m.visible()["a"], b"hello world");
        m.apply(&Op::Lose);
        let v = m.visible();
        assert_eq!(v["a"], b"hello");
        assert_eq!(v["c"], b"", "created, never synced: durable and empty");
        assert!(!v.contains_key("b"));
    }

    #[test]
    fn truncate_then_grow_shows_zeros_and_sync_writes_survive() {
        let mut m = Model::new();
        m.apply(&Op::SyncWrite {
            path: "a".into(),
            off: 0,
            data: b"abcdef".to_vec(),
        });
        m.apply(&Op::Truncate {
            path: "a".into(),
            len: 2,
        });
        m.apply(&Op::Fallocate {
            path: "a".into(),
            off: 0,
            len: 4,
        });
        assert_eq!(m.visible()["a"], b"ab\0\0");
        m.apply(&Op::Lose);
        assert_eq!(m.visible()["a"], b"abcdef");
        assert_eq!(m.apply(&Op::Fsync("zz".into())), Outcome::NotFound);
        m.apply(&Op::Unlink("a".into()));
        assert!(m.durable().is_empty());
    }
}
