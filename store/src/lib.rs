//! The history: its model, its file formats, and the run store on disk.
//!
//! Owns `Op`, `MicroOp`, `History` (pure types in [`history`]), the generic
//! [`data::Data`] tree that keeps foreign fields lossless, the readers and
//! writers of JSON Lines / Elle JSON / Jepsen EDN (`format`), and the run
//! directory with its durable append-only history log (`run`).
//!
//! Key decision: this crate depends on nothing of ours, so any tool (the
//! checker, importers) can read histories without pulling in the runner.

pub mod data;
pub mod history;

pub use data::Data;
pub use history::{
    Atom, F, History, HistoryError, HistoryWarning, Key, MicroOp, Op, OpIndex, OpType, OpValue,
    Process, ProcessId, ReadValue, Val,
};
