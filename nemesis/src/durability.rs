//! Durability faults that need the lossy filesystem under the data
//! directories (`--lazyfs`): file corruption paired with a kill, and disk
//! errors for a window.
//!
//! - [`DurabilityFault::Corrupt`] (`--nemesis bitflip` / `truncate-file`):
//!   SIGKILL the nodes, lose their un-synced writes, damage one durable
//!   data file per node (the daemon picks it under the database's data
//!   files, seeded), and start them again at the stop, so the damage is
//!   read at restart. Recorded as `bitflip-file-chunks` / `truncate-file`
//!   whose completion value names per node the file and the bits flipped or
//!   bytes removed. A minority of nodes at most, as Jepsen does.
//! - [`DurabilityFault::Rollback`] (`--nemesis restore-file`): Jepsen's
//!   snapshot/restore of file chunks. At the start the daemon copies every
//!   chunk of one durable data file per node aside (the database keeps
//!   running; `snapshot-file-chunks`, value: the file and the chunks
//!   saved); at the stop the nodes are SIGKILLed, their un-synced writes
//!   lost, each saved chunk written back with the drawn probability (stale
//!   data: a lost or misdirected write) and the nodes started
//!   (`restore-file-chunks`, value: per node the file and the chunks
//!   restored). A chunk's end is its start plus the chunk size clipped to
//!   the file, never the previous chunk's end (Jepsen's bug). A heal
//!   before the stop restores nothing.
//! - [`DurabilityFault::Disk`] (`--nemesis disk-error`): reads, writes or
//!   fsyncs of the data files fail with `EIO`, or writes with `ENOSPC`,
//!   until the stop (`start-disk-error` / `stop-disk-error`).

use crate::fault::nodes_data;
use crate::lossyfs::corrupt::Corruption;
use crate::lossyfs::ctl::{Command, DiskError, DiskFault, Reply};
use crate::rng::Rng;
use store::{Data, F};

/// A durability fault on some nodes.
#[derive(Clone, Debug, PartialEq)]
pub enum DurabilityFault {
    /// Kill, lose, damage a data file, (stop:) start.
    Corrupt {
        /// Target nodes.
        nodes: Vec<String>,
        /// The damage.
        how: Corruption,
        /// Seed of the file choice and the flips.
        seed: u64,
    },
    /// Snapshot chunks of a data file; (stop:) kill, lose, restore, start.
    Rollback {
        /// Target nodes.
        nodes: Vec<String>,
        /// Chunk size in bytes.
        chunk: u64,
        /// Per-chunk probability of the restore.
        probability: f64,
        /// Seed of the file choice and of the restored chunks.
        seed: u64,
    },
    /// Disk errors until the stop.
    Disk {
        /// Target nodes.
        nodes: Vec<String>,
        /// What fails.
        error: DiskError,
    },
}

impl Eq for DurabilityFault {}

impl DurabilityFault {
    /// A random corruption (`truncate` false: bitflip) on `nodes`.
    pub fn corrupt(nodes: Vec<String>, truncate: bool, rng: &mut Rng) -> DurabilityFault {
        let how = if truncate {
            Corruption::Truncate {
                bytes: 1 + rng.below(16_384) as u64,
            }
        } else {
            // About 8 flipped bits per MiB of file.
            Corruption::Bitflip { probability: 1e-6 }
        };
        DurabilityFault::Corrupt {
            nodes,
            how,
            seed: rng.next_u64(),
        }
    }

    /// A random snapshot/restore on `nodes`: 8 KiB (a PostgreSQL page)
    /// or 64 KiB chunks, each restored with probability 1/2 or 1.
    pub fn rollback(nodes: Vec<String>, rng: &mut Rng) -> DurabilityFault {
        let chunk = [8192, 65_536][rng.below(2)];
        let probability = [0.5, 1.0][rng.below(2)];
        DurabilityFault::Rollback {
            nodes,
            chunk,
            probability,
            seed: rng.next_u64(),
        }
    }

    /// A random disk error on `nodes`.
    pub fn disk(nodes: Vec<String>, rng: &mut Rng) -> DurabilityFault {
        let error = [
            DiskError::EioRead,
            DiskError::EioWrite,
            DiskError::EioFsync,
            DiskError::Enospc,
        ][rng.below(4)];
        DurabilityFault::Disk { nodes, error }
    }

    /// The target nodes.
    pub fn nodes(&self) -> &[String] {
        match self {
            DurabilityFault::Corrupt { nodes, .. }
            | DurabilityFault::Rollback { nodes, .. }
            | DurabilityFault::Disk { nodes, .. } => nodes,
        }
    }

    /// The `f` of the start op.
    pub fn start_f(&self) -> F {
        F::Other(
            match self {
                DurabilityFault::Corrupt {
                    how: Corruption::Truncate { .. },
                    ..
                } => "truncate-file",
                DurabilityFault::Corrupt { .. } => "bitflip-file-chunks",
                DurabilityFault::Rollback { .. } => "snapshot-file-chunks",
                DurabilityFault::Disk { .. } => "start-disk-error",
            }
            .into(),
        )
    }

