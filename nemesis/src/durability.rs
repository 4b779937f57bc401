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
            DurabilityFault::Corrupt { nodes, .. } | DurabilityFault::Disk { nodes, .. } => nodes,
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
                DurabilityFault::Disk { .. } => "start-disk-error",
            }
            .into(),
        )
    }

    /// The `f` of the stop op.
    pub fn stop_f(&self) -> F {
        match self {
            DurabilityFault::Corrupt { .. } => F::Start,
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
            DurabilityFault::Disk { error, .. } => Data::Str(error.as_str().to_string()),
        };
        Data::Map(vec![
            (Data::Str("nodes".into()), nodes_data(self.nodes())),
            (Data::Str("fault".into()), what),
        ])
    }

    /// The control command sent to each node's filesystem at the start
    /// (`files` is the data-file directory the database names).
    pub fn command(&self, files: &str) -> Command {
        match self {
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
}
