//! The reference model the lossy filesystem is checked against: for every
//! file, what the application sees and what is durable, and the operations
//! property tests drive both the model and the real filesystem with.
//!
//! Semantics: file *data and size* are lossy until the file is synced. In
//! the default mode (as LazyFS) the namespace (create, rename, unlink,
//! mkdir, rmdir) is durable at once, and a file created and never synced is
//! durable as an empty file. In strict mode ([`Model::strict`]) every
//! namespace operation is a step of a sequence; the namespace after each
//! step is remembered, and a directory fsync makes durable the namespace
//! as of the newest step that changed that directory, a file's sync the
//! namespace as of the newest step that created that file (always a prefix
//! of the steps). `lose` makes every file its durable self again (and, in
//! strict mode, the namespace the durable one); `checkpoint` makes
//! everything durable.
//!
//! This model keeps whole namespace snapshots; the filesystem keeps undo
//! steps ([`super::journal`]), so the two are independent implementations
//! of the same rule. Paths are names in a test directory, with at most one
//! level of subdirectory (`d/a`).

use std::collections::BTreeMap;

/// One operation of a property test (paths are relative to a test
/// directory).
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
    /// `rename(from, to)` of a file (replaces `to`).
    Rename {
        /// Old name.
        from: String,
        /// New name.
        to: String,
    },
    /// `unlink`.
    Unlink(String),
    /// `mkdir`.
    Mkdir(String),
    /// `rmdir`.
    Rmdir(String),
    /// `fsync` of a directory (`""`: the test directory itself).
    FsyncDir(String),
    /// Drop every un-synced byte (and, strict, namespace operation).
    Lose,
    /// Make everything durable.
    Checkpoint,
}

#[derive(Clone, Debug, Default)]
struct Inode {
    durable: Vec<u8>,
    visible: Vec<u8>,
}

/// A name: a file (its inode) or a directory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Node {
    File(usize),
    Dir,
}

/// One strict-mode namespace step: the directories it changed, the inode
/// it created, and the namespace after it.
#[derive(Clone, Debug)]
struct Step {
    dirs: Vec<String>,
    created: Option<usize>,
    after: BTreeMap<String, Node>,
}

/// The model: names to inodes, and each inode's durable and visible bytes.
#[derive(Clone, Debug, Default)]
pub struct Model {
    strict: bool,
    names: BTreeMap<String, Node>,
    durable_names: BTreeMap<String, Node>,
    steps: Vec<Step>,
    inodes: Vec<Inode>,
}

/// What an operation returned in the model (an errno-like outcome).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// It succeeded.
    Ok,
    /// The file (or its directory) does not exist (`ENOENT`).
    NotFound,
    /// The name exists (`EEXIST`).
    Exists,
    /// The directory is not empty (`ENOTEMPTY`).
    NotEmpty,
}

fn parent(path: &str) -> String {
    path.rsplit_once('/')
        .map(|(d, _)| d.to_string())
        .unwrap_or_default()
}

impl Model {
    /// An empty directory, default (LazyFS) semantics.
    pub fn new() -> Model {
        Model::default()
    }

    /// An empty directory, strict semantics (namespace lossy too).
    pub fn strict() -> Model {
        Model {
            strict: true,
            ..Model::default()
        }
    }

    fn dir_exists(&self, dir: &str) -> bool {
        dir.is_empty() || self.names.get(dir) == Some(&Node::Dir)
    }

    fn file(&self, path: &str) -> Option<usize> {
        match self.names.get(path) {
            Some(Node::File(i)) => Some(*i),
            _ => None,
        }
    }

    /// The namespace changed (`dirs`, creating `created`).
    fn changed(&mut self, dirs: Vec<String>, created: Option<usize>) {
        if self.strict {
            self.steps.push(Step {
                dirs,
                created,
                after: self.names.clone(),
            });
        } else {
            self.durable_names = self.names.clone();
        }
    }

    fn commit_through(&mut self, last: Option<usize>) {
        if let Some(i) = last
            && let Some(step) = self.steps.get(i)
        {
            self.durable_names = step.after.clone();
            self.steps.drain(..=i);
        }
    }

    fn sync_file(&mut self, i: usize) {
        if let Some(ino) = self.inodes.get_mut(i) {
            ino.durable = ino.visible.clone();
        }
        let last = self.steps.iter().rposition(|s| s.created == Some(i));
        self.commit_through(last);
    }

