//! Workloads: the generators that decide what clients do.
//!
//! Owns the [`generator::Generator`] trait and its combinators, and the list-append
//! and rw-register transaction generators. Key decision: generators are pure
//! values driven by the runner's interpreter, seeded, with no IO or clock, so
//! a run is reproducible from its seed and completions.

pub mod generator;
