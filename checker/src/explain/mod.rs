//! Explanations of anomalies: data first ([`Anomaly`], [`Evidence`], [`Step`]),
//! rendered separately as Elle-style text ([`render_text`]) and as Graphviz DOT
//! per cycle ([`render_dot`]).
//!
//! This file holds the data; `data.rs` turns it into Elle's maps (EDN/JSON),
//! `text.rs` into Elle-style prose, `dot.rs` into Graphviz.

mod data;
mod dot;
mod text;

pub(crate) use data::{data_to_json, map};
pub use dot::render_dot;
pub use text::{fmt_mop, fmt_op, fmt_read, fmt_vals, render_text};

use crate::anomaly::AnomalyType;
use crate::rels::Rel;
use store::{Key, OpIndex, ReadValue, Val};

/// One anomaly found in a history: its type and the evidence for it.
#[derive(Clone, Debug, PartialEq)]
pub struct Anomaly {
    /// The anomaly type.
    pub kind: AnomalyType,
    /// Ops involved and why.
    pub evidence: Evidence,
}

/// A state a read was expected to see (for `internal`).
#[derive(Clone, Debug, PartialEq)]
pub enum Expected {
    /// A list; `unknown_prefix` when only the tail (the transaction's own
    /// appends) is known, rendered `[... 6]`.
    List {
        /// Whether elements before `tail` are unknown.
        unknown_prefix: bool,
        /// The known elements.
        tail: Vec<Val>,
    },
    /// A register value (`None` = nil).
    Register(Option<Val>),
}

/// The evidence for an anomaly.
#[derive(Clone, Debug, PartialEq)]
pub enum Evidence {
    /// A dependency cycle: `cycle` lists the transactions (first repeated at
    /// the end); `steps[i]` explains `cycle[i] → cycle[i+1]`.
    Cycle {
        /// Transactions around the cycle, the first repeated last.
        cycle: Vec<OpIndex>,
        /// One explained edge per step.
        steps: Vec<Step>,
    },
    /// A read of something it should not have seen (`G1a`, `G1b`,
    /// `garbage-read`, `future-read`).
    Read {
        /// The reading transaction.
        op: OpIndex,
        /// The read micro-op's position in it.
        mop: usize,
        /// The key read.
        key: Key,
        /// The offending element (list-append) or value (rw-register).
        element: Val,
        /// The transaction that wrote it, if any did.
        writer: Option<OpIndex>,
    },
    /// A read inconsistent with the transaction's own earlier reads and writes.
    Internal {
        /// The transaction.
        op: OpIndex,
        /// The read micro-op's position.
        mop: usize,
        /// The key.
        key: Key,
        /// What the read should have returned.
        expected: Expected,
    },
    /// A read list holding an element more than once.
    DuplicateElements {
        /// The transaction.
        op: OpIndex,
        /// The read micro-op's position.
        mop: usize,
        /// The key.
        key: Key,
        /// Each duplicated element with its count.
        duplicates: Vec<(Val, usize)>,
    },
    /// Two reads of a key neither of which is a prefix of the other.
    IncompatibleOrder {
        /// The key.
        key: Key,
        /// The two reads.
        values: [Vec<Val>; 2],
    },
    /// A committed append built on an aborted one.
    DirtyUpdate {
        /// The key.
        key: Key,
        /// The aborted element, then the committed one.
        values: Vec<Val>,
        /// The aborted writer, then the committed one.
        txns: Vec<OpIndex>,
    },
    /// Committed transactions that read the same version of a key and then
    /// all wrote it.
    LostUpdate {
        /// The key.
        key: Key,
        /// The version they read (list or register value; empty/None = initial).
        value: ReadValue,
        /// The transactions.
        txns: Vec<OpIndex>,
    },
    /// A count read whose `count(*)` no version set of its range can give
    /// (`predicate-read-miss`): fewer rows than the transaction itself
    /// inserted there, or more than were ever inserted.
    CountMiss {
        /// The reading transaction.
        op: OpIndex,
        /// The count micro-op's position in it.
        mop: usize,
        /// Inclusive bounds of the range.
        range: [Key; 2],
        /// The count returned.
        count: u64,
        /// The fewest and most rows the range can have held.
        bounds: [u64; 2],
    },
    /// A read the database's expected serialization order contradicts
    /// (`expected-order-violation`, `crate::whitebox::replay`).
    Replay {
        /// The reading transaction.
        op: OpIndex,
        /// The read micro-op's position in it.
        mop: usize,
        /// The key (a range or count read: its lower bound).
        key: Key,
        /// What replaying in commit-timestamp order says it should have
        /// returned (EDN).
        expected: String,
    },
    /// A register's inferred version order is cyclic.
    CyclicVersions {
        /// The key.
        key: Key,
        /// Values in the cycle (`None` = nil).
        scc: Vec<Option<Val>>,
        /// The sources merged so far, the last being the one that was dropped.
        sources: Vec<&'static str>,
    },
    /// A cycle exists among these transactions using only the relations a
    /// model forbids cycles in (Elle's `<model>-cycle-exists`), though no
    /// specific cycle was reported for it.
    CycleExists {
        /// The relations of the subgraph (`extension` marks rw as non-adjacent jumps).
        subgraph: &'static str,
        /// Size of the strongly connected component of that subgraph.
        scc_size: usize,
        /// Its transactions (at most the first 64).
        scc: Vec<OpIndex>,
    },
    /// The dependency graph has no vertex (nothing to check: verdict unknown).
    EmptyGraph,
    /// The cycle search in a component ran out of budget.
    Timeout {
        /// Number of transactions in the component.
        scc_size: usize,
        /// Anomaly types not yet ruled out for it.
        does_not_contain: Vec<AnomalyType>,
    },
}

