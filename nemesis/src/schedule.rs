//! The fault packages `--nemesis` names ([`FaultKind`], table [`KINDS`]),
//! and how a fault is recorded: each start and stop is an `invoke` + `info`
//! op pair of process `nemesis` ([`start_recorded`], [`stop_recorded`]).
//! The composed loop that runs the packages is [`crate::package`].

use crate::fault::{Fault, FaultError, Nemesis};
use std::fmt;
use std::str::FromStr;
use std::time::Duration;
use store::{Data, F, OpType};
use tokio::sync::watch;

/// A fault package (`--nemesis`): a fault kind or a scripted choreography.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FaultKind {
    /// Network partitions.
    Partition,
    /// SIGKILL of database processes, restarted on stop.
    Kill,
    /// SIGSTOP/SIGCONT of database processes.
    Pause,
    /// Choreography: partition a minority, kill the crasher, flip the
    /// partition, restart the crasher (NATS's `part-kill`).
    PartKill,
    /// Choreography: pause a minority, kill the crasher, flip the pause,
    /// restart the crasher (NATS's `pause-kill`).
    PauseKill,
    /// Kill + flip bits of a data file + start (needs `--lazyfs`).
    Bitflip,
    /// Kill + cut the end of a data file + start (needs `--lazyfs`).
    TruncateFile,
    /// Snapshot chunks of a data file; at the stop kill, write the stale
    /// chunks back, start (needs `--lazyfs`).
    RestoreFile,
    /// EIO or ENOSPC from the data files for a window (needs `--lazyfs`).
    DiskError,
    /// Packet loss, duplication or a rate limit on links (`--packet`).
    Packet,
    /// Clock bumps, strobes and resets through libfaketime.
    Clock,
    /// A node leaves the cluster and joins it again (Galera, PostgreSQL
    /// replicas; [`crate::membership`]).
    Membership,
}

/// Every package: its `--nemesis` name and whether `--nemesis all` has it.
/// Adding a fault kind is a variant, a line here and its arm in
/// `package::next_fault`.
pub const KINDS: &[(FaultKind, &str, bool)] = &[
    (FaultKind::Partition, "partition", true),
    (FaultKind::Kill, "kill", true),
    (FaultKind::Pause, "pause", true),
    (FaultKind::PartKill, "part-kill", false),
    (FaultKind::PauseKill, "pause-kill", false),
    (FaultKind::Bitflip, "bitflip", false),
    (FaultKind::TruncateFile, "truncate-file", false),
    (FaultKind::RestoreFile, "restore-file", false),
    (FaultKind::DiskError, "disk-error", false),
    (FaultKind::Packet, "packet", false),
    (FaultKind::Clock, "clock", false),
    (FaultKind::Membership, "membership", false),
];

impl FaultKind {
    /// The CLI spelling.
    pub fn as_str(self) -> &'static str {
        KINDS
            .iter()
            .find(|(k, _, _)| *k == self)
            .map_or("?", |(_, n, _)| n)
    }

    /// Whether this is a scripted choreography (not a single fault kind).
    pub fn is_choreography(self) -> bool {
        matches!(self, FaultKind::PartKill | FaultKind::PauseKill)
    }

    /// Whether it acts on the database's processes (needs its process
    /// control: kill, pause, and the clock, whose control files the
    /// process capability names).
    pub fn needs_process(self) -> bool {
        !matches!(
            self,
            FaultKind::Partition | FaultKind::Packet | FaultKind::Membership
        )
    }

    /// Whether it changes the cluster's membership (needs the database's
    /// membership control, and nodes).
    pub fn needs_membership(self) -> bool {
        matches!(self, FaultKind::Membership)
    }

    /// Whether it partitions the network (needs iptables on the nodes).
    pub fn needs_network(self) -> bool {
        matches!(
            self,
            FaultKind::Partition | FaultKind::PartKill | FaultKind::Packet
        )
    }
}

impl fmt::Display for FaultKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An unknown fault name in `--nemesis`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "--nemesis entry {position}: unknown fault {name:?} (expected none, all, or a comma list of: {})",
    names()
)]
pub struct UnknownFault {
    /// 1-based position in the list.
    pub position: usize,
    /// The name given.
    pub name: String,
}

fn names() -> String {
    KINDS
        .iter()
        .map(|(_, n, _)| *n)
        .collect::<Vec<_>>()
        .join(", ")
}

impl FromStr for FaultKind {
    type Err = UnknownFault;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        KINDS
            .iter()
            .find(|(_, n, _)| *n == s)
            .map(|(k, _, _)| *k)
            .ok_or_else(|| UnknownFault {
                position: 1,
                name: s.to_string(),
            })
    }
}

