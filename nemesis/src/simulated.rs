//! Faults on a cluster that lives inside the harness process (the
//! simulator's replicas, `--db sim --sim-replicas N`): partitions and clock
//! offsets are method calls on the simulated network, not iptables rules or
//! libfaketime control files, so they need no root and no nodes.
//!
//! A [`crate::fault::Nemesis`] built with
//! [`crate::fault::Nemesis::with_simulated_network`] sends its partition
//! starts, stops and heals, and its clock bumps, strobes and resets
//! (`crate::clock`), here instead of running commands on its remotes;
//! kill and pause, and the read of a node's clock
//! ([`crate::process::Process::db_clock`]), still go through the
//! database's [`crate::process::Process`]. The ops recorded are the same
//! as for real nodes (clock ops with their `clock-offsets`).

use crate::partition::Grudge;

/// A network between simulated nodes, and their clocks.
pub trait SimulatedNetwork: Send + Sync {
    /// Drops messages as `grudge` says (node → the nodes it drops from).
    /// Grudges stack: the same link dropped twice needs two
    /// [`SimulatedNetwork::unpartition`]s.
    ///
    /// # Errors
    /// A node of the grudge that the simulation does not have.
    fn partition(&self, grudge: &Grudge) -> Result<(), String>;

    /// Undoes one [`SimulatedNetwork::partition`] of `grudge`.
    fn unpartition(&self, grudge: &Grudge);

    /// Removes every partition.
    fn heal_network(&self);

    /// Sets `node`'s clock to run `offset_ms` milliseconds from true time.
    ///
    /// # Errors
    /// A node the simulation does not have.
    fn set_clock_offset(&self, node: &str, offset_ms: i64) -> Result<(), String>;

    /// Puts every clock back on true time.
    fn reset_clocks(&self);
}