    /// Applies `op`.
    pub fn apply(&mut self, op: &Op) -> Outcome {
        match op {
            Op::Write { path, off, data } | Op::SyncWrite { path, off, data } => {
                let i = match self.file(path) {
                    Some(i) => i,
                    None if self.dir_exists(&parent(path)) => {
                        self.inodes.push(Inode::default());
                        let i = self.inodes.len() - 1;
                        self.names.insert(path.clone(), Node::File(i));
                        self.changed(vec![parent(path)], Some(i));
                        i
                    }
                    None => return Outcome::NotFound,
                };
                let Some(ino) = self.inodes.get_mut(i) else {
                    return Outcome::NotFound;
                };
                let end = *off as usize + data.len();
                if ino.visible.len() < end {
                    ino.visible.resize(end, 0);
                }
                ino.visible[*off as usize..end].copy_from_slice(data);
                if matches!(op, Op::SyncWrite { .. }) {
                    self.sync_file(i);
                }
                Outcome::Ok
            }
            Op::Truncate { path, len } => {
                match self.file(path).and_then(|i| self.inodes.get_mut(i)) {
                    Some(ino) => {
                        ino.visible.resize(*len as usize, 0);
                        Outcome::Ok
                    }
                    None => Outcome::NotFound,
                }
            }
            Op::Fallocate { path, off, len } => {
                match self.file(path).and_then(|i| self.inodes.get_mut(i)) {
                    Some(ino) => {
                        let end = (*off + *len) as usize;
                        if ino.visible.len() < end {
                            ino.visible.resize(end, 0);
                        }
                        Outcome::Ok
                    }
                    None => Outcome::NotFound,
                }
            }
            Op::Fsync(path) | Op::Fdatasync(path) => match self.file(path) {
                Some(i) => {
                    self.sync_file(i);
                    Outcome::Ok
                }
                None => Outcome::NotFound,
            },
            Op::Rename { from, to } => {
                let Some(i) = self.file(from) else {
                    return Outcome::NotFound;
                };
                if !self.dir_exists(&parent(to)) {
                    return Outcome::NotFound;
                }
                if from != to {
                    self.names.remove(from);
                    self.names.insert(to.clone(), Node::File(i));
                    self.changed(vec![parent(from), parent(to)], None);
                }
                Outcome::Ok
            }
            Op::Unlink(path) => match self.file(path) {
                Some(_) => {
                    self.names.remove(path);
                    self.changed(vec![parent(path)], None);
                    Outcome::Ok
                }
                None => Outcome::NotFound,
            },
            Op::Mkdir(dir) => {
                if self.names.contains_key(dir) {
                    Outcome::Exists
                } else if !self.dir_exists(&parent(dir)) {
                    Outcome::NotFound
                } else {
                    self.names.insert(dir.clone(), Node::Dir);
                    self.changed(vec![parent(dir)], None);
                    Outcome::Ok
                }
            }
            Op::Rmdir(dir) => {
                if self.names.get(dir) != Some(&Node::Dir) {
                    return Outcome::NotFound;
                }
                let prefix = format!("{dir}/");
                if self.names.keys().any(|n| n.starts_with(&prefix)) {
                    return Outcome::NotEmpty;
                }
                self.names.remove(dir);
                self.changed(vec![parent(dir)], None);
                Outcome::Ok
            }
            Op::FsyncDir(dir) => {
                if !self.dir_exists(dir) {
                    return Outcome::NotFound;
                }
                let last = self
                    .steps
                    .iter()
                    .rposition(|s| s.dirs.iter().any(|d| d == dir));
                self.commit_through(last);
                Outcome::Ok
            }
            Op::Lose => {
                for ino in &mut self.inodes {
                    ino.visible = ino.durable.clone();
                }
                self.names = self.durable_names.clone();
                self.steps.clear();
                Outcome::Ok
            }
            Op::Checkpoint => {
                for ino in &mut self.inodes {
                    ino.durable = ino.visible.clone();
                }
                self.durable_names = self.names.clone();
                self.steps.clear();
                Outcome::Ok
            }
        }
    }

    fn view(&self, names: &BTreeMap<String, Node>, durable: bool) -> BTreeMap<String, Vec<u8>> {
        names
            .iter()
            .filter_map(|(n, node)| match node {
                Node::Dir => Some((format!("{n}/"), Vec::new())),
                Node::File(i) => self.inodes.get(*i).map(|ino| {
                    let bytes = if durable { &ino.durable } else { &ino.visible };
                    (n.clone(), bytes.clone())
                }),
            })
            .collect()
    }

    /// Every name with the bytes the application sees (a directory is
    /// `name/` with no bytes).
    pub fn visible(&self) -> BTreeMap<String, Vec<u8>> {
        self.view(&self.names, false)
    }

    /// Every durable name with its durable bytes (what `lose` would leave).
    pub fn durable(&self) -> BTreeMap<String, Vec<u8>> {
        self.view(&self.durable_names, true)
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

    #[test]
    fn strict_mode_loses_namespace_steps_after_the_last_commit() {
        let mut m = Model::strict();
        m.apply(&w("a", 0, b"one"));
        m.apply(&Op::Fsync("a".into()));
        assert_eq!(m.apply(&Op::Mkdir("d".into())), Outcome::Ok);
        assert_eq!(m.apply(&w("d/x", 0, b"x")), Outcome::Ok);
        assert_eq!(m.apply(&Op::Rmdir("d".into())), Outcome::NotEmpty);
        m.apply(&Op::Rename {
            from: "a".into(),
            to: "d/a".into(),
        });
        m.apply(&Op::Unlink("d/x".into()));
        // A sync of d/x commits its creation and the mkdir before it.
        let mut m2 = m.clone();
        m.apply(&Op::Lose);
        assert_eq!(
            m.visible().keys().collect::<Vec<_>>(),
            ["a"],
            "fsync of a committed its create; the rest is undone"
        );
        assert_eq!(m.visible()["a"], b"one");
        m2.apply(&Op::FsyncDir("d".into()));
        assert_eq!(
            m2.durable().keys().collect::<Vec<_>>(),
            ["d/", "d/a"],
            "d's fsync commits through the unlink, the newest step in d"
        );
        m2.apply(&Op::Lose);
        assert_eq!(m2.visible()["d/a"], b"one");
        assert_eq!(m2.apply(&Op::FsyncDir("e".into())), Outcome::NotFound);
        assert_eq!(m2.apply(&w("e/x", 0, b"x")), Outcome::NotFound);
    }

    #[test]
    fn default_mode_keeps_every_namespace_step() {
        let mut m = Model::new();
        m.apply(&Op::Mkdir("d".into()));
        m.apply(&w("d/x", 0, b"x"));
        m.apply(&Op::Lose);
        assert_eq!(m.visible().keys().collect::<Vec<_>>(), ["d/", "d/x"]);
        assert_eq!(m.visible()["d/x"], b"");
    }
}