    /// The `f` of the stop op.
    pub fn stop_f(&self) -> F {
        match self {
            DurabilityFault::Corrupt { .. } => F::Start,
            DurabilityFault::Rollback { .. } => F::Other("restore-file-chunks".into()),
            DurabilityFault::Disk { .. } => F::Other("stop-disk-error".into()),
        }
    }

    /// The start op's value: nodes and what is done.
    pub fn start_value(&self) -> Data {
        let what = match self {
            DurabilityFault::Corrupt { how, seed, .. } => Data::Str(
                Command::Corrupt {
                    path: String::new(),
                    how: how.clone(),
                    seed: *seed,
                }
                .to_string(),
            ),
            DurabilityFault::Rollback { .. } => Data::Str(self.command("").to_string()),
            DurabilityFault::Disk { error, .. } => Data::Str(error.as_str().to_string()),
        };
        Data::Map(vec![
            (Data::Str("nodes".into()), nodes_data(self.nodes())),
            (Data::Str("fault".into()), what),
        ])
    }

    /// The control command sent to each node's filesystem at the start
    /// (`files` is the data-file directory the database names; empty: the
    /// nemesis fills it in per node).
    pub fn command(&self, files: &str) -> Command {
        match self {
            DurabilityFault::Rollback { chunk, seed, .. } => Command::Corrupt {
                path: files.to_string(),
                how: Corruption::Snapshot { chunk: *chunk },
                seed: *seed,
            },
            DurabilityFault::Corrupt { how, seed, .. } => Command::Corrupt {
                path: files.to_string(),
                how: how.clone(),
                seed: *seed,
            },
            DurabilityFault::Disk { error, .. } => Command::Fail(DiskFault {
                error: *error,
                prefix: files.to_string(),
            }),
        }
    }

    /// The command that restores the chunks saved from `file` (the file
    /// the start's snapshot named); `None` for other faults.
    pub fn restore_command(&self, file: &str) -> Option<Command> {
        match self {
            DurabilityFault::Rollback {
                chunk,
                probability,
                seed,
                ..
            } => Some(Command::Corrupt {
                path: file.to_string(),
                how: Corruption::Restore {
                    chunk: *chunk,
                    probability: *probability,
                },
                seed: *seed,
            }),
            _ => None,
        }
    }
}

/// What a corruption did on one node, as a history value.
pub fn damage_data(r: &Reply) -> Data {
    Data::Vec(
        r.damage
            .iter()
            .map(|d| {
                Data::Map(vec![
                    (Data::Str("file".into()), Data::Str(d.file.clone())),
                    (Data::Str(d.unit.into()), Data::Int(d.count as i64)),
                ])
            })
            .collect(),
    )
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::panic)]
mod tests {
    use super::*;

    #[test]
    fn faults_name_their_ops_and_commands() {
        let mut rng = Rng::new(1);
        let c = DurabilityFault::corrupt(vec!["n2".into()], true, &mut rng);
        assert_eq!(c.start_f().as_str(), "truncate-file");
        assert_eq!(c.stop_f(), F::Start);
        let Command::Corrupt { path, .. } = c.command("base") else {
            panic!()
        };
        assert_eq!(path, "base");
        let d = DurabilityFault::disk(vec!["n1".into()], &mut rng);
        assert_eq!(d.stop_f().as_str(), "stop-disk-error");
        assert!(matches!(d.command(""), Command::Fail(_)));
        assert_eq!(
            DurabilityFault::corrupt(vec![], false, &mut Rng::new(1))
                .start_f()
                .as_str(),
            "bitflip-file-chunks"
        );
    }

    #[test]
    fn a_rollback_snapshots_at_the_start_and_restores_the_named_file_at_the_stop() {
        let d = DurabilityFault::rollback(vec!["n3".into()], &mut Rng::new(5));
        assert_eq!(d.start_f().as_str(), "snapshot-file-chunks");
        assert_eq!(d.stop_f().as_str(), "restore-file-chunks");
        let DurabilityFault::Rollback {
            chunk, probability, ..
        } = d.clone()
        else {
            panic!()
        };
        assert!(chunk == 8192 || chunk == 65_536);
        assert!(probability == 0.5 || probability == 1.0);
        let Command::Corrupt { path, how, .. } = d.command("base") else {
            panic!()
        };
        assert_eq!(
            (path.as_str(), how),
            ("base", Corruption::Snapshot { chunk })
        );
        let Some(Command::Corrupt { path, how, .. }) = d.restore_command("base/5/1259") else {
            panic!()
        };
        assert_eq!(path, "base/5/1259");
        assert_eq!(how, Corruption::Restore { chunk, probability });
        assert!(
            DurabilityFault::corrupt(vec![], true, &mut Rng::new(1))
                .restore_command("x")
                .is_none()
        );
        // The start value's command round-trips through the protocol.
        let Data::Map(m) = d.start_value() else {
            panic!()
        };
        let Data::Str(cmd) = &m[1].1 else { panic!() };
        assert!(cmd.starts_with("corrupt snapshot"), "{cmd}");
    }
}
