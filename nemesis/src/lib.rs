//! The control plane: nodes, remote command execution, the local testbed, and
//! faults with their schedule.
//!
//! - [`remote`]: the [`Remote`] trait (command with timeout, upload, download)
//!   with an SSH implementation (the system `ssh` client over one
//!   ControlMaster connection per node) and a local one.
//! - [`testbed`]: N nodes as network namespaces with sshd on a private bridge.
//! - [`process`]: the kill/start/pause/resume capability a database provides.
//! - [`partition`]: grudges (who drops whom) and their builders.
//! - [`fault`]: applying and healing faults on a cluster (iptables rules in a
//!   harness-owned chain, process signals).
//! - [`lossyfs`]: a lossy FUSE filesystem (un-synced writes lost on
//!   command, disk errors, file corruption) run on nodes by the harness
//!   binary; [`lossy`]: mounting it under a data directory and the
//!   `lose-unfsynced-writes` op that follows a kill; [`durability`]: file
//!   corruption paired with a kill, and disk errors, through it.
//! - [`packet`]: packet loss, duplication and rate limits without netem
//!   (iptables `statistic`/`TEE` in harness's own chains, a `tbf` qdisc),
//!   the loss asked vs measured, and their heal.
//! - [`schedule`]: the fault packages `--nemesis` names, and the recording
//!   of every fault start and stop as ops of process `nemesis`.
//! - [`package`]: the packages composed — one task each, on its own seeded
//!   stream, overlapping; quiet and stable periods; validation up front.
//! - [`membership`]: the leave/join capability a database provides, and
//!   the filter that refuses removals below what the database survives.
//! - [`target`]: node specs (`one`, `majority`, `primaries`, `n1+n2`, …).
//! - [`choreo`]: scripted choreographies (`part-kill`, `pause-kill`).
//! - [`clock`]: clock faults through libfaketime control files (the
//!   `clock` package: bump, strobe, reset), offsets read from the
//!   database's own clock.
//!
//! Key decision: every fault is an explicit value that knows how to heal
//! itself, and the heal path is idempotent, so healing can run at the end, on
//! Ctrl-C, on error and at the start of the next run.

pub mod choreo;
pub mod clock;
pub mod durability;
pub mod fault;
pub mod lossy;
pub mod lossyfs;
pub mod membership;
pub mod node;
pub mod node_binary;
pub mod package;
pub mod packet;
pub mod partition;
pub mod process;
pub mod remote;
pub mod rng;
pub mod schedule;
pub mod simulated;
pub mod target;
pub mod testbed;

pub use node::Node;
pub use remote::{Remote, RemoteError};

use std::future::Future;
use std::pin::Pin;

/// A boxed, sendable future (the traits here are used as trait objects).
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;