/// Where a data step happened: the key and the micro-ops of both ends.
#[derive(Clone, Debug, PartialEq)]
pub struct Site {
    /// The key.
    pub key: Key,
    /// Micro-op index in the step's `from`.
    pub a_mop: usize,
    /// Micro-op index in the step's `to`.
    pub b_mop: usize,
}

/// The state of a data step's key that `from` and `to` touched.
#[derive(Clone, Debug, PartialEq)]
pub struct DataStep {
    /// Source transaction.
    pub from: OpIndex,
    /// Target transaction.
    pub to: OpIndex,
    /// Whether the key is a list (`append`) or a register (`w`).
    pub list: bool,
    /// Key and micro-ops; `None` when the edge could not be explained.
    pub site: Option<Site>,
    /// `from`'s value: the element appended / value written or read last;
    /// `None` with a site = the initial (nil) state.
    pub value: Option<Val>,
    /// `to`'s value (ww, rw; always `None` for wr).
    pub value2: Option<Val>,
    /// For a ww/rw step whose version order the complete (SAT) check chose
    /// rather than read off the history: why this order and not the other.
    pub derived: Option<Box<Derived>>,
    /// For a predicate step (`wr`/`rw` of a range read): the
    /// range and the row.
    pub predicate: Option<Box<PredicateSite>>,
}

/// Where a predicate step happened: the reader's range read and the row
/// whose insertion changed the predicate's matches.
#[derive(Clone, Debug, PartialEq)]
pub struct PredicateSite {
    /// Inclusive bounds of the range read.
    pub lo: Key,
    /// Upper bound.
    pub hi: Key,
    /// The row (key) inserted.
    pub row: Key,
    /// Whether the range read returned the row (predicate-wr) or missed it
    /// (predicate-rw).
    pub seen: bool,
    /// For a count read: the count it returned (all rows, or none, of the
    /// range; the only counts that pin rows down).
    pub count: Option<u64>,
}

/// A process step: `from` and `to` ran one after the other on one process.
#[derive(Clone, Debug, PartialEq)]
pub struct ProcessStep {
    /// Source transaction.
    pub from: OpIndex,
    /// Target transaction.
    pub to: OpIndex,
    /// The process, when known.
    pub process: Option<u64>,
}

