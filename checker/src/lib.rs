//! checker: an Elle-grade isolation checker for list-append and rw-register
//! histories (see ARCHITECTURE.md and ../shared/specs/elle.md).
//!
//! Pure: no IO, no clock, no async. `check` = analysis (inference, graph,
//! cycle search; `analysis`) + verdict (the model lattice; `model`).

pub mod anomaly;
pub mod model;
