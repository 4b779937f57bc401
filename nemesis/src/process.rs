//! The capability kill/pause faults act on: a database's processes on a node.
//!
//! Implemented by each database lifecycle (`db-adapters::db`), which knows
//! its pid files and start commands. Every method is idempotent: killing a
//! dead process or resuming a running one succeeds.

use crate::lossyfs::ctl::Reply;
use crate::{BoxFuture, Node};

/// A failed process action, naming the node.
#[derive(Debug, Clone, thiserror::Error)]
#[error("node {node}: {action} failed: {message}")]
pub struct ProcessError {
    /// Node name.
    pub node: String,
    /// `kill`, `start`, `pause` or `resume`.
    pub action: &'static str,
    /// What went wrong.
    pub message: String,
}

/// Kill/start/pause/resume of the database processes on one node.
pub trait Process: Send + Sync {
    /// SIGKILL of every database process on `node`; returns once they are gone.
    ///
    /// # Errors
    /// [`ProcessError`] naming the node.
    fn kill<'a>(&'a self, node: &'a Node) -> BoxFuture<'a, Result<(), ProcessError>>;

    /// Starts the database on `node` again (no-op when it runs); returns once
    /// it has been started (not necessarily serving yet).
    ///
    /// # Errors
    /// [`ProcessError`] naming the node.
    fn start<'a>(&'a self, node: &'a Node) -> BoxFuture<'a, Result<(), ProcessError>>;

    /// SIGSTOP of the database processes on `node`.
    ///
    /// # Errors
    /// [`ProcessError`] naming the node.
    fn pause<'a>(&'a self, node: &'a Node) -> BoxFuture<'a, Result<(), ProcessError>>;

    /// SIGCONT of the database processes on `node`.
    ///
    /// # Errors
    /// [`ProcessError`] naming the node.
    fn resume<'a>(&'a self, node: &'a Node) -> BoxFuture<'a, Result<(), ProcessError>>;

    /// Whether the data directories sit on the lossy filesystem
    /// ([`crate::lossy`]), so a kill is followed by losing un-synced writes.
    fn lossy(&self) -> bool {
        false
    }

    /// Loses the un-synced writes of `node`'s data directory (the process
    /// is down); `None` when it is not on the lossy filesystem.
    ///
    /// # Errors
    /// [`ProcessError`] naming the node.
    fn lose_unsynced<'a>(
        &'a self,
        _node: &'a Node,
    ) -> BoxFuture<'a, Result<Option<Reply>, ProcessError>> {
        Box::pin(async { Ok(None) })
    }

    /// Sends a command to the lossy filesystem under `node`'s data directory.
    ///
    /// # Errors
    /// [`ProcessError`] naming the node (always, without the filesystem).
    fn lossy_ctl<'a>(
        &'a self,
        node: &'a Node,
        _cmd: &'a crate::lossyfs::ctl::Command,
    ) -> BoxFuture<'a, Result<Reply, ProcessError>> {
        Box::pin(async move {
            Err(ProcessError {
                node: node.name.clone(),
                action: "lossyfs",
                message: "the data directory is not on the lossy filesystem (run with --lazyfs)"
                    .to_string(),
            })
        })
    }

    /// The libfaketime control file of `node` (a path on the node) when
    /// the database was started under libfaketime for clock faults
    /// (`None`: clock faults cannot reach it).
    fn clock_file(&self, _node: &Node) -> Option<String> {
        None
    }

    /// Reads the database's own clock on `node` through a client
    /// connection, bracketed by the harness clock (connection set up
    /// before the bracket).
    ///
    /// # Errors
    /// [`ProcessError`] naming the node (always, without clock faults).
    fn db_clock<'a>(
        &'a self,
        node: &'a Node,
    ) -> BoxFuture<'a, Result<crate::clock::ClockReading, ProcessError>> {
        Box::pin(async move {
            Err(ProcessError {
                node: node.name.clone(),
                action: "clock",
                message: "the database was not started under libfaketime".to_string(),
            })
        })
    }

    /// Where the database's data files are, relative to its data directory
    /// (what corruption and disk errors aim at; empty: everything).
    fn data_files(&self) -> &'static str {
        ""
    }
}