/// A real-time step: `from` completed before `to` was invoked.
#[derive(Clone, Debug, PartialEq)]
pub struct RealtimeStep {
    /// Source transaction.
    pub from: OpIndex,
    /// Target transaction.
    pub to: OpIndex,
    /// `from`'s completion and `to`'s invocation, when known.
    pub ops: Option<(OpIndex, OpIndex)>,
    /// Nanoseconds between them, when both ops carry a time.
    pub dt_ns: Option<i64>,
}

/// Why the complete check ordered two writers of a key one way.
#[derive(Clone, Debug, PartialEq)]
pub struct Derived {
    /// The step the opposite order of the two writers would have needed.
    pub refuted: Step,
    /// The cycle that step would have closed (transactions, the first
    /// repeated last) with the relation of each of its steps; empty when
    /// the order is a case of the solver's search.
    pub cycle: Vec<OpIndex>,
    /// Relations along `cycle`.
    pub rels: Vec<Rel>,
    /// `true`: a case of the search (every other case also led to a cycle),
    /// not forced by a single cycle.
    pub assumed: bool,
}

/// One explained edge of a cycle: why `from` must precede `to`, one type
/// per relation.
#[derive(Clone, Debug, PartialEq)]
pub enum Step {
    /// `to` overwrote (appended after) `from`'s write.
    Ww(DataStep),
    /// `to` read `from`'s write.
    Wr(DataStep),
    /// `from` read a state `to` overwrote.
    Rw(DataStep),
    /// Process order.
    Process(ProcessStep),
    /// Real-time order.
    Realtime(RealtimeStep),
}

impl Step {
    /// A step with only its relation and endpoints (nothing explained).
    pub fn bare(rel: Rel, from: OpIndex, to: OpIndex) -> Step {
        Step::data(rel, from, to, true, None, None, None)
    }

    /// A step of relation `rel` with its data (a process or real-time
    /// `rel` ignores the data).
    pub fn data(
        rel: Rel,
        from: OpIndex,
        to: OpIndex,
        list: bool,
        site: Option<Site>,
        value: Option<Val>,
        value2: Option<Val>,
    ) -> Step {
        let d = DataStep {
            from,
            to,
            list,
            site,
            value,
            value2,
            derived: None,
            predicate: None,
        };
        match rel {
            Rel::Ww => Step::Ww(d),
            Rel::Wr => Step::Wr(d),
            Rel::Rw => Step::Rw(d),
            Rel::Process => Step::Process(ProcessStep {
                from,
                to,
                process: None,
            }),
            Rel::Realtime => Step::Realtime(RealtimeStep {
                from,
                to,
                ops: None,
                dt_ns: None,
            }),
        }
    }

    /// The relation.
    pub fn rel(&self) -> Rel {
        match self {
            Step::Ww(_) => Rel::Ww,
            Step::Wr(_) => Rel::Wr,
            Step::Rw(_) => Rel::Rw,
            Step::Process(_) => Rel::Process,
            Step::Realtime(_) => Rel::Realtime,
        }
    }

    /// Source and target transactions.
    pub fn ends(&self) -> (OpIndex, OpIndex) {
        match self {
            Step::Ww(d) | Step::Wr(d) | Step::Rw(d) => (d.from, d.to),
            Step::Process(p) => (p.from, p.to),
            Step::Realtime(r) => (r.from, r.to),
        }
    }

    /// The key and micro-ops of a data step.
    pub fn site(&self) -> Option<&Site> {
        match self {
            Step::Ww(d) | Step::Wr(d) | Step::Rw(d) => d.site.as_ref(),
            _ => None,
        }
    }

    /// The data of a ww, wr or rw step.
    pub fn data_step(&self) -> Option<&DataStep> {
        match self {
            Step::Ww(d) | Step::Wr(d) | Step::Rw(d) => Some(d),
            _ => None,
        }
    }

    /// Why the complete check chose this step's version order, if it did.
    pub fn derived(&self) -> Option<&Derived> {
        self.data_step().and_then(|d| d.derived.as_deref())
    }
}