/// Parses `none`, `all` or `partition,kill,pause-kill,…` (duplicates
/// ignored; `all` is every fault kind, no choreography, and may be combined).
///
/// # Errors
/// [`UnknownFault`] naming the entry.
pub fn parse_faults(s: &str) -> Result<Vec<FaultKind>, UnknownFault> {
    if s.trim() == "none" || s.trim().is_empty() {
        return Ok(Vec::new());
    }
    let mut out = Vec::new();
    for (i, part) in s.split(',').enumerate() {
        let kinds: Vec<FaultKind> = if part.trim() == "all" {
            KINDS
                .iter()
                .filter(|(_, _, all)| *all)
                .map(|(k, _, _)| *k)
                .collect()
        } else {
            vec![part.trim().parse::<FaultKind>().map_err(|mut e| {
                e.position = i + 1;
                e
            })?]
        };
        for k in kinds {
            if !out.contains(&k) {
                out.push(k);
            }
        }
    }
    Ok(out)
}

/// Where nemesis ops go: the test's history log (shared with the clients).
pub trait Recorder: Send + Sync {
    /// Appends one op of process `nemesis`.
    fn record(&self, op_type: OpType, f: F, value: Data, error: Option<String>);
}

/// Starts `fault`, recording the op pair.
///
/// # Errors
/// The fault error (also recorded as the `info`'s error).
pub async fn start_recorded(
    nemesis: &Nemesis,
    recorder: &dyn Recorder,
    fault: &Fault,
) -> Result<(), FaultError> {
    recorder.record(OpType::Invoke, fault.start_f(), fault.start_value(), None);
    let r = nemesis.start(fault).await;
    let err = error_text(&r, nemesis.take_note());
    let value = nemesis.take_result().unwrap_or_else(|| fault.start_value());
    recorder.record(OpType::Info, fault.start_f(), value, err);
    if r.is_ok()
        && let Fault::Kill(nodes) = fault
    {
        crate::lossy::lose_recorded(nemesis, recorder, nodes).await?;
    }
    r
}

/// Stops `fault`, recording the op pair.
///
/// # Errors
/// The fault error (also recorded as the `info`'s error).
pub async fn stop_recorded(
    nemesis: &Nemesis,
    recorder: &dyn Recorder,
    fault: &Fault,
) -> Result<(), FaultError> {
    recorder.record(OpType::Invoke, fault.stop_f(), fault.stop_value(), None);
    let r = nemesis.stop(fault).await;
    let err = error_text(&r, nemesis.take_note());
    // What the stop measured (a packet fault's loss), else its value.
    let value = nemesis.take_result().unwrap_or_else(|| fault.stop_value());
    recorder.record(OpType::Info, fault.stop_f(), value, err);
    r
}

/// The `info`'s error: the fault's error and what it did not do though
/// asked (a kill of a process that was down), `; `-joined.
fn error_text(r: &Result<(), FaultError>, note: Option<String>) -> Option<String> {
    let parts: Vec<String> = r
        .as_ref()
        .err()
        .map(ToString::to_string)
        .into_iter()
        .chain(note)
        .collect();
    (!parts.is_empty()).then(|| parts.join("; "))
}

/// Waits `d`, or until `stop` turns true; returns whether it was stopped.
pub(crate) async fn wait_or_stop(d: Duration, stop: &mut watch::Receiver<bool>) -> bool {
    if *stop.borrow() {
        return true;
    }
    // A dropped sender also means stop.
    tokio::time::timeout(d, stop.wait_for(|v| *v)).await.is_ok()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn faults_parse_and_typos_are_rejected_by_position() {
        assert_eq!(parse_faults("none").unwrap(), vec![]);
        assert_eq!(
            parse_faults("partition,kill,pause,kill").unwrap(),
            vec![FaultKind::Partition, FaultKind::Kill, FaultKind::Pause]
        );
        let e = parse_faults("kill,partiton").unwrap_err();
        assert_eq!(e.position, 2);
        assert!(e.to_string().contains("\"partiton\""));
    }

    #[test]
    fn all_is_every_fault_kind_and_choreographies_parse() {
        assert_eq!(
            parse_faults("all").unwrap(),
            vec![FaultKind::Partition, FaultKind::Kill, FaultKind::Pause]
        );
        assert_eq!(
            parse_faults("part-kill,all,pause-kill").unwrap(),
            vec![
                FaultKind::PartKill,
                FaultKind::Partition,
                FaultKind::Kill,
                FaultKind::Pause,
                FaultKind::PauseKill
            ]
        );
        for (k, n, _) in KINDS {
            assert_eq!(n.parse::<FaultKind>().unwrap(), *k);
            assert_eq!(k.as_str(), *n);
        }
        let e = parse_faults("clocks").unwrap_err();
        assert!(e.to_string().contains("part-kill"), "{e}");
    }
}
