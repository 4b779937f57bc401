//! harness's engine: everything one test needs below the command line.
//!
//! A [`spec::RunSpec`] (typed: database, workload, isolation, nemesis,
//! nodes, limits, seed, store) is planned and run by [`run::run`]: the
//! database is opened as its catalog entry says (`db_adapters::catalog`;
//! [`cluster`] connects the nodes and runs the lifecycle), the [`runner`] drives the workload and writes the history,
//! the nemesis task injects faults, then the history is checked and the
//! [`report`]s are written.
//!
//! Key decisions: no clap type appears here (the CLI parses names into
//! typed values and builds the spec); the databases' names and properties
//! come from `db_adapters::catalog`; `anyhow` is this crate's error type,
//! as in the binary, because its errors are reported to a person, never
//! matched on.

// Tests may unwrap and panic (the workspace lints are for library code).
#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used, clippy::panic))]

pub mod check;
pub mod checks;
pub mod cluster;
pub mod console;
pub mod exit;
pub mod no_fault;
pub mod plan;
pub mod report;
pub mod run;
// fallocate: room kept in harness.log for the line that says the disk is full.
#[allow(unsafe_code)]
pub mod run_log;
pub mod runner;
pub mod spec;
mod unused_flags;
// Child processes: SIGINT handler, wait4 (rusage), kill of a process group.
#[allow(unsafe_code)]
pub mod suite;
pub mod suite_file;
