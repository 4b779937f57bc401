//! The history: its model, its file formats, and the run store on disk.
//!
//! Owns `Op`, `MicroOp`, `History` (pure types in [`history`]), the generic
//! [`data::Data`] tree that keeps foreign fields lossless, the readers and
//! writers of JSON Lines / Elle JSON / Jepsen EDN (`format`), and the run
//! directory with its durable append-only history log (`run`).
//!
//! Key decision: this crate depends on nothing of ours, so any tool (the
//! checker, importers) can read histories without pulling in the runner.

mod columns;
pub mod data;
mod elide;
pub mod format;
pub mod history;
pub mod import;
pub mod list;
mod mapped;
pub mod pairing;
pub mod predicate;
pub mod run;

pub use data::Data;
pub use format::{Format, FormatError, ReadOutcome, load_history, read_path, read_str, write_path};
pub use history::{
    Atom, Extra, F, History, HistoryBuilder, HistoryError, HistoryWarning, Key, MicroOp, MopKinds,
    Op, OpIndex, OpType, OpValue, Process, ProcessId, ReadValue, Text, Val,
};
pub use list::{ListSharer, ValList};
pub use predicate::{RangeKind, RangeRead};
pub use run::{HistoryLog, RunDir, RunError};
