//! What faults happen when: the seeded choice of faults and targets, and the
//! nemesis loop that applies them and records each start and stop as an
//! `invoke` + `info` op pair of process `nemesis`.
//!
//! Key decision: the choice ([`Schedule`]) is pure and seeded, separate from
//! the loop ([`run`]) that touches time and nodes; the loop always ends by
//! stopping the active fault and healing everything, whatever stopped it.

use crate::durability::DurabilityFault;
use crate::fault::{Fault, FaultError, Nemesis};
use crate::partition::{PartitionKind, grudge};
use crate::rng::Rng;
use std::fmt;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;
use store::{Data, F, OpType};
use tokio::sync::watch;

/// A kind of fault (`--nemesis`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FaultKind {
    /// Network partitions.
    Partition,
    /// SIGKILL of database processes, restarted on stop.
    Kill,
    /// SIGSTOP/SIGCONT of database processes.
    Pause,
    /// Kill + flip bits of a data file + start (needs `--lazyfs`).
    Bitflip,
    /// Kill + cut the end of a data file + start (needs `--lazyfs`).
    TruncateFile,
    /// EIO or ENOSPC from the data files for a window (needs `--lazyfs`).
    DiskError,
}

impl FaultKind {
    /// The CLI spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            FaultKind::Partition => "partition",
            FaultKind::Kill => "kill",
            FaultKind::Pause => "pause",
            FaultKind::Bitflip => "bitflip",
            FaultKind::TruncateFile => "truncate-file",
            FaultKind::DiskError => "disk-error",
        }
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
    "--nemesis entry {position}: unknown fault {name:?} (expected none, or a comma list of: partition, kill, pause, bitflip, truncate-file, disk-error)"
)]
pub struct UnknownFault {
    /// 1-based position in the list.
    pub position: usize,
    /// The name given.
    pub name: String,
}

impl FromStr for FaultKind {
    type Err = UnknownFault;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "partition" => Ok(FaultKind::Partition),
            "kill" => Ok(FaultKind::Kill),
            "pause" => Ok(FaultKind::Pause),
            "bitflip" => Ok(FaultKind::Bitflip),
            "truncate-file" => Ok(FaultKind::TruncateFile),
            "disk-error" => Ok(FaultKind::DiskError),
            _ => Err(UnknownFault {
                position: 1,
                name: s.to_string(),
            }),
        }
    }
}

/// Parses `none` or `partition,kill,pause` (duplicates ignored).
///
/// # Errors
/// [`UnknownFault`] naming the entry.
pub fn parse_faults(s: &str) -> Result<Vec<FaultKind>, UnknownFault> {
    if s.trim() == "none" || s.trim().is_empty() {
        return Ok(Vec::new());
    }
    let mut out = Vec::new();
    for (i, part) in s.split(',').enumerate() {
        let k = part.trim().parse::<FaultKind>().map_err(|mut e| {
            e.position = i + 1;
            e
        })?;
        if !out.contains(&k) {
            out.push(k);
        }
    }
    Ok(out)
}

/// Seeded choice of the next fault.
#[derive(Clone, Debug)]
pub struct Schedule {
    kinds: Vec<FaultKind>,
    partition: PartitionKind,
    nodes: Vec<String>,
    primaries: Vec<String>,
    rng: Rng,
}

impl Schedule {
    /// Faults of `kinds` over `nodes`; partitions of shape `partition`.
    pub fn new(
        kinds: Vec<FaultKind>,
        partition: PartitionKind,
        nodes: Vec<String>,
        primaries: Vec<String>,
        seed: u64,
    ) -> Schedule {
        Schedule {
            kinds,
            partition,
            nodes,
            primaries,
            rng: Rng::new(seed),
        }
    }

    /// Whether there is any fault to schedule.
    pub fn is_empty(&self) -> bool {
        self.kinds.is_empty() || self.nodes.is_empty()
    }

    /// Target nodes for kill/pause: one, a minority, a majority, all, or the primaries.
    fn targets(&mut self) -> Vec<String> {
        let n = self.nodes.len();
        let mut shuffled = self.nodes.clone();
        self.rng.shuffle(&mut shuffled);
        let choice = self
            .rng
            .below(if self.primaries.is_empty() { 4 } else { 5 });
        let count = match choice {
            0 => 1,
            1 => (n.saturating_sub(1) / 2).max(1),
            2 => n / 2 + 1,
            3 => n,
            _ => return self.primaries.clone(),
        };
        let mut t: Vec<String> = shuffled.into_iter().take(count.min(n)).collect();
        t.sort();
        t
    }

