//! The control plane: nodes, remote command execution, the local testbed, and
//! faults with their schedule.
//!
//! Key decision: every fault is an explicit value that knows how to heal
//! itself, and the heal path is idempotent, so healing can run at the end, on
//! Ctrl-C, on error and at the start of the next run.

pub mod node;

pub use node::Node;
