//! checker: an Elle-grade isolation checker for list-append and rw-register
//! histories (see ARCHITECTURE.md and ../shared/specs/elle.md).
//!
//! Pure: no IO, no clock, no async. `check` = analysis (inference, graph,
//! cycle search; `analysis`) + verdict (the model lattice; `model`).

pub mod analysis;
pub mod anomaly;
pub mod budget;
pub mod cycle;
pub mod explain;
pub mod graph;
pub mod list_append;
pub mod model;
pub mod order;
pub mod rels;
pub mod rw_register;
pub mod txn;