    /// A random minority (one node of one or two).
    fn minority(&mut self) -> Vec<String> {
        let mut shuffled = self.nodes.clone();
        self.rng.shuffle(&mut shuffled);
        let mut t: Vec<String> = shuffled
            .into_iter()
            .take((self.nodes.len().saturating_sub(1) / 2).max(1))
            .collect();
        t.sort();
        t
    }

    /// The next fault to start (`None` when no fault kind is enabled).
    pub fn next_fault(&mut self) -> Option<Fault> {
        if self.is_empty() {
            return None;
        }
        let kind = self.kinds[self.rng.below(self.kinds.len())];
        Some(match kind {
            FaultKind::Partition => Fault::Partition(grudge(
                self.partition,
                &self.nodes,
                &self.primaries,
                &mut self.rng,
            )),
            FaultKind::Kill => Fault::Kill(self.targets()),
            FaultKind::Pause => Fault::Pause(self.targets()),
            FaultKind::Bitflip | FaultKind::TruncateFile => {
                let nodes = self.minority();
                let truncate = kind == FaultKind::TruncateFile;
                Fault::Durability(DurabilityFault::corrupt(nodes, truncate, &mut self.rng))
            }
            FaultKind::DiskError => {
                let nodes = self.minority();
                Fault::Durability(DurabilityFault::disk(nodes, &mut self.rng))
            }
        })
    }
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
    let err = r.as_ref().err().map(|e| e.to_string());
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
    let err = r.as_ref().err().map(|e| e.to_string());
    recorder.record(OpType::Info, fault.stop_f(), fault.stop_value(), err);
    r
}

/// Waits `d`, or until `stop` turns true; returns whether it was stopped.
async fn wait_or_stop(d: Duration, stop: &mut watch::Receiver<bool>) -> bool {
    if *stop.borrow() {
        return true;
    }
    // A dropped sender also means stop.
    tokio::time::timeout(d, stop.wait_for(|v| *v)).await.is_ok()
}

/// The nemesis loop: every `interval`, start a fault from `schedule`; after
/// another `interval`, stop it. Returns when `stop` turns true (or its
/// sender is dropped), after stopping the active fault and healing all.
/// Fault errors are recorded and logged, never fatal to the loop.
///
/// # Errors
/// The final heal's error (faults may remain: the caller must heal again or
/// report it).
pub async fn run(
    nemesis: Arc<Nemesis>,
    mut schedule: Schedule,
    interval: Duration,
    recorder: Arc<dyn Recorder>,
    mut stop: watch::Receiver<bool>,
) -> Result<(), FaultError> {
    loop {
        if wait_or_stop(interval, &mut stop).await {
            break;
        }
        let Some(fault) = schedule.next_fault() else {
            let _ = stop.wait_for(|v| *v).await;
            break;
        };
        if let Err(e) = start_recorded(&nemesis, recorder.as_ref(), &fault).await {
            tracing::warn!("nemesis: starting {:?}: {e}", fault.start_f().as_str());
        }
        let stopped = wait_or_stop(interval, &mut stop).await;
        if let Err(e) = stop_recorded(&nemesis, recorder.as_ref(), &fault).await {
            tracing::warn!("nemesis: stopping {:?}: {e}", fault.stop_f().as_str());
        }
        if stopped {
            break;
        }
    }
    nemesis.heal_all().await
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
    fn same_seed_same_faults() {
        let nodes: Vec<String> = (1..=5).map(|i| format!("n{i}")).collect();
        let mk = |seed| {
            let mut s = Schedule::new(
                vec![FaultKind::Partition, FaultKind::Kill, FaultKind::Pause],
                PartitionKind::Majority,
                nodes.clone(),
                vec![],
                seed,
            );
            (0..20).map(|_| s.next_fault().unwrap()).collect::<Vec<_>>()
        };
        assert_eq!(mk(42), mk(42));
        assert_ne!(mk(42), mk(43));
        let all = mk(42);
        assert!(all.iter().any(|f| matches!(f, Fault::Kill(_))));
        assert!(all.iter().any(|f| matches!(f, Fault::Partition(_))));
        for f in all {
            if let Fault::Kill(t) | Fault::Pause(t) = f {
                assert!(!t.is_empty() && t.len() <= 5);
            }
        }
    }
}
